/*
 * pairs_direct.c -- the exact path for ring pairs whose rings do not share
 * the kernel grid (the polar caps and the belt's edge), and the plan's
 * a-priori error bound. Shared by the CPU backends of both precisions: the
 * weights, the sums and the output are double.
 *
 * A ring pair (i, j) contributes y_a = sum_b W_ab x_b, W_ab = w_j K(alpha_ab),
 * to output pixel a of ring i from input pixel b of ring j. The azimuth
 * offset of the two pixels is
 *   dphi_ab = phi0_i - phi0_j + 2 pi (a n_j - b n_i) / (n_i n_j),
 * its numerator an exact integer, and alpha_ab follows from the haversine
 * form of the squared chord (arkcos_math.h), as in the Fourier path. Where
 * n_i = n_j = L (the belt) the Fourier path is the exact circular
 * convolution; elsewhere its kernel grid cannot hold both rings' pixels and
 * it aliases, so these pairs are summed directly over the kernel's support
 * on the ring, with the weights tabulated at plan time:
 *  - rotating the sphere by 2 pi / g, g = gcd(n_i, n_j), moves output pixel
 *    a to a + n_i / g and input pixel b to b + n_j / g and keeps every
 *    offset: the table holds the P = n_i / g output pixels of one period;
 *  - a geometry symmetric about the equator gives the mirror pair (i', j')
 *    the same table;
 *  - each output pixel reads wc consecutive input pixels (the widest window
 *    of the period, padded with the exact kernel values, zero beyond the
 *    cutoff), from a copy of the input ring laid out three times so that no
 *    index wraps.
 * Every weight is the kernel at the pair's exact offset, so the cutoff, a
 * top-hat's jump or a table's kink land where the direct sum has them.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/plan_internal.h"

/* One directly summed ring pair of a task: output ring task[t] (and its
 * mirror) from input ring j (and its mirror jm). Rows a < P of the period;
 * with lanes = 4 (4 divides g, every HEALPix pair) a row serves the four
 * output pixels a + r P, r < 4, at once, else the g periods in turn. */
typedef struct {
  int j, jm;        /* input ring; the mirror output ring's input ring, or -1 */
  int lanes;        /* 4: the four quarter turns as vector lanes; 1: a loop */
  int64_t P, reps;  /* rows (output pixels n_i / (reps lanes)), periods looped over */
  int64_t sj;       /* input pixels per lane / period: n_j / (reps lanes) */
  int64_t bmin, bmax; /* range of the rows' first input pixels (unwrapped) */
  int64_t maxlen;   /* longest row */
  int64_t *b0;      /* first input pixel of row a (unwrapped: may be < 0) */
  int64_t *wofs;    /* row a's weights: w[wofs[a] .. wofs[a] + wlen[a]), */
  int64_t *wlen;
  unsigned char *rev; /* read backwards (a row's mirror image, see pair_setup) */
  double *rsum;     /* an execute's scalar pair: row a's weights summed (in
                     * pair_row_sums' order), or NULL */
  int64_t nw;       /* weights stored */
  double *w;        /* the weights, or NULL when held in float (wf) */
  double *wi;       /* spin-2 plans: the weights' imaginary parts (w the real) */
  float *wf;        /* weights rounded to float, where --accuracy allows */
  int konst;        /* a top-hat's scalar pair: every weight inside the support
                     * is wconst; none stored (w, wf NULL), rows only */
  double wconst;
  double wsum;      /* max over a of sum |W_ab| */
} dpair;

/* A thread's scratch for pairs set up in an execute (weights on the fly):
 * the rows' and weights' arrays and batched_rows' buffers, grown as
 * needed and reused pair after pair (no allocation per pair) */
typedef struct {
  int64_t *b0, *wofs, *wlen;
  unsigned char *rev;
  double *rsum;
  double *w, *wi;
  size_t rows, vals; /* capacities: rows (b0 .. rev), weights (w, wi) */
  double *num;
  int64_t *rws;
  size_t nums;       /* capacity of num (doubles); rws holds 3 (ROW_BATCH + 1) */
  int64_t *wlo, *wcnt; /* the rows' candidate windows (pixel_windows), rows long */
} dscratch;

struct arkcos_direct {
  int ntasks;
  int *first;       /* pairs of task t: pair[first[t] .. first[t + 1]) */
  dpair *pair;
  int nthreads;
  size_t xlen;      /* per-thread input buffer (doubles) */
  double *xbuf;
  /* weights on the fly (direct_fly): pair[] holds j and jm only, each
   * execute sets a pair up (pair_setup, the tables' own code, so the sums
   * are bit-identical), uses it and frees it. A scalar plan keeps, from its
   * first execute, each task's row sums over its output ring (cofs[t], n_i
   * values), A(1)'s direct part: the smoother's A(W) after a map then costs
   * no weights again. */
  int fly;
  int cvalid;       /* csum filled */
  int64_t *cofs;    /* task t's row sums at csum + cofs[t] (-1: no direct pairs) */
  double *csum;
};

/* Whether pair (i, j) takes the direct path: both rings on the kernel grid
 * (length L) keep the exact Fourier path; in paper mode nothing is direct. */
