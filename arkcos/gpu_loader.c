/*
 * gpu_loader.c -- the GPU entry points in a build with CUDA: the backend
 * (gpu.cu) is the module libarkcos_gpu.so.1, loaded at the first call that
 * needs it (gpu_module.h says why). It is looked for at $ARKCOS_GPU_MODULE
 * (a path), beside the program or library holding this code, one folder up
 * (build/tools, build/tests), in ../lib (an installed bin/), then on the
 * loader's path. When it cannot be loaded (not found, or the CUDA libraries
 * it needs are missing) there is no GPU, and the reason says why.
 */
#ifdef ARKCOS_WITH_CUDA
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arkcos/gpu_module.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static arkcos_gpu_module mod;
static int loaded;
static char load_why[400];

/* The folder of the object (program or shared library) holding this code. */
static int own_folder(char *dir, size_t len) {
  Dl_info info;
  if (!dladdr((void *)own_folder, &info) || !info.dli_fname || !strchr(info.dli_fname, '/')) {
    /* a program started by name: /proc/self/exe */
    ssize_t n = readlink("/proc/self/exe", dir, len - 1);
    if (n <= 0) return 0;
    dir[n] = 0;
  } else {
    snprintf(dir, len, "%s", info.dli_fname);
  }
  char *slash = strrchr(dir, '/');
  if (!slash) return 0;
  *slash = 0;
  return 1;
}

static void *try_open(const char *path, char *first_err, size_t len) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h && !first_err[0] && (strchr(path, '/') == NULL || access(path, F_OK) == 0))
    snprintf(first_err, len, "%s", dlerror()); /* it exists but did not load */
  return h;
}

static void load_module(void) {
  char first_err[300] = "", dir[3000] = "", path[3400];
  void *h = NULL;
  const char *env = getenv("ARKCOS_GPU_MODULE");
  if (env && *env) {
    h = try_open(env, first_err, sizeof first_err);
    if (!h && !first_err[0]) snprintf(first_err, sizeof first_err, "%s: no such file (ARKCOS_GPU_MODULE)", env);
  } else {
    static const char *const rel[] = {"", "/..", "/../lib"};
    const int have_dir = own_folder(dir, sizeof dir);
    for (size_t i = 0; have_dir && !h && i < sizeof rel / sizeof rel[0]; i++) {
      snprintf(path, sizeof path, "%s%s/" ARKCOS_GPU_MODULE_FILE, dir, rel[i]);
      h = try_open(path, first_err, sizeof first_err);
    }
    if (!h) h = try_open(ARKCOS_GPU_MODULE_FILE, first_err, sizeof first_err);
  }
  if (!h) {
    snprintf(load_why, sizeof load_why, "the GPU backend (" ARKCOS_GPU_MODULE_FILE ") did not load: %s",
             first_err[0] ? first_err : "not found beside the program or library, nor on the loader's path");
    return;
  }
  arkcos_gpu_module_init_fn init;
  *(void **)&init = dlsym(h, "arkcos_gpu_module_init");
  const arkcos_gpu_host host = {ARKCOS_GPU_MODULE_ABI, arkcos_vfail, arkcos_pair_is_direct};
  if (!init || init(&host, &mod) != 0) {
    snprintf(load_why, sizeof load_why, "the GPU backend (" ARKCOS_GPU_MODULE_FILE ") is of another build");
    return;
  }
  loaded = 1;
}

static int ensure_loaded(void) {
  pthread_once(&load_once, load_module);
  return loaded;
}

/* The NVIDIA driver's library: without it the CUDA runtime finds no
 * device, so where it cannot be loaded that is known without loading the
 * module (cuFFT and the runtime: about 10 ms of a process that then takes
 * the CPU). Not when $ARKCOS_GPU_MODULE names a module, which reports its
 * own loading. */
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static int driver_ok;
static char driver_why[360];

static void probe_driver(void) {
  const char *env = getenv("ARKCOS_GPU_MODULE");
  if ((env && *env) || dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) { /* kept: the runtime opens it too */
    driver_ok = 1;
    return;
  }
  const char *e = dlerror();
  snprintf(driver_why, sizeof driver_why, "no CUDA device found: no NVIDIA driver: %s",
           e ? e : "libcuda.so.1 not found");
}

int arkcos_gpu_driver(void) {
  pthread_once(&driver_once, probe_driver);
  return driver_ok;
}

int arkcos_gpu_available(char *why, size_t len) {
  pthread_once(&driver_once, probe_driver);
  if (!driver_ok) {
    if (why && len) snprintf(why, len, "%s", driver_why);
    return 0;
  }
  if (ensure_loaded()) return mod.available(why, len);
  if (why && len) snprintf(why, len, "%s", load_why);
  return 0;
}

void arkcos_gpu_describe(char *buf, size_t len) {
  if (ensure_loaded()) {
    mod.describe(buf, len);
  } else if (buf && len) {
    snprintf(buf, len, "GPU: %s\n", load_why);
  }
}

void arkcos_gpu_query(arkcos_gpu_info *info) {
  if (ensure_loaded()) {
    mod.query(info);
    return;
  }
  memset(info, 0, sizeof *info);
  info->built_with_cuda = 1;
}

int arkcos_gpu_create(arkcos_plan *p, arkcos_error *err) {
  pthread_once(&driver_once, probe_driver); /* as arkcos_gpu_available says it */
  if (!driver_ok) return arkcos_fail(err, ARKCOS_ENODEV, "--backend gpu: %s", driver_why);
  if (ensure_loaded()) return mod.create(p, err);
  return arkcos_fail(err, ARKCOS_ENODEV, "--backend gpu: %s", load_why);
}

void *arkcos_gpu_host_alloc(size_t bytes) { return ensure_loaded() ? mod.host_alloc(bytes) : NULL; }
void arkcos_gpu_host_free(void *ptr) {
  if (ptr && ensure_loaded()) mod.host_free(ptr);
}

int arkcos_gpu_copy_time(int device, size_t bytes, int reps, double *h2d, double *d2h, arkcos_error *err) {
  if (ensure_loaded()) return mod.copy_time(device, bytes, reps, h2d, d2h, err);
  *h2d = *d2h = 0;
  return arkcos_fail(err, ARKCOS_ENODEV, "%s", load_why);
}
#endif
