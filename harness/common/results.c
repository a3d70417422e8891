/* results.c -- results.json / summary.csv (see results.h). */
#include "harness/common/results.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/common/util.h"

#define DUMP_FLAGS (JSON_INDENT(1) | JSON_REAL_PRECISION(15))

int results_doc_mkdirs(const char *dir, arkcos_error *err) {
  char p[4096];
  int n = snprintf(p, sizeof p, "%s", dir);
  if (n <= 0 || (size_t)n >= sizeof p)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: path too long", dir);
  for (char *c = p + 1; ; c++) {
    if (*c == '/' || *c == 0) {
      char keep = *c;
      *c = 0;
      struct stat st;
      if (stat(p, &st) != 0) {
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
          return arkcos_fail(err, ARKCOS_EIO, "%s: cannot create folder: %s", p,
                             strerror(errno));
      } else if (!S_ISDIR(st.st_mode)) {
        return arkcos_fail(err, ARKCOS_EIO, "%s: not a folder", p);
      }
      *c = keep;
      if (!keep) break;
    }
  }
  return ARKCOS_OK;
}

static int set_paths(results_doc *r, const char *dir, arkcos_error *err) {
  memset(r, 0, sizeof *r);
  if (strlen(dir) >= sizeof r->dir)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: path too long", dir);
  snprintf(r->dir, sizeof r->dir, "%s", dir);
  snprintf(r->json_path, sizeof r->json_path, "%s/results.json", dir);
  snprintf(r->csv_path, sizeof r->csv_path, "%s/summary.csv", dir);
  return ARKCOS_OK;
}

int results_doc_create(results_doc *r, const char *dir, json_t *meta, int force,
                   arkcos_error *err) {
  int rc = set_paths(r, dir, err);
  if (!rc) rc = results_doc_mkdirs(dir, err);
  struct stat st;
  if (!rc && !force && stat(r->json_path, &st) == 0)
    rc = arkcos_fail(err, ARKCOS_EINVAL,
                     "%s exists (use --resume to continue that run, or --force to start over)",
                     r->json_path);
  if (rc) {
    json_decref(meta);
    return rc;
  }
  r->root = json_object();
  json_object_set_new(r->root, "meta", meta);
  json_object_set_new(r->root, "cases", json_array());
  return results_doc_save(r, err);
}

int results_doc_open(results_doc *r, const char *dir, arkcos_error *err) {
  int rc = set_paths(r, dir, err);
  if (rc) return rc;
  json_error_t je;
  r->root = json_load_file(r->json_path, 0, &je);
  if (!r->root)
    return arkcos_fail(err, ARKCOS_EINVAL, "cannot resume: %s:%d:%d: %s",
                       r->json_path, je.line, je.column, je.text);
  if (!json_is_object(json_object_get(r->root, "meta")) ||
      !json_is_array(json_object_get(r->root, "cases"))) {
    json_decref(r->root);
    r->root = NULL;
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "cannot resume: %s is not a results document (no meta or cases)",
                       r->json_path);
  }
  return ARKCOS_OK;
}

json_t *results_doc_find(const results_doc *r, const char *id) {
  json_t *cases = json_object_get(r->root, "cases");
  size_t i;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *cid = json_string_value(json_object_get(c, "id"));
    if (cid && !strcmp(cid, id)) return c;
  }
  return NULL;
}

int results_doc_put(results_doc *r, json_t *c, arkcos_error *err) {
  json_t *cases = json_object_get(r->root, "cases");
  const char *id = json_string_value(json_object_get(c, "id"));
  size_t i;
  json_t *old;
  int replaced = 0;
  json_array_foreach(cases, i, old) {
    const char *oid = json_string_value(json_object_get(old, "id"));
    if (id && oid && !strcmp(oid, id)) {
      json_array_set_new(cases, i, c);
      replaced = 1;
      break;
    }
  }
  if (!replaced) json_array_append_new(cases, c);
  return results_doc_save(r, err);
}

