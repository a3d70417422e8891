/* stats.c -- descriptive statistics, the Mann-Whitney U test, the regression
 * rule of `arkcos compare`, and the reading of results files. */
#include "harness/common/stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ descriptive */

static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

static double *sorted_copy(const double *x, size_t n) {
  double *s = malloc((n ? n : 1) * sizeof *s);
  if (!s) return NULL;
  memcpy(s, x, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_double);
  return s;
}

double stats_quantile(const double *x, size_t n, double q) {
  if (n == 0) return NAN;
  if (q < 0) q = 0;
  if (q > 1) q = 1;
  double *s = sorted_copy(x, n);
  if (!s) return NAN;
  double h = q * (double)(n - 1);
  size_t lo = (size_t)floor(h);
  size_t hi = lo + 1 < n ? lo + 1 : lo;
  double v = s[lo] + (h - (double)lo) * (s[hi] - s[lo]);
  free(s);
  return v;
}

double stats_median(const double *x, size_t n) {
  return stats_quantile(x, n, 0.5);
}

double stats_min(const double *x, size_t n) {
  if (n == 0) return NAN;
  double m = x[0];
  for (size_t i = 1; i < n; i++)
    if (x[i] < m) m = x[i];
  return m;
}

double stats_max(const double *x, size_t n) {
  if (n == 0) return NAN;
  double m = x[0];
  for (size_t i = 1; i < n; i++)
    if (x[i] > m) m = x[i];
  return m;
}

/* --------------------------------------------------------- Mann-Whitney U */

/* Largest na + nb for the exact distribution: C(50, 25) = 1.26e14 keeps
 * every count an exactly representable double. */
#define EXACT_MAX_TOTAL 50

static double binomial(size_t n, size_t k) {
  if (k > n) return 0;
  if (k > n - k) k = n - k;
  double c = 1;
  for (size_t j = 1; j <= k; j++) c = c * (double)(n - k + j) / (double)j;
  return floor(c + 0.5);
}

double stats_utest_min_p(size_t na, size_t nb) {
  if (na == 0 || nb == 0) return 1;
  double p = 2.0 / binomial(na + nb, na);
  return p > 1 ? 1 : p;
}

/* P(U <= u) under the null hypothesis for sizes (m, n) without ties. The
 * counts of arrangements with each U are the coefficients of the Gaussian
 * binomial [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i);
 * after step i the polynomial is [n+i choose i]_q, whose coefficients are
 * non-negative integers, so the divisions are exact. */
static double utest_exact_cdf(size_t m, size_t n, size_t u) {
  size_t deg = m * n;
  /* (1 - q^(n+i)) raises the degree to i n + i before the division by
   * (1 - q^i) brings it back to i n */
  double *c = calloc(deg + m + 1, sizeof *c);
  if (!c) return NAN;
  c[0] = 1;
  size_t cur = 0; /* degree of the current polynomial */
  for (size_t i = 1; i <= m; i++) {
    size_t mul = n + i;
    size_t nd = cur + mul;
    /* times (1 - q^mul), from the top down */
    for (size_t k = nd; k >= mul; k--) {
      c[k] -= c[k - mul];
      if (k == mul) break;
    }
    /* divided by (1 - q^i): c[k] += c[k - i], from the bottom up */
    for (size_t k = i; k <= nd; k++) c[k] += c[k - i];
    cur = nd - i;
  }
  double below = 0, total = 0;
  for (size_t k = 0; k <= deg; k++) {
    total += c[k];
    if (k <= u) below += c[k];
  }
  free(c);
  return below / total;
}

