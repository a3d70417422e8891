/*
 * smooth_mask.c -- missing data in `arkcos smooth` (smooth_mask.h): the
 * options, the --mask weights, the missing pixels of each column, the
 * normalised convolution A(w m) / A(w) and the weight threshold.
 */
#define _POSIX_C_SOURCE 200809L
#include "harness/smooth_mask.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/status.h"
#include "harness/util.h"

/* In normalize mode a pixel needs A(w) above this to be divided by it: A(w)
 * is about 1 where the data are complete, and where no data lie within the
 * kernel it is 0 up to the method's rounding (~1e-16), a ratio of noise.
 * Only matters with --min-weight below it. */
#define WEIGHT_FLOOR 1e-12

/* ------------------------------------------------------------- options */


int *mask_option_seen(mask_opts *o, const char *name) {
  if (!strcmp(name, "--mask")) return &o->has_file;
  if (!strcmp(name, "--mask-mode")) return &o->has_mode;
  if (!strcmp(name, "--min-weight")) return &o->has_min_weight;
  return NULL;
}

int mask_set_option(mask_opts *o, const char *name, const char *val) {
  if (!strcmp(name, "--mask")) {
    if (!*val) return smooth_usage_error("--mask: empty file name");
    o->file = val;
  } else if (!strcmp(name, "--mask-mode")) {
    if (!strcmp(val, "normalize"))
      o->mode = MASK_MODE_NORMALIZE;
    else if (!strcmp(val, "zero"))
      o->mode = MASK_MODE_ZERO;
    else
      return smooth_usage_error("--mask-mode: unknown value '%s' (normalize or zero)", val);
  } else if (!strcmp(name, "--min-weight")) {
    if (!parse_double(val, &o->min_weight))
      return smooth_usage_error("--min-weight: '%s' is not a finite number", val);
    if (!(o->min_weight >= 0 && o->min_weight <= 1))
      return smooth_usage_error("--min-weight: %s is outside [0, 1]", val);
  }
  return 0;
}

int mask_take_flag(mask_opts *o, const char *arg) {
  if (strcmp(arg, "--write-weight")) return 0;
  o->write_weight = 1;
  return 1;
}

int mask_opts_finish(mask_opts *o) {
  if (!o->has_mode) o->mode = MASK_MODE_NORMALIZE;
  if (o->mode == MASK_MODE_ZERO) {
    /* A(w m) is kept everywhere: a threshold on A(w) is normalize's */
    if (o->has_min_weight)
      return smooth_usage_error("--min-weight applies to --mask-mode normalize only "
                                "(--mask-mode zero keeps every pixel)");
    o->min_weight = 0;
  } else if (!o->has_min_weight) {
    o->min_weight = MASK_MIN_WEIGHT_DEFAULT;
  }
  return 0;
}

/* ---------------------------------------------------------------- --mask */

/* The mask's values: in [0, 1] (UNSEEN and NaN become 0). Returns 0 or 2. */
static int check_mask_values(const mask_weights *mw, int64_t nbad) {
  int64_t nzero = 0, nfrac = 0;
  for (int64_t p = 0; p < mw->npix; p++) {
    double v = mw->w[p];
    if (isnan(v)) {
      mw->w[p] = 0;
      v = 0;
    }
    if (!(v >= 0 && v <= 1)) {
      fprintf(stderr,
              "arkcos smooth: --mask %s: pixel %lld (RING) = %g is outside [0, 1] "
              "(a mask is 0/1 or a weight in [0, 1])\n",
              mw->path, (long long)p, v);
      return 2;
    }
    nzero += v == 0;
    nfrac += v > 0 && v < 1;
  }
  fprintf(stderr,
          "arkcos smooth: --mask %s: weight 0 on %lld of %lld pixels (%lld of them "
          "UNSEEN/NaN), between 0 and 1 on %lld\n",
          mw->path, (long long)nzero, (long long)mw->npix, (long long)nbad,
          (long long)nfrac);
  return 0;
}

