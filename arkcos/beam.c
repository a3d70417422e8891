/*
 * beam.c -- radial kernels from beam transfer functions B_l (a FITS beam of
 * healpy or the Planck RIMO, a text file `l B_l`): the Legendre sum
 *     K(t) = sum_l (2l + 1) / (4 pi) (B_l / B_0) P_l(cos t),
 * truncated where |K| stays below cutoff_rel K(0) up to pi, tabulated finely
 * enough that the table's cubic spline reproduces the sum to ~1e-9 of K(0),
 * and the window the truncated kernel really applies (its own K_l) against
 * the B_l asked for. healpy's Gaussian beam is a Gaussian times a smooth
 * factor fitted to its Legendre sum (kernel_internal.h), else a table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"
#include "arkcos/kernel_internal.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* sum_l c_l P_l(cos alpha), l = 0..L, by the upward recurrence written for
 * the differences d_l = P_l - P_(l-1) in u = 1 - cos alpha = 2 sin^2(alpha/2):
 * d_(l+1) = (l d_l - (2l + 1) u P_l) / (l + 1). cos alpha itself is never
 * formed: its rounding (1e-16) moves P_l by l^2/2 times as much near 1,
 * which at l = 7e4 (a 1' beam) was 3e-9 of K(0). */
static double legendre_sum(const double *c, int L, double alpha) {
  const double sh = sin(0.5 * alpha), u = 2 * sh * sh;
  double p = 1, d = -u, s = c[0]; /* P_0 = 1, d_1 = P_1 - P_0 = -u */
  for (int l = 1; l <= L; l++) {
    p += d; /* P_l */
    s += c[l] * p;
    d = (l * d - (2 * l + 1) * u * p) / (l + 1); /* d_(l+1) */
  }
  return s;
}

/* The last multipole whose terms matter: the tail beyond it holds at most
 * 1e-16 of sum (2l + 1) |B_l|. */
static int effective_lmax(const double *b, int lmax) {
  double tot = 0, tail = 0;
  for (int l = 0; l <= lmax; l++) tot += (2 * l + 1) * fabs(b[l]);
  int L = lmax;
  while (L > 0 && tail + (2 * L + 1) * fabs(b[L]) <= 1e-16 * tot) {
    tail += (2 * L + 1) * fabs(b[L]);
    L--;
  }
  return L;
}

/* The kernel of Legendre coefficients c[0..L] up to the angle cut: a table
 * at most pi / (32 L) apart, at least 64 points to the cut, and NREF points
 * at h 4^-r near 0, where the natural spline's zero curvature is wrong
 * (K''(0) != 0): its O(h^2) error there shrinks 16-fold per level (measured
 * on Gaussians: 5e-6 of K(0) without them) */
static arkcos_kernel *table_kernel(const double *c, int L, double cut, arkcos_error *err) {
  enum { NREF = 8 };
  double h = fmin(M_PI / (32.0 * (L + 1)), cut / 64);
  const int nu = (int)ceil(cut / h) + 1, n = nu + NREF;
  h = cut / (nu - 1);
  double *a = malloc(sizeof(double) * (size_t)n), *v = malloc(sizeof(double) * (size_t)n);
  if (!a || !v) {
    free(a);
    free(v);
    arkcos_fail(err, ARKCOS_ENOMEM, "beam: out of memory");
    return NULL;
  }
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; i++) {
    if (i == 0) a[i] = 0;
    else if (i <= NREF) a[i] = h * pow(0.25, NREF + 1 - i);
    else a[i] = i == n - 1 ? cut : (i - NREF) * h;
    v[i] = legendre_sum(c, L, a[i]);
  }
  arkcos_kernel_spec s;
  memset(&s, 0, sizeof s);
  s.type = ARKCOS_KERNEL_TABLE;
  s.alpha = a;
  s.value = v;
  s.ntable = n;
  s.cutoff = cut;
  arkcos_kernel *k = arkcos_kernel_create(&s, err);
  free(a);
  free(v);
  return k;
}

