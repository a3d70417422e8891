/*
 * sweep.c -- `arkcos run CONFIG.json [--out DIR] [--resume] [--force]`:
 * runs every case of a sweep (nside x kernel x method x threads), times it,
 * measures its accuracy against the configured reference and records it in
 * results.json / summary.csv, rewritten after every case.
 *
 * Order: per nside, per kernel, the reference method first (its map is kept
 * for the other methods' metrics), then the other methods, each over the
 * thread counts. Input maps are made once per nside and are not timed.
 * One case: sweep_case.c; the rest of the pieces: sweep.h.
 */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arkcos/arkcos.h"
#include "harness/commands.h"
#include "harness/common/hmpi.h"
#include "harness/common/mapio.h"
#include "harness/common/meta.h"
#include "harness/common/narrow.h"
#include "harness/common/status.h"
#include "harness/sweep/sweep.h"
#include "harness/common/util.h"
#include "harness/common/options.h"


typedef struct run_args {
  const char *cfgpath, *out; /* out: held by vals */
  int resume, force;
  json_t *vals;              /* the options as parsed (options.h) */
} run_args;

static int usage(FILE *f, int status) {
  fprintf(f,
          "usage: arkcos run CONFIG.json [--out DIR] [--resume] [--force]\n"
          "  Runs every case of a JSON sweep (configs/README.md documents the schema)\n"
          "  and writes DIR/results.json and DIR/summary.csv after each case.\n"
          "  --out DIR   output folder (default results/<name>/<UTC timestamp>/)\n"
          "  --resume    continue the run in DIR (default: the newest run of this\n"
          "              config's name): recorded cases are kept, failed ones retried;\n"
          "              refused (exit 2) when the config differs from the recorded one\n"
          "  --force     start over in DIR even if it holds a results.json\n"
          "Exit status: 0 every case ran or was skipped, 1 a case failed, 2 bad config.\n");
  return status;
}

static const opt_arg run_args_table[] = {{OPT_OUT, "-o"}, {OPT_RESUME, NULL}, {OPT_FORCE, NULL}};

/* -1 when the arguments are good, else the exit status. */
static int parse_args(int argc, char **argv, run_args *a) {
  memset(a, 0, sizeof *a);
  json_t *v = json_object();
  int npos = 0;
  int rc = opt_parse_argv("arkcos run", argc, argv, run_args_table,
                          (int)(sizeof run_args_table / sizeof run_args_table[0]), v, &a->cfgpath, 1, &npos);
  a->vals = v;
  a->resume = opt_bool(v, OPT_RESUME);
  a->force = opt_bool(v, OPT_FORCE);
  a->out = opt_str(v, OPT_OUT);
  if (rc < 0) return usage(stdout, 0);
  if (rc) return rc;
  if (!a->cfgpath) return usage(stderr, 2);
  if (a->resume && a->force) {
    fprintf(stderr, "arkcos run: --resume and --force exclude each other\n");
    return 2;
  }
  return -1;
}

/* Everything that can be checked is checked before the first case runs:
 * kernels are built, a FITS input is read. 0, or 2 with a message. */
