/* config.c -- table-driven validation of sweep configs (see config.h and
 * configs/README.md for the schema). */
#include "harness/sweep/config.h"
#include "harness/common/options.h"
#include "harness/common/results.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ the tables */

/* Which rows of the option table (options.h) each object of a config
 * accepts, in the order of the normalized document. The rows that hold an
 * object or a list of objects are the config's own. */
#define O(id) (&opt_table[id])
#define REQUIRED OPT_REQUIRED

static const opt_def *const random_fields[] = {O(OPT_INPUT_LMAX_FACTOR), O(OPT_SEED), O(OPT_CL_FILE),
                                               O(OPT_POL), NULL};
/* "pol" is accepted (false) but not defined for these inputs: fill_input
 * refuses true with a message that says so. */
static const opt_def *const point_source_fields[] = {O(OPT_SOURCES), O(OPT_INPUT_POL), NULL};
static const opt_def *const fits_fields[] = {O(OPT_FITS_PATH), O(OPT_INPUT_POL), NULL};
static const opt_variant input_variants[] = {{"random", random_fields},
                                             {"point_sources", point_source_fields},
                                             {"fits", fits_fields},
                                             {NULL, NULL}};
static const opt_schema input_schema = {NULL, "type", "input type", input_variants};

static const opt_def *const grid_fields[] = {O(OPT_NSIDE_AXIS), NULL};
static const opt_schema grid_schema = {grid_fields, NULL, NULL, NULL};

static const opt_def *const gaussian_fields[] = {O(OPT_FWHM_ARCMIN), O(OPT_CUTOFF_DEG), O(OPT_CUTOFF_REL),
                                                 NULL};
static const opt_def *const tophat_fields[] = {O(OPT_TOPHAT_DEG), NULL};
static const opt_def *const file_kernel_fields[] = {O(OPT_KERNEL_PATH), O(OPT_CUTOFF_DEG), O(OPT_CUTOFF_REL),
                                                    O(OPT_KERNEL_UNIT), O(OPT_ALLOW_NEGATIVE), NULL};
static const opt_variant kernel_variants[] = {{"gaussian", gaussian_fields},
                                              {"tophat", tophat_fields},
                                              {"file", file_kernel_fields},
                                              {NULL, NULL}};
static const opt_schema kernel_schema = {NULL, "type", "kernel type", kernel_variants};

/* "oversample": no effect, see fill_method */
static const opt_def *const arkcos_fields[] = {
    O(OPT_BACKEND),  O(OPT_MODE),           O(OPT_PRECISION),     O(OPT_CACHE_KERNEL_SPECTRA),
    O(OPT_DIRECT_WEIGHTS), O(OPT_OVERSAMPLE), O(OPT_ACCURACY),     O(OPT_METHOD_REPEATS), O(OPT_METHOD_WARMUP), NULL};
static const opt_def *const fsht_fields[] = {O(OPT_ITER), O(OPT_FSHT_LMAX_FACTOR), O(OPT_RING_WEIGHTS),
                                             O(OPT_METHOD_REPEATS), O(OPT_METHOD_WARMUP), NULL};
static const opt_def *const direct_fields[] = {O(OPT_SAMPLE), O(OPT_METHOD_REPEATS), O(OPT_METHOD_WARMUP),
                                               NULL};
static const opt_variant method_variants[] = {{"arkcos", arkcos_fields},
                                              {"fsht", fsht_fields},
                                              {"direct", direct_fields},
                                              {NULL, NULL}};
static const opt_schema method_schema = {NULL, "name", "method", method_variants};

static const opt_def *const limits_fields[] = {O(OPT_DIRECT_MAX_EVALS), O(OPT_MEMORY_BYTES),
                                               O(OPT_MIN_PIXELS_PER_FWHM), NULL};
static const opt_schema limits_schema = {limits_fields, NULL, NULL, NULL};

static const opt_def *const patch_fields[] = {O(OPT_PATCH_THETA_DEG), O(OPT_PATCH_PHI_DEG),
                                              O(OPT_PATCH_SIDE_DEG), O(OPT_PATCH_N), O(OPT_PATCH_LOG), NULL};
static const opt_schema patch_schema = {patch_fields, NULL, NULL, NULL};

static const opt_def patches_row = {.key = "patches", .type = OPT_T_OBJ_LIST, .sub = &patch_schema,
                                    .help = "square patches to write around (theta_deg, phi_deg)"};
