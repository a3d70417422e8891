/*
 * polar.h -- the polar caps' reconstruction quadrature of the smoother
 * (polar.c; docs/EXACTNESS.md, "Polar reconstruction").
 *
 * Near a pole the pixel sum of K f errs by what a band-limited map's
 * azimuthal sampling aliases on the short rings (2e-4 - 5e-3 of the map's
 * largest value on the first rings, whatever the ring weights). In each cap
 * the part of the integral under a smooth window chi(t) (t the ring index
 * as a continuous coordinate: 1 up to ring POLAR_T1, 0 from POLAR_T2) is
 * taken instead against the map's band-limited reconstruction from the
 * pixels of the first POLAR_RD rings:
 *
 *   out(x) += I(x) - P(x),  I(x) = int chi K(x, y) f~(y) dy,
 *   P(x) = sum_p chi(r_p) w_p K(x, p) f_p  (what the pixel sum put there),
 *
 * f~ = sum_q c_q C(., q), (C_DD + nu C(0)) c = f_D: kriging with the
 * covariance C of white C_l up to 2 nside and a nugget nu = 1e-10. The
 * correction is linear in the map, so A(w) and A(W) take it as the maps do.
 */
#ifndef ARKCOS_POLAR_H
#define ARKCOS_POLAR_H

#include <stdint.h>

#include "arkcos/arkcos.h"

typedef struct arkcos_polar arkcos_polar;

/* The correction for this HEALPix geometry (its rings' weights as the pixel
 * sum uses them) and kernel; NULL with err->code 0 where it does not apply
 * (nside below 32, a top-hat, a kernel reaching the equator from the caps'
 * window or wider than POLAR_MAX_REACH rings there), NULL with err->code set
 * on failure (memory). nthreads <= 0: OpenMP's default. */
arkcos_polar *arkcos_polar_create(const arkcos_geometry *g, const arkcos_kernel *k, int nthreads,
                                  arkcos_error *err);
void arkcos_polar_destroy(arkcos_polar *p);
/* The bytes arkcos_polar_create would hold at its peak (0: none applies). */
double arkcos_polar_estimate(const arkcos_geometry *g, const arkcos_kernel *k);

/* out += I(in) - P(in) on the output rings of the caps in `caps` (bit 0 the
 * north cap, bit 1 the south), in and out RING maps of g->npix values.
 * ARKCOS_ENOMEM when its scratch (a disc and the outputs' corrections, per
 * cap) cannot be had: out may then hold the north cap's correction and not
 * the south's, and the caller must fail the whole apply. */
int arkcos_polar_apply(const arkcos_polar *p, const double *in, double *out, int caps, int nthreads);

/* Q and U (spin 2; polar.c's spin-2 part): the same correction with the
 * spin-2 prior, where the scalar one would apply to kernel k. */
arkcos_polar *arkcos_polar_create_spin2(const arkcos_geometry *g, const arkcos_kernel *k, int nthreads,
                                        arkcos_error *err);
double arkcos_polar_estimate_spin2(const arkcos_geometry *g, const arkcos_kernel *k);
/* (qo, uo) += I - P of (q, u), as arkcos_polar_apply does for scalars */
int arkcos_polar_apply2(const arkcos_polar *p, const double *q, const double *u, double *qo, double *uo, int caps,
                        int nthreads);

/* The pixels the correction reads in each cap: RING indices [0, n) and
 * [npix - n, npix). */
int64_t arkcos_polar_disc_pixels(const arkcos_polar *p);
/* The pixels it changes in each cap: [0, n) and [npix - n, npix). */
int64_t arkcos_polar_out_pixels(const arkcos_polar *p);
/* The correction of the constant map 1 at the north cap's output pixels
 * (arkcos_polar_out_pixels of them) of a scalar correction; the south
 * cap's outputs take the same values at their mirrors (arkcos_polar_mirror).
 * Made at the first call (one cap's apply: only a division by A(1) needs
 * it) and kept; NULL out of memory (or for a spin-2 correction). */
const double *arkcos_polar_delta_one(arkcos_polar *p, int nthreads);
/* RING index of the south cap's pixel mirroring north output pixel j. */
int64_t arkcos_polar_mirror(const arkcos_polar *p, int64_t j);

/* The correction in a cap's own order, for callers that hold the caps and
 * not whole maps (a map split over MPI ranks): position k of cap `cap` (0
 * north, 1 south) is RING pixel arkcos_polar_cap_pixel(p, cap, k), the
 * north cap's k itself, the south cap's the mirror of k (k below the
 * larger of the disc and output pixel counts). arkcos_polar_apply is
 *   disc[k] = in[cap_pixel(k)], k < disc pixels; correct; out[cap_pixel(k)] += corr[k],
 * bit for bit. */
int64_t arkcos_polar_cap_pixel(const arkcos_polar *p, int cap, int64_t k);
/* corr (arkcos_polar_out_pixels values) = I - P of a cap whose disc values
 * are disc (arkcos_polar_disc_pixels values); ARKCOS_ENOMEM without scratch */
int arkcos_polar_correct(const arkcos_polar *p, const double *disc, double *corr, int nthreads);
/* The same for Q and U of cap `cap` (the south cap's U sign is handled here) */
int arkcos_polar_correct2(const arkcos_polar *p, int cap, const double *q, const double *u, double *cq, double *cu,
                          int nthreads);

/* The smoother's own corrections (arkcos_smoother_prepare of that spin
 * made it): NULL where its maps of that spin take none (ring or point
 * quadrature, below ARKCOS_POLAR_MIN_PPF, a top-hat, nside below 32...) or
 * on failure (err->code set). Owned by the smoother. For a caller that
 * applies them to the caps itself (a map split over MPI ranks). */
arkcos_polar *arkcos_smoother_polar(arkcos_smoother *s, int spin, arkcos_error *err);
/* The scalar correction of 1 (arkcos_polar_delta_one), its making counted
 * in arkcos_smoother_polar_time; NULL out of memory or without one. */
const double *arkcos_smoother_polar_delta_one(arkcos_smoother *s);

#endif
