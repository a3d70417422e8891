/*
 * narrow_beams.c -- measures what sampling a narrow kernel on the pixels
 * costs (docs/NARROW_BEAMS.md, the table in harness/common/narrow.c). Not a test.
 *
 * usage: narrow_beams [--nside N]... [--ppf P]... [--tophat] [--cmb] [--direct]
 *
 * For each nside (default 64 and 256) and pixels per FWHM P (default 1,
 * 1.25, 1.5, 2, 2.5, 3, 4, 6, 8): a Gaussian of FWHM P pixels cut at 1e-5
 * of its peak (--tophat: a top-hat of the same effective width,
 * harness/common/narrow.h). The input is alm2map of random a_lm (seed 1) with a
 * white spectrum, C_l = 1 for 1 <= l <= 2 nside (--cmb: the built-in
 * CMB-like spectrum, l <= 2 nside); the reference is libsharp smoothing
 * (lmax 3 nside - 1, iter 3, as healpy.smoothing) and the exact field
 * alm2map(K_l a_lm). Prints one Markdown row per case:
 *   nside | P | rms(arkcos - fsht)/rms(fsht) | the same with --normalize |
 *   rms(arkcos - exact)/rms(exact) | the same with --normalize |
 *   min, max of a smoothed constant map of 1 | rms(fsht - exact)/rms(exact) |
 *   [--direct: max |arkcos - direct| / rms(direct)]
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"
#include "harness/common/method.h"
#include "harness/common/narrow.h"
#include "reference/reference.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

typedef struct maps {
  int64_t nside, npix;
  int lband;
  arkcos_geometry *g;
  double complex *alm;
  double *in;
} maps;

static int fail(const arkcos_error *e) {
  fprintf(stderr, "narrow_beams: %s\n", e->msg[0] ? e->msg : "out of memory");
  return 1;
}

/* The random white input of one nside. */
static int make_input(maps *m, int64_t nside, int cmb, arkcos_error *e) {
  memset(m, 0, sizeof *m);
  m->nside = nside;
  m->npix = 12 * nside * nside;
  m->lband = (int)(2 * nside);
  if (!(m->g = arkcos_geometry_healpix(nside, e))) return 1;
  double *cl = calloc((size_t)m->lband + 1, sizeof *cl);
  m->alm = malloc(sizeof *m->alm * (size_t)ref_alm_size(m->lband));
  m->in = malloc(sizeof *m->in * (size_t)m->npix);
  if (!cl || !m->alm || !m->in) return arkcos_fail(e, ARKCOS_ENOMEM, "out of memory");
  if (cmb) ref_cl_cmb(m->lband, cl);
  else
    for (int l = 1; l <= m->lband; l++) cl[l] = 1;
  ref_alm_random(cl, m->lband, 1, m->alm);
  free(cl);
  return ref_alm2map(m->g, m->lband, m->alm, m->in, 0, e);
}

static arkcos_kernel *make_kernel(const maps *m, double ppf, int tophat, arkcos_error *e) {
  arkcos_kernel_spec s = {0};
  double w = ppf * narrow_pixel_size(m->nside);
  if (tophat) {
    s.type = ARKCOS_KERNEL_TOPHAT;
    s.cutoff = w / sqrt(2 * log(2.0)); /* effective width 1.18 R (flat sky) */
  } else {
    s.type = ARKCOS_KERNEL_GAUSSIAN;
    s.fwhm = w;
    s.cutoff_rel = 1e-5;
  }
  return arkcos_kernel_create(&s, e);
}

/* The exact smoothed field alm2map(K_l a_lm). */
static int exact_map(const maps *m, const arkcos_kernel *k, double *out, arkcos_error *e) {
  double *kl = malloc(sizeof *kl * ((size_t)m->lband + 1));
  double complex *a = malloc(sizeof *a * (size_t)ref_alm_size(m->lband));
  int rc = !kl || !a ? arkcos_fail(e, ARKCOS_ENOMEM, "out of memory")
                     : arkcos_kernel_legendre(k, m->lband, kl, e);
  if (!rc) {
    memcpy(a, m->alm, sizeof *a * (size_t)ref_alm_size(m->lband));
    ref_alm_scale(m->lband, kl, a);
    rc = ref_alm2map(m->g, m->lband, a, out, 0, e);
  }
  free(kl);
  free(a);
  return rc;
}

static smoother *make_smoother(const maps *m, const arkcos_kernel *k, method_kind kind,
                               arkcos_error *e) {
  method_spec s;
  method_spec_default(&s);
  s.kind = kind;
  s.arkcos.backend = ARKCOS_BACKEND_CPU;
  s.lmax = (int)(3 * m->nside - 1);
  s.iter = 3;
  return smoother_create(&s, m->g, k, e);
}