static const opt_def *const outputs_fields[] = {O(OPT_MAPS), O(OPT_MAPS_FLOAT32), O(OPT_SPECTRA),
                                                O(OPT_SPECTRA_LMAX_FACTOR), O(OPT_SPECTRA_ITER),
                                                &patches_row, NULL};
static const opt_schema outputs_schema = {outputs_fields, NULL, NULL, NULL};

static const opt_def input_row = {.key = "input", .type = OPT_T_OBJ, .def = "{\"type\": \"random\"}",
                                  .sub = &input_schema, .help = "the map being smoothed"};
static const opt_def grid_row = {.key = "grid", .type = OPT_T_OBJ, .def = REQUIRED, .sub = &grid_schema,
                                 .help = "{\"nside\": N or [N, ...]}"};
static const opt_def kernels_row = {.key = "kernels", .type = OPT_T_OBJ_LIST, .def = REQUIRED,
                                    .sub = &kernel_schema, .help = "the kernels, an axis"};
static const opt_def methods_row = {.key = "methods", .type = OPT_T_OBJ_LIST, .def = REQUIRED,
                                    .sub = &method_schema, .help = "the methods, an axis"};
static const opt_def limits_row = {.key = "limits", .type = OPT_T_OBJ, .def = "{}", .sub = &limits_schema,
                                   .help = "direct_max_evals, memory_bytes, min_pixels_per_fwhm"};
static const opt_def outputs_row = {.key = "outputs", .type = OPT_T_OBJ, .def = "{}", .sub = &outputs_schema,
                                    .help = "maps, patches and spectra to write"};
static const opt_def *const top_fields[] = {
    O(OPT_NAME),         O(OPT_DESCRIPTION), O(OPT_REPEATS), O(OPT_WARMUP), O(OPT_INTERLEAVE),
    O(OPT_THREADS_AXIS), &input_row,         &grid_row,      &kernels_row,  &methods_row,
    O(OPT_REFERENCE),    &limits_row,        &outputs_row,   NULL};
static const opt_schema top_schema = {top_fields, NULL, NULL, NULL};

/* ------------------------------------------------------------ messages */


/* Copies the collected messages into err (err->msg is 512 bytes: cut at a
 * line boundary and say how many more there were). */
static int finish_errors(opt_errors *e, arkcos_error *err) {
  if (!e->n) return ARKCOS_OK;
  if (!err) return ARKCOS_EINVAL;
  err->code = ARKCOS_EINVAL;
  size_t cap = sizeof err->msg - 40, used = 0;
  int shown = 0;
  const char *p = e->text;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    if (used + l + 1 > cap) break;
    memcpy(err->msg + used, p, l);
    used += l;
    err->msg[used++] = '\n';
    shown++;
    p = nl ? nl + 1 : p + l;
  }
  if (used) used--; /* drop the last newline */
  err->msg[used] = 0;
  if (shown == 0) {
    snprintf(err->msg, sizeof err->msg, "%.*s", (int)cap, e->text);
  } else if (shown < e->n) {
    snprintf(err->msg + used, sizeof err->msg - used, "\n... and %d more",
             e->n - shown);
  }
  return ARKCOS_EINVAL;
}


/* ------------------------------------------------------------ extraction */

static char *xstrdup(const char *s) {
  if (!s) return NULL;
  size_t l = strlen(s) + 1;
  char *d = malloc(l);
  if (d) memcpy(d, s, l);
  return d;
}

static double num(const json_t *o, const char *key, double def) {
  json_t *v = json_object_get(o, key);
  return v && json_is_number(v) ? json_number_value(v) : def;
}

static const char *str(const json_t *o, const char *key) {
  return json_string_value(json_object_get(o, key));
}

/* Resolves a path from the config against the config file's folder. */
static char *resolve_path(const char *cfgpath, const char *p) {
  if (!p) return NULL;
  if (p[0] == '/' || !cfgpath || !strchr(cfgpath, '/')) return xstrdup(p);
  const char *slash = strrchr(cfgpath, '/');
  size_t dl = (size_t)(slash - cfgpath);
  size_t len = dl + 1 + strlen(p) + 1;
  char *r = malloc(len);
  if (r) snprintf(r, len, "%.*s/%s", (int)dl, cfgpath, p);
  return r;
}

