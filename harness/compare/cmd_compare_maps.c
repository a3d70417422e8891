/*
 * cmd_compare_maps.c -- `arkcos compare-maps A.fits B.fits [--lmax L]`:
 * accuracy of map A against the reference map B, as JSON on stdout.
 *
 * Pixel metrics (issue 3): fractional RMS rms(A - B) / rms(B) and the largest
 * error max |A - B| / rms(B), over the whole map and per region (north cap
 * z > 2/3, belt, south cap z < -2/3; regional errors are still relative to
 * the whole map's rms(B)). With --lmax, the spectra of A, B and A - B (map2alm
 * with --iter Jacobi iterations) and their summary.
 *
 * Files of several columns (I, Q, U) are compared column by column:
 * "columns" has every column's metrics; the top-level keys are the first
 * column's (named by "column"), and stderr says so.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "arkcos/arkcos.h"
#include "harness/commands.h"
#include "harness/common/mapio.h"
#include "harness/common/options.h"
#include "harness/common/util.h"
#include "reference/reference.h"

static void usage(FILE *f) {
  fprintf(f,
"usage: arkcos compare-maps A.fits B.fits [--lmax L] [--iter N] [--threads N]\n"
"\n"
"Compares map A with the reference map B (same nside; RING or NESTED) and\n"
"prints JSON on stdout:\n"
"  frac_rms        rms(A - B) / rms(B)\n"
"  max_rel         max |A - B| / rms(B)\n"
"  frac_rms_north, frac_rms_belt, frac_rms_south, max_rel_north, ...:\n"
"                  the same over the north cap (z > 2/3), the belt and the\n"
"                  south cap (z < -2/3), still relative to the whole rms(B)\n"
"  nside, npix, rms_b, nbad_a, nbad_b (UNSEEN/NaN pixels, counted as 0,\n"
"                  over all columns)\n"
"  column, ncols   the column the keys above describe (the first) and the\n"
"                  number compared\n"
"  columns         every column: name, rms_b, frac_rms, max_rel and the\n"
"                  regional keys. Files of several columns (I, Q, U) are\n"
"                  compared column by column (stderr says so); with different\n"
"                  numbers of columns the first min(n_A, n_B)\n"
"\n"
"  --lmax L        also compare power spectra up to L (1 <= L <= 4 nside):\n"
"                  \"spectra\": max and rms over l in [2, L] of the relative\n"
"                  residual (C_l^A - C_l^B) / C_l^B, the spectrum of the\n"
"                  difference map relative to C_l^B (max, mean), and the\n"
"                  arrays cl_a, cl_b, cl_diff (l = 0..L); of the first\n"
"                  column only (spin 0: Q and U as scalars mean little)\n"
"  --iter N        Jacobi iterations of map2alm, 0 <= N <= 1000 (default 3,\n"
"                  as healpy)\n"
"  --threads N     OpenMP threads, 0 <= N <= 4096; 0 or none: all cores\n"
"\n"
"Exit status: 0 success, 1 runtime failure, 2 bad usage or input\n"
"(unreadable map, nsides differ, lmax out of range).\n");
}

/* JSON has no inf/NaN: those become null. */
static json_t *jnum(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

static json_t *jarray(const double *x, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(a, jnum(x[i]));
  return a;
}

typedef struct compare_args {
  const char *pos[2];
  int npos;
  long lmax, iter, threads;
  int has_lmax;
} compare_args;

/* The options, rows of the option table (options.h): the same ranges as
 * `arkcos smooth` and the configs' "iter". */
static const opt_arg compare_maps_args[] = {{OPT_LMAX, NULL}, {OPT_ITER, NULL}, {OPT_THREADS, NULL}};

/* Parses argv into a; returns 0, -1 after --help (exit 0), or an exit
 * status. */
static int parse_args(int argc, char **argv, compare_args *a) {
  *a = (compare_args){.iter = 3};
  json_t *v = json_object();
  int rc = opt_parse_argv("arkcos compare-maps", argc, argv, compare_maps_args,
                          (int)(sizeof compare_maps_args / sizeof compare_maps_args[0]), v, a->pos, 2,
                          &a->npos);
  if (rc < 0) usage(stdout);
  if (!rc) {
    a->has_lmax = opt_given(v, OPT_LMAX);
    a->lmax = (long)opt_num(v, OPT_LMAX, 0);
    a->iter = (long)opt_num(v, OPT_ITER, 3);
    a->threads = (long)opt_num(v, OPT_THREADS, 0);
  }
  json_decref(v);
  if (rc) return rc;
  if (a->npos != 2) {
    fprintf(stderr, "arkcos compare-maps: two maps expected\n");
    usage(stderr);
    return 2;
  }
  return 0;
}

/* One file to compare: its header (read once) and every column. */
typedef struct input_map {
  hpx_header h;
  double **maps;
  int ncols;
  int64_t nbad;
} input_map;

static int read_input(const char *path, input_map *m, arkcos_error *err) {
  int rc = hpx_read_header(path, &m->h, err);
  if (rc) return rc;
  m->ncols = m->h.ncols;
  return hpx_read_columns(&m->h, &m->maps, &m->ncols, &m->nbad, err);
}

static const char *col_name(const input_map *m, int c, char *buf, size_t len) {
  if (m->h.cols && m->h.cols[c].name[0]) return m->h.cols[c].name;
  return hpx_standard_column_name(m->ncols, c, buf, len);
}

/* Same nside, and an lmax the maps can carry. Returns 0 or exit status 2. */
static int check_pair(const compare_args *a, const input_map *ma,
                      const input_map *mb) {
  const int64_t nside = ma->h.nside;
  if (nside != mb->h.nside) {
    fprintf(stderr,
            "arkcos compare-maps: %s has nside %lld but %s has nside %lld\n",
            a->pos[0], (long long)nside, a->pos[1], (long long)mb->h.nside);
    return 2;
  }
  if (a->has_lmax && (a->lmax < 1 || a->lmax > 4 * nside)) {
    fprintf(stderr,
            "arkcos compare-maps: --lmax %ld outside [1, 4 nside = %lld]\n",
            a->lmax, (long long)(4 * nside));
    return 2;
  }
  return 0;
}

/* The pixel metrics of column c, whole map and per region, into o. */
static void column_metrics(json_t *o, const arkcos_geometry *g, const input_map *ma,
                           const input_map *mb, int c) {
  ref_metrics m;
  ref_compare(g, ma->maps[c], mb->maps[c], &m);
  double sb2 = 0;
  for (int64_t p = 0; p < g->npix; p++) sb2 += mb->maps[c][p] * mb->maps[c][p];
  json_object_set_new(o, "rms_b", jnum(sqrt(sb2 / (double)g->npix)));
  json_object_set_new(o, "frac_rms", jnum(m.frac_rms));
  json_object_set_new(o, "max_rel", jnum(m.max_rel));
  static const char *const region[REF_NREGIONS] = {"north", "belt", "south"};
  for (int r = 0; r < REF_NREGIONS; r++) {
    char key[64];
    snprintf(key, sizeof key, "frac_rms_%s", region[r]);
    json_object_set_new(o, key, jnum(m.frac_rms_region[r]));
    snprintf(key, sizeof key, "max_rel_%s", region[r]);
    json_object_set_new(o, key, jnum(m.max_rel_region[r]));
  }
}

/* The number of columns compared; a note on stderr when it is not 1. */
static int columns_compared(const compare_args *a, const input_map *ma, const input_map *mb) {
  const int n = ma->ncols < mb->ncols ? ma->ncols : mb->ncols;
  char buf[HPX_NAME_LEN];
  if (ma->ncols != mb->ncols)
    fprintf(stderr, "arkcos compare-maps: note: %s has %d column(s), %s has %d: the first %d "
            "compared\n", a->pos[0], ma->ncols, a->pos[1], mb->ncols, n);
  if (n > 1)
    fprintf(stderr, "arkcos compare-maps: note: %d columns compared one by one (\"columns\"); "
            "the top-level metrics are those of the first, %s\n", n,
            col_name(mb, 0, buf, sizeof buf));
  return n;
}

/* The pixel metrics, whole map and per region, of every column. */
static json_t *pixel_json(const compare_args *a, const arkcos_geometry *g,
                          const input_map *ma, const input_map *mb) {
  const int n = columns_compared(a, ma, mb);
  char buf[HPX_NAME_LEN];
  json_t *root = json_object();
  json_object_set_new(root, "a", json_string(a->pos[0]));
  json_object_set_new(root, "b", json_string(a->pos[1]));
  json_object_set_new(root, "nside", json_integer((json_int_t)ma->h.nside));
  json_object_set_new(root, "npix", json_integer((json_int_t)g->npix));
  column_metrics(root, g, ma, mb, 0);
  json_object_set_new(root, "nbad_a", json_integer((json_int_t)ma->nbad));
  json_object_set_new(root, "nbad_b", json_integer((json_int_t)mb->nbad));
  json_object_set_new(root, "column", json_string(col_name(mb, 0, buf, sizeof buf)));
  json_object_set_new(root, "ncols", json_integer(n));
  json_t *cols = json_array();
  for (int c = 0; c < n; c++) {
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(col_name(mb, c, buf, sizeof buf)));
    column_metrics(o, g, ma, mb, c);
    json_array_append_new(cols, o);
  }
  json_object_set_new(root, "columns", cols);
  return root;
}

