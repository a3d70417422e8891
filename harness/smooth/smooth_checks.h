/*
 * smooth_checks.h -- `arkcos smooth` and kernels narrow against the pixels
 * or read from files (docs/NARROW_BEAMS.md): the options --normalize,
 * --allow-subpixel, --kernel-unit and --allow-negative (the narrow-kernel
 * rule and --normalize themselves are arkcos_smoother's, arkcos.h).
 * And the polarization of an input (docs/POLARIZATION.md): which of its
 * columns are Stokes Q and U, smoothed together as one spin-2 field, the
 * options --pol and --no-pol, and the options the spin-2 path cannot honour.
 * Kept apart from cmd_smooth.c, which calls these at its steps.
 */
#ifndef ARKCOS_HARNESS_SMOOTH_CHECKS_H
#define ARKCOS_HARNESS_SMOOTH_CHECKS_H

#include <stdint.h>

#include <jansson.h>

#include "arkcos/arkcos.h"
#include "harness/common/mapio.h"
#include "harness/common/method.h"

typedef struct narrow_opts {
  int normalize;          /* --normalize: out = A(m) / A(1) */
  int allow_subpixel;     /* --allow-subpixel (with --method direct) */
  int allow_negative;     /* --allow-negative (kernel files) */
  int has_unit;           /* --kernel-unit given */
  arkcos_angle_unit unit; /* --kernel-unit (default rad) */
} narrow_opts;

/* The usage lines of these options (for cmd_smooth's --help). */
extern const char smooth_checks_usage[];

/* The options from a parsed command line (the rows OPT_NORMALIZE,
 * OPT_ALLOW_SUBPIXEL, OPT_KERNEL_UNIT and OPT_ALLOW_NEGATIVE of options.h,
 * already checked there). */
void smooth_checks_read(narrow_opts *o, const json_t *vals);

/* Options that do not apply: --normalize with fsht, --allow-subpixel
 * without --method direct, --kernel-unit and --allow-negative without
 * --kernel-file. 0 or 2 (with the message). */
int smooth_checks_combinations(const narrow_opts *o, method_kind m, int has_kernel_file);

/* The kernel of --kernel-file with --kernel-unit and --allow-negative;
 * with negative lobes, "kernel has negative lobes: min K/K(0) = ..." on
 * stderr. NULL with err filled on failure. */
arkcos_kernel *smooth_checks_kernel_file(const narrow_opts *o, const char *path, double cutoff,
                                         double cutoff_rel, arkcos_error *err);

/* ---------------------------------------------------------- polarization */

typedef struct pol_opts {
  int pol;    /* --pol: Q and U as spin 2 also without an intensity column */
  int no_pol; /* --no-pol: every column an independent scalar */
} pol_opts;

/* The Stokes Q and U columns of one input that are smoothed as one spin-2
 * field P = Q + iU (0-based), or q = u = -1: every column is a scalar. */
typedef struct pol_columns {
  int q, u;
} pol_columns;

/* What the run asks of the method: the spin-2 path is enhanced mode,
 * double precision and the CPU only (arkcos.h, options.spin). */
typedef struct pol_request {
  method_kind method;
  arkcos_mode mode;
  arkcos_precision precision;
  arkcos_backend backend;
} pol_request;

/* The usage lines of --pol and --no-pol (for cmd_smooth's --help). */
extern const char smooth_checks_pol_usage[];

/* --pol and --no-pol from a parsed command line (OPT_SMOOTH_POL, OPT_NO_POL). */
void smooth_checks_pol_read(pol_opts *o, const json_t *vals);
/* --pol with --no-pol: 2 with the message, else 0. */
int smooth_checks_pol_combination(const pol_opts *o);

/* Column c's name as the output will have it: its TTYPE, or healpy's
 * standard name when it has none (TEMPERATURE, Q_POLARISATION, ...). */
const char *smooth_checks_column_name(const hpx_header *h, int c, char *buf, size_t len);

/* The Q and U columns of h, found by name (Q, Q_STOKES, Q_POLARISATION,
 * Q-POL, QPOL, any case; likewise U), anywhere in the table, into *pc.
 * Refused (2, with a message naming the file and the columns): a Q without
 * a U or the reverse, two of either, a Q and U pair without an intensity
 * column (I, I_STOKES, T, TEMPERATURE, ...) unless --pol or --no-pol, and a
 * spin-2 pair with --backend gpu, --precision single or --mode paper
 * (each message names the option). --no-pol: *pc = {-1, -1}, nothing
 * refused. Returns 0 or 2. */
int smooth_checks_polarization(const pol_opts *o, const pol_request *r, const hpx_header *h,
                               pol_columns *pc);

#endif
