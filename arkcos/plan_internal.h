/* plan_internal.h -- the plan behind the opaque arkcos_plan: what plan
 * creation derives from geometry and kernel once, shared by the backends. */
#ifndef ARKCOS_PLAN_INTERNAL_H
#define ARKCOS_PLAN_INTERNAL_H

#include <stdarg.h>

#include <pthread.h>

#include "arkcos/arkcos.h"
#include "arkcos/arkcos_math.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct arkcos_direct arkcos_direct;

struct arkcos_plan {
  arkcos_backend backend;    /* CPU or GPU, resolved */
  arkcos_options opt;
  arkcos_geometry *geom;     /* private copy */
  arkcos_kfun kf;            /* kernel profile; kf.spline -> spline */
  double *spline;
  int64_t L;                 /* kernel grid length: max ring length */
  int64_t nm;                /* L / 2 + 1 kernel-grid modes kept */
  int *jlo, *jhi;            /* input rings within the cutoff of ring i */
  int *mirror;               /* north/south partner of ring i, or -1 */
  int ntasks;                /* output rings (or mirror pairs) to process */
  int *task;                 /* the first ring of each task */
  /* tasks this plan computes, [task_lo, task_hi): all of them, but in the
   * band plans of arkcos_plan_create_mpi (arkcos_mpi.c), whose other
   * output rings stay untouched and whose input is read only on the rings
   * the band's pairs reach (ring_needed) */
  int task_lo, task_hi;
  int *cut, ncut;            /* a band plan made with another plan's bands
                              * (arkcos_plan_create_mpi_as): its ncut + 1 task
                              * boundaries, which arkcos_plan_split returns */
  double *sin_theta;         /* per ring */
  arkcos_stage_times last;
  arkcos_plan_times setup;   /* arkcos_plan_setup_times */
  char note[320];            /* why AUTO did not take the GPU ("" if it did) */
  arkcos_backend target;     /* the backend the paths are planned for: the
                              * one asked, or AUTO's choice (plan.c,
                              * plan_target) */
  size_t bytes;              /* memory held by the backend */
  double bound;              /* arkcos_plan_bound */
  int direct_caps;           /* pairs of rings off the kernel grid are summed
                              * directly (pairs_direct.c) */
  int smooth_caps;           /* ... or, exactly, by the oversampled Fourier
                              * path: a smooth, resolved kernel cut where it
                              * is negligible (plan.c, smooth_caps_exact) */
  int harmonic;              /* the whole plan through the kernel's Legendre
                              * series (harmonic.c): a smooth kernel of a low
                              * band limit (plan.c, harmonic_exact) */
  int harmonic_lmax;         /* its band limit l_K */
  int direct_fly;            /* ... with their weights computed in each
                              * execute, not tabulated (direct_weights) */
  arkcos_direct *direct;     /* their tables (or pair lists), or NULL */
  char exactness[512];       /* why an enhanced plan is not exact ("" if it is) */
  void *impl;                /* backend state */
  int (*execute)(arkcos_plan *, const double *, double *, arkcos_error *);
  int (*execute2)(arkcos_plan *, const double *, const double *, double *, double *,
                  arkcos_error *); /* spin-2 plans (spin2.c) */
  /* two scalar maps at once, each as execute would give it (bit for bit),
   * the direct pairs set up once for both (CPU plans; NULL elsewhere):
   * arkcos_execute_two */
  int (*execute_two)(arkcos_plan *, const double *, double *, const double *, double *, arkcos_error *);
  void (*destroy)(arkcos_plan *);
  void *mpi;                 /* arkcos_plan_create_mpi's state (arkcos_mpi.c), or NULL */
  int no_constant;           /* 1 during arkcos_execute_mpi_local_general: no constant map's
                              * shortcut (a band constant where the map is not) */
  void (*mpi_destroy)(arkcos_plan *);
  int nparts;                /* bands the tasks are split into (1: one process) */
  /* A band plan of the harmonic path: the a_lm of n doubles that this
   * band's analysis gave, summed over every band in place (collective; the
   * same values on every rank afterwards). Set by arkcos_mpi.c; a band
   * plan without it refuses to execute. */
  int (*alm_sum)(arkcos_plan *, double *a, int64_t n, arkcos_error *);
};

