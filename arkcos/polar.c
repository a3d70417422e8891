/*
 * polar.c -- the polar caps' reconstruction quadrature (polar.h;
 * docs/EXACTNESS.md, "Polar reconstruction").
 *
 * Everything is written for the north cap in its own RING order (ring r
 * from the pole, 1-based, holds 4 r pixels at phi = (k + 1/2) pi / (2 r));
 * the south cap is its mirror (same azimuths, z -> -z) and takes the same
 * tables through an index map.
 *
 * The reconstruction: the disc D of the first RD rings, the covariance
 * C(y, q) = sum_{l <= L} sum_m Y_lm(y) Y_lm(q)* = sum_m e^{i m (phi_y -
 * phi_q)} Lam_m(theta_y, theta_q), Lam_m = sum_{l = m}^{L} lambda_lm
 * lambda_lm, L = 2 nside. Near the pole Lam_m vanishes beyond m ~ 1.6 RD
 * (the evanescent tail), so every sum over m stops at MM. The disc is
 * invariant under a quarter turn, so (C + nu) c = f splits by the
 * quadrant frequency w = 0..3 into blocks of RD (RD + 1) / 2:
 * B^w[(r,a),(r',a')] = 4 sum_{m = w mod 4} Lam_|m|(r, r') e^{i m (phi_ra -
 * phi_r'a')}, solved by Cholesky (w = 3 is w = 1 conjugated).
 *
 * I(x) = sum_q c_q sum_m e^{i m (phi_x - phi_q)} H_m(ring x, ring q),
 * H_m(i, r) = 2 pi int_0^T2 dt dz/dt chi(t) k_m(theta_i, theta(t))
 * Lam_m(theta(t), theta_r), k_m the kernel's azimuthal Fourier coefficient
 * between output ring i and colatitude theta(t) (sampled and summed: the
 * kernel is smooth in azimuth there), the t integral by Gauss-Legendre
 * panels no wider than 1.5 kernel sigmas (POLAR_HSIG), Lam_m at the nodes by Chebyshev
 * interpolation in t (Lam_m is entire in t and varies on ~4 rings).
 * P(x) is the pixel sum over rings 1..T2-1 weighted chi(r), exactly as the
 * plans sum them.
 */
#include "arkcos/polar.h"

#include <complex.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos_math.h"
#include "arkcos/kernel_internal.h"

#define POLAR_T1 4.0          /* chi = 1 up to this ring */
#define POLAR_T2_MAX 26       /* chi = 0 from ring t2: 26 from nside 64, 20 below */
#define POLAR_MARGIN 6        /* the reconstruction's disc: rings 1..t2 + 6 */
#define POLAR_NUGGET 1e-8     /* of C(0): a constant's reconstruction within 2.2e-12 (1e-10: 1.9e-11), the same accuracy */
#define POLAR_MAX_REACH 96    /* output rings beyond T2 at most */
#define POLAR_NCHEB 48        /* Chebyshev nodes in t for Lam_m (64: the same errors to 3 digits), a multiple of 8 */
#define POLAR_GL 8            /* Gauss-Legendre nodes per panel */
/* Gauss-Legendre panels in t no wider than 1.5 kernel sigmas or 3 rings
 * (1 sigma and 2 rings, 40 % more nodes at 4.4 px/FWHM, measured the same
 * errors within 1 %: scripts/quadrature_error.py, nside 32-1024 at 4.4-16
 * px/FWHM) */
#define POLAR_HSIG 1.5
#define POLAR_HMAX 3.0
#define POLAR_S2_MP (-2) /* spin 2: d^l_{m,-2}, e^{i m (phi_y - phi_q)} Lam2_m sums to G(beta) W(y, q) */
#define POLAR_S2_DM 4    /* spin 2's m band: the scalar's and 4 more */

/* What a correction for (g, k) would hold; 0 where none applies. */
typedef struct layout {
  int t2, rd, nb, mm, mp, nout, ng;
  int64_t nd, nout_pix;
  double sigma, h;
} layout;

/* One mirror-basis vector: its (at most two) pixels of the quadrant's
 * block index (j0 + a, j0 + r - 1 - a) and their coefficients. */
typedef struct {
  int k[2], n;
  double cr[2], ci[2];
} mvec;

struct arkcos_polar {
  const arkcos_geometry *g;
  arkcos_kfun kf;
  layout lay;             /* rings, disc, band limits, outputs (make_layout) */
  double chi[POLAR_T2_MAX]; /* chi at pixel ring r (index r), 0 unused */
  double *H;              /* [nout][rd][mm + 1] */
  double *KP;             /* [nout][t2 - 1][mp + 1]: chi_r w_r k_m(i, r) */
  /* lower Cholesky factors (row-major) of the blocks in the disc's mirror
   * basis (fold_pair): w = 0 and w = 2 split into their even and odd
   * parts (fac[0], fac[1]; fac[2], fac[3]), w = 1 made real (fac[4]) */
  double *fac[5];
  int nfac[5];
  mvec *mv_e, *mv_o, *mv_1; /* the even and odd vectors; w = 1's u (the even ones) then v */
  double *delta1;         /* correction of 1 at the north outputs */
  /* spin 2 (arkcos_polar_create_spin2): H [nout][rd][2 mm + 1] and KP
   * [nout][t2 - 1][2 mp + 1] over signed m (index m + mm, m + mp), and the
   * four blocks' lower Cholesky factors in the mirror basis of w = 1's
   * (mv_1: each block is Hermitian with M B M = conj B, so real there;
   * nb x nb, w = 0..3) */
  int spin;
  double *fac2[4];
};

static double theta_of_t(double t, double n) { return 2.0 * asin(t / (sqrt(6.0) * n)); }

static double chi_of_t(double t, int t2) {
  const double u = (t - POLAR_T1) / ((double)t2 - POLAR_T1);
  if (u <= 0) return 1.0;
  if (u >= 1) return 0.0;
  const double a = exp(-1.0 / (1.0 - u)), b = exp(-1.0 / u);
  return a / (a + b);
}

/* The kernel's half maximum angle (a sigma for sampling decisions). */
static double kernel_sigma(const arkcos_kfun *kf) {
  const double k0 = arkcos_kfun_alpha(kf, 0.0);
  if (!(k0 > 0)) return -1;
  double lo = 0, hi = kf->cutoff;
  const int nscan = 4096;
  for (int i = 1; i <= nscan; i++) {
    const double a = kf->cutoff * i / nscan;
    if (arkcos_kfun_alpha(kf, a) <= 0.5 * k0) {
      hi = a;
      lo = kf->cutoff * (i - 1) / nscan;
      break;
    }
  }
  for (int it = 0; it < 60; it++) {
    const double mid = 0.5 * (lo + hi);
    if (arkcos_kfun_alpha(kf, mid) > 0.5 * k0) lo = mid; else hi = mid;
  }
  return 0.5 * (lo + hi) / sqrt(2.0 * log(2.0));
}

#define LAM_LB 64 /* degrees l per block of the sums */

/* Lam_m(a, r) for the na angles (cos x, sin s) against the last nr of them:
 * acc[a * nr + r] = sum_{l=m}^{L} lambda_lm(a) lambda_lm(nr-part r) (mp =
 * 0), or with the spin-weighted lambda_lm of spin -mp (mp = -2: the spin-2
 * prior Lam2_m = sum_{l >= max(|m|, 2)} (2 l + 1) / (4 pi) d^l_{m,mp}(a)
 * d^l_{m,mp}(r), m signed; polar.c's spin-2 part), term by term
 * (Christoffel-Darboux's closed form loses ~1e-13 to cancellation here,
 * which the solve's nugget amplifies for noisy maps). The recurrence fills
 * LAM_LB degrees at a time into buf [LAM_LB][nap] (nap = na rounded up to
 * 8, zero padded); each block is then a small matrix product, 4 x 8
 * outputs held in registers; the disc's part of a row (from na - nr =
 * POLAR_NCHEB, a multiple of 8) pads as the row does. x: nap values
 * (padding 0); buf: LAM_LB * nap, sacc: nap * nrp doubles.
 * The Wigner d's three-term recurrence in l, normalised by sqrt((2 l + 1)
 * / (4 pi)), starts at l0 = max(|m|, |mp|) from its closed form (half
 * angles: c = cos(theta / 2), ch[a], and sin(theta / 2) = s / (2 c)). */