/* With --lmax: root.spectra. Returns 0 or an exit status. */
static int add_spectra(json_t *root, const compare_args *a,
                       const arkcos_geometry *g, const input_map *ma,
                       const input_map *mb, arkcos_error *err) {
  const int L = (int)a->lmax;
  double *cl = malloc((size_t)(L + 1) * 3 * sizeof *cl);
  if (!cl) {
    fprintf(stderr, "arkcos compare-maps: out of memory\n");
    return 1;
  }
  ref_spectra_metrics sm;
  if (ref_compare_spectra(g, ma->maps[0], mb->maps[0], L, (int)a->iter, (int)a->threads,
                          cl, cl + L + 1, cl + 2 * (L + 1), &sm, err)) {
    free(cl);
    return report_error(err);
  }
  json_t *s = json_object();
  char buf[HPX_NAME_LEN];
  json_object_set_new(s, "column", json_string(col_name(mb, 0, buf, sizeof buf)));
  json_object_set_new(s, "lmax", json_integer(L));
  json_object_set_new(s, "iter", json_integer(a->iter));
  json_object_set_new(s, "nl", json_integer(sm.nl));
  json_object_set_new(s, "max_rel_residual", jnum(sm.max_rel_residual));
  json_object_set_new(s, "rms_rel_residual", jnum(sm.rms_rel_residual));
  json_object_set_new(s, "diff_max_ratio", jnum(sm.max_diff_ratio));
  json_object_set_new(s, "diff_mean_ratio", jnum(sm.mean_diff_ratio));
  json_object_set_new(s, "cl_a", jarray(cl, L + 1));
  json_object_set_new(s, "cl_b", jarray(cl + L + 1, L + 1));
  json_object_set_new(s, "cl_diff", jarray(cl + 2 * (L + 1), L + 1));
  json_object_set_new(root, "spectra", s);
  free(cl);
  return 0;
}

