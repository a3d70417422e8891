/*
 * sweep_case.c -- one case of a sweep: why it cannot run here (skip
 * reasons, memory estimate), running it, and recording it in the results
 * document (status, timing, memory, metrics, outputs).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/common/narrow.h"
#include "harness/sweep/sweep.h"
#include "harness/common/util.h"
#include "harness/common/options.h"


int sweep_nspins(const run_config *cfg) { return cfg->input.pol ? 2 : 1; }

/* A spin-2 case's id ends in " pol=true", so that it never equals the id of
 * the scalar case of the same parameters (and scalar ids stay as before). */
void sweep_case_id(const run_config *cfg, int64_t nside, int ki, int mi, int threads, int spin,
                   char *buf, size_t len) {
  snprintf(buf, len, "nside=%lld kernel=%s method=%s threads=%d%s", (long long)nside,
           cfg->kernels[ki].id, cfg->methods[mi].id, threads, spin == 2 ? " pol=true" : "");
}

/* The kernel part of a case slug, e.g. gaussian-fwhm60-cut2.5. */
static void kernel_slug(const cfg_kernel *k, char *ks, size_t len) {
  char n1[64];
  const char *type = json_string_value(json_object_get(k->json, "type"));
  snprintf(ks, len, "%s", type ? type : "kernel");
  if (k->type == CFG_KERNEL_GAUSSIAN) {
    opt_format_number(k->fwhm_arcmin, n1, sizeof n1);
    snprintf(ks + strlen(ks), len - strlen(ks), "-fwhm%s", n1);
  }
  if (k->type == CFG_KERNEL_FILE) {
    const char *p = json_string_value(json_object_get(k->json, "path"));
    const char *b = p ? strrchr(p, '/') : NULL;
    uint64_t h = 1469598103934665603ULL; /* basenames may repeat: add a hash */
    for (const char *c = p ? p : ""; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    snprintf(ks + strlen(ks), len - strlen(ks), "-%.60s-%06llx", b ? b + 1 : p ? p : "",
             (unsigned long long)(h & 0xffffff));
  }
  if (k->cutoff_deg > 0) {
    opt_format_number(k->cutoff_deg, n1, sizeof n1);
    snprintf(ks + strlen(ks), len - strlen(ks), "-cut%s", n1);
  }
  if (k->cutoff_rel > 0) {
    opt_format_number(k->cutoff_rel, n1, sizeof n1);
    snprintf(ks + strlen(ks), len - strlen(ks), "-rel%s", n1);
  }
}

/* A short file-name-safe name for a case's outputs, e.g.
 * n512_gaussian-fwhm60-cut2.5_arkcos-cpu-enhanced-double_t2 (the case id
 * itself is recorded beside every path in results.json). */
void sweep_case_slug(const run_config *cfg, int64_t nside, int ki, int mi, int threads, int spin,
                     char *out, size_t len) {
  const cfg_method *m = &cfg->methods[mi];
  char ks[400], ms[300], n2[64];
  kernel_slug(&cfg->kernels[ki], ks, sizeof ks);
  snprintf(ms, sizeof ms, "%s", m->label);
  if (m->spec.kind == METHOD_FSHT) {
    opt_format_number(m->lmax_factor, n2, sizeof n2);
    snprintf(ms + strlen(ms), sizeof ms - strlen(ms), "-lf%s", n2);
  }
  if (m->spec.kind == METHOD_DIRECT && m->sample > 0)
    snprintf(ms + strlen(ms), sizeof ms - strlen(ms), "-s%lld", (long long)m->sample);
  snprintf(out, len, "n%lld_%s_%s_t%d%s", (long long)nside, ks, ms, threads,
           spin == 2 ? "_pol" : "");
  for (char *c = out; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '.' || *c == '-' || *c == '_'))
      *c = '_';
}

/* Peak resident memory of a case: the kernel's high-water mark is reset
 * before the case (Linux /proc/self/clear_refs "5") and read after it; where
 * that is not possible, the process peak since start. */
