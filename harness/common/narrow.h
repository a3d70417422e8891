/*
 * narrow.h -- kernels that are narrow against the pixels (docs/NARROW_BEAMS.md).
 *
 * The pixels per FWHM, the measured table and the messages are the engine's
 * (arkcos/smoother_narrow.h, the narrow-kernel rule of arkcos_smoother);
 * here the --normalize of `arkcos run`: A(1) of a smoother of method.h.
 * Shared by `arkcos run` (sweep_method.c) and tools/narrow_beams.
 */
#ifndef ARKCOS_HARNESS_NARROW_H
#define ARKCOS_HARNESS_NARROW_H

#include <stddef.h>
#include <stdint.h>

#include "arkcos/arkcos.h"
#include "arkcos/smoother_narrow.h"
#include "harness/common/method.h"

/* --normalize: *w = A(1) over the map (npix values, malloc'd), the
 * smoother's response to a constant map of 1. ARKCOS_EINVAL where it is
 * not positive at some pixel (a kernel with negative lobes), naming the
 * count. */
int narrow_weights(smoother *sm, int64_t npix, double **w, arkcos_error *err);
/* out[p] /= w[p] */
void narrow_normalize(double *out, const double *w, int64_t npix);

#endif
