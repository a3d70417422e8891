/*
 * cmd_run.c -- `arkcos run CONFIG.json [--out DIR] [--resume] [--force]`:
 * runs every case of a sweep (nside x kernel x method x threads), times it,
 * measures its accuracy against the configured reference and records it in
 * results.json / summary.csv, rewritten after every case.
 *
 * Order: per nside, per kernel, the reference method first (its map is kept
 * for the other methods' metrics), then the other methods, each over the
 * thread counts. Input maps are made once per nside and are not timed.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <dirent.h>
#include <sched.h>

#include "arkcos/arkcos.h"
#include "harness/commands.h"
#include "harness/config.h"
#include "harness/mapio.h"
#include "harness/meta.h"
#include "harness/results.h"
#include "harness/util.h"
#include "reference/reference.h"

#define DEG (M_PI / 180.0)

/* ------------------------------------------------------------ small helpers */

static int machine_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static int resolve_threads(int t) { return t > 0 ? t : machine_cores(); }

static void set_threads(int t) {
#ifdef _OPENMP
  omp_set_num_threads(t);
#else
  (void)t;
#endif
}

/* Peak resident memory of a case: the kernel's high-water mark is reset
 * before the case (Linux /proc/self/clear_refs "5") and read after it; where
 * that is not possible, the process peak since start. */
static void peak_reset(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f) return;
  fputs("5", f);
  fclose(f);
}

static double peak_read(void) {
  FILE *f = fopen("/proc/self/status", "r");
  double v = -1;
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f))
      if (!strncmp(line, "VmHWM:", 6)) v = strtod(line + 6, NULL) * 1024.0;
    fclose(f);
  }
  return v > 0 ? v : (double)peak_rss_bytes();
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void format_duration(double s, char *buf, size_t len) {
  if (!(s >= 0) || !isfinite(s)) {
    snprintf(buf, len, "?");
    return;
  }
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, len, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else
    snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
}

/* A short file-name-safe name for a case's outputs, e.g.
 * n512_gaussian-fwhm60-cut2.5_arkcos-cpu-enhanced-double_t2 (the case id
 * itself is recorded beside every path in results.json). */
static void case_slug(const run_config *cfg, int64_t nside, int ki, int mi, int threads,
                      char *out, size_t len) {
  const cfg_kernel *k = &cfg->kernels[ki];
  const cfg_method *m = &cfg->methods[mi];
  char ks[400], ms[300], n1[64], n2[64];
  const char *type = json_string_value(json_object_get(k->json, "type"));
  snprintf(ks, sizeof ks, "%s", type ? type : "kernel");
  if (k->type == CFG_KERNEL_GAUSSIAN) {
    config_format_number(k->fwhm_arcmin, n1, sizeof n1);
    snprintf(ks + strlen(ks), sizeof ks - strlen(ks), "-fwhm%s", n1);
  }
  if (k->type == CFG_KERNEL_FILE) {
    const char *p = json_string_value(json_object_get(k->json, "path"));
    const char *b = p ? strrchr(p, '/') : NULL;
    uint64_t h = 1469598103934665603ULL; /* basenames may repeat: add a hash */
    for (const char *c = p ? p : ""; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    snprintf(ks + strlen(ks), sizeof ks - strlen(ks), "-%.60s-%06llx", b ? b + 1 : p ? p : "",
             (unsigned long long)(h & 0xffffff));
  }
  if (k->cutoff_deg > 0) {
    config_format_number(k->cutoff_deg, n1, sizeof n1);
    snprintf(ks + strlen(ks), sizeof ks - strlen(ks), "-cut%s", n1);
  }
  if (k->cutoff_rel > 0) {
    config_format_number(k->cutoff_rel, n1, sizeof n1);
    snprintf(ks + strlen(ks), sizeof ks - strlen(ks), "-rel%s", n1);
  }
  snprintf(ms, sizeof ms, "%s", m->label);
  if (m->type == CFG_METHOD_FSHT) {
    config_format_number(m->lmax_factor, n2, sizeof n2);
    snprintf(ms + strlen(ms), sizeof ms - strlen(ms), "-lf%s", n2);
  }
  if (m->type == CFG_METHOD_DIRECT && m->sample > 0)
    snprintf(ms + strlen(ms), sizeof ms - strlen(ms), "-s%lld", (long long)m->sample);
  snprintf(out, len, "n%lld_%s_%s_t%d", (long long)nside, ks, ms, threads);
  for (char *c = out; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '.' || *c == '-' || *c == '_'))
      *c = '_';
}

/* ------------------------------------------------------------ sampled pixels */

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

/* ------------------------------------------------------------ method output */

/* A method's result: a full map, or the values at sampled pixels. */
typedef struct method_out {
  double *map;   /* npix values, or NULL */
  int64_t *pix;  /* sampled pixels (sample order) */
  double *vals;
  int64_t n;
} method_out;

static void method_out_free(method_out *o) {
  free(o->map);
  free(o->pix);
  free(o->vals);
  memset(o, 0, sizeof *o);
}

typedef struct timing {
  double *samples;
  int n;
  double plan_time;              /* arkcos plan creation, seconds */
  arkcos_stage_times *stages;    /* per sample (arkcos) */
  int backend_used;              /* arkcos */
  size_t plan_memory;            /* arkcos */
  int lmax;                      /* fsht */
} timing;