int mask_load(mask_weights *mw, const mask_opts *o, const hpx_header *inputs,
              int ninputs) {
  memset(mw, 0, sizeof *mw);
  if (!o->file) return 0;
  arkcos_error err = {0};
  hpx_header h;
  if (hpx_read_header(o->file, &h, &err)) {
    fprintf(stderr, "arkcos smooth: --mask: %s\n", err.msg);
    return exit_status_of(err.code);
  }
  int status = 0;
  for (int i = 0; i < ninputs && !status; i++)
    if (inputs[i].nside != h.nside) {
      fprintf(stderr,
              "arkcos smooth: --mask %s: NSIDE = %lld, but %s has NSIDE = %lld "
              "(the mask must have the input's NSIDE)\n",
              o->file, (long long)h.nside, inputs[i].path, (long long)inputs[i].nside);
      status = 2;
    }
  if (!status && h.ncols > 1)
    fprintf(stderr, "arkcos smooth: note: --mask %s: %d columns; the first (%s) is the mask\n",
            o->file, h.ncols, h.cols[0].name[0] ? h.cols[0].name : "unnamed");
  double **maps = NULL;
  int ncols = 1;
  int64_t nbad = 0;
  if (!status && hpx_read_columns_missing(&h, &maps, &ncols, &nbad, &err)) {
    fprintf(stderr, "arkcos smooth: --mask: %s\n", err.msg);
    status = exit_status_of(err.code);
  }
  if (!status) {
    mw->path = o->file;
    mw->nside = h.nside;
    mw->npix = h.npix;
    mw->w = maps[0];
    free(maps);
    status = check_mask_values(mw, nbad);
    if (status) mask_weights_free(mw);
  }
  hpx_header_free(&h);
  return status;
}

void mask_weights_free(mask_weights *mw) {
  free(mw->w);
  memset(mw, 0, sizeof *mw);
}

/* ------------------------------------------------------ missing pixels */

static int64_t nwords(int64_t npix) { return (npix + 63) / 64; }

static int is_missing(const uint64_t *bits, int64_t p) {
  return (int)(bits[p >> 6] >> (p & 63) & 1);
}

/* bits: the NaN pixels of m[0..npix); returns their number. */
static int64_t missing_bits(const double *m, int64_t npix, uint64_t *bits) {
  const int64_t nw = nwords(npix);
  int64_t n = 0;
#pragma omp parallel for reduction(+ : n) schedule(static)
  for (int64_t k = 0; k < nw; k++) {
    uint64_t b = 0;
    const int64_t p0 = 64 * k, p1 = p0 + 64 < npix ? p0 + 64 : npix;
    for (int64_t p = p0; p < p1; p++)
      if (isnan(m[p])) b |= (uint64_t)1 << (p - p0);
    bits[k] = b;
    n += __builtin_popcountll(b);
  }
  return n;
}

/* The set of column c: an earlier one with the same missing pixels, or a
 * new one taking *bits (then *bits = NULL). */
static int find_set(mask_job *j, int c, uint64_t **bits, int64_t nmissing) {
  const size_t bytes = sizeof **bits * (size_t)nwords(j->npix);
  for (int s = 0; s < j->nsets; s++)
    if (j->sets[s].nmissing == nmissing && !memcmp(j->sets[s].bits, *bits, bytes)) {
      j->sets[s].last_col = c;
      return s;
    }
  mask_set *s = &j->sets[j->nsets];
  s->bits = *bits;
  *bits = NULL;
  s->nmissing = nmissing;
  s->trivial = nmissing == 0 && !j->mw;
  s->last_col = c;
  return j->nsets++;
}

