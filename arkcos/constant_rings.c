/*
 * constant_rings.c -- the Fourier pairs' part of a constant map's execute
 * (arkcos_direct_execute_constant, pairs_direct.c): the smoother's A(1),
 * which ring quadrature divides by below 8 pixels per FWHM, without ring
 * FFTs or kernel spectra. Shared by both precisions; double throughout.
 *
 * Input ring j holding the constant 1 gives output pixel a of ring i
 *   s_a = w_j sum_b K(phi_a - phi_jb),  phi_jb = phi0_j + 2 pi b / n_j,
 * the kernel K a function of the azimuth offset on the pair.
 *  - Both rings of the grid's length L (the belt): the Fourier path is the
 *    exact circular convolution, and s_a = w_j sum_n K(delta + 2 pi n / L),
 *    the same at every a (pair_grid_sum): the direct sum to rounding.
 *  - Other pairs (the smooth caps' Fourier pairs of unequal rings): by
 *    Poisson's summation formula
 *      s_a = w_j n_j sum_k g(k n_j) e^{i k n_j (phi_a - phi0_j)},
 *    g(m) the Fourier coefficients of K(dphi) over the circle; K is even,
 *    so g is real. A Gaussian of width sigma on a pair with
 *    x = sin th_i sin th_j / sigma^2 has g(m) / g(0) close to
 *    I_m(x) / I_0(x) (exp(-m^2 / 2 x) for large x, faster for small), below
 *    1e-20 beyond m_neg = 12 sqrt(x) + 16 (9.6 sqrt(x) with a 1.25 margin
 *    on the width); the trapezoid rule on M = 2 m_neg points gives every
 *    g(m), m <= M / 2, with its aliases g(M - m) below that, and the terms
 *    k n_j > M / 2 are dropped. A term whose period divides the output
 *    ring's (k n_j a multiple of n_i) is a constant on the ring; the others
 *    vary with a and are kept where above 1e-17 of the ring's constant
 *    (only close to the poles). The kernel's jump at the cutoff (1e-13 of
 *    its peak on smooth-caps plans) is what the trapezoid rule does not
 *    resolve: its error is of the order of that jump, as the smooth caps'
 *    Fourier path's (the plan's bound holds both).
 */
#include <math.h>
#include <stdlib.h>

#include "arkcos/arkcos_math.h"
#include "arkcos/plan_internal.h"

/* w_j sum_n K(delta + 2 pi n / L) of pair (i, j), both rings of length L */
static double pair_grid_sum(const arkcos_plan *p, int i, int j, double *buf) {
  const arkcos_ring *rg = p->geom->rings;
  const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  const double sdt2 = sdt * sdt, ss = p->sin_theta[i] * p->sin_theta[j];
  const double half = arkcos_dphi_window(&p->kf, sdt2, ss), delta = rg[i].phi0 - rg[j].phi0;
  int64_t n0, n1;
  arkcos_sample_range(half, delta, p->L, &n0, &n1);
  double s = 0;
  for (int64_t b = n0; b <= n1; b += ARKCOS_SAMPLES_CHUNK) {
    const int64_t e = b + ARKCOS_SAMPLES_CHUNK - 1 < n1 ? b + ARKCOS_SAMPLES_CHUNK - 1 : n1;
    arkcos_kernel_samples(&p->kf, rg[j].weight, sdt2, ss, delta, p->L, b, e, buf);
    for (int64_t l = 0; l <= e - b; l++) s += buf[l];
  }
  return s;
}

/* sum_n v_n cos(2 pi m n / M), n = 1 .. n1, by a rotation renewed every
 * 32 steps from the exact angle (error a few units of rounding) */
static double cos_sum(const double *v, int64_t n1, int64_t m, int64_t M) {
  const double step = 2 * ARKCOS_PI / (double)M;
  const double cr = cos(step * (double)(m % M)), sr = sin(step * (double)(m % M));
  double s = 0, c = 1, z = 0;
  for (int64_t n = 1; n <= n1; n++) {
    if ((n & 31) == 0) {
      const double ang = step * (double)((m * n) % M);
      c = cos(ang), z = sin(ang);
    } else {
      const double c2 = c * cr - z * sr;
      z = c * sr + z * cr;
      c = c2;
    }
    s += v[n] * c;
  }
  return s;
}

typedef struct {
  int64_t m;      /* mode k n_j */
  double phase;   /* m (phi0_i - phi0_j) */
  double coef;    /* 2 w_j n_j g(m) */
} vterm;

static int by_magnitude(const void *a, const void *b) {
  const double x = fabs(((const vterm *)a)->coef), y = fabs(((const vterm *)b)->coef);
  return x < y ? -1 : x > y;
}

/* Adds Poisson's terms of pair (i, j) (rings not both of length L): the
 * constant ones to *base, the varying ones to t[*nt] (grown as needed).
 * Returns 0, or -1 out of memory. */