arkcos_kernel *arkcos_kernel_from_beam(const double *bl, int lmax, double cutoff_rel, arkcos_error *err) {
  if (!bl || lmax < 1) {
    arkcos_fail(err, ARKCOS_EINVAL, "beam: need B_l for l = 0 .. lmax with lmax >= 1");
    return NULL;
  }
  if (!(cutoff_rel > 0 && cutoff_rel < 1)) {
    arkcos_fail(err, ARKCOS_EINVAL, "beam: relative cutoff must be in (0, 1), got %g", cutoff_rel);
    return NULL;
  }
  for (int l = 0; l <= lmax; l++)
    if (!isfinite(bl[l])) {
      arkcos_fail(err, ARKCOS_EINVAL, "beam: B_l at l = %d is not a finite number", l);
      return NULL;
    }
  if (!(bl[0] > 0)) {
    arkcos_fail(err, ARKCOS_EINVAL, "beam: B_0 = %g; a smoothing beam has B_0 > 0 (it is normalised by B_0)", bl[0]);
    return NULL;
  }
  const int L = effective_lmax(bl, lmax);
  double *c = malloc(sizeof(double) * (size_t)(L + 1));
  if (!c) {
    arkcos_fail(err, ARKCOS_ENOMEM, "beam: out of memory");
    return NULL;
  }
  for (int l = 0; l <= L; l++) c[l] = (2 * l + 1) / (4 * M_PI) * bl[l] / bl[0];
  const double k0 = legendre_sum(c, L, 0.0);
  if (!(k0 > 0)) {
    free(c);
    arkcos_fail(err, ARKCOS_EINVAL, "beam: its kernel K(0) = sum (2l+1)/4pi B_l/B_0 = %g is not positive", k0);
    return NULL;
  }
  /* 1. where |K| stays below cutoff_rel K(0): scanned at half the shortest
   * half-wavelength, pi / (2 L) (the ringing's envelope is wider) */
  const int nscan = 2 * (L + 1);
  const double dscan = M_PI / nscan, lim = cutoff_rel * k0;
  int last = 0;
  double beyond = 0; /* largest |K| / K(0) outside the main lobe's first fall below the level */
#pragma omp parallel for schedule(static) reduction(max : last)
  for (int i = 1; i <= nscan; i++)
    if (fabs(legendre_sum(c, L, i * dscan)) > lim) last = i > last ? i : last;
  if (last >= nscan - 1) {
    int first = 0;
    for (int i = 1; i <= nscan && !first; i++)
      if (fabs(legendre_sum(c, L, i * dscan)) <= lim) first = i;
    /* the figure: beyond the main lobe, or (never below) from 90 degrees on */
    const int from = first ? first : nscan / 2;
    for (int i = from; i <= nscan; i += 1 + nscan / 4096)
      beyond = fmax(beyond, fabs(legendre_sum(c, L, i * dscan)) / k0);
    free(c);
    char where[128];
    if (first)
      snprintf(where, sizeof where, "beyond the main lobe |K| reaches %.2g K(0)", beyond);
    else
      snprintf(where, sizeof where, "|K| never falls below that level; from 90 degrees on it reaches %.2g K(0)",
               beyond);
    arkcos_fail(err, ARKCOS_EINVAL,
                "beam: its kernel does not stay below %g of K(0) before 180 degrees (%s; B_l at its last "
                "multipole l = %d is %.2g B_0): the window is cut in harmonic space and its Legendre sum "
                "rings, or its profile has a tail wider than the sphere at that level, so no compact kernel "
                "reproduces it; give B_l to a higher l (healpy: gauss_beam(fwhm, lmax=8*nside)) or a larger "
                "relative cutoff",
                cutoff_rel, where, lmax, bl[lmax] / bl[0]);
    return NULL;
  }
  const double cut = fmin(M_PI, (last + 1) * dscan);
  arkcos_kernel *k = table_kernel(c, L, cut, err);
  free(c);
  return k;
}

/* Least squares min |A x - b| for an m x n matrix (column-major, m >= n) by
 * Householder QR; A and b are overwritten. Returns 0, or -1 if singular. */
static int lsq(double *A, double *b, int m, int n, double *x) {
  for (int j = 0; j < n; j++) {
    double *a = A + (size_t)j * m, nrm = 0;
    for (int i = j; i < m; i++) nrm += a[i] * a[i];
    nrm = sqrt(nrm);
    if (!(nrm > 0)) return -1;
    const double alpha = a[j] > 0 ? -nrm : nrm;
    a[j] -= alpha; /* v = a - alpha e_j, stored in a[j..m) */
    double vv = 0;
    for (int i = j; i < m; i++) vv += a[i] * a[i];
    for (int c = j + 1; c < n; c++) {
      double *ac = A + (size_t)c * m, d = 0;
      for (int i = j; i < m; i++) d += a[i] * ac[i];
      d = 2 * d / vv;
      for (int i = j; i < m; i++) ac[i] -= d * a[i];
    }
    double d = 0;
    for (int i = j; i < m; i++) d += a[i] * b[i];
    d = 2 * d / vv;
    for (int i = j; i < m; i++) b[i] -= d * a[i];
    a[j] = alpha; /* R's diagonal */
  }
  for (int j = n - 1; j >= 0; j--) {
    double t = b[j];
    for (int c = j + 1; c < n; c++) t -= A[(size_t)c * m + j] * x[c];
    x[j] = t / A[(size_t)j * m + j];
  }
  return 0;
}