/* The JSON document on stdout. Returns 0 or exit status 1. */
static int print_json(const json_t *root) {
  char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                    JSON_REAL_PRECISION(10));
  if (!text) {
    fprintf(stderr, "arkcos compare-maps: cannot encode JSON\n");
    return 1;
  }
  int status = 0;
  if (fputs(text, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout)) {
    fprintf(stderr, "arkcos compare-maps: cannot write to stdout\n");
    status = 1;
  }
  free(text);
  return status;
}

/* Compares the two maps read; returns the exit status. */
static int compare(const compare_args *a, const input_map *ma,
                   const input_map *mb, arkcos_error *err) {
  int status = check_pair(a, ma, mb);
  if (status) return status;
  arkcos_geometry *g = arkcos_geometry_healpix(ma->h.nside, err);
  if (!g) return report_error(err);
  json_t *root = pixel_json(a, g, ma, mb);
  if (a->has_lmax) status = add_spectra(root, a, g, ma, mb, err);
  if (!status) status = print_json(root);
  json_decref(root);
  arkcos_geometry_destroy(g);
  return status;
}

int cmd_compare_maps(int argc, char **argv) {
  compare_args a;
  int status = parse_args(argc, argv, &a);
  if (status) return status < 0 ? 0 : status;
  arkcos_error err = {0, ""};
  input_map ma = {0}, mb = {0};
  if (read_input(a.pos[0], &ma, &err) || read_input(a.pos[1], &mb, &err))
    status = report_error(&err);
  else
    status = compare(&a, &ma, &mb, &err);
  hpx_free_maps(ma.maps, ma.maps ? ma.ncols : 0);
  hpx_free_maps(mb.maps, mb.maps ? mb.ncols : 0);
  hpx_header_free(&ma.h);
  hpx_header_free(&mb.h);
  return status;
}
