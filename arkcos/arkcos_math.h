/*
 * arkcos_math.h -- math shared by the CPU and GPU backends: squared chord
 * distance, kernel evaluation, the azimuth window of a ring pair and the
 * super-Nyquist folding rule. Everything is static inline and compiles as
 * __host__ __device__ under nvcc, so the CPU tests exercise the code the
 * GPU runs. Private to the engine.
 */
#ifndef ARKCOS_MATH_H
#define ARKCOS_MATH_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define ARKCOS_HD __host__ __device__
#else
#define ARKCOS_HD
#endif

#ifndef ARKCOS_PI
#define ARKCOS_PI 3.14159265358979323846
#endif

#define ARKCOS_KPOLY_MAX 24

/* Chebyshev series sum_k c[k] T_k(x), k < n (Clenshaw) */
ARKCOS_HD static inline double arkcos_cheb(const double *c, int n, double x) {
  double b1 = 0, b2 = 0;
  for (int k = n - 1; k >= 1; k--) {
    const double b0 = 2 * x * b1 - b2 + c[k];
    b2 = b1;
    b1 = b0;
  }
  return x * b1 - b2 + c[0];
}

/* Kernel profile in a form a device can evaluate: no pointers to host
 * structures, only an optional coefficient array (copied to the device). */
typedef struct arkcos_kfun {
  int type;        /* arkcos_kernel_type */
  double norm;     /* factor giving unit integral over the sphere */
  double inv2s2;   /* GAUSSIAN: 1 / (2 sigma^2) */
  double cutoff;   /* radians */
  double cut_d2;   /* 4 sin^2(cutoff / 2): squared chord of the cutoff */
  int nknots;      /* TABLE: natural cubic spline knots */
  const double *spline; /* TABLE: 5 * nknots values: x, a, b, c, d */
  /* GAUSSIAN times a smooth factor (healpy's Gaussian beam, the heat
   * kernel): sum_k poly[k] T_k(x), x = 2 alpha^2 poly_s - 1 clamped to 1;
   * npoly = 0 for the plain Gaussian */
  int npoly;
  double poly_s;
  double poly[ARKCOS_KPOLY_MAX];
} arkcos_kfun;

/* Squared chord distance 2 (1 - cos alpha) between (t1, p) and (t2, p + dphi),
 * written with half angles (haversine): exact, no arccos, no cancellation
 * for small distances. Equals paper Eq. (9)'s expression
 * 2[sin^2((t+t0)/2) + sin^2((t-t0)/2)] - 2[sin^2((t+t0)/2) - sin^2((t-t0)/2)] cos(dphi).
 * sdt2 = sin^2((t1 - t2)/2), ss = sin t1 sin t2. */
ARKCOS_HD static inline double arkcos_chord2(double sdt2, double ss, double dphi) {
  double s = sin(0.5 * dphi);
  return 4.0 * (sdt2 + ss * s * s);
}

/* Angle from squared chord distance: 2 asin(h), h = sqrt(d2) / 2; below
 * h = 0.01 (compact kernels) its Taylor series to h^7, whose first omitted
 * term is below 3.1e-18 h, cheaper than asin. */
ARKCOS_HD static inline double arkcos_alpha_of_chord2(double d2) {
  double h = 0.5 * sqrt(d2);
  if (h < 0.01) {
    const double h2 = h * h;
    return 2.0 * h * (1.0 + h2 * (1.0 / 6.0 + h2 * (3.0 / 40.0 + h2 * (15.0 / 336.0))));
  }
  return 2.0 * asin(h < 1.0 ? h : 1.0);
}

/* Spline segment containing x (binary search over knots). */
ARKCOS_HD static inline double arkcos_spline_eval(const double *sp, int n, double x) {
  const double *xs = sp;
  int lo = 0, hi = n - 1;
  while (hi - lo > 1) {
    int mid = (lo + hi) >> 1;
    if (xs[mid] <= x) lo = mid; else hi = mid;
  }
  double t = x - xs[lo];
  const double *a = sp + n, *b = sp + 2 * n, *c = sp + 3 * n, *d = sp + 4 * n;
  return a[lo] + t * (b[lo] + t * (c[lo] + t * d[lo]));
}

/* Un-normalised-profile times norm at angle alpha; 0 beyond the cutoff. */
ARKCOS_HD static inline double arkcos_kfun_alpha(const arkcos_kfun *k, double alpha) {
  if (alpha > k->cutoff) return 0.0;
  switch (k->type) {
    case 0: {
      const double g = k->norm * exp(-alpha * alpha * k->inv2s2);
      if (!k->npoly) return g;
      const double x = 2 * alpha * alpha * k->poly_s - 1;
      return g * arkcos_cheb(k->poly, k->npoly, x < 1 ? x : 1);
    }
    case 1: return k->norm;
    default: return k->norm * arkcos_spline_eval(k->spline, k->nknots, alpha);
  }
}

/* Kernel value at squared chord distance d2 (the engine's hot path). */
ARKCOS_HD static inline double arkcos_kfun_d2(const arkcos_kfun *k, double d2) {
  if (d2 > k->cut_d2) return 0.0;
  return arkcos_kfun_alpha(k, arkcos_alpha_of_chord2(d2));
}

