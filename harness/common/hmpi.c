/*
 * hmpi.c -- the command's view of MPI (hmpi.h). Compiled twice: into the
 * harness library without ARKCOS_WITH_MPI (one process), and by `make
 * MPI=1` / `make mpi` with it (MPI_COMM_WORLD, the engine's arkcos_mpi.h).
 * Both versions define the same functions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#include "harness/common/hmpi.h"
#include "harness/common/mapio.h"
#include "harness/common/util.h"

#ifdef ARKCOS_WITH_MPI
#include <mpi.h>
#include <omp.h>
#include <sched.h>

#include "arkcos/arkcos_mpi.h"

/* MPI is initialised only when a launcher started the process (hmpi_init);
 * otherwise every function below answers as one process does. */
static int mpi_on;

/* The variables mpirun (Open MPI, PMIx), MPICH's hydra (PMI) and srun set
 * in every rank's environment. ARKCOS_MPI=1 forces MPI_Init (a singleton),
 * ARKCOS_MPI=0 never calls it. */
static int launched(void) {
  const char *force = getenv("ARKCOS_MPI");
  if (force && force[0]) return strcmp(force, "0") != 0;
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                                     "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i])) return 1;
  return 0;
}

/* Threads per rank when neither --threads nor OMP_NUM_THREADS says: the
 * cores of the rank's affinity mask, which is what libgomp takes. A rank
 * left unbound (mask = every core of the node, e.g. mpirun --bind-to none)
 * takes its share of the node's cores, not all of them. */
static int ranks_on_node(void) {
  int n = 1;
  MPI_Comm node;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_size(node, &n);
    MPI_Comm_free(&node);
  }
  return n;
}

static void default_threads(void) {
  const int local = ranks_on_node(); /* collective: every rank calls it */
  const char *omp = getenv("OMP_NUM_THREADS");
  if (omp && omp[0]) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  const int mine = CPU_COUNT(&set);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  int t = mine;
  if (local > 1 && online > 0 && mine >= online) t = (int)(online / local);
  omp_set_num_threads(t > 0 ? t : 1);
}

void hmpi_init(int *argc, char ***argv) {
  if (!launched()) return;
  int provided; /* OpenMP threads inside each rank; only the main thread calls MPI */
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  mpi_on = 1;
  default_threads();
}

void hmpi_finalize(void) {
  if (mpi_on) MPI_Finalize();
  mpi_on = 0;
}

int hmpi_active(void) { return mpi_on; }

