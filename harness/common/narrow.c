/* narrow.c -- --normalize of `arkcos run` (narrow.h): A(1) of a smoother
 * and the division by it. */
#include <stdlib.h>

#include "harness/common/narrow.h"

int narrow_weights(smoother *sm, int64_t npix, double **w, arkcos_error *err) {
  *w = NULL;
  if (npix < 1) return arkcos_fail(err, ARKCOS_EINVAL, "--normalize: no pixels");
  double *one = calloc((size_t)npix, sizeof *one);
  *w = malloc(sizeof **w * (size_t)npix);
  if (!one || !*w) {
    free(one);
    free(*w);
    *w = NULL;
    return arkcos_fail(err, ARKCOS_ENOMEM, "--normalize: out of memory for the weight map");
  }
  for (int64_t p = 0; p < npix; p++) one[p] = 1;
  int rc = smoother_apply(sm, one, *w, err);
  free(one);
  int64_t bad = 0;
  for (int64_t p = 0; !rc && p < npix; p++) bad += !((*w)[p] > 0);
  if (!rc && bad)
    rc = arkcos_fail(err, ARKCOS_EINVAL,
                     "--normalize: the kernel's discrete sum is not positive at %lld of %lld "
                     "pixels (negative lobes); cannot divide by it", (long long)bad,
                     (long long)npix);
  if (rc) {
    free(*w);
    *w = NULL;
  }
  return rc;
}

void narrow_normalize(double *out, const double *w, int64_t npix) {
  for (int64_t p = 0; p < npix; p++) out[p] /= w[p];
}
