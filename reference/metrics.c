/*
 * metrics.c -- accuracy metrics shared by the command line and the harness:
 * fractional RMS and maximum errors by region, spectrum comparisons,
 * ringing around point sources, and gnomonic patches for figures.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fitsio.h>
#include <unistd.h>

#include "reference/reference.h"

#define TWO_PI 6.283185307179586476925286766559

/* HEALPix's own split: the polar caps are z = cos(theta) beyond +-2/3. The
 * rings at exactly |z| = 2/3 are the belt's first and last (as in chealpix);
 * the margin keeps cos(acos(2/3)) rounding up from moving them. */
int ref_region_of_theta(double theta) {
  const double zcap = 2.0 / 3.0 + 1e-12;
  double z = cos(theta);
  if (z > zcap) return REF_NORTH;
  if (z < -zcap) return REF_SOUTH;
  return REF_BELT;
}

/* Ratio x / scale with 0/0 = 0 (identical zero maps agree perfectly). */
static double ratio(double x, double scale) {
  if (scale > 0) return x / scale;
  return x == 0 ? 0.0 : INFINITY;
}

/* |a - b|, |a - b|^2 and |b|^2 of pixel i: a real value, or with a2, b2
 * the second component of a spin-2 field P = Q + iU (a, b the Q maps, a2,
 * b2 the U). Returns |a - b|. */
static inline double pixel_diff(const double *a, const double *b, const double *a2,
                                const double *b2, int64_t i, double *d2, double *bb) {
  double d = a[i] - b[i];
  *d2 = d * d;
  *bb = b[i] * b[i];
  if (!a2) return fabs(d);
  double du = a2[i] - b2[i];
  *d2 += du * du;
  *bb += b2[i] * b2[i];
  return hypot(d, du);
}

/* Means are weighted by the pixel solid angle (the ring weight), which is
 * the plain pixel mean on HEALPix and the area mean on other grids. */
static void compare_maps(const arkcos_geometry *g, const double *a, const double *b,
                         const double *a2, const double *b2, ref_metrics *m) {
  double sw = 0, sb2 = 0;
  double swr[REF_NREGIONS] = {0}, sd2[REF_NREGIONS] = {0};
  double dmax[REF_NREGIONS] = {0};
  int64_t np[REF_NREGIONS] = {0};
  for (int j = 0; j < g->nrings; j++) {
    const arkcos_ring *r = &g->rings[j];
    int reg = ref_region_of_theta(r->theta);
    double rb2 = 0, rd2 = 0, rmax = 0;
    for (int64_t i = r->ofs; i < r->ofs + r->nph; i++) {
      double d2, bb, d = pixel_diff(a, b, a2, b2, i, &d2, &bb);
      rb2 += bb;
      rd2 += d2;
      if (d > rmax) rmax = d;
    }
    double w = r->weight * (double)r->nph;
    sw += w;
    sb2 += r->weight * rb2;
    swr[reg] += w;
    sd2[reg] += r->weight * rd2;
    if (rmax > dmax[reg]) dmax[reg] = rmax;
    np[reg] += r->nph;
  }
  double rms_b = sw > 0 ? sqrt(sb2 / sw) : 0.0;
  double d2 = 0, dm = 0;
  for (int k = 0; k < REF_NREGIONS; k++) {
    if (isnan(sd2[k])) dmax[k] = NAN; /* a NaN pixel poisons its region */
    d2 += sd2[k];
    if (isnan(dmax[k]) || dmax[k] > dm) dm = dmax[k]; /* keeps a NaN */
    m->npix_region[k] = np[k];
    m->frac_rms_region[k] =
        swr[k] > 0 ? ratio(sqrt(sd2[k] / swr[k]), rms_b) : 0.0;
    m->max_rel_region[k] = ratio(dmax[k], rms_b);
  }
  m->frac_rms = sw > 0 ? ratio(sqrt(d2 / sw), rms_b) : 0.0;
  m->max_rel = ratio(dm, rms_b);
}

void ref_compare(const arkcos_geometry *g, const double *a, const double *b,
                 ref_metrics *m) {
  compare_maps(g, a, b, NULL, NULL, m);
}

