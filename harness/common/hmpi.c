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
} split_cmd;

static arkcos_plan *split_plan; /* rank 0's current split plan (hmpi_split_file) */

static void send_cmd(split_cmd *c) { MPI_Bcast(c, (int)sizeof *c, MPI_BYTE, 0, MPI_COMM_WORLD); }

arkcos_plan *hmpi_split_plan(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                             arkcos_error *err) {
  split_cmd c = {.op = OP_PLAN, .nside = g->nside, .o = *o};
  /* the smoother's ring quadrature weights the rings (arkcos_smoother_spec):
   * the other ranks weight theirs alike */
  c.weighted = g->nrings > 0 && fabs(g->rings[0].weight * (double)g->npix / (4 * M_PI) - 1) > 1e-6;
  send_cmd(&c);
  split_plan = arkcos_plan_create_mpi(MPI_COMM_WORLD, g, k, o, err);
  return split_plan;
}

int hmpi_split_execute(arkcos_plan *p, const double *in, double *out, arkcos_error *err) {
  split_cmd c = {.op = OP_EXEC};
  send_cmd(&c);
  return arkcos_execute_mpi(p, in, out, err);
}

void hmpi_split_destroy(arkcos_plan *p) {
  if (!p) return;
  split_cmd c = {.op = OP_DESTROY};
  send_cmd(&c);
  if (p == split_plan) split_plan = NULL;
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

/* One file, every rank its own band (hmpi_split_file): the band and halo
 * of each column read from in, smoothed with band-local maps, the band's
 * pixels written in place into the output's temporary file, which rank 0
 * created (the header) and renames once every rank succeeded. */
static int band_file(arkcos_plan *p, const char *in, const char *out, int force, int normalize,
                     hmpi_file_stats *st, arkcos_error *err) {
  const int r = world_rank();
  hpx_header h = {0};
  const arkcos_mpi_segment *si = NULL, *so = NULL;
  int ni = 0, no = 0, ncols = 0;
  double **maps = NULL, *y = NULL;
  int64_t *lofs = NULL, len = 0, nbad = 0;
  double t0 = MPI_Wtime();
  int rc = !p ? arkcos_fail(err, ARKCOS_EINVAL, "%s: rank %d holds no plan", in, r)
           : hpx_read_header(in, &h, err);
  if (!rc) rc = arkcos_plan_mpi_segments(p, 0, &si, &ni, err);
  if (!rc) rc = arkcos_plan_mpi_segments(p, 1, &so, &no, err);
  if (!rc) {
    for (int k = 0; k < ni; k++) len += si[k].b - si[k].a;
    ncols = h.ncols;
    maps = calloc((size_t)ncols, sizeof *maps);
    y = malloc(sizeof *y * (size_t)(len + 1));
    lofs = malloc(sizeof *lofs * (size_t)(no + 1));
    if (!maps || !y || !lofs) rc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory for its band", in, r);
  }
  /* an output run's local position: inside one input run */
  for (int q = 0; !rc && q < no; q++) {
    int64_t base = 0;
    int k = 0;
    while (k < ni && si[k].b <= so[q].a) base += si[k].b - si[k].a, k++;
    lofs[q] = base + (so[q].a - si[k].a);
  }
  /* every column's band and halo; a missing or out-of-range pixel anywhere
   * sends the file to the whole-map path (its weights span the sphere) */
  for (int c = 0; !rc && c < ncols; c++) {
    int64_t nb = 0;
    if (!(maps[c] = malloc(sizeof **maps * (size_t)(len + 1))))
      rc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory for its band", in, r);
    else rc = hpx_read_column_runs(&h, c, (const int64_t *)si, ni, maps[c], &nb, err);
    for (int64_t i = 0; !rc && i < len; i++) nb += !(fabs(maps[c][i]) < 3.4028234663852886e38);
    nbad += nb;
  }
  rc = agree_all(rc, err);
  int64_t anybad = 0;
  MPI_Allreduce(&nbad, &anybad, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  const double t1 = MPI_Wtime();
  char tmp[4096] = "";
  hpx_band_layout L;
  memset(&L, 0, sizeof L);
  if (!rc && anybad) rc = HMPI_WHOLE_MAP;
  if (!rc) {
    int crc = 0;
    if (r == 0) {
      hpx_column *cols = calloc((size_t)ncols, sizeof *cols);
      for (int c = 0; cols && c < ncols; c++) {
        char buf[HPX_NAME_LEN];
        const char *name = h.cols && h.cols[c].name[0] ? h.cols[c].name
                                                       : hpx_standard_column_name(ncols, c, buf, sizeof buf);
        snprintf(cols[c].name, HPX_NAME_LEN, "%s", name);
        if (h.cols) snprintf(cols[c].unit, HPX_NAME_LEN, "%s", h.cols[c].unit);
      }
      crc = !cols ? arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", out)
                  : hpx_band_create(out, ncols, h.nside, h.nested, h.is_float32, force, cols, h.coordsys, tmp,
                                    sizeof tmp, &L, err);
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
  double t_exec = 0, t_write = 0;
  arkcos_stage_times sum;
  memset(&sum, 0, sizeof sum);
  int wrc = 0;
  /* normalize: every output pixel divided by the smoothing of 1 there, the
   * band's share of the single process's A(1) (A(W) under ring quadrature) */
  double *nrm = NULL;
  if (!rc && normalize) {
    double *one = malloc(sizeof *one * (size_t)(len + 1));
    nrm = malloc(sizeof *nrm * (size_t)(len + 1));
    if (!one || !nrm) wrc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: rank %d: out of memory for its band", in, r);
    for (int64_t i = 0; !wrc && i < len; i++) one[i] = 1;
    if (!wrc) wrc = arkcos_execute_mpi_local(p, one, nrm, err);
    free(one);
  }
  for (int c = 0; !rc && !wrc && c < ncols; c++) {
    const double a = MPI_Wtime();
    wrc = arkcos_execute_mpi_local(p, maps[c], y, err);
    const double b = MPI_Wtime();
    if (!wrc) {
      arkcos_stage_times t;
      arkcos_plan_stages(p, &t);
      sum.map_fft += t.map_fft, sum.kernel_eval += t.kernel_eval, sum.kernel_fft += t.kernel_fft;
      sum.reduction += t.reduction, sum.map_ifft += t.map_ifft, sum.other += t.other, sum.total += t.total;
      if (st) st->map_time[c < HMPI_MAX_COLS ? c : HMPI_MAX_COLS - 1] = b - a;
      for (int q = 0; nrm && q < no; q++)
        for (int64_t i = 0; i < so[q].b - so[q].a; i++) y[lofs[q] + i] /= nrm[lofs[q] + i];
      wrc = hpx_band_write_column(tmp, out, &L, c, (const int64_t *)so, lofs, no, y, err);
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
  const double slowest = hmpi_max_double(t_exec); /* the slowest band (collective) */
  if (st) {
    st->t_read = t1 - t0;
    st->t_exec = slowest;
    st->t_write = t_write;
    st->stages = sum;
    st->ncols = ncols;
  }
  for (int c = 0; maps && c < ncols; c++) free(maps[c]);
  free(maps);
  free(nrm);
  free(y);
  free(lofs);
  hpx_header_free(&h);
  return rc;
}

int hmpi_split_file(const char *in, const char *out, int force, int normalize, hmpi_file_stats *st,
                    arkcos_error *err) {
  if (!mpi_on || hmpi_size() < 2) return HMPI_WHOLE_MAP;
  split_cmd c = {.op = OP_FILE, .force = force, .normalize = normalize};
  send_cmd(&c);
  char *a = hmpi_bcast_string(in, 0), *b = hmpi_bcast_string(out, 0);
  const int rc = a && b ? band_file(split_plan, a, b, force, normalize, st, err)
                        : arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  free(a);
  free(b);
  return rc;
}

int hmpi_split_serve(hmpi_kernel_fn kernel_for, void *ctx) {
  arkcos_plan *p = NULL;
  arkcos_geometry *g = NULL;
  int status = 0;
  for (;;) {
    split_cmd c;
    send_cmd(&c);
    arkcos_error err = {0, ""};
    if (c.op == OP_STOP) break;
    if (c.op == OP_PLAN) {
      arkcos_plan_destroy(p); /* a failed plan's retry (no DESTROY came) */
      arkcos_geometry_destroy(g);
      g = arkcos_geometry_healpix(c.nside, &err);
      double *w = g && c.weighted ? malloc(sizeof *w * (size_t)g->nrings) : NULL;
      if (w && !arkcos_healpix_ring_weights(c.nside, w))
        for (int i = 0; i < g->nrings; i++) g->rings[i].weight *= w[i];
      free(w);
      const arkcos_kernel *k = kernel_for(ctx, c.nside); /* NULL fails in the collective create too */
      p = arkcos_plan_create_mpi(MPI_COMM_WORLD, g, k, &c.o, &err); /* collective: g NULL fails in it */
    } else if (c.op == OP_EXEC) {
      if (arkcos_execute_mpi(p, NULL, NULL, &err)) status = 1; /* rank 0 reports it */
    } else if (c.op == OP_DESTROY) {
      arkcos_plan_destroy(p);
      p = NULL;
    } else if (c.op == OP_FILE) {
      char *in = hmpi_bcast_string("", 0), *out = hmpi_bcast_string("", 0);
      const int rc = in && out ? band_file(p, in, out, c.force, c.normalize, NULL, &err) : ARKCOS_ENOMEM;
      if (rc && rc != HMPI_WHOLE_MAP) status = 1; /* rank 0 reports it */
      free(in);
      free(out);
    }
  }
  arkcos_plan_destroy(p);
  arkcos_geometry_destroy(g);
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
void hmpi_split_destroy(arkcos_plan *p) { arkcos_plan_destroy(p); }
int hmpi_split_file(const char *in, const char *out, int force, int normalize, hmpi_file_stats *st,
                    arkcos_error *err) {
  (void)in, (void)out, (void)force, (void)normalize, (void)st, (void)err;
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
