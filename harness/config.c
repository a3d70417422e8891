/* config.c -- table-driven validation of sweep configs (see config.h and
 * configs/README.md for the schema). */
#include "harness/config.h"
#include "harness/results.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ the tables */

typedef enum {
  F_INT,      /* integer (a real with an integral value is accepted) */
  F_NUM,      /* any finite number */
  F_BOOL,
  F_STR,      /* non-empty string */
  F_ENUM,     /* one of the strings in `choices` ("a|b|c") */
  F_INT_LIST, /* an integer or a non-empty list of integers; normalized to a list */
  F_OBJ,      /* object checked against `sub` */
  F_OBJ_LIST, /* non-empty list of objects checked against `sub` */
  F_SOURCES   /* non-empty list of [theta_deg, phi_deg, amplitude] */
} field_type;

typedef struct schema schema;

typedef struct field {
  const char *key;
  field_type type;
  double min, max;    /* inclusive range of numbers (list elements too) */
  int min_exclusive;  /* the value must be > min */
  const char *def;    /* JSON text of the default; NULL: optional; REQUIRED */
  const char *choices;
  const schema *sub;
} field;

#define REQUIRED "\x01"
#define NOLIM_LO (-HUGE_VAL)
#define NOLIM_HI HUGE_VAL
#define END \
  { NULL, F_INT, 0, 0, 0, NULL, NULL, NULL }

typedef struct variant {
  const char *value;
  const field *fields;
} variant;

/* An object is either a plain list of fields or, when `discriminator` is
 * set, a variant chosen by the string value of that key (kernels by "type",
 * methods by "name"). `what` names the variants in messages. */
struct schema {
  const field *fields;
  const char *discriminator;
  const char *what;
  const variant *variants;
};

static const field random_fields[] = {
    {"lmax_factor", F_NUM, 0, 3, 1, "2", NULL, NULL},
    {"seed", F_INT, 0, 9007199254740992.0, 0, "1", NULL, NULL},
    {"cl_file", F_STR, 0, 0, 0, NULL, NULL, NULL},
    {"pol", F_BOOL, 0, 0, 0, "false", NULL, NULL},
    END};
/* "pol" is accepted (false) but not defined for these inputs: fill_input
 * refuses true with a message that says so. */
static const field point_source_fields[] = {
    {"sources", F_SOURCES, 0, 0, 0, REQUIRED, NULL, NULL},
    {"pol", F_BOOL, 0, 0, 0, NULL, NULL, NULL},
    END};
static const field fits_fields[] = {
    {"path", F_STR, 0, 0, 0, REQUIRED, NULL, NULL},
    {"pol", F_BOOL, 0, 0, 0, NULL, NULL, NULL},
    END};
static const variant input_variants[] = {{"random", random_fields},
                                         {"point_sources", point_source_fields},
                                         {"fits", fits_fields},
                                         {NULL, NULL}};
static const schema input_schema = {NULL, "type", "input type", input_variants};

static const field grid_fields[] = {
    {"nside", F_INT_LIST, 1, 1 << 20, 0, REQUIRED, NULL, NULL}, END};
static const schema grid_schema = {grid_fields, NULL, NULL, NULL};

static const field gaussian_fields[] = {
    {"fwhm_arcmin", F_NUM, 0, 10800, 1, REQUIRED, NULL, NULL},
    {"cutoff_deg", F_NUM, 0, 180, 1, NULL, NULL, NULL},
    {"cutoff_rel", F_NUM, 0, 1, 1, NULL, NULL, NULL},
    END};
static const field tophat_fields[] = {
    {"cutoff_deg", F_NUM, 0, 180, 1, REQUIRED, NULL, NULL}, END};
static const field file_kernel_fields[] = {
    {"path", F_STR, 0, 0, 0, REQUIRED, NULL, NULL},
    {"cutoff_deg", F_NUM, 0, 180, 1, NULL, NULL, NULL},
    {"cutoff_rel", F_NUM, 0, 1, 1, NULL, NULL, NULL},
    {"unit", F_ENUM, 0, 0, 0, "\"rad\"", "rad|deg|arcmin", NULL},
    {"allow_negative", F_BOOL, 0, 0, 0, "false", NULL, NULL},
    END};