/* Long on purpose: ranks with ties, then the exact or the normal tail, one formula path. */
int stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb,
                       stats_utest *out) {
  if (na == 0 || nb == 0) return -1;
  size_t n = na + nb;
  struct item {
    double v;
    int from_a;
  } *all = malloc(n * sizeof *all);
  if (!all) return -1;
  for (size_t i = 0; i < na; i++) all[i] = (struct item){a[i], 1};
  for (size_t i = 0; i < nb; i++) all[na + i] = (struct item){b[i], 0};
  /* insertion sort: samples are small (repeats of one benchmark) */
  for (size_t i = 1; i < n; i++) {
    struct item t = all[i];
    size_t j = i;
    while (j > 0 && all[j - 1].v > t.v) {
      all[j] = all[j - 1];
      j--;
    }
    all[j] = t;
  }
  /* average ranks; tie groups for the variance correction */
  double rank_sum_a = 0, tie_term = 0;
  int ties = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && all[j + 1].v == all[i].v) j++;
    double avg = 0.5 * (double)(i + j) + 1.0; /* ranks are 1-based */
    double t = (double)(j - i + 1);
    if (t > 1) {
      ties = 1;
      tie_term += t * t * t - t;
    }
    for (size_t k = i; k <= j; k++)
      if (all[k].from_a) rank_sum_a += avg;
    i = j + 1;
  }
  free(all);

  double u = rank_sum_a - 0.5 * (double)na * (double)(na + 1);
  double mn = (double)na * (double)nb;
  out->u = u;
  if (!ties && n <= EXACT_MAX_TOTAL) {
    double small = u < mn - u ? u : mn - u;
    double p = 2.0 * utest_exact_cdf(na, nb, (size_t)floor(small + 0.5));
    out->p = p > 1 ? 1 : p;
    out->exact = 1;
    return 0;
  }
  double var = mn / 12.0 *
               ((double)n + 1.0 - tie_term / ((double)n * (double)(n - 1)));
  out->exact = 0;
  if (var <= 0) { /* every value equal */
    out->p = 1;
    return 0;
  }
  double z = (fabs(u - 0.5 * mn) - 0.5) / sqrt(var);
  if (z < 0) z = 0;
  double p = erfc(z / sqrt(2.0));
  out->p = p > 1 ? 1 : p;
  return 0;
}

/* ------------------------------------------------------ regression rule */

int stats_judge(const double *base, size_t nbase, const double *cand,
                size_t ncand, const stats_rule_params *prm,
                stats_judgement *out) {
  if (nbase == 0 || ncand == 0) return -1;
  out->base_median = stats_median(base, nbase);
  out->new_median = stats_median(cand, ncand);
  out->change = out->new_median / out->base_median - 1.0;
  out->p = NAN;

  int direction = 0; /* +1 new is slower, -1 faster, 0 no difference */
  if (stats_utest_min_p(nbase, ncand) < prm->alpha) {
    stats_utest t;
    if (stats_mann_whitney(base, nbase, cand, ncand, &t)) return -1;
    out->rule = STATS_RULE_UTEST;
    out->p = t.p;
    out->beyond_noise = t.p < prm->alpha;
    direction = out->change > 0 ? 1 : out->change < 0 ? -1 : 0;
  } else {
    /* Too few repeats for the rank test to ever reject: only ranges that do
     * not overlap at all count as a difference. */
    out->rule = STATS_RULE_RANGE;
    double bmin = stats_min(base, nbase), bmax = stats_max(base, nbase);
    double cmin = stats_min(cand, ncand), cmax = stats_max(cand, ncand);
    direction = cmin > bmax ? 1 : cmax < bmin ? -1 : 0;
    out->beyond_noise = direction != 0;
  }

  double thr = prm->threshold;
  if (out->change > thr)
    out->verdict = out->beyond_noise && direction > 0 ? STATS_REGRESSION
                                                      : STATS_SLOWER_NOISE;
  else if (out->new_median * (1.0 + thr) < out->base_median &&
           out->beyond_noise && direction < 0)
    out->verdict = STATS_FASTER;
  else
    out->verdict = STATS_SAME;
  return 0;
}