/* Half-width in azimuth of the kernel's support on a ring pair: the largest
 * |dphi| with chord2 <= cut_d2, or a value >= pi when the whole ring is
 * inside, or -1 when none of it is. */
ARKCOS_HD static inline double arkcos_dphi_window(const arkcos_kfun *k, double sdt2,
                                                  double ss) {
  double room = 0.25 * k->cut_d2 - sdt2; /* sin^2(c/2) - sin^2(dtheta/2) */
  if (room < 0) return -1.0;
  if (ss <= 0 || room >= ss) return 4.0; /* whole ring */
  return 2.0 * asin(sqrt(room / ss));
}

/* Range [*n0, *n1] of kernel-grid samples n (azimuth offset + 2 pi n / L)
 * that can be inside the window, with a one-sample margin; the count is
 * capped at L (every sample). Returns the count. */
ARKCOS_HD static inline int64_t arkcos_sample_range(double half, double offset,
                                                    int64_t L, int64_t *n0, int64_t *n1) {
  if (half < 0) { *n0 = 0; *n1 = -1; return 0; }
  if (half >= ARKCOS_PI) { *n0 = 0; *n1 = L - 1; return L; }
  double scale = (double)L / (2.0 * ARKCOS_PI);
  int64_t a = (int64_t)floor((-half - offset) * scale) - 1;
  int64_t b = (int64_t)ceil((half - offset) * scale) + 1;
  if (b - a + 1 >= L) { *n0 = 0; *n1 = L - 1; return L; }
  *n0 = a; *n1 = b;
  return b - a + 1;
}

/* Index of sample n on a grid of length L (n may be negative). */
ARKCOS_HD static inline int64_t arkcos_wrap(int64_t n, int64_t L) {
  int64_t r = n % L;
  return r < 0 ? r + L : r;
}

/* Folding rule of the enhanced mode: a kernel-grid mode m in [0, L/2] of an
 * output ring with N pixels lands on the half-spectrum bin `*direct`
 * (or -1) with its value and on bin `*mirror` (or -1) with its complex
 * conjugate: the -m mode, whose alias is N - (m mod N). The Nyquist mode
 * m = L/2 of an even grid counts half on each side (*w = 0.5). */
ARKCOS_HD static inline void arkcos_fold(int64_t m, int64_t N, int64_t L,
                                         int64_t *direct, int64_t *mirror, double *w) {
  int64_t r = m % N;
  *w = (2 * m == L) ? 0.5 : 1.0;
  *direct = (2 * r <= N) ? r : -1;
  if (m == 0) { *mirror = -1; return; }
  *mirror = (r == 0 || 2 * r >= N) ? (N - r) % N : -1;
}

/* Gather form of arkcos_fold, for a backend in which one thread owns an
 * output bin (no atomics): the t-th (t = 0, 1, 2, ...) kernel-grid mode m that
 * arkcos_fold sends to half-spectrum bin d (0 <= d <= N/2) of a ring with N
 * pixels; *conj = 1 where the mode lands as its complex conjugate. The
 * sequence is arkcos_fold's scatter order: m never decreases (so a caller
 * stops at the first m >= L/2 + 1), and where one m lands twice on the same
 * bin (d = 0 or d = N/2) its value comes before its conjugate. For d > 0:
 * m = d + (t/2) N (value) and (t/2 + 1) N - d (conjugate) alternate; for
 * d = 0: m = 0, then N, N*, 2N, 2N*, ... The weight is arkcos_fold's (0.5 at
 * m = L/2 of an even grid). */
ARKCOS_HD static inline int64_t arkcos_fold_source(int64_t d, int64_t N, int64_t t, int *conj) {
  if (d == 0) {
    *conj = t > 0 && (t & 1) == 0;
    return ((t + 1) >> 1) * N;
  }
  *conj = (int)(t & 1);
  return (t & 1) ? ((t >> 1) + 1) * N - d : (t >> 1) * N + d;
}


/* Spin-2 transport factor w = e^{2i (beta_pq - beta_qp)} from pixel q at
 * (tq, phi_p + dphi) to pixel p at (tp, phi_p), healpy's Q/U convention
 * (docs/POLARIZATION.md): A and B are the bearings' unnormalised directions
 * in half-angle form, w = (A conj B)^2 / (|A|^2 |B|^2); w = 1 where the
 * great circle is undefined (p = q or antipodal). Sets *wr, *wi. */
ARKCOS_HD static inline void arkcos_spin2_transport(double tp, double tq, double dphi, double *wr,
                                                    double *wi) {
  const double stp = sin(tp), ctp = cos(tp), stq = sin(tq), ctq = cos(tq);
  const double sh = sin(0.5 * dphi), sd = sin(dphi), s2 = 2.0 * sh * sh;
  const double ar = sin(tq - tp) - ctp * stq * s2, ai = stq * sd;
  const double br = -sin(tq - tp) - stp * ctq * s2, bi = -stp * sd;
  const double zr = ar * br + ai * bi, zi = ai * br - ar * bi; /* A conj(B) */
  const double n2 = zr * zr + zi * zi;
  if (!(n2 > 0)) { *wr = 1.0; *wi = 0.0; return; }
  *wr = (zr * zr - zi * zi) / n2;
  *wi = 2.0 * zr * zi / n2;
}

#endif