static void timing_free(timing *t) {
  free(t->samples);
  free(t->stages);
  memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------ run state */

typedef struct input_state {
  int64_t nside;
  int ready;
  int lmax;              /* random: band limit */
  double *cl;            /* random: input spectrum 0..lmax */
  double complex *alm;   /* random */
  double *map;
} input_state;

typedef struct ref_state {
  int tried, available;
  char why[1200];
  method_out out;
  double rms;            /* rms of the reference values */
  int cl_lmax;           /* cached spectrum of the reference map */
  double *cl;
} ref_state;

typedef struct run_ctx {
  run_config *cfg;
  arkcos_kernel **kernels;
  results_doc doc;
  double *fits_map;      /* fits input, read once */
  int64_t fits_nside;
  int max_threads;       /* for input generation and untimed references */
  double memory_limit;
  int gpu_ok;
  char gpu_why[256];
  /* progress */
  int total, index, ran_now, to_run;
  double t_start;
  int progress;
  long stop_after;       /* ARKCOS_TEST_STOP_AFTER: simulated kill */
} run_ctx;

static void input_free(input_state *in) {
  free(in->cl);
  free(in->alm);
  free(in->map);
  memset(in, 0, sizeof *in);
}

static void ref_free(ref_state *r) {
  method_out_free(&r->out);
  free(r->cl);
  memset(r, 0, sizeof *r);
}

static int make_input(run_ctx *c, const arkcos_geometry *g, input_state *in,
                      arkcos_error *err) {
  if (in->ready) return ARKCOS_OK;
  const run_config *cfg = c->cfg;
  int64_t npix = g->npix;
  in->map = malloc((size_t)npix * sizeof(double));
  if (!in->map) return arkcos_fail(err, ARKCOS_ENOMEM, "input map: out of memory");
  if (cfg->input.type == CFG_INPUT_RANDOM) {
    in->lmax = config_lmax(cfg->input.lmax_factor, g->nside);
    in->cl = calloc((size_t)in->lmax + 1, sizeof(double));
    in->alm = malloc((size_t)ref_alm_size(in->lmax) * sizeof(double complex));
    if (!in->cl || !in->alm) return arkcos_fail(err, ARKCOS_ENOMEM, "input: out of memory");
    if (cfg->input.cl_file) {
      int rc = ref_cl_read(cfg->input.cl_file, in->lmax, in->cl, err);
      if (rc) return rc;
    } else {
      ref_cl_cmb(in->lmax, in->cl);
    }
    ref_alm_random(in->cl, in->lmax, cfg->input.seed, in->alm);
    int rc = ref_alm2map(g, in->lmax, in->alm, in->map, c->max_threads, err);
    if (rc) return rc;
  } else if (cfg->input.type == CFG_INPUT_POINT_SOURCES) {
    ref_source *s = malloc((size_t)cfg->input.nsources * sizeof *s);
    if (!s) return arkcos_fail(err, ARKCOS_ENOMEM, "input: out of memory");
    for (int i = 0; i < cfg->input.nsources; i++) {
      s[i].theta = cfg->input.sources[i].theta_deg * DEG;
      double phi = fmod(cfg->input.sources[i].phi_deg, 360.0);
      if (phi < 0) phi += 360.0;
      s[i].phi = phi * DEG;
      s[i].amplitude = cfg->input.sources[i].amplitude;
    }
    int rc = ref_point_sources(g, s, cfg->input.nsources, in->map, err);
    free(s);
    if (rc) return rc;
  } else {
    memcpy(in->map, c->fits_map, (size_t)npix * sizeof(double));
  }
  in->ready = 1;
  return ARKCOS_OK;
}

/* ------------------------------------------------------------ skipping */

/* Rough peak memory of a case in bytes: the harness's maps (input, output,
 * reference) plus what the method allocates. */
static double estimate_memory(const run_ctx *c, const cfg_method *m,
                              int64_t nside) {
  double npix = 12.0 * (double)nside * (double)nside;
  double map = 8.0 * npix;
  double est = 3.0 * map;
  if (c->cfg->input.type == CFG_INPUT_RANDOM) {
    double l = config_lmax(c->cfg->input.lmax_factor, nside);
    est += 16.0 * (l + 1) * (l + 2) / 2;
  }
  switch (m->type) {
  case CFG_METHOD_ARKCOS: {
    /* input and output ring spectra: (4 nside - 1) rings x (2 nside + 1) */
    double spectra = 16.0 * (4.0 * (double)nside) * (2.0 * (double)nside + 1);
    est += (m->precision == ARKCOS_SINGLE ? 0.5 : 1.0) * 2.0 * spectra + map;
    break;
  }
  case CFG_METHOD_FSHT: {
    double l = config_lmax(m->lmax_factor, nside);
    est += 3.0 * 16.0 * (l + 1) * (l + 2) / 2 + 2.0 * map;
    break;
  }
  case CFG_METHOD_DIRECT:
    break;
  }
  if (c->cfg->outputs.spectra) est += 2.0 * map;
  return est;
}

/* Why a case (or the untimed reference run) cannot run here; 0 if it can. */
static int skip_reason(run_ctx *c, const cfg_method *m, const arkcos_geometry *g,
                       const arkcos_kernel *k, char *why, size_t len) {
  if (c->cfg->input.type == CFG_INPUT_FITS && g->nside != c->fits_nside) {
    snprintf(why, len, "input map %s has nside %lld, the case needs nside %lld",
             c->cfg->input.path, (long long)c->fits_nside, (long long)g->nside);
    return 1;
  }
  if (m->type == CFG_METHOD_ARKCOS && m->backend == ARKCOS_BACKEND_GPU && !c->gpu_ok) {
    snprintf(why, len, "no GPU: %s", c->gpu_why);
    return 1;
  }
  if (m->type == CFG_METHOD_DIRECT) {
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
  double est = estimate_memory(c, m, g->nside);
  if (c->memory_limit > 0 && est > c->memory_limit) {
    snprintf(why, len, "estimated memory %.2f GiB exceeds the %.2f GiB available%s",
             est / 1073741824.0, c->memory_limit / 1073741824.0,
             c->cfg->memory_bytes > 0 ? " (limits.memory_bytes)" : "");
    return 1;
  }
  return 0;
}

/* ------------------------------------------------------------ running */

static int run_method(const cfg_method *m, const arkcos_geometry *g,
                      const arkcos_kernel *k, const double *in, int threads,
                      int repeats, int warmup, timing *t, method_out *out,
                      arkcos_error *err) {
  memset(t, 0, sizeof *t);
  set_threads(threads);
  int64_t npix = g->npix;
  t->samples = calloc((size_t)repeats, sizeof(double));
  if (!t->samples) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  int rc = ARKCOS_OK;

  if (m->type == CFG_METHOD_DIRECT && m->sample > 0 && m->sample < npix) {
    out->n = m->sample;
    out->pix = sample_pixels(g->nside, out->n);
    out->vals = malloc((size_t)out->n * sizeof(double));
    if (!out->pix || !out->vals) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  } else {
    out->map = malloc((size_t)npix * sizeof(double));
    if (!out->map) return arkcos_fail(err, ARKCOS_ENOMEM, "output map: out of memory");
  }

  if (m->type == CFG_METHOD_ARKCOS) {
    arkcos_options o;
    arkcos_options_default(&o);
    o.mode = m->mode;
    o.precision = m->precision;
    o.backend = m->backend;
    o.threads = threads;
    o.cache_kernel_spectra = m->cache_kernel_spectra;
    o.oversample = m->oversample;
    t->stages = calloc((size_t)repeats, sizeof *t->stages);
    if (!t->stages) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
    double t0 = wall_time();
    arkcos_plan *p = arkcos_plan_create(g, k, &o, err);
    t->plan_time = wall_time() - t0;
    if (!p) return err && err->code ? err->code : ARKCOS_ERUNTIME;
    t->backend_used = arkcos_plan_backend(p);
    t->plan_memory = arkcos_plan_memory(p);
    for (int i = 0; i < warmup && !rc; i++) rc = arkcos_execute(p, in, out->map, err);
    for (int i = 0; i < repeats && !rc; i++) {
      t0 = wall_time();
      rc = arkcos_execute(p, in, out->map, err);
      t->samples[i] = wall_time() - t0;
      arkcos_plan_stages(p, &t->stages[i]);
      t->n = i + 1;
    }
    arkcos_plan_destroy(p);
    return rc;
  }

  if (m->type == CFG_METHOD_FSHT) {
    t->lmax = config_lmax(m->lmax_factor, g->nside);
    double *w = NULL;
    if (m->ring_weights) { /* read outside the timed region */
      w = malloc((size_t)g->nrings * sizeof *w);
      if (!w) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
      rc = ref_read_ring_weights(m->ring_weights, g, w, err);
    }
    for (int i = 0; i < warmup && !rc; i++)
      rc = ref_fsht_smooth(g, k, in, out->map, t->lmax, m->iter, w, threads, err);
    for (int i = 0; i < repeats && !rc; i++) {
      double t0 = wall_time();
      rc = ref_fsht_smooth(g, k, in, out->map, t->lmax, m->iter, w, threads, err);
      t->samples[i] = wall_time() - t0;
      t->n = i + 1;
    }
    free(w);
    return rc;
  }

  /* direct sum, full or sampled */
  double *dst = out->map ? out->map : out->vals;
  const int64_t *pix = out->map ? NULL : out->pix;
  int64_t nout = out->map ? npix : out->n;
  for (int i = 0; i < warmup && !rc; i++)
    rc = ref_direct_sum(g, k, in, dst, pix, nout, threads, err);
  for (int i = 0; i < repeats && !rc; i++) {
    double t0 = wall_time();
    rc = ref_direct_sum(g, k, in, dst, pix, nout, threads, err);
    t->samples[i] = wall_time() - t0;
    t->n = i + 1;
  }
  return rc;
}

/* The reference for one (nside, kernel): the exact map alm2map(K_l a_lm), or
 * the reference method's output (taken from its case when it ran in this
 * session, else computed once, untimed). */
static void ensure_reference(run_ctx *c, const arkcos_geometry *g, int ki,
                             input_state *in, ref_state *rs) {
  if (rs->tried) return;
  rs->tried = 1;
  const run_config *cfg = c->cfg;
  arkcos_error err = {0, ""};
  if (cfg->reference == CFG_REF_NONE) {
    snprintf(rs->why, sizeof rs->why, "no reference configured");
    return;
  }
  if (make_input(c, g, in, &err)) {
    snprintf(rs->why, sizeof rs->why, "reference unavailable: %s", err.msg);
    return;
  }
  if (cfg->reference == CFG_REF_EXACT) {
    double *kl = malloc((size_t)(in->lmax + 1) * sizeof *kl);
    double complex *alm = malloc((size_t)ref_alm_size(in->lmax) * sizeof *alm);
    rs->out.map = malloc((size_t)g->npix * sizeof(double));
    int rc = !kl || !alm || !rs->out.map
                 ? arkcos_fail(&err, ARKCOS_ENOMEM, "out of memory")
                 : arkcos_kernel_legendre(c->kernels[ki], in->lmax, kl, &err);
    if (!rc) {
      memcpy(alm, in->alm, (size_t)ref_alm_size(in->lmax) * sizeof *alm);
      ref_alm_scale(in->lmax, kl, alm);
      rc = ref_alm2map(g, in->lmax, alm, rs->out.map, c->max_threads, &err);
    }
    free(kl);
    free(alm);
    if (rc) {
      method_out_free(&rs->out);
      snprintf(rs->why, sizeof rs->why, "exact reference failed: %s", err.msg);
      return;
    }
    rs->available = 1;
    return;
  }
  const cfg_method *m = &cfg->methods[cfg->reference];
  char why[512];
  if (skip_reason(c, m, g, c->kernels[ki], why, sizeof why)) {
    snprintf(rs->why, sizeof rs->why, "reference %s skipped: %s", m->label, why);
    return;
  }
  timing t;
  int rc = run_method(m, g, c->kernels[ki], in->map, c->max_threads, 1, 0, &t,
                      &rs->out, &err);
  timing_free(&t);
  if (rc) {
    method_out_free(&rs->out);
    snprintf(rs->why, sizeof rs->why, "reference %s failed: %s", m->label, err.msg);
    return;
  }
  rs->available = 1;
}

/* ------------------------------------------------------------ metrics */

static void set_real(json_t *o, const char *key, double v) {
  if (isfinite(v)) json_object_set_new(o, key, json_real(v));
}

/* Metrics at pixel subsets: mirrors ref_compare (errors relative to the rms
 * of the reference over all compared pixels). */
static void compare_values(int64_t nside, const int64_t *pix, const double *a,
                           const double *b, int64_t n, ref_metrics *m) {
  double sb2 = 0, sd2 = 0, maxd = 0, rd2[REF_NREGIONS] = {0}, rmax[REF_NREGIONS] = {0};
  int64_t rn[REF_NREGIONS] = {0};
  for (int64_t i = 0; i < n; i++) {
    double th, ph;
    arkcos_healpix_pix2ang_ring(nside, pix[i], &th, &ph);
    int r = ref_region_of_theta(th);
    double d = a[i] - b[i];
    sb2 += b[i] * b[i];
    sd2 += d * d;
    if (fabs(d) > maxd) maxd = fabs(d);
    rd2[r] += d * d;
    rn[r]++;
    if (fabs(d) > rmax[r]) rmax[r] = fabs(d);
  }
  double rms_b = n ? sqrt(sb2 / (double)n) : 0;
  memset(m, 0, sizeof *m);
  m->frac_rms = rms_b > 0 ? sqrt(sd2 / (double)n) / rms_b : NAN;
  m->max_rel = rms_b > 0 ? maxd / rms_b : NAN;
  for (int r = 0; r < REF_NREGIONS; r++) {
    m->npix_region[r] = rn[r];
    m->frac_rms_region[r] = rn[r] && rms_b > 0 ? sqrt(rd2[r] / (double)rn[r]) / rms_b : NAN;
    m->max_rel_region[r] = rn[r] && rms_b > 0 ? rmax[r] / rms_b : NAN;
  }
}

static double rms_of(const double *v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += v[i] * v[i];
  return n ? sqrt(s / (double)n) : 0;
}

/* Ringing around point sources: every pixel belongs to its nearest source;
 * per source, the largest |value| of its pixels farther than the kernel's
 * cutoff (where the exact convolution is zero) relative to the largest
 * within. Sources are placed at the centre of the pixel that holds them, as
 * the input map does. ringing_belt / ringing_cap: the largest ratio over the
 * sources in the belt / in either polar cap (< 0 when there is none). */
static void ringing_by_region(const run_config *cfg, const arkcos_geometry *g,
                              const double *map, double cutoff, double *belt,
                              double *cap) {
  int n = cfg->input.nsources;
  double(*u)[3] = malloc((size_t)n * sizeof *u);
  double *peak = calloc((size_t)n, sizeof *peak), *ring = calloc((size_t)n, sizeof *ring);
  *belt = *cap = -1;
  if (!u || !peak || !ring) goto done;
  for (int s = 0; s < n; s++) {
    double th = cfg->input.sources[s].theta_deg * DEG;
    double ph = fmod(cfg->input.sources[s].phi_deg, 360.0);
    if (ph < 0) ph += 360.0;
    int64_t p = arkcos_healpix_ang2pix_ring(g->nside, th, ph * DEG);
    arkcos_healpix_pix2ang_ring(g->nside, p, &th, &ph);
    u[s][0] = sin(th) * cos(ph);
    u[s][1] = sin(th) * sin(ph);
    u[s][2] = cos(th);
  }
  double cosc = cos(cutoff * (1 + 1e-9));
  for (int j = 0; j < g->nrings; j++) {
    const arkcos_ring *r = &g->rings[j];
    double st = sin(r->theta), ct = cos(r->theta);
    for (int64_t i = 0; i < r->nph; i++) {
      double v = fabs(map[r->ofs + i]);
      double ph = r->phi0 + 2 * M_PI * (double)i / (double)r->nph;
      double x = st * cos(ph), y = st * sin(ph);
      int best = 0;
      double bd = -2;
      for (int s = 0; s < n; s++) {
        double d = x * u[s][0] + y * u[s][1] + ct * u[s][2];
        if (d > bd) {
          bd = d;
          best = s;
        }
      }
      if (bd >= cosc) {
        if (v > peak[best]) peak[best] = v;
      } else if (v > ring[best]) {
        ring[best] = v;
      }
    }
  }
  for (int s = 0; s < n; s++) {
    if (!(peak[s] > 0)) continue;
    double ratio = ring[s] / peak[s];
    int region = ref_region_of_theta(cfg->input.sources[s].theta_deg * DEG);
    double *dst = region == REF_BELT ? belt : cap;
    if (ratio > *dst) *dst = ratio;
  }
done:
  free(u);
  free(peak);
  free(ring);
}

static void put_metrics(json_t *mj, const ref_metrics *m) {
  static const char *const rn[REF_NREGIONS] = {"north", "belt", "south"};
  char key[64];
  set_real(mj, "frac_rms", m->frac_rms);
  set_real(mj, "max_rel", m->max_rel);
  for (int r = 0; r < REF_NREGIONS; r++) {
    snprintf(key, sizeof key, "frac_rms_%s", rn[r]);
    if (m->npix_region[r]) set_real(mj, key, m->frac_rms_region[r]);
  }
  for (int r = 0; r < REF_NREGIONS; r++) {
    snprintf(key, sizeof key, "max_rel_%s", rn[r]);
    if (m->npix_region[r]) set_real(mj, key, m->max_rel_region[r]);
  }
}

/* Compares a method's output with the reference; fills metrics and returns
 * the rms of the reference values compared (0 if none). */
static double compare_with_reference(const arkcos_geometry *g, const method_out *o,
                                     const ref_state *rs, json_t *mj) {
  ref_metrics m;
  int64_t n = 0;
  double rms_b = 0;
  if (o->map && rs->out.map) {
    ref_compare(g, o->map, rs->out.map, &m);
    n = g->npix;
    rms_b = rms_of(rs->out.map, g->npix);
  } else {
    /* at least one side is sampled: compare at the common pixels */
    const int64_t *pix = o->map ? rs->out.pix : o->pix;
    n = o->map ? rs->out.n : rs->out.map ? o->n : (o->n < rs->out.n ? o->n : rs->out.n);
    double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    if (!a || !b) {
      free(a);
      free(b);
      return 0;
    }
    for (int64_t i = 0; i < n; i++) {
      a[i] = o->map ? o->map[pix[i]] : o->vals[i];
      b[i] = rs->out.map ? rs->out.map[pix[i]] : rs->out.vals[i];
    }
    compare_values(g->nside, pix, a, b, n, &m);
    rms_b = rms_of(b, n);
    free(a);
    free(b);
    json_object_set_new(mj, "sampled", json_true());
  }
  put_metrics(mj, &m);
  json_object_set_new(mj, "compared_pixels", json_integer(n));
  return rms_b;
}

/* ------------------------------------------------------------ outputs */

static int write_patch(const char *dir, const char *rel, const double *img, int n,
                       double side, int logscale, arkcos_error *err) {
  char path[8400];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  return ref_patch_write_text(path, img, n, side, logscale, err);
}

/* Spectra: C_l of the method's map, of the reference (exact: of K_l a_lm;
 * else map2alm of the reference map, cached) and of the difference map, all
 * with `spectra_iter` iterations up to spectra_lmax_factor * nside. */
static int write_spectra(run_ctx *c, const arkcos_geometry *g, int ki,
                         const input_state *in, ref_state *rs, const double *map,
                         const char *rel, json_t *mj, arkcos_error *err) {
  const run_config *cfg = c->cfg;
  int lmax = config_lmax(cfg->outputs.spectra_lmax_factor, g->nside);
  int iter = cfg->outputs.spectra_iter;
  int64_t nalm = ref_alm_size(lmax);
  double complex *alm = malloc((size_t)nalm * sizeof *alm);
  double *cl_m = calloc((size_t)lmax + 1, sizeof(double));
  double *cl_d = calloc((size_t)lmax + 1, sizeof(double));
  double *diff = rs->available && rs->out.map ? malloc((size_t)g->npix * sizeof(double)) : NULL;
  int rc = ARKCOS_OK;
  if (!alm || !cl_m || !cl_d || (rs->available && rs->out.map && !diff)) {
    rc = arkcos_fail(err, ARKCOS_ENOMEM, "spectra: out of memory");
    goto done;
  }
  rc = ref_map2alm(g, lmax, iter, map, NULL, alm, c->max_threads, err);
  if (rc) goto done;
  ref_alm2cl(lmax, alm, alm, cl_m);
  if (diff) {
    if (!rs->cl || rs->cl_lmax != lmax) {
      free(rs->cl);
      rs->cl = calloc((size_t)lmax + 1, sizeof(double));
      rs->cl_lmax = lmax;
      if (!rs->cl) {
        rc = arkcos_fail(err, ARKCOS_ENOMEM, "spectra: out of memory");
        goto done;
      }
      if (cfg->reference == CFG_REF_EXACT) {
        /* exact: C_l of K_l a_lm from the input's a_lm */
        double *kl = malloc((size_t)(in->lmax + 1) * sizeof *kl);
        double complex *sa = malloc((size_t)ref_alm_size(in->lmax) * sizeof *sa);
        double *clx = calloc((size_t)in->lmax + 1, sizeof(double));
        if (!kl || !sa || !clx) rc = arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
        if (!rc) rc = arkcos_kernel_legendre(c->kernels[ki], in->lmax, kl, err);
        if (!rc) {
          memcpy(sa, in->alm, (size_t)ref_alm_size(in->lmax) * sizeof *sa);
          ref_alm_scale(in->lmax, kl, sa);
          ref_alm2cl(in->lmax, sa, sa, clx);
          for (int l = 0; l <= lmax && l <= in->lmax; l++) rs->cl[l] = clx[l];
        }
        free(kl);
        free(sa);
        free(clx);
      } else {
        rc = ref_map2alm(g, lmax, iter, rs->out.map, NULL, alm, c->max_threads, err);
        if (!rc) ref_alm2cl(lmax, alm, alm, rs->cl);
      }
      if (rc) {
        free(rs->cl);
        rs->cl = NULL;
        goto done;
      }
    }
    for (int64_t p = 0; p < g->npix; p++) diff[p] = map[p] - rs->out.map[p];
    rc = ref_map2alm(g, lmax, iter, diff, NULL, alm, c->max_threads, err);
    if (rc) goto done;
    ref_alm2cl(lmax, alm, alm, cl_d);
    double resid = 0, dmax = 0;
    int nl = 0;
    for (int l = 2; l <= lmax; l++) {
      if (!(rs->cl[l] > 0)) continue;
      double r = fabs(cl_m[l] - rs->cl[l]) / rs->cl[l];
      double d = cl_d[l] / rs->cl[l];
      if (r > resid) resid = r;
      if (d > dmax) dmax = d;
      nl++;
    }
    if (nl) {
      set_real(mj, "cl_resid_max", resid);
      set_real(mj, "cl_diff_max", dmax);
      json_object_set_new(mj, "cl_lmax", json_integer(lmax));
    }
  }
  {
    char path[8400];
    snprintf(path, sizeof path, "%s/%s", c->doc.dir, rel);
    size_t cap = (size_t)(lmax + 1) * 96 + 512;
    char *text = malloc(cap);
    if (!text) {
      rc = arkcos_fail(err, ARKCOS_ENOMEM, "spectra: out of memory");
      goto done;
    }
    size_t u = (size_t)snprintf(text, cap,
                                "# angular power spectra, lmax %d, map2alm with %d iterations\n"
                                "# columns: l  C_l(method map)  C_l(reference: %s)  "
                                "C_l(method - reference)\n",
                                lmax, iter,
                                !diff ? "none"
                                : cfg->reference == CFG_REF_EXACT
                                    ? "exact, from K_l a_lm"
                                    : "map2alm of the reference map");
    for (int l = 0; l <= lmax && u < cap; l++)
      u += (size_t)snprintf(text + u, cap - u, "%d %.10e %.10e %.10e\n", l, cl_m[l],
                            diff ? rs->cl[l] : NAN, diff ? cl_d[l] : NAN);
    rc = atomic_write_text(path, text, err);
    free(text);
  }
done:
  free(alm);
  free(cl_m);
  free(cl_d);
  free(diff);
  return rc;
}

/* Maps, patches and spectra of one finished case, recorded in "outputs"
 * with paths relative to the run folder. */
static int write_outputs(run_ctx *c, const arkcos_geometry *g, int ki, int mi,
                         const input_state *in, ref_state *rs, const method_out *o,
                         const char *slug, json_t *cj, json_t *mj, arkcos_error *err) {
  const run_config *cfg = c->cfg;
  if (!o->map) return ARKCOS_OK; /* a sampled direct sum has no map */
  int want = cfg->outputs.maps || cfg->outputs.npatches || cfg->outputs.spectra;
  if (!want) return ARKCOS_OK;
  json_t *outj = json_object();
  json_object_set_new(cj, "outputs", outj);
  char rel[600], path[8400];
  int rc = ARKCOS_OK;
  if (cfg->outputs.maps) {
    snprintf(path, sizeof path, "%s/maps", c->doc.dir);
    rc = results_doc_mkdirs(path, err);
    snprintf(rel, sizeof rel, "maps/%s.fits", slug);
    snprintf(path, sizeof path, "%s/%s", c->doc.dir, rel);
    const double *maps[1] = {o->map};
    if (!rc) rc = hpx_write_maps(path, maps, 1, g->nside, 0, cfg->outputs.maps_float32, 1, err);
    if (rc) return rc;
    json_object_set_new(outj, "map", json_string(rel));
  }
  if (cfg->outputs.npatches) {
    snprintf(path, sizeof path, "%s/patches", c->doc.dir);
    if ((rc = results_doc_mkdirs(path, err))) return rc;
    json_t *pl = json_array();
    json_object_set_new(outj, "patches", pl);
    /* the difference is shown relative to the reference map's rms (Fig. 4);
     * log patches are relative to the map's largest |value| (Fig. 6) */
    int with_diff = rs->available && rs->out.map && mi != cfg->reference;
    double maxabs = 0, rms_ref = with_diff ? rms_of(rs->out.map, g->npix) : 0;
    for (int64_t p = 0; p < g->npix; p++)
      if (fabs(o->map[p]) > maxabs) maxabs = fabs(o->map[p]);
    for (int i = 0; i < cfg->outputs.npatches; i++) {
      const cfg_patch *pc = &cfg->outputs.patches[i];
      int n = pc->n;
      double *img = malloc((size_t)n * n * sizeof *img);
      double *rimg = with_diff ? malloc((size_t)n * n * sizeof *rimg) : NULL;
      if (!img || (with_diff && !rimg)) {
        free(img);
        free(rimg);
        return arkcos_fail(err, ARKCOS_ENOMEM, "patch: out of memory");
      }
      double phi = fmod(pc->phi_deg, 360.0);
      if (phi < 0) phi += 360.0;
      json_t *pj = json_object();
      json_object_set_new(pj, "theta_deg", json_real(pc->theta_deg));
      json_object_set_new(pj, "phi_deg", json_real(pc->phi_deg));
      json_object_set_new(pj, "side_deg", json_real(pc->side_deg));
      json_object_set_new(pj, "n", json_integer(n));
      json_object_set_new(pj, "log", json_boolean(pc->log));
      json_array_append_new(pl, pj);
      rc = ref_patch(g, o->map, pc->theta_deg * DEG, phi * DEG, pc->side_deg * DEG, n, img, err);
      if (!rc && with_diff)
        rc = ref_patch(g, rs->out.map, pc->theta_deg * DEG, phi * DEG, pc->side_deg * DEG, n,
                       rimg, err);
      if (!rc && with_diff) {
        for (int64_t q = 0; q < (int64_t)n * n; q++)
          rimg[q] = rms_ref > 0 ? (img[q] - rimg[q]) / rms_ref : 0;
        snprintf(rel, sizeof rel, "patches/%s_p%d_diff.txt", slug, i);
        rc = write_patch(c->doc.dir, rel, rimg, n, pc->side_deg * DEG, pc->log, err);
        if (!rc) json_object_set_new(pj, "diff", json_string(rel));
      }
      if (!rc) {
        if (pc->log && maxabs > 0)
          for (int64_t q = 0; q < (int64_t)n * n; q++) img[q] /= maxabs;
        snprintf(rel, sizeof rel, "patches/%s_p%d_map.txt", slug, i);
        rc = write_patch(c->doc.dir, rel, img, n, pc->side_deg * DEG, pc->log, err);
        if (!rc) json_object_set_new(pj, "map", json_string(rel));
      }
      free(img);
      free(rimg);
      if (rc) return rc;
    }
  }
  if (cfg->outputs.spectra) {
    snprintf(path, sizeof path, "%s/spectra", c->doc.dir);
    if ((rc = results_doc_mkdirs(path, err))) return rc;
    snprintf(rel, sizeof rel, "spectra/%s.txt", slug);
    rc = write_spectra(c, g, ki, in, rs, o->map, rel, mj, err);
    if (rc) return rc;
    json_object_set_new(outj, "spectra", json_string(rel));
  }
  return ARKCOS_OK;
}

/* ------------------------------------------------------------ one case */

static void case_id(const run_config *cfg, int64_t nside, int ki, int mi, int threads,
                    char *buf, size_t len) {
  snprintf(buf, len, "nside=%lld kernel=%s method=%s threads=%d", (long long)nside,
           cfg->kernels[ki].id, cfg->methods[mi].id, threads);
}

static json_t *case_base(run_ctx *c, const char *id, int64_t nside, int ki, int mi,
                         int threads) {
  const run_config *cfg = c->cfg;
  json_t *cj = json_object();
  json_object_set_new(cj, "id", json_string(id));
  json_object_set_new(cj, "nside", json_integer(nside));
  json_t *kj = json_deep_copy(cfg->kernels[ki].json);
  double cut = arkcos_kernel_cutoff(c->kernels[ki]) / DEG;
  json_object_set_new(kj, "cutoff_deg", json_real(cut));
  json_object_set_new(kj, "cutoff_rel", json_real(arkcos_kernel_cutoff_level(c->kernels[ki])));
  json_object_set_new(kj, "support_deg", json_real(2 * cut));
  json_object_set_new(cj, "kernel", kj);
  json_object_set_new(cj, "method", json_deep_copy(cfg->methods[mi].json));
  json_object_set_new(cj, "threads", json_integer(threads));
  json_object_set_new(cj, "threads_used", json_integer(resolve_threads(threads)));
  json_object_set_new(cj, "status", json_string("ok")); /* set for real later; keeps the key order */
  return cj;
}

static void put_timing(json_t *cj, const cfg_method *m, const timing *t) {
  int n = t->n;
  double *sorted = malloc((size_t)n * sizeof *sorted);
  json_t *tj = json_object(), *sj = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(sj, json_real(t->samples[i]));
  if (sorted && n > 0) {
    memcpy(sorted, t->samples, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    json_object_set_new(tj, "min", json_real(sorted[0]));
    json_object_set_new(tj, "median",
                        json_real(n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2])));
    json_object_set_new(tj, "max", json_real(sorted[n - 1]));
  }
  json_object_set_new(tj, "samples", sj);
  json_object_set_new(tj, "warmup", json_integer(m->warmup));
  json_object_set_new(cj, "time", tj);
  if (m->type == CFG_METHOD_ARKCOS && n > 0 && sorted) {
    /* stages of the repeat whose time is the (lower) median */
    double med = sorted[(n - 1) / 2];
    int at = 0;
    for (int i = 0; i < n; i++)
      if (t->samples[i] == med) {
        at = i;
        break;
      }
    const arkcos_stage_times *s = &t->stages[at];
    json_t *st = json_object();
    json_object_set_new(st, "map_fft", json_real(s->map_fft));
    json_object_set_new(st, "kernel_eval", json_real(s->kernel_eval));
    json_object_set_new(st, "kernel_fft", json_real(s->kernel_fft));
    json_object_set_new(st, "reduction", json_real(s->reduction));
    json_object_set_new(st, "map_ifft", json_real(s->map_ifft));
    json_object_set_new(st, "h2d", json_real(s->h2d));
    json_object_set_new(st, "d2h", json_real(s->d2h));
    json_object_set_new(st, "other", json_real(s->other));
    json_object_set_new(cj, "stages", st);
    json_object_set_new(cj, "plan_time", json_real(t->plan_time));
    json_object_set_new(cj, "plan_memory", json_integer((json_int_t)t->plan_memory));
    json_object_set_new(cj, "backend_used",
                        json_string(t->backend_used == ARKCOS_BACKEND_GPU ? "gpu" : "cpu"));
  }
  if (m->type == CFG_METHOD_FSHT) json_object_set_new(cj, "lmax", json_integer(t->lmax));
  free(sorted);
}

static void progress(run_ctx *c, const char *what) {
  if (!c->progress) return;
  double el = wall_time() - c->t_start;
  char e[32], r[32];
  format_duration(el, e, sizeof e);
  if (c->ran_now > 0)
    format_duration(el / c->ran_now * (c->to_run - c->ran_now), r, sizeof r);
  else
    snprintf(r, sizeof r, "?");
  fprintf(stderr, "\r\033[K[%d/%d] %.100s  elapsed %s  remaining ~%s", c->index, c->total,
          what, e, r);
  fflush(stderr);
}

/* Runs (or skips) one case and records it. Returns 1 if the case failed. */
static int run_case(run_ctx *c, const arkcos_geometry *g, int ki, int mi, int threads,
                    const char *id, input_state *in, ref_state *rs) {
  const run_config *cfg = c->cfg;
  const cfg_method *m = &cfg->methods[mi];
  const arkcos_kernel *k = c->kernels[ki];
  json_t *cj = case_base(c, id, g->nside, ki, mi, threads);
  arkcos_error err = {0, ""};
  char why[900], slug[256];
  int failed = 0;
  case_slug(cfg, g->nside, ki, mi, threads, slug, sizeof slug);
  method_out out = {0};
  timing t = {0};

  if (skip_reason(c, m, g, k, why, sizeof why)) {
    json_object_set_new(cj, "status", json_string("skipped"));
    json_object_set_new(cj, "reason", json_string(why));
    if (mi == cfg->reference && !rs->tried) {
      rs->tried = 1;
      snprintf(rs->why, sizeof rs->why, "reference %s skipped: %s", m->label, why);
    }
    goto record;
  }
  if (make_input(c, g, in, &err)) goto fail;
  int tu = resolve_threads(threads);
  peak_reset();
  if (run_method(m, g, k, in->map, tu, m->repeats, m->warmup, &t, &out, &err)) goto fail;
  json_object_set_new(cj, "status", json_string("ok"));
  put_timing(cj, m, &t);
  json_object_set_new(cj, "peak_memory", json_integer((json_int_t)peak_read()));
  if (mi == cfg->reference && !rs->tried) { /* keep the first reference output */
    rs->tried = rs->available = 1;
    rs->out = out;
    memset(&out, 0, sizeof out);
  }
  {
    const method_out *mine = out.map || out.vals ? &out : &rs->out;
    json_t *mj = json_object();
    json_object_set_new(cj, "metrics", mj);
    json_object_set_new(mj, "reference",
                        json_string(cfg->reference >= 0 ? cfg->methods[cfg->reference].label
                                    : cfg->reference == CFG_REF_EXACT ? "exact"
                                                                      : "none"));
    if (cfg->reference >= 0)
      json_object_set_new(mj, "reference_id", json_string(cfg->methods[cfg->reference].id));
    ensure_reference(c, g, ki, in, rs);
    double rms_ref = 0;
    if (rs->available) {
      rms_ref = compare_with_reference(g, mine, rs, mj);
    } else {
      json_object_set_new(mj, "unavailable", json_string(rs->why));
      rms_ref = mine->map ? rms_of(mine->map, g->npix) : rms_of(mine->vals, mine->n);
    }
    if (cfg->input.type == CFG_INPUT_RANDOM && rms_ref > 0)
      set_real(mj, "truncation_rms_eq7",
               arkcos_kernel_truncation_rms(k, in->cl, in->lmax) / rms_ref);
    if (cfg->input.type == CFG_INPUT_POINT_SOURCES && mine->map) {
      double belt, cap;
      ringing_by_region(cfg, g, mine->map, arkcos_kernel_cutoff(k), &belt, &cap);
      if (belt >= 0) set_real(mj, "ringing_belt", belt);
      if (cap >= 0) set_real(mj, "ringing_cap", cap);
    }
    if (write_outputs(c, g, ki, mi, in, rs, mine, slug, cj, mj, &err)) goto fail;
  }
  goto record;

fail:
  failed = 1;
  json_object_set_new(cj, "status", json_string("failed"));
  json_object_set_new(cj, "reason", json_string(err.msg[0] ? err.msg : "unknown error"));
  json_object_del(cj, "metrics");
  json_object_del(cj, "outputs");
  if (mi == cfg->reference && !rs->tried) {
    rs->tried = 1;
    snprintf(rs->why, sizeof rs->why, "reference %s failed: %s", m->label, err.msg);
  }
record:
  method_out_free(&out);
  timing_free(&t);
  {
    arkcos_error werr = {0, ""};
    if (results_doc_put(&c->doc, cj, &werr)) {
      if (c->progress) fputc('\n', stderr);
      report_error(&werr);
      exit(1); /* cannot record: stop rather than run unrecorded cases */
    }
  }
  return failed;
}

/* ------------------------------------------------------------ resume */

/* The JSON path of the first difference between two normalized configs. */
static void first_difference(const json_t *a, const json_t *b, const char *path,
                             char *out, size_t len) {
  char sub[512];
  if (json_is_object(a) && json_is_object(b)) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v) {
      snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", k);
      json_t *w = json_object_get(b, k);
      if (!w) {
        snprintf(out, len, "%s", sub);
        return;
      }
      if (!config_equal(v, w)) {
        first_difference(v, w, sub, out, len);
        return;
      }
    }
    json_object_foreach((json_t *)b, k, v) {
      if (!json_object_get(a, k)) {
        snprintf(out, len, "%s%s%s", path, *path ? "." : "", k);
        return;
      }
    }
  } else if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!config_equal(json_array_get(a, i), json_array_get(b, i))) {
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        first_difference(json_array_get(a, i), json_array_get(b, i), sub, out, len);
        return;
      }
  }
  snprintf(out, len, "%s", *path ? path : "(top level)");
}