static void lam_sums_spin(int m, int mp, int L, int na, int nr, const double *x, const double *s,
                          const double *ch, double *acc, double *buf, double *sacc) {
  const int nap = (na + 7) & ~7, nrp = (nr + 7) & ~7, off = na - nr;
  memset(sacc, 0, sizeof *sacc * (size_t)nap * nrp);
  const int am = m < 0 ? -m : m, amp = mp < 0 ? -mp : mp, l0 = am > amp ? am : amp;
  if (l0 <= L) {
    double *q0 = buf, *q1 = buf + nap; /* rows l = l0, l0 + 1 */
    memset(buf, 0, sizeof *buf * (size_t)LAM_LB * nap);
    if (!mp) {
      double lmm_log = 0.5 * log(1.0 / (4.0 * M_PI));
      for (int k = 1; k <= m; k++) lmm_log += 0.5 * log((2.0 * k + 1.0) / (2.0 * k));
      for (int a = 0; a < na; a++) {
        const double lg = lmm_log + (m ? m * log(s[a]) : 0.0);
        q0[a] = lg < -700 ? 0.0 : exp(lg); /* lambda_mm */
        q1[a] = m + 1 <= L ? x[a] * sqrt(2.0 * m + 3.0) * q0[a] : 0.0; /* lambda_{m+1,m} */
      }
    } else {
      /* d^{l0}: c^ec s^es sqrt((2 l0)! / (ec! es!)), ec + es = 2 l0 (its
       * sign, the same for every l, cancels in the products) */
      int ec, es;
      if (am >= amp) ec = m >= 0 ? l0 + mp : l0 - mp;
      else ec = mp > 0 ? l0 + m : l0 - m;
      es = 2 * l0 - ec;
      const double lb0 = 0.5 * (lgamma(2.0 * l0 + 1) - lgamma(ec + 1.0) - lgamma(es + 1.0)) +
                         0.5 * log((2.0 * l0 + 1.0) / (4.0 * M_PI));
      const double dl = l0 * sqrt(((l0 + 1.0) * (l0 + 1) - (double)m * m) * ((l0 + 1.0) * (l0 + 1) - (double)mp * mp));
      const double al = sqrt((2.0 * l0 + 3) / (2.0 * l0 + 1)) * (2.0 * l0 + 1) * l0 * (l0 + 1.0) / dl;
      const double bt = -sqrt((2.0 * l0 + 3) / (2.0 * l0 + 1)) * (2.0 * l0 + 1) * (double)m * mp / dl;
      for (int a = 0; a < na; a++) {
        const double c = ch[a], sh = s[a] / (2.0 * c);
        const double lg = lb0 + (ec ? ec * log(c) : 0.0) + (es ? es * log(sh) : 0.0);
        q0[a] = lg < -700 ? 0.0 : exp(lg);
        q1[a] = l0 + 1 <= L ? (al * x[a] + bt) * q0[a] : 0.0;
      }
    }
    for (int lb = l0; lb <= L; lb += LAM_LB) {
      const int nl = L + 1 - lb < LAM_LB ? L + 1 - lb : LAM_LB;
      /* rows k = l - lb; the first block's first two rows are set, later
       * blocks continue from the previous block's last two */
      for (int k = 0; k < nl; k++) {
        const int l = lb + k;
        if (l < l0 + 2) continue;
        const double *p1 = k >= 1 ? buf + (size_t)(k - 1) * nap : buf + (size_t)(LAM_LB - 1) * nap;
        const double *p2 = k >= 2 ? buf + (size_t)(k - 2) * nap : buf + (size_t)(LAM_LB - 2 + k) * nap;
        double *row = buf + (size_t)k * nap;
        if (!mp) {
          const double al = sqrt((4.0 * l * l - 1.0) / ((double)(l - m) * (l + m)));
          const double bl = sqrt(((double)(l - 1 - m) * (l - 1 + m)) / (4.0 * (l - 1.0) * (l - 1.0) - 1.0));
#pragma omp simd
          for (int a = 0; a < nap; a++) row[a] = al * (x[a] * p1[a] - bl * p2[a]);
        } else {
          /* row(l) = (al x + bt) row(l - 1) - gm row(l - 2) */
          double al, bt, gm;
          const double j = l - 1.0; /* d^{j+1} from d^j and d^{j-1} */
          const double dl = j * sqrt(((j + 1) * (j + 1) - (double)m * m) * ((j + 1) * (j + 1) - (double)mp * mp));
          const double nu = sqrt((2 * j + 3) / (2 * j + 1));
          al = nu * (2 * j + 1) * j * (j + 1) / dl;
          bt = -nu * (2 * j + 1) * (double)m * mp / dl;
          gm = sqrt((2 * j + 3) / (2 * j - 1)) * (j + 1) * sqrt((j * j - (double)m * m) * (j * j - (double)mp * mp)) / dl;
#pragma omp simd
          for (int a = 0; a < nap; a++) row[a] = (al * x[a] + bt) * p1[a] - gm * p2[a];
        }
      }
      for (int a0 = 0; a0 < nap; a0 += 4)
        for (int r0 = 0; r0 < nrp; r0 += 8) {
          double t[4][8] = {{0}};
          for (int k = 0; k < nl; k++) {
            const double *bk = buf + (size_t)k * nap, *br = bk + off + r0;
            for (int i = 0; i < 4; i++) {
              const double ba = bk[a0 + i];
#pragma omp simd
              for (int j = 0; j < 8; j++) t[i][j] += ba * br[j];
            }
          }
          for (int i = 0; i < 4; i++)
            for (int j = 0; j < 8; j++) sacc[(size_t)(a0 + i) * nrp + r0 + j] += t[i][j];
        }
    }
  }
  for (int a = 0; a < na; a++)
    for (int r = 0; r < nr; r++) acc[(size_t)a * nr + r] = sacc[(size_t)a * nrp + r];
}

/* The correction's solve amplifies rounding: its coefficients c = C^-1 f
 * grow to 1e8 times a rough map's values (the nugget), and cancel in I =
 * sum c H, so a change in the last bit of the factors or of H moves the
 * caps of a white-noise map by 2e-8 - 5e-8 of its largest value (nside 64
 * and 256, 4 px/FWHM). So every sum of the correction's tables and solves
 * is taken in one order whatever the instruction set: eight lanes, lane u
 * summing the terms k = u mod 8 in order, then the lanes in a fixed tree;
 * SSE2, AVX2 and AVX-512 vectorise it alike (an `omp simd reduction` leaves
 * the order to the vector width, and the portable library's copies for
 * x86-64-v2..v4 and a -march=native build then differed by 3e-8 - 6e-8). */
#define LANES 8
static inline double lanes_sum(const double *acc) {
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}
/* sum_k a[k] b[k], k < n, in lanes */
static double dot_lanes(const double *a, const double *b, int n) {
  double acc[LANES] = {0};
  int k = 0;
  for (; k + LANES <= n; k += LANES)
    for (int u = 0; u < LANES; u++) acc[u] += a[k + u] * b[k + u];
  for (int u = 0; k + u < n; u++) acc[u] += a[k + u] * b[k + u];
  return lanes_sum(acc);
}

/* Lower Cholesky factor L L^T of the symmetric positive matrix a (n x n
 * row-major, lower triangle read), in place; -1 if not positive. Serial:
 * the blocks are factored side by side instead (factor_blocks). A loop
 * parallel within each column (two barriers per column) took as long
 * unloaded and, with a second process on the same two cores, 0.60-0.75 s
 * against 0.07 s (nside 256, 60'): every barrier then waits for a thread
 * the scheduler has parked. */
static int cholesky(double *a, int n) {
  for (int j = 0; j < n; j++) {
    double *rj = a + (size_t)j * n;
    double d = rj[j];
    for (int k = 0; k < j; k++) d -= rj[k] * rj[k];
    if (!(d > 0)) return -1;
    rj[j] = sqrt(d);
    const double inv = 1.0 / rj[j];
    for (int i = j + 1; i < n; i++) {
      double *ri = a + (size_t)i * n;
      ri[j] = (ri[j] - dot_lanes(ri, rj, j)) * inv;
    }
  }
  return 0;
}

/* The blocks fac[0..count) (n[f] x n[f], none where n[f] is 0) factored,
 * one thread each, the largest first; -1 if one is not positive. */
static int factor_blocks(double *const *fac, const int *n, int count, int nthreads) {
  int order[8], bad = 0;
  for (int f = 0; f < count; f++) order[f] = f;
  for (int f = 1; f < count; f++)
    for (int g = f; g > 0 && n[order[g]] > n[order[g - 1]]; g--) {
      const int t = order[g];
      order[g] = order[g - 1];
      order[g - 1] = t;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads) reduction(| : bad)
  for (int f = 0; f < count; f++)
    if (n[order[f]] && cholesky(fac[order[f]], n[order[f]])) bad = 1;
  return bad ? -1 : 0;
}

/* (L L^T) x = b in place for the real lower factor L (n x n row-major)
 * and a complex b as (br, bi): forward by rows, backward by the rows of L
 * as well (each x_i known, its column of L^T subtracted from the rest). */
static void chol_solve(const double *L, int n, double *br, double *bi) {
  for (int i = 0; i < n; i++) {
    const double *ri = L + (size_t)i * n;
    br[i] = (br[i] - dot_lanes(ri, br, i)) / ri[i];
    bi[i] = (bi[i] - dot_lanes(ri, bi, i)) / ri[i];
  }
  for (int i = n - 1; i >= 0; i--) {
    const double *ri = L + (size_t)i * n;
    const double xr = br[i] / ri[i], xi = bi[i] / ri[i];
    br[i] = xr;
    bi[i] = xi;
#pragma omp simd
    for (int k = 0; k < i; k++) {
      br[k] -= ri[k] * xr;
      bi[k] -= ri[k] * xi;
    }
  }
}

/* The disc's mirror a -> r - 1 - a (phi -> pi/2 - phi) within a quadrant
 * turns block w into block -w: B^w[M., M.] = B^{-w}, so B^0 and B^2 (real)
 * commute with M and split into an even and an odd part, and B^1
 * (Hermitian, B^1[M., M.] = conj B^1) is real in the basis u = (e_a +
 * e_Ma) / sqrt 2, v = i (e_a - e_Ma) / sqrt 2: the factorisations cost a
 * quarter of the blocks' (two real of about nb / 2, one real of nb,
 * instead of two real and one complex of nb). Ring r's even vectors are
 * a = 0 .. ceil(r / 2) - 1 (the middle pixel of an odd ring alone), its
 * odd ones a = 0 .. floor(r / 2) - 1, numbered ring after ring: even
 * index er0(r) + a, odd index or0(r) + a. */
static int er0(int r) {
  int n = 0;
  for (int k = 1; k < r; k++) n += (k + 1) / 2;
  return n;
}
static int or0(int r) {
  int n = 0;
  for (int k = 1; k < r; k++) n += k / 2;
  return n;
}

/* Vector `which` of the basis (0: even, 1: odd, 2: w = 1's u, 3: its v) for
 * ring r's representative a (a <= r - 1 - a; odd and v need a < r - 1 - a) */
static mvec mirror_vec(int r, int a, int which) {
  const int j0 = r * (r - 1) / 2, b = r - 1 - a;
  mvec v = {{j0 + a, j0 + b}, a == b ? 1 : 2, {0, 0}, {0, 0}};
  const double s = a == b ? 1.0 : M_SQRT1_2;
  switch (which) {
    case 0: case 2: v.cr[0] = v.cr[1] = s; break;
    case 1: v.cr[0] = s, v.cr[1] = -s; break;
    default: v.ci[0] = s, v.ci[1] = -s; break;
  }
  return v;
}

/* Re(conj(u) B v) for two mirror vectors of rings r (u) and r2 (v), B the
 * pair's block entries [a][a2] (r x r2; im NULL: real) */
static double pair_entry(const double *re, const double *im, int r, int r2, const mvec *u, const mvec *v) {
  const int j0 = r * (r - 1) / 2, j20 = r2 * (r2 - 1) / 2;
  double acc = 0;
  for (int x = 0; x < u->n; x++)
    for (int y = 0; y < v->n; y++) {
      const size_t o = (size_t)(u->k[x] - j0) * r2 + (v->k[y] - j20);
      const double br = re[o], bi = im ? im[o] : 0.0, cr = v->cr[y], ci = v->ci[y];
      acc += u->cr[x] * (br * cr - bi * ci) + u->ci[x] * (br * ci + bi * cr);
    }
  return acc;
}

/* Ring pair (r, r2 <= r)'s entries of a block folded into the real
 * symmetric matrix F (n1 x n1, lower triangle) of the mirror basis of w =
 * 1's kind (mv_1: the ne even vectors u, then the odd ones v with
 * imaginary coefficients), from the pair's complex block entries (br, bi)
 * [a][a2] (r x r2), the nugget on the diagonal: every block B with M B M =
 * conj B (M the mirror a -> r - 1 - a) is real in that basis. A vector's
 * index grows with its ring, so (ring r, ring r2) lies in the lower
 * triangle, but for the (u, v) pairs: every v comes after every u, F[v][u]
 * holds them. */