static const variant kernel_variants[] = {{"gaussian", gaussian_fields},
                                          {"tophat", tophat_fields},
                                          {"file", file_kernel_fields},
                                          {NULL, NULL}};
static const schema kernel_schema = {NULL, "type", "kernel type", kernel_variants};

static const field arkcos_fields[] = {
    {"backend", F_ENUM, 0, 0, 0, "\"cpu\"", "cpu|gpu|auto", NULL},
    {"mode", F_ENUM, 0, 0, 0, "\"enhanced\"", "enhanced|paper", NULL},
    {"precision", F_ENUM, 0, 0, 0, "\"double\"", "double|single", NULL},
    {"cache_kernel_spectra", F_BOOL, 0, 0, 0, "false", NULL, NULL},
    {"oversample", F_INT, 0, 8, 0, NULL, NULL, NULL}, /* no effect: see fill_method */
    {"accuracy", F_NUM, 0, NOLIM_HI, 0, "0", NULL, NULL},
    {"repeats", F_INT, 1, 10000, 0, NULL, NULL, NULL},
    {"warmup", F_INT, 0, 1000, 0, NULL, NULL, NULL},
    END};
static const field fsht_fields[] = {
    {"iter", F_INT, 0, 100, 0, "3", NULL, NULL},
    {"lmax_factor", F_NUM, 0, 3, 1, "3", NULL, NULL},
    {"ring_weights", F_STR, 0, 0, 0, NULL, NULL, NULL},
    {"repeats", F_INT, 1, 10000, 0, NULL, NULL, NULL},
    {"warmup", F_INT, 0, 1000, 0, NULL, NULL, NULL},
    END};
static const field direct_fields[] = {
    {"sample", F_INT, 1, 1e12, 0, NULL, NULL, NULL},
    {"repeats", F_INT, 1, 10000, 0, NULL, NULL, NULL},
    {"warmup", F_INT, 0, 1000, 0, NULL, NULL, NULL},
    END};
static const variant method_variants[] = {{"arkcos", arkcos_fields},
                                          {"fsht", fsht_fields},
                                          {"direct", direct_fields},
                                          {NULL, NULL}};
static const schema method_schema = {NULL, "name", "method", method_variants};

static const field limits_fields[] = {
    {"direct_max_evals", F_NUM, 0, NOLIM_HI, 0, "1e10", NULL, NULL},
    {"memory_bytes", F_NUM, 0, NOLIM_HI, 0, "0", NULL, NULL},
    {"min_pixels_per_fwhm", F_NUM, 0, NOLIM_HI, 0, "1", NULL, NULL},
    END};
static const schema limits_schema = {limits_fields, NULL, NULL, NULL};

static const field patch_fields[] = {
    {"theta_deg", F_NUM, 0, 180, 0, REQUIRED, NULL, NULL},
    {"phi_deg", F_NUM, -360, 360, 0, REQUIRED, NULL, NULL},
    {"side_deg", F_NUM, 0, 90, 1, REQUIRED, NULL, NULL},
    {"n", F_INT, 2, 4096, 0, "200", NULL, NULL},
    {"log", F_BOOL, 0, 0, 0, "false", NULL, NULL},
    END};
static const schema patch_schema = {patch_fields, NULL, NULL, NULL};

static const field outputs_fields[] = {
    {"maps", F_BOOL, 0, 0, 0, "false", NULL, NULL},
    {"maps_float32", F_BOOL, 0, 0, 0, "false", NULL, NULL},
    {"spectra", F_BOOL, 0, 0, 0, "false", NULL, NULL},
    {"spectra_lmax_factor", F_NUM, 0, 3, 1, "2", NULL, NULL},
    {"spectra_iter", F_INT, 0, 100, 0, "3", NULL, NULL},
    {"patches", F_OBJ_LIST, 0, 0, 0, NULL, NULL, &patch_schema},
    END};
