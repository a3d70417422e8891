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
 * only, which FFTW plans in microseconds, plus a chirp and its spectrum per
 * length, computed once per plan in O(M log M).
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
  double *chirp;      /* c_j = e^{-i pi j^2 / h}, j < h: (re, im) pairs */
  double *bspec;      /* FFT_M of b_j = conj(c_|j|) on |j| < h (wrapped), over M */
  double *tw;         /* e^{-2 pi i m / n}, m <= h / 2: the split's twiddles */
  fftw_plan fwd, bwd; /* complex FFTs of length M, in place (shared, never freed) */
};

size_t arkcos_bluestein_work(const arkcos_bluestein *b) { return 2 * (size_t)b->M + 2 * (size_t)b->h + 8; }

void arkcos_bluestein_destroy(arkcos_bluestein *b) {
  if (!b) return;
  fftw_free(b->chirp);
  fftw_free(b->bspec);
  fftw_free(b->tw);
  free(b);
}

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
  const int64_t h = b->h, M = b->M;
  b->chirp = fftw_malloc(sizeof(double) * 2 * (size_t)h);
  b->bspec = fftw_malloc(sizeof(double) * 2 * (size_t)M);
  b->tw = fftw_malloc(sizeof(double) * 2 * (size_t)(h + 1));
  if (!b->chirp || !b->bspec || !b->tw) {
    arkcos_bluestein_destroy(b);
    return NULL;
  }
  for (int64_t j = 0; j < h; j++) {
    const int64_t q = (int64_t)(((unsigned __int128)j * (unsigned __int128)j) % (unsigned __int128)(2 * h));
    const double a = M_PI * (double)q / (double)h;
    b->chirp[2 * j] = cos(a);
    b->chirp[2 * j + 1] = -sin(a);
  }
  for (int64_t m = 0; m <= h; m++) {
    const double a = 2 * M_PI * (double)m / (double)n;
    b->tw[2 * m] = cos(a);
    b->tw[2 * m + 1] = -sin(a);
  }
  memset(b->bspec, 0, sizeof(double) * 2 * (size_t)M);
  const double inv = 1.0 / (double)M;
  for (int64_t j = 0; j < h; j++) { /* conj(c_j) at j and M - j, with the 1 / M */
    b->bspec[2 * j] = inv * b->chirp[2 * j];
    b->bspec[2 * j + 1] = -inv * b->chirp[2 * j + 1];
    if (j > 0) {
      b->bspec[2 * (M - j)] = b->bspec[2 * j];
      b->bspec[2 * (M - j) + 1] = b->bspec[2 * j + 1];
    }
  }
  b->fwd = arkcos_fftw_c2c(M, FFTW_FORWARD);
  b->bwd = arkcos_fftw_c2c(M, FFTW_BACKWARD);
  if (!b->fwd || !b->bwd) {
    arkcos_bluestein_destroy(b);
    return NULL;
  }
  fftw_execute_dft(b->fwd, (fftw_complex *)b->bspec, (fftw_complex *)b->bspec);
  return b;
}

/* Complex DFT of length h of z (h (re, im) pairs) into y, sign -1 (dir 0)
 * or +1 (dir 1); w: 2 M doubles, aligned as fftw_malloc's. */
static void czt(const arkcos_bluestein *b, const double *z, double *y, int dir, double *w) {
  const int64_t h = b->h, M = b->M;
  const double *c = b->chirp, *B = b->bspec;
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
  double *w = work, *Y = work + 2 * b->M;
  czt(b, x, Y, 0, w); /* x read as h complex values: z_k = x_2k + i x_2k+1 */
  for (int64_t m = 0; m <= h; m++) {
    const int64_t a = m % h, c = (h - m) % h;
    /* E = (Y_a + conj(Y_c)) / 2, O = (Y_a - conj(Y_c)) / 2i */
    const double er = 0.5 * (Y[2 * a] + Y[2 * c]), ei = 0.5 * (Y[2 * a + 1] - Y[2 * c + 1]);
    const double orr = 0.5 * (Y[2 * a + 1] + Y[2 * c + 1]), oi = -0.5 * (Y[2 * a] - Y[2 * c]);
    const double tr = b->tw[2 * m], ti = b->tw[2 * m + 1];
    X[2 * m] = er + orr * tr - oi * ti;
    X[2 * m + 1] = ei + orr * ti + oi * tr;
  }
}

/* x_k = sum_m X_m e^{+2 pi i m k / n} over all n modes (Hermitian), from
 * m <= n / 2 (FFTW's c2r, unnormalised); X is not modified. */
void arkcos_bluestein_c2r(const arkcos_bluestein *b, const double *X, double *x, double *work) {
  const int64_t h = b->h;
  double *w = work, *Z = work + 2 * b->M;
  for (int64_t m = 0; m < h; m++) {
    /* X_m = E_m + t_m O_m, X_(m+h) = conj(X_(h-m)) = E_m - t_m O_m */
    /* the imaginary parts of X_0 and X_h are ignored, as FFTW does */
    const double xr = X[2 * m], xi = m ? X[2 * m + 1] : 0, yr = X[2 * (h - m)], yi = m ? -X[2 * (h - m) + 1] : 0;
    const double er = 0.5 * (xr + yr), ei = 0.5 * (xi + yi);
    const double dr = 0.5 * (xr - yr), di = 0.5 * (xi - yi);
    const double tr = b->tw[2 * m], ti = -b->tw[2 * m + 1]; /* 1 / t_m = conj(t_m) */
    const double orr = dr * tr - di * ti, oi = dr * ti + di * tr;
    Z[2 * m] = 2 * (er - oi); /* Z = E + i O, doubled: c2r is n x, the inverse DFT of length h gives h z */
    Z[2 * m + 1] = 2 * (ei + orr);
  }
  czt(b, Z, x, 1, w); /* writes z_k = x_2k + i x_2k+1 */
}