int arkcos_pair_is_direct(const arkcos_plan *p, int i, int j) {
  if (!p->direct_caps) return 0;
  if (p->opt.spin == 2) return !arkcos_spin2_ring_on_grid(p, i) || !arkcos_spin2_ring_on_grid(p, j);
  const arkcos_ring *rg = p->geom->rings;
  return rg[i].nph != p->L || rg[j].nph != p->L;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* b mod n in [0, n); b mostly within a period of [0, n): no division there
 * (a 64-bit division per row was a tenth of an execute whose weights are
 * computed on the fly) */
static inline int64_t wrap64(int64_t b, int64_t n) {
  if (b >= 0 && b < n) return b;
  if (b < 0 && b >= -n) return b + n;
  if (b >= n && b - n < n) return b - n;
  const int64_t r = b % n;
  return r < 0 ? r + n : r;
}

/* The kernel's half-width in azimuth on pair (i, j) in input pixels of ring
 * j, or -1 when it does not reach the ring, or a value >= n_j for all of it. */
static double pair_halfwidth(const arkcos_plan *p, int i, int j) {
  const arkcos_ring *rg = p->geom->rings;
  const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  const double half = arkcos_dphi_window(&p->kf, sdt * sdt, p->sin_theta[i] * p->sin_theta[j]);
  if (half < 0) return -1;
  if (half >= ARKCOS_PI) return (double)rg[j].nph;
  return half * (double)rg[j].nph / (2 * ARKCOS_PI);
}

/* Candidate window of output pixel a (one pixel of margin each side,
 * at most the whole ring): first input pixel, unwrapped, and count. */
static void pixel_window(const arkcos_plan *p, int i, int j, double hw, int64_t a, int64_t *lo, int64_t *cnt) {
  const arkcos_ring *rg = p->geom->rings;
  const int64_t ni = rg[i].nph, nj = rg[j].nph;
  const double c = (rg[i].phi0 - rg[j].phi0) * (double)nj / (2 * ARKCOS_PI) + (double)a * (double)nj / (double)ni;
  if (hw >= (double)nj) {
    *lo = (int64_t)floor(c) - nj / 2;
    *cnt = nj;
    return;
  }
  const int64_t l = (int64_t)floor(c - hw) - 1, h = (int64_t)ceil(c + hw) + 1;
  *lo = l;
  *cnt = h - l + 1 < nj ? h - l + 1 : nj;
}

/* 1 if d > 0, else 0, by d's bits: integer comparisons and selects
 * between values of one type only (GCC's vectoriser turns a comparison of
 * doubles, which may trap, into a select only where the CPU has AVX-512's
 * masks, and mixed types not at all: with AVX2 alone such a loop stayed
 * scalar) */
static inline double kstep(double d) {
  int64_t b;
  memcpy(&b, &d, sizeof b);
  const int64_t m = -(int64_t)(b > 0) & INT64_C(0x3ff0000000000000); /* 1.0's bits or 0 (a mask: a select of two constants did not vectorise) */
  double r;
  memcpy(&r, &m, sizeof r);
  return r;
}

/* A double's bits as an integer and back (for selects by masks, kstep) */
static inline int64_t kbits(double d) {
  int64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
}
static inline double kdouble(int64_t b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

/* floor and ceil of |x| < 2^51 by the round-to-nearest of adding and
 * subtracting 1.5 2^52, exact and equal to floor() and ceil() there, in
 * operations that vectorise (GCC vectorises the library's only without
 * trapping math); r - x is exact (|r - x| <= 1/2) */
static inline double kfloor(double x) {
  const double r = (x + 0x1.8p52) - 0x1.8p52;
  return r - kstep(r - x);
}
static inline double kceil(double x) {
  const double r = (x + 0x1.8p52) - 0x1.8p52;
  return r + kstep(x - r);
}

/* The candidates a pair's rows are evaluated on (pair_setup, batched_rows):
 * half-width in candidates of the support at the cutoff raised by 1e-7
 * (relative) plus 1e-3 of a candidate, -1 where the pair has no support,
 * n_j where the whole ring may be inside. A candidate with a non-zero
 * weight has its squared chord within 1e-9 of the cutoff's at most (the
 * scalar functions decide that band, arkcos_kernel_batch), far inside
 * this window; the rows trimmed to their non-zero weights are those of
 * pixel_window's wider windows (a pixel of margin each side), but for
 * rows whose support wraps round a short ring (their start moves). Those
 * evaluated about 4 more candidates a row: at nside 1024 and 2.8 px 40.8
 * million candidates for 26.6 million weights, 26.6 million now (1.5 px:
 * 15.0 and 7.66 million). */
static double pair_tight_halfwidth(const arkcos_plan *p, int i, int j) {
  const arkcos_ring *rg = p->geom->rings;
  const double hw = pair_halfwidth(p, i, j);
  if (hw < 0 || hw >= (double)rg[j].nph) return hw;
  const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  const double ss = p->sin_theta[i] * p->sin_theta[j];
  const double room = 0.25 * p->kf.cut_d2 * (1 + 1e-7) - sdt * sdt;
  if (!(ss > 0) || room >= ss) return (double)rg[j].nph;
  return 2 * asin(sqrt(room / ss)) * (double)rg[j].nph / (2 * ARKCOS_PI) + 1e-3;
}

/* Tests only (plan_internal.h): 1 evaluates the rows on pixel_window's
 * wider windows, as before pair_tight_halfwidth */
int arkcos_direct_wide_windows = 0;

/* The candidates of rows 0 .. P - 1 within ht (pair_tight_halfwidth) of
 * each row's centre (pixel_window's c): first input pixel, unwrapped, and
 * count (at most the whole ring; may be 0). The roundings vectorised. hw:
 * pair_halfwidth, for arkcos_direct_wide_windows. */
static void pixel_windows(const arkcos_plan *p, int i, int j, double hw, double ht, int64_t P, int64_t *lo,
                          int64_t *cnt) {
  const arkcos_ring *rg = p->geom->rings;
  const int64_t ni = rg[i].nph, nj = rg[j].nph;
  if (arkcos_direct_wide_windows) {
    for (int64_t a = 0; a < P; a++) pixel_window(p, i, j, hw, a, &lo[a], &cnt[a]);
    return;
  }
  const double c0 = (rg[i].phi0 - rg[j].phi0) * (double)nj / (2 * ARKCOS_PI);
  if (!(ht < (double)nj) || !(fabs(ht) < 0x1p40)) { /* the whole ring, as pixel_window has it */
    for (int64_t a = 0; a < P; a++) {
      lo[a] = (int64_t)floor(c0 + (double)a * (double)nj / (double)ni) - nj / 2;
      cnt[a] = nj;
    }
    return;
  }
  enum { C = 256 };
  double l[C], h[C];
  for (int64_t a0 = 0; a0 < P; a0 += C) {
    const int n = (int)(P - a0 < C ? P - a0 : C);
#pragma omp simd
    for (int r = 0; r < n; r++) {
      const double c = c0 + ((double)a0 + (double)r) * (double)nj / (double)ni;
      l[r] = kceil(c - ht);
      h[r] = kfloor(c + ht);
    }
    for (int r = 0; r < n; r++) {
      const int64_t lw = (int64_t)l[r], hg = (int64_t)h[r];
      lo[a0 + r] = lw;
      cnt[a0 + r] = hg < lw ? 0 : hg - lw + 1 < nj ? hg - lw + 1 : nj;
    }
  }
}

/* Row a of pair (i, j) as the tables would hold it, by the scalar
 * functions: returns its length once trimmed to the kernel's support and
 * sets *sum (sum of |W|). For the bound of plans without tables. */
static int64_t row_extent(const arkcos_plan *p, int i, int j, double hw, int64_t a, double *sum) {
  const arkcos_ring *rg = p->geom->rings;
  const int64_t ni = rg[i].nph, nj = rg[j].nph;
  const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  const double sdt2 = sdt * sdt, ss = p->sin_theta[i] * p->sin_theta[j];
  const double d0 = rg[i].phi0 - rg[j].phi0, step = 2 * ARKCOS_PI / ((double)ni * (double)nj);
  int64_t lo, cnt;
  pixel_window(p, i, j, hw, a, &lo, &cnt);
  int64_t f = -1, e = -1;
  *sum = 0;
  for (int64_t l = 0; l < cnt; l++) {
    const int64_t b = lo + l;
    const double dphi = d0 + step * (double)(a * nj - b * ni); /* exact numerator */
    const double sh = sin(0.5 * dphi);
    const double v = rg[j].weight * arkcos_kfun_d2(&p->kf, 4.0 * (sdt2 + ss * sh * sh));
    if (v != 0) {
      if (f < 0) f = l;
      e = l;
      *sum += fabs(v);
    }
  }
  return f < 0 ? 0 : e - f + 1;
}

/* sin x = x + x sum_k sinc[k] x^(2k + 2) on [0, pi / 2] (Taylor, to x^23) */
static const double sinc[12] = {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800,
                                1.0 / 6227020800.0, -1.0 / 1307674368000.0, 1.0 / 355687428096000.0,
                                -1.0 / 121645100408832000.0, 1.0 / 51090942171709440000.0,
                                -1.0 / 25852016738884976640000.0, 1.0 / 15511210043330985984000000.0};

/* The kernel's values at cnt candidate offsets of a ring pair (a batch of
 * rows): out[l] = w_j K(chord2) with dphi_l = d0 + step num[l] (num[l] the
 * exact integer a n_j - b n_i), the haversine form of arkcos_kfun_d2, in
 * loops the compiler vectorises (the weights of the direct tables are most
 * of an exact plan's making; a row alone is too short to vectorise):
 *  - sin(dphi / 2) by its Taylor series on [0, pi / 2] (sin^2 is
 *    symmetric about pi / 2), to x^23 at most, fewer terms where the
 *    batch's offsets are small: below 1e-20 relative;
 *  - a Gaussian's alpha^2 = 4 asin^2(chord / 2) by the series of asin^2 in
 *    h^2 = chord^2 / 4, 11 terms at most (fewer for a narrow cutoff), where
 *    the cutoff has h^2 <= 0.01 (about 11 degrees; below 1e-20 relative),
 *    else by arkcos_alpha_of_chord2;
 *  - exp(-y) as 2^-n exp(-r), |r| <= ln 2 / 2, exp(-r) to r^13 (below 1e-17).
 * Each agrees with the scalar functions to a few units of rounding. A
 * candidate within 1e-9 (relative) of the cutoff's chord is evaluated by
 * the scalar functions themselves, so that which pixels lie inside is
 * decided exactly as arkcos_kfun_d2 decides it; a kernel table's spline
 * is evaluated by the scalar function at the vectorised angle. tmp: 2 cnt
 * doubles of scratch. */
/* The series' Horner steps: fused where the CPU fuses (one rounding, half
 * the operations; the exp, sine and asin^2 series were most of the weights'
 * cost), else a multiply and an add (-std=c11 contracts nothing itself).
 * The tables and the weights on the fly share these values bit for bit;
 * copies of the engine for other instruction sets differ from them by
 * rounding only. */
#if defined(__FMA__)
#define KFMA(a, b, c) fma(a, b, c)
#else
#define KFMA(a, b, c) ((a) * (b) + (c))
#endif
void arkcos_kernel_batch(const arkcos_kfun *kf, double wj, double sdt2, double ss, double d0, double step,
                         const double *num, int64_t cnt, double *out, double *tmp) {
  /* d2 = chord^2: x = |dphi / 2| folded onto [0, pi / 2] first, then sin x
   * to the fewest Taylor terms that keep below 1e-20 relative at the
   * batch's largest x (|sinc[K] x^(2K + 2)| < 1e-20: K = 5 up to x = 0.095,
   * 7 up to 0.408, 9 up to 0.963, else all 12) */
  double xmax = 0;
#pragma omp simd reduction(max : xmax)
  for (int64_t l = 0; l < cnt; l++) {
    const double ax = fabs(0.5 * (d0 + step * num[l])), r = ARKCOS_PI - ax;
    const double x = ax < r ? ax : r;
    tmp[l] = x;
    xmax = x > xmax ? x : xmax;
  }
#define SIN_CHORD2(K)                                                      \
  for (int64_t l = 0; l < cnt; l++) {                                      \
    const double x = tmp[l], x2 = x * x;                                   \
    double pl = sinc[(K) - 1];                                             \
    for (int c = (K) - 2; c >= 0; c--) pl = KFMA(pl, x2, sinc[c]);         \
    const double sh = x + x * x2 * pl;                                     \
    tmp[l] = 4.0 * (sdt2 + ss * sh * sh);                                  \
  }
  if (xmax <= 0.095) SIN_CHORD2(5)
  else if (xmax <= 0.408) SIN_CHORD2(7)
  else if (xmax <= 0.963) SIN_CHORD2(9)
  else SIN_CHORD2(12)
#undef SIN_CHORD2
  const double cut = kf->cut_d2;
  if (kf->type == ARKCOS_KERNEL_GAUSSIAN) {
    if (0.25 * cut <= 0.01) { /* alpha^2 = 4 h^2 sum_n c_n h^(2n - 2) */
      static const double ac[11] = {1.0, 1.0 / 3, 8.0 / 45, 4.0 / 35, 128.0 / 1575, 0.06156806156806157,
                                    0.04871319157033443, 0.03978243978243978, 0.03328204112517838,
                                    0.028377319275152094, 0.02456910759753428};
      /* to the fewest terms below 1e-20 relative inside the cutoff (h^2 <=
       * cut / 4; values beyond it are zeroed below): |c_K h^(2K)| < 1e-20,
       * K = 4 up to h^2 = 1.87e-5, 6 up to 7.6e-4, else all 11 */
#define ASIN2(K)                                                           \
  for (int64_t l = 0; l < cnt; l++) {                                      \
    const double h2 = 0.25 * tmp[l];                                       \
    double pa = ac[(K) - 1];                                               \
    _Pragma("GCC unroll 10") for (int c = (K) - 2; c >= 0; c--) pa = KFMA(pa, h2, ac[c]); \
    out[l] = 4.0 * h2 * pa;                                                \
  }
      if (0.25 * cut <= 1.87e-5) ASIN2(4)
      else if (0.25 * cut <= 7.6e-4) ASIN2(6)
      else ASIN2(11)
#undef ASIN2
    } else {
      for (int64_t l = 0; l < cnt; l++) {
        const double al = arkcos_alpha_of_chord2(tmp[l] < cut ? tmp[l] : cut);
        out[l] = al * al;
      }
    }
    static const double ec[14] = {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040,
                                  1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800,
                                  1.0 / 479001600, 1.0 / 6227020800.0};
    const double magic = 0x1.8p52, scale = kf->norm * wj, s2 = kf->poly_s, ycap = 700;
    int64_t mbits, capbits;
    memcpy(&mbits, &magic, sizeof mbits);
    memcpy(&capbits, &ycap, sizeof capbits);
    for (int64_t l = 0; l < cnt; l++) {
      const double a2 = out[l];
      tmp[cnt + l] = a2;
      double y = a2 * kf->inv2s2;
      /* y = min(y, 700) by the bits (y >= 0 or NaN: ordered as integers;
       * NaN gives 700, as y < 700 ? y : 700 does), so that the loop
       * vectorises with AVX2 alone (kstep) */
      int64_t yb;
      memcpy(&yb, &y, sizeof yb);
      yb = yb < capbits ? yb : capbits;
      memcpy(&y, &yb, sizeof y);
      const double t = y * 0x1.71547652b82fep0 + magic; /* n + magic: n = round(y / ln 2) */
      const double n = t - magic;
      const double z = -((y - n * 0x1.62e42fefa39efp-1) - n * 0x1.abc9e3b39803fp-56); /* -r */
      double e = ec[13];
#pragma GCC unroll 13
      for (int c = 12; c >= 0; c--) e = KFMA(e, z, ec[c]);
      int64_t tb;
      memcpy(&tb, &t, sizeof tb);
      const int64_t sb = (1023 - (tb - mbits)) << 52; /* 2^-n */
      double p2;
      memcpy(&p2, &sb, sizeof p2);
      out[l] = scale * (e * p2);
    }
    if (kf->npoly) { /* healpy's Gaussian beam: the smooth factor in alpha^2 */
      /* arkcos_cheb's Clenshaw recurrence, the same operations in the same
       * order, over blocks of 64 values at a time (the loop over the values
       * innermost, so that it vectorises; a value at a time it does not) */
      const double *c = kf->poly;
      const int n = kf->npoly;
      for (int64_t l0 = 0; l0 < cnt; l0 += 64) {
        const int m = cnt - l0 < 64 ? (int)(cnt - l0) : 64;
        double xs[64], b1[64], b2[64];
        for (int q = 0; q < m; q++) {
          const double x = 2 * tmp[cnt + l0 + q] * s2 - 1;
          xs[q] = x < 1 ? x : 1;
          b1[q] = 0, b2[q] = 0;
        }
        for (int k = n - 1; k >= 1; k--)
#pragma omp simd
          for (int q = 0; q < m; q++) {
            const double b0 = 2 * xs[q] * b1[q] - b2[q] + c[k];
            b2[q] = b1[q];
            b1[q] = b0;
          }
        for (int q = 0; q < m; q++) out[l0 + q] *= xs[q] * b1[q] - b2[q] + c[0];
      }
    }
  } else if (kf->type == ARKCOS_KERNEL_TOPHAT) {
    for (int64_t l = 0; l < cnt; l++) out[l] = kf->norm * wj;
  } else {
    for (int64_t l = 0; l < cnt; l++)
      out[l] = tmp[l] <= cut ? wj * arkcos_kfun_alpha(kf, arkcos_alpha_of_chord2(tmp[l])) : 0.0;
  }
  for (int64_t l = 0; l < cnt; l++) out[l] = tmp[l] <= cut ? out[l] : 0.0;
  /* the cutoff decided by the scalar functions */
  const double band = 1e-9 * cut;
  int64_t near = 0;
  for (int64_t l = 0; l < cnt; l++) near += fabs(tmp[l] - cut) <= band; /* vectorised: most have none */
  for (int64_t l = 0; near && l < cnt; l++)
    if (fabs(tmp[l] - cut) <= band) {
      const double sh = sin(0.5 * (d0 + step * num[l]));
      out[l] = wj * arkcos_kfun_d2(kf, 4.0 * (sdt2 + ss * sh * sh));
    }
}

/* Azimuth reflection: a ring whose first pixel sits at 0 or half a pixel
 * (e = 2 phi0 n / 2 pi = 0 or 1; every HEALPix ring) maps onto itself under
 * phi -> -phi, pixel a onto (-a - e) mod n. Returns e, or -1. */
static int ring_reflection(const arkcos_ring *r) {
  const double x = r->phi0 * (double)r->nph / ARKCOS_PI, e = floor(x + 0.5);
  return fabs(x - e) < 1e-9 && (e == 0 || e == 1) ? (int)e : -1;
}

/* Row a's partner under the reflection: the row whose output pixels are
 * the mirror images of row a's. Their weights are the same, in reverse
 * order (K depends on sin^2(dphi / 2), the reflection negates dphi; a
 * spin-2 weight is conjugated, docs/POLARIZATION.md), and,
 * the four lanes (or the periods) sharing a row's weights, only the row's
 * first input pixel differs. Sets *q: the lane (period) of row a that maps
 * onto the partner's first. */
static int64_t row_partner(const dpair *d, int64_t ni, int ei, int64_t a, int64_t *q) {
  int64_t ar = a + ei > 0 ? ni - a - ei : 0; /* (-a - ei) mod ni, 0 <= a < ni */
  if (ar >= 8 * d->P) {
    *q = ar / d->P;
    return ar % d->P;
  }
  int64_t k = 0; /* ar / P <= 4 with four lanes: subtracted, not divided */
  while (ar >= d->P) ar -= d->P, k++;
  *q = k;
  return ar;
}

void arkcos_kernel_samples(const arkcos_kfun *kf, double wj, double sdt2, double ss, double delta, int64_t L,
                           int64_t n0, int64_t n1, double *out) {
  enum { C = 256 };
  double num[C], tmp[2 * C];
  for (int64_t b = n0; b <= n1; b += C) {
    const int64_t cnt = n1 - b + 1 < C ? n1 - b + 1 : C;
    for (int64_t l = 0; l < cnt; l++) num[l] = (double)(b + l);
    arkcos_kernel_batch(kf, wj, sdt2, ss, delta, 2 * ARKCOS_PI / (double)L, num, cnt, out + (b - n0), tmp);
  }
}

/* Spin-2 plans: the transport factor of each candidate (the weight's
 * phase, arkcos_spin2_transport with the offset -dphi), in loops the
 * compiler vectorises: sin and cos of dphi / 2 by their Taylor series on
 * [0, pi / 2] (to x^23 and x^24: below 1e-20), the ring pair's
 * trigonometry once. w = v wr, wi = v wi. */
static void batch_transport(double tp, double tq, double d0, double step, const double *num, int64_t cnt,
                            const double *v, double *w, double *wi) {
  static const double cosc[12] = {-1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800,
                                  1.0 / 479001600, -1.0 / 87178291200.0, 1.0 / 20922789888000.0,
                                  -1.0 / 6402373705728000.0, 1.0 / 2432902008176640000.0,
                                  -1.0 / 1124000727777607680000.0, 1.0 / 620448401733239439360000.0};
  const double stp = sin(tp), ctp = cos(tp), stq = sin(tq), ctq = cos(tq), sqp = sin(tq - tp);
  /* the fewest terms below 1e-20 at the batch's largest half-offset y
   * (folded onto [0, pi / 2]): |sinc[K] y^(2K + 2)| and |cosc[K] y^(2K +
   * 2)| < 1e-20, K = 5 up to y = 0.095, 7 up to 0.38, 9 up to 0.83, else 12 */
  double ymax = 0;
#pragma omp simd reduction(max : ymax)
  for (int64_t l = 0; l < cnt; l++) {
    const double ax = fabs(0.5 * (d0 + step * num[l])), r = ARKCOS_PI - ax, y = ax < r ? ax : r;
    ymax = y > ymax ? y : ymax;
  }
  /* The branches as masks on the bits (kstep): far (ax > r, both >= 0 or
   * r < 0: ordered as integers), x < 0 (negative, not -0), n2 > 0 (n2 >= 0);
   * a negation is the sign bit flipped. The same values as the selects of
   * doubles, which AVX2's vectoriser left scalar. */
#define TRANSPORT(K)                                                                             \
  for (int64_t l = 0; l < cnt; l++) {                                                            \
    const double x = -0.5 * (d0 + step * num[l]); /* half the offset -dphi */                    \
    const double ax = fabs(x), r = ARKCOS_PI - ax;                                               \
    /* beyond pi / 2: sin(pi - y) = sin y, cos(pi - y) = -cos y */                               \
    const int64_t axb = kbits(ax), rb = kbits(r), xb = kbits(x);                                 \
    const int64_t mfar = -(int64_t)(axb > rb), mneg = -(int64_t)((xb < 0) & (xb != INT64_MIN));  \
    const double y = kdouble((rb & mfar) | (axb & ~mfar)), y2 = y * y;                           \
    double ps = sinc[(K) - 1], pc = cosc[(K) - 1];                                               \
    _Pragma("GCC unroll 12") for (int c = (K) - 2; c >= 0; c--) {                                \
      ps = KFMA(ps, y2, sinc[c]);                                                                \
      pc = KFMA(pc, y2, cosc[c]);                                                                \
    }                                                                                            \
    const double sy = y + y * y2 * ps, cy = 1.0 + y2 * pc;                                       \
    const double sh = kdouble(kbits(sy) ^ (mneg & INT64_MIN));                                   \
    const double ch = kdouble(kbits(cy) ^ (mfar & INT64_MIN));                                   \
    const double s2 = 2.0 * sh * sh, sd = 2.0 * sh * ch;                                         \
    const double ar = sqp - ctp * stq * s2, ai = stq * sd;                                       \
    const double br = -sqp - stp * ctq * s2, bi = -stp * sd;                                     \
    const double zr = ar * br + ai * bi, zi = ai * br - ar * bi;                                 \
    const double n2 = zr * zr + zi * zi;                                                         \
    const int64_t mok = -(int64_t)(kbits(n2) > 0), one = kbits(1.0);                             \
    const double inv = 1.0 / kdouble((kbits(n2) & mok) | (one & ~mok));                          \
    const double tr = kdouble((kbits((zr * zr - zi * zi) * inv) & mok) | (one & ~mok));          \
    const double ti = kdouble(kbits(2.0 * zr * zi * inv) & mok);                                 \
    w[l] = v[l] * tr;                                                                            \
    wi[l] = v[l] * ti;                                                                           \
  }
  if (ymax <= 0.095) TRANSPORT(5)
  else if (ymax <= 0.38) TRANSPORT(7)
  else if (ymax <= 0.83) TRANSPORT(9)
  else TRANSPORT(12)
#undef TRANSPORT
}

/* konst pairs (a top-hat's, scalar plans): the rows that come before
 * their reflection partner as extents. The support on a row is one run of
 * candidates (chord^2 <= the cutoff's is an interval of offsets), so each
 * row's first and last non-zero weights are found from the window's
 * geometric edges (one candidate outside them): four evaluations a row,
 * vectorised over rows, a scalar walk where they do not settle it, the
 * decisions at the cutoff arkcos_kfun_d2's. Returns ARKCOS_EINVAL when two
 * rows' weights differ or a row's window is the whole ring without the
 * whole ring inside (pair_setup then stores the weights). */
static int konst_rows(const arkcos_plan *p, int i, int j, double hw, int refl, int ei, dpair *d) {
  const arkcos_ring *rg = p->geom->rings;
  const int64_t ni = rg[i].nph, nj = rg[j].nph;
  const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  const double sdt2 = sdt * sdt, ss = p->sin_theta[i] * p->sin_theta[j];
  const double d0 = rg[i].phi0 - rg[j].phi0, step = 2 * ARKCOS_PI / ((double)ni * (double)nj);
  const double wj = rg[j].weight;
  /* rows in chunks of R: the two candidates at each geometric edge of a
   * row (outside, inside) evaluated together (arkcos_kernel_batch); a row
   * whose four do not read zero, value, value, zero is walked one
   * candidate at a time by the scalar functions */
  enum { R = 256 };
  int64_t ra[R], rlo[R], rcnt[R], rf[R], re[R];
  double num[4 * R], val[4 * R], tmp[8 * R];
  for (int64_t a0 = 0; a0 < d->P;) {
    int nr = 0;
    for (; a0 < d->P && nr < R; a0++) {
      int64_t q, lo, cnt;
      if (refl && row_partner(d, ni, ei, a0, &q) < a0) continue;
      pixel_window(p, i, j, hw, a0, &lo, &cnt);
      /* a window cut to the whole ring may hold the support's two ends
       * with a gap between them: not one run (pair_setup stores weights) */
      if (cnt == nj && hw < (double)nj) return ARKCOS_EINVAL;
      /* the window's centre and edges in candidates (pixel_window's c) */
      const double c = (rg[i].phi0 - rg[j].phi0) * (double)nj / (2 * ARKCOS_PI) +
                       (double)a0 * (double)nj / (double)ni - (double)lo;
      int64_t f = 0, e = cnt - 1;
      if (hw < (double)nj) {
        f = (int64_t)ceil(c - hw) - 1;
        e = (int64_t)floor(c + hw) + 1;
        if (f < 0) f = 0;
        if (e > cnt - 1) e = cnt - 1;
      }
      const int64_t num0 = a0 * nj - lo * ni, at[4] = {f, f + 1, e - 1, e};
      for (int k = 0; k < 4; k++) num[4 * nr + k] = (double)(num0 - (at[k] < e ? at[k] : e) * ni);
      ra[nr] = a0;
      rlo[nr] = lo;
      rcnt[nr] = cnt;
      rf[nr] = f;
      re[nr++] = e;
    }
    arkcos_kernel_batch(&p->kf, wj, sdt2, ss, d0, step, num, 4 * (int64_t)nr, val, tmp);
    for (int r = 0; r < nr; r++) {
      const int64_t a = ra[r], lo = rlo[r], cnt = rcnt[r], num0 = a * nj - lo * ni;
      int64_t f = rf[r], e = re[r];
      const double *v4 = val + 4 * r;
      double v = v4[1];
      if (!(e - f >= 3 && v4[0] == 0 && v4[1] != 0 && v4[2] == v4[1] && v4[3] == 0)) {
#define KONST_VALUE(l)                                                                   \
  (wj * arkcos_kfun_d2(&p->kf, arkcos_chord2(sdt2, ss, d0 + step * (double)(num0 - (l) * ni))))
        if (f <= e && (v = KONST_VALUE(f)) != 0)
          while (f > 0 && KONST_VALUE(f - 1) != 0) f--; /* inside already: the run starts further out */
        else
          while (f <= e && (v = KONST_VALUE(f)) == 0) f++;
        if (f <= e && KONST_VALUE(e) != 0)
          while (e < cnt - 1 && KONST_VALUE(e + 1) != 0) e++;
        else
          while (e > f && KONST_VALUE(e) == 0) e--;
#undef KONST_VALUE
      } else {
        f++;
        e--;
      }
      const int64_t len = f <= e ? e - f + 1 : 0;
      if (len && d->wconst == 0) d->wconst = v;
      if (len && v != d->wconst) return ARKCOS_EINVAL;
      d->wofs[a] = 0;
      d->wlen[a] = len;
      d->b0[a] = len ? lo + f : lo;
      if ((double)len * fabs(v) > d->wsum) d->wsum = (double)len * fabs(v);
      if (len > d->maxlen) d->maxlen = len;
    }
  }
  return ARKCOS_OK;
}

/* Tests only (plan_internal.h): 0 sends every konst pair to konst_rows */
int arkcos_direct_konst_geometry = 1;

/* konst pairs by geometry: every row's run found from the window's edges
 * alone. The run is the candidates b with |c_a - b| <= H (c_a: row a's
 * centre in candidates, pixel_window's c; H: the support's half-width on
 * the ring in candidates), as chord^2 grows with |dphi| up to pi. A
 * candidate whose chord^2 may lie within 1e-7 (relative) of the cutoff's
 * is decided by the scalar functions, as konst_rows and
 * arkcos_kernel_batch decide it; the others by their distance to c_a, with
 * margins far beyond the rounding of c_a and H. No kernel evaluation for
 * most rows, and no reflection partners to find. Returns ARKCOS_EINVAL
 * where the support may hold the whole ring or its window nearly so (then
 * konst_rows, which also decides when to store weights). kgeom_init and
 * kgeom_row serve the plan's bound too (arkcos_direct_task_sums). */

/* A top-hat's pair as konst_rows_geom reads it */
typedef struct {
  int64_t ni, nj;
  double sdt2, ss, d0, step, wj;
  double hin, hout; /* sure inside within hin of a row's centre, perhaps within hout (candidates) */
} kgeom;

static int kgeom_init(const arkcos_plan *p, int i, int j, double hw, kgeom *k) {
  const arkcos_ring *rg = p->geom->rings;
  k->ni = rg[i].nph;
  k->nj = rg[j].nph;
  const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  k->sdt2 = sdt * sdt;
  k->ss = p->sin_theta[i] * p->sin_theta[j];
  k->d0 = rg[i].phi0 - rg[j].phi0;
  k->step = 2 * ARKCOS_PI / ((double)k->ni * (double)k->nj);
  k->wj = rg[j].weight;
  const double cut = p->kf.cut_d2, kc = (double)k->nj / (2 * ARKCOS_PI);
  const double rin = 0.25 * cut * (1 - 1e-7) - k->sdt2, rout = 0.25 * cut * (1 + 1e-7) - k->sdt2;
  if (!arkcos_direct_konst_geometry || p->kf.type != ARKCOS_KERNEL_TOPHAT || !(k->ss > 0) || rout >= k->ss ||
      2 * hw + 4 >= (double)k->nj)
    return ARKCOS_EINVAL;
  k->hin = rin > 0 ? 2 * asin(sqrt(rin / k->ss)) * kc * (1 - 1e-12) - 1e-9 : -1;
  k->hout = 2 * asin(sqrt(rout > 0 ? rout / k->ss : 0)) * kc * (1 + 1e-12) + 1e-9;
  return ARKCOS_OK;
}

/* Row a's run: its length, *first its first candidate (unwrapped); *c its
 * centre (pixel_window's c) */
static int64_t kgeom_row(const arkcos_plan *p, const kgeom *k, int64_t a, int64_t *first, double *c) {
  const int64_t ni = k->ni, nj = k->nj;
#define KONST_IN(b)                                                                                           \
  (k->wj * arkcos_kfun_d2(&p->kf, arkcos_chord2(k->sdt2, k->ss, k->d0 + k->step * (double)(a * nj - (b) * ni))) != \
   0)
  *c = k->d0 * (double)nj / (2 * ARKCOS_PI) + (double)a * (double)nj / (double)ni;
  int64_t f = (int64_t)ceil(*c - k->hout), e = (int64_t)floor(*c + k->hout);
  const int64_t fs = k->hin >= 0 ? (int64_t)ceil(*c - k->hin) : e + 1;
  const int64_t es = k->hin >= 0 ? (int64_t)floor(*c + k->hin) : f - 1;
  while (f < fs && f <= e && !KONST_IN(f)) f++;
  while (e > es && e >= f && !KONST_IN(e)) e--;
#undef KONST_IN
  *first = f;
  return f <= e ? e - f + 1 : 0;
}

static int konst_rows_geom(const arkcos_plan *p, int i, int j, double hw, dpair *d) {
  kgeom k;
  if (kgeom_init(p, i, j, hw, &k)) return ARKCOS_EINVAL;
  const int64_t ni = k.ni, nj = k.nj;
  const double c0 = k.d0 * (double)nj / (2 * ARKCOS_PI), hin = k.hin, hout = k.hout;
  /* rows in chunks: the runs' ends and the sure ones in a vectorised pass
   * (kgeom_row's roundings), the few rows with a candidate to decide by
   * kgeom_row itself */
  enum { C = 256 };
  /* the roundings kept as doubles (integers, exact), converted where used */
  double f[C], e[C], fs[C], es[C];
  for (int64_t a0 = 0; a0 < d->P; a0 += C) {
    const int n = (int)(d->P - a0 < C ? d->P - a0 : C);
#pragma omp simd
    for (int r = 0; r < n; r++) {
      const double c = c0 + ((double)a0 + (double)r) * (double)nj / (double)ni;
      f[r] = kceil(c - hout);
      e[r] = kfloor(c + hout);
      fs[r] = kceil(c - hin);
      es[r] = kfloor(c + hin);
    }
    for (int r = 0; r < n; r++) {
      const int64_t a = a0 + r;
      int64_t len, b;
      if (hin >= 0 && f[r] >= fs[r] && e[r] <= es[r]) { /* both ends sure */
        b = (int64_t)f[r];
        len = f[r] <= e[r] ? (int64_t)e[r] - b + 1 : 0;
      } else {
        double c;
        len = kgeom_row(p, &k, a, &b, &c);
      }
      d->wofs[a] = 0;
      d->wlen[a] = len;
      /* an empty row: pixel_window's lo */
      d->b0[a] = len ? b : (int64_t)floor(c0 + (double)a * (double)nj / (double)ni - hw) - 1;
      if (len > d->maxlen) d->maxlen = len;
    }
  }
  d->wconst = d->maxlen ? k.wj * p->kf.norm : 0; /* the top-hat's value inside (arkcos_kfun_alpha) */
  d->wsum = (double)d->maxlen * fabs(d->wconst);
  return ARKCOS_OK;
}

/* The rows of a pair that come before their reflection partner
 * (pair_setup): their candidates in batches of at least ROW_BATCH, each
 * batch's kernel values at once (arkcos_kernel_batch; spin 2: and the
 * transport, batch_transport), then each row trimmed to the kernel's
 * non-zero values as row_extent trims it. Sets d's rows, wsum and maxlen, *nw the weights
 * stored. */
enum { ROW_BATCH = 1024 };
static int batched_rows(const arkcos_plan *p, int i, int j, int refl, int ei, int64_t cmax, const int64_t *wlo,
                        const int64_t *wcnt, dpair *d, int64_t *nw, dscratch *sc) {
  const arkcos_ring *rg = p->geom->rings;
  const int64_t ni = rg[i].nph, nj = rg[j].nph;
  const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  const double sdt2 = sdt * sdt, ss = p->sin_theta[i] * p->sin_theta[j];
  const double d0 = rg[i].phi0 - rg[j].phi0, step = 2 * ARKCOS_PI / ((double)ni * (double)nj);
  const size_t cap = (size_t)(ROW_BATCH + cmax);
  double *num;
  int64_t *rows;
  if (sc) { /* the thread's buffers, grown to fit */
    if (!sc->rws && !(sc->rws = malloc(sizeof(int64_t) * 3 * (size_t)(ROW_BATCH + 1)))) return ARKCOS_ENOMEM;
    if (sc->nums < 6 * cap) {
      double *nn = realloc(sc->num, sizeof(double) * 6 * cap);
      if (!nn) return ARKCOS_ENOMEM;
      sc->num = nn;
      sc->nums = 6 * cap;
    }
    num = sc->num;
    rows = sc->rws;
  } else {
    num = malloc(sizeof(double) * 6 * cap);
    rows = malloc(sizeof(int64_t) * 3 * (size_t)(ROW_BATCH + 1));
    if (!num || !rows) {
      free(num);
      free(rows);
      return ARKCOS_ENOMEM;
    }
  }
  double *val = num + cap, *tmp = num + 2 * cap, *tw = num + 4 * cap, *twi = num + 5 * cap;
  int64_t n = 0;
  for (int64_t a = 0; a < d->P;) {
    int64_t nr = 0, nc = 0;
    for (; a < d->P && nc < ROW_BATCH; a++) { /* row a: rows[3 r ..] = a, lo, cnt */
      int64_t q;
      if (refl && row_partner(d, ni, ei, a, &q) < a) continue;
      const int64_t lo = wlo[a], cnt = wcnt[a]; /* pixel_window's */
      /* a nj - (lo + l) ni, exact in doubles (integers below 2^53) */
      const double n0 = (double)(a * nj - lo * ni), fni = (double)ni;
      /* an int counter: AVX2 converts 32-bit integers to doubles, not 64-bit ones */
      for (int l = 0; l < (int)cnt; l++) num[nc + l] = n0 - (double)l * fni;
      rows[3 * nr] = a;
      rows[3 * nr + 1] = lo;
      rows[3 * nr + 2] = cnt;
      nr++;
      nc += cnt;
    }
    arkcos_kernel_batch(&p->kf, rg[j].weight, sdt2, ss, d0, step, num, nc, val, tmp);
    if (d->wi) batch_transport(rg[i].theta, rg[j].theta, d0, step, num, nc, val, tw, twi);
    const double *v = val;
    for (int64_t r = 0; r < nr; v += rows[3 * r + 2], r++) { /* trimmed as row_extent trims */
      const int64_t ar = rows[3 * r], lo = rows[3 * r + 1], cnt = rows[3 * r + 2];
      int64_t f = 0, e = cnt - 1;
      while (f < cnt && v[f] == 0) f++;
      while (e > f && v[e] == 0) e--;
      double sum = 0, rs = 0; /* rs: pair_row_sums' sum (two independent chains) */
      for (int64_t l = f; l <= e; l++) {
        sum += fabs(v[l]);
        rs += v[l];
      }
      if (d->rsum) d->rsum[ar] = rs;
      if (f == cnt) f = -1;
      const int64_t len = f < 0 ? 0 : e - f + 1;
      d->wofs[ar] = n;
      d->wlen[ar] = len;
      d->b0[ar] = f < 0 ? lo : lo + f;
      if (len && !d->wi) memcpy(d->w + n, v + f, sizeof(double) * (size_t)len);
      if (len && d->wi) {
        const int64_t o = (v - val) + f;
        memcpy(d->w + n, tw + o, sizeof(double) * (size_t)len);
        memcpy(d->wi + n, twi + o, sizeof(double) * (size_t)len);
      }
      n += len;
      if (sum > d->wsum) d->wsum = sum;
      if (len > d->maxlen) d->maxlen = len;
    }
  }
  if (!sc) {
    free(num);
    free(rows);
  }
  *nw = n;
  return ARKCOS_OK;
}

/* Grows *a to n elements of sz bytes (scratch); 0 or -1 */
static int grow(void **a, size_t n, size_t sz) {
  void *b = realloc(*a, n * sz + 1);
  if (!b) return -1;
  *a = b;
  return 0;
}

/* Sets up pair (i, j) of a task: lanes, period, the trimmed rows; a row
 * whose reflection partner comes first is that row read backwards. */
static int pair_setup(const arkcos_plan *p, int i, int j, dpair *d, dscratch *sc) {
  const arkcos_ring *rg = p->geom->rings;
  const int64_t ni = rg[i].nph, nj = rg[j].nph;
  const double hw = pair_halfwidth(p, i, j);
  const int64_t g = gcd64(ni, nj);
  const int ei = ring_reflection(&rg[i]), ej = ring_reflection(&rg[j]), refl = ei >= 0 && ej >= 0;
  d->lanes = g % 4 == 0 ? 4 : 1;
  d->reps = d->lanes == 4 ? 1 : g;
  d->P = ni / (d->reps * d->lanes);
  d->sj = nj / (d->reps * d->lanes);
  const double ht = pair_tight_halfwidth(p, i, j);
  int64_t cmax = 0;
  for (int64_t a = 0; a < d->P; a += d->P > 1 ? d->P - 1 : 1) { /* windows differ by <= 2 pixels */
    const double c = (rg[i].phi0 - rg[j].phi0) * (double)nj / (2 * ARKCOS_PI) + (double)a * (double)nj / (double)ni;
    /* pixel_windows' count of row a */
    int64_t lo, cnt = ht >= (double)nj ? nj : (int64_t)(floor(c + ht) - ceil(c - ht)) + 1;
    if (arkcos_direct_wide_windows) pixel_window(p, i, j, hw, a, &lo, &cnt);
    if (cnt > cmax) cmax = cnt;
  }
  cmax = cmax + 2 < nj ? cmax + 2 : nj;
  const size_t P = (size_t)d->P;
  if (sc) { /* an execute's pair (weights on the fly): the thread's arrays */
    if (sc->rows < P) {
      if (grow((void **)&sc->b0, P, sizeof(int64_t)) || grow((void **)&sc->wofs, P, sizeof(int64_t)) ||
          grow((void **)&sc->wlen, P, sizeof(int64_t)) || grow((void **)&sc->rev, P, 1) ||
          grow((void **)&sc->rsum, P, sizeof(double)) || grow((void **)&sc->wlo, P, sizeof(int64_t)) ||
          grow((void **)&sc->wcnt, P, sizeof(int64_t)))
        return ARKCOS_ENOMEM;
      sc->rows = P;
    }
    d->b0 = sc->b0;
    d->wofs = sc->wofs;
    d->wlen = sc->wlen;
    d->rev = sc->rev;
    d->rsum = p->opt.spin == 0 ? sc->rsum : NULL;
    memset(d->rev, 0, P);
  } else {
    d->b0 = malloc(sizeof(int64_t) * P);
    d->wofs = malloc(sizeof(int64_t) * P);
    d->wlen = malloc(sizeof(int64_t) * P);
    d->rev = calloc(P, 1);
    if (!d->b0 || !d->wofs || !d->wlen || !d->rev) return ARKCOS_ENOMEM;
  }
  int64_t n = 0;
  int rc = ARKCOS_EINVAL, geom = 0; /* geom: konst rows by konst_rows_geom, every row set */
  int64_t *wlo = NULL, *wcnt = NULL; /* the rows' windows, made for batched_rows */
  int wown = 0;
  d->konst = p->kf.type == ARKCOS_KERNEL_TOPHAT && p->opt.spin == 0;
  for (int pass = 0; pass < 2 && rc == ARKCOS_EINVAL; pass++) {
    /* a top-hat's pair first as extents (konst); weights where that fails */
    if ((pass || !d->konst) && sc) {
      d->konst = 0;
      const size_t nv = P * (size_t)cmax + 1;
      if (sc->vals < nv) {
        if (grow((void **)&sc->w, nv, sizeof(double)) || (p->opt.spin == 2 && grow((void **)&sc->wi, nv, sizeof(double))))
          return ARKCOS_ENOMEM;
        sc->vals = nv;
      }
      d->w = sc->w;
      d->wi = p->opt.spin == 2 ? sc->wi : NULL;
    } else if (pass || !d->konst) {
      d->konst = 0;
      d->w = malloc(sizeof(double) * (P * (size_t)cmax + 1));
      if (p->opt.spin == 2) d->wi = malloc(sizeof(double) * (P * (size_t)cmax + 1));
      if (!d->w || (p->opt.spin == 2 && !d->wi)) return ARKCOS_ENOMEM;
    }
    n = 0;
    d->wsum = 0;
    d->wconst = 0;
    d->maxlen = 0;
    if (d->konst && !pass && (rc = konst_rows_geom(p, i, j, hw, d)) == ARKCOS_OK) {
      geom = 1;
      break;
    }
    d->maxlen = 0;
    if (!d->konst && !wlo) {
      if (sc) {
        wlo = sc->wlo;
        wcnt = sc->wcnt;
      } else {
        wlo = malloc(sizeof(int64_t) * P);
        wcnt = malloc(sizeof(int64_t) * P);
        wown = 1;
        if (!wlo || !wcnt) {
          free(wlo);
          free(wcnt);
          return ARKCOS_ENOMEM;
        }
      }
      pixel_windows(p, i, j, hw, ht, d->P, wlo, wcnt);
    }
    rc = d->konst ? konst_rows(p, i, j, hw, refl, ei, d) : batched_rows(p, i, j, refl, ei, cmax, wlo, wcnt, d, &n, sc);
    if (rc == ARKCOS_EINVAL && pass) rc = ARKCOS_ENOMEM; /* cannot happen: weights are stored */
  }
  if (rc != ARKCOS_OK) {
    if (wown) {
      free(wlo);
      free(wcnt);
    }
    return ARKCOS_ENOMEM;
  }
  for (int64_t a = 0; refl && !geom && a < d->P; a++) { /* their partners, read backwards */
    int64_t q;
    const int64_t c = row_partner(d, ni, ei, a, &q);
    if (c >= a) continue;
    int64_t lo, cnt;
    if (wlo)
      lo = wlo[a];
    else
      pixel_window(p, i, j, hw, a, &lo, &cnt);
    d->wofs[a] = d->wofs[c];
    d->wlen[a] = d->wlen[c];
    if (d->rsum) d->rsum[a] = d->rsum[c];
    d->rev[a] = 1;
    /* partner row c, lane q, reads b0_c + l + q sj; its mirror images
     * -(that) - ej run backwards from b0_a: the representative near lo */
    const int64_t b = -(d->b0[c] + d->wlen[c] - 1 + q * d->sj) - ej;
    d->b0[a] = lo + wrap64(b - lo, nj);
    if (d->b0[a] - lo > nj / 2) d->b0[a] -= nj;
  }
  if (wown) {
    free(wlo);
    free(wcnt);
  }
  d->bmin = INT64_MAX;
  d->bmax = INT64_MIN;
  for (int64_t a = 0; a < d->P; a++) {
    if (d->b0[a] < d->bmin) d->bmin = d->b0[a];
    if (d->b0[a] > d->bmax) d->bmax = d->b0[a];
  }
  d->nw = n;
  if (d->konst || sc) return ARKCOS_OK;
  double *w = realloc(d->w, sizeof(double) * (size_t)(n + 1));
  if (w) d->w = w;
  if (d->wi && (w = realloc(d->wi, sizeof(double) * (size_t)(n + 1)))) d->wi = w;
  return ARKCOS_OK;
}

/* Doubles of the per-thread input buffer pair d needs */
static size_t pair_xlen(const arkcos_ring *rg, const dpair *d) {
  if (d->lanes == 4) /* a konst pair: and its two prefix sums (lanes_apply_c) */
    return (d->wi ? 16 : d->konst ? 24 : 8) * (size_t)(d->bmax - d->bmin + d->maxlen + 2);
  return 6 * (size_t)rg[d->j].nph;
}

static void pair_free(dpair *d) {
  free(d->b0);
  free(d->wofs);
  free(d->wlen);
  free(d->rev);
  free(d->w);
  free(d->wi);
  free(d->wf);
}

void arkcos_direct_destroy(arkcos_direct *D) {
  if (!D) return;
  if (D->pair && D->first)
    for (int k = 0; k < D->first[D->ntasks]; k++) pair_free(&D->pair[k]);
  free(D->pair);
  free(D->first);
  free(D->xbuf);
  free(D->cofs);
  free(D->csum);
  free(D);
}

/* Weights on the fly: pair k of task t set up in *d (a copy of its record,
 * then pair_setup into the thread's scratch sc), its input buffer in the
 * thread's *x (grown to fit, *xcap doubles). 0, or ARKCOS_ENOMEM. */
static int fly_setup(const arkcos_plan *p, const arkcos_direct *D, int t, int k, dpair *d, dscratch *sc,
                     double **x, size_t *xcap) {
  memset(d, 0, sizeof *d);
  d->j = D->pair[k].j;
  d->jm = D->pair[k].jm;
  if (pair_setup(p, p->task[t], d->j, d, sc) != ARKCOS_OK) return ARKCOS_ENOMEM;
  const size_t need = pair_xlen(p->geom->rings, d) + 8;
  if (need > *xcap) {
    double *nx = realloc(*x, sizeof(double) * need);
    if (!nx) return ARKCOS_ENOMEM;
    *x = nx;
    *xcap = need;
  }
  return ARKCOS_OK;
}

static void scratch_free(dscratch *sc) {
  free(sc->b0);
  free(sc->wofs);
  free(sc->wlen);
  free(sc->rev);
  free(sc->rsum);
  free(sc->w);
  free(sc->wi);
  free(sc->num);
  free(sc->rws);
  free(sc->wlo);
  free(sc->wcnt);
}

/* Adds pair d's row sums to acc (ring i's n_i values): each row's weights
 * summed once, added to every output pixel the row serves (its lanes or
 * periods). */
static void pair_row_sums(const dpair *d, double *acc) {
  const int64_t per = d->lanes * d->reps; /* row a serves pixels a + r P, r < per */
  if (d->konst || d->rsum) { /* sums known: lane by lane, contiguous (one addition each, as below) */
    for (int64_t r = 0; r < per; r++) {
      double *ar = acc + r * d->P;
      if (d->konst)
#pragma omp simd
        for (int64_t a = 0; a < d->P; a++) ar[a] += (double)d->wlen[a] * d->wconst;
      else
#pragma omp simd
        for (int64_t a = 0; a < d->P; a++) ar[a] += d->rsum[a];
    }
    return;
  }
  for (int64_t a = 0; a < d->P; a++) {
    const int64_t len = d->wlen[a], o = d->wofs[a];
    double s = 0;
    if (d->w)
      for (int64_t l = 0; l < len; l++) s += d->w[o + l];
    else
      for (int64_t l = 0; l < len; l++) s += (double)d->wf[o + l];
    for (int64_t r = 0; r < per; r++) acc[a + r * d->P] += s;
  }
}

double arkcos_direct_fly_bytes(const arkcos_plan *p, int lo, int hi, int nt) {
  const arkcos_ring *rg = p->geom->rings;
  double pairs = 0, sums = 0, row = 0;
  for (int t = lo; t < hi; t++) {
    const int i = p->task[t];
    int n = 0;
    for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
      if (!arkcos_pair_is_direct(p, i, j)) continue;
      const double hw = pair_halfwidth(p, i, j);
      if (hw < 0) continue;
      n++;
      /* one pair's rows and weights (n_i / 4 rows of the window's width,
       * three int64 and a flag each) and its input buffer */
      const double w = 2 * hw + 3 < (double)rg[j].nph ? 2 * hw + 3 : (double)rg[j].nph;
      const double b = (double)rg[i].nph / 4 * (25 + (p->opt.spin == 2 ? 16 : 8) * w) +
                       (p->opt.spin == 2 ? 16 : 8) * 8 * ((double)rg[j].nph / 4 + w);
      if (b > row) row = b;
    }
    pairs += n;
    if (n && p->opt.spin == 0) sums += (double)rg[i].nph;
  }
  return pairs * sizeof(dpair) + 8 * sums + 8.0 * (hi - lo + 1) + (double)nt * row;
}

/* Bytes the direct tables of plan p's tasks [lo, hi) will hold, estimated
 * before they are built: per pair, the stored rows (n_i / 4 quarter-turn rows, half of
 * them after the azimuth reflection) times the window's width, in doubles. */
double arkcos_direct_estimate_bytes(const arkcos_plan *p, int lo, int hi) {
  const arkcos_ring *rg = p->geom->rings;
  double vals = 0;
  for (int t = lo; t < hi; t++) {
    const int i = p->task[t];
    for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
      if (!arkcos_pair_is_direct(p, i, j)) continue;
      const double hw = pair_halfwidth(p, i, j);
      if (hw < 0) continue;
      const double w = 2 * hw + 1 < (double)rg[j].nph ? 2 * hw + 1 : (double)rg[j].nph;
      /* a top-hat's scalar pairs hold their rows' extents only (konst) */
      vals += p->kf.type == ARKCOS_KERNEL_TOPHAT && p->opt.spin == 0 ? (double)rg[i].nph / 4 * 25 / 8
                                                                       : (double)rg[i].nph / 8 * w;
    }
  }
  return (p->opt.spin == 2 ? 16 : 8) * vals;
}

