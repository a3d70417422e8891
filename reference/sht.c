/*
 * sht.c -- spherical harmonic transforms through libsharp, and FSHT
 * smoothing: a_lm = map2alm(r) with Jacobi iterations, s_lm = K_l a_lm,
 * s = alm2map(s_lm).
 *
 * The libsharp geometry is built from our ring list, so the transforms see
 * exactly the pixels the engine and the direct sum see. The map2alm
 * quadrature weight of a ring is its pixel solid angle (4 pi / npix on
 * HEALPix, as libsharp's own HEALPix helper uses), times the optional
 * HEALPix ring-weight factor 1 + w.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fitsio.h>
#include <libsharp/sharp.h>
#include <libsharp/sharp_almhelpers.h>
#include <libsharp/sharp_geomhelpers.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "reference/reference.h"

int64_t ref_alm_size(int lmax) {
  if (lmax < 0) return 0;
  return (int64_t)(lmax + 1) * (lmax + 2) / 2;
}

/* libsharp objects for one geometry and band limit. */
typedef struct {
  sharp_geom_info *geom;
  sharp_alm_info *alm;
} sht_setup;

static int sht_setup_make(sht_setup *s, const arkcos_geometry *g, int lmax,
                          const double *ring_weights, arkcos_error *err) {
  s->geom = NULL;
  s->alm = NULL;
  if (!g || g->nrings < 1 || !g->rings)
    return arkcos_fail(err, ARKCOS_EINVAL, "SHT: missing geometry");
  if (lmax < 0)
    return arkcos_fail(err, ARKCOS_EINVAL, "SHT: lmax %d must be >= 0", lmax);
  int n = g->nrings;
  int *nph = malloc((size_t)n * sizeof *nph);
  int *stride = malloc((size_t)n * sizeof *stride);
  ptrdiff_t *ofs = malloc((size_t)n * sizeof *ofs);
  double *phi0 = malloc((size_t)n * sizeof *phi0);
  double *theta = malloc((size_t)n * sizeof *theta);
  double *wgt = malloc((size_t)n * sizeof *wgt);
  int rc = ARKCOS_OK;
  if (!nph || !stride || !ofs || !phi0 || !theta || !wgt) {
    rc = arkcos_fail(err, ARKCOS_ENOMEM, "SHT: out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    const arkcos_ring *r = &g->rings[i];
    if (r->nph < 1 || r->nph > INT_MAX) {
      rc = arkcos_fail(err, ARKCOS_EINVAL,
                       "SHT: ring %d has %lld pixels (libsharp takes 1..%d)",
                       i, (long long)r->nph, INT_MAX);
      goto done;
    }
    if (ring_weights && !(ring_weights[i] == ring_weights[i])) {
      rc = arkcos_fail(err, ARKCOS_EINVAL, "SHT: ring weight %d is NaN", i);
      goto done;
    }
    nph[i] = (int)r->nph;
    stride[i] = 1;
    ofs[i] = (ptrdiff_t)r->ofs;
    phi0[i] = r->phi0;
    theta[i] = r->theta;
    wgt[i] = r->weight * (ring_weights ? ring_weights[i] : 1.0);
  }
  sharp_make_geom_info(n, nph, ofs, stride, phi0, theta, wgt, &s->geom);
  sharp_make_triangular_alm_info(lmax, lmax, 1, &s->alm);
  if (!s->geom || !s->alm) {
    rc = arkcos_fail(err, ARKCOS_ERUNTIME, "SHT: libsharp set-up failed");
    if (s->geom) sharp_destroy_geom_info(s->geom);
    if (s->alm) sharp_destroy_alm_info(s->alm);
    s->geom = NULL;
    s->alm = NULL;
  }
done:
  free(nph);
  free(stride);
  free(ofs);
  free(phi0);
  free(theta);
  free(wgt);
  return rc;
}

static void sht_setup_free(sht_setup *s) {
  if (s->geom) sharp_destroy_geom_info(s->geom);
  if (s->alm) sharp_destroy_alm_info(s->alm);
}

/* libsharp parallelises with OpenMP on the calling thread's settings. */
static int threads_push(int threads) {
#ifdef _OPENMP
  int old = omp_get_max_threads();
  if (threads > 0) omp_set_num_threads(threads);
  return old;
#else
  (void)threads;
  return 1;
#endif
}

static void threads_pop(int old) {
#ifdef _OPENMP
  omp_set_num_threads(old);
#else
  (void)old;
#endif
}

static void sht_alm2map(const sht_setup *s, const double complex *alm,
                        double *map) {
  void *almp[1] = {(void *)alm};
  void *mapp[1] = {map};
  sharp_execute(SHARP_ALM2MAP, 0, almp, mapp, s->geom, s->alm, SHARP_DP, NULL,
                NULL);
}

static void sht_map2alm(const sht_setup *s, const double *map,
                        double complex *alm, int add) {
  void *almp[1] = {alm};
  void *mapp[1] = {(void *)map};
  sharp_execute(SHARP_MAP2ALM, 0, almp, mapp, s->geom, s->alm,
                SHARP_DP | (add ? SHARP_ADD : 0), NULL, NULL);
}

/* Jacobi iterations: a += map2alm(map - alm2map(a)), as HEALPix's map2alm
 * with iter > 0 and healpy.map2alm(..., iter=N). */
static int map2alm_iter(const sht_setup *s, const arkcos_geometry *g,
                        int iter, const double *map, double complex *alm,
                        arkcos_error *err) {
  sht_map2alm(s, map, alm, 0);
  if (iter == 0) return ARKCOS_OK;
  double *resid = malloc((size_t)g->npix * sizeof *resid);
  if (!resid) return arkcos_fail(err, ARKCOS_ENOMEM, "map2alm: out of memory");
  for (int it = 0; it < iter; it++) {
    sht_alm2map(s, alm, resid);
    for (int64_t p = 0; p < g->npix; p++) resid[p] = map[p] - resid[p];
    sht_map2alm(s, resid, alm, 1);
  }
  free(resid);
  return ARKCOS_OK;
}

int ref_map2alm(const arkcos_geometry *g, int lmax, int iter,
                const double *map, const double *ring_weights,
                double complex *alm, int threads, arkcos_error *err) {
  if (!map || !alm)
    return arkcos_fail(err, ARKCOS_EINVAL, "map2alm: missing map or a_lm");
  if (iter < 0)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "map2alm: iter %d must be >= 0", iter);
  sht_setup s;
  int rc = sht_setup_make(&s, g, lmax, ring_weights, err);
  if (rc) return rc;
  int old = threads_push(threads);
  rc = map2alm_iter(&s, g, iter, map, alm, err);
  threads_pop(old);
  sht_setup_free(&s);
  return rc;
}

