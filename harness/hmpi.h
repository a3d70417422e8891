/*
 * hmpi.h -- the command's view of MPI (docs/MPI.md). Built with `make MPI=1`
 * this is OpenMPI's MPI_COMM_WORLD; otherwise (the same calls, compiled
 * without ARKCOS_WITH_MPI) one process: rank 0 of 1, and the split
 * functions answer "built without MPI".
 */
#ifndef HARNESS_HMPI_H
#define HARNESS_HMPI_H

#include <stddef.h>

#include "arkcos/arkcos.h"

int hmpi_built(void);   /* 1 when built with MPI */
int hmpi_rank(void);    /* 0 without MPI */
int hmpi_size(void);    /* 1 without MPI */
int hmpi_max(int v);    /* the largest v over the ranks */
double hmpi_max_double(double v);
void hmpi_barrier(void);
/* Bytes and strings between ranks (`arkcos run` over ranks, sweep_mpi.c).
 * hmpi_bcast_bytes: root's len bytes to every rank's buf (len the same on
 * every rank). hmpi_bcast_string: root's s (root passes it, the others
 * NULL); returns a malloc'd copy on every rank (NULL: out of memory).
 * hmpi_gather_strings: every rank's s to rank 0, which gets a malloc'd
 * array of hmpi_size() malloc'd strings (NULL elsewhere or on failure). */
void hmpi_bcast_bytes(void *buf, size_t len, int root);
char *hmpi_bcast_string(const char *s, int root);
char **hmpi_gather_strings(const char *s);
/* This rank's host name (the node a case or a band ran on) */
void hmpi_host(char *buf, size_t len);

/* Ranks above 0 hold their stderr while all ranks run the same checks, so
 * that a message common to all is printed once (by rank 0). Collective
 * hmpi_checks_done: a rank whose checks failed where rank 0's passed
 * prints what it held; returns the largest status over the ranks. */
void hmpi_hold_stderr(void);
int hmpi_checks_done(int status);

/* Rank 0's FFTW wisdom to every rank (arkcos_mpi_share_wisdom): the FFT
 * plans made afterwards are the same algorithms everywhere, so each rank's
 * maps are bit-identical to one process's. 0 or an ARKCOS_E* code. */
int hmpi_share_wisdom(arkcos_error *err);

/* One map over all ranks (`arkcos smooth --mpi-split`): rank 0 drives, the
 * other ranks serve. Rank 0's calls tell the others what to do; they follow
 * in hmpi_split_serve until hmpi_split_stop. */
arkcos_plan *hmpi_split_plan(const arkcos_geometry *g, const arkcos_kernel *k,
                             const arkcos_options *o, arkcos_error *err);
int hmpi_split_execute(arkcos_plan *p, const double *in, double *out, arkcos_error *err);
void hmpi_split_destroy(arkcos_plan *p);
void hmpi_split_stop(void);
/* Ranks > 0: serve rank 0's plans and executes until rank 0 stops; the
 * kernel of a plan of nside is kernel_for(ctx, nside), which every rank
 * makes from the same arguments; 0 or an exit status. */
typedef const arkcos_kernel *(*hmpi_kernel_fn)(void *ctx, int64_t nside);
int hmpi_split_serve(hmpi_kernel_fn kernel_for, void *ctx);

#endif