/* For a plan without tables: per pair, the rows a = k P / 4, k < 4 (rows
 * differ only by the sub-pixel shift of their windows), their largest sum
 * of |W| raised by 25 %, and the longest window + 2. */
void arkcos_direct_task_sums(const arkcos_plan *p, int t, double *dsum, double *dterms) {
  const arkcos_ring *rg = p->geom->rings;
  const int i = p->task[t];
  *dsum = *dterms = 0;
  for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
    if (!arkcos_pair_is_direct(p, i, j)) continue;
    const double hw = pair_halfwidth(p, i, j);
    if (hw < 0) continue;
    const int64_t ni = rg[i].nph, nj = rg[j].nph, P = ni / (gcd64(ni, nj) % 4 == 0 ? 4 : 1);
    double best = 0;
    int64_t longest = 0;
    kgeom kg; /* a top-hat's rows from the geometry: len |w_j K| each */
    const int geo = kgeom_init(p, i, j, hw, &kg) == ARKCOS_OK;
    for (int k = 0; k < 4; k++) {
      double sum, c;
      int64_t f;
      const int64_t len = geo ? kgeom_row(p, &kg, k * P / 4, &f, &c) : row_extent(p, i, j, hw, k * P / 4, &sum);
      if (geo) sum = (double)len * fabs(kg.wj * p->kf.norm);
      if (sum > best) best = sum;
      if (len > longest) longest = len;
    }
    *dsum += 1.25 * best;
    *dterms += (double)longest + 3;
  }
}

