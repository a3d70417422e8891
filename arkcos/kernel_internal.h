/* kernel_internal.h -- the kernel object behind the opaque arkcos_kernel. */
#ifndef ARKCOS_KERNEL_INTERNAL_H
#define ARKCOS_KERNEL_INTERNAL_H
#include "arkcos/arkcos.h"
#include "arkcos/arkcos_math.h"

struct arkcos_kernel {
  arkcos_kfun f;      /* truncated, normalised profile */
  double *spline;     /* TABLE: owned coefficient array (f.spline points here) */
  double extent;      /* where the untruncated profile ends (pi or last knot) */
  double cutoff_rel;  /* K(cutoff) / K(0) */
};

/* A Gaussian of this fwhm times the smooth factor sum_k a[k] T_k(2 alpha^2 /
 * fitcut^2 - 1) (n <= ARKCOS_KPOLY_MAX), truncated at cut and normalised. */
arkcos_kernel *arkcos_kernel_create_gaussian_poly(double fwhm, double cut, const double *a, int n,
                                                  double fitcut, arkcos_error *err);

/* beam.c: healpy's Gaussian beam cut at the angle cut (> 0) or, cut 0,
 * where it falls below cutoff_rel K(0) */
arkcos_kernel *arkcos_kernel_gaussian_harmonic_cut(double fwhm, double cutoff_rel, double cut,
                                                   arkcos_error *err);

/* Gauss-Legendre nodes x (increasing) and weights w on [-1, 1], n of each. */
void arkcos_gauss_legendre(int n, double *x, double *w);

/* The truncated, normalised profile (for the backends). */
static inline const arkcos_kfun *arkcos_kernel_fun(const arkcos_kernel *k) {
  return &k->f;
}
#endif