void ref_compare_spin2(const arkcos_geometry *g, const double *qa, const double *ua,
                       const double *qb, const double *ub, ref_metrics *m) {
  compare_maps(g, qa, qb, ua, ub, m);
}

/* Metrics at a list of pixels: plain means over the n values (no ring
 * weights), regions from each pixel's centre; a region without pixels, or a
 * zero reference, gives NaN. a2, b2: the U components of spin-2 values. */
static void compare_listed(const arkcos_geometry *g, const int64_t *pix, const double *a,
                           const double *b, const double *a2, const double *b2, int64_t n,
                           ref_metrics *m) {
  double sb2 = 0, sd2 = 0, maxd = 0, rd2[REF_NREGIONS] = {0};
  double rmax[REF_NREGIONS] = {0};
  int64_t rn[REF_NREGIONS] = {0};
  for (int64_t i = 0; i < n; i++) {
    double th, ph, d2, bb;
    arkcos_healpix_pix2ang_ring(g->nside, pix[i], &th, &ph);
    int r = ref_region_of_theta(th);
    double d = pixel_diff(a, b, a2, b2, i, &d2, &bb);
    sb2 += bb;
    sd2 += d2;
    if (d > maxd) maxd = d;
    rd2[r] += d2;
    rn[r]++;
    if (d > rmax[r]) rmax[r] = d;
  }
  double rms_b = n ? sqrt(sb2 / (double)n) : 0;
  memset(m, 0, sizeof *m);
  m->frac_rms = rms_b > 0 ? sqrt(sd2 / (double)n) / rms_b : NAN;
  m->max_rel = rms_b > 0 ? maxd / rms_b : NAN;
  for (int r = 0; r < REF_NREGIONS; r++) {
    m->npix_region[r] = rn[r];
    m->frac_rms_region[r] =
        rn[r] && rms_b > 0 ? sqrt(rd2[r] / (double)rn[r]) / rms_b : NAN;
    m->max_rel_region[r] = rn[r] && rms_b > 0 ? rmax[r] / rms_b : NAN;
  }
}

void ref_compare_values(const arkcos_geometry *g, const int64_t *pix,
                        const double *a, const double *b, int64_t n,
                        ref_metrics *m) {
  compare_listed(g, pix, a, b, NULL, NULL, n, m);
}

void ref_compare_values_spin2(const arkcos_geometry *g, const int64_t *pix, const double *qa,
                              const double *ua, const double *qb, const double *ub, int64_t n,
                              ref_metrics *m) {
  compare_listed(g, pix, qa, qb, ua, ub, n, m);
}

void ref_compare_cl(int lmax, const double *cl_a, const double *cl_b,
                    const double *cl_diff, ref_spectra_metrics *sm) {
  memset(sm, 0, sizeof *sm);
  sm->lmax = lmax;
  double s2 = 0, sdiff = 0;
  int n = 0;
  for (int l = 2; l <= lmax; l++) {
    if (!(cl_b[l] > 0)) continue;
    double rel = (cl_a[l] - cl_b[l]) / cl_b[l];
    double dr = cl_diff[l] / cl_b[l];
    /* a NaN takes the place of the maximum and stays there */
    if (!isnan(sm->max_rel_residual) && !(fabs(rel) <= sm->max_rel_residual))
      sm->max_rel_residual = fabs(rel);
    if (!isnan(sm->max_diff_ratio) && !(dr <= sm->max_diff_ratio)) sm->max_diff_ratio = dr;
    s2 += rel * rel;
    sdiff += dr;
    n++;
  }
  sm->nl = n;
  sm->rms_rel_residual = n ? sqrt(s2 / n) : 0.0;
  sm->mean_diff_ratio = n ? sdiff / n : 0.0;
}