static int prepare(run_ctx *c, const char *cfgpath) {
  const run_config *cfg = c->cfg;
  c->kernels = calloc((size_t)cfg->nkernels, sizeof *c->kernels);
  c->kernel_width = calloc((size_t)cfg->nkernels, sizeof *c->kernel_width);
  if (!c->kernels || !c->kernel_width) {
    fprintf(stderr, "arkcos: out of memory\n");
    return 1;
  }
  for (int i = 0; i < cfg->nkernels; i++) {
    const cfg_kernel *kc = &cfg->kernels[i];
    arkcos_error kerr = {0, ""};
    if (kc->type == CFG_KERNEL_FILE) {
      char unit[64], neg[96];
      snprintf(unit, sizeof unit, "kernels[%d].unit", i);
      snprintf(neg, sizeof neg, "kernels[%d].allow_negative: true", i);
      arkcos_kernel_file_options fo = {0};
      fo.unit = (arkcos_angle_unit)kc->unit;
      fo.allow_negative = kc->allow_negative;
      fo.cutoff = kc->cutoff_deg * DEG;
      fo.cutoff_rel = kc->cutoff_rel;
      fo.unit_name = unit;
      fo.allow_negative_name = neg;
      c->kernels[i] = arkcos_kernel_from_file_ex(kc->path, &fo, &kerr);
    } else {
      arkcos_kernel_spec s;
      memset(&s, 0, sizeof s);
      s.type = kc->type == CFG_KERNEL_GAUSSIAN ? ARKCOS_KERNEL_GAUSSIAN : ARKCOS_KERNEL_TOPHAT;
      s.fwhm = kc->fwhm_arcmin / 60.0 * DEG;
      s.cutoff = kc->cutoff_deg * DEG;
      s.cutoff_rel = kc->cutoff_rel;
      c->kernels[i] = arkcos_kernel_create(&s, &kerr);
    }
    if (!c->kernels[i]) {
      fprintf(stderr, "arkcos: %s: kernels[%d]: %s\n", cfgpath, i, kerr.msg);
      return 2;
    }
    c->kernel_width[i] = narrow_kernel_width(
        c->kernels[i], kc->type == CFG_KERNEL_GAUSSIAN ? kc->fwhm_arcmin / 60.0 * DEG : 0);
  }
  if (cfg->input.type == CFG_INPUT_FITS) {
    hpx_map_info info;
    arkcos_error err = {0, ""};
    if (hpx_read_map(cfg->input.path, &c->fits_map, &info, &err)) {
      fprintf(stderr, "arkcos: %s: input.path: %s\n", cfgpath, err.msg);
      return 2;
    }
    c->fits_nside = info.nside;
  }
  c->max_threads = 1;
  for (int i = 0; i < cfg->nthreads; i++)
    if (sweep_threads(cfg->threads[i]) > c->max_threads) c->max_threads = sweep_threads(cfg->threads[i]);
  return 0;
}

/* The JSON path of the first difference between two normalized configs. */
static void first_difference(const json_t *a, const json_t *b, const char *path,
                             char *out, size_t len) {
  char sub[512];
  if (json_is_object(a) && json_is_object(b)) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v) {
      snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", k);
      json_t *w = json_object_get(b, k);
      if (!w) {
        snprintf(out, len, "%s", sub);
        return;
      }
      if (!config_equal(v, w)) {
        first_difference(v, w, sub, out, len);
        return;
      }
    }
    json_object_foreach((json_t *)b, k, v) {
      if (!json_object_get(a, k)) {
        snprintf(out, len, "%s%s%s", path, *path ? "." : "", k);
        return;
      }
    }
  } else if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!config_equal(json_array_get(a, i), json_array_get(b, i))) {
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        first_difference(json_array_get(a, i), json_array_get(b, i), sub, out, len);
        return;
      }
  }
  snprintf(out, len, "%s", *path ? path : "(top level)");
}

/* The newest results/<name>/<timestamp>/ that holds a results.json. */
static int latest_run_dir(const char *name, char *out, size_t len) {
  char base[1024];
  snprintf(base, sizeof base, "results/%.900s", name);
  DIR *d = opendir(base);
  if (!d) return 0;
  struct dirent *e;
  char best[256] = "";
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[4600];
    snprintf(p, sizeof p, "%s/%s/results.json", base, e->d_name);
    if (access(p, R_OK) == 0 && strcmp(e->d_name, best) > 0)
      snprintf(best, sizeof best, "%s", e->d_name);
  }
  closedir(d);
  if (!best[0]) return 0;
  snprintf(out, len, "%s/%s", base, best);
  return 1;
}

/* The config recorded in an opened document equals this one (0), else a
 * message and 2. */
