/*
 * smooth_mask.h -- missing data in `arkcos smooth`.
 *
 * UNSEEN and NaN pixels (those a partial-sky map does not list included)
 * and the pixels a --mask gives weight 0 are excluded from the smoothing,
 * not counted as zeros. With m a column with its missing pixels set to 0
 * and w its weight map (0 where m is missing, the --mask value elsewhere,
 * 1 without --mask) and A the smoothing operator of the method:
 *
 *   normalize (default)  out = A(w m) / A(w), the normalised convolution:
 *                        near a hole the average of the data that exist
 *   zero                 out = A(w m), missing pixels count as 0
 *
 * and in normalize mode out = UNSEEN where A(w) < min_weight (zero mode
 * keeps every pixel: --min-weight is normalize's). A(w) costs one
 * smoothing per distinct weight map in a file: columns whose missing pixels
 * are the same share it (with --mask and complete columns there is one).
 * A column without missing pixels and without --mask is smoothed as
 * before (w = 1: no division, no threshold).
 *
 * Stokes Q and U smoothed as one spin-2 field P = Q + iU (S2, the spin-2
 * smoothing; S0 the scalar one) share one weight map, w = 0 where Q or U is
 * missing (mask_pol_union), and
 *
 *   normalize            Q' + i U' = S2(w P) / S0(w)
 *   zero                 Q' + i U' = S2(w P)
 *
 * with the same threshold on S0(w) = A(w).
 */
#ifndef ARKCOS_HARNESS_SMOOTH_MASK_H
#define ARKCOS_HARNESS_SMOOTH_MASK_H

#include <stdint.h>

#include "arkcos/arkcos.h"
#include "harness/mapio.h"
#include "harness/method.h"

typedef enum { MASK_MODE_NORMALIZE = 0, MASK_MODE_ZERO = 1 } mask_mode;

#define MASK_MIN_WEIGHT_DEFAULT 0.5

/* The command-line options. All zero is "none given"; mask_opts_finish
 * fills the defaults. */
typedef struct mask_opts {
  const char *file;   /* --mask FILE, or NULL */
  mask_mode mode;     /* --mask-mode */
  double min_weight;  /* --min-weight, in [0, 1] */
  int write_weight;   /* --write-weight */
  int has_file, has_mode, has_min_weight;
} mask_opts;

/* The "given" flag of the value option name (--mask, --mask-mode,
 * --min-weight), or NULL if name is not one of them. */
int *mask_option_seen(mask_opts *o, const char *name);
/* Sets the value option name from val if it is one of the above; returns 0,
 * or 2 after printing a message that names the option. */
int mask_set_option(mask_opts *o, const char *name, const char *val);
/* 1 if arg is a flag of this module (--write-weight), which is then set. */
int mask_take_flag(mask_opts *o, const char *arg);
/* Defaults for what was not given: normalize, min_weight 0.5 there and 0
 * (every pixel kept) with zero. Returns 0, or 2 (message printed) for
 * --min-weight with --mask-mode zero. */
int mask_opts_finish(mask_opts *o);

/* --mask: its weights, read and checked before any smoothing. */
typedef struct mask_weights {
  const char *path;  /* NULL: no --mask */
  int64_t nside, npix;
  double *w;         /* npix weights in [0, 1], RING order */
} mask_weights;

/* Reads and checks --mask (if given) against the inputs' headers: same
 * NSIDE as every input, values in [0, 1] (UNSEEN and NaN count as 0).
 * Returns 0 or an exit status (message printed). */
int mask_load(mask_weights *mw, const mask_opts *o, const hpx_header *inputs,
              int ninputs);
void mask_weights_free(mask_weights *mw);

/* One distinct set of missing pixels in a file, and its smoothed weight. */
typedef struct mask_set {
  uint64_t *bits;    /* bit p: pixel p is missing */
  int64_t nmissing;
  double *aw;        /* A(w) once computed, else NULL */
  int trivial;       /* nothing missing and no --mask: w = 1 */
  int last_col;      /* the last column that uses it */
} mask_set;

/* One input file's missing data. */
typedef struct mask_job {
  const mask_opts *o;
  const mask_weights *mw;
  const char *path;
  int64_t npix;
  int ncols;
  int *set_of;       /* per column: its set */
  int64_t *nunseen;  /* per column: output pixels set to UNSEEN */
  mask_set *sets;
  int nsets;
  int nsmoothed;     /* A(w) computed (weight smoothings) */
  double weight_time; /* seconds they took */
  int active;        /* some column has missing pixels, or --mask */
  int pol_q, pol_u;  /* the columns smoothed as spin 2 (mask_smooth_pair), or -1 */
} mask_job;

/* Finds the missing pixels (NaN, as hpx_read_columns_missing leaves them)
 * of the ncols columns maps[c] and groups equal sets. */
int mask_job_begin(mask_job *j, const mask_opts *o, const mask_weights *mw,
                   const char *path, double *const *maps, int ncols, int64_t npix,
                   arkcos_error *err);

/* The pixels left out of the smoothing, summed over the columns: missing
 * (UNSEEN, NaN, +-inf, not listed) or given weight 0 by --mask. */
int64_t mask_job_excluded(const mask_job *j);

/* Smooths column c: in (modified: becomes w m) into out. A(w) is computed
 * first when its set needs it and has none yet, its stage times (METHOD_ARKCOS)
 * added to *stages; the last smoother_apply is the column's own, so
 * smoother_stages afterwards gives its stages. */
int mask_smooth_column(mask_job *j, smoother *sm, int c, double *in, double *out,
                       arkcos_stage_times *stages, arkcos_error *err);

/* 1 when column c's output was divided by its A(w) (--mask-mode normalize
 * and missing pixels or --mask): it is normalised by the kernel's discrete
 * weights already, and --normalize must not divide it by A(1) again. */
int mask_column_normalized(const mask_job *j, int c);

/* Q and U are one field: where either is missing (NaN), both become NaN.
 * Returns the number of pixels that became missing in one of them. */
int64_t mask_pol_union(double *q, double *u, int64_t npix);

/* 1 when a weight map A(w) will be smoothed (some column has missing
 * pixels, --mask, or --write-weight): the scalar smoother is needed even
 * for a file of Q and U only. */
int mask_job_needs_weights(const mask_job *j);

/* Smooths columns cq, cu (Stokes Q and U, which share their missing pixels:
 * mask_pol_union before mask_job_begin) as the spin-2 field P with sm2
 * (spin 2) into q_out, u_out: q and u are modified (become w Q, w U). A(w)
 * comes from the scalar smoother sm, which may be NULL when
 * mask_job_needs_weights is 0. As mask_smooth_column otherwise: the last
 * apply is sm2's. */
int mask_smooth_pair(mask_job *j, smoother *sm, smoother *sm2, int cq, int cu, double *q,
                     double *u, double *q_out, double *u_out, arkcos_stage_times *stages,
                     arkcos_error *err);

/* Stderr: per column, the missing pixels and the output pixels set to
 * UNSEEN; in zero mode a note. Nothing for a file without missing pixels
 * and without --mask. */
void mask_job_report(const mask_job *j, const hpx_header *h);

/* The columns to write: the ncols smoothed ones, then with --write-weight
 * A(w) as WEIGHT (one column when all columns share one weight map, else
 * WEIGHT_<column name> per column). *all and *cols are malloc'd (the maps
 * are borrowed); *nall is their number. */
int mask_job_columns(const mask_job *j, double *const *outs, const hpx_header *h,
                     const double ***all, hpx_column **cols, int *nall,
                     arkcos_error *err);

void mask_job_free(mask_job *j);

#endif
