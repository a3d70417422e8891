/*
 * sweep_outputs.c -- the files of a finished case, recorded in its
 * "outputs" with paths relative to the run folder: the map (FITS), gnomonic
 * patches (text) and angular power spectra (text; their residual metrics
 * are computed by ref_compare_cl).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/common/mapio.h"
#include "harness/sweep/sweep.h"
#include "harness/common/util.h"
#include "harness/common/options.h"


/* The map of a case: one column, or Q_POLARISATION and U_POLARISATION for
 * a spin-2 case (map_u set), as healpy names them. */
static int write_map(run_ctx *c, const arkcos_geometry *g, const double *map,
                     const double *map_u, const char *slug, json_t *outj, arkcos_error *err) {
  char rel[600], path[8400];
  snprintf(path, sizeof path, "%s/maps", c->doc.dir);
  int rc = results_doc_mkdirs(path, err);
  snprintf(rel, sizeof rel, "maps/%s.fits", slug);
  snprintf(path, sizeof path, "%s/%s", c->doc.dir, rel);
  const double *maps[2] = {map, map_u};
  static const hpx_column qu[2] = {{"Q_POLARISATION", ""}, {"U_POLARISATION", ""}};
  if (!rc)
    rc = hpx_write_maps_ex(path, maps, map_u ? 2 : 1, g->nside, 0, c->cfg->outputs.maps_float32, 1,
                           map_u ? qu : NULL, NULL, err);
  if (rc) return rc;
  json_object_set_new(outj, "map", json_string(rel));
  return ARKCOS_OK;
}

static int write_patch(const char *dir, const char *rel, const double *img, int n,
                       double side, int logscale, arkcos_error *err) {
  char path[8400];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  return ref_patch_write_text(path, img, n, side, logscale, err);
}

/* What every patch of a case shares. */
typedef struct patch_job {
  run_ctx *c;
  const arkcos_geometry *g;
  const double *map, *ref; /* ref: NULL without a difference patch */
  double maxabs, rms_ref;
  const char *slug;
} patch_job;

/* Patch i: the map (log patches relative to the map's largest |value|,
 * Fig. 6) and, with a reference, the difference relative to the reference
 * map's rms (Fig. 4). */
static int one_patch(const patch_job *pj, int i, json_t *pl, arkcos_error *err) {
  const cfg_patch *pc = &pj->c->cfg->outputs.patches[i];
  int n = pc->n, rc;
  char rel[600];
  double *img = malloc((size_t)n * n * sizeof *img);
  double *rimg = pj->ref ? malloc((size_t)n * n * sizeof *rimg) : NULL;
  if (!img || (pj->ref && !rimg)) {
    free(img);
    free(rimg);
    return arkcos_fail(err, ARKCOS_ENOMEM, "patch: out of memory");
  }
  double phi = fmod(pc->phi_deg, 360.0), th = pc->theta_deg * DEG, side = pc->side_deg * DEG;
  if (phi < 0) phi += 360.0;
  json_t *pjj = json_object();
  json_object_set_new(pjj, "theta_deg", json_real(pc->theta_deg));
  json_object_set_new(pjj, "phi_deg", json_real(pc->phi_deg));
  json_object_set_new(pjj, "side_deg", json_real(pc->side_deg));
  json_object_set_new(pjj, "n", json_integer(n));
  json_object_set_new(pjj, "log", json_boolean(pc->log));
  json_array_append_new(pl, pjj);
  rc = ref_patch(pj->g, pj->map, th, phi * DEG, side, n, img, err);
  if (!rc && pj->ref) rc = ref_patch(pj->g, pj->ref, th, phi * DEG, side, n, rimg, err);
  if (!rc && pj->ref) {
    for (int64_t q = 0; q < (int64_t)n * n; q++)
      rimg[q] = pj->rms_ref > 0 ? (img[q] - rimg[q]) / pj->rms_ref : 0;
    snprintf(rel, sizeof rel, "patches/%s_p%d_diff.txt", pj->slug, i);
    rc = write_patch(pj->c->doc.dir, rel, rimg, n, side, pc->log, err);
    if (!rc) json_object_set_new(pjj, "diff", json_string(rel));
  }
  if (!rc) {
    if (pc->log && pj->maxabs > 0)
      for (int64_t q = 0; q < (int64_t)n * n; q++) img[q] /= pj->maxabs;
    snprintf(rel, sizeof rel, "patches/%s_p%d_map.txt", pj->slug, i);
    rc = write_patch(pj->c->doc.dir, rel, img, n, side, pc->log, err);
    if (!rc) json_object_set_new(pjj, "map", json_string(rel));
  }
  free(img);
  free(rimg);
  return rc;
}

/* The patches of one map (ref: the reference map of the same component, or
 * NULL), listed under `key` of the case's outputs. */