int ref_alm2map(const arkcos_geometry *g, int lmax, const double complex *alm,
                double *map, int threads, arkcos_error *err) {
  if (!map || !alm)
    return arkcos_fail(err, ARKCOS_EINVAL, "alm2map: missing map or a_lm");
  sht_setup s;
  int rc = sht_setup_make(&s, g, lmax, NULL, err);
  if (rc) return rc;
  int old = threads_push(threads);
  sht_alm2map(&s, alm, map);
  threads_pop(old);
  sht_setup_free(&s);
  return ARKCOS_OK;
}

void ref_alm_scale(int lmax, const double *kl, double complex *alm) {
  for (int m = 0; m <= lmax; m++)
    for (int l = m; l <= lmax; l++) alm[ref_alm_index(lmax, l, m)] *= kl[l];
}

int ref_fsht_smooth(const arkcos_geometry *g, const arkcos_kernel *k,
                    const double *in, double *out, int lmax, int iter,
                    const double *ring_weights, int threads,
                    arkcos_error *err) {
  if (!k || !in || !out)
    return arkcos_fail(err, ARKCOS_EINVAL, "FSHT smoothing: missing argument");
  if (iter < 0)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "FSHT smoothing: iter %d must be >= 0", iter);
  sht_setup s;
  int rc = sht_setup_make(&s, g, lmax, ring_weights, err);
  if (rc) return rc;
  double *kl = malloc((size_t)(lmax + 1) * sizeof *kl);
  double complex *alm = malloc((size_t)ref_alm_size(lmax) * sizeof *alm);
  if (!kl || !alm) {
    rc = arkcos_fail(err, ARKCOS_ENOMEM, "FSHT smoothing: out of memory");
    goto done;
  }
  rc = arkcos_kernel_legendre(k, lmax, kl, err);
  if (rc) goto done;
  int old = threads_push(threads);
  rc = map2alm_iter(&s, g, iter, in, alm, err);
  if (!rc) {
    ref_alm_scale(lmax, kl, alm);
    sht_alm2map(&s, alm, out);
  }
  threads_pop(old);
done:
  free(kl);
  free(alm);
  sht_setup_free(&s);
  return rc;
}

/* ---------------------------------------------------- spin 2 (Q, U) */

/* libsharp's spin-2 transforms take Q, U in the HEALPix convention (as
 * healpy's map2alm(pol=True)) and give E, B. */