static int same_config(run_ctx *c, const char *cfgpath, const char *jpath) {
  json_t *meta = json_object_get(c->doc.root, "meta");
  run_config old;
  arkcos_error oerr = {0, ""};
  json_t *given = json_object_get(meta, "config"), *whole = NULL;
  const char *file = json_string_value(json_object_get(meta, "config_file"));
  if (file) { /* a large config, recorded once beside results.json */
    char p[4400];
    json_error_t je;
    snprintf(p, sizeof p, "%s/%s", c->doc.dir, file);
    given = whole = json_load_file(p, JSON_REJECT_DUPLICATES, &je);
    if (!whole) snprintf(oerr.msg, sizeof oerr.msg, "%.300s: %.180s", p, je.text);
  }
  memset(&old, 0, sizeof old);
  if (!given || (oerr.msg[0] == 0 && config_from_json(given, cfgpath, &old, &oerr)) || oerr.msg[0]) {
    fprintf(stderr, "arkcos: cannot resume %s: its recorded config is not valid%s%s\n",
            jpath, oerr.msg[0] ? ": " : "", oerr.msg);
    config_free(&old);
    json_decref(whole);
    return 2;
  }
  json_decref(whole);
  int same = config_equal(old.normalized, c->cfg->normalized);
  if (!same) {
    char where[512];
    first_difference(old.normalized, c->cfg->normalized, "", where, sizeof where);
    fprintf(stderr,
            "arkcos: cannot resume %s: %s differs from the config recorded there "
            "(first difference: %s); use another --out, or --force to start over\n",
            jpath, cfgpath, where);
  }
  config_free(&old);
  return same ? 0 : 2;
}

/* Continues the run of dir: checks its config, adds this session to
 * meta.resumed. 0, or the exit status. */
static int resume_doc(run_ctx *c, const char *cfgpath, const char *dir, const char *jpath,
                      int full_argc, char **full_argv) {
  arkcos_error err = {0, ""};
  if (results_doc_open(&c->doc, dir, &err)) {
    report_error(&err);
    return 2;
  }
  int rc = same_config(c, cfgpath, jpath);
  if (rc) return rc;
  json_t *meta = json_object_get(c->doc.root, "meta");
  json_t *res = json_object_get(meta, "resumed");
  if (!json_is_array(res)) {
    res = json_array();
    json_object_set_new(meta, "resumed", res);
  }
  json_t *now = meta_collect(full_argc, full_argv);
  json_t *r = json_object();
  json_object_set(r, "date", json_object_get(now, "date"));
  json_object_set(r, "command", json_object_get(now, "command"));
  json_object_set(r, "host", json_object_get(now, "host"));
  json_object_set(r, "git_commit", json_object_get(now, "git_commit"));
  json_t *wp = sweep_wait_policy(), *was = json_object_get(meta, "omp_wait_policy");
  if (!json_equal(wp, was)) /* the cases' CPU times were taken under two policies */
    json_object_set_new(meta, "omp_wait_policy", json_string("mixed (resumed)"));
  json_object_set_new(r, "omp_wait_policy", wp);
  json_array_append_new(res, r);
  json_decref(now);
  if (results_doc_save(&c->doc, &err)) {
    report_error(&err);
    return 1;
  }
  return 0;
}

/* Beyond this size a config is not copied into results.json, which is
 * rewritten after every case (a 100 MB grid would be written that often). */
#define CONFIG_INLINE_MAX 1000000

/* meta.config: the config itself, or, beyond CONFIG_INLINE_MAX, its small
 * members only, the whole written once to dir/config.json and named by
 * meta.config_file with its size and hash (resume reads it from there). */
