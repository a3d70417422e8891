/*
 * smoother_api.c -- `arkcos smooth` rebuilt on the public smoother API
 * alone (arkcos_smoother, arkcos.h) with the engine's own plans: the
 * tests/test_smoother_identity.sh check that the command, this program and
 * the Python package give the same bytes. Not a test by itself (not named
 * test_*).
 *
 *   smoother_api IN.fits OUT.fits [--fwhm-arcmin F | --tophat-deg R |
 *                --beam-file F | --kernel-file F] [--cutoff-rel E]
 *                [--cutoff-deg R] [--mask F] [--mask-mode M] [--min-weight W]
 *                [--precision P] [--mode M] [--accuracy E] [--threads N]
 *                [--normalize] [--pol] [--no-pol] [--write-weight]
 *
 * The maps are read and written with the command's FITS module; NESTED
 * files are handed to the library in NESTED order (spec.nested), so that
 * its reordering is what is compared.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"
#include "harness/common/beamio.h"
#include "harness/common/mapio.h"
#include "harness/smooth/smooth_mask.h"

#define PI 3.14159265358979323846
#define DEG (PI / 180.0)
#define ARCMIN (PI / (180.0 * 60.0))

static int fail(const char *what, const arkcos_error *err) {
  fprintf(stderr, "smoother_api: %s: %s\n", what, err ? err->msg : "");
  return 1;
}

static int is_stokes(const char *n, char x) {
  return toupper((unsigned char)n[0]) == x && (!n[1] || n[1] == '_');
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: smoother_api IN.fits OUT.fits [options]\n");
    return 2;
  }
  arkcos_smoother_spec spec;
  arkcos_smoother_spec_default(&spec);
  const char *mask_file = NULL, *beam_file = NULL, *kernel_file = NULL;
  int pol = 0, no_pol = 0, write_weight = 0, gaussian_harmonic = 0;
  double cutoff_rel = 0, cutoff_deg = 0;
  for (int i = 3; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    int val = 1;
    if (!strcmp(o, "--fwhm-arcmin")) spec.kernel.fwhm = atof(v) * ARCMIN;
    else if (!strcmp(o, "--tophat-deg")) spec.kernel.type = ARKCOS_KERNEL_TOPHAT, spec.kernel.cutoff = atof(v) * DEG;
    else if (!strcmp(o, "--beam-file")) beam_file = v;
    else if (!strcmp(o, "--kernel-file")) kernel_file = v;
    else if (!strcmp(o, "--cutoff-rel")) cutoff_rel = atof(v);
    else if (!strcmp(o, "--cutoff-deg")) cutoff_deg = atof(v);
    else if (!strcmp(o, "--mask")) mask_file = v;
    else if (!strcmp(o, "--mask-mode")) spec.mask_mode = strcmp(v, "zero") ? ARKCOS_MASK_NORMALIZE : ARKCOS_MASK_ZERO;
    else if (!strcmp(o, "--min-weight")) spec.min_weight = atof(v);
    else if (!strcmp(o, "--precision")) spec.options.precision = strcmp(v, "single") ? ARKCOS_DOUBLE : ARKCOS_SINGLE;
    else if (!strcmp(o, "--mode")) spec.options.mode = strcmp(v, "paper") ? ARKCOS_MODE_ENHANCED : ARKCOS_MODE_PAPER;
    else if (!strcmp(o, "--accuracy")) spec.options.accuracy = atof(v);
    else if (!strcmp(o, "--threads")) spec.options.threads = atoi(v);
    else if (!strcmp(o, "--quadrature")) spec.quadrature = !strcmp(v, "point")   ? ARKCOS_QUADRATURE_POINT
                                                          : !strcmp(v, "polar") ? ARKCOS_QUADRATURE_POLAR
                                                                                : ARKCOS_QUADRATURE_RING;
    else if (!strcmp(o, "--gaussian")) gaussian_harmonic = !strcmp(v, "harmonic");
    else {
      val = 0;
      if (!strcmp(o, "--normalize")) spec.normalize = 1;
      else if (!strcmp(o, "--pol")) pol = 1;
      else if (!strcmp(o, "--no-pol")) no_pol = 1;
      else if (!strcmp(o, "--write-weight")) write_weight = 1;
      else {
        fprintf(stderr, "smoother_api: unknown option %s\n", o);
        return 2;
      }
    }
    i += val;
  }
  arkcos_error err = {0, ""};
  hpx_header h;
  double **maps = NULL;
  int ncols = 0;
  int64_t nbad = 0;
  if (hpx_read_header(argv[1], &h, &err) || hpx_read_columns_missing(&h, &maps, &ncols, &nbad, &err))
    return fail(argv[1], &err);
  arkcos_kernel *k = NULL;
  double *bl = NULL;
  int lmax = 0;
  if (kernel_file) {
    k = arkcos_kernel_from_file(kernel_file, cutoff_deg * DEG, cutoff_rel, &err);
    if (!k) return fail(kernel_file, &err);
    spec.user_kernel = k;
  } else if (beam_file) {
    if (beam_read(beam_file, NULL, &bl, &lmax, &err)) return fail(beam_file, &err);
    spec.beam = bl;
    spec.beam_lmax = lmax;
    spec.kernel.cutoff_rel = cutoff_rel;
  } else {
    spec.kernel.cutoff_rel = cutoff_rel;
    if (cutoff_deg > 0) spec.kernel.cutoff = cutoff_deg * DEG;
    if (gaussian_harmonic && spec.kernel.type == ARKCOS_KERNEL_GAUSSIAN)
      spec.kernel.type = ARKCOS_KERNEL_GAUSSIAN_HARMONIC;
  }
  spec.nside = h.nside;
  spec.nested = h.nested;
  /* the Q, U pair by name (healpy's I_STOKES, Q_STOKES, U_STOKES) */
  int pq = -1, pu = -1, has_i = 0;
  for (int c = 0; c < ncols && !no_pol; c++) {
    char buf[HPX_NAME_LEN];
    const char *n = h.cols && h.cols[c].name[0] ? h.cols[c].name : hpx_standard_column_name(ncols, c, buf, sizeof buf);
    if (is_stokes(n, 'Q')) pq = c;
    if (is_stokes(n, 'U')) pu = c;
    has_i |= is_stokes(n, 'I') || is_stokes(n, 'T') || !strncmp(n, "TEMPERATURE", 11);
  }
  if (pq < 0 || pu < 0 || (!has_i && !pol)) pq = pu = -1;
  double *mask = NULL;
  if (mask_file) {
    hpx_header mh;
    double **mm = NULL;
    int mc = 1;
    int64_t mbad;
    if (hpx_read_header(mask_file, &mh, &err) || hpx_read_columns_missing(&mh, &mm, &mc, &mbad, &err))
      return fail(mask_file, &err);
    mask = mm[0];
    for (int c = 1; c < mc; c++) free(mm[c]);
    free(mm);
    hpx_header_free(&mh);
  }
  /* the library gets the file's order: NESTED maps (and mask) as NESTED */
  const int64_t npix = h.npix;
  double *tmp = malloc(sizeof *tmp * (size_t)npix);
  for (int c = 0; c < ncols + (mask != NULL) && h.nested; c++) {
    double *x = c < ncols ? maps[c] : mask;
    for (int64_t p = 0; p < npix; p++) tmp[p] = x[arkcos_healpix_nest2ring(h.nside, p)];
    memcpy(x, tmp, sizeof *x * (size_t)npix);
  }
  double **weights = write_weight ? calloc((size_t)ncols, sizeof *weights) : NULL;
  for (int c = 0; weights && c < ncols; c++) weights[c] = malloc(sizeof **weights * (size_t)npix);
  arkcos_smoother *s = arkcos_smoother_create(&spec, &err);
  if (!s) return fail("create", &err);
  const arkcos_smoother_maps m = {ncols, (const double *const *)maps, maps, weights, pq, pu, mask, NULL, NULL, 0};
  if (arkcos_smoother_execute(s, &m, &err)) return fail("execute", &err);
  for (int i = 0; i < arkcos_smoother_nwarnings(s); i++)
    fprintf(stderr, "smoother_api: warning: %s\n", arkcos_smoother_warning(s, i)->msg);
  /* back to RING for the writer, which writes the file's order */
  for (int c = 0; c < ncols * (1 + (weights != NULL)) && h.nested; c++) {
    double *x = c < ncols ? maps[c] : weights[c - ncols];
    for (int64_t p = 0; p < npix; p++) tmp[arkcos_healpix_nest2ring(h.nside, p)] = x[p];
    memcpy(x, tmp, sizeof *x * (size_t)npix);
  }
  mask_opts mo = {0};
  mo.write_weight = write_weight;
  const double **all = NULL;
  hpx_column *cols = NULL;
  int nall = 0;
  if (mask_file_columns(&mo, s, maps, weights, &h, &all, &cols, &nall, &err) ||
      hpx_write_maps_ex(argv[2], all, nall, h.nside, h.nested, h.is_float32, 1, cols, h.coordsys, &err))
    return fail(argv[2], &err);
  free(all);
  free(cols);
  arkcos_smoother_destroy(s);
  arkcos_kernel_destroy(k);
  free(bl);
  free(mask);
  free(tmp);
  hpx_free_maps(weights, weights ? ncols : 0);
  hpx_free_maps(maps, ncols);
  hpx_header_free(&h);
  return 0;
}
