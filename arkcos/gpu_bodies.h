/*
 * gpu_bodies.h -- the device side of the CUDA backend (gpu.cu): the tables
 * the kernels read and the body of every kernel, written as a function of
 * explicit block and thread indices. Under nvcc the bodies are
 * __host__ __device__ and gpu.cu launches each through a thin __global__
 * wrapper; under a plain C++ compiler (ARKCOS_HD empty) they are ordinary
 * host functions, so that a host emulation of the GPU pipeline
 * (tests/test_gpu_emul.cpp) runs the code the device runs.
 *
 * Everything is in an unnamed namespace: private to the file including it.
 */
#ifndef ARKCOS_GPU_BODIES_H
#define ARKCOS_GPU_BODIES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "arkcos/arkcos_math.h"

#ifdef __CUDACC__
#include <vector_types.h> /* double2, float2 */
#endif

namespace {

/* ---------------------------------------------------- launch constants */

const int TPB = 256;              /* threads per block, element-wise kernels */
const int RTPB = 128;             /* threads per block, reduction */
const int RESEED = 8;             /* direct DFT: exact twiddle every RESEED terms */
const int DTPB = 128;             /* threads per block, direct pairs (one row each) */
const int DRESEED = 8;            /* direct pairs: exact sin(dphi / 2) every DRESEED pixels */

/* ----------------------------------------------------- precision traits */

/* cx<R>::T: the complex type of precision R, cuFFT's layout (x real, y
 * imaginary). A host build has no CUDA vector types: a struct of the same
 * size and alignment stands in. */
template <class R> struct cx;
#ifdef __CUDACC__
template <> struct cx<double> { typedef double2 T; };
template <> struct cx<float> { typedef float2 T; };
#else
struct alignas(16) host_double2 { double x, y; };
struct alignas(8) host_float2 { float x, y; };
template <> struct cx<double> { typedef host_double2 T; };
template <> struct cx<float> { typedef host_float2 T; };
#endif

/* ------------------------------------------------- tables for the device */

/* Ring, task and ring-pair descriptions as the kernels see them (device
 * pointers; host pointers in a host emulation of the kernels). A pair is an
 * (output task, input ring j) with kernel samples n0 .. n0 + cnt - 1; kind 1:
 * dense (kernel grid + FFT), ord = its index among the dense pairs; kind 0:
 * sparse (direct DFT), ord = offset of its samples among the sparse ones. */
struct dtables {
  const int64_t *nph, *ofs, *oofs; /* per ring: length, map offset, ospec offset */
  const int64_t *pofs;             /* per ring: offset in the FFT layout of the map */
  const double *w, *phi0;          /* per ring: pixel weight, first azimuth */
  const int *mirror;               /* per ring: mirror ring or -1 */
  const unsigned char *nfwd;       /* per ring: 1 if a Fourier pair reads its spectrum */
  const unsigned char *ninv;       /* per ring: 1 if a Fourier pair writes it (its c2r runs) */
  const int *task;                 /* per task: first ring */
  const int64_t *tp;               /* per task: first pair (ntasks + 1) */
  const int *pj, *pcnt;            /* per pair: input ring, sample count */
  const unsigned char *pkind;
  const int64_t *pn0, *psoff, *pord; /* first sample, sample prefix (P + 1), ord */
  const double *psdt2, *pss, *pdelta; /* sin^2(dtheta/2), sin t sin t', azimuth offset */
  /* Direct pairs (exact plans: pairs with a ring off the kernel grid,
   * pairs_direct.c's sums with every weight computed where it is used). A
   * direct task is an output ring (and its mirror) with its direct pairs;
   * with 4 lanes, row a serves output pixels a + r n_i / 4, r < 4. */
  const int *dti, *dti2, *dlanes;  /* per direct task: ring, mirror ring or -1, lanes (4 or 1) */
  const int64_t *drows, *dp;       /* rows (n_i / lanes); first pair (ndt + 1) */
  const unsigned char *dfour;      /* 1: the map holds the ring's Fourier part; 0: start from 0 */
  const int *qj, *qjm;             /* per direct pair: input ring, the mirror's input ring or -1 */
  const double *qsdt2, *qss, *qd0; /* sin^2(dtheta/2), sin t sin t', phi0_i - phi0_j */
  const double *qc0, *qhw;         /* window centre of row 0 and half-width, input pixels */
  const int *dftf, *dfti;          /* rings whose r2c / c2r is a direct DFT (body_dft_*) */
  const int *btask;                /* per thread block of k_direct: direct task, first row */
  const int64_t *brow;
};

/* One block of output tasks [ta, tb) and pairs [pa, pb) (a block may start
 * or, when it holds one task only, end inside a task's pairs) with its
 * pieces of the arena. */
struct blockp {
  int64_t ta, tb, pa, pb;
  int64_t f0, nf;    /* dense pairs: first ord, count */
  int64_t d0, nd;    /* sparse samples: first offset, count */
  int64_t s0, ns;    /* all samples: first prefix, count */
  size_t acc, hspec, grid, dsamp, end; /* byte offsets in the arena */
  void *acc_p, *hspec_p, *grid_p, *dsamp_p;
};

/* ------------------------------------------------------- device kernels */
/* Each kernel is a __host__ __device__ body with explicit block and thread
 * indices and a thin __global__ wrapper, so that the index arithmetic can be
 * exercised on a host too. No body synchronises threads. */

ARKCOS_HD inline int64_t mulmod_L(int64_t a, int64_t b, int64_t L, double invL) {
  /* (a b) mod L for 0 <= a, b < L <= 2^23: the product (< 2^46) and the
   * quotient are exact in double up to one unit, corrected below */
  int64_t prod = a * b;
  int64_t k = (int64_t)((double)prod * invL);
  int64_t r = prod - k * L;
  if (r < 0) r += L;
  else if (r >= L) r -= L;
  return r;
}

/* ring r times its pixel weight, as the CPU's (R)(w * in), from the map into
 * the FFT layout (the same buffer and offsets unless some ring starts at an
 * odd offset: cuFFT wants 16-byte aligned rows) */
template <class R>
ARKCOS_HD inline void body_weight(const R *map, R *fmap, const dtables &t, int64_t r, int tx, int bd) {
  if (!t.nfwd[r]) return; /* no Fourier pair reads it (an exact plan's polar caps) */
  const int64_t N = t.nph[r], o = t.ofs[r], po = t.pofs[r];
  const double w = t.w[r];
  for (int64_t k = tx; k < N; k += bd) fmap[po + k] = (R)(w * (double)map[o + k]);
}

/* ring r from the FFT layout back into the map (padded layouts only) */
template <class R>
ARKCOS_HD inline void body_unpack(R *map, const R *fmap, const dtables &t, int64_t r, int tx, int bd) {
  if (!t.ninv[r]) return; /* no c2r wrote it: the direct pairs (or a zero range) write it in the map */
  const int64_t N = t.nph[r], o = t.ofs[r], po = t.pofs[r];
  for (int64_t k = tx; k < N; k += bd) map[o + k] = fmap[po + k];
}

/* modes above a ring's Nyquist frequency: periodic extension (enhanced),
 * or phase rotation of the ring onto phi = 0 with half weight on the Nyquist
 * mode and zero padding (paper, Eq. 8). Enhanced reads only m <= N/2 and
 * writes only m > N/2, so threads never race. */
template <class R>
ARKCOS_HD inline void body_extend(typename cx<R>::T *spec, const dtables &t, int64_t nm, int64_t nmp,
                                  int paper, int64_t r, int tx, int bd) {
  typedef typename cx<R>::T C;
  if (!t.nfwd[r]) return;
  const int64_t N = t.nph[r];
  const double phi0 = t.phi0[r];
  C *sp = spec + r * nmp;
  for (int64_t m = tx; m < nm; m += bd) {
    if (!paper) {
      if (2 * m <= N) continue;
      const int64_t q = m % N;
      C v;
      if (2 * q <= N) {
        v = sp[q];
      } else {
        v = sp[N - q];
        v.y = -v.y;
      }
      sp[m] = v;
    } else if (2 * m <= N) {
      double c = cos((double)m * phi0), sn = -sin((double)m * phi0);
      double re = sp[m].x, im = sp[m].y, f = (2 * m == N) ? 0.5 : 1.0;
      sp[m].x = (R)(f * (re * c - im * sn));
      sp[m].y = (R)(f * (re * sn + im * c));
    } else {
      sp[m].x = 0;
      sp[m].y = 0;
    }
  }
}

/* kernel sample s of the block (flattened over its pairs) */
template <class R>
ARKCOS_HD inline void body_eval(const dtables &t, const blockp &b, const arkcos_kfun &kf, int64_t L,
                                int64_t Lp, double twopi_L, int64_t s) {
  if (s >= b.ns) return;
  const int64_t sg = b.s0 + s;
  int64_t lo = b.pa, hi = b.pb; /* psoff[lo] <= sg < psoff[hi] */
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (t.psoff[mid] <= sg) lo = mid;
    else hi = mid;
  }
  const int64_t k = sg - t.psoff[lo], n = t.pn0[lo] + k;
  const double v =
      arkcos_kfun_d2(&kf, arkcos_chord2(t.psdt2[lo], t.pss[lo], t.pdelta[lo] + twopi_L * (double)n));
  if (t.pkind[lo])
    ((R *)b.grid_p)[(t.pord[lo] - b.f0) * Lp + arkcos_wrap(n, L)] = (R)v;
  else
    ((R *)b.dsamp_p)[t.pord[lo] - b.d0 + k] = (R)v;
}

