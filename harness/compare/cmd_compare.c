/* cmd_compare.c -- `arkcos compare BASELINE.json NEW.json`: the performance
 * regression check. Every repeat counts, not one summary number: a case is a
 * regression only if its median is slower by more than the threshold and the
 * samples show the difference is beyond the noise (stats.h has the rule).
 * The defaults are the robust judgement: CPU times where both runs recorded
 * them and they are the threads' work (one thread, or threads that waited
 * passively: meta.omp_wait_policy), times divided by a FSHT case of the same
 * run (repeat by repeat where the runs interleaved the methods' repeats). A slowdown that only runs
 * without interleaved repeats and a yardstick show is "too noisy to judge":
 * one run's repeats share one stretch of the machine's time, so a drift
 * of its speed cannot be told from a change.
 * Exit 0: no regression; 3: regression (the table names the cases); 4: too
 * noisy to judge (and no regression); 2: bad usage, unreadable or malformed
 * files, no case in common. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/commands.h"
#include "harness/common/options.h"
#include "harness/common/stats.h"
#include "harness/common/util.h"

static const char usage_text[] =
    "usage: arkcos compare BASELINE.json NEW.json [--threshold F] [--alpha A]\n"
    "                      [--normalize-by auto|none|METHOD] [--clock auto|cpu|wall]\n"
    "                      [--trust-repeats]\n"
    "\n"
    "Compares the timings of two `arkcos run` results files case by case\n"
    "(cases match by their \"id\", or by nside, kernel, method and threads).\n"
    "\n"
    "A case is a REGRESSION when both hold:\n"
    "  - its median time grew by more than the threshold (default 0.15 = 15%),\n"
    "  - the difference is beyond the noise of the repeats: two-sided\n"
    "    Mann-Whitney U test p < alpha (default 0.05) when the sample sizes let\n"
    "    the test reach p < alpha (at least 4 + 4 or 3 + 5 repeats), otherwise\n"
    "    the [min, max] ranges of the two runs do not overlap.\n"
    "The `rule` column says which of the two decided. A slowdown above the\n"
    "threshold that the noise explains is `slower-noise` (not a failure).\n"
    "A case that ran in the baseline and failed in the new run is FAILED and\n"
    "counts as a regression; skipped cases are listed but not judged.\n"
    "\n"
    "Noise. A verdict of REGRESSION needs runs whose repeats can tell a change\n"
    "from the machine's drift: both runs made with \"interleave\": true (the\n"
    "methods timed in turns) and judged against a yardstick of the same run,\n"
    "repeat by repeat (the defaults pick FSHT), with neither run's repeats\n"
    "spread over more than 1.5x (upper over lower quartile) and, for two runs\n"
    "of one machine, no raw median changed by more than 3x. Otherwise a\n"
    "slowdown beyond threshold and noise is `too-noisy`: exit 4, not a\n"
    "REGRESSION. On one machine, a case whose ratio grew while its own median\n"
    "did not grow may owe that to the yardstick alone getting faster: judged\n"
    "on its own time (`same`) when the ratio grew by at most 27% (what the\n"
    "yardstick's fall alone mostly does); beyond, a REGRESSION when the same\n"
    "method's ratio regressed at every other nside of the runs too (at least\n"
    "one: a slowdown of the method that a faster machine hid), else\n"
    "`too-noisy`. A case whose median repeat takes under 1.5 ms in either run\n"
    "can move that much between two processes of one binary: its REGRESSION\n"
    "also needs the same method's ratio regressed at every other nside (at\n"
    "least one), else it is `slower-noise`.\n"
    "\n"
    "  --threshold F       relative slowdown that matters: 0.15 or 15%\n"
    "  --alpha A           significance level of the U test (0 < A < 1)\n"
    "  --normalize-by M    divide every time by the median of method M measured\n"
    "                      in the same file on the same nside and threads (same\n"
    "                      kernel preferred, else any kernel), so that runs on\n"
    "                      different machines can be compared; in a run with\n"
    "                      \"interleave\": true, repeat by repeat. M is a method\n"
    "                      name (first matching case wins) or NAME:key=value,...\n"
    "                      e.g. fsht or fsht:iter=0; none: raw times; auto\n"
    "                      (default): fsht:iter=0, else fsht, when both files\n"
    "                      have such a case, else none\n"
    "  --clock C           auto (default): cpu where both files recorded CPU\n"
    "                      times and the case ran on one thread, or its threads\n"
    "                      waited passively in both runs (meta.omp_wait_policy\n"
    "                      \"passive\", what `arkcos run` sets unless\n"
    "                      OMP_WAIT_POLICY or GOMP_SPINCOUNT is given); wall for\n"
    "                      the rest (threads spinning at a barrier add CPU time\n"
    "                      on a loaded machine); cpu: the process's CPU time of\n"
    "                      each repeat (time.cpu_samples), which does not count\n"
    "                      waiting for a core on a shared machine, nor how well\n"
    "                      the work is spread over the threads; wall: elapsed\n"
    "                      times (a change in parallel speed-up shows only there)\n"
    "  --trust-repeats     judge REGRESSION from the repeats alone even where the\n"
    "                      runs did not interleave them with a yardstick (a\n"
    "                      dedicated, quiet machine)\n"
    "\n"
    "Exit status: 0 no regression, 3 regression, 4 too noisy to judge (no\n"
    "regression, but a slowdown these runs cannot tell from noise), 2 bad usage\n"
    "or input.\n";

typedef enum {
  ROW_JUDGED,
  ROW_SKIPPED,      /* skipped in either run */
  ROW_FAILED_NEW,   /* ran in the baseline, failed now: counts as regression */
  ROW_FAILED,       /* failed in the baseline (and maybe now) */
  ROW_YARDSTICK,    /* the normalising case itself */
  ROW_NO_YARDSTICK, /* normalisation asked for but no reference case */
  ROW_TOO_NOISY     /* judged REGRESSION on runs that cannot tell it from drift */
} row_kind;

