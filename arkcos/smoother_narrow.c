/* smoother_narrow.c -- pixels per FWHM and the measured cost of kernels
 * narrow against the pixels (smoother_narrow.h, docs/NARROW_BEAMS.md): the
 * narrow-kernel rule of arkcos_smoother, `arkcos smooth` and `arkcos run`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/smoother_narrow.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#define ARCMIN (M_PI / 10800)

double narrow_pixel_size(int64_t nside) {
  return sqrt(4 * M_PI / (12.0 * (double)nside * (double)nside));
}

/* sqrt(4 ln 2 <alpha^2>), the |K|-weighted second moment over the sphere
 * within the cutoff, by the midpoint rule on 100000 intervals (exact for
 * the purpose: a figure quoted to three digits). */
double narrow_kernel_width(const arkcos_kernel *k, double fwhm) {
  if (fwhm > 0) return fwhm;
  const double c = arkcos_kernel_cutoff(k);
  const int n = 100000;
  double m0 = 0, m2 = 0;
  for (int i = 0; i < n; i++) {
    double a = c * (i + 0.5) / n, w = fabs(arkcos_kernel_value(k, a)) * sin(a);
    m0 += w;
    m2 += w * a * a;
  }
  return m0 > 0 ? sqrt(4 * log(2.0) * m2 / m0) : 0;
}

double narrow_pixels_per_fwhm(double width, int64_t nside) {
  return width / narrow_pixel_size(nside);
}

/* Measured by tools/narrow_beams at nside 256 (docs/NARROW_BEAMS.md has it
 * with nside 64 beside it): Gaussians cut at 1e-5 of their peak. */
static const narrow_expect table[] = {
    /* ppf  frac_rms  frac_rms_norm  const_min  const_max */
    {1.00, 2.26e-01, 1.01e-01, 1.10129, 1.21573},
    {1.25, 7.01e-02, 5.31e-02, 0.98255, 1.05819},
    {1.50, 2.48e-02, 2.29e-02, 0.95127, 1.01357},
    {2.00, 4.35e-03, 4.34e-03, 0.95268, 1.00138},
    {2.50, 1.32e-03, 1.33e-03, 0.96393, 1.00012},
    {3.00, 6.33e-04, 6.66e-04, 0.97273, 1.00010},
    {4.00, 4.70e-04, 5.13e-04, 0.98337, 1.00007},
    {6.00, 4.71e-04, 4.76e-04, 0.99218, 1.00005},
    {8.00, 4.71e-04, 4.59e-04, 0.99552, 1.00003},
};

const narrow_expect *narrow_table(int *n) {
  *n = (int)(sizeof table / sizeof table[0]);
  return table;
}

/* Between a and b at fraction t: in log space where both are positive. */
static double blend(double a, double b, double t) {
  if (a > 0 && b > 0) return exp((1 - t) * log(a) + t * log(b));
  return (1 - t) * a + t * b;
}

void narrow_expected(double ppf, narrow_expect *e) {
  int n;
  const narrow_expect *r = narrow_table(&n);
  if (ppf <= r[0].ppf || n == 1) {
    *e = r[0];
  } else if (ppf >= r[n - 1].ppf) {
    *e = r[n - 1];
  } else {
    int i = 0;
    while (i + 2 < n && r[i + 1].ppf < ppf) i++;
    double t = (ppf - r[i].ppf) / (r[i + 1].ppf - r[i].ppf);
    e->frac_rms = blend(r[i].frac_rms, r[i + 1].frac_rms, t);
    e->frac_rms_norm = blend(r[i].frac_rms_norm, r[i + 1].frac_rms_norm, t);
    e->const_min = 1 - blend(1 - r[i].const_min, 1 - r[i + 1].const_min, t);
    e->const_max = 1 + blend(r[i].const_max - 1, r[i + 1].const_max - 1, t);
  }
  e->ppf = ppf;
}

