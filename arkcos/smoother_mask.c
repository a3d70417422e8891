/*
 * smoother_mask.c -- one call of arkcos_smoother (arkcos_smoother_execute):
 * the missing pixels of each map, grouped into distinct weight maps, the
 * mask, the normalised convolution A(w m) / A(w) and its threshold, Q and U
 * as one spin-2 field, A(1) of normalize, NESTED order in and out.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"
#include "arkcos/bigmem.h"
#include "arkcos/plan_internal.h"
#include "arkcos/smoother_internal.h"

/* In normalize mode a pixel needs A(w) above this to be divided by it: A(w)
 * is about 1 where the data are complete, and where no data lie within the
 * kernel it is 0 up to the method's rounding (~1e-16), a ratio of noise.
 * Only matters with a min_weight below it. */
#define WEIGHT_FLOOR 1e-12
#define MIN_WEIGHT_DEFAULT 0.5
/* healpy's mask_bad: |x - UNSEEN| <= 1e-8 + 1e-5 |UNSEEN| (UNSEEN after a
 * round trip through float32 too) */
#define UNSEEN_TOL (1e-8 + 1e-5 * 1.6375e30)

static int is_missing_value(double x) { return !isfinite(x) || fabs(x - ARKCOS_UNSEEN) <= UNSEEN_TOL; }

static int64_t nwords(int64_t npix) { return (npix + 63) / 64; }

static int bit(const uint64_t *bits, int64_t p) { return (int)(bits[p >> 6] >> (p & 63) & 1); }

/* One distinct set of missing pixels in the call, and its A(w). */
typedef struct wset {
  const uint64_t *bits;
  int64_t nmissing;
  double *aw;  /* A(w) once smoothed */
  int trivial; /* nothing missing and no mask: w = 1 */
  int need;    /* A(w) is needed: not trivial, or a weight output asked */
  int last;    /* the last map (the pair at the later of Q, U) that uses it */
  int pol;     /* Q and U use it (their A(w) takes no polar reconstruction) */
  int aw_caps; /* the caps whose polar reconstruction aw took (smoother polar_caps) */
} wset;

/* Everything of one call. */
typedef struct call {
  arkcos_smoother *s;
  const arkcos_smoother_maps *m;
  int64_t npix;
  int nthreads;
  int normalize_mode; /* ARKCOS_MASK_NORMALIZE */
  double min_weight;
  const double *mw;   /* the mask, RING, clean: the caller's, or own_mw (NULL: none) */
  double *own_mw;     /* a cleaned or reordered copy */
  uint64_t *bits;     /* per map, nwords(npix) words */
  int *set_of;
  wset *sets;
  int nsets;
  double *work[2], *tmp[2]; /* inputs weighted; NESTED outputs */
} call;

/* ------------------------------------------------------------------ input */

static int64_t ring_index(const call *c, int64_t p) { return c->s->n2r ? c->s->n2r[p] : p; }

/* The mask: RING order, non-finite and UNSEEN values 0, others in [0, 1].
 * A RING mask that needs no cleaning is used as it is (no copy). */
static int load_mask(call *c, arkcos_error *err) {
  const double *mask = c->m->mask;
  if (!mask) return ARKCOS_OK;
  int clean = !c->s->n2r;
  for (int64_t p = 0; p < c->npix; p++) {
    double v = mask[p];
    if (is_missing_value(v)) {
      v = 0;
      clean = 0;
    }
    if (!(v >= 0 && v <= 1))
      return arkcos_fail(err, ARKCOS_EINVAL, "mask: pixel %lld (%s) = %g is outside [0, 1] (a mask is 0/1 "
                         "or a weight in [0, 1])", (long long)p, c->s->n2r ? "NESTED" : "RING", v);
  }
  if (clean) {
    c->mw = mask;
    return ARKCOS_OK;
  }
  c->own_mw = malloc(sizeof *c->own_mw * (size_t)c->npix);
  if (!c->own_mw) return arkcos_fail(err, ARKCOS_ENOMEM, "mask: out of memory");
  for (int64_t p = 0; p < c->npix; p++) c->own_mw[ring_index(c, p)] = is_missing_value(mask[p]) ? 0 : mask[p];
  c->mw = c->own_mw;
  return ARKCOS_OK;
}

/* The missing pixels of map i into its bits (RING order); their number. */
static int64_t missing_bits(call *c, int i) {
  const double *x = c->m->in[i];
  uint64_t *b = c->bits + (size_t)i * (size_t)nwords(c->npix);
  const int64_t nw = nwords(c->npix), npix = c->npix;
  int64_t n = 0;
  if (!c->s->n2r) {
#pragma omp parallel for reduction(+ : n) schedule(static) num_threads(c->nthreads)
    for (int64_t k = 0; k < nw; k++) {
      uint64_t v = 0;
      const int64_t p0 = 64 * k, p1 = p0 + 64 < npix ? p0 + 64 : npix;
      for (int64_t p = p0; p < p1; p++)
        if (is_missing_value(x[p])) v |= (uint64_t)1 << (p - p0);
      b[k] = v;
      n += __builtin_popcountll(v);
    }
    return n;
  }
  memset(b, 0, sizeof *b * (size_t)nw);
  for (int64_t p = 0; p < npix; p++)
    if (is_missing_value(x[p])) {
      const int64_t r = c->s->n2r[p];
      b[r >> 6] |= (uint64_t)1 << (r & 63);
      n++;
    }
  return n;
}