/* A_i[m] (and A_mirror(i)[m]) for task ta + bx, mode m: the sum over the
 * block's pairs of the task in increasing j, continued from the block
 * before when the task started there. */
template <class R>
/* Long on purpose: one device thread's whole reduction loop; helpers would cost registers on the GPU. */
ARKCOS_HD inline void body_reduce(const dtables &t, const blockp &b, const typename cx<R>::T *spec,
                                  const typename cx<R>::T *tw, int64_t nm, int64_t nmp, int64_t L,
                                  double invL, int64_t bx, int64_t m) {
  typedef typename cx<R>::T C;
  if (m >= nm) return;
  const int64_t tk = b.ta + bx;
  const int i = t.task[tk], i2 = t.mirror[i];
  const bool two = i2 >= 0 && i2 != i;
  const int64_t p0 = t.tp[tk] > b.pa ? t.tp[tk] : b.pa;
  const int64_t p1 = t.tp[tk + 1] < b.pb ? t.tp[tk + 1] : b.pb;
  C *acc1 = (C *)b.acc_p + 2 * bx * nmp, *acc2 = acc1 + nmp;
  R ar = 0, ai = 0, br = 0, bi = 0;
  if (b.pa > t.tp[tk]) { /* continued */
    ar = acc1[m].x;
    ai = acc1[m].y;
    if (two) {
      br = acc2[m].x;
      bi = acc2[m].y;
    }
  }
  const C step = tw[m]; /* e^{-2 pi i m / L} */
  for (int64_t p = p0; p < p1; p++) {
    R hr, hi;
    if (t.pkind[p]) {
      const C h = ((const C *)b.hspec_p)[(t.pord[p] - b.f0) * nmp + m];
      hr = h.x;
      hi = h.y;
    } else {
      /* H[m] = sum_n k_n e^{-2 pi i m n / L}: the twiddle rotates by step,
       * re-seeded from the table every RESEED terms to bound rounding */
      const R *ks = (const R *)b.dsamp_p + (t.pord[p] - b.d0);
      const int cnt = t.pcnt[p];
      int64_t q = mulmod_L(m, arkcos_wrap(t.pn0[p], L), L, invL);
      R wr = 0, wi = 0;
      hr = 0;
      hi = 0;
      for (int k = 0; k < cnt; k++) {
        if (k % RESEED == 0) {
          const C w = tw[q];
          wr = w.x;
          wi = w.y;
        }
        const R kv = ks[k];
        hr += kv * wr;
        hi += kv * wi;
        const R nwr = wr * step.x - wi * step.y;
        wi = wr * step.y + wi * step.x;
        wr = nwr;
        q += m;
        if (q >= L) q -= L;
      }
    }
    const int j = t.pj[p];
    const C r1 = spec[(int64_t)j * nmp + m];
    ar += hr * r1.x - hi * r1.y;
    ai += hr * r1.y + hi * r1.x;
    if (two) {
      const C r2 = spec[(int64_t)t.mirror[j] * nmp + m];
      br += hr * r2.x - hi * r2.y;
      bi += hr * r2.y + hi * r2.x;
    }
  }
  acc1[m].x = ar;
  acc1[m].y = ai;
  if (two) {
    acc2[m].x = br;
    acc2[m].y = bi;
  }
}

