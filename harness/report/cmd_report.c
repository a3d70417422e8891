/* cmd_report.c -- `arkcos report`: the command line of the three reports
 * (report.h): the hardware comparison of results files, the figure data of
 * `make reproduce` and its REPORT.md. */
#include <stdio.h>
#include <string.h>

#include "harness/commands.h"
#include "harness/common/options.h"
#include "harness/report/report.h"

#define MAX_FILES 32

static const char usage_text[] =
    "usage: arkcos report RESULTS.json [RESULTS.json ...] -o DIR [--force]\n"
    "                     [--fsht SELECTOR] [--published FILE | --no-published]\n"
    "       arkcos report --figures RESULTS_DIR PLOTS_DIR\n"
    "       arkcos report --paper RESULTS_DIR PLOTS_DIR PUBLISHED.json PROFILE\n"
    "\n"
    "The first form writes DIR/report.md and PNG charts (gnuplot) comparing\n"
    "results files, one column per file (machine): hardware and library versions\n"
    "from each file's meta, median time per case, speed-up over FSHT measured in\n"
    "the same file (same nside and threads, same kernel preferred), and stage\n"
    "breakdowns of the arkcos cases. Cases present in every file are tabulated\n"
    "side by side; the others are listed separately. Cases are named by their id.\n"
    "\n"
    "  -o DIR            output folder (created if missing)\n"
    "  --force           overwrite an existing DIR/report.md\n"
    "  --fsht SELECTOR   which FSHT case speed-ups refer to: fsht (default: the\n"
    "                    first fsht case) or e.g. fsht:iter=3\n"
    "  --published FILE  the paper's published numbers (default\n"
    "                    results/paper/published.json, if present)\n"
    "  --no-published    leave the paper's column out\n"
    "\n"
    "--figures reads RESULTS_DIR/<sweep>/results.json of `make reproduce` (fig2,\n"
    "fig2fsht, fig4, fig5, fig6, headline; fig3/ kernel profiles) and writes the\n"
    "data files and <fig>.vars.gp that plots/<fig>.gp draw into PLOTS_DIR/data.\n"
    "--paper writes RESULTS_DIR/REPORT.md: the machine, each claim of\n"
    "PUBLISHED.json against the run with a verdict, the figures of PLOTS_DIR,\n"
    "skipped cases and the sweeps of PROFILE.\n"
    "\n"
    "Exit status: 0 written, 2 bad usage or input, 1 output could not be written.\n";

static int usage_error(const char *msg) {
  fprintf(stderr, "arkcos report: %s\n%s", msg, usage_text);
  return 2;
}

static const opt_arg hw_args[] = {{OPT_OUT, "-o"},       {OPT_FORCE, NULL},        {OPT_PUBLISHED, NULL},
                                   {OPT_NO_PUBLISHED, NULL}, {OPT_FSHT_SELECTOR, NULL}};

/* The options of the first form into o (its strings held by vals). */
static int parse_hw(int argc, char **argv, report_hw_opts *o, const char **files, json_t *vals) {
  int rc = opt_parse_argv("arkcos report", argc, argv, hw_args, (int)(sizeof hw_args / sizeof hw_args[0]),
                          vals, files, MAX_FILES + 1, &o->nfiles);
  if (rc) return rc < 0 ? 0 : rc;
  if (o->nfiles > MAX_FILES) {
    fprintf(stderr, "arkcos report: at most %d results files\n", MAX_FILES);
    return 2;
  }
  o->outdir = opt_str(vals, OPT_OUT);
  o->force = opt_bool(vals, OPT_FORCE);
  o->published = opt_str(vals, OPT_PUBLISHED);
  o->no_published = opt_bool(vals, OPT_NO_PUBLISHED);
  o->fsht = opt_str(vals, OPT_FSHT_SELECTOR);
  if (o->fsht[0] == ':') return usage_error("--fsht: expected a method selector, e.g. fsht:iter=3");
  if (!o->nfiles || !o->outdir) return usage_error("expected RESULTS.json... and -o DIR");
  if (o->published && o->no_published)
    return usage_error("--published and --no-published exclude each other");
  return 0;
}

int cmd_report(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(usage_text, stdout);
      return 0;
    }
  if (argc > 1 && !strcmp(argv[1], "--figures")) {
    if (argc != 4) return usage_error("--figures: expected RESULTS_DIR PLOTS_DIR");
    return report_figures(argv[2], argv[3]);
  }
  if (argc > 1 && !strcmp(argv[1], "--paper")) {
    if (argc != 6) return usage_error("--paper: expected RESULTS_DIR PLOTS_DIR PUBLISHED.json PROFILE");
    return report_paper(argv[2], argv[3], argv[4], argv[5]);
  }
  const char *files[MAX_FILES + 1];
  report_hw_opts o = {files, 0, NULL, NULL, 0, 0, "fsht"};
  json_t *vals = json_object();
  int rc = parse_hw(argc, argv, &o, files, vals);
  if (!rc) rc = report_hw(&o);
  json_decref(vals);
  return rc;
}