/* plan.c: the plan of rank `rank` of `nranks`, which computes only the
 * tasks of band arkcos_band_of_rank (arkcos_plan_split), with the same pair
 * arithmetic and summation order as the whole plan, so its output rings are
 * bit-identical to the whole plan's; CPU only, scalar or spin 2 (the
 * harmonic path's bands analyse and synthesise their own rings, their a_lm
 * summed by alm_sum: not bit for bit, within 4e-15); checked against
 * its own estimate (arkcos_plan_estimate_rank). nranks = 1 is
 * arkcos_plan_create. */
arkcos_plan *arkcos_plan_create_part(const arkcos_geometry *g, const arkcos_kernel *k,
                                     const arkcos_options *o, int rank, int nranks, arkcos_error *err);
/* The same with the bands given: task boundaries cut[0..nranks] (0 = cut[0]
 * <= cut[1] <= ... <= cut[nranks] = the plan's tasks; those of another
 * plan of the same geometry, arkcos_plan_split), kept by the plan. */
arkcos_plan *arkcos_plan_create_part_cut(const arkcos_geometry *g, const arkcos_kernel *k,
                                         const arkcos_options *o, int rank, int nranks, const int *cut,
                                         arkcos_error *err);
/* plan.c: the input values a plan can carry (finite; within float's
 * range in single precision), the first offending pixel named; what
 * arkcos_execute checks, and arkcos_execute_mpi on rank 0's whole maps */
int arkcos_plan_check_input(const arkcos_plan *p, const double *in, const char *name, arkcos_error *err);
/* Tasks split into nparts contiguous ranges balanced by modelled cost
 * (arkcos_plan_task_cost; ARKCOS_MPI_BANDS=pixels: by output pixels), or
 * the plan's given bands (cut): part r computes tasks [first[r],
 * first[r + 1]); first has nparts + 1. */
void arkcos_plan_split(const arkcos_plan *p, int nparts, int *first);
/* Task t's modelled seconds per map at one thread: direct sums, Fourier
 * pairs, ring FFTs (plan.c, the band cost model) */
void arkcos_plan_task_cost(const arkcos_plan *p, int t, double parts[3]);
/* The input rings read by the tasks [lo, hi) (their pairs' input rings and
 * mirrors): need[j] = 1 for those, 0 for the others (need has nrings). */
void arkcos_plan_rings_needed(const arkcos_plan *p, int lo, int hi, unsigned char *need);

/* The ring spectra of a pair-symmetric CPU plan (cpu_reduce.h,
 * pairsym_stage) in a window per thread: each thread transforms the rings
 * of the tasks its chunk reads as it goes, into w + 1 slots of 4 rows (a
 * task's ring and mirror, re and im) of row_bytes, instead of one row per
 * ring (rows_bytes in all) filled before. The same spectra (maps bit for
 * bit); a few per cent more ring FFTs (a chunk's first w tasks are
 * transformed by its neighbour too); the rows' memory never touched.
 * Returns w (the tasks ahead a task's pairs read) or -1 for the rows; the
 * backend and the plan's estimate both ask it. */
int arkcos_spectra_window(const arkcos_plan *p, int nthreads, double row_bytes, double rows_bytes);
/* The same for a spin-2 plan (cpu_spin2.h), whose tasks read either way:
 * w or -1, and the chunks' length in tasks (*chunk_len) */
int arkcos_spin2_window(const arkcos_plan *p, int nthreads, double row_bytes, double rows_bytes, int *chunk_len);
/* The task of every ring (a ring and its mirror share one), -1 for a ring
 * in none: nrings ints to free(), NULL when out of memory */
int *arkcos_ring_tasks(const arkcos_plan *p);
/* The chunks of a plan's tasks [task_lo, task_hi) that the windowed and
 * pair-symmetric schedules give the threads: at least len tasks, at most 8
 * chunks a thread (fewer prologues; a task's sums do not depend on where
 * the chunks start): *nchunk + 1 boundaries to free(), NULL when out of
 * memory */
int *arkcos_task_chunks(const arkcos_plan *p, int len, int nthreads, int *nchunk);
/* The farthest task a task's pairs read, ahead only or (both) either way */
int arkcos_tasks_reach(const arkcos_plan *p, int both);

/* most kernel grids of distinct lengths a CPU plan keeps (cpu_setup.h;
 * plan.c's estimate follows the same grids) */
