/*
 * direct_spin2.c -- the spin-2 (polarization) references: the direct pixel
 * sum with parallel transport, and the harmonic multipliers K_l^(2) of a
 * radial kernel. docs/POLARIZATION.md has the derivation at length.
 *
 * Written for clarity and independence: it shares no code with direct.c or
 * the engine (only arkcos_kernel_value and arkcos_kernel_cutoff are used),
 * so the engine's spin-2 path can be judged against it.
 *
 * ------------------------------------------------------------ conventions
 *
 * Q and U are those of healpy (map2alm(pol=True), HEALPix/COSMO convention):
 * they refer to the local basis (e_theta, e_phi) of each pixel, e_theta
 * pointing south (increasing colatitude) and e_phi east (increasing
 * azimuth), e_theta x e_phi = r (the outward normal). A linear polarization
 * whose direction makes the angle gamma with e_theta, counted from e_theta
 * towards e_phi, has
 *
 *     P = Q + i U = |P| e^{2 i gamma}.
 *
 * (IAU counts the angle from north through east: U_IAU = -U_HEALPix; with
 * that convention every weight below would be conjugated.)
 *
 * ---------------------------------------------- the transport angle, sign
 *
 * The source pixel q's polarization is carried to the target pixel p along
 * the great circle through both. Parallel transport along a geodesic keeps
 * the angle between the transported direction and the geodesic's tangent,
 * counted with the same orientation (about r) everywhere. Let psi_q be the
 * bearing of the tangent at q (travelling q -> p) and psi_p that of the
 * tangent at p (still travelling q -> p), both counted from the local
 * e_theta towards e_phi. A direction at angle gamma_q at q makes the angle
 * gamma_q - psi_q with the tangent; at p it makes the same angle, so
 *
 *     gamma_p = gamma_q + (psi_p - psi_q),  P -> e^{2i (psi_p - psi_q)} P.
 *
 * Only 2 psi enters, so a tangent may be replaced by its opposite: psi_p may
 * be taken as the bearing at p of the way back to q. With beta_xy the
 * bearing at x of the point y (from e_theta towards e_phi),
 *
 *     w(p, q) = e^{2i (beta_pq - beta_qp)}.
 *
 * A bearing is the angle of the other point's unit vector projected on the
 * tangent plane. With a = the unit vector of p, b = that of q, and the
 * frame rotated so that p sits at azimuth 0 (dphi = phi_q - phi_p):
 *
 *     a = (sin tp, 0, cos tp),   e_theta(p) = (cos tp, 0, -sin tp),
 *                                e_phi(p)   = (0, 1, 0);
 *     b = (sin tq cos dphi, sin tq sin dphi, cos tq),
 *     e_theta(q) = (cos tq cos dphi, cos tq sin dphi, -sin tq),
 *     e_phi(q)   = (-sin dphi, cos dphi, 0);
 *
 *     A = b.e_theta(p) + i b.e_phi(p)
 *       = [sin(tq - tp) - 2 cos tp sin tq sin^2(dphi/2)] + i sin tq sin dphi,
 *     B = a.e_theta(q) + i a.e_phi(q)
 *       = [sin(tp - tq) - 2 sin tp cos tq sin^2(dphi/2)] - i sin tp sin dphi,
 *
 * (half-angle forms of cos tp sin tq cos dphi - sin tp cos tq and
 * sin tp cos tq cos dphi - cos tp sin tq: no cancellation for close pixels)
 * so e^{i beta_pq} = A / |A|, e^{i beta_qp} = B / |B| and
 *
 *     w = (A conj(B))^2 / (|A|^2 |B|^2),     |A| = |B| = sin(alpha_pq).
 *
 * |A| also gives the distance: alpha = atan2(|A|, a.b). At alpha = 0 (p = q)
 * there is no transport, w = 1 (also set, arbitrarily, at alpha = pi).
 *
 * w depends on (tp, tq, dphi) only, so each pair of rings keeps its
 * convolution structure, with the complex kernel K(alpha) w in the azimuth
 * offset. Its symmetries (each checked in tests/test_spin2.c):
 *  - any azimuth rotation (the quarter turn that is exact on HEALPix):
 *    w unchanged, and Q, U unchanged since the frames turn with the sphere;
 *  - azimuth reflection dphi -> -dphi: A -> conj A, B -> conj B, so
 *    w -> conj w (a ring pair's kernel is Hermitian in the offset: its
 *    azimuthal spectrum is real but not even in m); on maps the reflection
 *    phi -> -phi takes (Q, U) to (Q, -U);
 *  - north/south mirror (tp, tq) -> (pi - tp, pi - tq): the real parts of A
 *    and B change sign, so w -> conj w; on maps (Q, U) -> (Q, -U);
 *  - exchange of p and q (with dphi -> -dphi): A <-> B, w -> conj w: the
 *    transported sum is a Hermitian operator (for equal pixel weights).
 *
 * The sum itself, with w_q the pixel's solid angle, is
 *
 *     P'(p) = sum_{alpha_pq <= cutoff} w_q K(alpha_pq) w(p, q) P(q),
 *
 * visiting only the rings crossing the cutoff disc and the azimuth range
 * inside it (the law of cosines, widened by a pixel each side), with
 * Neumaier-compensated sums of the real and imaginary parts.
 *
 * ------------------------------------------------- harmonic equivalent
 *
 * A transported convolution with a radial kernel is diagonal in spin-
 * weighted harmonics: by the addition theorem, the +-2 a_lm (and so E_lm
 * and B_lm) are multiplied by
 *
 *     K_l^(2) = 2 pi int_0^cutoff K(beta) d^l_22(beta) sin(beta) dbeta,
 *
 * d^l_22(beta) = cos^4(beta/2) P_{l-2}^{(0,4)}(cos beta), K_0^(2) = K_1^(2) = 0.
 * The three-term recurrence in l (m = m' = 2) used below, stable upwards
 * for |cos beta| <= 1 like Legendre's, is
 *
 *   l (l - 1)(l + 3) d^{l+1} = (2l + 1)(l (l + 1) c - 4) d^l
 *                              - (l + 1)(l^2 - 4) d^{l-1},   c = cos beta,
 *
 * from d^2_22 = ((1 + c)/2)^2 (the d^1 term has the factor l^2 - 4 = 0).
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "reference/reference.h"

#define TWO_PI 6.283185307179586476925286766559

/* ------------------------------------------------------- the transport */