/* Q and U are one field: missing where either is. Returns the pixels that
 * were missing in one of them only. */
static int64_t pol_union(call *c, int q, int u) {
  const int64_t nw = nwords(c->npix);
  uint64_t *bq = c->bits + (size_t)q * (size_t)nw, *bu = c->bits + (size_t)u * (size_t)nw;
  int64_t n = 0;
  for (int64_t k = 0; k < nw; k++) {
    n += __builtin_popcountll(bq[k] ^ bu[k]);
    bq[k] = bu[k] = bq[k] | bu[k];
  }
  return n;
}

static int64_t count_bits(const uint64_t *b, int64_t nw) {
  int64_t n = 0;
  for (int64_t k = 0; k < nw; k++) n += __builtin_popcountll(b[k]);
  return n;
}

/* The set of map i: an earlier one with the same missing pixels, or a new one. */
static int find_set(call *c, int i, int64_t nmissing) {
  const int64_t nw = nwords(c->npix);
  const uint64_t *b = c->bits + (size_t)i * (size_t)nw;
  for (int k = 0; k < c->nsets; k++)
    if (c->sets[k].nmissing == nmissing && !memcmp(c->sets[k].bits, b, sizeof *b * (size_t)nw)) return k;
  wset *w = &c->sets[c->nsets];
  w->bits = b;
  w->nmissing = nmissing;
  w->trivial = nmissing == 0 && !c->mw;
  return c->nsets++;
}

/* work = w x in RING order: 0 where missing or where the mask is 0, the
 * mask's weight times x elsewhere (x itself for a trivial set). */
static void load_map(const call *c, const wset *w, const double *x, double *work) {
  const int64_t npix = c->npix;
  const int64_t *n2r = c->s->n2r;
  if (n2r) {
    for (int64_t p = 0; p < npix; p++) work[n2r[p]] = x[p];
  } else if (work != x) {
    memcpy(work, x, sizeof *work * (size_t)npix);
  }
  if (w->trivial) return;
  const double *mw = c->mw;
  const uint64_t *b = w->bits;
#pragma omp parallel for schedule(static) num_threads(c->nthreads)
  for (int64_t p = 0; p < npix; p++)
    work[p] = bit(b, p) || (mw && mw[p] == 0) ? 0.0 : mw ? mw[p] * work[p] : work[p];
}

/* The caps whose polar reconstruction (polar.h) the set's maps take: a cap
 * keeps it when none of its disc's pixels is missing or masked (weight
 * below 1); the reconstruction of data cut off inside the disc would ring.
 * The scalar and the spin-2 corrections of one geometry read the same disc.
 * (A set Q and U share keeps its A(w) as ring quadrature; its maps' caps
 * are divided by A(w) plus the correction of 1: capfix.) */
static int set_polar_caps(const call *c, const wset *w) {
  const arkcos_polar *p = c->s->polar;
  if (!p || w->trivial) return 3;
  const int64_t nd = arkcos_polar_disc_pixels(p), npix = c->npix;
  int caps = 3;
  for (int cap = 0; cap < 2; cap++) {
    const int64_t p0 = cap ? npix - nd : 0;
    for (int64_t q = p0; q < p0 + nd; q++)
      if (bit(w->bits, q) || (c->mw && c->mw[q] != 1)) {
        caps &= ~(1 << cap);
        break;
      }
  }
  return caps;
}

/* ------------------------------------------------------------ smoothing */

/* A(w)'s input: *wm (made) = 0 at the set's missing pixels, the mask (or
 * 1) elsewhere; w->aw made for its smoothing. */
static int weight_input(call *c, wset *w, double **wm_out, arkcos_error *err) {
  const int64_t npix = c->npix;
  const double *mw = c->mw;
  double *wm = malloc(sizeof *wm * (size_t)npix);
  w->aw = malloc(sizeof *w->aw * (size_t)npix);
  if (!wm || !w->aw) {
    free(wm);
    free(w->aw);
    w->aw = NULL;
    return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory for the weight map");
  }
#pragma omp parallel for schedule(static) num_threads(c->nthreads)
  for (int64_t p = 0; p < npix; p++) wm[p] = bit(w->bits, p) ? 0.0 : mw ? mw[p] : 1.0;
  *wm_out = wm;
  return ARKCOS_OK;
}

/* w->aw = A(w) */
static int smooth_weight(call *c, wset *w, arkcos_error *err) {
  double *wm = NULL;
  int rc = weight_input(c, w, &wm, err);
  if (rc) return rc;
  const double t0 = omp_get_wtime();
  rc = smoother_apply0(c->s, wm, w->aw, err);
  w->aw_caps = c->s->polar ? c->s->polar_caps : 0;
  c->s->last.weight_time += omp_get_wtime() - t0;
  free(wm);
  if (!rc) c->s->last.weights_smoothed++;
  return rc;
}

