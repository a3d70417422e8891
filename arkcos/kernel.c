/*
 * kernel.c -- radial kernels: Gaussian (by FWHM), top-hat and tabulated
 * profiles (natural cubic spline in alpha), truncated at a cutoff angle and
 * normalised to unit integral over the sphere; Legendre coefficients
 * (paper Eq. 2) and the truncation error estimate (paper Eq. 7).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/kernel_internal.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

enum { GL_N = 20 };

/* Gauss-Legendre nodes and weights on [-1, 1] (Newton on P_n; kernel_internal.h). */
void arkcos_gauss_legendre(int n, double *x, double *w) {
  for (int i = 0; i < (n + 1) / 2; i++) {
    double z = cos(M_PI * (i + 0.75) / (n + 0.5)), dp = 1;
    for (int it = 0; it < 100; it++) {
      double p0 = 1, p1 = z;
      for (int l = 2; l <= n; l++) {
        double p2 = ((2 * l - 1) * z * p1 - (l - 1) * p0) / l;
        p0 = p1;
        p1 = p2;
      }
      dp = n * (z * p1 - p0) / (z * z - 1);
      double dz = p1 / dp;
      z -= dz;
      if (fabs(dz) < 1e-16) break;
    }
    x[i] = -z;
    x[n - 1 - i] = z;
    w[i] = w[n - 1 - i] = 2 / ((1 - z * z) * dp * dp);
  }
}

/* Quadrature nodes on [0, c] for integrals of the profile times sin(alpha):
 * breakpoints at the spline knots (TABLE) or every sigma/2 (GAUSSIAN), and
 * at most `maxstep` apart. Returns count; *xa and *wa are malloc'd. */
static int quad_nodes(const arkcos_kfun *f, double c, double maxstep, double **xa,
                      double **wa) {
  double gx[GL_N], gw[GL_N];
  arkcos_gauss_legendre(GL_N, gx, gw);
  int nb = 0, cap = 64;
  double *bp = malloc(sizeof(double) * cap);
  if (!bp) return -1;
  bp[nb++] = 0;
  if (f->type == ARKCOS_KERNEL_TABLE)
    for (int i = 0; i < f->nknots; i++) {
      double x = f->spline[i];
      if (x > bp[nb - 1] && x < c) {
        if (nb == cap) bp = realloc(bp, sizeof(double) * (cap *= 2));
        if (!bp) return -1;
        bp[nb++] = x;
      }
    }
  if (nb == cap) bp = realloc(bp, sizeof(double) * (cap *= 2));
  if (!bp) return -1;
  bp[nb++] = c;
  double step = maxstep;
  if (f->type == ARKCOS_KERNEL_GAUSSIAN) {
    double sigma = sqrt(0.5 / f->inv2s2);
    if (0.5 * sigma < step) step = 0.5 * sigma;
  }
  /* count sub-segments */
  int64_t nseg = 0;
  for (int i = 0; i + 1 < nb; i++) nseg += (int64_t)ceil((bp[i + 1] - bp[i]) / step);
  double *x = malloc(sizeof(double) * nseg * GL_N), *w = malloc(sizeof(double) * nseg * GL_N);
  if (!x || !w) {
    free(bp);
    free(x);
    free(w);
    return -1;
  }
  int64_t n = 0;
  for (int i = 0; i + 1 < nb; i++) {
    int64_t ns = (int64_t)ceil((bp[i + 1] - bp[i]) / step);
    double h = (bp[i + 1] - bp[i]) / (double)ns;
    for (int64_t s = 0; s < ns; s++) {
      double a = bp[i] + s * h;
      for (int q = 0; q < GL_N; q++) {
        x[n] = a + 0.5 * h * (gx[q] + 1);
        w[n] = 0.5 * h * gw[q];
        n++;
      }
    }
  }
  free(bp);
  *xa = x;
  *wa = w;
  return (int)n;
}

