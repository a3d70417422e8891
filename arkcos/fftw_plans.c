/* fftw_plans.c -- FFTW's planner for the whole engine: the one lock every
 * planner call holds (FFTW's planner and wisdom are global and not
 * re-entrant), the planner's rigor (ARKCOS_FFTW_PLANNER), the cache of
 * power-of-two complex transforms that Bluestein's DFTs use, and the wisdom
 * file kept with ARKCOS_FFTW_PLANNER=measure. */
#include <complex.h> /* keeps fftw_complex a C99 type */
#include <fftw3.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arkcos/plan_internal.h"

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

pthread_mutex_t arkcos_fftw_planner_lock = PTHREAD_MUTEX_INITIALIZER;

/* The planner's rigor for the transforms that FFTW can time (rings of the
 * kernel grid's length L and the grids themselves): FFTW_ESTIMATE unless
 * ARKCOS_FFTW_PLANNER=measure. Measuring cost seconds on every first call
 * of a process (9.5 s of a 10.6 s call at nside 512, 1 deg, 2 threads)
 * for an execute no faster within the noise of repeated runs (README,
 * "One call"); estimated plans also need no wisdom, so a result does not
 * depend on what a machine's wisdom file holds. With "measure" the wisdom
 * file keeps the measured plans across processes, as before. */
static unsigned fftw_flags_value;
static pthread_once_t fftw_flags_once = PTHREAD_ONCE_INIT;
static void fftw_flags_init(void) {
  const char *v = getenv("ARKCOS_FFTW_PLANNER");
  fftw_flags_value = v && !strcmp(v, "measure") ? FFTW_MEASURE : FFTW_ESTIMATE;
}
unsigned arkcos_fftw_flags(void) {
  pthread_once(&fftw_flags_once, fftw_flags_init);
  return fftw_flags_value;
}

/* arkcos_fftw_c2c_plan's cache: a handful of power-of-two lengths */
static struct { int64_t n; int sign; fftw_plan p; } c2c_cache[64];
static int c2c_count;

void *arkcos_fftw_c2c_plan(int64_t n, int sign) {
  fftw_plan r = NULL;
  pthread_mutex_lock(&arkcos_fftw_planner_lock);
  for (int i = 0; i < c2c_count && !r; i++)
    if (c2c_cache[i].n == n && c2c_cache[i].sign == sign) r = c2c_cache[i].p;
  if (!r && c2c_count < 64) {
    fftw_complex *a = fftw_malloc(sizeof(fftw_complex) * (size_t)n);
    if (a) r = fftw_plan_dft_1d((int)n, a, a, sign, arkcos_fftw_flags());
    fftw_free(a);
    if (r) {
      c2c_cache[c2c_count].n = n;
      c2c_cache[c2c_count].sign = sign;
      c2c_cache[c2c_count++].p = r;
    }
  }
  pthread_mutex_unlock(&arkcos_fftw_planner_lock);
  return r;
}

static pthread_once_t wisdom_once = PTHREAD_ONCE_INIT;
static void wisdom_load_once(void) {
  char path[4096];
  /* estimated plans take no wisdom: none is read (or written) */
  if (arkcos_fftw_flags() != FFTW_MEASURE) return;
  if (!wisdom_path(path, sizeof path, 0)) return;
  char p2[4200];
  pthread_mutex_lock(&arkcos_fftw_planner_lock);
  fftw_import_wisdom_from_filename(path); /* missing or stale: ignored */
  snprintf(p2, sizeof p2, "%s-single", path);
  fftwf_import_wisdom_from_filename(p2);
  pthread_mutex_unlock(&arkcos_fftw_planner_lock);
}

void arkcos_fftw_wisdom_load(void) { pthread_once(&wisdom_once, wisdom_load_once); }

/* Written to a temporary file and renamed, so concurrent processes never
 * read a torn file. Failures are harmless: planning just repeats. */
void arkcos_fftw_wisdom_save(void) {
  char path[4096], p2[4200], tmp[4300];
  if (arkcos_fftw_flags() != FFTW_MEASURE) return;
  if (!wisdom_path(path, sizeof path, 1)) return;
  pthread_mutex_lock(&arkcos_fftw_planner_lock);
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
  pthread_mutex_unlock(&arkcos_fftw_planner_lock);
}

/* The process's wisdom as a string (malloc'd by FFTW: fftw_free it), and
 * a string imported, under the planner lock (arkcos_mpi.c gives rank 0's
 * wisdom to the other ranks). */
char *arkcos_fftw_wisdom_export(int single) {
  arkcos_fftw_wisdom_load();
  pthread_mutex_lock(&arkcos_fftw_planner_lock);
  char *w = single ? fftwf_export_wisdom_to_string() : fftw_export_wisdom_to_string();
  pthread_mutex_unlock(&arkcos_fftw_planner_lock);
  return w;
}

int arkcos_fftw_wisdom_import(const char *w, int single) {
  arkcos_fftw_wisdom_load(); /* first: the file must not come in after w */
  pthread_mutex_lock(&arkcos_fftw_planner_lock);
  const int ok = single ? fftwf_import_wisdom_from_string(w) : fftw_import_wisdom_from_string(w);
  pthread_mutex_unlock(&arkcos_fftw_planner_lock);
  return ok;
}
