/* report_paper.c -- `arkcos report --paper`: RESULTS_DIR/REPORT.md, the
 * reproduction of the paper against its published numbers: the machine, the
 * claims table (report_claims.c), the whole-sphere accuracy against the
 * direct sum (report_exact.c), the figures drawn into PLOTS_DIR, skipped
 * cases and the profile's sweeps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/report/report.h"
#include "harness/report/report_paper.h"
#include "harness/common/util.h"

static json_t *machine_meta(const paper_ctx *p) {
  for (int k = 0; k < SW_COUNT; k++)
    if (json_object_get(p->sw.doc[k], "meta")) return json_object_get(p->sw.doc[k], "meta");
  return NULL;
}

/* An integer or string member as text, "?" when absent. */
static const char *anystr(json_t *o, const char *key, char *buf, size_t len) {
  json_t *v = json_object_get(o, key);
  if (json_is_integer(v)) snprintf(buf, len, "%lld", (long long)json_integer_value(v));
  else snprintf(buf, len, "%s", json_is_string(v) ? json_string_value(v) : "?");
  return buf;
}

static void write_machine(sbuf *b, json_t *m) {
  char c1[32], c2[32];
  json_t *ver = json_object_get(m, "versions"), *gpus = json_object_get(m, "gpus");
  sb_printf(b, "## Machine\n\n");
  sb_printf(b, "- host `%s`: %s, %s cores usable (%s online), %.1f GiB memory\n", jstr(m, "host", "?"),
            jstr(m, "cpu_model", "?"), anystr(m, "cores", c1, 32), anystr(m, "cores_online", c2, 32),
            jnum(m, "memory_bytes", 0) / 1073741824.0);
  sb_printf(b, "- %s; %s; %s\n", jstr(m, "os", "?"), jstr(m, "compiler", "?"), jstr(m, "cflags", "?"));
  sb_printf(b, "- FFTW %s, libsharp %s, CFITSIO %s, jansson %s, CUDA runtime %s\n",
            jstr(ver, "fftw", "?"), jstr(ver, "libsharp", "?"), jstr(ver, "cfitsio", "?"),
            jstr(ver, "jansson", "?"), jstr(ver, "cuda_runtime", "?"));
  sb_printf(b, "- GPU: ");
  for (size_t i = 0; i < json_array_size(gpus); i++) {
    json_t *g = json_array_get(gpus, i);
    sb_printf(b, "%s%s (%lld SMs, %.0f GiB)", i ? ", " : "", jstr(g, "name", "None"),
              jint(g, "sm_count", 0), jnum(g, "memory_bytes", 0) / 1073741824.0);
  }
  sb_printf(b, "%s\n", json_array_size(gpus) ? "" : "none");
  sb_printf(b, "- arkcos %s, built from commit %.12s%s, run %s\n\n", jstr(ver, "arkcos", "?"),
            jstr(m, "git_commit", "?"), json_is_true(json_object_get(m, "git_dirty")) ? " (with local changes)" : "",
            jstr(m, "date", "?"));
}

/* RESULTS_DIR/walltimes.txt: "<step> <seconds>" lines, sweeps first. */
static void write_walls(sbuf *b, const char *results, const char *profile) {
  char path[4200], key[64][64];
  double val[64], sum = 0;
  int n = 0;
  snprintf(path, sizeof path, "%s/walltimes.txt", results);
  FILE *f = fopen(path, "r");
  while (f && n < 64 && fscanf(f, "%63s %lf", key[n], &val[n]) == 2) sum += val[n++];
  if (f) fclose(f);
  if (!n) return;
  sb_printf(b, "Wall time of `reproduce.sh %s` (each sweep's last run that ran cases, plus drawing): %s (",
            profile, fmt_t(sum, (char[32]){0}, 32));
  const char *names[SW_COUNT + 1];
  for (int k = 0; k < SW_COUNT; k++) names[k] = sweep_names[k];
  names[SW_COUNT] = "figures";
  int first = 1;
  for (int k = 0; k <= SW_COUNT + 1; k++) /* the sweeps and figures in order, then the rest */
    for (int i = 0; i < n; i++) {
      int j = 0;
      while (j <= SW_COUNT && strcmp(key[i], names[j])) j++;
      if (j != k && !(k == SW_COUNT + 1 && j > SW_COUNT)) continue;
      sb_printf(b, "%s%s %s", first ? "" : ", ", key[i], fmt_t(val[i], (char[32]){0}, 32));
      first = 0;
    }
  sb_printf(b, ").\n\n");
}

