/* report_figdata.c -- `arkcos report --figures`: the data files that
 * plots/<fig>.gp draw, from the sweeps of `make reproduce`. Every file goes to
 * PLOTS_DIR/data: fig2_times_<method>.dat, fig2_speedup_<backend>_iter<n>.dat,
 * table1.dat and <fig>.vars.gp (gnuplot variables: titles, file names). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/report/report.h"
#include "harness/report/report_common.h"
#include "harness/report/report_sweeps.h"
#include "harness/common/util.h"

typedef struct {
  sweeps sw;
  char data[4200];   /* PLOTS_DIR/data */
  arkcos_error err;
  int failed;
} figctx;

/* Writes b to data/name and frees it. */
static void emit(figctx *x, const char *name, sbuf *b) {
  if (!x->failed && report_write(x->data, name, b, &x->err)) x->failed = 1;
  free(b->s);
  memset(b, 0, sizeof *b);
}

/* ---------------------------------------------------------------- Fig. 2 */

/* The supports of the Fig. 2 sweep's ok cases, ascending (1, 4, 16 when
 * there are none). */
static int fig2_supports(const sweeps *s, double sup[], int max) {
  int n = 0;
  for (size_t i = 0; i < sweep_ncases(s->doc[SW_FIG2]); i++) {
    json_t *c = sweep_case(s->doc[SW_FIG2], i);
    double v = case_support(c);
    int k = 0;
    if (!case_is(c, "ok")) continue;
    while (k < n && sup[k] != v) k++;
    if (k == n && n < max) sup[n++] = v;
  }
  if (!n) {
    sup[0] = 1, sup[1] = 4, sup[2] = 16;
    return 3;
  }
  for (int i = 1; i < n; i++) /* insertion sort */
    for (int j = i; j > 0 && sup[j] < sup[j - 1]; j--) {
      double t = sup[j];
      sup[j] = sup[j - 1];
      sup[j - 1] = t;
    }
  return n;
}

/* The ok cases of both Fig. 2 sweeps with this method label. */
static size_t cases_labelled(const sweeps *s, const char *label, json_t **out, size_t max) {
  size_t n = 0;
  char lab[256];
  for (int d = SW_FIG2; d <= SW_FIG2FSHT; d++)
    for (size_t i = 0; i < sweep_ncases(s->doc[d]) && n < max; i++) {
      json_t *c = sweep_case(s->doc[d], i);
      if (case_is(c, "ok") && !strcmp(report_method_label(c, lab, sizeof lab), label))
        out[n++] = c;
    }
  return n;
}

static int cmp_nside_time(const void *pa, const void *pb) {
  json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
  long long na = jint(a, "nside", 0), nb = jint(b, "nside", 0);
  if (na != nb) return na < nb ? -1 : 1;
  return (case_tmed(a) > case_tmed(b)) - (case_tmed(a) < case_tmed(b));
}

/* FSHT: one block, one time per nside (the first case of each nside). */
static void fsht_times(sbuf *b, json_t **c, size_t n) {
  long long done[64];
  int nd = 0;
  json_t *rows[64];
  for (size_t i = 0; i < n && nd < 64; i++) {
    long long ns = jint(c[i], "nside", 0);
    int k = 0;
    while (k < nd && done[k] != ns) k++;
    if (k == nd) done[nd] = ns, rows[nd++] = c[i];
  }
  for (int i = 1; i < nd; i++)
    for (int j = i; j > 0 && jint(rows[j], "nside", 0) < jint(rows[j - 1], "nside", 0); j--) {
      json_t *t = rows[j];
      rows[j] = rows[j - 1];
      rows[j - 1] = t;
    }
  for (int i = 0; i < nd; i++)
    sb_printf(b, "%lld %.6e\n", jint(rows[i], "nside", 0), case_tmed(rows[i]));
  if (!nd) sb_printf(b, "NaN NaN\n");
}