int ref_compare_spectra(const arkcos_geometry *g, const double *a,
                        const double *b, int lmax, int iter, int threads,
                        double *cl_a, double *cl_b, double *cl_diff,
                        ref_spectra_metrics *sm, arkcos_error *err) {
  if (!g || !a || !b || !sm)
    return arkcos_fail(err, ARKCOS_EINVAL, "spectra: missing argument");
  if (lmax < 1)
    return arkcos_fail(err, ARKCOS_EINVAL, "spectra: lmax %d must be >= 1",
                       lmax);
  int64_t nalm = ref_alm_size(lmax);
  double complex *alm_a = malloc((size_t)nalm * sizeof *alm_a);
  double complex *alm_b = malloc((size_t)nalm * sizeof *alm_b);
  double *ca = malloc((size_t)(lmax + 1) * 3 * sizeof *ca);
  int rc = ARKCOS_OK;
  if (!alm_a || !alm_b || !ca) {
    rc = arkcos_fail(err, ARKCOS_ENOMEM, "spectra: out of memory");
    goto done;
  }
  double *cb = ca + lmax + 1, *cd = cb + lmax + 1;
  rc = ref_map2alm(g, lmax, iter, a, NULL, alm_a, threads, err);
  if (!rc) rc = ref_map2alm(g, lmax, iter, b, NULL, alm_b, threads, err);
  if (rc) goto done;
  ref_alm2cl(lmax, alm_a, alm_a, ca);
  ref_alm2cl(lmax, alm_b, alm_b, cb);
  /* The transform is linear: the difference map's a_lm are a - b. */
  for (int64_t i = 0; i < nalm; i++) alm_a[i] -= alm_b[i];
  ref_alm2cl(lmax, alm_a, alm_a, cd);
  ref_compare_cl(lmax, ca, cb, cd, sm);
  if (cl_a) memcpy(cl_a, ca, (size_t)(lmax + 1) * sizeof *ca);
  if (cl_b) memcpy(cl_b, cb, (size_t)(lmax + 1) * sizeof *cb);
  if (cl_diff) memcpy(cl_diff, cd, (size_t)(lmax + 1) * sizeof *cd);
done:
  free(alm_a);
  free(alm_b);
  free(ca);
  return rc;
}

/* Unit vector of (theta, phi). */
static void unit_vector(double theta, double phi, double v[3]) {
  double st = sin(theta);
  v[0] = st * cos(phi);
  v[1] = st * sin(phi);
  v[2] = cos(theta);
}

/* The one ringing walk: every pixel goes to its nearest source (largest
 * dot product, the first on a tie); per source, peak[s] is the largest
 * |value| of its pixels with dot >= cosr (within the radius) and ring[s]
 * the largest of the others. u: the sources' unit vectors. */
static void ringing_walk(const arkcos_geometry *g, const double *map,
                         const double (*u)[3], int n, double cosr,
                         double *peak, double *ring) {
  for (int s = 0; s < n; s++) peak[s] = ring[s] = 0;
  for (int j = 0; j < g->nrings; j++) {
    const arkcos_ring *r = &g->rings[j];
    for (int64_t i = 0; i < r->nph; i++) {
      double v = fabs(map[r->ofs + i]), x[3];
      unit_vector(r->theta, r->phi0 + TWO_PI * (double)i / (double)r->nph, x);
      int best = 0;
      double bd = -2;
      for (int s = 0; s < n; s++) {
        double d = x[0] * u[s][0] + x[1] * u[s][1] + x[2] * u[s][2];
        if (d > bd) {
          bd = d;
          best = s;
        }
      }
      if (bd >= cosr) {
        if (v > peak[best]) peak[best] = v;
      } else if (v > ring[best]) {
        ring[best] = v;
      }
    }
  }
}

double ref_ringing(const arkcos_geometry *g, const double *map, double theta,
                   double phi, double radius) {
  ref_source s = {theta, phi, 1.0};
  return ref_ringing_sources(g, map, &s, 1, radius);
}

double ref_ringing_sources(const arkcos_geometry *g, const double *map,
                           const ref_source *src, int n, double radius) {
  if (n < 1) return 0.0;
  double(*c)[3] = malloc((size_t)n * sizeof *c);
  double *peak = malloc((size_t)n * 2 * sizeof *peak);
  double inside = 0, outside = 0;
  if (!c || !peak) {
    free(c);
    free(peak);
    return NAN;
  }
  for (int s = 0; s < n; s++) unit_vector(src[s].theta, src[s].phi, c[s]);
  ringing_walk(g, map, (const double(*)[3])c, n, cos(radius), peak, peak + n);
  for (int s = 0; s < n; s++) {
    if (peak[s] > inside) inside = peak[s];
    if (peak[n + s] > outside) outside = peak[n + s];
  }
  free(c);
  free(peak);
  return ratio(outside, inside);
}