#define ARKCOS_MAX_GRIDS 16
/* a cap pair moves to the grid of q L / 2^s points only when
 * sqrt(sin th_i sin th_j) <= ARKCOS_LEVEL_MARGIN s_ref / 2^s: with 1.0 the
 * coarsest pairs alias as much as those at the belt's edge, which at nside 32
 * on coarsened 4 nside grids raised the whole-sphere error at 4.4-10 pixels
 * per FWHM (cut 1e-8) from 1.1e-7 to 4.8e-7; 0.7 keeps it at 1.2e-7 */
#define ARKCOS_LEVEL_MARGIN 0.7
/* The level a ring pair's kernel grid takes among levels of levL[0 ..
 * nlev) points (q L / 2^s; a grid of n points holds n / 2 + 1 modes), for
 * the CPU backend (cpu_pairspec.h, pair_grid) and the plan's estimate alike:
 * a belt pair (both rings of length L) the coarsest level shorter than L
 * whose modes hold need, else -1 (the L grid); a cap pair the level of r =
 * sqrt(sin th_i sin th_j) against s_ref, then, where need > 0 (the smooth
 * caps' band limit), the coarsest level whose modes still hold need. */
static inline int arkcos_pair_level(const int64_t *levL, int nlev, int64_t L, int belt, double r, double need,
                                    double s_ref) {
  if (belt) {
    int g = -1;
    for (int lv = 0; lv < nlev; lv++)
      if (levL[lv] < L && (double)(levL[lv] / 2 + 1) >= need) g = lv;
    return g;
  }
  int lv = 0;
  while (lv + 1 < nlev && r * (double)((int64_t)2 << lv) <= ARKCOS_LEVEL_MARGIN * s_ref) lv++;
  if (need > 0)
    while (lv + 1 < nlev && (double)(levL[lv + 1] / 2 + 1) >= need) lv++;
  return lv;
}

/* grid.c: the cap pairs' oversampling of the kernel grid, 1 or 2, chosen
 * automatically (options.oversample 0) for plans whose caps are not summed
 * directly */
int arkcos_auto_oversample(const arkcos_kfun *kf, int64_t L);
/* grid.c: the cap pairs' oversampling a plan asks for: options.oversample
 * (at most 8), else arkcos_auto_oversample */
int arkcos_caps_oversample(const arkcos_plan *p);
/* grid.c: a smooth-caps plan's band-limit scale bl (a pair of rings i, j
 * needs bl sqrt(sin th_i sin th_j) + 8 modes; cpu_pairspec.h, pair_len),
 * 0 for other plans or with ARKCOS_BAND_LIMIT=0 */
double arkcos_band_scale(const arkcos_plan *p);
/* grid.c: |K(cutoff) / K(0)|, the kernel's relative jump at its cutoff */
double arkcos_kfun_cut_level(const arkcos_kfun *kf);
int arkcos_cpu_create_double(arkcos_plan *p, arkcos_error *err);
int arkcos_cpu_create_float(arkcos_plan *p, arkcos_error *err);
int arkcos_gpu_create(arkcos_plan *p, arkcos_error *err);
/* page-locked host memory through the GPU module (arkcos_map_alloc); NULL
 * without a device */
void *arkcos_gpu_host_alloc(size_t bytes);
void arkcos_gpu_host_free(void *ptr);
/* error.c: arkcos_fail with a va_list (the GPU module's messages) */
int arkcos_vfail(arkcos_error *err, int code, const char *fmt, va_list ap);
int arkcos_spin2_create(arkcos_plan *p, arkcos_error *err);
/* grid.c, spin-2 plans: whether ring i takes part in the Fourier path
 * (length L, first pixel on the half-step grid pi / L) */
int arkcos_spin2_ring_on_grid(const arkcos_plan *p, int i);
/* harmonic.c: the harmonic path (libsharp opened at run time): whether it
 * can be had, the band limit l_K of a kernel (-1: not a Gaussian), the
 * backend, and its memory */
int arkcos_harmonic_available(void);
int arkcos_harmonic_lmax(const arkcos_kfun *kf);
int arkcos_harmonic_lmax_sigma(double sigma); /* the same from the Gaussian's sigma */
/* The band limit the path's break-evens against ARKCoS were measured in
 * (plan.c, harmonic_ratio: B_l below 1e-19, 9.4 / sigma + 8), so that the
 * rule keeps choosing at the widths measured: a kernel's cost rule, not the
 * transforms' band limit */
