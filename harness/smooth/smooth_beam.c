/* smooth_beam.c -- beam transfer functions in `arkcos smooth`
 * (smooth_beam.h). */
#include "harness/smooth/smooth_beam.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/common/beamio.h"
#include "harness/common/options.h"
#include "harness/common/status.h"
#include "harness/common/util.h"

#define PI 3.14159265358979323846

const char smooth_beam_usage[] =
    "Beam transfer functions (--beam-file):\n"
    "  --beam-file FILE     B_l from a FITS table as healpy (write_cl of\n"
    "                       gauss_beam) and the Planck RIMO write it, one row per\n"
    "                       l from 0, or a text file of lines `l B_l` (or B_l\n"
    "                       alone), '#' comments allowed. The kernel is the\n"
    "                       Legendre sum K(t) = sum_l (2l+1)/(4 pi) B_l/B_0\n"
    "                       P_l(cos t), cut where |K| stays below --cutoff-rel\n"
    "                       K(0) (default 1e-5; --cutoff-deg does not apply).\n"
    "                       Give B_l to l = 8 nside or until it is negligible: a\n"
    "                       window cut where B_l is still large rings and is\n"
    "                       refused. The cut changes the window; its error\n"
    "                       max |K_l - B_l/B_0| over l <= 3 nside - 1 (--lmax with\n"
    "                       fsht; B_l = 0 above the file's last l) is printed and\n"
    "                       in the summary line (window_err=). Every method uses\n"
    "                       this one truncated kernel: fsht multiplies by its K_l\n"
    "                       (not by B_l itself), Stokes Q and U by its K_l^(2)\n"
    "  --beam-column C      the FITS column holding B_l: a name (TTYPE, any case)\n"
    "                       or a number from 1 (default: the first)\n"
    "  --beam-tolerance T   refuse (exit 2) when the window error exceeds T,\n"
    "                       0 < T < 1 (default 1e-4); a smaller --cutoff-rel cuts\n"
    "                       farther out and lowers it\n";

void smooth_beam_read(beam_opts *o, const json_t *vals) {
  o->has_file = opt_given(vals, OPT_BEAM_FILE);
  o->file = opt_str(vals, OPT_BEAM_FILE);
  o->has_column = opt_given(vals, OPT_BEAM_COLUMN);
  o->column = opt_str(vals, OPT_BEAM_COLUMN);
  o->has_tolerance = opt_given(vals, OPT_BEAM_TOLERANCE);
  o->tolerance = opt_num(vals, OPT_BEAM_TOLERANCE, 0);
}

int smooth_beam_combinations(const beam_opts *o, int has_cutoff_deg) {
  if (o->has_column && !o->has_file) return smooth_usage_error("--beam-column applies only to --beam-file");
  if (o->has_tolerance && !o->has_file)
    return smooth_usage_error("--beam-tolerance applies only to --beam-file");
  if (o->has_file && has_cutoff_deg)
    return smooth_usage_error("--cutoff-deg does not apply to --beam-file: its kernel is cut where it "
                              "falls below a level (--cutoff-rel)");
  return 0;
}

/* min over [0, cutoff] of K / K(0), on 20000 points. */
static double min_relative(const arkcos_kernel *k) {
  const double c = arkcos_kernel_cutoff(k), k0 = arkcos_kernel_value(k, 0);
  double lo = 1;
  for (int i = 0; i <= 20000; i++) lo = fmin(lo, arkcos_kernel_value(k, c * i / 20000) / k0);
  return lo;
}

arkcos_kernel *smooth_beam_kernel(const beam_opts *o, double cutoff_rel, beam_kernel *bk,
                                  arkcos_error *err) {
  memset(bk, 0, sizeof *bk);
  if (beam_read(o->file, o->column, &bk->bl, &bk->lmax, err)) return NULL;
  arkcos_kernel *k = arkcos_kernel_from_beam(bk->bl, bk->lmax, cutoff_rel, err);
  if (!k) {
    /* the library's message starts "beam: ..."; name the file instead */
    char msg[sizeof err->msg];
    const char *m = strncmp(err->msg, "beam: ", 6) ? err->msg : err->msg + 6;
    const size_t nf = strlen(o->file) + 2;
    if (nf + strlen(m) < sizeof msg) {
      memcpy(msg, o->file, nf - 2);
      memcpy(msg + nf - 2, ": ", 2);
      memcpy(msg + nf, m, strlen(m) + 1);
      memcpy(err->msg, msg, sizeof msg);
    }
    smooth_beam_free(bk);
    return NULL;
  }
  bk->min_rel = min_relative(k);
  return k;
}

void smooth_beam_free(beam_kernel *bk) {
  free(bk->bl);
  bk->bl = NULL;
}

/* The window error of k against B_l (0 above the file's lmax) for
 * l <= lmax. 0 or an error code. */
static int window_error(const beam_kernel *bk, const arkcos_kernel *k, int lmax, double *e,
                        int *lw, arkcos_error *err) {
  double *b = calloc((size_t)lmax + 1, sizeof *b);
  if (!b) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  memcpy(b, bk->bl, sizeof *b * (size_t)((lmax < bk->lmax ? lmax : bk->lmax) + 1));
  int rc = arkcos_kernel_window_error(k, b, lmax, e, lw, err);
  free(b);
  return rc;
}

int smooth_beam_window(const beam_opts *o, const beam_kernel *bk, const arkcos_kernel *k,
                       long lmax_opt, int verbose, const hpx_header *inputs, int n,
                       double *win) {
  const double cut = arkcos_kernel_cutoff(k) * 180 / PI;
  for (int i = 0; i < n; i++) {
    int seen = -1;
    for (int j = 0; j < i && seen < 0; j++)
      if (inputs[j].nside == inputs[i].nside) seen = j;
    if (seen >= 0) {
      win[i] = win[seen];
      continue;
    }
    const int64_t nside = inputs[i].nside;
    const int lmax = lmax_opt > 0 ? (int)lmax_opt : (int)(3 * nside - 1);
    arkcos_error err = {0, ""};
    int lw = 0;
    if (window_error(bk, k, lmax, &win[i], &lw, &err)) {
      fprintf(stderr, "arkcos smooth: %s: %s\n", o->file, err.msg);
      return exit_status_of(err.code);
    }
    char what[512];
    snprintf(what, sizeof what,
             "window error max |K_l - B_l/B_0| = %.2g at l = %d (l <= %d, nside %lld; B_l to l = %d), "
             "kernel cut at %.4g deg (K/K0 = %.2g there)",
             win[i], lw, lmax, (long long)nside, bk->lmax, cut, arkcos_kernel_cutoff_level(k));
    if (!(win[i] <= o->tolerance)) {
      fprintf(stderr,
              "arkcos smooth: %s: the beam cannot be made compact to --beam-tolerance %g at nside "
              "%lld: %s; a smaller --cutoff-rel cuts farther out (or raise --beam-tolerance)\n",
              o->file, o->tolerance, (long long)nside, what);
      return 2;
    }
    fprintf(stderr, "arkcos smooth: beam %s: %s%s\n", o->file, what,
            bk->min_rel < 0 ? "; negative lobes kept" : "");
    if (verbose)
      printf("window: %.3g (max |K_l - B_l/B_0|, l <= %d) at l = %d nside=%lld cutoff=%.4gdeg "
             "min_K/K0=%.3g\n",
             win[i], lmax, lw, (long long)nside, cut, bk->min_rel);
  }
  fflush(stdout);
  return 0;
}
