/*
 * test_beam.c -- kernels from beam transfer functions (arkcos/beam.c) and
 * beam files (harness/common/beamio.c): the table against the Legendre sum, the
 * heat kernel against the flat Gaussian, the window the kernel applies,
 * a beam with negative sidelobes round-tripped through its own K_l, the
 * refusal of a window cut in harmonic space, and FITS / text beam files
 * with every malformed case.
 */
#include <fitsio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arkcos/arkcos.h"
#include "arkcos/kernel_internal.h"
#include "harness/common/beamio.h"
#include "tests/testlib.h"

#define PI 3.14159265358979323846

/* healpy.gauss_beam: exp(-l (l + 1) sigma^2 / 2) */
static double *gauss_bl(double fwhm, int lmax) {
  const double s = fwhm / sqrt(8 * log(2.0));
  double *b = malloc(sizeof(double) * (size_t)(lmax + 1));
  if (!b) exit(1);
  for (int l = 0; l <= lmax; l++) b[l] = exp(-0.5 * l * (l + 1.0) * s * s);
  return b;
}

/* max over [from, cut] of |K - want| / K(0), want scaled to K's K(0) */
static double profile_dev_from(const arkcos_kernel *k, double (*want)(double, const void *), const void *ctx,
                               double from) {
  const double c = arkcos_kernel_cutoff(k), k0 = arkcos_kernel_value(k, 0), w0 = want(0, ctx);
  double m = 0;
  for (int i = 0; i < 2000; i++) {
    const double a = from + (c - from) * (i + 0.37) / 2000;
    m = fmax(m, fabs(arkcos_kernel_value(k, a) - want(a, ctx) / w0 * k0) / k0);
  }
  return m;
}
static double profile_dev(const arkcos_kernel *k, double (*want)(double, const void *), const void *ctx) {
  return profile_dev_from(k, want, ctx, 0);
}

typedef struct {
  const double *bl;
  int lmax;
} beam_ctx;
static double beam_sum(double a, const void *c) {
  const beam_ctx *b = c;
  return arkcos_beam_profile(b->bl, b->lmax, a);
}
static double flat_gauss(double a, const void *c) {
  const double s = *(const double *)c;
  return exp(-0.5 * a * a / (s * s));
}
static double kernel_val(double a, const void *c) { return arkcos_kernel_value(c, a); }

TEST_GROUP(gaussian_beam) {
  arkcos_error err = {0, ""};
  const int ns[] = {64, 1024};
  for (int t = 0; t < 2; t++) {
    const double pix = sqrt(4 * PI / (12.0 * ns[t] * ns[t])), fwhm = 2.8 * pix, sig = fwhm / sqrt(8 * log(2.0));
    const int lmax = 8 * ns[t];
    double *bl = gauss_bl(fwhm, lmax);
    arkcos_kernel *k = arkcos_kernel_from_beam(bl, lmax, 1e-5, &err);
    CHECK(k != NULL, "%s", err.msg);
    if (!k) continue;
    beam_ctx bc = {bl, lmax};
    char what[160];
    snprintf(what, sizeof what, "nside %d, 2.8 px: table against the Legendre sum, / K(0)", ns[t]);
    CHECK_LE(what, profile_dev(k, beam_sum, &bc), 2e-8); /* measured 7.7e-10, 7.5e-10; 3.7e-9 at 1.4 px */
    snprintf(what, sizeof what, "nside %d: heat kernel against the flat Gaussian, / K(0)", ns[t]);
    const double hf = profile_dev(k, flat_gauss, &sig);
    /* measured 2.2e-5 at nside 64 (FWHM 0.9 deg): the heat kernel, not the
     * flat Gaussian, about sigma^2 / 2 apart; 8.7e-8 at nside 1024 (5.3') */
    CHECK_LE(what, hf, t ? 3e-7 : 5e-5);
    if (!t) CHECK_GE(what, hf, 1e-5);
    double we;
    int lw;
    CHECK(arkcos_kernel_window_error(k, bl, 3 * ns[t] - 1, &we, &lw, &err) == 0, "%s", err.msg);
    snprintf(what, sizeof what, "nside %d: max_l<3nside |K_l - B_l| of the kernel cut at 1e-5", ns[t]);
    CHECK_LE(what, we, 3e-5); /* measured 6.0e-6, 5.9e-6 */
    arkcos_kernel_destroy(k);
    free(bl);
  }
}