static const schema outputs_schema = {outputs_fields, NULL, NULL, NULL};

static const field top_fields[] = {
    {"name", F_STR, 0, 0, 0, NULL, NULL, NULL},
    {"description", F_STR, 0, 0, 0, NULL, NULL, NULL},
    {"repeats", F_INT, 1, 10000, 0, "3", NULL, NULL},
    {"warmup", F_INT, 0, 1000, 0, "1", NULL, NULL},
    {"interleave", F_BOOL, 0, 0, 0, "false", NULL, NULL},
    {"threads", F_INT_LIST, 0, 4096, 0, "0", NULL, NULL},
    {"input", F_OBJ, 0, 0, 0, "{\"type\": \"random\"}", NULL, &input_schema},
    {"grid", F_OBJ, 0, 0, 0, REQUIRED, NULL, &grid_schema},
    {"kernels", F_OBJ_LIST, 0, 0, 0, REQUIRED, NULL, &kernel_schema},
    {"methods", F_OBJ_LIST, 0, 0, 0, REQUIRED, NULL, &method_schema},
    {"reference", F_STR, 0, 0, 0, NULL, NULL, NULL},
    {"limits", F_OBJ, 0, 0, 0, "{}", NULL, &limits_schema},
    {"outputs", F_OBJ, 0, 0, 0, "{}", NULL, &outputs_schema},
    END};
static const schema top_schema = {top_fields, NULL, NULL, NULL};

/* ------------------------------------------------------------ messages */

typedef struct errlist {
  char text[4096];
  size_t len;
  int n;
  const char *file;
} errlist;

