/*
 * sweep_reference.c -- the reference of one (nside, kernel) and a case's
 * metrics against it. Every comparison is computed by reference/
 * (ref_compare, ref_compare_values, ref_ringing_by_region); this file
 * picks what is compared and records the numbers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/sweep/sweep.h"

void sweep_set_real(json_t *o, const char *key, double v) {
  if (isfinite(v)) json_object_set_new(o, key, json_real(v));
}

double sweep_rms(const double *v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += v[i] * v[i];
  return n ? sqrt(s / (double)n) : 0;
}

void sweep_ref_free(ref_state *r) {
  method_out_free(&r->out);
  free(r->cl);
  memset(r, 0, sizeof *r);
}

/* The exact Q, U of a polarized input: the spin-2 alm2map of K_l^(2) E_lm
 * and K_l^(2) B_lm. */
static int exact_map_spin2(run_ctx *c, const arkcos_geometry *g, int ki, const input_state *in,
                           ref_state *rs, arkcos_error *err) {
  rs->out.map_u = malloc((size_t)g->npix * sizeof(double));
  if (!rs->out.map_u) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  double complex *alm = sweep_exact_alm_spin2(c, ki, in, err);
  if (!alm) return err->code ? err->code : ARKCOS_ERUNTIME;
  int rc = ref_alm2map_spin2(g, in->lmax, alm, alm + ref_alm_size(in->lmax), rs->out.map,
                             rs->out.map_u, c->max_threads, err);
  free(alm);
  return rc;
}

/* The exact map alm2map(K_l a_lm) of the random input (spin 2: of E, B). */
static int exact_map(run_ctx *c, const arkcos_geometry *g, int ki, const input_state *in,
                     ref_state *rs, arkcos_error *err) {
  rs->out.map = malloc((size_t)g->npix * sizeof(double));
  if (!rs->out.map) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  if (c->spin == 2) return exact_map_spin2(c, g, ki, in, rs, err);
  double complex *alm = sweep_exact_alm(c, ki, in, err);
  if (!alm) return err->code ? err->code : ARKCOS_ERUNTIME;
  int rc = ref_alm2map(g, in->lmax, alm, rs->out.map, c->max_threads, err);
  free(alm);
  return rc;
}

/* The reference for one (nside, kernel): the exact map alm2map(K_l a_lm), or
 * the reference method's output (taken from its case when it ran in this
 * session, else computed once, untimed). */
void sweep_ensure_reference(run_ctx *c, const arkcos_geometry *g, int ki, input_state *in,
                            ref_state *rs) {
  if (rs->tried) return;
  rs->tried = 1;
  const run_config *cfg = c->cfg;
  arkcos_error err = {0, ""};
  if (cfg->reference == CFG_REF_NONE) {
    snprintf(rs->why, sizeof rs->why, "no reference configured");
    return;
  }
  if (sweep_make_input(c, g, in, &err)) {
    snprintf(rs->why, sizeof rs->why, "reference unavailable: %s", err.msg);
    return;
  }
  const cfg_method *m = cfg->reference >= 0 ? &cfg->methods[cfg->reference] : NULL;
  char why[900];
  const int skip = m ? sweep_skip_reason(c, m, g, c->kernels[ki], why, sizeof why) : 0;
  if (skip) {
    snprintf(rs->why, sizeof rs->why, "reference %s %s: %s", m->label, skip == 2 ? "failed" : "skipped",
             why);
    return;
  }
  int rc;
  if (!m) {
    rc = exact_map(c, g, ki, in, rs, &err);
  } else {
    timing t;
    const int pol = c->spin == 2;
    rc = sweep_run_method(m, g, c->kernels[ki], pol ? in->q : in->map, pol ? in->u : NULL,
                          c->max_threads, 1, 0, sweep_plan_memory_limit(c, m, g->nside), &t,
                          &rs->out, &err);
    timing_free(&t);
  }
  if (rc) {
    method_out_free(&rs->out);
    if (m)
      snprintf(rs->why, sizeof rs->why, "reference %s failed: %s", m->label, err.msg);
    else
      snprintf(rs->why, sizeof rs->why, "exact reference failed: %s", err.msg);
    return;
  }
  rs->available = 1;
}

static void put_metrics(json_t *mj, const ref_metrics *m) {
  static const char *const rn[REF_NREGIONS] = {"north", "belt", "south"};
  char key[64];
  sweep_set_real(mj, "frac_rms", m->frac_rms);
  sweep_set_real(mj, "max_rel", m->max_rel);
  for (int r = 0; r < REF_NREGIONS; r++) {
    snprintf(key, sizeof key, "frac_rms_%s", rn[r]);
    if (m->npix_region[r]) sweep_set_real(mj, key, m->frac_rms_region[r]);
  }
  for (int r = 0; r < REF_NREGIONS; r++) {
    snprintf(key, sizeof key, "max_rel_%s", rn[r]);
    if (m->npix_region[r]) sweep_set_real(mj, key, m->max_rel_region[r]);
  }
}