/* The two tangent-plane projections of the derivation above: A (at p,
 * towards q) and B (at q, towards p), and a.b. */
typedef struct {
  double ar, ai, br, bi, dot;
} pair_geom;

static inline pair_geom pair_geometry(double cp, double sp, double cq,
                                      double sq, double dphi) {
  const double s = sin(0.5 * dphi), sd = sin(dphi);
  const double hav = 2.0 * s * s; /* 1 - cos(dphi) */
  const double sin_qp = sq * cp - cq * sp; /* sin(tq - tp) */
  pair_geom r;
  r.ar = sin_qp - cp * sq * hav;
  r.ai = sq * sd;
  r.br = -sin_qp - sp * cq * hav;
  r.bi = -sp * sd;
  r.dot = cp * cq + sp * sq * (1.0 - hav);
  return r;
}

/* w = (A conj B)^2 / (|A|^2 |B|^2); 1 where A or B vanishes. */
static inline void transport_weight(const pair_geom *r, double *wr,
                                    double *wi) {
  const double na = r->ar * r->ar + r->ai * r->ai;
  const double nb = r->br * r->br + r->bi * r->bi;
  const double den = na * nb;
  if (!(den > 0.0)) {
    *wr = 1.0;
    *wi = 0.0;
    return;
  }
  /* z = A conj(B) */
  const double zr = r->ar * r->br + r->ai * r->bi;
  const double zi = r->ai * r->br - r->ar * r->bi;
  *wr = (zr * zr - zi * zi) / den;
  *wi = 2.0 * zr * zi / den;
}

double complex ref_spin2_rotation(double theta_p, double theta_q,
                                  double dphi) {
  pair_geom r = pair_geometry(cos(theta_p), sin(theta_p), cos(theta_q),
                              sin(theta_q), dphi);
  double wr, wi;
  transport_weight(&r, &wr, &wi);
  return wr + I * wi;
}

/* ----------------------------------------------------------- the sum */

/* Neumaier-compensated sum. */
typedef struct {
  double sum, comp;
} nsum;

static inline void nsum_add(nsum *s, double x) {
  const double t = s->sum + x;
  if (fabs(s->sum) >= fabs(x))
    s->comp += (s->sum - t) + x;
  else
    s->comp += (x - t) + s->sum;
  s->sum = t;
}

/* Ring holding map pixel p: bisection over the rings sorted by first pixel
 * (a custom geometry need not store its rings in map order). */
typedef struct {
  int64_t ofs, nph;
  int ring;
} ring_start;

static int cmp_start(const void *a, const void *b) {
  const int64_t oa = ((const ring_start *)a)->ofs;
  const int64_t ob = ((const ring_start *)b)->ofs;
  return (oa > ob) - (oa < ob);
}