/* Map x into dst, and with it A(w) into w->aw when wm (its input) is
 * given: one call, the direct pairs' weights computed once for both
 * (smoother_apply0_two); the call's time counts as the weight's too. */
static int apply_map(call *c, wset *w, double *wm, const double *x, double *dst, arkcos_error *err) {
  if (!wm) return smoother_apply0(c->s, x, dst, err);
  const double t0 = omp_get_wtime();
  const int rc = smoother_apply0_two(c->s, wm, w->aw, x, dst, err);
  w->aw_caps = c->s->polar ? c->s->polar_caps : 0;
  c->s->last.weight_time += omp_get_wtime() - t0;
  if (!rc) c->s->last.weights_smoothed++;
  return rc;
}

/* A(1) into w: the plan's constant map where it has one (no map of ones;
 * with the direct weights on the fly, A(1)'s direct part kept by the map's
 * execute), else the map of ones (in scratch, or made) smoothed, by the
 * smoother's own plan or, where that one trades accuracy, by an exact plan
 * (the divisor of every map, Q and U included, which stay exact). */
static int smooth_ones(call *c, double *scratch, double *w, arkcos_error *err) {
  arkcos_smoother *s = c->s;
  const int64_t npix = c->npix;
  const int own = !(s->spec.options.accuracy > 0 && !(s->has_op && s->op.harmonic) && !s->identity);
  if (own && !s->has_op && !s->identity) {
    const int rc = arkcos_smoother_prepare(s, 0, err);
    if (rc) return rc;
    if (arkcos_plan_constant(s->plan[0], 1.0, w, c->nthreads)) {
      arkcos_stage_times t;
      arkcos_plan_stages(s->plan[0], &t);
      arkcos_stages_add(&s->last.stages, &t);
      return ARKCOS_OK;
    }
  }
  double *one = scratch ? scratch : malloc(sizeof *one * (size_t)npix);
  if (!one) return arkcos_fail(err, ARKCOS_ENOMEM, "normalize: out of memory for the weight map");
#pragma omp parallel for schedule(static) num_threads(c->nthreads)
  for (int64_t p = 0; p < npix; p++) one[p] = 1;
  int rc;
  if (own) {
    s->polar_caps = 0; /* A(1) as Q and U take it; the scalar maps' is norm_polar */
    rc = smoother_apply0(s, one, w, err);
    s->polar_caps = 3;
  } else {
    arkcos_options o = s->spec.options;
    o.accuracy = 0;
    o.spin = 0;
    arkcos_plan *p = arkcos_plan_create(s->g, s->k[0], &o, err);
    rc = p ? arkcos_execute(p, one, w, err) : (err && err->code ? err->code : ARKCOS_ERUNTIME);
    arkcos_plan_destroy(p);
  }
  if (one != scratch) free(one);
  return rc;
}

/* normalize without holding A(1): the maps (RING order, n of them)
 * divided by the plan's constant map made ring by ring
 * (arkcos_plan_divide_constant), where nothing else needs A(1) whole: no
 * missing data or mask (w trivial), no weight output, A(1) not made
 * already, and the smoother's own exact plan (or the operator's, op.plan)
 * with its direct weights on the fly or no direct pairs (a plan with
 * tables keeps A(1) for its next maps instead, as ensure_norm does). The
 * map's first touch and its memory saved: nside 1024 at 2.8 pixels per
 * FWHM, 100 MB and 19 % of a Python call's CPU samples. *done: 1 when
 * divided, 0 when the caller is to use ensure_norm and normalize_map. */
