/*
 * reference.h -- what the ARKCoS engine is judged against, and the
 * accuracy metrics shared by the command line and the harness.
 *
 * Same units and conventions as arkcos/arkcos.h. a_lm are stored in the
 * HEALPix/healpy order: index(l, m) = m (2 lmax + 1 - m) / 2 + l, m >= 0.
 */
#ifndef ARKCOS_REFERENCE_H
#define ARKCOS_REFERENCE_H

#include <complex.h>
#include <stddef.h>
#include <stdint.h>

#include "arkcos/arkcos.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------- direct sum */

/* s_p = sum_q w_q K(alpha_pq) r_q over the q with alpha_pq <= cutoff, with
 * angular distances computed from unit vectors. With pix == NULL, every
 * output pixel (out has g->npix entries); otherwise only the npixout pixels
 * listed (out[i] is the value at pixel pix[i]). Only the rings crossing the
 * cutoff disc and the azimuth range inside it are visited. OpenMP over
 * output pixels with `threads` threads (<= 0: the OpenMP default). */
int ref_direct_sum(const arkcos_geometry *g, const arkcos_kernel *k,
                   const double *in, double *out, const int64_t *pix,
                   int64_t npixout, int threads, arkcos_error *err);

/* The output pixel list of a direct sum (pix may be NULL: every pixel):
 * ARKCOS_EINVAL with `what` in the message for a negative count or a pixel
 * outside the map. */
int ref_check_outputs(const arkcos_geometry *g, const int64_t *pix, int64_t npixout, const char *what,
                      arkcos_error *err);

/* Estimated number of kernel evaluations for npixout output pixels
 * (<= 0: the whole map), for work limits. */
double ref_direct_cost(const arkcos_geometry *g, const arkcos_kernel *k,
                       int64_t npixout);

/* ------------------------------------------- spin 2 (polarization) */

/* Q and U in healpy's convention (map2alm(pol=True), HEALPix/COSMO: local
 * basis e_theta, e_phi; P = Q + iU = |P| e^{2i gamma}, gamma counted from
 * e_theta towards e_phi). docs/POLARIZATION.md derives what follows. */

/* The parallel-transport factor e^{2i(psi_p - psi_q)} that carries P from
 * a source pixel q to the frame of a target pixel p along the great circle,
 * as a function of the two colatitudes and dphi = phi_q - phi_p only;
 * 1 at p = q. Conjugated by dphi -> -dphi, by the north/south mirror
 * (theta -> pi - theta for both) and by exchanging p and q (with -dphi). */
double complex ref_spin2_rotation(double theta_p, double theta_q,
                                  double dphi);

/* P'_p = sum_q w_q K(alpha_pq) e^{2i(psi_p - psi_q)} P_q over the q with
 * alpha_pq <= cutoff, P = Q + iU. pix, npixout and threads as in
 * ref_direct_sum (q_out[i], u_out[i] the values at pixel pix[i]). */
int ref_direct_sum_spin2(const arkcos_geometry *g, const arkcos_kernel *k,
                         const double *q_in, const double *u_in,
                         double *q_out, double *u_out, const int64_t *pix,
                         int64_t npixout, int threads, arkcos_error *err);

/* The harmonic equivalent: E_lm and B_lm are multiplied by
 * K_l^(2) = 2 pi int_0^cutoff K(beta) d^l_22(beta) sin(beta) dbeta,
 * l = 0..lmax (0 for l < 2), by composite Gauss-Legendre quadrature and the
 * three-term recurrence of d^l_22 in l. kl2 has lmax + 1 entries. */
int ref_kernel_legendre_spin2(const arkcos_kernel *k, int lmax, double *kl2,
                              arkcos_error *err);

/* ----------------------------------------------------- harmonic space */

int64_t ref_alm_size(int lmax);
static inline int64_t ref_alm_index(int lmax, int l, int m) {
  return (int64_t)m * (2 * lmax + 1 - m) / 2 + l;
}

/* map -> a_lm with `iter` Jacobi iterations (libsharp). ring_weights: NULL
 * or one weight factor per ring (HEALPix ring weights, 1 + w as healpy). */
int ref_map2alm(const arkcos_geometry *g, int lmax, int iter,
                const double *map, const double *ring_weights,
                double complex *alm, int threads, arkcos_error *err);
