/*
 * hmpi.c -- the command's view of MPI (hmpi.h). Compiled twice: into the
 * harness library without ARKCOS_WITH_MPI (one process), and by `make
 * MPI=1` / `make mpi` with it (MPI_COMM_WORLD, the engine's arkcos_mpi.h).
 * Both versions define the same functions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/hmpi.h"

#ifdef ARKCOS_WITH_MPI
#include <mpi.h>

#include "arkcos/arkcos_mpi.h"

static int world_rank(void) {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int hmpi_built(void) { return 1; }
int hmpi_rank(void) { return world_rank(); }
int hmpi_size(void) {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
int hmpi_max(int v) {
  int m = v;
  MPI_Allreduce(&v, &m, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return m;
}
double hmpi_max_double(double v) {
  double m = v;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}
void hmpi_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }
int hmpi_share_wisdom(arkcos_error *err) { return arkcos_mpi_share_wisdom(MPI_COMM_WORLD, 0, err); }

void hmpi_bcast_bytes(void *buf, size_t len, int root) {
  char *b = buf;
  while (len > 0) { /* MPI counts are int */
    const int n = len > (1u << 30) ? 1 << 30 : (int)len;
    MPI_Bcast(b, n, MPI_BYTE, root, MPI_COMM_WORLD);
    b += n;
    len -= (size_t)n;
  }
}

char *hmpi_bcast_string(const char *s, int root) {
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
enum { OP_PLAN = 1, OP_EXEC = 2, OP_DESTROY = 3, OP_STOP = 4 };
typedef struct {
  int op;
  int64_t nside;
  arkcos_options o;
} split_cmd;

static void send_cmd(split_cmd *c) { MPI_Bcast(c, (int)sizeof *c, MPI_BYTE, 0, MPI_COMM_WORLD); }

arkcos_plan *hmpi_split_plan(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                             arkcos_error *err) {
  split_cmd c = {.op = OP_PLAN, .nside = g->nside, .o = *o};
  send_cmd(&c);
  return arkcos_plan_create_mpi(MPI_COMM_WORLD, g, k, o, err);
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
  arkcos_plan_destroy(p);
}

void hmpi_split_stop(void) {
  split_cmd c = {.op = OP_STOP};
  if (hmpi_size() > 1) send_cmd(&c);
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
      const arkcos_kernel *k = kernel_for(ctx, c.nside); /* NULL fails in the collective create too */
      p = arkcos_plan_create_mpi(MPI_COMM_WORLD, g, k, &c.o, &err); /* collective: g NULL fails in it */
    } else if (c.op == OP_EXEC) {
      if (arkcos_execute_mpi(p, NULL, NULL, &err)) status = 1; /* rank 0 reports it */
    } else if (c.op == OP_DESTROY) {
      arkcos_plan_destroy(p);
      p = NULL;
    }
  }
  arkcos_plan_destroy(p);
  arkcos_geometry_destroy(g);
  return status;
}

#else /* one process */

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
  MPI_Bcast(&first, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
  release_stderr(status != 0 && first == 0);
  return hmpi_max(status);
}