static int divide_streamed(call *c, const wset *w, double **maps, int n, int want_weight, int caps, int *done,
                           arkcos_error *err) {
  arkcos_smoother *s = c->s;
  *done = 0;
  if (!s->normalize || s->norm_w || !w->trivial || want_weight || s->identity || s->spec.options.accuracy > 0 ||
      (s->has_op && (!s->op.plan || s->op.harmonic)))
    return ARKCOS_OK;
  int rc = arkcos_smoother_prepare(s, 0, err);
  if (rc) return rc;
  arkcos_plan *p = s->has_op ? s->op.plan(s->op.ctx, 0) : s->plan[0];
  int64_t nonpos = 0;
  arkcos_stage_times t;
  /* the polar caps' outputs (polar.h): divided here by A(1) + its
   * correction of 1, in the order ensure_norm's A(1) and normalize_map
   * divide them (bit for bit the same maps) */
  const int64_t no = s->polar && caps ? arkcos_polar_out_pixels(s->polar) : 0;
  double *keep = no ? malloc(sizeof *keep * 2 * (size_t)no) : NULL;
  if (no && !keep) return arkcos_fail(err, ARKCOS_ENOMEM, "normalize: out of memory for the polar caps");
  const int r = p ? arkcos_plan_divide_constant(p, maps, n, &nonpos, &t, c->nthreads, keep, no) : 0;
  if (r <= 0) free(keep);
  if (r == 0) return ARKCOS_OK;
  if (r < 0) return arkcos_fail(err, ARKCOS_ENOMEM, "normalize: out of memory for the weight's rings");
  arkcos_stages_add(&s->last.stages, &t);
  if (keep) {
    const double *d1 = arkcos_smoother_polar_delta_one(s);
    if (!d1) {
      free(keep);
      return arkcos_fail(err, ARKCOS_ENOMEM, "normalize: out of memory for the polar caps");
    }
    const int64_t npix = c->npix;
    for (int64_t j = 0; j < no; j++) {
      const int64_t q[2] = {j, arkcos_polar_mirror(s->polar, j)};
      for (int h = 0; h < 2; h++) {
        const double k1 = keep[h ? no + (q[1] - (npix - no)) : j], a = caps >> h & 1 ? k1 + d1[j] : k1;
        nonpos += !(a > 0);
        for (int k = 0; k < n; k++)
          if (maps[k][q[h]] != ARKCOS_UNSEEN) maps[k][q[h]] /= a;
      }
    }
    free(keep);
  }
  if (nonpos)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "normalize: the kernel's discrete sum is not positive at %lld of %lld pixels "
                       "(negative lobes); cannot divide by it", (long long)nonpos, (long long)c->npix);
  *done = 1;
  return ARKCOS_OK;
}

/* A(1) of normalize, once per smoother: positive everywhere or EINVAL.
 * scratch (or NULL): a map no longer needed, for the map of ones. */
static int ensure_norm(call *c, double *scratch, arkcos_error *err) {
  arkcos_smoother *s = c->s;
  if (s->norm_w || !s->normalize) return ARKCOS_OK;
  const int64_t npix = c->npix;
  double *w = malloc(sizeof *w * (size_t)npix);
  if (!w) return arkcos_fail(err, ARKCOS_ENOMEM, "normalize: out of memory for the weight map");
  arkcos_hint_huge(w, sizeof *w * (size_t)npix);
  int rc = smooth_ones(c, scratch, w, err);
  int64_t bad = 0;
  if (!rc) {
#pragma omp parallel for schedule(static) num_threads(c->nthreads) reduction(+ : bad)
    for (int64_t p = 0; p < npix; p++) bad += !(w[p] > 0);
  }
  if (!rc && bad)
    rc = arkcos_fail(err, ARKCOS_EINVAL,
                     "normalize: the kernel's discrete sum is not positive at %lld of %lld pixels "
                     "(negative lobes); cannot divide by it", (long long)bad, (long long)npix);
  if (rc) {
    free(w);
    return rc;
  }
  s->norm_w = w;
  if ((rc = arkcos_smoother_prepare(s, 0, err)) || smoother_polar_norm(s))
    return rc ? rc : arkcos_fail(err, ARKCOS_ENOMEM, "normalize: out of memory for the polar caps");
  /* the caps' outputs are divided by A(1) + its correction (norm_polar):
   * positive there too, each pixel counted once */
  const arkcos_polar *pl = s->norm_polar ? s->polar : NULL;
  const int64_t no = pl ? arkcos_polar_out_pixels(pl) : 0;
  for (int64_t j = 0; j < no; j++)
    for (int h = 0; h < 2; h++)
      bad += !(s->norm_polar[h * no + j] > 0) && w[h ? arkcos_polar_mirror(pl, j) : j] > 0;
  if (bad) {
    free(s->norm_polar);
    s->norm_polar = NULL;
    s->norm_w = NULL;
    free(w);
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "normalize: the kernel's discrete sum is not positive at %lld of %lld pixels "
                       "(negative lobes); cannot divide by it", (long long)bad, (long long)npix);
  }
  return ARKCOS_OK;
}

/* One pixel of finish: a its A(w), nw its A(1) (0: none) */
static int finish_pixel(const call *c, double a, double nw, double *o) {
  const double share = nw != 0 ? a / nw : a;
  if ((c->min_weight > 0 && share < c->min_weight) || (c->normalize_mode && !(a > WEIGHT_FLOOR))) {
    *o = ARKCOS_UNSEEN;
    return 1;
  }
  if (c->normalize_mode) *o /= a;
  return 0;
}

/* The caps' corrections of a scalar map that took the polar correction
 * (polar.h) where A(w) is complete on the caps' discs (w = 1 there): d1,
 * the correction of 1 (arkcos_polar_delta_one), on the caps in `caps`,
 * added to A(1) (the threshold's share and the weight output: 1 where
 * nothing is missing) and, where A(w) did not take it itself (`aw`: a set
 * Q and U share, whose A(w) is theirs, ring quadrature), to A(w) too. */
typedef struct capfix {
  const double *d1;
  int caps, aw;
} capfix;
static const capfix NO_CAPFIX = {NULL, 0, 0};

/* out = A(w m) / A(w) (normalize) or A(w m) (zero), UNSEEN where A(w) is
 * below min_weight (0: no threshold) and, when dividing, where it is not
 * above WEIGHT_FLOOR; at the caps' outputs as cf says. Returns the number
 * of UNSEEN pixels. */