static int world_rank(void) {
  int r = 0;
  if (mpi_on) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int hmpi_built(void) { return 1; }
int hmpi_rank(void) { return world_rank(); }
int hmpi_size(void) {
  int n = 1;
  if (mpi_on) MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
int hmpi_max(int v) {
  int m = v;
  if (mpi_on) MPI_Allreduce(&v, &m, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return m;
}
double hmpi_max_double(double v) {
  double m = v;
  if (mpi_on) MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}
void hmpi_barrier(void) {
  if (mpi_on) MPI_Barrier(MPI_COMM_WORLD);
}
int hmpi_share_wisdom(arkcos_error *err) {
  return mpi_on ? arkcos_mpi_share_wisdom(MPI_COMM_WORLD, 0, err) : ARKCOS_OK;
}

void hmpi_bcast_bytes(void *buf, size_t len, int root) {
  char *b = buf;
  while (mpi_on && len > 0) { /* MPI counts are int */
    const int n = len > (1u << 30) ? 1 << 30 : (int)len;
    MPI_Bcast(b, n, MPI_BYTE, root, MPI_COMM_WORLD);
    b += n;
    len -= (size_t)n;
  }
}

char *hmpi_bcast_string(const char *s, int root) {
  if (!mpi_on) return strdup(s);
  long len = world_rank() == root ? (long)strlen(s) + 1 : 0;
  MPI_Bcast(&len, 1, MPI_LONG, root, MPI_COMM_WORLD);
  char *copy = malloc((size_t)len);
  if (copy && world_rank() == root) memcpy(copy, s, (size_t)len);
  int ok = copy != NULL, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    free(copy);
    return NULL;
  }
  hmpi_bcast_bytes(copy, (size_t)len, root);
  return copy;
}

char **hmpi_gather_strings(const char *s) {
  const int n = hmpi_size(), r = world_rank();
  if (!mpi_on) {
    char **out = calloc(1, sizeof *out);
    if (out) out[0] = strdup(s);
    return out;
  }
  long len = (long)strlen(s) + 1;
  long *lens = r == 0 ? calloc((size_t)n, sizeof *lens) : NULL;
  MPI_Gather(&len, 1, MPI_LONG, lens, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  char **out = r == 0 && lens ? calloc((size_t)n, sizeof *out) : NULL;
  for (int i = 1; i < n; i++) { /* rank i's text to rank 0, in turn */
    if (r == 0) {
      char *t = malloc((size_t)lens[i]);
      MPI_Recv(t ? t : NULL, t ? (int)lens[i] : 0, MPI_CHAR, i, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (out) out[i] = t;
      else free(t);
    } else if (r == i) {
      MPI_Send(s, (int)len, MPI_CHAR, 0, 77, MPI_COMM_WORLD);
    }
  }
  if (r == 0 && out) out[0] = strdup(s);
  free(lens);
  return out;
}

/* ---- one map over the ranks: rank 0's commands */
enum { OP_PLAN = 1, OP_EXEC = 2, OP_DESTROY = 3, OP_STOP = 4, OP_FILE = 5 };
typedef struct {
  int op;
  int64_t nside;
  arkcos_options o;
  int force;        /* OP_FILE: --force */
  int weighted;     /* OP_PLAN: the rings carry arkcos_healpix_ring_weights */
  int normalize;    /* OP_FILE: out divided by the smoothing of 1 (A(W) with weighted rings) */
  int masked, zero, share, write_weight; /* OP_FILE: hmpi_mask (the mask's file follows) */
  double min_weight;
  int pol_q, pol_u; /* OP_FILE: the Q and U columns smoothed as spin 2 (-1: none) */
  int like0;        /* OP_PLAN: with the bands of the scalar plan of the same nside */
  int norm;         /* OP_PLAN, OP_DESTROY: the exact plan of A(1) (hmpi_split_norm_plan) */
  int polar[2];     /* OP_FILE: the scalar maps, Q and U take the polar reconstruction */
  int64_t pnd[2], pno[2]; /* OP_FILE: its disc and output pixels per cap (scalar, Q and U) */
} split_cmd;

/* rank 0's current split plans (hmpi_split_file): scalar, spin 2 and the
 * exact scalar plan of A(1) (slot), and their nside */
static arkcos_plan *split_plan[3];
static int64_t split_nside[3];
static int split_single; /* the scalar split plan is single precision */
enum { SLOT_NORM = 2 };
static int slot(int spin) { return spin == 2; }
static int slot_of(const split_cmd *c) { return c->norm ? SLOT_NORM : slot(c->o.spin); }

static void send_cmd(split_cmd *c) { MPI_Bcast(c, (int)sizeof *c, MPI_BYTE, 0, MPI_COMM_WORLD); }

arkcos_plan *hmpi_split_plan(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                             arkcos_error *err) {
  split_cmd c = {.op = OP_PLAN, .nside = g->nside, .o = *o};
  /* the smoother's ring quadrature weights the rings (arkcos_smoother_spec):
   * the other ranks weight theirs alike */
  c.weighted = g->nrings > 0 && fabs(g->rings[0].weight * (double)g->npix / (4 * M_PI) - 1) > 1e-6;
  /* a spin-2 plan takes the scalar plan's bands: a file's Q, U and its
   * other columns then have the same output pixels on every rank */
  c.like0 = o->spin == 2 && split_plan[0] && split_nside[0] == g->nside;
  send_cmd(&c);
  const int k2 = slot_of(&c);
  split_plan[k2] = c.like0 ? arkcos_plan_create_mpi_as(MPI_COMM_WORLD, g, k, o, split_plan[0], err)
                           : arkcos_plan_create_mpi(MPI_COMM_WORLD, g, k, o, err);
  if (k2 == 0) split_single = o->precision == ARKCOS_SINGLE;
  split_nside[k2] = split_plan[k2] ? g->nside : 0;
  return split_plan[k2];
}

int hmpi_split_norm_plan(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                         arkcos_error *err) {
  if (split_plan[SLOT_NORM] && split_nside[SLOT_NORM] == g->nside) return ARKCOS_OK;
  if (!split_plan[0] || split_nside[0] != g->nside)
    return arkcos_fail(err, ARKCOS_EINVAL, "no scalar split plan of nside %lld to take the bands of",
                       (long long)g->nside);
  split_cmd c = {.op = OP_PLAN, .nside = g->nside, .o = *o, .like0 = 1, .norm = 1};
  c.o.accuracy = 0;
  c.o.spin = 0;
  c.weighted = g->nrings > 0 && fabs(g->rings[0].weight * (double)g->npix / (4 * M_PI) - 1) > 1e-6;
  send_cmd(&c);
  split_plan[SLOT_NORM] = arkcos_plan_create_mpi_as(MPI_COMM_WORLD, g, k, &c.o, split_plan[0], err);
  split_nside[SLOT_NORM] = split_plan[SLOT_NORM] ? g->nside : 0;
  return split_plan[SLOT_NORM] ? ARKCOS_OK : (err && err->code ? err->code : ARKCOS_ERUNTIME);
}

int hmpi_split_execute(arkcos_plan *p, const double *in, double *out, arkcos_error *err) {
  split_cmd c = {.op = OP_EXEC};
  send_cmd(&c);
  return arkcos_execute_mpi(p, in, out, err);
}

int hmpi_split_execute2(arkcos_plan *p, const double *q, const double *u, double *q_out, double *u_out,
                        arkcos_error *err) {
  split_cmd c = {.op = OP_EXEC};
  c.o.spin = 2;
  send_cmd(&c);
  return arkcos_execute2_mpi(p, q, u, q_out, u_out, err);
}

void hmpi_split_destroy(arkcos_plan *p) {
  if (!p) return;
  if (p == split_plan[0] && split_plan[SLOT_NORM]) { /* A(1)'s plan goes with the scalar one's bands */
    split_cmd n = {.op = OP_DESTROY, .norm = 1};
    send_cmd(&n);
    arkcos_plan_destroy(split_plan[SLOT_NORM]);
    split_plan[SLOT_NORM] = NULL;
  }
  split_cmd c = {.op = OP_DESTROY};
  c.o.spin = arkcos_plan_spin(p);
  send_cmd(&c);
  if (p == split_plan[slot(c.o.spin)]) split_plan[slot(c.o.spin)] = NULL;
  arkcos_plan_destroy(p);
}

void hmpi_split_stop(void) {
  split_cmd c = {.op = OP_STOP};
  if (hmpi_size() > 1) send_cmd(&c);
}

/* Every rank: the first failing rank's error is every rank's (the code,
 * or 0 when all succeeded); rank r's message reaches every rank. */
static int agree_all(int rc, arkcos_error *err) {
  const int n = hmpi_size(), r = world_rank();
  int mine = rc ? r : n, bad = n;
  MPI_Allreduce(&mine, &bad, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (bad == n) return 0;
  arkcos_error e = {rc, ""};
  if (r == bad && err) e = *err;
  MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, bad, MPI_COMM_WORLD);
  if (!e.code) e.code = ARKCOS_ERUNTIME;
  if (err) *err = e;
  return e.code;
}

/* smoother_mask.c's tests: a missing value (healpy's mask_bad; the band
 * reader makes them NaN already), and the floor of A(w) in normalize mode */
#define BAND_UNSEEN_TOL (1e-8 + 1e-5 * 1.6375e30)
#define BAND_WEIGHT_FLOOR 1e-12
static int band_missing(double x) { return !isfinite(x) || fabs(x - ARKCOS_UNSEEN) <= BAND_UNSEEN_TOL; }

/* The output runs' pixels of the band: local index i = lofs[q] + j */
#define FOR_OWN(i, so, lofs, no)                                             \
  for (int q_ = 0; q_ < (no); q_++)                                          \
    for (int64_t i = (lofs)[q_], e_ = (lofs)[q_] + (so)[q_].b - (so)[q_].a; i < e_; i++)

/* Column c's name as the output has it (smooth_mask.c's column_name). */
static const char *band_column_name(const hpx_header *h, int c, char *buf, size_t len) {
  if (h->cols && h->cols[c].name[0]) return h->cols[c].name;
  return hpx_standard_column_name(h->ncols, c, buf, len);
}

/* The output runs' local positions in a band-local map of the input runs */
static void local_offsets(const arkcos_mpi_segment *si, int ni, const arkcos_mpi_segment *so, int no, int64_t *lofs) {
  for (int q = 0; q < no; q++) {
    int64_t base = 0;
    int k = 0;
    while (k < ni && si[k].b <= so[q].a) base += si[k].b - si[k].a, k++;
    lofs[q] = base + (so[q].a - si[k].a);
  }
}

/* Whether the spin-2 plan p2 has the output runs so[0..no) of the scalar
 * plan (arkcos_plan_create_mpi_as made it so) */
static int same_outputs(const arkcos_plan *p2, const arkcos_mpi_segment *so, int no) {
  const arkcos_mpi_segment *s2 = NULL;
  int n2 = 0;
  if (!p2 || arkcos_plan_mpi_segments(p2, 1, &s2, &n2, NULL) || n2 != no) return 0;
  for (int q = 0; q < no; q++)
    if (s2[q].a != so[q].a || s2[q].b != so[q].b) return 0;
  return 1;
}

/* The polar reconstruction over the bands (hmpi_polar): rank 0 holds the
 * corrections, every rank their sizes (split_cmd's polar, pnd, pno) */
typedef struct band_pol {
  const hmpi_polar *pl;  /* rank 0's (NULL elsewhere) */
  int on[2];             /* the scalar maps, Q and U take it */
  int64_t nd[2], no[2];  /* disc and output pixels per cap */
  int64_t npix;
  double *nrmp;          /* A(1) with the correction of 1 at the caps' outputs (the band's positions), or NULL */
} band_pol;

/* Position of RING pixel g of cap `cap` in an exchange buffer of both caps'
 * first (north, [0, n)) or last (south, [npix - n, npix)) n pixels */
static int64_t cap_slot(int64_t npix, int64_t n, int cap, int64_t g) { return cap ? n + g - (npix - n) : g; }

/* A loop over the own output pixels among the first and the last n pixels
 * of the sphere: i their local position, slot their place in an exchange
 * buffer (cap_slot) */
#define FOR_CAPS(i, slot, so, lofs, nso, npix, n)                                          \
  for (int q_ = 0; q_ < (nso); q_++)                                                       \
    for (int c_ = 0; c_ < 2; c_++)                                                         \
      for (int64_t g_ = c_ ? ((so)[q_].a > (npix) - (n) ? (so)[q_].a : (npix) - (n)) : (so)[q_].a, \
                   e_ = c_ ? (so)[q_].b : ((so)[q_].b < (n) ? (so)[q_].b : (n)),            \
                   i = (lofs)[q_] + g_ - (so)[q_].a, slot = cap_slot((npix), (n), c_, g_); \
           g_ < e_; g_++, i++, slot++)

/* y (and yu) += the polar correction of x (and xu) at the band's own
 * output pixels of the caps in `caps` (bit 0 north, 1 south): spin k = 0
 * (scalar) or 1 (Q, U). Collective: the caps' disc pixels summed onto rank
 * 0 (each has one owner, the others add 0), solved there
 * (arkcos_polar_correct, _correct2: the smoother's arithmetic, each cap on
 * its own), the corrections broadcast. */
static int band_polar_add(const band_pol *bp, int k, int caps, const double *x, const double *xu, double *y,
                          double *yu, const arkcos_mpi_segment *so, int nso, const int64_t *lofs, arkcos_error *err) {
  const int r = world_rank(), nv = k ? 2 : 1;
  const int64_t nd = bp->nd[k], no = bp->no[k], npix = bp->npix;
  double *D = calloc((size_t)(nv * 2 * nd), sizeof *D), *C = malloc(sizeof *C * (size_t)(nv * 2 * no));
  double *disc = r == 0 ? malloc(sizeof *disc * (size_t)(nv * nd)) : NULL;
  double *cc = r == 0 ? malloc(sizeof *cc * (size_t)(nv * no)) : NULL;
  int ok = D && C && (r != 0 || (disc && cc)), all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int rc = all ? ARKCOS_OK : ARKCOS_ENOMEM;
  if (!rc) {
    for (int v = 0; v < nv; v++) {
      const double *src = v ? xu : x;
      FOR_CAPS(i, sl, so, lofs, nso, npix, nd) { D[v * 2 * nd + sl] = src[i]; }
    }
    MPI_Reduce(r == 0 ? MPI_IN_PLACE : D, D, (int)(nv * 2 * nd), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (r == 0) {
      const arkcos_polar *p = k ? bp->pl->p2 : bp->pl->p0;
      for (int cap = 0; cap < 2 && !rc; cap++) {
        if (!(caps >> cap & 1)) continue;
        for (int v = 0; v < nv; v++)
          for (int64_t j = 0; j < nd; j++)
            disc[v * nd + j] = D[v * 2 * nd + cap_slot(npix, nd, cap, arkcos_polar_cap_pixel(p, cap, j))];
        rc = k ? arkcos_polar_correct2(p, cap, disc, disc + nd, cc, cc + no, bp->pl->threads)
               : arkcos_polar_correct(p, disc, cc, bp->pl->threads);
        for (int v = 0; !rc && v < nv; v++)
          for (int64_t j = 0; j < no; j++)
            C[v * 2 * no + cap_slot(npix, no, cap, arkcos_polar_cap_pixel(p, cap, j))] = cc[v * no + j];
      }
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  if (!rc) {
    MPI_Bcast(C, (int)(nv * 2 * no), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int v = 0; v < nv; v++) {
      double *dst = v ? yu : y;
      FOR_CAPS(i, sl, so, lofs, nso, npix, no) {
        if (caps >> (sl >= no) & 1) dst[i] += C[v * 2 * no + sl];
      }
    }
  }
  free(D);
  free(C);
  free(disc);
  free(cc);
  return rc ? arkcos_fail(err, rc, "out of memory for the polar caps' correction") : ARKCOS_OK;
}

/* The correction of 1 at both caps' outputs in an exchange buffer's slots
 * (cap_slot), from rank 0 to every rank (the north output j and its south
 * mirror take delta1[j], as smoother_mask.c's capfix); NULL when short of
 * memory anywhere. Collective. */
static double *band_delta_one(const band_pol *bp) {
  const int64_t no = bp->no[0], npix = bp->npix;
  double *D = malloc(sizeof *D * (size_t)(2 * no + 1));
  int ok = D && (world_rank() != 0 || bp->pl->delta1), all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    free(D);
    return NULL;
  }
  if (world_rank() == 0)
    for (int64_t j = 0; j < no; j++) {
      D[j] = bp->pl->delta1[j];
      D[cap_slot(npix, no, 1, arkcos_polar_mirror(bp->pl->p0, j))] = bp->pl->delta1[j];
    }
  MPI_Bcast(D, (int)(2 * no), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return D;
}

/* bp->nrmp: the band's A(1) (nrm) with rank 0's correction of 1 added at
 * the caps' outputs (smoother.c's norm_polar: the north output j, and its
 * south mirror, take delta1[j]): D0 where the caller has it (every rank or
 * none), else fetched. Collective. */
static int band_polar_norm(band_pol *bp, const double *D0, const double *nrm, int64_t len,
                           const arkcos_mpi_segment *so, int nso, const int64_t *lofs, arkcos_error *err) {
  const int64_t no = bp->no[0], npix = bp->npix;
  bp->nrmp = malloc(sizeof *bp->nrmp * (size_t)(len + 1));
  int ok = bp->nrmp != NULL, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  double *own = all && !D0 ? band_delta_one(bp) : NULL; /* NULL on every rank or none */
  const double *D = D0 ? D0 : own;
  const int done = all && D != NULL;
  if (done) {
    memcpy(bp->nrmp, nrm, sizeof *nrm * (size_t)len);
    FOR_CAPS(i, sl, so, lofs, nso, npix, no) { bp->nrmp[i] = nrm[i] + D[sl]; }
  } else {
    free(bp->nrmp);
    bp->nrmp = NULL;
  }
  free(own);
  return done ? ARKCOS_OK : arkcos_fail(err, ARKCOS_ENOMEM, "out of memory for the polar caps' A(1)");
}

/* dadd (band-local) = the correction of 1 (D) at the own outputs of the
 * caps in `caps`, 0 elsewhere */
static void band_caps_add(const band_pol *bp, const double *D, int caps, double *dadd, int64_t len,
                          const arkcos_mpi_segment *so, int nso, const int64_t *lofs) {
  const int64_t no = bp->no[0], npix = bp->npix;
  memset(dadd, 0, sizeof *dadd * (size_t)(len + 1));
  if (!D || !caps) return;
  FOR_CAPS(i, sl, so, lofs, nso, npix, no) { dadd[i] = caps >> (sl >= no) & 1 ? D[sl] : 0.0; }
}

/* What the pair's missing pixels and mask make of it (smoother_mask.c's
 * smooth_pair), at the scalar band's positions lofs0 (the same output
 * pixels as the spin-2 band's) */
typedef struct pair_weights {
  const double *aw;    /* A(w) of the pair's weight map (NULL: complete, no mask) */
  const double *share; /* A(W): the threshold holds A(w) / A(W) (ring quadrature), or NULL */
  double minw;         /* the threshold (0: none) */
  int norm_mode;       /* normalize: divide by A(w); zero: keep A(w P) */
  const hpx_header *mh; /* the mask's file (NULL: none) */
  const double *nrm;   /* A(1) to divide by (normalize_map), or NULL */
  int caps;            /* the caps whose polar correction Q and U take (bits; 0: none) */
  const double *dadd;  /* the correction of 1 on those caps' outputs (band_caps_add), or NULL:
                        * added to A(w) and A(W) where a mask or missing pixels are in play
                        * (capfix), to A(1) (nrm) where weighted files divide by it */
  int64_t unseen;      /* out: output pixels set UNSEEN (in Q and in U) */
} pair_weights;

/* The pair's band and halo (the spin-2 kernel's) from the file: Q and U
 * missing where either is (NaN), the mask's weights (NULL without) */
static int pair_read(const hpx_header *h, int cq, int cu, const hpx_header *mh, const arkcos_mpi_segment *si,
                     int ni, int64_t len, double *q, double *u, double *mw, arkcos_error *err) {
  int64_t nb = 0;
  int rc = hpx_read_column_runs(h, cq, (const int64_t *)si, ni, q, &nb, err);
  if (!rc) rc = hpx_read_column_runs(h, cu, (const int64_t *)si, ni, u, &nb, err);
  if (!rc && mh) rc = hpx_read_column_runs(mh, 0, (const int64_t *)si, ni, mw, &nb, err);
  for (int64_t i = 0; !rc && i < len; i++) {
    if (band_missing(q[i]) || band_missing(u[i])) q[i] = u[i] = NAN;
    if (mh && band_missing(mw[i])) mw[i] = 0;
  }
  return rc;
}

/* The Q, U pair (columns cq, cu): read at the spin-2 plan's band and halo
 * (its kernel's), w P loaded where weights are in play, smoothed by the
 * spin-2 band plan, then as smoother_mask.c finishes a pair: UNSEEN where
 * the share of A(w) is below the threshold (or A(w) not above the floor in
 * normalize mode), divided by A(w) in normalize mode, by A(1) where the
 * engine divides; both columns written. */
static int band_pair(arkcos_plan *p2, const hpx_header *h, int cq, int cu, pair_weights *pw, const int64_t *lofs0,
                     const band_pol *bp, const char *tmp, const char *out, const hpx_band_layout *L,
                     arkcos_error *err) {
  const arkcos_mpi_segment *si = NULL, *so = NULL;
  int ni = 0, no = 0;
  int rc = arkcos_plan_mpi_segments(p2, 0, &si, &ni, err);
  if (!rc) rc = arkcos_plan_mpi_segments(p2, 1, &so, &no, err);
  if (rc) return rc;
  int64_t len = 0;
  for (int k = 0; k < ni; k++) len += si[k].b - si[k].a;
  double *buf = malloc(sizeof *buf * 5 * (size_t)(len + 1));
  int64_t *lofs = malloc(sizeof *lofs * (size_t)(no + 1));
  if (!buf || !lofs) rc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory for the band of Q and U", out);
  double *q = buf, *u = q + len + 1, *yq = u + len + 1, *yu = yq + len + 1, *mw = pw->mh ? yu + len + 1 : NULL;
  if (!rc) rc = pair_read(h, cq, cu, pw->mh, si, ni, len, q, u, mw, err);
  if (!rc && pw->aw) /* w P (load_map) */
    for (int64_t i = 0; i < len; i++) {
      const int out0 = band_missing(q[i]) || (mw && mw[i] == 0);
      q[i] = out0 ? 0.0 : mw ? mw[i] * q[i] : q[i];
      u[i] = out0 ? 0.0 : mw ? mw[i] * u[i] : u[i];
    }
  if (!rc) {
    local_offsets(si, ni, so, no, lofs);
    rc = arkcos_execute2_mpi_local(p2, q, u, yq, yu, err);
  }
  /* the polar correction of Q and U (collective: every rank, or none when
   * one failed; the file then fails) */
  if (pw->caps && !hmpi_max(rc != 0)) rc = band_polar_add(bp, 1, pw->caps, q, u, yq, yu, so, no, lofs, err);
  for (int k = 0; !rc && k < no; k++)
    for (int64_t j = 0; j < so[k].b - so[k].a; j++) {
      const int64_t i0 = lofs0[k] + j, i2 = lofs[k] + j;
      if (pw->aw) { /* finish (at the corrected caps A(w) and A(W) plus the correction of 1) */
        const double e = pw->dadd ? pw->dadd[i0] : 0.0;
        const double v = pw->dadd ? pw->aw[i0] + e : pw->aw[i0];
        const double sh = pw->share ? v / (pw->dadd ? pw->share[i0] + e : pw->share[i0]) : v;
        if ((pw->minw > 0 && sh < pw->minw) || (pw->norm_mode && !(v > BAND_WEIGHT_FLOOR))) {
          yq[i2] = yu[i2] = ARKCOS_UNSEEN;
          pw->unseen++;
        } else if (pw->norm_mode) {
          yq[i2] /= v;
          yu[i2] /= v;
        }
      }
      if (pw->nrm) { /* normalize_map */
        const double dv = pw->dadd ? pw->nrm[i0] + pw->dadd[i0] : pw->nrm[i0];
        if (yq[i2] != ARKCOS_UNSEEN) yq[i2] /= dv;
        if (yu[i2] != ARKCOS_UNSEEN) yu[i2] /= dv;
      }
    }
  if (!rc) rc = hpx_band_write_column(tmp, out, L, cq, (const int64_t *)so, lofs, no, yq, err);
  if (!rc) rc = hpx_band_write_column(tmp, out, L, cu, (const int64_t *)so, lofs, no, yu, err);
  free(buf);
  free(lofs);
  return rc;
}

/* A(1) at the output runs so[0..no) (local positions lofs of the caller's
 * band) by plan pn: the scalar band plan itself, or the exact plan of A(1)
 * with its bands (hmpi_split_norm_plan), whose own halo is laid out here */
static int band_ones(arkcos_plan *pn, const arkcos_mpi_segment *so, int no, const int64_t *lofs, double *nrm,
                     arkcos_error *err) {
  const arkcos_mpi_segment *si = NULL, *s2 = NULL;
  int ni = 0, n2 = 0;
  int rc = arkcos_plan_mpi_segments(pn, 0, &si, &ni, err);
  if (!rc) rc = arkcos_plan_mpi_segments(pn, 1, &s2, &n2, err);
  if (!rc && n2 != no) rc = arkcos_fail(err, ARKCOS_EINVAL, "the plan of A(1) has other bands");
  if (rc) return rc;
  int64_t len = 0;
  for (int k = 0; k < ni; k++) len += si[k].b - si[k].a;
  double *one = malloc(sizeof *one * (size_t)(len + 1)), *y = malloc(sizeof *y * (size_t)(len + 1));
  int64_t *lo = malloc(sizeof *lo * (size_t)(no + 1));
  if (!one || !y || !lo) rc = arkcos_fail(err, ARKCOS_ENOMEM, "out of memory for A(1) of the band");
  for (int64_t i = 0; !rc && i < len; i++) one[i] = 1;
  if (!rc) {
    local_offsets(si, ni, s2, n2, lo);
    rc = arkcos_execute_mpi_local(pn, one, y, err);
  }
  for (int k = 0; !rc && k < no; k++)
    for (int64_t j = 0; j < so[k].b - so[k].a; j++) nrm[lofs[k] + j] = y[lo[k] + j];
  free(one);
  free(y);
  free(lo);
  return rc;
}

/* A(w) of a set, w = 0 at the missing pixels of x (NaN) and where the mask
 * is 0, the mask (or 1) elsewhere (smooth_weight); y is scratch. wconst: w
 * is one value over the sphere; else the band takes the general path even
 * where its rings hold one value (one process's bytes: the constant map's
 * shortcut rounds otherwise, 4e-14 at the caps of a map whose band and halo
 * the holes miss) */
static int set_weight(arkcos_plan *p, const double *x, const double *mw, int64_t len, int wconst, double *y,
                      double **aw, arkcos_error *err) {
  if (!(*aw = malloc(sizeof **aw * (size_t)(len + 1))))
    return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory for the weight map");
  for (int64_t i = 0; i < len; i++) y[i] = band_missing(x[i]) ? 0.0 : mw ? mw[i] : 1.0;
  return wconst ? arkcos_execute_mpi_local(p, y, *aw, err) : arkcos_execute_mpi_local_general(p, y, *aw, err);
}

/* One file, every rank its own band (hmpi_split_file): the band and halo
 * of each column read from in, smoothed with band-local maps, the band's
 * pixels written in place into the output's temporary file, which rank 0
 * created (the header) and renames once every rank succeeded. Missing
 * pixels, the mask and the weights as smoother_mask.c does them (hmpi.h);
 * a Q, U pair (columns pq, pu; -1: none) with the spin-2 plan p2 where no
 * weights are in play. Long: the steps share the band's buffers and every
 * rank must take each collective step in the same order. */
static int band_file(arkcos_plan *p, arkcos_plan *p2, arkcos_plan *pn, int single, int pq, int pu, const char *in,
                     const char *out, int force, int normalize, const hmpi_mask *mk, band_pol *bp,
                     hmpi_file_stats *st, arkcos_error *err) {
  const int r = world_rank();
  hpx_header h = {0}, mh = {0};
  const arkcos_mpi_segment *si = NULL, *so = NULL;
  int ni = 0, no = 0, ncols = 0, whole = 0;
  double **maps = NULL, *y = NULL, *mw = NULL;
  int64_t *lofs = NULL, len = 0;
  double t0 = MPI_Wtime();
  const int masked = mk->file != NULL;
  if (st) memset(st->polar, 0, sizeof st->polar);
  int rc = !p ? arkcos_fail(err, ARKCOS_EINVAL, "%s: rank %d holds no plan", in, r)
           : hpx_read_header(in, &h, err);
  if (!rc && masked) rc = hpx_read_header(mk->file, &mh, err);
  if (!rc) rc = arkcos_plan_mpi_segments(p, 0, &si, &ni, err);
  if (!rc) rc = arkcos_plan_mpi_segments(p, 1, &so, &no, err);
  /* partial-sky maps and masks are read by runs too (mapio.h) */
  if (!rc) whole = h.ncols > HMPI_MAX_COLS && (masked || mk->write_weight);
  /* a plan whose band execute is collective (the harmonic path: its a_lm
   * summed over the ranks) runs where every rank takes every execute
   * together whatever fails: the whole-map path, rank 0 driving */
  for (int k = 0; !rc && k < 3; k++) {
    arkcos_plan *q = k == 0 ? p : k == 1 ? p2 : pn;
    arkcos_mpi_band b;
    if (q && !arkcos_plan_mpi_band(q, &b, NULL) && b.collective) whole = 1;
  }
  rc = agree_all(rc, err);
  if (!rc && hmpi_max(whole)) rc = HMPI_WHOLE_MAP;
  if (!rc) {
    for (int k = 0; k < ni; k++) len += si[k].b - si[k].a;
    ncols = h.ncols;
    maps = calloc((size_t)ncols, sizeof *maps);
    y = malloc(sizeof *y * (size_t)(len + 1));
    lofs = malloc(sizeof *lofs * (size_t)(no + 1));
    if (!maps || !y || !lofs) rc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory for its band", in, r);
  }
  /* an output run's local position: inside one input run */
  if (!rc) local_offsets(si, ni, so, no, lofs);
  /* the mask's band and halo: UNSEEN and NaN weigh 0 (its values were
   * checked by the command: in [0, 1]) */
  if (!rc && masked) {
    int64_t nb = 0;
    if (!(mw = malloc(sizeof *mw * (size_t)(len + 1))))
      rc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory for its band", in, r);
    else rc = hpx_read_column_runs(&mh, 0, (const int64_t *)si, ni, mw, &nb, err);
    for (int64_t i = 0; !rc && i < len; i++)
      if (band_missing(mw[i])) mw[i] = 0;
  }
  /* every column's band and halo; its missing pixels (NaN as read) counted
   * on the band's own pixels; a value beyond float range anywhere sends
   * the file of a single-precision plan to the whole-map path (where the
   * engine refuses it, naming the first such pixel of the map) */
  int64_t *nmiss = calloc((size_t)ncols + 1, sizeof *nmiss), *nexcl = calloc((size_t)ncols + 1, sizeof *nexcl);
  if (!rc && (!nmiss || !nexcl)) rc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory", in, r);
  int64_t nrange = 0;
  for (int c = 0; !rc && c < ncols; c++) {
    int64_t nb = 0;
    if (!(maps[c] = malloc(sizeof **maps * (size_t)(len + 1))))
      rc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory for its band", in, r);
    else rc = hpx_read_column_runs(&h, c, (const int64_t *)si, ni, maps[c], &nb, err);
    for (int64_t i = 0; !rc && i < len; i++)
      nrange += !band_missing(maps[c][i]) && !(fabs(maps[c][i]) < 3.4028234663852886e38);
    if (!rc) {
      FOR_OWN(i, so, lofs, no) {
        const int m = band_missing(maps[c][i]);
        nmiss[c] += m;
        nexcl[c] += m || (mw && mw[i] == 0);
      }
    }
  }
  /* Q and U are one field: missing where either is (smoother_mask.c's
   * pol_union), their counts taken again on the own pixels */
  int64_t npolu = 0;
  if (!rc && pq >= 0 && pq < ncols && pu >= 0 && pu < ncols && pq != pu) {
    nmiss[pq] = nmiss[pu] = nexcl[pq] = nexcl[pu] = 0;
    FOR_OWN(i, so, lofs, no) {
      const int a = band_missing(maps[pq][i]), b = band_missing(maps[pu][i]);
      npolu += a != b;
      nmiss[pq] += a || b;
      nexcl[pq] += a || b || (mw && mw[i] == 0);
    }
    nmiss[pu] = nmiss[pq];
    nexcl[pu] = nexcl[pq];
    for (int64_t i = 0; i < len; i++)
      if (band_missing(maps[pq][i]) || band_missing(maps[pu][i])) maps[pq][i] = maps[pu][i] = NAN;
  }
  if (rc != HMPI_WHOLE_MAP) rc = agree_all(rc, err);
  int64_t anyrange = 0;
  MPI_Allreduce(&nrange, &anyrange, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (!rc) {
    MPI_Allreduce(MPI_IN_PLACE, nmiss, ncols, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, nexcl, ncols, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &npolu, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  }
  int weighted = masked || mk->write_weight;
  for (int c = 0; !rc && c < ncols; c++) weighted |= nmiss[c] > 0;
  const double t1 = MPI_Wtime();
  if (!rc && ((anyrange && single) || (weighted && ncols > HMPI_MAX_COLS))) rc = HMPI_WHOLE_MAP;
  const int polar = bp->on[0] || bp->on[1];
  bp->npix = 12 * (int64_t)h.nside * h.nside;
  /* a Q, U pair needs the spin-2 plan on the scalar plan's output pixels */
  if (!rc && pq >= 0 && (pq >= ncols || pu < 0 || pu >= ncols || pq == pu || hmpi_max(!same_outputs(p2, so, no))))
    rc = HMPI_WHOLE_MAP;
  /* the distinct sets of missing pixels over the sphere (find_set): the
   * columns compared on every rank's own pixels */
  int *set_of = NULL, *eq = NULL, nsets = 0, nwcols = 0;
  /* aw_caps: the caps whose polar correction A(w) took (smoother_mask.c's
   * wset); caps: those the set's maps take (set_polar_caps) */
  typedef struct { int first, last, trivial, need, aw_caps, caps, wconst; double *aw; } band_set;
  band_set *sets = NULL;
  if (!rc && weighted) {
    set_of = calloc((size_t)ncols, sizeof *set_of);
    eq = calloc((size_t)ncols * (size_t)ncols, sizeof *eq);
    sets = calloc((size_t)ncols, sizeof *sets);
    int ok = set_of && eq && sets, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) rc = agree_all(arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory", in, r), err);
    for (int c = 0; !rc && c < ncols; c++)
      for (int d = 0; d < c; d++) {
        int same = nmiss[c] == nmiss[d];
        if (same) FOR_OWN(i, so, lofs, no) {
            if (band_missing(maps[c][i]) != band_missing(maps[d][i])) {
              same = 0;
              break;
            }
          }
        eq[(size_t)c * (size_t)ncols + (size_t)d] = same;
      }
    if (!rc) MPI_Allreduce(MPI_IN_PLACE, eq, ncols * ncols, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    for (int c = 0; !rc && c < ncols; c++) {
      int k = 0;
      while (k < nsets && !eq[(size_t)c * (size_t)ncols + (size_t)sets[k].first]) k++;
      if (k == nsets) sets[nsets++] = (band_set){.first = c, .trivial = nmiss[c] == 0 && !masked};
      set_of[c] = k;
      sets[k].last = c;
      sets[k].need |= !sets[k].trivial || mk->write_weight;
    }
    nwcols = !mk->write_weight ? 0 : nsets == 1 ? 1 : ncols;
  }
  /* whether each set's w and each column's input (w m where weights are
   * in play) is one value over the sphere: the least and largest on the
   * ranks' own pixels. A band execute of anything else takes the general
   * path even where its rings hold one value (set_weight, and the column's
   * execute below) */
  int *cconst = NULL;
  if (!rc) {
    const int nv = (sets ? nsets : 0) + ncols;
    double *lohi = malloc(sizeof *lohi * 2 * (size_t)(nv + 1));
    cconst = calloc((size_t)ncols + 1, sizeof *cconst);
    int have = lohi && cconst, all_have = 0;
    MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_have) rc = agree_all(arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory", in, r), err);
    for (int k = 0; !rc && k < nv; k++) {
      const int set = sets && k < nsets, c = set ? -1 : k - (sets ? nsets : 0);
      const double *x = maps[set ? sets[k].first : c];
      const int wl = !set && sets && !sets[set_of[c]].trivial; /* w m */
      double lo = INFINITY, hi = -INFINITY;
      FOR_OWN(i, so, lofs, no) {
        const double v = set ? (band_missing(x[i]) ? 0.0 : mw ? mw[i] : 1.0)
                         : !wl ? x[i] : band_missing(x[i]) || (mw && mw[i] == 0) ? 0.0 : mw ? mw[i] * x[i] : x[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
      lohi[k] = lo, lohi[nv + k] = -hi;
    }
    if (!rc) {
      MPI_Allreduce(MPI_IN_PLACE, lohi, 2 * nv, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
      for (int k = 0; k < nv; k++) {
        const int one = lohi[k] == -lohi[nv + k];
        if (sets && k < nsets) sets[k].wconst = one;
        else cconst[k - (sets ? nsets : 0)] = one;
      }
    }
    free(lohi);
  }
  /* the polar reconstruction with weights in play (missing pixels, a mask,
   * --write-weight), as the smoother's set_polar_caps: a set keeps it on a
   * cap whose disc has no missing or masked pixel (weight below 1), each
   * rank looking at its own output pixels there; a set without either
   * keeps both. At such caps A(w), A(W) and A(1) take the correction of 1
   * (D) where the smoother's capfix adds it. */
  double *D = NULL, *dadd = NULL;
  if (!rc && weighted && polar) {
    int *cut = calloc((size_t)nsets + 1, sizeof *cut); /* bit 0: north disc incomplete, 1: south */
    const int64_t nd = bp->nd[0], npix = bp->npix;
    for (int k = 0; cut && k < nsets; k++) {
      if (sets[k].trivial) continue;
      const double *x = maps[sets[k].first];
      FOR_CAPS(i, sl, so, lofs, no, npix, nd) {
        if (band_missing(x[i]) || (mw && mw[i] != 1)) cut[k] |= 1 << (sl >= nd);
      }
    }
    int ok = cut != NULL, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) MPI_Allreduce(MPI_IN_PLACE, cut, nsets, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
    for (int k = 0; all && k < nsets; k++) sets[k].caps = !bp->on[0] ? 0 : sets[k].trivial ? 3 : 3 & ~cut[k];
    free(cut);
    if (all && bp->on[0]) {
      D = band_delta_one(bp);
      dadd = malloc(sizeof *dadd * (size_t)(len + 1));
      ok = D && dadd;
      MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      all = ok;
    }
    if (!all) rc = agree_all(arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory for the polar caps", in, r), err);
  }
  char tmp[4096] = "";
  hpx_band_layout L;
  memset(&L, 0, sizeof L);
  if (!rc) {
    int crc = 0;
    if (r == 0) {
      hpx_column *cols = calloc((size_t)(ncols + nwcols), sizeof *cols);
      for (int c = 0; cols && c < ncols; c++) {
        char buf[HPX_NAME_LEN];
        snprintf(cols[c].name, HPX_NAME_LEN, "%s", band_column_name(&h, c, buf, sizeof buf));
        if (h.cols) snprintf(cols[c].unit, HPX_NAME_LEN, "%s", h.cols[c].unit);
      }
      for (int k = 0; cols && k < nwcols; k++) { /* mask_file_columns' names */
        char buf[HPX_NAME_LEN];
        if (nwcols == 1)
          snprintf(cols[ncols + k].name, HPX_NAME_LEN, "WEIGHT");
        else
          snprintf(cols[ncols + k].name, HPX_NAME_LEN, "WEIGHT_%.60s", band_column_name(&h, k, buf, sizeof buf));
      }
      crc = !cols ? arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", out)
                  : hpx_band_create(out, ncols + nwcols, h.nside, h.nested, h.is_float32, force, cols, h.coordsys,
                                    tmp, sizeof tmp, &L, err);
      free(cols);
    }
    rc = agree_all(crc, err);
    if (!rc) {
      MPI_Bcast(tmp, (int)sizeof tmp, MPI_CHAR, 0, MPI_COMM_WORLD);
      MPI_Bcast(&L, (int)sizeof L, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
  }
  /* ARKCOS_MPI_TIMES: each band smoothed alone, rank after rank, and its
   * time printed: what the cost model (plan.c) is fitted to (docs/MPI.md) */
  for (int q = 0; !rc && getenv("ARKCOS_MPI_TIMES") && q < hmpi_size(); q++) {
    MPI_Barrier(MPI_COMM_WORLD);
    arkcos_mpi_band b;
    if (q != r || arkcos_plan_mpi_band(p, &b, NULL)) continue;
    const double a = MPI_Wtime();
    if (arkcos_execute_mpi_local(p, maps[0], y, NULL)) continue;
    arkcos_stage_times t;
    arkcos_plan_stages(p, &t);
    fprintf(stderr, "arkcos: rank %d/%d alone: %s: %d output rings, %lld output pixels, smoothing %.4g s (map_fft "
            "%.3g kernel_eval %.3g kernel_fft %.3g reduction %.3g map_ifft %.3g)\n", r, b.nranks, in, b.nrings_out,
            (long long)b.pixels_out, MPI_Wtime() - a, t.map_fft, t.kernel_eval, t.kernel_fft, t.reduction,
            t.map_ifft);
  }
  double t_exec = 0, t_write = 0, t_weight = 0;
  int nweights = 0;
  arkcos_stage_times sum;
  memset(&sum, 0, sizeof sum);
  int wrc = 0;
  /* normalize: the band's share of the single process's A(1) (A(W) under
   * ring quadrature), smoother_mask.c's norm_w */
  double *nrm = NULL, *wbuf = NULL;
  if (!rc && normalize && !(nrm = malloc(sizeof *nrm * (size_t)(len + 1))))
    wrc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory for its band", in, r);
  if (!rc && normalize && !wrc) wrc = band_ones(pn ? pn : p, so, no, lofs, nrm, err);
  /* the maps that take the polar correction are divided by A(1) + its
   * correction of 1 at the caps' outputs (collective); A(1) must be
   * positive wherever a map is divided by it (smoother_mask.c's
   * ensure_norm, each pixel counted once) */
  if (!rc && normalize && polar && !hmpi_max(wrc != 0) && bp->on[0])
    wrc = band_polar_norm(bp, D, nrm, len, so, no, lofs, err);
  if (!rc && normalize) {
    int64_t nonpos = 0;
    if (!wrc) FOR_OWN(i, so, lofs, no) { nonpos += !(nrm[i] > 0) || (bp->nrmp && !(bp->nrmp[i] > 0)); }
    if (polar) { /* the loop below is collective then: every rank agrees first */
      MPI_Allreduce(MPI_IN_PLACE, &nonpos, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      if (nonpos && !wrc)
        wrc = arkcos_fail(err, ARKCOS_EINVAL,
                          "normalize: the kernel's discrete sum is not positive at %lld of %lld pixels "
                          "(negative lobes); cannot divide by it", (long long)nonpos, (long long)bp->npix);
    } else if (nonpos && !wrc) {
      wrc = arkcos_fail(err, ARKCOS_EINVAL,
                        "normalize: the kernel's discrete sum is not positive at %lld pixel(s) of rank %d's band "
                        "(negative lobes); cannot divide by it", (long long)nonpos, r);
    }
  }
  /* the threshold and the weights: A(w) / A(W) under ring quadrature */
  const double *share = mk->share ? nrm : NULL;
  const double minw = mk->zero ? 0 : mk->min_weight;
  const int norm_mode = !mk->zero;
  if (!rc && !wrc && nwcols && !(wbuf = malloc(sizeof *wbuf * (size_t)(len + 1))))
    wrc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory for its band", in, r);
  int64_t *unseen = calloc((size_t)ncols + 1, sizeof *unseen);
  if (!rc && !wrc && !unseen) wrc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory", in, r);
  /* with the polar reconstruction each column's correction is collective:
   * the ranks stop together */
  for (int c = 0; !rc && c < ncols; c++) {
    if (polar ? hmpi_max(wrc != 0) : wrc) break;
    if (pq >= 0 && (c == pq || c == pu)) { /* the pair, at the later of its columns */
      if (c != (pq > pu ? pq : pu)) continue;
      band_set *w = sets ? &sets[set_of[pq]] : NULL;
      if (w && w->need && !w->aw) { /* A(w) of the pair's set (S0(w)), ring quadrature */
        const double a = MPI_Wtime();
        wrc = set_weight(p, maps[pq], mw, len, w->wconst, y, &w->aw, err);
        w->aw_caps = 0;
        t_weight += MPI_Wtime() - a;
        nweights++;
        if (polar ? hmpi_max(wrc != 0) : wrc) break;
      }
      free(maps[pq]); /* read again at the spin-2 plan's band and halo */
      free(maps[pu]);
      maps[pq] = maps[pu] = NULL;
      pair_weights pw = {.aw = w && !w->trivial ? w->aw : NULL, .share = share, .minw = minw, .norm_mode = norm_mode,
                         .mh = masked ? &mh : NULL};
      /* Q and U take the polar correction where the scalar maps' A(1) has it
       * (smoother_mask.c's smooth_pair), and are divided by that A(1); with
       * missing pixels or a mask on the caps their set keeps (the scalar
       * correction's), A(w) and A(W) plus the correction of 1 there */
      const int caps2 = !bp->on[1] ? 0 : w && !w->trivial ? (bp->on[0] ? w->caps : 0)
                                       : !normalize || bp->on[0] ? 3 : 0;
      pw.caps = caps2;
      if (dadd) {
        band_caps_add(bp, D, caps2, dadd, len, so, no, lofs);
        pw.dadd = caps2 ? dadd : NULL;
        pw.nrm = nrm && !(norm_mode && pw.aw) ? nrm : NULL;
      } else {
        pw.nrm = nrm && !(norm_mode && pw.aw) ? (caps2 && bp->nrmp ? bp->nrmp : nrm) : NULL;
      }
      if (st) st->polar[pq < HMPI_MAX_COLS ? pq : HMPI_MAX_COLS - 1] =
                  st->polar[pu < HMPI_MAX_COLS ? pu : HMPI_MAX_COLS - 1] = caps2;
      const double a = MPI_Wtime();
      wrc = band_pair(p2, &h, pq, pu, &pw, lofs, bp, tmp, out, &L, err);
      const double b = MPI_Wtime();
      unseen[pq] = unseen[pu] = pw.unseen;
      arkcos_stage_times t;
      arkcos_plan_stages(p2, &t);
      stage_times_add(&sum, &t);
      if (st) /* half the pair's time each, as the whole-map path counts them */
        st->map_time[pq < HMPI_MAX_COLS ? pq : HMPI_MAX_COLS - 1] =
            st->map_time[pu < HMPI_MAX_COLS ? pu : HMPI_MAX_COLS - 1] = (b - a) / 2;
      /* store_weight: the pair's columns, or the one WEIGHT column when it
       * is column 0's; at the corrected caps A(w) plus the correction of 1
       * where it lacks it, the share's A(W) too (smoother_mask.c's) */
      const int wcf = w && dadd && caps2 && (!w->trivial || share);
      const int addaw = w && (!w->trivial || (w->aw_caps & caps2) != caps2);
      for (int k = 0; !wrc && nwcols && k < 2; k++) {
        const int cc = k ? pu : pq;
        if (nwcols == 1 && cc != 0) continue;
        FOR_OWN(i, so, lofs, no) {
          const double a = wcf && addaw ? w->aw[i] + dadd[i] : w->aw[i];
          wbuf[i] = share ? a / (wcf ? share[i] + dadd[i] : share[i]) : a;
        }
        wrc = hpx_band_write_column(tmp, out, &L, ncols + (nwcols > 1 ? cc : 0), (const int64_t *)so, lofs, no,
                                    wbuf, err);
      }
      if (w && (pq > pu ? pq : pu) == w->last) {
        free(w->aw);
        w->aw = NULL;
      }
      t_exec += b - a;
      t_write += MPI_Wtime() - b;
      continue;
    }
    band_set *w = sets ? &sets[set_of[c]] : NULL;
    double *x = maps[c];
    /* the caps the column takes the correction on: its set's (weights in
     * play), else both; polset: its set is Q and U's, whose A(w) is ring
     * quadrature where weights are in play (smoother_mask.c's smooth_scalar) */
    const int caps = !bp->on[0] ? 0 : w ? w->caps : 3;
    const int polset = w && pq >= 0 && set_of[c] == set_of[pq];
    /* A(w) of the column's set, once (smooth_weight): with the map's
     * correction on its caps, but for Q and U's set with weights */
    if (w && w->need && !w->aw) {
      const double a = MPI_Wtime();
      wrc = set_weight(p, x, mw, len, w->wconst, y, &w->aw, err);
      const int wcaps = polset && !w->trivial ? 0 : caps;
      if (wcaps && !hmpi_max(wrc != 0)) wrc = band_polar_add(bp, 0, wcaps, y, NULL, w->aw, NULL, so, no, lofs, err);
      w->aw_caps = wcaps;
      t_weight += MPI_Wtime() - a;
      nweights++;
      if (polar ? hmpi_max(wrc != 0) : wrc) break;
    }
    if (dadd) band_caps_add(bp, D, caps, dadd, len, so, no, lofs);
    /* capfix: A(w) (where it lacks it) and A(W) plus the correction of 1 */
    const int cf = dadd && caps && w && !w->trivial;
    /* w m (load_map) */
    if (w && !w->trivial)
      for (int64_t i = 0; i < len; i++)
        x[i] = band_missing(x[i]) || (mw && mw[i] == 0) ? 0.0 : mw ? mw[i] * x[i] : x[i];
    const double a = MPI_Wtime();
    wrc = cconst[c] ? arkcos_execute_mpi_local(p, x, y, err) : arkcos_execute_mpi_local_general(p, x, y, err);
    /* the polar correction (collective: every rank, or none when one failed) */
    if (caps && !hmpi_max(wrc != 0)) wrc = band_polar_add(bp, 0, caps, x, NULL, y, NULL, so, no, lofs, err);
    if (st) st->polar[c < HMPI_MAX_COLS ? c : HMPI_MAX_COLS - 1] = caps;
    const double b = MPI_Wtime();
    if (!wrc) {
      arkcos_stage_times t;
      arkcos_plan_stages(p, &t);
      stage_times_add(&sum, &t);
      if (st) st->map_time[c < HMPI_MAX_COLS ? c : HMPI_MAX_COLS - 1] = b - a;
      if (w && !w->trivial) { /* finish */
        const double *aw = w->aw;
        FOR_OWN(i, so, lofs, no) {
          const double v = cf && polset ? aw[i] + dadd[i] : aw[i];
          const double sh = share ? v / (cf ? share[i] + dadd[i] : share[i]) : v;
          if ((minw > 0 && sh < minw) || (norm_mode && !(v > BAND_WEIGHT_FLOOR))) {
            y[i] = ARKCOS_UNSEEN;
            unseen[c]++;
          } else if (norm_mode) {
            y[i] /= v;
          }
        }
      }
      if (nrm && !(norm_mode && w && !w->trivial)) { /* normalize_map (A(1) + the correction of 1 with polar) */
        if (dadd) {
          FOR_OWN(i, so, lofs, no) {
            if (y[i] != ARKCOS_UNSEEN) y[i] /= nrm[i] + dadd[i];
          }
        } else {
          const double *dv = bp->nrmp ? bp->nrmp : nrm;
          FOR_OWN(i, so, lofs, no) {
            if (y[i] != ARKCOS_UNSEEN) y[i] /= dv[i];
          }
        }
      }
      wrc = hpx_band_write_column(tmp, out, &L, c, (const int64_t *)so, lofs, no, y, err);
      if (!wrc && nwcols && (nwcols > 1 || c == 0)) { /* store_weight (its caps as smoother_mask.c's) */
        const int wcf = cf || (dadd && caps && w->trivial && share);
        const int addaw = cf ? polset : (w->aw_caps & caps) != caps;
        FOR_OWN(i, so, lofs, no) {
          const double a = wcf && addaw ? w->aw[i] + dadd[i] : w->aw[i];
          wbuf[i] = share ? a / (wcf ? share[i] + dadd[i] : share[i]) : a;
        }
        wrc = hpx_band_write_column(tmp, out, &L, ncols + (nwcols > 1 ? c : 0), (const int64_t *)so, lofs, no,
                                    wbuf, err);
      }
    }
    if (w && c == w->last) {
      free(w->aw);
      w->aw = NULL;
    }
    free(maps[c]);
    maps[c] = NULL;
    t_exec += b - a;
    t_write += MPI_Wtime() - b;
  }
  if (!rc) { /* every rank wrote its pixels, or the file goes */
    rc = agree_all(wrc, err);
    int frc = rc;
    if (r == 0) {
      if (!rc) frc = hpx_band_commit(tmp, out, err);
      if (frc) hpx_band_abort(tmp);
    }
    if (!rc) rc = agree_all(frc, err);
  }
  if (!rc && weighted) MPI_Allreduce(MPI_IN_PLACE, unseen, ncols, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  const double slowest = hmpi_max_double(t_exec); /* the slowest band (collective) */
  if (st) {
    st->t_read = t1 - t0;
    st->t_exec = slowest;
    st->t_write = t_write;
    st->stages = sum;
    st->ncols = ncols;
    st->reported = !rc && weighted;
    memset(&st->last, 0, sizeof st->last);
    memset(st->rep, 0, sizeof st->rep);
    if (st->reported) { /* the engine's report of the whole map */
      st->last.nmaps = ncols;
      st->last.nweight_maps = nsets;
      st->last.weights_smoothed = nweights;
      st->last.weight_time = t_weight;
      st->last.pol_union = npolu;
      for (int c = 0; c < ncols; c++)
        st->rep[c] = (arkcos_smoother_map_report){.missing = nmiss[c], .excluded = nexcl[c], .unseen = unseen[c],
                                                  .weighted = !sets[set_of[c]].trivial, .weight_map = set_of[c]};
    }
  }
  for (int c = 0; maps && c < ncols; c++) free(maps[c]);
  free(D);
  free(dadd);
  free(cconst);
  for (int k = 0; sets && k < nsets; k++) free(sets[k].aw);
  free(sets);
  free(set_of);
  free(eq);
  free(nmiss);
  free(nexcl);
  free(unseen);
  free(maps);
  free(mw);
  free(wbuf);
  free(nrm);
  free(bp->nrmp);
  bp->nrmp = NULL;
  free(y);
  free(lofs);
  hpx_header_free(&h);
  hpx_header_free(&mh);
  return rc;
}

int hmpi_split_file(const char *in, const char *out, int pol_q, int pol_u, int force, int normalize,
                    const hmpi_mask *mask, const hmpi_polar *polar, hmpi_file_stats *st, arkcos_error *err) {
  if (!mpi_on || hmpi_size() < 2) return HMPI_WHOLE_MAP;
  const hmpi_mask none = {0};
  if (!mask) mask = &none;
  split_cmd c = {.op = OP_FILE, .force = force, .normalize = normalize, .masked = mask->file != NULL,
                 .zero = mask->zero, .min_weight = mask->min_weight, .share = mask->share,
                 .write_weight = mask->write_weight, .pol_q = pol_q, .pol_u = pol_u};
  band_pol bp = {.pl = polar};
  for (int k = 0; polar && k < 2; k++) {
    const arkcos_polar *pk = k ? polar->p2 : polar->p0;
    /* Q and U take theirs only as one field (a pair of columns) */
    c.polar[k] = bp.on[k] = pk && (!k || pol_q >= 0);
    c.pnd[k] = bp.nd[k] = arkcos_polar_disc_pixels(pk);
    c.pno[k] = bp.no[k] = arkcos_polar_out_pixels(pk);
  }
  send_cmd(&c);
  char *a = hmpi_bcast_string(in, 0), *b = hmpi_bcast_string(out, 0);
  char *m = hmpi_bcast_string(mask->file ? mask->file : "", 0);
  arkcos_plan *pn = split_plan[SLOT_NORM] && split_nside[SLOT_NORM] == split_nside[0] ? split_plan[SLOT_NORM] : NULL;
  const int rc = a && b && m ? band_file(split_plan[0], split_plan[1], pn, split_single, pol_q, pol_u, a, b, force,
                                         normalize, mask, &bp, st, err)
                             : arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  free(a);
  free(b);
  free(m);
  return rc;
}

int hmpi_split_serve(hmpi_kernel_fn kernel_for, void *ctx) {
  arkcos_plan *p[3] = {NULL, NULL, NULL}; /* scalar, spin 2, A(1)'s (slot_of) */
  int status = 0, single = 0;
  for (;;) {
    split_cmd c;
    send_cmd(&c);
    arkcos_error err = {0, ""};
    const int k2 = slot_of(&c);
    if (c.op == OP_STOP) break;
    if (c.op == OP_PLAN) {
      arkcos_plan_destroy(p[k2]); /* a failed plan's retry (no DESTROY came) */
      arkcos_geometry *g = arkcos_geometry_healpix(c.nside, &err);
      double *w = g && c.weighted ? malloc(sizeof *w * (size_t)g->nrings) : NULL;
      if (w && !arkcos_healpix_ring_weights(c.nside, w))
        for (int i = 0; i < g->nrings; i++) g->rings[i].weight *= w[i];
      free(w);
      const arkcos_kernel *k = kernel_for(ctx, c.nside, c.o.spin); /* NULL fails in the collective create too */
      /* collective: g NULL fails in it */
      p[k2] = c.like0 ? arkcos_plan_create_mpi_as(MPI_COMM_WORLD, g, k, &c.o, p[0], &err)
                      : arkcos_plan_create_mpi(MPI_COMM_WORLD, g, k, &c.o, &err);
      if (k2 == 0) single = c.o.precision == ARKCOS_SINGLE;
      arkcos_geometry_destroy(g); /* the plan keeps a copy */
    } else if (c.op == OP_EXEC) {
      const int rc = k2 ? arkcos_execute2_mpi(p[1], NULL, NULL, NULL, NULL, &err)
                        : arkcos_execute_mpi(p[0], NULL, NULL, &err);
      if (rc) status = 1; /* rank 0 reports it */
    } else if (c.op == OP_DESTROY) {
      arkcos_plan_destroy(p[k2]);
      p[k2] = NULL;
    } else if (c.op == OP_FILE) {
      char *in = hmpi_bcast_string("", 0), *out = hmpi_bcast_string("", 0), *m = hmpi_bcast_string("", 0);
      const hmpi_mask mk = {m && m[0] ? m : NULL, c.zero, c.min_weight, c.share, c.write_weight};
      band_pol bp = {.on = {c.polar[0], c.polar[1]}, .nd = {c.pnd[0], c.pnd[1]}, .no = {c.pno[0], c.pno[1]}};
      const int rc = in && out && m ? band_file(p[0], p[1], p[2], single, c.pol_q, c.pol_u, in, out, c.force,
                                                c.normalize, &mk, &bp, NULL, &err)
                                    : ARKCOS_ENOMEM;
      if (rc && rc != HMPI_WHOLE_MAP) status = 1; /* rank 0 reports it */
      free(in);
      free(out);
      free(m);
    }
  }
  for (int k = 0; k < 3; k++) arkcos_plan_destroy(p[k]);
  return status;
}

#else /* one process */

void hmpi_init(int *argc, char ***argv) { (void)argc, (void)argv; }
void hmpi_finalize(void) {}
int hmpi_active(void) { return 0; }
int hmpi_built(void) { return 0; }
int hmpi_rank(void) { return 0; }
int hmpi_size(void) { return 1; }
int hmpi_max(int v) { return v; }
double hmpi_max_double(double v) { return v; }
void hmpi_barrier(void) {}
int hmpi_share_wisdom(arkcos_error *err) {
  (void)err;
  return ARKCOS_OK;
}
void hmpi_bcast_bytes(void *buf, size_t len, int root) { (void)buf, (void)len, (void)root; }
char *hmpi_bcast_string(const char *s, int root) {
  (void)root;
  return strdup(s);
}
char **hmpi_gather_strings(const char *s) {
  char **out = calloc(1, sizeof *out);
  if (out) out[0] = strdup(s);
  return out;
}
static arkcos_plan *no_mpi(arkcos_error *err) {
  arkcos_fail(err, ARKCOS_EINVAL, "splitting a map over MPI ranks needs a build with MPI (make MPI=1)");
  return NULL;
}
arkcos_plan *hmpi_split_plan(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                             arkcos_error *err) {
  (void)g, (void)k, (void)o;
  return no_mpi(err);
}
int hmpi_split_execute(arkcos_plan *p, const double *in, double *out, arkcos_error *err) {
  (void)p, (void)in, (void)out;
  no_mpi(err);
  return ARKCOS_EINVAL;
}
int hmpi_split_execute2(arkcos_plan *p, const double *q, const double *u, double *q_out, double *u_out,
                        arkcos_error *err) {
  (void)p, (void)q, (void)u, (void)q_out, (void)u_out;
  no_mpi(err);
  return ARKCOS_EINVAL;
}
void hmpi_split_destroy(arkcos_plan *p) { arkcos_plan_destroy(p); }
int hmpi_split_norm_plan(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                         arkcos_error *err) {
  (void)g, (void)k, (void)o;
  no_mpi(err);
  return ARKCOS_EINVAL;
}
int hmpi_split_file(const char *in, const char *out, int pol_q, int pol_u, int force, int normalize,
                    const hmpi_mask *mask, const hmpi_polar *polar, hmpi_file_stats *st, arkcos_error *err) {
  (void)in, (void)out, (void)pol_q, (void)pol_u, (void)force, (void)normalize, (void)mask, (void)polar, (void)st,
      (void)err;
  return HMPI_WHOLE_MAP;
}
void hmpi_split_stop(void) {}
int hmpi_split_serve(hmpi_kernel_fn kernel_for, void *ctx) {
  (void)kernel_for;
  (void)ctx;
  return 0;
}

#endif

void hmpi_host(char *buf, size_t len) {
  if (gethostname(buf, len) != 0 && len) buf[0] = 0;
  if (len) buf[len - 1] = 0;
}

/* ---- stderr held on ranks > 0 during the common checks */
static FILE *held;
static int saved_fd = -1;

void hmpi_hold_stderr(void) {
  if (hmpi_rank() == 0 || held) return;
  fflush(stderr);
  held = tmpfile();
  if (!held) return;
  saved_fd = dup(2);
  if (saved_fd < 0 || dup2(fileno(held), 2) < 0) {
    fclose(held);
    held = NULL;
  }
}

static void release_stderr(int show) {
  if (!held) return;
  fflush(stderr);
  dup2(saved_fd, 2);
  close(saved_fd);
  saved_fd = -1;
  if (show) {
    char buf[4096];
    size_t n;
    rewind(held);
    while ((n = fread(buf, 1, sizeof buf, held)) > 0) fwrite(buf, 1, n, stderr);
    fflush(stderr);
  }
  fclose(held);
  held = NULL;
}

int hmpi_checks_done(int status) {
  int first = status;
#ifdef ARKCOS_WITH_MPI
  if (mpi_on) MPI_Bcast(&first, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
  release_stderr(status != 0 && first == 0);
  return hmpi_max(status);
}