static void fold_real(double *F, int n1, int ne, int r, int r2, const double *br, const double *bi, double nug) {
  const int nr = (r + 1) / 2, nr2 = (r2 + 1) / 2, mr = r / 2, mr2 = r2 / 2;
  const int e = er0(r), e2 = er0(r2), o = or0(r), o2 = or0(r2);
  for (int a = 0; a < nr; a++) /* u-u */
    for (int a2 = 0; a2 < nr2 && (r2 < r || a2 <= a); a2++) {
      const mvec u = mirror_vec(r, a, 0), v = mirror_vec(r2, a2, 0);
      F[(size_t)(e + a) * n1 + (e2 + a2)] = pair_entry(br, bi, r, r2, &u, &v) + (r == r2 && a == a2 ? nug : 0.0);
    }
  for (int a = 0; a < mr; a++) /* v-v */
    for (int a2 = 0; a2 < mr2 && (r2 < r || a2 <= a); a2++) {
      const mvec u = mirror_vec(r, a, 3), v = mirror_vec(r2, a2, 3);
      F[(size_t)(ne + o + a) * n1 + (ne + o2 + a2)] =
          pair_entry(br, bi, r, r2, &u, &v) + (r == r2 && a == a2 ? nug : 0.0);
    }
  /* u of one ring against the v of the other: F[v][u] (real symmetric, so
   * also Re(conj(u) B v) = Re(conj(v) B^H u)) */
  for (int a = 0; a < nr; a++)
    for (int a2 = 0; a2 < mr2; a2++) { /* u in ring r, v in ring r2 */
      const mvec u = mirror_vec(r, a, 2), v = mirror_vec(r2, a2, 3);
      F[(size_t)(ne + o2 + a2) * n1 + (e + a)] = pair_entry(br, bi, r, r2, &u, &v);
    }
  if (r2 < r)
    for (int a = 0; a < mr; a++)
      for (int a2 = 0; a2 < nr2; a2++) { /* v in ring r, u in ring r2 */
        const mvec v = mirror_vec(r, a, 3), u = mirror_vec(r2, a2, 2);
        F[(size_t)(ne + o + a) * n1 + (e2 + a2)] = pair_entry(br, bi, r, r2, &v, &u);
      }
}

/* Ring pair (r, r2 <= r)'s entries of the folded matrices (p->fac, lower
 * triangles) from its block entries [a][a2]: w = 0 (b0), 2 (b2), 1 (b1r,
 * b1i), each 4 B; the nugget on the diagonal. */
static void fold_pair(arkcos_polar *p, int r, int r2, double *b0, double *b2, double *b1r, double *b1i,
                      double nug) {
  const int ne = p->nfac[0], nr = (r + 1) / 2, nr2 = (r2 + 1) / 2, mr = r / 2, mr2 = r2 / 2;
  const int e = er0(r), e2 = er0(r2), o = or0(r), o2 = or0(r2);
  const size_t np = (size_t)r * r2;
  for (size_t q = 0; q < np; q++) b0[q] *= 4.0, b2[q] *= 4.0, b1r[q] *= 4.0, b1i[q] *= 4.0;
  double *F0e = p->fac[0], *F0o = p->fac[1], *F2e = p->fac[2], *F2o = p->fac[3];
  /* even-even */
  for (int a = 0; a < nr; a++)
    for (int a2 = 0; a2 < nr2 && (r2 < r || a2 <= a); a2++) {
      const mvec u = mirror_vec(r, a, 0), v = mirror_vec(r2, a2, 0);
      const double dg = r == r2 && a == a2 ? nug : 0.0;
      const size_t at = (size_t)(e + a) * ne + (e2 + a2);
      F0e[at] = pair_entry(b0, NULL, r, r2, &u, &v) + dg;
      F2e[at] = pair_entry(b2, NULL, r, r2, &u, &v) + dg;
    }
  /* odd-odd */
  const int no = p->nfac[1];
  for (int a = 0; a < mr; a++)
    for (int a2 = 0; a2 < mr2 && (r2 < r || a2 <= a); a2++) {
      const mvec u = mirror_vec(r, a, 1), v = mirror_vec(r2, a2, 1);
      const double dg = r == r2 && a == a2 ? nug : 0.0;
      const size_t at = (size_t)(o + a) * no + (o2 + a2);
      F0o[at] = pair_entry(b0, NULL, r, r2, &u, &v) + dg;
      F2o[at] = pair_entry(b2, NULL, r, r2, &u, &v) + dg;
    }
  fold_real(p->fac[4], p->nfac[4], ne, r, r2, b1r, b1i, nug);
}

/* x = B^{-1} c in place (c = (cr, ci), nb values) through a mirror basis:
 * y = U^H c, F y' = y group by group (the groups' vectors lists[g], their
 * lower Cholesky factors fac[g] of n[g] rows), x = U y'. scr: 2 nb doubles. */
static void basis_solve(int ngroups, const double *const *fac, const int *n, const mvec *const *lists, int nb,
                        double *cr, double *ci, double *scr) {
  double *yr = scr, *yi = scr + nb;
  int at = 0;
  for (int gi = 0; gi < ngroups; gi++) {
    const mvec *vs = lists[gi];
    for (int q = 0; q < n[gi]; q++) {
      double vr = 0, vi = 0;
      for (int x = 0; x < vs[q].n; x++) { /* conj(alpha) c */
        const int k = vs[q].k[x];
        vr += vs[q].cr[x] * cr[k] + vs[q].ci[x] * ci[k];
        vi += vs[q].cr[x] * ci[k] - vs[q].ci[x] * cr[k];
      }
      yr[at + q] = vr;
      yi[at + q] = vi;
    }
    chol_solve(fac[gi], n[gi], yr + at, yi + at);
    at += n[gi];
  }
  memset(cr, 0, sizeof *cr * (size_t)nb);
  memset(ci, 0, sizeof *ci * (size_t)nb);
  at = 0;
  for (int gi = 0; gi < ngroups; gi++) {
    const mvec *vs = lists[gi];
    for (int q = 0; q < n[gi]; q++)
      for (int x = 0; x < vs[q].n; x++) { /* alpha y' */
        const int k = vs[q].k[x];
        cr[k] += vs[q].cr[x] * yr[at + q] - vs[q].ci[x] * yi[at + q];
        ci[k] += vs[q].cr[x] * yi[at + q] + vs[q].ci[x] * yr[at + q];
      }
    at += n[gi];
  }
}

/* x = (B^w)^{-1} c for the block index's c = (cr, ci) in place, through
 * the mirror basis (basis_solve): w = 0 and 2 their even and odd groups, w
 * = 1 one real group. scr: 2 nb doubles. */
static void mirror_solve(const arkcos_polar *p, int w, double *cr, double *ci, double *scr) {
  if (w == 1) {
    const double *f[1] = {p->fac[4]};
    const mvec *l[1] = {p->mv_1};
    basis_solve(1, f, &p->nfac[4], l, p->lay.nb, cr, ci, scr);
    return;
  }
  const int f0 = w == 0 ? 0 : 2;
  const double *f[2] = {p->fac[f0], p->fac[f0 + 1]};
  const int n[2] = {p->nfac[f0], p->nfac[f0 + 1]};
  const mvec *l[2] = {p->mv_e, p->mv_o};
  basis_solve(2, f, n, l, p->lay.nb, cr, ci, scr);
}

static double ring_phi(const arkcos_ring *r, int64_t a) { return r->phi0 + 2.0 * M_PI * (double)a / (double)r->nph; }

static int next_pow2(int v) {
  int n = 1;
  while (n < v) n <<= 1;
  return n;
}

/* The azimuthal sampling of a kernel between colatitudes tho and th: the
 * chord's terms (sdt2, ss), nphi samples over the circle, of which 0..nlast
 * are inside the kernel's reach; and the caller's scratch *kv grown to per
 * values each of nphi / 2 + 1. 0 where the kernel does not reach, -1 out
 * of memory, else 1. */
static int az_grid(const arkcos_kfun *kf, double sigma, double tho, double th, int mk, int per, double *sdt2,
                   double *ss, int *nphi, int *nlast, double **kv, int *cap) {
  const double sd = sin(0.5 * (tho - th));
  *sdt2 = sd * sd, *ss = sin(tho) * sin(th);
  const double half = arkcos_dphi_window(kf, *sdt2, *ss);
  if (half < 0) return 0;
  int n = next_pow2((int)(mk + 10.0 * sqrt(*ss) / sigma) + 48);
  if (n < 128) n = 128;
  const int nh = n / 2;
  if (per * (nh + 1) > *cap) {
    free(*kv);
    *kv = malloc(sizeof **kv * (size_t)(per * (nh + 1)));
    *cap = *kv ? per * (nh + 1) : 0;
    if (!*kv) return -1;
  }
  *nlast = nh;
  if (half < M_PI) {
    *nlast = (int)ceil(half * n / (2.0 * M_PI)) + 1;
    if (*nlast > nh) *nlast = nh;
  }
  *nphi = n;
  return 1;
}

/* arkcos_spin2_transport's arithmetic for output colatitude tp and input
 * tq from the half angle's sine and cosine (sin dphi = 2 sh ch): the two
 * colatitudes' part once (transport_geometry), then flops only */
typedef struct {
  double stp, ctp, stq, ctq, sqp;
} transport_geo;
static transport_geo transport_geometry(double tp, double tq) {
  return (transport_geo){sin(tp), cos(tp), sin(tq), cos(tq), sin(tq - tp)};
}
static void transport_half(const transport_geo *t, double sh, double ch, double *wr, double *wi) {
  const double s2 = 2.0 * sh * sh, sd = 2.0 * sh * ch;
  const double ar = t->sqp - t->ctp * t->stq * s2, ai = t->stq * sd;
  const double br = -t->sqp - t->stp * t->ctq * s2, bi = -t->stp * sd;
  const double zr = ar * br + ai * bi, zi = ai * br - ar * bi; /* A conj(B) */
  const double n2 = zr * zr + zi * zi;
  if (!(n2 > 0)) {
    *wr = 1.0, *wi = 0.0;
    return;
  }
  *wr = (zr * zr - zi * zi) / n2;
  *wi = 2.0 * zr * zi / n2;
}

/* sin and cos of the half angles pi q / nphi, q = 0..nlast: exact at every
 * 64th q, between by the rotation recurrence (within 64 ulps) */
static void half_angles(int nphi, int nlast, double *sh, double *ch) {
  const double st = M_PI / nphi, cd = cos(st), sd = sin(st);
  for (int q0 = 0; q0 <= nlast; q0 += 64) {
    double s = sin(st * q0), c = cos(st * q0);
    for (int q = q0; q <= nlast && q < q0 + 64; q++) {
      sh[q] = s, ch[q] = c;
      const double t = s * cd + c * sd;
      c = c * cd - s * sd;
      s = t;
    }
  }
}

/* The kernel's azimuthal Fourier coefficients k_m, m = 0..mk, between
 * colatitudes tho and th: sampled at nphi points, nphi - mk beyond the
 * kernel's azimuthal band (10 sqrt(sin sin) / sigma), and summed by the
 * cosines' three-term recurrence, vectorised over blocks of samples;
 * the samples' angles from half_angles (no sine or cosine a sample).
 * *kv, *cap: the caller's scratch. Returns 0 where the kernel does not
 * reach (km untouched), 1 otherwise, -1 out of memory. */
