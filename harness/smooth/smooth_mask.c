/*
 * smooth_mask.c -- missing data in `arkcos smooth` (smooth_mask.h): the
 * options, the --mask file, and what the engine's smoother did with the
 * missing pixels of a file (arkcos_smoother, arkcos/smoother_mask.c), on
 * stderr and as WEIGHT columns.
 */
#define _POSIX_C_SOURCE 200809L
#include "harness/smooth/smooth_mask.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/common/options.h"
#include "harness/common/status.h"
#include "harness/common/util.h"

/* ------------------------------------------------------------- options */

void mask_opts_read(mask_opts *o, const json_t *vals) {
  o->has_file = opt_given(vals, OPT_MASK);
  o->file = opt_str(vals, OPT_MASK);
  o->has_mode = opt_given(vals, OPT_MASK_MODE);
  o->mode = opt_choice(vals, OPT_MASK_MODE) == 1 ? MASK_MODE_ZERO : MASK_MODE_NORMALIZE;
  o->has_min_weight = opt_given(vals, OPT_MIN_WEIGHT);
  o->min_weight = opt_num(vals, OPT_MIN_WEIGHT, MASK_MIN_WEIGHT_DEFAULT);
  o->write_weight = opt_bool(vals, OPT_WRITE_WEIGHT);
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

/* The mask's values v[0, n), RING pixels p0 ..: NaN (UNSEEN as read) made
 * 0, in [0, 1]; counted into nzero, nfrac. Returns 0 or 2 (message, on
 * stderr or, given msg, into it). */
static int check_mask_run(const char *path, double *v, int64_t n, int64_t p0, int64_t *nzero, int64_t *nfrac,
                          char *msg, size_t msglen) {
  for (int64_t i = 0; i < n; i++) {
    if (isnan(v[i])) v[i] = 0;
    if (!(v[i] >= 0 && v[i] <= 1)) {
      char buf[8192]; /* PATH_MAX and the words */
      snprintf(msg ? msg : buf, msg ? msglen : sizeof buf,
               "arkcos smooth: --mask %s: pixel %lld (RING) = %g is outside [0, 1] "
               "(a mask is 0/1 or a weight in [0, 1])\n",
               path, (long long)(p0 + i), v[i]);
      if (!msg) fputs(buf, stderr);
      return 2;
    }
    *nzero += v[i] == 0;
    *nfrac += v[i] > 0 && v[i] < 1;
  }
  return 0;
}

static void mask_values_line(const char *path, int64_t nzero, int64_t npix, int64_t nbad, int64_t nfrac) {
  fprintf(stderr,
          "arkcos smooth: --mask %s: weight 0 on %lld of %lld pixels (%lld of them "
          "UNSEEN/NaN), between 0 and 1 on %lld\n",
          path, (long long)nzero, (long long)npix, (long long)nbad, (long long)nfrac);
}

/* The whole mask of h into mw->w (RING; NaN made 0, values checked). 0 or
 * an exit status (message printed when loud). */
static int read_whole_mask(mask_weights *mw, const hpx_header *h, int loud) {
  arkcos_error err = {0};
  double **maps = NULL;
  int ncols = 1;
  int64_t nbad = 0, nzero = 0, nfrac = 0;
  if (hpx_read_columns_missing(h, &maps, &ncols, &nbad, &err)) {
    fprintf(stderr, "arkcos smooth: --mask: %s\n", err.msg);
    return exit_status_of(err.code);
  }
  mw->w = maps[0];
  for (int c = 1; c < ncols; c++) free(maps[c]);
  free(maps);
  int status = check_mask_run(mw->path, mw->w, mw->npix, 0, &nzero, &nfrac, NULL, 0);
  if (!status && loud) mask_values_line(mw->path, nzero, mw->npix, nbad, nfrac);
  if (status) {
    free(mw->w);
    mw->w = NULL;
  }
  return status;
}

/* The mask checked run by run of RING pixels, never whole in memory. A
 * partial-sky mask's runs are read by streaming its whole PIXEL column
 * each (mapio.h): runs of a sixteenth of the sphere, at most 16 passes;
 * its runs are all read before a value outside [0, 1] is reported, since
 * a pixel listed twice, found by the run holding it, is the whole-map
 * reader's error first. */
static int check_mask_runs(mask_weights *mw, const hpx_header *h) {
  int64_t chunk = (int64_t)1 << 20;
  if (h->explicit_index && chunk < (h->npix + 15) / 16) chunk = (h->npix + 15) / 16;
  double *v = malloc(sizeof *v * (size_t)chunk);
  if (!v) {
    fprintf(stderr, "arkcos smooth: --mask %s: out of memory\n", mw->path);
    return 1;
  }
  int64_t nbad = 0, nzero = 0, nfrac = 0;
  int status = 0;
  char msg[8192] = "";
  for (int64_t p0 = 0; p0 < h->npix && (!status || msg[0]); p0 += chunk) {
    const int64_t run[2] = {p0, p0 + chunk < h->npix ? p0 + chunk : h->npix};
    int64_t nb = 0;
    arkcos_error err = {0};
    if (hpx_read_column_runs(h, 0, run, 1, v, &nb, &err)) {
      fprintf(stderr, "arkcos smooth: --mask: %s\n", err.msg);
      status = exit_status_of(err.code);
      msg[0] = 0;
      break;
    }
    nbad += nb;
    if (!status)
      status = check_mask_run(mw->path, v, run[1] - run[0], p0, &nzero, &nfrac, h->explicit_index ? msg : NULL,
                              sizeof msg);
  }
  if (msg[0]) fputs(msg, stderr);
  free(v);
  if (!status) mask_values_line(mw->path, nzero, mw->npix, nbad, nfrac);
  return status;
}

int mask_load(mask_weights *mw, const mask_opts *o, const hpx_header *inputs,
              int ninputs, int keep) {
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
  if (!status) {
    mw->path = o->file;
    mw->nside = h.nside;
    mw->npix = h.npix;
    status = keep ? read_whole_mask(mw, &h, 1) : check_mask_runs(mw, &h);
    if (status) mask_weights_free(mw);
  }
  hpx_header_free(&h);
  return status;
}

int mask_weights_need(mask_weights *mw) {
  if (!mw->path || mw->w) return 0;
  arkcos_error err = {0};
  hpx_header h;
  if (hpx_read_header(mw->path, &h, &err)) {
    fprintf(stderr, "arkcos smooth: --mask: %s\n", err.msg);
    return exit_status_of(err.code);
  }
  const int status = read_whole_mask(mw, &h, 0);
  hpx_header_free(&h);
  return status;
}

void mask_weights_free(mask_weights *mw) {
  free(mw->w);
  memset(mw, 0, sizeof *mw);
}

/* ---------------------------------------------------- report and output */

/* Column c's name as the output will have it. */
static const char *column_name(const hpx_header *h, int c, char *buf, size_t len) {
  if (h->cols && h->cols[c].name[0]) return h->cols[c].name;
  return hpx_standard_column_name(h->ncols, c, buf, len);
}

int64_t mask_file_excluded(const arkcos_smoother *sm, int ncols) {
  int64_t total = 0;
  for (int c = 0; c < ncols; c++) {
    arkcos_smoother_map_report r;
    if (!arkcos_smoother_last_map(sm, c, &r)) total += r.excluded;
  }
  return total;
}

void mask_file_report(const mask_opts *o, int has_mask, const char *path, const hpx_header *h,
                      const arkcos_smoother *sm, int pol_q, int pol_u) {
  arkcos_smoother_report last;
  arkcos_smoother_last(sm, &last);
  arkcos_smoother_map_report *rep = calloc((size_t)last.nmaps + 1, sizeof *rep);
  if (!rep) return;
  for (int c = 0; c < last.nmaps; c++) arkcos_smoother_last_map(sm, c, &rep[c]);
  mask_file_report_of(o, has_mask, path, h, &last, rep, pol_q, pol_u);
  free(rep);
}

void mask_file_report_of(const mask_opts *o, int has_mask, const char *path, const hpx_header *h,
                         const arkcos_smoother_report *lastp, const arkcos_smoother_map_report *rep, int pol_q,
                         int pol_u) {
  const arkcos_smoother_report last = *lastp;
  int active = has_mask;
  for (int c = 0; c < last.nmaps; c++) active |= rep[c].missing > 0;
  if (!active) return;
  const int zero = o->mode == MASK_MODE_ZERO;
  int64_t nmissing = 0;
  for (int c = 0; c < last.nmaps; c++) {
    const arkcos_smoother_map_report r = rep[c];
    char buf[HPX_NAME_LEN];
    nmissing += r.missing;
    fprintf(stderr, "arkcos smooth: %s: %s: %lld of %lld pixels missing (UNSEEN/NaN), ",
            path, column_name(h, c, buf, sizeof buf), (long long)r.missing, (long long)h->npix);
    if (!r.weighted)
      fprintf(stderr, "0 output pixels UNSEEN (complete: smoothed as is)\n");
    else if (zero)
      fprintf(stderr, "%lld output pixels UNSEEN (--mask-mode zero keeps every pixel)\n",
              (long long)r.unseen);
    else
      fprintf(stderr, "%lld output pixels UNSEEN (A(w) < %g)\n", (long long)r.unseen, o->min_weight);
  }
  fprintf(stderr,
          "arkcos smooth: %s: --mask-mode %s: out = %s, %d weight map(s) A(w) smoothed "
          "(%.3gs)\n",
          path, zero ? "zero" : "normalize", zero ? "A(w m)" : "A(w m) / A(w)",
          last.weights_smoothed, last.weight_time);
  if (pol_q >= 0) {
    char qb[HPX_NAME_LEN], ub[HPX_NAME_LEN];
    fprintf(stderr,
            "arkcos smooth: %s: %s and %s as one spin-2 field P = Q + iU with one weight map: "
            "out = %s (S2 spin-2, S0 scalar smoothing)\n",
            path, column_name(h, pol_q, qb, sizeof qb), column_name(h, pol_u, ub, sizeof ub),
            zero ? "S2(w P)" : "S2(w P) / S0(w)");
  }
  if (zero && nmissing)
    fprintf(stderr, "arkcos smooth: note: %s: --mask-mode zero: the %lld missing pixel(s) "
            "count as 0, which pulls the smoothed map towards 0 near them\n",
            path, (long long)nmissing);
}

int mask_file_columns(const mask_opts *o, const arkcos_smoother *sm, double *const *outs,
                      double *const *weights, const hpx_header *h, const double ***all,
                      hpx_column **cols, int *nall, arkcos_error *err) {
  arkcos_smoother_report last;
  arkcos_smoother_last(sm, &last);
  const int ncols = h->ncols;
  const int nw = !o->write_weight || !weights ? 0 : last.nweight_maps == 1 ? 1 : ncols;
  *nall = ncols + nw;
  *all = calloc((size_t)*nall, sizeof **all);
  *cols = calloc((size_t)*nall, sizeof **cols);
  if (!*all || !*cols) {
    free(*all);
    free(*cols);
    *all = NULL;
    *cols = NULL;
    return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", h->path);
  }
  for (int c = 0; c < ncols; c++) {
    char buf[HPX_NAME_LEN];
    (*all)[c] = outs[c];
    snprintf((*cols)[c].name, HPX_NAME_LEN, "%s", column_name(h, c, buf, sizeof buf));
    if (h->cols) snprintf((*cols)[c].unit, HPX_NAME_LEN, "%s", h->cols[c].unit);
  }
  for (int k = 0; k < nw; k++) {
    char buf[HPX_NAME_LEN];
    hpx_column *col = &(*cols)[ncols + k];
    (*all)[ncols + k] = weights[k];
    if (nw == 1)
      snprintf(col->name, HPX_NAME_LEN, "WEIGHT");
    else /* TTYPE values hold 68 characters */
      snprintf(col->name, HPX_NAME_LEN, "WEIGHT_%.60s", column_name(h, k, buf, sizeof buf));
  }
  return ARKCOS_OK;
}