static int write_patches(run_ctx *c, const arkcos_geometry *g, int mi, const ref_state *rs,
                         const double *map, const double *ref, const char *slug,
                         const char *key, json_t *outj, arkcos_error *err) {
  char path[8400];
  snprintf(path, sizeof path, "%s/patches", c->doc.dir);
  int rc = results_doc_mkdirs(path, err);
  if (rc) return rc;
  json_t *pl = json_array();
  json_object_set_new(outj, key, pl);
  int with_diff = rs->available && ref && mi != c->cfg->reference;
  patch_job pj = {c, g, map, with_diff ? ref : NULL, 0, with_diff ? sweep_rms(ref, g->npix) : 0,
                  slug};
  for (int64_t p = 0; p < g->npix; p++)
    if (fabs(map[p]) > pj.maxabs) pj.maxabs = fabs(map[p]);
  for (int i = 0; i < c->cfg->outputs.npatches && !rc; i++) rc = one_patch(&pj, i, pl, err);
  return rc;
}

/* The reference spectrum up to lmax, cached in rs: exact, C_l of K_l a_lm
 * from the input's a_lm; else map2alm of the reference map. */
static int reference_cl(run_ctx *c, const arkcos_geometry *g, int ki, const input_state *in,
                        ref_state *rs, int lmax, double complex *alm, arkcos_error *err) {
  if (rs->cl && rs->cl_lmax == lmax) return ARKCOS_OK;
  free(rs->cl);
  rs->cl = calloc((size_t)lmax + 1, sizeof(double));
  rs->cl_lmax = lmax;
  if (!rs->cl) return arkcos_fail(err, ARKCOS_ENOMEM, "spectra: out of memory");
  int rc = ARKCOS_OK;
  if (c->cfg->reference == CFG_REF_EXACT) {
    double complex *sa = sweep_exact_alm(c, ki, in, err);
    double *clx = calloc((size_t)in->lmax + 1, sizeof(double));
    if (!sa || !clx)
      rc = sa ? arkcos_fail(err, ARKCOS_ENOMEM, "out of memory")
              : (err->code ? err->code : ARKCOS_ERUNTIME);
    if (!rc) {
      ref_alm2cl(in->lmax, sa, sa, clx);
      for (int l = 0; l <= lmax && l <= in->lmax; l++) rs->cl[l] = clx[l];
    }
    free(sa);
    free(clx);
  } else {
    rc = ref_map2alm(g, lmax, c->cfg->outputs.spectra_iter, rs->out.map, NULL, alm,
                     c->max_threads, err);
    if (!rc) ref_alm2cl(lmax, alm, alm, rs->cl);
  }
  if (rc) {
    free(rs->cl);
    rs->cl = NULL;
  }
  return rc;
}

/* C_l of (map - reference) into cl_d, and the residual metrics. */
static int difference_cl(run_ctx *c, const arkcos_geometry *g, const ref_state *rs,
                         const double *map, int lmax, double complex *alm, const double *cl_m,
                         double *cl_d, json_t *mj, arkcos_error *err) {
  double *diff = malloc((size_t)g->npix * sizeof(double));
  if (!diff) return arkcos_fail(err, ARKCOS_ENOMEM, "spectra: out of memory");
  for (int64_t p = 0; p < g->npix; p++) diff[p] = map[p] - rs->out.map[p];
  int rc = ref_map2alm(g, lmax, c->cfg->outputs.spectra_iter, diff, NULL, alm, c->max_threads,
                       err);
  free(diff);
  if (rc) return rc;
  ref_alm2cl(lmax, alm, alm, cl_d);
  ref_spectra_metrics sm;
  ref_compare_cl(lmax, cl_m, rs->cl, cl_d, &sm);
  if (sm.nl) {
    sweep_set_real(mj, "cl_resid_max", sm.max_rel_residual);
    sweep_set_real(mj, "cl_diff_max", sm.max_diff_ratio);
    json_object_set_new(mj, "cl_lmax", json_integer(lmax));
  }
  return ARKCOS_OK;
}

static int spectra_text(run_ctx *c, const char *rel, int lmax, const double *cl_m,
                        const double *cl_r, const double *cl_d, arkcos_error *err) {
  char path[8400];
  snprintf(path, sizeof path, "%s/%s", c->doc.dir, rel);
  size_t cap = (size_t)(lmax + 1) * 96 + 512;
  char *text = malloc(cap);
  if (!text) return arkcos_fail(err, ARKCOS_ENOMEM, "spectra: out of memory");
  size_t u = (size_t)snprintf(text, cap,
                              "# angular power spectra, lmax %d, map2alm with %d iterations\n"
                              "# columns: l  C_l(method map)  C_l(reference: %s)  "
                              "C_l(method - reference)\n",
                              lmax, c->cfg->outputs.spectra_iter,
                              !cl_d ? "none"
                              : c->cfg->reference == CFG_REF_EXACT ? "exact, from K_l a_lm"
                                                                   : "map2alm of the reference map");
  for (int l = 0; l <= lmax && u < cap; l++)
    u += (size_t)snprintf(text + u, cap - u, "%d %.10e %.10e %.10e\n", l, cl_m[l],
                          cl_d ? cl_r[l] : NAN, cl_d ? cl_d[l] : NAN);
  int rc = atomic_write_text(path, text, err);
  free(text);
  return rc;
}