/* Lists the direct pairs of every task (those the kernel reaches). */
static int direct_list(const arkcos_plan *p, arkcos_direct *D) {
  int n = 0;
  for (int pass = 0; pass < 2; pass++) {
    n = 0;
    for (int t = 0; t < p->ntasks; t++) {
      const int i = p->task[t], i2 = p->mirror[i];
      if (pass) D->first[t] = n;
      if (t < p->task_lo || t >= p->task_hi) continue; /* another band's (MPI) */
      for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
        if (!arkcos_pair_is_direct(p, i, j) || pair_halfwidth(p, i, j) < 0) continue;
        if (pass) {
          D->pair[n].j = j;
          D->pair[n].jm = i2 >= 0 && i2 != i ? p->mirror[j] : -1;
        }
        n++;
      }
    }
    if (!pass) {
      D->first = malloc(sizeof(int) * (size_t)(p->ntasks + 1));
      D->pair = calloc(n ? (size_t)n : 1, sizeof(dpair));
      if (!D->first || !D->pair) return ARKCOS_ENOMEM;
    }
  }
  D->first[p->ntasks] = n;
  return ARKCOS_OK;
}

int arkcos_direct_create(arkcos_plan *p, int nthreads, arkcos_error *err) {
  arkcos_direct *D = calloc(1, sizeof *D);
  if (!D) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  p->direct = D;
  D->ntasks = p->ntasks;
  if (nthreads <= 0) nthreads = omp_get_max_threads();
  D->nthreads = nthreads;
  if (direct_list(p, D)) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  const int npair = D->first[p->ntasks];
  if (p->direct_fly) { /* no tables: the pair lists, and room for A(1)'s row sums */
    D->fly = 1;
    int64_t n = 0;
    if (p->opt.spin == 0) {
      D->cofs = malloc(sizeof(int64_t) * (size_t)(p->ntasks + 1));
      if (!D->cofs) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
      for (int t = 0; t < p->ntasks; t++) {
        D->cofs[t] = D->first[t + 1] > D->first[t] ? n : -1;
        if (D->cofs[t] >= 0) n += p->geom->rings[p->task[t]].nph;
      }
      D->csum = malloc(sizeof(double) * (size_t)(n + 1));
      if (!D->csum) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory (A(1)'s direct sums, %.1f MB)",
                                      8.0 * (double)n / 1e6);
    }
    p->bytes += sizeof(dpair) * (size_t)npair + 8 * (size_t)n;
    return ARKCOS_OK;
  }
  int bad = 0;
  size_t vals = 0, xlen = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads) reduction(| : bad) reduction(+ : vals) \
    reduction(max : xlen)
  for (int t = 0; t < p->ntasks; t++)
    for (int k = D->first[t]; k < D->first[t + 1]; k++) {
      dpair *d = &D->pair[k];
      if (pair_setup(p, p->task[t], d->j, d, NULL) != ARKCOS_OK) {
        bad = 1;
        continue;
      }
      vals += (size_t)((d->wi ? 2 : 1) * d->nw + 3 * d->P);
      const size_t xl = pair_xlen(p->geom->rings, d);
      if (xl > xlen) xlen = xl;
    }
  D->xlen = (xlen + 7) / 8 * 8;
  D->xbuf = malloc(sizeof(double) * (D->xlen * (size_t)nthreads + 1));
  if (bad || !D->xbuf)
    return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory (direct ring pairs need %.1f MB)",
                       8.0 * (double)vals / 1e6);
  p->bytes += 8 * vals + sizeof(dpair) * (size_t)npair + sizeof(double) * D->xlen * (size_t)nthreads;
  return ARKCOS_OK;
}

