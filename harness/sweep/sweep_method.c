/*
 * sweep_method.c -- one method of a sweep case, run through method.h and
 * timed: the plan is made (and timed as plan_time) before the samples, and
 * only the apply calls are inside them. A direct sum with a "sample" gives
 * the values at a fixed pseudo-random set of pixels. sweep_skip_reason says
 * why a method cannot run here at all.
 */
#include <ctype.h>
#include <errno.h> /* program_invocation_name */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "harness/common/hmpi.h"
#include "harness/common/method.h"
#include "harness/common/narrow.h"
#include "harness/sweep/sweep.h"
#include "harness/common/util.h"
#include "harness/common/options.h"

static int machine_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

void sweep_wait_passively(int argc, char **argv) {
  if (hmpi_built() || getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
  char **args = malloc((size_t)(argc + 2) * sizeof *args);
  if (!args || setenv("OMP_WAIT_POLICY", "passive", 1)) {
    free(args);
    return;
  }
  args[0] = program_invocation_name; /* the name it was started by */
  for (int i = 0; i <= argc; i++) args[i + 1] = i < argc ? argv[i] : NULL;
  execv("/proc/self/exe", args);
  /* no /proc: time with libgomp's default (recorded as such) */
  unsetenv("OMP_WAIT_POLICY");
  free(args);
}

json_t *sweep_wait_policy(void) {
  const char *p = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
  char buf[256];
  snprintf(buf, sizeof buf, "%s%s%s", p ? p : "default (spinning)", spin ? " GOMP_SPINCOUNT=" : "",
           spin ? spin : "");
  for (char *c = buf; p && *c && *c != ' '; c++) *c = (char)tolower((unsigned char)*c);
  return json_string(buf);
}

int sweep_threads(int t) { return t > 0 ? t : machine_cores(); }

static void set_threads(int t) {
#ifdef _OPENMP
  omp_set_num_threads(t);
#else
  (void)t;
#endif
}

void method_out_free(method_out *o) {
  free(o->map);
  free(o->pix);
  free(o->vals);
  free(o->map_u);
  free(o->vals_u);
  memset(o, 0, sizeof *o);
}

void timing_free(timing *t) {
  free(t->samples);
  free(t->cpu_samples);
  free(t->stages);
  memset(t, 0, sizeof *t);
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* The first n distinct pixels of a fixed pseudo-random sequence for this
 * nside: uniform over the sphere (equal-area pixels), and a smaller sample
 * is a prefix of a larger one, so two sampled methods share their first
 * min(n1, n2) pixels. */
static int64_t *sample_pixels(int64_t nside, int64_t n) {
  int64_t npix = 12 * nside * nside;
  if (n > npix) n = npix;
  int64_t *pix = malloc((size_t)n * sizeof *pix);
  size_t cap = 16;
  while (cap < (size_t)n * 2) cap *= 2;
  int64_t *set = malloc(cap * sizeof *set);
  if (!pix || !set) {
    free(pix);
    free(set);
    return NULL;
  }
  for (size_t i = 0; i < cap; i++) set[i] = -1;
  uint64_t state = 0x5A3D1E5EEDULL ^ (uint64_t)nside * 0x9E3779B97F4A7C15ULL;
  for (int64_t got = 0; got < n;) {
    int64_t p = (int64_t)(splitmix64(&state) % (uint64_t)npix);
    size_t h = (size_t)((uint64_t)p * 0x9E3779B97F4A7C15ULL >> 7) & (cap - 1);
    while (set[h] >= 0 && set[h] != p) h = (h + 1) & (cap - 1);
    if (set[h] == p) continue;
    set[h] = p;
    pix[got++] = p;
  }
  free(set);
  return pix;
}

/* The output: sampled values for a direct sum with a sample smaller than
 * the map, else a full map; U beside Q for spin 2. */
static int alloc_out(const cfg_method *m, const arkcos_geometry *g, int spin2, method_out *out,
                     arkcos_error *err) {
  if (m->spec.kind == METHOD_DIRECT && m->sample > 0 && m->sample < g->npix) {
    out->n = m->sample;
    out->pix = sample_pixels(g->nside, out->n);
    out->vals = malloc((size_t)out->n * sizeof(double));
    if (spin2) out->vals_u = malloc((size_t)out->n * sizeof(double));
    if (!out->pix || !out->vals || (spin2 && !out->vals_u))
      return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  } else {
    out->map = malloc((size_t)g->npix * sizeof(double));
    if (spin2) out->map_u = malloc((size_t)g->npix * sizeof(double));
    if (!out->map || (spin2 && !out->map_u))
      return arkcos_fail(err, ARKCOS_ENOMEM, "output map: out of memory");
  }
  return ARKCOS_OK;
}

/* The method of a config entry as a method.h spec at this nside, through
 * the one translation of options into specs (method_spec_from_json; ring
 * weights: later). */
static void spec_of(const cfg_method *m, const arkcos_geometry *g, int threads,
                    method_spec *s) {
  method_spec_from_json(m->json, g->nside, s, NULL); /* config_load checked it */
  s->threads = threads;
  if (s->kind == METHOD_ARKCOS) s->arkcos.threads = threads;
}

/* One apply: scalar (in_u NULL), or Q, U as one spin-2 field. */
static int apply_once(smoother *sm, const double *in, const double *in_u, method_out *out,
                      arkcos_error *err) {
  if (in_u && out->map) return smoother_apply_spin2(sm, in, in_u, out->map, out->map_u, err);
  if (in_u)
    return smoother_apply_pixels_spin2(sm, in, in_u, out->pix, out->n, out->vals, out->vals_u, err);
  if (out->map) return smoother_apply(sm, in, out->map, err);
  return smoother_apply_pixels(sm, in, out->pix, out->n, out->vals, err);
}

/* CPU seconds of the whole process (every thread): unlike the wall clock,
 * it does not count the time spent waiting for a core on a busy machine. */
static double cpu_time(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of the calling thread. */
static double thread_cpu_time(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ARKCOS_TEST_SLOWDOWN="LABEL:F": every timed apply of the methods whose
 * label is LABEL does 1 + F times its work: after it, each of its threads
 * busy-waits on its own CPU clock for F x the apply's CPU time (cpu_took)
 * over the thread count, so that the repeat's CPU time grows by F even on a
 * loaded machine, where a thread can lose its core in the middle of the wait
 * (a wait on the wall clock then adds less CPU time); its elapsed time
 * grows by about as much. A real slowdown, known in size, for measuring
 * what `arkcos compare` catches. */
static void test_slowdown(const cfg_method *m, double cpu_took, int threads) {
  const char *env = getenv("ARKCOS_TEST_SLOWDOWN");
  const char *colon = env ? strrchr(env, ':') : NULL;
  if (!colon || strncmp(env, m->label, (size_t)(colon - env)) || m->label[colon - env]) return;
  const double each = cpu_took * atof(colon + 1) / (threads > 0 ? threads : 1);
#pragma omp parallel num_threads(threads > 0 ? threads : 1)
  {
    const double until = thread_cpu_time() + each;
    while (thread_cpu_time() < until) {
    }
  }
}

int sweep_method_begin(method_run *r, const cfg_method *m, const arkcos_geometry *g,
                       const arkcos_kernel *k, const double *in, const double *in_u, int threads,
                       int repeats, int warmup, double max_memory, arkcos_error *err) {
  memset(r, 0, sizeof *r);
  r->m = m;
  r->in_u = in_u;
  r->threads = threads;
  r->repeats = repeats;
  timing *t = &r->t;
  set_threads(threads);
  t->samples = calloc((size_t)repeats, sizeof(double));
  t->cpu_samples = calloc((size_t)repeats, sizeof(double));
  if (!t->samples || !t->cpu_samples) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  int rc = alloc_out(m, g, in_u != NULL, &r->out, err);
  if (rc) return rc;
  method_spec s;
  spec_of(m, g, threads, &s);
  s.arkcos.max_memory = max_memory;
  s.arkcos.spin = in_u ? 2 : 0; /* every method's (method.h) */
  if (m->spec.kind == METHOD_ARKCOS) {
    t->stages = calloc((size_t)repeats, sizeof *t->stages);
    if (!t->stages) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  } else if (m->spec.kind == METHOD_FSHT) {
    t->lmax = s.lmax;
    if (m->ring_weights) { /* read outside the timed region */
      r->w = malloc((size_t)g->nrings * sizeof *r->w);
      if (!r->w) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
      rc = ref_read_ring_weights(m->ring_weights, g, r->w, err);
      s.ring_weights = r->w;
    }
  }
  r->sm = rc ? NULL : smoother_create(&s, g, k, err);
  if (!rc && !r->sm) rc = err && err->code ? err->code : ARKCOS_ERUNTIME;
  if (r->sm && m->spec.kind == METHOD_ARKCOS) {
    t->plan_time = smoother_plan_time(r->sm);
    smoother_plan_setup(r->sm, &t->plan_setup);
    t->backend_used = smoother_backend(r->sm);
    t->plan_memory = smoother_plan_memory(r->sm);
    t->bound = smoother_bound(r->sm);
    snprintf(t->inexact, sizeof t->inexact, "%s", smoother_exactness(r->sm));
  }
  for (int i = 0; i < warmup && !rc; i++) rc = apply_once(r->sm, in, r->in_u, &r->out, err);
  return rc;
}

int sweep_method_sample(method_run *r, const double *in, arkcos_error *err) {
  timing *t = &r->t;
  if (t->n >= r->repeats) return ARKCOS_OK;
  set_threads(r->threads);
  const double c0 = cpu_time(), t0 = wall_time();
  int rc = apply_once(r->sm, in, r->in_u, &r->out, err);
  test_slowdown(r->m, cpu_time() - c0, r->threads);
  t->samples[t->n] = wall_time() - t0;
  t->cpu_samples[t->n] = cpu_time() - c0;
  if (t->stages) smoother_stages(r->sm, &t->stages[t->n]);
  t->n++;
  return rc;
}

void sweep_method_end(method_run *r) {
  smoother_destroy(r->sm);
  r->sm = NULL;
  free(r->w);
  r->w = NULL;
}

/* Runs method m on `in` with `threads` threads; t and out are filled (and
 * freed by the caller, also on failure). */
int sweep_run_method(const cfg_method *m, const arkcos_geometry *g, const arkcos_kernel *k,
                     const double *in, const double *in_u, int threads, int repeats, int warmup,
                     double max_memory, timing *t, method_out *out, arkcos_error *err) {
  method_run r;
  int rc = sweep_method_begin(&r, m, g, k, in, in_u, threads, repeats, warmup, max_memory, err);
  for (int i = 0; i < repeats && !rc; i++) rc = sweep_method_sample(&r, in, err);
  sweep_method_end(&r);
  *t = r.t;
  *out = r.out;
  return rc;
}

/* Rough peak memory of the harness's own maps in a case, in bytes: input,
 * output and reference, the random input's alm, FSHT's alm and maps, the
 * maps of spectra and of a polarized input. What an arkcos plan holds
 * (tables, ring spectra, buffers) is the engine's to count
 * (arkcos_plan_check, against what these maps leave of the limit:
 * sweep_plan_memory_limit). */
static double estimate_memory(const run_ctx *c, const cfg_method *m, int64_t nside) {
  double npix = 12.0 * (double)nside * (double)nside;
  double map = 8.0 * npix;
  double est = 3.0 * map;
  if (c->cfg->input.type == CFG_INPUT_RANDOM) {
    double l = method_lmax(c->cfg->input.lmax_factor, nside);
    est += 16.0 * (l + 1) * (l + 2) / 2;
  }
  if (m->spec.kind == METHOD_FSHT) {
    double l = method_lmax(m->lmax_factor, nside);
    est += 3.0 * 16.0 * (l + 1) * (l + 2) / 2 + 2.0 * map;
  }
  if (c->cfg->outputs.spectra) est += 2.0 * map;
  if (c->cfg->input.pol) est += 5.0 * map; /* Q, U in; U out and in the reference; E, B */
  return est;
}

/* A pixel-space method (arkcos, direct) and a kernel below
 * limits.min_pixels_per_fwhm on this nside: 1 with the reason. */
static int too_narrow(const run_ctx *c, const cfg_method *m, const arkcos_geometry *g,
                      const arkcos_kernel *k, char *why, size_t len) {
  if (m->spec.kind == METHOD_FSHT || g->kind != ARKCOS_GEOM_HEALPIX) return 0;
  int ki = 0;
  while (ki < c->cfg->nkernels && c->kernels[ki] != k) ki++;
  if (ki == c->cfg->nkernels || !c->kernel_width) return 0;
  const double w = c->kernel_width[ki];
  if (narrow_pixels_per_fwhm(w, g->nside) >= c->cfg->min_pixels_per_fwhm) return 0;
  char d[200];
  narrow_describe(w, c->cfg->kernels[ki].type == CFG_KERNEL_GAUSSIAN, g->nside, d, sizeof d);
  snprintf(why, len,
           "kernel is %s, below limits.min_pixels_per_fwhm = %g: the pixel grid does not "
           "sample it (its discrete sum is not 1; docs/NARROW_BEAMS.md); set the limit to 0 "
           "to run it anyway", d, c->cfg->min_pixels_per_fwhm);
  return 1;
}

/* The memory a case may use: limits.memory_bytes, else the memory
 * available now as the engine counts it when a plan is given no max_memory
 * (arkcos_memory_available: ARKCOS_MEMORY_GB, else MemAvailable, lowered to
 * what the cgroup and ulimit -v leave). */
static double case_memory_limit(const run_ctx *c) {
  return c->cfg->memory_bytes > 0 ? c->cfg->memory_bytes : arkcos_memory_available();
}

/* What an arkcos plan of the case may hold: the memory limit, capped at
 * what the process can have at all (arkcos_memory_limit; the plan caps it
 * there too), less the harness's maps; at least 1 byte. With `how`, where
 * that figure comes from, in words, for a reason; *capped (when not NULL)
 * says whether that bound, not the limit, decided. */
static double plan_share(const run_ctx *c, const cfg_method *m, int64_t nside, char *how,
                         size_t len, int *capped) {
  const double limit = case_memory_limit(c), maps = estimate_memory(c, m, nside);
  const char *bound = NULL;
  const double most = arkcos_memory_limit(&bound);
  const double left = (limit < most ? limit : most) - maps;
  if (capped) *capped = limit > most;
  /* (without limits.memory_bytes the limit is above that bound only where
   * ARKCOS_MEMORY_GB sets it so) */
  if (how && limit > most)
    snprintf(how, len,
             "the %.3g GB this process can have at all (%s is higher), %s, less the case's maps (%.3g GB)",
             most / 1e9, c->cfg->memory_bytes > 0 ? "limits.memory_bytes" : "ARKCOS_MEMORY_GB", bound,
             maps / 1e9);
  else if (how)
    snprintf(how, len, "%s (%.3g GB) less the case's maps (%.3g GB)",
             c->cfg->memory_bytes > 0 ? "limits.memory_bytes" : "the memory available now",
             limit / 1e9, maps / 1e9);
  return left > 1 ? left : 1;
}

/* An arkcos case the engine refuses, judged by arkcos_plan_check with the
 * plan the case would make (its options, its spin, the most threads: the
 * largest workspace) and what the harness's maps leave of the memory limit
 * as max_memory (sweep_plan_memory_limit): 1 with the engine's reason after
 * the context (the case is skipped), 2 where the plan does not fit in what
 * the process can have at all, whatever the limit says (the case fails, as
 * one whose maps do not: sweep_memory_reason). It refuses a plan that would
 * not fit (ENOMEM, with both figures), a spin-2 case without a spin-2 path
 * (paper mode, single precision, the GPU) and the GPU asked for where none
 * is usable. As smoother_create, a plan whose cached kernel spectra do not
 * fit is judged again without them. Other errors are the create's to
 * report: the case runs and fails with them. */
static int engine_refuses(const run_ctx *c, const cfg_method *m, const arkcos_geometry *g,
                          const arkcos_kernel *k, char *why, size_t len) {
  if (m->spec.kind != METHOD_ARKCOS) return 0;
  method_spec s;
  spec_of(m, g, c->max_threads, &s);
  s.arkcos.spin = c->spin;
  char how[400] = "";
  int capped = 0;
  s.arkcos.max_memory = plan_share(c, m, g->nside, how, sizeof how, &capped);
  arkcos_error err = {0, ""};
  int rc = arkcos_plan_check(g, k, &s.arkcos, &err);
  if (rc == ARKCOS_ENOMEM && s.arkcos.cache_kernel_spectra) {
    s.arkcos.cache_kernel_spectra = 0;
    err = (arkcos_error){0, ""};
    rc = arkcos_plan_check(g, k, &s.arkcos, &err);
  }
  if (rc == ARKCOS_OK) return 0;
  if (rc == ARKCOS_ENOMEM) {
    snprintf(why, len, "%s: %s", how, err.msg);
    return capped ? 2 : 1;
  }
  if (c->spin == 2)
    snprintf(why, len, "spin 2 (Q, U of input.pol): %s", err.msg);
  else if (rc == ARKCOS_ENODEV)
    snprintf(why, len, "no GPU: %s", err.msg);
  else
    return 0;
  return 1;
}

/* Why a case (or the untimed reference run) cannot run here; 0 if it can,
 * 1 if it is skipped, 2 if it fails (it cannot fit in what the process can
 * have at all). Whether an arkcos plan can be made is the engine's
 * judgement, last. */
int sweep_skip_reason(run_ctx *c, const cfg_method *m, const arkcos_geometry *g,
                      const arkcos_kernel *k, char *why, size_t len) {
  if (too_narrow(c, m, g, k, why, len)) return 1;
  if (c->cfg->input.type == CFG_INPUT_FITS && g->nside != c->fits_nside) {
    snprintf(why, len, "input map %s has nside %lld, the case needs nside %lld",
             c->cfg->input.path, (long long)c->fits_nside, (long long)g->nside);
    return 1;
  }
  if (m->spec.kind == METHOD_DIRECT) {
    int64_t nout = m->sample > 0 && m->sample < g->npix ? m->sample : g->npix;
    double cost = ref_direct_cost(g, k, nout);
    if (cost > c->cfg->direct_max_evals) {
      snprintf(why, len,
               "direct sum needs %.3g kernel evaluations, over limits.direct_max_evals = %.3g"
               " (use \"sample\" to compute a subset of pixels)",
               cost, c->cfg->direct_max_evals);
      return 1;
    }
  }
  const int mr = sweep_memory_reason(c, m, g->nside, why, len);
  if (mr) return mr;
  return engine_refuses(c, m, g, k, why, len);
}

double sweep_plan_memory_limit(const run_ctx *c, const cfg_method *m, int64_t nside) {
  return plan_share(c, m, nside, NULL, 0, NULL);
}

int sweep_memory_reason(const run_ctx *c, const cfg_method *m, int64_t nside, char *why,
                        size_t len) {
  double est = estimate_memory(c, m, nside);
  /* what the process can have at all (ulimit -v, cgroup, free memory):
   * whatever limits.memory_bytes says, such a case cannot succeed */
  const char *bound = NULL;
  const double most = arkcos_memory_limit(&bound);
  if (est > most) {
    snprintf(why, len,
             "cannot fit: estimated memory %.2f GiB (maps and transforms at nside %lld) exceeds "
             "the %.2f GiB this process can have: %s",
             est / 1073741824.0, (long long)nside, most / 1073741824.0, bound);
    return 2;
  }
  const double limit = case_memory_limit(c);
  if (est > limit) {
    snprintf(why, len, "the case's maps, estimated %.3g GiB, exceed the %.3g GiB available%s",
             est / 1073741824.0, limit / 1073741824.0,
             c->cfg->memory_bytes > 0 ? " (limits.memory_bytes)" : " now");
    return 1;
  }
  return 0;
}