typedef struct {
  const results_case *base, *cand;
  row_kind kind;
  stats_judgement j;
  double base_raw, new_raw; /* medians in seconds */
  int other_kernel;         /* the yardstick has another kernel */
  int paired;               /* divided repeat by repeat (interleaved runs) */
  double spread;            /* the larger of the two runs' spread() */
  double machine;           /* the larger raw median change, case or yardstick, as a factor >= 1 */
  double yard_change;       /* the yardstick's raw median, new over baseline */
  int ratio_regressed;      /* REGRESSION by its ratios, paired, on a steady machine */
  int own_not_grown;        /* too noisy: the ratio grew, its own median did not */
  int short_case;           /* slower-noise: a REGRESSION of a case under SHORT_CASE_S a repeat */
  char note[160];
  char label[400];
} row;

static int count_matching(const results_file *rf, const char *selector) {
  int n = 0;
  for (size_t i = 0; i < rf->ncases; i++)
    if (!strcmp(rf->cases[i].status, "ok") &&
        results_method_matches(&rf->cases[i], selector))
      n++;
  return n;
}

/* The hardware fields that make two runs' times incomparable. */
static void warn_hardware(const results_file *a, const results_file *b) {
  static const char *const keys[] = {"host", "cpu_model", "cores", "gpus"};
  char diff[512] = "";
  size_t used = 0;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    json_t *va = json_object_get(a->meta, keys[i]);
    json_t *vb = json_object_get(b->meta, keys[i]);
    int same = (!va && !vb) || (va && vb && json_equal(va, vb));
    if (!same && used < sizeof diff)
      used += (size_t)snprintf(diff + used, sizeof diff - used, "%s%s",
                               used ? ", " : "", keys[i]);
  }
  if (used) {
    const char *ha = results_meta_str(a, "host"), *hb = results_meta_str(b, "host");
    fprintf(stderr,
            "arkcos compare: warning: the two runs' hardware differs (%s; host %s vs %s)\n"
            "  and no --normalize-by was given: absolute times of different machines are\n"
            "  not comparable; consider --normalize-by fsht\n",
            diff, ha ? ha : "?", hb ? hb : "?");
  }
}

/* The case's samples divided by the yardstick y of the same file: repeat by
 * repeat when the run interleaved the methods' repeats (config
 * "interleave": repeat i of both ran back to back, so the ratio cancels the
 * machine's drift and carries the yardstick's own noise into the test),
 * else by the yardstick's median. */
static double *normalised(const results_file *rf, const results_case *c, const results_case *y,
                          int *paired_out) {
  double *s = malloc((c->nsamples ? c->nsamples : 1) * sizeof *s);
  if (!s) return NULL;
  const int paired = results_interleaved(rf) && y->nsamples == c->nsamples;
  *paired_out = paired;
  for (size_t i = 0; i < c->nsamples; i++)
    s[i] = c->samples[i] / (paired ? y->samples[i] : y->tmedian);
  return s;
}

/* How unsteady a run's machine was while one case ran: the spread of its
 * normalised repeats, the upper over the lower quartile (1 = identical). */
static double spread(const double *x, size_t n) {
  const double lo = stats_quantile(x, n, 0.25), hi = stats_quantile(x, n, 0.75);
  return lo > 0 ? hi / lo : INFINITY;
}

/* The machine was too unsteady for a judgement when either run's repeats
 * spread over more than NOISE_SPREAD (upper over lower quartile). Measured
 * on a shared 2-core machine (tests/hostile/compare_rates.sh, README): calm
 * stretches spread the normalised repeats by 1.02-1.3, load bursts by 2 to
 * 100. */
#define NOISE_SPREAD 1.5
/* On one machine (same host and CPU in both files), a case's or its
 * yardstick's median time that moved by more than this factor between the
 * runs says the machine was in another state (measured: a run whose every
 * repeat was stretched to whole scheduler time slices, 10-25x, with its
 * repeats agreeing among themselves); two machines may differ by any
 * factor. */