static void peak_reset(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f) return;
  fputs("5", f);
  fclose(f);
}

static double peak_read(void) {
  FILE *f = fopen("/proc/self/status", "r");
  double v = -1;
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f))
      if (!strncmp(line, "VmHWM:", 6)) v = strtod(line + 6, NULL) * 1024.0;
    fclose(f);
  }
  return v > 0 ? v : (double)peak_rss_bytes();
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static json_t *case_base(run_ctx *c, const char *id, int64_t nside, int ki, int mi,
                         int threads) {
  const run_config *cfg = c->cfg;
  json_t *cj = json_object();
  json_object_set_new(cj, "id", json_string(id));
  json_object_set_new(cj, "nside", json_integer(nside));
  json_t *kj = json_deep_copy(cfg->kernels[ki].json);
  double cut = arkcos_kernel_cutoff(c->kernels[ki]) / DEG;
  json_object_set_new(kj, "cutoff_deg", json_real(cut));
  json_object_set_new(kj, "cutoff_rel", json_real(arkcos_kernel_cutoff_level(c->kernels[ki])));
  json_object_set_new(kj, "support_deg", json_real(2 * cut));
  json_object_set_new(cj, "kernel", kj);
  json_object_set_new(cj, "method", json_deep_copy(cfg->methods[mi].json));
  json_object_set_new(cj, "threads", json_integer(threads));
  json_object_set_new(cj, "threads_used", json_integer(sweep_threads(threads)));
  if (c->spin == 2) json_object_set_new(cj, "pol", json_true()); /* Q, U as one spin-2 field */
  json_object_set_new(cj, "pixels_per_fwhm",
                      json_real(narrow_pixels_per_fwhm(c->kernel_width[ki], nside)));
  json_object_set_new(cj, "status", json_string("ok")); /* set for real later; keeps the key order */
  return cj;
}

/* Stages of the repeat whose time is the (lower) median, plan time and
 * memory, backend and bound (arkcos). sorted: the samples in ascending
 * order. "bound" is the plan's a-priori bound against the direct sum
 * (max |out - direct| <= bound * max |input|); JSON has no infinity, so a
 * plan without a bound (paper mode) records null: present but null means
 * "no bound", absent means results written before the key existed. */
static void put_stages(json_t *cj, const timing *t, const double *sorted) {
  int n = t->n, at = 0;
  double med = sorted[(n - 1) / 2];
  for (int i = 0; i < n; i++)
    if (t->samples[i] == med) {
      at = i;
      break;
    }
  const arkcos_stage_times *s = &t->stages[at];
  json_t *st = json_object();
  json_object_set_new(st, "map_fft", json_real(s->map_fft));
  json_object_set_new(st, "kernel_eval", json_real(s->kernel_eval));
  json_object_set_new(st, "kernel_fft", json_real(s->kernel_fft));
  json_object_set_new(st, "reduction", json_real(s->reduction));
  json_object_set_new(st, "direct", json_real(s->direct)); /* part of reduction */
  json_object_set_new(st, "map_ifft", json_real(s->map_ifft));
  json_object_set_new(st, "h2d", json_real(s->h2d));
  json_object_set_new(st, "d2h", json_real(s->d2h));
  json_object_set_new(st, "other", json_real(s->other));
  json_object_set_new(cj, "stages", st);
  json_object_set_new(cj, "plan_time", json_real(t->plan_time));
  json_t *ps = json_object(); /* the plan's stages (seconds) */
  json_object_set_new(ps, "fftw", json_real(t->plan_setup.fftw));
  json_object_set_new(ps, "tables", json_real(t->plan_setup.tables));
  json_object_set_new(ps, "kernel_spectra", json_real(t->plan_setup.kernel_spectra));
  json_object_set_new(ps, "total", json_real(t->plan_setup.total));
  json_object_set_new(cj, "plan_stages", ps);
  json_object_set_new(cj, "plan_memory", json_integer((json_int_t)t->plan_memory));
  json_object_set_new(cj, "backend_used",
                      json_string(t->backend_used == ARKCOS_BACKEND_GPU ? "gpu" : "cpu"));
  json_object_set_new(cj, "bound", isfinite(t->bound) ? json_real(t->bound) : json_null());
  if (t->inexact[0]) json_object_set_new(cj, "not_exact", json_string(t->inexact)); /* why not */
}