int mask_job_begin(mask_job *j, const mask_opts *o, const mask_weights *mw,
                   const char *path, double *const *maps, int ncols, int64_t npix,
                   arkcos_error *err) {
  memset(j, 0, sizeof *j);
  j->o = o;
  j->mw = mw && mw->w ? mw : NULL;
  j->path = path;
  j->npix = npix;
  j->ncols = ncols;
  j->set_of = calloc((size_t)ncols, sizeof *j->set_of);
  j->nunseen = calloc((size_t)ncols, sizeof *j->nunseen);
  j->sets = calloc((size_t)ncols, sizeof *j->sets);
  if (!j->set_of || !j->nunseen || !j->sets)
    return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", path);
  j->active = j->mw != NULL;
  j->pol_q = j->pol_u = -1;
  uint64_t *bits = NULL;
  for (int c = 0; c < ncols; c++) {
    if (!bits && !(bits = malloc(sizeof *bits * (size_t)nwords(npix))))
      return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory for the missing pixels",
                         path);
    int64_t n = missing_bits(maps[c], npix, bits);
    j->active |= n > 0;
    j->set_of[c] = find_set(j, c, &bits, n);
  }
  free(bits);
  return ARKCOS_OK;
}

int64_t mask_job_excluded(const mask_job *j) {
  const double *mw = j->mw ? j->mw->w : NULL;
  int64_t total = 0;
  for (int c = 0; c < j->ncols; c++) {
    const mask_set *s = &j->sets[j->set_of[c]];
    int64_t n = s->nmissing;
    if (mw)
      for (int64_t p = 0; p < j->npix; p++) n += mw[p] == 0 && !is_missing(s->bits, p);
    total += n;
  }
  return total;
}

/* ------------------------------------------------------------ smoothing */

/* s->aw = A(w), w = 0 at the set's missing pixels, the --mask weight (or 1)
 * elsewhere. */
static int smooth_weight(mask_job *j, smoother *sm, mask_set *s,
                         arkcos_stage_times *stages, arkcos_error *err) {
  const int64_t npix = j->npix;
  const double *mw = j->mw ? j->mw->w : NULL;
  double *w = malloc(sizeof *w * (size_t)npix);
  s->aw = malloc(sizeof *s->aw * (size_t)npix);
  if (!w || !s->aw) {
    free(w);
    return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory for the weight map",
                       j->path);
  }
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < npix; p++)
    w[p] = is_missing(s->bits, p) ? 0.0 : mw ? mw[p] : 1.0;
  double t0 = wall_time();
  int rc = smoother_apply(sm, w, s->aw, err);
  j->weight_time += wall_time() - t0;
  free(w);
  if (rc) return rc;
  if (smoother_kind(sm) == METHOD_ARKCOS) {
    arkcos_stage_times t;
    smoother_stages(sm, &t);
    stage_times_add(stages, &t);
  }
  j->nsmoothed++;
  return ARKCOS_OK;
}

/* in = w m: 0 where missing (NaN) or where the mask weight is 0. */
static void apply_weight(const mask_job *j, double *in) {
  const double *mw = j->mw ? j->mw->w : NULL;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < j->npix; p++)
    in[p] = isnan(in[p]) || (mw && mw[p] == 0) ? 0.0 : mw ? mw[p] * in[p] : in[p];
}

/* out = A(w m) / A(w) (normalize) or A(w m) (zero), UNSEEN where A(w) is
 * below --min-weight (0 turns the threshold off) and, when dividing, where
 * it is not above WEIGHT_FLOOR. Returns the number of UNSEEN pixels. */
static int64_t finish_column(const mask_job *j, const double *aw, double *out) {
  const int normalize = j->o->mode == MASK_MODE_NORMALIZE;
  const double minw = j->o->min_weight;
  int64_t n = 0;
#pragma omp parallel for reduction(+ : n) schedule(static)
  for (int64_t p = 0; p < j->npix; p++) {
    const double a = aw[p];
    if ((minw > 0 && a < minw) || (normalize && !(a > WEIGHT_FLOOR))) {
      out[p] = HPX_UNSEEN;
      n++;
    } else if (normalize) {
      out[p] /= a;
    }
  }
  return n;
}

