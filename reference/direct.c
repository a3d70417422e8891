/*
 * direct.c -- the direct-sum reference s_p = sum_q w_q K(alpha_pq) r_q.
 *
 * Deliberately independent of the engine's geometry code paths: angular
 * distances come from unit vectors (atan2(|a x b|, a.b), accurate at every
 * angle), and the only thing taken from the engine is the kernel value.
 *
 * For each output pixel p only the rings that intersect the cutoff disc are
 * visited, and on each ring only the azimuth range inside the disc (from the
 * spherical law of cosines, widened by a pixel on each side); the exact
 * distance test decides membership. Discs containing a pole take whole rings.
 */
#include <math.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "reference/reference.h"

#define TWO_PI 6.283185307179586476925286766559

/* Ring of a pixel: rings sorted by their first pixel, binary-searched
 * (a custom geometry need not store its rings in map order). */
typedef struct {
  int64_t ofs, nph;
  int ring;
} ring_span;

static int cmp_span(const void *a, const void *b) {
  int64_t oa = ((const ring_span *)a)->ofs, ob = ((const ring_span *)b)->ofs;
  return (oa > ob) - (oa < ob);
}

static ring_span *ring_spans(const arkcos_geometry *g) {
  ring_span *s = malloc((size_t)g->nrings * sizeof *s);
  if (!s) return NULL;
  for (int i = 0; i < g->nrings; i++) {
    s[i].ofs = g->rings[i].ofs;
    s[i].nph = g->rings[i].nph;
    s[i].ring = i;
  }
  qsort(s, (size_t)g->nrings, sizeof *s, cmp_span);
  return s;
}

/* Ring index holding map pixel p, or -1. */
static int ring_of_pixel(const ring_span *s, int nrings, int64_t p) {
  int lo = 0, hi = nrings - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (s[mid].ofs <= p)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (p < s[lo].ofs || p >= s[lo].ofs + s[lo].nph) return -1;
  return s[lo].ring;
}