static void put_timing(json_t *cj, const cfg_method *m, const timing *t) {
  int n = t->n;
  double *sorted = malloc((size_t)n * sizeof *sorted);
  json_t *tj = json_object(), *sj = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(sj, json_real(t->samples[i]));
  if (sorted && n > 0) {
    memcpy(sorted, t->samples, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    json_object_set_new(tj, "min", json_real(sorted[0]));
    json_object_set_new(tj, "median",
                        json_real(n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2])));
    json_object_set_new(tj, "max", json_real(sorted[n - 1]));
  }
  json_object_set_new(tj, "samples", sj);
  if (t->cpu_samples) { /* `arkcos compare --clock cpu` */
    json_t *cpu = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(cpu, json_real(t->cpu_samples[i]));
    json_object_set_new(tj, "cpu_samples", cpu);
  }
  json_object_set_new(tj, "warmup", json_integer(m->warmup));
  json_object_set_new(cj, "time", tj);
  if (m->spec.kind == METHOD_ARKCOS && n > 0 && sorted) put_stages(cj, t, sorted);
  if (m->spec.kind == METHOD_FSHT) json_object_set_new(cj, "lmax", json_integer(t->lmax));
  free(sorted);
}

/* Records a case as skipped or failed (why: the reason); the reference
 * method's first outcome also says why there is no reference (detail). */
static void put_not_ok(run_ctx *c, json_t *cj, int mi, ref_state *rs, const char *status,
                       const char *why, const char *detail) {
  const cfg_method *m = &c->cfg->methods[mi];
  json_object_set_new(cj, "status", json_string(status));
  json_object_set_new(cj, "reason", json_string(why));
  json_object_del(cj, "metrics");
  json_object_del(cj, "outputs");
  if (mi == c->cfg->reference && !rs->tried) {
    rs->tried = 1;
    snprintf(rs->why, sizeof rs->why, "reference %s %s: %s", m->label, status, detail);
  }
}

/* A case whose samples were taken (r): its timing, peak memory, the
 * reference's output kept for the other methods, metrics and outputs in
 * cj; nonzero with err on failure. */
static int record_ran(run_ctx *c, const arkcos_geometry *g, int ki, int mi, int threads,
                      input_state *in, ref_state *rs, json_t *cj, method_run *r, arkcos_error *err) {
  const cfg_method *m = &c->cfg->methods[mi];
  char slug[256];
  sweep_case_slug(c->cfg, g->nside, ki, mi, threads, c->spin, slug, sizeof slug);
  json_object_set_new(cj, "status", json_string("ok"));
  put_timing(cj, m, &r->t);
  json_object_set_new(cj, "peak_memory", json_integer((json_int_t)peak_read()));
  if (mi == c->cfg->reference && !rs->tried) { /* keep the first reference output */
    rs->tried = rs->available = 1;
    rs->out = r->out;
    memset(&r->out, 0, sizeof r->out);
  }
  const method_out *mine = r->out.map || r->out.vals ? &r->out : &rs->out;
  json_t *mj = sweep_metrics(c, g, ki, in, rs, mine, cj);
  return sweep_write_outputs(c, g, ki, mi, in, rs, mine, slug, cj, mj, err);
}