/* ARKCoS: one block per support. */
static void ark_times(sbuf *b, json_t **c, size_t n, const double *sup, int nsup) {
  for (int s = 0; s < nsup; s++) {
    sb_printf(b, "# support %g deg\n", sup[s]);
    json_t *rows[256];
    size_t nr = 0;
    for (size_t i = 0; i < n && nr < 256; i++)
      if (case_support(c[i]) == sup[s]) rows[nr++] = c[i];
    qsort(rows, nr, sizeof *rows, cmp_nside_time);
    for (size_t i = 0; i < nr; i++)
      sb_printf(b, "%lld %.6e\n", jint(rows[i], "nside", 0), case_tmed(rows[i]));
    if (!nr) sb_printf(b, "NaN NaN\n");
    sb_printf(b, "\n\n");
  }
}

static void fig2_times(figctx *x, const double *sup, int nsup) {
  static const char *const labels[] = {"arkcos-cpu-enhanced-double", "arkcos-gpu-enhanced-double",
                                       "fsht-iter0", "fsht-iter3"};
  size_t max = sweep_ncases(x->sw.doc[SW_FIG2]) + sweep_ncases(x->sw.doc[SW_FIG2FSHT]) + 1;
  json_t **c = calloc(max, sizeof *c);
  for (int l = 0; l < 4 && c; l++) {
    sbuf b = {0};
    char name[128];
    size_t n = cases_labelled(&x->sw, labels[l], c, max);
    if (!strncmp(labels[l], "fsht", 4))
      fsht_times(&b, c, n);
    else
      ark_times(&b, c, n, sup, nsup);
    snprintf(name, sizeof name, "fig2_times_%s.dat", labels[l]);
    emit(x, name, &b);
  }
  if (!c) x->failed = 1;
  free(c);
}

static int cmp_point(const void *pa, const void *pb) {
  const fig2_point *a = pa, *b = pb;
  if (a->nside != b->nside) return a->nside < b->nside ? -1 : 1;
  if (a->t_ark != b->t_ark) return a->t_ark < b->t_ark ? -1 : 1;
  if (a->t_fsht != b->t_fsht) return a->t_fsht < b->t_fsht ? -1 : 1;
  return (a->speedup > b->speedup) - (a->speedup < b->speedup);
}

/* fig2_speedup_<be>_iter<it>.dat: one block per support. */
static void fig2_speedup(figctx *x, const fig2_point *p, size_t np, const char *be, int it,
                         const double *sup, int nsup) {
  sbuf b = {0};
  fig2_point *rows = calloc(np + 1, sizeof *rows);
  for (int s = 0; s < nsup && rows; s++) {
    sb_printf(&b, "# support %g deg: nside t_arkcos t_fsht speedup\n", sup[s]);
    size_t nr = 0;
    for (size_t i = 0; i < np; i++)
      if (!strcmp(p[i].backend, be) && p[i].iter == it && p[i].support == sup[s]) rows[nr++] = p[i];
    qsort(rows, nr, sizeof *rows, cmp_point);
    for (size_t i = 0; i < nr; i++)
      sb_printf(&b, "%lld %.6e %.6e %.6e\n", rows[i].nside, rows[i].t_ark, rows[i].t_fsht,
                rows[i].speedup);
    if (!nr) sb_printf(&b, "NaN NaN NaN NaN\n");
    sb_printf(&b, "\n\n");
  }
  if (!rows) b.oom = 1;
  free(rows);
  char name[128];
  snprintf(name, sizeof name, "fig2_speedup_%s_iter%d.dat", be, it);
  emit(x, name, &b);
}

static void nside_range(const sweeps *s, long long *lo, long long *hi) {
  *lo = *hi = 0;
  for (int d = SW_FIG2; d <= SW_FIG2FSHT; d++)
    for (size_t i = 0; i < sweep_ncases(s->doc[d]); i++) {
      json_t *c = sweep_case(s->doc[d], i);
      long long n = jint(c, "nside", 0);
      if (!case_is(c, "ok")) continue;
      if (!*lo || n < *lo) *lo = n;
      if (n > *hi) *hi = n;
    }
}

