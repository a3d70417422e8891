/* method.c -- method and backend selection (method.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/common/hmpi.h"
#include "harness/common/method.h"
#include "harness/common/options.h"
#include "harness/common/util.h"
#include "reference/reference.h"

static const char *const names[METHOD_NKINDS] = {"arkcos", "direct", "fsht"};

const char *method_name(method_kind kind) {
  return kind >= 0 && kind < METHOD_NKINDS ? names[kind] : "?";
}

int method_from_name(const char *s) {
  for (int i = 0; s && i < METHOD_NKINDS; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

void method_spec_default(method_spec *s) {
  memset(s, 0, sizeof *s);
  s->kind = METHOD_ARKCOS;
  arkcos_options_default(&s->arkcos);
  s->iter = 3;
}

int method_lmax(double lmax_factor, int64_t nside) {
  double l = floor(lmax_factor * (double)nside + 1e-9);
  double cap = 3.0 * (double)nside - 1;
  if (l > cap) l = cap;
  if (l < 1) l = 1;
  return (int)l;
}

int method_spec_from_json(const json_t *m, int64_t nside, method_spec *s, arkcos_error *err) {
  method_spec_default(s);
  const char *name = json_string_value(json_object_get(m, "name"));
  int kind = name ? method_from_name(name) : METHOD_ARKCOS;
  if (kind < 0) return arkcos_fail(err, ARKCOS_EINVAL, "unknown method '%s'", name);
  s->kind = (method_kind)kind;
  /* the rows' choices: backend auto|cpu|gpu, mode enhanced|paper,
   * precision double|single */
  static const arkcos_backend backends[] = {ARKCOS_BACKEND_AUTO, ARKCOS_BACKEND_CPU, ARKCOS_BACKEND_GPU};
  int b = opt_choice(m, OPT_BACKEND), mo = opt_choice(m, OPT_MODE), p = opt_choice(m, OPT_PRECISION),
      w = opt_choice(m, OPT_DIRECT_WEIGHTS);
  if (b < 0 || mo < 0 || p < 0 || w < 0)
    return arkcos_fail(err, ARKCOS_EINVAL, "unknown %s '%s'",
                       b < 0 ? "backend" : mo < 0 ? "mode" : p < 0 ? "precision" : "weights",
                       opt_str(m, b < 0 ? OPT_BACKEND : mo < 0 ? OPT_MODE : p < 0 ? OPT_PRECISION : OPT_DIRECT_WEIGHTS));
  /* weights: tables|auto|fly, in the table's order */
  static const int weights[] = {ARKCOS_WEIGHTS_TABLES, ARKCOS_WEIGHTS_AUTO, ARKCOS_WEIGHTS_ON_THE_FLY};
  if (s->kind == METHOD_ARKCOS) {
    s->arkcos.backend = backends[b];
    s->arkcos.mode = mo ? ARKCOS_MODE_PAPER : ARKCOS_MODE_ENHANCED;
    s->arkcos.precision = p ? ARKCOS_SINGLE : ARKCOS_DOUBLE;
    s->arkcos.cache_kernel_spectra = opt_bool(m, OPT_CACHE_KERNEL_SPECTRA);
    s->arkcos.direct_weights = weights[w];
    s->arkcos.accuracy = opt_num(m, OPT_ACCURACY, 0);
  } else if (s->kind == METHOD_FSHT) {
    s->iter = (int)opt_num(m, OPT_ITER, 3);
    if (nside > 0)
      s->lmax = opt_given(m, OPT_LMAX) ? (int)opt_num(m, OPT_LMAX, 0)
                                       : method_lmax(opt_num(m, OPT_FSHT_LMAX_FACTOR, 3), nside);
  }
  return ARKCOS_OK;
}

static void append_text(char *buf, size_t len, const char *fmt, const char *v) {
  size_t used = strlen(buf);
  if (used + 1 < len) snprintf(buf + used, len - used, fmt, v);
}

static void append_number(char *buf, size_t len, const char *key, double v) {
  char n[64], kv[160];
  opt_format_number(v, n, sizeof n);
  snprintf(kv, sizeof kv, " %s=%s", key, n);
  append_text(buf, len, "%s", kv);
}

