/*
 * bench.c -- `make bench`: ARKCoS CPU against libsharp FSHT smoothing in one
 * run, same machine, same threads. Reports; never asserts.
 *
 * usage: bench [--nside N,N,...] [--threads T] [--repeats R] [--fsht-repeats R]
 *              [--fwhm-arcmin-2048 F] [--cutoff-rel EPS] [--no-fsht] [--no-cache]
 *              [--tophat-px R] [--accuracy EPS]
 *              [--oversample Q]   (no effect since the caps are exact; accepted, with a warning)
 *        bench --support-sweep NSIDE [--threads T] [--repeats R]
 *        bench --spin2 [--nside N,...] [--threads T] [--repeats R] [--fsht-repeats R]
 * ARKCoS times are medians of --repeats executes (default 9: single runs on a
 * shared machine scatter by tens of percent), FSHT times of --fsht-repeats (1),
 * at lmax = 3 nside - 1 (healpy's default) and 2 nside (the paper's), iter 0
 * and 3, all in the same run.
 * The beam keeps the pixels-per-FWHM ratio of 4.7' at nside 2048 (about 2.8):
 * FWHM = 4.7' * 2048 / nside unless --fwhm-arcmin-2048 says otherwise;
 * --tophat-px R takes a top-hat of R pixels' radius instead. Beside the
 * default (exact) plan, one with --accuracy EPS (default 1e-5): the cheaper
 * path its a-priori bound allows.
 * --spin2 times the polarized smoothing of Q and U (one spin-2 plan) beside
 * the scalar smoothing of one map with the same beam, and libsharp's spin-2
 * smoothing (map2alm_spin, E and B times K_l^(2), alm2map_spin) at both band
 * limits, iter 0 and 3, in the same run.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"
#include "harness/common/util.h"
#include "reference/reference.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  qsort(v, n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Time against kernel support (diameter) at one nside: a Gaussian cut at
 * `rel` of its peak with cutoff = support / 2. Fits t = a + b * rings and
 * reports where the line crosses FSHT (iter 0 and 3) on the same threads.
 * Long on purpose: one table, measured and fitted in a single pass. */