static void fig2_vars(figctx *x, int has_gpu, const double *sup, int nsup) {
  sbuf b = {0};
  long long lo, hi;
  nside_range(&x->sw, &lo, &hi);
  char thr[256], sub[1024], sups[256] = "";
  int one;
  fsht_threads(&x->sw, -1, thr, sizeof thr, &one);
  json_t *doc = x->sw.doc[SW_FIG2] && json_object_size(x->sw.doc[SW_FIG2]) ? x->sw.doc[SW_FIG2]
                                                                           : x->sw.doc[SW_FIG2FSHT];
  json_t *meta = json_object_get(doc, "meta");
  int n = snprintf(sub, sizeof sub, "%s, %s CPU thread%s", jstr(meta, "cpu_model", "?"),
                   thr[0] ? thr : "?", one ? "" : "s");
  if (has_gpu)
    snprintf(sub + n, sizeof sub - (size_t)n, ", GPU %s",
             jstr(json_array_get(json_object_get(meta, "gpus"), 0), "name", "?"));
  for (int k = 0; k < nsup; k++)
    snprintf(sups + strlen(sups), sizeof sups - strlen(sups), "%s%g", k ? " " : "", sup[k]);
  gp_var_int(&b, "has_gpu", has_gpu);
  gp_var_int(&b, "nside_min", lo);
  gp_var_int(&b, "nside_max", hi);
  gp_var_str(&b, "subtitle", sub);
  gp_var_int(&b, "nsupports", nsup);
  gp_var_str(&b, "supports", sups);
  emit(x, "fig2.vars.gp", &b);
}

static void fig2_data(figctx *x) {
  double sup[32];
  int nsup = fig2_supports(&x->sw, sup, 32);
  size_t np = 0;
  fig2_point *p = fig2_points(&x->sw, &np);
  if (!p) {
    x->failed = 1;
    return;
  }
  fig2_times(x, sup, nsup);
  int has_gpu = 0;
  for (size_t i = 0; i < np; i++) has_gpu |= !strcmp(p[i].backend, "gpu");
  static const char *const be[] = {"cpu", "gpu"};
  for (int k = 0; k < 2; k++)
    for (int it = 0; it <= 3; it += 3) fig2_speedup(x, p, np, be[k], it, sup, nsup);
  fig2_vars(x, has_gpu, sup, nsup);
  free(p);
}

/* --------------------------------------------------------------- Table 1 */

/* The paper's Table 1, GTX 480 at nside 2048: percent per group. */
static const struct { int support; double share[4]; } paper_table1[] = {
    {1, {57, 19, 10, 14}}, {4, {47, 31, 16, 6}}, {16, {39, 39, 21, 1}}};

static int table1_bars(sbuf *b, const table1_sel *t) {
  static const char *const backends[] = {"cpu", "gpu"};
  int nb = 0;
  sb_printf(b, "# bar ffts kernel_eval reduction others total_s (percent, seconds)\n");
  for (int s = 0; s < 3; s++) {
    const double *p = paper_table1[s].share;
    sb_printf(b, "\"%d° paper\\n(GPU, 2048)\" %g %g %g %g NaN\n", paper_table1[s].support, p[0],
              p[1], p[2], p[3]);
    nb++;
    for (int k = 0; k < 2; k++) {
      json_t *c = table1_case(t, backends[k], paper_table1[s].support);
      if (!c) continue;
      double sh[4], tot;
      stage_groups(c, sh, &tot);
      sb_printf(b, "\"%d° here\\n(%s, %lld)\" %.2f %.2f %.2f %.2f %.4g\n", paper_table1[s].support,
                k ? "GPU" : "CPU", t->nside, sh[0], sh[1], sh[2], sh[3], tot);
      nb++;
    }
    if (s != 2) {
      sb_printf(b, "\"\" NaN NaN NaN NaN NaN\n");
      nb++;
    }
  }
  return nb;
}

static void table1_data(figctx *x) {
  table1_sel t;
  table1_select(x->sw.doc[SW_FIG2], &t);
  sbuf b = {0}, v = {0};
  int nb = table1_bars(&b, &t);
  emit(x, "table1.dat", &b);
  char title[256], ns[32] = "?";
  if (t.nside) snprintf(ns, sizeof ns, "%lld", t.nside);
  snprintf(title, sizeof title,
           "Table 1: share of ARKCoS run time per stage, nside %s (paper: GTX 480 GPU, nside 2048)",
           ns);
  gp_var_int(&v, "nbars", nb);
  gp_var_str(&v, "t1_title", title);
  emit(x, "table1.vars.gp", &v);
}

/* --------------------------------------------------------- Figs. 3 to 6 */

