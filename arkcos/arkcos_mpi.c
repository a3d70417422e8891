/*
 * arkcos_mpi.c -- one map over MPI ranks (arkcos_mpi.h; built with
 * `make MPI=1` only). Each rank holds a band plan (arkcos_plan_create_part):
 * the whole plan's geometry and decisions, its own tasks' tables, spectra
 * and output rings. Rank 0 scatters each band's input rings (band + halo)
 * and gathers its output rings; both as contiguous pixel segments.
 */
#include <fftw3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos_mpi.h"
#include "arkcos/plan_internal.h"

/* A contiguous run of pixels [a, b) of the map */
typedef arkcos_mpi_segment seg_t;

typedef struct {
  int n;
  seg_t *s;
} segs_t;

typedef struct {
  MPI_Comm comm;
  int rank, size;
  segs_t *in, *out;     /* per rank: input (band + halo) and output segments */
  double *inbuf[2], *outbuf[2]; /* ranks > 0: full-size maps, only band and halo touched
                                 * (made by the first arkcos_execute_mpi; [1]: U of spin 2) */
  int64_t *ofs_whole;   /* per ring: its offset in the whole map */
  int64_t *ofs_local;   /* per ring: its offset in the band-local maps (input rings) */
  int64_t pix_in, pix_out, halo;
  double bound;
} mpi_state;

/* MPI counts are int: long segments go in pieces */
enum { PIECE = 1 << 27 };

static void segs_free(segs_t *s, int n) {
  if (!s) return;
  for (int r = 0; r < n; r++) free(s[r].s);
  free(s);
}

static void mpi_destroy(arkcos_plan *p) {
  mpi_state *m = (mpi_state *)p->mpi;
  if (!m) return;
  segs_free(m->in, m->size);
  segs_free(m->out, m->size);
  for (int c = 0; c < 2; c++) {
    free(m->inbuf[c]);
    free(m->outbuf[c]);
  }
  free(m->ofs_whole);
  free(m->ofs_local);
  MPI_Comm_free(&m->comm);
  free(m);
  p->mpi = NULL;
}

/* The rings marked in use[] as pixel segments (adjacent rings merged when
 * their pixels are adjacent in the map). */
static int rings_to_segs(const arkcos_geometry *g, const unsigned char *use, segs_t *out) {
  out->n = 0;
  out->s = malloc(sizeof(seg_t) * (size_t)(g->nrings > 0 ? g->nrings : 1));
  if (!out->s) return ARKCOS_ENOMEM;
  for (int j = 0; j < g->nrings; j++) {
    if (!use[j]) continue;
    const int64_t a = g->rings[j].ofs, b = a + g->rings[j].nph;
    if (out->n && out->s[out->n - 1].b == a) out->s[out->n - 1].b = b;
    else out->s[out->n++] = (seg_t){a, b};
  }
  return ARKCOS_OK;
}

static int64_t segs_pixels(const segs_t *s) {
  int64_t n = 0;
  for (int k = 0; k < s->n; k++) n += s->s[k].b - s->s[k].a;
  return n;
}

/* Every rank's segments (each rank derives all of them from the same
 * plan, no messages), and this rank's counts. */
static int make_segments(arkcos_plan *p, mpi_state *m) {
  const arkcos_geometry *g = p->geom;
  int *first = malloc(sizeof(int) * (size_t)(m->size + 1));
  unsigned char *use = malloc((size_t)g->nrings + 1);
  m->in = calloc((size_t)m->size, sizeof(segs_t));
  m->out = calloc((size_t)m->size, sizeof(segs_t));
  int rc = first && use && m->in && m->out ? ARKCOS_OK : ARKCOS_ENOMEM;
  if (!rc) arkcos_plan_split(p, m->size, first);
  for (int r = 0; r < m->size && !rc; r++) {
    const int band = arkcos_band_of_rank(r, m->size);
    memset(use, 0, (size_t)g->nrings);
    for (int t = first[band]; t < first[band + 1]; t++) {
      const int i = p->task[t];
      use[i] = 1;
      if (p->mirror[i] >= 0) use[p->mirror[i]] = 1;
    }
    rc = rings_to_segs(g, use, &m->out[r]);
    if (!rc) {
      arkcos_plan_rings_needed(p, first[band], first[band + 1], use);
      rc = rings_to_segs(g, use, &m->in[r]);
    }
  }
  if (!rc) {
    m->pix_in = segs_pixels(&m->in[m->rank]);
    m->pix_out = segs_pixels(&m->out[m->rank]);
    m->halo = m->pix_in - m->pix_out; /* the band's own rings are among its inputs */
  }
  free(first);
  free(use);
  return rc;
}

