/* report_hw.c -- `arkcos report RESULTS.json... -o DIR`: a hardware
 * comparison report. DIR/report.md has one column per results file (machine),
 * the cases the files share with their median times, speed-ups over FSHT on
 * the same machine and stage breakdowns, the paper's published numbers where
 * cases match, and PNG charts drawn by gnuplot (the .dat and .gp files stay
 * beside them so that the charts can be redrawn or restyled). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "harness/report/report.h"
#include "harness/report/report_common.h"
#include "harness/common/stats.h"
#include "harness/common/util.h"

#define MAX_FILES 32

/* ------------------------------------------------------------ the model */

typedef struct {
  results_file rf;
  char label[16];  /* M1, M2, ... */
  char title[160]; /* label and host, safe for gnuplot titles */
} machine;

typedef struct {
  long idx[MAX_FILES]; /* index in each file, -1 when absent */
  const results_case *rep; /* first occurrence, for the parameters */
  int in_all;
  char label[1024]; /* report_case_label */
} ucase;

static const char *const stage_names[] = {"map_fft", "kernel_eval", "kernel_fft",
                                          "reduction", "map_ifft", "h2d",
                                          "d2h", "other"};
#define NSTAGES 8
/* Table 1 of the paper groups the stages in four. */
static const char *const group_names[] = {"FFTs", "kernel evaluation",
                                          "ring reduction", "others"};

static int get_stages(const results_case *c, double st[NSTAGES], double grp[4]) {
  json_t *s = json_object_get(c->obj, "stages");
  if (!json_is_object(s) || strcmp(c->status, "ok")) return 0;
  double sum = 0;
  for (int k = 0; k < NSTAGES; k++) {
    json_t *v = json_object_get(s, stage_names[k]);
    st[k] = json_is_number(v) ? json_number_value(v) : 0;
    if (!isfinite(st[k]) || st[k] < 0) st[k] = 0;
    sum += st[k];
  }
  if (!(sum > 0)) return 0;
  grp[0] = st[0] + st[2] + st[4];
  grp[1] = st[1];
  grp[2] = st[3];
  grp[3] = st[5] + st[6] + st[7];
  return 1;
}

static const char *case_time_cell(const results_case *c, char *buf, size_t len) {
  if (!c)
    snprintf(buf, len, "—");
  else if (!strcmp(c->status, "ok"))
    stats_format_seconds(c->tmedian, buf, len);
  else
    snprintf(buf, len, "%s%s%s", c->status, c->reason ? ": " : "",
             c->reason ? c->reason : "");
  return buf;
}

/* Speed-up of c over the FSHT case of its file; 0 when there is none. */
static double speedup(const results_file *rf, const results_case *c,
                      const char *fsht, char *which, size_t len) {
  which[0] = '\0';
  if (strcmp(c->status, "ok") || results_method_matches(c, fsht)) return 0;
  int same_kernel = 0;
  long r = results_find_reference(rf, c, fsht, &same_kernel);
  if (r < 0) return 0;
  char m[128];
  results_method_label(rf->cases[r].method_obj, m, sizeof m);
  snprintf(which, len, "%s%s", m, same_kernel ? "" : ", other kernel");
  return rf->cases[r].tmedian / c->tmedian;
}

/* ------------------------------------------------------ published claims */

static int claim_matches_case(json_t *claim, const results_case *c) {
  json_t *cond = json_object_get(claim, "conditions");
  json_t *v;
  if (!json_is_object(cond)) return 0;
  if ((v = json_object_get(cond, "nside")) && json_integer_value(v) != c->nside)
    return 0;
  json_t *ck = json_object_get(cond, "kernel");
  if (ck) {
    json_t *t = json_object_get(ck, "type"), *kt = json_object_get(c->kernel, "type");
    if (!json_is_string(t) || !json_is_string(kt) ||
        strcmp(json_string_value(t), json_string_value(kt)))
      return 0;
    json_t *f = json_object_get(ck, "fwhm_arcmin"), *kf = json_object_get(c->kernel, "fwhm_arcmin");
    if (f && (!json_is_number(kf) ||
              fabs(json_number_value(kf) / json_number_value(f) - 1) > 0.01))
      return 0;
  }
  json_t *cm = json_object_get(cond, "method");
  if (cm) {
    json_t *n = json_object_get(cm, "name");
    if (!json_is_string(n) || strcmp(json_string_value(n), c->method)) return 0;
    json_t *be = json_object_get(cm, "backend"), *cbe = json_object_get(c->method_obj, "backend");
    if (be && (!json_is_string(cbe) || strcmp(json_string_value(be), json_string_value(cbe))))
      return 0;
  }
  if ((v = json_object_get(cond, "threads")) && json_integer_value(v) != c->threads)
    return 0;
  return 1;
}

static const char *claim_impl(json_t *claim) {
  json_t *impl = json_object_get(json_object_get(json_object_get(claim, "conditions"), "method"),
                                 "implementation");
  return json_is_string(impl) ? json_string_value(impl) : NULL;
}

static const char *claim_kind(json_t *claim) {
  json_t *k = json_object_get(claim, "kind");
  return json_is_string(k) ? json_string_value(k) : "";
}

/* The published time(s) matching c, e.g. "460 s (HEALPix 2.15); 160 s
 * (libpsht)"; the speed-ups the paper implies for c go to sp. */
