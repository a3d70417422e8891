/* report_sweeps.c -- the sweeps of `make reproduce` and what the Fig. 2
 * sweep yields (speed-ups over FSHT, Table 1 selection). */
#include "harness/report/report_sweeps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/report/report_common.h"

const char *const sweep_names[SW_COUNT] = {"fig2", "fig2fsht", "fig4", "fig5", "fig6",
                                           "headline", "exact"};

void sweeps_load(sweeps *s, const char *results_dir) {
  s->dir = results_dir;
  for (int k = 0; k < SW_COUNT; k++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/results.json", results_dir, sweep_names[k]);
    s->doc[k] = json_load_file(path, 0, NULL);
    if (s->doc[k] && !json_is_object(s->doc[k])) {
      json_decref(s->doc[k]);
      s->doc[k] = NULL;
    }
  }
}

void sweeps_free(sweeps *s) {
  for (int k = 0; k < SW_COUNT; k++) json_decref(s->doc[k]);
}

size_t sweep_ncases(json_t *doc) { return json_array_size(json_object_get(doc, "cases")); }

json_t *sweep_case(json_t *doc, size_t i) {
  return json_array_get(json_object_get(doc, "cases"), i);
}

json_t *sweep_find(json_t *doc, int (*pred)(json_t *c)) {
  for (size_t i = 0; i < sweep_ncases(doc); i++) {
    json_t *c = sweep_case(doc, i);
    if (case_is(c, "ok") && pred(c)) return c;
  }
  return NULL;
}

static int is_ark_mode(json_t *c, const char *mode) {
  return !strcmp(case_method(c), "arkcos") &&
         !strcmp(jstr(json_object_get(c, "method"), "mode", ""), mode);
}
int is_ark_enhanced(json_t *c) { return is_ark_mode(c, "enhanced"); }
int is_ark_paper(json_t *c) { return is_ark_mode(c, "paper"); }
int is_fsht(json_t *c) { return !strcmp(case_method(c), "fsht"); }
int is_direct(json_t *c) { return !strcmp(case_method(c), "direct"); }

static long long fsht_iter(json_t *c) { return jint(json_object_get(c, "method"), "iter", 3); }

/* The FSHT time of (nside, threads, iter) in either sweep (the last such
 * case wins), NAN when there is none. */
static double fsht_time(const sweeps *s, long long nside, long long threads, int iter) {
  double t = NAN;
  for (int d = SW_FIG2; d <= SW_FIG2FSHT; d++)
    for (size_t i = 0; i < sweep_ncases(s->doc[d]); i++) {
      json_t *c = sweep_case(s->doc[d], i);
      if (case_is(c, "ok") && is_fsht(c) && jint(c, "nside", 0) == nside &&
          jint(c, "threads", 0) == threads && fsht_iter(c) == iter)
        t = case_tmed(c);
    }
  return t;
}

static int same_group(const fig2_point *a, const fig2_point *b) {
  return !strcmp(a->backend, b->backend) && a->iter == b->iter && a->support == b->support &&
         a->threads == b->threads;
}

static int cmp_in_group(const void *pa, const void *pb) {
  const fig2_point *a = pa, *b = pb;
  if (a->nside != b->nside) return a->nside < b->nside ? -1 : 1;
  if (a->t_ark != b->t_ark) return a->t_ark < b->t_ark ? -1 : 1;
  return (a->t_fsht > b->t_fsht) - (a->t_fsht < b->t_fsht);
}

/* Reorders pts so that groups are contiguous in order of first appearance,
 * each sorted by nside. */
static void group_points(fig2_point *pts, size_t n) {
  size_t done = 0;
  while (done < n) {
    size_t end = done + 1;
    for (size_t i = end; i < n; i++)
      if (same_group(&pts[i], &pts[done])) {
        fig2_point t = pts[i];
        memmove(&pts[end + 1], &pts[end], (i - end) * sizeof *pts);
        pts[end++] = t;
      }
    qsort(&pts[done], end - done, sizeof *pts, cmp_in_group);
    done = end;
  }
}