/* The rings' offsets in the whole map and in the band-local maps: this
 * rank's input segments back to back, in order (the engine reads and
 * writes a ring at its offset, so that a plan runs on either layout). */
static int make_layouts(arkcos_plan *p, mpi_state *m) {
  const arkcos_geometry *g = p->geom;
  m->ofs_whole = malloc(sizeof(int64_t) * (size_t)(g->nrings + 1));
  m->ofs_local = calloc((size_t)g->nrings + 1, sizeof(int64_t));
  if (!m->ofs_whole || !m->ofs_local) return ARKCOS_ENOMEM;
  const segs_t *in = &m->in[m->rank];
  int64_t base = 0;
  int k = 0;
  for (int j = 0; j < g->nrings; j++) {
    const int64_t o = g->rings[j].ofs;
    m->ofs_whole[j] = o;
    while (k < in->n && in->s[k].b <= o) base += in->s[k].b - in->s[k].a, k++;
    if (k < in->n && in->s[k].a <= o) m->ofs_local[j] = base + (o - in->s[k].a);
  }
  return ARKCOS_OK;
}

static void set_layout(arkcos_plan *p, const mpi_state *m, int local) {
  const int64_t *o = local ? m->ofs_local : m->ofs_whole;
  for (int j = 0; j < p->geom->nrings; j++) p->geom->rings[j].ofs = o[j];
}

/* Every rank learns whether some rank failed; then the first failing
 * rank's error is every rank's. Returns the common code. */
static int agree(MPI_Comm comm, int rc, arkcos_error *err) {
  int rank, size, bad;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine = rc ? rank : size;
  MPI_Allreduce(&mine, &bad, 1, MPI_INT, MPI_MIN, comm);
  if (bad == size) return ARKCOS_OK;
  arkcos_error e = {rc, ""};
  if (rank == bad && err) e = *err;
  MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, bad, comm);
  if (e.code == 0) e.code = ARKCOS_ERUNTIME;
  if (err) *err = e;
  return e.code;
}

int arkcos_mpi_share_wisdom(MPI_Comm comm, int root, arkcos_error *err) {
  int rank, ok = 1;
  MPI_Comm_rank(comm, &rank);
  for (int single = 0; single < 2; single++) {
    char *w = rank == root ? arkcos_fftw_wisdom_export(single) : NULL;
    long len = w ? (long)strlen(w) + 1 : 0;
    MPI_Bcast(&len, 1, MPI_LONG, root, comm);
    char *buf = rank == root ? w : len > 0 ? malloc((size_t)len) : NULL;
    const int rc = (len > 0 && !buf) || len >= INT32_MAX
                       ? arkcos_fail(err, ARKCOS_ENOMEM, "MPI: no memory for rank %d's FFTW wisdom", root)
                       : ARKCOS_OK;
    const int common = agree(comm, rc, err);
    if (!common && len > 0) {
      MPI_Bcast(buf, (int)len, MPI_CHAR, root, comm);
      if (rank != root) ok &= arkcos_fftw_wisdom_import(buf, single);
    }
    if (rank != root) free(buf);
    else if (single) fftwf_free(w);
    else fftw_free(w);
    if (common) return common;
  }
  const int rc = ok ? ARKCOS_OK : arkcos_fail(err, ARKCOS_ERUNTIME, "MPI: rank %d's FFTW wisdom could not be imported", root);
  return agree(comm, rc, err);
}