/* Output bin d of ring (z = 0: the task's ring, 1: its mirror) for tasks
 * whose last pair is in this block: fold (enhanced, arkcos_fold_source, the
 * gather form of the CPU's scatter, same order) or truncate with the phase
 * rotation back to the ring's phi0 (paper); times 1/L (exact for L = 2^k).
 * The imaginary parts of bins 0 and N/2 are set to 0: a c2r ignores them. */
template <class R>
ARKCOS_HD inline void body_fold(const dtables &t, const blockp &b, typename cx<R>::T *ospec, int64_t nm,
                                int64_t nmp, int64_t L, int paper, double invL, int64_t bx, int64_t d,
                                int z) {
  typedef typename cx<R>::T C;
  const int64_t tk = b.ta + bx;
  if (b.pb < t.tp[tk + 1]) return; /* the task goes on in the next block */
  const int i = t.task[tk], i2 = t.mirror[i];
  const bool two = i2 >= 0 && i2 != i;
  if (z && !two) return;
  const int ring = z ? i2 : i;
  const int64_t N = t.nph[ring];
  if (2 * d > N) return;
  const C *acc = (const C *)b.acc_p + (2 * bx + z) * nmp;
  double out_re, out_im;
  if (!paper) {
    R re = 0, im = 0;
    for (int64_t s = 0;; s++) {
      int conj;
      const int64_t m = arkcos_fold_source(d, N, s, &conj);
      if (m >= nm) break;
      const R w = (2 * m == L) ? (R)0.5 : (R)1;
      re += w * acc[m].x;
      if (conj) im -= w * acc[m].y;
      else im += w * acc[m].y;
    }
    out_re = re;
    out_im = (d == 0 || 2 * d == N) ? 0.0 : (double)im;
  } else {
    const double phi0 = t.phi0[ring];
    const double c = cos((double)d * phi0), sn = sin((double)d * phi0);
    const double are = acc[d].x, aim = acc[d].y;
    out_re = are * c - aim * sn;
    out_im = are * sn + aim * c;
    if (d > 0 && 2 * d == N) { /* +N/2 and -N/2 meet */
      out_re *= 2;
      out_im = 0;
    }
    if (d == 0) out_im = 0;
  }
  C v;
  v.x = (R)(out_re * invL);
  v.y = (R)(out_im * invL);
  ospec[t.oofs[ring] + d] = v;
}