/* Runs the case and records its results in cj; nonzero with err on failure. */
static int run_and_record(run_ctx *c, const arkcos_geometry *g, int ki, int mi, int threads,
                          input_state *in, ref_state *rs, json_t *cj, arkcos_error *err) {
  const cfg_method *m = &c->cfg->methods[mi];
  method_run r;
  memset(&r, 0, sizeof r);
  const int pol = c->spin == 2;
  const double *in0 = pol ? in->q : in->map;
  int rc = sweep_make_input(c, g, in, err);
  if (!rc) {
    peak_reset();
    in0 = pol ? in->q : in->map; /* made now */
    rc = sweep_method_begin(&r, m, g, c->kernels[ki], in0, pol ? in->u : NULL, sweep_threads(threads),
                            m->repeats, m->warmup, sweep_plan_memory_limit(c, m, g->nside), err);
  }
  for (int i = 0; i < m->repeats && !rc; i++) rc = sweep_method_sample(&r, in0, err);
  sweep_method_end(&r);
  if (!rc) rc = record_ran(c, g, ki, mi, threads, in, rs, cj, &r, err);
  method_out_free(&r.out);
  timing_free(&r.t);
  return rc;
}

/* A pixel-space method with the kernel below NARROW_WARN pixels per FWHM:
 * the "warning" of the case, with the error expected at that sampling
 * (harness/common/narrow.h; the constant map's range from the measured table). */
static void put_sampling_warning(run_ctx *c, const arkcos_geometry *g, int ki, int mi,
                                 json_t *cj) {
  const double w = c->kernel_width[ki];
  if (c->cfg->methods[mi].spec.kind == METHOD_FSHT ||
      narrow_pixels_per_fwhm(w, g->nside) >= NARROW_WARN)
    return;
  char msg[1024];
  narrow_warning(w, c->cfg->kernels[ki].type == CFG_KERNEL_GAUSSIAN, g->nside, NAN, NAN, 0,
                 msg, sizeof msg);
  json_object_set_new(cj, "warning", json_string(msg));
  c->nwarned++;
}

/* Puts the recorded case into the document; exits when it cannot be
 * written (running cases that are not recorded would be lost). */
static void record(run_ctx *c, json_t *cj) {
  sweep_mpi_note(cj);
  if (sweep_mpi_hold(c, cj)) return; /* MPI: recorded by rank 0 (sweep_mpi.c) */
  arkcos_error werr = {0, ""};
  if (results_doc_put(&c->doc, cj, &werr)) {
    if (c->progress) fputc('\n', stderr);
    report_error(&werr);
    exit(1); /* cannot record: stop rather than run unrecorded cases */
  }
}

void sweep_record_skip(run_ctx *c, int64_t nside, int ki, int mi, int threads, const char *id,
                       ref_state *rs, const char *why) {
  json_t *cj = case_base(c, id, nside, ki, mi, threads);
  put_not_ok(c, cj, mi, rs, "skipped", why, why);
  record(c, cj);
}

void sweep_record_fail(run_ctx *c, int64_t nside, int ki, int mi, int threads, const char *id,
                       ref_state *rs, const char *why) {
  json_t *cj = case_base(c, id, nside, ki, mi, threads);
  put_not_ok(c, cj, mi, rs, "failed", why, why);
  record(c, cj);
}

/* Runs (or skips) one case and records it. Returns 1 if the case failed. */
int sweep_run_case(run_ctx *c, const arkcos_geometry *g, int ki, int mi, int threads,
                   const char *id, input_state *in, ref_state *rs) {
  json_t *cj = case_base(c, id, g->nside, ki, mi, threads);
  arkcos_error err = {0, ""};
  char why[900];
  int failed = 0;
  const int skip = sweep_skip_reason(c, &c->cfg->methods[mi], g, c->kernels[ki], why, sizeof why);
  if (skip) {
    failed = skip == 2; /* cannot fit in what the process can have */
    put_not_ok(c, cj, mi, rs, failed ? "failed" : "skipped", why, why);
  } else if (run_and_record(c, g, ki, mi, threads, in, rs, cj, &err)) {
    failed = 1;
    put_not_ok(c, cj, mi, rs, "failed", err.msg[0] ? err.msg : "unknown error", err.msg);
  } else {
    put_sampling_warning(c, g, ki, mi, cj);
  }
  record(c, cj);
  return failed;
}