const char *stats_verdict_name(stats_verdict v) {
  switch (v) {
  case STATS_FASTER: return "faster";
  case STATS_SLOWER_NOISE: return "slower-noise";
  case STATS_REGRESSION: return "REGRESSION";
  default: return "same";
  }
}

const char *stats_rule_name(stats_rule r) {
  return r == STATS_RULE_UTEST ? "U" : "range";
}

const char *stats_format_seconds(double s, char *buf, size_t len) {
  if (!isfinite(s))
    snprintf(buf, len, "-");
  else if (s == 0)
    snprintf(buf, len, "0");
  else if (s >= 100)
    snprintf(buf, len, "%.1f s", s);
  else if (s >= 1)
    snprintf(buf, len, "%.3f s", s);
  else if (s >= 1e-3)
    snprintf(buf, len, "%.3f ms", s * 1e3);
  else
    snprintf(buf, len, "%.3f us", s * 1e6);
  return buf;
}

/* --------------------------------------------------------- results files */

char *results_canonical_key(json_t *case_obj) {
  json_t *o = json_object();
  if (!o) return NULL;
  static const char *const fields[] = {"nside", "kernel", "method", "threads"};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    json_t *v = json_object_get(case_obj, fields[i]);
    if (v) json_object_set(o, fields[i], v);
  }
  char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
  json_decref(o);
  return s;
}

static int fail_path(arkcos_error *err, const char *file, size_t i,
                     const char *what) {
  return arkcos_fail(err, ARKCOS_EINVAL, "%s: cases[%zu]%s", file, i, what);
}

static int positive_number(json_t *v, double *x) {
  if (!json_is_number(v)) return 0;
  *x = json_number_value(v);
  return isfinite(*x) && *x > 0;
}

/* nside, method, kernel, threads, key and status of case i. */
static int load_case_ids(results_file *rf, size_t i, json_t *obj, arkcos_error *err) {
  results_case *c = &rf->cases[i];
  const char *file = rf->path;
  json_t *nside = json_object_get(obj, "nside");
  if (!json_is_integer(nside) || json_integer_value(nside) < 1)
    return fail_path(err, file, i, ".nside: missing or not an integer >= 1");
  c->nside = json_integer_value(nside);
  c->method_obj = json_object_get(obj, "method");
  json_t *mname = json_object_get(c->method_obj, "name");
  if (!json_is_object(c->method_obj) || !json_is_string(mname))
    return fail_path(err, file, i, ".method.name: missing or not a string");
  c->method = json_string_value(mname);
  c->kernel = json_object_get(obj, "kernel");
  if (c->kernel && !json_is_object(c->kernel))
    return fail_path(err, file, i, ".kernel: not an object");
  json_t *threads = json_object_get(obj, "threads");
  if (threads && !json_is_integer(threads))
    return fail_path(err, file, i, ".threads: not an integer");
  c->threads = threads ? json_integer_value(threads) : 0;
  char *canon = results_canonical_key(obj);
  if (!canon) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  rf->keys[i] = canon;
  c->canon = canon;
  json_t *id = json_object_get(obj, "id");
  if (id && !json_is_string(id))
    return fail_path(err, file, i, ".id: not a string");
  c->key = id ? json_string_value(id) : canon;
  json_t *status = json_object_get(obj, "status");
  if (status && !json_is_string(status))
    return fail_path(err, file, i, ".status: not a string");
  c->status = status ? json_string_value(status) : "ok";
  if (strcmp(c->status, "ok") && strcmp(c->status, "skipped") &&
      strcmp(c->status, "failed"))
    return fail_path(err, file, i, ".status: not ok, skipped or failed");
  json_t *reason = json_object_get(obj, "reason");
  c->reason = json_is_string(reason) ? json_string_value(reason) : NULL;
  return ARKCOS_OK;
}