/* 2 pi int_0^c f(alpha) sin(alpha) dalpha with f's current norm. */
static double integral(const arkcos_kfun *f) {
  if (f->type == ARKCOS_KERNEL_TOPHAT) /* 2 pi (1 - cos c), cancellation-free */
    return f->norm * 4 * M_PI * pow(sin(0.5 * f->cutoff), 2);
  double *x, *w;
  int n = quad_nodes(f, f->cutoff, M_PI / 64, &x, &w);
  if (n < 0) return NAN;
  double s = 0;
  for (int i = 0; i < n; i++) s += w[i] * arkcos_kfun_alpha(f, x[i]) * sin(x[i]);
  free(x);
  free(w);
  return 2 * M_PI * s;
}

/* Natural cubic spline coefficients: sp = x, a, b, c, d (5 n values). */
static double *make_spline(const double *x, const double *y, int n) {
  double *sp = calloc((size_t)5 * n, sizeof(double));
  double *m = calloc((size_t)n, sizeof(double)), *cp = calloc((size_t)n, sizeof(double));
  if (!sp || !m || !cp) {
    free(sp);
    free(m);
    free(cp);
    return NULL;
  }
  /* second derivatives m[i], m[0] = m[n-1] = 0: Thomas algorithm */
  for (int i = 1; i < n - 1; i++) {
    double h0 = x[i] - x[i - 1], h1 = x[i + 1] - x[i];
    double rhs = 6 * ((y[i + 1] - y[i]) / h1 - (y[i] - y[i - 1]) / h0);
    double diag = 2 * (h0 + h1) - h0 * cp[i - 1];
    cp[i] = h1 / diag;
    m[i] = (rhs - h0 * m[i - 1]) / diag;
  }
  for (int i = n - 2; i >= 1; i--) m[i] -= cp[i] * m[i + 1];
  double *X = sp, *A = sp + n, *B = sp + 2 * n, *C = sp + 3 * n, *D = sp + 4 * n;
  for (int i = 0; i < n; i++) {
    X[i] = x[i];
    A[i] = y[i];
    if (i < n - 1) {
      double h = x[i + 1] - x[i];
      B[i] = (y[i + 1] - y[i]) / h - h * (2 * m[i] + m[i + 1]) / 6;
      C[i] = m[i] / 2;
      D[i] = (m[i + 1] - m[i]) / (6 * h);
    }
  }
  free(m);
  free(cp);
  return sp;
}

static double profile(const arkcos_kfun *f, double alpha) { /* un-normalised */
  arkcos_kfun g = *f;
  g.norm = 1;
  g.cutoff = M_PI;
  return arkcos_kfun_alpha(&g, alpha);
}

/* Checks the spec's cutoff angle or level; 0 when it is usable. */
static int check_cutoff(const arkcos_kernel_spec *s, arkcos_error *err) {
  if (!s) return arkcos_fail(err, ARKCOS_EINVAL, "kernel: no specification");
  if (s->cutoff != 0 && !(s->cutoff > 0 && s->cutoff <= M_PI))
    return arkcos_fail(err, ARKCOS_EINVAL, "kernel: cutoff must be in (0, 180] degrees, got %g deg",
                       s->cutoff * 180 / M_PI);
  if (s->cutoff == 0 && s->cutoff_rel != 0 && !(s->cutoff_rel > 0 && s->cutoff_rel < 1))
    return arkcos_fail(err, ARKCOS_EINVAL, "kernel: relative cutoff must be in (0, 1), got %g",
                       s->cutoff_rel);
  return ARKCOS_OK;
}

/* GAUSSIAN: its width; *cut from the relative level when no angle is given */
static int setup_gaussian(arkcos_kernel *k, const arkcos_kernel_spec *s, double *cut, arkcos_error *err) {
  if (!(s->fwhm > 0) || !isfinite(s->fwhm))
    return arkcos_fail(err, ARKCOS_EINVAL, "kernel: FWHM must be positive, got %g arcmin",
                       s->fwhm * 10800 / M_PI);
  double sigma = s->fwhm / sqrt(8 * log(2.0));
  k->f.inv2s2 = 0.5 / (sigma * sigma);
  if (*cut == 0) {
    if (s->cutoff_rel == 0) return arkcos_fail(err, ARKCOS_EINVAL, "kernel: a Gaussian needs a cutoff angle or level");
    *cut = sigma * sqrt(2 * log(1 / s->cutoff_rel));
    if (*cut > M_PI) *cut = M_PI;
  }
  return ARKCOS_OK;
}