/* A rank's map buffers for arkcos_execute_mpi: full-size reservations
 * (calloc: pages untouched until written, so only band and halo become
 * resident), made on its first call */
static int alloc_maps(arkcos_plan *p, mpi_state *m, int nmaps) {
  for (int c = 0; c < nmaps && m->rank > 0; c++) {
    if (!m->inbuf[c]) m->inbuf[c] = calloc((size_t)p->geom->npix, sizeof(double));
    if (!m->outbuf[c]) m->outbuf[c] = calloc((size_t)p->geom->npix, sizeof(double));
    if (!m->inbuf[c] || !m->outbuf[c]) return ARKCOS_ENOMEM;
  }
  return ARKCOS_OK;
}

/* Up front, before any rank allocates: every rank's estimate (its band's
 * plan and maps, arkcos_plan_estimate_rank), summed over the ranks that
 * share a node, against the memory available there. With max_memory set,
 * each rank's own limit is checked by its plan instead. */
static int node_memory_check(MPI_Comm comm, const arkcos_geometry *g, const arkcos_kernel *k,
                             const arkcos_options *o, arkcos_error *err) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  arkcos_estimate e;
  int rc = arkcos_plan_estimate_rank(g, k, o, rank, size, &e, err);
  if (agree(comm, rc, err)) return err->code;
  if (size == 1 || (o && o->max_memory > 0)) return ARKCOS_OK;
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int nrank, nsize;
  MPI_Comm_rank(node, &nrank);
  MPI_Comm_size(node, &nsize);
  struct { double v; int r; } mine = {e.total + e.maps, rank}, big;
  double sum = 0, have = nrank == 0 ? arkcos_memory_available() : 0;
  MPI_Allreduce(&mine.v, &sum, 1, MPI_DOUBLE, MPI_SUM, node);
  MPI_Allreduce(&mine, &big, 1, MPI_DOUBLE_INT, MPI_MAXLOC, node);
  MPI_Bcast(&have, 1, MPI_DOUBLE, 0, node);
  MPI_Comm_free(&node);
  rc = ARKCOS_OK;
  if (sum > have) {
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    MPI_Get_processor_name(host, &len);
    rc = arkcos_fail(err, ARKCOS_ENOMEM,
                     "plan: the %d rank(s) on host %s would need about %.3g GB together at nside %lld "
                     "(rank %d the most, %.3g GB: its band's tables, spectra and maps) but %.3g GB are "
                     "available there now; fewer ranks per node (more nodes), a smaller nside or kernel, "
                     "or max_memory (--max-memory) to set each rank's limit",
                     nsize, host, sum / 1e9, (long long)g->nside, big.r, big.v / 1e9, have / 1e9);
  }
  return agree(comm, rc, err);
}

/* The harmonic path's a_lm (harmonic.c): each band's analysis of its own
 * rings summed onto rank 0, then sent back, so that every rank
 * synthesises from the same values. Collective. */
static int mpi_alm_sum(arkcos_plan *p, double *a, int64_t n, arkcos_error *err) {
  (void)err;
  mpi_state *m = (mpi_state *)p->mpi;
  for (int64_t o = 0; o < n; o += PIECE) {
    const int c = (int)(n - o < PIECE ? n - o : PIECE);
    MPI_Reduce(m->rank == 0 ? MPI_IN_PLACE : a + o, m->rank == 0 ? a + o : NULL, c, MPI_DOUBLE, MPI_SUM, 0,
               m->comm);
    MPI_Bcast(a + o, c, MPI_DOUBLE, 0, m->comm);
  }
  return ARKCOS_OK;
}

/* arkcos_plan_create_mpi, with the bands cut at cut[] (NULL: by the plan's
 * own cost model) */