static void check_readable(opt_errors *e, const char *path, const char *file) {
  if (file && access(file, R_OK) != 0)
    opt_error(e, path, "cannot read '%s': %s", file, strerror(errno));
}

static void append(char *buf, size_t len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void append(char *buf, size_t len, const char *fmt, ...) {
  size_t used = strlen(buf);
  if (used >= len - 1) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, len - used, fmt, ap);
  va_end(ap);
}

static void append_num(char *buf, size_t len, const char *key, double v) {
  char n[64];
  opt_format_number(v, n, sizeof n);
  append(buf, len, " %s=%s", key, n);
}

static int fill_kernel(opt_errors *e, const char *cfgpath, int idx, json_t *o,
                       cfg_kernel *k) {
  char path[64], id[1024] = "", label[256];
  snprintf(path, sizeof path, "kernels[%d]", idx);
  const char *type = str(o, "type");
  k->json = o;
  k->type = !strcmp(type, "gaussian") ? CFG_KERNEL_GAUSSIAN
            : !strcmp(type, "tophat") ? CFG_KERNEL_TOPHAT
                                      : CFG_KERNEL_FILE;
  k->fwhm_arcmin = num(o, "fwhm_arcmin", 0);
  k->cutoff_deg = num(o, "cutoff_deg", 0);
  k->cutoff_rel = num(o, "cutoff_rel", 0);
  int ok = 1;
  if (k->cutoff_deg > 0 && k->cutoff_rel > 0) {
    opt_error(e, path, "give cutoff_deg or cutoff_rel, not both");
    ok = 0;
  }
  if (k->type == CFG_KERNEL_GAUSSIAN && k->cutoff_deg <= 0 && k->cutoff_rel <= 0) {
    opt_error(e, path, "a gaussian kernel needs cutoff_deg or cutoff_rel");
    ok = 0;
  }
  snprintf(id, sizeof id, "%s", type);
  if (k->type == CFG_KERNEL_GAUSSIAN) append_num(id, sizeof id, "fwhm_arcmin", k->fwhm_arcmin);
  snprintf(label, sizeof label, "%s", type);
  if (k->type == CFG_KERNEL_FILE) {
    const char *p = str(o, "path");
    k->path = resolve_path(cfgpath, p);
    char sub[96];
    snprintf(sub, sizeof sub, "%s.path", path);
    check_readable(e, sub, k->path);
    append(id, sizeof id, " path=%s", p);
    /* unit and allow_negative enter the id only when not the default, so
     * ids of earlier results stay valid */
    const char *u = str(o, "unit");
    if (!u) u = "rad";
    k->unit = !strcmp(u, "deg") ? ARKCOS_ANGLE_DEG
              : !strcmp(u, "arcmin") ? ARKCOS_ANGLE_ARCMIN : ARKCOS_ANGLE_RAD;
    k->allow_negative = json_is_true(json_object_get(o, "allow_negative"));
    if (k->unit != ARKCOS_ANGLE_RAD) append(id, sizeof id, " unit=%s", u);
    if (k->allow_negative) append(id, sizeof id, " allow_negative=true");
    const char *base = strrchr(p, '/');
    snprintf(label, sizeof label, "file:%s", base ? base + 1 : p);
    for (char *c = label; *c; c++)
      if (*c == ',' || *c == '"' || *c == ' ') *c = '_';
  }
  if (k->cutoff_deg > 0) append_num(id, sizeof id, "cutoff_deg", k->cutoff_deg);
  if (k->cutoff_rel > 0) append_num(id, sizeof id, "cutoff_rel", k->cutoff_rel);
  k->id = xstrdup(id);
  k->label = xstrdup(label);
  return ok;
}