/* time.min, time.median, time.max (each optional). */
static int load_case_summary(results_file *rf, size_t i, json_t *time, arkcos_error *err) {
  static const char *const keys[3] = {"min", "median", "max"};
  results_case *c = &rf->cases[i];
  double *dst[3] = {&c->tmin, &c->tmedian, &c->tmax};
  for (int q = 0; q < 3; q++) {
    json_t *v = json_object_get(time, keys[q]);
    if (!v || json_is_null(v)) continue;
    if (!positive_number(v, dst[q])) {
      char what[64];
      snprintf(what, sizeof what, ".time.%s: not a positive number", keys[q]);
      *dst[q] = NAN;
      return fail_path(err, rf->path, i, what);
    }
  }
  return ARKCOS_OK;
}

/* time.samples; without them, the summary stands in: the median for the run
 * and [min, max] (when given) still bounds the noise through the range rule. */
static int load_case_samples(results_file *rf, size_t i, json_t *time, arkcos_error *err) {
  results_case *c = &rf->cases[i];
  json_t *samples = json_object_get(time, "samples");
  if (samples && !json_is_null(samples)) {
    if (!json_is_array(samples)) return fail_path(err, rf->path, i, ".time.samples: not an array");
    size_t n = json_array_size(samples);
    c->samples = malloc((n ? n : 1) * sizeof *c->samples);
    if (!c->samples) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
    for (size_t k = 0; k < n; k++) {
      if (!positive_number(json_array_get(samples, k), &c->samples[k])) {
        char what[64];
        snprintf(what, sizeof what, ".time.samples[%zu]: not a positive number", k);
        return fail_path(err, rf->path, i, what);
      }
    }
    c->nsamples = n;
  }
  if (c->nsamples == 0 && isfinite(c->tmedian)) {
    size_t n = 1 + isfinite(c->tmin) + isfinite(c->tmax);
    free(c->samples);
    c->samples = malloc(n * sizeof *c->samples);
    if (!c->samples) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
    c->nsamples = 0;
    if (isfinite(c->tmin)) c->samples[c->nsamples++] = c->tmin;
    c->samples[c->nsamples++] = c->tmedian;
    if (isfinite(c->tmax)) c->samples[c->nsamples++] = c->tmax;
  }
  return ARKCOS_OK;
}

static int load_case(results_file *rf, size_t i, json_t *obj,
                     arkcos_error *err) {
  results_case *c = &rf->cases[i];
  memset(c, 0, sizeof *c);
  c->obj = obj;
  c->tmin = c->tmedian = c->tmax = NAN;
  if (!json_is_object(obj)) return fail_path(err, rf->path, i, ": not an object");
  int rc = load_case_ids(rf, i, obj, err);
  if (rc) return rc;
  json_t *time = json_object_get(obj, "time");
  if (!time || json_is_null(time)) {
    if (!strcmp(c->status, "ok"))
      return fail_path(err, rf->path, i, ".time: missing for a case with status ok");
    return ARKCOS_OK;
  }
  if (!json_is_object(time)) return fail_path(err, rf->path, i, ".time: not an object");
  if ((rc = load_case_summary(rf, i, time, err)) || (rc = load_case_samples(rf, i, time, err)))
    return rc;
  if (!strcmp(c->status, "ok") && c->nsamples == 0)
    return fail_path(err, rf->path, i, ".time: neither samples nor a median for a case with status ok");
  if (c->nsamples) {
    if (!isfinite(c->tmedian)) c->tmedian = stats_median(c->samples, c->nsamples);
    if (!isfinite(c->tmin)) c->tmin = stats_min(c->samples, c->nsamples);
    if (!isfinite(c->tmax)) c->tmax = stats_max(c->samples, c->nsamples);
  }
  return ARKCOS_OK;
}

/* The threads a case ran with: threads_used, else threads. */
static long long case_threads(const results_case *c) {
  json_t *u = json_object_get(c->obj, "threads_used");
  return json_is_integer(u) ? (long long)json_integer_value(u) : c->threads;
}

