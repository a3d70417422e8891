/*
 * smoother_internal.h -- the insides of arkcos_smoother (arkcos.h), shared
 * by smoother.c (spec, kernels, plans, warnings) and smoother_mask.c (one
 * call: missing data, masks, Q and U, NESTED order).
 */
#ifndef ARKCOS_SMOOTHER_INTERNAL_H
#define ARKCOS_SMOOTHER_INTERNAL_H

#include <stdint.h>

#include "arkcos/arkcos.h"
#include "arkcos/polar.h"

struct arkcos_smoother {
  arkcos_smoother_spec spec;   /* as given (beam dropped; op points at op below) */
  arkcos_smoother_operator op; /* the caller's, when has_op */
  int has_op;
  int identity;                /* fwhm 0: no smoothing */
  arkcos_geometry *g;
  const arkcos_kernel *k[2];   /* of spin 0 and 2 (k[1] may be k[0]) */
  arkcos_kernel *own[2];       /* those made here */
  arkcos_plan *plan[2];        /* the engine's, made at first need */
  int ready[2];                /* plan made / operator prepared */
  double width;                /* the kernel's (effective) FWHM, radians */
  int64_t *n2r;                /* NESTED: RING index of each NESTED pixel */
  double *norm_w;              /* normalize: A(1) (A(W) with ring quadrature), at first need */
  double *norm_polar;          /* with polar: A(1) + its correction of 1 at the caps' outputs (north
                                * arkcos_polar_out_pixels, then their mirrors), the scalar maps' divisor */
  int ring_quadrature;         /* g's rings weighted by arkcos_healpix_ring_weights */
  int normalize;               /* divide by norm_w: spec.normalize or ring quadrature */
  arkcos_polar *polar;         /* ring quadrature's polar reconstruction (polar.h), or NULL */
  int polar_caps;              /* the caps it corrects in the next spin-0 apply (bits 0, 1) */
  arkcos_polar *polar2;        /* its spin-2 form for Q and U (arkcos_polar_create_spin2), or NULL */
  int polar2_caps;             /* the caps it corrects in the next spin-2 apply */
  double polar_time;           /* seconds spent making polar and polar2 (plan work) */
  int *polar_used;             /* the last execute's caps corrected, per map (nreports) */
  arkcos_warning *warn;
  int nwarn, capwarn;
  arkcos_smoother_report last; /* the last execute */
  arkcos_smoother_map_report *reports;
  int nreports;
};

int smoother_warn(arkcos_smoother *s, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The scalar and spin-2 smoothing of RING maps (the identity, the plan or
 * the operator); the plans' stages are added to s->last.stages. */
int smoother_apply0(arkcos_smoother *s, const double *in, double *out, arkcos_error *err);
/* Two scalar maps through the spin-0 plan in one call (arkcos_execute_two:
 * the direct pairs' weights computed once for both), each as
 * smoother_apply0 gives it; four distinct arrays. */
int smoother_apply0_two(arkcos_smoother *s, const double *in1, double *out1, const double *in2, double *out2,
                        arkcos_error *err);
int smoother_apply2(arkcos_smoother *s, const double *q, const double *u, double *qo, double *uo,
                    arkcos_error *err);
int smoother_ring_quadrature(const arkcos_smoother_spec *s);
/* s->norm_polar from s->norm_w (A(1) without the polar correction, as Q
 * and U are divided): 0, or ENOMEM. */
int smoother_polar_norm(arkcos_smoother *s);
/* The polar correction of 1: arkcos_smoother_polar_delta_one (polar.h). */

#endif