static int az_spectrum(const arkcos_kfun *kf, double sigma, double tho, double th, int mk, double *km, double **kv,
                       int *cap) {
  double sdt2, ss;
  int nphi, nlast;
  const int got = az_grid(kf, sigma, tho, th, mk, 3, &sdt2, &ss, &nphi, &nlast, kv, cap);
  if (got <= 0) return got;
  const int nh = nphi / 2;
  double *k = *kv, *sh = k + nh + 1, *ch = sh + nh + 1;
  half_angles(nphi, nlast, sh, ch);
  for (int q = 0; q <= nlast; q++)
    k[q] = arkcos_kfun_d2(kf, 4.0 * (sdt2 + ss * sh[q] * sh[q])) * (q == 0 || q == nh ? 1.0 : 2.0) / nphi;
  for (int m = 0; m <= mk; m++) km[m] = 0;
  for (int q0 = 0; q0 <= nlast; q0 += 64) {
    const int nq = nlast + 1 - q0 < 64 ? nlast + 1 - q0 : 64, nql = (nq + LANES - 1) / LANES * LANES;
    double c0[64], c1[64], c2[64], kq[64], s0 = 0, s1 = 0;
    for (int q = 0; q < nql; q++) { /* zeros past nq: whole lanes */
      const int in = q < nq;
      kq[q] = in ? k[q0 + q] : 0.0;
      c0[q] = in ? 1.0 : 0.0;
      c1[q] = in ? (ch[q0 + q] - sh[q0 + q]) * (ch[q0 + q] + sh[q0 + q]) : 0.0; /* cos(2 pi q / nphi) */
      c2[q] = 2.0 * c1[q];
      if (in) s0 += kq[q], s1 += kq[q] * c1[q];
    }
    km[0] += s0;
    if (mk >= 1) km[1] += s1;
    for (int m = 2; m <= mk; m++) {
      double acc[LANES] = {0};
      for (int b = 0; b < nql; b += LANES)
#pragma omp simd
        for (int u = 0; u < LANES; u++) {
          const int q = b + u;
          const double cn = c2[q] * c1[q] - c0[q];
          c0[q] = c1[q];
          c1[q] = cn;
          acc[u] += kq[q] * cn;
        }
      km[m] += lanes_sum(acc);
    }
  }
  return 1;
}

/* The chord's terms and the kernel's azimuth window between an output ring
 * at colatitude tho and each inner ring r = 1..t2-1 (inner_pixel_sum's). */
static void inner_geometry(const arkcos_polar *p, double tho, double *sdt2, double *ss, double *half) {
  for (int r = 1; r < p->lay.t2; r++) {
    const double th = p->g->rings[r - 1].theta, sd = sin(0.5 * (tho - th));
    sdt2[r] = sd * sd;
    ss[r] = sin(tho) * sin(th);
    half[r] = arkcos_dphi_window(&p->kf, sdt2[r], ss[r]);
  }
}

/* The pixels of ring rg an output pixel at phi reaches through the
 * kernel's azimuth window half (>= pi: the whole ring): *k0 the first
 * (unwrapped: take it mod n), the count returned (at most n = rg->nph). */
static int64_t ring_window(const arkcos_ring *rg, double half, double phi, int64_t *k0) {
  const int64_t n = rg->nph;
  *k0 = 0;
  if (half >= M_PI) return n;
  const double sc = n / (2.0 * M_PI);
  *k0 = (int64_t)floor((phi - half - rg->phi0) * sc) - 1;
  const int64_t k1 = (int64_t)ceil((phi + half - rg->phi0) * sc) + 1;
  return k1 - *k0 + 1 < n ? k1 - *k0 + 1 : n;
}

/* Pixel sum over rings 1..t2-1 weighted chi: P at the output pixel phi of
 * a ring whose per-ring geometry (sdt2, ss, half) is given, of the disc
 * values fd (north order). Along a ring's window sin((phi - phi_k) / 2)
 * goes by its rotation recurrence in k (a step of -pi / n), from its value
 * at the window's first pixel: 8 flops a pixel for a sine, within 1e-14 of
 * it over the at most 100 pixels of a window. */
static double inner_pixel_sum(const arkcos_polar *p, const double *sdt2, const double *ss, const double *half,
                              double phi, const double *fd) {
  const arkcos_ring *rings = p->g->rings;
  double sum = 0;
  for (int r = 1; r < p->lay.t2; r++) {
    if (half[r] < 0) continue;
    const arkcos_ring *rg = &rings[r - 1];
    const int n = 4 * r;
    const double *f = fd + 2 * (int64_t)r * (r - 1);
    int64_t k0;
    const int64_t cnt = ring_window(rg, half[r], phi, &k0);
    const double h0 = 0.5 * (phi - ring_phi(rg, k0)), cd = cos(M_PI / n), sd = sin(M_PI / n);
    double sh = sin(h0), ch = cos(h0), rs = 0;
    int64_t k = ((k0 % n) + n) % n;
    for (int64_t j = 0; j < cnt; j++) {
      rs += arkcos_kfun_d2(&p->kf, 4.0 * (sdt2[r] + ss[r] * sh * sh)) * f[k];
      const double t = sh * cd - ch * sd;
      ch = ch * cd + sh * sd;
      sh = t;
      if (++k == n) k = 0;
    }
    sum += p->chi[r] * rg->weight * rs;
  }
  return sum;
}

/* dout[j] = I - P at the north-order output pixels, fd the disc's values
 * in north order; ARKCOS_ENOMEM (dout untouched) when its scratch cannot be
 * had. */
static int correct_cap(const arkcos_polar *p, const double *fd, double *dout, int nthreads) {
  const int rd = p->lay.rd, nb = p->lay.nb, mm = p->lay.mm;
  /* block right-hand sides and solves */
  double *cwr = malloc(sizeof *cwr * 8 * (size_t)nb), *cwi = cwr ? cwr + 3 * (size_t)nb : NULL;
  double complex *cr = malloc(sizeof *cr * (size_t)rd * (mm + 1));
  if (!cwr || !cr) {
    free(cwr);
    free(cr);
    return ARKCOS_ENOMEM;
  }
  for (int r = 1, j = 0; r <= rd; r++)
    for (int a = 0; a < r; a++, j++) {
      const double *f = fd + 2 * (int64_t)r * (r - 1) + a;
      const double f0 = f[0], f1 = f[r], f2 = f[2 * r], f3 = f[3 * r];
      cwr[j] = f0 + f1 + f2 + f3;
      cwi[j] = 0;
      cwr[nb + j] = f0 - f2;
      cwi[nb + j] = -(f1 - f3);
      cwr[2 * nb + j] = f0 - f1 + f2 - f3;
      cwi[2 * nb + j] = 0;
    }
  for (int w = 0; w < 3; w++) mirror_solve(p, w, cwr + (size_t)w * nb, cwi + (size_t)w * nb, cwr + 6 * (size_t)nb);
  /* c_r(m) = sum_a e^{-i m phi_ra} c^{m mod 4}_(r,a) */
  for (int r = 1, j0 = 0; r <= rd; j0 += r, r++)
    for (int m = 0; m <= mm; m++) {
      const int w = m & 3;
      /* e^{-i m phi_ra}, phi_ra = (a + 1/2) pi / (2 r), by its recurrence in a */
      const double st = -m * M_PI / (2.0 * r), sr = cos(st), si = sin(st);
      double er = cos(0.5 * st), ei = sin(0.5 * st), vr = 0, vi = 0;
      for (int a = 0; a < r; a++) {
        const double cre = w == 3 ? cwr[nb + j0 + a] : cwr[(size_t)w * nb + j0 + a];
        const double cim = w == 3 ? -cwi[nb + j0 + a] : cwi[(size_t)w * nb + j0 + a];
        vr += er * cre - ei * cim;
        vi += er * cim + ei * cre;
        const double t = er * sr - ei * si;
        ei = er * si + ei * sr;
        er = t;
      }
      cr[(size_t)(r - 1) * (mm + 1) + m] = vr + I * vi;
    }
  const arkcos_ring *rings = p->g->rings;
  /* P's ring spectra F_r(m) = sum_k f_rk e^{-i m phi_rk} (smooth kernels) */
  const int mp = p->lay.mp, mx = mm > mp ? mm : mp;
  double complex *fr = mp ? malloc(sizeof *fr * (size_t)p->lay.t2 * (mp + 1)) : NULL;
  if (mp && !fr) {
    free(cwr);
    free(cr);
    return ARKCOS_ENOMEM;
  }
  for (int r = 1; mp && r < p->lay.t2; r++) {
    const double *f = fd + 2 * (int64_t)r * (r - 1);
    for (int m = 0; m <= mp; m++) {
      const double complex e1 = cexp(-I * m * M_PI / (2.0 * r));
      double complex e = cexp(-I * m * M_PI / (4.0 * r)), v = 0;
      for (int k = 0; k < 4 * r; k++) {
        v += f[k] * e;
        e *= e1;
      }
      fr[(size_t)r * (mp + 1) + m] = v;
    }
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads)
  for (int i = 1; i <= p->lay.nout; i++) {
    const arkcos_ring *ro = &rings[i - 1];
    double complex gm[1025];
    double sdt2[POLAR_T2_MAX], ss[POLAR_T2_MAX], half[POLAR_T2_MAX];
    for (int m = 0; m <= mx; m++) {
      double complex v = 0;
      if (m <= mm)
        for (int r = 0; r < rd; r++)
          v += p->H[((size_t)(i - 1) * rd + r) * (mm + 1) + m] * cr[(size_t)r * (mm + 1) + m];
      if (mp && m <= mp)
        for (int r = 1; r < p->lay.t2; r++)
          v -= p->KP[((size_t)(i - 1) * (p->lay.t2 - 1) + (r - 1)) * (mp + 1) + m] * fr[(size_t)r * (mp + 1) + m];
      gm[m] = v;
    }
    if (!mp) inner_geometry(p, ro->theta, sdt2, ss, half);
    for (int64_t a = 0; a < ro->nph; a++) {
      const double phi = ring_phi(ro, a);
      const double complex e1 = cexp(I * phi);
      double complex e = e1, acc = 0;
      for (int m = 1; m <= mx; m++) {
        acc += gm[m] * e;
        e *= e1;
      }
      double v = creal(gm[0]) + 2.0 * creal(acc);
      if (!mp) v -= inner_pixel_sum(p, sdt2, ss, half, phi, fd);
      dout[ro->ofs + a] = v;
    }
  }
  free(fr);
  free(cwr);
  free(cr);
  return ARKCOS_OK;
}

void arkcos_polar_destroy(arkcos_polar *p) {
  if (!p) return;
  free(p->H);
  free(p->KP);
  for (int f = 0; f < 5; f++) free(p->fac[f]);
  free(p->mv_e);
  free(p->mv_o);
  free(p->mv_1);
  for (int w = 0; w < 4; w++) free(p->fac2[w]);
  free(p->delta1);
  free(p);
}