static void add_error(errlist *e, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void add_error(errlist *e, const char *path, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  e->n++;
  if (e->len >= sizeof e->text - 1) return;
  int w = snprintf(e->text + e->len, sizeof e->text - e->len, "%s%s: %s%s%s",
                   e->n > 1 ? "\n" : "", e->file, path ? path : "",
                   path && *path ? ": " : "", msg);
  if (w > 0) e->len += (size_t)w;
  if (e->len > sizeof e->text - 1) e->len = sizeof e->text - 1;
}

/* Copies the collected messages into err (err->msg is 512 bytes: cut at a
 * line boundary and say how many more there were). */
static int finish_errors(errlist *e, arkcos_error *err) {
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

void config_format_number(double v, char *buf, size_t len) {
  if (!buf || !len) return;
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(buf, len, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}

/* ------------------------------------------------------------ validation */

static void child_path(char *out, size_t len, const char *parent,
                       const char *key) {
  if (parent && *parent)
    snprintf(out, len, "%s.%s", parent, key);
  else
    snprintf(out, len, "%s", key);
}

static void bound_text(double v, char *buf, size_t len) {
  config_format_number(v, buf, len);
}

/* Checks a number against a row's range; returns 1 if fine. */
static int check_range(errlist *e, const char *path, const field *f,
                       double v) {
  char b[64];
  if (f->min_exclusive ? !(v > f->min) : !(v >= f->min)) {
    bound_text(f->min, b, sizeof b);
    add_error(e, path, "must be %s %s", f->min_exclusive ? ">" : ">=", b);
    return 0;
  }
  if (!(v <= f->max)) {
    bound_text(f->max, b, sizeof b);
    add_error(e, path, "must be <= %s", b);
    return 0;
  }
  return 1;
}

/* An integer value (integral reals accepted) or NULL after an error. */
static json_t *check_int(errlist *e, const char *path, const field *f,
                         json_t *v) {
  double d;
  if (json_is_integer(v)) {
    d = (double)json_integer_value(v);
  } else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
             fabs(json_real_value(v)) < 9.1e18) {
    d = json_real_value(v);
  } else {
    add_error(e, path, "must be an integer");
    return NULL;
  }
  if (!check_range(e, path, f, d)) return NULL;
  return json_integer((json_int_t)d);
}

static json_t *check_object(errlist *e, const char *path, const schema *s,
                            json_t *v);
static json_t *check_value(errlist *e, const char *path, const field *f,
                           json_t *v);

static json_t *check_num(errlist *e, const char *path, const field *f,
                         json_t *v) {
  if (!json_is_number(v)) {
    add_error(e, path, "must be a number");
    return NULL;
  }
  if (!check_range(e, path, f, json_number_value(v))) return NULL;
  return json_real(json_number_value(v));
}

/* One of the strings in f->choices ("a|b|c"). */
static json_t *check_enum(errlist *e, const char *path, const field *f,
                          json_t *v) {
  const char *s = json_string_value(v);
  if (s) {
    size_t l = strlen(s);
    for (const char *c = f->choices; *c;) {
      const char *bar = strchr(c, '|');
      size_t cl = bar ? (size_t)(bar - c) : strlen(c);
      if (cl == l && !strncmp(c, s, l)) return json_incref(v);
      c += cl + (bar ? 1 : 0);
    }
  }
  char list[256];
  snprintf(list, sizeof list, "%s", f->choices);
  for (char *c = list; *c; c++)
    if (*c == '|') *c = '/';
  if (s)
    add_error(e, path, "unknown value '%s' (expected %s)", s, list);
  else
    add_error(e, path, "must be a string (%s)", list);
  return NULL;
}

/* Returns list a when ok, else frees it and returns NULL. */
static json_t *list_or_null(json_t *a, int ok) {
  if (!ok) {
    json_decref(a);
    return NULL;
  }
  return a;
}

typedef struct indexed_value {
  json_int_t value;
  size_t at;
} indexed_value;

static int cmp_indexed(const void *pa, const void *pb) {
  const indexed_value *x = pa, *y = pb;
  if (x->value != y->value) return x->value < y->value ? -1 : 1;
  return (x->at > y->at) - (x->at < y->at);
}

/* Every entry of the integer list a that repeats an earlier one is an error
 * naming both places, found by sorting (a million entries in well under a
 * second); 1 if all differ. */
static int check_distinct(errlist *e, const char *path, const json_t *a) {
  const size_t n = json_array_size(a);
  indexed_value *s = malloc((n ? n : 1) * sizeof *s);
  size_t *first = malloc((n ? n : 1) * sizeof *first);
  if (!s || !first) {
    free(s);
    free(first);
    add_error(e, path, "out of memory checking for repeated values");
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    s[i].value = json_integer_value(json_array_get(a, i));
    s[i].at = i;
    first[i] = i;
  }
  qsort(s, n, sizeof *s, cmp_indexed);
  for (size_t k = 1; k < n; k++)
    if (s[k].value == s[k - 1].value) first[s[k].at] = first[s[k - 1].at];
  int ok = 1;
  char sub[512];
  for (size_t i = 0; i < n; i++)
    if (first[i] != i) {
      snprintf(sub, sizeof sub, "%s[%zu]", path, i);
      add_error(e, sub, "repeats the value %lld of [%zu]",
                (long long)json_integer_value(json_array_get(a, i)), first[i]);
      ok = 0;
    }
  free(s);
  free(first);
  return ok;
}

/* An integer or a non-empty list of distinct integers, as a list. */
static json_t *check_int_list(errlist *e, const char *path, const field *f,
                              json_t *v) {
  char sub[512];
  if (!json_is_array(v)) {
    json_t *one = check_int(e, path, f, v);
    if (!one) return NULL;
    json_t *a = json_array();
    json_array_append_new(a, one);
    return a;
  }
  if (json_array_size(v) == 0) {
    add_error(e, path, "must not be empty");
    return NULL;
  }
  json_t *a = json_array();
  int ok = 1;
  size_t i;
  json_t *x;
  json_array_foreach(v, i, x) {
    snprintf(sub, sizeof sub, "%s[%zu]", path, i);
    json_t *c = check_int(e, sub, f, x);
    if (!c) {
      ok = 0;
      c = json_null(); /* keeps the indices of the entries after it */
    }
    json_array_append_new(a, c);
  }
  if (ok && !check_distinct(e, path, a)) ok = 0;
  return list_or_null(a, ok);
}

/* A non-empty list of objects checked against f->sub. */
static json_t *check_obj_list(errlist *e, const char *path, const field *f,
                              json_t *v) {
  char sub[512];
  if (!json_is_array(v)) {
    add_error(e, path, "must be a list of objects");
    return NULL;
  }
  if (json_array_size(v) == 0) {
    add_error(e, path, "must not be empty");
    return NULL;
  }
  json_t *a = json_array();
  int ok = 1;
  size_t i;
  json_t *x;
  json_array_foreach(v, i, x) {
    snprintf(sub, sizeof sub, "%s[%zu]", path, i);
    json_t *c = check_object(e, sub, f->sub, x);
    if (!c) ok = 0;
    else json_array_append_new(a, c);
  }
  return list_or_null(a, ok);
}

/* One [theta_deg, phi_deg, amplitude] row at `sub`; appended to a even
 * when some column is wrong (the caller drops a then). Returns 1 if fine. */
static int check_source_row(errlist *e, const char *sub, json_t *x, json_t *a) {
  static const field theta = {"", F_NUM, 0, 180, 0, NULL, NULL, NULL};
  static const field phi = {"", F_NUM, -360, 360, 0, NULL, NULL, NULL};
  static const field amp = {"", F_NUM, NOLIM_LO, NOLIM_HI, 0, NULL, NULL, NULL};
  const field *cols[3] = {&theta, &phi, &amp};
  int ok = 1;
  json_t *row = json_array();
  for (size_t c = 0; c < 3; c++) {
    char cp[560];
    snprintf(cp, sizeof cp, "%s[%zu]", sub, c);
    json_t *n = check_value(e, cp, cols[c], json_array_get(x, c));
    if (!n) ok = 0;
    else json_array_append_new(row, n);
  }
  json_array_append_new(a, row);
  return ok;
}

/* A non-empty list of [theta_deg, phi_deg, amplitude]. */
static json_t *check_sources(errlist *e, const char *path, json_t *v) {
  char sub[512];
  if (!json_is_array(v) || json_array_size(v) == 0) {
    add_error(e, path, "must be a non-empty list of [theta_deg, phi_deg, amplitude]");
    return NULL;
  }
  json_t *a = json_array();
  int ok = 1;
  size_t i;
  json_t *x;
  json_array_foreach(v, i, x) {
    snprintf(sub, sizeof sub, "%s[%zu]", path, i);
    if (!json_is_array(x) || json_array_size(x) != 3) {
      add_error(e, sub, "must be [theta_deg, phi_deg, amplitude]");
      ok = 0;
      continue;
    }
    if (!check_source_row(e, sub, x, a)) ok = 0;
  }
  return list_or_null(a, ok);
}

/* Validates v against row f; returns the normalized value or NULL after
 * recording errors. */
static json_t *check_value(errlist *e, const char *path, const field *f,
                           json_t *v) {
  switch (f->type) {
  case F_INT:
    return check_int(e, path, f, v);
  case F_NUM:
    return check_num(e, path, f, v);
  case F_BOOL:
    if (!json_is_boolean(v)) {
      add_error(e, path, "must be true or false");
      return NULL;
    }
    return json_incref(v);
  case F_STR:
    if (!json_is_string(v) || !*json_string_value(v)) {
      add_error(e, path, "must be a non-empty string");
      return NULL;
    }
    return json_incref(v);
  case F_ENUM:
    return check_enum(e, path, f, v);
  case F_INT_LIST:
    return check_int_list(e, path, f, v);
  case F_OBJ:
    return check_object(e, path, f->sub, v);
  case F_OBJ_LIST:
    return check_obj_list(e, path, f, v);
  case F_SOURCES:
    return check_sources(e, path, v);
  }
  return NULL;
}

static void key_list(const field *fields, const char *extra, char *buf,
                     size_t len) {
  size_t used = 0;
  buf[0] = 0;
  if (extra) used += (size_t)snprintf(buf, len, "%s", extra);
  for (const field *f = fields; f->key && used < len; f++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                             f->key);
}

/* The field table of the variant that v's discriminator names; NULL after
 * recording an error. */
static const field *variant_fields(errlist *e, const char *path,
                                   const schema *s, json_t *v) {
  char sub[512];
  child_path(sub, sizeof sub, path, s->discriminator);
  json_t *d = json_object_get(v, s->discriminator);
  char names[256] = "";
  size_t used = 0;
  for (const variant *x = s->variants; x->value; x++)
    used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                             used ? ", " : "", x->value);
  if (!d) {
    add_error(e, sub, "required (%s: %s)", s->what, names);
    return NULL;
  }
  if (!json_is_string(d)) {
    add_error(e, sub, "must be a string (%s: %s)", s->what, names);
    return NULL;
  }
  const field *fields = s->fields;
  for (const variant *x = s->variants; x->value; x++)
    if (!strcmp(x->value, json_string_value(d))) fields = x->fields;
  if (!fields)
    add_error(e, sub, "unknown %s '%s' (expected %s)", s->what,
              json_string_value(d), names);
  return fields;
}

/* Records an error for every key of v that is neither in fields nor the
 * discriminator; returns 1 if there is none. */
static int check_known_keys(errlist *e, const char *path, const schema *s,
                            const field *fields, json_t *v) {
  char sub[512];
  int ok = 1;
  const char *key;
  json_t *val;
  json_object_foreach(v, key, val) {
    if (s->discriminator && !strcmp(key, s->discriminator)) continue;
    const field *f = fields;
    while (f->key && strcmp(f->key, key)) f++;
    if (!f->key) {
      char keys[512];
      key_list(fields, s->discriminator, keys, sizeof keys);
      child_path(sub, sizeof sub, path, key);
      add_error(e, sub, "unknown key (expected one of: %s)", keys);
      ok = 0;
    }
  }
  return ok;
}

/* Checks every row of fields against v (defaults for missing keys) and sets
 * the normalized values in out, in table order; returns 1 if all are fine. */
static int check_fields(errlist *e, const char *path, const field *fields,
                        json_t *v, json_t *out) {
  char sub[512];
  int ok = 1;
  for (const field *f = fields; f->key; f++) {
    child_path(sub, sizeof sub, path, f->key);
    json_t *given = json_object_get(v, f->key);
    json_t *def = NULL;
    if (!given) {
      if (f->def == NULL) continue;
      if (!strcmp(f->def, REQUIRED)) {
        add_error(e, sub, "required");
        ok = 0;
        continue;
      }
      def = json_loads(f->def, JSON_DECODE_ANY, NULL);
      given = def;
    }
    json_t *n = check_value(e, sub, f, given);
    json_decref(def);
    if (!n) {
      ok = 0;
      continue;
    }
    json_object_set_new(out, f->key, n);
  }
  return ok;
}

/* Validates object v against s; returns the normalized object (keys in
 * table order, defaults filled in) or NULL after recording errors. */
static json_t *check_object(errlist *e, const char *path, const schema *s,
                            json_t *v) {
  if (!json_is_object(v)) {
    add_error(e, path, "must be an object");
    return NULL;
  }
  const field *fields = s->fields;
  json_t *out = json_object();
  if (s->discriminator) {
    fields = variant_fields(e, path, s, v);
    if (!fields) {
      json_decref(out);
      return NULL;
    }
    json_object_set(out, s->discriminator, json_object_get(v, s->discriminator));
  }
  int ok = check_known_keys(e, path, s, fields, v);
  if (!check_fields(e, path, fields, v, out)) ok = 0;
  if (!ok) {
    json_decref(out);
    return NULL;
  }
  return out;
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

static void check_readable(errlist *e, const char *path, const char *file) {
  if (file && access(file, R_OK) != 0)
    add_error(e, path, "cannot read '%s': %s", file, strerror(errno));
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
  config_format_number(v, n, sizeof n);
  append(buf, len, " %s=%s", key, n);
}

static int fill_kernel(errlist *e, const char *cfgpath, int idx, json_t *o,
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
    add_error(e, path, "give cutoff_deg or cutoff_rel, not both");
    ok = 0;
  }
  if (k->type == CFG_KERNEL_GAUSSIAN && k->cutoff_deg <= 0 && k->cutoff_rel <= 0) {
    add_error(e, path, "a gaussian kernel needs cutoff_deg or cutoff_rel");
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

static void fill_method(const char *cfgpath, json_t *o, int repeats,
                        int warmup, cfg_method *m) {
  char id[1024], label[256];
  const char *name = str(o, "name");
  m->json = o;
  m->repeats = (int)num(o, "repeats", repeats);
  m->warmup = (int)num(o, "warmup", warmup);
  if (!strcmp(name, "arkcos")) {
    m->type = CFG_METHOD_ARKCOS;
    const char *b = str(o, "backend"), *mode = str(o, "mode"),
               *prec = str(o, "precision");
    m->backend = !strcmp(b, "gpu")   ? ARKCOS_BACKEND_GPU
                 : !strcmp(b, "cpu") ? ARKCOS_BACKEND_CPU
                                     : ARKCOS_BACKEND_AUTO;
    m->mode = !strcmp(mode, "paper") ? ARKCOS_MODE_PAPER : ARKCOS_MODE_ENHANCED;
    m->precision = !strcmp(prec, "single") ? ARKCOS_SINGLE : ARKCOS_DOUBLE;
    m->cache_kernel_spectra = json_is_true(json_object_get(o, "cache_kernel_spectra"));
    m->accuracy = num(o, "accuracy", 0);
    /* "oversample" has no effect since the polar caps are summed exactly:
     * still accepted (old configs run), then dropped from the method object,
     * so that it is in no new id, label or results file (results written
     * before name it where it was set, and stay readable as they are) */
    m->had_oversample = json_object_get(o, "oversample") != NULL;
    json_object_del(o, "oversample");
    /* the id names accuracy only when set, so ids of existing results stay */
    snprintf(id, sizeof id, "arkcos backend=%s mode=%s precision=%s%s", b, mode,
             prec, m->cache_kernel_spectra ? " cache_kernel_spectra=true" : "");
    if (m->accuracy > 0) append_num(id, sizeof id, "accuracy", m->accuracy);
  } else if (!strcmp(name, "fsht")) {
    m->type = CFG_METHOD_FSHT;
    m->iter = (int)num(o, "iter", 3);
    m->lmax_factor = num(o, "lmax_factor", 3);
    const char *w = str(o, "ring_weights");
    m->ring_weights = resolve_path(cfgpath, w);
    snprintf(id, sizeof id, "fsht iter=%d", m->iter);
    append_num(id, sizeof id, "lmax_factor", m->lmax_factor);
    if (w) append(id, sizeof id, " ring_weights=%s", w);
  } else {
    m->type = CFG_METHOD_DIRECT;
    m->sample = (int64_t)num(o, "sample", 0);
    snprintf(id, sizeof id, "direct");
    if (m->sample) append(id, sizeof id, " sample=%lld", (long long)m->sample);
  }
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

int config_lmax(double lmax_factor, int64_t nside) {
  double l = floor(lmax_factor * (double)nside + 1e-9);
  double cap = 3.0 * (double)nside - 1;
  if (l > cap) l = cap;
  if (l < 1) l = 1;
  return (int)l;
}

/* name: given, else the config file's base name without extension. */
static void fill_name(errlist *e, const json_t *n, const char *path,
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
    add_error(e, "name", "'%s' is not usable as a folder name (letters, digits, '.', '_', '-')", name);
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

static void fill_input(errlist *e, const char *cfgpath, const json_t *n,
                       cfg_input *input) {
  json_t *in = json_object_get(n, "input");
  const char *itype = str(in, "type");
  if (strcmp(itype, "random") && json_is_true(json_object_get(in, "pol")))
    add_error(e, "input.pol", "polarized inputs are random fields only (\"type\": \"random\"); %s",
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

static void fill_kernels(errlist *e, const char *cfgpath, const json_t *n,
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
        add_error(e, p, "same kernel as kernels[%d]", j);
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

static void fill_methods(errlist *e, const char *cfgpath, const json_t *n,
                         run_config *cfg) {
  json_t *ms = json_object_get(n, "methods");
  const int nm = (int)json_array_size(ms);
  cfg->methods = calloc((size_t)nm, sizeof(cfg_method));
  int *at = calloc((size_t)nm + 1, sizeof(int)); /* index in the file of methods[k] */
  cfg->nmethods = 0;
  for (int i = 0; cfg->methods && at && i < nm; i++) {
    cfg_method *m = &cfg->methods[cfg->nmethods];
    fill_method(cfgpath, json_array_get(ms, (size_t)i), cfg->repeats, cfg->warmup, m);
    if (m->had_oversample && !cfg->oversample_at) cfg->oversample_at = i + 1;
    char p[64];
    snprintf(p, sizeof p, "methods[%d].ring_weights", i);
    check_readable(e, p, m->ring_weights);
    /* paper mode's polar caps are not exact: it has no bound to trade */
    if (m->type == CFG_METHOD_ARKCOS && m->mode == ARKCOS_MODE_PAPER && m->accuracy > 0) {
      snprintf(p, sizeof p, "methods[%d].accuracy", i);
      add_error(e, p, "applies only to mode \"enhanced\", not \"paper\"");
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
      add_error(e, p, "same method as methods[%d]", at[same]);
    }
    at[cfg->nmethods++] = i;
  }
  free(at);
}

/* The first direct method, else the first fsht method, else none. */
static int default_reference(const run_config *cfg) {
  int ref = CFG_REF_NONE;
  for (int t = CFG_METHOD_DIRECT; t >= CFG_METHOD_FSHT && ref < 0; t--)
    for (int i = 0; i < cfg->nmethods; i++)
      if ((int)cfg->methods[i].type == t) {
        ref = i;
        break;
      }
  return ref;
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
static void fill_reference(errlist *e, json_t *n, run_config *cfg) {
  const char *ref = str(n, "reference");
  if (!ref) {
    cfg->reference = default_reference(cfg);
  } else if (!strcmp(ref, "exact")) {
    cfg->reference = CFG_REF_EXACT;
    if (cfg->input.type != CFG_INPUT_RANDOM)
      add_error(e, "reference", "'exact' needs input.type \"random\" (it is alm2map of K_l a_lm)");
  } else if (strcmp(ref, "none")) {
    cfg->reference = find_method(cfg, ref);
    if (cfg->reference < 0) {
      char list[512] = "";
      for (int i = 0; i < cfg->nmethods; i++)
        append(list, sizeof list, "%s%s", i ? ", " : "", cfg->methods[i].label);
      add_error(e, "reference",
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
  errlist e = {.len = 0, .n = 0, .file = path};
  e.text[0] = 0;
  json_t *n = check_object(&e, "", &top_schema, root);
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

int config_load(const char *path, run_config *cfg, arkcos_error *err) {
  memset(cfg, 0, sizeof *cfg);
  json_error_t je;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!root) {
    if (json_error_code(&je) == json_error_cannot_open_file)
      return arkcos_fail(err, ARKCOS_EINVAL, "%s: %s", path, je.text);
    return arkcos_fail(err, ARKCOS_EINVAL, "%s:%d:%d: malformed JSON: %s",
                       path, je.line, je.column, je.text);
  }
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