int results_use_cpu_time(results_file *rf, int single_only, arkcos_error *err) {
  for (size_t i = 0; i < rf->ncases; i++) {
    results_case *c = &rf->cases[i];
    if (strcmp(c->status, "ok")) continue;
    if (single_only && case_threads(c) != 1) continue;
    json_t *cpu = json_object_get(json_object_get(c->obj, "time"), "cpu_samples");
    const size_t n = json_array_size(cpu);
    if (!json_is_array(cpu) || n == 0)
      return fail_path(err, rf->path, i, ".time.cpu_samples: missing (recorded before CPU "
                                         "times were; compare wall-clock times)");
    double *x = malloc(n * sizeof *x);
    if (!x) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
    for (size_t k = 0; k < n; k++)
      if (!positive_number(json_array_get(cpu, k), &x[k])) {
        free(x);
        return fail_path(err, rf->path, i, ".time.cpu_samples: not positive numbers");
      }
    free(c->samples);
    c->samples = x;
    c->nsamples = n;
    c->tmin = stats_min(x, n);
    c->tmedian = stats_median(x, n);
    c->tmax = stats_max(x, n);
  }
  return ARKCOS_OK;
}

int results_has_cpu_time(const results_file *rf, int single_only) {
  size_t n = 0;
  for (size_t i = 0; i < rf->ncases; i++) {
    const results_case *c = &rf->cases[i];
    if (strcmp(c->status, "ok") || (single_only && case_threads(c) != 1)) continue;
    json_t *cpu = json_object_get(json_object_get(c->obj, "time"), "cpu_samples");
    if (!json_is_array(cpu) || json_array_size(cpu) == 0) return 0;
    n++;
  }
  return n > 0;
}

int results_interleaved(const results_file *rf) {
  json_t *cfg = rf->meta ? json_object_get(rf->meta, "config") : NULL;
  return json_is_true(json_object_get(cfg, "interleave"));
}

int results_wait_passive(const results_file *rf) {
  const char *p = results_meta_str(rf, "omp_wait_policy");
  return p && !strcmp(p, "passive");
}

static const results_file *sort_file; /* qsort has no context argument */

static int cmp_case_key(const void *pa, const void *pb) {
  const size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
  int c = strcmp(sort_file->cases[a].key, sort_file->cases[b].key);
  return c ? c : (a > b) - (a < b);
}

/* A case recorded twice would be judged (and counted) twice: refused,
 * naming both entries. Sorted, so that large files stay fast. */
static int check_unique_cases(const results_file *rf, arkcos_error *err) {
  if (rf->ncases < 2) return ARKCOS_OK;
  size_t *order = malloc(rf->ncases * sizeof *order);
  if (!order) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  for (size_t i = 0; i < rf->ncases; i++) order[i] = i;
  sort_file = rf;
  qsort(order, rf->ncases, sizeof *order, cmp_case_key);
  int rc = ARKCOS_OK;
  for (size_t k = 1; k < rf->ncases && !rc; k++) {
    const results_case *a = &rf->cases[order[k - 1]], *b = &rf->cases[order[k]];
    if (!strcmp(a->key, b->key))
      rc = arkcos_fail(err, ARKCOS_EINVAL, "%s: cases[%zu]: the same case as cases[%zu] (%s%.300s)",
                       rf->path, order[k], order[k - 1], a->key == a->canon ? "parameters " : "id ",
                       a->key);
  }
  free(order);
  return rc;
}

