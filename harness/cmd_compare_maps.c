/*
 * cmd_compare_maps.c -- `arkcos compare-maps A.fits B.fits [--lmax L]`:
 * accuracy of map A against the reference map B, as JSON on stdout.
 *
 * Pixel metrics (issue 3): fractional RMS rms(A - B) / rms(B) and the largest
 * error max |A - B| / rms(B), over the whole map and per region (north cap
 * z > 2/3, belt, south cap z < -2/3; regional errors are still relative to
 * the whole map's rms(B)). With --lmax, the spectra of A, B and A - B (map2alm
 * with --iter Jacobi iterations) and their summary.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "arkcos/arkcos.h"
#include "harness/commands.h"
#include "harness/mapio.h"
#include "harness/util.h"
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
"  nside, npix, rms_b, nbad_a, nbad_b (UNSEEN/NaN pixels, counted as 0)\n"
"\n"
"  --lmax L        also compare power spectra up to L (1 <= L <= 4 nside):\n"
"                  \"spectra\": max and rms over l in [2, L] of the relative\n"
"                  residual (C_l^A - C_l^B) / C_l^B, the spectrum of the\n"
"                  difference map relative to C_l^B (max, mean), and the\n"
"                  arrays cl_a, cl_b, cl_diff (l = 0..L)\n"
"  --iter N        Jacobi iterations of map2alm (default 3, as healpy)\n"
"  --threads N     OpenMP threads (default: all)\n"
"\n"
"Exit status: 0 success, 1 runtime failure, 2 bad usage or input\n"
"(unreadable map, nsides differ, lmax out of range).\n");
}

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "arkcos compare-maps: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(arkcos compare-maps --help for usage)\n");
  return 2;
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

/* "--opt VALUE" or "--opt=VALUE": returns the value (advancing *i) or NULL
 * if argv[*i] is not this option. *missing is set if the value is absent. */
static const char *option_value(int argc, char **argv, int *i, const char *opt,
                                int *missing) {
  size_t n = strlen(opt);
  if (strncmp(argv[*i], opt, n)) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n]) return NULL;
  if (*i + 1 >= argc) {
    *missing = 1;
    return NULL;
  }
  return argv[++*i];
}