#define NOISE_MACHINE 3.0
/* On one machine, a case whose ratio to the yardstick regressed while its
 * own median did not grow at all got there by the yardstick getting faster:
 * the runs met the machine in states that speed the two up differently
 * (measured on a shared 2-core machine at a load average of 10, CPU times
 * of passive threads: the same binary's FSHT iter 0 20-25 % faster in the
 * second run, ARKCoS 5-9 %, in 5 of 80 pairs; tests/hostile/noise.json).
 * A slowdown of the case hidden by a faster machine looks much the same,
 * but for how far the ratio moved: the yardstick's fall alone mostly moves
 * it by less than NOISE_YARDSTICK_ONLY, a real 30 % slowdown by more
 * (tests/hostile/compare_rates.sh, 2 threads, the first 40 pairs of runs:
 * among the unslowed cases whose own median did not grow, the ratio grew by
 * 16-26 %; among the slowed ones, 29-43 %). Up to it the row is judged on
 * the case's own time, which did not grow: same. Beyond it, neither a clean
 * bill nor a REGRESSION -- too noisy to judge -- unless confirm_across_nsides
 * finds the method's ratio regressed at its other nsides too. The two
 * overlap (360 pairs on 1 and 2 threads: unslowed 16-36 %, 30 of 39 cases
 * up to 27 %; slowed 16-66 %, 89 of 96 beyond), so 27 % is a compromise: a
 * few slowed cases pass as same (each of them caught at its other nside)
 * and a few unslowed ones are too noisy. (Judging the case against the
 * other methods of its group instead, which sped up with the yardstick when
 * the machine did, gave 2 false REGRESSIONs in 40 pairs: the
 * single-precision ARKCoS method sped up less than the double one and FSHT
 * at nside 64.) */
#define NOISE_YARDSTICK_ONLY 1.27

/* A case whose median repeat takes less than SHORT_CASE_S (either run) can
 * move by more than the threshold between two processes of the same binary
 * while its repeats within each process agree, so the U test finds the move
 * significant: measured on a 2-core AMD EPYC virtual machine with
 * tests/hostile/compare_rates.sh (2 threads, three sets of 40 pairs), the
 * nside-64 ARKCoS double apply of noise.json (0.8 ms) read +16 to +18 %
 * (p 0.001-0.02) in 7 of 120 same-binary pairs, every false REGRESSION of
 * the sets; its 1.4 ms and 5-7 ms cases never. Such a case's REGRESSION
 * stands only when its method's ratio regressed at every other nside of
 * the runs too (confirm_across_nsides), as a real slowdown of the method
 * does; else it is slower-noise, a slowdown the noise explains (the noise
 * between processes), not a failure. As too noisy (exit 4) such pairs left
 * 5 of 40 same-binary pairs of one set unclean. */
#define SHORT_CASE_S 1.5e-3

/* A row that is not judged: a case skipped or failed on either side.
 * Returns 1 if it classified the row. */
static int unjudged_row(row *r) {
  const results_case *b = r->base, *c = r->cand;
  if (!strcmp(b->status, "skipped") || !strcmp(c->status, "skipped")) {
    r->kind = ROW_SKIPPED;
    const char *why = !strcmp(c->status, "skipped") ? c->reason : b->reason;
    snprintf(r->note, sizeof r->note, "%s skipped%s%s",
             !strcmp(c->status, "skipped") ? "new" : "baseline",
             why ? ": " : "", why ? why : "");
    return 1;
  }
  if (!strcmp(b->status, "failed")) {
    r->kind = ROW_FAILED;
    snprintf(r->note, sizeof r->note, "failed in the baseline%s%s",
             b->reason ? ": " : "", b->reason ? b->reason : "");
    return 1;
  }
  if (!strcmp(c->status, "failed")) {
    r->kind = ROW_FAILED_NEW;
    snprintf(r->note, sizeof r->note, "failed in the new run%s%s",
             c->reason ? ": " : "", c->reason ? c->reason : "");
    return 1;
  }
  return 0;
}

/* With --normalize-by: the samples of both sides divided by their runs'
 * yardstick medians (*bn, *cn, malloc'd), or the row classified as the
 * yardstick itself or as one without a yardstick (returns 1; *bn = *cn =
 * NULL). -1 when out of memory. */
static int normalise_row(row *r, const results_file *bf, const results_file *nf,
                         const char *norm, double **bn, double **cn) {
  const results_case *b = r->base, *c = r->cand;
  *bn = *cn = NULL;
  int sk_b = 0, sk_c = 0;
  long ib = results_find_reference(bf, b, norm, &sk_b);
  long ic = results_find_reference(nf, c, norm, &sk_c);
  if ((ib >= 0 && &bf->cases[ib] == b) || (ic >= 0 && &nf->cases[ic] == c)) {
    /* the yardstick itself: its normalised time is 1 by construction */
    r->kind = ROW_YARDSTICK;
    double ch = c->tmedian / b->tmedian - 1;
    snprintf(r->note, sizeof r->note,
             "normalising case; raw median change %+.1f%% (machine speed)", 100 * ch);
    return 1;
  }
  if (ib < 0 || ic < 0) {
    r->kind = ROW_NO_YARDSTICK;
    snprintf(r->note, sizeof r->note, "no ok '%s' case with nside %lld, threads %lld in %s",
             norm, b->nside, b->threads, ib < 0 ? "the baseline" : "the new run");
    return 1;
  }
  r->other_kernel = !sk_b || !sk_c;
  int pb = 0, pc = 0;
  *bn = normalised(bf, b, &bf->cases[ib], &pb);
  *cn = normalised(nf, c, &nf->cases[ic], &pc);
  r->paired = pb && pc;
  const double fy = nf->cases[ic].tmedian / bf->cases[ib].tmedian, fc = c->tmedian / b->tmedian;
  r->yard_change = fy;
  const double ay = fy >= 1 ? fy : 1 / fy, ac = fc >= 1 ? fc : 1 / fc;
  r->machine = ay > ac ? ay : ac;
  if (!*bn || !*cn) {
    free(*bn);
    free(*cn);
    *bn = *cn = NULL;
    return -1;
  }
  if (r->other_kernel)
    snprintf(r->note, sizeof r->note, "normalised by a '%s' case with another kernel", norm);
  return 0;
}