/* TABLE: checks the points: finite, angles >= 0, increasing, up to pi */
static int check_table(const arkcos_kernel_spec *s, arkcos_error *err) {
  int n = s->ntable;
  if (n < 2 || !s->alpha || !s->value) return arkcos_fail(err, ARKCOS_EINVAL, "kernel table: need at least 2 points");
  for (int i = 0; i < n; i++) {
    if (!isfinite(s->alpha[i]) || !isfinite(s->value[i]) || s->alpha[i] < 0)
      return arkcos_fail(err, ARKCOS_EINVAL, "kernel table: point %d: angles must be finite and >= 0", i + 1);
    if (i && s->alpha[i] <= s->alpha[i - 1])
      return arkcos_fail(err, ARKCOS_EINVAL, "kernel table: point %d: angles must increase", i + 1);
  }
  if (s->alpha[n - 1] > M_PI + 1e-12) return arkcos_fail(err, ARKCOS_EINVAL, "kernel table: angles beyond pi");
  return ARKCOS_OK;
}

/* TABLE: the first crossing of |K| < eps K(0) on a fine grid, refined by
 * bisection; the table's extent when there is none */
static double table_level_cutoff(const arkcos_kernel *k, double eps) {
  double k0 = fabs(profile(&k->f, 0)), lim = eps * k0;
  int steps = 100000;
  double cut = k->extent;
  for (int i = 1; i <= steps; i++) {
    double a = k->extent * i / steps;
    if (fabs(profile(&k->f, a)) < lim) {
      double lo = k->extent * (i - 1) / steps, hi = a;
      for (int it = 0; it < 60; it++) {
        double mid = 0.5 * (lo + hi);
        if (fabs(profile(&k->f, mid)) < lim) hi = mid; else lo = mid;
      }
      cut = hi;
      break;
    }
  }
  return cut;
}

/* TABLE: the spline through the points; *cut from the relative level (or
 * the table's extent) when no angle is given, at most the extent */
static int setup_table(arkcos_kernel *k, const arkcos_kernel_spec *s, double *cut, arkcos_error *err) {
  int rc = check_table(s, err);
  if (rc != ARKCOS_OK) return rc;
  int n = s->ntable;
  k->spline = make_spline(s->alpha, s->value, n);
  if (!k->spline) return arkcos_fail(err, ARKCOS_ENOMEM, "kernel: out of memory");
  k->f.spline = k->spline;
  k->f.nknots = n;
  k->extent = s->alpha[n - 1];
  if (profile(&k->f, 0) == 0) return arkcos_fail(err, ARKCOS_EINVAL, "kernel table: K(0) must not be 0");
  if (*cut == 0 && s->cutoff_rel > 0) *cut = table_level_cutoff(k, s->cutoff_rel);
  else if (*cut == 0) *cut = k->extent;
  if (*cut > k->extent) *cut = k->extent;
  return ARKCOS_OK;
}

/* The profile by type; *cut: the truncation angle */
static int setup_profile(arkcos_kernel *k, const arkcos_kernel_spec *s, double *cut, arkcos_error *err) {
  switch (s->type) {
    case ARKCOS_KERNEL_GAUSSIAN:
      return setup_gaussian(k, s, cut, err);
    case ARKCOS_KERNEL_TOPHAT:
      if (*cut == 0) return arkcos_fail(err, ARKCOS_EINVAL, "kernel: a top-hat needs its radius as cutoff angle");
      return ARKCOS_OK;
    case ARKCOS_KERNEL_TABLE:
      return setup_table(k, s, cut, err);
    default:
      return arkcos_fail(err, ARKCOS_EINVAL, "kernel: unknown type %d", (int)s->type);
  }
}

