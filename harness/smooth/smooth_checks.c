/* smooth_checks.c -- narrow kernels, kernel files and polarization columns
 * in `arkcos smooth` (smooth_checks.h, harness/common/narrow.h,
 * docs/NARROW_BEAMS.md, docs/POLARIZATION.md). */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "harness/common/narrow.h"
#include "harness/common/options.h"
#include "harness/smooth/smooth_checks.h"
#include "harness/common/util.h"

const char smooth_checks_usage[] =
    "Narrow kernels (docs/NARROW_BEAMS.md; arkcos and direct only, fsht does not\n"
    "sample the kernel on the pixels): below 1 pixel per FWHM (FWHM over the pixel\n"
    "size sqrt(4 pi / npix); the effective FWHM sqrt(4 ln 2 <alpha^2>) for top-hats\n"
    "and tables) the kernel is refused; below 2.5 a 'warning:' line gives the\n"
    "expected error against harmonic smoothing.\n"
    "  --normalize          divide by the kernel's discrete sum at each pixel,\n"
    "                       A(m) / A(1): a constant map stays exactly constant\n"
    "                       (arkcos and direct; costs one more smoothing per nside)\n"
    "  --allow-subpixel     with --method direct: compute the pixel sum of a kernel\n"
    "                       below 1 pixel per FWHM anyway\n"
    "Kernel files:\n"
    "  --kernel-unit U      unit of the file's angle column: rad (default), deg or\n"
    "                       arcmin\n"
    "  --allow-negative     accept negative K (a wavelet's lobes; the minimum of\n"
    "                       K/K(0) is reported)\n";


void smooth_checks_read(narrow_opts *o, const json_t *vals) {
  o->normalize = opt_bool(vals, OPT_NORMALIZE);
  o->allow_subpixel = opt_bool(vals, OPT_ALLOW_SUBPIXEL);
  o->allow_negative = opt_bool(vals, OPT_ALLOW_NEGATIVE);
  o->has_unit = opt_given(vals, OPT_KERNEL_UNIT);
  /* the row's choices rad|deg|arcmin are arkcos_angle_unit's order */
  const int u = opt_choice(vals, OPT_KERNEL_UNIT);
  o->unit = u == 1 ? ARKCOS_ANGLE_DEG : u == 2 ? ARKCOS_ANGLE_ARCMIN : ARKCOS_ANGLE_RAD;
}

int smooth_checks_combinations(const narrow_opts *o, method_kind m, int has_kernel_file) {
  if (o->normalize && m == METHOD_FSHT)
    return smooth_usage_error("--normalize applies only to --method arkcos or direct, not fsht (harmonic "
               "smoothing keeps a constant map constant by construction)");
  if (o->allow_subpixel && m != METHOD_DIRECT)
    return smooth_usage_error("--allow-subpixel applies only to --method direct, not %s (the pixel sum of "
               "a kernel narrower than a pixel must be asked for explicitly)", method_name(m));
  if (o->has_unit && !has_kernel_file)
    return smooth_usage_error("--kernel-unit applies only to --kernel-file");
  if (o->allow_negative && !has_kernel_file)
    return smooth_usage_error("--allow-negative applies only to --kernel-file");
  return 0;
}

/* min over [0, cutoff] of K / K(0), on 100000 points. */
static double min_relative(const arkcos_kernel *k) {
  const double c = arkcos_kernel_cutoff(k), k0 = arkcos_kernel_value(k, 0);
  double lo = 1;
  for (int i = 0; i <= 100000; i++) lo = fmin(lo, arkcos_kernel_value(k, c * i / 100000) / k0);
  return lo;
}

arkcos_kernel *smooth_checks_kernel_file(const narrow_opts *o, const char *path, double cutoff,
                                         double cutoff_rel, arkcos_error *err) {
  arkcos_kernel_file_options fo = {0};
  fo.unit = o->unit;
  fo.allow_negative = o->allow_negative;
  fo.cutoff = cutoff;
  fo.cutoff_rel = cutoff_rel;
  fo.unit_name = "--kernel-unit";
  fo.allow_negative_name = "--allow-negative";
  arkcos_kernel *k = arkcos_kernel_from_file_ex(path, &fo, err);
  if (k && o->allow_negative) {
    double lo = min_relative(k);
    if (lo < 0) fprintf(stderr, "arkcos smooth: %s: kernel has negative lobes: min K/K(0) = %.4g\n",
                        path, lo);
  }
  return k;
}

