/*
 * geometry.c -- isolatitude ring geometries (HEALPix RING, ECP) and the
 * HEALPix pixel arithmetic the I/O and metrics need.
 *
 * HEALPix (Gorski et al. 2005): 4 nside - 1 rings. North cap rings
 * r = 1..nside-1 hold 4r pixels at 1 - cos(theta) = r^2 / (3 nside^2);
 * belt rings r = nside..3 nside hold 4 nside pixels at
 * cos(theta) = 4/3 - 2r / (3 nside); the south cap mirrors the north.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

void arkcos_geometry_destroy(arkcos_geometry *g) {
  if (!g) return;
  free(g->rings);
  free(g);
}

arkcos_geometry *arkcos_geometry_from_rings(int nrings, const double *theta,
                                            const double *phi0,
                                            const int64_t *nph,
                                            const int64_t *ofs,
                                            const double *weight,
                                            arkcos_error *err) {
  if (nrings < 1) {
    arkcos_fail(err, ARKCOS_EINVAL, "geometry: need at least one ring");
    return NULL;
  }
  int64_t npix = 0;
  for (int i = 0; i < nrings; i++) {
    if (nph[i] < 1) {
      arkcos_fail(err, ARKCOS_EINVAL, "geometry: ring %d has %lld pixels", i,
                  (long long)nph[i]);
      return NULL;
    }
    if (!(theta[i] >= 0 && theta[i] <= M_PI) || (i && theta[i] <= theta[i - 1])) {
      arkcos_fail(err, ARKCOS_EINVAL,
                  "geometry: ring %d: theta must increase within [0, pi]", i);
      return NULL;
    }
    if (ofs[i] < 0) {
      arkcos_fail(err, ARKCOS_EINVAL, "geometry: ring %d: negative offset", i);
      return NULL;
    }
    if (ofs[i] + nph[i] > npix) npix = ofs[i] + nph[i];
  }
  arkcos_geometry *g = calloc(1, sizeof *g);
  if (g) g->rings = malloc(sizeof(arkcos_ring) * (size_t)nrings);
  if (!g || !g->rings) {
    arkcos_geometry_destroy(g);
    arkcos_fail(err, ARKCOS_ENOMEM, "geometry: out of memory");
    return NULL;
  }
  g->kind = ARKCOS_GEOM_CUSTOM;
  g->nrings = nrings;
  g->npix = npix;
  for (int i = 0; i < nrings; i++) {
    arkcos_ring *r = &g->rings[i];
    r->theta = theta[i];
    r->phi0 = phi0[i];
    r->nph = nph[i];
    r->ofs = ofs[i];
    r->weight = weight ? weight[i] : 4 * M_PI / (double)npix;
  }
  return g;
}

int64_t arkcos_healpix_npix(int64_t nside) { return 12 * nside * nside; }

int arkcos_healpix_ring_weights(int64_t nside, double *w) {
  if (nside < 1 || nside > ((int64_t)1 << 20) || !w) return -1;
  const int64_t nr = 4 * nside - 1;
  for (int64_t r = 0; r < nr; r++) w[r] = 1;
  if (nside < 8) return 0;
  /* end corrections of the trapezoid rule in the ring index at the pole,
   * where the integrand t g(z(t)) is odd in t: exact for t, t^3, t^5, t^7 */
  static const double c[4] = {252769.0 / 1814400.0, -68119.0 / 1814400.0, 1469.0 / 201600.0,
                              -2497.0 / 3628800.0};
  for (int i = 0; i < 4; i++) {
    w[i] += c[i];
    w[nr - 1 - i] += c[i];
  }
  /* the kink at ring nside (and 3 nside): ring areas stop growing; the
   * jump in the slope of the integrand costs (1/12) of it */
  w[nside - 1] -= 1.0 / (12.0 * (double)nside);
  w[3 * nside - 1] -= 1.0 / (12.0 * (double)nside);
  if (nside < 32) return 0;
  /* What the 1/12 leaves at the kink: higher derivatives jump there too, and
   * a band-limited map smoothed by a compact kernel varies on the scale of
   * one or two rings, where finite-difference (Gregory) corrections diverge.
   * These 17 corrections (times 1 / nside) on rings nside - 8 .. nside + 8
   * are the least-squares fit (scripts/kink_weights.py) that makes the
   * smoothing of band-limited random maps (lmax = 2 nside) by Gaussians of
   * 4 to 16 pixels per FWHM match the exact B_l result at nside 64, and of a
   * constant map match 1. Held out (other maps at nside 64, 128 and 256):
   * the error on the 33 rings around |z| = 2/3 falls from 1.8e-5 - 5.9e-5
   * to 2.9e-8 - 4.4e-7 of the map's largest value, a constant's from up to
   * 7.4e-6 to at most 2.0e-7; narrower kernels' errors there are their own
   * aliasing and stay as they were (docs/EXACTNESS.md, "Polar quadrature").
   * Below nside 32 the kernels that reach the kink from both sides are tens
   * of degrees wide, the fit's scaling in 1 / nside no longer holds (a
   * constant map under a 16 px/FWHM Gaussian: 9.3e-7 without them, 2.8e-6
   * with them at nside 16), and the 1/12 is all they get. */
  static const double kink[17] = {
      -8.419049e-05, 3.268836e-04,  -7.982998e-04, 1.612892e-03,  -2.998306e-03, 5.577189e-03,
      -1.132766e-02, 2.873667e-02,  -4.159912e-02, 2.826702e-02,  -1.093789e-02, 5.270329e-03,
      -2.763531e-03, 1.446210e-03,  -6.946793e-04, 2.762667e-04,  -6.907593e-05};
  for (int k = -8; k <= 8; k++) {
    const double d = kink[k + 8] / (double)nside;
    w[nside - 1 + k] += d;     /* north */
    w[3 * nside - 1 - k] += d; /* its mirror */
  }
  return 0;
}