/* Fills r for a case present in both runs. Returns 0 or an exit status. */
static int judge_row(row *r, const results_file *bf, const results_file *nf,
                     const char *norm, const stats_rule_params *prm, int trust, int one_machine) {
  const results_case *b = r->base, *c = r->cand;
  r->base_raw = b->tmedian;
  r->new_raw = c->tmedian;
  if (unjudged_row(r)) return 0;
  const double *bs = b->samples, *cs = c->samples;
  double *bn = NULL, *cn = NULL;
  if (norm) {
    int rc = normalise_row(r, bf, nf, norm, &bn, &cn);
    if (rc > 0) return 0;
    if (rc < 0) {
      fprintf(stderr, "arkcos compare: out of memory\n");
      return 1;
    }
    bs = bn;
    cs = cn;
  }
  r->kind = ROW_JUDGED;
  stats_judge(bs, b->nsamples, cs, c->nsamples, prm, &r->j);
  const double sb = spread(bs, b->nsamples), sc = spread(cs, c->nsamples);
  r->spread = sb > sc ? sb : sc;
  free(bn);
  free(cn);
  if (trust) return 0;
  /* Only repeats taken in turns with a yardstick's, divided pair by pair,
   * are independent of the machine's drift between and within the runs:
   * anything else can look like a regression on an unsteady machine. */
  r->ratio_regressed = r->j.verdict == STATS_REGRESSION && r->paired &&
                       r->spread <= NOISE_SPREAD && (!one_machine || r->machine <= NOISE_MACHINE);
  if (r->j.verdict == STATS_REGRESSION && !r->paired) {
    r->kind = ROW_TOO_NOISY;
    snprintf(r->note, sizeof r->note, "%s",
             !norm ? "no yardstick to divide by"
                   : "runs not interleaved: \"interleave\": true in the config");
  } else if (r->j.verdict == STATS_REGRESSION && one_machine && r->new_raw <= r->base_raw &&
             r->spread <= NOISE_SPREAD && r->machine <= NOISE_MACHINE &&
             1 + r->j.change <= NOISE_YARDSTICK_ONLY) {
    /* the ratio grew no more than the yardstick's own fall moves it, and
     * the case's own time did not grow: the same */
    r->j.verdict = STATS_SAME;
    snprintf(r->note, sizeof r->note, "its own median did not grow (%+.1f%%); the yardstick's "
             "changed %+.1f%%, which explains a ratio up to %+.0f%%",
             100 * (r->new_raw / r->base_raw - 1), 100 * (r->yard_change - 1),
             100 * (NOISE_YARDSTICK_ONLY - 1));
  } else if (r->ratio_regressed && (r->base_raw < SHORT_CASE_S || r->new_raw < SHORT_CASE_S)) {
    /* a short case: a move between processes, unless its method regressed
     * at its other nsides too (confirm_across_nsides) */
    r->j.verdict = STATS_SLOWER_NOISE;
    r->short_case = 1;
    snprintf(r->note, sizeof r->note, "a repeat takes under %.3g ms, where two processes of one "
             "binary differ by this much; the method did not regress at its other nsides",
             1e3 * SHORT_CASE_S);
  } else if ((r->j.verdict == STATS_REGRESSION || r->j.verdict == STATS_SLOWER_NOISE) &&
             (r->spread > NOISE_SPREAD || (one_machine && r->machine > NOISE_MACHINE) ||
              (one_machine && r->j.verdict == STATS_REGRESSION && r->new_raw <= r->base_raw))) {
    /* slower by more than the threshold on a machine too unsteady to say
     * whether that is real: neither a regression nor a clean bill */
    r->kind = ROW_TOO_NOISY;
    if (r->spread > NOISE_SPREAD)
      snprintf(r->note, sizeof r->note, "repeats spread by %.2fx (middle half) in one run, over %.2gx",
               r->spread, NOISE_SPREAD);
    else if (r->machine > NOISE_MACHINE)
      snprintf(r->note, sizeof r->note, "raw times changed %.1fx between the runs on one machine, "
               "over %.2gx", r->machine, NOISE_MACHINE);
    else {
      r->own_not_grown = 1;
      snprintf(r->note, sizeof r->note, "its own median did not grow (%+.1f%%); the yardstick's "
               "changed %+.1f%% between the runs on one machine, which explains a ratio up to "
               "%+.0f%% only", 100 * (r->new_raw / r->base_raw - 1), 100 * (r->yard_change - 1),
               100 * (NOISE_YARDSTICK_ONLY - 1));
    }
  }
  return 0;
}