/* Rings of their own length (a cap pair) in an enhanced plan whose caps take
 * the Fourier path (a kernel past the exact path's limit): their r2c and c2r
 * as direct DFTs in double, one block per ring, instead of a cuFFT plan per
 * length (thousands of plans, minutes to make). The twiddle is rotated from
 * one term to the next and taken exactly every RESEED terms.
 * r2c: X_m = sum_k x_k e^{-2 pi i m k / N}, m <= N / 2, into the ring's row
 * of spec (body_extend does the modes above). */
template <class R>
ARKCOS_HD inline void body_dft_r2c(const R *fmap, typename cx<R>::T *spec, const dtables &t, int64_t nmp,
                                   int64_t b, int tx, int bd) {
  const int r = t.dftf[b];
  const int64_t N = t.nph[r];
  const R *x = fmap + t.pofs[r];
  typename cx<R>::T *sp = spec + (int64_t)r * nmp;
  for (int64_t m = tx; 2 * m <= N; m += bd) {
    const double cr = cos(2 * ARKCOS_PI * (double)m / (double)N), ci = -sin(2 * ARKCOS_PI * (double)m / (double)N);
    double re = 0, im = 0, wr = 1, wi = 0;
    int64_t q = 0; /* m k mod N */
    for (int64_t k = 0; k < N; k++) {
      if (k % RESEED == 0) {
        const double a = 2 * ARKCOS_PI * (double)q / (double)N;
        wr = cos(a);
        wi = -sin(a);
      }
      const double v = (double)x[k];
      re += v * wr;
      im += v * wi;
      const double nr = wr * cr - wi * ci;
      wi = wr * ci + wi * cr;
      wr = nr;
      q += m;
      if (q >= N) q -= N;
    }
    sp[m].x = (R)re;
    sp[m].y = (R)im;
  }
}