void method_id(const json_t *m, char *buf, size_t len) {
  const char *name = json_string_value(json_object_get(m, "name"));
  if (!name) name = "arkcos";
  if (!strcmp(name, "arkcos")) {
    snprintf(buf, len, "arkcos backend=%s mode=%s precision=%s%s", opt_str(m, OPT_BACKEND),
             opt_str(m, OPT_MODE), opt_str(m, OPT_PRECISION),
             opt_bool(m, OPT_CACHE_KERNEL_SPECTRA) ? " cache_kernel_spectra=true" : "");
    const char *w = opt_str(m, OPT_DIRECT_WEIGHTS);
    if (w && strcmp(w, "tables")) append_text(buf, len, " weights=%s", w);
    double acc = opt_num(m, OPT_ACCURACY, 0);
    if (acc > 0) append_number(buf, len, "accuracy", acc);
  } else if (!strcmp(name, "fsht")) {
    snprintf(buf, len, "fsht iter=%d", (int)opt_num(m, OPT_ITER, 3));
    append_number(buf, len, "lmax_factor", opt_num(m, OPT_FSHT_LMAX_FACTOR, 3));
    const char *w = opt_str(m, OPT_RING_WEIGHTS);
    if (w) append_text(buf, len, " ring_weights=%s", w);
  } else {
    snprintf(buf, len, "%s", name);
    double sample = opt_num(m, OPT_SAMPLE, 0);
    if (sample > 0) {
      char n[48];
      snprintf(n, sizeof n, " sample=%lld", (long long)sample);
      append_text(buf, len, "%s", n);
    }
  }
}

struct smoother {
  method_spec spec;
  const arkcos_geometry *g;
  const arkcos_kernel *k;
  arkcos_plan *plan;
  double plan_time;
  char note[512];
};

/* The plan, made again without cached spectra when those do not fit. */
static int make_plan(smoother *sm, arkcos_error *err) {
  arkcos_options o = sm->spec.arkcos;
  o.threads = sm->spec.threads;
  double t0 = wall_time();
  sm->plan = sm->spec.mpi_split ? hmpi_split_plan(sm->g, sm->k, &o, err) : arkcos_plan_create(sm->g, sm->k, &o, err);
  if (!sm->plan && o.cache_kernel_spectra && err && err->code == ARKCOS_ENOMEM) {
    snprintf(sm->note, sizeof sm->note,
             "kernel spectra do not fit in memory (%.400s); computing them per map", err->msg);
    o.cache_kernel_spectra = 0;
    sm->plan = sm->spec.mpi_split ? hmpi_split_plan(sm->g, sm->k, &o, err) : arkcos_plan_create(sm->g, sm->k, &o, err);
  }
  sm->plan_time = wall_time() - t0;
  if (!sm->plan) return err && err->code ? err->code : ARKCOS_ERUNTIME;
  const char *why = arkcos_plan_note(sm->plan);
  if (why[0] && !sm->note[0]) snprintf(sm->note, sizeof sm->note, "%s", why);
  return ARKCOS_OK;
}

smoother *smoother_create(const method_spec *s, const arkcos_geometry *g,
                          const arkcos_kernel *k, arkcos_error *err) {
  if (!s || !g || !k) {
    arkcos_fail(err, ARKCOS_EINVAL, "smoother: spec, geometry and kernel are required");
    return NULL;
  }
  if (s->kind < 0 || s->kind >= METHOD_NKINDS) {
    arkcos_fail(err, ARKCOS_EINVAL, "smoother: unknown method %d", (int)s->kind);
    return NULL;
  }
  smoother *sm = calloc(1, sizeof *sm);
  if (!sm) {
    arkcos_fail(err, ARKCOS_ENOMEM, "smoother: out of memory");
    return NULL;
  }
  sm->spec = *s;
  sm->g = g;
  sm->k = k;
  if (s->kind == METHOD_ARKCOS && make_plan(sm, err)) {
    free(sm);
    return NULL;
  }
  return sm;
}

