/*
 * smooth_mask.h -- missing data in `arkcos smooth`: its options, the --mask
 * file, and the report of what the engine's smoother did (the policy
 * itself is arkcos_smoother's, arkcos.h and arkcos/smoother_mask.c):
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

#include <jansson.h>

#include "arkcos/arkcos.h"
#include "harness/common/mapio.h"

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

/* The options from a parsed command line (the rows OPT_MASK, OPT_MASK_MODE,
 * OPT_MIN_WEIGHT and OPT_WRITE_WEIGHT of options.h, already checked there). */
void mask_opts_read(mask_opts *o, const json_t *vals);
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
 * keep: mw->w holds the weights; else (one map over MPI ranks, whose ranks
 * read their bands of the mask themselves) the mask is checked in runs of
 * pixels and mw->w stays NULL until mask_weights_need (a partial-sky mask
 * too, in runs of a sixteenth of the sphere at most: each streams its
 * PIXEL column). Returns 0 or an exit status (message printed). */
int mask_load(mask_weights *mw, const mask_opts *o, const hpx_header *inputs,
              int ninputs, int keep);
/* mw->w read when a mask was given and is not held (mask_load's keep 0):
 * 0 or an exit status (message printed). */
int mask_weights_need(mask_weights *mw);
void mask_weights_free(mask_weights *mw);

/* After arkcos_smoother_execute on a file's ncols columns: the pixels left
 * out of the smoothing, summed over the columns (missing, or given weight 0
 * by --mask). */
int64_t mask_file_excluded(const arkcos_smoother *sm, int ncols);

/* Stderr: per column, the missing pixels and the output pixels set to
 * UNSEEN; the weight maps smoothed; the Q, U pair (pol_q >= 0); in zero mode
 * a note. Nothing for a file without missing pixels and without --mask. */
void mask_file_report(const mask_opts *o, int has_mask, const char *path, const hpx_header *h,
                      const arkcos_smoother *sm, int pol_q, int pol_u);
/* The same from a report made elsewhere (one map over MPI ranks, hmpi.h):
 * last->nmaps columns, rep[c] per column. */
void mask_file_report_of(const mask_opts *o, int has_mask, const char *path, const hpx_header *h,
                         const arkcos_smoother_report *last, const arkcos_smoother_map_report *rep, int pol_q,
                         int pol_u);

/* The columns to write: the ncols smoothed ones, then with --write-weight
 * A(w) (weights[c], per column) as WEIGHT (one column when all columns share
 * one weight map, else WEIGHT_<column name> per column). *all and *cols are
 * malloc'd (the maps are borrowed); *nall is their number. */
int mask_file_columns(const mask_opts *o, const arkcos_smoother *sm, double *const *outs,
                      double *const *weights, const hpx_header *h, const double ***all,
                      hpx_column **cols, int *nall, arkcos_error *err);

#endif