typedef double v4d __attribute__((vector_size(32)));

/* Lanes 4: x[(b - bmin) 8 + r] = ring j at b + r sj, x[.. + 4 + r] = ring jm
 * there (the mirror's input), for the rows' whole range of b. */
static void lanes_input(const arkcos_ring *rg, const dpair *d, const double *in, double *x) {
  const int64_t nj = rg[d->j].nph, nb = d->bmax - d->bmin + d->maxlen;
  const double *xj = in + rg[d->j].ofs, *xm = d->jm >= 0 ? in + rg[d->jm].ofs : xj;
  int64_t q[4];
  for (int r = 0; r < 4; r++) q[r] = wrap64(d->bmin + r * d->sj, nj);
  for (int64_t b = 0; b < nb;) { /* runs in which no lane's ring index wraps */
    int64_t cnt = nb - b;
    for (int r = 0; r < 4; r++)
      if (nj - q[r] < cnt) cnt = nj - q[r];
    const double *a0 = xj + q[0], *a1 = xj + q[1], *a2 = xj + q[2], *a3 = xj + q[3];
    const double *m0 = xm + q[0], *m1 = xm + q[1], *m2 = xm + q[2], *m3 = xm + q[3];
    double *o = x + 8 * b;
    for (int64_t k = 0; k < cnt; k++, o += 8) {
      o[0] = a0[k];
      o[1] = a1[k];
      o[2] = a2[k];
      o[3] = a3[k];
      o[4] = m0[k];
      o[5] = m1[k];
      o[6] = m2[k];
      o[7] = m3[k];
    }
    b += cnt;
    for (int r = 0; r < 4; r++)
      if ((q[r] += cnt) == nj) q[r] = 0;
  }
}

/* Lanes 4: y[a + r P] += sum_l w_al x_j(b0_a + l + r sj), r < 4, and the
 * same weights on the mirror rings, as two vectors of four lanes; a row
 * marked rev reads its weights backwards. WT: double or float weights
 * (products and sums in double either way). */