/* A kernel with a negative ring (a compensated filter's shape) through its
 * own K_l and back */
TEST_GROUP(sidelobes_round_trip) {
  arkcos_error err = {0, ""};
  double ang[200], val[200];
  const double r = 2 * PI / 180;
  for (int i = 0; i < 200; i++) {
    ang[i] = r * i / 199.0;
    const double x = ang[i] / (0.3 * r), u = ang[i] / r;
    val[i] = (1 - 0.5 * x * x) * exp(-0.5 * x * x) * pow(1 - u * u, 3); /* smooth to 0 at r */
  }
  arkcos_kernel_spec s;
  memset(&s, 0, sizeof s);
  s.type = ARKCOS_KERNEL_TABLE;
  s.alpha = ang;
  s.value = val;
  s.ntable = 200;
  arkcos_kernel *src = arkcos_kernel_create(&s, &err);
  CHECK(src != NULL, "%s", err.msg);
  const int lmax = 4000;
  double *kl = malloc(sizeof(double) * (lmax + 1));
  CHECK(arkcos_kernel_legendre(src, lmax, kl, &err) == 0, "%s", err.msg);
  arkcos_kernel *k = arkcos_kernel_from_beam(kl, lmax, 1e-6, &err);
  CHECK(k != NULL, "%s", err.msg);
  if (k) {
    CHECK(arkcos_kernel_value(k, 0.8 * r) < 0, "the negative ring is lost: %g", arkcos_kernel_value(k, 0.8 * r));
    /* from 0.1 deg on, measured 1.0e-6; nearer 0 the source itself is not
     * smooth (a natural spline has K'(0) != 0, a cusp at the pole, whose K_l
     * decay slowly: 3.5e-5 at l = 4000 and at 8000 alike) */
    CHECK_LE("sidelobed profile from its K_l, beyond 0.1 deg, / K(0)",
             profile_dev_from(k, kernel_val, src, 0.05 * r), 4e-6);
    CHECK_LE("its cutoff against the profile's extent (deg)", fabs(arkcos_kernel_cutoff(k) - r) * 180 / PI, 0.1);
  }
  arkcos_kernel_destroy(k);
  arkcos_kernel_destroy(src);
  free(kl);
}

TEST_GROUP(refusals) {
  arkcos_error err = {0, ""};
  const double pix = sqrt(4 * PI / (12.0 * 64 * 64));
  double *bl = gauss_bl(2.8 * pix, 191); /* healpy's default lmax 3 nside - 1: B_191 = 1.2e-3 */
  CHECK(!arkcos_kernel_from_beam(bl, 191, 1e-5, &err) && err.code == ARKCOS_EINVAL && strstr(err.msg, "rings") &&
            strstr(err.msg, "l = 191"),
        "harmonic cut accepted: %s", err.msg);
  CHECK(!arkcos_kernel_from_beam(bl, 0, 1e-5, &err), "lmax 0 accepted");
  CHECK(!arkcos_kernel_from_beam(bl, 191, 0, &err), "cutoff 0 accepted");
  bl[0] = -1;
  CHECK(!arkcos_kernel_from_beam(bl, 191, 1e-5, &err) && strstr(err.msg, "B_0"), "B_0 < 0: %s", err.msg);
  bl[0] = 1;
  bl[7] = NAN;
  CHECK(!arkcos_kernel_from_beam(bl, 191, 1e-5, &err) && strstr(err.msg, "l = 7"), "NaN: %s", err.msg);
  free(bl);
}

static void write_text(const char *path, const char *body) {
  FILE *f = fopen(path, "w");
  if (!f) exit(1);
  fputs(body, f);
  fclose(f);
}