static int64_t finish(const call *c, const double *aw, double *out, capfix cf) {
  const double *d1 = cf.d1;
  const int caps = cf.caps;
  /* ring quadrature: the threshold holds the share of the kernel's weight
   * on data, A(W w) / A(W) (1 where nothing is missing) */
  const double *nw = c->s->ring_quadrature ? c->s->norm_w : NULL;
  const arkcos_polar *pl = d1 ? c->s->polar : NULL;
  const int64_t no = pl && caps ? arkcos_polar_out_pixels(pl) : 0, npix = c->npix;
  const int64_t lo = caps & 1 ? no : 0, hi = caps & 2 ? npix - no : npix;
  int64_t n = 0;
#pragma omp parallel for reduction(+ : n) schedule(static) num_threads(c->nthreads)
  for (int64_t p = lo; p < hi; p++) n += finish_pixel(c, aw[p], nw ? nw[p] : 0, &out[p]);
  for (int64_t j = 0; j < no; j++) {
    const int64_t q[2] = {j, arkcos_polar_mirror(pl, j)};
    for (int h = 0; h < 2; h++) {
      if (!(caps >> h & 1)) continue; /* the loop above took it */
      const double e = d1[j];
      n += finish_pixel(c, cf.aw ? aw[q[h]] + e : aw[q[h]], nw ? nw[q[h]] + e : 0, &out[q[h]]);
    }
  }
  return n;
}

/* normalize: out /= A(1), but for UNSEEN pixels, and not where the mask's
 * A(w m) / A(w) normalised the map already. */
static void normalize_map(const call *c, const wset *w, double *out, int caps) {
  const double *nw = c->s->norm_w;
  if (!nw || (c->normalize_mode && !w->trivial)) return;
  /* a scalar map that took the polar correction (caps): its caps' outputs
   * by A(1) + the correction of 1 (norm_polar) */
  const arkcos_polar *pl = c->s->norm_polar ? c->s->polar : NULL;
  const int64_t no = pl && caps ? arkcos_polar_out_pixels(pl) : 0, npix = c->npix;
  const int64_t lo = caps & 1 ? no : 0, hi = caps & 2 ? npix - no : npix;
#pragma omp parallel for schedule(static) num_threads(c->nthreads)
  for (int64_t p = lo; p < hi; p++)
    if (out[p] != ARKCOS_UNSEEN) out[p] /= nw[p];
  for (int64_t j = 0; j < no; j++) {
    const int64_t q[2] = {j, arkcos_polar_mirror(pl, j)};
    for (int h = 0; h < 2; h++) /* a cap without the correction: the loop above took it */
      if (caps >> h & 1 && out[q[h]] != ARKCOS_UNSEEN) out[q[h]] /= c->s->norm_polar[h * no + j];
  }
}