static int make_layout(const arkcos_geometry *g, const arkcos_kernel *k, layout *o) {
  memset(o, 0, sizeof *o);
  if (!g || !k || g->kind != ARKCOS_GEOM_HEALPIX || g->nside < 32) return 0;
  const arkcos_kfun *kf = arkcos_kernel_fun(k);
  if (kf->type == ARKCOS_KERNEL_TOPHAT) return 0;
  const double n = (double)g->nside;
  o->t2 = g->nside >= 64 ? POLAR_T2_MAX : 20;
  const double th2 = theta_of_t(o->t2, n);
  if (!(th2 + kf->cutoff < 0.5 * M_PI - 1e-6)) return 0;
  while (o->nout < g->nrings / 2 && g->rings[o->nout].theta < th2 + kf->cutoff) o->nout++;
  if (o->nout > o->t2 + POLAR_MAX_REACH) return 0;
  o->sigma = kernel_sigma(kf);
  if (!(o->sigma > 0)) return 0;
  o->rd = o->t2 + POLAR_MARGIN;
  o->nb = o->rd * (o->rd + 1) / 2;
  o->nd = 2 * (int64_t)o->rd * (o->rd + 1);
  o->mm = (int)(1.7 * o->rd) + 26; /* Lam_m below 1e-18 of Lam_0 beyond (measured: 1.9e-19 at m = 78, rd = 32) */
  o->nout_pix = g->rings[o->nout - 1].ofs + g->rings[o->nout - 1].nph;
  /* P by the rings' azimuthal spectra where the kernel is smooth (cut at
   * 1e-10 of its peak or lower: no jump its spectra would carry) and its
   * azimuthal band there is modest; else pixel by pixel */
  if (arkcos_kernel_cutoff_level(k) <= 1e-10) {
    const double smax = sin(g->rings[o->nout - 1].theta) * sin(g->rings[o->t2 - 2].theta);
    const int band = (int)ceil(10.0 * sqrt(smax) / o->sigma) + 16;
    if (band <= 1024) o->mp = band;
  }
  const double sig_rings = POLAR_HSIG * o->sigma * sqrt(6.0) * n / 2.0;
  o->h = sig_rings < POLAR_HMAX ? sig_rings : POLAR_HMAX;
  o->ng = (int)ceil(o->t2 / o->h) * POLAR_GL;
  return 1;
}

double arkcos_polar_estimate(const arkcos_geometry *g, const arkcos_kernel *k) {
  layout o;
  if (!make_layout(g, k, &o)) return 0;
  const double ne = er0(o.rd + 1), no = or0(o.rd + 1);
  const double held = 8.0 * ((double)o.nout * o.rd * (o.mm + 1) + (double)o.nout * (o.t2 - 1) * (o.mp + 1) +
                             2.0 * (ne * ne + no * no) + (double)o.nb * o.nb + (double)o.nout_pix) +
                      sizeof(mvec) * 3.0 * o.nb;
  const int na = POLAR_NCHEB + o.rd;
  const double made = 8.0 * ((double)(o.mm + 1) * na * o.rd + (double)(o.mm + 1) * o.ng * o.rd +
                             (double)o.ng * POLAR_NCHEB);
  /* and per apply: the disc, its outputs and the solves */
  const double apply = 8.0 * ((double)o.nd + o.nout_pix + 8.0 * o.nb + 2.0 * o.rd * (o.mm + 1));
  return held + (made > apply ? made : apply);
}

static int az_spectrum2(const arkcos_kfun *kf, double sigma, double tho, double th, int mk, double *km, double **kv,
                        int *cap);

/* The tables both spins' corrections share the shape of, for p (its g,
 * kf, lay, chi and spin set): Lam_m (spin 0, m = 0..mm) or Lam2_m (spin 2,
 * m = -mm..mm at index m + mm; lam_sums_spin) on the Chebyshev nodes in t
 * and the disc's rings against the disc's rings, *lamc [mi][a][r] (a < na
 * = POLAR_NCHEB + rd; the caller's, for the blocks), interpolated to the
 * Gauss-Legendre nodes of the t integral, and from them p->H [nout][rd][nm]
 * and, where P goes by the rings' spectra (mp), p->KP [nout][t2 - 1][nmp].
 * ARKCOS_ENOMEM if short of memory. */
static int polar_tables(arkcos_polar *p, int nthreads, double **lamc_out) {
  const arkcos_geometry *g = p->g;
  const arkcos_kfun *kf = &p->kf;
  const layout *lay = &p->lay;
  const int spin = p->spin, t2 = lay->t2, nout = lay->nout, rd = lay->rd, mm = lay->mm, mp = lay->mp;
  const int nm = spin ? 2 * mm + 1 : mm + 1, nmp = spin ? 2 * mp + 1 : mp + 1, L = (int)(2 * g->nside);
  const double n = (double)g->nside, sigma = lay->sigma;
  const int ng = lay->ng, npan = ng / POLAR_GL, nc = POLAR_NCHEB, na = nc + rd;
  const double hp = (double)t2 / npan;
  double glx[POLAR_GL], glw[POLAR_GL];
  arkcos_gauss_legendre(POLAR_GL, glx, glw);
  double *tg = malloc(sizeof *tg * ng), *wg = malloc(sizeof *wg * ng);
  double *ax = calloc((size_t)(na + 8), sizeof *ax), *as = calloc((size_t)(na + 8), sizeof *as),
         *ac = calloc((size_t)(na + 8), sizeof *ac);
  double *lamc = malloc(sizeof *lamc * (size_t)nm * na * rd); /* [mi][a][r] */
  double *lamg = malloc(sizeof *lamg * (size_t)nm * ng * rd); /* [j][r][mi] */
  double *bary = malloc(sizeof *bary * (size_t)ng * nc);
  p->H = calloc((size_t)nout * rd * nm, sizeof *p->H);
  if (mp) p->KP = calloc((size_t)nout * (t2 - 1) * nmp, sizeof *p->KP);
  int rc = !tg || !wg || !ax || !as || !ac || !lamc || !lamg || !bary || !p->H || (mp && !p->KP);
  if (!rc) {
    for (int pn = 0, j = 0; pn < npan; pn++)
      for (int q = 0; q < POLAR_GL; q++, j++) {
        const double t = hp * (pn + 0.5 * (glx[q] + 1.0));
        tg[j] = t;
        wg[j] = 2.0 * M_PI * 0.5 * hp * glw[q] * (2.0 * t / (3.0 * n * n)) * chi_of_t(t, t2);
      }
    /* Chebyshev nodes in t, then the disc's rings */
    double tc[POLAR_NCHEB], bw[POLAR_NCHEB];
    for (int c = 0; c < nc; c++) {
      const double u = cos(M_PI * (c + 0.5) / nc);
      tc[c] = 0.5 * t2 * (u + 1.0);
      bw[c] = ((c & 1) ? -1.0 : 1.0) * sin(M_PI * (c + 0.5) / nc);
      const double th = theta_of_t(tc[c], n);
      ax[c] = cos(th), as[c] = sin(th), ac[c] = cos(0.5 * th);
    }
    for (int r = 0; r < rd; r++) {
      const double th = g->rings[r].theta;
      ax[nc + r] = cos(th), as[nc + r] = sin(th), ac[nc + r] = cos(0.5 * th);
    }
    for (int j = 0; j < ng; j++) {
      double *b = bary + (size_t)j * nc, tot = 0;
      int exact = -1;
      for (int c = 0; c < nc; c++) {
        const double d = tg[j] - tc[c];
        if (d == 0) exact = c;
        b[c] = exact >= 0 ? 0 : bw[c] / d;
        tot += b[c];
      }
      if (exact >= 0) {
        memset(b, 0, sizeof *b * nc);
        b[exact] = 1;
      } else {
        for (int c = 0; c < nc; c++) b[c] /= tot;
      }
    }
    int bad = 0;
#pragma omp parallel num_threads(nthreads) reduction(| : bad)
    {
      const int nap = (na + 7) & ~7, nrp = (rd + 7) & ~7;
      double *l0 = malloc(sizeof *l0 * (size_t)LAM_LB * nap), *l1 = malloc(sizeof *l1 * (size_t)nap * nrp);
      bad |= !l0 || !l1;
#pragma omp for schedule(dynamic, 1)
      for (int mi = 0; mi < nm; mi++) {
        if (!l0 || !l1) continue;
        double *acc = lamc + (size_t)mi * na * rd;
        lam_sums_spin(spin ? mi - mm : mi, spin ? POLAR_S2_MP : 0, L, na, rd, ax, as, ac, acc, l0, l1);
        for (int j = 0; j < ng; j++)
          for (int r = 0; r < rd; r++) {
            double v = 0;
            for (int c = 0; c < nc; c++) v += bary[(size_t)j * nc + c] * acc[c * rd + r];
            lamg[((size_t)j * rd + r) * nm + mi] = v;
          }
      }
      free(l0);
      free(l1);
    }
    rc = bad;
  }
  /* H_m(i, r) = sum_j wg_j k_m(i, t_j) Lam_m(t_j, r); KP = chi_r w_r k_m(i, r)
   * (k_m of K, or of K W for spin 2) */
  if (!rc) {
    int bad = 0;
    const int mk = mm > mp ? mm : mp;
#pragma omp parallel num_threads(nthreads) reduction(| : bad)
    {
      int cap = 0;
      double *kv = NULL, *km = malloc(sizeof *km * (2 * mk + 1));
      bad |= !km;
#pragma omp for schedule(dynamic, 1)
      for (int i = 1; i <= nout; i++) {
        if (!km) continue;
        const arkcos_ring *ro = &g->rings[i - 1];
        double *hi = p->H + (size_t)(i - 1) * rd * nm;
        for (int j = 0; j < ng && !bad; j++) {
          if (wg[j] == 0) continue;
          const double th = theta_of_t(tg[j], n);
          const int got = spin ? az_spectrum2(kf, sigma, ro->theta, th, mm, km, &kv, &cap)
                               : az_spectrum(kf, sigma, ro->theta, th, mm, km, &kv, &cap);
          if (got < 0) bad = 1;
          if (got <= 0) continue;
          for (int m = 0; m < nm; m++) km[m] *= wg[j];
          const double *lj = lamg + (size_t)j * rd * nm;
          for (int r = 0; r < rd; r++) {
            double *h = hi + (size_t)r * nm;
            const double *lr = lj + (size_t)r * nm;
#pragma omp simd
            for (int m = 0; m < nm; m++) h[m] += km[m] * lr[m];
          }
        }
        for (int r = 1; mp && r < t2 && !bad; r++) {
          const arkcos_ring *rg = &g->rings[r - 1];
          const int got = spin ? az_spectrum2(kf, sigma, ro->theta, rg->theta, mp, km, &kv, &cap)
                               : az_spectrum(kf, sigma, ro->theta, rg->theta, mp, km, &kv, &cap);
          if (got < 0) bad = 1;
          if (got <= 0) continue;
          double *kp = p->KP + ((size_t)(i - 1) * (t2 - 1) + (r - 1)) * nmp;
          for (int m = 0; m < nmp; m++) kp[m] = p->chi[r] * rg->weight * km[m];
        }
      }
      free(kv);
      free(km);
    }
    rc = bad;
  }
  free(tg);
  free(wg);
  free(ax);
  free(as);
  free(ac);
  free(lamg);
  free(bary);
  if (rc) {
    free(lamc);
    lamc = NULL;
  }
  *lamc_out = lamc;
  return rc ? ARKCOS_ENOMEM : ARKCOS_OK;
}