/* a FITS beam as healpy write_cl / the RIMO: a binary table, one row per l */
static void write_fits(const char *path, const double *t, const double *g, int n) {
  fitsfile *f;
  int st = 0;
  remove(path);
  char *ttype[] = {"TEMPERATURE", "GRAD"}, *tform[] = {"1D", "1D"}, *tunit[] = {"", ""};
  fits_create_file(&f, path, &st);
  fits_create_tbl(f, BINARY_TBL, n, 2, ttype, tform, tunit, "BEAM", &st);
  fits_write_col(f, TDOUBLE, 1, 1, 1, n, (void *)t, &st);
  fits_write_col(f, TDOUBLE, 2, 1, 1, n, (void *)g, &st);
  fits_close_file(f, &st);
  if (st) exit(1);
}

TEST_GROUP(beam_files) {
  char dir[] = "/tmp/arkcos-beam-XXXXXX";
  if (!mkdtemp(dir)) exit(1);
  char p[256];
  arkcos_error err = {0, ""};
  double *b;
  int lmax;
  double t[300], g[300];
  for (int l = 0; l < 300; l++) t[l] = exp(-l * (l + 1.0) * 1e-4), g[l] = 0.5 * t[l];
  snprintf(p, sizeof p, "%s/beam.fits", dir);
  write_fits(p, t, g, 300);
  CHECK(beam_read(p, NULL, &b, &lmax, &err) == 0 && lmax == 299 && b[10] == t[10], "fits first column: %s", err.msg);
  free(b);
  CHECK(beam_read(p, "grad", &b, &lmax, &err) == 0 && b[10] == g[10], "fits by name: %s", err.msg);
  free(b);
  CHECK(beam_read(p, "2", &b, &lmax, &err) == 0 && b[10] == g[10], "fits by number: %s", err.msg);
  free(b);
  CHECK(beam_read(p, "POL", &b, &lmax, &err) == ARKCOS_EINVAL && strstr(err.msg, "POL"), "missing name: %s",
        err.msg);
  CHECK(beam_read(p, "3", &b, &lmax, &err) == ARKCOS_EINVAL, "column 3 accepted");
  snprintf(p, sizeof p, "%s/bl.txt", dir);
  write_text(p, "# l B_l\n0 1\n1 0.99\n2 0.97\n");
  CHECK(beam_read(p, NULL, &b, &lmax, &err) == 0 && lmax == 2 && b[2] == 0.97, "text l B_l: %s", err.msg);
  free(b);
  write_text(p, "1\n0.99\n0.97\n0.94\n");
  CHECK(beam_read(p, NULL, &b, &lmax, &err) == 0 && lmax == 3, "text B_l: %s", err.msg);
  free(b);
  const struct {
    const char *body, *want;
  } bad[] = {{"0 1\n1 0.9\n3 0.8\n", ":3:"},    {"0 1\n1 nan\n", "l = 1"},
             {"0 1 2\n", ":1:"},               {"0 1\n0.9\n", ":2:"},
             {"0 -1\n1 0.5\n", "B_0"},          {"0 1\n", "l = 0 and 1"},
             {"0 1\n1 abc\n", ":2:"},           {"", "multipoles"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_text(p, bad[i].body);
    const int rc = beam_read(p, NULL, &b, &lmax, &err);
    CHECK(rc == ARKCOS_EINVAL && strstr(err.msg, bad[i].want) && strstr(err.msg, "bl.txt"),
          "bad text beam %zu: rc %d, %s", i, rc, err.msg);
  }
  CHECK(beam_read(p, "TEMPERATURE", &b, &lmax, &err) == ARKCOS_EINVAL, "text with a column name accepted");
  snprintf(p, sizeof p, "%s/missing.txt", dir);
  CHECK(beam_read(p, NULL, &b, &lmax, &err) == ARKCOS_EINVAL && strstr(err.msg, "missing.txt"), "%s", err.msg);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0, "cleanup");
}

/* A kernel file's lines may be of any length (a 6000-character comment,
 * a data line padded past 4096 characters). */