static int support_sweep(long nside, int threads, int repeats, double rel) {
  const double supports[] = {0.25, 0.5, 1, 2, 4, 8, 16};
  const int ns = 7;
  arkcos_error err;
  arkcos_geometry *g = arkcos_geometry_healpix(nside, &err);
  if (!g) return fprintf(stderr, "bench: %s\n", err.msg), 1;
  double *in = malloc(sizeof(double) * g->npix), *out = malloc(sizeof(double) * g->npix);
  for (int64_t i = 0; i < g->npix; i++) in[i] = sin(0.001 * (double)i) + cos(0.37 * (double)i);
  double rings[7], secs[7], ts[64];
  double ring_step = 2.0 / (3.0 * (double)nside) * 180 / M_PI; /* equatorial ring spacing, deg */
  printf("# support sweep: nside %ld, %d threads, Gaussian cut at %.0e of the peak, cutoff = support / 2\n", nside,
         threads, rel);
  printf("# %8s %8s %8s %10s | %5s %5s %5s %5s %5s\n", "support", "fwhm'", "rings", "arkcos_s", "mapff", "keval",
         "kfft", "reduc", "ifft");
  arkcos_kernel *k = NULL;
  for (int c = 0; c < ns; c++) {
    arkcos_kernel_spec ks = {0};
    ks.type = ARKCOS_KERNEL_GAUSSIAN;
    ks.cutoff = 0.5 * supports[c] * M_PI / 180;
    ks.fwhm = ks.cutoff / sqrt(2 * log(1 / rel)) * sqrt(8 * log(2.0));
    arkcos_kernel_destroy(k);
    k = arkcos_kernel_create(&ks, &err);
    arkcos_options o;
    arkcos_options_default(&o);
    o.backend = ARKCOS_BACKEND_CPU;
    o.threads = threads;
    arkcos_plan *p = arkcos_plan_create(g, k, &o, &err);
    if (!p) return fprintf(stderr, "bench: %s\n", err.msg), 1;
    arkcos_execute(p, in, out, &err);
    arkcos_stage_times st;
    for (int r = 0; r < repeats && r < 64; r++) {
      double t0 = wall_time();
      arkcos_execute(p, in, out, &err);
      ts[r] = wall_time() - t0;
    }
    arkcos_plan_stages(p, &st);
    arkcos_plan_destroy(p);
    rings[c] = supports[c] / ring_step;
    secs[c] = median(ts, repeats < 64 ? repeats : 64);
    double tot = st.total > 0 ? st.total : 1;
    printf("  %8.2f %8.2f %8.0f %10.4f | %4.0f%% %4.0f%% %4.0f%% %4.0f%% %4.0f%%\n", supports[c], ks.fwhm * 10800 / M_PI,
           rings[c], secs[c], 100 * st.map_fft / tot, 100 * st.kernel_eval / tot, 100 * st.kernel_fft / tot,
           100 * st.reduction / tot, 100 * st.map_ifft / tot);
    fflush(stdout);
  }
  /* least squares t = a + b rings */
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int c = 0; c < ns; c++) {
    sx += rings[c];
    sy += secs[c];
    sxx += rings[c] * rings[c];
    sxy += rings[c] * secs[c];
  }
  double b = (ns * sxy - sx * sy) / (ns * sxx - sx * sx), a = (sy - b * sx) / ns;
  double f[2];
  for (int it = 0; it <= 1; it++) {
    double t0 = wall_time();
    if (ref_fsht_smooth(g, k, in, out, (int)(3 * nside - 1), it * 3, NULL, threads, &err))
      return fprintf(stderr, "bench: %s\n", err.msg), 1;
    f[it] = wall_time() - t0;
  }
  printf("# fit: t = %.4f s + %.3g s/ring (%.3g s per degree of support)\n", a, b, b / ring_step);
  for (int it = 0; it <= 1; it++)
    printf("# FSHT iter %d: %.3f s -> ARKCoS is faster below a support of %.0f rings (%.1f deg)\n", it * 3, f[it],
           (f[it] - a) / b, (f[it] - a) / b * ring_step);
  arkcos_kernel_destroy(k);
  free(in);
  free(out);
  arkcos_geometry_destroy(g);
  return 0;
}

typedef struct bench_args {
  long nsides[8];
  int nn, threads, repeats, frep, do_fsht, do_cache, spin2;
  long sweep_nside;
  double fwhm2048, rel, tophat_px, accuracy;
} bench_args;

