/*
 * bluestein.c -- real DFTs of any even length n through power-of-two
 * complex FFTs (Bluestein's chirp-z algorithm), for the rings of the polar
 * caps.
 *
 * Why: a HEALPix map has rings of nside - 1 distinct lengths 4 i in each
 * cap, most of them with awkward prime factors, and FFTW's planner takes
 * 1-4 ms for each even with FFTW_ESTIMATE (3.9 s for the 511 lengths at
 * nside 512, growing faster than nside): more than the whole smoothing on a
 * first call. Bluestein's algorithm needs FFTs of a few power-of-two sizes
 * only, which FFTW plans in microseconds. The chirp and its spectrum are
 * computed by each transform in its work buffer (prepare: one more FFT of
 * length M), not held per length.
 *
 * The real DFT of length n = 2 h comes from the complex DFT of length h of
 * z_k = x_2k + i x_2k+1 (even and odd samples; the usual split), and that
 * complex DFT Y_m = sum_k z_k e^{-2 pi i m k / h} from the chirp
 * c_j = e^{-i pi j^2 / h} (j^2 reduced modulo 2 h exactly, in integers):
 * m k = (m^2 + k^2 - (m - k)^2) / 2 gives
 *   Y_m = c_m sum_k (z_k c_k) conj(c_(m-k)),
 * a linear convolution of length 2 h - 1, done circularly on M >= 2 h - 1
 * points (a power of two) with FFTW. The inverse DFT (sign +) uses the
 * conjugate chirp, whose spectrum is the stored one conjugated and mirrored.
 * Rounding: about three FFTs' worth, a few times FFTW's own for the same
 * length (tests/test_engine.c against FFTW: 9.4e-16 r2c, 2.0e-15 c2r, max relative).
 * Scaling as FFTW's: r2c unnormalised, c2r unnormalised (n x).
 */
#include <complex.h> /* keeps fftw_complex a C99 type; arithmetic is done by hand */
#include <fftw3.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/plan_internal.h"

static fftw_plan arkcos_fftw_c2c(int64_t n, int sign) { return (fftw_plan)arkcos_fftw_c2c_plan(n, sign); }

struct arkcos_bluestein {
  int64_t n, h, M;
  int64_t S;          /* the roots' table split: W^q = hi[q / S] lo[q % S] */
  fftw_plan fwd, bwd; /* complex FFTs of length M, in place (shared, never freed) */
};

/* What a transform computes in its work buffer, not held by the plan (a
 * cap's lengths are all distinct: their chirps and spectra took 16 (M + n)
 * bytes each, 317 MB at nside 2048 and 1.3 GB at 4096). Doubles, in order:
 * the tag, w (2 M), B (2 M), Y (2 h + 2), c (2 h), tw (2 h + 2), lo (2 S),
 * hi (2 (2 h / S + 1)). A new work buffer must be zeroed (no tag). */
enum { TAG = 8 }; /* work[0 .. 7] (64 bytes, the FFTs keep their alignment): n and M of what prepare left there, so a
                   * ring's mirror (the same length, next in the thread)
                   * reuses it */
static size_t off_B(const arkcos_bluestein *b) { return TAG + 2 * (size_t)b->M; }
static size_t off_Y(const arkcos_bluestein *b) { return TAG + 4 * (size_t)b->M; }
static size_t off_c(const arkcos_bluestein *b) { return off_Y(b) + 2 * (size_t)b->h + 2; }
static size_t off_tw(const arkcos_bluestein *b) { return off_c(b) + 2 * (size_t)b->h; }
static size_t off_lo(const arkcos_bluestein *b) { return off_tw(b) + 2 * (size_t)b->h + 2; }
static size_t off_hi(const arkcos_bluestein *b) { return off_lo(b) + 2 * (size_t)b->S; }

size_t arkcos_bluestein_work(const arkcos_bluestein *b) {
  return off_hi(b) + 2 * (size_t)(2 * b->h / b->S + 1) + 8;
}

void arkcos_bluestein_destroy(arkcos_bluestein *b) { free(b); }

/* Thread-safe: the FFTs come from cpu.c's cache (arkcos_fftw_pow2), which
 * takes FFTW's planner lock. */