static void fill_method(opt_errors *e, const char *cfgpath, int idx, json_t *o, int repeats, int warmup,
                        cfg_method *m) {
  char id[1024], label[256];
  arkcos_error err = {0};
  m->json = o;
  m->repeats = (int)num(o, "repeats", repeats);
  m->warmup = (int)num(o, "warmup", warmup);
  if (method_spec_from_json(o, 0, &m->spec, &err)) {
    char p[64];
    snprintf(p, sizeof p, "methods[%d]", idx);
    opt_error(e, p, "%s", err.msg); /* the table let through what method.c cannot read */
  }
  if (m->spec.kind == METHOD_ARKCOS) {
    /* "oversample" has no effect since the polar caps are summed exactly:
     * still accepted (old configs run), then dropped from the method object,
     * so that it is in no new id, label or results file (results written
     * before name it where it was set, and stay readable as they are) */
    m->had_oversample = json_object_get(o, "oversample") != NULL;
    json_object_del(o, "oversample");
  } else if (m->spec.kind == METHOD_FSHT) {
    m->lmax_factor = num(o, "lmax_factor", 3);
    m->ring_weights = resolve_path(cfgpath, str(o, "ring_weights"));
  } else {
    m->sample = (int64_t)num(o, "sample", 0);
  }
  method_id(o, id, sizeof id);
  results_doc_method_label(o, label, sizeof label);
  m->id = xstrdup(id);
  m->label = xstrdup(label);
}

static int valid_name(const char *s) {
  if (!*s || !strcmp(s, ".") || !strcmp(s, "..")) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
      return 0;
  return 1;
}

/* name: given, else the config file's base name without extension. */
static void fill_name(opt_errors *e, const json_t *n, const char *path,
                      run_config *cfg) {
  const char *name = str(n, "name");
  char base[256];
  if (!name) {
    const char *b = strrchr(path, '/');
    snprintf(base, sizeof base, "%s", b ? b + 1 : path);
    char *dot = strrchr(base, '.');
    if (dot && dot != base) *dot = 0;
    name = base;
  }
  if (!valid_name(name))
    opt_error(e, "name", "'%s' is not usable as a folder name (letters, digits, '.', '_', '-')", name);
  cfg->name = xstrdup(name);
}

static void fill_threads_and_nside(const json_t *n, run_config *cfg) {
  json_t *th = json_object_get(n, "threads");
  cfg->nthreads = (int)json_array_size(th);
  cfg->threads = calloc((size_t)cfg->nthreads, sizeof *cfg->threads);
  for (int i = 0; i < cfg->nthreads; i++)
    cfg->threads[i] = (int)json_integer_value(json_array_get(th, (size_t)i));

  json_t *ns = json_object_get(json_object_get(n, "grid"), "nside");
  cfg->nnside = (int)json_array_size(ns);
  cfg->nside = calloc((size_t)cfg->nnside, sizeof *cfg->nside);
  for (int i = 0; i < cfg->nnside; i++)
    cfg->nside[i] = json_integer_value(json_array_get(ns, (size_t)i));
}

static void fill_input(opt_errors *e, const char *cfgpath, const json_t *n,
                       cfg_input *input) {
  json_t *in = json_object_get(n, "input");
  const char *itype = str(in, "type");
  if (strcmp(itype, "random") && json_is_true(json_object_get(in, "pol")))
    opt_error(e, "input.pol", "polarized inputs are random fields only (\"type\": \"random\"); %s",
              !strcmp(itype, "fits") ? "the Q, U columns of a FITS map are smoothed by `arkcos smooth`"
                                     : "point sources carry no polarization");
  if (!strcmp(itype, "random")) {
    input->type = CFG_INPUT_RANDOM;
    input->lmax_factor = num(in, "lmax_factor", 2);
    input->seed = (uint64_t)num(in, "seed", 1);
    input->cl_file = resolve_path(cfgpath, str(in, "cl_file"));
    check_readable(e, "input.cl_file", input->cl_file);
    input->pol = json_is_true(json_object_get(in, "pol"));
  } else if (!strcmp(itype, "point_sources")) {
    input->type = CFG_INPUT_POINT_SOURCES;
    json_t *src = json_object_get(in, "sources");
    input->nsources = (int)json_array_size(src);
    input->sources = calloc((size_t)input->nsources, sizeof(cfg_source));
    for (int i = 0; i < input->nsources; i++) {
      json_t *r = json_array_get(src, (size_t)i);
      input->sources[i].theta_deg = json_number_value(json_array_get(r, 0));
      input->sources[i].phi_deg = json_number_value(json_array_get(r, 1));
      input->sources[i].amplitude = json_number_value(json_array_get(r, 2));
    }
  } else {
    input->type = CFG_INPUT_FITS;
    input->path = resolve_path(cfgpath, str(in, "path"));
    check_readable(e, "input.path", input->path);
  }
}