/* The disc's mirror bases (mv_e, mv_o, mv_1); 1 out of memory. */
static int mirror_vectors(arkcos_polar *p) {
  const int rd = p->lay.rd, ne = er0(rd + 1), no = or0(rd + 1);
  p->mv_e = malloc(sizeof *p->mv_e * (size_t)ne);
  p->mv_o = malloc(sizeof *p->mv_o * (size_t)(no > 0 ? no : 1));
  p->mv_1 = malloc(sizeof *p->mv_1 * (size_t)p->lay.nb);
  if (!p->mv_e || !p->mv_o || !p->mv_1) return 1;
  for (int r = 1; r <= rd; r++) {
    for (int a = 0; a < (r + 1) / 2; a++) p->mv_e[er0(r) + a] = p->mv_1[er0(r) + a] = mirror_vec(r, a, 0);
    for (int a = 0; a < r / 2; a++) {
      p->mv_o[or0(r) + a] = mirror_vec(r, a, 1);
      p->mv_1[ne + or0(r) + a] = mirror_vec(r, a, 3);
    }
  }
  return 0;
}

/* A correction of spin 0 or 2 for (g, k) with its layout and window, its
 * tables not yet made; NULL with err->code 0 where none applies, with
 * err->code set out of memory. */
static arkcos_polar *polar_new(const arkcos_geometry *g, const arkcos_kernel *k, int spin, arkcos_error *err) {
  if (err) err->code = 0;
  layout lay;
  if (!make_layout(g, k, &lay)) return NULL;
  if (spin) lay.mm += POLAR_S2_DM;
  arkcos_polar *p = calloc(1, sizeof *p);
  if (!p) return arkcos_fail(err, ARKCOS_ENOMEM, spin ? "polar caps (Q, U): out of memory" : "polar caps: out of memory"), NULL;
  p->g = g;
  p->kf = *arkcos_kernel_fun(k);
  p->lay = lay;
  p->spin = spin;
  for (int r = 1; r < lay.t2; r++) p->chi[r] = chi_of_t(r, lay.t2);
  return p;
}

arkcos_polar *arkcos_polar_create(const arkcos_geometry *g, const arkcos_kernel *k, int nthreads,
                                  arkcos_error *err) {
  arkcos_polar *p = polar_new(g, k, 0, err);
  if (!p) return NULL;
  if (nthreads <= 0) nthreads = omp_get_max_threads();
  const int rd = p->lay.rd, mm = p->lay.mm, nb = p->lay.nb, L = (int)(2 * g->nside);
  const int nc = POLAR_NCHEB, na = nc + rd;
  const int ne = er0(rd + 1), no = or0(rd + 1);
  const int mrc = mirror_vectors(p);
  p->nfac[0] = p->nfac[2] = ne;
  p->nfac[1] = p->nfac[3] = no;
  p->nfac[4] = nb;
  double *lamc = NULL;
  int rc = mrc;
  if (!rc) rc = polar_tables(p, nthreads, &lamc) ? 1 : 0;
  /* the blocks B^w = 4 sum_{m = w mod 4} Lam_|m|(r, r') e^{i m dphi} in the
   * mirror basis (fold_pair), plus the nugget, then factored */
  for (int f = 0; f < 5 && !rc; f++)
    if (p->nfac[f] && !(p->fac[f] = calloc((size_t)p->nfac[f] * p->nfac[f], sizeof *p->fac[f]))) rc = 1;
  if (!rc) {
    const double nug = POLAR_NUGGET * (L + 1.0) * (L + 1.0) / (4.0 * M_PI);
    int bad = 0;
    /* per ring pair (r, r2 <= r), all its pixel pairs side by side: e^{i m
     * dphi} by its recurrence in m, each class of m mod 4 added where it
     * goes; then the pair's entries of the folded matrices, whose vectors
     * take their pixels from one ring each */
#pragma omp parallel num_threads(nthreads) reduction(| : bad)
    {
      const size_t cap = (size_t)rd * rd;
      double *w8 = malloc(sizeof *w8 * 8 * cap);
      bad |= !w8;
#pragma omp for schedule(dynamic, 1)
      for (int r = 1; r <= rd; r++) {
        if (!w8) continue;
        double *c1 = w8, *s1 = w8 + cap, *er = w8 + 2 * cap, *ei = w8 + 3 * cap, *b0 = w8 + 4 * cap,
               *b2 = w8 + 5 * cap, *b1r = w8 + 6 * cap, *b1i = w8 + 7 * cap;
        for (int r2 = 1; r2 <= r; r2++) {
          const int np = r * r2;
          /* pixel pair q = a r2 + a2's mirror (a -> r - 1 - a, a2 -> r2 - 1 -
           * a2) is np - 1 - q, its dphi negated: the sums of the first
           * half, then the rest as their conjugates */
          const int nh = (np + 1) / 2;
          for (int q = 0; q < nh; q++) {
            const int a = q / r2, a2 = q % r2;
            const double dphi = (a + 0.5) * M_PI / (2.0 * r) - (a2 + 0.5) * M_PI / (2.0 * r2);
            c1[q] = cos(dphi), s1[q] = sin(dphi), er[q] = 1, ei[q] = 0;
            b0[q] = b2[q] = b1r[q] = b1i[q] = 0;
          }
          for (int m = 0; m <= mm; m++) {
            const double lam = lamc[((size_t)m * na + nc + (r - 1)) * rd + (r2 - 1)];
            /* m and -m: e^{i m dphi} to residue m mod 4, its conjugate to -m mod 4 */
            switch (m & 3) {
              case 0: {
                const double f = m ? 2 * lam : lam;
#pragma omp simd
                for (int q = 0; q < nh; q++) b0[q] += f * er[q];
                break;
              }
              case 1:
#pragma omp simd
                for (int q = 0; q < nh; q++) b1r[q] += lam * er[q], b1i[q] += lam * ei[q];
                break; /* -m = 3: not stored */
              case 2:
#pragma omp simd
                for (int q = 0; q < nh; q++) b2[q] += 2 * lam * er[q];
                break;
              default:
#pragma omp simd
                for (int q = 0; q < nh; q++) b1r[q] += lam * er[q], b1i[q] -= lam * ei[q];
                break; /* -m = 1 mod 4 */
            }
#pragma omp simd
            for (int q = 0; q < nh; q++) {
              const double t = er[q] * c1[q] - ei[q] * s1[q];
              ei[q] = er[q] * s1[q] + ei[q] * c1[q];
              er[q] = t;
            }
          }
          for (int q = nh; q < np; q++) {
            const int qm = np - 1 - q;
            b0[q] = b0[qm], b2[q] = b2[qm], b1r[q] = b1r[qm], b1i[q] = -b1i[qm];
          }
          fold_pair(p, r, r2, b0, b2, b1r, b1i, nug);
        }
      }
      free(w8);
    }
    rc = bad;
    if (!rc) rc = factor_blocks(p->fac, p->nfac, 5, nthreads) ? 2 : 0;
  }
  free(lamc);
  if (rc == 2) {
    arkcos_polar_destroy(p);
    return arkcos_fail(err, ARKCOS_ERUNTIME, "polar caps: the reconstruction's covariance is not positive"), NULL;
  }
  if (rc) {
    arkcos_polar_destroy(p);
    return arkcos_fail(err, ARKCOS_ENOMEM, "polar caps: out of memory"), NULL;
  }
  return p;
}

int64_t arkcos_polar_disc_pixels(const arkcos_polar *p) { return p ? p->lay.nd : 0; }
int64_t arkcos_polar_out_pixels(const arkcos_polar *p) { return p ? p->lay.nout_pix : 0; }
const double *arkcos_polar_delta_one(arkcos_polar *p, int nthreads) {
  if (!p || p->spin || p->delta1) return p ? p->delta1 : NULL;
  if (nthreads <= 0) nthreads = omp_get_max_threads();
  double *ones = malloc(sizeof *ones * (size_t)p->lay.nd), *d = malloc(sizeof *d * (size_t)p->lay.nout_pix);
  if (ones && d) {
    for (int64_t j = 0; j < p->lay.nd; j++) ones[j] = 1;
    if (!correct_cap(p, ones, d, nthreads)) p->delta1 = d, d = NULL;
  }
  free(ones);
  free(d);
  return p->delta1;
}

int64_t arkcos_polar_cap_pixel(const arkcos_polar *p, int cap, int64_t k) {
  /* position k: its ring (from the pole, 0-based) and azimuth index */
  const arkcos_geometry *g = p->g;
  int lo = 0, hi = (p->lay.nout > p->lay.rd ? p->lay.nout : p->lay.rd) - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (g->rings[mid].ofs <= k) lo = mid; else hi = mid - 1;
  }
  return cap ? g->rings[g->nrings - 1 - lo].ofs + (k - g->rings[lo].ofs) : k;
}

int64_t arkcos_polar_mirror(const arkcos_polar *p, int64_t j) { return arkcos_polar_cap_pixel(p, 1, j); }

/* The disc's n values scaled by a power of 2 to a largest value in [1, 2):
 * the same bits for maps in the normal range, and denormal or huge maps
 * keep their relative precision through the solve. Returns the exponent
 * the corrections are scaled back by. */
static int disc_scale(double *f, int64_t n) {
  double mx = 0;
  for (int64_t j = 0; j < n; j++) mx = fmax(mx, fabs(f[j]));
  const int ex = mx > 0 && isfinite(mx) ? ilogb(mx) : 0;
  if (ex)
    for (int64_t j = 0; j < n; j++) f[j] = ldexp(f[j], -ex);
  return ex;
}

int arkcos_polar_correct(const arkcos_polar *p, const double *disc, double *corr, int nthreads) {
  if (nthreads <= 0) nthreads = omp_get_max_threads();
  double *fd = malloc(sizeof *fd * (size_t)p->lay.nd);
  if (!fd) return ARKCOS_ENOMEM;
  memcpy(fd, disc, sizeof *fd * (size_t)p->lay.nd);
  const int ex = disc_scale(fd, p->lay.nd);
  const int rc = correct_cap(p, fd, corr, nthreads);
  if (!rc && ex)
    for (int64_t j = 0; j < p->lay.nout_pix; j++) corr[j] = ldexp(corr[j], ex);
  free(fd);
  return rc;
}

int arkcos_polar_apply(const arkcos_polar *p, const double *in, double *out, int caps, int nthreads) {
  if (!p || !caps) return ARKCOS_OK;
  const int64_t nd = p->lay.nd, no = p->lay.nout_pix;
  double *fd = malloc(sizeof *fd * (size_t)nd), *d = malloc(sizeof *d * (size_t)no);
  int rc = fd && d ? ARKCOS_OK : ARKCOS_ENOMEM;
  for (int cap = 0; cap < 2 && !rc; cap++) {
    if (!(caps >> cap & 1)) continue;
    for (int64_t k = 0; k < nd; k++) fd[k] = in[arkcos_polar_cap_pixel(p, cap, k)];
    if ((rc = arkcos_polar_correct(p, fd, d, nthreads))) break;
    for (int64_t k = 0; k < no; k++) out[arkcos_polar_cap_pixel(p, cap, k)] += d[k];
  }
  free(fd);
  free(d);
  return rc;
}