int results_load(const char *path, results_file *rf, arkcos_error *err) {
  memset(rf, 0, sizeof *rf);
  rf->path = strdup(path);
  if (!rf->path) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  json_error_t jerr;
  FILE *f = fopen(path, "rb");
  if (!f) {
    int e = errno;
    results_free(rf);
    /* An input that is not there is bad input (exit 2), not a runtime
     * failure of this program. */
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: cannot read: %s", path, strerror(e));
  }
  rf->root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
  fclose(f);
  if (!rf->root) {
    results_free(rf);
    return arkcos_fail(err, ARKCOS_EINVAL, "%s:%d:%d: malformed JSON: %s", path,
                       jerr.line, jerr.column, jerr.text);
  }
  if (!json_is_object(rf->root)) {
    results_free(rf);
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: not a results document (top level is not an object)", path);
  }
  rf->meta = json_object_get(rf->root, "meta");
  if (rf->meta && !json_is_object(rf->meta)) {
    results_free(rf);
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: meta: not an object", path);
  }
  json_t *cases = json_object_get(rf->root, "cases");
  if (!json_is_array(cases)) {
    results_free(rf);
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: cases: missing or not an array", path);
  }
  size_t n = json_array_size(cases);
  rf->cases = calloc(n ? n : 1, sizeof *rf->cases);
  rf->keys = calloc(n ? n : 1, sizeof *rf->keys);
  if (!rf->cases || !rf->keys) {
    results_free(rf);
    return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
  }
  rf->ncases = n;
  for (size_t i = 0; i < n; i++) {
    int rc = load_case(rf, i, json_array_get(cases, i), err);
    if (rc) {
      results_free(rf);
      return rc;
    }
  }
  int rc = check_unique_cases(rf, err);
  if (rc) results_free(rf);
  return rc;
}

void results_free(results_file *rf) {
  if (!rf) return;
  if (rf->cases)
    for (size_t i = 0; i < rf->ncases; i++) free(rf->cases[i].samples);
  if (rf->keys)
    for (size_t i = 0; i < rf->ncases; i++) free(rf->keys[i]);
  free(rf->cases);
  free(rf->keys);
  json_decref(rf->root);
  free(rf->path);
  memset(rf, 0, sizeof *rf);
}

static int has_id(const results_case *c) { return c->key != c->canon; }

int results_same_case(const results_case *a, const results_case *b) {
  if (has_id(a) && has_id(b)) return !strcmp(a->key, b->key);
  return !strcmp(a->canon, b->canon);
}

long results_match(const results_file *rf, const results_case *c) {
  for (size_t i = 0; i < rf->ncases; i++)
    if (results_same_case(c, &rf->cases[i])) return (long)i;
  return -1;
}

static int value_matches(json_t *v, const char *want) {
  char *end;
  double x = strtod(want, &end);
  if (json_is_number(v) && *want && !*end) return json_number_value(v) == x;
  if (json_is_string(v)) return !strcmp(json_string_value(v), want);
  if (json_is_true(v)) return !strcmp(want, "true");
  if (json_is_false(v)) return !strcmp(want, "false");
  return 0;
}

int results_method_matches(const results_case *c, const char *selector) {
  const char *colon = strchr(selector, ':');
  size_t namelen = colon ? (size_t)(colon - selector) : strlen(selector);
  if (strlen(c->method) != namelen || strncmp(c->method, selector, namelen))
    return 0;
  if (!colon) return 1;
  char *spec = strdup(colon + 1), *save = NULL;
  if (!spec) return 0;
  int ok = 1;
  for (char *tok = strtok_r(spec, ",", &save); tok && ok;
       tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) {
      ok = 0;
      break;
    }
    *eq = '\0';
    json_t *v = json_object_get(c->method_obj, tok);
    if (!v) v = json_object_get(c->obj, tok); /* e.g. threads */
    ok = v && value_matches(v, eq + 1);
  }
  free(spec);
  return ok;
}

int results_case_is_pol(const results_case *c) {
  return json_is_true(json_object_get(c->obj, "pol"));
}