/* Truncation at cut and normalisation to unit integral over the sphere */
static int truncate_normalise(arkcos_kernel *k, const arkcos_kernel_spec *s, double cut, arkcos_error *err) {
  k->f.cutoff = cut;
  k->f.cut_d2 = 4 * pow(sin(0.5 * cut), 2);
  double k0 = profile(&k->f, 0);
  k->cutoff_rel = s->type == ARKCOS_KERNEL_TOPHAT ? 1.0 : profile(&k->f, cut) / k0;
  double I = integral(&k->f);
  if (!(isfinite(I) && fabs(I) > 0))
    return arkcos_fail(err, ARKCOS_EINVAL, "kernel: integral over the sphere is %g; cannot normalise", I);
  k->f.norm = 1 / I;
  return ARKCOS_OK;
}

arkcos_kernel *arkcos_kernel_create(const arkcos_kernel_spec *s, arkcos_error *err) {
  if (check_cutoff(s, err) != ARKCOS_OK) return NULL;
  if (s->type == ARKCOS_KERNEL_GAUSSIAN_HARMONIC) {
    /* a Legendre sum made a kernel (beam.c, which builds on this file) */
    arkcos_fail(err, ARKCOS_EINVAL, "kernel: healpy's Gaussian beam is made by arkcos_kernel_gaussian_harmonic "
                "(or an arkcos_smoother of that kernel type), not arkcos_kernel_create");
    return NULL;
  }
  arkcos_kernel *k = calloc(1, sizeof *k);
  if (!k) {
    arkcos_fail(err, ARKCOS_ENOMEM, "kernel: out of memory");
    return NULL;
  }
  k->f.type = s->type;
  k->f.norm = 1;
  k->extent = M_PI;
  double cut = s->cutoff;
  if (setup_profile(k, s, &cut, err) != ARKCOS_OK || truncate_normalise(k, s, cut, err) != ARKCOS_OK) {
    arkcos_kernel_destroy(k);
    return NULL;
  }
  return k;
}

arkcos_kernel *arkcos_kernel_create_gaussian_poly(double fwhm, double cut, const double *a, int n,
                                                  double fitcut, arkcos_error *err) {
  if (n < 1 || n > ARKCOS_KPOLY_MAX || !(fitcut > 0) || !(cut > 0 && cut <= M_PI)) {
    arkcos_fail(err, ARKCOS_EINVAL, "kernel: bad smooth factor (%d terms)", n);
    return NULL;
  }
  arkcos_kernel_spec s;
  memset(&s, 0, sizeof s);
  s.type = ARKCOS_KERNEL_GAUSSIAN;
  s.fwhm = fwhm;
  s.cutoff = cut;
  arkcos_kernel *k = calloc(1, sizeof *k);
  if (!k) {
    arkcos_fail(err, ARKCOS_ENOMEM, "kernel: out of memory");
    return NULL;
  }
  k->f.type = s.type;
  k->f.norm = 1;
  k->extent = M_PI;
  k->f.npoly = n;
  k->f.poly_s = 1 / (fitcut * fitcut);
  for (int i = 0; i < n; i++) k->f.poly[i] = a[i];
  double c = cut;
  if (setup_profile(k, &s, &c, err) != ARKCOS_OK || truncate_normalise(k, &s, c, err) != ARKCOS_OK) {
    arkcos_kernel_destroy(k);
    return NULL;
  }
  return k;
}

/* ---------------------------------------------------------- kernel files */

/* A kernel file's data lines: angle (in the file's unit), K, line number. */
typedef struct ktable {
  double *a, *v;
  int *line;
  int n, cap;
} ktable;

static void ktable_free(ktable *t) {
  free(t->a);
  free(t->v);
  free(t->line);
}