/* ------------------------------------------------------------------ spin 2
 *
 * Q and U (P = Q + iU, smoothed as P'(p) = sum_q w_q K(alpha) W(p, q) P(q),
 * W the transport factor arkcos_spin2_transport) take the same
 * reconstruction with the spin-2 prior: the covariance of E and B white up
 * to L = 2 nside, C2(y, q) = sum_l (2 l + 1) / (4 pi) d^l_22(beta) W(y, q) =
 * sum_m e^{i m (phi_y - phi_q)} Lam2_m(theta_y, theta_q), Lam2_m = sum_l
 * (2 l + 1) / (4 pi) d^l_{m,-2} d^l_{m,-2} (lam_sums_spin), over signed m
 * (Lam2_-m is not Lam2_m). Kriging then is complex: (C2_DD + nu) c = P_D,
 * its four quadrant blocks B^w = 4 sum_{m = w mod 4} Lam2_m e^{i m dphi}
 * Hermitian and distinct. Each is conjugated by the mirror a -> r - 1 - a
 * of the quadrant's azimuths (dphi -> -dphi, Lam2_m real): M B M = conj B,
 * so B is real symmetric in the basis of w = 1's even vectors and i times
 * its odd ones (fold_real), and real Cholesky factors solve its real and
 * imaginary parts (a quarter of the complex factorisation's flops), and
 *
 *   I(x) = sum_{|m| <= M} e^{i m phi_x} sum_r H2_m(ring x, r) c_r(m),
 *   H2_m(i, r) = 2 pi int dt (dz/dt) chi k2_m(theta_i, theta(t)) Lam2_m(theta(t), theta_r),
 *
 * k2_m the azimuthal coefficients of K W (real: K W is Hermitian in the
 * offset). P is the same pixel sum with W. The south cap is the north's
 * mirror: W -> conj W and (Q, U) -> (Q, -U), so it takes the north tables
 * with U negated on the way in and out. */


/* The azimuthal coefficients of K W between colatitudes tho (the output's)
 * and th: km[mk + m] = (1/N) sum_k K W(x_k) e^{-i m x_k}, x = phi_out -
 * phi_in, m in [-mk, mk]; as az_spectrum, 0 where the kernel does not
 * reach, -1 out of memory. */
static int az_spectrum2(const arkcos_kfun *kf, double sigma, double tho, double th, int mk, double *km, double **kv,
                        int *cap) {
  double sdt2, ss;
  int nphi, nlast;
  const int got = az_grid(kf, sigma, tho, th, mk, 4, &sdt2, &ss, &nphi, &nlast, kv, cap);
  if (got <= 0) return got;
  const int nh = nphi / 2;
  double *kr = *kv, *ki = kr + nh + 1, *sh = ki + nh + 1, *ch = sh + nh + 1;
  half_angles(nphi, nlast, sh, ch);
  const transport_geo tg = transport_geometry(tho, th);
  for (int q = 0; q <= nlast; q++) {
    const double v = arkcos_kfun_d2(kf, 4.0 * (sdt2 + ss * sh[q] * sh[q])) * (q == 0 || q == nh ? 1.0 : 2.0) / nphi;
    double wr = 1, wi = 0;
    if (v != 0) transport_half(&tg, -sh[q], ch[q], &wr, &wi); /* the input at phi_out - x */
    kr[q] = v * wr;
    ki[q] = v * wi;
  }
  /* k_{+-m} = C_m +- S_m, C = sum Re cos(m x), S = sum Im sin(m x) */
  for (int m = 0; m <= 2 * mk; m++) km[m] = 0;
  for (int q0 = 0; q0 <= nlast; q0 += 64) {
    const int nq = nlast + 1 - q0 < 64 ? nlast + 1 - q0 : 64, nql = (nq + LANES - 1) / LANES * LANES;
    double c0[64], c1[64], s0[64], s1[64], c2[64], ar[64], ai[64], cs = 0, ss1 = 0, cs1 = 0;
    for (int q = 0; q < nql; q++) { /* zeros past nq: whole lanes (az_spectrum) */
      if (q >= nq) {
        ar[q] = ai[q] = c0[q] = s0[q] = c1[q] = s1[q] = c2[q] = 0.0;
        continue;
      }
      const double hs = sh[q0 + q], hc = ch[q0 + q];
      ar[q] = kr[q0 + q];
      ai[q] = ki[q0 + q];
      c0[q] = 1.0, s0[q] = 0.0;
      c1[q] = (hc - hs) * (hc + hs), s1[q] = 2.0 * hs * hc; /* cos and sin of x = 2 pi q / nphi */
      c2[q] = 2.0 * c1[q];
      cs += ar[q];
      cs1 += ar[q] * c1[q];
      ss1 += ai[q] * s1[q];
    }
    km[mk] += cs;
    if (mk >= 1) km[mk + 1] += cs1 + ss1, km[mk - 1] += cs1 - ss1;
    for (int m = 2; m <= mk; m++) {
      double ac[LANES] = {0}, as[LANES] = {0};
      for (int b = 0; b < nql; b += LANES)
#pragma omp simd
        for (int u = 0; u < LANES; u++) {
          const int q = b + u;
          const double cn = c2[q] * c1[q] - c0[q], sn = c2[q] * s1[q] - s0[q];
          c0[q] = c1[q], c1[q] = cn;
          s0[q] = s1[q], s1[q] = sn;
          ac[u] += ar[q] * cn;
          as[u] += ai[q] * sn;
        }
      const double vc = lanes_sum(ac), vs = lanes_sum(as);
      km[mk + m] += vc + vs;
      km[mk - m] += vc - vs;
    }
  }
  return 1;
}

/* P with W at one output pixel (phi) of a ring whose per-ring geometry
 * (tho, sdt2, ss, half) is given, of the disc's values (fq, fu, north
 * order): *vr + i *vi. As inner_pixel_sum, sin and cos of (phi_k - phi) / 2
 * go by their recurrence along a ring's window; the transport factor is
 * arkcos_spin2_transport's arithmetic from them (sin dphi = 2 sin cos of
 * the half angle) and the two rings' colatitudes' sines and cosines. */
static void inner_pixel_sum2(const arkcos_polar *p, double tho, const double *sdt2, const double *ss,
                             const double *half, double phi, const double *fq, const double *fu, double *vr,
                             double *vi) {
  const arkcos_ring *rings = p->g->rings;
  double sr = 0, si = 0;
  for (int r = 1; r < p->lay.t2; r++) {
    if (half[r] < 0) continue;
    const arkcos_ring *rg = &rings[r - 1];
    const int n = 4 * r;
    const int64_t o = 2 * (int64_t)r * (r - 1);
    int64_t k0;
    const int64_t cnt = ring_window(rg, half[r], phi, &k0);
    const transport_geo tg = transport_geometry(tho, rg->theta);
    const double h0 = 0.5 * (ring_phi(rg, k0) - phi), cd = cos(M_PI / n), sd = sin(M_PI / n);
    double sh = sin(h0), ch = cos(h0), rr = 0, ri = 0;
    int64_t k = ((k0 % n) + n) % n;
    for (int64_t j = 0; j < cnt; j++) {
      const double v = arkcos_kfun_d2(&p->kf, 4.0 * (sdt2[r] + ss[r] * sh * sh));
      if (v != 0) {
        double wr, wi;
        transport_half(&tg, sh, ch, &wr, &wi);
        rr += v * (wr * fq[o + k] - wi * fu[o + k]);
        ri += v * (wr * fu[o + k] + wi * fq[o + k]);
      }
      const double t = sh * cd + ch * sd; /* the half angle grows by pi / n */
      ch = ch * cd - sh * sd;
      sh = t;
      if (++k == n) k = 0;
    }
    sr += p->chi[r] * rg->weight * rr;
    si += p->chi[r] * rg->weight * ri;
  }
  *vr = sr;
  *vi = si;
}

/* (dq, dq) = I - P at the north-order output pixels, (fq, fu) the disc's
 * values in north order; ARKCOS_ENOMEM when its scratch cannot be had. */
static int correct_cap2(const arkcos_polar *p, const double *fq, const double *fu, double *dq, double *du,
                        int nthreads) {
  const int rd = p->lay.rd, nb = p->lay.nb, mm = p->lay.mm, mp = p->lay.mp, mx = mm > mp ? mm : mp;
  const int nmm = 2 * mm + 1, nmp = 2 * mp + 1;
  double *cw = malloc(sizeof *cw * 10 * (size_t)nb); /* c^w: re [w][nb], then im, then the solves' scratch */
  double complex *cr = malloc(sizeof *cr * (size_t)rd * nmm);
  double complex *fr = mp ? malloc(sizeof *fr * (size_t)p->lay.t2 * nmp) : NULL;
  if (!cw || !cr || (mp && !fr)) {
    free(cw);
    free(cr);
    free(fr);
    return ARKCOS_ENOMEM;
  }
  double *cwr = cw, *cwi = cw + 4 * (size_t)nb;
  /* c^w = sum_j P_j e^{-i pi w j / 2}, the quadrants j */
  for (int r = 1, j = 0; r <= rd; r++)
    for (int a = 0; a < r; a++, j++) {
      const int64_t o = 2 * (int64_t)r * (r - 1) + a;
      const double q0 = fq[o], q1 = fq[o + r], q2 = fq[o + 2 * r], q3 = fq[o + 3 * r];
      const double u0 = fu[o], u1 = fu[o + r], u2 = fu[o + 2 * r], u3 = fu[o + 3 * r];
      cwr[j] = q0 + q1 + q2 + q3, cwi[j] = u0 + u1 + u2 + u3;
      /* w = 1: P0 - i P1 - P2 + i P3 */
      cwr[nb + j] = q0 + u1 - q2 - u3, cwi[nb + j] = u0 - q1 - u2 + q3;
      cwr[2 * nb + j] = q0 - q1 + q2 - q3, cwi[2 * nb + j] = u0 - u1 + u2 - u3;
      /* w = 3: P0 + i P1 - P2 - i P3 */
      cwr[3 * nb + j] = q0 - u1 - q2 + u3, cwi[3 * nb + j] = u0 + q1 - u2 - q3;
    }
  for (int w = 0; w < 4; w++) {
    const double *f[1] = {p->fac2[w]};
    const mvec *l[1] = {p->mv_1};
    basis_solve(1, f, &nb, l, nb, cwr + (size_t)w * nb, cwi + (size_t)w * nb, cw + 8 * (size_t)nb);
  }
  /* c_r(m) = sum_a e^{-i m phi_ra} c^{m mod 4}_(r,a), m signed */
  for (int r = 1, j0 = 0; r <= rd; j0 += r, r++)
    for (int m = -mm; m <= mm; m++) {
      const int w = m & 3; /* two's complement: m mod 4 for negative m too */
      const double st = -m * M_PI / (2.0 * r), sr = cos(st), si = sin(st);
      double er = cos(0.5 * st), ei = sin(0.5 * st), vr = 0, vi = 0;
      const double *xr = cwr + (size_t)w * nb + j0, *xi = cwi + (size_t)w * nb + j0;
      for (int a = 0; a < r; a++) {
        vr += er * xr[a] - ei * xi[a];
        vi += er * xi[a] + ei * xr[a];
        const double t = er * sr - ei * si;
        ei = er * si + ei * sr;
        er = t;
      }
      cr[(size_t)(r - 1) * nmm + (m + mm)] = vr + I * vi;
    }
  const arkcos_ring *rings = p->g->rings;
  /* P's ring spectra F_r(m) = sum_k P_rk e^{-i m phi_rk}, m in [-mp, mp] */
  for (int r = 1; mp && r < p->lay.t2; r++) {
    const int64_t o = 2 * (int64_t)r * (r - 1);
    for (int m = -mp; m <= mp; m++) {
      const double complex e1 = cexp(-I * m * M_PI / (2.0 * r));
      double complex e = cexp(-I * m * M_PI / (4.0 * r)), v = 0;
      for (int k = 0; k < 4 * r; k++) {
        v += (fq[o + k] + I * fu[o + k]) * e;
        e *= e1;
      }
      fr[(size_t)r * nmp + (m + mp)] = v;
    }
  }
  int bad = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads) reduction(| : bad)
  for (int i = 1; i <= p->lay.nout; i++) {
    const arkcos_ring *ro = &rings[i - 1];
    double complex gm[2 * (1024 + POLAR_S2_DM) + 1];
    double sdt2[POLAR_T2_MAX], ss[POLAR_T2_MAX], half[POLAR_T2_MAX];
    if (mx > 1024 + POLAR_S2_DM) {
      bad = 1;
      continue;
    }
    for (int m = -mx; m <= mx; m++) {
      double complex v = 0;
      if (m >= -mm && m <= mm)
        for (int r = 0; r < rd; r++)
          v += p->H[((size_t)(i - 1) * rd + r) * nmm + (m + mm)] * cr[(size_t)r * nmm + (m + mm)];
      if (mp && m >= -mp && m <= mp)
        for (int r = 1; r < p->lay.t2; r++)
          v -= p->KP[((size_t)(i - 1) * (p->lay.t2 - 1) + (r - 1)) * nmp + (m + mp)] * fr[(size_t)r * nmp + (m + mp)];
      gm[m + mx] = v;
    }
    if (!mp) inner_geometry(p, ro->theta, sdt2, ss, half);
    for (int64_t a = 0; a < ro->nph; a++) {
      const double phi = ring_phi(ro, a);
      const double complex e1 = cexp(I * phi);
      double complex ep = e1, acc = gm[mx];
      for (int m = 1; m <= mx; m++) {
        acc += gm[mx + m] * ep + gm[mx - m] * conj(ep);
        ep *= e1;
      }
      double vr = creal(acc), vi = cimag(acc);
      if (!mp) {
        double pr, pi;
        inner_pixel_sum2(p, ro->theta, sdt2, ss, half, phi, fq, fu, &pr, &pi);
        vr -= pr;
        vi -= pi;
      }
      dq[ro->ofs + a] = vr;
      du[ro->ofs + a] = vi;
    }
  }
  free(fr);
  free(cw);
  free(cr);
  return bad ? ARKCOS_ENOMEM : ARKCOS_OK;
}