static double frac_rms(const maps *m, const double *a, const double *b) {
  ref_metrics r;
  ref_compare(m->g, a, b, &r);
  return r.frac_rms;
}

/* One row: the Markdown line described above. */
static int one_case(const maps *m, double ppf, int tophat, int direct, arkcos_error *e) {
  arkcos_kernel *k = make_kernel(m, ppf, tophat, e);
  if (!k) return 1;
  size_t bytes = sizeof(double) * (size_t)m->npix;
  double *ark = malloc(bytes), *fsht = malloc(bytes), *ex = malloc(bytes), *w = NULL;
  smoother *sa = make_smoother(m, k, METHOD_ARKCOS, e), *sf = NULL;
  int rc = !ark || !fsht || !ex ? arkcos_fail(e, ARKCOS_ENOMEM, "out of memory") : !sa;
  if (!rc) rc = smoother_apply(sa, m->in, ark, e);
  if (!rc) rc = narrow_weights(sa, m->npix, &w, e);
  if (!rc && !(sf = make_smoother(m, k, METHOD_FSHT, e))) rc = 1;
  if (!rc) rc = smoother_apply(sf, m->in, fsht, e);
  if (!rc) rc = exact_map(m, k, ex, e);
  if (!rc) {
    double lo = HUGE_VAL, hi = -HUGE_VAL;
    for (int64_t p = 0; p < m->npix; p++) {
      lo = fmin(lo, w[p]);
      hi = fmax(hi, w[p]);
    }
    double raw = frac_rms(m, ark, fsht), rawx = frac_rms(m, ark, ex);
    double floor_ = frac_rms(m, fsht, ex);
    narrow_normalize(ark, w, m->npix);
    double nrm = frac_rms(m, ark, fsht), nrmx = frac_rms(m, ark, ex);
    double width = narrow_kernel_width(k, tophat ? 0 : ppf * narrow_pixel_size(m->nside));
    printf("| %lld | %.2f | %.2e | %.2e | %.2e | %.2e | %.5f | %.5f | %.1e |",
           (long long)m->nside, narrow_pixels_per_fwhm(width, m->nside), raw, nrm, rawx, nrmx,
           lo, hi, floor_);
    if (direct) {
      smoother *sd = make_smoother(m, k, METHOD_DIRECT, e);
      rc = !sd || smoother_apply(sd, m->in, fsht, e);
      for (int64_t p = 0; !rc && p < m->npix; p++) ark[p] *= w[p]; /* undo --normalize */
      ref_metrics r;
      if (!rc) ref_compare(m->g, ark, fsht, &r);
      if (!rc) printf(" %.1e |", r.max_rel);
      smoother_destroy(sd);
    }
    printf("\n");
    fflush(stdout);
  }
  smoother_destroy(sa);
  smoother_destroy(sf);
  arkcos_kernel_destroy(k);
  free(ark);
  free(fsht);
  free(ex);
  free(w);
  return rc;
}

int main(int argc, char **argv) {
  int64_t nsides[16] = {64, 256};
  double ppfs[32] = {1, 1.25, 1.5, 2, 2.5, 3, 4, 6, 8};
  int nn = 0, np = 0, tophat = 0, direct = 0, cmb = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--nside") && i + 1 < argc && nn < 16) nsides[nn++] = atol(argv[++i]);
    else if (!strcmp(argv[i], "--ppf") && i + 1 < argc && np < 32) ppfs[np++] = atof(argv[++i]);
    else if (!strcmp(argv[i], "--tophat")) tophat = 1;
    else if (!strcmp(argv[i], "--direct")) direct = 1;
    else if (!strcmp(argv[i], "--cmb")) cmb = 1;
    else {
      fprintf(stderr, "usage: narrow_beams [--nside N]... [--ppf P]... [--tophat] [--cmb] "
                      "[--direct]\n");
      return 2;
    }
  }
  if (!nn) nn = 2;
  if (!np) np = 9;
  printf("| nside | pixels/FWHM | vs fsht | vs fsht, --normalize | vs exact | vs exact, "
         "--normalize | constant min | constant max | fsht vs exact |%s\n"
         "|---|---|---|---|---|---|---|---|---|%s\n",
         direct ? " arkcos vs direct (max) |" : "", direct ? "---|" : "");
  arkcos_error e = {0, ""};
  for (int a = 0; a < nn; a++) {
    maps m;
    if (make_input(&m, nsides[a], cmb, &e)) return fail(&e);
    for (int b = 0; b < np; b++)
      if (one_case(&m, ppfs[b], tophat, direct, &e)) return fail(&e);
    arkcos_geometry_destroy(m.g);
    free(m.alm);
    free(m.in);
  }
  return 0;
}