static const char *row_verdict(const row *r) {
  switch (r->kind) {
  case ROW_JUDGED: return stats_verdict_name(r->j.verdict);
  case ROW_SKIPPED: return "skipped";
  case ROW_FAILED_NEW: return "FAILED";
  case ROW_FAILED: return "failed";
  case ROW_YARDSTICK: return "yardstick";
  case ROW_TOO_NOISY: return "too-noisy";
  default: return "not-judged";
  }
}

static int row_is_regression(const row *r) {
  return (r->kind == ROW_JUDGED && r->j.verdict == STATS_REGRESSION) ||
         r->kind == ROW_FAILED_NEW;
}

static void format_value(double v, int ratio, char *buf, size_t len) {
  if (!isfinite(v))
    snprintf(buf, len, "-");
  else if (ratio)
    snprintf(buf, len, "%.4gx", v);
  else
    stats_format_seconds(v, buf, len);
}

/* CLOCK_CPU1 (what auto becomes where the runs recorded CPU times but the
 * threads of one of them did not wait passively): CPU time for the cases
 * that ran on one thread, elapsed time for the others */
enum { CLOCK_AUTO, CLOCK_WALL, CLOCK_CPU, CLOCK_CPU1 };

typedef struct {
  const char *files[2];
  const char *norm; /* --normalize-by, or NULL; "auto" and "none" resolved */
  int clock;        /* --clock; CLOCK_AUTO resolved after loading */
  int trust;        /* --trust-repeats */
  stats_rule_params prm;
} compare_opts;

typedef struct {
  results_file bf, nf;
  row *rows;
  size_t nrows, only_new, only_base;
  size_t counts[16]; /* verdicts 0..3, then 4 + row_kind */
  size_t nregress, ntoo_noisy;
} comparison;

static const opt_arg compare_args[] = {{OPT_THRESHOLD, NULL},       {OPT_ALPHA, NULL},
                                       {OPT_NORMALIZE_BY, "--normalise-by"}, {OPT_CLOCK, NULL},
                                       {OPT_TRUST_REPEATS, NULL}};

/* Parses the command line into o (the option table's rows, options.h).
 * Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, compare_opts *o) {
  enum { N = sizeof compare_args / sizeof compare_args[0] };
  const char *texts[N], *files[3];
  int nfiles = 0;
  json_t *v = json_object();
  int rc = opt_parse_argv_texts("arkcos compare", argc, argv, compare_args, N, v, files, 3, &nfiles, texts);
  if (!rc) {
    o->prm.threshold = opt_num(v, OPT_THRESHOLD, o->prm.threshold);
    o->prm.alpha = opt_num(v, OPT_ALPHA, o->prm.alpha);
    const char *clock = opt_str(v, OPT_CLOCK);
    o->clock = !strcmp(clock, "cpu") ? CLOCK_CPU : !strcmp(clock, "wall") ? CLOCK_WALL : CLOCK_AUTO;
    o->trust = opt_bool(v, OPT_TRUST_REPEATS);
    if (texts[2]) o->norm = texts[2]; /* --normalize-by, as typed (argv outlives o) */
  }
  json_decref(v);
  if (rc < 0) {
    fputs(usage_text, stdout);
    return 0;
  }
  if (rc) return rc;
  if (o->norm && o->norm[0] == ':') {
    fprintf(stderr, "arkcos compare: --normalize-by: expected a method, e.g. fsht\n");
    return 2;
  }
  if (nfiles != 2) {
    fprintf(stderr, "arkcos compare: expected BASELINE.json and NEW.json\n%s", usage_text);
    return 2;
  }
  for (int k = 0; k < 2; k++) o->files[k] = files[k];
  return -1;
}

/* Both files have a case of the normalising method. Returns 0 or 2. */
static int check_yardsticks(const comparison *cp, const char *norm) {
  for (int k = 0; norm && k < 2; k++) {
    const results_file *rf = k ? &cp->nf : &cp->bf;
    if (!count_matching(rf, norm)) {
      fprintf(stderr, "arkcos compare: --normalize-by %s: %s has no case with "
                      "status ok and that method\n", norm, rf->path);
      return 2;
    }
  }
  return 0;
}

/* Both files from one machine: the same host and CPU model. */
static int one_machine(const comparison *cp) {
  const char *ha = results_meta_str(&cp->bf, "host"), *hb = results_meta_str(&cp->nf, "host");
  const char *ca = results_meta_str(&cp->bf, "cpu_model"), *cb = results_meta_str(&cp->nf, "cpu_model");
  return ha && hb && ca && cb && !strcmp(ha, hb) && !strcmp(ca, cb);
}

/* The same method, kernel, threads and spin at another nside. */
static int same_method_other_nside(const results_case *a, const results_case *b) {
  return a->nside != b->nside && a->threads == b->threads &&
         results_case_is_pol(a) == results_case_is_pol(b) &&
         json_equal(a->method_obj, b->method_obj) &&
         (json_equal(a->kernel, b->kernel) || (!a->kernel && !b->kernel));
}

/* A case too noisy only because its own median did not grow while its
 * ratio grew beyond what the yardstick's fall explains is a REGRESSION when
 * its method's ratio regressed at every other nside of the runs too (at
 * least one): a slowdown of the method, which a faster machine state hid
 * from its own time. The state that speeds the yardstick up more than a
 * method did so at one nside at a time (measured, tests/hostile/
 * compare_rates.sh, 9 sets of 40 pairs on 1 and 2 threads: of the 1080
 * unslowed methods of a pair, one regressed by its ratio at both nsides, by
 * 16-19 %, within NOISE_YARDSTICK_ONLY; of the 360 slowed ones, 343). */