int ref_ringing_by_region(const arkcos_geometry *g, const double *map,
                          const ref_source *src, int n, double radius,
                          double *belt, double *cap) {
  double(*c)[3] = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
  double *peak = malloc((size_t)(n > 0 ? n : 1) * 2 * sizeof *peak);
  *belt = *cap = -1;
  if (!c || !peak) {
    free(c);
    free(peak);
    return ARKCOS_ENOMEM;
  }
  for (int s = 0; s < n; s++) { /* at the centre of the source's pixel */
    double th, ph;
    int64_t p = arkcos_healpix_ang2pix_ring(g->nside, src[s].theta, src[s].phi);
    arkcos_healpix_pix2ang_ring(g->nside, p, &th, &ph);
    unit_vector(th, ph, c[s]);
  }
  double *ring = peak + n;
  ringing_walk(g, map, (const double(*)[3])c, n, cos(radius * (1 + 1e-9)),
               peak, ring);
  for (int s = 0; s < n; s++) {
    if (!(peak[s] > 0)) continue;
    double r = ring[s] / peak[s];
    double *dst = ref_region_of_theta(src[s].theta) == REF_BELT ? belt : cap;
    if (r > *dst) *dst = r;
  }
  free(c);
  free(peak);
  return ARKCOS_OK;
}

int ref_patch(const arkcos_geometry *g, const double *map, double theta,
              double phi, double side, int n, double *img, arkcos_error *err) {
  if (!g || !map || !img)
    return arkcos_fail(err, ARKCOS_EINVAL, "patch: missing argument");
  if (g->kind != ARKCOS_GEOM_HEALPIX || g->nside < 1)
    return arkcos_fail(err, ARKCOS_EINVAL, "patch: HEALPix geometries only");
  if (n < 1)
    return arkcos_fail(err, ARKCOS_EINVAL, "patch: size %d must be >= 1", n);
  if (!(side > 0) || !isfinite(side))
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "patch: side %g must be a positive angle", side);
  if (!(theta >= 0 && theta <= M_PI) || !isfinite(phi))
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "patch: centre theta %g outside [0, pi]", theta);
  /* Tangent plane at the centre: e_east = d/dphi, e_north = -d/dtheta. At a
   * pole the basis follows the given phi. */
  double ct = cos(theta), st = sin(theta), cp = cos(phi), sp = sin(phi);
  double c[3] = {st * cp, st * sp, ct};
  double east[3] = {-sp, cp, 0.0};
  double north[3] = {-ct * cp, -ct * sp, st};
  double step = side / n;
  for (int iy = 0; iy < n; iy++) {
    double y = (iy + 0.5) * step - 0.5 * side;
    for (int ix = 0; ix < n; ix++) {
      double x = (ix + 0.5) * step - 0.5 * side;
      double v[3];
      for (int k = 0; k < 3; k++) v[k] = c[k] + x * east[k] + y * north[k];
      double t = atan2(sqrt(v[0] * v[0] + v[1] * v[1]), v[2]);
      double p = atan2(v[1], v[0]);
      if (p < 0) p += TWO_PI;
      if (p >= TWO_PI) p -= TWO_PI;
      img[(int64_t)iy * n + ix] =
          map[arkcos_healpix_ang2pix_ring(g->nside, t, p)];
    }
  }
  return ARKCOS_OK;
}

static double patch_value(double v, int logscale) {
  if (!logscale) return v;
  return v == 0 ? NAN : log10(fabs(v));
}

/* Figures are written to a temporary name beside the target and renamed, so
 * a reader never sees half a file. */
static void temp_name(const char *path, char *tmp, size_t len) {
  snprintf(tmp, len, "%s.tmp%ld", path, (long)getpid());
}