/* The value of output o at its i-th compared pixel pix[i] (comp 1: U). */
static double out_value(const method_out *o, const int64_t *pix, int64_t i, int comp) {
  if (o->map) return (comp ? o->map_u : o->map)[pix[i]];
  return (comp ? o->vals_u : o->vals)[i];
}

/* At least one side is sampled: compares at the common pixels (a prefix of
 * the larger sample, or the sample of a full map); spin 2 (o->map_u or
 * o->vals_u set) compares P = Q + iU. Returns the number of pixels (-1 if
 * out of memory) and the rms of the reference's (Q) values there. */
static int64_t compare_sampled(const arkcos_geometry *g, const method_out *o,
                               const method_out *r, ref_metrics *m, double *rms_b) {
  const int64_t *pix = o->map ? r->pix : o->pix;
  int64_t n = o->map ? r->n : r->map ? o->n : (o->n < r->n ? o->n : r->n);
  const int spin2 = o->map_u || o->vals_u;
  double *a = malloc(4 * (size_t)n * sizeof *a), *b = a + n, *au = b + n, *bu = au + n;
  if (!a) return -1;
  for (int64_t i = 0; i < n; i++) {
    a[i] = out_value(o, pix, i, 0);
    b[i] = out_value(r, pix, i, 0);
    if (spin2) au[i] = out_value(o, pix, i, 1), bu[i] = out_value(r, pix, i, 1);
  }
  if (spin2)
    ref_compare_values_spin2(g, pix, a, au, b, bu, n, m);
  else
    ref_compare_values(g, pix, a, b, n, m);
  *rms_b = sweep_rms(b, n);
  free(a);
  return n;
}

/* Compares a method's output with the reference (spin 2: P = Q + iU);
 * fills metrics and returns the rms of the reference (Q) values compared
 * (0 if none). */
static double compare_with_reference(const arkcos_geometry *g, const method_out *o,
                                     const ref_state *rs, json_t *mj) {
  ref_metrics m;
  int64_t n = 0;
  double rms_b = 0;
  if (o->map && rs->out.map) {
    if (o->map_u)
      ref_compare_spin2(g, o->map, o->map_u, rs->out.map, rs->out.map_u, &m);
    else
      ref_compare(g, o->map, rs->out.map, &m);
    n = g->npix;
    rms_b = sweep_rms(rs->out.map, g->npix);
  } else {
    n = compare_sampled(g, o, &rs->out, &m, &rms_b);
    if (n < 0) return 0; /* out of memory */
    json_object_set_new(mj, "sampled", json_true());
  }
  put_metrics(mj, &m);
  json_object_set_new(mj, "compared_pixels", json_integer(n));
  return rms_b;
}

/* Ringing around the point sources of the input, by region. */
static void put_ringing(const run_config *cfg, const arkcos_geometry *g, const double *map,
                        const arkcos_kernel *k, json_t *mj) {
  double belt = -1, cap = -1;
  ref_source *s = sweep_sources(cfg);
  if (s)
    ref_ringing_by_region(g, map, s, cfg->input.nsources, arkcos_kernel_cutoff(k), &belt,
                          &cap);
  free(s);
  if (belt >= 0) sweep_set_real(mj, "ringing_belt", belt);
  if (cap >= 0) sweep_set_real(mj, "ringing_cap", cap);
}

/* The "metrics" object of a finished case (added to cj and returned). */
json_t *sweep_metrics(run_ctx *c, const arkcos_geometry *g, int ki, input_state *in,
                      ref_state *rs, const method_out *mine, json_t *cj) {
  const run_config *cfg = c->cfg;
  const arkcos_kernel *k = c->kernels[ki];
  json_t *mj = json_object();
  json_object_set_new(cj, "metrics", mj);
  json_object_set_new(mj, "reference",
                      json_string(cfg->reference >= 0 ? cfg->methods[cfg->reference].label
                                  : cfg->reference == CFG_REF_EXACT ? "exact"
                                                                    : "none"));
  if (cfg->reference >= 0)
    json_object_set_new(mj, "reference_id", json_string(cfg->methods[cfg->reference].id));
  if (c->spin == 2) json_object_set_new(mj, "field", json_string("P = Q + iU"));
  sweep_ensure_reference(c, g, ki, in, rs);
  double rms_ref = 0;
  if (rs->available) {
    rms_ref = compare_with_reference(g, mine, rs, mj);
  } else {
    json_object_set_new(mj, "unavailable", json_string(rs->why));
    rms_ref = mine->map ? sweep_rms(mine->map, g->npix) : sweep_rms(mine->vals, mine->n);
  }
  /* Eq. (7) is the truncation error of a scalar field: left out for spin 2 */
  if (cfg->input.type == CFG_INPUT_RANDOM && rms_ref > 0 && c->spin != 2)
    sweep_set_real(mj, "truncation_rms_eq7",
                   arkcos_kernel_truncation_rms(k, in->cl, in->lmax) / rms_ref);
  if (cfg->input.type == CFG_INPUT_POINT_SOURCES && mine->map)
    put_ringing(cfg, g, mine->map, k, mj);
  return mj;
}