static void confirm_across_nsides(comparison *cp) {
  for (size_t i = 0; i < cp->nrows; i++) {
    row *r = &cp->rows[i];
    if (!(r->kind == ROW_TOO_NOISY && r->own_not_grown) && !r->short_case) continue;
    int others = 0, all = 1;
    for (size_t k = 0; k < cp->nrows; k++) {
      const row *o = &cp->rows[k];
      if (k == i || !same_method_other_nside(o->cand, r->cand)) continue;
      others++;
      if (!o->ratio_regressed) all = 0;
    }
    if (!others || !all) continue;
    r->kind = ROW_JUDGED;
    r->j.verdict = STATS_REGRESSION;
    if (r->short_case)
      snprintf(r->note, sizeof r->note, "a repeat takes under %.3g ms; the method's ratio regressed "
               "at the other nside%s too", 1e3 * SHORT_CASE_S, others > 1 ? "s" : "");
    else
      snprintf(r->note, sizeof r->note, "its own median did not grow (%+.1f%%), the yardstick's "
               "changed %+.1f%%; the method's ratio regressed at the other nside%s too",
               100 * (r->new_raw / r->base_raw - 1), 100 * (r->yard_change - 1),
               others > 1 ? "s" : "");
  }
}

/* One judged row per case of the new run that the baseline has. Returns 0
 * or an exit status. */