static void paper_cells(json_t *claims, const results_case *c, char *tcell,
                        size_t tlen, char *sp, size_t splen) {
  size_t tu = 0, su = 0;
  tcell[0] = sp[0] = '\0';
  size_t n = json_array_size(claims);
  for (size_t i = 0; i < n; i++) {
    json_t *cl = json_array_get(claims, i);
    if (strcmp(claim_kind(cl), "time") || !claim_matches_case(cl, c)) continue;
    double v = json_number_value(json_object_get(cl, "value"));
    const char *impl = claim_impl(cl);
    json_t *hw = json_object_get(json_object_get(cl, "conditions"), "hardware");
    if (tu < tlen)
      tu += (size_t)snprintf(tcell + tu, tlen - tu, "%s%g s (%s)", tu ? "; " : "", v,
                             impl ? impl : json_is_string(hw) ? json_string_value(hw) : "paper");
    if (!strcmp(c->method, "fsht")) continue;
    /* the paper's FSHT times for the same problem */
    for (size_t j = 0; j < n; j++) {
      json_t *f = json_array_get(claims, j);
      json_t *fm = json_object_get(json_object_get(f, "conditions"), "method");
      json_t *fname = json_object_get(fm, "name");
      if (strcmp(claim_kind(f), "time") || !json_is_string(fname) ||
          strcmp(json_string_value(fname), "fsht"))
        continue;
      json_t *ca = json_object_get(cl, "conditions"), *fa = json_object_get(f, "conditions");
      if (!json_equal(json_object_get(ca, "nside"), json_object_get(fa, "nside")) ||
          !json_equal(json_object_get(ca, "kernel"), json_object_get(fa, "kernel")))
        continue;
      double fv = json_number_value(json_object_get(f, "value"));
      json_t *ft = json_object_get(fa, "threads");
      if (su < splen)
        su += (size_t)snprintf(sp + su, splen - su, "%s%.0fx vs %s (%lld core%s)",
                               su ? "; " : "", fv / v,
                               claim_impl(f) ? claim_impl(f) : "FSHT",
                               (long long)json_integer_value(ft),
                               json_integer_value(ft) == 1 ? "" : "s");
    }
  }
}

/* ----------------------------------------------------------- meta fields */

static const char *meta_cell(const results_file *rf, const char *key, char *buf,
                             size_t len) {
  json_t *v = json_object_get(rf->meta, key);
  if (!v) v = json_object_get(json_object_get(rf->meta, "versions"), key);
  if (!strcmp(key, "config")) {
    json_t *name = json_object_get(v, "name");
    snprintf(buf, len, "%s", json_is_string(name) ? json_string_value(name) : "-");
  } else if (!strcmp(key, "memory_bytes") && json_is_number(v)) {
    snprintf(buf, len, "%.1f GiB", json_number_value(v) / 1073741824.0);
  } else if (!strcmp(key, "gpus")) {
    size_t used = 0, n = json_array_size(v);
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++) {
      json_t *g = json_array_get(v, i);
      json_t *name = json_object_get(g, "name"), *sm = json_object_get(g, "sm_count"),
             *mem = json_object_get(g, "memory_bytes");
      used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "; " : "",
                               json_is_string(name) ? json_string_value(name) : "GPU");
      if (json_is_integer(sm) && used < len)
        used += (size_t)snprintf(buf + used, len - used, ", %lld SMs",
                                 (long long)json_integer_value(sm));
      if (json_is_number(mem) && used < len)
        used += (size_t)snprintf(buf + used, len - used, ", %.1f GiB",
                                 json_number_value(mem) / 1073741824.0);
    }
    if (!n) snprintf(buf, len, "none");
  } else if (json_is_string(v)) {
    snprintf(buf, len, "%s", json_string_value(v)[0] ? json_string_value(v) : "-");
  } else if (json_is_integer(v)) {
    snprintf(buf, len, "%lld", (long long)json_integer_value(v));
  } else if (json_is_real(v)) {
    snprintf(buf, len, "%g", json_real_value(v));
  } else {
    snprintf(buf, len, "-");
  }
  return buf;
}

/* ------------------------------------------------------- files, gnuplot */

static int write_in_dir(const char *dir, const char *name, const char *text,
                        arkcos_error *err) {
  char path[4096];
  if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: path too long", dir);
  return atomic_write_text(path, text, err);
}

/* gnuplot single-quoted strings: only '' needs care; keep titles plain. */
static void plain_title(char *dst, size_t len, const char *src) {
  size_t j = 0;
  for (const char *p = src ? src : "?"; *p && j + 1 < len; p++) {
    unsigned char ch = (unsigned char)*p;
    dst[j++] = (ch >= 32 && ch < 127 && ch != '\'' && ch != '\\') ? (char)ch : '_';
  }
  dst[j] = '\0';
}

/* Runs gnuplot on DIR/charts.gp with DIR as working folder; its messages go
 * to DIR/charts.log. Returns 0 when it ran and succeeded. */
static int run_gnuplot(const char *dir) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (chdir(dir) != 0) _exit(126);
    int fd = open("charts.log", O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execlp("gnuplot", "gnuplot", "charts.gp", (char *)NULL);
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  if (!WIFEXITED(st)) return -1;
  return WEXITSTATUS(st) == 0 ? 0 : WEXITSTATUS(st) == 127 ? 127 : -1;
}

/* ------------------------------------------------------------ the report */

typedef struct {
  machine *m;
  int nm;
  ucase *uc;
  size_t nuc;
  json_t *published; /* may be NULL */
  const char *published_path;
  const char *fsht;
} model;

static json_t *claims_of(const model *md) {
  return md->published ? json_object_get(md->published, "claims") : NULL;
}

static const results_case *case_in(const model *md, const ucase *u, int f) {
  return u->idx[f] < 0 ? NULL : &md->m[f].rf.cases[u->idx[f]];
}

/* The case column: the case's label (its id), as in every report. */
static void case_cell(sbuf *b, const ucase *u) {
  char cell[1100];
  snprintf(cell, sizeof cell, "`%s`", u->label);
  sb_cell(b, cell);
}

static int has_paper_time(const model *md, const ucase *u) {
  if (!claims_of(md)) return 0;
  char t[256], s[256];
  paper_cells(claims_of(md), u->rep, t, sizeof t, s, sizeof s);
  return t[0] != '\0';
}

/* ------------------------------------------------------------ the charts */

/* The chart files: gnuplot script and data; charts says which charts have
 * data (bit 0 time, 1 speed-up, 2 stages). */