static void fig3_data(figctx *x) {
  sbuf b = {0};
  static const char *const tags[] = {"6", "60"};
  for (int k = 0; k < 2; k++) {
    char path[4300], var[16], line[512];
    snprintf(path, sizeof path, "%s/fig3/kernel_fwhm%s.txt", x->sw.dir, tags[k]);
    snprintf(var, sizeof var, "f_k%s", tags[k]);
    gp_var_str(&b, var, path);
    double cut = NAN;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
      if (!strncmp(line, "# cutoff_arcmin", 15)) sscanf(line + 15, "%lf", &cut);
    if (f) fclose(f);
    snprintf(var, sizeof var, "cut%s", tags[k]);
    gp_var_num(&b, var, cut);
  }
  emit(x, "fig3.vars.gp", &b);
}

/* RESULTS_DIR/<sweep>/<outputs.patches[i].kind>, or "" */
static const char *patch_file(figctx *x, const char *sweep, json_t *c, size_t i,
                              const char *kind, char *buf, size_t len) {
  const char *rel = jstr(json_array_get(json_object_get(json_object_get(c, "outputs"), "patches"), i),
                         kind, NULL);
  if (c && rel && rel[0])
    snprintf(buf, len, "%s/%s/%s", x->sw.dir, sweep, rel);
  else
    snprintf(buf, len, "%s", "");
  return buf;
}

static void fig4_panel(figctx *x, sbuf *b, const char *tag, json_t *c) {
  char var[32], path[4300], t[512], e[4][32];
  static const char *const where[] = {"pole", "eq"};
  for (int i = 0; i < 2; i++) {
    snprintf(var, sizeof var, "f_%s_%s", tag, where[i]);
    gp_var_str(b, var, patch_file(x, "fig4", c, (size_t)i, "diff", path, sizeof path));
  }
  json_t *m = json_object_get(c, "metrics");
  if (c)
    snprintf(t, sizeof t, "frac. RMS %s (north %s, belt %s, south %s)",
             fmt_e(json_object_get(m, "frac_rms"), e[0], 32),
             fmt_e(json_object_get(m, "frac_rms_north"), e[1], 32),
             fmt_e(json_object_get(m, "frac_rms_belt"), e[2], 32),
             fmt_e(json_object_get(m, "frac_rms_south"), e[3], 32));
  else
    snprintf(t, sizeof t, "not run");
  snprintf(var, sizeof var, "t_%s", tag);
  gp_var_str(b, var, t);
}

static void fig4_data(figctx *x) {
  json_t *doc = x->sw.doc[SW_FIG4];
  json_t *enh = sweep_find(doc, is_ark_enhanced), *pap = sweep_find(doc, is_ark_paper);
  sbuf b = {0};
  fig4_panel(x, &b, "enh", enh);
  fig4_panel(x, &b, "pap", pap);
  json_t *c = enh ? enh : pap;
  char title[512], fw[64];
  if (c)
    snprintf(title, sizeof title, "Fig. 4: (ARKCoS - FSHT) / RMS(FSHT map), Gaussian %s FWHM, nside %lld",
             case_fwhm(c, fw, sizeof fw), jint(c, "nside", 0));
  else
    snprintf(title, sizeof title, "Fig. 4: no results");
  gp_var_str(&b, "title", title);
  gp_var_int(&b, "have", c != NULL);
  emit(x, "fig4.vars.gp", &b);
}