/* The heat kernel c[0..L] (Legendre sum, K(0) = k0) as a Gaussian of width
 * sigma times a Chebyshev series in 2 alpha^2 / cut^2 - 1: the fewest terms
 * whose product follows the sum to its rounding at 2 x 160 points in [0, cut].
 * Returns the number of terms (coefficients in a), or 0 when none fits. */
static int fit_gaussian_factor(const double *c, int L, double k0, double sigma, double cut, double *a) {
  enum { M = 160 };
  double al[2 * M], h[2 * M], g[2 * M];
  for (int j = 0; j < 2 * M; j++) {
    const double x = cos(M_PI * (j + 0.5) / (2 * M)); /* in (-1, 1) */
    al[j] = cut * sqrt(0.5 * (x + 1));
  }
#pragma omp parallel for schedule(static)
  for (int j = 0; j < 2 * M; j++) {
    h[j] = legendre_sum(c, L, al[j]) / k0;
    g[j] = exp(-0.5 * al[j] * al[j] / (sigma * sigma));
  }
  double A[M * ARKCOS_KPOLY_MAX], b[M], x[ARKCOS_KPOLY_MAX], best[ARKCOS_KPOLY_MAX + 1][ARKCOS_KPOLY_MAX];
  double worst[ARKCOS_KPOLY_MAX + 1], floor = INFINITY;
  for (int n = 2; n <= ARKCOS_KPOLY_MAX; n++) {
    worst[n] = INFINITY;
    /* fit on the even points, check on all */
    for (int j = 0; j < M; j++) {
      const double xx = 2 * al[2 * j] * al[2 * j] / (cut * cut) - 1;
      double t0 = 1, t1 = xx;
      for (int k = 0; k < n; k++) {
        double tk = k == 0 ? 1 : xx;
        if (k >= 2) {
          tk = 2 * xx * t1 - t0;
          t0 = t1;
          t1 = tk;
        }
        A[(size_t)k * M + j] = g[2 * j] * tk;
      }
      b[j] = h[2 * j];
    }
    if (lsq(A, b, M, n, x)) continue;
    double w = 0;
    for (int j = 0; j < 2 * M; j++) {
      const double xx = 2 * al[j] * al[j] / (cut * cut) - 1;
      w = fmax(w, fabs(g[j] * arkcos_cheb(x, n, xx) - h[j]));
    }
    worst[n] = w;
    floor = fmin(floor, w);
    for (int k = 0; k < n; k++) best[n][k] = x[k];
  }
  /* the Legendre sum's own rounding sets a floor (7e-14 of K(0) at 1',
   * 3e-15 at 1 deg): the fewest terms within it, if it is low enough */
  if (!(floor <= 2e-13)) return 0;
  for (int n = 2; n <= ARKCOS_KPOLY_MAX; n++)
    if (worst[n] <= 1.25 * floor + 1e-15) {
      for (int k = 0; k < n; k++) a[k] = best[n][k];
      return n;
    }
  return 0;
}

arkcos_kernel *arkcos_kernel_gaussian_harmonic(double fwhm, double cutoff_rel, arkcos_error *err) {
  return arkcos_kernel_gaussian_harmonic_cut(fwhm, cutoff_rel, 0, err);
}

