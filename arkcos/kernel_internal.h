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

/* The truncated, normalised profile (for the backends). */
static inline const arkcos_kfun *arkcos_kernel_fun(const arkcos_kernel *k) {
  return &k->f;
}
#endif