typedef struct {
  sbuf gp, time, speed, stage;
  int charts, ok;
  char note[256];
  size_t longest[3]; /* the longest tic label of each chart */
} chart_set;

static void note_label(chart_set *cs, int chart, size_t len) {
  if (len > cs->longest[chart]) cs->longest[chart] = len;
}

static const int table1_supports[] = {1, 4, 16};

/* The shares of the paper's Table 1 for one kernel support (degrees), in the
 * order of group_names; NAN where the claims have none. */
static void table1_shares(json_t *claims, int support, double v[4]) {
  static const char *const groups[] = {"ffts", "kernel_eval", "reduction", "others"};
  for (int k = 0; k < 4; k++) v[k] = NAN;
  for (size_t i = 0; i < json_array_size(claims); i++) {
    json_t *cl = json_array_get(claims, i), *cond = json_object_get(cl, "conditions");
    if (strcmp(claim_kind(cl), "stage_share") ||
        json_integer_value(json_object_get(cond, "kernel_support_deg")) != support)
      continue;
    json_t *sg = json_object_get(cond, "stage_group");
    for (int k = 0; k < 4; k++)
      if (json_is_string(sg) && !strcmp(json_string_value(sg), groups[k]))
        v[k] = json_number_value(json_object_get(cl, "value"));
  }
}

static void dat_headers(const model *md, chart_set *cs) {
  sb_printf(&cs->time, "# case");
  sb_printf(&cs->speed, "# case");
  for (int f = 0; f < md->nm; f++) {
    sb_printf(&cs->time, " %s", md->m[f].label);
    sb_printf(&cs->speed, " %s", md->m[f].label);
  }
  sb_printf(&cs->time, "\n");
  sb_printf(&cs->speed, "\n");
  sb_printf(&cs->stage, "# bar FFTs kernel_eval reduction others (percent of the stage sum)\n");
}

/* The case's row of time_per_case.dat and speedup.dat, where it has data. */
static void time_speed_rows(const model *md, const ucase *u, chart_set *cs) {
  int any = 0, anysp = 0;
  char row[1024], rowsp[1024];
  size_t ru = (size_t)snprintf(row, sizeof row, "\"%s\"", u->label);
  size_t rs = (size_t)snprintf(rowsp, sizeof rowsp, "\"%s\"", u->label);
  for (int f = 0; f < md->nm; f++) {
    const results_case *c = case_in(md, u, f);
    double t = c && !strcmp(c->status, "ok") ? c->tmedian : NAN;
    char which[160];
    double s = c ? speedup(&md->m[f].rf, c, md->fsht, which, sizeof which) : 0;
    if (isfinite(t)) any = 1;
    if (s > 0) anysp = 1;
    if (ru < sizeof row) ru += (size_t)snprintf(row + ru, sizeof row - ru, " %.6g", isfinite(t) ? t : NAN);
    if (rs < sizeof rowsp) rs += (size_t)snprintf(rowsp + rs, sizeof rowsp - rs, " %.6g", s > 0 ? s : NAN);
  }
  if (any) {
    sb_printf(&cs->time, "%s\n", row);
    cs->charts |= 1;
    note_label(cs, 0, strlen(u->label));
  }
  if (anysp) {
    sb_printf(&cs->speed, "%s\n", rowsp);
    cs->charts |= 2;
    note_label(cs, 1, strlen(u->label));
  }
}

/* One bar of stage_shares.dat per machine with stage times of the case. */
static void stage_rows(const model *md, const ucase *u, chart_set *cs) {
  for (int f = 0; f < md->nm; f++) {
    const results_case *c = case_in(md, u, f);
    double st[NSTAGES], g[4];
    if (!c || !get_stages(c, st, g)) continue;
    double sum = g[0] + g[1] + g[2] + g[3];
    sb_printf(&cs->stage, "\"%s / %s\" %.3f %.3f %.3f %.3f\n", u->label, md->m[f].label,
              100 * g[0] / sum, 100 * g[1] / sum, 100 * g[2] / sum, 100 * g[3] / sum);
    cs->charts |= 4;
    note_label(cs, 2, strlen(u->label) + 3 + strlen(md->m[f].label));
  }
}

/* The paper's Table 1 beside the measured stage shares. */
static void table1_rows(const model *md, chart_set *cs) {
  json_t *claims = claims_of(md);
  for (int s = 0; s < 3 && claims; s++) {
    double v[4];
    table1_shares(claims, table1_supports[s], v);
    if (!(isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]) && isfinite(v[3]))) continue;
    char bar[32];
    snprintf(bar, sizeof bar, "paper/%ddeg", table1_supports[s]);
    sb_printf(&cs->stage, "%s %g %g %g %g\n", bar, v[0], v[1], v[2], v[3]);
    note_label(cs, 2, strlen(bar));
  }
}

/* The tic labels are the full case ids, rotated to read upwards and ending
 * at the axis; the canvas grows below the plot so that the longest fits:
 * TIC_PT point text, under TIC_PX_PER_PT pixels wide per point of size. */
#define TIC_PT 8
#define TIC_PX_PER_PT 0.85
#define PLOT_PX 700 /* the canvas above the tic labels */

static void chart_canvas(sbuf *gp, size_t longest) {
  int label_px = (int)((double)longest * TIC_PT * TIC_PX_PER_PT) + 24;
  int height = PLOT_PX + label_px;
  sb_printf(gp, "set terminal pngcairo size 1400,%d noenhanced font ',10'\n"
                "set bmargin at screen %.4f\n",
            height, (double)label_px / height);
}

/* One log-scale clustered histogram: NAME.dat (case, then one column per
 * results file) drawn to NAME.png.tmp. */
