/*
 * sweep_input.c -- the input map of a sweep, made once per nside and not
 * timed: a random field alm2map(a_lm) drawn from the CMB-like (or a given)
 * spectrum, point sources, or the FITS map of the config. A polarized
 * random input (input.pol) adds Q, U: the spin-2 alm2map of E and B a_lm
 * drawn from C_l^E = C_l / 25 and C_l^B = C_l^E / 10 (C_l the same spectrum
 * as the intensity's), so that I is the map of a scalar sweep.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/sweep/sweep.h"
#include "harness/common/options.h"


/* E and B power relative to the intensity's C_l: a CMB-like ratio (the EE
 * peaks are a few percent of TT) and a B well below E; the metrics are
 * relative, so only the E to B ratio shapes them. */
#define POL_E_SCALE (1.0 / 25)
#define POL_B_SCALE (1.0 / 10)
/* E and B are drawn from streams of their own, derived from the seed. */
#define POL_SEED_STEP 0x9E3779B97F4A7C15ULL

void sweep_input_free(input_state *in) {
  free(in->cl);
  free(in->alm);
  free(in->map);
  free(in->cl_e);
  free(in->alm_e);
  free(in->q);
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
  in->lmax = method_lmax(cfg->input.lmax_factor, g->nside);
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

/* Q, U of a polarized random input: E and B a_lm from C_l^E and C_l^B
 * (one allocation each for the two spectra, a_lm and maps). */
static int polarized_input(run_ctx *c, const arkcos_geometry *g, input_state *in,
                           arkcos_error *err) {
  if (in->lmax < 2)
    return arkcos_fail(err, ARKCOS_EINVAL, "polarized input: band limit %d is below l = 2 "
                       "(raise input.lmax_factor or nside)", in->lmax);
  const size_t nl = (size_t)in->lmax + 1, na = (size_t)ref_alm_size(in->lmax);
  in->cl_e = malloc(2 * nl * sizeof(double));
  in->alm_e = malloc(2 * na * sizeof(double complex));
  in->q = malloc(2 * (size_t)g->npix * sizeof(double));
  if (!in->cl_e || !in->alm_e || !in->q)
    return arkcos_fail(err, ARKCOS_ENOMEM, "polarized input: out of memory");
  in->cl_b = in->cl_e + nl;
  in->alm_b = in->alm_e + na;
  in->u = in->q + g->npix;
  for (size_t l = 0; l < nl; l++) {
    in->cl_e[l] = in->cl[l] * POL_E_SCALE;
    in->cl_b[l] = in->cl_e[l] * POL_B_SCALE;
  }
  uint64_t seed = c->cfg->input.seed;
  ref_alm_random(in->cl_e, in->lmax, seed + POL_SEED_STEP, in->alm_e);
  ref_alm_random(in->cl_b, in->lmax, seed + 2 * POL_SEED_STEP, in->alm_b);
  for (int l = 0; l < 2; l++) /* spin 2 has no l < 2 (a cl_file may give them) */
    for (int m = 0; m <= l; m++)
      in->alm_e[ref_alm_index(in->lmax, l, m)] = in->alm_b[ref_alm_index(in->lmax, l, m)] = 0;
  return ref_alm2map_spin2(g, in->lmax, in->alm_e, in->alm_b, in->q, in->u, c->max_threads, err);
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
    if (!rc && cfg->input.pol) rc = polarized_input(c, g, in, err);
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

double complex *sweep_exact_alm_spin2(const run_ctx *c, int ki, const input_state *in,
                                      arkcos_error *err) {
  const size_t na = (size_t)ref_alm_size(in->lmax);
  double *kl2 = malloc((size_t)(in->lmax + 1) * sizeof *kl2);
  double complex *alm = malloc(2 * na * sizeof *alm);
  int rc = !kl2 || !alm ? arkcos_fail(err, ARKCOS_ENOMEM, "out of memory")
                        : ref_kernel_legendre_spin2(c->kernels[ki], in->lmax, kl2, err);
  if (!rc) {
    memcpy(alm, in->alm_e, na * sizeof *alm);
    memcpy(alm + na, in->alm_b, na * sizeof *alm);
    ref_alm_scale(in->lmax, kl2, alm);
    ref_alm_scale(in->lmax, kl2, alm + na);
  }
  free(kl2);
  if (rc) {
    free(alm);
    return NULL;
  }
  return alm;
}