static int pair_cases(comparison *cp, const compare_opts *o) {
  cp->rows = calloc(cp->nf.ncases + cp->bf.ncases + 1, sizeof *cp->rows);
  if (!cp->rows) {
    fprintf(stderr, "arkcos compare: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < cp->nf.ncases; i++) {
    long j = results_match(&cp->bf, &cp->nf.cases[i]);
    if (j < 0) {
      cp->only_new++;
      continue;
    }
    row *r = &cp->rows[cp->nrows++];
    r->base = &cp->bf.cases[j];
    r->cand = &cp->nf.cases[i];
    int status = judge_row(r, &cp->bf, &cp->nf, o->norm, &o->prm, o->trust, one_machine(cp));
    if (status) return status;
  }
  for (size_t j = 0; j < cp->bf.ncases; j++)
    if (results_match(&cp->nf, &cp->bf.cases[j]) < 0) cp->only_base++;
  confirm_across_nsides(cp);
  if (cp->nrows == 0) {
    fprintf(stderr, "arkcos compare: %s and %s have no cases in common\n", o->files[0],
            o->files[1]);
    return 2;
  }
  return 0;
}

static void print_header(const comparison *cp, const compare_opts *o) {
  const char *hb = results_meta_str(&cp->bf, "host"), *hn = results_meta_str(&cp->nf, "host");
  const char *db = results_meta_str(&cp->bf, "date"), *dn = results_meta_str(&cp->nf, "date");
  printf("baseline: %s (host %s, %s)\n", o->files[0], hb ? hb : "?", db ? db : "date ?");
  printf("new:      %s (host %s, %s)\n", o->files[1], hn ? hn : "?", dn ? dn : "date ?");
  const int passive = results_wait_passive(&cp->bf) && results_wait_passive(&cp->nf);
  const char *clk = o->clock == CLOCK_CPU && passive
                        ? "CPU time of each repeat (time.cpu_samples; threads waiting passively)"
                    : o->clock == CLOCK_CPU  ? "CPU time of each repeat (time.cpu_samples)"
                    : o->clock == CLOCK_CPU1 ? "CPU time of each repeat on one thread, "
                                               "elapsed time on more"
                                             : "elapsed time of each repeat";
  const int il = results_interleaved(&cp->bf) && results_interleaved(&cp->nf);
  if (o->norm)
    printf("times:    %s / '%s' of the same file (same nside and threads), %s\n", clk,
           o->norm, il ? "repeat by repeat (interleaved runs)" : "its median (runs not interleaved)");
  else
    printf("times:    %s, not normalised (no yardstick)\n", clk);
  printf("rule:     REGRESSION = median slower by > %.4g%% and beyond noise "
         "(U: Mann-Whitney p < %.4g; range: [min,max] disjoint)\n\n",
         100 * o->prm.threshold, o->prm.alpha);
}

/* Labels every row; returns the width of the case column. */
static int label_rows(comparison *cp) {
  int wcase = 4;
  for (size_t i = 0; i < cp->nrows; i++) {
    results_case_label(cp->rows[i].cand, cp->rows[i].label, sizeof cp->rows[i].label);
    int w = (int)strlen(cp->rows[i].label);
    if (w > wcase) wcase = w;
  }
  return wcase > 100 ? 100 : wcase;
}

static void print_row(const row *r, int wcase, const char *norm) {
  char vb[32], vn[32], ch[16] = "-", n[16], p[16] = "-", rule[8] = "-";
  double b = r->base_raw, c = r->new_raw;
  if (r->kind == ROW_JUDGED || r->kind == ROW_TOO_NOISY) {
    b = r->j.base_median;
    c = r->j.new_median;
    snprintf(ch, sizeof ch, "%+.1f%%", 100 * r->j.change);
    if (r->j.rule == STATS_RULE_UTEST) snprintf(p, sizeof p, "%.3g", r->j.p);
    snprintf(rule, sizeof rule, "%s", stats_rule_name(r->j.rule));
  } else if (isfinite(b) && isfinite(c)) {
    snprintf(ch, sizeof ch, "%+.1f%%", 100 * (c / b - 1));
  }
  int ratio = norm && (r->kind == ROW_JUDGED || r->kind == ROW_TOO_NOISY);
  format_value(b, ratio, vb, sizeof vb);
  format_value(c, ratio, vn, sizeof vn);
  snprintf(n, sizeof n, "%zu/%zu", r->base->nsamples, r->cand->nsamples);
  printf("%-*s  %12s  %12s  %8s  %5s  %8s  %-5s  %-12s", wcase, r->label, vb, vn, ch, n, p,
         rule, row_verdict(r));
  if (norm) {
    char rb[32], rn[32];
    format_value(r->base_raw, 0, rb, sizeof rb);
    format_value(r->new_raw, 0, rn, sizeof rn);
    printf("  %12s  %12s", rb, rn);
  }
  if (r->note[0]) printf("  (%s)", r->note);
  printf("\n");
}

/* The table, one row per case in common; counts the verdicts. */
static void print_table(comparison *cp, const char *norm) {
  int wcase = label_rows(cp);
  printf("%-*s  %12s  %12s  %8s  %5s  %8s  %-5s  %-12s", wcase, "case", "baseline",
         "new", "change", "n", "p", "rule", "verdict");
  if (norm) printf("  %12s  %12s", "base (s)", "new (s)");
  printf("\n");
  for (size_t i = 0; i < cp->nrows; i++) {
    const row *r = &cp->rows[i];
    print_row(r, wcase, norm);
    cp->counts[r->kind == ROW_JUDGED ? (size_t)r->j.verdict : 4 + (size_t)r->kind]++;
    if (row_is_regression(r)) cp->nregress++;
    if (r->kind == ROW_TOO_NOISY) cp->ntoo_noisy++;
  }
}

static size_t judged_count(const comparison *cp) {
  return cp->counts[0] + cp->counts[1] + cp->counts[2] + cp->counts[3] +
         cp->counts[4 + ROW_TOO_NOISY];
}

static void print_summary(const comparison *cp, const char *norm) {
  const size_t *counts = cp->counts;
  printf("\n%zu cases in common, %zu judged: %zu REGRESSION, %zu too-noisy, %zu slower-noise, "
         "%zu same, %zu faster",
         cp->nrows, judged_count(cp), counts[STATS_REGRESSION], counts[4 + ROW_TOO_NOISY],
         counts[STATS_SLOWER_NOISE], counts[STATS_SAME], counts[STATS_FASTER]);
  printf("; not judged: %zu skipped, %zu failed in the new run, %zu failed before",
         counts[4 + ROW_SKIPPED], counts[4 + ROW_FAILED_NEW], counts[4 + ROW_FAILED]);
  if (norm) printf(", %zu yardstick, %zu without yardstick", counts[4 + ROW_YARDSTICK],
                   counts[4 + ROW_NO_YARDSTICK]);
  printf("\n");
  if (cp->only_new || cp->only_base)
    printf("not compared: %zu cases only in the baseline, %zu only in the new run\n",
           cp->only_base, cp->only_new);
  for (size_t i = 0; i < cp->nrows; i++) {
    const row *r = &cp->rows[i];
    if (r->kind == ROW_JUDGED && r->j.rule == STATS_RULE_RANGE &&
        r->base->nsamples + r->cand->nsamples < 4) {
      printf("note: some cases have too few repeats for any noise estimate; "
             "use repeats >= 5\n");
      break;
    }
  }
}

/* The yardstick's raw change is the machine-speed factor; it should be the
 * same at every nside. When it is not, something else ran during one of the
 * runs and the normalised times inherit that. */
static void check_machine_speed(const comparison *cp, const char *norm, double threshold) {
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < cp->nrows; i++) {
    const row *r = &cp->rows[i];
    if (r->kind != ROW_YARDSTICK) continue;
    double ch = r->new_raw / r->base_raw - 1;
    if (ch < lo) lo = ch;
    if (ch > hi) hi = ch;
  }
  if (hi > lo && (1 + hi) / (1 + lo) - 1 > threshold) {
    printf("note: the '%s' yardstick's raw change ranges from %+.0f%% to %+.0f%% across its "
           "cases: the machine's speed was not steady during the runs (other load?), "
           "so the verdicts are less reliable\n", norm, 100 * lo, 100 * hi);
    fprintf(stderr, "arkcos compare: warning: machine speed unsteady during the runs "
                    "(yardstick changes %+.0f%% .. %+.0f%%)\n", 100 * lo, 100 * hi);
  }
}