static int record_config(json_t *meta, json_t *given, const char *dir, arkcos_error *err) {
  char *text = json_dumps(given, JSON_COMPACT | JSON_SORT_KEYS);
  if (!text) return arkcos_fail(err, ARKCOS_ENOMEM, "cannot serialise the config");
  const size_t n = strlen(text);
  if (n <= CONFIG_INLINE_MAX) {
    free(text);
    json_object_set(meta, "config", given);
    return ARKCOS_OK;
  }
  char path[4200], hash[32];
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)text[i]) * 1099511628211ULL;
  snprintf(hash, sizeof hash, "fnv1a64:%016llx", (unsigned long long)h);
  snprintf(path, sizeof path, "%s/config.json", dir);
  int rc = atomic_write_text(path, text, err);
  free(text);
  if (rc) return rc;
  json_t *small = json_object();
  const char *k;
  json_t *v;
  json_object_foreach(given, k, v) {
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (t && strlen(t) <= 65536) json_object_set(small, k, v);
    free(t);
  }
  json_object_set_new(meta, "config", small);
  json_object_set_new(meta, "config_file", json_string("config.json"));
  json_object_set_new(meta, "config_bytes", json_integer((json_int_t)n));
  json_object_set_new(meta, "config_hash", json_string(hash));
  return ARKCOS_OK;
}

/* A new document in dir (have_dir) or results/<name>/<UTC timestamp>/. */
static int create_doc(run_ctx *c, const run_args *a, char *dir, size_t len, int have_dir,
                      int full_argc, char **full_argv) {
  const run_config *cfg = c->cfg;
  arkcos_error err = {0, ""};
  (void)len;
  if (a->resume)
    fprintf(stderr, "arkcos run: nothing to resume%s%s; starting a new run\n",
            have_dir ? " in " : "", have_dir ? dir : "");
  json_t *meta = meta_collect(full_argc, full_argv);
  if (record_config(meta, cfg->given, dir, &err)) {
    json_decref(meta);
    report_error(&err);
    return exit_status_of(err.code);
  }
  json_object_set_new(meta, "config_path", json_string(a->cfgpath));
  json_object_set_new(meta, "omp_wait_policy", sweep_wait_policy());
  if (results_doc_create(&c->doc, dir, meta, a->force, &err)) {
    report_error(&err);
    return exit_status_of(err.code);
  }
  return 0;
}

/* The folder is this run's alone: a lock (a second run on it refuses),
 * then the temporary files a killed run left are removed, and SIGINT /
 * SIGTERM say how to continue. 0, or the exit status. */
static int claim_folder(run_ctx *c, const char *dir) {
  arkcos_error err = {0, ""};
  if (results_doc_mkdirs(dir, &err) || folder_lock(dir, "arkcos run", &c->lock_fd, &err)) {
    fprintf(stderr, "arkcos run: %s\n", err.msg);
    return exit_status_of(err.code);
  }
  static const char *const subs[] = {"", "/maps", "/patches", "/spectra"};
  int n = 0;
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
    char p[4200];
    snprintf(p, sizeof p, "%s%s", dir, subs[i]);
    n += atomic_remove_stale(p);
  }
  if (n)
    fprintf(stderr, "arkcos run: removed %d temporary file%s an interrupted run left in %s\n", n,
            n == 1 ? "" : "s", dir);
  char note[2048];
  snprintf(note, sizeof note,
           "\narkcos run: stopped by a signal; the finished cases are in %.500s/results.json; "
           "continue with: arkcos run %.300s --out %.500s --resume\n",
           dir, c->cfgpath, dir);
  signals_stop_note(note);
  return 0;
}

/* The output folder and document: resumed or new. 0, or the exit status. */
static int open_doc(run_ctx *c, const run_args *a, int full_argc, char **full_argv) {
  char dir[4096], jpath[4200];
  int have_dir = 0;
  if (a->out) {
    snprintf(dir, sizeof dir, "%s", a->out);
    have_dir = 1;
  } else if (a->resume) {
    have_dir = latest_run_dir(c->cfg->name, dir, sizeof dir);
  }
  if (!have_dir) { /* results/<name>/<UTC timestamp>/ */
    char stamp[64];
    meta_utc_time(stamp, sizeof stamp, 1);
    snprintf(dir, sizeof dir, "results/%s/%s", c->cfg->name, stamp);
    for (int k = 2; access(dir, F_OK) == 0 && k < 100; k++)
      snprintf(dir, sizeof dir, "results/%s/%s-%d", c->cfg->name, stamp, k);
  }
  int rc = claim_folder(c, dir);
  if (rc) return rc;
  snprintf(jpath, sizeof jpath, "%s/results.json", dir);
  if (a->resume && have_dir && access(jpath, F_OK) == 0)
    return resume_doc(c, a->cfgpath, dir, jpath, full_argc, full_argv);
  return create_doc(c, a, dir, sizeof dir, have_dir, full_argc, full_argv);
}

