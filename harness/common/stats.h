/* stats.h -- statistics of timing samples, the regression rule of
 * `arkcos compare`, and the reading of results files shared by `compare` and
 * `report`.
 *
 * The regression rule borrows from three tools and keeps the strictest part
 * of each:
 *  - airspeed velocity: a change counts only if it exceeds a factor AND the
 *    samples say it is real; the rank test is used only when the sample sizes
 *    allow it to reach the significance level at all, otherwise a cruder
 *    interval-overlap check decides;
 *  - Google Benchmark compare.py: two-sided Mann-Whitney U test at alpha 0.05
 *    on every repeat, not on one summary number;
 *  - nvbench_compare.py: the noise of the measurements, not a fixed number,
 *    bounds what can be called a change.
 */
#ifndef ARKCOS_HARNESS_STATS_H
#define ARKCOS_HARNESS_STATS_H

#include <stddef.h>

#include <jansson.h>

#include "arkcos/arkcos.h"

/* ------------------------------------------------------------ descriptive */

/* Quantile q in [0, 1] with linear interpolation between order statistics
 * (Hyndman & Fan type 7, the default of R and numpy). NAN for n == 0. */
double stats_quantile(const double *x, size_t n, double q);
double stats_median(const double *x, size_t n);
double stats_min(const double *x, size_t n);
double stats_max(const double *x, size_t n);

/* --------------------------------------------------------- Mann-Whitney U */

typedef struct {
  double u;     /* U statistic of the first sample (pairs a > b, ties 1/2) */
  double p;     /* two-sided p-value */
  int exact;    /* 1: exact null distribution; 0: normal approximation */
} stats_utest;

/* Two-sided Mann-Whitney U (Wilcoxon rank-sum) test. The p-value is exact
 * when there are no ties and na + nb <= 50; otherwise from the normal
 * approximation with tie-corrected variance and continuity correction (as
 * scipy.stats.mannwhitneyu). Returns 0, or -1 when a sample is empty. */
int stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb,
                       stats_utest *out);

/* The smallest two-sided p-value the exact test can give for these sizes:
 * 2 / C(na + nb, na). With 3 + 3 samples it is 0.1, so the test can never
 * reject at alpha 0.05 and another rule has to decide. */
double stats_utest_min_p(size_t na, size_t nb);

/* ------------------------------------------------------ regression rule */

typedef enum {
  STATS_SAME = 0,     /* within the threshold, or a change within the noise */
  STATS_FASTER,       /* faster by more than the threshold, beyond the noise */
  STATS_SLOWER_NOISE, /* slower by more than the threshold, within the noise */
  STATS_REGRESSION    /* slower by more than the threshold, beyond the noise */
} stats_verdict;

typedef enum {
  STATS_RULE_UTEST = 0, /* Mann-Whitney U, p < alpha */
  STATS_RULE_RANGE      /* [min, max] of the two runs do not overlap */
} stats_rule;

typedef struct {
  double threshold; /* relative change of the median that matters (0.15) */
  double alpha;     /* significance level of the U test (0.05) */
} stats_rule_params;

typedef struct {
  double base_median, new_median;
  double change;         /* new_median / base_median - 1 */
  double p;              /* U test p-value; NAN when the range rule decided */
  stats_rule rule;
  int beyond_noise;      /* the rule says the two runs differ */
  stats_verdict verdict;
} stats_judgement;

/* Judges one case from all its samples. A slowdown is a REGRESSION only if
 * the median grew by more than `threshold` AND the difference is beyond the
 * noise: U test p < alpha when the sizes allow p < alpha (stats_utest_min_p),
 * else non-overlapping [min, max] ranges. "Faster" is the mirror image
 * (median shrank by a factor 1 + threshold, beyond the noise). Returns 0, or
 * -1 when a sample is empty. */
int stats_judge(const double *base, size_t nbase, const double *cand,
                size_t ncand, const stats_rule_params *prm,
                stats_judgement *out);

const char *stats_verdict_name(stats_verdict v);
const char *stats_rule_name(stats_rule r);

/* --------------------------------------------------------- results files */

/* One case of a results.json as `compare` and `report` see it. Pointers into
 * the document (json_t) stay valid while the owning results_file lives. */
