/*
 * test_engine.c -- geometry against chealpix, kernels against analytic
 * results, ARKCoS against a brute-force direct sum, and properties.
 */
#include <chealpix.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "arkcos/arkcos.h"
#include "arkcos/arkcos_math.h"
#include "arkcos/plan_internal.h"
#include <complex.h>
#include <fftw3.h>
#include "tests/testkernels.h"
#include "tests/testlib.h"
#include "tests/testmaps.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#define DEG (M_PI / 180)
#define ARCMIN (M_PI / 10800)


/* Brute force over all pixel pairs of the rings within the cutoff's latitude
 * band, angles from unit vectors: the simplest statement of s_p = sum_q w_q K(alpha_pq) r_q. */
static void brute_direct(const arkcos_geometry *g, const arkcos_kernel *k, const double *in,
                         double *out) {
  int64_t n = g->npix;
  double *v = malloc(sizeof(double) * 3 * n), *w = malloc(sizeof(double) * n);
  for (int i = 0; i < g->nrings; i++)
    for (int64_t q = 0; q < g->rings[i].nph; q++) {
      int64_t p = g->rings[i].ofs + q;
      double th = g->rings[i].theta, ph = g->rings[i].phi0 + 2 * M_PI * q / g->rings[i].nph;
      v[3 * p] = sin(th) * cos(ph);
      v[3 * p + 1] = sin(th) * sin(ph);
      v[3 * p + 2] = cos(th);
      w[p] = g->rings[i].weight;
    }
  double c = arkcos_kernel_cutoff(k);
  /* only rings whose latitude is within the cutoff can contribute */
#pragma omp parallel for schedule(dynamic, 1)
  for (int i = 0; i < g->nrings; i++)
    for (int64_t pp = 0; pp < g->rings[i].nph; pp++) {
      int64_t p = g->rings[i].ofs + pp;
      double s = 0;
      for (int j = 0; j < g->nrings; j++) {
        if (fabs(g->rings[j].theta - g->rings[i].theta) > c + 1e-9) continue;
        for (int64_t qq = 0; qq < g->rings[j].nph; qq++) {
          int64_t q = g->rings[j].ofs + qq;
          double *a = v + 3 * p, *b = v + 3 * q;
          double cx = a[1] * b[2] - a[2] * b[1], cy = a[2] * b[0] - a[0] * b[2], cz = a[0] * b[1] - a[1] * b[0];
          double alpha = atan2(sqrt(cx * cx + cy * cy + cz * cz), a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
          if (alpha <= c) s += w[q] * arkcos_kernel_value(k, alpha) * in[q];
        }
      }
      out[p] = s;
    }
  free(v);
  free(w);
}


static arkcos_kernel *gauss(double fwhm, double cutoff, double rel) {
  arkcos_kernel_spec s = {0};
  s.type = ARKCOS_KERNEL_GAUSSIAN;
  s.fwhm = fwhm;
  s.cutoff = cutoff;
  s.cutoff_rel = rel;
  arkcos_error e;
  arkcos_kernel *k = arkcos_kernel_create(&s, &e);
  if (!k) fprintf(stderr, "kernel: %s\n", e.msg);
  return k;
}

/* The default options on the CPU backend, in the given mode and precision */
static arkcos_options cpu_options(arkcos_mode mode, arkcos_precision prec) {
  arkcos_options o;
  arkcos_options_default(&o);
  o.mode = mode;
  o.precision = prec;
  o.backend = ARKCOS_BACKEND_CPU;
  return o;
}

static double *smooth(const arkcos_geometry *g, const arkcos_kernel *k, const double *in,
                      arkcos_mode mode, arkcos_precision prec) {
  arkcos_options o = cpu_options(mode, prec);
  arkcos_error e;
  arkcos_plan *p = arkcos_plan_create(g, k, &o, &e);
  if (!p) {
    fprintf(stderr, "plan: %s\n", e.msg);
    return NULL;
  }
  double *out = malloc(sizeof(double) * g->npix);
  if (arkcos_execute(p, in, out, &e)) fprintf(stderr, "execute: %s\n", e.msg);
  arkcos_plan_destroy(p);
  return out;
}



TEST_GROUP(geometry_vs_chealpix) {
  int64_t bad = 0, total = 0;
  for (int64_t nside = 1; nside <= 64; nside++) {
    arkcos_geometry *g = arkcos_geometry_healpix(nside, NULL);
    if (!g) { CHECK(0, "nside %lld", (long long)nside); continue; }
    if (g->npix != 12 * nside * nside || g->nrings != 4 * nside - 1) bad++;
    int64_t expect_ofs = 0;
    for (int i = 0; i < g->nrings; i++) {
      if (g->rings[i].ofs != expect_ofs) bad++;
      expect_ofs += g->rings[i].nph;
      for (int64_t q = 0; q < g->rings[i].nph; q++) {
        double th, ph;
        pix2ang_ring64(nside, g->rings[i].ofs + q, &th, &ph);
        double ph2 = g->rings[i].phi0 + 2 * M_PI * q / g->rings[i].nph;
        if (fabs(th - g->rings[i].theta) > 1e-14 || fabs(ph - ph2) > 1e-13) bad++;
        double th3, ph3;
        arkcos_healpix_pix2ang_ring(nside, g->rings[i].ofs + q, &th3, &ph3);
        if (fabs(th3 - th) > 1e-14 || fabs(ph3 - ph) > 1e-13) bad++;
        total++;
      }
    }
    if (expect_ofs != g->npix) bad++;
    arkcos_geometry_destroy(g);
  }
  printf("  %lld pixels of nside 1..64 checked against chealpix pix2ang_ring\n", (long long)total);
  CHECK(bad == 0, "%lld mismatches", (long long)bad);
}

TEST_GROUP(pixel_arithmetic) {
  int64_t bad = 0;
  for (int64_t nside = 1; nside <= 256; nside *= 2) {
    for (int64_t p = 0; p < 12 * nside * nside; p++) {
      int64_t r1;
      nest2ring64(nside, p, &r1);
      if (arkcos_healpix_nest2ring(nside, p) != r1) bad++;
      if (arkcos_healpix_ring2nest(nside, r1) != p) bad++;
    }
  }
  CHECK(bad == 0, "nest2ring/ring2nest: %lld mismatches", (long long)bad);
  bad = 0;
  for (int64_t nside = 1; nside <= 1000; nside = nside * 3 + 1)
    for (int t = 0; t < 20000; t++) {
      double th = acos(2 * urand() - 1), ph = 2 * M_PI * urand();
      int64_t a;
      ang2pix_ring64(nside, th, ph, &a);
      if (arkcos_healpix_ang2pix_ring(nside, th, ph) != a) bad++;
    }
  CHECK(bad == 0, "ang2pix_ring: %lld mismatches against chealpix", (long long)bad);
}

TEST_GROUP(ecp_geometry) {
  arkcos_geometry *g = arkcos_geometry_ecp(30, 64, 0.5, NULL);
  CHECK(g && g->nrings == 30 && g->npix == 30 * 64, "ECP sizes");
  double s = 0;
  for (int i = 0; i < g->nrings; i++) s += g->rings[i].weight * g->rings[i].nph;
  CHECK(fabs(s - 4 * M_PI) < 1e-13, "ECP weights sum to 4 pi: %.15g", s);
  CHECK(fabs(g->rings[0].theta - M_PI / 60) < 1e-15 && fabs(g->rings[0].phi0 - M_PI / 64) < 1e-15,
        "ECP first ring");
  arkcos_geometry_destroy(g);
}

/* independent check of normalisation: composite Simpson with 2e5 panels,
 * compensated (Kahan) summation so that rounding stays below 1e-15 */
static double simpson_integral(const arkcos_kernel *k) {
  double c = arkcos_kernel_cutoff(k);
  int n = 200000;
  double h = c / n, s = 0, comp = 0;
  for (int i = 0; i <= n; i++) {
    double a = i * h, f = arkcos_kernel_value(k, a) * sin(a);
    double y = f * (i == 0 || i == n ? 1 : (i % 2 ? 4 : 2)) - comp, t = s + y;
    comp = (t - s) - y;
    s = t;
  }
  return 2 * M_PI * s * h / 3;
}

TEST_GROUP(kernel_normalisation) {
  arkcos_kernel *k1 = gauss(60 * ARCMIN, 0, 1e-5), *k2 = gauss(4.7 * ARCMIN, 0.5 * DEG, 0);
  arkcos_kernel *k3 = gauss(30 * DEG, 180 * DEG, 0);
  arkcos_kernel_spec th = {0};
  th.type = ARKCOS_KERNEL_TOPHAT;
  th.cutoff = 2 * DEG;
  arkcos_kernel *k4 = arkcos_kernel_create(&th, NULL);
  double ang[50], val[50];
  for (int i = 0; i < 50; i++) {
    ang[i] = i * 0.1 * DEG;
    val[i] = pow(cos(ang[i] / (5 * DEG) * M_PI / 2), 2);
  }
  arkcos_kernel_spec tb = {0};
  tb.type = ARKCOS_KERNEL_TABLE;
  tb.alpha = ang;
  tb.value = val;
  tb.ntable = 50;
  arkcos_kernel *k5 = arkcos_kernel_create(&tb, NULL);
  arkcos_kernel *ks[] = {k1, k2, k3, k4, k5};
  const char *names[] = {"gaussian 1deg cut 1e-5", "gaussian 4.7' cut 0.5deg", "gaussian 30deg full sphere",
                         "top-hat 2deg", "table cos^2"};
  for (int i = 0; i < 5; i++) {
    CHECK(ks[i] != NULL, "%s created", names[i]);
    if (!ks[i]) continue;
    char what[128];
    snprintf(what, sizeof what, "|integral - 1|, %s", names[i]);
    /* Simpson's own error is ~1e-15 for the smooth kernels; the top-hat is
     * exact. Measured: all <= 3e-15. */
    CHECK_LE(what, fabs(simpson_integral(ks[i]) - 1), 1e-12);
  }
  double c = arkcos_kernel_cutoff(k1), sigma = 60 * ARCMIN / sqrt(8 * log(2.0));
  CHECK(fabs(c - sigma * sqrt(2 * log(1e5))) < 1e-15, "relative cutoff of a Gaussian");
  CHECK(fabs(arkcos_kernel_cutoff_level(k1) - 1e-5) < 1e-15, "cutoff level recorded");
  for (int i = 0; i < 5; i++) arkcos_kernel_destroy(ks[i]);
}

static double legendre_p(int l, double x) {
  double p0 = 1, p1 = x;
  if (l == 0) return 1;
  for (int i = 1; i < l; i++) {
    double p2 = ((2 * i + 1) * x * p1 - i * p0) / (i + 1);
    p0 = p1;
    p1 = p2;
  }
  return p1;
}

TEST_GROUP(kernel_legendre) {
  /* Gaussian, truncation negligible (1e-15): K_l = exp(-l(l+1) sigma^2/2) up
   * to the flat-sky approximation, relative error O(sigma^2 l) */
  double fwhm = 30 * ARCMIN, sigma = fwhm / sqrt(8 * log(2.0));
  arkcos_kernel *k = gauss(fwhm, 0, 1e-15);
  int lmax = 1000;
  double *kl = malloc(sizeof(double) * (lmax + 1)), worst = 0;
  CHECK(arkcos_kernel_legendre(k, lmax, kl, NULL) == 0, "legendre");
  for (int l = 0; l <= lmax; l++) {
    double bl = exp(-0.5 * l * (l + 1) * sigma * sigma);
    if (fabs(kl[l] - bl) > worst) worst = fabs(kl[l] - bl);
  }
  /* measured 2.9e-6 (the flat-sky formula's own error at sigma = 13') */
  CHECK_LE("max |K_l - exp(-l(l+1)sigma^2/2)|, 30' Gaussian, l <= 1000", worst, 5e-6);
  CHECK(fabs(kl[0] - 1) < 1e-13, "K_0 = 1: %.3e", kl[0] - 1);
  arkcos_kernel_destroy(k);
  /* top-hat: K_l = 2 pi A (P_{l-1}(x) - P_{l+1}(x)) / (2l + 1), x = cos c */
  arkcos_kernel_spec th = {0};
  th.type = ARKCOS_KERNEL_TOPHAT;
  th.cutoff = 3 * DEG;
  k = arkcos_kernel_create(&th, NULL);
  arkcos_kernel_legendre(k, lmax, kl, NULL);
  double A = 1 / (2 * M_PI * (1 - cos(3 * DEG)));
  worst = 0;
  for (int l = 1; l <= lmax; l++) {
    double x = cos(3 * DEG);
    double exact = 2 * M_PI * A * (legendre_p(l - 1, x) - legendre_p(l + 1, x)) / (2 * l + 1);
    if (fabs(kl[l] - exact) > worst) worst = fabs(kl[l] - exact);
  }
  /* measured 2e-15 */
  CHECK_LE("max |K_l - analytic| for a 3 deg top-hat, l <= 1000", worst, 1e-12);
  arkcos_kernel_destroy(k);
  /* Eq. 7: truncating a Gaussian at 1e-3 of the peak gives a non-zero estimate
   * that shrinks when the cut moves out */
  k = gauss(fwhm, 0, 1e-3);
  arkcos_kernel *k2 = gauss(fwhm, 0, 1e-8);
  double *cl = malloc(sizeof(double) * (lmax + 1));
  for (int l = 0; l <= lmax; l++) cl[l] = 1.0 / ((l + 1.0) * (l + 2.0));
  double e3 = arkcos_kernel_truncation_rms(k, cl, lmax), e8 = arkcos_kernel_truncation_rms(k2, cl, lmax);
  printf("  Eq. 7 truncation rms: cut 1e-3: %.3e, cut 1e-8: %.3e\n", e3, e8);
  CHECK(e3 > 0 && e8 < e3 * 1e-3, "Eq. 7 estimate shrinks with the cutoff");
  free(cl);
  free(kl);
  arkcos_kernel_destroy(k);
  arkcos_kernel_destroy(k2);
}

/* ARKCoS enhanced against the direct sum on HEALPix, belt and whole sphere */
static void healpix_case(int64_t nside, double pix_per_fwhm, double rel, double *belt, double *whole,
                         double *paper_whole) {
  arkcos_geometry *g = arkcos_geometry_healpix(nside, NULL);
  double pix = sqrt(4 * M_PI / g->npix);
  arkcos_kernel *k = gauss(pix_per_fwhm * pix, 0, rel);
  /* nudge the cutoff off exact pixel distances: rebuild with a fixed angle */
  double c = arkcos_kernel_cutoff(k) * (1 + 1e-7);
  arkcos_kernel_destroy(k);
  k = gauss(pix_per_fwhm * pix, c, 0);
  double *in = random_map(g->npix), *ref = malloc(sizeof(double) * g->npix);
  brute_direct(g, k, in, ref);
  double *a = smooth(g, k, in, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE);
  double *b = smooth(g, k, in, ARKCOS_MODE_PAPER, ARKCOS_DOUBLE);
  int *mask = belt_mask(g, c);
  int nb = 0;
  for (int i = 0; i < g->nrings; i++) nb += mask[i];
  *belt = nb ? frac_rms(g, a, ref, mask) : 0;
  *whole = frac_rms(g, a, ref, NULL);
  *paper_whole = frac_rms(g, b, ref, NULL);
  printf("  nside %4lld %4.1f pix/FWHM cut %.0e (%.2f deg): belt rings %3d  enhanced belt %.2e whole %.2e | paper whole %.2e\n",
         (long long)nside, pix_per_fwhm, rel, c / DEG, nb, *belt, *whole, *paper_whole);
  free(mask);
  free(in);
  free(ref);
  free(a);
  free(b);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

TEST_GROUP(arkcos_vs_direct_healpix) {
  const int64_t nsides[] = {16, 24, 32, 13};
  const double ppf[] = {3, 4.4, 10, 5};
  const double rel[] = {1e-8, 1e-3, 1e-8, 1e-6};
  double worst_belt = 0, worst_whole8 = 0, worst_whole3 = 0, worst_paper = 0;
  for (int c = 0; c < 4; c++) {
    double belt, whole, paper;
    healpix_case(nsides[c], ppf[c], rel[c], &belt, &whole, &paper);
    if (belt > worst_belt) worst_belt = belt;
    if (rel[c] < 1e-5 && whole > worst_whole8) worst_whole8 = whole;
    if (rel[c] >= 1e-5 && whole > worst_whole3) worst_whole3 = whole;
    if (paper > worst_paper) worst_paper = paper;
  }
  CHECK_LE("enhanced, rings whose disc is in the belt: frac RMS", worst_belt, 1e-10);
  /* measured 1.6e-15 .. 3.2e-15 (the caps are summed exactly); paper
   * 1.2e-2 */
  CHECK_LE("enhanced whole sphere, cut <= 1e-6", worst_whole8, 1e-13);
  CHECK_LE("enhanced whole sphere, cut 1e-3", worst_whole3, 1e-13);
  CHECK_LE("paper whole sphere", worst_paper, 1.5e-2);
}

/* HEALPix without its last three southern rings: no north/south mirror, so
 * every ring is its own task, and each ring pair's kernel spectrum is still
 * computed once for both of its output rings (pair symmetry, single tasks
 * on both ends). The belt stays exact and the rest within the HEALPix
 * bounds. */
TEST_GROUP(pair_symmetry_without_mirror) {
  arkcos_geometry *h = arkcos_geometry_healpix(24, NULL);
  const int n = h->nrings - 3;
  double *theta = malloc(sizeof(double) * n), *phi0 = malloc(sizeof(double) * n), *w = malloc(sizeof(double) * n);
  int64_t *nph = malloc(sizeof(int64_t) * n), *ofs = malloc(sizeof(int64_t) * n);
  for (int i = 0; i < n; i++) {
    theta[i] = h->rings[i].theta;
    phi0[i] = h->rings[i].phi0;
    w[i] = h->rings[i].weight;
    nph[i] = h->rings[i].nph;
    ofs[i] = h->rings[i].ofs;
  }
  arkcos_geometry *g = arkcos_geometry_from_rings(n, theta, phi0, nph, ofs, w, NULL);
  CHECK(g != NULL, "geometry from rings");
  if (g) {
    double pix = sqrt(4 * M_PI / h->npix);
    arkcos_kernel *k0 = gauss(3 * pix, 0, 1e-8);
    double c = arkcos_kernel_cutoff(k0) * (1 + 1e-7);
    arkcos_kernel *k = gauss(3 * pix, c, 0);
    double *in = random_map(g->npix), *ref = malloc(sizeof(double) * g->npix);
    brute_direct(g, k, in, ref);
    double *a = smooth(g, k, in, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE);
    int *mask = belt_mask(g, c);
    /* measured 4.5e-15 (belt) and 4.2e-9 (whole map, as on HEALPix) */
    CHECK_LE("no mirror: enhanced, rings whose disc is in the belt: frac RMS", frac_rms(g, a, ref, mask), 1e-10);
    CHECK_LE("no mirror: enhanced whole map, 3 pix/FWHM, cut 1e-8", frac_rms(g, a, ref, NULL), 6e-9);
    free(mask);
    free(a);
    free(in);
    free(ref);
    arkcos_kernel_destroy(k);
    arkcos_kernel_destroy(k0);
  }
  arkcos_geometry_destroy(g);
  arkcos_geometry_destroy(h);
  free(theta);
  free(phi0);
  free(w);
  free(nph);
  free(ofs);
}

/* whole-sphere level on HEALPix for 3..10 pixels per FWHM at nside 32 */
TEST_GROUP(arkcos_whole_sphere_levels) {
  /* Measured (enhanced, whole sphere): 1.6e-15 .. 4.8e-15 for 3..10 pixels
   * per FWHM, cut 1e-8 or 1e-3: the belt by the exact Fourier path, the caps
   * summed directly. Paper mode: 3.3e-5 .. 1.2e-2. */
  const double ppf[] = {3, 4.4, 6, 10};
  double worst8 = 0, worst3 = 0, worstp = 0;
  for (int c = 0; c < 4; c++) {
    double belt, whole, paper;
    healpix_case(32, ppf[c], 1e-8, &belt, &whole, &paper);
    if (whole > worst8) worst8 = whole;
    if (paper > worstp) worstp = paper;
    healpix_case(32, ppf[c], 1e-3, &belt, &whole, &paper);
    if (whole > worst3) worst3 = whole;
    if (paper > worstp) worstp = paper;
  }
  CHECK_LE("enhanced whole sphere, nside 32, 3-10 pix/FWHM, cut 1e-8", worst8, 1e-13);
  CHECK_LE("enhanced whole sphere, nside 32, 3-10 pix/FWHM, cut 1e-3", worst3, 1e-13);
  CHECK_LE("paper whole sphere, nside 32, 3-10 pix/FWHM", worstp, 1.5e-2);
}

/* arkcos_options.oversample has no effect (the polar caps are summed
 * exactly, paper mode keeps its L grid): 0, 1 and 2 give bit-identical
 * output in both modes and precisions, for a narrow Gaussian (2.8 pixels
 * per FWHM, cut 1e-5, where the caps were once oversampled) and a top-hat. */
TEST_GROUP(oversample_no_effect) {
  arkcos_geometry *g = arkcos_geometry_healpix(16, NULL);
  const double pix = sqrt(4 * M_PI / g->npix);
  arkcos_kernel *ks[2] = {gauss(2.8 * pix, 0, 1e-5), tophat(2.3 * pix)};
  double *x = random_map(g->npix), *out[3];
  for (int q = 0; q < 3; q++) out[q] = malloc(sizeof(double) * g->npix);
  for (int kk = 0; kk < 2; kk++)
    for (int prec = 0; prec < 2; prec++)
      for (int mode = 0; mode < 2; mode++) {
        int made = 1;
        for (int q = 0; q < 3; q++) {
          arkcos_options o = cpu_options(mode, prec);
          o.oversample = q;
          arkcos_plan *p = arkcos_plan_create(g, ks[kk], &o, NULL);
          made &= p && arkcos_execute(p, x, out[q], NULL) == ARKCOS_OK;
          arkcos_plan_destroy(p);
        }
        CHECK(made && !memcmp(out[0], out[1], sizeof(double) * g->npix) &&
                  !memcmp(out[0], out[2], sizeof(double) * g->npix),
              "%s, %s, %s: oversample 0, 1, 2 bit-identical", kk ? "top-hat" : "Gaussian 2.8 pix/FWHM",
              mode ? "paper" : "enhanced", prec ? "single" : "double");
      }
  for (int q = 0; q < 3; q++) free(out[q]);
  free(x);
  arkcos_kernel_destroy(ks[0]);
  arkcos_kernel_destroy(ks[1]);
  arkcos_geometry_destroy(g);
}

TEST_GROUP(arkcos_vs_direct_ecp) {
  /* every ring has the same length: ARKCoS enhanced is the direct sum */
  arkcos_geometry *g = arkcos_geometry_ecp(24, 48, 0.5, NULL);
  arkcos_kernel *k = gauss(20 * DEG, 31.7 * DEG, 0);
  double *in = random_map(g->npix), *ref = malloc(sizeof(double) * g->npix);
  brute_direct(g, k, in, ref);
  double *a = smooth(g, k, in, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE);
  /* measured 1.6e-15 */
  CHECK_LE("ECP 24x48, 20 deg FWHM: enhanced vs direct, whole sphere", frac_rms(g, a, ref, NULL), 1e-10);
  free(a);
  arkcos_kernel_destroy(k);
  /* a kernel whose disc covers a pole */
  k = gauss(40 * DEG, 75.3 * DEG, 0);
  brute_direct(g, k, in, ref);
  a = smooth(g, k, in, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE);
  CHECK_LE("ECP 24x48, 40 deg FWHM over the poles: enhanced vs direct", frac_rms(g, a, ref, NULL), 1e-10);
  free(a);
  free(in);
  free(ref);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

static double max_abs_diff(const double *a, const double *b, int64_t n, double scale) {
  double m = 0;
  for (int64_t i = 0; i < n; i++)
    if (fabs(a[i] - b[i]) > m) m = fabs(a[i] - b[i]);
  return m / scale;
}

static double rms(const double *a, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += a[i] * a[i];
  return sqrt(s / n);
}

TEST_GROUP(properties) {
  arkcos_geometry *g = arkcos_geometry_healpix(48, NULL);
  int64_t n = g->npix;
  double pix = sqrt(4 * M_PI / n);
  arkcos_kernel *k = gauss(4 * pix, 0, 1e-7);
  for (int mode = 0; mode < 2; mode++) {
    const char *mn = mode ? "paper" : "enhanced";
    char what[128];
    double *x = random_map(n), *y = random_map(n), *z = malloc(sizeof(double) * n);
    for (int64_t i = 0; i < n; i++) z[i] = 2.5 * x[i] - 0.75 * y[i];
    double *sx = smooth(g, k, x, mode, ARKCOS_DOUBLE), *sy = smooth(g, k, y, mode, ARKCOS_DOUBLE);
    double *sz = smooth(g, k, z, mode, ARKCOS_DOUBLE);
    for (int64_t i = 0; i < n; i++) y[i] = 2.5 * sx[i] - 0.75 * sy[i];
    snprintf(what, sizeof what, "%s: linearity, max error / rms", mn);
    CHECK_LE(what, max_abs_diff(sz, y, n, rms(sz, n)), 1e-13); /* measured ~2e-15 */
    /* rotation by 90 degrees: every HEALPix ring length is a multiple of 4 */
    for (int i = 0; i < g->nrings; i++) {
      int64_t N = g->rings[i].nph, o = g->rings[i].ofs;
      for (int64_t q = 0; q < N; q++) z[o + (q + N / 4) % N] = x[o + q];
    }
    double *srot = smooth(g, k, z, mode, ARKCOS_DOUBLE);
    for (int i = 0; i < g->nrings; i++) {
      int64_t N = g->rings[i].nph, o = g->rings[i].ofs;
      for (int64_t q = 0; q < N; q++) y[o + (q + N / 4) % N] = sx[o + q];
    }
    snprintf(what, sizeof what, "%s: rotation by 90 deg commutes, max error / rms", mn);
    CHECK_LE(what, max_abs_diff(srot, y, n, rms(sx, n)), 1e-13); /* measured ~1e-15 */
    free(srot);
    /* north/south mirror */
    for (int i = 0; i < g->nrings; i++) {
      const arkcos_ring *a = &g->rings[i], *b = &g->rings[g->nrings - 1 - i];
      for (int64_t q = 0; q < a->nph; q++) z[b->ofs + q] = x[a->ofs + q];
    }
    double *smir = smooth(g, k, z, mode, ARKCOS_DOUBLE);
    for (int i = 0; i < g->nrings; i++) {
      const arkcos_ring *a = &g->rings[i], *b = &g->rings[g->nrings - 1 - i];
      for (int64_t q = 0; q < a->nph; q++) y[b->ofs + q] = sx[a->ofs + q];
    }
    snprintf(what, sizeof what, "%s: north/south mirror commutes, max error / rms", mn);
    CHECK_LE(what, max_abs_diff(smir, y, n, rms(sx, n)), 1e-13);
    free(smir);
    /* constant map: the direct sum's own quadrature error of int K = 1 */
    for (int64_t i = 0; i < n; i++) z[i] = 1;
    double *sc = smooth(g, k, z, mode, ARKCOS_DOUBLE);
    double *ref = malloc(sizeof(double) * n);
    brute_direct(g, k, z, ref);
    double dev = 0, devref = 0, dd = 0;
    for (int64_t i = 0; i < n; i++) {
      if (fabs(sc[i] - 1) > dev) dev = fabs(sc[i] - 1);
      if (fabs(ref[i] - 1) > devref) devref = fabs(ref[i] - 1);
      if (fabs(sc[i] - ref[i]) > dd) dd = fabs(sc[i] - ref[i]);
    }
    /* A constant map stays constant to the quadrature level of the pixel sum
     * sum_q w_q K(alpha_pq) = 1: 1.7e-2 at 4 pixels per FWHM (measured), the
     * same for the direct sum. ARKCoS must follow the direct sum there:
     * measured max |s - direct| = 1.1e-7 enhanced (caps), 1.0e-3 paper. */
    printf("  %s: constant map: max |s - 1| = %.3e; direct sum itself: %.3e\n", mn, dev, devref);
    snprintf(what, sizeof what, "%s: constant map, max |s - direct sum|", mn);
    CHECK_LE(what, dd, mode ? 2e-3 : 2e-7);
    CHECK(dev <= devref * 1.01 + 1e-6, "%s: constant map no worse than the direct sum", mn);
    free(sc);
    free(ref);
    free(x);
    free(y);
    free(z);
    free(sx);
    free(sy);
    free(sz);
  }
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

TEST_GROUP(single_precision) {
  arkcos_geometry *g = arkcos_geometry_healpix(32, NULL);
  double pix = sqrt(4 * M_PI / g->npix);
  arkcos_kernel *k = gauss(4 * pix, 0, 1e-6);
  double *x = random_map(g->npix);
  for (int mode = 0; mode < 2; mode++) {
    double *d = smooth(g, k, x, mode, ARKCOS_DOUBLE), *f = smooth(g, k, x, mode, ARKCOS_SINGLE);
    char what[128];
    snprintf(what, sizeof what, "%s: single vs double precision, frac RMS", mode ? "paper" : "enhanced");
    CHECK_LE(what, frac_rms(g, f, d, NULL), 1e-6);
    free(d);
    free(f);
  }
  free(x);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

/* one plan, many maps: repeated executes and cached kernel spectra give the
 * same numbers bit for bit */
TEST_GROUP(plan_reuse) {
  arkcos_geometry *g = arkcos_geometry_healpix(40, NULL);
  double pix = sqrt(4 * M_PI / g->npix);
  arkcos_kernel *k = gauss(3.5 * pix, 0, 1e-6);
  for (int prec = 0; prec < 2; prec++)
    for (int mode = 0; mode < 2; mode++) {
      arkcos_options o = cpu_options(mode, prec);
      arkcos_plan *p1 = arkcos_plan_create(g, k, &o, NULL);
      o.cache_kernel_spectra = 1;
      arkcos_plan *p2 = arkcos_plan_create(g, k, &o, NULL);
      CHECK(p1 && p2, "plans");
      if (!p1 || !p2) continue;
      CHECK(arkcos_plan_memory(p2) > arkcos_plan_memory(p1), "cache is counted in the plan's memory");
      double *x = random_map(g->npix), *y = random_map(g->npix);
      double *a = malloc(sizeof(double) * g->npix), *b = malloc(sizeof(double) * g->npix);
      double *c = malloc(sizeof(double) * g->npix);
      arkcos_execute(p1, x, a, NULL);
      arkcos_execute(p1, y, c, NULL); /* another map in between */
      arkcos_execute(p1, x, b, NULL);
      CHECK(!memcmp(a, b, sizeof(double) * g->npix), "repeat execute is bit-identical (prec %d mode %d)", prec, mode);
      arkcos_execute(p2, x, b, NULL);
      CHECK(!memcmp(a, b, sizeof(double) * g->npix), "cached kernel spectra give identical output (prec %d mode %d)",
            prec, mode);
      /* AUTO: a cache this small (within two maps and 64 MB) is kept */
      o.cache_kernel_spectra = ARKCOS_CACHE_AUTO;
      arkcos_plan *p3 = arkcos_plan_create(g, k, &o, NULL);
      CHECK(p3 && arkcos_plan_memory(p3) == arkcos_plan_memory(p2), "AUTO keeps a small cache: %zu bytes, cached %zu",
            p3 ? arkcos_plan_memory(p3) : 0, arkcos_plan_memory(p2));
      if (p3) arkcos_execute(p3, x, b, NULL);
      CHECK(p3 && !memcmp(a, b, sizeof(double) * g->npix), "AUTO's output differs (prec %d mode %d)", prec, mode);
      arkcos_plan_destroy(p3);
      free(x);
      free(y);
      free(a);
      free(b);
      free(c);
      arkcos_plan_destroy(p1);
      arkcos_plan_destroy(p2);
    }
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
  /* AUTO declines a cache past two maps and 64 MB (nside 256 at 5 pixels
   * per FWHM: the plan estimated at 221 MB with it, 14 MB without, against
   * 77 MB) */
  g = arkcos_geometry_healpix(256, NULL);
  k = gauss(5 * sqrt(4 * M_PI / g->npix), 0, 1e-13);
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.threads = 2;
  o.cache_kernel_spectra = 1;
  const double with = arkcos_plan_estimate(g, k, &o, NULL), budget = 16.0 * (double)g->npix + 64e6;
  o.cache_kernel_spectra = 0;
  arkcos_plan *p0 = arkcos_plan_create(g, k, &o, NULL);
  o.cache_kernel_spectra = ARKCOS_CACHE_AUTO;
  arkcos_plan *pa = arkcos_plan_create(g, k, &o, NULL);
  CHECK(with > budget, "the cache at nside 256 should be past the budget: %.0f MB of %.0f", with / 1e6, budget / 1e6);
  CHECK(p0 && pa && arkcos_plan_memory(pa) == arkcos_plan_memory(p0), "AUTO kept a large cache: %zu bytes, none %zu",
        pa ? arkcos_plan_memory(pa) : 0, p0 ? arkcos_plan_memory(p0) : 0);
  arkcos_plan_destroy(p0);
  arkcos_plan_destroy(pa);
  o.cache_kernel_spectra = 3;
  arkcos_error e = {0, ""};
  CHECK(!arkcos_plan_create(g, k, &o, &e) && e.code == ARKCOS_EINVAL && strstr(e.msg, "cache_kernel_spectra"),
        "cache_kernel_spectra 3 accepted: %s", e.msg);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

/* The math the GPU backend shares with the CPU (arkcos_math.h), against
 * definitions written out the slow way. */
TEST_GROUP(shared_math) {
  /* chord distance against unit vectors */
  double worst = 0;
  for (int t = 0; t < 100000; t++) {
    double t1 = M_PI * urand(), t2 = M_PI * urand(), dp = 2 * M_PI * urand();
    if (t < 50000) t2 = t1 + 1e-3 * (urand() - 0.5), dp *= 1e-3; /* small distances */
    double a[3] = {sin(t1), 0, cos(t1)}, b[3] = {sin(t2) * cos(dp), sin(t2) * sin(dp), cos(t2)};
    double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    double d2 = dx * dx + dy * dy + dz * dz;
    double h = sin(0.5 * (t1 - t2));
    double e = fabs(arkcos_chord2(h * h, sin(t1) * sin(t2), dp) - d2) / (d2 + 1e-300);
    if (d2 > 1e-12 && e > worst) worst = e;
  }
  /* measured 1.3e-11: the unit-vector difference itself cancels at small d */
  CHECK_LE("arkcos_chord2 vs |a - b|^2 from unit vectors, relative", worst, 1e-10);
  /* window: the edge is at the cutoff, and the sample range covers it */
  arkcos_kfun kf = {0};
  kf.type = ARKCOS_KERNEL_TOPHAT;
  kf.norm = 1;
  kf.cutoff = 0.05;
  kf.cut_d2 = 4 * pow(sin(0.025), 2);
  int missed = 0, edge_bad = 0;
  for (int t = 0; t < 20000; t++) {
    double t1 = 0.05 + (M_PI - 0.1) * urand(), t2 = t1 + 0.1 * (urand() - 0.5);
    double h = sin(0.5 * (t1 - t2)), ss = sin(t1) * sin(t2), half = arkcos_dphi_window(&kf, h * h, ss);
    if (half > 0 && half < M_PI && fabs(arkcos_chord2(h * h, ss, half) - kf.cut_d2) > 1e-12 * kf.cut_d2) edge_bad++;
    int64_t L = 64 + (int64_t)(urand() * 4000), n0, n1;
    double off = (urand() - 0.5) * 4 * M_PI / (double)L;
    arkcos_sample_range(half, off, L, &n0, &n1);
    for (int64_t n = -L / 2; n < L / 2; n++) {
      double d2 = arkcos_chord2(h * h, ss, off + 2 * M_PI * n / L);
      int inside = d2 <= kf.cut_d2;
      int covered = (n1 - n0 + 1 >= L) || (n >= n0 && n <= n1) || (n + L >= n0 && n + L <= n1) ||
                    (n - L >= n0 && n - L <= n1);
      if (inside && !covered) missed++;
    }
  }
  CHECK(edge_bad == 0, "window edge at the cutoff: %d bad", edge_bad);
  CHECK(missed == 0, "sample range misses %d samples inside the window", missed);
  /* folding: scatter rule against its definition, and the GPU's gather form */
  int bad_def = 0, bad_gather = 0;
  for (int64_t L = 4; L <= 40; L += 1)
    for (int64_t N = 1; N <= L; N++) {
      int64_t nm = L / 2 + 1;
      /* count[d][m][c]: times mode m lands on bin d (c = 1: conjugated) */
      int cnt_s[21][21][2] = {{{0}}}, cnt_g[21][21][2] = {{{0}}};
      for (int64_t m = 0; m < nm; m++) {
        int64_t d, mi;
        double w;
        arkcos_fold(m, N, L, &d, &mi, &w);
        if (d >= 0) cnt_s[d][m][0]++;
        if (mi >= 0) cnt_s[mi][m][1]++;
        /* definition: +m lands on m mod N, -m on (-m) mod N, kept when <= N/2 */
        int64_t r = m % N, rn = (N - r) % N;
        int want_d = 2 * r <= N, want_mi = m > 0 && 2 * rn <= N;
        if ((d >= 0) != want_d || (want_d && d != r) || (mi >= 0) != want_mi || (want_mi && mi != rn)) bad_def++;
        if (fabs(w - ((2 * m == L) ? 0.5 : 1.0)) > 0) bad_def++;
      }
      for (int64_t d = 0; 2 * d <= N; d++)
        for (int64_t t = 0;; t++) {
          int conj;
          int64_t m = arkcos_fold_source(d, N, t, &conj);
          if (m >= nm) break;
          cnt_g[d][m][conj]++;
        }
      if (memcmp(cnt_s, cnt_g, sizeof cnt_s)) bad_gather++;
    }
  CHECK(bad_def == 0, "arkcos_fold against its definition: %d mismatches", bad_def);
  CHECK(bad_gather == 0, "arkcos_fold_source (GPU gather) differs from arkcos_fold (scatter) in %d (N, L)",
        bad_gather);
  /* kernel evaluation at a squared chord equals evaluation at the angle */
  arkcos_kernel *k = gauss(30 * ARCMIN, 2 * DEG, 0);
  worst = 0;
  for (int t = 0; t < 10000; t++) {
    double a = 2.1 * DEG * urand();
    arkcos_kfun f = {0};
    f.type = ARKCOS_KERNEL_GAUSSIAN;
    f.norm = 1;
    f.inv2s2 = 0.5 / pow(30 * ARCMIN / sqrt(8 * log(2.0)), 2);
    f.cutoff = 2 * DEG;
    f.cut_d2 = 4 * pow(sin(DEG), 2);
    double v1 = arkcos_kfun_d2(&f, 4 * pow(sin(0.5 * a), 2)), v2 = arkcos_kfun_alpha(&f, a);
    if (fabs(v1 - v2) > worst) worst = fabs(v1 - v2);
  }
  CHECK_LE("kernel at chord vs at angle, max abs difference", worst, 1e-14);
  arkcos_kernel_destroy(k);
}

TEST_GROUP(plan_errors) {
  arkcos_error e = {0};
  arkcos_kernel_spec s = {0};
  s.type = ARKCOS_KERNEL_GAUSSIAN;
  s.fwhm = -1;
  s.cutoff = 0.1;
  CHECK(arkcos_kernel_create(&s, &e) == NULL && e.code == ARKCOS_EINVAL, "negative FWHM rejected");
  s.fwhm = 0.01;
  s.cutoff = 4;
  CHECK(arkcos_kernel_create(&s, &e) == NULL && e.code == ARKCOS_EINVAL, "cutoff > pi rejected: %s", e.msg);
  CHECK(arkcos_geometry_healpix(0, &e) == NULL && e.code == ARKCOS_EINVAL, "nside 0 rejected");
  CHECK(arkcos_kernel_from_file("/nonexistent/kernel.txt", 0, 0, &e) == NULL && e.code == ARKCOS_EINVAL &&
            strstr(e.msg, "/nonexistent/kernel.txt"),
        "missing kernel file named: %s", e.msg);
  arkcos_plan_destroy(NULL);
  arkcos_geometry_destroy(NULL);
  arkcos_kernel_destroy(NULL);
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_GPU;
  arkcos_geometry *g = arkcos_geometry_healpix(4, NULL);
  s.cutoff = 0.3;
  arkcos_kernel *k = arkcos_kernel_create(&s, NULL);
  char why[256];
  if (!arkcos_gpu_available(why, sizeof why)) {
    arkcos_plan *p = arkcos_plan_create(g, k, &o, &e);
    CHECK(p == NULL && e.code == ARKCOS_ENODEV, "GPU plan without a device fails cleanly: %s", e.msg);
  }
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

/* arkcos_execute refuses a map with non-finite pixels (and, in single
 * precision, pixels beyond float's range) and names the first of them,
 * whichever of the scan's blocks of 4096 pixels it falls in. */
TEST_GROUP(input_check) {
  arkcos_geometry *g = arkcos_geometry_healpix(64, NULL); /* 49152 pixels: 12 blocks */
  arkcos_kernel_spec s = {0};
  s.type = ARKCOS_KERNEL_GAUSSIAN;
  s.fwhm = 0.05;
  s.cutoff = 0.1;
  arkcos_kernel *k = arkcos_kernel_create(&s, NULL);
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  arkcos_plan *p = g && k ? arkcos_plan_create(g, k, &o, NULL) : NULL;
  o.precision = ARKCOS_SINGLE;
  arkcos_plan *ps = g && k ? arkcos_plan_create(g, k, &o, NULL) : NULL;
  CHECK(p && ps, "plans");
  if (p && ps) {
    const int64_t n = g->npix;
    double *in = calloc((size_t)n, sizeof *in), *out = malloc(sizeof *out * (size_t)n);
    /* (first offender, a later one, the value of the first) */
    const struct { int64_t a, b; double v; } c[] = {{0, 5, NAN},      {4095, 4096, INFINITY},
                                                    {4096, 4095 + 8192, -INFINITY}, {9000, 9001, NAN},
                                                    {n - 1, -1, NAN}, {12345, 40000, -INFINITY}};
    for (size_t t = 0; t < sizeof c / sizeof c[0]; t++) {
      memset(in, 0, sizeof *in * (size_t)n);
      in[c[t].a] = c[t].v;
      if (c[t].b >= 0) in[c[t].b] = NAN;
      arkcos_error e = {0};
      char want[64];
      snprintf(want, sizeof want, "pixel %lld is ", (long long)c[t].a);
      CHECK(arkcos_execute(p, in, out, &e) == ARKCOS_EINVAL && strstr(e.msg, want),
            "first non-finite pixel %lld named: %s", (long long)c[t].a, e.msg);
    }
    memset(in, 0, sizeof *in * (size_t)n);
    in[20000] = 1e39;
    in[30000] = -1e39;
    arkcos_error e = {0};
    CHECK(arkcos_execute(p, in, out, &e) == ARKCOS_OK, "1e39 is fine in double precision: %s", e.msg);
    CHECK(arkcos_execute(ps, in, out, &e) == ARKCOS_EINVAL && strstr(e.msg, "pixel 20000 = 1e+39") &&
              strstr(e.msg, "single precision"),
          "single precision names the first pixel beyond float's range: %s", e.msg);
    free(in);
    free(out);
  }
  arkcos_plan_destroy(p);
  arkcos_plan_destroy(ps);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

/* The cap rings' DFTs (bluestein.c) against FFTW's r2c and c2r of the
 * same lengths: the ring lengths of HEALPix caps (4 i) and a few other
 * even ones. Measured worst max |difference| / max |FFTW|: r2c 9.4e-16,
 * c2r 2.0e-15 (n = 2 .. 8188). */
#define TOL_BLUESTEIN 1e-14
TEST_GROUP(bluestein_vs_fftw) {
  const int64_t ns[] = {2, 4, 6, 8, 12, 36, 100, 968, 1004, 4092, 8188};
  double worst = 0, worst_inv = 0;
  for (size_t q = 0; q < sizeof ns / sizeof *ns; q++) {
    const int64_t n = ns[q];
    arkcos_bluestein *b = arkcos_bluestein_create(n);
    CHECK(b != NULL, "bluestein n %lld: created", (long long)n);
    if (!b) continue;
    double *x = fftw_malloc(sizeof(double) * (size_t)(n + 2)), *X = fftw_malloc(sizeof(double) * (size_t)(n + 2));
    double *Y = fftw_malloc(sizeof(double) * (size_t)(n + 2)), *y = fftw_malloc(sizeof(double) * (size_t)(n + 2));
    double *w = fftw_malloc(sizeof(double) * arkcos_bluestein_work(b));
    if (w) memset(w, 0, 8 * sizeof(double)); /* no chirp prepared in it yet */
    fftw_plan f = fftw_plan_dft_r2c_1d((int)n, x, (fftw_complex *)X, FFTW_ESTIMATE);
    fftw_plan g = fftw_plan_dft_c2r_1d((int)n, (fftw_complex *)Y, y, FFTW_ESTIMATE);
    uint64_t st = 12345 + (uint64_t)n;
    for (int64_t k = 0; k < n; k++) x[k] = 2.0 * ((double)((st = st * 6364136223846793005ULL + 1) >> 11) / 9007199254740992.0) - 1;
    fftw_execute(f);
    arkcos_bluestein_r2c(b, x, Y, w);
    double e = 0, m = 0;
    for (int64_t k = 0; k < n + 2; k++) {
      e = fmax(e, fabs(X[k] - Y[k]));
      m = fmax(m, fabs(X[k]));
    }
    worst = fmax(worst, e / m);
    /* c2r of FFTW's spectrum: n x */
    memcpy(Y, X, sizeof(double) * (size_t)(n + 2));
    fftw_execute(g);
    double *z = fftw_malloc(sizeof(double) * (size_t)(n + 2));
    arkcos_bluestein_c2r(b, X, z, w);
    double ei = 0, mi = 0;
    for (int64_t k = 0; k < n; k++) {
      ei = fmax(ei, fabs(y[k] - z[k]));
      mi = fmax(mi, fabs(y[k]));
    }
    worst_inv = fmax(worst_inv, ei / mi);
    fftw_destroy_plan(f);
    fftw_destroy_plan(g);
    fftw_free(x);
    fftw_free(X);
    fftw_free(Y);
    fftw_free(y);
    fftw_free(z);
    fftw_free(w);
    arkcos_bluestein_destroy(b);
  }
  printf("  bluestein vs FFTW: r2c %.2e, c2r %.2e (max relative)\n", worst, worst_inv);
  CHECK(worst <= TOL_BLUESTEIN && worst_inv <= TOL_BLUESTEIN, "bluestein vs FFTW: r2c %.3e, c2r %.3e > %.0e", worst,
        worst_inv, TOL_BLUESTEIN);
}

/* A pixel-centre map of per-ring weights w[r] */
static double *ring_weight_map(int64_t nside, const double *w) {
  const int64_t npix = 12 * nside * nside;
  double *m = malloc(sizeof(double) * (size_t)npix);
  for (int64_t p = 0; p < npix; p++) {
    double th, ph;
    arkcos_healpix_pix2ang_ring(nside, p, &th, &ph);
    /* the ring of pixel p: count rings by the pixel offsets */
    int64_t r;
    if (p < 2 * nside * (nside - 1)) r = (int64_t)floor((sqrt(1.0 + 2.0 * (double)p) + 1) / 2) - 1;
    else if (p < npix - 2 * nside * (nside - 1)) r = nside - 1 + (p - 2 * nside * (nside - 1)) / (4 * nside);
    else {
      const int64_t q = npix - 1 - p;
      r = 4 * nside - 2 - ((int64_t)floor((sqrt(1.0 + 2.0 * (double)q) + 1) / 2) - 1);
    }
    m[p] = w[r];
  }
  return m;
}

/* Ring weights: integrals of smooth functions concentrated at the pole and at
 * the cap/belt boundary, and a constant map smoothed by a Gaussian. */
TEST_GROUP(ring_weights) {
  double *w = malloc(sizeof(double) * 4 * 256);
  CHECK(arkcos_healpix_ring_weights(0, w) == -1 && arkcos_healpix_ring_weights(64, NULL) == -1,
        "ring weights: bad arguments refused");
  CHECK(arkcos_healpix_ring_weights(4, w) == 0 && w[0] == 1 && w[14] == 1, "ring weights: nside 4 plain");
  /* 1. sum over rings of N_r w_r f(z_r) 4pi/npix against exact integrals of
   * f = exp(-theta^2 / (2 s^2)) (pole) and exp(-(z - 2/3)^2 / (2 s^2)) (the
   * kink), s in ring spacings of the place */
  const int64_t nside = 64, nr = 4 * nside - 1, npix = 12 * nside * nside;
  CHECK(arkcos_healpix_ring_weights(nside, w) == 0, "ring weights nside 64");
  double worst_w[2] = {0, 0}, least_gain[2] = {1e300, 1e300}, wide_pole = 0;
  for (int place = 0; place < 2; place++)
    for (double s = 1.5; s <= 6.01; s += 1.5) {
      /* exact integral by Simpson in theta, 2e5 panels */
      const double sig = place == 0 ? s * 0.816 / nside : s * 2.0 / (3 * nside);
      double exact = 0;
      const int n = 200000;
      for (int i = 0; i <= n; i++) {
        const double th = M_PI * i / n, z = cos(th);
        const double f = place == 0 ? exp(-th * th / (2 * sig * sig)) : exp(-(z - 2.0 / 3) * (z - 2.0 / 3) / (2 * sig * sig));
        exact += f * sin(th) * (i == 0 || i == n ? 1 : (i % 2 ? 4 : 2));
      }
      exact *= 2 * M_PI * (M_PI / n) / 3;
      double plain = 0, weighted = 0;
      for (int64_t r = 0; r < nr; r++) {
        double th, ph;
        const int64_t first = r < nside ? 2 * r * (r + 1) : (r < 3 * nside ? 2 * nside * (nside - 1) + (r - nside + 1) * 4 * nside
                                                                                : npix - 2 * (nr - r) * (nr - r + 1));
        arkcos_healpix_pix2ang_ring(nside, first, &th, &ph);
        const int64_t nph = r < nside - 1 ? 4 * (r + 1) : (r < 3 * nside ? 4 * nside : 4 * (nr - r));
        const double z = cos(th);
        const double f = place == 0 ? exp(-th * th / (2 * sig * sig)) : exp(-(z - 2.0 / 3) * (z - 2.0 / 3) / (2 * sig * sig));
        plain += (double)nph * f * 4 * M_PI / (double)npix;
        weighted += (double)nph * w[r] * f * 4 * M_PI / (double)npix;
      }
      if (getenv("RW_DEBUG")) printf("    place %d s %.1f plain %.2e weighted %.2e\n", place, s, plain / exact - 1, weighted / exact - 1);
      worst_w[place] = fmax(worst_w[place], fabs(weighted / exact - 1));
      least_gain[place] = fmin(least_gain[place], fabs(plain / exact - 1) / fabs(weighted / exact - 1));
      if (place == 0 && s > 2) wide_pole = fmax(wide_pole, fabs(weighted / exact - 1));
    }
  printf("  ring weights, integrals (s = 1.5-6 ring spacings): worst %.1e pole (%.1e from s = 3), %.1e kink; "
         "gain at least %.0fx pole, %.0fx kink\n",
         worst_w[0], wide_pole, worst_w[1], least_gain[0], least_gain[1]);
  /* measured (plain -> weighted): pole s = 1.5 3.8e-2 -> 7.7e-4, s = 3 9.3e-3 -> 1.8e-6,
   * s = 6 2.3e-3 -> 2.2e-9; kink s = 1.5 3.6e-4 -> 2.0e-9, s = 6 8.7e-5 -> 1.4e-10 (with the
   * 1/12 alone: 1.7e-5 at s = 1.5, 2.4e-7 at s = 6; the fitted kink rows gain 8500x at s = 1.5) */
  CHECK(worst_w[0] <= 1e-3 && wide_pole <= 3e-6 && worst_w[1] <= 5e-9,
        "ring weights: integral errors %.2e (pole), %.2e (pole, s >= 3), %.2e (kink)", worst_w[0], wide_pole,
        worst_w[1]);
  CHECK(least_gain[0] >= 40 && least_gain[1] >= 2e4, "ring weights gain only %.1fx (pole), %.1fx (kink)",
        least_gain[0], least_gain[1]);
  /* 2. a constant map, weighted, smoothed by a 4.4 px/FWHM Gaussian */
  arkcos_geometry *g = arkcos_geometry_healpix(nside, NULL);
  arkcos_kernel *k = gauss(4 * DEG, 0, 1e-13);
  double *one = malloc(sizeof(double) * (size_t)npix), *wm = ring_weight_map(nside, w);
  for (int64_t p = 0; p < npix; p++) one[p] = 1;
  double *a = smooth(g, k, one, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE);
  double *b = smooth(g, k, wm, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE);
  double ea = 0, eb = 0;
  for (int64_t p = 0; p < npix; p++) {
    ea = fmax(ea, fabs(a[p] - 1));
    eb = fmax(eb, fabs(b[p] - 1));
  }
  printf("  constant map, 4.4 px/FWHM, nside 64: max |1 - out| %.1e plain, %.1e ring weights\n", ea, eb);
  /* measured: 1.4e-02 plain, 7.4e-05 weighted */
  CHECK(eb <= 1e-4 && ea > 100 * eb, "constant map with ring weights: %.2e (plain %.2e)", eb, ea);
  free(a);
  free(b);
  free(one);
  free(wm);
  free(w);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

/* arkcos_plan_check gives exactly create's error (code and message), and
 * 0 where create succeeds; arkcos_options_check the same for what the
 * options alone decide */
TEST_GROUP(plan_check) {
  arkcos_geometry *g = arkcos_geometry_healpix(16, NULL);
  arkcos_kernel *k = gauss(8 * M_PI / 180, 0, 1e-6);
  struct {
    const char *what;
    int spin, mode, prec, backend, threads;
    double max_memory, accuracy;
    int null_kernel;
  } cs[] = {
      {"valid", 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, ARKCOS_BACKEND_CPU, 1, 0, 0, 0},
      {"valid spin 2", 2, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, ARKCOS_BACKEND_CPU, 1, 0, 0, 0},
      {"spin 3", 3, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, ARKCOS_BACKEND_CPU, 1, 0, 0, 0},
      {"spin 2, paper", 2, ARKCOS_MODE_PAPER, ARKCOS_DOUBLE, ARKCOS_BACKEND_CPU, 1, 0, 0, 0},
      {"spin 2, single", 2, ARKCOS_MODE_ENHANCED, ARKCOS_SINGLE, ARKCOS_BACKEND_CPU, 1, 0, 0, 0},
      {"spin 2, gpu", 2, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, ARKCOS_BACKEND_GPU, 1, 0, 0, 0},
      {"gpu (none here, or one)", 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, ARKCOS_BACKEND_GPU, 1, 0, 0, 0},
      {"backend 7", 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, 7, 1, 0, 0, 0},
      {"max_memory 1 kB", 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, ARKCOS_BACKEND_CPU, 1, 1e3, 0, 0},
      {"accuracy -1", 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, ARKCOS_BACKEND_CPU, 1, 0, -1, 0},
      {"threads -2", 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, ARKCOS_BACKEND_CPU, -2, 0, 0, 0},
      {"no kernel", 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, ARKCOS_BACKEND_CPU, 1, 0, 0, 1},
  };
  int refused = 0;
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    arkcos_options o;
    arkcos_options_default(&o);
    o.spin = cs[i].spin;
    o.mode = cs[i].mode;
    o.precision = cs[i].prec;
    o.backend = cs[i].backend;
    o.threads = cs[i].threads;
    o.max_memory = cs[i].max_memory;
    o.accuracy = cs[i].accuracy;
    const arkcos_kernel *kk = cs[i].null_kernel ? NULL : k;
    arkcos_error ec = {0, ""}, ep = {0, ""};
    const int rc = arkcos_plan_check(g, kk, &o, &ec);
    arkcos_plan *p = arkcos_plan_create(g, kk, &o, &ep);
    CHECK(rc == ep.code && !strcmp(ec.msg, ep.msg) && (rc == 0) == (p != NULL),
          "%s: check %d '%s', create %d '%s'", cs[i].what, rc, ec.msg, ep.code, ep.msg);
    refused += rc != 0;
    /* the options alone: the same refusal, or none where only the memory
     * or the missing kernel is at fault */
    arkcos_error eo = {0, ""};
    const int ro = arkcos_options_check(&o, &eo);
    if (rc == 0 || ec.code == ARKCOS_ENOMEM || cs[i].null_kernel)
      CHECK(ro == 0, "%s: options alone pass: %d '%s'", cs[i].what, ro, eo.msg);
    else
      CHECK(ro == ec.code && !strcmp(eo.msg, ec.msg), "%s: options check %d '%s', plan check '%s'", cs[i].what, ro,
            eo.msg, ec.msg);
    arkcos_plan_destroy(p);
  }
  CHECK(refused >= 9, "%d of %zu cases refused", refused, sizeof cs / sizeof cs[0]);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

/* A GPU plan's bound takes the direct pairs' terms from
 * arkcos_direct_task_sums (4 rows of each pair, raised by 25 %): per task,
 * at least the largest row sum of |W| over every row (brute force over
 * every pixel pair here) and not far above it */
TEST_GROUP(direct_task_sums) {
  arkcos_geometry *g = arkcos_geometry_healpix(16, NULL);
  const double pix = sqrt(4 * M_PI / g->npix);
  arkcos_kernel *ks[2] = {gauss(2.5 * pix, 0, 1e-5), gauss(8 * pix, 0, 1e-8)};
  double lo = INFINITY, hi = 0;
  for (int q = 0; q < 2; q++) {
    arkcos_options o = cpu_options(ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE);
    setenv("ARKCOS_SMOOTH_CAPS", "0", 1);
    arkcos_plan *p = arkcos_plan_create(g, ks[q], &o, NULL);
    unsetenv("ARKCOS_SMOOTH_CAPS");
    CHECK(p && p->direct_caps, "exact plan with direct caps");
    if (!p || !p->direct_caps) continue;
    const arkcos_ring *rg = g->rings;
    for (int t = 0; t < p->ntasks; t++) {
      const int i = p->task[t];
      double est, terms, truth = 0;
      arkcos_direct_task_sums(p, t, &est, &terms);
      for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
        if (!arkcos_pair_is_direct(p, i, j)) continue;
        const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
        double best = 0;
        for (int64_t a = 0; a < rg[i].nph; a++) {
          double sum = 0;
          for (int64_t b = 0; b < rg[j].nph; b++) {
            const double dphi = rg[i].phi0 + 2 * M_PI * a / rg[i].nph - rg[j].phi0 - 2 * M_PI * b / rg[j].nph;
            const double sh = sin(0.5 * dphi);
            sum += fabs(rg[j].weight *
                        arkcos_kfun_d2(&p->kf, 4.0 * (sdt * sdt + p->sin_theta[i] * p->sin_theta[j] * sh * sh)));
          }
          if (sum > best) best = sum;
        }
        truth += best;
      }
      if (truth > 0) {
        lo = fmin(lo, est / truth);
        hi = fmax(hi, est / truth);
      }
    }
    arkcos_plan_destroy(p);
  }
  printf("  nside 16, 2.5 and 8 px/FWHM: estimate / brute-force sum of the rows' largest |W| sums, %.3f to %.3f\n",
         lo, hi);
  CHECK(lo >= 1.0, "the estimate bounds the sums from above: lowest ratio %.3f", lo);
  CHECK(hi <= 1.5, "and stays within 1.5 times them: highest ratio %.3f", hi);
  arkcos_kernel_destroy(ks[0]);
  arkcos_kernel_destroy(ks[1]);
  arkcos_geometry_destroy(g);
}

/* arkcos_map_alloc: 64-byte aligned room for the maps of any plan (pinned
 * only for GPU plans: gpu_check's group pinned), usable by arkcos_execute;
 * arkcos_map_free of NULL is a no-op */
TEST_GROUP(map_alloc) {
  arkcos_geometry *g = arkcos_geometry_healpix(16, NULL);
  arkcos_kernel *k = gauss(10 * M_PI / 180, 0, 1e-6);
  arkcos_options o = cpu_options(ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE);
  arkcos_plan *p = arkcos_plan_create(g, k, &o, NULL);
  double *x = random_map(g->npix), *a = malloc(sizeof(double) * g->npix);
  double *mi = arkcos_map_alloc(p, g->npix), *mo = arkcos_map_alloc(p, g->npix), *z = arkcos_map_alloc(NULL, 0);
  CHECK(p && mi && mo && z, "plan and maps");
  CHECK(mi && mo && ((uintptr_t)mi % 64 == 0) && ((uintptr_t)mo % 64 == 0), "64-byte aligned");
  CHECK(arkcos_map_alloc(p, -1) == NULL, "a negative size is refused");
  if (p && mi && mo) {
    memcpy(mi, x, sizeof(double) * g->npix);
    CHECK(arkcos_execute(p, x, a, NULL) == 0 && arkcos_execute(p, mi, mo, NULL) == 0 &&
              !memcmp(a, mo, sizeof(double) * g->npix),
          "maps from arkcos_map_alloc give the same output");
  }
  arkcos_map_free(mi);
  arkcos_map_free(mo);
  arkcos_map_free(z);
  arkcos_map_free(NULL);
  free(x);
  free(a);
  arkcos_plan_destroy(p);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

TEST_MAIN(TG(geometry_vs_chealpix), TG(pixel_arithmetic), TG(ecp_geometry), TG(kernel_normalisation),
          TG(kernel_legendre), TG(arkcos_vs_direct_healpix), TG(arkcos_whole_sphere_levels),
          TG(oversample_no_effect), TG(pair_symmetry_without_mirror), TG(arkcos_vs_direct_ecp), TG(properties),
          TG(single_precision), TG(plan_reuse), TG(shared_math), TG(plan_errors), TG(input_check), TG(bluestein_vs_fftw), TG(ring_weights),
          TG(map_alloc), TG(direct_task_sums), TG(plan_check))