/* The set's A(w), smoothed now if it is needed and not there yet. */
static int ensure_weight(mask_job *j, smoother *sm, mask_set *s, arkcos_stage_times *stages,
                         arkcos_error *err) {
  if (s->aw || (s->trivial && !j->o->write_weight)) return ARKCOS_OK;
  if (!sm) return arkcos_fail(err, ARKCOS_ERUNTIME, "%s: no scalar smoother for the weight map", j->path);
  return smooth_weight(j, sm, s, stages, err);
}

/* After the set's last column: its A(w) is not needed again (unless it is
 * written). */
static void release_weight(mask_job *j, mask_set *s, int c) {
  if (c == s->last_col && !j->o->write_weight) {
    free(s->aw);
    s->aw = NULL;
  }
}

int mask_smooth_column(mask_job *j, smoother *sm, int c, double *in, double *out,
                       arkcos_stage_times *stages, arkcos_error *err) {
  mask_set *s = &j->sets[j->set_of[c]];
  int rc = ensure_weight(j, sm, s, stages, err);
  if (rc) return rc;
  if (!s->trivial) apply_weight(j, in);
  if ((rc = smoother_apply(sm, in, out, err))) return rc;
  if (!s->trivial) j->nunseen[c] = finish_column(j, s->aw, out);
  release_weight(j, s, c);
  return ARKCOS_OK;
}

int mask_column_normalized(const mask_job *j, int c) {
  return j->o->mode == MASK_MODE_NORMALIZE && !j->sets[j->set_of[c]].trivial;
}

int64_t mask_pol_union(double *q, double *u, int64_t npix) {
  int64_t n = 0;
#pragma omp parallel for reduction(+ : n) schedule(static)
  for (int64_t p = 0; p < npix; p++) {
    const int mq = isnan(q[p]), mu = isnan(u[p]);
    if (mq != mu) {
      q[p] = u[p] = NAN;
      n++;
    }
  }
  return n;
}

int mask_job_needs_weights(const mask_job *j) { return j->active || j->o->write_weight; }

int mask_smooth_pair(mask_job *j, smoother *sm, smoother *sm2, int cq, int cu, double *q,
                     double *u, double *q_out, double *u_out, arkcos_stage_times *stages,
                     arkcos_error *err) {
  if (j->set_of[cq] != j->set_of[cu])
    return arkcos_fail(err, ARKCOS_ERUNTIME, "%s: Q and U miss different pixels (mask_pol_union first)",
                       j->path);
  mask_set *s = &j->sets[j->set_of[cq]];
  int rc = ensure_weight(j, sm, s, stages, err);
  if (rc) return rc;
  if (!s->trivial) {
    apply_weight(j, q);
    apply_weight(j, u);
  }
  if ((rc = smoother_apply_spin2(sm2, q, u, q_out, u_out, err))) return rc;
  if (!s->trivial) {
    j->nunseen[cq] = finish_column(j, s->aw, q_out);
    j->nunseen[cu] = finish_column(j, s->aw, u_out);
  }
  j->pol_q = cq;
  j->pol_u = cu;
  release_weight(j, s, cq > cu ? cq : cu);
  return ARKCOS_OK;
}

/* ---------------------------------------------------- report and output */

/* Column c's name as the output will have it. */
static const char *column_name(const hpx_header *h, int c, char *buf, size_t len) {
  if (h->cols && h->cols[c].name[0]) return h->cols[c].name;
  return hpx_standard_column_name(h->ncols, c, buf, len);
}