static void clustered_log_chart(sbuf *gp, const model *md, const char *name, const char *title,
                                const char *ylabel, size_t longest) {
  sb_printf(gp, "\n");
  chart_canvas(gp, longest);
  sb_printf(gp, "set output '%s.png.tmp'\n"
                "set title '%s'\n"
                "set style histogram clustered gap 1\n"
                "set logscale y\nset yrange [*:*]\n"
                "set ylabel '%s'\n"
                "plot ",
            name, title, ylabel);
  for (int f = 0; f < md->nm; f++)
    sb_printf(gp, "%s'%s.dat' using %d%s title '%s'", f ? ", " : "", name, f + 2, f ? "" : ":xtic(1)",
              md->m[f].title);
  sb_printf(gp, "\nunset logscale y\n");
}

static void gnuplot_script(const model *md, chart_set *cs) {
  sbuf *gp = &cs->gp;
  sb_printf(gp, "# Drawn by `arkcos report`; rerun with `gnuplot charts.gp` in this folder.\n"
                "set datafile missing 'nan'\n"
                "set style data histograms\n"
                "set style fill solid 0.85 border -1\n"
                "set boxwidth 0.9\n"
                "set key outside right top\n"
                "set grid ytics\n"
                "set xtics rotate by 90 right scale 0 font ',%d'\n",
            TIC_PT);
  if (cs->charts & 1)
    clustered_log_chart(gp, md, "time_per_case", "Median time per case (log scale)", "median time [s]",
                        cs->longest[0]);
  if (cs->charts & 2)
    clustered_log_chart(gp, md, "speedup",
                        "Speed-up over FSHT on the same machine (log scale; 1 = as fast as FSHT)",
                        "FSHT time / case time", cs->longest[1]);
  if (cs->charts & 4) {
    sb_printf(gp, "\n");
    chart_canvas(gp, cs->longest[2]);
    sb_printf(gp, "set output 'stage_shares.png.tmp'\n"
                  "set title 'Share of arkcos run time by stage (groups of the paper''s Table 1)'\n"
                  "set style histogram rowstacked\n"
                  "set yrange [0:100]\n"
                  "set ylabel 'share of the stage sum [%%]'\n"
                  "plot 'stage_shares.dat' using 2:xtic(1) title '%s', '' using 3 title '%s', "
                  "'' using 4 title '%s', '' using 5 title '%s'\n",
              group_names[0], group_names[1], group_names[2], group_names[3]);
  }
  sb_printf(gp, "\nunset output\n");
}

/* Builds the data files and the gnuplot script of the shared cases. */
static void build_charts(const model *md, chart_set *cs) {
  cs->charts = 0;
  dat_headers(md, cs);
  for (size_t i = 0; i < md->nuc; i++) {
    const ucase *u = &md->uc[i];
    if (!u->in_all) continue;
    time_speed_rows(md, u, cs);
    if (!strcmp(u->rep->method, "arkcos")) stage_rows(md, u, cs);
  }
  if (cs->charts & 4) table1_rows(md, cs);
  gnuplot_script(md, cs);
}

/* ------------------------------------------------------------ report.md */

/* What the sections of report.md share. */
typedef struct {
  const model *md;
  const chart_set *cs;
  sbuf *b;
  int paper;       /* the published figures are loaded */
  int paper_times; /* some shared case has a published time */
  size_t nshared, nrest;
} doc;

static void md_header(const doc *d) {
  char when[64];
  time_t now = time(NULL);
  struct tm tmv;
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&now, &tmv));
  sb_printf(d->b, "# ARKCoS hardware comparison\n\n");
  sb_printf(d->b, "Written by `arkcos report` on %s from %d results file%s.%s\n\n", when,
            d->md->nm, d->md->nm == 1 ? "" : "s",
            d->paper ? " The last column holds the paper's published figures." : "");
}

/* The rows of the Machines table: label, key in each file's meta (NULL: the
 * file's path in the first row, its case counts in the last) and key in the
 * paper's hardware. */
static const struct {
  const char *label, *key, *paper_key;
} machine_rows[] = {
    {"results file", NULL, NULL},  {"host", "host", "host"},
    {"CPU", "cpu_model", "cpu_model"}, {"cores", "cores", "cores"},
    {"memory", "memory_bytes", "memory"}, {"GPU", "gpus", "gpu"},
    {"OS", "os", NULL},            {"compiler", "compiler", NULL},
    {"flags", "cflags", NULL},     {"ARKCoS", "arkcos", NULL},
    {"FFTW", "fftw", "fft"},       {"libsharp", "libsharp", "fsht"},
    {"CFITSIO", "cfitsio", NULL},  {"jansson", "jansson", NULL},
    {"CUDA runtime", "cuda_runtime", NULL}, {"CUDA driver", "cuda_driver", NULL},
    {"cuFFT", "cufft", NULL},      {"date", "date", NULL},
    {"built from commit", "git_commit", NULL}, {"config", "config", NULL},
    {"cases ok / skipped / failed", NULL, NULL},
};

static const char *machine_cell(const results_file *rf, size_t r, char *buf, size_t len) {
  if (machine_rows[r].key) return meta_cell(rf, machine_rows[r].key, buf, len);
  if (r == 0) {
    snprintf(buf, len, "`%.400s`", rf->path);
    return buf;
  }
  size_t ok = 0, sk = 0, fl = 0;
  for (size_t i = 0; i < rf->ncases; i++) {
    const char *s = rf->cases[i].status;
    ok += !strcmp(s, "ok");
    sk += !strcmp(s, "skipped");
    fl += !strcmp(s, "failed");
  }
  snprintf(buf, len, "%zu / %zu / %zu", ok, sk, fl);
  return buf;
}

static const char *paper_machine_cell(const model *md, size_t r, char *buf, size_t len) {
  json_t *hw = json_object_get(md->published, "hardware");
  json_t *src = json_object_get(md->published, "source");
  json_t *v = machine_rows[r].paper_key ? json_object_get(hw, machine_rows[r].paper_key) : NULL;
  if (r == 0)
    snprintf(buf, len, "`%.400s`", md->published_path);
  else if (json_is_string(v))
    snprintf(buf, len, "%s", json_string_value(v));
  else if (json_is_integer(v))
    snprintf(buf, len, "%lld", (long long)json_integer_value(v));
  else if (!strcmp(machine_rows[r].label, "date") && json_is_string(json_object_get(src, "reference")))
    snprintf(buf, len, "%s", json_string_value(json_object_get(src, "reference")));
  else
    snprintf(buf, len, "-");
  return buf;
}

