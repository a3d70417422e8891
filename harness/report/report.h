/* report.h -- the three reports of `arkcos report` (cmd_report.c parses the
 * command line). Each returns the process exit status. */
#ifndef ARKCOS_HARNESS_REPORT_H
#define ARKCOS_HARNESS_REPORT_H

/* The hardware comparison: DIR/report.md and charts (report_hw.c). */
typedef struct {
  const char **files;
  int nfiles;
  const char *outdir;
  const char *published; /* NULL: the default, if present */
  int no_published, force;
  const char *fsht;      /* the FSHT selector of the speed-ups */
} report_hw_opts;
int report_hw(const report_hw_opts *o);

/* The data files and <fig>.vars.gp that plots/<fig>.gp read, into
 * PLOTS_DIR/data (report_figdata.c). */
int report_figures(const char *results_dir, const char *plots_dir);

/* RESULTS_DIR/REPORT.md: the paper's claims against the run, the figures of
 * PLOTS_DIR, the machine and skipped cases (report_paper.c). */
int report_paper(const char *results_dir, const char *plots_dir, const char *published,
                 const char *profile);

#endif