/* x (RING) into dst in the caller's order. */
static void store(const call *c, const double *x, double *dst) {
  const int64_t *n2r = c->s->n2r;
  if (!n2r) {
    if (dst != x) memcpy(dst, x, sizeof *dst * (size_t)c->npix);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(c->nthreads)
  for (int64_t p = 0; p < c->npix; p++) dst[p] = x[n2r[p]];
}

static int need_buffers(call *c, int n, arkcos_error *err) {
  for (int k = 0; k < n; k++) {
    if (!c->work[k] && !(c->work[k] = malloc(sizeof(double) * (size_t)c->npix)))
      return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory for the work maps");
    if (c->s->n2r && !c->tmp[k] && !(c->tmp[k] = malloc(sizeof(double) * (size_t)c->npix)))
      return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory for the work maps");
  }
  return ARKCOS_OK;
}

/* The maps that share the set: A(w) smoothed first when needed. */
static int ensure_weight(call *c, wset *w, arkcos_error *err) {
  if (w->aw || !w->need) return ARKCOS_OK;
  return smooth_weight(c, w, err);
}

/* After map i (the pair's later map): the set's A(w) is not needed again. */
static void release_weight(wset *w, int i) {
  if (i == w->last) {
    free(w->aw);
    w->aw = NULL;
  }
}

static double *weight_out(const call *c, int i) { return c->m->weight ? c->m->weight[i] : NULL; }

/* The weight output of a map: A(w), or under ring quadrature the share
 * A(W w) / A(W), in the caller's order; at the caps' outputs as cf says. */
static int store_weight(const call *c, const wset *w, double *dst, capfix cf, int mcaps, arkcos_error *err) {
  const double *aw = w->aw;
  /* a complete map whose caps took the correction: A(w) there is A(1) plus
   * the correction of 1 (made with it, or added here where A(w) was made
   * as ring quadrature, for Q and U), and so is the share's A(1): 1 where
   * nothing is missing, as in the belt */
  if (w->trivial && mcaps && c->s->polar && c->s->ring_quadrature && c->s->norm_w) {
    cf.caps = mcaps;
    cf.aw = (w->aw_caps & mcaps) != mcaps;
    if (!(cf.d1 = arkcos_smoother_polar_delta_one(c->s)))
      return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory for the polar caps' correction");
  }
  const double *d1 = cf.d1;
  const int caps = cf.caps;
  const double *nw = c->s->ring_quadrature ? c->s->norm_w : NULL;
  const int64_t *n2r = c->s->n2r;
#pragma omp parallel for schedule(static) num_threads(c->nthreads)
  for (int64_t p = 0; p < c->npix; p++) {
    const int64_t r = n2r ? n2r[p] : p;
    dst[p] = nw ? aw[r] / nw[r] : aw[r];
  }
  const arkcos_polar *pl = d1 ? c->s->polar : NULL;
  const int64_t no = pl && caps ? arkcos_polar_out_pixels(pl) : 0;
  if (!no) return ARKCOS_OK;
  /* the caps' outputs again: RING pixel r at the caller's index */
  for (int64_t j = 0; j < no; j++) {
    const int64_t q[2] = {j, arkcos_polar_mirror(pl, j)};
    for (int h = 0; h < 2; h++) {
      if (!(caps >> h & 1)) continue;
      const int64_t r = q[h], p = c->s->n2r ? arkcos_healpix_ring2nest(c->s->spec.nside, r) : r;
      const double a = cf.aw ? aw[r] + d1[j] : aw[r];
      dst[p] = nw ? a / (nw[r] + d1[j]) : a;
    }
  }
  return ARKCOS_OK;
}

static int smooth_scalar(call *c, int i, arkcos_error *err) {
  wset *w = &c->sets[c->set_of[i]];
  arkcos_smoother_map_report *r = &c->s->reports[i];
  int rc = arkcos_smoother_prepare(c->s, 0, err);
  if (rc) return rc;
  const int caps = c->s->polar ? set_polar_caps(c, w) : 0;
  /* missing pixels or a mask with complete caps: A(1) there plus the
   * correction of 1 (finish, store_weight); in a set Q and U share, A(w)
   * is theirs (ring quadrature), made first, and takes it too */
  capfix cf = NO_CAPFIX;
  if (caps && !w->trivial) {
    cf.caps = caps;
    cf.aw = w->pol;
    if (w->pol) {
      c->s->polar_caps = 0;
      rc = ensure_weight(c, w, err);
      c->s->polar_caps = 3;
      if (rc) return rc;
    }
    if (!(cf.d1 = arkcos_smoother_polar_delta_one(c->s)))
      return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory for the polar caps' correction");
  }
  c->s->polar_caps = caps;
  c->s->polar_used[i] = caps;
  /* A(w) still to be smoothed: with the map, in one call */
  double *wm = NULL;
  rc = !w->aw && w->need ? weight_input(c, w, &wm, err) : ARKCOS_OK;
  if (rc) return rc;
  double *dst = c->s->n2r ? c->tmp[0] : c->m->out[i];
  if (!c->s->n2r && w->trivial && c->m->in[i] != c->m->out[i]) {
    /* a complete RING map into its own output: no copy */
    rc = apply_map(c, w, wm, c->m->in[i], dst, err);
  } else if (!c->s->n2r && c->m->overwrite_in && c->m->in[i] != c->m->out[i]) {
    /* the caller's input becomes w m: no work map */
    double *x = (double *)c->m->in[i];
    load_map(c, w, x, x);
    rc = apply_map(c, w, wm, x, dst, err);
  } else if (!(rc = need_buffers(c, 1, err))) {
    dst = c->s->n2r ? c->tmp[0] : c->m->out[i];
    load_map(c, w, c->m->in[i], c->work[0]);
    rc = apply_map(c, w, wm, c->work[0], dst, err);
  }
  free(wm);
  c->s->polar_caps = 3;
  /* A(1) after the map (a plan with the direct weights on the fly keeps
   * their row sums from the map's execute), its map of ones in the input
   * or work map where the call may overwrite it */
  double *spent = c->m->overwrite_in && c->m->in[i] != c->m->out[i] && !c->s->n2r ? (double *)c->m->in[i]
                  : c->work[0] && c->m->in[i] != c->work[0] && dst != c->work[0] ? c->work[0] : NULL;
  int streamed = 0;
  if (!rc) rc = divide_streamed(c, w, &dst, 1, weight_out(c, i) != NULL, caps, &streamed, err);
  if (!rc && !streamed) rc = ensure_norm(c, spent, err);
  if (rc) return rc;
  if (!w->trivial) r->unseen = finish(c, w->aw, dst, cf);
  if (!streamed) normalize_map(c, w, dst, caps);
  store(c, dst, c->m->out[i]);
  if (weight_out(c, i) && (rc = store_weight(c, w, weight_out(c, i), cf, caps, err))) return rc;
  release_weight(w, i);
  if (c->m->progress) c->m->progress(c->m->progress_ctx, i, 1);
  return ARKCOS_OK;
}

static int smooth_pair(call *c, int q, int u, arkcos_error *err) {
  wset *w = &c->sets[c->set_of[q]];
  c->s->polar_caps = 0; /* the A(w) of Q and U: ring quadrature */
  int rc = ensure_weight(c, w, err);
  c->s->polar_caps = 3;
  if (rc) return rc;
  /* Q and U take their polar reconstruction on each cap whose disc is
   * complete (set_polar_caps). Divided by A(w) (missing pixels or a mask:
   * A(w) is ring quadrature, its caps taken plus the scalar correction of
   * 1, as I's in such a set: finish) or by A(1), they take it where the
   * scalar maps' correction exists (norm_polar, its correction of 1),
   * else neither */
  if ((rc = arkcos_smoother_prepare(c->s, 2, err))) return rc;
  int caps = c->s->polar2 ? 3 : 0;
  if (caps && (!w->trivial || (c->s->normalize && !c->s->identity))) {
    if ((rc = arkcos_smoother_prepare(c->s, 0, err))) return rc;
    caps = !c->s->polar ? 0 : w->trivial ? 3 : set_polar_caps(c, w);
  }
  capfix cf = NO_CAPFIX;
  if (caps && !w->trivial) {
    cf.caps = caps;
    cf.aw = 1;
    if (!(cf.d1 = arkcos_smoother_polar_delta_one(c->s)))
      return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory for the polar caps' correction");
  }
  c->s->polar2_caps = caps;
  c->s->polar_used[q] = c->s->polar_used[u] = caps;
  const double *const *in = c->m->in;
  double *const *out = c->m->out;
  double *dq = out[q], *du = out[u];
  if (!c->s->n2r && w->trivial && in[q] != out[q] && in[u] != out[u] && in[q] != out[u] &&
      in[u] != out[q]) {
    /* complete RING maps into their own outputs: no copy */
    rc = smoother_apply2(c->s, in[q], in[u], dq, du, err);
  } else if (!c->s->n2r && c->m->overwrite_in && in[q] != out[q] && in[u] != out[u] && in[q] != out[u] &&
             in[u] != out[q]) {
    /* the caller's inputs become w Q, w U: no work maps */
    load_map(c, w, in[q], (double *)in[q]);
    load_map(c, w, in[u], (double *)in[u]);
    rc = smoother_apply2(c->s, in[q], in[u], dq, du, err);
  } else {
    if ((rc = need_buffers(c, 2, err))) return rc;
    load_map(c, w, in[q], c->work[0]);
    load_map(c, w, in[u], c->work[1]);
    if (c->s->n2r) dq = c->tmp[0], du = c->tmp[1];
    rc = smoother_apply2(c->s, c->work[0], c->work[1], dq, du, err);
  }
  c->s->polar2_caps = 3;
  int streamed = 0;
  if (!rc) {
    double *qu[2] = {dq, du};
    rc = divide_streamed(c, w, qu, 2, weight_out(c, q) || weight_out(c, u), caps, &streamed, err);
  }
  if (!rc && !streamed) rc = ensure_norm(c, NULL, err);
  if (rc) return rc;
  if (!w->trivial) {
    c->s->reports[q].unseen = finish(c, w->aw, dq, cf);
    c->s->reports[u].unseen = finish(c, w->aw, du, cf);
  }
  if (!streamed) {
    normalize_map(c, w, dq, caps);
    normalize_map(c, w, du, caps);
  }
  store(c, dq, out[q]);
  store(c, du, out[u]);
  for (int k = 0; k < 2; k++)
    if (weight_out(c, k ? u : q) && (rc = store_weight(c, w, weight_out(c, k ? u : q), cf, caps, err))) return rc;
  release_weight(w, q > u ? q : u);
  if (c->m->progress) c->m->progress(c->m->progress_ctx, q, 2);
  return ARKCOS_OK;
}

/* ------------------------------------------------------------------ call */

static int check_maps(const arkcos_smoother *s, const arkcos_smoother_maps *m, arkcos_error *err) {
  if (!s || !m) return arkcos_fail(err, ARKCOS_EINVAL, "execute: no smoother or no maps");
  if (m->nmaps < 1) return arkcos_fail(err, ARKCOS_EINVAL, "execute: nmaps must be >= 1, got %d", m->nmaps);
  if (!m->in || !m->out) return arkcos_fail(err, ARKCOS_EINVAL, "execute: in and out are needed");
  for (int i = 0; i < m->nmaps; i++)
    if (!m->in[i] || !m->out[i]) return arkcos_fail(err, ARKCOS_EINVAL, "execute: map %d: no %s", i,
                                                    m->in[i] ? "output" : "input");
  const int pq = m->pol_q, pu = m->pol_u;
  if (pq == -1 && pu == -1) return ARKCOS_OK;
  if (pq < 0 || pu < 0 || pq >= m->nmaps || pu >= m->nmaps || pq == pu)
    return arkcos_fail(err, ARKCOS_EINVAL, "execute: pol_q = %d, pol_u = %d are not two maps of %d (-1, -1: "
                       "no Q, U pair)", pq, pu, m->nmaps);
  if (s->spec.options.precision == ARKCOS_SINGLE && !s->identity)
    return arkcos_fail(err, ARKCOS_EINVAL, "Stokes Q and U (spin 2) are smoothed in double precision only");
  return ARKCOS_OK;
}

static void free_call(call *c) {
  free(c->own_mw);
  free(c->bits);
  free(c->set_of);
  for (int k = 0; c->sets && k < c->nsets; k++) free(c->sets[k].aw);
  free(c->sets);
  for (int k = 0; k < 2; k++) {
    free(c->work[k]);
    free(c->tmp[k]);
  }
}

/* The sets of the call's maps, their reports, which need A(w) and when it
 * is last used. */
static int group(call *c, arkcos_error *err) {
  const arkcos_smoother_maps *m = c->m;
  const int n = m->nmaps, pair = m->pol_q >= 0;
  const int64_t nw = nwords(c->npix);
  c->bits = malloc(sizeof *c->bits * (size_t)nw * (size_t)n);
  c->set_of = calloc((size_t)n, sizeof *c->set_of);
  c->sets = calloc((size_t)n, sizeof *c->sets);
  if (!c->bits || !c->set_of || !c->sets)
    return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory for the missing pixels");
  for (int i = 0; i < n; i++) missing_bits(c, i);
  if (pair) c->s->last.pol_union = pol_union(c, m->pol_q, m->pol_u);
  for (int i = 0; i < n; i++) {
    arkcos_smoother_map_report *r = &c->s->reports[i];
    r->missing = count_bits(c->bits + (size_t)i * (size_t)nw, nw);
    c->set_of[i] = r->weight_map = find_set(c, i, r->missing);
    wset *w = &c->sets[c->set_of[i]];
    r->weighted = !w->trivial;
    w->need |= !w->trivial || weight_out(c, i) != NULL;
    const int at = pair && (i == m->pol_q || i == m->pol_u) ? (m->pol_q > m->pol_u ? m->pol_q : m->pol_u) : i;
    w->pol |= pair && (i == m->pol_q || i == m->pol_u);
    if (at > w->last) w->last = at;
    r->excluded = r->missing;
    if (c->mw)
      for (int64_t p = 0; p < c->npix; p++) r->excluded += c->mw[p] == 0 && !bit(w->bits, p);
  }
  c->s->last.nweight_maps = c->nsets;
  return ARKCOS_OK;
}

int arkcos_smoother_execute(arkcos_smoother *s, const arkcos_smoother_maps *m, arkcos_error *err) {
  int rc = check_maps(s, m, err);
  if (rc) return rc;
  memset(&s->last, 0, sizeof s->last);
  s->nreports = 0;
  if (m->nmaps > 0) {
    arkcos_smoother_map_report *r = realloc(s->reports, sizeof *r * (size_t)m->nmaps);
    if (!r) return arkcos_fail(err, ARKCOS_ENOMEM, "execute: out of memory");
    s->reports = r;
    memset(r, 0, sizeof *r * (size_t)m->nmaps);
    int *u = realloc(s->polar_used, sizeof *u * (size_t)m->nmaps);
    if (!u) return arkcos_fail(err, ARKCOS_ENOMEM, "execute: out of memory");
    s->polar_used = u;
    memset(u, 0, sizeof *u * (size_t)m->nmaps);
  }
  call c = {.s = s, .m = m, .npix = s->g->npix};
  c.nthreads = s->spec.options.threads > 0 ? s->spec.options.threads : omp_get_max_threads();
  c.normalize_mode = s->spec.mask_mode == ARKCOS_MASK_NORMALIZE;
  c.min_weight = s->spec.min_weight != -1 ? s->spec.min_weight : c.normalize_mode ? MIN_WEIGHT_DEFAULT : 0;
  rc = load_mask(&c, err);
  if (!rc) rc = group(&c, err);
  const int pair = m->pol_q >= 0, later = m->pol_q > m->pol_u ? m->pol_q : m->pol_u;
  for (int i = 0; i < m->nmaps && !rc; i++) {
    if (pair && i == later)
      rc = smooth_pair(&c, m->pol_q, m->pol_u, err);
    else if (!pair || (i != m->pol_q && i != m->pol_u))
      rc = smooth_scalar(&c, i, err);
  }
  free_call(&c);
  if (rc) return rc;
  s->nreports = m->nmaps;
  s->last.nmaps = m->nmaps;
  return ARKCOS_OK;
}

int arkcos_smoother_last(const arkcos_smoother *s, arkcos_smoother_report *r) {
  if (!s || !r) return ARKCOS_EINVAL;
  *r = s->last;
  return ARKCOS_OK;
}

int arkcos_smoother_last_polar(const arkcos_smoother *s, int i) {
  return s && i >= 0 && i < s->nreports ? s->polar_used[i] : -1;
}

double arkcos_smoother_polar_time(const arkcos_smoother *s) { return s ? s->polar_time : 0; }

int arkcos_smoother_last_map(const arkcos_smoother *s, int i, arkcos_smoother_map_report *r) {
  if (!s || !r || i < 0 || i >= s->nreports) return ARKCOS_EINVAL;
  *r = s->reports[i];
  return ARKCOS_OK;
}