static void md_machines(const doc *d) {
  const model *md = d->md;
  sbuf *b = d->b;
  char buf[512];
  sb_printf(b, "## Machines\n\n|  |");
  for (int f = 0; f < md->nm; f++) {
    const char *host = results_meta_str(&md->m[f].rf, "host");
    snprintf(buf, sizeof buf, "%s: %s", md->m[f].label, host ? host : "?");
    sb_cell(b, buf);
  }
  if (d->paper) sb_cell(b, "paper");
  sb_printf(b, "\n|---|");
  for (int f = 0; f < md->nm + d->paper; f++) sb_printf(b, "---|");
  sb_printf(b, "\n");
  for (size_t r = 0; r < sizeof machine_rows / sizeof machine_rows[0]; r++) {
    sb_printf(b, "|");
    sb_cell(b, machine_rows[r].label);
    for (int f = 0; f < md->nm; f++) sb_cell(b, machine_cell(&md->m[f].rf, r, buf, sizeof buf));
    if (d->paper) sb_cell(b, paper_machine_cell(md, r, buf, sizeof buf));
    sb_printf(b, "\n");
  }
}

/* "| case | M1 ... |" (and the paper's column) with its alignment row. */
static void case_table_head(const model *md, sbuf *b, int paper_col) {
  sb_printf(b, "| case |");
  for (int f = 0; f < md->nm; f++) sb_cell(b, md->m[f].title);
  if (paper_col) sb_cell(b, "paper (published)");
  sb_printf(b, "\n|---|");
  for (int f = 0; f < md->nm + paper_col; f++) sb_printf(b, "---:|");
  sb_printf(b, "\n");
}

/* A row of median times (or statuses), — where a file lacks the case. */
static void time_row(const model *md, sbuf *b, const ucase *u) {
  char buf[512];
  sb_printf(b, "|");
  case_cell(b, u);
  for (int f = 0; f < md->nm; f++) sb_cell(b, case_time_cell(case_in(md, u, f), buf, sizeof buf));
}

static void md_times(const doc *d) {
  const model *md = d->md;
  sbuf *b = d->b;
  sb_printf(b, "\n## Median time per case\n\n");
  sb_printf(b, "%zu case%s in %s; median over the timed repeats (warm-up excluded)."
               "%s\n\n",
            d->nshared, d->nshared == 1 ? "" : "s",
            md->nm == 1 ? "the file" : "every file",
            d->nrest ? " Cases not in every file are listed further down." : "");
  if ((d->cs->charts & 1) && d->cs->ok)
    sb_printf(b, "![median time per case and machine](time_per_case.png)\n\n");
  if (!d->nshared) {
    sb_printf(b, "_No case is in every file._\n");
    return;
  }
  case_table_head(md, b, d->paper_times);
  for (size_t i = 0; i < md->nuc; i++) {
    const ucase *u = &md->uc[i];
    if (!u->in_all) continue;
    time_row(md, b, u);
    if (d->paper_times) {
      char t[256], s[256];
      paper_cells(claims_of(md), u->rep, t, sizeof t, s, sizeof s);
      sb_cell(b, t[0] ? t : "");
    }
    sb_printf(b, "\n");
  }
}

static int any_speedup(const model *md) {
  for (size_t i = 0; i < md->nuc; i++) {
    const ucase *u = &md->uc[i];
    if (!u->in_all) continue;
    for (int f = 0; f < md->nm; f++) {
      const results_case *c = case_in(md, u, f);
      char w[160];
      if (c && speedup(&md->m[f].rf, c, md->fsht, w, sizeof w) > 0) return 1;
    }
  }
  return 0;
}

static void speedup_row(const doc *d, const ucase *u) {
  const model *md = d->md;
  char buf[512];
  sb_printf(d->b, "|");
  case_cell(d->b, u);
  for (int f = 0; f < md->nm; f++) {
    const results_case *c = case_in(md, u, f);
    char w[160];
    double s = c ? speedup(&md->m[f].rf, c, md->fsht, w, sizeof w) : 0;
    if (s > 0)
      snprintf(buf, sizeof buf, "%.3gx (vs %s)", s, w);
    else
      snprintf(buf, sizeof buf, "-");
    sb_cell(d->b, buf);
  }
  if (d->paper_times) {
    char t[256], s[256];
    paper_cells(claims_of(md), u->rep, t, sizeof t, s, sizeof s);
    sb_cell(d->b, s);
  }
  sb_printf(d->b, "\n");
}

static void md_speedups(const doc *d) {
  const model *md = d->md;
  sbuf *b = d->b;
  sb_printf(b, "\n## Speed-up over FSHT on the same machine\n\n");
  sb_printf(b, "FSHT time / case time, both medians from the same file, same nside and "
               "threads, same kernel where the file has it. The FSHT case is the first "
               "`%s` case of the file; each cell names it.\n\n", md->fsht);
  if ((d->cs->charts & 2) && d->cs->ok) sb_printf(b, "![speed-up over FSHT](speedup.png)\n\n");
  if (!any_speedup(md)) {
    sb_printf(b, "_No shared case has an FSHT case to compare with._\n");
    return;
  }
  case_table_head(md, b, d->paper_times);
  for (size_t i = 0; i < md->nuc; i++) {
    const ucase *u = &md->uc[i];
    if (!u->in_all || results_method_matches(u->rep, md->fsht) ||
        !strcmp(u->rep->method, "fsht"))
      continue;
    speedup_row(d, u);
  }
}

/* The scalar case of a spin-2 case u in file f: the same id without its
 * " pol=true" (sweep_case_id); NULL when the file has none. */
