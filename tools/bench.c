/*
 * bench.c -- `make bench`: ARKCoS CPU against libsharp FSHT smoothing in one
 * run, same machine, same threads. Reports; never asserts.
 *
 * usage: bench [--nside N,N,...] [--threads T] [--repeats R] [--fsht-repeats R]
 *              [--fwhm-arcmin-2048 F] [--cutoff-rel EPS] [--no-fsht] [--no-cache]
 *              [--oversample Q]
 *        bench --support-sweep NSIDE [--threads T] [--repeats R]
 * ARKCoS times are medians of --repeats executes (default 9: single runs on a
 * shared machine scatter by tens of percent), FSHT times of --fsht-repeats (1).
 * The beam keeps the pixels-per-FWHM ratio of 4.7' at nside 2048 (about 2.8):
 * FWHM = 4.7' * 2048 / nside unless --fwhm-arcmin-2048 says otherwise.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"
#include "harness/util.h"
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
 * reports where the line crosses FSHT (iter 0 and 3) on the same threads. */
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

int main(int argc, char **argv) {
  long nsides[8] = {512, 1024, 2048};
  int nn = 3, threads = 2, repeats = 9, frep = 1, do_fsht = 1, do_cache = 1;
  long sweep_nside = 0;
  int oversample = 0;
  double fwhm2048 = 4.7, rel = 1e-5;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--nside") && i + 1 < argc) {
      nn = 0;
      for (char *t = strtok(argv[++i], ","); t && nn < 8; t = strtok(NULL, ",")) nsides[nn++] = atol(t);
    } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--fsht-repeats") && i + 1 < argc) frep = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--fwhm-arcmin-2048") && i + 1 < argc) fwhm2048 = atof(argv[++i]);
    else if (!strcmp(argv[i], "--cutoff-rel") && i + 1 < argc) rel = atof(argv[++i]);
    else if (!strcmp(argv[i], "--no-fsht")) do_fsht = 0;
    else if (!strcmp(argv[i], "--no-cache")) do_cache = 0;
    else if (!strcmp(argv[i], "--oversample") && i + 1 < argc) oversample = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--support-sweep") && i + 1 < argc) sweep_nside = atol(argv[++i]);
    else {
      fprintf(stderr, "bench: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (repeats < 1 || frep < 1 || threads < 1) {
    fprintf(stderr, "bench: repeats and threads must be >= 1\n");
    return 2;
  }
  omp_set_num_threads(threads);
  if (sweep_nside > 0) return support_sweep(sweep_nside, threads, repeats, rel);
  printf("# ARKCoS CPU bench: %d threads, Gaussian FWHM = %.2f' * 2048 / nside, cut at %.0e of the peak, double\n",
         threads, fwhm2048, rel);
  printf("# %-5s %7s %7s %6s | %9s %9s %9s | %7s %7s | %9s %9s | %5s %5s %5s %5s %5s | %8s %8s\n", "nside", "fwhm'",
         "cut'", "rings", "arkcos_s", "plan_s", "reuse_s", "fsht0_s", "fsht3_s", "x_iter0", "x_iter3", "mapff",
         "keval", "kfft", "reduc", "ifft", "plan_MB", "rss_MB");
  printf("#       %7s %7s %6s | %9s | %9s %9s\n", "", "", "", "cached_s", "cache_MB", "");
  for (int c = 0; c < nn; c++) {
    long nside = nsides[c];
    arkcos_error err;
    arkcos_geometry *g = arkcos_geometry_healpix(nside, &err);
    if (!g) return fprintf(stderr, "bench: %s\n", err.msg), 1;
    arkcos_kernel_spec ks = {0};
    ks.type = ARKCOS_KERNEL_GAUSSIAN;
    ks.fwhm = fwhm2048 * 2048.0 / (double)nside * M_PI / 10800;
    ks.cutoff_rel = rel;
    arkcos_kernel *k = arkcos_kernel_create(&ks, &err);
    double *in = malloc(sizeof(double) * g->npix), *out = malloc(sizeof(double) * g->npix);
    uint64_t s = 1;
    for (int64_t i = 0; i < g->npix; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      in[i] = (double)(s >> 11) * 0x1.0p-53 - 0.5;
    }
    arkcos_options o;
    arkcos_options_default(&o);
    o.backend = ARKCOS_BACKEND_CPU;
    o.threads = threads;
    o.oversample = oversample;
    double t0 = wall_time();
    arkcos_plan *p = arkcos_plan_create(g, k, &o, &err);
    double tplan = wall_time() - t0;
    if (!p) return fprintf(stderr, "bench: %s\n", err.msg), 1;
    double *ts = malloc(sizeof(double) * repeats);
    arkcos_stage_times st[64], sm = {0};
    arkcos_execute(p, in, out, &err); /* warm-up */
    for (int r = 0; r < repeats; r++) {
      t0 = wall_time();
      arkcos_execute(p, in, out, &err);
      ts[r] = wall_time() - t0;
      arkcos_plan_stages(p, &st[r < 64 ? r : 63]);
    }
    double tmed = median(ts, repeats);
    int nr = repeats < 64 ? repeats : 64;
    for (int r = 0; r < nr; r++) {
      sm.map_fft += st[r].map_fft / nr;
      sm.kernel_eval += st[r].kernel_eval / nr;
      sm.kernel_fft += st[r].kernel_fft / nr;
      sm.reduction += st[r].reduction / nr;
      sm.map_ifft += st[r].map_ifft / nr;
      sm.total += st[r].total / nr;
    }
    double plan_mb = arkcos_plan_memory(p) / 1e6;
    arkcos_plan_destroy(p);
    /* the same on the 4 nside kernel grid everywhere (no oversampling of
     * cap pairs): DESIGN.md's algorithm, and the GPU backend's grid */
    double tq1 = NAN;
    if (oversample != 1) {
      o.oversample = 1;
      arkcos_plan *p1 = arkcos_plan_create(g, k, &o, &err);
      o.oversample = oversample;
      if (p1) {
        arkcos_execute(p1, in, out, &err);
        for (int r = 0; r < repeats; r++) {
          t0 = wall_time();
          arkcos_execute(p1, in, out, &err);
          ts[r] = wall_time() - t0;
        }
        tq1 = median(ts, repeats);
        arkcos_plan_destroy(p1);
      }
    }
    /* plan reuse with cached kernel spectra: per-map cost of many maps */
    double tcache = NAN, cache_mb = NAN;
    if (do_cache) {
      o.cache_kernel_spectra = 1;
      arkcos_plan *pc = arkcos_plan_create(g, k, &o, &err);
      o.cache_kernel_spectra = 0;
      if (pc) {
        arkcos_execute(pc, in, out, &err);
        for (int r = 0; r < repeats; r++) {
          t0 = wall_time();
          arkcos_execute(pc, in, out, &err);
          ts[r] = wall_time() - t0;
        }
        tcache = median(ts, repeats);
        cache_mb = arkcos_plan_memory(pc) / 1e6;
        arkcos_plan_destroy(pc);
      } else {
        fprintf(stderr, "bench: nside %ld: no cached plan: %s\n", nside, err.msg);
      }
    }
    double f0 = NAN, f3 = NAN;
    if (do_fsht) {
      int lmax = (int)(3 * nside - 1);
      double *fs = malloc(sizeof(double) * frep);
      for (int it = 0; it <= 3; it += 3) {
        for (int r = 0; r < frep; r++) {
          t0 = wall_time();
          if (ref_fsht_smooth(g, k, in, out, lmax, it, NULL, threads, &err))
            return fprintf(stderr, "bench: %s\n", err.msg), 1;
          fs[r] = wall_time() - t0;
        }
        if (it == 0) f0 = median(fs, frep); else f3 = median(fs, frep);
      }
      free(fs);
    }
    double tot = sm.total > 0 ? sm.total : 1;
    printf("  %-5ld %7.2f %7.2f %6d | %9.4f %9.4f %9.4f | %7.2f %7.2f | %9.1f %9.1f | %4.0f%% %4.0f%% %4.0f%% %4.0f%% %4.0f%% | %8.0f %8.0f\n",
           nside, ks.fwhm * 10800 / M_PI, arkcos_kernel_cutoff(k) * 10800 / M_PI,
           (int)ceil(2 * arkcos_kernel_cutoff(k) / (M_PI / (4.0 * nside))), tmed, tplan, tmed + tplan, f0, f3,
           f0 / tmed, f3 / tmed, 100 * sm.map_fft / tot, 100 * sm.kernel_eval / tot, 100 * sm.kernel_fft / tot,
           100 * sm.reduction / tot, 100 * sm.map_ifft / tot, plan_mb, peak_rss_bytes() / 1e6);
    printf("        %7s %7s %6s | %9.4f | %9.0f   (cached kernel spectra: per-map time, plan memory)\n", "", "", "",
           tcache, cache_mb);
    printf("        %7s %7s %6s | %9.4f | %9s %9s | %9.1f %9.1f   (4 nside kernel grid, oversample 1)\n", "", "", "",
           tq1, "", "", f0 / tq1, f3 / tq1);
    fflush(stdout);
    free(ts);
    free(in);
    free(out);
    arkcos_kernel_destroy(k);
    arkcos_geometry_destroy(g);
  }
  printf("# arkcos_s: median execute, default (automatic) oversampling of cap pairs' kernel grids;\n"
         "# the 'oversample 1' row: the same on the 4 nside grid everywhere (faster, less accurate caps);\n"
         "# reuse_s: plan + one execute (no reuse); cached_s: median\n"
         "# execute of a plan that keeps every kernel spectrum (many maps, one beam);\n"
         "# x_iter0/3: FSHT time / ARKCoS time; stage shares of the execute time; rings: approx. support in rings\n");
  return 0;
}