double arkcos_polar_estimate_spin2(const arkcos_geometry *g, const arkcos_kernel *k) {
  layout o;
  if (!make_layout(g, k, &o)) return 0;
  const double nmm = 2.0 * (o.mm + POLAR_S2_DM) + 1, nmp = 2.0 * o.mp + 1;
  const double held = 8.0 * ((double)o.nout * o.rd * nmm + (double)o.nout * (o.t2 - 1) * nmp +
                             4.0 * o.nb * o.nb) + sizeof(mvec) * 3.0 * o.nb;
  const int na = POLAR_NCHEB + o.rd;
  const double made = 8.0 * (nmm * na * o.rd + nmm * o.ng * o.rd + (double)o.ng * POLAR_NCHEB);
  const double apply = 8.0 * (2.0 * o.nd + 2.0 * o.nout_pix + 10.0 * o.nb + 2.0 * o.rd * nmm + 2.0 * o.t2 * nmp);
  return held + (made > apply ? made : apply);
}

arkcos_polar *arkcos_polar_create_spin2(const arkcos_geometry *g, const arkcos_kernel *k, int nthreads,
                                        arkcos_error *err) {
  arkcos_polar *p = polar_new(g, k, 2, err);
  if (!p) return NULL;
  if (nthreads <= 0) nthreads = omp_get_max_threads();
  const layout lay = p->lay;
  const int rd = lay.rd, mm = lay.mm, nb = lay.nb, L = (int)(2 * g->nside), nc = POLAR_NCHEB, na = nc + rd;
  const int ne = er0(rd + 1);
  double *lamc = NULL;
  int rc = mirror_vectors(p);
  for (int w = 0; w < 4 && !rc; w++) rc = !(p->fac2[w] = calloc((size_t)nb * nb, sizeof *p->fac2[w]));
  if (!rc) rc = polar_tables(p, nthreads, &lamc) ? 1 : 0;
  /* the blocks B^w = 4 sum_{m = w mod 4} Lam2_m e^{i m dphi}, m signed:
   * per ring pair (r, r2 <= r), all its pixel pairs, then folded into the
   * real mirror basis (fold_real) with the nugget; then factored */
  if (!rc) {
    const double nug = POLAR_NUGGET * (L + 1.0) * (L + 1.0) / (4.0 * M_PI);
    int bad = 0;
#pragma omp parallel num_threads(nthreads) reduction(| : bad)
    {
      const size_t cap = (size_t)rd * rd;
      double *w12 = malloc(sizeof *w12 * 12 * cap);
      bad |= !w12;
#pragma omp for schedule(dynamic, 1)
      for (int r = 1; r <= rd; r++) {
        if (!w12) continue;
        double *c1 = w12, *s1 = w12 + cap, *er = w12 + 2 * cap, *ei = w12 + 3 * cap, *bre = w12 + 4 * cap,
               *bim = w12 + 8 * cap; /* bre, bim: [w][cap] */
        for (int r2 = 1; r2 <= r; r2++) {
          const int np = r * r2;
          const int nh = (np + 1) / 2; /* q's mirror is np - 1 - q (as the scalar's) */
          for (int q = 0; q < nh; q++) {
            const int a = q / r2, a2 = q % r2;
            const double dphi = (a + 0.5) * M_PI / (2.0 * r) - (a2 + 0.5) * M_PI / (2.0 * r2);
            c1[q] = cos(dphi), s1[q] = sin(dphi), er[q] = 1, ei[q] = 0;
            for (int w = 0; w < 4; w++) bre[w * cap + q] = bim[w * cap + q] = 0;
          }
          for (int m = 0; m <= mm; m++) {
            const double lp = lamc[((size_t)(m + mm) * na + nc + (r - 1)) * rd + (r2 - 1)];
            const double lm = lamc[((size_t)(mm - m) * na + nc + (r - 1)) * rd + (r2 - 1)];
            /* +m: e to residue m mod 4; -m: conj(e) to residue -m mod 4 */
            double *pr = bre + (size_t)(m & 3) * cap, *pi = bim + (size_t)(m & 3) * cap;
#pragma omp simd
            for (int q = 0; q < nh; q++) pr[q] += lp * er[q], pi[q] += lp * ei[q];
            if (m) {
              double *nr = bre + (size_t)((-m) & 3) * cap, *ni = bim + (size_t)((-m) & 3) * cap;
#pragma omp simd
              for (int q = 0; q < nh; q++) nr[q] += lm * er[q], ni[q] -= lm * ei[q];
            }
#pragma omp simd
            for (int q = 0; q < nh; q++) {
              const double t = er[q] * c1[q] - ei[q] * s1[q];
              ei[q] = er[q] * s1[q] + ei[q] * c1[q];
              er[q] = t;
            }
          }
          for (int w = 0; w < 4; w++) {
            double *br = bre + (size_t)w * cap, *bi = bim + (size_t)w * cap;
            for (int q = nh; q < np; q++) br[q] = br[np - 1 - q], bi[q] = -bi[np - 1 - q];
            for (int q = 0; q < np; q++) br[q] *= 4.0, bi[q] *= 4.0;
            fold_real(p->fac2[w], nb, ne, r, r2, br, bi, nug);
          }
        }
      }
      free(w12);
    }
    rc = bad;
    if (!rc) {
      const int nbs[4] = {nb, nb, nb, nb};
      rc = factor_blocks(p->fac2, nbs, 4, nthreads) ? 2 : 0;
    }
  }
  free(lamc);
  if (rc) {
    arkcos_polar_destroy(p);
    return rc == 2 ? arkcos_fail(err, ARKCOS_ERUNTIME, "polar caps (Q, U): the reconstruction's covariance is not positive"),
           NULL : (arkcos_fail(err, ARKCOS_ENOMEM, "polar caps (Q, U): out of memory"), NULL);
  }
  return p;
}

int arkcos_polar_correct2(const arkcos_polar *p, int cap, const double *q, const double *u, double *cq, double *cu,
                          int nthreads) {
  if (nthreads <= 0) nthreads = omp_get_max_threads();
  const int64_t nd = p->lay.nd, no = p->lay.nout_pix;
  double *fq = malloc(sizeof *fq * 2 * (size_t)nd), *fu = fq ? fq + nd : NULL;
  if (!fq) return ARKCOS_ENOMEM;
  /* the south cap as the north's mirror: U negated */
  const double su = cap ? -1.0 : 1.0;
  for (int64_t k = 0; k < nd; k++) {
    fq[k] = q[k];
    fu[k] = su * u[k];
  }
  const int ex = disc_scale(fq, 2 * nd);
  const int rc = correct_cap2(p, fq, fu, cq, cu, nthreads);
  for (int64_t k = 0; !rc && k < no; k++) {
    cq[k] = ex ? ldexp(cq[k], ex) : cq[k];
    cu[k] = su * (ex ? ldexp(cu[k], ex) : cu[k]);
  }
  free(fq);
  return rc;
}

int arkcos_polar_apply2(const arkcos_polar *p, const double *q, const double *u, double *qo, double *uo, int caps,
                        int nthreads) {
  if (!p || !caps) return ARKCOS_OK;
  const int64_t nd = p->lay.nd, no = p->lay.nout_pix;
  double *fq = malloc(sizeof *fq * 2 * (size_t)nd), *d = malloc(sizeof *d * 2 * (size_t)no);
  double *fu = fq ? fq + nd : NULL, *dq = d, *du = d ? d + no : NULL;
  int rc = fq && d ? ARKCOS_OK : ARKCOS_ENOMEM;
  for (int cap = 0; cap < 2 && !rc; cap++) {
    if (!(caps >> cap & 1)) continue;
    for (int64_t k = 0; k < nd; k++) {
      const int64_t j = arkcos_polar_cap_pixel(p, cap, k);
      fq[k] = q[j];
      fu[k] = u[j];
    }
    if ((rc = arkcos_polar_correct2(p, cap, fq, fu, dq, du, nthreads))) break;
    for (int64_t k = 0; k < no; k++) {
      const int64_t j = arkcos_polar_cap_pixel(p, cap, k);
      qo[j] += dq[k];
      uo[j] += du[k];
    }
  }
  free(fq);
  free(d);
  return rc;
}