arkcos_bluestein *arkcos_bluestein_create(int64_t n) {
  if (n < 2 || n % 2) return NULL;
  arkcos_bluestein *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->n = n;
  b->h = n / 2;
  b->M = 1;
  while (b->M < 2 * b->h - 1) b->M *= 2;
  b->S = 1;
  while (b->S * b->S < 2 * b->h) b->S++;
  b->fwd = arkcos_fftw_c2c(b->M, FFTW_FORWARD);
  b->bwd = arkcos_fftw_c2c(b->M, FFTW_BACKWARD);
  if (!b->fwd || !b->bwd) {
    arkcos_bluestein_destroy(b);
    return NULL;
  }
  return b;
}

/* The chirp c_j = W^(j^2 mod 2 h), W = e^{-i pi / h} (j^2 reduced exactly,
 * in integers), the split's twiddles tw_m = e^{-2 pi i m / n} = W^m, and
 * B, the FFT of b_j = conj(c_|j|) on |j| < h (wrapped) over M, into the
 * work buffer. Each power of W is one product of two table entries
 * computed by sin and cos (sqrt(2 h) of each), so c and tw round as the
 * direct sin and cos do, to about 2 units. */
static void prepare(const arkcos_bluestein *b, double *work) {
  const int64_t h = b->h, M = b->M, S = b->S, nh = 2 * h / S + 1;
  if (work[0] == (double)b->n && work[1] == (double)M) return; /* there already */
  work[0] = work[1] = 0;
  double *lo = work + off_lo(b), *hi = work + off_hi(b), *c = work + off_c(b), *tw = work + off_tw(b);
  double *B = work + off_B(b);
  for (int64_t k = 0; k < S; k++) {
    const double a = M_PI * (double)k / (double)h;
    lo[2 * k] = cos(a);
    lo[2 * k + 1] = -sin(a);
  }
  for (int64_t k = 0; k < nh; k++) {
    const double a = M_PI * (double)(k * S) / (double)h;
    hi[2 * k] = cos(a);
    hi[2 * k + 1] = -sin(a);
  }
#define W_POW(q, re, im)                                                      \
  do {                                                                        \
    const double *u_ = hi + 2 * ((q) / S), *v_ = lo + 2 * ((q) % S);          \
    re = u_[0] * v_[0] - u_[1] * v_[1];                                       \
    im = u_[0] * v_[1] + u_[1] * v_[0];                                       \
  } while (0)
  int64_t q = 0; /* j^2 mod 2 h, stepped by 2 j + 1 */
  for (int64_t j = 0; j < h; j++) {
    W_POW(q, c[2 * j], c[2 * j + 1]);
    q += 2 * j + 1;
    q %= 2 * h;
  }
  for (int64_t m = 0; m <= h; m++) W_POW(m, tw[2 * m], tw[2 * m + 1]);
#undef W_POW
  memset(B, 0, sizeof(double) * 2 * (size_t)M);
  const double inv = 1.0 / (double)M;
  for (int64_t j = 0; j < h; j++) { /* conj(c_j) at j and M - j, with the 1 / M */
    B[2 * j] = inv * c[2 * j];
    B[2 * j + 1] = -inv * c[2 * j + 1];
    if (j > 0) {
      B[2 * (M - j)] = B[2 * j];
      B[2 * (M - j) + 1] = B[2 * j + 1];
    }
  }
  fftw_execute_dft(b->fwd, (fftw_complex *)B, (fftw_complex *)B);
  work[0] = (double)b->n;
  work[1] = (double)M;
}

/* Complex DFT of length h of z (h (re, im) pairs) into y, sign -1 (dir 0)
 * or +1 (dir 1); work as prepare left it (w, its first 2 M doubles, free). */