/* A case still to run: not recorded, or recorded as failed. */
static int to_run(run_ctx *c, int64_t nside, int ki, int mi, int threads, char *id, size_t len) {
  sweep_case_id(c->cfg, nside, ki, mi, threads, c->spin, id, len);
  json_t *old = results_doc_find(&c->doc, id);
  const char *st = json_string_value(json_object_get(old, "status"));
  return !old || (st && !strcmp(st, "failed"));
}

static void count_work(run_ctx *c) {
  const run_config *cfg = c->cfg;
  c->total = cfg->nnside * cfg->nkernels * cfg->nmethods * cfg->nthreads * sweep_nspins(cfg);
  for (int a = 0; a < cfg->nnside; a++)
    for (int ki = 0; ki < cfg->nkernels; ki++)
      for (c->spin = 0; c->spin < 2 * sweep_nspins(cfg); c->spin += 2) /* input.pol */
        for (int mi = 0; mi < cfg->nmethods; mi++)
          for (int ti = 0; ti < cfg->nthreads; ti++) {
            char id[2048];
            c->to_run += to_run(c, cfg->nside[a], ki, mi, cfg->threads[ti], id, sizeof id);
          }
  c->spin = 0;
  c->progress = isatty(2);
  const char *stop = getenv("ARKCOS_TEST_STOP_AFTER");
  c->stop_after = stop ? atol(stop) : 0;
  c->t_start = wall_time();
}

static void format_duration(double s, char *buf, size_t len) {
  if (!(s >= 0) || !isfinite(s)) {
    snprintf(buf, len, "?");
    return;
  }
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, len, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else
    snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
}

static void progress(run_ctx *c, const char *what) {
  if (!c->progress) return;
  double el = wall_time() - c->t_start;
  char e[32], r[32];
  format_duration(el, e, sizeof e);
  if (c->ran_now > 0)
    format_duration(el / c->ran_now * (c->to_run - c->ran_now), r, sizeof r);
  else
    snprintf(r, sizeof r, "?");
  fprintf(stderr, "\r\033[K[%d/%d] %.100s  elapsed %s  remaining ~%s", c->index, c->total,
          what, e, r);
  fflush(stderr);
}

/* ARKCOS_TEST_STOP_AFTER: a simulated kill once that many cases ran. */
static void maybe_stop(run_ctx *c) {
  if (c->stop_after > 0 && c->ran_now >= c->stop_after) {
    if (c->progress) fputc('\n', stderr);
    fprintf(stderr, "arkcos run: ARKCOS_TEST_STOP_AFTER=%ld: killing the run\n", c->stop_after);
    raise(SIGKILL);
  }
}

/* run_kernel with config "interleave": per thread count, the methods still
 * to run (the reference first) as one group whose repeats go in turns. */