long results_find_reference(const results_file *rf, const results_case *c,
                            const char *selector, int *same_kernel) {
  long any = -1;
  for (size_t i = 0; i < rf->ncases; i++) {
    const results_case *o = &rf->cases[i];
    if (strcmp(o->status, "ok") || o->nside != c->nside ||
        o->threads != c->threads || !results_method_matches(o, selector) ||
        results_case_is_pol(o) != results_case_is_pol(c)) /* spin 2 against spin 2 */
      continue;
    if (json_equal(o->kernel, c->kernel) || (!o->kernel && !c->kernel)) {
      if (same_kernel) *same_kernel = 1;
      return (long)i;
    }
    if (any < 0) any = (long)i;
  }
  if (same_kernel) *same_kernel = 0;
  return any;
}

const char *results_method_label(json_t *method_obj, char *buf, size_t len) {
  json_t *name = json_object_get(method_obj, "name");
  size_t used = (size_t)snprintf(buf, len, "%s",
                                 json_is_string(name) ? json_string_value(name) : "?");
  const char *k;
  json_t *v;
  json_object_foreach(method_obj, k, v) {
    if (!strcmp(k, "name") || !strcmp(k, "repeats") || !strcmp(k, "warmup") || used >= len)
      continue;
    if (json_is_string(v))
      used += (size_t)snprintf(buf + used, len - used, " %s", json_string_value(v));
    else if (json_is_integer(v))
      used += (size_t)snprintf(buf + used, len - used, " %s=%lld", k,
                               (long long)json_integer_value(v));
    else if (json_is_real(v))
      used += (size_t)snprintf(buf + used, len - used, " %s=%g", k, json_real_value(v));
    else if (json_is_true(v)) /* false options are the defaults: left out */
      used += (size_t)snprintf(buf + used, len - used, " %s", k);
  }
  return buf;
}

const char *results_kernel_label(json_t *k, char *buf, size_t len) {
  if (!json_is_object(k)) {
    snprintf(buf, len, "-");
    return buf;
  }
  json_t *type = json_object_get(k, "type");
  size_t used = (size_t)snprintf(buf, len, "%s",
                                 json_is_string(type) ? json_string_value(type) : "kernel");
  int has_cut_deg = json_is_number(json_object_get(k, "cutoff_deg"));
  const char *key;
  json_t *v;
  json_object_foreach(k, key, v) {
    if (used >= len || !strcmp(key, "type")) continue;
    /* derived members that `arkcos run` records beside the configured ones */
    if (!strcmp(key, "support_deg") || (!strcmp(key, "cutoff_rel") && has_cut_deg))
      continue;
    if (!strcmp(key, "fwhm_arcmin") && json_is_number(v))
      used += (size_t)snprintf(buf + used, len - used, " fwhm=%g'", json_number_value(v));
    else if (!strcmp(key, "cutoff_deg") && json_is_number(v))
      used += (size_t)snprintf(buf + used, len - used, " cutoff=%gdeg", json_number_value(v));
    else if (json_is_number(v))
      used += (size_t)snprintf(buf + used, len - used, " %s=%g", key, json_number_value(v));
    else if (json_is_string(v))
      used += (size_t)snprintf(buf + used, len - used, " %s=%s", key, json_string_value(v));
  }
  return buf;
}

const char *results_case_label(const results_case *c, char *buf, size_t len) {
  if (has_id(c)) {
    snprintf(buf, len, "%s", c->key);
    return buf;
  }
  char k[256], m[256];
  if (c->threads)
    snprintf(buf, len, "nside=%lld %s | %s | threads=%lld", c->nside,
             results_kernel_label(c->kernel, k, sizeof k),
             results_method_label(c->method_obj, m, sizeof m), c->threads);
  else
    snprintf(buf, len, "nside=%lld %s | %s", c->nside,
             results_kernel_label(c->kernel, k, sizeof k),
             results_method_label(c->method_obj, m, sizeof m));
  return buf;
}

const char *results_meta_str(const results_file *rf, const char *key) {
  json_t *v = json_object_get(rf->meta, key);
  if (!v) v = json_object_get(json_object_get(rf->meta, "versions"), key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}