static int ktable_push(ktable *t, double a, double v, int line) {
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 256;
    double *na = realloc(t->a, sizeof(double) * cap);
    if (na) t->a = na;
    double *nv = realloc(t->v, sizeof(double) * cap);
    if (nv) t->v = nv;
    int *nl = realloc(t->line, sizeof(int) * cap);
    if (nl) t->line = nl;
    if (!na || !nv || !nl) return ARKCOS_ENOMEM;
    t->cap = cap;
  }
  t->a[t->n] = a;
  t->v[t->n] = v;
  t->line[t->n] = line;
  t->n++;
  return ARKCOS_OK;
}

static const char *unit_word(arkcos_angle_unit u) {
  return u == ARKCOS_ANGLE_DEG ? "degrees" : u == ARKCOS_ANGLE_ARCMIN ? "arcmin" : "radians";
}
static double unit_radians(arkcos_angle_unit u) {
  return u == ARKCOS_ANGLE_DEG ? M_PI / 180 : u == ARKCOS_ANGLE_ARCMIN ? M_PI / 10800 : 1;
}
/* pi (180 degrees) in the unit, as written in messages */
static const char *unit_pi(arkcos_angle_unit u) {
  return u == ARKCOS_ANGLE_DEG ? "180 degrees" : u == ARKCOS_ANGLE_ARCMIN ? "10800 arcmin" : "pi";
}
static const char *unit_switch(const arkcos_kernel_file_options *o) {
  return o->unit_name ? o->unit_name : "the angle unit";
}

/* More numbers after the two columns: with an integer first column, the
 * rows of a beam transfer function (l, B_T, B_E, B_B). */
static int extra_columns(const char *path, int lineno, double x, const char *rest,
                         arkcos_error *err) {
  char *e;
  strtod(rest, &e);
  int bl = e != rest && x == floor(x);
  return arkcos_fail(err, ARKCOS_EINVAL, "%s:%d: unexpected text after two columns%s", path,
                     lineno,
                     bl ? " (an integer followed by several numbers: this looks like a beam "
                          "transfer function `l B_l ...`, not a radial profile `angle K`)"
                        : "");
}

/* One line of a kernel file: 1 (a data line: *x, *y), 0 (comment or blank)
 * or an error code. */
static int parse_kernel_line(const char *path, int lineno, const char *line,
                             const arkcos_kernel_file_options *o, double *x, double *y,
                             arkcos_error *err) {
  const char *p = line;
  while (*p == ' ' || *p == '\t') p++;
  if (*p == '#' || *p == '\n' || *p == '\r' || *p == 0) return 0;
  if (lineno == 1 && !strncmp(p, "SIMPLE  =", 9))
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s:1: this is a FITS file; a kernel file is text with two columns, "
                       "angle in %s and K", path, unit_word(o->unit));
  char *e1, *e2 = NULL;
  *x = strtod(p, &e1);
  if (e1 != p) *y = strtod(e1, &e2);
  if (e1 == p || e2 == e1)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s:%d: expected two numbers (angle in %s, K)",
                       path, lineno, unit_word(o->unit));
  const char *e3 = e2;
  while (*e3 == ' ' || *e3 == '\t' || *e3 == '\r' || *e3 == '\n') e3++;
  if (*e3 && *e3 != '#') return extra_columns(path, lineno, *x, e3, err);
  if (isnan(*x) || isnan(*y))
    return arkcos_fail(err, ARKCOS_EINVAL, "%s:%d: NaN %s", path, lineno, isnan(*x) ? "angle" : "K");
  if (!isfinite(*x) || !isfinite(*y))
    return arkcos_fail(err, ARKCOS_EINVAL, "%s:%d: infinite %s", path, lineno,
                       isfinite(*x) ? "K" : "angle");
  if (*x < 0) return arkcos_fail(err, ARKCOS_EINVAL, "%s:%d: negative angle %g", path, lineno, *x);
  return 1;
}

/* The data lines of fp into t, each checked on its own and against the
 * previous one (angles increase). */