/* First ring with theta >= t (rings sorted by theta). */
static int first_ring_at_or_after(const arkcos_geometry *g, double t) {
  int lo = 0, hi = g->nrings;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (g->rings[mid].theta < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Neumaier-compensated accumulation: the reference should not be limited by
 * summation order when judged at 1e-14. */
typedef struct {
  double sum, comp;
} ksum;

static inline void ksum_add(ksum *s, double x) {
  double t = s->sum + x;
  if (fabs(s->sum) >= fabs(x))
    s->comp += (s->sum - t) + x;
  else
    s->comp += (x - t) + s->sum;
  s->sum = t;
}

/* The output pixel of a direct_one call, with its cutoff. */
typedef struct {
  double cp, sp, pp; /* cos and sin of its colatitude, its azimuth */
  double cutoff, cc; /* the kernel cutoff and its cosine */
  double dot_skip;   /* cos(alpha) below this is certainly beyond the cutoff */
} out_pixel;

/* Pixels lo..hi of ring r (cos and sin of its colatitude cq, sq; pixel
 * width dphi_pix) that can lie inside the disc, from the law of cosines
 * cos(alpha) = cp cq + sp sq cos(dphi) >= cos(cutoff), widened by a pixel on
 * each side. Returns 1, leaving lo and hi unset, when the whole ring is to
 * be visited. */
static inline int ring_window(const out_pixel *o, const arkcos_ring *r,
                              double cq, double sq, double dphi_pix,
                              int64_t *lo, int64_t *hi) {
  const double den = o->sp * sq;
  if (den <= 0.0) return 1; /* the output pixel or the ring sits on a pole */
  double c = (o->cc - o->cp * cq) / den;
  if (c <= -1.0) return 1;
  double half = c >= 1.0 ? 0.0 : acos(c);
  /* pixel coordinate of pp in [0, nph): then lo > -nph, hi < 2 nph */
  double rel = fmod(o->pp - r->phi0, TWO_PI);
  if (rel < 0) rel += TWO_PI;
  double x = rel / dphi_pix;
  double hw = half / dphi_pix;
  *lo = (int64_t)floor(x - hw) - 1;
  *hi = (int64_t)ceil(x + hw) + 1;
  return *hi - *lo + 1 >= r->nph;
}

/* Adds w K(alpha) v over the pixels lo..hi of ring r within the cutoff. */
static inline void ring_accumulate(ksum *acc, const out_pixel *o,
                                   const arkcos_kernel *k, const double *in,
                                   const arkcos_ring *r, double cq, double sq,
                                   double dphi_pix, int64_t lo, int64_t hi) {
  const double cp = o->cp, sp = o->sp, pp = o->pp;
  const int64_t nph = r->nph;
  const double w = r->weight;
  /* lo > -nph and hi < 2 nph: one conditional wrap is enough. */
  for (int64_t i = lo; i <= hi; i++) {
    const int64_t ii = i < 0 ? i + nph : (i >= nph ? i - nph : i);
    const double v = in[r->ofs + ii];
    if (v == 0.0) continue;
    const double dphi = r->phi0 + dphi_pix * (double)ii - pp;
    const double cd = cos(dphi), sd = sin(dphi);
    /* a = (sp, 0, cp) (output pixel rotated to phi = 0),
     * b = (sq cd, sq sd, cq). */
    const double dot = sp * sq * cd + cp * cq;
    if (dot < o->dot_skip) continue; /* well outside: skip atan2 */
    const double x1 = -cp * sq * sd;
    const double x2 = cp * sq * cd - sp * cq;
    const double x3 = sp * sq * sd;
    const double alpha = atan2(sqrt(x1 * x1 + x2 * x2 + x3 * x3), dot);
    if (alpha > o->cutoff) continue;
    ksum_add(acc, w * arkcos_kernel_value(k, alpha) * v);
  }
}

/* Value at one output pixel (colatitude tp, azimuth pp). */
static double direct_one(const arkcos_geometry *g, const arkcos_kernel *k,
                         double cutoff, const double *in, double tp,
                         double pp) {
  out_pixel o;
  o.cp = cos(tp);
  o.sp = sin(tp);
  o.pp = pp;
  o.cutoff = cutoff;
  o.cc = cos(cutoff);
  /* the exact distance test decides beyond dot_skip; keeps atan2 off the
   * disc's corners. */
  o.dot_skip = cos(fmin(cutoff + 1e-6, M_PI)) - 1e-12;
  /* Rings intersecting the disc have |theta - tp| <= cutoff; a tiny margin
   * keeps rings at a rounding tie, the distance test settles them. */
  const double margin = 1e-12;
  int j0 = first_ring_at_or_after(g, tp - cutoff - margin);
  ksum acc = {0.0, 0.0};
  for (int j = j0; j < g->nrings; j++) {
    const arkcos_ring *r = &g->rings[j];
    if (r->theta > tp + cutoff + margin) break;
    const double cq = cos(r->theta), sq = sin(r->theta);
    const double dphi_pix = TWO_PI / (double)r->nph;
    int64_t lo, hi;
    if (ring_window(&o, r, cq, sq, dphi_pix, &lo, &hi)) {
      lo = 0;
      hi = r->nph - 1;
    }
    ring_accumulate(&acc, &o, k, in, r, cq, sq, dphi_pix, lo, hi);
  }
  return acc.sum + acc.comp;
}

int ref_check_outputs(const arkcos_geometry *g, const int64_t *pix, int64_t npixout, const char *what,
                      arkcos_error *err) {
  if (pix && npixout < 0)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: negative number of output pixels", what);
  for (int64_t i = 0; pix && i < npixout; i++)
    if (pix[i] < 0 || pix[i] >= g->npix)
      return arkcos_fail(err, ARKCOS_EINVAL, "%s: output pixel %lld outside [0, %lld)", what,
                         (long long)pix[i], (long long)g->npix);
  return ARKCOS_OK;
}

int ref_direct_sum(const arkcos_geometry *g, const arkcos_kernel *k,
                   const double *in, double *out, const int64_t *pix,
                   int64_t npixout, int threads, arkcos_error *err) {
  if (!g || !k || !in || !out || g->nrings < 1 || !g->rings)
    return arkcos_fail(err, ARKCOS_EINVAL, "direct sum: missing argument");
  if (ref_check_outputs(g, pix, npixout, "direct sum", err)) return ARKCOS_EINVAL;
  const int64_t nout = pix ? npixout : g->npix;
  ring_span *spans = ring_spans(g);
  if (!spans)
    return arkcos_fail(err, ARKCOS_ENOMEM, "direct sum: out of memory");
  const double cutoff = arkcos_kernel_cutoff(k);
  int bad = 0;
  int nthreads = 1;
#ifdef _OPENMP
  nthreads = threads > 0 ? threads : omp_get_max_threads();
#else
  (void)threads;
#endif
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 16) num_threads(nthreads) \
    reduction(| : bad)
#endif
  for (int64_t i = 0; i < nout; i++) {
    const int64_t p = pix ? pix[i] : i;
    const int j = ring_of_pixel(spans, g->nrings, p);
    if (j < 0) {
      bad = 1;
      out[i] = 0.0;
      continue;
    }
    const arkcos_ring *r = &g->rings[j];
    const double pp = r->phi0 + TWO_PI * (double)(p - r->ofs) / (double)r->nph;
    out[i] = direct_one(g, k, cutoff, in, r->theta, pp);
  }
  (void)nthreads;
  free(spans);
  if (bad)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "direct sum: geometry rings do not cover the map");
  return ARKCOS_OK;
}

double ref_direct_cost(const arkcos_geometry *g, const arkcos_kernel *k,
                       int64_t npixout) {
  if (!g || !k || g->nrings < 1) return 0.0;
  if (npixout <= 0) npixout = g->npix;
  const double cutoff = arkcos_kernel_cutoff(k);
  /* Pixels inside the disc plus the one-pixel margins on each ring. */
  double in_disc = (double)g->npix * 0.5 * (1.0 - cos(cutoff));
  double rings = 2.0 * cutoff / M_PI * (double)g->nrings + 1.0;
  if (rings > g->nrings) rings = g->nrings;
  double per_pixel = in_disc + 3.0 * rings;
  if (per_pixel > (double)g->npix) per_pixel = (double)g->npix;
  return (double)npixout * per_pixel;
}