#define POL_ID_SUFFIX " pol=true"
static const results_case *scalar_twin(const model *md, const ucase *u, int f) {
  const results_case *c = case_in(md, u, f);
  size_t n = c ? strlen(c->key) : 0, ns = strlen(POL_ID_SUFFIX);
  if (!c || !results_case_is_pol(c) || n <= ns || strcmp(c->key + n - ns, POL_ID_SUFFIX)) return NULL;
  const results_file *rf = &md->m[f].rf;
  for (size_t i = 0; i < rf->ncases; i++)
    if (!results_case_is_pol(&rf->cases[i]) && strlen(rf->cases[i].key) == n - ns &&
        !strncmp(rf->cases[i].key, c->key, n - ns))
      return &rf->cases[i];
  return NULL;
}

/* The cells of one machine: scalar and spin-2 speed-ups over FSHT (each
 * against the FSHT case of its own kind) and the spin-2 time over the
 * scalar time. 1 if the machine has both cases. */
static int pol_cells(const doc *d, const ucase *u, int f) {
  const model *md = d->md;
  const results_case *c = case_in(md, u, f), *sc = scalar_twin(md, u, f);
  char w[160], buf[256];
  int both = c && sc && !strcmp(c->status, "ok") && !strcmp(sc->status, "ok");
  for (int k = 0; k < 2; k++) {
    double s = both ? speedup(&md->m[f].rf, k ? c : sc, md->fsht, w, sizeof w) : 0;
    if (s > 0) snprintf(buf, sizeof buf, "%.3gx (vs %s)", s, w);
    else snprintf(buf, sizeof buf, "-");
    sb_cell(d->b, buf);
  }
  if (both) snprintf(buf, sizeof buf, "%.3g", c->tmedian / sc->tmedian);
  else snprintf(buf, sizeof buf, "-");
  sb_cell(d->b, buf);
  return both;
}

/* Polarized sweeps (input.pol): every case ran scalar (I) and spin 2 (Q, U);
 * one row per spin-2 case in every file whose scalar case is there too. */
static void md_pol(const doc *d) {
  const model *md = d->md;
  sbuf *b = d->b;
  int any = 0;
  for (size_t i = 0; i < md->nuc && !any; i++)
    any = md->uc[i].in_all && results_case_is_pol(md->uc[i].rep) && scalar_twin(md, &md->uc[i], 0);
  if (!any) return;
  sb_printf(b, "\n## Polarization: spin-2 speed-up beside the scalar one\n\n");
  sb_printf(b, "Cases of a polarized sweep (input `pol`: true) ran twice: the scalar smoothing of I "
               "and the spin-2 smoothing of Q, U as one field (`pol=true`). Scalar: FSHT time / "
               "case time against the scalar `%s` case; spin 2: against the spin-2 FSHT case "
               "(E and B through libsharp's spin-2 transforms), same nside and threads; and the "
               "spin-2 time over the scalar time of the same method.\n\n| case |", md->fsht);
  for (int f = 0; f < md->nm; f++)
    sb_printf(b, " %s scalar | %s spin 2 | %s spin 2 / scalar time |", md->m[f].label,
              md->m[f].label, md->m[f].label);
  sb_printf(b, "\n|---|");
  for (int f = 0; f < 3 * md->nm; f++) sb_printf(b, "---:|");
  sb_printf(b, "\n");
  for (size_t i = 0; i < md->nuc; i++) {
    const ucase *u = &md->uc[i];
    if (!u->in_all || !results_case_is_pol(u->rep) || !strcmp(u->rep->method, "fsht") ||
        !scalar_twin(md, u, 0))
      continue;
    sb_printf(b, "|");
    case_cell(b, u);
    for (int f = 0; f < md->nm; f++) pol_cells(d, u, f);
    sb_printf(b, "\n");
  }
}

/* The stage rows of a shared arkcos case, one per machine with stage times. */
static void stage_table_rows(const model *md, sbuf *b, const ucase *u) {
  char buf[512];
  for (int f = 0; f < md->nm; f++) {
    const results_case *c = case_in(md, u, f);
    double st[NSTAGES], g[4];
    if (!c || !get_stages(c, st, g)) continue;
    double sum = g[0] + g[1] + g[2] + g[3];
    sb_printf(b, "|");
    case_cell(b, u);
    sb_cell(b, md->m[f].title);
    for (int k = 0; k < NSTAGES; k++) sb_cell(b, stats_format_seconds(st[k], buf, sizeof buf));
    sb_cell(b, stats_format_seconds(sum, buf, sizeof buf));
    for (int k = 0; k < 4; k++) sb_printf(b, " %.1f %% |", 100 * g[k] / sum);
    sb_printf(b, "\n");
  }
}

static void stage_table_paper_rows(const model *md, sbuf *b) {
  for (int s = 0; s < 3; s++) {
    double v[4];
    table1_shares(claims_of(md), table1_supports[s], v);
    if (!isfinite(v[0])) continue;
    sb_printf(b, "| paper | GTX 480, nside 2048, support %d deg (Table 1) |", table1_supports[s]);
    for (int k = 0; k < NSTAGES + 1; k++) sb_printf(b, " |");
    for (int k = 0; k < 4; k++) sb_printf(b, " %g %% |", v[k]);
    sb_printf(b, "\n");
  }
}