static void sht2_alm2map(const sht_setup *s, const double complex *e, const double complex *b, double *q,
                         double *u) {
  void *almp[2] = {(void *)e, (void *)b};
  void *mapp[2] = {q, u};
  sharp_execute(SHARP_ALM2MAP, 2, almp, mapp, s->geom, s->alm, SHARP_DP, NULL, NULL);
}

static void sht2_map2alm(const sht_setup *s, const double *q, const double *u, double complex *e,
                         double complex *b, int add) {
  void *almp[2] = {e, b};
  void *mapp[2] = {(void *)q, (void *)u};
  sharp_execute(SHARP_MAP2ALM, 2, almp, mapp, s->geom, s->alm, SHARP_DP | (add ? SHARP_ADD : 0), NULL,
                NULL);
}

int ref_fsht_smooth_spin2(const arkcos_geometry *g, const arkcos_kernel *k, const double *q,
                          const double *u, double *q_out, double *u_out, int lmax, int iter,
                          const double *ring_weights, int threads, arkcos_error *err) {
  if (!k || !q || !u || !q_out || !u_out)
    return arkcos_fail(err, ARKCOS_EINVAL, "FSHT spin-2 smoothing: missing argument");
  if (iter < 0) return arkcos_fail(err, ARKCOS_EINVAL, "FSHT spin-2 smoothing: iter %d must be >= 0", iter);
  if (lmax < 2) return arkcos_fail(err, ARKCOS_EINVAL, "FSHT spin-2 smoothing: lmax %d must be >= 2", lmax);
  sht_setup s;
  int rc = sht_setup_make(&s, g, lmax, ring_weights, err);
  if (rc) return rc;
  const size_t na = (size_t)ref_alm_size(lmax);
  double *kl2 = malloc((size_t)(lmax + 1) * sizeof *kl2);
  double complex *e = malloc(2 * na * sizeof *e), *b = e ? e + na : NULL;
  double *rq = iter > 0 ? malloc(2 * (size_t)g->npix * sizeof *rq) : NULL;
  if (!kl2 || !e || (iter > 0 && !rq)) {
    rc = arkcos_fail(err, ARKCOS_ENOMEM, "FSHT spin-2 smoothing: out of memory");
    goto done;
  }
  rc = ref_kernel_legendre_spin2(k, lmax, kl2, err);
  if (rc) goto done;
  int old = threads_push(threads);
  sht2_map2alm(&s, q, u, e, b, 0);
  for (int it = 0; it < iter; it++) { /* Jacobi iterations, as map2alm_iter */
    double *ru = rq + g->npix;
    sht2_alm2map(&s, e, b, rq, ru);
    for (int64_t p = 0; p < g->npix; p++) {
      rq[p] = q[p] - rq[p];
      ru[p] = u[p] - ru[p];
    }
    sht2_map2alm(&s, rq, ru, e, b, 1);
  }
  ref_alm_scale(lmax, kl2, e);
  ref_alm_scale(lmax, kl2, b);
  sht2_alm2map(&s, e, b, q_out, u_out);
  threads_pop(old);
done:
  free(kl2);
  free(e);
  free(rq);
  sht_setup_free(&s);
  return rc;
}

int ref_alm2map_spin2(const arkcos_geometry *g, int lmax, const double complex *alm_e,
                      const double complex *alm_b, double *q, double *u, int threads,
                      arkcos_error *err) {
  if (!alm_e || !alm_b || !q || !u)
    return arkcos_fail(err, ARKCOS_EINVAL, "spin-2 alm2map: missing map or a_lm");
  if (lmax < 2) return arkcos_fail(err, ARKCOS_EINVAL, "spin-2 alm2map: lmax %d must be >= 2", lmax);
  sht_setup s;
  int rc = sht_setup_make(&s, g, lmax, NULL, err);
  if (rc) return rc;
  int old = threads_push(threads);
  sht2_alm2map(&s, alm_e, alm_b, q, u);
  threads_pop(old);
  sht_setup_free(&s);
  return ARKCOS_OK;
}

/* ------------------------------------------------------- ring weights */

/* The ring-weight table is the second HDU, a binary table whose NSIDE key
 * (when there is one) matches the map's. */
static int check_weight_hdu(fitsfile *f, const char *path,
                            const arkcos_geometry *g, arkcos_error *err) {
  int status = 0, hdutype = 0;
  if (fits_movabs_hdu(f, 2, &hdutype, &status) || hdutype != BINARY_TBL)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: no binary table extension (not a ring-weight file)",
                       path);
  long nside = 0;
  if (fits_read_key(f, TLONG, "NSIDE", &nside, NULL, &status)) {
    status = 0;
    nside = 0; /* older files: rely on check_weight_count */
  }
  if (nside && nside != g->nside)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: ring weights for nside %ld, map has nside %lld",
                       path, nside, (long long)g->nside);
  return ARKCOS_OK;
}

