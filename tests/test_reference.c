/*
 * test_reference.c -- the references (direct sum, libsharp FSHT, spectra,
 * random fields) and the accuracy metrics, and ARKCoS judged against them.
 *
 * Thresholds are the values measured on the reference machine (noted next
 * to each), loosened by a small factor; see issue 3.
 */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <chealpix.h>

#include "arkcos/arkcos.h"
#include "reference/reference.h"
#include "tests/testlib.h"

#define PI 3.14159265358979323846
#define DEG (PI / 180.0)

static arkcos_geometry *healpix(int64_t nside) {
  arkcos_error err = {0, ""};
  arkcos_geometry *g = arkcos_geometry_healpix(nside, &err);
  if (!g) {
    fprintf(stderr, "geometry: %s\n", err.msg);
    exit(1);
  }
  return g;
}

static arkcos_kernel *gaussian(double fwhm, double cutoff_rel) {
  arkcos_error err = {0, ""};
  arkcos_kernel_spec s;
  memset(&s, 0, sizeof s);
  s.type = ARKCOS_KERNEL_GAUSSIAN;
  s.fwhm = fwhm;
  s.cutoff_rel = cutoff_rel;
  arkcos_kernel *k = arkcos_kernel_create(&s, &err);
  if (!k) {
    fprintf(stderr, "kernel: %s\n", err.msg);
    exit(1);
  }
  return k;
}

static double *new_map(const arkcos_geometry *g) {
  double *m = calloc((size_t)g->npix, sizeof *m);
  if (!m) exit(1);
  return m;
}

/* A band-limited CMB-like map: alm2map of random a_lm up to lmax. */
static double *cmb_map(const arkcos_geometry *g, int lmax, uint64_t seed) {
  double *cl = malloc((size_t)(lmax + 1) * sizeof *cl);
  double complex *alm = malloc((size_t)ref_alm_size(lmax) * sizeof *alm);
  double *map = new_map(g);
  arkcos_error err = {0, ""};
  ref_cl_cmb(lmax, cl);
  ref_alm_random(cl, lmax, seed, alm);
  if (ref_alm2map(g, lmax, alm, map, 0, &err)) {
    fprintf(stderr, "alm2map: %s\n", err.msg);
    exit(1);
  }
  free(cl);
  free(alm);
  return map;
}

/* sqrt(sum |a - b|^2 / sum |b|^2) over all (l, m), m > 0 counted twice. */
static double alm_rel_rms(int lmax, const double complex *a,
                          const double complex *b) {
  double num = 0, den = 0;
  for (int m = 0; m <= lmax; m++)
    for (int l = m; l <= lmax; l++) {
      int64_t i = ref_alm_index(lmax, l, m);
      double w = m ? 2.0 : 1.0;
      num += w * pow(cabs(a[i] - b[i]), 2);
      den += w * pow(cabs(b[i]), 2);
    }
  return sqrt(num / den);
}

static double max_abs_diff(const double *a, const double *b, int64_t n) {
  double d = 0;
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(a[i] - b[i]) <= d)) d = fabs(a[i] - b[i]);
  return d;
}

/* ------------------------------------------------------------ harmonic */

TEST_GROUP(sht_roundtrip) {
  const int nside = 64, lmax = 2 * nside;
  arkcos_geometry *g = healpix(nside);
  arkcos_error err = {0, ""};
  int64_t nalm = ref_alm_size(lmax);
  double *cl = malloc((size_t)(lmax + 1) * sizeof *cl);
  double complex *alm = malloc((size_t)nalm * sizeof *alm);
  double complex *back = malloc((size_t)nalm * sizeof *back);
  double *map = new_map(g);
  ref_cl_cmb(lmax, cl);
  ref_alm_random(cl, lmax, 11, alm);
  CHECK(ref_alm2map(g, lmax, alm, map, 0, &err) == 0, "%s", err.msg);

  double e[11];
  for (int it = 0; it <= 10; it++) {
    if (it > 3 && it != 10) continue;
    CHECK(ref_map2alm(g, lmax, it, map, NULL, back, 0, &err) == 0, "%s",
          err.msg);
    e[it] = alm_rel_rms(lmax, back, alm);
  }
  printf("  relative rms a_lm error, iter 0..3: %.3e %.3e %.3e %.3e; "
         "iter 10: %.3e\n", e[0], e[1], e[2], e[3], e[10]);
  /* healpy 1.16 on a comparable band-limited map: 1.7e-3, 2.0e-4, 2.4e-5,
   * 3.0e-6 for iter 0..3. Here measured 1.39e-3 and 2.34e-6 (iter 3). */
  CHECK_LE("a_lm -> map -> a_lm, iter 0, relative rms", e[0], 1.7e-3);
  CHECK_LE("a_lm -> map -> a_lm, iter 3, relative rms", e[3], 3e-6);
  /* the Jacobi iterations converge geometrically: measured 9.3e-13 */
  CHECK_LE("a_lm -> map -> a_lm, iter 10, relative rms", e[10], 2e-12);

  char path[4096];
  if (ref_find_ring_weights(nside, path, sizeof path)) {
    double *rw = malloc((size_t)g->nrings * sizeof *rw);
    CHECK(ref_read_ring_weights(path, g, rw, &err) == 0, "%s", err.msg);
    CHECK(rw[0] == rw[g->nrings - 1] && rw[1] == rw[g->nrings - 2],
          "ring weights not mirrored");
    CHECK(ref_map2alm(g, lmax, 0, map, rw, back, 0, &err) == 0, "%s",
          err.msg);
    double ew0 = alm_rel_rms(lmax, back, alm);
    CHECK(ref_map2alm(g, lmax, 3, map, rw, back, 0, &err) == 0, "%s",
          err.msg);
    double ew3 = alm_rel_rms(lmax, back, alm);
    printf("  with ring weights (%s): iter 0 %.3e, iter 3 %.3e\n", path, ew0,
           ew3);
    /* healpy use_weights=True: 5.6e-4 (iter 0), 2.8e-8 (iter 3); measured
     * here 6.68e-4 and 4.70e-8 */
    CHECK_LE("a_lm round trip + ring weights, iter 0, relative rms", ew0,
             8e-4);
    CHECK_LE("a_lm round trip + ring weights, iter 3, relative rms", ew3,
             6e-8);
    /* a ring-weight file for another nside is refused */
    arkcos_geometry *g2 = healpix(nside / 2);
    CHECK(ref_read_ring_weights(path, g2, rw, &err) == ARKCOS_EINVAL,
          "nside mismatch accepted");
    arkcos_geometry_destroy(g2);
    free(rw);
  } else {
    printf("  note: weight_ring_n%05d.fits not found (healpy-data); ring "
           "weights not tested\n", nside);
  }
  /* A malformed argument is an error, not a crash. */
  CHECK(ref_map2alm(g, lmax, -1, map, NULL, back, 0, &err) == ARKCOS_EINVAL,
        "negative iter accepted");
  free(cl);
  free(alm);
  free(back);
  free(map);
  arkcos_geometry_destroy(g);
}

