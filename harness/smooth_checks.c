/* smooth_checks.c -- narrow kernels and kernel files in `arkcos smooth`
 * (smooth_checks.h, harness/narrow.h, docs/NARROW_BEAMS.md). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/narrow.h"
#include "harness/smooth_checks.h"
#include "harness/util.h"

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


/* --kernel-unit VALUE or --kernel-unit=VALUE */
static int parse_unit(int argc, char **argv, int *i, narrow_opts *o) {
  static const char *const names[] = {"rad", "deg", "arcmin"};
  const char *arg = argv[*i], *val = NULL;
  if (arg[13] == '=') val = arg + 14;
  else if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2)) val = argv[++*i];
  if (!val) return smooth_usage_error("--kernel-unit needs a value (rad, deg or arcmin)");
  if (o->has_unit) return smooth_usage_error("--kernel-unit given twice");
  o->has_unit = 1;
  for (int u = 0; u < 3; u++)
    if (!strcmp(val, names[u])) {
      o->unit = (arkcos_angle_unit)u;
      return 0;
    }
  return smooth_usage_error("--kernel-unit: unknown value '%s' (rad, deg or arcmin)", val);
}

int smooth_checks_parse(int argc, char **argv, int *i, narrow_opts *o, int *status) {
  const char *arg = argv[*i];
  *status = 0;
  if (!strcmp(arg, "--normalize")) o->normalize = 1;
  else if (!strcmp(arg, "--allow-subpixel")) o->allow_subpixel = 1;
  else if (!strcmp(arg, "--allow-negative")) o->allow_negative = 1;
  else if (!strncmp(arg, "--kernel-unit", 13) && (!arg[13] || arg[13] == '='))
    *status = parse_unit(argc, argv, i, o);
  else
    return 0;
  return 1;
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

/* One nside: refused (2), warned about, or fine (0). */
static int check_nside(const narrow_opts *o, method_kind m, const arkcos_kernel *k, double width,
                       int gaussian, const char *input, int64_t nside) {
  const double ppf = narrow_pixels_per_fwhm(width, nside);
  if (ppf >= NARROW_WARN) return 0;
  arkcos_error err = {0, ""};
  arkcos_geometry *g = arkcos_geometry_healpix(nside, &err);
  double lo = NAN, hi = NAN;
  if (!g || narrow_constant_range(g, k, &lo, &hi, &err)) lo = hi = NAN;
  arkcos_geometry_destroy(g);
  char msg[1024];
  if (ppf < NARROW_REFUSE && !(m == METHOD_DIRECT && o->allow_subpixel)) {
    narrow_refusal(width, gaussian, nside, lo, hi, msg, sizeof msg);
    fprintf(stderr, "arkcos smooth: %s: %s\n", input, msg);
    return 2;
  }
  if (ppf < NARROW_REFUSE) {
    char d[200];
    narrow_describe(width, gaussian, nside, d, sizeof d);
    fprintf(stderr, "arkcos smooth: warning: %s: the kernel is %s, below %g: the pixel sum "
            "(--allow-subpixel) is no smoothing; a constant map of 1 comes out between %.4g "
            "and %.4g%s\n", input, d, NARROW_REFUSE, lo, hi,
            o->normalize ? " before --normalize" : "");
    return 0;
  }
  narrow_warning(width, gaussian, nside, lo, hi, o->normalize, msg, sizeof msg);
  fprintf(stderr, "arkcos smooth: warning: %s: %s\n", input, msg);
  return 0;
}

int smooth_checks_sampling(const narrow_opts *o, method_kind m, const arkcos_kernel *k,
                           double width, int gaussian, const hpx_header *inputs, int n) {
  if (m == METHOD_FSHT) return 0;
  for (int i = 0; i < n; i++) {
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = inputs[j].nside == inputs[i].nside;
    if (seen) continue;
    int rc = check_nside(o, m, k, width, gaussian, inputs[i].path, inputs[i].nside);
    if (rc) return rc;
  }
  return 0;
}

int smooth_checks_weights(const narrow_opts *o, smoother *sm, int64_t npix, double **w,
                          arkcos_error *err) {
  *w = NULL;
  return o->normalize ? narrow_weights(sm, npix, w, err) : ARKCOS_OK;
}

void smooth_checks_normalize(const double *w, double *out, int64_t npix) {
  if (w) narrow_normalize(out, w, npix);
}
