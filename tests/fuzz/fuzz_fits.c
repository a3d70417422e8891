/* libFuzzer target: fuzz_fits of fuzz_entries.h (make fuzz). */
#include "tests/fuzz/fuzz_entries.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_fits(data, size);
  return 0;
}