static int read_kernel_lines(FILE *fp, const char *path, const arkcos_kernel_file_options *o,
                             ktable *t, arkcos_error *err) {
  char *line = NULL; /* any length (getline) */
  size_t cap = 0;
  int lineno = 0;
  while (getline(&line, &cap, fp) > 0) {
    double x = 0, y = 0;
    int rc = parse_kernel_line(path, ++lineno, line, o, &x, &y, err);
    if (rc < 0 || rc > 1) {
      free(line);
      return rc;
    }
    if (!rc) continue;
    if (t->n && x <= t->a[t->n - 1]) {
      free(line);
      return arkcos_fail(err, ARKCOS_EINVAL, "%s:%d: angles must increase (%g after %g on line %d)",
                         path, lineno, x, t->a[t->n - 1], t->line[t->n - 1]);
    }
    if (ktable_push(t, x, y, lineno)) {
      free(line);
      return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", path);
    }
  }
  free(line);
  if (t->n < 2)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s:%d: end of file after %d data line%s: a kernel file needs at least 2 "
                       "lines of `angle K`", path, lineno + 1, t->n, t->n == 1 ? "" : "s");
  return ARKCOS_OK;
}

/* 0, 1, 2, ... (or any run of consecutive integers, three or more): the
 * multipoles of a beam transfer function. */
static int looks_like_multipoles(const ktable *t) {
  if (t->n < 3) return 0;
  for (int i = 0; i < t->n; i++)
    if (t->a[i] != floor(t->a[i]) || (i && t->a[i] != t->a[i - 1] + 1)) return 0;
  return 1;
}

/* The angle column against its unit: a transfer function's multipoles,
 * angles beyond pi (with what the unit probably is). */
static int check_kernel_angles(const char *path, const arkcos_kernel_file_options *o,
                               const ktable *t, arkcos_error *err) {
  const double top = M_PI / unit_radians(o->unit) * (1 + 1e-12);
  int beyond = -1;
  for (int i = 0; i < t->n && beyond < 0; i++)
    if (t->a[i] > top) beyond = i;
  if (looks_like_multipoles(t) && (o->unit == ARKCOS_ANGLE_RAD || beyond >= 0))
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s:%d: the first column runs %g, %g, %g, ... %g in steps of 1: this looks "
                       "like a beam transfer function `l B_l` (multipole, window), not a radial "
                       "profile `angle K`; convert it to K(angle) (a Legendre sum), or, if these "
                       "are angles, give %s deg or arcmin", path, t->line[0], t->a[0], t->a[1],
                       t->a[2], t->a[t->n - 1], unit_switch(o));
  if (beyond < 0) return ARKCOS_OK;
  const double amax = t->a[t->n - 1];
  /* what the unit probably is: degrees up to 180, arcmin beyond */
  const char *guess = o->unit == ARKCOS_ANGLE_RAD ? (amax <= 180 ? "deg" : "arcmin")
                      : o->unit == ARKCOS_ANGLE_DEG ? "arcmin" : NULL;
  char hint[300] = "";
  if (guess)
    snprintf(hint, sizeof hint, ": the angles (up to %g) look like %s (give %s %s)", amax,
             !strcmp(guess, "deg") ? "degrees" : "arcmin", unit_switch(o), guess);
  return arkcos_fail(err, ARKCOS_EINVAL, "%s:%d: angle %g is beyond %s, the angle unit being %s%s",
                     path, t->line[beyond], t->a[beyond], unit_pi(o->unit), unit_word(o->unit), hint);
}

/* K < 0 only when allowed (a wavelet's negative lobes). */
static int check_kernel_values(const char *path, const arkcos_kernel_file_options *o,
                               const ktable *t, arkcos_error *err) {
  if (o->allow_negative) return ARKCOS_OK;
  for (int i = 0; i < t->n; i++)
    if (t->v[i] < 0)
      return arkcos_fail(err, ARKCOS_EINVAL,
                         "%s:%d: K = %g is negative; a kernel with negative lobes (a wavelet) "
                         "needs %s", path, t->line[i], t->v[i],
                         o->allow_negative_name ? o->allow_negative_name
                                                : "negative values to be allowed explicitly");
  return ARKCOS_OK;
}

