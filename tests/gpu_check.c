/* gpu_check.c -- placeholder until the GPU checks land: reports a skip. */
#include <stdio.h>
#include "arkcos/arkcos.h"
int main(void) {
  char why[256];
  if (!arkcos_gpu_available(why, sizeof why)) {
    printf("gpucheck: skipped: %s\n", why);
    return 0;
  }
  printf("gpucheck: no checks yet\n");
  return 1;
}