/* Colatitude, first-pixel azimuth, size and offset of HEALPix ring r
 * (1-based), computed so that theta is accurate near the poles. */
static void healpix_ring(int64_t nside, int64_t r, double *theta, double *phi0,
                         int64_t *nph, int64_t *ofs) {
  int64_t npix = 12 * nside * nside, nr = r < 2 * nside ? r : 4 * nside - r;
  if (nr < nside) {
    /* sin(theta/2)^2 = (1 - cos theta)/2 = nr^2 / (6 nside^2) */
    double t = 2 * asin((double)nr / (sqrt(6.0) * (double)nside));
    *theta = r < 2 * nside ? t : M_PI - t;
    *phi0 = M_PI / (4.0 * (double)nr);
    *nph = 4 * nr;
    *ofs = r < 2 * nside ? 2 * nr * (nr - 1) : npix - 2 * nr * (nr + 1);
  } else {
    double z = (4.0 * (double)nside - 2.0 * (double)r) / (3.0 * (double)nside);
    *theta = acos(z);
    /* rings with r + nside odd start at phi = 0, the others half a pixel on */
    *phi0 = ((r + nside) & 1) ? 0.0 : M_PI / (4.0 * (double)nside);
    *nph = 4 * nside;
    *ofs = 2 * nside * (nside - 1) + (r - nside) * 4 * nside;
  }
}

arkcos_geometry *arkcos_geometry_healpix(int64_t nside, arkcos_error *err) {
  if (nside < 1 || nside > (1 << 20)) {
    arkcos_fail(err, ARKCOS_EINVAL, "nside must be in [1, 2^20], got %lld",
                (long long)nside);
    return NULL;
  }
  int n = (int)(4 * nside - 1);
  double *theta = malloc(sizeof(double) * n), *phi0 = malloc(sizeof(double) * n);
  int64_t *nph = malloc(sizeof(int64_t) * n), *ofs = malloc(sizeof(int64_t) * n);
  arkcos_geometry *g = NULL;
  if (theta && phi0 && nph && ofs) {
    for (int i = 0; i < n; i++)
      healpix_ring(nside, i + 1, &theta[i], &phi0[i], &nph[i], &ofs[i]);
    g = arkcos_geometry_from_rings(n, theta, phi0, nph, ofs, NULL, err);
    if (g) {
      g->kind = ARKCOS_GEOM_HEALPIX;
      g->nside = nside;
    }
  } else {
    arkcos_fail(err, ARKCOS_ENOMEM, "geometry: out of memory");
  }
  free(theta);
  free(phi0);
  free(nph);
  free(ofs);
  return g;
}