/* Spectra: C_l of the method's map, of the reference (exact: of K_l a_lm;
 * else map2alm of the reference map, cached) and of the difference map, all
 * with `spectra_iter` iterations up to spectra_lmax_factor * nside. */
static int write_spectra(run_ctx *c, const arkcos_geometry *g, int ki, const input_state *in,
                         ref_state *rs, const double *map, const char *rel, json_t *mj,
                         arkcos_error *err) {
  int lmax = method_lmax(c->cfg->outputs.spectra_lmax_factor, g->nside);
  int with_ref = rs->available && rs->out.map;
  double complex *alm = malloc((size_t)ref_alm_size(lmax) * sizeof *alm);
  double *cl_m = calloc((size_t)lmax + 1, sizeof(double));
  double *cl_d = calloc((size_t)lmax + 1, sizeof(double));
  int rc = ARKCOS_OK;
  if (!alm || !cl_m || !cl_d) rc = arkcos_fail(err, ARKCOS_ENOMEM, "spectra: out of memory");
  if (!rc) rc = ref_map2alm(g, lmax, c->cfg->outputs.spectra_iter, map, NULL, alm,
                            c->max_threads, err);
  if (!rc) ref_alm2cl(lmax, alm, alm, cl_m);
  if (!rc && with_ref) rc = reference_cl(c, g, ki, in, rs, lmax, alm, err);
  if (!rc && with_ref) rc = difference_cl(c, g, rs, map, lmax, alm, cl_m, cl_d, mj, err);
  if (!rc) rc = spectra_text(c, rel, lmax, cl_m, rs->cl, with_ref ? cl_d : NULL, err);
  free(alm);
  free(cl_m);
  free(cl_d);
  return rc;
}

/* A spin-2 case: patches of Q ("patches", files ..._Q_p<i>_*.txt) and of U
 * ("patches_u"); its spectra would be EE and BB, which are not written: the
 * reason is recorded as "spectra_skipped". */
static int pol_patches_spectra(run_ctx *c, const arkcos_geometry *g, int mi, const ref_state *rs,
                               const method_out *o, const char *slug, json_t *outj,
                               arkcos_error *err) {
  char sq[600], su[600];
  snprintf(sq, sizeof sq, "%s_Q", slug);
  snprintf(su, sizeof su, "%s_U", slug);
  int rc = ARKCOS_OK;
  if (c->cfg->outputs.npatches) {
    rc = write_patches(c, g, mi, rs, o->map, rs->out.map, sq, "patches", outj, err);
    if (!rc) rc = write_patches(c, g, mi, rs, o->map_u, rs->out.map_u, su, "patches_u", outj, err);
  }
  if (!rc && c->cfg->outputs.spectra)
    json_object_set_new(outj, "spectra_skipped",
                        json_string("spin-2 (pol) case: its spectra are EE and BB, which the "
                                    "sweep does not compute; the scalar case has the TT spectra"));
  return rc;
}

/* Maps, patches and spectra of one finished case, recorded in "outputs"
 * with paths relative to the run folder. */
int sweep_write_outputs(run_ctx *c, const arkcos_geometry *g, int ki, int mi,
                        const input_state *in, ref_state *rs, const method_out *o,
                        const char *slug, json_t *cj, json_t *mj, arkcos_error *err) {
  const run_config *cfg = c->cfg;
  if (!o->map) return ARKCOS_OK; /* a sampled direct sum has no map */
  int want = cfg->outputs.maps || cfg->outputs.npatches || cfg->outputs.spectra;
  if (!want) return ARKCOS_OK;
  json_t *outj = json_object();
  json_object_set_new(cj, "outputs", outj);
  int rc = ARKCOS_OK;
  if (cfg->outputs.maps && (rc = write_map(c, g, o->map, o->map_u, slug, outj, err))) return rc;
  if (o->map_u) return pol_patches_spectra(c, g, mi, rs, o, slug, outj, err);
  if (cfg->outputs.npatches &&
      (rc = write_patches(c, g, mi, rs, o->map, rs->out.map, slug, "patches", outj, err)))
    return rc;
  if (cfg->outputs.spectra) {
    char rel[600], path[8400];
    snprintf(path, sizeof path, "%s/spectra", c->doc.dir);
    if ((rc = results_doc_mkdirs(path, err))) return rc;
    snprintf(rel, sizeof rel, "spectra/%s.txt", slug);
    if ((rc = write_spectra(c, g, ki, in, rs, o->map, rel, mj, err))) return rc;
    json_object_set_new(outj, "spectra", json_string(rel));
  }
  return ARKCOS_OK;
}