#define LANES_APPLY(NAME, WT, FIELD)                                           \
  static void NAME(const dpair *d, const double *x, double *y, double *ym) {  \
    for (int64_t a = 0; a < d->P; a++) {                                       \
      const WT *wa = d->FIELD + d->wofs[a];                                    \
      const int64_t len = d->wlen[a];                                          \
      const double *xa = x + 8 * (d->b0[a] - d->bmin);                         \
      v4d s = {0, 0, 0, 0}, t = {0, 0, 0, 0};                                  \
      const int64_t l0 = d->rev[a] ? len - 1 : 0, dl = d->rev[a] ? -1 : 1;     \
      for (int64_t l = 0; l < len; l++) {                                      \
        v4d u, v;                                                              \
        memcpy(&u, xa + 8 * l, sizeof u);                                      \
        memcpy(&v, xa + 8 * l + 4, sizeof v);                                  \
        const double wl = (double)wa[l0 + dl * l];                             \
        s += wl * u;                                                           \
        t += wl * v;                                                           \
      }                                                                        \
      for (int r = 0; r < 4; r++) y[a + r * d->P] += s[r];                     \
      if (ym)                                                                  \
        for (int r = 0; r < 4; r++) ym[a + r * d->P] += t[r];                  \
    }                                                                          \
  }
LANES_APPLY(lanes_apply_d, double, w)
LANES_APPLY(lanes_apply_f, float, wf)
#undef LANES_APPLY

/* Lanes 4, a konst pair: y[a + r P] += wconst sum_l x_j(b0_a + l + r sj),
 * each row's sum the difference of two prefix sums of the gathered input
 * (after x: ph, the running sums, and pl, their rounding errors by
 * TwoSum), so a row costs the same whatever its length (a 2 degree top-hat
 * reads rows of up to a few hundred pixels). The difference errs by about
 * u |row sum| + u^2 sum_b |x_b|, as a direct sum's rounding, within the
 * bound's per-pair 64 u (arkcos_plan_set_bound). */
static void lanes_apply_c(const dpair *d, double *x, double *y, double *ym) {
  const int64_t nb = d->bmax - d->bmin + d->maxlen;
  double *ph = x + 8 * nb, *pl = ph + 8 * (nb + 1);
  v4d h = {0, 0, 0, 0}, l = h, hm = h, lm = h;
  memcpy(ph, &h, sizeof h);
  memcpy(ph + 4, &h, sizeof h);
  memcpy(pl, &h, sizeof h);
  memcpy(pl + 4, &h, sizeof h);
  for (int64_t b = 0; b < nb; b++) {
    v4d u, v;
    memcpy(&u, x + 8 * b, sizeof u);
    memcpy(&v, x + 8 * b + 4, sizeof v);
    v4d sh = h + u, bb = sh - h; /* TwoSum */
    l += (h - (sh - bb)) + (u - bb);
    h = sh;
    sh = hm + v;
    bb = sh - hm;
    lm += (hm - (sh - bb)) + (v - bb);
    hm = sh;
    memcpy(ph + 8 * (b + 1), &h, sizeof h);
    memcpy(ph + 8 * (b + 1) + 4, &hm, sizeof hm);
    memcpy(pl + 8 * (b + 1), &l, sizeof l);
    memcpy(pl + 8 * (b + 1) + 4, &lm, sizeof lm);
  }
  for (int64_t a = 0; a < d->P; a++) {
    const int64_t len = d->wlen[a];
    if (!len) continue;
    const int64_t o = 8 * (d->b0[a] - d->bmin), e = o + 8 * len;
    v4d h0, h1, l0, l1, g0, g1, k0, k1;
    memcpy(&h0, ph + o, sizeof h0);
    memcpy(&h1, ph + e, sizeof h1);
    memcpy(&l0, pl + o, sizeof l0);
    memcpy(&l1, pl + e, sizeof l1);
    memcpy(&g0, ph + o + 4, sizeof g0);
    memcpy(&g1, ph + e + 4, sizeof g1);
    memcpy(&k0, pl + o + 4, sizeof k0);
    memcpy(&k1, pl + e + 4, sizeof k1);
    const v4d s = (h1 - h0) + (l1 - l0), t = (g1 - g0) + (k1 - k0);
    for (int r = 0; r < 4; r++) y[a + r * d->P] += d->wconst * s[r];
    if (ym)
      for (int r = 0; r < 4; r++) ym[a + r * d->P] += d->wconst * t[r];
  }
}

/* Lanes 1: ring j laid out three times (any window of <= n_j pixels that
 * starts in [0, 2 n_j) is contiguous); y[a + r P] += sum_l w_al x(b0_a + l + r sj). */
static void loop_apply(const arkcos_ring *rj, const dpair *d, const double *in, double *x, double *y) {
  const int64_t nj = rj->nph;
  for (int c = 0; c < 3; c++) memcpy(x + c * nj, in + rj->ofs, sizeof(double) * (size_t)nj);
  for (int64_t a = 0; a < d->P; a++) {
    const int64_t len = d->wlen[a], b = wrap64(d->b0[a], nj), last = d->rev[a] ? len - 1 : 0;
    const int64_t dir = d->rev[a] ? -1 : 1, o = d->wofs[a];
    for (int64_t r = 0; r < d->reps; r++) {
      const double *xa = x + b + r * d->sj;
      double s = 0;
      if (d->konst) {
        for (int64_t l = 0; l < len; l++) s += xa[l];
        s *= d->wconst;
      } else if (d->w)
        for (int64_t l = 0; l < len; l++) s += d->w[o + last + dir * l] * xa[l];
      else
        for (int64_t l = 0; l < len; l++) s += (double)d->wf[o + last + dir * l] * xa[l];
      y[a + r * d->P] += s;
    }
  }
}

/* Pair d of task t (output ring i, mirror i2) on the map in, into out */
static void pair_apply(const arkcos_plan *p, const dpair *d, int t, const double *in, double *x, double *out) {
  const arkcos_ring *rg = p->geom->rings;
  const int i = p->task[t], i2 = p->mirror[i];
  if (d->lanes == 4) {
    lanes_input(rg, d, in, x);
    if (d->konst)
      lanes_apply_c(d, x, out + rg[i].ofs, d->jm >= 0 ? out + rg[i2].ofs : NULL);
    else
      (d->w ? lanes_apply_d : lanes_apply_f)(d, x, out + rg[i].ofs, d->jm >= 0 ? out + rg[i2].ofs : NULL);
    return;
  }
  loop_apply(&rg[d->j], d, in, x, out + rg[i].ofs);
  if (d->jm >= 0) loop_apply(&rg[d->jm], d, in, x, out + rg[i2].ofs);
}

/* See plan_internal.h: the room for A(1)'s row sums given back */
void arkcos_direct_drop_constant_sums(arkcos_plan *p) {
  arkcos_direct *D = p->direct;
  if (!D || !D->csum || D->cvalid) return;
  int64_t n = 0;
  for (int t = 0; t < D->ntasks; t++)
    if (D->cofs[t] >= 0) n += p->geom->rings[p->task[t]].nph;
  free(D->csum);
  free(D->cofs);
  D->csum = NULL;
  D->cofs = NULL;
  p->bytes -= 8 * (size_t)n;
}

/* Stage "reduction", direct part: adds every direct pair's sums to out,
 * task by task (a task's output rings are its own). With the weights on
 * the fly each pair is set up first, and a scalar plan's first execute
 * keeps A(1)'s row sums (D->csum). */
int arkcos_direct_apply(const arkcos_plan *p, const double *in, double *out, double *secs) {
  return arkcos_direct_apply_n(p, 1, &in, &out, secs);
}

/* The same for n maps (1 or 2) at once: each pair set up once (with the
 * weights on the fly, once instead of n times) and applied to every map in
 * turn, so that each output receives the same sums in the same order as
 * from its own call (bit-identical). */
int arkcos_direct_apply_n(const arkcos_plan *p, int n, const double *const *in, double *const *out,
                          double *secs) {
  arkcos_direct *D = p->direct;
  *secs = 0;
  if (!D || D->first[D->ntasks] == 0) return ARKCOS_OK;
  const double t0 = omp_get_wtime();
  const int keep = D->fly && D->csum && !D->cvalid;
  int bad = 0;
#pragma omp parallel num_threads(D->nthreads) reduction(| : bad)
  {
    double *x = D->fly ? NULL : D->xbuf + (size_t)omp_get_thread_num() * D->xlen;
    size_t xcap = 0;
    dscratch sc = {0};
#pragma omp for schedule(dynamic, 1)
    for (int t = 0; t < D->ntasks; t++) {
      double *acc = keep && D->cofs[t] >= 0 ? D->csum + D->cofs[t] : NULL;
      if (acc) memset(acc, 0, sizeof(double) * (size_t)p->geom->rings[p->task[t]].nph);
      for (int k = D->first[t]; k < D->first[t + 1] && !bad; k++) {
        if (!D->fly) {
          for (int m = 0; m < n; m++) pair_apply(p, &D->pair[k], t, in[m], x, out[m]);
          continue;
        }
        dpair d;
        if (fly_setup(p, D, t, k, &d, &sc, &x, &xcap)) {
          bad = 1;
          break;
        }
        for (int m = 0; m < n; m++) pair_apply(p, &d, t, in[m], x, out[m]);
        if (acc) pair_row_sums(&d, acc);
      }
    }
    if (D->fly) free(x);
    scratch_free(&sc);
  }
  if (keep && !bad) D->cvalid = 1;
  *secs = omp_get_wtime() - t0;
  return bad ? ARKCOS_ENOMEM : ARKCOS_OK;
}

/* ------------------------------------------------------- spin-2 pairs */

/* Lanes 4, spin 2: x[(b - bmin) 16 + r] = Q of ring j at b + r sj, then U,
 * then Q and U of ring jm (the mirror's input). */
static void lanes_input2(const arkcos_ring *rg, const dpair *d, const double *q, const double *u, double *x) {
  const int64_t nj = rg[d->j].nph, nb = d->bmax - d->bmin + d->maxlen;
  const int64_t oj = rg[d->j].ofs, om = d->jm >= 0 ? rg[d->jm].ofs : oj;
  for (int r = 0; r < 4; r++) { /* lane by lane, the ring index wrapped once */
    int64_t k = wrap64(d->bmin + r * d->sj, nj);
    for (int64_t b = 0; b < nb; b++) {
      x[16 * b + r] = q[oj + k];
      x[16 * b + 4 + r] = u[oj + k];
      x[16 * b + 8 + r] = q[om + k];
      x[16 * b + 12 + r] = u[om + k];
      if (++k == nj) k = 0;
    }
  }
}

/* Lanes 4, spin 2: P_i += W P_j with complex W = w + i wi, and on the
 * mirror rings P_i' += conj(W) P_j' (the north/south mirror conjugates the
 * transport); a row read backwards is its partner's conjugate (reflection). */
static void lanes_apply2(const dpair *d, const double *x, double *yq, double *yu, double *mq, double *mu) {
  for (int64_t a = 0; a < d->P; a++) {
    const double *wr = d->w + d->wofs[a], *wi = d->wi + d->wofs[a];
    const int64_t len = d->wlen[a];
    const double *xa = x + 16 * (d->b0[a] - d->bmin);
    const int64_t l0 = d->rev[a] ? len - 1 : 0, dl = d->rev[a] ? -1 : 1;
    const double sg = d->rev[a] ? -1.0 : 1.0;
    v4d sq = {0, 0, 0, 0}, su = sq, tq = sq, tu = sq;
    for (int64_t l = 0; l < len; l++) {
      v4d xq, xu, zq, zu;
      memcpy(&xq, xa + 16 * l, sizeof xq);
      memcpy(&xu, xa + 16 * l + 4, sizeof xu);
      memcpy(&zq, xa + 16 * l + 8, sizeof zq);
      memcpy(&zu, xa + 16 * l + 12, sizeof zu);
      const double c = wr[l0 + dl * l], e = sg * wi[l0 + dl * l];
      sq += c * xq - e * xu;
      su += c * xu + e * xq;
      tq += c * zq + e * zu;
      tu += c * zu - e * zq;
    }
    for (int r = 0; r < 4; r++) {
      yq[a + r * d->P] += sq[r];
      yu[a + r * d->P] += su[r];
    }
    if (mq)
      for (int r = 0; r < 4; r++) {
        mq[a + r * d->P] += tq[r];
        mu[a + r * d->P] += tu[r];
      }
  }
}

/* Lanes 1, spin 2: rings laid out three times (Q at x, U at x + 3 n_j);
 * conj = 1 for the mirror rings. */
static void loop_apply2(const arkcos_ring *rj, const dpair *d, const double *q, const double *u, double *x,
                        int conj, double *yq, double *yu) {
  const int64_t nj = rj->nph;
  double *xu = x + 3 * nj;
  for (int c = 0; c < 3; c++) {
    memcpy(x + c * nj, q + rj->ofs, sizeof(double) * (size_t)nj);
    memcpy(xu + c * nj, u + rj->ofs, sizeof(double) * (size_t)nj);
  }
  for (int64_t a = 0; a < d->P; a++) {
    const int64_t len = d->wlen[a], b = wrap64(d->b0[a], nj), last = d->rev[a] ? len - 1 : 0;
    const int64_t dir = d->rev[a] ? -1 : 1, o = d->wofs[a];
    const double sg = (d->rev[a] ? -1.0 : 1.0) * (conj ? -1.0 : 1.0);
    for (int64_t r = 0; r < d->reps; r++) {
      const double *xa = x + b + r * d->sj, *ya = xu + b + r * d->sj;
      double sq = 0, su = 0;
      for (int64_t l = 0; l < len; l++) {
        const double c = d->w[o + last + dir * l], e = sg * d->wi[o + last + dir * l];
        sq += c * xa[l] - e * ya[l];
        su += c * ya[l] + e * xa[l];
      }
      yq[a + r * d->P] += sq;
      yu[a + r * d->P] += su;
    }
  }
}