static void md_stages(const doc *d) {
  const model *md = d->md;
  sbuf *b = d->b;
  sb_printf(b, "\n## Stage breakdown of the arkcos cases\n\n");
  sb_printf(b, "Seconds per stage as recorded in each results file, and the "
               "shares of their sum in the groups of the paper's Table 1: FFTs = map_fft + "
               "kernel_fft + map_ifft; others = h2d + d2h + other.\n\n");
  if ((d->cs->charts & 4) && d->cs->ok) sb_printf(b, "![stage shares](stage_shares.png)\n\n");
  if (!(d->cs->charts & 4)) {
    sb_printf(b, "_No shared arkcos case recorded stage times._\n");
    return;
  }
  sb_printf(b, "| case | machine |");
  for (int k = 0; k < NSTAGES; k++) sb_printf(b, " %s |", stage_names[k]);
  sb_printf(b, " sum |");
  for (int g = 0; g < 4; g++) sb_printf(b, " %s |", group_names[g]);
  sb_printf(b, "\n|---|---|");
  for (int k = 0; k < NSTAGES + 5; k++) sb_printf(b, "---:|");
  sb_printf(b, "\n");
  for (size_t i = 0; i < md->nuc; i++) {
    const ucase *u = &md->uc[i];
    if (u->in_all && !strcmp(u->rep->method, "arkcos")) stage_table_rows(md, b, u);
  }
  if (d->paper) stage_table_paper_rows(md, b);
}

static void md_rest(const doc *d) {
  const model *md = d->md;
  sbuf *b = d->b;
  if (!d->nrest) return;
  sb_printf(b, "\n## Cases not in every file\n\n");
  sb_printf(b, "Median time where the file has the case, — where it does not.\n\n");
  case_table_head(md, b, 0);
  for (size_t i = 0; i < md->nuc; i++) {
    const ucase *u = &md->uc[i];
    if (u->in_all) continue;
    time_row(md, b, u);
    sb_printf(b, "\n");
  }
}

static void md_notes(const doc *d) {
  const model *md = d->md;
  sbuf *b = d->b;
  json_t *src = d->paper ? json_object_get(md->published, "source") : NULL;
  sb_printf(b, "\n## Notes\n\n");
  if (d->paper) {
    sb_printf(b, "- Published figures: `%s`", md->published_path);
    if (json_is_string(json_object_get(src, "authors")))
      sb_printf(b, " (%s, %s)", json_string_value(json_object_get(src, "authors")),
                json_is_string(json_object_get(src, "reference"))
                    ? json_string_value(json_object_get(src, "reference"))
                    : "");
    sb_printf(b, ". A published time is shown where nside, the Gaussian FWHM, the method "
                 "and (where the paper states them) backend and threads match; the paper "
                 "measured on different hardware (see Machines), so compare ratios, not "
                 "seconds.\n");
  } else {
    sb_printf(b, "- Published figures: not included (%s).\n",
              md->published_path ? md->published_path : "--no-published");
  }
  if (d->cs->note[0]) sb_printf(b, "- Charts: %s\n", d->cs->note);
  else if (d->cs->charts) sb_printf(b, "- Charts: drawn by gnuplot from the .dat files and `charts.gp` in this folder.\n");
}

static void write_markdown(const model *md, const chart_set *cs, sbuf *b) {
  doc d = {md, cs, b, md->published != NULL, 0, 0, 0};
  for (size_t i = 0; i < md->nuc; i++) {
    if (md->uc[i].in_all)
      d.nshared++;
    else
      d.nrest++;
    if (md->uc[i].in_all && has_paper_time(md, &md->uc[i])) d.paper_times = 1;
  }
  md_header(&d);
  md_machines(&d);
  md_times(&d);
  md_speedups(&d);
  md_pol(&d);
  md_stages(&d);
  md_rest(&d);
  md_notes(&d);
}

/* ------------------------------------------------------------ the driver */

static void free_model(model *md) {
  for (int f = 0; f < md->nm; f++) results_free(&md->m[f].rf);
  free(md->m);
  free(md->uc);
  json_decref(md->published);
}

static const char *default_published(char *buf, size_t len) {
  struct stat st;
  if (stat("results/paper/published.json", &st) == 0) {
    snprintf(buf, len, "results/paper/published.json");
    return buf;
  }
  /* beside the executable: build/arkcos -> ../results/paper/published.json */
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      if ((size_t)snprintf(buf, len, "%s/../results/paper/published.json", exe) < len &&
          stat(buf, &st) == 0)
        return buf;
    }
  }
  return NULL;
}

static int out_of_memory(void) {
  fprintf(stderr, "arkcos report: out of memory\n");
  return 1;
}

/* Loads the results files, one machine each (M1, M2, ...). */
static int load_machines(model *md, const report_hw_opts *o) {
  arkcos_error err = {0, ""};
  md->m = calloc((size_t)o->nfiles, sizeof *md->m);
  if (!md->m) return out_of_memory();
  for (int f = 0; f < o->nfiles; f++) {
    if (results_load(o->files[f], &md->m[f].rf, &err)) return report_error(&err);
    md->nm = f + 1;
    if (md->m[f].rf.ncases == 0) {
      fprintf(stderr, "arkcos report: %s: cases: empty (nothing to report; no report written)\n",
              o->files[f]);
      return 2;
    }
    snprintf(md->m[f].label, sizeof md->m[f].label, "M%d", f + 1);
    char host[128];
    plain_title(host, sizeof host, results_meta_str(&md->m[f].rf, "host"));
    snprintf(md->m[f].title, sizeof md->m[f].title, "M%d %s", f + 1, host);
  }
  return 0;
}

/* Loads the paper's published figures: an error when they were asked for by
 * name, a warning when the default file cannot be read. */
static int load_published(model *md, const report_hw_opts *o, char *pubbuf, size_t len) {
  if (o->no_published) return 0;
  const char *pp = o->published ? o->published : default_published(pubbuf, len);
  md->published_path = pp;
  if (!pp) {
    md->published_path = "results/paper/published.json not found";
    return 0;
  }
  json_error_t jerr;
  md->published = json_load_file(pp, 0, &jerr);
  if (!md->published) {
    if (o->published) {
      fprintf(stderr, "arkcos report: %s:%d:%d: %s\n", pp, jerr.line, jerr.column, jerr.text);
      return 2;
    }
    fprintf(stderr, "arkcos report: warning: %s: %s; the paper's column is left out\n",
            pp, jerr.text);
  } else if (!json_is_array(json_object_get(md->published, "claims"))) {
    fprintf(stderr, "arkcos report: %s: claims: missing or not an array\n", pp);
    return 2;
  }
  return 0;
}