static void fig5_data(figctx *x) {
  json_t *doc = x->sw.doc[SW_FIG5];
  json_t *ark = sweep_find(doc, is_ark_enhanced), *fs = sweep_find(doc, is_fsht);
  const char *fs_spec = jstr(json_object_get(fs, "outputs"), "spectra", "");
  char f_ark[4300] = "", f_fs[4300] = "", title[512], fw[64];
  snprintf(title, sizeof title, "Fig. 5: no results");
  if (ark) {
    snprintf(f_ark, sizeof f_ark, "%s/fig5/%s", x->sw.dir,
             jstr(json_object_get(ark, "outputs"), "spectra", ""));
    snprintf(title, sizeof title,
             "Fig. 5: power spectrum accuracy, Gaussian %s FWHM, nside %lld, exact = "
             "alm2map(K_l a_{lm})", case_fwhm(ark, fw, sizeof fw), jint(ark, "nside", 0));
  }
  if (fs_spec[0]) snprintf(f_fs, sizeof f_fs, "%s/fig5/%s", x->sw.dir, fs_spec);
  sbuf b = {0};
  gp_var_str(&b, "f_ark", f_ark);
  gp_var_str(&b, "f_fsht", f_fs);
  gp_var_int(&b, "have", ark != NULL);
  gp_var_str(&b, "title", title);
  if (ark) {
    json_t *l = json_object_get(json_object_get(ark, "metrics"), "cl_lmax");
    if (json_is_real(l))
      gp_var_num(&b, "lmax", json_real_value(l));
    else
      gp_var_int(&b, "lmax", l ? jint(json_object_get(ark, "metrics"), "cl_lmax", 0)
                               : 2 * jint(ark, "nside", 0));
  }
  if (fs_spec[0]) {
    char lab[64];
    snprintf(lab, sizeof lab, "FSHT iter %lld", jint(json_object_get(fs, "method"), "iter", 3));
    gp_var_str(&b, "fsht_label", lab);
  }
  emit(x, "fig5.vars.gp", &b);
}

static void fig6_title(json_t *c, char *title, size_t len) {
  char fw[64];
  snprintf(title, len,
           "Fig. 6: point sources smoothed with a Gaussian of %s FWHM, nside %lld: log10 |value| / max",
           case_fwhm(c, fw, sizeof fw), jint(c, "nside", 0));
}

static void fig6_data(figctx *x) {
  json_t *doc = x->sw.doc[SW_FIG6];
  static const char *const tags[] = {"fsht", "pap", "enh"};
  json_t *c[3] = {sweep_find(doc, is_fsht), sweep_find(doc, is_ark_paper),
                  sweep_find(doc, is_ark_enhanced)};
  char title[512] = "Fig. 6: no results", var[16], path[4300], t[3][256], e[2][32];
  for (int k = 0; k < 3; k++) {
    json_t *m = json_object_get(c[k], "metrics");
    if (c[k]) fig6_title(c[k], title, sizeof title);
    if (c[k])
      snprintf(t[k], sizeof t[k], "ringing: belt %s, cap %s",
               fmt_e(json_object_get(m, "ringing_belt"), e[0], 32),
               fmt_e(json_object_get(m, "ringing_cap"), e[1], 32));
    else
      snprintf(t[k], sizeof t[k], "not run");
  }
  sbuf b = {0};
  gp_var_int(&b, "have", c[0] || c[1] || c[2]);
  gp_var_str(&b, "title", title);
  for (int k = 0; k < 3; k++) {
    snprintf(var, sizeof var, "f_%s", tags[k]);
    gp_var_str(&b, var, patch_file(x, "fig6", c[k], 0, "map", path, sizeof path));
    snprintf(var, sizeof var, "t_%s", tags[k]);
    gp_var_str(&b, var, t[k]);
  }
  char lab[128] = "FSHT", lmax[32] = "?";
  if (json_is_integer(json_object_get(c[0], "lmax")))
    snprintf(lmax, sizeof lmax, "%lld", jint(c[0], "lmax", 0));
  if (c[0])
    snprintf(lab, sizeof lab, "FSHT (iter %lld, lmax %s)",
             jint(json_object_get(c[0], "method"), "iter", 0), lmax);
  gp_var_str(&b, "fsht_label", lab);
  emit(x, "fig6.vars.gp", &b);
}

int report_figures(const char *results_dir, const char *plots_dir) {
  figctx x;
  memset(&x, 0, sizeof x);
  if ((size_t)snprintf(x.data, sizeof x.data, "%s/data", plots_dir) >= sizeof x.data ||
      report_mkdirs(x.data)) {
    fprintf(stderr, "arkcos report: %s/data: cannot create folder\n", plots_dir);
    return 1;
  }
  sweeps_load(&x.sw, results_dir);
  fig2_data(&x);
  table1_data(&x);
  fig3_data(&x);
  fig4_data(&x);
  fig5_data(&x);
  fig6_data(&x);
  sweeps_free(&x.sw);
  if (x.failed) {
    report_error(&x.err);
    return 1;
  }
  printf("arkcos report: wrote the figure data in %s\n", x.data);
  return 0;
}