static ring_start *ring_starts(const arkcos_geometry *g) {
  ring_start *s = malloc((size_t)g->nrings * sizeof *s);
  if (!s) return NULL;
  for (int j = 0; j < g->nrings; j++)
    s[j] = (ring_start){g->rings[j].ofs, g->rings[j].nph, j};
  qsort(s, (size_t)g->nrings, sizeof *s, cmp_start);
  return s;
}

static int ring_of(const ring_start *s, int nrings, int64_t p) {
  int lo = 0, hi = nrings - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (s[mid].ofs <= p)
      lo = mid;
    else
      hi = mid - 1;
  }
  return p >= s[lo].ofs && p < s[lo].ofs + s[lo].nph ? s[lo].ring : -1;
}

/* First ring with theta >= t (rings are sorted by theta). */
static int first_ring_from(const arkcos_geometry *g, double t) {
  int lo = 0, hi = g->nrings;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (g->rings[mid].theta < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Pixel index range [lo, hi] of ring r (lo may be negative, hi >= nph:
 * indices wrap) that can lie within `cutoff` of the pixel at (tp, pp);
 * the whole ring where the disc contains a pole or the ring is narrow. */
static void azimuth_window(const arkcos_ring *r, double cp, double sp,
                           double pp, double cutoff, int64_t *lo,
                           int64_t *hi) {
  const double cq = cos(r->theta), sq = sin(r->theta);
  const double dpix = TWO_PI / (double)r->nph;
  *lo = 0;
  *hi = r->nph - 1;
  if (sp * sq <= 0.0) return;
  /* cos(alpha) = cp cq + sp sq cos(dphi) >= cos(cutoff) */
  const double c = (cos(cutoff) - cp * cq) / (sp * sq);
  if (c <= -1.0) return;
  const double half = c >= 1.0 ? 0.0 : acos(c);
  double x = fmod(pp - r->phi0, TWO_PI);
  if (x < 0) x += TWO_PI;
  x /= dpix;
  const int64_t a = (int64_t)floor(x - half / dpix) - 1;
  const int64_t b = (int64_t)ceil(x + half / dpix) + 1;
  if (b - a + 1 >= r->nph) return;
  *lo = a;
  *hi = b;
}

/* P'(p) at one output pixel (colatitude tp, azimuth pp). */
static void spin2_one(const arkcos_geometry *g, const arkcos_kernel *k,
                      const double *q_in, const double *u_in, double tp,
                      double pp, double *q_out, double *u_out) {
  const double cutoff = arkcos_kernel_cutoff(k);
  const double cp = cos(tp), sp = sin(tp);
  nsum re = {0, 0}, im = {0, 0};
  /* a margin keeps rings at a rounding tie; the distance test decides */
  const double margin = 1e-12;
  for (int j = first_ring_from(g, tp - cutoff - margin); j < g->nrings; j++) {
    const arkcos_ring *r = &g->rings[j];
    if (r->theta > tp + cutoff + margin) break;
    const double cq = cos(r->theta), sq = sin(r->theta);
    const double dpix = TWO_PI / (double)r->nph;
    int64_t lo, hi;
    azimuth_window(r, cp, sp, pp, cutoff, &lo, &hi);
    for (int64_t i = lo; i <= hi; i++) {
      const int64_t ii = ((i % r->nph) + r->nph) % r->nph;
      const double qv = q_in[r->ofs + ii], uv = u_in[r->ofs + ii];
      if (qv == 0.0 && uv == 0.0) continue;
      const double dphi = r->phi0 + dpix * (double)ii - pp;
      const pair_geom pg = pair_geometry(cp, sp, cq, sq, dphi);
      const double alpha = atan2(hypot(pg.ar, pg.ai), pg.dot);
      if (alpha > cutoff) continue;
      double wr, wi;
      transport_weight(&pg, &wr, &wi);
      const double kw = r->weight * arkcos_kernel_value(k, alpha);
      nsum_add(&re, kw * (wr * qv - wi * uv));
      nsum_add(&im, kw * (wr * uv + wi * qv));
    }
  }
  *q_out = re.sum + re.comp;
  *u_out = im.sum + im.comp;
}

int ref_direct_sum_spin2(const arkcos_geometry *g, const arkcos_kernel *k,
                         const double *q_in, const double *u_in,
                         double *q_out, double *u_out, const int64_t *pix,
                         int64_t npixout, int threads, arkcos_error *err) {
  if (!g || !k || !q_in || !u_in || !q_out || !u_out || g->nrings < 1 ||
      !g->rings)
    return arkcos_fail(err, ARKCOS_EINVAL, "spin-2 direct sum: missing argument");
  if (ref_check_outputs(g, pix, npixout, "spin-2 direct sum", err)) return ARKCOS_EINVAL;
  const int64_t nout = pix ? npixout : g->npix;
  ring_start *starts = ring_starts(g);
  if (!starts)
    return arkcos_fail(err, ARKCOS_ENOMEM, "spin-2 direct sum: out of memory");
  int nthreads = 1;
#ifdef _OPENMP
  nthreads = threads > 0 ? threads : omp_get_max_threads();
#else
  (void)threads;
#endif
  int bad = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 16) num_threads(nthreads) \
    reduction(| : bad)
#endif
  for (int64_t i = 0; i < nout; i++) {
    const int64_t p = pix ? pix[i] : i;
    const int j = ring_of(starts, g->nrings, p);
    if (j < 0) {
      bad = 1;
      q_out[i] = u_out[i] = 0.0;
      continue;
    }
    const arkcos_ring *r = &g->rings[j];
    const double pp = r->phi0 + TWO_PI * (double)(p - r->ofs) / (double)r->nph;
    spin2_one(g, k, q_in, u_in, r->theta, pp, &q_out[i], &u_out[i]);
  }
  (void)nthreads;
  free(starts);
  if (bad)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "spin-2 direct sum: geometry rings do not cover the map");
  return ARKCOS_OK;
}

