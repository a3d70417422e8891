/*
 * gpu_module.h -- the CUDA backend as a module loaded when first asked for
 * (dlopen of libarkcos_gpu.so.1, arkcos/gpu_loader.c), so that a CPU-only
 * run neither needs the CUDA libraries nor maps them (they take hundreds of
 * MB of address space: under `ulimit -v` a binary linked with them did not
 * start). The module is gpu.cu built with ARKCOS_GPU_MODULE; it exports only
 * arkcos_gpu_module_init and reaches the engine's host code (the
 * choice of direct pairs, error messages) through the table given to it.
 * Both sides come from one build: the plan's layout is shared.
 */
#ifndef ARKCOS_GPU_MODULE_H
#define ARKCOS_GPU_MODULE_H

#include <stdarg.h>
#include <stddef.h>

#include "arkcos/plan_internal.h"

#define ARKCOS_GPU_MODULE_ABI 2
#define ARKCOS_GPU_MODULE_FILE "libarkcos_gpu.so.1"

/* What the module calls in the engine. */
typedef struct arkcos_gpu_host {
  int abi;
  int (*vfail)(arkcos_error *err, int code, const char *fmt, va_list ap);
  int (*pair_is_direct)(const arkcos_plan *p, int i, int j);
} arkcos_gpu_host;

/* The module's entry points: those of gpu_none.c / arkcos.h. */
typedef struct arkcos_gpu_module {
  int (*available)(char *why, size_t len);
  void (*describe)(char *buf, size_t len);
  void (*query)(arkcos_gpu_info *info);
  int (*create)(arkcos_plan *p, arkcos_error *err);
  int (*copy_time)(int device, size_t bytes, int reps, double *h2d, double *d2h, arkcos_error *err);
  void *(*host_alloc)(size_t bytes); /* page-locked host memory, NULL when none */
  void (*host_free)(void *ptr);
} arkcos_gpu_module;

/* 0 and *m filled, or -1 when the ABI differs. */
typedef int (*arkcos_gpu_module_init_fn)(const arkcos_gpu_host *h, arkcos_gpu_module *m);

#endif