static void pair_apply2(const arkcos_plan *p, const dpair *d, int t, const double *q, const double *u, double *x,
                        double *q_out, double *u_out) {
  const arkcos_ring *rg = p->geom->rings;
  const int i = p->task[t], i2 = p->mirror[i];
  if (d->lanes == 4) {
    lanes_input2(rg, d, q, u, x);
    const int m = d->jm >= 0;
    lanes_apply2(d, x, q_out + rg[i].ofs, u_out + rg[i].ofs, m ? q_out + rg[i2].ofs : NULL,
                 m ? u_out + rg[i2].ofs : NULL);
    return;
  }
  loop_apply2(&rg[d->j], d, q, u, x, 0, q_out + rg[i].ofs, u_out + rg[i].ofs);
  if (d->jm >= 0) loop_apply2(&rg[d->jm], d, q, u, x, 1, q_out + rg[i2].ofs, u_out + rg[i2].ofs);
}

int arkcos_direct_apply_spin2(const arkcos_plan *p, const double *q, const double *u, double *q_out,
                              double *u_out, double *secs) {
  const arkcos_direct *D = p->direct;
  *secs = 0;
  if (!D || D->first[D->ntasks] == 0) return ARKCOS_OK;
  const double t0 = omp_get_wtime();
  int bad = 0;
#pragma omp parallel num_threads(D->nthreads) reduction(| : bad)
  {
    double *x = D->fly ? NULL : D->xbuf + (size_t)omp_get_thread_num() * D->xlen;
    size_t xcap = 0;
    dscratch sc = {0};
#pragma omp for schedule(dynamic, 1)
    for (int t = 0; t < D->ntasks; t++)
      for (int k = D->first[t]; k < D->first[t + 1] && !bad; k++) {
        if (!D->fly) {
          pair_apply2(p, &D->pair[k], t, q, u, x, q_out, u_out);
          continue;
        }
        dpair d;
        if (fly_setup(p, D, t, k, &d, &sc, &x, &xcap)) {
          bad = 1;
          break;
        }
        pair_apply2(p, &d, t, q, u, x, q_out, u_out);
      }
    if (D->fly) free(x);
    scratch_free(&sc);
  }
  *secs = omp_get_wtime() - t0;
  return bad ? ARKCOS_ENOMEM : ARKCOS_OK;
}

/* ------------------------------------------------------- constant maps */

/* The direct pairs on a constant map c: per task, the rows' weight sums
 * over its output ring (pair_row_sums, pair by pair, from zero; with the
 * weights on the fly those kept by the first execute, or set up now and
 * kept), then c times them added to the ring and its mirror; no input
 * gathered. Returns the seconds, or -1 out of memory. */
/* Task t's direct row sums into acc (its ring's n_i values): each pair's
 * rows from the tables, or set up on the fly in the thread's scratch.
 * 0, or ARKCOS_ENOMEM. */
static int task_row_sums(const arkcos_plan *p, const arkcos_direct *D, int t, double *acc, dscratch *sc,
                         double **x, size_t *xcap) {
  memset(acc, 0, sizeof(double) * (size_t)p->geom->rings[p->task[t]].nph);
  for (int k = D->first[t]; k < D->first[t + 1]; k++) {
    if (!D->fly) {
      pair_row_sums(&D->pair[k], acc);
      continue;
    }
    dpair d;
    if (fly_setup(p, D, t, k, &d, sc, x, xcap)) return ARKCOS_ENOMEM;
    pair_row_sums(&d, acc);
  }
  return ARKCOS_OK;
}

static double direct_apply_constant(const arkcos_plan *p, double c, double *out) {
  arkcos_direct *D = p->direct;
  if (!D || D->first[D->ntasks] == 0) return 0;
  const arkcos_ring *rg = p->geom->rings;
  const double t0 = omp_get_wtime();
  const int keep = D->fly && D->csum && !D->cvalid;
  int bad = 0;
#pragma omp parallel num_threads(D->nthreads) reduction(| : bad)
  {
    double *x = NULL, *own = NULL;
    size_t xcap = 0;
    dscratch sc = {0};
#pragma omp for schedule(dynamic, 1)
    for (int t = 0; t < D->ntasks; t++) {
      if (D->first[t + 1] == D->first[t] || bad) continue;
      const int i = p->task[t], i2 = p->mirror[i];
      const int64_t ni = rg[i].nph;
      double *acc = D->csum ? D->csum + D->cofs[t] : NULL;
      if (!acc) { /* tables: a thread's buffer */
        double *nb = realloc(own, sizeof(double) * (size_t)ni);
        if (!nb) {
          bad = 1;
          continue;
        }
        own = acc = nb;
      }
      if (!D->cvalid && task_row_sums(p, D, t, acc, &sc, &x, &xcap)) {
        bad = 1;
        continue;
      }
      double *y = out + rg[i].ofs, *ym = i2 >= 0 && i2 != i ? out + rg[i2].ofs : NULL;
      for (int64_t a = 0; a < ni; a++) y[a] += c * acc[a];
      if (ym)
        for (int64_t a = 0; a < ni; a++) ym[a] += c * acc[a];
    }
    free(x);
    free(own);
    scratch_free(&sc);
  }
  if (bad) return -1;
  if (keep) D->cvalid = 1;
  return omp_get_wtime() - t0;
}

/* The execute of a constant map c, where the plan allows it: on two rings
 * of the grid's length the Fourier path is the exact circular convolution,
 * so a constant input ring gives the constant c w_j sum_n K(delta + 2 pi n
 * / L) on every output pixel; the smooth caps' Fourier pairs of unequal
 * rings give Poisson's sum of the kernel's azimuthal spectrum at the input
 * ring's harmonics (constant_rings.c); the direct pairs add their row sums
 * times c (direct_apply_constant). Exact plans with direct caps, on a grid
 * of equal rings or with smooth caps; not the inexact caps, paper mode or
 * spin 2. No ring FFTs, kernel spectra or gathered input. This is the
 * smoother's A(1) (ring quadrature divides by it below 8 pixels per FWHM;
 * arkcos smooth --normalize), under MPI each band's. Every ring the plan's
 * tasks read must hold c at every pixel (a scan that stops at the first
 * other value); else returns 0, out untouched. */
static int constant_execute(arkcos_plan *p, double c, double *out, int nthreads);
static int constant_eligible(const arkcos_plan *p) {
  const arkcos_geometry *g = p->geom;
  if (p->opt.mode != ARKCOS_MODE_ENHANCED || p->opt.spin != 0 || p->task_hi <= p->task_lo || p->harmonic ||
      p->backend != ARKCOS_BACKEND_CPU || !p->impl)
    return 0;
  if (!p->direct_caps && !p->smooth_caps)
    for (int j = 0; j < g->nrings; j++)
      if (g->rings[j].nph != p->L) return 0; /* unequal rings on the Fourier path */
  return 1;
}

int arkcos_direct_execute_constant(arkcos_plan *p, const double *in, double *out, int nthreads) {
  const arkcos_geometry *g = p->geom;
  const arkcos_ring *rg = g->rings;
  if (p->no_constant || !constant_eligible(p)) return 0;
  unsigned char *need = calloc((size_t)g->nrings, 1);
  if (!need) return 0;
  arkcos_plan_rings_needed(p, p->task_lo, p->task_hi, need);
  int first = 0;
  while (first < g->nrings && !need[first]) first++;
  const double c = first < g->nrings ? in[rg[first].ofs] : 0;
  int other = first == g->nrings;
  for (int64_t k = 0; !other && k < rg[first].nph; k++) /* most maps stop at their second pixel */
    other = !(in[rg[first].ofs + k] == c);
#pragma omp parallel for schedule(dynamic, 16) num_threads(nthreads > 0 ? nthreads : omp_get_max_threads()) \
    reduction(| : other)
  for (int j = first + 1; j < g->nrings; j++) { /* the rest, a constant map's whole scan, in parallel */
    int o = 0;
    for (int64_t k = 0; need[j] && !other && !o && k < rg[j].nph; k++) o = !(in[rg[j].ofs + k] == c);
    other |= o;
  }
  free(need);
  if (other) return 0;
  return constant_execute(p, c, out, nthreads);
}

int arkcos_plan_constant(arkcos_plan *p, double c, double *out, int nthreads) {
  return constant_eligible(p) && !p->mpi ? constant_execute(p, c, out, nthreads) : 0;
}

/* See plan_internal.h: maps divided by A(1) made ring by ring. Per task,
 * the same values as constant_execute's (its Fourier rings, then the
 * direct row sums added, c = 1) in a thread's buffer of one ring. */
int arkcos_plan_divide_constant(arkcos_plan *p, double *const *maps, int nmaps, int64_t *nonpos,
                                arkcos_stage_times *times, int nthreads, double *keep1, int64_t nkeep) {
  *nonpos = 0;
  memset(times, 0, sizeof *times);
  arkcos_direct *D = p->direct;
  const int direct = D && D->first[D->ntasks] > 0;
  if (!constant_eligible(p) || p->mpi || (direct && !D->fly)) return 0;
  const arkcos_ring *rg = p->geom->rings;
  const double t0 = omp_get_wtime();
  const int keep = direct && D->csum && !D->cvalid;
  int64_t maxn = 0;
  for (int t = p->task_lo; t < p->task_hi; t++)
    if (rg[p->task[t]].nph > maxn) maxn = rg[p->task[t]].nph;
  int bad = 0;
  int64_t np = 0;
  double t_direct = 0;
#pragma omp parallel num_threads(nthreads > 0 ? nthreads : omp_get_max_threads()) reduction(| : bad) \
    reduction(+ : np, t_direct)
  {
    double *y = malloc(sizeof *y * (size_t)maxn), *own = NULL, *x = NULL;
    size_t xcap = 0;
    dscratch sc = {0};
    bad |= !y;
#pragma omp for schedule(dynamic, 4)
    for (int t = p->task_lo; t < p->task_hi; t++) {
      if (bad) continue;
      const int i = p->task[t], i2 = p->mirror[i];
      const int64_t ni = rg[i].nph;
      /* the task's direct row sums: kept by the map's execute, else made */
      const double *acc = NULL;
      if (direct && D->first[t + 1] > D->first[t]) {
        const double td = omp_get_wtime();
        double *a = D->csum ? D->csum + D->cofs[t] : NULL;
        if (!a) { /* dropped (arkcos_direct_drop_constant_sums): a thread's buffer */
          if (!own) own = malloc(sizeof *own * (size_t)maxn);
          a = own;
        }
        if (!a) {
          bad = 1;
          continue;
        }
        if (!D->cvalid && task_row_sums(p, D, t, a, &sc, &x, &xcap)) {
          bad = 1;
          continue;
        }
        acc = a;
        t_direct += omp_get_wtime() - td;
      }
      for (int r = 0; r < 1 + (i2 >= 0 && i2 != i) && !bad; r++) {
        const int ir = r ? i2 : i;
        if (arkcos_constant_ring(p, ir, i, r, 1.0, y)) {
          bad = 1;
          break;
        }
        if (acc)
          for (int64_t a = 0; a < ni; a++) y[a] += acc[a]; /* c acc[a], c = 1, exactly */
        /* the first and last nkeep pixels: A(1) kept, the maps not divided,
         * not counted (the caller divides and counts them, corrected) */
        const int64_t o = rg[ir].ofs, npx = p->geom->npix;
        const int kept = keep1 && (o < nkeep || o + ni > npx - nkeep);
        for (int64_t a = 0; a < ni; a++)
          np += !(y[a] > 0) && !(kept && (o + a < nkeep || o + a >= npx - nkeep));
        if (kept)
          for (int64_t a = 0; a < ni; a++) {
            const int64_t q = o + a;
            if (q < nkeep) keep1[q] = y[a];
            else if (q >= npx - nkeep) keep1[nkeep + q - (npx - nkeep)] = y[a];
          }
        for (int m = 0; m < nmaps; m++) {
          double *z = maps[m] + o;
          for (int64_t a = 0; a < ni; a++)
            if (z[a] != ARKCOS_UNSEEN && !(kept && (o + a < nkeep || o + a >= npx - nkeep))) z[a] /= y[a];
        }
      }
    }
    free(y);
    free(own);
    free(x);
    scratch_free(&sc);
  }
  if (bad) return -1;
  if (keep) D->cvalid = 1;
  *nonpos = np;
  times->total = omp_get_wtime() - t0;
  times->reduction = times->total;
  times->direct = t_direct / (nthreads > 0 ? nthreads : omp_get_max_threads());
  arkcos_stages_add(&p->last, times); /* the map's execute and its division */
  return 1;
}