/* ------------------------------------------------------------ K_l^(2) */

enum { GL_POINTS = 20 };

/* Gauss-Legendre nodes and weights on [-1, 1] (Newton on P_n). */
static void gl_rule(int n, double *x, double *w) {
  for (int i = 0; i < (n + 1) / 2; i++) {
    double z = cos(M_PI * (i + 0.75) / (n + 0.5)), dp = 1.0;
    for (int it = 0; it < 100; it++) {
      double p0 = 1.0, p1 = z;
      for (int l = 2; l <= n; l++) {
        const double p2 = ((2 * l - 1) * z * p1 - (l - 1) * p0) / l;
        p0 = p1;
        p1 = p2;
      }
      dp = n * (z * p1 - p0) / (z * z - 1.0);
      const double dz = p1 / dp;
      z -= dz;
      if (fabs(dz) < 1e-16) break;
    }
    x[i] = -z;
    x[n - 1 - i] = z;
    w[i] = w[n - 1 - i] = 2.0 / ((1.0 - z * z) * dp * dp);
  }
}

/* Composite 20-point Gauss-Legendre over [0, cutoff] in panels at most
 * cutoff / 128 wide (a Gaussian cut at 1e-8 gets 20 panels per sigma) and
 * at most a quarter of the shortest wavelength of d^lmax_22 (pi / (2 lmax)):
 * the product K d^l_22 sin is integrated to rounding for smooth kernels; a
 * tabulated kernel's spline knots are not panel edges (the public API does
 * not show them), which costs accuracy only for coarse tables. */
int ref_kernel_legendre_spin2(const arkcos_kernel *k, int lmax, double *kl2,
                              arkcos_error *err) {
  if (!k || !kl2)
    return arkcos_fail(err, ARKCOS_EINVAL, "K_l^(2): missing argument");
  if (lmax < 0)
    return arkcos_fail(err, ARKCOS_EINVAL, "K_l^(2): lmax %d must be >= 0",
                       lmax);
  for (int l = 0; l <= lmax; l++) kl2[l] = 0.0;
  if (lmax < 2) return ARKCOS_OK;
  const double cutoff = arkcos_kernel_cutoff(k);
  double h = fmin(cutoff / 128.0, M_PI / (2.0 * (lmax + 1)));
  const int64_t npanel = (int64_t)ceil(cutoff / h);
  h = cutoff / (double)npanel;
  double gx[GL_POINTS], gw[GL_POINTS];
  gl_rule(GL_POINTS, gx, gw);
  for (int64_t s = 0; s < npanel; s++)
    for (int n = 0; n < GL_POINTS; n++) {
      const double beta = h * ((double)s + 0.5 * (gx[n] + 1.0));
      const double wq = TWO_PI * 0.5 * h * gw[n] *
                        arkcos_kernel_value(k, beta) * sin(beta);
      if (wq == 0.0) continue;
      const double c = cos(beta);
      double dm = 0.0, d = 0.25 * (1.0 + c) * (1.0 + c); /* d^1, d^2 */
      kl2[2] += wq * d;
      for (int l = 2; l < lmax; l++) {
        const double dn = ((2.0 * l + 1.0) * ((double)l * (l + 1) * c - 4.0) * d -
                           (l + 1.0) * ((double)l * l - 4.0) * dm) /
                          ((double)l * (l - 1) * (l + 3));
        dm = d;
        d = dn;
        kl2[l + 1] += wq * d;
      }
    }
  return ARKCOS_OK;
}
