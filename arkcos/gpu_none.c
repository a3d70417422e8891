/* gpu_none.c -- the GPU entry points in a build without CUDA (with CUDA:
 * gpu_loader.c). */
#ifndef ARKCOS_WITH_CUDA
#include <stdio.h>
#include <string.h>

#include "arkcos/plan_internal.h"

int arkcos_gpu_available(char *why, size_t len) {
  if (why && len) snprintf(why, len, "built without CUDA");
  return 0;
}

int arkcos_gpu_driver(void) { return 0; }

void arkcos_gpu_describe(char *buf, size_t len) {
  if (buf && len) snprintf(buf, len, "GPU: built without CUDA\n");
}

void arkcos_gpu_query(arkcos_gpu_info *info) { memset(info, 0, sizeof *info); }

int arkcos_gpu_create(arkcos_plan *p, arkcos_error *err) {
  (void)p;
  return arkcos_fail(err, ARKCOS_ENODEV, "--backend gpu: built without CUDA");
}

void *arkcos_gpu_host_alloc(size_t bytes) {
  (void)bytes;
  return NULL;
}
void arkcos_gpu_host_free(void *ptr) { (void)ptr; }

int arkcos_gpu_copy_time(int device, size_t bytes, int reps, double *h2d, double *d2h, arkcos_error *err) {
  (void)device;
  (void)bytes;
  (void)reps;
  *h2d = *d2h = 0;
  return arkcos_fail(err, ARKCOS_ENODEV, "built without CUDA");
}
#endif
