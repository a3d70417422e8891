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
#include "arkcos/polar.h"

/* MPI_Init_thread when a launcher started the process (mpirun, srun,
 * MPICH's hydra: OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK, PMI_SIZE or
 * SLURM_PROCID in the environment; ARKCOS_MPI=1 forces it, ARKCOS_MPI=0
 * never), and the default threads per rank: the cores of the rank's
 * affinity mask, or its share of the node's cores when it is not bound
 * (OMP_NUM_THREADS, when set, says instead). Without a launcher an MPI
 * build runs as the plain build does: one process, MPI never touched (so
 * that `ulimit -v` or `-f` meet arkcos's own messages, not a failed
 * MPI_Init). hmpi_finalize: MPI_Finalize when hmpi_init initialised it. */
void hmpi_init(int *argc, char ***argv);
void hmpi_finalize(void);
int hmpi_active(void);  /* 1 when hmpi_init initialised MPI */
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
/* A spin-2 split plan's Q and U (arkcos_execute2_mpi: whole maps on rank 0) */
int hmpi_split_execute2(arkcos_plan *p, const double *q, const double *u, double *q_out, double *u_out,
                        arkcos_error *err);
void hmpi_split_destroy(arkcos_plan *p);
/* The exact scalar plan of A(1) over the ranks (options o with accuracy 0,
 * spin 0), with the bands of the scalar split plan of g's nside (made
 * before): where an accuracy lets the scalar plan trade exactness, the
 * engine divides by an exact plan's A(1) (smoother_mask.c's ensure_norm),
 * and hmpi_split_file does too. Kept until that scalar plan is destroyed.
 * 0 or an ARKCOS_E* code. */
int hmpi_split_norm_plan(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                         arkcos_error *err);
void hmpi_split_stop(void);
/* One file over all ranks, each rank its own band (parallel I/O, docs/MPI.md):
 * every rank reads its band and halo of each column from in itself
 * (mapio.h's band I/O), smooths them with band-local maps (no messages
 * between ranks), and writes its band's pixels in place into the output's
 * temporary file, whose header rank 0 wrote once with the file's size;
 * rank 0 renames it onto out once every rank succeeded (removes it
 * otherwise). No rank holds a whole map. Rank 0 calls it after its split
 * plan was made (hmpi_split_plan, for the file's nside); the serving ranks
 * follow. Returns 0, an ARKCOS_E* code (every rank's: the first failing
 * rank's message), or HMPI_WHOLE_MAP where the file needs the whole-map
 * path (a value beyond float range; more
 * than HMPI_MAX_COLS columns with missing pixels, --mask or --write-weight;
 * not under mpirun; a spin-2 plan whose bands are not the scalar plan's):
 * nothing was written then. Columns pol_q and pol_u (-1: none) are Stokes
 * Q and U, smoothed as one spin-2 field with rank 0's spin-2 split plan
 * (made after the scalar one, which every file needs: A(1) and S0(w) are
 * the scalar plan's), missing where either is.
 *
 * Missing pixels (UNSEEN, NaN, inf), a --mask and --write-weight are
 * smoothed band-wise as the engine's smoother does a whole map
 * (arkcos/smoother_mask.c), pixel for pixel the same arithmetic, so the
 * file is bit-identical to one process's: w = 0 where missing or the mask
 * is 0, the mask (or 1) elsewhere; out = A(w m) / A(w) (normalize) or
 * A(w m) (zero); UNSEEN where the share of A(w) is below min_weight or, in
 * normalize mode, A(w) is not above the floor; divided by A(1) (`normalize`)
 * where the engine does; WEIGHT columns as mask_file_columns lays them
 * out. Columns with the same missing pixels (over the sphere) share A(w).
 * st->rep and st->last hold the engine's report of the file (rank 0).
 *
 * The polar reconstruction (polar, rank 0's; NULL: none) as the smoother
 * adds it, bit for bit: the caps' disc pixels gathered on rank 0 from the
 * ranks that own them, the corrections solved there and sent back, each
 * rank adding them to its own output pixels; where the file is divided by
 * A(1), the caps' outputs by A(1) plus the correction of 1. With missing
 * pixels, a --mask or --write-weight, each set of columns that share their
 * missing pixels keeps it on the caps whose disc is complete (every rank
 * looks at its own pixels there; the smoother's set_polar_caps), its A(w)
 * and A(W) there plus the correction of 1 as the smoother's capfix. */
#define HMPI_WHOLE_MAP (-1)
#define HMPI_MAX_COLS 999 /* a FITS binary table holds at most 999 columns (TFIELDS) */
typedef struct hmpi_mask {
  const char *file;  /* --mask (column 1, any ORDERING; values checked), NULL: none */
  int zero;          /* --mask-mode zero: out = A(w m) */
  double min_weight; /* normalize's threshold (0: none) */
  int share;         /* ring quadrature: the threshold and WEIGHT hold A(w) / A(W) */
  int write_weight;  /* --write-weight */
} hmpi_mask;
/* Rank 0's polar reconstructions (polar.h) for hmpi_split_file: the
 * smoother's corrections of the scalar maps and of Q, U (NULL: the maps
 * take none), the scalar one's correction of 1 where the file is divided
 * by A(1) (else NULL), and the threads that solve them. */
typedef struct hmpi_polar {
  arkcos_polar *p0, *p2;
  const double *delta1;
  int threads;
} hmpi_polar;
typedef struct hmpi_file_stats {
  int ncols;
  int polar[HMPI_MAX_COLS];       /* the caps each column took it on (arkcos_smoother_last_polar's bits) */
  double t_read, t_exec, t_write; /* t_exec: the slowest rank's */
  double map_time[HMPI_MAX_COLS]; /* rank 0's execute per column */
  arkcos_stage_times stages;      /* rank 0's, over the columns */
  int reported;                   /* weights were in play: rep and last hold the report */
  arkcos_smoother_map_report rep[HMPI_MAX_COLS]; /* per column, over the sphere */
  arkcos_smoother_report last;    /* nweight_maps, weights_smoothed, weight_time (rank 0's) */
} hmpi_file_stats;
int hmpi_split_file(const char *in, const char *out, int pol_q, int pol_u, int force, int normalize,
                    const hmpi_mask *mask, const hmpi_polar *polar, hmpi_file_stats *st, arkcos_error *err);
/* Ranks > 0: serve rank 0's plans and executes until rank 0 stops; the
 * kernel of a plan of nside and spin (0, 2) is kernel_for(ctx, nside,
 * spin), which every rank makes from the same arguments; 0 or an exit
 * status. */
typedef const arkcos_kernel *(*hmpi_kernel_fn)(void *ctx, int64_t nside, int spin);
int hmpi_split_serve(hmpi_kernel_fn kernel_for, void *ctx);

#endif