/* The checked table as a TABLE kernel, angles in radians; errors from the
 * kernel's own checks are prefixed with the file's name. */
static arkcos_kernel *kernel_of_table(const char *path, const arkcos_kernel_file_options *o,
                                      ktable *t, arkcos_error *err) {
  const double f = unit_radians(o->unit);
  for (int i = 0; i < t->n; i++) t->a[i] = fmin(t->a[i] * f, M_PI);
  arkcos_kernel_spec s = {0};
  s.type = ARKCOS_KERNEL_TABLE;
  s.alpha = t->a;
  s.value = t->v;
  s.ntable = t->n;
  s.cutoff = o->cutoff;
  s.cutoff_rel = o->cutoff_rel;
  arkcos_kernel *k = arkcos_kernel_create(&s, err);
  if (!k && err) {
    char msg[sizeof err->msg];
    memcpy(msg, err->msg, sizeof msg);
    arkcos_fail(err, err->code, "%s: %s", path, msg);
  }
  return k;
}

arkcos_kernel *arkcos_kernel_from_file_ex(const char *path, const arkcos_kernel_file_options *o,
                                          arkcos_error *err) {
  const arkcos_kernel_file_options none = {0};
  if (!o) o = &none;
  if (o->unit != ARKCOS_ANGLE_RAD && o->unit != ARKCOS_ANGLE_DEG && o->unit != ARKCOS_ANGLE_ARCMIN) {
    arkcos_fail(err, ARKCOS_EINVAL, "%s: unknown angle unit %d", path, (int)o->unit);
    return NULL;
  }
  FILE *fp = fopen(path, "r");
  if (!fp) {
    arkcos_fail(err, ARKCOS_EINVAL, "%s: cannot read kernel file: %s", path, strerror(errno));
    return NULL;
  }
  ktable t = {0};
  arkcos_kernel *k = NULL;
  if (!read_kernel_lines(fp, path, o, &t, err) && !check_kernel_angles(path, o, &t, err) &&
      !check_kernel_values(path, o, &t, err))
    k = kernel_of_table(path, o, &t, err);
  fclose(fp);
  ktable_free(&t);
  return k;
}

arkcos_kernel *arkcos_kernel_from_file(const char *path, double cutoff, double cutoff_rel,
                                       arkcos_error *err) {
  arkcos_kernel_file_options o = {0};
  o.cutoff = cutoff;
  o.cutoff_rel = cutoff_rel;
  return arkcos_kernel_from_file_ex(path, &o, err);
}

void arkcos_kernel_destroy(arkcos_kernel *k) {
  if (!k) return;
  free(k->spline);
  free(k);
}

double arkcos_kernel_cutoff(const arkcos_kernel *k) { return k->f.cutoff; }
double arkcos_kernel_cutoff_level(const arkcos_kernel *k) { return k->cutoff_rel; }
double arkcos_kernel_value(const arkcos_kernel *k, double alpha) { return arkcos_kfun_alpha(&k->f, alpha); }

/* K_l = 2 pi int f(alpha) P_l(cos alpha) sin(alpha) dalpha, l = 0..lmax, for
 * profile f (normalised); spin 2: K_l^(2) with d^l_22 in place of P_l, the
 * multipliers of E and B for a transported spin-2 convolution
 * (docs/POLARIZATION.md; K_0^(2) = K_1^(2) = 0), d^l_22 by its three-term
 * recurrence in l from d^2_22 = ((1 + c) / 2)^2:
 *   l (l - 1)(l + 3) d^{l+1} = (2l + 1)(l (l + 1) c - 4) d^l - (l + 1)(l^2 - 4) d^{l-1}.
 * Nodes at most a quarter of the shortest wavelength apart so that 20-point
 * rules integrate P_l (d^l_22) to rounding. */
