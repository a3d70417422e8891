/* libFuzzer target: fuzz_beam of fuzz_entries.h (make fuzz). */
#include "tests/fuzz/fuzz_entries.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_beam(data, size);
  return 0;
}