TEST_GROUP(spectra) {
  const int lmax = 128;
  double *cl = malloc((size_t)(lmax + 1) * sizeof *cl);
  double *est = malloc((size_t)(lmax + 1) * sizeof *est);
  int64_t nalm = ref_alm_size(lmax);
  double complex *alm = malloc((size_t)nalm * sizeof *alm);
  double complex *alm2 = malloc((size_t)nalm * sizeof *alm2);
  ref_cl_cmb(lmax, cl);
  CHECK(cl[0] == 0 && cl[1] == 0, "C_0, C_1 should be 0");
  int positive = 1;
  for (int l = 2; l <= lmax; l++) positive &= cl[l] > 0;
  CHECK(positive, "CMB-like C_l not positive");

  ref_alm_random(cl, lmax, 7, alm);
  ref_alm_random(cl, lmax, 7, alm2);
  CHECK(memcmp(alm, alm2, (size_t)nalm * sizeof *alm) == 0,
        "same seed, different a_lm");
  int real_m0 = 1;
  for (int l = 0; l <= lmax; l++) real_m0 &= cimag(alm[l]) == 0;
  CHECK(real_m0, "a_l0 must be real");
  ref_alm_random(cl, lmax, 8, alm2);
  CHECK(memcmp(alm, alm2, (size_t)nalm * sizeof *alm) != 0,
        "different seeds, same a_lm");

  /* Through the sphere: synthesise, analyse, and compare C_l with the input
   * within cosmic variance: z_l = (C^_l / C_l - 1) / sqrt(2 / (2l + 1)). */
  const int nside = 64;
  arkcos_geometry *g = healpix(nside);
  arkcos_error err = {0, ""};
  double *map = new_map(g);
  CHECK(ref_alm2map(g, lmax, alm, map, 0, &err) == 0, "%s", err.msg);
  CHECK(ref_map2alm(g, lmax, 3, map, NULL, alm2, 0, &err) == 0, "%s",
        err.msg);
  ref_alm2cl(lmax, alm2, alm2, est);
  double chi2 = 0, mean = 0;
  int n = 0;
  for (int l = 2; l <= lmax; l++) {
    double z = (est[l] / cl[l] - 1.0) / sqrt(2.0 / (2.0 * l + 1.0));
    chi2 += z * z;
    mean += est[l] / cl[l];
    n++;
  }
  mean /= n;
  printf("  chi2 / dof = %.3f over %d multipoles, mean C^/C = %.4f\n",
         chi2 / n, n, mean);
  /* chi2/dof ~ 1 +- sqrt(2/127) = 0.13: a 4-sigma window */
  CHECK(chi2 / n > 0.45 && chi2 / n < 1.55, "chi2/dof = %g", chi2 / n);
  /* mean of C^/C: sigma ~ sqrt(2 / sum(2l+1)) / ... < 0.01; allow 0.05 */
  CHECK(fabs(mean - 1.0) < 0.05, "mean C^/C = %g", mean);

  /* Cross-spectrum with itself is the auto spectrum; with an independent
   * realisation it scatters around 0. */
  double *cross = malloc((size_t)(lmax + 1) * sizeof *cross);
  ref_alm2cl(lmax, alm, alm, est);
  ref_alm_random(cl, lmax, 99, alm2);
  ref_alm2cl(lmax, alm, alm2, cross);
  double rc = 0;
  for (int l = 2; l <= lmax; l++) rc += cross[l] / cl[l] * sqrt(2.0 * l + 1.0);
  rc /= sqrt((double)(lmax - 1));
  printf("  normalised mean cross-spectrum of independent a_lm: %.3f\n", rc);
  CHECK(fabs(rc) < 4.0, "cross-spectrum of independent a_lm = %g sigma", rc);

  /* Spectrum file: comments, blank lines, missing l = 0; errors name the
   * file and the line. */
  char path[] = "/tmp/arkcos_cl_XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "# l C_l\n\n0 0\n2 1.5e-3  # quadrupole\n3 7e-4 9.9\n10 1e-5\n");
  fclose(f);
  double small[12];
  CHECK(ref_cl_read(path, 11, small, &err) == 0, "%s", err.msg);
  CHECK(small[2] == 1.5e-3 && small[3] == 7e-4 && small[10] == 1e-5 &&
            small[4] == 0 && small[11] == 0,
        "spectrum file read wrongly");
  f = fopen(path, "w");
  fprintf(f, "2 1e-3\n3 abc\n");
  fclose(f);
  int rcode = ref_cl_read(path, 11, small, &err);
  CHECK(rcode == ARKCOS_EINVAL && strstr(err.msg, path) &&
            strstr(err.msg, ":2:"),
        "malformed spectrum: rc %d, message '%s'", rcode, err.msg);
  f = fopen(path, "w");
  fprintf(f, "2 1e-3\n2.5 1e-3\n");
  fclose(f);
  CHECK(ref_cl_read(path, 11, small, &err) == ARKCOS_EINVAL,
        "non-integer l accepted");
  unlink(path);
  CHECK(ref_cl_read(path, 11, small, &err) == ARKCOS_EIO, "missing file");

  free(cross);
  free(map);
  free(cl);
  free(est);
  free(alm);
  free(alm2);
  arkcos_geometry_destroy(g);
}

/* ---------------------------------------------------------- direct sum */