/* c2r as cuFFT computes it from a half spectrum (unnormalised; the
 * imaginary parts of bins 0 and N/2 ignored): x_k = X_0 + 2 sum_{0<m<N/2}
 * Re(X_m e^{2 pi i m k / N}) + X_{N/2} (-1)^k */
template <class R>
ARKCOS_HD inline void body_dft_c2r(const typename cx<R>::T *ospec, R *fmap, const dtables &t, int64_t b, int tx,
                                   int bd) {
  const int r = t.dfti[b];
  const int64_t N = t.nph[r];
  const typename cx<R>::T *X = ospec + t.oofs[r];
  R *x = fmap + t.pofs[r];
  for (int64_t k = tx; k < N; k += bd) {
    const double cr = cos(2 * ARKCOS_PI * (double)k / (double)N), ci = sin(2 * ARKCOS_PI * (double)k / (double)N);
    double s = (double)X[0].x, wr = 1, wi = 0;
    int64_t q = k; /* m k mod N, m = 1 */
    for (int64_t m = 1; 2 * m <= N; m++) {
      if ((m - 1) % RESEED == 0) {
        const double a = 2 * ARKCOS_PI * (double)q / (double)N;
        wr = cos(a);
        wi = sin(a);
      }
      const double re = (double)X[m].x, im = (double)X[m].y;
      if (2 * m == N) s += re * wr; /* the Nyquist bin, once */
      else s += 2 * (re * wr - im * wi);
      const double nr = wr * cr - wi * ci;
      wi = wr * ci + wi * cr;
      wr = nr;
      q += k;
      if (q >= N) q -= N;
    }
    x[k] = (R)s;
  }
}

/* Direct pairs, row a of direct task dt, LANES 4 or 1: for each pair in
 * order, the sum over the pair's window of w_j K(alpha_ab) x_j(b + r s_j)
 * (the weights as pairs_direct.c's row_weights computes them: the exact
 * integer numerator of the azimuth offset, the haversine chord), added to
 * the output pixel a + r rows (and the same weights on the mirror rings).
 * Sums in double whatever R; each thread owns its outputs (no atomics:
 * bit-identical run to run). */