/* An angle as people write it: arcmin below a degree, else degrees. */
static void angle_text(double rad, char *buf, size_t len) {
  if (rad < M_PI / 180)
    snprintf(buf, len, "%.3g'", rad / ARCMIN);
  else
    snprintf(buf, len, "%.3g deg", rad * 180 / M_PI);
}

void narrow_describe(double width, int gaussian, int64_t nside, char *buf, size_t len) {
  char w[32], p[32];
  angle_text(width, w, sizeof w);
  angle_text(narrow_pixel_size(nside), p, sizeof p);
  snprintf(buf, len, "%.3g pixels per FWHM at nside %lld (%s %s over pixels of %s)",
           narrow_pixels_per_fwhm(width, nside), (long long)nside,
           gaussian ? "FWHM" : "effective FWHM", w, p);
}

/* (4 pi / npix) sum_q K(alpha_pq) at the pixel (t0, p0): the rings within
 * the cutoff, on each the azimuths within it (one pixel of margin; the
 * kernel is 0 beyond its cutoff). */
static double constant_response(const arkcos_geometry *g, const arkcos_kernel *k, double t0,
                                double p0) {
  const double c = arkcos_kernel_cutoff(k), s0 = sin(t0);
  double sum = 0;
  for (int j = 0; j < g->nrings; j++) {
    const arkcos_ring *r = &g->rings[j];
    if (fabs(r->theta - t0) > c) continue;
    const double sj = sin(r->theta), step = 2 * M_PI / (double)r->nph;
    const double x = s0 * sj > 0 ? (cos(c) - cos(t0) * cos(r->theta)) / (s0 * sj) : -2;
    const double half = x <= -1 ? M_PI : acos(fmin(x, 1.0));
    int64_t lo = (int64_t)floor((p0 - half - r->phi0) / step) - 1;
    int64_t hi = (int64_t)ceil((p0 + half - r->phi0) / step) + 1;
    if (hi - lo + 1 >= r->nph) {
      lo = 0;
      hi = r->nph - 1;
    }
    double ring = 0;
    for (int64_t i = lo; i <= hi; i++) {
      double dphi = r->phi0 + (double)i * step - p0;
      double h = pow(sin(0.5 * (r->theta - t0)), 2) + s0 * sj * pow(sin(0.5 * dphi), 2);
      ring += arkcos_kernel_value(k, 2 * asin(sqrt(fmin(h, 1.0))));
    }
    sum += r->weight * ring;
  }
  return sum;
}

int narrow_constant_range(const arkcos_geometry *g, const arkcos_kernel *k, double *lo,
                          double *hi, arkcos_error *err) {
  if (!g || g->nrings < 1) return arkcos_fail(err, ARKCOS_EINVAL, "no geometry");
  *lo = HUGE_VAL;
  *hi = -HUGE_VAL;
  const int nr = g->nrings, spread = 48, per_ring = 8;
  for (int s = 0; s < spread + 10; s++) {
    /* rings 0-3 and the last 4 (polar caps), the equator, 48 spread over all */
    int j = s < 4 ? s : s < 8 ? nr - 1 - (s - 4) : s < 10 ? nr / 2 - (s - 8)
                                                     : (int)((double)(s - 10) * (nr - 1) / (spread - 1));
    if (j < 0 || j >= nr) continue;
    const arkcos_ring *r = &g->rings[j];
    int64_t m = r->nph < per_ring ? r->nph : per_ring;
    for (int64_t q = 0; q < m; q++) {
      int64_t i = q * r->nph / m;
      double v = constant_response(g, k, r->theta, r->phi0 + 2 * M_PI * (double)i / (double)r->nph);
      if (v < *lo) *lo = v;
      if (v > *hi) *hi = v;
    }
  }
  return ARKCOS_OK;
}