/* ---------------------------------------------------------- polarization */

const char smooth_checks_pol_usage[] =
    "Polarization (docs/POLARIZATION.md): columns named as healpy and Planck name\n"
    "Stokes Q and U (Q, Q_STOKES, Q_POLARISATION, ...; columns without a name take\n"
    "healpy's standard names), in any position, are smoothed together as one\n"
    "spin-2 field P = Q + iU with parallel transport, as healpy.smoothing(pol=True);\n"
    "the intensity and every other column as scalars. With a mask or missing\n"
    "pixels: Q', U' = S2(w P) / S0(w) (normalize) or S2(w P) (zero), P missing\n"
    "where Q or U is. The spin-2 path is double precision, enhanced mode, CPU and\n"
    "exact against the spin-2 direct sum; with Q and U, --backend gpu, --precision\n"
    "single and --mode paper are refused (--backend auto runs Q and U on the CPU),\n"
    "and --accuracy applies to the scalar columns only (Q and U stay exact).\n"
    "  --pol                also smooth a file with Q and U but no intensity column\n"
    "                       (e.g. healpy's write_map([q, u])) as spin 2; without it\n"
    "                       (or --no-pol) such a file is refused\n"
    "  --no-pol             smooth every column, Q and U too, as an independent\n"
    "                       scalar (wrong for Q and U where the local frame turns:\n"
    "                       up to 20% near the poles)\n";

void smooth_checks_pol_read(pol_opts *o, const json_t *vals) {
  o->pol = opt_bool(vals, OPT_SMOOTH_POL);
  o->no_pol = opt_bool(vals, OPT_NO_POL);
}

int smooth_checks_pol_combination(const pol_opts *o) {
  if (o->pol && o->no_pol)
    return smooth_usage_error("give either --pol (Q and U as one spin-2 field) or --no-pol (every "
                              "column a scalar), not both");
  return 0;
}

const char *smooth_checks_column_name(const hpx_header *h, int c, char *buf, size_t len) {
  if (h->cols && h->cols[c].name[0]) return h->cols[c].name;
  return hpx_standard_column_name(h->ncols, c, buf, len);
}

/* Whether column name n is Stokes x as healpy and Planck name it: "Q",
 * "Q_POLARISATION", "Q_STOKES", "Q-POL", "QPOL", any case (not "QQ_COV"). */
static int is_stokes(const char *n, char x) {
  if (toupper((unsigned char)n[0]) != x) return 0;
  return !n[1] || n[1] == '_' || n[1] == '-' || !strncasecmp(n + 1, "POL", 3);
}

/* An intensity column: I, I_STOKES, T, TEMPERATURE, ... */
static int is_intensity(const char *n) {
  return is_stokes(n, 'I') || is_stokes(n, 'T') || !strncasecmp(n, "TEMPERATURE", 11);
}

/* Whether the engine takes Q and U as one spin-2 field with the options
 * asked for (arkcos_options_check: the engine decides); 0, or 2 with its
 * reason, naming the flag whose setting it refuses: the first (in the
 * engine's order: mode, precision, backend) whose default changes the
 * verdict. */