static void fill_kernels(opt_errors *e, const char *cfgpath, const json_t *n,
                         run_config *cfg) {
  json_t *ks = json_object_get(n, "kernels");
  cfg->nkernels = (int)json_array_size(ks);
  cfg->kernels = calloc((size_t)cfg->nkernels, sizeof(cfg_kernel));
  for (int i = 0; i < cfg->nkernels; i++) {
    fill_kernel(e, cfgpath, i, json_array_get(ks, (size_t)i), &cfg->kernels[i]);
    for (int j = 0; j < i; j++)
      if (cfg->kernels[j].id && cfg->kernels[i].id &&
          !strcmp(cfg->kernels[j].id, cfg->kernels[i].id)) {
        char p[64];
        snprintf(p, sizeof p, "kernels[%d]", i);
        opt_error(e, p, "same kernel as kernels[%d]", j);
      }
  }
}

/* Drops method m, filled but the same as an earlier one (no error: it
 * differed only by "oversample", which has no effect). */
static void drop_method(cfg_method *m) {
  free(m->ring_weights);
  free(m->id);
  free(m->label);
  memset(m, 0, sizeof *m);
}

static void fill_methods(opt_errors *e, const char *cfgpath, const json_t *n,
                         run_config *cfg) {
  json_t *ms = json_object_get(n, "methods");
  const int nm = (int)json_array_size(ms);
  cfg->methods = calloc((size_t)nm, sizeof(cfg_method));
  int *at = calloc((size_t)nm + 1, sizeof(int)); /* index in the file of methods[k] */
  cfg->nmethods = 0;
  for (int i = 0; cfg->methods && at && i < nm; i++) {
    cfg_method *m = &cfg->methods[cfg->nmethods];
    fill_method(e, cfgpath, i, json_array_get(ms, (size_t)i), cfg->repeats, cfg->warmup, m);
    if (m->had_oversample && !cfg->oversample_at) cfg->oversample_at = i + 1;
    char p[64];
    snprintf(p, sizeof p, "methods[%d].ring_weights", i);
    check_readable(e, p, m->ring_weights);
    /* paper mode's polar caps are not exact: it has no bound to trade */
    if (m->spec.kind == METHOD_ARKCOS && m->spec.arkcos.mode == ARKCOS_MODE_PAPER && m->spec.arkcos.accuracy > 0) {
      snprintf(p, sizeof p, "methods[%d].accuracy", i);
      opt_error(e, p, "applies only to mode \"enhanced\", not \"paper\"");
    }
    int same = -1;
    for (int j = 0; j < cfg->nmethods && same < 0; j++)
      if (!strcmp(cfg->methods[j].id, m->id)) same = j;
    if (same >= 0 && (m->had_oversample || cfg->methods[same].had_oversample)) {
      drop_method(m); /* the same method once "oversample" is ignored: run once */
      continue;
    }
    if (same >= 0) {
      snprintf(p, sizeof p, "methods[%d]", i);
      opt_error(e, p, "same method as methods[%d]", at[same]);
    }
    at[cfg->nmethods++] = i;
  }
  free(at);
}

/* The first direct method, else the first fsht method, else none. */
static int default_reference(const run_config *cfg) {
  static const method_kind order[] = {METHOD_DIRECT, METHOD_FSHT};
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < cfg->nmethods; i++)
      if (cfg->methods[i].spec.kind == order[t]) return i;
  return CFG_REF_NONE;
}

/* The method whose id, else label, else name is ref; CFG_REF_NONE if none. */
static int find_method(const run_config *cfg, const char *ref) {
  int found = CFG_REF_NONE;
  for (int i = 0; i < cfg->nmethods && found < 0; i++)
    if (!strcmp(cfg->methods[i].id, ref)) found = i;
  for (int i = 0; i < cfg->nmethods && found < 0; i++)
    if (!strcmp(cfg->methods[i].label, ref)) found = i;
  for (int i = 0; i < cfg->nmethods && found < 0; i++)
    if (!strcmp(str(cfg->methods[i].json, "name"), ref)) found = i;
  return found;
}

/* reference: "exact", "none", a method id ("direct sample=1000"), label
 * ("fsht-iter3") or name ("fsht"), first match in that order; by default
 * the first direct method, else the first fsht method, else none. The
 * normalized document names the choice by its id. */