int cmd_compare_maps(int argc, char **argv) {
  const char *pos[2] = {NULL, NULL};
  int npos = 0;
  long lmax = 0, iter = 3, threads = 0;
  int has_lmax = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int missing = 0;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    }
    if ((v = option_value(argc, argv, &i, "--lmax", &missing))) {
      if (!parse_long(v, &lmax))
        return bad_usage("--lmax: '%s' is not an integer", v);
      has_lmax = 1;
    } else if ((v = option_value(argc, argv, &i, "--iter", &missing))) {
      if (!parse_long(v, &iter) || iter < 0 || iter > 100)
        return bad_usage("--iter: '%s' is not an integer in [0, 100]", v);
    } else if ((v = option_value(argc, argv, &i, "--threads", &missing))) {
      if (!parse_long(v, &threads) || threads < 1 || threads > 4096)
        return bad_usage("--threads: '%s' is not a positive integer", v);
    } else if (missing) {
      return bad_usage("%s needs a value", a);
    } else if (a[0] == '-' && a[1]) {
      return bad_usage("unknown option '%s'", a);
    } else if (npos < 2) {
      pos[npos++] = a;
    } else {
      return bad_usage("unexpected argument '%s' (two maps expected)", a);
    }
  }
  if (npos != 2) {
    fprintf(stderr, "arkcos compare-maps: two maps expected\n");
    usage(stderr);
    return 2;
  }

  arkcos_error err = {0, ""};
  double *map_a = NULL, *map_b = NULL;
  hpx_map_info ia, ib;
  arkcos_geometry *g = NULL;
  double *cl = NULL;
  json_t *root = NULL;
  int status = 0;
  if (hpx_read_map(pos[0], &map_a, &ia, &err) ||
      hpx_read_map(pos[1], &map_b, &ib, &err)) {
    status = report_error(&err);
    goto done;
  }
  if (ia.nside != ib.nside) {
    fprintf(stderr,
            "arkcos compare-maps: %s has nside %lld but %s has nside %lld\n",
            pos[0], (long long)ia.nside, pos[1], (long long)ib.nside);
    status = 2;
    goto done;
  }
  if (has_lmax && (lmax < 1 || lmax > 4 * ia.nside)) {
    fprintf(stderr,
            "arkcos compare-maps: --lmax %ld outside [1, 4 nside = %lld]\n",
            lmax, (long long)(4 * ia.nside));
    status = 2;
    goto done;
  }
  g = arkcos_geometry_healpix(ia.nside, &err);
  if (!g) {
    status = report_error(&err);
    goto done;
  }
  ref_metrics m;
  ref_compare(g, map_a, map_b, &m);
  double sb2 = 0;
  for (int64_t p = 0; p < g->npix; p++) sb2 += map_b[p] * map_b[p];

  root = json_object();
  json_object_set_new(root, "a", json_string(pos[0]));
  json_object_set_new(root, "b", json_string(pos[1]));
  json_object_set_new(root, "nside", json_integer((json_int_t)ia.nside));
  json_object_set_new(root, "npix", json_integer((json_int_t)g->npix));
  json_object_set_new(root, "rms_b", jnum(sqrt(sb2 / (double)g->npix)));
  json_object_set_new(root, "frac_rms", jnum(m.frac_rms));
  json_object_set_new(root, "max_rel", jnum(m.max_rel));
  static const char *const region[REF_NREGIONS] = {"north", "belt", "south"};
  for (int r = 0; r < REF_NREGIONS; r++) {
    char key[64];
    snprintf(key, sizeof key, "frac_rms_%s", region[r]);
    json_object_set_new(root, key, jnum(m.frac_rms_region[r]));
    snprintf(key, sizeof key, "max_rel_%s", region[r]);
    json_object_set_new(root, key, jnum(m.max_rel_region[r]));
  }
  json_object_set_new(root, "nbad_a", json_integer((json_int_t)ia.nbad));
  json_object_set_new(root, "nbad_b", json_integer((json_int_t)ib.nbad));

  if (has_lmax) {
    int L = (int)lmax;
    cl = malloc((size_t)(L + 1) * 3 * sizeof *cl);
    if (!cl) {
      fprintf(stderr, "arkcos compare-maps: out of memory\n");
      status = 1;
      goto done;
    }
    ref_spectra_metrics sm;
    if (ref_compare_spectra(g, map_a, map_b, L, (int)iter, (int)threads, cl,
                            cl + L + 1, cl + 2 * (L + 1), &sm, &err)) {
      status = report_error(&err);
      goto done;
    }
    json_t *s = json_object();
    json_object_set_new(s, "lmax", json_integer(L));
    json_object_set_new(s, "iter", json_integer(iter));
    json_object_set_new(s, "nl", json_integer(sm.nl));
    json_object_set_new(s, "max_rel_residual", jnum(sm.max_rel_residual));
    json_object_set_new(s, "rms_rel_residual", jnum(sm.rms_rel_residual));
    json_object_set_new(s, "diff_max_ratio", jnum(sm.max_diff_ratio));
    json_object_set_new(s, "diff_mean_ratio", jnum(sm.mean_diff_ratio));
    json_object_set_new(s, "cl_a", jarray(cl, L + 1));
    json_object_set_new(s, "cl_b", jarray(cl + L + 1, L + 1));
    json_object_set_new(s, "cl_diff", jarray(cl + 2 * (L + 1), L + 1));
    json_object_set_new(root, "spectra", s);
  }

  char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                    JSON_REAL_PRECISION(10));
  if (!text) {
    fprintf(stderr, "arkcos compare-maps: cannot encode JSON\n");
    status = 1;
    goto done;
  }
  if (fputs(text, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout)) {
    fprintf(stderr, "arkcos compare-maps: cannot write to stdout\n");
    status = 1;
  }
  free(text);
done:
  json_decref(root);
  free(cl);
  free(map_a);
  free(map_b);
  arkcos_geometry_destroy(g);
  return status;
}
