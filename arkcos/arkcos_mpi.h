/*
 * arkcos_mpi.h -- one map over MPI ranks (built with `make MPI=1`).
 *
 * The plan's output rings are split into latitude bands balanced by pixel
 * count. The engine handles a ring and its north/south mirror as one task,
 * so rank r's band is a contiguous range of |latitude|: a northern band and
 * its southern mirror image (one band across the equator for the middle
 * rank). Each rank computes exactly its band's output rings with the pair
 * arithmetic and summation order of one process, so the result is
 * bit-identical to arkcos_plan_create + arkcos_execute for any number of
 * ranks (given the same FFTW wisdom: rank 0 plans its FFTs first and its
 * wisdom is given to the others, see arkcos_mpi_share_wisdom).
 *
 * Which band: rank 0 holds the whole maps (it reads and writes the files),
 * so it takes the band at the equator, which has no direct tables; rank
 * r > 0 the r-th band from the poles (arkcos_band_of_rank).
 *
 * Memory: before anything is allocated, every rank's estimate (its band's
 * plan and maps, arkcos_plan_estimate_rank) is summed over the ranks that
 * share a node and compared with the memory available there; a run that
 * would not fit is refused on every rank (ARKCOS_ENOMEM, naming the host,
 * the sum and the largest rank). With options.max_memory set, it is each
 * rank's own limit instead. The direct tables' budget (ARKCOS_DIRECT_MAX_GB,
 * default half the node's memory) is judged for the band holding the most
 * of them, so more ranks keep wider kernels exact in the caps.
 *
 * Data movement: rank 0 holds the whole input and output maps (it reads and
 * writes the files); arkcos_execute_mpi sends each rank its band's input
 * rings plus the halo (the input rings within the kernel's radius of the
 * band) and gathers the band's output rings. Other ranks touch only band
 * and halo: their map buffers are reserved at full size but only those
 * pages are ever written (resident memory follows band + halo).
 *
 * Scalar and spin-2 plans (options.spin = 2: Q and U through
 * arkcos_execute2_mpi and arkcos_execute2_mpi_local), CPU backend (the GPU
 * is refused).
 */
#ifndef ARKCOS_MPI_H
#define ARKCOS_MPI_H

#include <mpi.h>

#include "arkcos/arkcos.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over comm: every rank passes the same geometry, kernel and
 * options. On failure every rank gets NULL and the same message (the first
 * failing rank's). Destroy with arkcos_plan_destroy (collective too: the
 * plan's communicator is freed). */
arkcos_plan *arkcos_plan_create_mpi(MPI_Comm comm, const arkcos_geometry *g,
                                    const arkcos_kernel *k,
                                    const arkcos_options *o, arkcos_error *err);

/* The same, with the bands of `like` (a plan of arkcos_plan_create_mpi of
 * the same geometry over the same ranks): every rank computes the same
 * output rings in both, so that a scalar and a spin-2 plan of one file
 * share their output pixels (the halos follow each kernel). */
arkcos_plan *arkcos_plan_create_mpi_as(MPI_Comm comm, const arkcos_geometry *g,
                                       const arkcos_kernel *k, const arkcos_options *o,
                                       const arkcos_plan *like, arkcos_error *err);

/* Collective. in and out: whole maps (g->npix values) on rank 0, ignored
 * (may be NULL) elsewhere; rank 0's input is checked as arkcos_execute
 * checks it (finite, within float's range for single precision: EINVAL on
 * every rank, naming the first such pixel). Rank 0's out receives every band. Stage times
 * (arkcos_plan_stages) are the rank's own, with the sends and receives in
 * `other`. */
int arkcos_execute_mpi(arkcos_plan *p, const double *in, double *out,
                       arkcos_error *err);
/* The same for a spin-2 plan: Q and U in, Q and U out (as
 * arkcos_execute_spin2), whole maps on rank 0. */
int arkcos_execute2_mpi(arkcos_plan *p, const double *q, const double *u, double *q_out,
                        double *u_out, arkcos_error *err);

/* What this rank holds: its output rings, the input pixels it receives
 * (band + halo), the halo alone, per execute. */
typedef struct arkcos_mpi_band {
  int rank, nranks;
  int nrings_out;        /* output rings of the band */
  int64_t pixels_out;    /* output pixels of the band */
  int64_t pixels_in;     /* input pixels received (band and halo) */
  int64_t halo_pixels;   /* input pixels received beyond the band's own rings */
  double bound;          /* arkcos_plan_bound over every band (max over ranks) */
  int collective;        /* 1: arkcos_execute_mpi_local is collective (the
                          * harmonic path: its a_lm are summed over the ranks) */
} arkcos_mpi_band;

int arkcos_plan_mpi_band(const arkcos_plan *p, arkcos_mpi_band *b, arkcos_error *err);

/* Band-local maps (parallel I/O: each rank reads its band and halo from
 * the file and writes its band's output itself; no rank holds a whole map).
 * arkcos_plan_mpi_segments: this rank's input pixels (band and halo;
 * output = 0) or output pixels (output = 1) as *n runs [a, b) of the whole
 * map's pixel indices, increasing; the plan keeps the array. A band-local
 * map holds the input runs back to back (pixels_in values); an output run
 * lies inside an input run and takes the same local positions.
 * arkcos_execute_mpi_local: not collective (no messages, no rank 0),
 * but for a plan of the harmonic path (a Gaussian of a low band limit,
 * docs/EXACTNESS.md), whose bands' a_lm are summed over the ranks: there
 * every rank calls it, in the same order. in and out are band-local maps
 * of pixels_in values each; out receives the band's output pixels, bit for
 * bit those of arkcos_execute_mpi (and of one process, but for the
 * harmonic path, whose sum over ranks is another order of additions: within
 * rounding of one process, and for a band whose rings hold one value where
 * the map does not: arkcos_execute_mpi_local_general), and the halo
 * positions of out are left as they were. The input values must be finite (not checked here). */
typedef struct arkcos_mpi_segment {
  int64_t a, b;
} arkcos_mpi_segment;
int arkcos_plan_mpi_segments(const arkcos_plan *p, int output, const arkcos_mpi_segment **seg, int *n,
                             arkcos_error *err);
int arkcos_execute_mpi_local(arkcos_plan *p, const double *in, double *out, arkcos_error *err);
/* The same for a map that is not constant over the sphere although this
 * band's rings (and halo) may all hold one value, as a weight map of 0 and
 * 1 may: never the constant map's shortcut (no ring FFTs; its rounding
 * differs from the general path's by about 4e-14 of the value), which
 * arkcos_execute_mpi_local takes wherever the band's rings hold one value,
 * so that the band's bytes are one process's. */
int arkcos_execute_mpi_local_general(arkcos_plan *p, const double *in, double *out, arkcos_error *err);
/* The same for a spin-2 plan: four band-local maps, Q and U in, Q and U out. */
int arkcos_execute2_mpi_local(arkcos_plan *p, const double *q, const double *u, double *q_out,
                              double *u_out, arkcos_error *err);

/* Collective: rank root's FFTW wisdom (double and single precision)
 * imported by every rank, so that the FFT plans made afterwards are the
 * same algorithms on every rank (FFTW_MEASURE times them, and timings
 * differ between processes). Returns ARKCOS_OK or ARKCOS_ERUNTIME. */
int arkcos_mpi_share_wisdom(MPI_Comm comm, int root, arkcos_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ARKCOS_MPI_H */
