/*
 * sweep.h -- what the pieces of `arkcos run` share (internal to harness/):
 *   sweep.c          the command: arguments, config, resume, the loop over
 *                    nside x kernel x method x threads, progress, summary
 *   sweep_case.c     one case: run, record (ok, skipped, failed)
 *   sweep_method.c   one method run through method.h, timed; skip reasons
 *                    (an arkcos plan judged by the engine, arkcos_plan_check)
 *                    and the estimate of the harness's maps
 *   sweep_input.c    the input map (random field, point sources, FITS)
 *   sweep_reference.c the reference of an (nside, kernel) and the metrics
 *                    (computed by reference/, recorded here)
 *   sweep_outputs.c  maps, patches and spectra files of a case
 */
#ifndef ARKCOS_HARNESS_SWEEP_H
#define ARKCOS_HARNESS_SWEEP_H

#include <complex.h>
#include <stdint.h>

#include "arkcos/arkcos.h"
#include "harness/sweep/config.h"
#include "harness/common/results.h"
#include "reference/reference.h"

/* A method's result: a full map, or the values at sampled pixels. A spin-2
 * case (Q, U) keeps Q in map / vals and U in map_u / vals_u. */
typedef struct method_out {
  double *map;   /* npix values, or NULL */
  int64_t *pix;  /* sampled pixels (sample order) */
  double *vals;
  int64_t n;
  double *map_u, *vals_u; /* spin 2: U; NULL for scalar cases */
} method_out;

typedef struct timing {
  double *samples;
  double *cpu_samples;           /* the process's CPU time of each sample */
  int n;
  double plan_time;              /* arkcos plan creation, seconds */
  arkcos_plan_times plan_setup;  /* its stages (arkcos_plan_setup_times) */
  arkcos_stage_times *stages;    /* per sample (arkcos) */
  int backend_used;              /* arkcos */
  size_t plan_memory;            /* arkcos */
  double bound;                  /* arkcos: smoother_bound (+inf: none) */
  char inexact[512];             /* arkcos: smoother_exactness ("" exact) */
  int lmax;                      /* fsht */
} timing;

/* The input map of one nside, made on first use. */
typedef struct input_state {
  int64_t nside;
  int ready;
  int lmax;              /* random: band limit */
  double *cl;            /* random: input spectrum 0..lmax */
  double complex *alm;   /* random */
  double *map;           /* the scalar input (I of a polarized input) */
  /* input.pol: E and B spectra and a_lm (0..lmax), and Q, U = their spin-2 alm2map */
  double *cl_e, *cl_b;
  double complex *alm_e, *alm_b;
  double *q, *u;
} input_state;

/* The reference of one (nside, kernel). */
typedef struct ref_state {
  int tried, available;
  char why[1200];
  method_out out;
  int cl_lmax;           /* cached spectrum of the reference map */
  double *cl;
} ref_state;

typedef struct run_ctx {
  run_config *cfg;
  arkcos_kernel **kernels;
  double *kernel_width;  /* per kernel: its (effective) FWHM in radians (narrow.h) */
  int nwarned;           /* cases run now that sample their kernel coarsely */
  results_doc doc;
  double *fits_map;      /* fits input, read once */
  int64_t fits_nside;
  int max_threads;       /* for input generation and untimed references */
  int spin;              /* the cases being run: 0 scalar, 2 spin 2 (Q, U of input.pol) */
  /* progress */
  int total, index, ran_now, to_run;
  double t_start;
  int progress;
  long stop_after;       /* ARKCOS_TEST_STOP_AFTER: simulated kill */
  /* over MPI ranks (sweep_mpi.c) */
  long mpi_seq;          /* cases to run met so far, on every rank */
  json_t *mpi_held;      /* this rank's finished cases of the current (nside, kernel) */
  const char *cfgpath;   /* as given (messages) */
  int lock_fd;           /* the output folder's lock (util.h folder_lock), -1 none */
} run_ctx;

