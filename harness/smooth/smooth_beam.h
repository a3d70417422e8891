/*
 * smooth_beam.h -- `arkcos smooth --beam-file`: a beam transfer function
 * B_l (a healpy or Planck FITS beam, a text file `l B_l`; harness/common/beamio.h)
 * turned into a compact radial kernel, the Legendre sum
 *     K(t) = sum_l (2l + 1) / (4 pi) (B_l / B_0) P_l(cos t),
 * cut where |K| stays below --cutoff-rel K(0) (arkcos_kernel_from_beam).
 * The truncation changes the window: the kernel applies its own K_l, not
 * B_l / B_0. Per nside its window error max over l <= lmax of
 * |K_l - B_l / B_0| (B_l = 0 above the file's last multipole, as
 * healpy.almxfl takes it; lmax = 3 nside - 1, or --lmax with fsht) is
 * printed on stderr and recorded in the summary line; above
 * --beam-tolerance the beam is refused (exit 2) with the figure.
 * Every method smooths with the truncated kernel (fsht with its K_l, the
 * spin-2 path with its K_l^(2)), so the methods agree with each other.
 */
#ifndef ARKCOS_HARNESS_SMOOTH_BEAM_H
#define ARKCOS_HARNESS_SMOOTH_BEAM_H

#include <stdint.h>

#include <jansson.h>

#include "arkcos/arkcos.h"
#include "harness/common/mapio.h"
#include "harness/common/method.h"

typedef struct beam_opts {
  const char *file;   /* --beam-file FILE, or NULL */
  const char *column; /* --beam-column NAME|N, or NULL (the first) */
  double tolerance;   /* --beam-tolerance */
  int has_file, has_column, has_tolerance;
} beam_opts;

/* The beam file's B_l and the kernel made from it. */
typedef struct beam_kernel {
  double *bl; /* B_l, l = 0..lmax (malloc'ed) */
  int lmax;
  double min_rel; /* min of K / K(0) within the cutoff (< 0: negative lobes) */
} beam_kernel;

/* The usage lines of these options (for cmd_smooth's --help). */
extern const char smooth_beam_usage[];

/* The options from a parsed command line (the rows OPT_BEAM_FILE,
 * OPT_BEAM_COLUMN and OPT_BEAM_TOLERANCE of options.h, already checked
 * there), the table's default tolerance for what was not given. */
void smooth_beam_read(beam_opts *o, const json_t *vals);
/* --beam-column or --beam-tolerance without --beam-file, --cutoff-deg with
 * it (a beam's kernel is cut by level): 2 with the message, else 0. */
int smooth_beam_combinations(const beam_opts *o, int has_cutoff_deg);

/* The kernel of --beam-file cut at cutoff_rel, with *bk filled. NULL with
 * err filled (naming the file) on failure. */
arkcos_kernel *smooth_beam_kernel(const beam_opts *o, double cutoff_rel, beam_kernel *bk,
                                  arkcos_error *err);
void smooth_beam_free(beam_kernel *bk);

/* Per distinct nside of the inputs: the window error up to the method's
 * lmax (lmax_opt > 0: fsht's --lmax), on stderr ("arkcos smooth: beam ...")
 * and, with verbose, a "window:" line on stdout; refused (2, with the
 * figure) above o->tolerance. win[i] gets input i's window error. 0, 2, or
 * 1 (out of memory). */
int smooth_beam_window(const beam_opts *o, const beam_kernel *bk, const arkcos_kernel *k,
                       long lmax_opt, int verbose, const hpx_header *inputs, int n,
                       double *win);

#endif