int smoother_apply(smoother *sm, const double *in, double *out, arkcos_error *err) {
  const method_spec *s = &sm->spec;
  if (s->arkcos.spin == 2)
    return arkcos_fail(err, ARKCOS_EINVAL, "smoother: this smoother is spin 2; use smoother_apply_spin2");
  switch (s->kind) {
  case METHOD_ARKCOS:
    return s->mpi_split ? hmpi_split_execute(sm->plan, in, out, err) : arkcos_execute(sm->plan, in, out, err);
  case METHOD_DIRECT:
    return ref_direct_sum(sm->g, sm->k, in, out, NULL, 0, s->threads, err);
  case METHOD_FSHT:
    return ref_fsht_smooth(sm->g, sm->k, in, out, s->lmax, s->iter, s->ring_weights,
                           s->threads, err);
  }
  return arkcos_fail(err, ARKCOS_EINVAL, "smoother: unknown method");
}

int smoother_spin(const smoother *sm) { return sm->spec.arkcos.spin; }

int smoother_apply_spin2(smoother *sm, const double *q, const double *u, double *q_out, double *u_out,
                         arkcos_error *err) {
  const method_spec *s = &sm->spec;
  if (s->arkcos.spin != 2)
    return arkcos_fail(err, ARKCOS_EINVAL, "smoother: this smoother is scalar (made without spin 2)");
  switch (s->kind) {
  case METHOD_ARKCOS:
    return s->mpi_split ? hmpi_split_execute2(sm->plan, q, u, q_out, u_out, err)
                        : arkcos_execute_spin2(sm->plan, q, u, q_out, u_out, err);
  case METHOD_DIRECT:
    return ref_direct_sum_spin2(sm->g, sm->k, q, u, q_out, u_out, NULL, 0, s->threads, err);
  case METHOD_FSHT:
    return ref_fsht_smooth_spin2(sm->g, sm->k, q, u, q_out, u_out, s->lmax, s->iter, s->ring_weights,
                                 s->threads, err);
  }
  return arkcos_fail(err, ARKCOS_EINVAL, "smoother: unknown method");
}

int smoother_apply_pixels_spin2(smoother *sm, const double *q, const double *u, const int64_t *pix,
                                int64_t n, double *q_out, double *u_out, arkcos_error *err) {
  if (sm->spec.kind != METHOD_DIRECT || sm->spec.arkcos.spin != 2)
    return arkcos_fail(err, ARKCOS_EINVAL, "smoother: only the spin-2 direct sum computes single pixels");
  return ref_direct_sum_spin2(sm->g, sm->k, q, u, q_out, u_out, pix, n, sm->spec.threads, err);
}

int smoother_apply_pixels(smoother *sm, const double *in, const int64_t *pix, int64_t n,
                          double *out, arkcos_error *err) {
  if (sm->spec.kind != METHOD_DIRECT)
    return arkcos_fail(err, ARKCOS_EINVAL, "smoother: only the direct sum computes single pixels");
  return ref_direct_sum(sm->g, sm->k, in, out, pix, n, sm->spec.threads, err);
}

method_kind smoother_kind(const smoother *sm) { return sm->spec.kind; }

arkcos_backend smoother_backend(const smoother *sm) {
  return sm->plan ? arkcos_plan_backend(sm->plan) : ARKCOS_BACKEND_CPU;
}

void smoother_stages(const smoother *sm, arkcos_stage_times *t) {
  if (sm->plan)
    arkcos_plan_stages(sm->plan, t);
  else
    memset(t, 0, sizeof *t);
}

double smoother_plan_time(const smoother *sm) { return sm->plan ? sm->plan_time : 0; }
void smoother_plan_setup(const smoother *sm, arkcos_plan_times *t) {
  if (sm->plan && !sm->spec.mpi_split) arkcos_plan_setup_times(sm->plan, t);
  else memset(t, 0, sizeof *t);
}
arkcos_plan *smoother_engine_plan(const smoother *sm) { return sm ? sm->plan : NULL; }
size_t smoother_plan_memory(const smoother *sm) { return sm->plan ? arkcos_plan_memory(sm->plan) : 0; }
const char *smoother_note(const smoother *sm) { return sm->note; }

const char *smoother_exactness(const smoother *sm) {
  return sm->plan ? arkcos_plan_exactness(sm->plan) : "";
}

double smoother_bound(const smoother *sm) {
  if (sm->plan) return arkcos_plan_bound(sm->plan);
  return sm->spec.kind == METHOD_DIRECT ? 0 : HUGE_VAL;
}

void smoother_destroy(smoother *sm) {
  if (!sm) return;
  if (sm->spec.mpi_split) hmpi_split_destroy(sm->plan);
  else arkcos_plan_destroy(sm->plan);
  free(sm);
}
