/* report_sweeps.h -- the results folder of `make reproduce` as the figure
 * data and REPORT.md read it: results/<profile>/<sweep>/results.json for the
 * sweeps below (the figures' and the whole-sphere accuracy sweep `exact`),
 * and what the Fig. 2 sweep yields (speed-ups, Table 1). */
#ifndef ARKCOS_HARNESS_REPORT_SWEEPS_H
#define ARKCOS_HARNESS_REPORT_SWEEPS_H

#include <jansson.h>

enum { SW_FIG2, SW_FIG2FSHT, SW_FIG4, SW_FIG5, SW_FIG6, SW_HEADLINE, SW_EXACT, SW_COUNT };
extern const char *const sweep_names[SW_COUNT];

typedef struct {
  const char *dir;        /* RESULTS_DIR */
  json_t *doc[SW_COUNT];  /* NULL where missing or unreadable */
} sweeps;

void sweeps_load(sweeps *s, const char *results_dir);
void sweeps_free(sweeps *s);

/* The cases array of a document (empty when doc is NULL). */
size_t sweep_ncases(json_t *doc);
json_t *sweep_case(json_t *doc, size_t i);
/* First ok case of doc that pred accepts, or NULL. */
json_t *sweep_find(json_t *doc, int (*pred)(json_t *c));
int is_ark_enhanced(json_t *c);
int is_ark_paper(json_t *c);
int is_fsht(json_t *c);
int is_direct(json_t *c);

/* One ARKCoS case of the Fig. 2 sweep against the FSHT case (fig2fsht) of
 * the same nside and threads: FSHT's cost does not depend on the kernel. */
typedef struct {
  char backend[16];
  int iter;
  double support;
  long long threads, nside;
  double t_ark, t_fsht, speedup;
} fig2_point;

/* Every such point, grouped by (backend, iter, support, threads) in order of
 * first appearance, sorted by nside within a group. Caller frees. */
fig2_point *fig2_points(const sweeps *s, size_t *n);

/* The sorted distinct threads_used of the ok FSHT cases of sweep `only`
 * (or of both Fig. 2 sweeps when only < 0), "/"-joined into buf. Returns
 * their count; *one says whether they are exactly [1]. */
int fsht_threads(const sweeps *s, int only, char *buf, size_t len, int *one);

/* Table 1: the arkcos cases of the Fig. 2 sweep with stage times at the
 * largest nside <= 2048, per backend ("cpu", "gpu") and support, the case
 * with the most threads used. */
#define T1_MAX 16
typedef struct {
  long long nside; /* 0: none */
  int n;
  struct { const char *backend; double support; json_t *c; } e[T1_MAX];
} table1_sel;
void table1_select(json_t *fig2, table1_sel *t);
json_t *table1_case(const table1_sel *t, const char *backend, double support);
int table1_has_backend(const table1_sel *t, const char *backend);

#endif