static arkcos_plan *create_mpi(MPI_Comm comm, const arkcos_geometry *g, const arkcos_kernel *k,
                               const arkcos_options *o, const int *cut, arkcos_error *err) {
  arkcos_error local = {0, ""};
  if (!err) err = &local;
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (node_memory_check(comm, g, k, o, err)) return NULL;
  /* rank 0 plans first (its FFTW plans measured, or taken from the wisdom
   * file); then every other rank plans with rank 0's wisdom */
  arkcos_plan *p = NULL;
  if (rank == 0) p = arkcos_plan_create_part_cut(g, k, o, 0, size, cut, err); /* the band at the equator */
  if (agree(comm, p ? ARKCOS_OK : err->code, err)) {
    arkcos_plan_destroy(p);
    return NULL;
  }
  if (arkcos_mpi_share_wisdom(comm, 0, err)) {
    arkcos_plan_destroy(p);
    return NULL;
  }
  if (rank != 0) p = arkcos_plan_create_part_cut(g, k, o, rank, size, cut, err);
  mpi_state *m = p ? calloc(1, sizeof *m) : NULL;
  int rc = p ? (m ? ARKCOS_OK : arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory")) : err->code;
  if (m) {
    p->mpi = m;
    p->mpi_destroy = mpi_destroy;
    MPI_Comm_dup(comm, &m->comm);
    m->rank = rank;
    m->size = size;
    if (p->harmonic) p->alm_sum = mpi_alm_sum;
    if ((rc = make_segments(p, m)) || (rc = make_layouts(p, m)))
      arkcos_fail(err, rc, "plan: out of memory (MPI segments)");
  }
  if (agree(comm, rc, err)) {
    arkcos_plan_destroy(p);
    return NULL;
  }
  MPI_Allreduce(&p->bound, &m->bound, 1, MPI_DOUBLE, MPI_MAX, m->comm);
  p->bound = m->bound; /* arkcos_plan_bound: the whole map's */
  /* the band's resident maps (over one rank, the caller's whole maps: none) */
  if (size > 1) p->bytes += (size_t)(m->pix_in + m->pix_out) * sizeof(double);
  return p;
}

arkcos_plan *arkcos_plan_create_mpi(MPI_Comm comm, const arkcos_geometry *g, const arkcos_kernel *k,
                                    const arkcos_options *o, arkcos_error *err) {
  return create_mpi(comm, g, k, o, NULL, err);
}

arkcos_plan *arkcos_plan_create_mpi_as(MPI_Comm comm, const arkcos_geometry *g, const arkcos_kernel *k,
                                       const arkcos_options *o, const arkcos_plan *like, arkcos_error *err) {
  int size, rc = ARKCOS_OK;
  MPI_Comm_size(comm, &size);
  int *cut = malloc(sizeof *cut * (size_t)(size + 1));
  if (!cut) rc = arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  else if (!like || !like->mpi || ((const mpi_state *)like->mpi)->size != size || !g ||
           like->geom->nrings != g->nrings || like->geom->npix != g->npix)
    rc = arkcos_fail(err, ARKCOS_EINVAL, "plan: the plan whose bands to take is not an MPI plan of this "
                                         "geometry over these ranks");
  else arkcos_plan_split(like, size, cut);
  arkcos_plan *p = NULL;
  if (!agree(comm, rc, err)) p = create_mpi(comm, g, k, o, cut, err);
  free(cut);
  return p;
}

/* Sends (or receives) the segments of map x, in pieces of at most PIECE values */
static void segs_xfer(const segs_t *s, double *x, int peer, int tag, MPI_Comm comm, int send) {
  for (int k = 0; k < s->n; k++)
    for (int64_t a = s->s[k].a; a < s->s[k].b; a += PIECE) {
      const int n = (int)(s->s[k].b - a < PIECE ? s->s[k].b - a : PIECE);
      if (send) MPI_Send(x + a, n, MPI_DOUBLE, peer, tag, comm);
      else MPI_Recv(x + a, n, MPI_DOUBLE, peer, tag, comm, MPI_STATUS_IGNORE);
    }
}

/* The plan's own execute on the maps: one (scalar) or two (Q and U). */
static int run_plan(arkcos_plan *p, int nmaps, const double *const *in, double *const *out, arkcos_error *err) {
  return nmaps == 2 ? p->execute2(p, in[0], in[1], out[0], out[1], err) : p->execute(p, in[0], out[0], err);
}

/* A spin-2 plan takes Q and U (arkcos_execute2_mpi...), a scalar plan one
 * map: EINVAL when the call does not match the plan. */
static int check_kind(const arkcos_plan *p, int nmaps, int local, arkcos_error *err) {
  static const char *const names[2][2] = {{"arkcos_execute_mpi", "arkcos_execute2_mpi"},
                                          {"arkcos_execute_mpi_local", "arkcos_execute2_mpi_local"}};
  if (!p || !p->mpi) return arkcos_fail(err, ARKCOS_EINVAL, "execute: not a plan of arkcos_plan_create_mpi");
  const int spin2 = p->opt.spin == 2;
  if (spin2 != (nmaps == 2))
    return arkcos_fail(err, ARKCOS_EINVAL, "execute: %s on a %s plan; use %s", names[local][nmaps == 2],
                       spin2 ? "spin-2" : "scalar", names[local][spin2]);
  return ARKCOS_OK;
}

/* Collective: rank 0 sends each rank its band's inputs (every map), each
 * rank runs its band, rank 0 gathers every band's outputs. */
static int execute_maps(arkcos_plan *p, int nmaps, const double *const *in, double *const *out, arkcos_error *err) {
  int rc = check_kind(p, nmaps, 0, err);
  if (rc) return rc;
  mpi_state *m = (mpi_state *)p->mpi;
  for (int c = 0; c < nmaps && !rc && m->rank == 0; c++) {
    if (!in[c] || !out[c]) rc = arkcos_fail(err, ARKCOS_EINVAL, "execute: rank 0 needs the maps in and out");
    for (int d = 0; d < nmaps && !rc; d++)
      if (out[c] == in[d] || (d != c && out[c] == out[d]))
        rc = arkcos_fail(err, ARKCOS_EINVAL, "execute: in and out must differ");
  }
  /* the values one process's execute takes (arkcos_execute's check) */
  for (int c = 0; c < nmaps && !rc && m->rank == 0; c++)
    rc = arkcos_plan_check_input(p, in[c], nmaps == 2 ? (c ? "U" : "Q") : "input", err);
  if (!rc && alloc_maps(p, m, nmaps))
    rc = arkcos_fail(err, ARKCOS_ENOMEM, "execute: rank %d: out of memory for its band's maps", m->rank);
  if ((rc = agree(m->comm, rc, err))) return rc;
  set_layout(p, m, 0);
  const double t0 = MPI_Wtime();
  const double *x[2] = {in[0], nmaps == 2 ? in[1] : NULL};
  double *y[2] = {out[0], nmaps == 2 ? out[1] : NULL};
  for (int c = 0; c < nmaps; c++) {
    if (m->rank == 0) {
      for (int r = 1; r < m->size; r++) segs_xfer(&m->in[r], (double *)(uintptr_t)in[c], r, 1, m->comm, 1);
    } else {
      segs_xfer(&m->in[m->rank], m->inbuf[c], 0, 1, m->comm, 0);
      x[c] = m->inbuf[c];
      y[c] = m->outbuf[c];
    }
  }
  const double t1 = MPI_Wtime();
  rc = run_plan(p, nmaps, x, y, err);
  const double t2 = MPI_Wtime();
  for (int c = 0; c < nmaps; c++) {
    if (m->rank == 0) {
      for (int r = 1; r < m->size; r++) segs_xfer(&m->out[r], out[c], r, 2, m->comm, 0);
    } else {
      segs_xfer(&m->out[m->rank], y[c], 0, 2, m->comm, 1);
    }
  }
  p->last.other += (t1 - t0) + (MPI_Wtime() - t2);
  p->last.total += (t1 - t0) + (MPI_Wtime() - t2);
  return agree(m->comm, rc, err);
}

int arkcos_execute_mpi(arkcos_plan *p, const double *in, double *out, arkcos_error *err) {
  const double *x[1] = {in};
  double *y[1] = {out};
  return execute_maps(p, 1, x, y, err);
}

int arkcos_execute2_mpi(arkcos_plan *p, const double *q, const double *u, double *q_out, double *u_out,
                        arkcos_error *err) {
  const double *x[2] = {q, u};
  double *y[2] = {q_out, u_out};
  return execute_maps(p, 2, x, y, err);
}

int arkcos_plan_mpi_segments(const arkcos_plan *p, int output, const arkcos_mpi_segment **seg, int *n,
                             arkcos_error *err) {
  if (!p || !p->mpi || !seg || !n) return arkcos_fail(err, ARKCOS_EINVAL, "not a plan of arkcos_plan_create_mpi");
  const mpi_state *m = (const mpi_state *)p->mpi;
  const segs_t *s = output ? &m->out[m->rank] : &m->in[m->rank];
  *seg = s->s;
  *n = s->n;
  return ARKCOS_OK;
}

/* Not collective: the band-local maps, the plan's ring offsets moved to
 * their local positions while it runs. */
static int execute_local(arkcos_plan *p, int nmaps, const double *const *in, double *const *out, arkcos_error *err) {
  int rc = check_kind(p, nmaps, 1, err);
  if (rc) return rc;
  for (int c = 0; c < nmaps; c++)
    for (int d = 0; d < nmaps; d++)
      if (!in[c] || !out[c] || out[c] == in[d] || (d != c && out[c] == out[d]))
        return arkcos_fail(err, ARKCOS_EINVAL, "execute: %d distinct band-local maps needed", 2 * nmaps);
  mpi_state *m = (mpi_state *)p->mpi;
  set_layout(p, m, 1);
  rc = run_plan(p, nmaps, in, out, err);
  set_layout(p, m, 0);
  return rc;
}

int arkcos_execute_mpi_local(arkcos_plan *p, const double *in, double *out, arkcos_error *err) {
  const double *x[1] = {in};
  double *y[1] = {out};
  return execute_local(p, 1, x, y, err);
}

int arkcos_execute_mpi_local_general(arkcos_plan *p, const double *in, double *out, arkcos_error *err) {
  if (!p) return arkcos_execute_mpi_local(p, in, out, err);
  p->no_constant = 1;
  const int rc = arkcos_execute_mpi_local(p, in, out, err);
  p->no_constant = 0;
  return rc;
}

int arkcos_execute2_mpi_local(arkcos_plan *p, const double *q, const double *u, double *q_out, double *u_out,
                              arkcos_error *err) {
  const double *x[2] = {q, u};
  double *y[2] = {q_out, u_out};
  return execute_local(p, 2, x, y, err);
}

int arkcos_plan_mpi_band(const arkcos_plan *p, arkcos_mpi_band *b, arkcos_error *err) {
  if (!p || !p->mpi || !b) return arkcos_fail(err, ARKCOS_EINVAL, "not a plan of arkcos_plan_create_mpi");
  const mpi_state *m = (const mpi_state *)p->mpi;
  memset(b, 0, sizeof *b);
  b->rank = m->rank;
  b->nranks = m->size;
  for (int t = p->task_lo; t < p->task_hi; t++) {
    const int i = p->task[t];
    b->nrings_out += 1 + (p->mirror[i] >= 0 && p->mirror[i] != i);
  }
  b->pixels_out = m->pix_out;
  b->pixels_in = m->pix_in;
  b->halo_pixels = m->halo;
  b->bound = m->bound;
  b->collective = p->alm_sum != NULL;
  return ARKCOS_OK;
}