/* O(npix^2) brute force with chealpix positions: an independent check of the
 * ring and azimuth-range walk. */
static void brute_force(const arkcos_geometry *g, const arkcos_kernel *k,
                        const double *in, double *out) {
  int64_t npix = g->npix;
  double(*v)[3] = malloc((size_t)npix * sizeof *v);
  for (int64_t p = 0; p < npix; p++) pix2vec_ring(g->nside, p, v[p]);
  double cut = arkcos_kernel_cutoff(k), w = 4 * PI / (double)npix;
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t p = 0; p < npix; p++) {
    double s = 0;
    for (int64_t q = 0; q < npix; q++) {
      double *a = v[p], *b = v[q];
      double cx = a[1] * b[2] - a[2] * b[1], cy = a[2] * b[0] - a[0] * b[2],
             cz = a[0] * b[1] - a[1] * b[0];
      double al = atan2(sqrt(cx * cx + cy * cy + cz * cz),
                        a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
      if (al <= cut) s += w * arkcos_kernel_value(k, al) * in[q];
    }
    out[p] = s;
  }
  free(v);
}

TEST_GROUP(direct_vs_brute_force) {
  /* A wide kernel (discs around the poles take whole rings) and a narrow
   * one, on a power of two and an odd nside. */
  const struct {
    int nside;
    double fwhm, cut;
  } cases[] = {{16, 20 * DEG, 1e-3}, {12, 6 * DEG, 1e-8}, {16, 3 * DEG, 1e-6}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    arkcos_geometry *g = healpix(cases[c].nside);
    arkcos_kernel *k = gaussian(cases[c].fwhm, cases[c].cut);
    arkcos_error err = {0, ""};
    double *in = cmb_map(g, 2 * cases[c].nside, 3 + c);
    double *a = new_map(g), *b = new_map(g);
    CHECK(ref_direct_sum(g, k, in, a, NULL, 0, 0, &err) == 0, "%s", err.msg);
    brute_force(g, k, in, b);
    double scale = 0;
    for (int64_t p = 0; p < g->npix; p++) scale = fmax(scale, fabs(b[p]));
    char what[128];
    snprintf(what, sizeof what,
             "nside %d, FWHM %.0f deg, cutoff %.1f deg: direct vs brute force",
             cases[c].nside, cases[c].fwhm / DEG,
             arkcos_kernel_cutoff(k) / DEG);
    /* measured 2.8e-15, 7.7e-15, 2.4e-15 (summation order only) */
    CHECK_LE(what, max_abs_diff(a, b, g->npix) / scale, 2e-14);
    free(in);
    free(a);
    free(b);
    arkcos_kernel_destroy(k);
    arkcos_geometry_destroy(g);
  }
}

