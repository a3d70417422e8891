/*
 * smooth_checks.h -- `arkcos smooth` and kernels narrow against the pixels
 * or read from files (docs/NARROW_BEAMS.md): the options --normalize,
 * --allow-subpixel, --kernel-unit and --allow-negative, the sampling check
 * of every input's nside, and the weight map that --normalize divides by.
 * Kept apart from cmd_smooth.c, which calls these at its steps.
 */
#ifndef ARKCOS_HARNESS_SMOOTH_CHECKS_H
#define ARKCOS_HARNESS_SMOOTH_CHECKS_H

#include <stdint.h>

#include "arkcos/arkcos.h"
#include "harness/mapio.h"
#include "harness/method.h"

typedef struct narrow_opts {
  int normalize;          /* --normalize: out = A(m) / A(1) */
  int allow_subpixel;     /* --allow-subpixel (with --method direct) */
  int allow_negative;     /* --allow-negative (kernel files) */
  int has_unit;           /* --kernel-unit given */
  arkcos_angle_unit unit; /* --kernel-unit (default rad) */
} narrow_opts;

/* The usage lines of these options (for cmd_smooth's --help). */
extern const char smooth_checks_usage[];

/* argv[*i] if it is one of these options: returns 1 (taken; *i advanced
 * past a separate value) with *status 0, or 2 after an error message;
 * returns 0 if it is not one of them. */
int smooth_checks_parse(int argc, char **argv, int *i, narrow_opts *o, int *status);

/* Options that do not apply: --normalize with fsht, --allow-subpixel
 * without --method direct, --kernel-unit and --allow-negative without
 * --kernel-file. 0 or 2 (with the message). */
int smooth_checks_combinations(const narrow_opts *o, method_kind m, int has_kernel_file);

/* The kernel of --kernel-file with --kernel-unit and --allow-negative;
 * with negative lobes, "kernel has negative lobes: min K/K(0) = ..." on
 * stderr. NULL with err filled on failure. */
arkcos_kernel *smooth_checks_kernel_file(const narrow_opts *o, const char *path, double cutoff,
                                         double cutoff_rel, arkcos_error *err);

/* The sampling of the kernel (width: narrow_kernel_width) on each input's
 * nside, once per nside, for the pixel-space methods: exit status 2 with
 * the figure and why below 1 pixel per FWHM (unless --method direct
 * --allow-subpixel, then a warning), a "warning:" line with the expected
 * error below 2.5. Returns 0 or 2. */
int smooth_checks_sampling(const narrow_opts *o, method_kind m, const arkcos_kernel *k,
                           double width, int gaussian, const hpx_header *inputs, int n);

/* --normalize: *w = A(1) for the smoother's geometry (npix values), else
 * *w = NULL. 0 or an error code with err filled. */
int smooth_checks_weights(const narrow_opts *o, smoother *sm, int64_t npix, double **w,
                          arkcos_error *err);
/* out /= w where w is not NULL. */
void smooth_checks_normalize(const double *w, double *out, int64_t npix);

#endif