typedef struct {
  const char *key;     /* "id", or the canonical form when there is none */
  const char *canon;   /* canonical form of the parameters, always set */
  const char *status;  /* "ok", "skipped", "failed" */
  const char *reason;  /* may be NULL */
  const char *method;  /* method.name */
  long long nside;
  long long threads;
  json_t *obj;         /* the case object */
  json_t *kernel, *method_obj;
  double *samples;     /* every timed repeat (or the median alone) */
  size_t nsamples;
  double tmin, tmedian, tmax; /* NAN when absent */
} results_case;

typedef struct {
  char *path;
  json_t *root;
  json_t *meta;        /* may be an empty object */
  results_case *cases;
  size_t ncases;
  char **keys;         /* owned storage of canonical keys */
} results_file;

/* Reads and checks a results file. Errors are ARKCOS_EINVAL for a file that
 * is not a results document (the message names the file and the JSON path)
 * and ARKCOS_EIO for one that cannot be read. */
int results_load(const char *path, results_file *rf, arkcos_error *err);
void results_free(results_file *rf);
/* Every ok case's samples (and min, median, max) become its CPU times,
 * time.cpu_samples; ARKCOS_EINVAL naming the case when one has none.
 * single_only: only the cases that ran on one thread (threads_used), whose
 * CPU time is the work itself; with more threads it also counts the time
 * threads spin waiting for each other, which a loaded machine stretches. */
int results_use_cpu_time(results_file *rf, int single_only, arkcos_error *err);
/* 1 when every ok case of rf (single_only: every single-threaded one)
 * carries time.cpu_samples (a non-empty array), so that
 * results_use_cpu_time would succeed, and there is at least one; else 0. */
int results_has_cpu_time(const results_file *rf, int single_only);
/* 1 when the run's OpenMP threads waited passively (meta.omp_wait_policy
 * "passive", what `arkcos run` sets unless told otherwise): its CPU times
 * are then the threads' work, without spinning at barriers. */
int results_wait_passive(const results_file *rf);
/* 1 when the run's config had "interleave": true (meta.config). */
int results_interleaved(const results_file *rf);

/* 1 when a and b (of different files) are the same case: same "id" when
 * both have one, else the same canonical parameters. */
int results_same_case(const results_case *a, const results_case *b);

/* Index of the case of rf that is the same case as c (of another file):
 * same "id" when both have one, else the same canonical parameters; -1 when
 * there is none. */
long results_match(const results_file *rf, const results_case *c);

/* Canonical string of a case's parameters that ignores its id:
 * compact JSON with sorted keys of {nside, kernel, method, threads}.
 * Caller frees. */
char *results_canonical_key(json_t *case_obj);

/* A METHOD selector as accepted by --normalize-by: "NAME" or
 * "NAME:key=value[,key=value...]" (e.g. "fsht:iter=0"); values compare with
 * the method object's members as numbers when both parse as numbers, else as
 * strings. Returns 1 when the case's method matches. */
int results_method_matches(const results_case *c, const char *selector);

/* 1 for a spin-2 case of a polarized sweep ("pol": true: Q, U smoothed as
 * one spin-2 field). */
int results_case_is_pol(const results_case *c);

/* The case of the same file that serves as the yardstick for c: a case with
 * status ok matching `selector`, same nside and threads, spin 2 when c is
 * (results_case_is_pol) and scalar when it is not, and the same kernel
 * (preferred) or, failing that, any kernel. First in file order wins.
 * *same_kernel tells which. Returns the index or -1. */
long results_find_reference(const results_file *rf, const results_case *c,
                            const char *selector, int *same_kernel);

/* Short human description of a method object, e.g.
 * "fsht iter=0 lmax_factor=2" (false options, repeats and warmup left out).
 * Writes into buf. */
const char *results_method_label(json_t *method_obj, char *buf, size_t len);

/* Short description of a kernel object, e.g. "gaussian fwhm=60' cutoff=3deg"
 * (null and derived members left out). */
const char *results_kernel_label(json_t *kernel_obj, char *buf, size_t len);

/* How tables name a case: its "id", or, without one, a readable form of
 * nside, kernel, method and threads. */
const char *results_case_label(const results_case *c, char *buf, size_t len);

/* A string member of meta (or nested "versions"), or NULL. */
const char *results_meta_str(const results_file *rf, const char *key);

/* Human-readable time, e.g. "1.234 s", "12.3 ms". */
const char *stats_format_seconds(double s, char *buf, size_t len);

#endif