arkcos_geometry *arkcos_geometry_ecp(int ntheta, int64_t nphi, double phi_shift,
                                     arkcos_error *err) {
  if (ntheta < 1 || nphi < 1) {
    arkcos_fail(err, ARKCOS_EINVAL, "ECP grid needs ntheta, nphi >= 1");
    return NULL;
  }
  double *theta = malloc(sizeof(double) * ntheta), *phi0 = malloc(sizeof(double) * ntheta);
  double *w = malloc(sizeof(double) * ntheta);
  int64_t *nph = malloc(sizeof(int64_t) * ntheta), *ofs = malloc(sizeof(int64_t) * ntheta);
  arkcos_geometry *g = NULL;
  if (theta && phi0 && w && nph && ofs) {
    for (int i = 0; i < ntheta; i++) {
      double t0 = M_PI * i / ntheta, t1 = M_PI * (i + 1) / ntheta;
      theta[i] = M_PI * (i + 0.5) / ntheta;
      phi0[i] = 2 * M_PI * phi_shift / (double)nphi;
      nph[i] = nphi;
      ofs[i] = (int64_t)i * nphi;
      /* exact cell area: (2 pi / nphi) (cos t0 - cos t1), written with a
       * product of sines to avoid cancellation */
      w[i] = 2 * M_PI / (double)nphi * 2 * sin(0.5 * (t0 + t1)) * sin(0.5 * (t1 - t0));
    }
    g = arkcos_geometry_from_rings(ntheta, theta, phi0, nph, ofs, w, err);
    if (g) g->kind = ARKCOS_GEOM_ECP;
  } else {
    arkcos_fail(err, ARKCOS_ENOMEM, "geometry: out of memory");
  }
  free(theta);
  free(phi0);
  free(w);
  free(nph);
  free(ofs);
  return g;
}

/* ------------------------------------------------ HEALPix pixel arithmetic */

static int64_t isqrt64(int64_t v) {
  int64_t r = (int64_t)sqrt((double)v + 0.5);
  while (r * r > v) r--;
  while ((r + 1) * (r + 1) <= v) r++;
  return r;
}

void arkcos_healpix_pix2ang_ring(int64_t nside, int64_t pix, double *theta,
                                 double *phi) {
  int64_t ncap = 2 * nside * (nside - 1), npix = 12 * nside * nside, r, k;
  if (pix < ncap) {
    r = (1 + isqrt64(1 + 2 * pix)) >> 1;
    k = pix - 2 * r * (r - 1);
  } else if (pix < npix - ncap) {
    int64_t ip = pix - ncap;
    r = ip / (4 * nside) + nside;
    k = ip % (4 * nside);
  } else {
    int64_t ip = npix - pix;
    int64_t nr = (1 + isqrt64(2 * ip - 1)) >> 1;
    r = 4 * nside - nr;
    k = pix - (npix - 2 * nr * (nr + 1));
  }
  double phi0;
  int64_t nph, ofs;
  healpix_ring(nside, r, theta, &phi0, &nph, &ofs);
  *phi = phi0 + 2 * M_PI * (double)k / (double)nph;
}

int64_t arkcos_healpix_ang2pix_ring(int64_t nside, double theta, double phi) {
  double z = cos(theta), za = fabs(z);
  double tt = fmod(phi, 2 * M_PI);
  if (tt < 0) tt += 2 * M_PI;
  tt /= 0.5 * M_PI; /* in [0, 4) */
  int64_t nl4 = 4 * nside, ncap = 2 * nside * (nside - 1), npix = 12 * nside * nside;
  if (za <= 2.0 / 3.0) {
    double t1 = (double)nside * (0.5 + tt), t2 = (double)nside * z * 0.75;
    int64_t jp = (int64_t)(t1 - t2), jm = (int64_t)(t1 + t2);
    int64_t ir = nside + 1 + jp - jm; /* 1..2 nside + 1 */
    int64_t kshift = 1 - (ir & 1);
    int64_t ip = (jp + jm - nside + kshift + 1) / 2;
    ip = ((ip % nl4) + nl4) % nl4;
    return ncap + (ir - 1) * nl4 + ip;
  }
  double tp = tt - floor(tt);
  /* 1 - |z| from the sine of the half angle, accurate near the poles */
  double s = sin(0.5 * (z > 0 ? theta : M_PI - theta));
  double tmp = (double)nside * sqrt(6.0) * s;
  int64_t jp = (int64_t)(tp * tmp), jm = (int64_t)((1.0 - tp) * tmp);
  int64_t ir = jp + jm + 1;
  if (ir > nside) ir = nside; /* guard against rounding at the cap edge */
  int64_t ip = (int64_t)(tt * (double)ir);
  ip = ((ip % (4 * ir)) + 4 * ir) % (4 * ir);
  return z > 0 ? 2 * ir * (ir - 1) + ip : npix - 2 * ir * (ir + 1) + ip;
}