/* The cases of one (nside, kernel, threads) with config "interleave": every
 * method is planned and warmed up, then the repeats go in turns (repeat 1 of
 * each method, repeat 2 of each, ...), so that a machine whose speed drifts
 * during the run slows every method alike and the ratios between them, which
 * `arkcos compare --normalize-by` judges, stay put. Then each case is
 * recorded, mis[0] first (the reference, when it is among them). Every
 * method's plan is held at once: peak_memory is the group's. Returns the
 * number of cases that failed. */
int sweep_run_group(run_ctx *c, const arkcos_geometry *g, int ki, const int *mis, int n,
                    int threads, input_state *in, ref_state *rs) {
  method_run *r = calloc((size_t)n, sizeof *r);
  json_t **cj = calloc((size_t)n, sizeof *cj);
  arkcos_error *errs = calloc((size_t)n, sizeof *errs);
  int *state = calloc((size_t)n, sizeof *state); /* 0 timing, 1 skipped, 2 failed, 3 refused */
  if (!r || !cj || !errs || !state) {
    fprintf(stderr, "arkcos: out of memory\n");
    exit(1);
  }
  arkcos_error ierr = {0, ""};
  const int irc = sweep_make_input(c, g, in, &ierr);
  const int pol = c->spin == 2; /* input.pol: Q, U as one spin-2 field */
  const double *in0 = pol ? in->q : in->map, *in_u = pol ? in->u : NULL;
  peak_reset();
  int rounds = 0;
  for (int j = 0; j < n; j++) {
    const cfg_method *m = &c->cfg->methods[mis[j]];
    char id[2048], why[900];
    sweep_case_id(c->cfg, g->nside, ki, mis[j], threads, c->spin, id, sizeof id);
    cj[j] = case_base(c, id, g->nside, ki, mis[j], threads);
    const int skip = sweep_skip_reason(c, m, g, c->kernels[ki], why, sizeof why);
    if (skip) { /* 2: cannot fit in what the process can have */
      put_not_ok(c, cj[j], mis[j], rs, skip == 2 ? "failed" : "skipped", why, why);
      state[j] = skip == 2 ? 3 : 1;
    } else if (irc) {
      errs[j] = ierr;
      state[j] = 2;
    } else if (sweep_method_begin(&r[j], m, g, c->kernels[ki], in0, in_u, sweep_threads(threads),
                                  m->repeats, m->warmup,
                                  sweep_plan_memory_limit(c, m, g->nside), &errs[j])) {
      state[j] = 2;
    }
    if (!state[j] && m->repeats > rounds) rounds = m->repeats;
  }
  for (int i = 0; i < rounds; i++)
    for (int j = 0; j < n; j++)
      if (!state[j] && sweep_method_sample(&r[j], in0, &errs[j])) state[j] = 2;
  int failed = 0;
  for (int j = 0; j < n; j++) {
    sweep_method_end(&r[j]);
    if (!state[j] &&
        record_ran(c, g, ki, mis[j], threads, in, rs, cj[j], &r[j], &errs[j]))
      state[j] = 2;
    if (state[j] == 3) failed++; /* recorded as failed when refused */
    if (state[j] == 2) {
      failed++;
      put_not_ok(c, cj[j], mis[j], rs, "failed", errs[j].msg[0] ? errs[j].msg : "unknown error",
                 errs[j].msg);
    } else if (!state[j]) {
      put_sampling_warning(c, g, ki, mis[j], cj[j]);
    }
    record(c, cj[j]);
    method_out_free(&r[j].out);
    timing_free(&r[j].t);
  }
  free(r);
  free(cj);
  free(errs);
  free(state);
  return failed;
}
