/*
 * smoother_narrow.h -- kernels that are narrow against the pixels
 * (docs/NARROW_BEAMS.md), internal to the engine and its programs.
 *
 * A pixel-space kernel is only summed at pixel centres: the direct sum
 * (4 pi / npix) sum_q K(alpha_pq) approximates the kernel's integral, which
 * is 1, only when the kernel spans a few pixels. The figure that decides it
 * is the number of pixels per FWHM, FWHM / sqrt(4 pi / npix). For a Gaussian
 * the FWHM is its own; for any other kernel (top-hat, table) it is the
 * effective width sqrt(4 ln 2 <alpha^2>), <alpha^2> the |K|-weighted mean of
 * alpha^2 over the sphere within the cutoff: the FWHM of the Gaussian with
 * the same second moment (1.18 R for a top-hat of radius R).
 *
 * Below NARROW_REFUSE pixels per FWHM a pixel-space method is refused
 * (arkcos_smoother_check); below NARROW_WARN it is warned about, with the
 * error measured against harmonic smoothing at that sampling (the table in
 * smoother_narrow.c, made by tools/narrow_beams). Harmonic smoothing does
 * not sample the kernel in pixel space and is not concerned.
 */
#ifndef ARKCOS_SMOOTHER_NARROW_H
#define ARKCOS_SMOOTHER_NARROW_H

#include <stddef.h>
#include <stdint.h>

#include "arkcos/arkcos.h"

#define NARROW_REFUSE 1.0 /* pixels per FWHM: below, refused */
#define NARROW_WARN 2.5   /* below, a warning with the expected error */

/* sqrt(4 pi / npix) of a HEALPix nside, radians. */
double narrow_pixel_size(int64_t nside);
/* The kernel's width in radians: fwhm when > 0 (a Gaussian's own), else the
 * effective width of k (above). */
double narrow_kernel_width(const arkcos_kernel *k, double fwhm);
double narrow_pixels_per_fwhm(double width, int64_t nside);

/* One row of the measured table (docs/NARROW_BEAMS.md, nside 256): Gaussians
 * cut at 1e-5, arkcos (= the direct sum) against libsharp smoothing
 * (lmax 3 nside - 1, iter 3) of a random map with a white spectrum up to
 * l = 2 nside. */
typedef struct narrow_expect {
  double ppf;           /* pixels per FWHM */
  double frac_rms;      /* rms(arkcos - fsht) / rms(fsht) */
  double frac_rms_norm; /* the same with --normalize */
  double const_min, const_max; /* a smoothed constant map of 1 */
} narrow_expect;

/* The table's rows (*n of them, ascending ppf). */
const narrow_expect *narrow_table(int *n);
/* The figures at ppf: log-linear interpolation between the rows, the end
 * rows outside them. */
void narrow_expected(double ppf, narrow_expect *e);

/* "1.60 pixels per FWHM at nside 512 (FWHM 11' over pixels of 6.87')";
 * gaussian: whether the FWHM is the kernel's own or its effective width. */
void narrow_describe(double width, int gaussian, int64_t nside, char *buf, size_t len);
/* The response A(1) of the direct sum to a constant map of 1 at a sample
 * of pixels (every ring near the poles and the equator, spread over the
 * others, a few pixels each): its min and max. ARKCOS_OK or an error. */
int narrow_constant_range(const arkcos_geometry *g, const arkcos_kernel *k, double *lo,
                          double *hi, arkcos_error *err);
/* Why a kernel below NARROW_REFUSE is refused (no trailing newline), naming
 * the caller's harmonic smoothing and its way to sum anyway where not NULL
 * (arkcos_smoother_spec's names); narrow_refusal: the command's. */
void narrow_refusal_named(double width, int gaussian, int64_t nside, double lo, double hi,
                          const char *harmonic_name, const char *allow_name, char *buf, size_t len);
void narrow_refusal(double width, int gaussian, int64_t nside, double lo, double hi,
                    char *buf, size_t len);
/* The warning between NARROW_REFUSE and NARROW_WARN: the expected error
 * from the table; lo, hi as above; normalize: whether --normalize is on;
 * normalize_name: how the caller names it (NULL: the remedy is not offered);
 * narrow_warning: "--normalize". */
void narrow_warning_named(double width, int gaussian, int64_t nside, double lo, double hi,
                          int normalize, const char *normalize_name, char *buf, size_t len);
void narrow_warning(double width, int gaussian, int64_t nside, double lo, double hi,
                    int normalize, char *buf, size_t len);

#endif