/* The union of the cases, in order of first appearance. */
static int collect_cases(model *md) {
  size_t total = 0;
  for (int f = 0; f < md->nm; f++) total += md->m[f].rf.ncases;
  md->uc = calloc(total + 1, sizeof *md->uc);
  if (!md->uc) return out_of_memory();
  for (int f = 0; f < md->nm; f++) {
    const results_file *rf = &md->m[f].rf;
    for (size_t i = 0; i < rf->ncases; i++) {
      const results_case *c = &rf->cases[i];
      size_t u = 0;
      while (u < md->nuc && !results_same_case(md->uc[u].rep, c)) u++;
      if (u == md->nuc) {
        md->nuc++;
        for (int k = 0; k < MAX_FILES; k++) md->uc[u].idx[k] = -1;
        md->uc[u].rep = c;
      }
      if (md->uc[u].idx[f] < 0) md->uc[u].idx[f] = (long)i;
    }
  }
  return 0;
}

/* Marks and labels the cases; returns how many are in every file. */
static int mark_shared(model *md) {
  int num = 0;
  for (size_t u = 0; u < md->nuc; u++) {
    md->uc[u].in_all = 1;
    for (int f = 0; f < md->nm; f++)
      if (md->uc[u].idx[f] < 0) md->uc[u].in_all = 0;
    report_case_label(md->uc[u].rep->obj, md->uc[u].label, sizeof md->uc[u].label);
    if (md->uc[u].in_all) ++num;
  }
  if (md->nm > 1 && num == 0)
    fprintf(stderr, "arkcos report: warning: the files have no case in common; "
                    "every case is listed separately\n");
  return num;
}

/* Creates OUTDIR and refuses to overwrite its report.md without --force. */
static int prepare_outdir(const char *outdir, int force, char *report_path, size_t len) {
  if (report_mkdirs(outdir)) {
    fprintf(stderr, "arkcos report: %s: cannot create folder: %s\n", outdir, strerror(errno));
    return 1;
  }
  if ((size_t)snprintf(report_path, len, "%s/report.md", outdir) >= len) {
    fprintf(stderr, "arkcos report: %s: path too long\n", outdir);
    return 2;
  }
  struct stat st;
  if (!force && stat(report_path, &st) == 0) {
    fprintf(stderr, "arkcos report: %s exists (use --force to overwrite)\n", report_path);
    return 2;
  }
  return 0;
}

/* Runs gnuplot and moves the PNGs it drew into place; cs->ok and cs->note
 * say how it went. */
static void draw_pngs(const char *outdir, chart_set *cs) {
  static const char *const pngs[] = {"time_per_case.png", "speedup.png", "stage_shares.png"};
  int rc = run_gnuplot(outdir);
  cs->ok = rc == 0;
  for (int k = 0; k < 3; k++) {
    if (!(cs->charts & (1 << k))) continue;
    char tmp[4200], fin[4200];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", outdir, pngs[k]);
    snprintf(fin, sizeof fin, "%s/%s", outdir, pngs[k]);
    if (cs->ok && rename(tmp, fin) != 0) cs->ok = 0;
    if (!cs->ok) unlink(tmp);
  }
  if (rc == 127)
    snprintf(cs->note, sizeof cs->note, "not drawn: gnuplot is not installed "
                                        "(the .dat files and charts.gp are here)");
  else if (!cs->ok)
    snprintf(cs->note, sizeof cs->note, "not drawn: gnuplot failed, see charts.log");
  if (!cs->ok) fprintf(stderr, "arkcos report: warning: charts %s\n", cs->note);
}

/* Writes the chart data and script into OUTDIR and draws them. */
static int write_charts(const model *md, const char *outdir, chart_set *cs) {
  arkcos_error err = {0, ""};
  build_charts(md, cs);
  if (cs->gp.oom || cs->time.oom || cs->speed.oom || cs->stage.oom) return out_of_memory();
  if (!cs->charts) return 0;
  if (write_in_dir(outdir, "time_per_case.dat", cs->time.s, &err) ||
      write_in_dir(outdir, "speedup.dat", cs->speed.s, &err) ||
      write_in_dir(outdir, "stage_shares.dat", cs->stage.s, &err) ||
      write_in_dir(outdir, "charts.gp", cs->gp.s, &err))
    return report_error(&err);
  draw_pngs(outdir, cs);
  return 0;
}

static int write_report(const model *md, const chart_set *cs, const char *report_path,
                        int num) {
  arkcos_error err = {0, ""};
  sbuf text = {0};
  int status = 0;
  write_markdown(md, cs, &text);
  if (text.oom) {
    status = out_of_memory();
  } else if (atomic_write_text(report_path, text.s, &err)) {
    status = report_error(&err);
  } else {
    printf("arkcos report: wrote %s (%d machine%s, %d shared case%s, %zu other%s%s)\n",
           report_path, md->nm, md->nm == 1 ? "" : "s", num, num == 1 ? "" : "s",
           md->nuc - (size_t)num, md->nuc - (size_t)num == 1 ? "" : "s",
           cs->ok ? ", charts" : "");
  }
  free(text.s);
  return status;
}

int report_hw(const report_hw_opts *o) {
  model md = {0};
  md.fsht = o->fsht;
  chart_set cs = {0};
  char pubbuf[4096], report_path[4096];
  int num = 0;
  int status = load_machines(&md, o);
  if (!status) status = load_published(&md, o, pubbuf, sizeof pubbuf);
  if (!status) status = collect_cases(&md);
  if (!status) num = mark_shared(&md);
  if (!status) status = prepare_outdir(o->outdir, o->force, report_path, sizeof report_path);
  if (!status) status = write_charts(&md, o->outdir, &cs);
  if (!status) status = write_report(&md, &cs, report_path, num);
  free(cs.gp.s);
  free(cs.time.s);
  free(cs.speed.s);
  free(cs.stage.s);
  free_model(&md);
  return status;
}