/* sweep_case.c */
/* The spins a config's cases run with: 0, and 2 as well with input.pol
 * (every case once scalar on I and once spin 2 on Q, U). */
int sweep_nspins(const run_config *cfg);
/* spin: 0 scalar, 2 the spin-2 case (its id and slug say so). */
void sweep_case_id(const run_config *cfg, int64_t nside, int ki, int mi, int threads, int spin,
                   char *buf, size_t len);
void sweep_case_slug(const run_config *cfg, int64_t nside, int ki, int mi, int threads, int spin,
                     char *out, size_t len);
int sweep_run_case(run_ctx *c, const arkcos_geometry *g, int ki, int mi, int threads,
                   const char *id, input_state *in, ref_state *rs);
/* The n cases mis[] of one (nside, kernel, threads), their repeats in turns
 * (config "interleave"); recorded in the order of mis. Returns how many
 * failed. */
int sweep_run_group(run_ctx *c, const arkcos_geometry *g, int ki, const int *mis, int n,
                    int threads, input_state *in, ref_state *rs);

/* One method being timed, in steps, so that the repeats of several methods
 * can interleave (config "interleave"): begin (plan, warm-up), sample (one
 * timed apply each call, up to `repeats`), end (the smoother freed; t and
 * out stay for the record and are freed by the caller). */
typedef struct method_run {
  const cfg_method *m;
  const double *in_u;    /* spin 2: U (the samples' `in` is Q); NULL scalar */
  int threads, repeats;
  struct smoother *sm;
  double *w;             /* fsht ring weights */
  timing t;
  method_out out;
} method_run;

/* sweep_method.c */
/* `arkcos run` times OpenMP threads that wait passively at a barrier
 * (OMP_WAIT_POLICY=passive) instead of spinning, so that a repeat's CPU time
 * (time.cpu_samples) is the work of its threads, whatever the machine's
 * load: libgomp reads the variable once, when it is loaded, so a run whose
 * environment sets neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT executes
 * itself again (/proc/self/exe) with OMP_WAIT_POLICY=passive added. A
 * policy set by the caller is kept. Not in MPI builds (MPI is initialised
 * by then). Returns only when there is nothing to do or the exec failed. */
void sweep_wait_passively(int argc, char **argv);
/* meta.omp_wait_policy of a new results document: "passive", the value
 * of OMP_WAIT_POLICY, "default (spinning)" when it is unset, followed by
 * " GOMP_SPINCOUNT=N" when that is set (`arkcos compare` judges
 * multi-threaded cases on CPU time only where both runs say "passive"). */
json_t *sweep_wait_policy(void);
int sweep_method_begin(method_run *r, const cfg_method *m, const arkcos_geometry *g,
                       const arkcos_kernel *k, const double *in, const double *in_u, int threads,
                       int repeats, int warmup, double max_memory, arkcos_error *err);
int sweep_method_sample(method_run *r, const double *in, arkcos_error *err);
void sweep_method_end(method_run *r);
/* Why a case cannot run here, in why: 0 it can, 1 it is skipped, 2 it
 * fails (the case, or its plan, cannot fit in what the process can have at
 * all, arkcos_memory_limit). An arkcos plan is judged by the engine
 * (arkcos_plan_check: memory, spin 2, the GPU). */
int sweep_skip_reason(run_ctx *c, const cfg_method *m, const arkcos_geometry *g,
                      const arkcos_kernel *k, char *why, size_t len);
int sweep_threads(int t); /* t, or the cores this process may use when t <= 0 */
/* in_u: NULL for a scalar run of in; else in, in_u are Q, U, smoothed as
 * one spin-2 field (each timed sample is one spin-2 apply of both).
 * max_memory: the arkcos plan's limit (arkcos_options.max_memory; 0 none). */
int sweep_run_method(const cfg_method *m, const arkcos_geometry *g, const arkcos_kernel *k,
                     const double *in, const double *in_u, int threads, int repeats, int warmup,
                     double max_memory, timing *t, method_out *out, arkcos_error *err);