template <class R, int LANES>
ARKCOS_HD inline void direct_row(const dtables &t, const arkcos_kfun &kf, const R *x, R *y, int dt, int64_t a) {
  const int i = t.dti[dt], i2 = t.dti2[dt];
  const int64_t rows = t.drows[dt], ni = t.nph[i];
  R *yi = y + t.ofs[i], *ym = i2 >= 0 ? y + t.ofs[i2] : yi;
  double s[LANES], u[LANES];
  for (int r = 0; r < LANES; r++) {
    s[r] = t.dfour[dt] ? (double)yi[a + r * rows] : 0.0;
    u[r] = t.dfour[dt] && i2 >= 0 ? (double)ym[a + r * rows] : 0.0;
  }
  for (int64_t k = t.dp[dt]; k < t.dp[dt + 1]; k++) {
    const int j = t.qj[k], jm = t.qjm[k];
    const int64_t nj = t.nph[j], sj = nj / LANES;
    const R *xj = x + t.ofs[j], *xm = jm >= 0 ? x + t.ofs[jm] : xj;
    const double hw = t.qhw[k], wj = t.w[j], sdt2 = t.qsdt2[k], ss = t.qss[k], d0 = t.qd0[k];
    const double step = 2 * ARKCOS_PI / ((double)ni * (double)nj);
    const double c = t.qc0[k] + (double)a * (double)nj / (double)ni;
    int64_t lo, cnt;
    if (hw >= (double)nj) {
      lo = (int64_t)floor(c) - nj / 2;
      cnt = nj;
    } else {
      lo = (int64_t)floor(c - hw) - 1;
      const int64_t hi = (int64_t)ceil(c + hw) + 1;
      cnt = hi - lo + 1 < nj ? hi - lo + 1 : nj;
    }
    double ps[LANES], pu[LANES];
    for (int r = 0; r < LANES; r++) ps[r] = pu[r] = 0;
    int64_t q = arkcos_wrap(lo, nj);
    /* sin(dphi / 2) from one input pixel to the next by a rotation of
     * -pi / n_j, taken afresh (exact numerator) every DRESEED pixels */
    const double cr = cos(ARKCOS_PI / (double)nj), sr = -sin(ARKCOS_PI / (double)nj);
    double sh = 0, ch = 1;
    for (int64_t l = 0; l < cnt; l++) {
      if (l % DRESEED == 0) {
        const double dphi = d0 + step * (double)(a * nj - (lo + l) * ni); /* exact numerator */
        sh = sin(0.5 * dphi);
        ch = cos(0.5 * dphi);
      }
      const double v = wj * arkcos_kfun_d2(&kf, 4.0 * (sdt2 + ss * sh * sh));
      const double sn = sh * cr + ch * sr;
      ch = ch * cr - sh * sr;
      sh = sn;
      if (v != 0)
        for (int r = 0; r < LANES; r++) {
          int64_t e = q + r * sj;
          if (e >= nj) e -= nj;
          ps[r] += v * (double)xj[e];
          if (i2 >= 0) pu[r] += v * (double)xm[e];
        }
      if (++q == nj) q = 0;
    }
    for (int r = 0; r < LANES; r++) {
      s[r] += ps[r];
      u[r] += pu[r];
    }
  }
  for (int r = 0; r < LANES; r++) {
    yi[a + r * rows] = (R)s[r];
    if (i2 >= 0) ym[a + r * rows] = (R)u[r];
  }
}

/* thread tx of k_direct's block blk: one row of one direct task */
template <class R>
ARKCOS_HD inline void body_direct(const dtables &t, const arkcos_kfun &kf, const R *x, R *y, int64_t blk, int tx) {
  const int dt = t.btask[blk];
  const int64_t a = t.brow[blk] + tx;
  if (a >= t.drows[dt]) return;
  if (t.dlanes[dt] == 4) direct_row<R, 4>(t, kf, x, y, dt, a);
  else direct_row<R, 1>(t, kf, x, y, dt, a);
}

} /* namespace */

#endif