arkcos_kernel *arkcos_kernel_gaussian_harmonic_cut(double fwhm, double cutoff_rel, double cut_angle,
                                                   arkcos_error *err) {
  if (!(fwhm > 0 && fwhm <= M_PI)) {
    arkcos_fail(err, ARKCOS_EINVAL, "harmonic Gaussian: fwhm must be in (0, pi] radians, got %g", fwhm);
    return NULL;
  }
  const double sigma = fwhm / sqrt(8 * log(2.0));
  /* exp(-l (l + 1) sigma^2 / 2) < 1e-17 from here on */
  const double lmx = ceil(sqrt(2 * 39.2) / sigma) + 1;
  if (lmx > 2e6) {
    arkcos_fail(err, ARKCOS_EINVAL, "harmonic Gaussian: fwhm %g arcmin needs B_l to l = %.0f; beyond 2e6",
                fwhm * 10800 / M_PI, lmx);
    return NULL;
  }
  if (cut_angle != 0 && !(cut_angle > 0 && cut_angle <= M_PI)) {
    arkcos_fail(err, ARKCOS_EINVAL, "harmonic Gaussian: cutoff must be in (0, 180] degrees, got %g deg",
                cut_angle * 180 / M_PI);
    return NULL;
  }
  if (cut_angle == 0 && !(cutoff_rel > 0 && cutoff_rel < 1)) {
    arkcos_fail(err, ARKCOS_EINVAL, "harmonic Gaussian: relative cutoff must be in (0, 1), got %g", cutoff_rel);
    return NULL;
  }
  const int L = (int)lmx;
  double *bl = malloc(sizeof(double) * (size_t)(L + 1));
  if (!bl) {
    arkcos_fail(err, ARKCOS_ENOMEM, "harmonic Gaussian: out of memory");
    return NULL;
  }
  /* the heat kernel falls monotonically: march out in steps of sigma / 4 to
   * the first angle below the level, then bisect (a scan of the whole
   * circle, as for any B_l, costs L^2: minutes at 1 arcmin) */
  bl[0] = 1 / (4 * M_PI);
  for (int l = 1; l <= L; l++) bl[l] = (2 * l + 1) / (4 * M_PI) * exp(-0.5 * (double)l * (l + 1) * sigma * sigma);
  const double k0 = legendre_sum(bl, L, 0.0), lim = cutoff_rel * k0, step = sigma / 4;
  double lo = 0, hi = cut_angle > 0 ? M_PI : 0;
  while (hi < M_PI) {
    const double t = fmin(M_PI, hi + step);
    if (legendre_sum(bl, L, t) < lim) {
      hi = t;
      break;
    }
    lo = hi = t;
  }
  double cut = cut_angle > 0 ? cut_angle : M_PI;
  if (cut_angle == 0 && (hi < M_PI || legendre_sum(bl, L, M_PI) < lim)) {
    for (int it = 0; it < 60 && hi - lo > 1e-12 * hi; it++) {
      const double mid = 0.5 * (lo + hi);
      if (legendre_sum(bl, L, mid) < lim) hi = mid;
      else lo = mid;
    }
    cut = fmin(M_PI, hi);
  }
  double a[ARKCOS_KPOLY_MAX];
  const int n = fit_gaussian_factor(bl, L, k0, sigma, cut, a);
  arkcos_kernel *k = n ? arkcos_kernel_create_gaussian_poly(fwhm, cut, a, n, cut, err) : table_kernel(bl, L, cut, err);
  free(bl);
  return k;
}

double arkcos_beam_profile(const double *bl, int lmax, double alpha) {
  if (!bl || lmax < 0 || !(bl[0] != 0)) return NAN;
  double *c = malloc(sizeof(double) * (size_t)(lmax + 1));
  if (!c) return NAN;
  for (int l = 0; l <= lmax; l++) c[l] = (2 * l + 1) / (4 * M_PI) * bl[l] / bl[0];
  const double r = legendre_sum(c, lmax, alpha);
  free(c);
  return r;
}

int arkcos_kernel_window_error(const arkcos_kernel *k, const double *bl, int lmax, double *max_err,
                               int *l_worst, arkcos_error *err) {
  if (!k || !bl || lmax < 0 || !(bl[0] != 0))
    return arkcos_fail(err, ARKCOS_EINVAL, "beam window: need a kernel and B_l with B_0 != 0");
  double *kl = malloc(sizeof(double) * (size_t)(lmax + 1));
  if (!kl) return arkcos_fail(err, ARKCOS_ENOMEM, "beam window: out of memory");
  int rc = arkcos_kernel_legendre(k, lmax, kl, err);
  if (rc == ARKCOS_OK) {
    double m = 0;
    int lw = 0;
    for (int l = 0; l <= lmax; l++) {
      const double d = fabs(kl[l] - bl[l] / bl[0]);
      if (d > m) m = d, lw = l;
    }
    if (max_err) *max_err = m;
    if (l_worst) *l_worst = lw;
  }
  free(kl);
  return rc;
}
