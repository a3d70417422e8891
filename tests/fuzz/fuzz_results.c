/* libFuzzer target: fuzz_results of fuzz_entries.h (make fuzz). */
#include "tests/fuzz/fuzz_entries.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_results(data, size);
  return 0;
}