int results_doc_save(results_doc *r, arkcos_error *err) {
  char *text = json_dumps(r->root, DUMP_FLAGS);
  if (!text) return arkcos_fail(err, ARKCOS_ENOMEM, "cannot serialise results");
  size_t len = strlen(text);
  char *withnl = realloc(text, len + 2);
  if (!withnl) {
    free(text);
    return arkcos_fail(err, ARKCOS_ENOMEM, "cannot serialise results");
  }
  withnl[len] = '\n';
  withnl[len + 1] = 0;
  int rc = atomic_write_text(r->json_path, withnl, err);
  free(withnl);
  if (rc) return rc;
  char *csv = results_doc_summary_csv(r->root);
  if (!csv) return arkcos_fail(err, ARKCOS_ENOMEM, "cannot build summary.csv");
  rc = atomic_write_text(r->csv_path, csv, err);
  free(csv);
  return rc;
}

void results_doc_free(results_doc *r) {
  if (!r) return;
  json_decref(r->root);
  r->root = NULL;
}

/* ------------------------------------------------------------ summary.csv */

void results_doc_method_label(const json_t *m, char *buf, size_t len) {
  const char *name = json_string_value(json_object_get(m, "name"));
  if (!name) {
    snprintf(buf, len, "unknown");
  } else if (!strcmp(name, "arkcos")) {
    const char *b = json_string_value(json_object_get(m, "backend"));
    const char *mo = json_string_value(json_object_get(m, "mode"));
    const char *p = json_string_value(json_object_get(m, "precision"));
    /* "oversample": only in results written while it had an effect */
    json_int_t q = json_integer_value(json_object_get(m, "oversample"));
    double acc = json_number_value(json_object_get(m, "accuracy"));
    const char *w = json_string_value(json_object_get(m, "weights"));
    char qs[32] = "", ws[16] = "", as[40] = "";
    if (q) snprintf(qs, sizeof qs, "-q%lld", (long long)q);
    if (w && strcmp(w, "tables")) snprintf(ws, sizeof ws, "-%s", w); /* only when set */
    if (acc > 0) snprintf(as, sizeof as, "-a%g", acc); /* only when set */
    snprintf(buf, len, "arkcos-%s-%s-%s%s%s%s%s", b ? b : "cpu", mo ? mo : "enhanced",
             p ? p : "double",
             json_is_true(json_object_get(m, "cache_kernel_spectra")) ? "-cached" : "", qs, ws, as);
  } else if (!strcmp(name, "fsht")) {
    json_t *it = json_object_get(m, "iter");
    snprintf(buf, len, "fsht-iter%lld%s", it ? (long long)json_integer_value(it) : 3LL,
             json_object_get(m, "ring_weights") ? "-weighted" : "");
  } else {
    snprintf(buf, len, "%s", name);
  }
}

typedef struct sbuf {
  char *p;
  size_t len, cap;
} sbuf;