static int run_kernel_interleaved(run_ctx *c, int64_t nside, int ki, arkcos_geometry **g,
                                  input_state *in) {
  const run_config *cfg = c->cfg;
  ref_state rs;
  memset(&rs, 0, sizeof rs);
  int *mis = malloc(sizeof *mis * (size_t)cfg->nmethods);
  if (!mis) return 1;
  for (int ti = 0; ti < cfg->nthreads; ti++) {
    int n = 0;
    for (int step = -1; step < cfg->nmethods; step++) {
      int mi = step < 0 ? cfg->reference : step;
      if (mi < 0 || (step >= 0 && mi == cfg->reference)) continue;
      char id[2048], why[600];
      c->index++;
      if (!to_run(c, nside, ki, mi, cfg->threads[ti], id, sizeof id)) continue;
      const int mr = sweep_memory_reason(c, &cfg->methods[mi], nside, why, sizeof why);
      if (mr) {
        (mr == 2 ? sweep_record_fail : sweep_record_skip)(c, nside, ki, mi, cfg->threads[ti], id,
                                                          &rs, why);
        c->ran_now++;
        continue;
      }
      mis[n++] = mi;
    }
    if (!n) continue;
    arkcos_error err = {0, ""};
    if (!*g && !(*g = arkcos_geometry_healpix(nside, &err))) {
      if (c->progress) fputc('\n', stderr);
      report_error(&err);
      free(mis);
      return 1;
    }
    char slug[512];
    sweep_case_slug(cfg, nside, ki, mis[0], cfg->threads[ti], c->spin, slug, sizeof slug);
    progress(c, slug);
    sweep_run_group(c, *g, ki, mis, n, cfg->threads[ti], in, &rs);
    c->ran_now += n;
    maybe_stop(c);
  }
  free(mis);
  sweep_ref_free(&rs);
  return 0;
}

/* Every case of one (nside, kernel), the reference method first; the
 * geometry is made at the first case that runs. 1 if it cannot be made. */
static int run_kernel(run_ctx *c, int64_t nside, int ki, arkcos_geometry **g,
                      input_state *in) {
  const run_config *cfg = c->cfg;
  ref_state rs;
  memset(&rs, 0, sizeof rs);
  int ref_shared = !sweep_mpi_active(); /* MPI: the reference sent to every rank */
  for (int step = -1; step < cfg->nmethods; step++) {
    int mi = step < 0 ? cfg->reference : step;
    if (mi < 0 || (step >= 0 && mi == cfg->reference)) continue;
    for (int ti = 0; ti < cfg->nthreads; ti++) {
      char id[2048], slug[512];
      c->index++;
      if (!to_run(c, nside, ki, mi, cfg->threads[ti], id, sizeof id)) continue;
      char why[600];
      const int mr = sweep_memory_reason(c, &cfg->methods[mi], nside, why, sizeof why);
      if (mr) {
        if (sweep_mpi_owner(c) == hmpi_rank()) { /* MPI: one rank records it */
          (mr == 2 ? sweep_record_fail : sweep_record_skip)(c, nside, ki, mi, cfg->threads[ti],
                                                            id, &rs, why);
          c->ran_now++;
        }
        continue;
      }
      arkcos_error err = {0, ""};
      if (!*g && !(*g = arkcos_geometry_healpix(nside, &err))) {
        if (c->progress) fputc('\n', stderr);
        report_error(&err);
        return 1;
      }
      if (!ref_shared && step >= 0) ref_shared = 1, sweep_mpi_reference(c, *g, ki, in, &rs, -1);
      const int owner = sweep_mpi_owner(c);
      if (owner != hmpi_rank()) {
        if (!ref_shared) ref_shared = 1, sweep_mpi_reference(c, *g, ki, in, &rs, owner);
        continue;
      }
      sweep_case_slug(cfg, nside, ki, mi, cfg->threads[ti], c->spin, slug, sizeof slug);
      progress(c, slug);
      sweep_run_case(c, *g, ki, mi, cfg->threads[ti], id, in, &rs);
      c->ran_now++;
      maybe_stop(c);
      if (!ref_shared) ref_shared = 1, sweep_mpi_reference(c, *g, ki, in, &rs, owner);
    }
  }
  sweep_ref_free(&rs);
  return sweep_mpi_merge(c);
}

/* The summary line over the whole document (a resumed run included); the
 * exit status: 1 if a case failed. */