int ref_alm2map(const arkcos_geometry *g, int lmax, const double complex *alm,
                double *map, int threads, arkcos_error *err);
/* a_lm *= kl[l] */
void ref_alm_scale(int lmax, const double *kl, double complex *alm);

/* FSHT smoothing: map2alm (iter), * K_l of the same kernel, alm2map. */
int ref_fsht_smooth(const arkcos_geometry *g, const arkcos_kernel *k,
                    const double *in, double *out, int lmax, int iter,
                    const double *ring_weights, int threads,
                    arkcos_error *err);

/* The same for Q, U as a spin-2 field (libsharp's spin-2 transforms,
 * healpy's convention): E and B multiplied by K_l^(2)
 * (ref_kernel_legendre_spin2). */
int ref_fsht_smooth_spin2(const arkcos_geometry *g, const arkcos_kernel *k, const double *q,
                          const double *u, double *q_out, double *u_out, int lmax, int iter,
                          const double *ring_weights, int threads, arkcos_error *err);

/* Q, U = the spin-2 alm2map of E and B (libsharp, healpy's convention, as
 * healpy.alm2map([T, E, B], pol=True) gives Q and U). */
int ref_alm2map_spin2(const arkcos_geometry *g, int lmax, const double complex *alm_e,
                      const double complex *alm_b, double *q, double *u, int threads,
                      arkcos_error *err);

/* Reads healpy-data's weight_ring_n<nside>.fits (2 nside corrections w for
 * the northern rings, equator included; mirrored to the south) into
 * g->nrings factors 1 + w, ready for ref_map2alm. */
int ref_read_ring_weights(const char *path, const arkcos_geometry *g,
                          double *ring_weights, arkcos_error *err);
/* Looks for weight_ring_n<nside>.fits in $ARKCOS_HEALPY_DATA,
 * /usr/share/healpy/data and /usr/local/share/healpy/data; 1 and the path if
 * found, else 0. */
int ref_find_ring_weights(int64_t nside, char *path, size_t len);

/* ------------------------------------------------ spectra and fields */

/* Built-in CMB-like C_l (muK^2, C_0 = C_1 = 0), l = 0..lmax. */
void ref_cl_cmb(int lmax, double *cl);
/* Text file with `l C_l` columns ('#' comments, blank lines and further
 * columns ignored); l above lmax ignored, missing l are 0. Malformed lines
 * (non-numeric, non-integer or negative l, negative C_l, repeated l) give
 * ARKCOS_EINVAL with "path:line: ..."; an unreadable file ARKCOS_EIO. */
int ref_cl_read(const char *path, int lmax, double *cl, arkcos_error *err);
/* Gaussian random a_lm with spectrum cl, reproducible from seed on every
 * machine (xoshiro256** + Box-Muller); a_l0 real. */
void ref_alm_random(const double *cl, int lmax, uint64_t seed,
                    double complex *alm);
/* C_l of two a_lm sets (alm2 may equal alm1), l = 0..lmax. */
void ref_alm2cl(int lmax, const double complex *alm1,
                const double complex *alm2, double *cl);

typedef struct ref_source {
  double theta, phi, amplitude;
} ref_source;

/* Sets map to 0, then adds each source's amplitude to the pixel containing
 * (theta, phi). HEALPix only. */
int ref_point_sources(const arkcos_geometry *g, const ref_source *src, int n,
                      double *map, arkcos_error *err);

/* -------------------------------------------------------------- metrics */

enum { REF_NORTH = 0, REF_BELT = 1, REF_SOUTH = 2, REF_NREGIONS = 3 };

typedef struct ref_metrics {
  double frac_rms;                 /* rms(a - b) / rms(b) */
  double max_rel;                  /* max |a - b| / rms(b) */
  double frac_rms_region[REF_NREGIONS]; /* per region, relative to rms(b) over the whole map */
  double max_rel_region[REF_NREGIONS];
  int64_t npix_region[REF_NREGIONS];
} ref_metrics;

/* Regions: north cap z > 2/3, belt |z| <= 2/3, south cap z < -2/3. */
int ref_region_of_theta(double theta);
void ref_compare(const arkcos_geometry *g, const double *a, const double *b,
                 ref_metrics *m);
/* The same metrics at n listed pixels of a HEALPix map (a[i], b[i] the
 * values at pixel pix[i]): plain means over the n values, each pixel in the
 * region of its centre; NaN where a region has no pixel or rms(b) is 0. */