TEST_GROUP(kernel_file_long_lines) {
  char path[] = "/tmp/arkcos-longk-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) exit(1);
  FILE *f = fdopen(fd, "w");
  fputs("# ", f);
  for (int i = 0; i < 6000; i++) fputc('x', f);
  fputs("\n0 1", f);
  for (int i = 0; i < 5000; i++) fputc(' ', f);
  fputs("# a long comment\n0.01 0.5\n0.02 0\n", f);
  fclose(f);
  arkcos_error err = {0, ""};
  arkcos_kernel *k = arkcos_kernel_from_file(path, 0, 0, &err);
  CHECK(k != NULL, "long lines refused: %s", err.msg);
  if (k) CHECK(fabs(arkcos_kernel_cutoff(k) - 0.02) < 1e-15, "cutoff %g", arkcos_kernel_cutoff(k));
  arkcos_kernel_destroy(k);
  remove(path);
}

/* arkcos_kernel_gaussian_harmonic: the same kernel as the beam route, the
 * window it applies, its refusals */
TEST_GROUP(gaussian_harmonic) {
  arkcos_error err = {0, ""};
  const double fw[] = {10 * PI / 180, 1 * PI / 180, 5 * PI / 10800};
  for (int t = 0; t < 3; t++) {
    arkcos_kernel *k = arkcos_kernel_gaussian_harmonic(fw[t], 1e-13, &err);
    CHECK(k != NULL, "%s", err.msg);
    if (!k) continue;
    const double sig = fw[t] / sqrt(8 * log(2.0));
    const int lmax = (int)ceil(9 / sig);
    double *bl = gauss_bl(fw[t], lmax);
    beam_ctx bc = {bl, lmax};
    char what[160];
    snprintf(what, sizeof what, "harmonic Gaussian %.3g deg: table against the Legendre sum, / K(0)", fw[t] * 180 / PI);
    /* measured 2.2e-15 (10 deg), 6.9e-15 (1 deg), 4.2e-14 (5'): a Gaussian
     * times a fitted factor, the Legendre sum's own rounding */
    CHECK_LE(what, profile_dev(k, beam_sum, &bc), 1e-13);
    CHECK(k->f.type == ARKCOS_KERNEL_GAUSSIAN && k->f.npoly >= 2, "%s: a Gaussian times a factor (%d terms)", what,
          k->f.npoly);
    /* the cut where the heat kernel falls to 1e-13: about 7.7 sigma */
    snprintf(what, sizeof what, "harmonic Gaussian %.3g deg: cut / sigma", fw[t] * 180 / PI);
    CHECK_LE(what, fabs(arkcos_kernel_cutoff(k) / sig - 7.74), 0.1);
    double we;
    int lw;
    CHECK(arkcos_kernel_window_error(k, bl, lmax, &we, &lw, &err) == 0, "%s", err.msg);
    snprintf(what, sizeof what, "harmonic Gaussian %.3g deg: max_l |K_l - B_l|", fw[t] * 180 / PI);
    CHECK_LE(what, we, 1e-10); /* measured 1.2e-13 (10 deg), 1.3e-13 (1 deg), 2.6e-11 (5') */
    printf("  harmonic Gaussian %.3g deg: cut %.3f sigma, window error %.1e\n", fw[t] * 180 / PI,
           arkcos_kernel_cutoff(k) / sig, we);
    arkcos_kernel_destroy(k);
    free(bl);
  }
  CHECK(!arkcos_kernel_gaussian_harmonic(0, 1e-13, &err) && strstr(err.msg, "fwhm"), "fwhm 0 refused: %s", err.msg);
  CHECK(!arkcos_kernel_gaussian_harmonic(1e-3, 0, &err) && strstr(err.msg, "cutoff"), "cutoff 0 refused: %s", err.msg);
  CHECK(!arkcos_kernel_gaussian_harmonic(1e-7, 1e-5, &err) && strstr(err.msg, "2e6"), "too narrow refused: %s", err.msg);
  arkcos_kernel_spec hs = {0};
  hs.type = ARKCOS_KERNEL_GAUSSIAN_HARMONIC;
  hs.fwhm = 1e-2;
  hs.cutoff_rel = 1e-13;
  CHECK(!arkcos_kernel_create(&hs, &err) && strstr(err.msg, "arkcos_kernel_gaussian_harmonic"),
        "arkcos_kernel_create of the harmonic type: refused, naming the maker: %s", err.msg);
}

TEST_MAIN(TG(kernel_file_long_lines), TG(gaussian_beam), TG(sidelobes_round_trip), TG(refusals), TG(beam_files), TG(gaussian_harmonic))
