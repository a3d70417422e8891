/*
 * test_limits.c -- what the engine refuses and what it promises at the
 * edges. Memory: a plan's estimate (arkcos_plan_estimate) against what plans
 * hold (arkcos_plan_memory), and the refusal of a plan that would not fit
 * (options.max_memory) before anything large is allocated, with both
 * figures named. Values: NaN and inf refused by name (they would spread
 * through a ring's FFT), 1e300 refused by single precision plans and carried
 * by double ones within the bound relative to max |input|, denormal and
 * all-zero maps smoothed like any other.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "arkcos/arkcos.h"
#include "tests/testlib.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A Gaussian of ppf pixels per FWHM at nside, cut at 1e-5 of its peak. */
static arkcos_kernel *gauss(const arkcos_geometry *g, double ppf) {
  arkcos_kernel_spec s;
  memset(&s, 0, sizeof s);
  s.type = ARKCOS_KERNEL_GAUSSIAN;
  s.fwhm = ppf * sqrt(4 * M_PI / (double)g->npix);
  s.cutoff_rel = 1e-5;
  arkcos_error e = {0, ""};
  return arkcos_kernel_create(&s, &e);
}

/* Checks arkcos_plan_estimate against arkcos_plan_memory for (g, k) on 2
 * CPU threads with spin and precision: lo <= estimate / held <= hi. */
static void estimate_vs_held_dw(const arkcos_geometry *g, const arkcos_kernel *k, int spin, arkcos_precision prec,
                                int dw, const char *name, double hi) {
  arkcos_error e = {0, ""};
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.direct_weights = dw;
  o.threads = 2;
  o.spin = spin;
  o.precision = prec;
  const double est = arkcos_plan_estimate(g, k, &o, &e);
  arkcos_plan *p = arkcos_plan_create(g, k, &o, &e);
  CHECK(p != NULL, "plan: %s", e.msg);
  if (!p) return;
  const double held = (double)arkcos_plan_memory(p);
  CHECK_GE(name, est / held, 1.0);
  CHECK_LE(name, est / held, hi);
  arkcos_plan_destroy(p);
}

/* ... with the caps' weights tabulated, which the estimates below measure
 * (AUTO computes them on the fly where the tables would make the plan
 * heavier than two maps and 64 MB, as spin 2 at 4 pixels per FWHM here) */
static void estimate_vs_held(const arkcos_geometry *g, const arkcos_kernel *k, int spin, arkcos_precision prec,
                             const char *name, double hi) {
  estimate_vs_held_dw(g, k, spin, prec, ARKCOS_WEIGHTS_TABLES, name, hi);
}

/* Estimate over held memory for scalar double, spin 2 and single plans, at
 * 2.8 and 4 pixels per FWHM: measured 1.07-1.18 at nside 256 (here), 1.07-1.27
 * at nside 512, 1.09-1.34 at nside 64; spin 2, its spectra in a window per
 * thread, 1.21-1.27 at nside 128-512, 1.36-1.42 at 64. */
TEST_GROUP(estimate) {
  arkcos_error e = {0, ""};
  arkcos_geometry *g = arkcos_geometry_healpix(256, &e);
  const char *what[3] = {"double", "spin 2", "single"};
  for (int b = 0; b < 2; b++) {
    arkcos_kernel *k = gauss(g, b ? 4.0 : 2.8);
    for (int v = 0; v < 3; v++) {
      char name[128];
      snprintf(name, sizeof name, "estimate / held, nside 256, %s, %.1f px/FWHM", what[v], b ? 4.0 : 2.8);
      estimate_vs_held(g, k, v == 1 ? 2 : 0, v == 2 ? ARKCOS_SINGLE : ARKCOS_DOUBLE, name, 1.7);
    }
    /* weights on the fly: the estimate counts each thread's scratch for a
     * pair, which the execute allocates, not the plan: measured 1.48-1.54
     * (scalar: 1.3 MB over 2.4-3.0 MB held, the ring spectra in a window
     * per thread; 1.21-1.24 with a row per ring), 1.52-1.66 (spin 2,
     * complex weights; 1.89-1.91 with a row per ring) */
    for (int v = 0; v < 2; v++) {
      char name[128];
      snprintf(name, sizeof name, "estimate / held, nside 256, %s on the fly, %.1f px/FWHM", what[v], b ? 4.0 : 2.8);
      estimate_vs_held_dw(g, k, v ? 2 : 0, ARKCOS_DOUBLE, ARKCOS_WEIGHTS_ON_THE_FLY, name, v ? 2.0 : 1.6);
    }
    arkcos_kernel_destroy(k);
  }
  /* a top-hat's scalar pairs hold their rows' extents only: measured
   * 1.32-1.45 (double), 1.27-1.37 (single) at radii 2 and 1 degrees */
  for (int b = 0; b < 2; b++) {
    arkcos_kernel_spec s;
    memset(&s, 0, sizeof s);
    s.type = ARKCOS_KERNEL_TOPHAT;
    s.cutoff = (b ? 2.0 : 1.0) * M_PI / 180;
    arkcos_kernel *k = arkcos_kernel_create(&s, &e);
    for (int v = 0; k && v < 2; v++) {
      char name[128];
      snprintf(name, sizeof name, "estimate / held, nside 256, %s, top-hat of %d deg", v ? "single" : "double",
               b ? 2 : 1);
      estimate_vs_held(g, k, 0, v ? ARKCOS_SINGLE : ARKCOS_DOUBLE, name, 1.6);
    }
    arkcos_kernel_destroy(k);
  }
  arkcos_geometry_destroy(g);
}