/* The newest results/<name>/<timestamp>/ that holds a results.json. */
static int latest_run_dir(const char *name, char *out, size_t len) {
  char base[1024];
  snprintf(base, sizeof base, "results/%.900s", name);
  DIR *d = opendir(base);
  if (!d) return 0;
  struct dirent *e;
  char best[256] = "";
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[4600];
    snprintf(p, sizeof p, "%s/%s/results.json", base, e->d_name);
    if (access(p, R_OK) == 0 && strcmp(e->d_name, best) > 0)
      snprintf(best, sizeof best, "%s", e->d_name);
  }
  closedir(d);
  if (!best[0]) return 0;
  snprintf(out, len, "%s/%s", base, best);
  return 1;
}

/* ------------------------------------------------------------ command */

static int usage(FILE *f, int status) {
  fprintf(f,
          "usage: arkcos run CONFIG.json [--out DIR] [--resume] [--force]\n"
          "  Runs every case of a JSON sweep (configs/README.md documents the schema)\n"
          "  and writes DIR/results.json and DIR/summary.csv after each case.\n"
          "  --out DIR   output folder (default results/<name>/<UTC timestamp>/)\n"
          "  --resume    continue the run in DIR (default: the newest run of this\n"
          "              config's name): recorded cases are kept, failed ones retried;\n"
          "              refused (exit 2) when the config differs from the recorded one\n"
          "  --force     start over in DIR even if it holds a results.json\n"
          "Exit status: 0 every case ran or was skipped, 1 a case failed, 2 bad config.\n");
  return status;
}