static const int jrll[12] = {2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4};
static const int jpll[12] = {1, 3, 5, 7, 0, 2, 4, 6, 1, 3, 5, 7};

static int64_t compress_bits(int64_t v) { /* keep the even bits */
  uint64_t x = (uint64_t)v & 0x5555555555555555ull;
  x = (x | (x >> 1)) & 0x3333333333333333ull;
  x = (x | (x >> 2)) & 0x0f0f0f0f0f0f0f0full;
  x = (x | (x >> 4)) & 0x00ff00ff00ff00ffull;
  x = (x | (x >> 8)) & 0x0000ffff0000ffffull;
  x = (x | (x >> 16)) & 0x00000000ffffffffull;
  return (int64_t)x;
}

static int64_t spread_bits(int64_t v) {
  uint64_t x = (uint64_t)v & 0x00000000ffffffffull;
  x = (x | (x << 16)) & 0x0000ffff0000ffffull;
  x = (x | (x << 8)) & 0x00ff00ff00ff00ffull;
  x = (x | (x << 4)) & 0x0f0f0f0f0f0f0f0full;
  x = (x | (x << 2)) & 0x3333333333333333ull;
  x = (x | (x << 1)) & 0x5555555555555555ull;
  return (int64_t)x;
}

int64_t arkcos_healpix_nest2ring(int64_t nside, int64_t pix) {
  int64_t npface = nside * nside, nl4 = 4 * nside;
  int64_t npix = 12 * npface, ncap = 2 * nside * (nside - 1);
  int face = (int)(pix / npface);
  int64_t ipf = pix % npface;
  int64_t ix = compress_bits(ipf), iy = compress_bits(ipf >> 1);
  int64_t jr = (int64_t)jrll[face] * nside - ix - iy - 1;
  int64_t nr, start, kshift;
  if (jr < nside) {
    nr = jr;
    start = 2 * nr * (nr - 1);
    kshift = 0;
  } else if (jr > 3 * nside) {
    nr = nl4 - jr;
    start = npix - 2 * (nr + 1) * nr;
    kshift = 0;
  } else {
    nr = nside;
    start = ncap + (jr - nside) * nl4;
    kshift = (jr - nside) & 1;
  }
  int64_t jp = ((int64_t)jpll[face] * nr + ix - iy + 1 + kshift) / 2;
  if (jp > nl4) jp -= nl4;
  if (jp < 1) jp += nl4;
  return start + jp - 1;
}

int64_t arkcos_healpix_ring2nest(int64_t nside, int64_t pix) {
  int64_t nl2 = 2 * nside, nl4 = 4 * nside, npix = 12 * nside * nside;
  int64_t ncap = 2 * nside * (nside - 1);
  int64_t iring, iphi, kshift, nr;
  int face;
  if (pix < ncap) {
    iring = (1 + isqrt64(1 + 2 * pix)) >> 1;
    iphi = pix + 1 - 2 * iring * (iring - 1);
    kshift = 0;
    nr = iring;
    face = (int)((iphi - 1) / nr);
  } else if (pix < npix - ncap) {
    int64_t ip = pix - ncap, tmp = ip / nl4;
    iring = tmp + nside;
    iphi = ip - tmp * nl4 + 1;
    kshift = (iring + nside) & 1;
    nr = nside;
    int64_t ire = tmp + 1, irm = nl2 + 2 - ire;
    int64_t ifm = (iphi - ire / 2 + nside - 1) / nside;
    int64_t ifp = (iphi - irm / 2 + nside - 1) / nside;
    face = (int)(ifp == ifm ? (ifp | 4) : (ifp < ifm ? ifp : ifm + 8));
  } else {
    int64_t ip = npix - pix;
    iring = (1 + isqrt64(2 * ip - 1)) >> 1;
    iphi = 4 * iring + 1 - (ip - 2 * iring * (iring - 1));
    kshift = 0;
    nr = iring;
    iring = nl4 - iring;
    face = (int)((iphi - 1) / nr + 8);
  }
  int64_t irt = iring - (int64_t)jrll[face] * nside + 1;
  int64_t ipt = 2 * iphi - (int64_t)jpll[face] * nr - kshift - 1;
  if (ipt >= nl2) ipt -= 8 * nside;
  int64_t ix = (ipt - irt) >> 1, iy = (-ipt - irt) >> 1;
  return (int64_t)face * nside * nside + spread_bits(ix) + (spread_bits(iy) << 1);
}