int ref_patch_write_text(const char *path, const double *img, int n,
                         double side, int logscale, arkcos_error *err) {
  if (!path || !img || n < 1)
    return arkcos_fail(err, ARKCOS_EINVAL, "patch: bad arguments");
  char tmp[4200];
  temp_name(path, tmp, sizeof tmp);
  FILE *f = fopen(tmp, "w");
  if (!f)
    return arkcos_fail(err, ARKCOS_EIO, "%s: cannot write: %s", path,
                       strerror(errno));
  double step = side / n * (180.0 / M_PI);
  fprintf(f, "# gnomonic patch %d x %d, side %.10g deg; columns: x_deg "
             "(east) y_deg (north) %s; a blank line ends each row\n",
          n, n, side * 180.0 / M_PI, logscale ? "log10|value| (NaN: 0)" : "value");
  for (int iy = 0; iy < n; iy++) {
    double y = (iy + 0.5) * step - 0.5 * n * step;
    for (int ix = 0; ix < n; ix++) {
      double x = (ix + 0.5) * step - 0.5 * n * step;
      fprintf(f, "%.8g %.8g %.17g\n", x, y,
              patch_value(img[(int64_t)iy * n + ix], logscale));
    }
    fputc('\n', f);
  }
  int bad = ferror(f);
  if (fclose(f) || bad || rename(tmp, path)) {
    remove(tmp);
    return arkcos_fail(err, ARKCOS_EIO, "%s: write failed", path);
  }
  return ARKCOS_OK;
}

int ref_patch_write_fits(const char *path, const double *img, int n,
                         double side, int logscale, arkcos_error *err) {
  if (!path || !img || n < 1)
    return arkcos_fail(err, ARKCOS_EINVAL, "patch: bad arguments");
  double *data = malloc((size_t)n * n * sizeof *data);
  if (!data) return arkcos_fail(err, ARKCOS_ENOMEM, "patch: out of memory");
  for (int64_t i = 0; i < (int64_t)n * n; i++)
    data[i] = patch_value(img[i], logscale);
  char tmp[4200], name[4300];
  temp_name(path, tmp, sizeof tmp);
  snprintf(name, sizeof name, "!%s", tmp); /* '!': replace a stale temp */
  fitsfile *f = NULL;
  int status = 0;
  long naxes[2] = {n, n};
  double step = side / n * (180.0 / M_PI);
  double crpix = 0.5 * (n + 1), zero = 0.0;
  fits_create_file(&f, name, &status);
  fits_create_img(f, DOUBLE_IMG, 2, naxes, &status);
  /* Linear tangent-plane coordinates in degrees from the centre; the first
   * image row (FITS stores bottom-up) is the southern edge. */
  fits_write_key(f, TSTRING, "CTYPE1", "X_EAST", "gnomonic x, to the east",
                 &status);
  fits_write_key(f, TSTRING, "CTYPE2", "Y_NORTH", "gnomonic y, to the north",
                 &status);
  fits_write_key(f, TSTRING, "CUNIT1", "deg", NULL, &status);
  fits_write_key(f, TSTRING, "CUNIT2", "deg", NULL, &status);
  fits_write_key(f, TDOUBLE, "CRPIX1", &crpix, NULL, &status);
  fits_write_key(f, TDOUBLE, "CRPIX2", &crpix, NULL, &status);
  fits_write_key(f, TDOUBLE, "CRVAL1", &zero, NULL, &status);
  fits_write_key(f, TDOUBLE, "CRVAL2", &zero, NULL, &status);
  fits_write_key(f, TDOUBLE, "CDELT1", &step, NULL, &status);
  fits_write_key(f, TDOUBLE, "CDELT2", &step, NULL, &status);
  fits_write_key(f, TLOGICAL, "LOGSCALE", &logscale,
                 "values are log10|v| (NaN where v = 0)", &status);
  fits_write_img(f, TDOUBLE, 1, (LONGLONG)n * n, data, &status);
  int cstatus = 0;
  if (f) fits_close_file(f, &cstatus);
  free(data);
  if (status || cstatus || rename(tmp, path)) {
    char msg[FLEN_STATUS] = "rename failed";
    if (status || cstatus) fits_get_errstatus(status ? status : cstatus, msg);
    remove(tmp);
    return arkcos_fail(err, ARKCOS_EIO, "%s: cannot write FITS image: %s",
                       path, msg);
  }
  return ARKCOS_OK;
}
