/*
 * sweep_input.c -- the input map of a sweep, made once per nside and not
 * timed: a random field alm2map(a_lm) drawn from the CMB-like (or a given)
 * spectrum, point sources, or the FITS map of the config.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/sweep.h"

#define DEG (M_PI / 180.0)

void sweep_input_free(input_state *in) {
  free(in->cl);
  free(in->alm);
  free(in->map);
  memset(in, 0, sizeof *in);
}

ref_source *sweep_sources(const run_config *cfg) {
  ref_source *s = malloc((size_t)(cfg->input.nsources > 0 ? cfg->input.nsources : 1) * sizeof *s);
  if (!s) return NULL;
  for (int i = 0; i < cfg->input.nsources; i++) {
    s[i].theta = cfg->input.sources[i].theta_deg * DEG;
    double phi = fmod(cfg->input.sources[i].phi_deg, 360.0);
    if (phi < 0) phi += 360.0;
    s[i].phi = phi * DEG;
    s[i].amplitude = cfg->input.sources[i].amplitude;
  }
  return s;
}

/* A Gaussian random field up to lmax = lmax_factor * nside. */
static int random_input(run_ctx *c, const arkcos_geometry *g, input_state *in,
                        arkcos_error *err) {
  const run_config *cfg = c->cfg;
  in->lmax = config_lmax(cfg->input.lmax_factor, g->nside);
  in->cl = calloc((size_t)in->lmax + 1, sizeof(double));
  in->alm = malloc((size_t)ref_alm_size(in->lmax) * sizeof(double complex));
  if (!in->cl || !in->alm) return arkcos_fail(err, ARKCOS_ENOMEM, "input: out of memory");
  if (cfg->input.cl_file) {
    int rc = ref_cl_read(cfg->input.cl_file, in->lmax, in->cl, err);
    if (rc) return rc;
  } else {
    ref_cl_cmb(in->lmax, in->cl);
  }
  ref_alm_random(in->cl, in->lmax, cfg->input.seed, in->alm);
  return ref_alm2map(g, in->lmax, in->alm, in->map, c->max_threads, err);
}

int sweep_make_input(run_ctx *c, const arkcos_geometry *g, input_state *in,
                     arkcos_error *err) {
  if (in->ready) return ARKCOS_OK;
  const run_config *cfg = c->cfg;
  in->map = malloc((size_t)g->npix * sizeof(double));
  if (!in->map) return arkcos_fail(err, ARKCOS_ENOMEM, "input map: out of memory");
  int rc = ARKCOS_OK;
  if (cfg->input.type == CFG_INPUT_RANDOM) {
    rc = random_input(c, g, in, err);
  } else if (cfg->input.type == CFG_INPUT_POINT_SOURCES) {
    ref_source *s = sweep_sources(cfg);
    if (!s) return arkcos_fail(err, ARKCOS_ENOMEM, "input: out of memory");
    rc = ref_point_sources(g, s, cfg->input.nsources, in->map, err);
    free(s);
  } else {
    memcpy(in->map, c->fits_map, (size_t)g->npix * sizeof(double));
  }
  if (rc) return rc;
  in->ready = 1;
  return ARKCOS_OK;
}

double complex *sweep_exact_alm(const run_ctx *c, int ki, const input_state *in,
                                arkcos_error *err) {
  double *kl = malloc((size_t)(in->lmax + 1) * sizeof *kl);
  double complex *alm = malloc((size_t)ref_alm_size(in->lmax) * sizeof *alm);
  int rc = !kl || !alm ? arkcos_fail(err, ARKCOS_ENOMEM, "out of memory")
                       : arkcos_kernel_legendre(c->kernels[ki], in->lmax, kl, err);
  if (!rc) {
    memcpy(alm, in->alm, (size_t)ref_alm_size(in->lmax) * sizeof *alm);
    ref_alm_scale(in->lmax, kl, alm);
  }
  free(kl);
  if (rc) {
    free(alm);
    return NULL;
  }
  return alm;
}