static int summary(run_ctx *c) {
  int nok = 0, nskip = 0, nfail = 0;
  json_t *cases = json_object_get(c->doc.root, "cases");
  size_t i;
  json_t *cj;
  json_array_foreach(cases, i, cj) {
    const char *st = json_string_value(json_object_get(cj, "status"));
    if (st && !strcmp(st, "ok")) nok++;
    else if (st && !strcmp(st, "skipped")) nskip++;
    else nfail++;
  }
  printf("arkcos run: %zu cases (%d ok, %d skipped, %d failed; %d run now) in %.1f s -> %s\n",
         json_array_size(cases), nok, nskip, nfail, c->ran_now, wall_time() - c->t_start,
         c->doc.json_path);
  if (c->nwarned)
    fprintf(stderr, "arkcos run: warning: %d case%s run now sample%s the kernel with fewer than "
            "%g pixels per FWHM; each says what that costs in its \"warning\" (%s)\n",
            c->nwarned, c->nwarned == 1 ? "" : "s", c->nwarned == 1 ? "s" : "", NARROW_WARN,
            c->doc.json_path);
  return nfail ? 1 : 0;
}

static int run_all(run_ctx *c) {
  const run_config *cfg = c->cfg;
  count_work(c);
  for (int a = 0; a < cfg->nnside; a++) {
    arkcos_geometry *g = NULL;
    input_state in;
    memset(&in, 0, sizeof in);
    for (int ki = 0; ki < cfg->nkernels; ki++) /* input.pol: scalar cases, then spin 2 */
      for (c->spin = 0; c->spin < 2 * sweep_nspins(cfg); c->spin += 2)
        if ((cfg->interleave ? run_kernel_interleaved : run_kernel)(c, cfg->nside[a], ki, &g, &in))
          return 1;
    sweep_input_free(&in);
    arkcos_geometry_destroy(g);
  }
  if (c->progress) fprintf(stderr, "\r\033[K");
  return hmpi_max(hmpi_rank() == 0 ? summary(c) : 0); /* MPI: rank 0 holds the document */
}

int cmd_run(int argc, char **argv) {
  sweep_wait_passively(argc, argv); /* the threads' CPU time is their work (sweep.h) */
  hmpi_hold_stderr(); /* MPI: the checks' messages once */
  run_args a;
  int status = parse_args(argc, argv, &a);
  if (status >= 0) {
    json_decref(a.vals);
    return hmpi_checks_done(status);
  }
  run_config cfg;
  arkcos_error err = {0, ""};
  if (config_load(a.cfgpath, &cfg, &err)) {
    config_free(&cfg);
    json_decref(a.vals);
    return hmpi_checks_done(report_error(&err));
  }
  if (cfg.oversample_at)
    fprintf(stderr, "arkcos run: warning: methods[%d].oversample has no effect (the polar caps are "
                    "exact now); ignored\n", cfg.oversample_at - 1);
  run_ctx c;
  memset(&c, 0, sizeof c);
  c.cfg = &cfg;
  /* the command line as typed: "arkcos run ..." */
  char **full_argv = malloc((size_t)(argc + 2) * sizeof *full_argv);
  c.lock_fd = -1;
  c.cfgpath = a.cfgpath;
  status = full_argv ? prepare(&c, a.cfgpath) : 2;
  if (!status) {
    full_argv[0] = "arkcos";
    for (int i = 0; i <= argc; i++) full_argv[i + 1] = i < argc ? argv[i] : NULL;
    if (!(status = sweep_mpi_check(&c, a.cfgpath)) && hmpi_rank() == 0) /* MPI: rank 0's folder */
      status = open_doc(&c, &a, argc + 1, full_argv);
  }
  status = hmpi_checks_done(status);
  if (!status) status = sweep_mpi_share_doc(&c);
  if (!status) status = run_all(&c);
  sweep_mpi_free(&c);
  free(full_argv);
  results_doc_free(&c.doc);
  for (int i = 0; c.kernels && i < cfg.nkernels; i++) arkcos_kernel_destroy(c.kernels[i]);
  free(c.kernels);
  free(c.kernel_width);
  free(c.fits_map);
  config_free(&cfg);
  json_decref(a.vals);
  signals_stop_note(NULL);
  if (c.lock_fd >= 0) close(c.lock_fd); /* the lock, after the last write */
  return status;
}