/* Brute force on any ring geometry, positions from the ring list. */
static void brute_force_rings(const arkcos_geometry *g, const arkcos_kernel *k,
                              const double *in, double *out) {
  int64_t npix = g->npix;
  double(*v)[3] = malloc((size_t)npix * sizeof *v);
  double *w = malloc((size_t)npix * sizeof *w);
  for (int j = 0; j < g->nrings; j++) {
    const arkcos_ring *r = &g->rings[j];
    for (int64_t i = 0; i < r->nph; i++) {
      double phi = r->phi0 + 2 * PI * (double)i / (double)r->nph;
      int64_t q = r->ofs + i;
      v[q][0] = sin(r->theta) * cos(phi);
      v[q][1] = sin(r->theta) * sin(phi);
      v[q][2] = cos(r->theta);
      w[q] = r->weight;
    }
  }
  double cut = arkcos_kernel_cutoff(k);
  for (int64_t p = 0; p < npix; p++) {
    double s = 0;
    for (int64_t q = 0; q < npix; q++) {
      double *a = v[p], *b = v[q];
      double cx = a[1] * b[2] - a[2] * b[1], cy = a[2] * b[0] - a[0] * b[2],
             cz = a[0] * b[1] - a[1] * b[0];
      double al = atan2(sqrt(cx * cx + cy * cy + cz * cz),
                        a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
      if (al <= cut) s += w[q] * arkcos_kernel_value(k, al) * in[q];
    }
    out[p] = s;
  }
  free(v);
  free(w);
}

TEST_GROUP(direct_ecp) {
  arkcos_error err = {0, ""};
  arkcos_geometry *g = arkcos_geometry_ecp(24, 48, 0.5, &err);
  CHECK(g != NULL, "%s", err.msg);
  if (!g) return;
  arkcos_kernel *k = gaussian(25 * DEG, 1e-4);
  double *in = new_map(g), *a = new_map(g), *b = new_map(g);
  for (int64_t p = 0; p < g->npix; p++) in[p] = sin(0.7 * (double)p) + 0.3;
  CHECK(ref_direct_sum(g, k, in, a, NULL, 0, 0, &err) == 0, "%s", err.msg);
  brute_force_rings(g, k, in, b);
  double scale = 0;
  for (int64_t p = 0; p < g->npix; p++) scale = fmax(scale, fabs(b[p]));
  /* measured 2.5e-15 (summation order only) */
  CHECK_LE("ECP 24 x 48, FWHM 25 deg: direct vs brute force",
           max_abs_diff(a, b, g->npix) / scale, 1e-14);
  free(in);
  free(a);
  free(b);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

TEST_GROUP(direct_sampled) {
  const int nside = 32;
  arkcos_geometry *g = healpix(nside);
  arkcos_kernel *k = gaussian(8 * DEG, 1e-6);
  arkcos_error err = {0, ""};
  double *in = cmb_map(g, 64, 5);
  double *full = new_map(g);
  CHECK(ref_direct_sum(g, k, in, full, NULL, 0, 2, &err) == 0, "%s", err.msg);
  int64_t npix = g->npix;
  const int64_t pix[] = {0,          1,           3,        npix / 2,
                         npix / 2 + 17, npix - 1, npix - 4, 2 * nside * nside,
                         777,        npix / 3};
  int n = (int)(sizeof pix / sizeof pix[0]);
  double out[16];
  CHECK(ref_direct_sum(g, k, in, out, pix, n, 1, &err) == 0, "%s", err.msg);
  double d = 0;
  for (int i = 0; i < n; i++) d = fmax(d, fabs(out[i] - full[pix[i]]));
  CHECK(d == 0, "sampled and full direct sum differ by %g", d);
  const int64_t bad[] = {npix};
  CHECK(ref_direct_sum(g, k, in, out, bad, 1, 1, &err) == ARKCOS_EINVAL,
        "pixel outside the map accepted");
  double cost = ref_direct_cost(g, k, n);
  CHECK(cost > 0 && cost < (double)n * npix, "direct cost %g", cost);
  free(in);
  free(full);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

TEST_GROUP(direct_constant) {
  const int nside = 32;
  arkcos_geometry *g = healpix(nside);
  arkcos_kernel *k = gaussian(8 * DEG, 1e-8); /* 4.6 pixels per FWHM */
  arkcos_error err = {0, ""};
  double *in = new_map(g), *out = new_map(g);
  for (int64_t p = 0; p < g->npix; p++) in[p] = 1.0;
  CHECK(ref_direct_sum(g, k, in, out, NULL, 0, 0, &err) == 0, "%s", err.msg);
  /* s - 1 is the quadrature error of sum_q w_q K(alpha_pq) for the
   * integral 1: tiny where the pixels form a regular lattice, large next to
   * the poles, where a few irregular pixels carry the kernel. */
  double dall = 0, dmid = 0;
  for (int j = 0; j < g->nrings; j++)
    for (int64_t p = g->rings[j].ofs; p < g->rings[j].ofs + g->rings[j].nph;
         p++) {
      dall = fmax(dall, fabs(out[p] - 1.0));
      if (fabs(cos(g->rings[j].theta)) < 0.5)
        dmid = fmax(dmid, fabs(out[p] - 1.0));
    }
  /* golden value, independent: healpy pix2vec + scipy-normalised Gaussian
   * summed in numpy gives s - 1 = -0.014203079944 at pixel 0 */
  CHECK_LE("constant map, pixel 0 vs healpy/numpy value",
           fabs(out[0] - 1.0 + 0.014203079944), 1e-10);
  /* measured 1.42e-2 (next to the poles) */
  CHECK_LE("constant map, max |s - 1|", dall, 1.5e-2);
  /* measured 8.4e-7 */
  CHECK_LE("constant map, max |s - 1| where |z| < 1/2", dmid, 1e-6);
  free(in);
  free(out);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

TEST_GROUP(fsht_vs_direct) {
  /* Well resolved: FWHM 5 deg = 5.5 pixels at nside 64, cut where K falls
   * below 1e-10 K(0) (14.4 deg); K_l at lmax = 3 nside - 1 is ~1e-11. */
  const int nside = 64, lmax = 3 * nside - 1;
  arkcos_geometry *g = healpix(nside);
  arkcos_kernel *k = gaussian(5 * DEG, 1e-10);
  arkcos_error err = {0, ""};
  double *in = cmb_map(g, 2 * nside, 21);
  double *fsht = new_map(g), *direct = new_map(g);
  CHECK(ref_fsht_smooth(g, k, in, fsht, lmax, 3, NULL, 0, &err) == 0, "%s",
        err.msg);
  CHECK(ref_direct_sum(g, k, in, direct, NULL, 0, 0, &err) == 0, "%s",
        err.msg);
  ref_metrics m;
  ref_compare(g, fsht, direct, &m);
  printf("  FSHT vs direct: frac_rms %.3e (north %.3e belt %.3e south %.3e), "
         "max_rel %.3e\n",
         m.frac_rms, m.frac_rms_region[0], m.frac_rms_region[1],
         m.frac_rms_region[2], m.max_rel);
  /* The direct sum is a quadrature of the convolution on the pixels, FSHT
   * the convolution of the band-limited map: they differ by the HEALPix
   * quadrature error, largest in the caps (see direct_constant). Measured
   * frac_rms 5.54e-4 (belt 4.33e-5), max_rel 2.66e-2. */
  CHECK_LE("FSHT vs direct sum, fractional RMS", m.frac_rms, 7e-4);
  CHECK_LE("FSHT vs direct sum, fractional RMS in the belt",
           m.frac_rms_region[REF_BELT], 6e-5);
  CHECK_LE("FSHT vs direct sum, max relative", m.max_rel, 3.5e-2);
  free(in);
  free(fsht);
  free(direct);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

/* ------------------------------------------------------------- metrics */

TEST_GROUP(metrics) {
  const int nside = 8;
  arkcos_geometry *g = healpix(nside);
  CHECK(ref_region_of_theta(0.1) == REF_NORTH, "north");
  CHECK(ref_region_of_theta(PI / 2) == REF_BELT, "belt");
  CHECK(ref_region_of_theta(PI - 0.1) == REF_SOUTH, "south");
  CHECK(ref_region_of_theta(acos(2.0 / 3.0)) == REF_BELT,
        "the ring at z = 2/3 belongs to the belt");

  /* a = b + c: every error is |c| / rms(b). */
  double *a = new_map(g), *b = new_map(g);
  double s2 = 0;
  for (int64_t p = 0; p < g->npix; p++) {
    b[p] = sin(0.37 * (double)p) + 0.5;
    a[p] = b[p] + 0.25;
    s2 += b[p] * b[p];
  }
  double rms = sqrt(s2 / (double)g->npix), want = 0.25 / rms;
  ref_metrics m;
  ref_compare(g, a, b, &m);
  double worst = fmax(fabs(m.frac_rms - want), fabs(m.max_rel - want));
  for (int r = 0; r < REF_NREGIONS; r++)
    worst = fmax(worst, fmax(fabs(m.frac_rms_region[r] - want),
                             fabs(m.max_rel_region[r] - want)));
  CHECK_LE("a = b + c: metrics vs |c| / rms(b)", worst / want, 1e-13);
  int64_t ncap = 2 * (int64_t)nside * (nside - 1);
  CHECK(m.npix_region[REF_NORTH] == ncap && m.npix_region[REF_SOUTH] == ncap &&
            m.npix_region[REF_BELT] == g->npix - 2 * ncap,
        "region sizes %lld %lld %lld", (long long)m.npix_region[0],
        (long long)m.npix_region[1], (long long)m.npix_region[2]);

  /* An error in one pixel of the south cap only. */
  memcpy(a, b, (size_t)g->npix * sizeof *a);
  a[g->npix - 1] += 2.0;
  ref_compare(g, a, b, &m);
  CHECK(m.frac_rms_region[REF_NORTH] == 0 && m.frac_rms_region[REF_BELT] == 0,
        "error leaked out of the south cap");
  CHECK(fabs(m.max_rel_region[REF_SOUTH] - 2.0 / rms) < 1e-13 / rms &&
            fabs(m.max_rel - 2.0 / rms) < 1e-13 / rms,
        "max_rel %g, want %g", m.max_rel, 2.0 / rms);
  double want_rms = sqrt(4.0 / (double)g->npix) / rms;
  CHECK(fabs(m.frac_rms - want_rms) < 1e-13 * want_rms, "frac_rms %g vs %g",
        m.frac_rms, want_rms);
  ref_compare(g, b, b, &m);
  CHECK(m.frac_rms == 0 && m.max_rel == 0, "identical maps");
  a[5] = NAN; /* a NaN in the north cap is reported, not hidden */
  ref_compare(g, a, b, &m);
  CHECK(isnan(m.frac_rms) && isnan(m.max_rel) &&
            isnan(m.max_rel_region[REF_NORTH]) &&
            m.max_rel_region[REF_BELT] == 0,
        "NaN lost: frac_rms %g max_rel %g", m.frac_rms, m.max_rel);

  /* Ringing of a delta map: nothing outside -> 0; a second pixel far away
   * with a tenth of the peak -> 0.1. */
  double th, ph;
  int64_t p0 = 300;
  arkcos_healpix_pix2ang_ring(nside, p0, &th, &ph);
  memset(a, 0, (size_t)g->npix * sizeof *a);
  a[p0] = -5.0;
  CHECK(ref_ringing(g, a, th, ph, 0.01) == 0, "delta map rings");
  a[g->npix - 1] = 0.5;
  CHECK(fabs(ref_ringing(g, a, th, ph, 0.01) - 0.1) < 1e-15, "ringing %g",
        ref_ringing(g, a, th, ph, 0.01));
  ref_source src[2] = {{th, ph, 1}, {0, 0, 1}};
  arkcos_healpix_pix2ang_ring(nside, g->npix - 1, &src[1].theta,
                              &src[1].phi);
  CHECK(ref_ringing_sources(g, a, src, 2, 0.01) == 0,
        "two sources, nothing outside");

  /* Point sources land in their pixels. */
  arkcos_error err = {0, ""};
  src[0].amplitude = 3.0;
  src[1].amplitude = -1.0;
  CHECK(ref_point_sources(g, src, 2, a, &err) == 0, "%s", err.msg);
  double sum = 0;
  for (int64_t p = 0; p < g->npix; p++) sum += a[p];
  CHECK(a[p0] == 3.0 && a[g->npix - 1] == -1.0 && sum == 2.0,
        "point sources misplaced");
  free(a);
  free(b);
  arkcos_geometry_destroy(g);
}

/* Metrics at listed pixels against a plain computation here: chealpix
 * for the pixel centres, z = cos(theta) against 2/3 for the regions. */
TEST_GROUP(compare_values) {
  const int nside = 8;
  arkcos_geometry *g = healpix(nside);
  int64_t n = 0, pix[200];
  double a[200], b[200];
  for (int64_t p = 3; p < g->npix && n < 200; p += 4) pix[n++] = p;
  double sb2 = 0, sd2 = 0, dmax = 0, rd2[3] = {0}, rmax[3] = {0};
  int64_t rn[3] = {0};
  for (int64_t i = 0; i < n; i++) {
    double th, ph;
    pix2ang_ring(nside, pix[i], &th, &ph);
    int r = cos(th) > 2.0 / 3.0 + 1e-12 ? 0 : cos(th) < -2.0 / 3.0 - 1e-12 ? 2 : 1;
    b[i] = sin(0.37 * (double)pix[i]) + 0.5;
    a[i] = b[i] + 0.01 * cos(1.3 * (double)pix[i]);
    double d = a[i] - b[i];
    sb2 += b[i] * b[i];
    sd2 += d * d;
    rd2[r] += d * d;
    rn[r]++;
    dmax = fmax(dmax, fabs(d));
    rmax[r] = fmax(rmax[r], fabs(d));
  }
  double rms = sqrt(sb2 / (double)n);
  ref_metrics m;
  ref_compare_values(g, pix, a, b, n, &m);
  double worst = fmax(fabs(m.frac_rms / (sqrt(sd2 / (double)n) / rms) - 1),
                      fabs(m.max_rel / (dmax / rms) - 1));
  int counts = 1;
  for (int r = 0; r < REF_NREGIONS; r++) {
    counts &= m.npix_region[r] == rn[r] && rn[r] > 0;
    worst = fmax(worst, fabs(m.frac_rms_region[r] / (sqrt(rd2[r] / (double)rn[r]) / rms) - 1));
    worst = fmax(worst, fabs(m.max_rel_region[r] / (rmax[r] / rms) - 1));
  }
  CHECK(counts, "region sizes %lld %lld %lld, want %lld %lld %lld",
        (long long)m.npix_region[0], (long long)m.npix_region[1],
        (long long)m.npix_region[2], (long long)rn[0], (long long)rn[1],
        (long long)rn[2]);
  /* measured 0 (the same sums in the same order); rounding allowed */
  CHECK_LE("sampled metrics vs a plain computation, relative", worst, 1e-14);

  /* every pixel in ring order: ref_compare's weights are all equal on
   * HEALPix, so the two agree to rounding (measured 4.4e-16) */
  double *fa = new_map(g), *fb = new_map(g);
  int64_t *all = malloc((size_t)g->npix * sizeof *all);
  for (int64_t p = 0; p < g->npix; p++) {
    all[p] = p;
    fb[p] = cos(0.21 * (double)p) - 0.3;
    fa[p] = fb[p] + 1e-3 * sin(0.9 * (double)p);
  }
  ref_metrics mf;
  ref_compare(g, fa, fb, &mf);
  ref_compare_values(g, all, fa, fb, g->npix, &m);
  worst = fmax(fabs(m.frac_rms / mf.frac_rms - 1), fabs(m.max_rel / mf.max_rel - 1));
  for (int r = 0; r < REF_NREGIONS; r++)
    worst = fmax(worst, fmax(fabs(m.frac_rms_region[r] / mf.frac_rms_region[r] - 1),
                             fabs(m.max_rel_region[r] / mf.max_rel_region[r] - 1)));
  printf("  all pixels: ref_compare_values vs ref_compare, largest relative "
         "difference %.2e\n", worst);
  CHECK_LE("all pixels: ref_compare_values vs ref_compare", worst, 1e-14);

  /* belt pixels only: the caps are NaN, not 0; a zero reference is NaN */
  int64_t belt[3] = {g->npix / 2, g->npix / 2 + 1, g->npix / 2 + 2};
  ref_compare_values(g, belt, a, b, 3, &m);
  CHECK(isnan(m.frac_rms_region[REF_NORTH]) && isnan(m.max_rel_region[REF_SOUTH]) &&
            m.npix_region[REF_BELT] == 3 && !isnan(m.frac_rms_region[REF_BELT]),
        "empty regions must be NaN");
  double zero[3] = {0, 0, 0};
  ref_compare_values(g, belt, a, zero, 3, &m);
  CHECK(isnan(m.frac_rms) && isnan(m.max_rel), "zero reference must be NaN");
  free(fa);
  free(fb);
  free(all);
  arkcos_geometry_destroy(g);
}

/* Ringing per region against a brute force here: chealpix vectors, the
 * angle by atan2, the nearest source by the smallest angle. */
static void ringing_brute(int64_t nside, const double *map, const ref_source *src,
                          int n, double radius, double *ratio) {
  double c[4][3], peak[4] = {0}, ring[4] = {0};
  for (int s = 0; s < n; s++) {
    long p;
    ang2pix_ring(nside, src[s].theta, src[s].phi, &p);
    pix2vec_ring(nside, p, c[s]);
  }
  for (int64_t p = 0; p < 12 * nside * nside; p++) {
    double v[3], best = 10;
    int near = 0;
    pix2vec_ring(nside, p, v);
    for (int s = 0; s < n; s++) {
      double x = v[1] * c[s][2] - v[2] * c[s][1], y = v[2] * c[s][0] - v[0] * c[s][2];
      double z = v[0] * c[s][1] - v[1] * c[s][0];
      double ang = atan2(sqrt(x * x + y * y + z * z),
                         v[0] * c[s][0] + v[1] * c[s][1] + v[2] * c[s][2]);
      if (ang < best) {
        best = ang;
        near = s;
      }
    }
    double *dst = best <= radius ? peak : ring;
    dst[near] = fmax(dst[near], fabs(map[p]));
  }
  for (int s = 0; s < n; s++) ratio[s] = peak[s] > 0 ? ring[s] / peak[s] : -1;
}

TEST_GROUP(ringing_by_region) {
  const int nside = 16;
  arkcos_geometry *g = healpix(nside);
  double *map = new_map(g), belt, cap, want[3];
  /* a belt source, a north-cap one and a south-cap one, off their pixel
   * centres; a smooth background, a peak at each source */
  ref_source src[3] = {{80 * DEG, 30 * DEG, 1}, {20 * DEG, 200 * DEG, 1},
                       {150 * DEG, 300 * DEG, 1}};
  for (int64_t p = 0; p < g->npix; p++) map[p] = 1e-3 * (1.5 + sin(0.7 * (double)p));
  for (int s = 0; s < 3; s++)
    map[arkcos_healpix_ang2pix_ring(nside, src[s].theta, src[s].phi)] = 2.0 + s;
  const double radius = 10 * DEG;
  CHECK(ref_ringing_by_region(g, map, src, 3, radius, &belt, &cap) == 0, "failed");
  ringing_brute(nside, map, src, 3, radius, want);
  printf("  ringing: belt %.6e (brute force %.6e), cap %.6e (brute force %.6e, %.6e)\n",
         belt, want[0], cap, want[1], want[2]);
  /* the same maxima of the same values: equal, not close */
  CHECK(belt == want[0] && cap == fmax(want[1], want[2]) && belt > 0,
        "belt %g cap %g", belt, cap);

  /* the cap's source alone: no belt source -> -1; a zero map -> -1 */
  CHECK(ref_ringing_by_region(g, map, src + 1, 1, radius, &belt, &cap) == 0 &&
            belt == -1 && cap > 0, "belt %g cap %g", belt, cap);
  memset(map, 0, (size_t)g->npix * sizeof *map);
  CHECK(ref_ringing_by_region(g, map, src, 3, radius, &belt, &cap) == 0 &&
            belt == -1 && cap == -1, "zero map: belt %g cap %g", belt, cap);
  /* one pixel just past the radius from the belt source, at 1/4 of its
   * peak: exactly 0.25 in the belt */
  int64_t p0 = arkcos_healpix_ang2pix_ring(nside, src[0].theta, src[0].phi);
  map[p0] = 4.0;
  map[arkcos_healpix_ang2pix_ring(nside, src[0].theta + radius + 2 * DEG, src[0].phi)] = -1.0;
  CHECK(ref_ringing_by_region(g, map, src, 3, radius, &belt, &cap) == 0 &&
            belt == 0.25 && cap == -1, "belt %g cap %g", belt, cap);
  free(map);
  arkcos_geometry_destroy(g);
}

/* Spectrum metrics from given spectra, against values worked out by hand. */
TEST_GROUP(compare_cl) {
  /* l:               0    1    2    3    4     5    6 */
  double cb[7]   = {1.0, 1.0, 2.0, 0.0, 4.0, -1.0, 5.0};
  double ca[7]   = {9.0, 9.0, 2.5, 7.0, 3.0, 50.0, 5.5};
  double cd[7]   = {9.0, 9.0, 0.2, 9.0, 2.0, 90.0, 0.5};
  ref_spectra_metrics sm;
  ref_compare_cl(6, ca, cb, cd, &sm);
  /* compared l = 2, 4, 6: residuals 0.25, 0.25, 0.1; ratios 0.1, 0.5, 0.1 */
  double rms = sqrt((0.25 * 0.25 + 0.25 * 0.25 + 0.1 * 0.1) / 3);
  CHECK(sm.nl == 3 && sm.lmax == 6, "nl %d lmax %d", sm.nl, sm.lmax);
  CHECK(sm.max_rel_residual == 0.25 && sm.max_diff_ratio == 0.5,
        "max residual %g, max ratio %g", sm.max_rel_residual, sm.max_diff_ratio);
  CHECK(fabs(sm.rms_rel_residual - rms) < 1e-15 &&
            fabs(sm.mean_diff_ratio - 0.7 / 3) < 1e-15,
        "rms %.17g mean %.17g", sm.rms_rel_residual, sm.mean_diff_ratio);
  ca[4] = NAN; /* a NaN spectrum value is reported, not hidden */
  ref_compare_cl(6, ca, cb, cd, &sm);
  CHECK(isnan(sm.max_rel_residual) && sm.max_diff_ratio == 0.5, "NaN lost");
  ref_compare_cl(1, ca, cb, cd, &sm);
  CHECK(sm.nl == 0 && sm.max_rel_residual == 0, "l < 2 compared");
}

TEST_GROUP(patch) {
  const int nside = 32, n = 21; /* odd n: the centre image pixel is (0, 0) */
  arkcos_geometry *g = healpix(nside);
  arkcos_error err = {0, ""};
  double *idx = new_map(g), *z = new_map(g), *phi = new_map(g);
  for (int64_t p = 0; p < g->npix; p++) {
    double t, f;
    arkcos_healpix_pix2ang_ring(nside, p, &t, &f);
    idx[p] = (double)p;
    z[p] = cos(t);
    phi[p] = f;
  }
  double img[21 * 21];
  const double theta0 = 1.2, phi0 = 2.0, side = 10 * DEG;
  CHECK(ref_patch(g, idx, theta0, phi0, side, n, img, &err) == 0, "%s",
        err.msg);
  CHECK(img[(n / 2) * n + n / 2] ==
            (double)arkcos_healpix_ang2pix_ring(nside, theta0, phi0),
        "centre pixel %g", img[(n / 2) * n + n / 2]);
  /* A corner: x = y = -(side/2 - step/2) in the tangent plane. */
  double step = side / n, x = -(side - step) / 2, y = x;
  double vx = sin(theta0) * cos(phi0) - x * sin(phi0) - y * cos(theta0) * cos(phi0);
  double vy = sin(theta0) * sin(phi0) + x * cos(phi0) - y * cos(theta0) * sin(phi0);
  double vz = cos(theta0) + y * sin(theta0);
  double tc = atan2(sqrt(vx * vx + vy * vy), vz), pc = atan2(vy, vx);
  if (pc < 0) pc += 2 * PI;
  CHECK(img[0] == (double)arkcos_healpix_ang2pix_ring(nside, tc, pc),
        "bottom-left pixel %g", img[0]);
  /* Orientation: north up (row 0 at the bottom), east to the right. */
  CHECK(ref_patch(g, z, theta0, phi0, side, n, img, &err) == 0, "%s", err.msg);
  CHECK(img[(n - 1) * n + n / 2] > img[n / 2] + 0.1,
        "top row is not north of the bottom row");
  CHECK(ref_patch(g, phi, theta0, phi0, side, n, img, &err) == 0, "%s",
        err.msg);
  CHECK(img[(n / 2) * n + n - 1] > img[(n / 2) * n] + 0.1,
        "right column is not east of the left column");
  /* A uniform map gives a uniform patch; bad sizes are errors. */
  CHECK(ref_patch(g, z, theta0, phi0, side, 0, img, &err) == ARKCOS_EINVAL,
        "n = 0 accepted");
  {
    arkcos_geometry *e = arkcos_geometry_ecp(8, 16, 0.5, &err);
    CHECK(e && ref_patch(e, z, theta0, phi0, side, n, img, &err) ==
                   ARKCOS_EINVAL,
          "patch of a non-HEALPix map accepted");
    arkcos_geometry_destroy(e);
  }
  /* The text writer: n x n value lines. */
  char path[] = "/tmp/arkcos_patch_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  CHECK(ref_patch_write_text(path, img, n, side, 1, &err) == 0, "%s", err.msg);
  FILE *f = fopen(path, "r");
  int lines = 0;
  char buf[256];
  while (f && fgets(buf, sizeof buf, f))
    if (buf[0] != '#' && buf[0] != '\n') lines++;
  if (f) fclose(f);
  CHECK(lines == n * n, "%d data lines", lines);
  CHECK(ref_patch_write_fits(path, img, n, side, 0, &err) == 0, "%s", err.msg);
  f = fopen(path, "rb");
  long size = 0;
  if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  if (f) fclose(f);
  CHECK(size >= 2 * 2880 && size % 2880 == 0, "FITS patch of %ld bytes", size);
  unlink(path);
  free(idx);
  free(z);
  free(phi);
  arkcos_geometry_destroy(g);
}

/* ----------------------------------------------- ARKCoS against references */

static int arkcos_smooth(const arkcos_geometry *g, const arkcos_kernel *k,
                         arkcos_mode mode, const double *in, double *out) {
  arkcos_error err = {0, ""};
  arkcos_options o;
  arkcos_options_default(&o);
  o.mode = mode;
  o.backend = ARKCOS_BACKEND_CPU;
  arkcos_plan *p = arkcos_plan_create(g, k, &o, &err);
  int rc = p ? arkcos_execute(p, in, out, &err) : err.code;
  if (rc) fprintf(stderr, "arkcos: %s\n", err.msg);
  arkcos_plan_destroy(p);
  return rc;
}

static void print_metrics(const char *what, const ref_metrics *m) {
  printf("  %-34s frac_rms %.3e (N %.3e, belt %.3e, S %.3e) max_rel %.3e\n",
         what, m->frac_rms, m->frac_rms_region[REF_NORTH],
         m->frac_rms_region[REF_BELT], m->frac_rms_region[REF_SOUTH],
         m->max_rel);
}

TEST_GROUP(arkcos_vs_fsht) {
  /* A CMB-like map at nside 64 smoothed by a well-resolved Gaussian (FWHM
   * 5 deg, cut at 1e-10) and by a narrower one (FWHM 2.5 deg = 2.7 pixels,
   * cut at 1e-5), with ARKCoS (enhanced and paper), FSHT and the direct sum. */
  const int nside = 64, lmax = 3 * nside - 1;
  /* Bounds: measured values (in the comments) loosened by ~30%. */
  const struct {
    double fwhm, cut;
    double enh, enh_belt, paper, enh_direct;
  } cases[] = {
      /* measured 2.65e-4, belt 5.42e-5, paper 2.65e-4, vs direct 1.41e-11 */
      {5 * DEG, 1e-10, 3.5e-4, 7e-5, 3.5e-4, 3e-11},
      /* measured 2.26e-3, belt 1.71e-4, paper 5.17e-3, vs direct 1.55e-4 */
      {2.5 * DEG, 1e-5, 3e-3, 2.2e-4, 6.5e-3, 2e-4}};
  arkcos_geometry *g = healpix(nside);
  double *in = cmb_map(g, lmax, 31);
  double *enh = new_map(g), *pap = new_map(g), *fsht = new_map(g),
         *direct = new_map(g);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    arkcos_kernel *k = gaussian(cases[c].fwhm, cases[c].cut);
    arkcos_error err = {0, ""};
    printf(" FWHM %.1f deg, cut at %.0e (%.2f deg):\n", cases[c].fwhm / DEG,
           cases[c].cut, arkcos_kernel_cutoff(k) / DEG);
    CHECK(arkcos_smooth(g, k, ARKCOS_MODE_ENHANCED, in, enh) == 0, "enhanced");
    CHECK(arkcos_smooth(g, k, ARKCOS_MODE_PAPER, in, pap) == 0, "paper");
    CHECK(ref_fsht_smooth(g, k, in, fsht, lmax, 3, NULL, 0, &err) == 0, "%s",
          err.msg);
    CHECK(ref_direct_sum(g, k, in, direct, NULL, 0, 0, &err) == 0, "%s",
          err.msg);
    ref_metrics me, mp, mf, md;
    ref_compare(g, enh, fsht, &me);
    ref_compare(g, pap, fsht, &mp);
    ref_compare(g, direct, fsht, &mf);
    ref_compare(g, enh, direct, &md);
    print_metrics("ARKCoS enhanced vs FSHT", &me);
    print_metrics("ARKCoS paper vs FSHT", &mp);
    print_metrics("direct vs FSHT", &mf);
    print_metrics("ARKCoS enhanced vs direct", &md);
    CHECK_LE("ARKCoS enhanced vs FSHT, fractional RMS", me.frac_rms,
             cases[c].enh);
    CHECK_LE("ARKCoS enhanced vs FSHT, fractional RMS in the belt",
             me.frac_rms_region[REF_BELT], cases[c].enh_belt);
    CHECK_LE("ARKCoS paper vs FSHT, fractional RMS", mp.frac_rms,
             cases[c].paper);
    CHECK_LE("ARKCoS enhanced vs direct sum, fractional RMS", md.frac_rms,
             cases[c].enh_direct);
    arkcos_kernel_destroy(k);
  }
  free(in);
  free(enh);
  free(pap);
  free(fsht);
  free(direct);
  arkcos_geometry_destroy(g);
}

TEST_GROUP(ringing) {
  /* A point source in the belt, FWHM 3 deg (3.3 pixels at nside 64) cut at
   * 1e-8 of the peak: beyond the cutoff (+ one pixel) ARKCoS enhanced is
   * zero to rounding, FSHT rings (issue 3). */
  const int nside = 64, lmax = 3 * nside - 1;
  arkcos_geometry *g = healpix(nside);
  arkcos_kernel *k = gaussian(3 * DEG, 1e-8);
  arkcos_error err = {0, ""};
  double *in = new_map(g), *enh = new_map(g), *fsht = new_map(g),
         *direct = new_map(g);
  ref_source s = {PI / 2 + 0.1, 1.0, 1.0};
  CHECK(ref_point_sources(g, &s, 1, in, &err) == 0, "%s", err.msg);
  /* centre of the source's pixel: the smoothed map is a disc around it */
  arkcos_healpix_pix2ang_ring(nside,
                              arkcos_healpix_ang2pix_ring(nside, s.theta, s.phi),
                              &s.theta, &s.phi);
  double radius = arkcos_kernel_cutoff(k) + sqrt(4 * PI / (double)g->npix);
  CHECK(arkcos_smooth(g, k, ARKCOS_MODE_ENHANCED, in, enh) == 0, "enhanced");
  CHECK(ref_fsht_smooth(g, k, in, fsht, lmax, 3, NULL, 0, &err) == 0, "%s",
        err.msg);
  CHECK(ref_direct_sum(g, k, in, direct, NULL, 0, 0, &err) == 0, "%s",
        err.msg);
  double r_enh = ref_ringing(g, enh, s.theta, s.phi, radius);
  double r_fsht = ref_ringing(g, fsht, s.theta, s.phi, radius);
  double r_direct = ref_ringing(g, direct, s.theta, s.phi, radius);
  CHECK(r_direct == 0, "the direct sum is exactly zero beyond the cutoff");
  /* measured 1.3e-16 (enhanced) and 4.0e-5 (FSHT) */
  CHECK_LE("ringing beyond cutoff + 1 pixel, ARKCoS enhanced", r_enh, 1e-12);
  CHECK_GE("ringing beyond cutoff + 1 pixel, FSHT", r_fsht, 1e-5);
  ref_metrics m;
  ref_compare(g, enh, direct, &m);
  print_metrics("point source: enhanced vs direct", &m);
  free(in);
  free(enh);
  free(fsht);
  free(direct);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

TEST_MAIN(TG(sht_roundtrip), TG(spectra), TG(direct_vs_brute_force),
          TG(direct_ecp), TG(direct_sampled), TG(direct_constant), TG(fsht_vs_direct),
          TG(metrics), TG(compare_values), TG(ringing_by_region), TG(compare_cl), TG(patch), TG(arkcos_vs_fsht), TG(ringing))