static void print_regressions(const comparison *cp) {
  printf("\n%zu REGRESSION%s:\n", cp->nregress, cp->nregress > 1 ? "S" : "");
  for (size_t i = 0; i < cp->nrows; i++) {
    const row *r = &cp->rows[i];
    if (!row_is_regression(r)) continue;
    if (r->kind == ROW_FAILED_NEW)
      printf("  %s: %s\n", r->label, r->note);
    else if (r->j.rule == STATS_RULE_UTEST)
      printf("  %s: %+.1f%% (U test p = %.3g)\n", r->label, 100 * r->j.change, r->j.p);
    else
      printf("  %s: %+.1f%% ([min,max] ranges disjoint)\n", r->label, 100 * r->j.change);
  }
}

/* Prints the table and its summary; returns 0 or 3 (regression). */
static int report_comparison(comparison *cp, const compare_opts *o) {
  print_header(cp, o);
  print_table(cp, o->norm);
  print_summary(cp, o->norm);
  if (o->norm) check_machine_speed(cp, o->norm, o->prm.threshold);
  if (cp->counts[4 + ROW_NO_YARDSTICK])
    fprintf(stderr, "arkcos compare: warning: %zu cases have no '%s' case to be "
                    "normalised by and were not judged\n",
            cp->counts[4 + ROW_NO_YARDSTICK], o->norm);
  if (judged_count(cp) == 0)
    fprintf(stderr, "arkcos compare: warning: no case could be judged\n");
  if (cp->ntoo_noisy) {
    printf("\n%zu case%s TOO NOISY TO JUDGE: slower by more than %.4g%%, but the runs cannot "
           "tell that from the machine's noise (the reason is beside each). Judged are runs "
           "made with \"interleave\": true and a FSHT method as the yardstick, on a machine "
           "steady enough that the repeats of a run agree (middle half within %.2gx) and that "
           "its speed stays within %.2gx between the runs; on one machine, a case slower than "
           "its yardstick by more than %.0f%% while its own time did not grow, at one nside only, "
           "may owe that to the yardstick alone getting faster and is not judged either; run "
           "both again, on a quieter machine "
           "(--trust-repeats judges anyway).\n",
           cp->ntoo_noisy, cp->ntoo_noisy > 1 ? "s are" : " is", 100 * o->prm.threshold,
           NOISE_SPREAD, NOISE_MACHINE, 100 * (NOISE_YARDSTICK_ONLY - 1));
    for (size_t i = 0; i < cp->nrows; i++)
      if (cp->rows[i].kind == ROW_TOO_NOISY)
        printf("  %s: %+.1f%% (%s)\n", cp->rows[i].label, 100 * cp->rows[i].j.change,
               cp->rows[i].note);
  }
  if (!cp->nregress) return cp->ntoo_noisy ? 4 : 0;
  print_regressions(cp);
  return 3;
}

/* --normalize-by auto: FSHT iter 0 (the cheapest, steadiest yardstick), else
 * any FSHT, when both files have an ok case of it; else none. */
static const char *auto_yardstick(const comparison *cp) {
  static const char *const choice[] = {"fsht:iter=0", "fsht"};
  for (size_t i = 0; i < sizeof choice / sizeof choice[0]; i++)
    if (count_matching(&cp->bf, choice[i]) && count_matching(&cp->nf, choice[i]))
      return choice[i];
  return NULL;
}

/* --clock auto: CPU time where it is the work itself -- every case when
 * both runs' threads waited passively, else the single-threaded cases --
 * and both files recorded it; elapsed time otherwise. */
static int auto_clock(const comparison *cp) {
  const results_file *b = &cp->bf, *n = &cp->nf;
  if (results_wait_passive(b) && results_wait_passive(n) && results_has_cpu_time(b, 0) &&
      results_has_cpu_time(n, 0))
    return CLOCK_CPU;
  return results_has_cpu_time(b, 1) && results_has_cpu_time(n, 1) ? CLOCK_CPU1 : CLOCK_WALL;
}

int cmd_compare(int argc, char **argv) {
  compare_opts o = {{NULL, NULL}, "auto", CLOCK_AUTO, 0, {0.15, 0.05}};
  int status = parse_args(argc, argv, &o);
  if (status >= 0) return status;
  comparison cp;
  memset(&cp, 0, sizeof cp);
  arkcos_error err = {0, ""};
  if (results_load(o.files[0], &cp.bf, &err)) return report_error(&err);
  if (!results_load(o.files[1], &cp.nf, &err) && o.clock == CLOCK_AUTO)
    o.clock = auto_clock(&cp);
  if (!strcmp(o.norm, "none")) o.norm = NULL;
  else if (!strcmp(o.norm, "auto")) o.norm = err.code ? NULL : auto_yardstick(&cp);
  const int single = o.clock == CLOCK_CPU1;
  if (err.code ||
      ((o.clock == CLOCK_CPU || single) &&
       (results_use_cpu_time(&cp.bf, single, &err) || results_use_cpu_time(&cp.nf, single, &err)))) {
    results_free(&cp.bf);
    results_free(&cp.nf); /* loaded when --clock cpu found it without CPU times */
    return report_error(&err);
  }
  status = check_yardsticks(&cp, o.norm);
  if (!status) status = pair_cases(&cp, &o);
  if (!status) {
    if (!o.norm) warn_hardware(&cp.bf, &cp.nf);
    status = report_comparison(&cp, &o);
  }
  free(cp.rows);
  results_free(&cp.bf);
  results_free(&cp.nf);
  return status;
}