static void write_claims(sbuf *b, paper_ctx *p) {
  claims_time(p);
  claims_table1(p);
  claims_accuracy(p);
  claims_speedup(p);
  claims_ringing(p);
  sb_printf(b, "## Published claims against this run\n\n| claim | paper | here | verdict |\n"
               "| --- | --- | --- | --- |\n%s\n", p->rows.s ? p->rows.s : "");
  sb_printf(b, "Time claims compare different hardware (the paper: Core2 Quad 2.8 GHz and a GTX 480) "
               "and a different FSHT library (libsharp here, HEALPix 2.15 and libpsht there). "
               "\"Support\" is the kernel's diameter, 2 × cutoff radius, as in the paper's Fig. 2 "
               "and Table 1. Ringing is the largest |value| beyond the kernel's cutoff, relative to "
               "the peak, around each point source (0 for the exact discrete convolution).\n\n");
}

static const struct { const char *fig, *caption; } captions[] = {
    {"fig2", "Fig. 2. Left: run time against nside. Right: speed-up of ARKCoS over libsharp FSHT "
             "smoothing (forward and inverse transform with 0 or 3 Jacobi iterations, lmax = 2 "
             "nside), same machine, same threads, for kernel supports (diameter = 2 × cutoff) of "
             "1°, 4° and 16°."},
    {"table1", "Table 1. Share of the ARKCoS run time per stage (FFTs = map_fft + kernel_fft + "
               "map_ifft; others include host-device transfers) for supports 1°, 4°, 16°, beside "
               "the paper's GPU shares at nside 2048."},
    {"fig3", "Fig. 3. The 6' and 1° FWHM Gaussians used in the accuracy tests, truncated where "
             "they fall to 1e-8 of their peak (vertical lines), and their Legendre coefficients K_l."},
    {"fig4", "Fig. 4. ARKCoS minus FSHT smoothing (iter 3), 1° FWHM Gaussian, relative to the RMS "
             "of the FSHT map; 10° patches at the north pole and on the equator, enhanced (top) and "
             "paper (bottom) mode."},
    {"fig5", "Fig. 5. Narrow Gaussian (the paper's 6' at nside 2048, scaled with nside): left, the "
             "spectrum of the smoothed map minus the exact spectrum; right, the spectrum of the "
             "difference map; exact spectrum dashed; l(l+1)C_l/2π. The exact map is alm2map(K_l "
             "a_lm) of the same a_lm, so the error includes the HEALPix quadrature of the spectrum "
             "estimate."},
    {"fig6", "Fig. 6. Point sources, four in the north polar cap (upper row) and four in the belt "
             "(lower row), 13° patch centred on the cap's edge: log10 |value| / max for FSHT, "
             "ARKCoS paper mode and ARKCoS enhanced mode."},
    {"narrow", "Narrow beams (docs/NARROW_BEAMS.md). A Gaussian cut at 1e-5 summed on the pixels "
               "(ARKCoS, equal to the direct sum) against libsharp smoothing (lmax = 3 nside - 1, "
               "iter 3, as healpy.smoothing) of a white random map (l <= 2 nside): rms of the "
               "difference over rms of libsharp's map against pixels per FWHM (FWHM over the pixel "
               "size sqrt(4π/npix)), without (solid) and with --normalize (dashed); dotted, libsharp "
               "against the exact field alm2map(K_l a_lm). `arkcos smooth` refuses a kernel below 1 "
               "pixel per FWHM and warns below 2.5. Measured by tools/narrow_beams; the numbers "
               "follow."},
};

/* The table of tools/narrow_beams that plots/narrow.gp draws, as measured
 * (scripts/reproduce.sh writes it to <results>/narrow/narrow_beams.md). */
static void write_narrow_table(sbuf *b, const char *results) {
  char path[4300];
  snprintf(path, sizeof path, "%s/narrow/narrow_beams.md", results);
  FILE *f = fopen(path, "r");
  if (!f) {
    sb_printf(b, "No narrow-beam measurement (`narrow/narrow_beams.md`) in this folder.\n\n");
    return;
  }
  char line[1024];
  sb_printf(b, "Errors relative to the rms of the reference; \"vs exact\": against alm2map(K_l a_lm); "
               "\"constant\": a smoothed map of 1 without --normalize (exactly 1 with it).\n\n");
  while (fgets(line, sizeof line, f)) sb_printf(b, "%s", line);
  sb_printf(b, "\n");
  fclose(f);
}

static void write_figures(sbuf *b, const char *results, const char *plots) {
  sb_printf(b, "## Figures\n\n");
  for (size_t k = 0; k < sizeof captions / sizeof captions[0]; k++) {
    char png[4300], pdf[4300], rpng[4300], rpdf[4300];
    snprintf(png, sizeof png, "%s/%s.png", plots, captions[k].fig);
    snprintf(pdf, sizeof pdf, "%s/%s.pdf", plots, captions[k].fig);
    sb_printf(b, "### %s\n\n", captions[k].fig);
    if (access(png, F_OK) == 0)
      sb_printf(b, "![%s](%s)\n\n%s ([PDF](%s))\n\n", captions[k].fig,
                report_relpath(png, results, rpng, sizeof rpng), captions[k].caption,
                report_relpath(pdf, results, rpdf, sizeof rpdf));
    else
      sb_printf(b, "%s — **not rendered**\n\n", captions[k].caption);
    if (!strcmp(captions[k].fig, "narrow")) write_narrow_table(b, results);
  }
}