/* The per-rank estimate of a map split over ranks (arkcos_plan_estimate_rank,
 * which `arkcos smooth --dry-run` prints; it needs no MPI): one rank is the
 * whole plan; the bands cover every output pixel once; rank 0 (the files,
 * the whole maps) takes the band at the equator, which has no direct
 * tables; the other ranks hold their maps; the polar bands the tables. */
TEST_GROUP(estimate_rank) {
  arkcos_error e = {0, ""};
  arkcos_geometry *g = arkcos_geometry_healpix(128, &e);
  arkcos_kernel *k = gauss(g, 3.0);
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.threads = 1;
  arkcos_estimate one;
  CHECK(arkcos_plan_estimate_rank(g, k, &o, 0, 1, &one, &e) == 0, "one rank: %s", e.msg);
  CHECK(one.total == arkcos_plan_estimate(g, k, &o, &e) && one.maps == 0 && one.pixels_out == g->npix &&
            one.pixels_in == g->npix && one.halo_pixels == 0 && one.rings_out == g->nrings,
        "one rank is the whole plan: total %.0f, maps %.0f, out %lld", one.total, one.maps,
        (long long)one.pixels_out);
  for (int n = 2; n <= 5; n++) {
    int64_t out = 0;
    double tables = 0;
    for (int r = 0; r < n; r++) {
      arkcos_estimate b;
      CHECK(arkcos_plan_estimate_rank(g, k, &o, r, n, &b, &e) == 0, "rank %d of %d: %s", r, n, e.msg);
      out += b.pixels_out;
      tables += b.tables;
      CHECK(b.band == arkcos_band_of_rank(r, n) && b.band == (r ? r - 1 : n - 1), "rank %d of %d: band %d", r,
            n, b.band);
      CHECK(r == 0 ? b.maps == 0 : b.maps == 8.0 * (double)(b.pixels_in + b.pixels_out),
            "rank %d of %d: maps %.0f bytes", r, n, b.maps);
      CHECK(b.halo_pixels > 0 && b.pixels_in == b.pixels_out + b.halo_pixels, "rank %d of %d: halo %lld", r,
            n, (long long)b.halo_pixels);
      if (r == 0 && n >= 3) CHECK(b.tables == 0, "%d ranks: rank 0's equatorial band holds tables", n);
      if (r == 1) CHECK(b.tables > 0, "%d ranks: rank 1's polar band holds no tables", n);
    }
    CHECK(out == g->npix, "%d ranks: bands cover %lld of %lld pixels", n, (long long)out, (long long)g->npix);
    CHECK(fabs(tables - one.tables) <= 1e-9 * one.tables, "%d ranks: tables %.6g, whole plan %.6g", n, tables,
          one.tables);
  }
  arkcos_estimate b;
  CHECK(arkcos_plan_estimate_rank(g, k, &o, 3, 3, &b, &e) == ARKCOS_EINVAL && strstr(e.msg, "rank 3 of 3"),
        "rank 3 of 3 refused: %s", e.msg);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

/* A limit below the estimate: refused with ARKCOS_ENOMEM, both figures and
 * the nside in the message, in a few milliseconds (nothing large built). */
TEST_GROUP(refusal) {
  arkcos_error e = {0, ""};
  arkcos_geometry *g = arkcos_geometry_healpix(256, &e);
  arkcos_kernel *k = gauss(g, 4.0);
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.max_memory = 20e6;
  double t0 = now();
  arkcos_plan *p = arkcos_plan_create(g, k, &o, &e);
  double dt = now() - t0;
  CHECK(p == NULL && e.code == ARKCOS_ENOMEM, "code %d: %s", e.code, e.msg);
  CHECK(strstr(e.msg, "0.02 GB") && strstr(e.msg, "nside 256") && strstr(e.msg, "max_memory"),
        "message names need, limit, nside: %s", e.msg);
  printf("  %s\n", e.msg);
  CHECK_LE("refusal at nside 256, seconds (measured 0.0003)", dt, 0.5);
  arkcos_plan_destroy(p);
  /* the limit just above the estimate: made */
  o.max_memory = arkcos_plan_estimate(g, k, &o, &e) * 1.01;
  p = arkcos_plan_create(g, k, &o, &e);
  CHECK(p != NULL, "plan at 1.01 x its estimate: %s", e.msg);
  arkcos_plan_destroy(p);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);

  /* nside 65536 (5e10 pixels, 0.4 TB a map): refused at once
   * by the memory available, not by the kernel's out-of-memory killer */
  t0 = now();
  g = arkcos_geometry_healpix(65536, &e);
  k = gauss(g, 3.0);
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  p = arkcos_plan_create(g, k, &o, &e);
  dt = now() - t0;
  CHECK(p == NULL && e.code == ARKCOS_ENOMEM, "nside 65536: code %d: %s", e.code, e.msg);
  CHECK(strstr(e.msg, "nside 65536") && strstr(e.msg, "available"), "%s", e.msg);
  printf("  %s\n", e.msg);
  CHECK_LE("refusal at nside 65536, seconds with the geometry (measured 0.1)", dt, 2.0);
  arkcos_plan_destroy(p);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

static void pix2vec(int64_t p, double v[3]) {
  double th, ph;
  arkcos_healpix_pix2ang_ring(32, p, &th, &ph);
  v[0] = sin(th) * cos(ph);
  v[1] = sin(th) * sin(ph);
  v[2] = cos(th);
}

/* A plan at nside 32 for a 400' Gaussian (13.6 degree cutoff), CPU. */
static arkcos_plan *small_plan(arkcos_geometry **g, arkcos_precision prec) {
  arkcos_error e = {0, ""};
  *g = arkcos_geometry_healpix(32, &e);
  arkcos_kernel_spec s;
  memset(&s, 0, sizeof s);
  s.type = ARKCOS_KERNEL_GAUSSIAN;
  s.fwhm = 400.0 / 60 * M_PI / 180;
  s.cutoff_rel = 1e-5;
  arkcos_kernel *k = arkcos_kernel_create(&s, &e);
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.precision = prec;
  arkcos_plan *p = arkcos_plan_create(*g, k, &o, &e);
  arkcos_kernel_destroy(k);
  return p;
}

TEST_GROUP(input_values) {
  arkcos_geometry *g;
  arkcos_plan *p = small_plan(&g, ARKCOS_DOUBLE), *ps = NULL;
  const int64_t n = g->npix, spike = 6 * 32 * 32; /* on the equator */
  double *in = malloc(sizeof(double) * (size_t)n), *out = malloc(sizeof(double) * (size_t)n);
  double *base = malloc(sizeof(double) * (size_t)n);
  arkcos_error e = {0, ""};
  for (int64_t i = 0; i < n; i++) in[i] = sin(0.37 * (double)i) + 0.5 * cos(0.011 * (double)i * i);
  CHECK(arkcos_execute(p, in, base, &e) == ARKCOS_OK, "%s", e.msg);
  const double bound = arkcos_plan_bound(p);

  const double special[3] = {NAN, INFINITY, -INFINITY};
  for (int t = 0; t < 3; t++) {
    const double keep = in[spike];
    in[spike] = special[t];
    e.code = 0;
    int rc = arkcos_execute(p, in, out, &e);
    char want[64];
    snprintf(want, sizeof want, "pixel %lld is", (long long)spike);
    CHECK(rc == ARKCOS_EINVAL && strstr(e.msg, want), "%g: rc %d: %s", special[t], rc, e.msg);
    in[spike] = keep;
  }
  printf("  %s\n", e.msg);

  /* 1e300 in double: every output finite; beyond the kernel's reach the
   * error stays below bound x max |input| (measured 5.5e282, 5.5e-18 of it) */
  in[spike] = 1e300;
  CHECK(arkcos_execute(p, in, out, &e) == ARKCOS_OK, "1e300: %s", e.msg);
  double far = 0, vx[3], vs[3];
  int finite = 1;
  pix2vec(spike, vs);
  for (int64_t i = 0; i < n; i++) {
    finite &= isfinite(out[i]) != 0;
    pix2vec(i, vx);
    if (vx[0] * vs[0] + vx[1] * vs[1] + vx[2] * vs[2] < cos(14 * M_PI / 180) &&
        fabs(out[i] - base[i]) > far)
      far = fabs(out[i] - base[i]);
  }
  CHECK(finite, "1e300: a non-finite output");
  CHECK_LE("1e300 pixel: error beyond the kernel's reach / 1e300", far / 1e300, bound);

  arkcos_geometry *gs; /* the single precision plan's own */
  ps = small_plan(&gs, ARKCOS_SINGLE);
  int rc = arkcos_execute(ps, in, out, &e);
  CHECK(rc == ARKCOS_EINVAL && strstr(e.msg, "single precision"), "single 1e300: %d %s", rc, e.msg);
  in[spike] = 0.25;

  /* denormals (1e-310 x the map): the same smoothing, scaled (measured
   * 2.2e-12 relative: denormals hold fewer digits) */
  for (int64_t i = 0; i < n; i++) in[i] = 1e-310 * (sin(0.37 * (double)i) + 0.5 * cos(0.011 * (double)i * i));
  CHECK(arkcos_execute(p, in, out, &e) == ARKCOS_OK, "denormal: %s", e.msg);
  double worst = 0, top = 0;
  for (int64_t i = 0; i < n; i++) {
    if (fabs(out[i] - 1e-310 * base[i]) > worst) worst = fabs(out[i] - 1e-310 * base[i]);
    if (fabs(1e-310 * base[i]) > top) top = fabs(1e-310 * base[i]);
  }
  CHECK_LE("denormal map: max error / max output", worst / top, 1e-10);
  for (int64_t i = 0; i < n; i++) in[i] = 0;
  CHECK(arkcos_execute(p, in, out, &e) == ARKCOS_OK, "zeros: %s", e.msg);
  int zero = 1;
  for (int64_t i = 0; i < n; i++) zero &= out[i] == 0;
  CHECK(zero, "an all-zero map smoothed is not exactly zero");
  arkcos_plan_destroy(p);
  arkcos_plan_destroy(ps);
  arkcos_geometry_destroy(g);
  arkcos_geometry_destroy(gs);
  free(in);
  free(out);
  free(base);
}

/* The address-space limit (ulimit -v) is a hard bound on every plan:
 * arkcos_memory_limit and arkcos_memory_available stay below what is left
 * under it, and a max_memory far above it does not lift it. Lowers this
 * process's soft RLIMIT_AS to 1 GiB above what it maps, then restores it. */
TEST_GROUP(address_space) {
  struct rlimit old, rl;
  CHECK(getrlimit(RLIMIT_AS, &old) == 0, "getrlimit");
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  double vm = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %lf kB", &vm) == 1) break;
  if (f) fclose(f);
  CHECK(vm > 0, "VmSize not found in /proc/self/status");
  const double gib = 1073741824.0;
  rl = old;
  rl.rlim_cur = (rlim_t)(vm * 1024 + gib);
  if (old.rlim_max != RLIM_INFINITY && rl.rlim_cur > old.rlim_max) rl.rlim_cur = old.rlim_max;
  CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit");
  const char *what = NULL;
  const double most = arkcos_memory_limit(&what);
  CHECK_LE("memory limit under RLIMIT_AS = VmSize + 1 GiB, GiB", most / gib, 1.01);
  CHECK(most > 0.5 * gib, "memory limit %.3g GiB: far below what is left", most / gib);
  CHECK(what && strstr(what, "RLIMIT_AS"), "bound named: %s", what ? what : "(null)");
  CHECK_LE("memory available under the same limit, GiB", arkcos_memory_available() / gib, 1.01);
  arkcos_error e = {0, ""};
  arkcos_options o;
  /* nside 4096: 1.6 GB of ring spectra at least, refused before planning
   * whatever max_memory says */
  double t0 = now();
  arkcos_geometry *g = arkcos_geometry_healpix(4096, &e);
  arkcos_kernel *k = gauss(g, 3.0);
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.max_memory = 1e15;
  arkcos_plan *p = arkcos_plan_create(g, k, &o, &e);
  const double dt = now() - t0;
  CHECK(p == NULL && e.code == ARKCOS_ENOMEM, "nside 4096 under 1 GiB: code %d: %s", e.code, e.msg);
  CHECK(strstr(e.msg, "RLIMIT_AS") && strstr(e.msg, "nside 4096"), "%s", e.msg);
  printf("  %s\n", e.msg);
  CHECK_LE("refusal at nside 4096 under ulimit -v, seconds with the geometry (measured 0.001)", dt, 2.0);
  arkcos_plan_destroy(p);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
  /* a small plan still fits: the limit is what is left, not zero */
  g = arkcos_geometry_healpix(32, &e);
  k = gauss(g, 3.0);
  p = arkcos_plan_create(g, k, &o, &e);
  CHECK(p != NULL, "nside 32 under 1 GiB with max_memory 1e15: %s", e.msg);
  arkcos_plan_destroy(p);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
  CHECK(setrlimit(RLIMIT_AS, &old) == 0, "restoring RLIMIT_AS");
}

TEST_MAIN(TG(estimate), TG(estimate_rank), TG(refusal), TG(input_values), TG(address_space))