int cmd_run(int argc, char **argv) {
  const char *cfgpath = NULL, *out = NULL;
  int resume = 0, force = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(stdout, 0);
    if (!strcmp(argv[i], "--out") || !strcmp(argv[i], "-o")) {
      if (++i >= argc) {
        fprintf(stderr, "arkcos run: --out needs a folder\n");
        return 2;
      }
      out = argv[i];
    } else if (!strncmp(argv[i], "--out=", 6)) {
      out = argv[i] + 6;
    } else if (!strcmp(argv[i], "--resume")) {
      resume = 1;
    } else if (!strcmp(argv[i], "--force")) {
      force = 1;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "arkcos run: unknown option '%s'\n", argv[i]);
      return usage(stderr, 2);
    } else if (!cfgpath) {
      cfgpath = argv[i];
    } else {
      fprintf(stderr, "arkcos run: unexpected argument '%s'\n", argv[i]);
      return usage(stderr, 2);
    }
  }
  if (!cfgpath) return usage(stderr, 2);
  if (resume && force) {
    fprintf(stderr, "arkcos run: --resume and --force exclude each other\n");
    return 2;
  }

  run_config cfg;
  arkcos_error err = {0, ""};
  if (config_load(cfgpath, &cfg, &err)) {
    config_free(&cfg);
    return report_error(&err);
  }

  run_ctx c;
  memset(&c, 0, sizeof c);
  c.cfg = &cfg;
  int status = 2;
  int full_argc = 0;
  char **full_argv = NULL;

  /* Everything that can be checked is checked before the first case runs:
   * kernels are built, a FITS input is read. */
  c.kernels = calloc((size_t)cfg.nkernels, sizeof *c.kernels);
  for (int i = 0; i < cfg.nkernels; i++) {
    const cfg_kernel *kc = &cfg.kernels[i];
    arkcos_error kerr = {0, ""};
    if (kc->type == CFG_KERNEL_FILE) {
      c.kernels[i] = arkcos_kernel_from_file(kc->path, kc->cutoff_deg * DEG, kc->cutoff_rel, &kerr);
    } else {
      arkcos_kernel_spec s;
      memset(&s, 0, sizeof s);
      s.type = kc->type == CFG_KERNEL_GAUSSIAN ? ARKCOS_KERNEL_GAUSSIAN : ARKCOS_KERNEL_TOPHAT;
      s.fwhm = kc->fwhm_arcmin / 60.0 * DEG;
      s.cutoff = kc->cutoff_deg * DEG;
      s.cutoff_rel = kc->cutoff_rel;
      c.kernels[i] = arkcos_kernel_create(&s, &kerr);
    }
    if (!c.kernels[i]) {
      fprintf(stderr, "arkcos: %s: kernels[%d]: %s\n", cfgpath, i, kerr.msg);
      goto cleanup;
    }
  }
  if (cfg.input.type == CFG_INPUT_FITS) {
    hpx_map_info info;
    if (hpx_read_map(cfg.input.path, &c.fits_map, &info, &err)) {
      fprintf(stderr, "arkcos: %s: input.path: %s\n", cfgpath, err.msg);
      goto cleanup;
    }
    c.fits_nside = info.nside;
  }
  c.max_threads = 1;
  for (int i = 0; i < cfg.nthreads; i++)
    if (resolve_threads(cfg.threads[i]) > c.max_threads) c.max_threads = resolve_threads(cfg.threads[i]);
  c.memory_limit = cfg.memory_bytes > 0 ? cfg.memory_bytes : 0.9 * meta_memory_bytes();
  c.gpu_ok = arkcos_gpu_available(c.gpu_why, sizeof c.gpu_why);

  /* the command line as typed: "arkcos run ..." */
  full_argc = argc + 1;
  full_argv = malloc((size_t)(argc + 2) * sizeof *full_argv);
  if (!full_argv) goto cleanup;
  full_argv[0] = "arkcos";
  for (int i = 0; i <= argc; i++) full_argv[i + 1] = i < argc ? argv[i] : NULL;

  /* the output folder and document */
  char dir[4096];
  int have_dir = 0;
  if (out) {
    snprintf(dir, sizeof dir, "%s", out);
    have_dir = 1;
  } else if (resume) {
    have_dir = latest_run_dir(cfg.name, dir, sizeof dir);
  }
  char jpath[4200];
  snprintf(jpath, sizeof jpath, "%s/results.json", have_dir ? dir : ".");
  if (resume && have_dir && access(jpath, F_OK) == 0) {
    if (results_doc_open(&c.doc, dir, &err)) {
      report_error(&err);
      goto cleanup;
    }
    json_t *meta = json_object_get(c.doc.root, "meta");
    run_config old;
    arkcos_error oerr = {0, ""};
    json_t *given = json_object_get(meta, "config");
    if (!given || config_from_json(given, cfgpath, &old, &oerr)) {
      fprintf(stderr, "arkcos: cannot resume %s: its recorded config is not valid%s%s\n",
              jpath, oerr.msg[0] ? ": " : "", oerr.msg);
      config_free(&old);
      goto cleanup;
    }
    if (!config_equal(old.normalized, cfg.normalized)) {
      char where[512];
      first_difference(old.normalized, cfg.normalized, "", where, sizeof where);
      fprintf(stderr,
              "arkcos: cannot resume %s: %s differs from the config recorded there "
              "(first difference: %s); use another --out, or --force to start over\n",
              jpath, cfgpath, where);
      config_free(&old);
      goto cleanup;
    }
    config_free(&old);
    json_t *res = json_object_get(meta, "resumed");
    if (!json_is_array(res)) {
      res = json_array();
      json_object_set_new(meta, "resumed", res);
    }
    json_t *now = meta_collect(full_argc, full_argv);
    json_t *r = json_object();
    json_object_set(r, "date", json_object_get(now, "date"));
    json_object_set(r, "command", json_object_get(now, "command"));
    json_object_set(r, "host", json_object_get(now, "host"));
    json_object_set(r, "git_commit", json_object_get(now, "git_commit"));
    json_array_append_new(res, r);
    json_decref(now);
    if (results_doc_save(&c.doc, &err)) {
      report_error(&err);
      status = 1;
      goto cleanup;
    }
  } else {
    if (resume)
      fprintf(stderr, "arkcos run: nothing to resume%s%s; starting a new run\n",
              have_dir ? " in " : "", have_dir ? dir : "");
    if (!have_dir) {
      char stamp[64];
      meta_utc_time(stamp, sizeof stamp, 1);
      snprintf(dir, sizeof dir, "results/%s/%s", cfg.name, stamp);
      for (int k = 2; access(dir, F_OK) == 0 && k < 100; k++)
        snprintf(dir, sizeof dir, "results/%s/%s-%d", cfg.name, stamp, k);
    }
    json_t *meta = meta_collect(full_argc, full_argv);
    json_object_set(meta, "config", cfg.given);
    json_object_set_new(meta, "config_path", json_string(cfgpath));
    if (results_doc_create(&c.doc, dir, meta, force, &err)) {
      report_error(&err);
      status = arkcos_exit_status(err.code);
      goto cleanup;
    }
  }

  /* count the work */
  c.total = cfg.nnside * cfg.nkernels * cfg.nmethods * cfg.nthreads;
  for (int a = 0; a < cfg.nnside; a++)
    for (int ki = 0; ki < cfg.nkernels; ki++)
      for (int mi = 0; mi < cfg.nmethods; mi++)
        for (int ti = 0; ti < cfg.nthreads; ti++) {
          char id[2048];
          case_id(&cfg, cfg.nside[a], ki, mi, cfg.threads[ti], id, sizeof id);
          json_t *old = results_doc_find(&c.doc, id);
          const char *st = json_string_value(json_object_get(old, "status"));
          if (!old || (st && !strcmp(st, "failed"))) c.to_run++;
        }
  c.progress = isatty(2);
  const char *stop = getenv("ARKCOS_TEST_STOP_AFTER");
  c.stop_after = stop ? atol(stop) : 0;
  c.t_start = wall_time();

  for (int a = 0; a < cfg.nnside; a++) {
    int64_t nside = cfg.nside[a];
    arkcos_geometry *g = NULL;
    input_state in;
    memset(&in, 0, sizeof in);
    for (int ki = 0; ki < cfg.nkernels; ki++) {
      ref_state rs;
      memset(&rs, 0, sizeof rs);
      for (int step = -1; step < cfg.nmethods; step++) {
        /* the reference method first */
        int mi = step < 0 ? cfg.reference : step;
        if (mi < 0 || (step >= 0 && mi == cfg.reference)) continue;
        for (int ti = 0; ti < cfg.nthreads; ti++) {
          char id[2048];
          case_id(&cfg, nside, ki, mi, cfg.threads[ti], id, sizeof id);
          c.index++;
          json_t *old = results_doc_find(&c.doc, id);
          const char *st = json_string_value(json_object_get(old, "status"));
          if (old && !(st && !strcmp(st, "failed"))) continue;
          if (!g) {
            g = arkcos_geometry_healpix(nside, &err);
            if (!g) {
              if (c.progress) fputc('\n', stderr);
              report_error(&err);
              status = 1;
              goto cleanup;
            }
          }
          char slug[512];
          case_slug(&cfg, nside, ki, mi, cfg.threads[ti], slug, sizeof slug);
          progress(&c, slug);
          run_case(&c, g, ki, mi, cfg.threads[ti], id, &in, &rs);
          c.ran_now++;
          if (c.stop_after > 0 && c.ran_now >= c.stop_after) {
            if (c.progress) fputc('\n', stderr);
            fprintf(stderr, "arkcos run: ARKCOS_TEST_STOP_AFTER=%ld: killing the run\n",
                    c.stop_after);
            raise(SIGKILL);
          }
        }
      }
      ref_free(&rs);
    }
    input_free(&in);
    arkcos_geometry_destroy(g);
  }
  if (c.progress) fprintf(stderr, "\r\033[K");

  /* summary over the whole document (a resumed run included) */
  int nok = 0, nskip = 0, nfail = 0;
  json_t *cases = json_object_get(c.doc.root, "cases");
  size_t i;
  json_t *cj;
  json_array_foreach(cases, i, cj) {
    const char *st = json_string_value(json_object_get(cj, "status"));
    if (st && !strcmp(st, "ok")) nok++;
    else if (st && !strcmp(st, "skipped")) nskip++;
    else nfail++;
  }
  printf("arkcos run: %zu cases (%d ok, %d skipped, %d failed; %d run now) in %.1f s -> %s\n",
         json_array_size(cases), nok, nskip, nfail, c.ran_now, wall_time() - c.t_start,
         c.doc.json_path);
  status = nfail ? 1 : 0;

cleanup:
  free(full_argv);
  results_doc_free(&c.doc);
  for (int i2 = 0; c.kernels && i2 < cfg.nkernels; i2++) arkcos_kernel_destroy(c.kernels[i2]);
  free(c.kernels);
  free(c.fits_map);
  config_free(&cfg);
  return status;
}