static int parse_args(int argc, char **argv, bench_args *a) {
  *a = (bench_args){.nsides = {512, 1024, 2048}, .nn = 3, .threads = 2, .repeats = 9, .frep = 1,
                    .do_fsht = 1, .do_cache = 1, .fwhm2048 = 4.7, .rel = 1e-5, .accuracy = 1e-5};
  int oversample = 0; /* given: no effect since the caps are exact */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--nside") && i + 1 < argc) {
      a->nn = 0;
      for (char *t = strtok(argv[++i], ","); t && a->nn < 8; t = strtok(NULL, ",")) a->nsides[a->nn++] = atol(t);
    } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) a->threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) a->repeats = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--fsht-repeats") && i + 1 < argc) a->frep = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--fwhm-arcmin-2048") && i + 1 < argc) a->fwhm2048 = atof(argv[++i]);
    else if (!strcmp(argv[i], "--cutoff-rel") && i + 1 < argc) a->rel = atof(argv[++i]);
    else if (!strcmp(argv[i], "--no-fsht")) a->do_fsht = 0;
    else if (!strcmp(argv[i], "--no-cache")) a->do_cache = 0;
    else if (!strcmp(argv[i], "--spin2")) a->spin2 = 1;
    else if (!strcmp(argv[i], "--oversample") && i + 1 < argc) {
      i++;
      oversample = 1;
    }
    else if (!strcmp(argv[i], "--support-sweep") && i + 1 < argc) a->sweep_nside = atol(argv[++i]);
    else if (!strcmp(argv[i], "--tophat-px") && i + 1 < argc) a->tophat_px = atof(argv[++i]);
    else if (!strcmp(argv[i], "--accuracy") && i + 1 < argc) a->accuracy = atof(argv[++i]);
    else {
      fprintf(stderr, "bench: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (a->threads == 0) a->threads = omp_get_max_threads(); /* 0: all cores */
  if (a->repeats < 1 || a->frep < 1 || a->threads < 1 || !(a->tophat_px >= 0) || !(a->accuracy > 0)) {
    fprintf(stderr, "bench: repeats and threads must be >= 1, --tophat-px >= 0, --accuracy > 0\n");
    return 2;
  }
  if (oversample)
    fprintf(stderr, "bench: warning: --oversample has no effect (the polar caps are exact now); ignored\n");
  return 0;
}

/* One plan's timing: median execute after a warm-up, mean stage times. */
typedef struct plan_timing {
  double median, plan, memory_mb, bound;
  arkcos_stage_times mean;
} plan_timing;

static int time_plan(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                     const double *in, double *out, int repeats, plan_timing *t, arkcos_error *err) {
  memset(t, 0, sizeof *t);
  double t0 = wall_time();
  arkcos_plan *p = arkcos_plan_create(g, k, o, err);
  t->plan = wall_time() - t0;
  double *ts = malloc(sizeof(double) * repeats);
  if (!p || !ts) {
    arkcos_plan_destroy(p);
    free(ts);
    return p ? arkcos_fail(err, ARKCOS_ENOMEM, "out of memory") : err->code;
  }
  arkcos_execute(p, in, out, err); /* warm-up */
  for (int r = 0; r < repeats; r++) {
    arkcos_stage_times st;
    t0 = wall_time();
    arkcos_execute(p, in, out, err);
    ts[r] = wall_time() - t0;
    arkcos_plan_stages(p, &st);
    t->mean.map_fft += st.map_fft / repeats;
    t->mean.kernel_eval += st.kernel_eval / repeats;
    t->mean.kernel_fft += st.kernel_fft / repeats;
    t->mean.reduction += st.reduction / repeats;
    t->mean.map_ifft += st.map_ifft / repeats;
    t->mean.direct += st.direct / repeats;
    t->mean.total += st.total / repeats;
  }
  t->median = median(ts, repeats);
  t->memory_mb = arkcos_plan_memory(p) / 1e6;
  t->bound = arkcos_plan_bound(p);
  arkcos_plan_destroy(p);
  free(ts);
  return 0;
}

/* FSHT smoothing times, median of frep: f[0], f[1] at lmax = 3 nside - 1
 * (healpy's default), iter 0 and 3; f[2], f[3] at lmax = 2 nside (the
 * paper's), iter 0 and 3. */
static int time_fsht(const arkcos_geometry *g, const arkcos_kernel *k, const double *in, double *out,
                     int threads, int frep, double f[4], arkcos_error *err) {
  const int lmaxes[2] = {(int)(3 * g->nside - 1), (int)(2 * g->nside)};
  double *fs = malloc(sizeof(double) * frep);
  if (!fs) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  for (int c = 0; c < 4; c++) {
    for (int r = 0; r < frep; r++) {
      double t0 = wall_time();
      int rc = ref_fsht_smooth(g, k, in, out, lmaxes[c / 2], c % 2 ? 3 : 0, NULL, threads, err);
      if (rc) {
        free(fs);
        return rc;
      }
      fs[r] = wall_time() - t0;
    }
    f[c] = median(fs, frep);
  }
  free(fs);
  return 0;
}

static void print_header(const bench_args *a) {
  if (a->tophat_px > 0)
    printf("# ARKCoS CPU bench: %d threads, top-hat of %.3g pixels' radius, double\n", a->threads, a->tophat_px);
  else
    printf("# ARKCoS CPU bench: %d threads, Gaussian FWHM = %.2f' * 2048 / nside, cut at %.0e of the peak, double\n",
           a->threads, a->fwhm2048, a->rel);
  printf("# %-5s %7s %7s %6s | %9s %9s %9s | %7s %7s | %9s %9s | %5s %5s %5s %5s %5s (%5s) | %8s %8s\n", "nside",
         "fwhm'", "cut'", "rings", "arkcos_s", "plan_s", "reuse_s", "fsht0_s", "fsht3_s", "x_iter0", "x_iter3",
         "mapff", "keval", "kfft", "reduc", "ifft", "direct", "plan_MB", "rss_MB");
  printf("#       %7s %7s %6s | %9s | %9s %9s\n", "", "", "", "cached_s", "cache_MB", "");
}

static void print_rows(long nside, const arkcos_kernel *k, double fwhm, const plan_timing *t,
                       double tcache, double cache_mb, const plan_timing *tq1, double acc, const double f[4]) {
  const arkcos_stage_times *sm = &t->mean;
  double tot = sm->total > 0 ? sm->total : 1, cut = arkcos_kernel_cutoff(k);
  printf("  %-5ld %7.2f %7.2f %6d | %9.4f %9.4f %9.4f | %7.2f %7.2f | %9.1f %9.1f | %4.0f%% %4.0f%% %4.0f%% %4.0f%% %4.0f%% (%4.0f%%) | %8.0f %8.0f\n",
         nside, fwhm * 10800 / M_PI, cut * 10800 / M_PI, (int)ceil(2 * cut / (M_PI / (4.0 * nside))),
         t->median, t->plan, t->median + t->plan, f[0], f[1], f[0] / t->median, f[1] / t->median,
         100 * sm->map_fft / tot, 100 * sm->kernel_eval / tot, 100 * sm->kernel_fft / tot,
         100 * sm->reduction / tot, 100 * sm->map_ifft / tot, 100 * sm->direct / tot, t->memory_mb,
         peak_rss_bytes() / 1e6);
  printf("        %7s %7s %6s | bound %.2g (a-priori, per unit max |input|)\n", "", "", "", t->bound);
  printf("        %7s %7s %6s | %9s | %7.2f %7.2f | %9.1f %9.1f   (FSHT at lmax = 2 nside, the paper's)\n", "",
         "", "", "", f[2], f[3], f[2] / t->median, f[3] / t->median);
  printf("        %7s %7s %6s | %9.4f | %9.0f   (cached kernel spectra: per-map time, plan memory)\n", "", "", "",
         tcache, cache_mb);
  printf("        %7s %7s %6s | %9.4f | %9s %9s | %9.1f %9.1f   (--accuracy %.0e: bound %.2g, plan %.0f MB)\n",
         "", "", "", tq1->median, "", "", f[0] / tq1->median, f[1] / tq1->median, acc, tq1->bound, tq1->memory_mb);
  printf("        %7s %7s %6s | %9s | %9s %9s | %9.1f %9.1f   (--accuracy %.0e, FSHT at lmax = 2 nside)\n", "", "", "",
         "", "", "", f[2] / tq1->median, f[3] / tq1->median, acc);
}

/* One nside: the default (exact) plan, a plan with --accuracy, plan reuse
 * with cached kernel spectra (the per-map cost of many maps) and FSHT. */
static int bench_nside(const bench_args *a, long nside) {
  arkcos_error err = {0, ""};
  arkcos_kernel_spec ks = {0};
  ks.type = ARKCOS_KERNEL_GAUSSIAN;
  ks.fwhm = a->fwhm2048 * 2048.0 / (double)nside * M_PI / 10800;
  ks.cutoff_rel = a->rel;
  if (a->tophat_px > 0) { /* radius in pixels of sqrt(4 pi / npix) */
    ks = (arkcos_kernel_spec){0};
    ks.type = ARKCOS_KERNEL_TOPHAT;
    ks.cutoff = a->tophat_px * sqrt(M_PI / 3) / (double)nside;
  }
  arkcos_geometry *g = arkcos_geometry_healpix(nside, &err);
  arkcos_kernel *k = g ? arkcos_kernel_create(&ks, &err) : NULL;
  double *in = g ? malloc(sizeof(double) * g->npix) : NULL, *out = g ? malloc(sizeof(double) * g->npix) : NULL;
  int rc = !g || !k ? err.code : !in || !out ? arkcos_fail(&err, ARKCOS_ENOMEM, "out of memory") : 0;
  uint64_t s = 1;
  for (int64_t i = 0; !rc && i < g->npix; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    in[i] = (double)(s >> 11) * 0x1.0p-53 - 0.5;
  }
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.threads = a->threads;
  plan_timing t, t1 = {.median = NAN}, tc = {.median = NAN, .memory_mb = NAN};
  double f[4] = {NAN, NAN, NAN, NAN};
  if (!rc) rc = time_plan(g, k, &o, in, out, a->repeats, &t, &err);
  if (!rc) {
    o.accuracy = a->accuracy;
    if (time_plan(g, k, &o, in, out, a->repeats, &t1, &err)) t1.median = t1.bound = NAN;
    o.accuracy = 0;
  }
  if (!rc && a->do_cache) {
    o.cache_kernel_spectra = 1;
    if (time_plan(g, k, &o, in, out, a->repeats, &tc, &err)) {
      fprintf(stderr, "bench: nside %ld: no cached plan: %s\n", nside, err.msg);
      tc.median = tc.memory_mb = NAN;
    }
  }
  if (!rc && a->do_fsht) rc = time_fsht(g, k, in, out, a->threads, a->frep, f, &err);
  if (!rc) print_rows(nside, k, ks.fwhm, &t, tc.median, tc.memory_mb, &t1, a->accuracy, f);
  else fprintf(stderr, "bench: %s\n", err.msg);
  fflush(stdout);
  free(in);
  free(out);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
  return rc ? 1 : 0;
}

/* Median execute of a spin-2 plan on (q, u) after a warm-up. */
static int time_spin2(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                      const double *q, const double *u, double *qo, double *uo, int repeats, plan_timing *t,
                      arkcos_error *err) {
  memset(t, 0, sizeof *t);
  double t0 = wall_time();
  arkcos_plan *p = arkcos_plan_create(g, k, o, err);
  t->plan = wall_time() - t0;
  double *ts = malloc(sizeof(double) * repeats);
  int rc = !p ? err->code : !ts ? arkcos_fail(err, ARKCOS_ENOMEM, "out of memory") : 0;
  if (!rc) rc = arkcos_execute_spin2(p, q, u, qo, uo, err); /* warm-up */
  for (int r = 0; !rc && r < repeats; r++) {
    t0 = wall_time();
    rc = arkcos_execute_spin2(p, q, u, qo, uo, err);
    ts[r] = wall_time() - t0;
  }
  if (!rc) {
    t->median = median(ts, repeats);
    t->memory_mb = arkcos_plan_memory(p) / 1e6;
    t->bound = arkcos_plan_bound(p);
  }
  arkcos_plan_destroy(p);
  free(ts);
  return rc;
}

/* --spin2, one nside: Q and U through one spin-2 plan against one scalar
 * map through a scalar plan (same beam, same threads), and libsharp's
 * spin-2 smoothing at lmax = 3 nside - 1 and 2 nside, iter 0 and 3. */
static int bench_spin2_nside(const bench_args *a, long nside) {
  arkcos_error err = {0, ""};
  arkcos_kernel_spec ks = {0};
  ks.type = ARKCOS_KERNEL_GAUSSIAN;
  ks.fwhm = a->fwhm2048 * 2048.0 / (double)nside * M_PI / 10800;
  ks.cutoff_rel = a->rel;
  arkcos_geometry *g = arkcos_geometry_healpix(nside, &err);
  arkcos_kernel *k = g ? arkcos_kernel_create(&ks, &err) : NULL;
  const size_t n = g ? (size_t)g->npix : 0;
  double *buf = g ? malloc(sizeof(double) * 4 * n) : NULL;
  int rc = !g || !k ? err.code : !buf ? arkcos_fail(&err, ARKCOS_ENOMEM, "out of memory") : 0;
  double *q = buf, *u = buf + n, *qo = buf + 2 * n, *uo = buf + 3 * n;
  uint64_t s = 7;
  for (size_t i = 0; !rc && i < 2 * n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    buf[i] = (double)(s >> 11) * 0x1.0p-53 - 0.5;
  }
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.threads = a->threads;
  plan_timing ts0, ts2;
  double f[4] = {NAN, NAN, NAN, NAN};
  if (!rc) rc = time_plan(g, k, &o, q, qo, a->repeats, &ts0, &err);
  o.spin = 2;
  if (!rc) rc = time_spin2(g, k, &o, q, u, qo, uo, a->repeats, &ts2, &err);
  const int lmaxes[2] = {(int)(3 * nside - 1), (int)(2 * nside)};
  for (int c = 0; !rc && a->do_fsht && c < 4; c++) {
    double *fs = malloc(sizeof(double) * a->frep);
    for (int r = 0; fs && !rc && r < a->frep; r++) {
      double t0 = wall_time();
      rc = ref_fsht_smooth_spin2(g, k, q, u, qo, uo, lmaxes[c / 2], c % 2 ? 3 : 0, NULL, a->threads, &err);
      fs[r] = wall_time() - t0;
    }
    if (!fs) rc = arkcos_fail(&err, ARKCOS_ENOMEM, "out of memory");
    if (!rc) f[c] = median(fs, a->frep);
    free(fs);
  }
  if (!rc)
    printf("  %-5ld %7.2f | %9.4f %9.4f %7.2f | %8.2f %8.2f %8.2f %8.2f | %7.1f %7.1f %7.1f %7.1f | %8.0f %.2g\n",
           nside, ks.fwhm * 10800 / M_PI, ts0.median, ts2.median, ts2.median / ts0.median, f[2], f[3], f[0], f[1],
           f[2] / ts2.median, f[3] / ts2.median, f[0] / ts2.median, f[1] / ts2.median, ts2.memory_mb, ts2.bound);
  else
    fprintf(stderr, "bench: %s\n", err.msg);
  fflush(stdout);
  free(buf);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
  return rc ? 1 : 0;
}

static int bench_spin2(const bench_args *a) {
  printf("# ARKCoS CPU bench, polarization: %d threads, Gaussian FWHM = %.2f' * 2048 / nside, cut at %.0e, double\n",
         a->threads, a->fwhm2048, a->rel);
  printf("# %-5s %7s | %9s %9s %7s | %8s %8s %8s %8s | %7s %7s %7s %7s | %8s %s\n", "nside", "fwhm'", "scalar_s",
         "spin2_s", "s2/s0", "f2n_it0", "f2n_it3", "f3n_it0", "f3n_it3", "x2n_0", "x2n_3", "x3n_0", "x3n_3",
         "plan_MB", "bound");
  for (int c = 0; c < a->nn; c++)
    if (bench_spin2_nside(a, a->nsides[c])) return 1;
  printf("# scalar_s: median execute of one map (scalar plan); spin2_s: median execute of Q and U together\n"
         "# (spin-2 plan, exact against the spin-2 direct sum); s2/s0: their ratio;\n"
         "# f2n/f3n: libsharp spin-2 smoothing of Q and U (map2alm_spin, E and B times K_l^(2), alm2map_spin)\n"
         "# at lmax = 2 nside (the paper's) and 3 nside - 1 (healpy's default), iter 0 and 3;\n"
         "# x..: that time / spin2_s\n");
  return 0;
}

int main(int argc, char **argv) {
  bench_args a;
  if (parse_args(argc, argv, &a)) return 2;
  omp_set_num_threads(a.threads);
  if (a.sweep_nside > 0) return support_sweep(a.sweep_nside, a.threads, a.repeats, a.rel);
  if (a.spin2) return bench_spin2(&a);
  print_header(&a);
  for (int c = 0; c < a.nn; c++)
    if (bench_nside(&a, a.nsides[c])) return 1;
  printf("# arkcos_s: median execute of the default plan, exact on the whole sphere (bound: its a-priori bound);\n"
         "# fsht0_s/fsht3_s: FSHT smoothing at lmax = 3 nside - 1 (healpy's default), iter 0 and 3;\n"
         "# the 'lmax = 2 nside' row: the same at the paper's band limit;\n"
         "# the '--accuracy' rows: a plan allowed the cheaper path its bound permits (float direct weights);\n"
         "# direct: the share of the execute in directly summed ring pairs (part of reduc);\n"
         "# reuse_s: plan + one execute (no reuse); cached_s: median\n"
         "# execute of a plan that keeps every kernel spectrum (many maps, one beam);\n"
         "# x_iter0/3: FSHT time / ARKCoS time; stage shares of the execute time; rings: approx. support in rings\n");
  return 0;
}