static void put(sbuf *b, const char *s) {
  size_t l = strlen(s);
  if (!b->p) return;
  if (b->len + l + 1 > b->cap) {
    size_t cap = (b->cap + l + 1) * 2;
    char *q = realloc(b->p, cap);
    if (!q) {
      free(b->p);
      b->p = NULL;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, l + 1);
  b->len += l;
}

/* One CSV field: quoted if it contains a separator, quote or newline. */
static void put_field(sbuf *b, const char *s, int first) {
  if (!first) put(b, ",");
  if (!s) return;
  if (!strpbrk(s, ",\"\n")) {
    put(b, s);
    return;
  }
  put(b, "\"");
  for (const char *c = s; *c; c++) {
    char one[3] = {*c, 0, 0};
    if (*c == '"') one[1] = '"';
    put(b, one);
  }
  put(b, "\"");
}

static void put_value(sbuf *b, const json_t *v) {
  char t[64];
  if (json_is_integer(v)) {
    snprintf(t, sizeof t, "%lld", (long long)json_integer_value(v));
    put_field(b, t, 0);
  } else if (json_is_real(v)) {
    snprintf(t, sizeof t, "%.9g", json_real_value(v));
    put_field(b, t, 0);
  } else if (json_is_string(v)) {
    put_field(b, json_string_value(v), 0);
  } else if (json_is_boolean(v)) {
    put_field(b, json_is_true(v) ? "1" : "0", 0);
  } else {
    put_field(b, NULL, 0);
  }
}

static const char *const csv_header =
    "id,nside,kernel,fwhm_arcmin,cutoff_deg,method,backend,mode,precision,iter,"
    "threads,status,t_min,t_median,t_max,map_fft,kernel_eval,kernel_fft,"
    "reduction,map_ifft,h2d,d2h,other,peak_memory,frac_rms,max_rel,"
    "frac_rms_north,frac_rms_belt,frac_rms_south\n";

char *results_doc_summary_csv(const json_t *root) {
  sbuf b = {malloc(4096), 0, 4096};
  if (!b.p) return NULL;
  b.p[0] = 0;
  put(&b, csv_header);
  static const char *const stages[] = {"map_fft", "kernel_eval", "kernel_fft", "reduction",
                                       "map_ifft", "h2d", "d2h", "other"};
  static const char *const metrics[] = {"frac_rms", "max_rel", "frac_rms_north",
                                        "frac_rms_belt", "frac_rms_south"};
  json_t *cases = json_object_get(root, "cases");
  size_t i;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const json_t *k = json_object_get(c, "kernel"), *m = json_object_get(c, "method");
    const json_t *t = json_object_get(c, "time"), *st = json_object_get(c, "stages");
    const json_t *mt = json_object_get(c, "metrics");
    const char *kname = json_string_value(json_object_get(k, "type"));
    char klabel[512], mlabel[256];
    if (kname && !strcmp(kname, "file")) {
      const char *p = json_string_value(json_object_get(k, "path"));
      const char *base = p ? strrchr(p, '/') : NULL;
      snprintf(klabel, sizeof klabel, "file:%s", base ? base + 1 : p ? p : "");
    } else {
      snprintf(klabel, sizeof klabel, "%s", kname ? kname : "");
    }
    results_doc_method_label(m, mlabel, sizeof mlabel);
    const char *mname = json_string_value(json_object_get(m, "name"));
    int is_arkcos = mname && !strcmp(mname, "arkcos");
    int is_fsht = mname && !strcmp(mname, "fsht");

    put_field(&b, json_string_value(json_object_get(c, "id")), 1);
    put_value(&b, json_object_get(c, "nside"));
    put_field(&b, klabel, 0);
    put_value(&b, json_object_get(k, "fwhm_arcmin"));
    put_value(&b, json_object_get(k, "cutoff_deg"));
    put_field(&b, mlabel, 0);
    put_value(&b, is_arkcos ? json_object_get(m, "backend") : NULL);
    put_value(&b, is_arkcos ? json_object_get(m, "mode") : NULL);
    put_value(&b, is_arkcos ? json_object_get(m, "precision") : NULL);
    put_value(&b, is_fsht ? json_object_get(m, "iter") : NULL);
    put_value(&b, json_object_get(c, "threads"));
    put_value(&b, json_object_get(c, "status"));
    put_value(&b, json_object_get(t, "min"));
    put_value(&b, json_object_get(t, "median"));
    put_value(&b, json_object_get(t, "max"));
    for (size_t s = 0; s < sizeof stages / sizeof stages[0]; s++)
      put_value(&b, json_object_get(st, stages[s]));
    put_value(&b, json_object_get(c, "peak_memory"));
    for (size_t s = 0; s < sizeof metrics / sizeof metrics[0]; s++)
      put_value(&b, json_object_get(mt, metrics[s]));
    put(&b, "\n");
  }
  return b.p;
}
