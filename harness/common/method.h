/*
 * method.h -- the one place that decides which method smooths a map and on
 * which backend: `arkcos smooth`, `arkcos run` and the bindings all go
 * through a smoother made here.
 *
 * Methods: METHOD_ARKCOS (the engine, arkcos/), METHOD_DIRECT (the exact
 * pixel sum, reference/direct.c) and METHOD_FSHT (libsharp smoothing,
 * reference/sht.c). The backend of METHOD_ARKCOS follows the engine's one
 * rule (arkcos.h, arkcos_options.backend): AUTO is the GPU when a CUDA
 * device is usable and its plan can be made, else the CPU.
 *
 * One policy of the harness's own sits here too: a plan asked to cache its
 * kernel spectra that does not fit in memory is made again without the
 * cache (slower per map, same result), with a note.
 */
#ifndef ARKCOS_HARNESS_METHOD_H
#define ARKCOS_HARNESS_METHOD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "arkcos/arkcos.h"

typedef enum { METHOD_ARKCOS = 0, METHOD_DIRECT = 1, METHOD_FSHT = 2 } method_kind;
#define METHOD_NKINDS 3

/* "arkcos", "direct", "fsht" (the names of the command line and configs) */
const char *method_name(method_kind kind);
/* The kind named s, or -1. */
int method_from_name(const char *s);

typedef struct method_spec {
  method_kind kind;
  /* METHOD_ARKCOS: mode, precision, backend, cache and accuracy
   * (arkcos.accuracy: 0 exact, EPS > 0 the bound the plan may spend; the
   * options' own field, so that no second copy can disagree with it).
   * arkcos.spin (0 or 2) is every method's: 2 makes a spin-2 smoother. */
  arkcos_options arkcos;
  int threads;                 /* every method: OpenMP threads (<= 0: the default) */
  int lmax, iter;              /* METHOD_FSHT: band limit and Jacobi iterations */
  const double *ring_weights;  /* METHOD_FSHT: per-ring factors or NULL (borrowed) */
  int mpi_split;               /* METHOD_ARKCOS, spin 0 or 2: one map over the MPI ranks
                                * (hmpi.h; rank 0 calls, the others serve) */
} method_spec;

/* Defaults: METHOD_ARKCOS with arkcos_options_default, threads 0, FSHT
 * lmax 0 (must be set) and iter 3. */
void method_spec_default(method_spec *s);

/* The one translation of a method's options into a spec: m is a method
 * object keyed as the option table (options.h) keys them, a normalized
 * config's "methods[i]" or a parsed command line: "name" (default arkcos),
 * arkcos: backend, mode, precision, cache_kernel_spectra, weights, accuracy; fsht:
 * iter, and the band limit "lmax" or else method_lmax("lmax_factor",
 * nside) (3 nside - 1 without either). A key left out takes the table's
 * default. threads and spin stay 0 (the caller's), so does lmax when
 * nside is 0. ARKCOS_EINVAL for an unknown name. */
int method_spec_from_json(const json_t *m, int64_t nside, method_spec *s, arkcos_error *err);

/* The band limit of a lmax_factor at nside: floor(f * nside), at least 1
 * and at most 3 nside - 1 (HEALPix cannot resolve more; f = 3 gives
 * healpy's default 3 nside - 1, f = 2 the paper's lmax = 2 nside). */
int method_lmax(double lmax_factor, int64_t nside);

/* The method's canonical id, the "method=" part of a case id: "arkcos
 * backend=cpu mode=enhanced precision=double", "fsht iter=3
 * lmax_factor=2", "direct sample=3000". Keys that were added later
 * (cache_kernel_spectra, weights, accuracy, ring_weights, sample) appear only when
 * set, so that the ids of earlier results stay valid. Its label (the
 * summary.csv column) is results_doc_method_label of the same object. */
void method_id(const json_t *m, char *buf, size_t len);

typedef struct smoother smoother;

/* Prepares a method for one geometry and kernel (both borrowed: they must
 * outlive the smoother). For METHOD_ARKCOS this is the plan; the time it
 * took is smoother_plan_time. NULL with err filled on failure. */
smoother *smoother_create(const method_spec *s, const arkcos_geometry *g,
                          const arkcos_kernel *k, arkcos_error *err);

/* out = the smoothed map (g->npix values). in and out must differ. */
int smoother_apply(smoother *sm, const double *in, double *out, arkcos_error *err);

/* The smoothed values at the n listed pixels only (out[i] at pix[i]);
 * METHOD_DIRECT only, ARKCOS_EINVAL otherwise. */
int smoother_apply_pixels(smoother *sm, const double *in, const int64_t *pix, int64_t n,
                          double *out, arkcos_error *err);

/* Spin-2 smoothers (spec.arkcos.spin = 2, every method): Q, U in healpy's
 * convention smoothed as P = Q + iU with parallel transport (arkcos:
 * arkcos_execute_spin2; direct: ref_direct_sum_spin2; fsht: libsharp's
 * spin-2 transforms, E and B times K_l^(2)). smoother_apply on a spin-2
 * smoother, or these on a scalar one, is ARKCOS_EINVAL. */
int smoother_apply_spin2(smoother *sm, const double *q, const double *u, double *q_out, double *u_out,
                         arkcos_error *err);
int smoother_apply_pixels_spin2(smoother *sm, const double *q, const double *u, const int64_t *pix,
                                int64_t n, double *q_out, double *u_out, arkcos_error *err);
int smoother_spin(const smoother *sm); /* 0 or 2 */

method_kind smoother_kind(const smoother *sm);
/* METHOD_ARKCOS: the backend that runs (CPU or GPU); ARKCOS_BACKEND_CPU otherwise. */
arkcos_backend smoother_backend(const smoother *sm);
/* Stage times of the last apply (METHOD_ARKCOS; zeros otherwise). */
void smoother_stages(const smoother *sm, arkcos_stage_times *t);
double smoother_plan_time(const smoother *sm); /* seconds; 0 but for ARKCOS */
/* the plan's stages (arkcos_plan_setup_times); zeros but for ARKCOS plans of one process */
void smoother_plan_setup(const smoother *sm, arkcos_plan_times *t);
size_t smoother_plan_memory(const smoother *sm); /* bytes; 0 but for ARKCOS */
arkcos_plan *smoother_engine_plan(const smoother *sm); /* ARKCOS's plan, else NULL */
/* A-priori bound b of the method against the direct pixel sum: for every
 * input x, max_p |out_p - direct_p| <= b * max_q |x_q|. METHOD_ARKCOS: the
 * plan's (arkcos_plan_bound; +infinity in paper mode); METHOD_DIRECT: 0
 * (it is the direct sum); METHOD_FSHT: +infinity (a band limit has no
 * bound against a pixel sum). */
double smoother_bound(const smoother *sm);
/* "" when the method is exact against the direct sum (or is not arkcos);
 * else why not (arkcos_plan_exactness: a kernel too wide in pixels). */
const char *smoother_exactness(const smoother *sm);
/* Why the backend or the cache differ from what was asked ("" if not). */
const char *smoother_note(const smoother *sm);

void smoother_destroy(smoother *sm); /* NULL is a no-op */

#endif