void mask_job_report(const mask_job *j, const hpx_header *h) {
  if (!j->active) return;
  const int zero = j->o->mode == MASK_MODE_ZERO;
  int64_t nmissing = 0;
  for (int c = 0; c < j->ncols; c++) {
    const mask_set *s = &j->sets[j->set_of[c]];
    char buf[HPX_NAME_LEN];
    nmissing += s->nmissing;
    fprintf(stderr, "arkcos smooth: %s: %s: %lld of %lld pixels missing (UNSEEN/NaN), ",
            j->path, column_name(h, c, buf, sizeof buf), (long long)s->nmissing,
            (long long)j->npix);
    if (s->trivial)
      fprintf(stderr, "0 output pixels UNSEEN (complete: smoothed as is)\n");
    else if (zero)
      fprintf(stderr, "%lld output pixels UNSEEN (--mask-mode zero keeps every pixel)\n",
              (long long)j->nunseen[c]);
    else
      fprintf(stderr, "%lld output pixels UNSEEN (A(w) < %g)\n", (long long)j->nunseen[c],
              j->o->min_weight);
  }
  fprintf(stderr,
          "arkcos smooth: %s: --mask-mode %s: out = %s, %d weight map(s) A(w) smoothed "
          "(%.3gs)\n",
          j->path, zero ? "zero" : "normalize", zero ? "A(w m)" : "A(w m) / A(w)",
          j->nsmoothed, j->weight_time);
  if (j->pol_q >= 0) {
    char qb[HPX_NAME_LEN], ub[HPX_NAME_LEN];
    fprintf(stderr,
            "arkcos smooth: %s: %s and %s as one spin-2 field P = Q + iU with one weight map: "
            "out = %s (S2 spin-2, S0 scalar smoothing)\n",
            j->path, column_name(h, j->pol_q, qb, sizeof qb), column_name(h, j->pol_u, ub, sizeof ub),
            zero ? "S2(w P)" : "S2(w P) / S0(w)");
  }
  if (zero && nmissing)
    fprintf(stderr, "arkcos smooth: note: %s: --mask-mode zero: the %lld missing pixel(s) "
            "count as 0, which pulls the smoothed map towards 0 near them\n",
            j->path, (long long)nmissing);
}

int mask_job_columns(const mask_job *j, double *const *outs, const hpx_header *h,
                     const double ***all, hpx_column **cols, int *nall,
                     arkcos_error *err) {
  const int nw = !j->o->write_weight ? 0 : j->nsets == 1 ? 1 : j->ncols;
  *nall = j->ncols + nw;
  *all = calloc((size_t)*nall, sizeof **all);
  *cols = calloc((size_t)*nall, sizeof **cols);
  if (!*all || !*cols) {
    free(*all);
    free(*cols);
    *all = NULL;
    *cols = NULL;
    return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", j->path);
  }
  for (int c = 0; c < j->ncols; c++) {
    char buf[HPX_NAME_LEN];
    (*all)[c] = outs[c];
    snprintf((*cols)[c].name, HPX_NAME_LEN, "%s", column_name(h, c, buf, sizeof buf));
    if (h->cols) snprintf((*cols)[c].unit, HPX_NAME_LEN, "%s", h->cols[c].unit);
  }
  for (int k = 0; k < nw; k++) {
    char buf[HPX_NAME_LEN];
    hpx_column *col = &(*cols)[j->ncols + k];
    (*all)[j->ncols + k] = j->sets[j->set_of[k]].aw;
    if (nw == 1)
      snprintf(col->name, HPX_NAME_LEN, "WEIGHT");
    else /* TTYPE values hold 68 characters */
      snprintf(col->name, HPX_NAME_LEN, "WEIGHT_%.60s", column_name(h, k, buf, sizeof buf));
  }
  return ARKCOS_OK;
}

void mask_job_free(mask_job *j) {
  for (int s = 0; s < j->nsets; s++) {
    free(j->sets[s].bits);
    free(j->sets[s].aw);
  }
  free(j->sets);
  free(j->set_of);
  free(j->nunseen);
  memset(j, 0, sizeof *j);
}