static void fill_reference(opt_errors *e, json_t *n, run_config *cfg) {
  const char *ref = str(n, "reference");
  if (!ref) {
    cfg->reference = default_reference(cfg);
  } else if (!strcmp(ref, "exact")) {
    cfg->reference = CFG_REF_EXACT;
    if (cfg->input.type != CFG_INPUT_RANDOM)
      opt_error(e, "reference", "'exact' needs input.type \"random\" (it is alm2map of K_l a_lm)");
  } else if (strcmp(ref, "none")) {
    cfg->reference = find_method(cfg, ref);
    if (cfg->reference < 0) {
      char list[512] = "";
      for (int i = 0; i < cfg->nmethods; i++)
        append(list, sizeof list, "%s%s", i ? ", " : "", cfg->methods[i].label);
      opt_error(e, "reference",
                "'%s' is none of the methods (%s), \"exact\" or \"none\"", ref, list);
    }
  }
  json_object_set_new(n, "reference",
                      json_string(cfg->reference >= 0 ? cfg->methods[cfg->reference].id
                                  : cfg->reference == CFG_REF_EXACT ? "exact"
                                                                    : "none"));
}

static void fill_limits_and_outputs(const json_t *n, run_config *cfg) {
  json_t *lim = json_object_get(n, "limits");
  cfg->direct_max_evals = num(lim, "direct_max_evals", 1e10);
  cfg->memory_bytes = num(lim, "memory_bytes", 0);
  cfg->min_pixels_per_fwhm = num(lim, "min_pixels_per_fwhm", 1);

  json_t *out = json_object_get(n, "outputs");
  cfg->outputs.maps = json_is_true(json_object_get(out, "maps"));
  cfg->outputs.maps_float32 = json_is_true(json_object_get(out, "maps_float32"));
  cfg->outputs.spectra = json_is_true(json_object_get(out, "spectra"));
  cfg->outputs.spectra_iter = (int)num(out, "spectra_iter", 3);
  cfg->outputs.spectra_lmax_factor = num(out, "spectra_lmax_factor", 2);
  json_t *ps = json_object_get(out, "patches");
  cfg->outputs.npatches = (int)json_array_size(ps);
  if (cfg->outputs.npatches) {
    cfg->outputs.patches = calloc((size_t)cfg->outputs.npatches, sizeof(cfg_patch));
    for (int i = 0; i < cfg->outputs.npatches; i++) {
      json_t *p = json_array_get(ps, (size_t)i);
      cfg_patch *c = &cfg->outputs.patches[i];
      c->theta_deg = num(p, "theta_deg", 0);
      c->phi_deg = num(p, "phi_deg", 0);
      c->side_deg = num(p, "side_deg", 10);
      c->n = (int)num(p, "n", 200);
      c->log = json_is_true(json_object_get(p, "log"));
    }
  }
}

int config_from_json(json_t *root, const char *path, run_config *cfg,
                     arkcos_error *err) {
  memset(cfg, 0, sizeof *cfg);
  cfg->reference = CFG_REF_NONE;
  cfg->path = xstrdup(path);
  cfg->given = json_incref(root);
  opt_errors e = {.len = 0, .n = 0, .file = path};
  e.text[0] = 0;
  json_t *n = opt_check_object(&e, "", &top_schema, root);
  if (!n) return finish_errors(&e, err);
  cfg->normalized = n;

  fill_name(&e, n, path, cfg);
  cfg->repeats = (int)num(n, "repeats", 3);
  cfg->warmup = (int)num(n, "warmup", 1);
  cfg->interleave = json_is_true(json_object_get(n, "interleave"));
  fill_threads_and_nside(n, cfg);
  fill_input(&e, path, n, &cfg->input);
  fill_kernels(&e, path, n, cfg);
  fill_methods(&e, path, n, cfg);
  fill_reference(&e, n, cfg);
  fill_limits_and_outputs(n, cfg);
  return finish_errors(&e, err);
}

/* The document of path, or NULL with err filled (unreadable, malformed). */
static json_t *load_document(const char *path, arkcos_error *err) {
  json_error_t je;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!root) {
    if (json_error_code(&je) == json_error_cannot_open_file)
      arkcos_fail(err, ARKCOS_EINVAL, "%s: %s", path, je.text);
    else
      arkcos_fail(err, ARKCOS_EINVAL, "%s:%d:%d: malformed JSON: %s", path, je.line, je.column, je.text);
  }
  return root;
}