/* The case's maps alone exceed what the process can have at all
 * (arkcos_memory_limit: ulimit -v, cgroup, free memory): 2 with the reason,
 * whatever limits.memory_bytes says (the case fails); or they exceed the
 * memory limit (limits.memory_bytes, else the memory available now as the
 * engine counts it, arkcos_memory_available): 1 with the reason (the case
 * is skipped). Needs no geometry, so an nside far too large is judged
 * before its rings are made. */
int sweep_memory_reason(const run_ctx *c, const cfg_method *m, int64_t nside, char *why,
                        size_t len);
/* What an arkcos plan may hold (its max_memory): the memory limit, capped at
 * arkcos_memory_limit, less the case's maps; at least 1 byte. */
double sweep_plan_memory_limit(const run_ctx *c, const cfg_method *m, int64_t nside);
/* Records a case skipped for `why` without running it (no geometry needed). */
/* Records a case as failed with the reason, without running it (one that
 * cannot fit in what the process can have). */
void sweep_record_fail(run_ctx *c, int64_t nside, int ki, int mi, int threads, const char *id,
                       ref_state *rs, const char *why);
void sweep_record_skip(run_ctx *c, int64_t nside, int ki, int mi, int threads, const char *id,
                       ref_state *rs, const char *why);
void method_out_free(method_out *o);
void timing_free(timing *t);

/* sweep_input.c */
int sweep_make_input(run_ctx *c, const arkcos_geometry *g, input_state *in,
                     arkcos_error *err);
void sweep_input_free(input_state *in);
/* The configured point sources in radians (phi in [0, 2 pi)); NULL if out of memory. */
ref_source *sweep_sources(const run_config *cfg);
/* K_l a_lm of the random input up to in->lmax (the exact smoothed field). */
double complex *sweep_exact_alm(const run_ctx *c, int ki, const input_state *in,
                                arkcos_error *err);
/* K_l^(2) E_lm and K_l^(2) B_lm of a polarized input (2 ref_alm_size(lmax)
 * values: E, then B; the exact smoothed spin-2 field). */
double complex *sweep_exact_alm_spin2(const run_ctx *c, int ki, const input_state *in,
                                      arkcos_error *err);

/* sweep_reference.c */
void sweep_ensure_reference(run_ctx *c, const arkcos_geometry *g, int ki, input_state *in,
                            ref_state *rs);
json_t *sweep_metrics(run_ctx *c, const arkcos_geometry *g, int ki, input_state *in,
                      ref_state *rs, const method_out *mine, json_t *cj);
void sweep_ref_free(ref_state *r);
void sweep_set_real(json_t *o, const char *key, double v); /* finite values only */
double sweep_rms(const double *v, int64_t n);

/* sweep_outputs.c */
int sweep_write_outputs(run_ctx *c, const arkcos_geometry *g, int ki, int mi,
                        const input_state *in, ref_state *rs, const method_out *o,
                        const char *slug, json_t *cj, json_t *mj, arkcos_error *err);

/* sweep_mpi.c: the cases over MPI ranks (docs/MPI.md); with one process
 * each is a no-op (sweep_mpi_owner: always rank 0). */
int sweep_mpi_active(void);                          /* more than one rank */
int sweep_mpi_check(const run_ctx *c, const char *cfgpath); /* 0, or 2 with a message */
int sweep_mpi_share_doc(run_ctx *c);                 /* rank 0's document to every rank */
int sweep_mpi_owner(run_ctx *c);                     /* the rank of the next case to run */
void sweep_mpi_note(json_t *cj);                     /* "mpi": rank, size, host */
int sweep_mpi_hold(run_ctx *c, json_t *cj);          /* 1: held (stolen) for the merge */
/* rs from rank `from` (-1: rank 0 computes it now) to every rank */
void sweep_mpi_reference(run_ctx *c, const arkcos_geometry *g, int ki, input_state *in,
                         ref_state *rs, int from);
int sweep_mpi_merge(run_ctx *c);                     /* held cases recorded by rank 0 */
void sweep_mpi_free(run_ctx *c);

#endif