/* "between 0.954 and 1.02", or "as 427" when both agree to 4 digits. */
static void range_text(double lo, double hi, char *buf, size_t len) {
  char a[32], b[32];
  snprintf(a, sizeof a, "%.4g", lo);
  snprintf(b, sizeof b, "%.4g", hi);
  if (!strcmp(a, b))
    snprintf(buf, len, "as %s", a);
  else
    snprintf(buf, len, "between %s and %s", a, b);
}

void narrow_refusal_named(double width, int gaussian, int64_t nside, double lo, double hi,
                          const char *harmonic_name, const char *allow_name, char *buf, size_t len) {
  char d[200], r[80], harm[128] = "", allow[160] = "";
  narrow_describe(width, gaussian, nside, d, sizeof d);
  range_text(lo, hi, r, sizeof r);
  if (harmonic_name) snprintf(harm, sizeof harm, " (%s)", harmonic_name);
  if (allow_name) snprintf(allow, sizeof allow, "; %s computes the pixel sum anyway", allow_name);
  snprintf(buf, len,
           "the kernel is %s: below %g pixel per FWHM the pixel grid does not sample it, "
           "so its discrete sum is not 1 and the result is no smoothing (a constant map of 1 "
           "would come out %s). Use a wider kernel or a map of higher nside, or harmonic "
           "smoothing%s%s",
           d, NARROW_REFUSE, r, harm, allow);
}

void narrow_refusal(double width, int gaussian, int64_t nside, double lo, double hi,
                    char *buf, size_t len) {
  narrow_refusal_named(width, gaussian, nside, lo, hi, "--method fsht",
                       "--allow-subpixel with --method direct", buf, len);
}

void narrow_warning_named(double width, int gaussian, int64_t nside, double lo, double hi,
                          int normalize, const char *normalize_name, char *buf, size_t len) {
  char d[200], r[80];
  const char *nn = normalize_name ? normalize_name : "normalize";
  narrow_expect e;
  narrow_expected(narrow_pixels_per_fwhm(width, nside), &e);
  narrow_describe(width, gaussian, nside, d, sizeof d);
  if (isnan(lo) || isnan(hi)) {
    range_text(e.const_min, e.const_max, r, sizeof r);
    snprintf(r + strlen(r), sizeof r - strlen(r), " (measured, Gaussian)");
  } else {
    range_text(lo, hi, r, sizeof r);
    snprintf(r + strlen(r), sizeof r - strlen(r), " here");
  }
  int n = snprintf(buf, len,
                   "the kernel is %s: below %g pixels per FWHM the pixel grid samples it "
                   "coarsely; expected error against harmonic smoothing ", d, NARROW_WARN);
  if (n < 0 || (size_t)n >= len) return;
  if (normalize)
    snprintf(buf + n, len - (size_t)n,
             "%.1e rms with %s (%.1e without; a white band-limited map, "
             "docs/NARROW_BEAMS.md)", e.frac_rms_norm, nn, e.frac_rms);
  else if (normalize_name)
    snprintf(buf + n, len - (size_t)n,
             "%.1e rms (a white band-limited map, docs/NARROW_BEAMS.md), and a constant map "
             "of 1 comes out %s; %s keeps it constant (expected error then %.1e)",
             e.frac_rms, r, nn, e.frac_rms_norm);
  else
    snprintf(buf + n, len - (size_t)n,
             "%.1e rms (a white band-limited map, docs/NARROW_BEAMS.md), and a constant map "
             "of 1 comes out %s", e.frac_rms, r);
  if (!gaussian)
    snprintf(buf + strlen(buf), len - strlen(buf),
             "; these figures are for Gaussians: a sharp edge (a top-hat) costs more, at any "
             "sampling");
}

void narrow_warning(double width, int gaussian, int64_t nside, double lo, double hi,
                    int normalize, char *buf, size_t len) {
  narrow_warning_named(width, gaussian, nside, lo, hi, normalize, "--normalize", buf, len);
}
