/* cpu.c -- instantiates the CPU backend (cpu_impl.h and its stage files
 * cpu_ringfft.h, cpu_pairspec.h, cpu_reduce.h, cpu_setup.h) in double and single
 * precision, and keeps FFTW's wisdom on disk so that the slow planning of
 * awkward ring lengths is paid once per machine. */
#include <complex.h> /* keeps fftw_complex a C99 type; arithmetic is done by hand */
#include <fftw3.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arkcos/plan_internal.h"

/* largest half-width (in kernel-grid samples) of the direct cosine sum */
#define ARKCOS_CHEB_LIMIT 64

/* Explicit SIMD through GCC/Clang vector extensions (no intrinsics): four
 * doubles, AVX2 width; the compiler splits or widens as the target allows. */
typedef double arkcos_vd __attribute__((vector_size(32)));
#define ARKCOS_VL 4
#define ARKCOS_NV 3

/* Wisdom file: $ARKCOS_FFTW_WISDOM (a path; "none" disables), else
 * $XDG_CACHE_HOME/arkcos/fftw-wisdom or ~/.cache/arkcos/fftw-wisdom. */
static int wisdom_path(char *buf, size_t len, int mkdirs) {
  const char *env = getenv("ARKCOS_FFTW_WISDOM");
  if (env && !strcmp(env, "none")) return 0;
  if (env && *env) return snprintf(buf, len, "%s", env) < (int)len;
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char dir[3072];
  if (xdg && *xdg) snprintf(dir, sizeof dir, "%s/arkcos", xdg);
  else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/arkcos", home);
  else return 0;
  if (mkdirs) {
    char parent[3072];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash) {
      *slash = 0;
      mkdir(parent, 0755);
    }
    mkdir(dir, 0755);
  }
  return snprintf(buf, len, "%s/fftw-wisdom", dir) < (int)len;
}

/* FFTW's planner (and wisdom) is global and not re-entrant: every planner
 * call in the engine holds this lock. */
static pthread_mutex_t fftw_planner_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_once_t wisdom_once = PTHREAD_ONCE_INIT;
static void wisdom_load_once(void) {
  char path[4096];
  if (!wisdom_path(path, sizeof path, 0)) return;
  char p2[4200];
  pthread_mutex_lock(&fftw_planner_lock);
  fftw_import_wisdom_from_filename(path); /* missing or stale: ignored */
  snprintf(p2, sizeof p2, "%s-single", path);
  fftwf_import_wisdom_from_filename(p2);
  pthread_mutex_unlock(&fftw_planner_lock);
}

void arkcos_fftw_wisdom_load(void) { pthread_once(&wisdom_once, wisdom_load_once); }

/* Written to a temporary file and renamed, so concurrent processes never
 * read a torn file. Failures are harmless: planning just repeats. */
void arkcos_fftw_wisdom_save(void) {
  char path[4096], p2[4200], tmp[4300];
  if (!wisdom_path(path, sizeof path, 1)) return;
  pthread_mutex_lock(&fftw_planner_lock);
  for (int prec = 0; prec < 2; prec++) {
    snprintf(p2, sizeof p2, "%s%s", path, prec ? "-single" : "");
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", p2, (long)getpid());
    /* merge what other processes saved meanwhile, then write it all */
    if (prec) fftwf_import_wisdom_from_filename(p2);
    else fftw_import_wisdom_from_filename(p2);
    int ok = prec ? fftwf_export_wisdom_to_filename(tmp) : fftw_export_wisdom_to_filename(tmp);
    if (ok) {
      if (rename(tmp, p2) != 0) unlink(tmp);
    } else {
      unlink(tmp);
    }
  }
  pthread_mutex_unlock(&fftw_planner_lock);
}

#define R double
#define FFTWP(x) fftw_##x
#define SFX(x) x##_double
#include "arkcos/cpu_impl.h"
#undef R
#undef FFTWP
#undef SFX

#define R float
#define FFTWP(x) fftwf_##x
#define SFX(x) x##_float
#include "arkcos/cpu_impl.h"
#undef R
#undef FFTWP
#undef SFX