double arkcos_harmonic_rule_l(double sigma);
int arkcos_harmonic_create(arkcos_plan *p, arkcos_error *err);
double arkcos_harmonic_bytes(int lmax, int nrings, int nthreads, int spin);
/* kernel.c: K_l = 2 pi int K P_l, l <= lmax, of a profile, or (spin 2)
 * K_l^(2) = 2 pi int K d^l_22 (0 or ARKCOS_ENOMEM) */
int arkcos_kfun_legendre(const arkcos_kfun *kf, int lmax, int spin, double *kl);
/* pairs_direct.c: the exact path of ring pairs off the kernel grid */
int arkcos_pair_is_direct(const arkcos_plan *p, int i, int j);
int arkcos_direct_create(arkcos_plan *p, int nthreads, arkcos_error *err);
/* out[l] = wj K(chord^2) at the offsets dphi_l = d0 + step num[l] of a ring
 * pair (sdt2 = sin^2(dtheta / 2), ss = sin th_i sin th_j), l < cnt, by loops
 * the compiler vectorises, to a few units of rounding of arkcos_kfun_d2
 * (whose decisions at the cutoff it keeps); tmp: 2 cnt doubles */
void arkcos_kernel_batch(const arkcos_kfun *kf, double wj, double sdt2, double ss, double d0, double step,
                         const double *num, int64_t cnt, double *out, double *tmp);
/* The same at the kernel-grid samples delta + 2 pi n / L, n0 <= n <= n1,
 * into out[n - n0] (chunks of 256: no caller's scratch) */
#define ARKCOS_SAMPLES_CHUNK 256
void arkcos_kernel_samples(const arkcos_kfun *kf, double wj, double sdt2, double ss, double delta, int64_t L,
                           int64_t n0, int64_t n1, double *out);
double arkcos_direct_estimate_bytes(const arkcos_plan *p, int lo, int hi); /* tasks [lo, hi) */
/* ... and without tables (direct_fly): the pair lists, A(1)'s direct part
 * kept from the first execute (scalar plans), nt threads' scratch */
double arkcos_direct_fly_bytes(const arkcos_plan *p, int lo, int hi, int nt);
/* Tests only: -1 (the default) asks the device whether a GPU is usable;
 * 0 or 1 answers for it in the plan's choice of paths (plan.c,
 * plan_target), so that AUTO's choice on a GPU host is tested without one */
extern int arkcos_plan_pretend_gpu;
/* Tests only: 1 (the default) finds a top-hat's rows from the window's
 * geometry (pairs_direct.c, konst_rows_geom); 0 by kernel evaluations
 * alone (konst_rows), the reference the geometry is tested against */
extern int arkcos_direct_konst_geometry;
/* Tests only: 1 evaluates direct rows on windows a pixel wider each side (pairs_direct.c) */
extern int arkcos_direct_wide_windows;
/* A plan whose owner never asks for its constant map (a smoother that does
 * not divide by A(1)): its first execute keeps no row sums for it (the
 * direct pairs' part of A(1), weights on the fly), and the room for them
 * goes. arkcos_plan_constant still works, setting the pairs up again. */
void arkcos_direct_drop_constant_sums(arkcos_plan *p);
/* Scalar maps in1 and in2 smoothed into out1 and out2 (four distinct
 * arrays), each bit for bit as arkcos_execute gives it, in one call where
 * the plan has execute_two (the CPU's: the direct pairs' weights, computed
 * on the fly, serve both maps), else by two executes. The stage times are
 * the call's. */
int arkcos_execute_two(arkcos_plan *p, const double *in1, double *out1, const double *in2, double *out2,
                       arkcos_error *err);
/* a += b, stage by stage */
void arkcos_stages_add(arkcos_stage_times *a, const arkcos_stage_times *b);
/* adds the direct pairs' sums to out; 0, or ARKCOS_ENOMEM (weights on the
 * fly without memory for one pair's); *secs the seconds */
int arkcos_direct_apply(const arkcos_plan *p, const double *in, double *out, double *secs);
int arkcos_direct_apply_n(const arkcos_plan *p, int n, const double *const *in, double *const *out,
                          double *secs);
/* The execute of a constant map on exact plans whose Fourier pairs join two
 * rings of the grid's length or are the smooth caps' (the smoother's A(1)):
 * 1 when done (out written, stage times recorded), 0 when the plan or the
 * map is of another kind */
int arkcos_direct_execute_constant(arkcos_plan *p, const double *in, double *out, int nthreads);
/* The same on the constant map c without the map: 1 when done (every
 * output pixel written), 0 when the plan is of another kind (a band plan
 * of several included) */