static int legendre(const arkcos_kfun *f, int lmax, int spin, double *kl) {
  if (spin) {
    for (int l = 0; l <= lmax; l++) kl[l] = 0;
    if (lmax < 2) return ARKCOS_OK;
  }
  double *x, *w;
  double step = fmin(M_PI / 64, M_PI / (2.0 * (lmax + 1)));
  int n = quad_nodes(f, f->cutoff, step, &x, &w);
  if (n < 0) return ARKCOS_ENOMEM;
  int nt = 1;
#ifdef _OPENMP
  nt = omp_get_max_threads();
#endif
  double *acc = calloc((size_t)nt * (lmax + 1), sizeof(double));
  if (!acc) {
    free(x);
    free(w);
    return ARKCOS_ENOMEM;
  }
#pragma omp parallel num_threads(nt)
  {
    int t = 0;
#ifdef _OPENMP
    t = omp_get_thread_num();
#endif
    double *a = acc + (size_t)t * (lmax + 1);
#pragma omp for schedule(static)
    for (int i = 0; i < n; i++) {
      double W = 2 * M_PI * w[i] * arkcos_kfun_alpha(f, x[i]) * sin(x[i]);
      if (spin) {
        const double c = cos(x[i]);
        double dm = 0, d = 0.25 * (1 + c) * (1 + c);
        a[2] += W * d;
        for (int l = 2; l < lmax; l++) {
          const double dn = ((2.0 * l + 1) * ((double)l * (l + 1) * c - 4) * d - (l + 1.0) * ((double)l * l - 4) * dm) /
                            ((double)l * (l - 1) * (l + 3));
          dm = d;
          d = dn;
          a[l + 1] += W * d;
        }
        continue;
      }
      double z = cos(x[i]), p0 = 1, p1 = z;
      a[0] += W;
      if (lmax >= 1) a[1] += W * z;
      for (int l = 1; l < lmax; l++) {
        double p2 = ((2 * l + 1) * z * p1 - l * p0) / (l + 1);
        a[l + 1] += W * p2;
        p0 = p1;
        p1 = p2;
      }
    }
  }
  for (int l = 0; l <= lmax; l++) {
    double s = 0;
    for (int t = 0; t < nt; t++) s += acc[(size_t)t * (lmax + 1) + l];
    kl[l] = s;
  }
  free(acc);
  free(x);
  free(w);
  return ARKCOS_OK;
}

int arkcos_kfun_legendre(const arkcos_kfun *kf, int lmax, int spin, double *kl) {
  return legendre(kf, lmax, spin, kl);
}

int arkcos_kernel_legendre(const arkcos_kernel *k, int lmax, double *kl, arkcos_error *err) {
  if (lmax < 0) return arkcos_fail(err, ARKCOS_EINVAL, "kernel: lmax must be >= 0");
  if (legendre(&k->f, lmax, 0, kl)) return arkcos_fail(err, ARKCOS_ENOMEM, "kernel: out of memory");
  return ARKCOS_OK;
}

double arkcos_kernel_truncation_rms(const arkcos_kernel *k, const double *cl, int lmax) {
  if (k->f.type == ARKCOS_KERNEL_TOPHAT || k->f.cutoff >= k->extent) return 0;
  arkcos_kfun full = k->f;
  full.cutoff = k->extent;
  full.cut_d2 = 4 * pow(sin(0.5 * k->extent), 2);
  full.norm = 1;
  full.norm = 1 / integral(&full);
  double *a = malloc(sizeof(double) * (lmax + 1)), *b = malloc(sizeof(double) * (lmax + 1));
  double s2 = NAN;
  if (a && b && !legendre(&k->f, lmax, 0, a) && !legendre(&full, lmax, 0, b)) {
    s2 = 0;
    for (int l = 0; l <= lmax; l++) s2 += (2 * l + 1) / (4 * M_PI) * pow(b[l] - a[l], 2) * cl[l];
  }
  free(a);
  free(b);
  return sqrt(s2);
}