/* The table holds at least nnorth values. */
static int check_weight_count(fitsfile *f, const char *path, int64_t nnorth,
                              arkcos_error *err) {
  int status = 0;
  char msg[FLEN_STATUS];
  long nrows = 0;
  int repeat_type = 0;
  long repeat = 0, width = 0;
  if (fits_get_num_rows(f, &nrows, &status) ||
      fits_get_coltype(f, 1, &repeat_type, &repeat, &width, &status)) {
    fits_get_errstatus(status, msg);
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: cannot read the table: %s",
                       path, msg);
  }
  if ((int64_t)nrows * repeat < nnorth)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: %lld weights, expected %lld (2 nside)", path,
                       (long long)nrows * repeat, (long long)nnorth);
  return ARKCOS_OK;
}

/* Reads the first nnorth values of column 1 into w; each must be a
 * correction in (-1, 1). */
static int read_weight_column(fitsfile *f, const char *path, int64_t nnorth,
                              double *w, arkcos_error *err) {
  int status = 0, anynul = 0;
  char msg[FLEN_STATUS];
  if (fits_read_col(f, TDOUBLE, 1, 1, 1, (LONGLONG)nnorth, NULL, w, &anynul,
                    &status)) {
    fits_get_errstatus(status, msg);
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: cannot read weights: %s", path,
                       msg);
  }
  for (int64_t i = 0; i < nnorth; i++)
    if (!(w[i] > -1.0 && w[i] < 1.0))
      return arkcos_fail(err, ARKCOS_EINVAL,
                         "%s: row %lld: weight %g is not a correction in (-1, 1)",
                         path, (long long)i + 1, w[i]);
  return ARKCOS_OK;
}

/* healpy-data's weight_ring_n<nside>.fits (QUAD_RING): a binary table with
 * 2 nside rows, one per ring of the northern hemisphere including the
 * equator, column 1 "TEMPERATURE WEIGHTS" holding D_weight; each ring is to
 * be multiplied by 1 + D_weight. The south mirrors the north. */
int ref_read_ring_weights(const char *path, const arkcos_geometry *g,
                          double *ring_weights, arkcos_error *err) {
  if (!path || !g || !ring_weights)
    return arkcos_fail(err, ARKCOS_EINVAL, "ring weights: missing argument");
  if (g->kind != ARKCOS_GEOM_HEALPIX || g->nside < 1 ||
      g->nrings != 4 * g->nside - 1)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: ring weights apply to HEALPix geometries only",
                       path);
  fitsfile *f = NULL;
  int status = 0;
  char msg[FLEN_STATUS];
  if (fits_open_file(&f, path, READONLY, &status)) {
    fits_get_errstatus(status, msg);
    return arkcos_fail(err, ARKCOS_EIO, "%s: cannot open: %s", path, msg);
  }
  const int64_t nnorth = 2 * g->nside;
  double *w = NULL;
  int rc = check_weight_hdu(f, path, g, err);
  if (!rc) rc = check_weight_count(f, path, nnorth, err);
  if (!rc && !(w = malloc((size_t)nnorth * sizeof *w)))
    rc = arkcos_fail(err, ARKCOS_ENOMEM, "ring weights: out of memory");
  if (!rc) rc = read_weight_column(f, path, nnorth, w, err);
  for (int i = 0; !rc && i < g->nrings; i++) {
    int64_t north = i < nnorth ? i : (int64_t)g->nrings - 1 - i;
    ring_weights[i] = 1.0 + w[north];
  }
  free(w);
  status = 0;
  fits_close_file(f, &status);
  return rc;
}

int ref_find_ring_weights(int64_t nside, char *path, size_t len) {
  const char *env = getenv("ARKCOS_HEALPY_DATA");
  const char *dirs[] = {env, "/usr/share/healpy/data",
                        "/usr/local/share/healpy/data"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    if (!dirs[i] || !*dirs[i]) continue;
    int n = snprintf(path, len, "%s/weight_ring_n%05lld.fits", dirs[i],
                     (long long)nside);
    if (n < 0 || (size_t)n >= len) continue;
    FILE *f = fopen(path, "rb");
    if (f) {
      fclose(f);
      return 1;
    }
  }
  if (len) path[0] = '\0';
  return 0;
}