/* over merged into base: an object member of both is merged key by key,
 * a null in over removes the key, anything else in over replaces base's. */
static void merge_into(json_t *base, json_t *over) {
  const char *key;
  json_t *v;
  json_object_foreach(over, key, v) {
    json_t *b = json_object_get(base, key);
    if (json_is_null(v))
      json_object_del(base, key);
    else if (json_is_object(v) && json_is_object(b))
      merge_into(b, v);
    else
      json_object_set(base, key, v);
  }
}

#define MAX_EXTENDS 8

/* The document of path with its "extends" chain resolved: the base's
 * document (relative to path's folder, itself possibly extending another),
 * with path's keys merged over it. NULL with err filled. */
static json_t *load_extended(const char *path, int depth, arkcos_error *err) {
  json_t *root = load_document(path, err);
  if (!root || !json_is_object(root)) return root; /* "must be an object" comes later */
  json_t *ext = json_object_get(root, "extends");
  if (!ext) return root;
  if (!json_is_string(ext) || !*json_string_value(ext)) {
    json_decref(root);
    arkcos_fail(err, ARKCOS_EINVAL, "%s: extends: must be the name of a config file", path);
    return NULL;
  }
  if (depth >= MAX_EXTENDS) {
    arkcos_fail(err, ARKCOS_EINVAL, "%s: extends: more than %d configs extend each other (a loop?)", path,
                MAX_EXTENDS);
    json_decref(root);
    return NULL;
  }
  char *bpath = resolve_path(path, json_string_value(ext));
  arkcos_error berr = {0, ""};
  json_t *base = bpath ? load_extended(bpath, depth + 1, &berr) : NULL;
  if (!base) {
    arkcos_fail(err, ARKCOS_EINVAL, "%s: extends: %s", path, bpath ? berr.msg : "out of memory");
  } else if (!json_is_object(base)) {
    arkcos_fail(err, ARKCOS_EINVAL, "%s: extends: %s is not a JSON object", path, bpath);
    json_decref(base);
    base = NULL;
  } else {
    json_object_del(root, "extends");
    merge_into(base, root);
  }
  free(bpath);
  json_decref(root);
  return base;
}

int config_load(const char *path, run_config *cfg, arkcos_error *err) {
  memset(cfg, 0, sizeof *cfg);
  json_t *root = load_extended(path, 0, err);
  if (!root) return ARKCOS_EINVAL;
  int rc = config_from_json(root, path, cfg, err);
  json_decref(root);
  return rc;
}

void config_free(run_config *cfg) {
  if (!cfg) return;
  free(cfg->path);
  free(cfg->name);
  free(cfg->threads);
  free(cfg->nside);
  free(cfg->input.cl_file);
  free(cfg->input.sources);
  free(cfg->input.path);
  for (int i = 0; cfg->kernels && i < cfg->nkernels; i++) {
    free(cfg->kernels[i].path);
    free(cfg->kernels[i].id);
    free(cfg->kernels[i].label);
  }
  free(cfg->kernels);
  for (int i = 0; cfg->methods && i < cfg->nmethods; i++) {
    free(cfg->methods[i].ring_weights);
    free(cfg->methods[i].id);
    free(cfg->methods[i].label);
  }
  free(cfg->methods);
  free(cfg->outputs.patches);
  json_decref(cfg->given);
  json_decref(cfg->normalized);
  memset(cfg, 0, sizeof *cfg);
}

/* ------------------------------------------------------------ equality */

int config_equal(const json_t *a, const json_t *b) {
  if (json_is_number(a) && json_is_number(b)) {
    double x = json_number_value(a), y = json_number_value(b);
    return x == y || fabs(x - y) <= 1e-12 * fmax(fabs(x), fabs(y));
  }
  if (json_typeof(a) != json_typeof(b)) return 0;
  if (json_is_object(a)) {
    if (json_object_size(a) != json_object_size(b)) return 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v) {
      json_t *w = json_object_get(b, k);
      if (!w || !config_equal(v, w)) return 0;
    }
    return 1;
  }
  if (json_is_array(a)) {
    if (json_array_size(a) != json_array_size(b)) return 0;
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!config_equal(json_array_get(a, i), json_array_get(b, i))) return 0;
    return 1;
  }
  return json_equal((json_t *)a, (json_t *)b);
}