static void czt(const arkcos_bluestein *b, const double *z, double *y, int dir, double *work) {
  const int64_t h = b->h, M = b->M;
  double *w = work + TAG;
  const double *c = work + off_c(b), *B = work + off_B(b);
  const double sg = dir ? -1.0 : 1.0; /* dir 1: the conjugate chirp */
  for (int64_t k = 0; k < h; k++) {
    const double cr = c[2 * k], ci = sg * c[2 * k + 1], zr = z[2 * k], zi = z[2 * k + 1];
    w[2 * k] = zr * cr - zi * ci;
    w[2 * k + 1] = zr * ci + zi * cr;
  }
  memset(w + 2 * h, 0, sizeof(double) * 2 * (size_t)(M - h));
  fftw_execute_dft(b->fwd, (fftw_complex *)w, (fftw_complex *)w);
  if (!dir) {
    for (int64_t k = 0; k < M; k++) {
      const double ar = w[2 * k], ai = w[2 * k + 1], br = B[2 * k], bi = B[2 * k + 1];
      w[2 * k] = ar * br - ai * bi;
      w[2 * k + 1] = ar * bi + ai * br;
    }
  } else { /* the spectrum of conj(b) is conj(B) at -k */
    for (int64_t k = 0; k < M; k++) {
      const int64_t r = k ? M - k : 0;
      const double ar = w[2 * k], ai = w[2 * k + 1], br = B[2 * r], bi = -B[2 * r + 1];
      w[2 * k] = ar * br - ai * bi;
      w[2 * k + 1] = ar * bi + ai * br;
    }
  }
  fftw_execute_dft(b->bwd, (fftw_complex *)w, (fftw_complex *)w);
  for (int64_t m = 0; m < h; m++) {
    const double cr = c[2 * m], ci = sg * c[2 * m + 1], ar = w[2 * m], ai = w[2 * m + 1];
    y[2 * m] = ar * cr - ai * ci;
    y[2 * m + 1] = ar * ci + ai * cr;
  }
}

/* X[m] = sum_k x_k e^{-2 pi i m k / n}, m <= n / 2, as (re, im) pairs
 * (FFTW's r2c); work: arkcos_bluestein_work doubles, aligned. */
void arkcos_bluestein_r2c(const arkcos_bluestein *b, const double *x, double *X, double *work) {
  const int64_t h = b->h;
  double *Y = work + off_Y(b);
  const double *tw = work + off_tw(b);
  prepare(b, work);
  czt(b, x, Y, 0, work); /* x read as h complex values: z_k = x_2k + i x_2k+1 */
  for (int64_t m = 0; m <= h; m++) {
    const int64_t a = m % h, c = (h - m) % h;
    /* E = (Y_a + conj(Y_c)) / 2, O = (Y_a - conj(Y_c)) / 2i */
    const double er = 0.5 * (Y[2 * a] + Y[2 * c]), ei = 0.5 * (Y[2 * a + 1] - Y[2 * c + 1]);
    const double orr = 0.5 * (Y[2 * a + 1] + Y[2 * c + 1]), oi = -0.5 * (Y[2 * a] - Y[2 * c]);
    const double tr = tw[2 * m], ti = tw[2 * m + 1];
    X[2 * m] = er + orr * tr - oi * ti;
    X[2 * m + 1] = ei + orr * ti + oi * tr;
  }
}

/* x_k = sum_m X_m e^{+2 pi i m k / n} over all n modes (Hermitian), from
 * m <= n / 2 (FFTW's c2r, unnormalised); X is not modified. */
void arkcos_bluestein_c2r(const arkcos_bluestein *b, const double *X, double *x, double *work) {
  const int64_t h = b->h;
  double *Z = work + off_Y(b);
  const double *tw = work + off_tw(b);
  prepare(b, work);
  for (int64_t m = 0; m < h; m++) {
    /* X_m = E_m + t_m O_m, X_(m+h) = conj(X_(h-m)) = E_m - t_m O_m */
    /* the imaginary parts of X_0 and X_h are ignored, as FFTW does */
    const double xr = X[2 * m], xi = m ? X[2 * m + 1] : 0, yr = X[2 * (h - m)], yi = m ? -X[2 * (h - m) + 1] : 0;
    const double er = 0.5 * (xr + yr), ei = 0.5 * (xi + yi);
    const double dr = 0.5 * (xr - yr), di = 0.5 * (xi - yi);
    const double tr = tw[2 * m], ti = -tw[2 * m + 1]; /* 1 / t_m = conj(t_m) */
    const double orr = dr * tr - di * ti, oi = dr * ti + di * tr;
    Z[2 * m] = 2 * (er - oi); /* Z = E + i O, doubled: c2r is n x, the inverse DFT of length h gives h z */
    Z[2 * m + 1] = 2 * (ei + orr);
  }
  czt(b, Z, x, 1, work); /* writes z_k = x_2k + i x_2k+1 */
}