int arkcos_plan_constant(arkcos_plan *p, double c, double *out, int nthreads);
/* Divides maps[0 .. nmaps) (RING order, every pixel but UNSEEN ones) by
 * A(1), the constant map 1's execute, made ring by ring and never held
 * whole: the same quotients, bit for bit, as arkcos_plan_constant(p, 1,
 * w) followed by the division. For plans where that costs no pass over
 * tables: no direct pairs, or their weights on the fly (the row sums kept
 * by the map's execute, or made here). *nonpos: the pixels where A(1) is
 * not positive (their quotients meaningless). *times: its own stage times
 * (reduction, direct, total), also added to the plan's last execute's
 * (arkcos_plan_stages: the map's and its division). keep1 (or NULL):
 * the first and last nkeep pixels (RING) are not divided, their A(1) goes
 * to keep1[0 .. nkeep) and keep1[nkeep .. 2 nkeep) (the polar caps'
 * reconstruction divides them itself) and not counted in *nonpos (the
 * caller counts them with their correction). 1 when done, 0 when
 * the plan is of another kind (maps untouched), -1 out of memory (maps
 * partly divided). */
int arkcos_plan_divide_constant(arkcos_plan *p, double *const *maps, int nmaps, int64_t *nonpos,
                                arkcos_stage_times *times, int nthreads, double *keep1, int64_t nkeep);
/* constant_rings.c: output ring i of that execute from its Fourier pairs
 * (input rings jlo[i0] .. jhi[i0], or their mirrors when mir), c times
 * their sums, into y[0 .. n_i); 0, or -1 out of memory */
int arkcos_constant_ring(const arkcos_plan *p, int i, int i0, int mir, double c, double *y);
/* the bound's direct terms of task t without tables (the GPU sums the
 * direct pairs with weights computed where they are used): sum over its
 * pairs of max_a sum_b |W_ab|, and of the longest row + 1 */
void arkcos_direct_task_sums(const arkcos_plan *p, int t, double *dsum, double *dterms);
/* spin-2 plans: (q_out, u_out) += the direct pairs' complex sums */
int arkcos_direct_apply_spin2(const arkcos_plan *p, const double *q, const double *u, double *q_out,
                              double *u_out, double *secs);
void arkcos_direct_destroy(arkcos_direct *D);
void arkcos_plan_set_bound(arkcos_plan *p, int single);
/* fftw_plans.c: the lock every FFTW planner call holds */
extern pthread_mutex_t arkcos_fftw_planner_lock;
/* fftw_plans.c: FFTW's planner flags for the long transforms (the kernel grids
 * and rings of length L): FFTW_ESTIMATE by default, FFTW_MEASURE with
 * ARKCOS_FFTW_PLANNER=measure (read once per process) */
unsigned arkcos_fftw_flags(void);
void arkcos_fftw_wisdom_load(void);
/* bluestein.c: real DFTs of any even length through power-of-two FFTs, for
 * the cap rings (FFTW's planner would take 1-4 ms per awkward length).
 * r2c / c2r as FFTW's (unnormalised; n / 2 + 1 (re, im) pairs); work holds
 * arkcos_bluestein_work doubles, aligned as fftw_malloc's, its first 8
 * zeroed when new (the chirp a transform prepares there is reused by the
 * next of the same length). Thread-safe. */
typedef struct arkcos_bluestein arkcos_bluestein;
arkcos_bluestein *arkcos_bluestein_create(int64_t n);
void arkcos_bluestein_destroy(arkcos_bluestein *b);
size_t arkcos_bluestein_work(const arkcos_bluestein *b);
void arkcos_bluestein_r2c(const arkcos_bluestein *b, const double *x, double *X, double *work);
void arkcos_bluestein_c2r(const arkcos_bluestein *b, const double *X, double *x, double *work);
/* fftw_plans.c: the in-place complex FFT of length n and sign (FFTW_FORWARD or
 * FFTW_BACKWARD) from a process-wide cache, planned with
 * arkcos_fftw_flags under the planner lock; NULL if FFTW cannot. The
 * return type is fftw_plan, passed as void * here. */
void *arkcos_fftw_c2c_plan(int64_t n, int sign);
void arkcos_fftw_wisdom_save(void);
char *arkcos_fftw_wisdom_export(int single);
int arkcos_fftw_wisdom_import(const char *w, int single);

#ifdef __cplusplus
}
#endif
#endif