static int check_pol_request(const pol_request *r, const char *path, const char *qn,
                             const char *un) {
  if (r->method != METHOD_ARKCOS) return 0;
  arkcos_options o;
  arkcos_options_default(&o);
  o.spin = 2;
  o.mode = r->mode;
  o.precision = r->precision;
  o.backend = r->backend;
  arkcos_error err = {0, ""}, e2;
  if (arkcos_options_check(&o, &err) == 0) return 0;
  char opt[40] = "";
  for (int which = 0; which < 3 && !opt[0]; which++) {
    arkcos_options t = o;
    if (which == 0 && o.mode != ARKCOS_MODE_ENHANCED) t.mode = ARKCOS_MODE_ENHANCED;
    else if (which == 1 && o.precision != ARKCOS_DOUBLE) t.precision = ARKCOS_DOUBLE;
    else if (which == 2 && o.backend != ARKCOS_BACKEND_AUTO) t.backend = ARKCOS_BACKEND_AUTO;
    else continue;
    e2.code = 0;
    e2.msg[0] = 0;
    if (arkcos_options_check(&t, &e2) != 0 && !strcmp(e2.msg, err.msg)) continue;
    snprintf(opt, sizeof opt, "%s: ",
             which == 0   ? "--mode paper"
             : which == 1 ? "--precision single"
             : o.backend == ARKCOS_BACKEND_GPU ? "--backend gpu"
                                               : "--backend cpu");
  }
  const char *why = strncmp(err.msg, "plan: ", 6) ? err.msg : err.msg + 6;
  fprintf(stderr,
          "arkcos smooth: %s%s: columns %s and %s are Stokes Q and U, smoothed as one spin-2 field, "
          "which the engine refuses: %s (--no-pol smooths them as independent scalars, which is "
          "wrong where the local frame turns)\n",
          opt, path, qn, un, why);
  return 2;
}

/* The Q and U columns of h into q, u (-1 if none); 2 with a message when
 * there are two of either. */
static int find_stokes(const hpx_header *h, int *q, int *u, int *has_i) {
  *q = *u = -1;
  *has_i = 0;
  for (int c = 0; c < h->ncols; c++) {
    char buf[HPX_NAME_LEN], prev[HPX_NAME_LEN];
    const char *n = smooth_checks_column_name(h, c, buf, sizeof buf);
    *has_i |= is_intensity(n);
    for (int k = 0; k < 2; k++) {
      int *x = k ? u : q;
      if (!is_stokes(n, k ? 'U' : 'Q')) continue;
      if (*x >= 0) {
        fprintf(stderr,
                "arkcos smooth: %s: two Stokes %c columns, %s and %s: cannot tell which one pairs "
                "with %c (--no-pol smooths every column as an independent scalar)\n",
                h->path, k ? 'U' : 'Q', smooth_checks_column_name(h, *x, prev, sizeof prev), n,
                k ? 'Q' : 'U');
        return 2;
      }
      *x = c;
    }
  }
  return 0;
}

int smooth_checks_polarization(const pol_opts *o, const pol_request *r, const hpx_header *h,
                               pol_columns *pc) {
  pc->q = pc->u = -1;
  if (o->no_pol) return 0;
  int q, u, has_i;
  if (find_stokes(h, &q, &u, &has_i)) return 2;
  char qb[HPX_NAME_LEN], ub[HPX_NAME_LEN];
  const char *qn = q >= 0 ? smooth_checks_column_name(h, q, qb, sizeof qb) : "";
  const char *un = u >= 0 ? smooth_checks_column_name(h, u, ub, sizeof ub) : "";
  if (q < 0 && u < 0) return 0;
  if (q < 0 || u < 0) {
    fprintf(stderr,
            "arkcos smooth: %s: column %s is Stokes %c but there is no %c column to make a spin-2 "
            "field with; --no-pol smooths every column as an independent scalar\n",
            h->path, q >= 0 ? qn : un, q >= 0 ? 'Q' : 'U', q >= 0 ? 'U' : 'Q');
    return 2;
  }
  if (!has_i && !o->pol) {
    fprintf(stderr,
            "arkcos smooth: %s: columns %s and %s are Stokes Q and U, with no intensity column: "
            "give --pol to smooth them as one spin-2 field (parallel transport, as "
            "healpy.smoothing(pol=True) does), or --no-pol to smooth every column as an "
            "independent scalar\n",
            h->path, qn, un);
    return 2;
  }
  if (check_pol_request(r, h->path, qn, un)) return 2;
  pc->q = q;
  pc->u = u;
  return 0;
}
