/*
 * sweep_mpi.c -- `mpirun -n N arkcos run CONFIG` (docs/MPI.md): the cases of
 * a sweep shared out over the ranks. Without MPI (or with one rank) every
 * function here leaves the single-process run as it is.
 *
 * Every rank walks the same loop (sweep.c) over the same document: rank 0
 * opens or resumes results.json and sends it to the others, so all ranks
 * agree on the cases still to run. The k-th case to run goes to rank
 * k mod N. The reference of an (nside, kernel) is computed once: by the
 * rank that runs the first reference case (its output is kept as the
 * reference, as in one process), or by rank 0 when no reference case runs
 * now (untimed, as in one process), and sent to every rank. A rank holds
 * its finished cases; at the end of each (nside, kernel) they are gathered
 * on rank 0, which records them in loop order (results.json and
 * summary.csv, written atomically as always). Only rank 0 touches the
 * output folder; a killed run loses the (nside, kernel) in progress.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/common/hmpi.h"
#include "harness/sweep/sweep.h"
#include "harness/common/util.h"

int sweep_mpi_active(void) { return hmpi_size() > 1; }

int sweep_mpi_check(const run_ctx *c, const char *cfgpath) {
  const run_config *cfg = c->cfg;
  if (!sweep_mpi_active()) return 0;
  if (cfg->outputs.maps || cfg->outputs.spectra || cfg->outputs.npatches > 0) {
    fprintf(stderr,
            "arkcos: %s: outputs: files of cases (maps, patches, spectra) are written by one "
            "process only; run this config without mpirun (or mpirun -n 1), or drop \"outputs\"\n",
            cfgpath);
    return 2;
  }
  if (cfg->interleave) {
    fprintf(stderr,
            "arkcos: %s: interleave: the methods of a group take turns within one process; run "
            "this config without mpirun (or mpirun -n 1), or drop \"interleave\"\n",
            cfgpath);
    return 2;
  }
  return 0;
}

int sweep_mpi_share_doc(run_ctx *c) {
  if (!sweep_mpi_active()) return 0;
  char *text = hmpi_rank() == 0 ? json_dumps(c->doc.root, JSON_COMPACT) : NULL;
  int bad = hmpi_rank() == 0 && !text;
  if (hmpi_max(bad)) {
    free(text);
    fprintf(stderr, "arkcos run: out of memory\n");
    return 1;
  }
  char *copy = hmpi_bcast_string(text, 0);
  free(text);
  if (hmpi_rank() > 0 && copy) {
    json_error_t je;
    c->doc.root = json_loads(copy, 0, &je); /* no folder: never saved */
  }
  bad = !copy || !c->doc.root;
  free(copy);
  if (hmpi_max(bad)) {
    fprintf(stderr, "arkcos run: rank %d: cannot receive rank 0's results document\n", hmpi_rank());
    return 1;
  }
  c->progress = c->progress && hmpi_rank() == 0;
  c->mpi_held = json_array();
  return 0;
}

int sweep_mpi_owner(run_ctx *c) {
  return (int)(c->mpi_seq++ % hmpi_size());
}

void sweep_mpi_note(json_t *cj) {
  if (!hmpi_built()) return;
  char host[256];
  hmpi_host(host, sizeof host);
  json_t *m = json_object();
  json_object_set_new(m, "rank", json_integer(hmpi_rank()));
  json_object_set_new(m, "size", json_integer(hmpi_size()));
  json_object_set_new(m, "host", json_string(host));
  json_object_set_new(cj, "mpi", m);
}

int sweep_mpi_hold(run_ctx *c, json_t *cj) {
  if (!sweep_mpi_active() || !c->mpi_held) return 0;
  json_t *e = json_array();
  json_array_append_new(e, json_integer(c->mpi_seq - 1)); /* its place in the loop */
  json_array_append_new(e, cj);
  json_array_append_new(c->mpi_held, e);
  return 1;
}

/* ---- the reference of an (nside, kernel), from rank `from` to all */
enum { HAS_MAP = 1, HAS_PIX = 2, HAS_VALS = 4, HAS_MAP_U = 8, HAS_VALS_U = 16 };

static double *recv_doubles(double *p, int64_t n, int from) {
  if (hmpi_rank() != from) p = malloc((size_t)n * sizeof *p);
  if (!p) {
    fprintf(stderr, "arkcos run: out of memory for the reference\n");
    exit(1); /* the collective below would hang */
  }
  hmpi_bcast_bytes(p, (size_t)n * sizeof *p, from);
  return p;
}

