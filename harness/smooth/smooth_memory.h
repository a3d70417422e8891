/*
 * smooth_memory.h -- `arkcos smooth`'s memory, predicted before anything is
 * read or allocated (docs/MPI.md, "Memory"): per rank, the maps it holds
 * and its plans (arkcos_plan_estimate_rank), summed over the ranks that
 * share a host and compared with the memory available there. Printed by
 * --dry-run; under mpirun the same check refuses a run that would not fit
 * before rank 0 reads a map.
 */
#ifndef HARNESS_SMOOTH_MEMORY_H
#define HARNESS_SMOOTH_MEMORY_H

#include <stdint.h>

#include "arkcos/arkcos.h"

/* The work of one nside: what its largest file and its plans need. */
typedef struct smem_nside {
  int64_t nside;
  int maxcols;          /* the most columns in one input file of this nside */
  int masked;           /* --mask: the weights and their smoothing (2 more maps) */
  int normalize;        /* ring quadrature or --normalize: A(W) kept (one more map;
                         * over ranks A(W)'s band and the ones it smooths) */
  int norm_streamed;    /* A(W) made ring by ring, not held, in one process
                         * (arkcos_smoother_operator.plan: the engine's exact
                         * CPU plan, weights on the fly, no mask) */
  int gpu;              /* the GPU may take the maps (--backend gpu, or auto with a
                         * device): the CUDA context's host memory counted */
  int spin2;            /* some file has Q and U: the spin-2 plan too (one process) */
  double polar;         /* bytes of the polar reconstruction (--quadrature polar; one
                         * process's, or rank 0's over ranks; arkcos_smoother_estimate's
                         * share of it), else 0 */
  arkcos_options o0;    /* the scalar plan's options */
  arkcos_options o2;    /* the spin-2 plan's (when spin2) */
  const arkcos_kernel *k0, *k2; /* their kernels (NULL: the one passed) */
} smem_nside;

/* The prediction for nranks ranks (hmpi_size() under mpirun; --ranks N, all
 * on this host, otherwise): split = each map over all ranks in bands (else
 * the files are shared out and every rank holds whole maps and plans).
 * print: rank 0 prints the table to stdout. Every rank returns the same: 0
 * when every host has the memory (or each rank is within max_memory when
 * it is > 0), else 1 with the reason on stderr (rank 0), or 2 when an
 * estimate failed (its message on stderr). Without mpirun, the total is
 * also held to what the process can have at all (arkcos_memory_limit:
 * ulimit -v, cgroup, free memory), whatever max_memory says. hard_only:
 * that check alone (every arkcos run of `arkcos smooth`, before it reads a
 * map). */
int smooth_memory_check(const smem_nside *w, int nw, const arkcos_kernel *k, int nranks, int split,
                        double max_memory, int print, int hard_only);

#endif