/* The constant map c's execute on an eligible plan: its tasks' output rings */
static int constant_execute(arkcos_plan *p, double c, double *out, int nthreads) {
  const arkcos_ring *rg = p->geom->rings;
  const double t0 = omp_get_wtime();
  int failed = 0;
#pragma omp parallel for schedule(dynamic, 4) num_threads(nthreads > 0 ? nthreads : omp_get_max_threads()) \
    reduction(| : failed)
  for (int t = p->task_lo; t < p->task_hi; t++) {
    const int i = p->task[t], i2 = p->mirror[i];
    failed |= arkcos_constant_ring(p, i, i, 0, c, out + rg[i].ofs) != 0;
    if (i2 >= 0 && i2 != i) failed |= arkcos_constant_ring(p, i2, i, 1, c, out + rg[i2].ofs) != 0;
  }
  if (failed) return 0; /* out of memory: the Fourier path writes every output ring */
  const double t_direct = direct_apply_constant(p, c, out);
  if (t_direct < 0) return 0; /* out of memory: the full execute writes every output ring */
  arkcos_stage_times *T = &p->last;
  memset(T, 0, sizeof *T);
  T->total = omp_get_wtime() - t0;
  T->reduction = T->total;
  T->direct = t_direct;
  return 1;
}

/* ------------------------------------------------------------- the bound */

/* sum_n |w_j K| over the kernel-grid samples of belt pair (i, j) */
static double fourier_pair_abs(const arkcos_plan *p, int i, int j, int *nsamp) {
  const arkcos_ring *rg = p->geom->rings;
  const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  const double sdt2 = sdt * sdt, ss = p->sin_theta[i] * p->sin_theta[j];
  const double half = arkcos_dphi_window(&p->kf, sdt2, ss);
  const double delta = rg[i].phi0 - rg[j].phi0;
  int64_t n0, n1;
  *nsamp = (int)arkcos_sample_range(half, delta, p->L, &n0, &n1);
  double s = 0;
  /* Gaussians and top-hats are >= 0 and fall with the angle, so the
   * samples of a window wider than 24 of them (wide kernels: the sum
   * would cost as much as a direct sum on the L grid) are bounded by the
   * integral over the window, by Simpson's rule on 16 intervals (5 %
   * added: the windows hold 8 to 16 sigma of a Gaussian, which Simpson's
   * rule integrates to 1e-3 with 16 intervals), plus the largest sample (a
   * unimodal function). The sum only scales the bound's rounding terms. */
  if (*nsamp > 24 && half < ARKCOS_PI && (p->kf.type == ARKCOS_KERNEL_GAUSSIAN || p->kf.type == ARKCOS_KERNEL_TOPHAT)) {
    enum { NI = 16 };
    const double hstep = 2 * half / NI;
    double integ = 0, kmax = 0;
    double num[NI + 1], val[NI + 1], tmp[2 * NI + 2];
    for (int q = 0; q <= NI; q++) num[q] = q;
    arkcos_kernel_batch(&p->kf, rg[j].weight, sdt2, ss, -half, hstep, num, NI + 1, val, tmp);
    for (int q = 0; q <= NI; q++) {
      const double v = fabs(val[q]);
      integ += (q == 0 || q == NI ? 1 : q % 2 ? 4 : 2) * v;
      if (v > kmax) kmax = v;
    }
    /* the window's ends sit on the cutoff, where K may jump: its value
     * just inside, not the zero beyond */
    const double edge = fabs(rg[j].weight * arkcos_kfun_d2(&p->kf, 4.0 * (sdt2 + ss * pow(sin(0.5 * half), 2)) * (1 - 1e-12)));
    integ += 2 * edge - 2 * fabs(rg[j].weight * arkcos_kfun_d2(&p->kf, 4.0 * (sdt2 + ss * pow(sin(0.5 * half), 2))));
    integ *= hstep / 3;
    return 1.05 * integ * (double)p->L / (2 * ARKCOS_PI) + (kmax > edge ? kmax : edge);
  }
  double val[ARKCOS_SAMPLES_CHUNK];
  for (int64_t b = n0; b <= n1; b += ARKCOS_SAMPLES_CHUNK) {
    const int64_t e = b + ARKCOS_SAMPLES_CHUNK - 1 < n1 ? b + ARKCOS_SAMPLES_CHUNK - 1 : n1;
    arkcos_kernel_samples(&p->kf, rg[j].weight, sdt2, ss, delta, p->L, b, e, val);
    for (int64_t l = 0; l <= e - b; l++) s += fabs(val[l]);
  }
  return s;
}

/* Smooth caps (plan.c, smooth_caps_exact): a cap pair's Fourier weights
 * differ from the exact ones by the kernel's jump at the cutoff, spread by
 * the band limit (Gibbs: at most about 1.09 times the jump near it, decaying
 * away from it), and by the aliasing of the kernel's azimuthal spectrum
 * beyond the oversampled grid, modelled as for a Gaussian of the kernel's
 * width at the belt's edge on the grid of q L points, exp(-(q L sigma)^2 / 4)
 * (the coarser grids toward the poles alias no more: cpu_impl.h). The
 * term per unit of sum |W| is 8 (level + aliasing): a model, not a proof,
 * held against the direct sum by tests/test_exact.c (smooth_caps), where
 * the measured error stays 8-80 times below it. */
static double smooth_caps_level(const arkcos_plan *p) {
  const int q = arkcos_caps_oversample(p);
  const double sigma = sqrt(0.5 / p->kf.inv2s2), ql = (double)q * (double)p->L * sigma;
  return 8 * (arkcos_kfun_cut_level(&p->kf) + exp(-0.25 * ql * ql));
}

/* The harmonic path (harmonic.c): the series cut at l_K differs from the
 * cut kernel by its jump at the cutoff, spread as Gibbs's oscillation (at
 * most about 1.09 times the jump, a term of 8 per unit of sum |W| as the
 * smooth caps'), and by the Gaussian's tail beyond l_K (below 1e-15 of
 * K(0): 5.5e-16 at 1 degree); the transforms' rounding grows with the terms of their sums,
 * modelled as (16 (l_K + 10 log2 L)) u. Per unit of sum_p w_p |K|, which
 * is the kernel's unit integral by a quadrature good to far better than
 * the 10 % added. A model, held against the direct sum by
 * tests/test_exact.c (harmonic). */
static double harmonic_bound(const arkcos_plan *p, double u, double lg) {
  const double level = arkcos_kfun_cut_level(&p->kf) + 1e-15;
  return 1.1 * (8 * level + 16 * ((double)p->harmonic_lmax + 10 * lg) * u);
}

/* Rounds task t's direct weights to float (half the memory and the
 * memory traffic); returns the bytes freed. */
static size_t task_to_float(arkcos_direct *D, int t) {
  size_t freed = 0;
  for (int k = D->first[t]; k < D->first[t + 1]; k++) {
    dpair *d = &D->pair[k];
    if (d->konst) continue; /* no weights stored */
    float *wf = malloc(sizeof(float) * (size_t)(d->nw + 1));
    if (!wf) return freed; /* keeps the double weights */
    for (int64_t q = 0; q < d->nw; q++) wf[q] = (float)d->w[q];
    free(d->w);
    d->w = NULL;
    d->wf = wf;
    freed += sizeof(float) * (size_t)d->nw;
  }
  return freed;
}

/* The plan's a-priori bound (docs/EXACTNESS.md): per output ring,
 *  direct pairs:  (n_terms + 64) u_d sum_b |W_ab|  (the sum's rounding,
 *                 n_terms the ring's direct terms, and 64 u_d for each
 *                 weight's own evaluation), plus 2^-24 sum_b |W_ab| where
 *                 the weights are held in float;
 *  Fourier pairs: (10 log2 L + K^2 + n_pairs + 16) u sqrt(L) sum_n |h_n|,
 *                 u the precision's unit roundoff: the FFTs' rounding in
 *                 the 2-norm (log2 L steps of <= 5 u), the Clenshaw sums'
 *                 (<= K^2 u sum |a_k|, K <= 64 their length; longer windows
 *                 take an FFT), the accumulation over pairs, and sqrt(L) from
 *                 the 2-norm to the max norm of a ring of L pixels;
 * and the plan's bound is the largest over output rings. With an accuracy
 * EPS > 0, a ring whose bound with float weights stays <= EPS gets them:
 * the cheaper path under the requested accuracy; single precision plans
 * get them at the default (exact to their own rounding). Sets p->bound. */
void arkcos_plan_set_bound(arkcos_plan *p, int single) {
  if (p->opt.mode == ARKCOS_MODE_PAPER || p->exactness[0]) { /* no certified bound */
    p->bound = INFINITY;
    return;
  }
  const double ud = 0x1p-53, u = single ? 0x1p-24 : ud;
  const double lg = log2((double)(p->L > 2 ? p->L : 2)), sq = sqrt((double)p->L);
  if (p->harmonic) {
    p->bound = harmonic_bound(p, u, lg) * (p->opt.spin == 2 ? 2 : 1); /* complex products: twice */
    return;
  }
  const double caps_term = p->smooth_caps ? smooth_caps_level(p) : 0;
  const arkcos_ring *rg = p->geom->rings;
  arkcos_direct *D = p->direct;
  double worst = 0;
  /* the Fourier pairs' sums of every task, in parallel (wide kernels have
   * many pairs): fs, their caps' part cs (smooth caps), counts np, kmx */
  const int nt = p->task_hi - p->task_lo;
  double *fs = calloc((size_t)(2 * nt + 1), sizeof(double)), *cs = fs ? fs + nt : NULL;
  int *np = calloc((size_t)(2 * nt + 1), sizeof(int)), *kmx = np ? np + nt : NULL;
  /* a plan whose direct pairs have no tables (GPU): their terms estimated */
  const int estimated = p->direct_caps && (!D || D->fly); /* weights on the fly too */
  double *gs = estimated ? calloc((size_t)(2 * nt + 1), sizeof(double)) : NULL;
  if (!fs || !np || (estimated && !gs)) { /* no memory for the bound: say none */
    free(fs);
    free(np);
    free(gs);
    p->bound = INFINITY;
    return;
  }
  const int nthr = p->opt.threads > 0 ? p->opt.threads : omp_get_max_threads();
  /* smooth caps (no direct pairs; the caps' term a model anyway): the sums
   * of every 4th ring (and the last), which vary slowly from ring to ring,
   * stand for the 3 after it, raised by 10 % below */
  const int stride = p->smooth_caps ? 4 : 1;
#pragma omp parallel for schedule(dynamic, 4) num_threads(nthr)
  for (int t = p->task_lo; t < p->task_hi; t++) {
    const int i = p->task[t], r = t - p->task_lo;
    if (gs) arkcos_direct_task_sums(p, t, &gs[r], &gs[nt + r]);
    if (r % stride && t != p->task_hi - 1) continue;
    for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
      if (arkcos_pair_is_direct(p, i, j)) continue;
      int ns;
      const double a = fourier_pair_abs(p, i, j, &ns);
      /* smooth caps: a cap pair's L-grid samples outnumber ring j's pixels
       * by L / n_j; its rounding scales with the pixels' weights, and so
       * does its caps' term (smooth_caps_level) */
      const int cap = rg[j].nph < p->L || rg[i].nph < p->L;
      const double dens = p->smooth_caps && rg[j].nph < p->L ? (double)rg[j].nph / (double)p->L : 1.0;
      fs[r] += a * dens;
      /* the band limit (cpu_pairspec.h, pair_len) drops the belt pairs'
       * modes beyond it too: their jump at the cutoff counts as the caps' */
      if (p->smooth_caps) cs[r] += a * (cap ? (double)rg[j].nph / (double)p->L : 1.0);
      if (ns > 0) np[r]++;
      if (ns > kmx[r]) kmx[r] = ns;
    }
  }
  for (int r = 0; r < nt; r++) /* the skipped rings: the larger of their neighbours, plus 10 % */
    if (r % stride && r != nt - 1) {
      const int a = r - r % stride, b = a + stride < nt ? a + stride : nt - 1;
      fs[r] = 1.1 * fmax(fs[a], fs[b]);
      cs[r] = 1.1 * fmax(cs[a], cs[b]);
      np[r] = np[a] > np[b] ? np[a] : np[b];
      kmx[r] = kmx[a] > kmx[b] ? kmx[a] : kmx[b];
    }
  for (int t = p->task_lo; t < p->task_hi; t++) { /* a band plan: its own rings */
    const int r = t - p->task_lo;
    double fsum = fs[r], dsum = 0, dterms = 0;
    const int npairs = np[r], kmax = kmx[r];
    if (gs) { /* a plan without tables (GPU) */
      dsum = gs[r];
      dterms = gs[nt + r];
    }
    if (D && !D->fly)
      for (int k = D->first[t]; k < D->first[t + 1]; k++) {
        dsum += D->pair[k].wsum;
        dterms += (double)D->pair[k].maxlen + 1;
      }
    const double kc = kmax < 64 ? kmax : 64;
    double b = (10 * lg + kc * kc + npairs + 16) * u * sq * fsum + (dterms + 64) * ud * dsum;
    if (p->smooth_caps) b += caps_term * cs[r];
    if (p->opt.spin == 2) b *= 2; /* complex products: about twice the rounding */
    /* float weights: where the accuracy asked allows them, and in single
     * precision plans, whose Fourier part rounds at the float level anyway */
    int to_float = p->opt.accuracy > 0 ? b + 0x1p-24 * dsum <= p->opt.accuracy : single;
    if (p->opt.spin == 2) to_float = 0; /* spin-2 weights stay double */
    if (D && !D->fly && dsum > 0 && to_float) {
      const size_t freed = task_to_float(D, t);
      p->bytes -= freed < p->bytes ? freed : 0;
      if (freed) b += 0x1p-24 * dsum;
    }
    if (b > worst) worst = b;
  }
  free(fs);
  free(np);
  free(gs);
  p->bound = worst;
}