fig2_point *fig2_points(const sweeps *s, size_t *n) {
  *n = 0;
  size_t cap = 2 * (sweep_ncases(s->doc[SW_FIG2]) + sweep_ncases(s->doc[SW_FIG2FSHT])) + 1;
  fig2_point *pts = calloc(cap, sizeof *pts);
  if (!pts) return NULL;
  for (int d = SW_FIG2; d <= SW_FIG2FSHT; d++)
    for (size_t i = 0; i < sweep_ncases(s->doc[d]); i++) {
      json_t *c = sweep_case(s->doc[d], i);
      if (!case_is(c, "ok") || strcmp(case_method(c), "arkcos")) continue;
      for (int it = 0; it <= 3; it += 3) {
        fig2_point p = {"", it, case_support(c), jint(c, "threads", 0), jint(c, "nside", 0),
                        case_tmed(c), 0, 0};
        p.t_fsht = fsht_time(s, p.nside, p.threads, it);
        if (isnan(p.t_fsht)) continue;
        snprintf(p.backend, sizeof p.backend, "%s", case_backend(c));
        p.speedup = p.t_fsht / p.t_ark;
        pts[(*n)++] = p;
      }
    }
  group_points(pts, *n);
  return pts;
}

/* The sorted distinct threads_used of the ok FSHT cases of a sweep (or of
 * both Fig. 2 sweeps when doc is NULL); "/"-joined into buf. Returns the
 * count; *one says whether they are exactly [1]. */
int fsht_threads(const sweeps *s, int only, char *buf, size_t len, int *one) {
  long long t[64];
  int n = 0;
  for (int d = SW_FIG2; d <= SW_FIG2FSHT; d++) {
    if (only >= 0 && d != only) continue;
    for (size_t i = 0; i < sweep_ncases(s->doc[d]); i++) {
      json_t *c = sweep_case(s->doc[d], i);
      if (!case_is(c, "ok") || !is_fsht(c)) continue;
      long long v = jint(c, "threads_used", 0);
      int k = 0;
      while (k < n && t[k] != v) k++;
      if (k == n && n < 64) t[n++] = v;
    }
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      long long v = t[j];
      t[j] = t[j - 1];
      t[j - 1] = v;
    }
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? "/" : "", t[i]);
  *one = n == 1 && t[0] == 1;
  return n;
}

/* ----------------------------------------------------------- Table 1 */

#define TABLE1_NSIDE_MAX 2048 /* the paper's Table 1 is at nside 2048 */

static int t1_candidate(json_t *c) {
  json_t *st = json_object_get(c, "stages");
  return case_is(c, "ok") && !strcmp(case_method(c), "arkcos") && json_is_object(st) &&
         json_object_size(st) > 0;
}

static long long t1_nside(json_t *fig2) {
  long long best = 0, best_any = 0;
  for (size_t i = 0; i < sweep_ncases(fig2); i++) {
    json_t *c = sweep_case(fig2, i);
    if (!t1_candidate(c)) continue;
    long long n = jint(c, "nside", 0);
    if (n > best_any) best_any = n;
    if (n <= TABLE1_NSIDE_MAX && n > best) best = n;
  }
  return best ? best : best_any;
}

void table1_select(json_t *fig2, table1_sel *t) {
  memset(t, 0, sizeof *t);
  t->nside = t1_nside(fig2);
  for (size_t i = 0; i < sweep_ncases(fig2); i++) {
    json_t *c = sweep_case(fig2, i);
    if (!t1_candidate(c) || jint(c, "nside", 0) != t->nside) continue;
    const char *be = case_backend(c);
    double sup = case_support(c);
    int k = 0;
    while (k < t->n && (strcmp(t->e[k].backend, be) || t->e[k].support != sup)) k++;
    if (k == t->n) {
      if (t->n == T1_MAX) continue;
      t->e[t->n].backend = be;
      t->e[t->n].support = sup;
      t->e[t->n++].c = c;
    } else if (jint(c, "threads_used", 0) > jint(t->e[k].c, "threads_used", 0)) {
      t->e[k].c = c; /* keep the case with the most threads */
    }
  }
}

json_t *table1_case(const table1_sel *t, const char *backend, double support) {
  for (int k = 0; k < t->n; k++)
    if (!strcmp(t->e[k].backend, backend) && t->e[k].support == support) return t->e[k].c;
  return NULL;
}

int table1_has_backend(const table1_sel *t, const char *backend) {
  for (int k = 0; k < t->n; k++)
    if (!strcmp(t->e[k].backend, backend)) return 1;
  return 0;
}