static int pair_poisson(const arkcos_plan *p, int i, int j, double *v, double *base, vterm **t, int *nt,
                        int *cap) {
  const arkcos_ring *rg = p->geom->rings;
  const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  const double sdt2 = sdt * sdt, ss = p->sin_theta[i] * p->sin_theta[j];
  const double half = arkcos_dphi_window(&p->kf, sdt2, ss);
  if (half < 0) return 0;
  const double x = 2 * p->kf.inv2s2 * ss;
  const int64_t M = 2 * (int64_t)ceil(12 * sqrt(x) + 16), M2 = M / 2;
  int64_t n1 = half >= ARKCOS_PI ? M2 : (int64_t)ceil(half * (double)M / (2 * ARKCOS_PI)) + 1;
  if (n1 > M2) n1 = M2;
  arkcos_kernel_samples(&p->kf, rg[j].weight, sdt2, ss, 0.0, M, 0, n1, v);
  /* the sample at pi (n = M / 2) is its own mirror: counted once */
  const double vpi = n1 == M2 ? v[M2] : 0;
  const int64_t nin = n1 == M2 ? M2 - 1 : n1;
  const int64_t Ni = rg[i].nph, Nj = rg[j].nph;
  double s0 = 0;
  for (int64_t n = 1; n <= nin; n++) s0 += v[n];
  *base += (double)Nj * (v[0] + 2 * s0 + vpi) / (double)M;
  const double dphi0 = rg[i].phi0 - rg[j].phi0;
  for (int64_t m = Nj; m <= M2; m += Nj) {
    const double g = v[0] + 2 * cos_sum(v, nin, m, M) + vpi * ((m & 1) ? -1 : 1);
    const double coef = 2 * (double)Nj * g / (double)M, phase = (double)m * dphi0;
    if (m % Ni == 0) {
      *base += coef * cos(phase);
      continue;
    }
    if (*nt == *cap) {
      const int c2 = *cap ? 2 * *cap : 64;
      vterm *t2 = realloc(*t, sizeof *t2 * (size_t)c2);
      if (!t2) return -1;
      *t = t2, *cap = c2;
    }
    (*t)[(*nt)++] = (vterm){m, phase, coef};
  }
  return 0;
}

/* Output ring i of a constant map c, from the Fourier pairs (i, j), j of
 * jlo[i0] .. jhi[i0] or their mirrors (mir): written to y[0 .. n_i) (the
 * direct pairs are added later, direct_apply_constant). Returns 0, or -1
 * out of memory (y untouched). */
int arkcos_constant_ring(const arkcos_plan *p, int i, int i0, int mir, double c, double *y) {
  const arkcos_ring *rg = p->geom->rings;
  /* samples: L for a grid pair's chunk, M / 2 + 1 for Poisson's (x <= 2 inv2s2) */
  const int64_t mmax = p->smooth_caps ? (int64_t)ceil(12 * sqrt(2 * p->kf.inv2s2) + 16) + 2 : 0;
  double *v = malloc(sizeof *v * (size_t)(mmax > ARKCOS_SAMPLES_CHUNK ? mmax : ARKCOS_SAMPLES_CHUNK));
  if (!v) return -1;
  const int64_t Ni = rg[i].nph;
  double base = 0;
  vterm *t = NULL;
  int nt = 0, cap = 0, rc = 0;
  for (int j0 = p->jlo[i0]; j0 <= p->jhi[i0] && !rc; j0++) {
    const int j = mir ? p->mirror[j0] : j0;
    if (j < 0 || arkcos_pair_is_direct(p, i, j)) continue;
    if (Ni == p->L && rg[j].nph == p->L) base += pair_grid_sum(p, i, j, v);
    else rc = pair_poisson(p, i, j, v, &base, &t, &nt, &cap);
  }
  free(v);
  if (rc) {
    free(t);
    return -1;
  }
  /* the varying terms: the smallest dropped while their magnitudes add up
   * to at most a quarter of the kernel's jump at its cutoff (times the
   * ring's constant), an error within what the plan's bound holds for it;
   * the jump's own spectral tail (about 1e-15 of the constant per term on
   * smooth-caps plans) goes, the poles' real terms stay */
  if (nt > 1) qsort(t, (size_t)nt, sizeof *t, by_magnitude);
  const double budget = 0.25 * arkcos_kfun_cut_level(&p->kf) * fabs(base);
  double dropped = 0;
  int first = 0;
  while (first < nt && dropped + fabs(t[first].coef) <= budget) dropped += fabs(t[first++].coef);
  if (first == nt) {
    for (int64_t a = 0; a < Ni; a++) y[a] = base * c;
    free(t);
    return 0;
  }
  /* each term's phase turns by 2 pi m / n_i a pixel: a rotation renewed
   * every 32 pixels from the exact angle. The ring's blocks of 32 pixels
   * are the vector lanes (yt holds pixel 32 k + o at yt[o nb + k]): lane k
   * runs block k's rotation, the same operations in the same order as a
   * loop over the pixels would (bit for bit), without its chain of
   * dependent multiplications from pixel to pixel. */
  const int64_t nb = (Ni + 31) / 32;
  double *yt = malloc(sizeof *yt * (size_t)(34 * nb));
  if (!yt) {
    free(t);
    return -1;
  }
  double *co = yt + 32 * nb, *si = co + nb;
  for (int64_t x = 0; x < 32 * nb; x++) yt[x] = base;
  const double step = 2 * ARKCOS_PI / (double)Ni;
  for (int q = first; q < nt; q++) {
    const double dm = step * (double)(t[q].m % Ni), coef = t[q].coef;
    const double cr = cos(dm), sr = sin(dm);
    for (int64_t k = 0; k < nb; k++) {
      const double ang = t[q].phase + step * (double)((t[q].m * 32 * k) % Ni);
      co[k] = cos(ang), si[k] = sin(ang);
    }
    for (int64_t k = 0; k < nb; k++) yt[k] += coef * co[k];
    for (int o = 1; o < 32; o++) {
      double *row = yt + (size_t)o * (size_t)nb;
#pragma omp simd
      for (int64_t k = 0; k < nb; k++) {
        const double c2 = co[k] * cr - si[k] * sr;
        si[k] = co[k] * sr + si[k] * cr;
        co[k] = c2;
        row[k] += coef * c2;
      }
    }
  }
  for (int64_t a = 0; a < Ni; a++) y[a] = yt[(a & 31) * nb + (a >> 5)] * c;
  free(yt);
  free(t);
  return 0;
}