void sweep_mpi_reference(run_ctx *c, const arkcos_geometry *g, int ki, input_state *in,
                         ref_state *rs, int from) {
  if (!sweep_mpi_active()) return;
  if (from < 0) { /* no reference case now: rank 0 computes it, untimed */
    from = 0;
    if (hmpi_rank() == 0) sweep_ensure_reference(c, g, ki, in, rs);
  }
  struct {
    int tried, available, has;
    int64_t n;
  } h = {0, 0, 0, 0};
  const method_out *o = &rs->out;
  if (hmpi_rank() == from) {
    h.tried = rs->tried;
    h.available = rs->available;
    h.n = o->n;
    h.has = (o->map ? HAS_MAP : 0) | (o->pix ? HAS_PIX : 0) | (o->vals ? HAS_VALS : 0) |
            (o->map_u ? HAS_MAP_U : 0) | (o->vals_u ? HAS_VALS_U : 0);
  }
  hmpi_bcast_bytes(&h, sizeof h, from);
  hmpi_bcast_bytes(rs->why, sizeof rs->why, from);
  if (hmpi_rank() != from) {
    method_out_free(&rs->out);
    rs->tried = h.tried;
    rs->available = h.available;
    rs->out.n = h.n;
  }
  method_out *w = &rs->out;
  if (h.has & HAS_MAP) w->map = recv_doubles(w->map, g->npix, from);
  if (h.has & HAS_MAP_U) w->map_u = recv_doubles(w->map_u, g->npix, from);
  if (h.has & HAS_VALS) w->vals = recv_doubles(w->vals, h.n, from);
  if (h.has & HAS_VALS_U) w->vals_u = recv_doubles(w->vals_u, h.n, from);
  if (h.has & HAS_PIX) {
    if (hmpi_rank() != from) w->pix = malloc((size_t)h.n * sizeof *w->pix);
    if (!w->pix) {
      fprintf(stderr, "arkcos run: out of memory for the reference\n");
      exit(1);
    }
    hmpi_bcast_bytes(w->pix, (size_t)h.n * sizeof *w->pix, from);
  }
}

/* ---- the held cases to rank 0, recorded in loop order */
static int by_seq(const void *a, const void *b) {
  json_int_t x = json_integer_value(json_array_get(*(json_t *const *)a, 0));
  json_int_t y = json_integer_value(json_array_get(*(json_t *const *)b, 0));
  return (x > y) - (x < y);
}

int sweep_mpi_merge(run_ctx *c) {
  if (!sweep_mpi_active() || !c->mpi_held) return 0;
  char *text = json_dumps(c->mpi_held, JSON_COMPACT);
  json_array_clear(c->mpi_held);
  char **all = hmpi_gather_strings(text ? text : "null");
  free(text);
  int status = 0;
  if (hmpi_rank() == 0) {
    json_t *got = json_array();
    for (int r = 0; r < hmpi_size(); r++) {
      json_error_t je;
      json_t *a = all && all[r] ? json_loads(all[r], 0, &je) : NULL;
      if (!json_is_array(a)) {
        fprintf(stderr, "arkcos run: the cases of rank %d were lost (out of memory)\n", r);
        status = 1;
      }
      size_t i;
      json_t *e;
      json_array_foreach(a, i, e) {
        json_array_append(got, e);
        if (r > 0) { /* rank 0 counted its own */
          c->ran_now++;
          if (json_object_get(json_array_get(e, 1), "warning")) c->nwarned++;
        }
      }
      json_decref(a);
    }
    size_t n = json_array_size(got);
    json_t **v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; v && i < n; i++) v[i] = json_array_get(got, i);
    if (v) qsort(v, n, sizeof *v, by_seq);
    for (size_t i = 0; v && i < n && !status; i++) {
      arkcos_error err = {0, ""};
      if (results_doc_put(&c->doc, json_incref(json_array_get(v[i], 1)), &err)) {
        report_error(&err);
        status = 1;
      }
    }
    if (!v) status = 1;
    free(v);
    json_decref(got);
  }
  for (int r = 0; all && r < hmpi_size(); r++) free(all[r]);
  free(all);
  return hmpi_max(status); /* cannot record: every rank stops */
}

void sweep_mpi_free(run_ctx *c) {
  json_decref(c->mpi_held);
  c->mpi_held = NULL;
}