void ref_compare_values(const arkcos_geometry *g, const int64_t *pix,
                        const double *a, const double *b, int64_t n,
                        ref_metrics *m);

/* The same metrics for a spin-2 field P = Q + iU (a the case, b the
 * reference): |P_a - P_b| in place of |a - b| and the rms of |P_b| in place
 * of rms(b), so that they do not depend on the orientation of the frame. */
void ref_compare_spin2(const arkcos_geometry *g, const double *qa, const double *ua,
                       const double *qb, const double *ub, ref_metrics *m);
void ref_compare_values_spin2(const arkcos_geometry *g, const int64_t *pix, const double *qa,
                              const double *ua, const double *qb, const double *ub, int64_t n,
                              ref_metrics *m);

/* Largest |map| at angular distance > radius from (theta, phi), relative to
 * the largest |map| within radius. */
double ref_ringing(const arkcos_geometry *g, const double *map, double theta,
                   double phi, double radius);
/* Several sources: largest |map| farther than radius from every source,
 * relative to the largest |map| within radius of any. */
double ref_ringing_sources(const arkcos_geometry *g, const double *map,
                           const ref_source *src, int n, double radius);
/* Ringing per source and by region (HEALPix): each source is placed at
 * the centre of the pixel holding it, every pixel belongs to its nearest
 * source; per source, the largest |map| of its pixels farther than radius
 * (1 + 1e-9) relative to the largest within (sources with no nonzero pixel
 * within are left out). belt / cap: the largest ratio over the sources
 * whose given theta is in the belt / in either polar cap, -1 where there is
 * none. ref_ringing and ref_ringing_sources share this walk (sources as
 * given, no margin). ARKCOS_ENOMEM (belt = cap = -1) if out of memory. */
int ref_ringing_by_region(const arkcos_geometry *g, const double *map,
                          const ref_source *src, int n, double radius,
                          double *belt, double *cap);

/* Spectrum comparison of maps a and b (b the reference), both through
 * map2alm with `iter` Jacobi iterations up to lmax (>= 1): over the l in
 * [2, lmax] with C_l^b > 0, the relative residual (C_l^a - C_l^b) / C_l^b
 * and the difference-map spectrum C_l^{a-b} / C_l^b. cl_a, cl_b, cl_diff
 * (lmax + 1 entries each) may be NULL. */
typedef struct ref_spectra_metrics {
  int lmax;
  int nl;                   /* number of l compared */
  double max_rel_residual;  /* max |C_l^a - C_l^b| / C_l^b */
  double rms_rel_residual;  /* rms over l of the same */
  double max_diff_ratio;    /* max C_l^{a-b} / C_l^b */
  double mean_diff_ratio;   /* mean over l of the same */
} ref_spectra_metrics;
int ref_compare_spectra(const arkcos_geometry *g, const double *a,
                        const double *b, int lmax, int iter, int threads,
                        double *cl_a, double *cl_b, double *cl_diff,
                        ref_spectra_metrics *sm, arkcos_error *err);
/* The same metrics from given spectra (lmax + 1 entries each): cl_b the
 * reference spectrum (e.g. the exact one of K_l a_lm), cl_diff that of the
 * difference map. A NaN residual or ratio is kept (reported, not hidden). */
void ref_compare_cl(int lmax, const double *cl_a, const double *cl_b,
                    const double *cl_diff, ref_spectra_metrics *sm);

/* Gnomonic projection around (theta, phi): n x n image (row-major, row 0 at
 * the bottom) of side `side` radians, nearest-pixel values. HEALPix only. */
int ref_patch(const arkcos_geometry *g, const double *map, double theta,
              double phi, double side, int n, double *img, arkcos_error *err);
/* A patch for gnuplot: "x_deg y_deg value" lines, a blank line after each
 * row (splot ... with pm3d / plot ... with image), or as a FITS image with
 * linear tangent-plane axes in degrees. logscale: log10|value| (NaN where
 * the value is 0). Written to a temporary file and renamed into place. */
int ref_patch_write_text(const char *path, const double *img, int n,
                         double side, int logscale, arkcos_error *err);
int ref_patch_write_fits(const char *path, const double *img, int n,
                         double side, int logscale, arkcos_error *err);

#ifdef __cplusplus
}
#endif
#endif