/* Skipped and failed cases grouped by (status, reason), sorted. */
typedef struct { const char *status, *reason; int sweep; json_t *c; } skip_entry;

static int cmp_skip(const void *pa, const void *pb) {
  const skip_entry *a = pa, *b = pb;
  int c = strcmp(a->status, b->status);
  return c ? c : strcmp(a->reason, b->reason);
}

static size_t collect_skipped(const paper_ctx *p, skip_entry **out) {
  size_t n = 0, cap = 1;
  for (int k = 0; k < SW_COUNT; k++) cap += sweep_ncases(p->sw.doc[k]);
  skip_entry *e = calloc(cap, sizeof *e);
  for (int k = 0; k < SW_COUNT && e; k++)
    for (size_t i = 0; i < sweep_ncases(p->sw.doc[k]); i++) {
      json_t *c = sweep_case(p->sw.doc[k], i);
      if (case_is(c, "skipped") || case_is(c, "failed"))
        e[n++] = (skip_entry){jstr(c, "status", ""), jstr(c, "reason", "?"), k, c};
    }
  /* stable: insertion sort keeps the order of appearance within a group */
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && cmp_skip(&e[j], &e[j - 1]) < 0; j--) {
      skip_entry t = e[j];
      e[j] = e[j - 1];
      e[j - 1] = t;
    }
  *out = e;
  return n;
}

static void write_skipped(sbuf *b, const paper_ctx *p) {
  skip_entry *e = NULL;
  size_t n = collect_skipped(p, &e);
  sb_printf(b, "## Skipped and failed cases\n\n");
  if (!n) sb_printf(b, "None.\n");
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && !cmp_skip(&e[i], &e[j])) j++;
    sb_printf(b, "- %zu case%s %s: %s\n", j - i, j - i == 1 ? "" : "s", e[i].status, e[i].reason);
    for (size_t k = i; k < j && k < i + 4; k++) {
      char lab[1024];
      sb_printf(b, "  - `%s: %s`\n", sweep_names[e[k].sweep], report_case_label(e[k].c, lab, sizeof lab));
    }
    if (j - i > 4) sb_printf(b, "  - … and %zu more\n", j - i - 4);
    i = j;
  }
  free(e);
  int nmiss = 0;
  for (int k = 0; k < SW_COUNT; k++)
    if (!p->sw.doc[k]) sb_printf(b, "%s%s", nmiss++ ? ", " : "- not run or no results: ", sweep_names[k]);
  sb_printf(b, "%s\n", nmiss ? "\n" : "");
}

static void write_profile(sbuf *b, const paper_ctx *p, const char *profile) {
  sb_printf(b, "## Profile `%s`\n\n", profile);
  for (int k = 0; k < SW_COUNT; k++) {
    json_t *meta = json_object_get(p->sw.doc[k], "meta");
    if (!p->sw.doc[k]) continue;
    const char *cp = jstr(meta, "config_path", "?");
    char rel[4300];
    if (cp[0] == '/') cp = report_relpath(cp, ".", rel, sizeof rel);
    sb_printf(b, "- **%s** (`%s`): %s\n", sweep_names[k], cp,
              jstr(json_object_get(meta, "config"), "description", ""));
  }
}

int report_paper(const char *results, const char *plots, const char *published,
                 const char *profile) {
  paper_ctx p;
  memset(&p, 0, sizeof p);
  json_error_t jerr;
  p.pub = json_load_file(published, 0, &jerr);
  p.claims = json_object_get(p.pub, "claims");
  if (!json_is_array(p.claims)) {
    fprintf(stderr, "arkcos report: %s: %s\n", published, p.pub ? "claims: missing or not an array" : jerr.text);
    json_decref(p.pub);
    return 2;
  }
  sweeps_load(&p.sw, results);
  sbuf b = {0};
  char rel[4300];
  sb_printf(&b, "# ARKCoS bench: reproduction of Elsner & Wandelt (2011), profile `%s`\n\n", profile);
  sb_printf(&b, "Generated by `scripts/reproduce.sh %s` from the `arkcos run` results in this folder; "
                "the paper's numbers come from `%s`.\n\n", profile, report_relpath(published, ".", rel, sizeof rel));
  write_machine(&b, machine_meta(&p));
  write_walls(&b, results, profile);
  write_claims(&b, &p);
  report_exact(&b, &p, profile);
  write_figures(&b, results, plots);
  write_skipped(&b, &p);
  write_profile(&b, &p, profile);
  arkcos_error err = {0, ""};
  int status = report_write(results, "REPORT.md", &b, &err) ? report_error(&err) : 0;
  if (!status) printf("arkcos report: wrote %s/REPORT.md\n", results);
  free(b.s);
  free(p.rows.s);
  sweeps_free(&p.sw);
  json_decref(p.pub);
  return status;
}
