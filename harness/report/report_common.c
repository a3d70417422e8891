/* report_common.c -- helpers shared by the parts of `arkcos report`. */
#include "harness/report/report_common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/common/results.h"
#include "harness/common/util.h"

/* ------------------------------------------------------ string builder */

void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = 1;
      return;
    }
    if (b->s && (size_t)n < room) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + (size_t)n + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->oom = 1;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
}

void sb_cell(sbuf *b, const char *text) {
  sb_printf(b, " ");
  for (const char *p = text ? text : ""; *p; p++) {
    if (*p == '|')
      sb_printf(b, "\\|");
    else if (*p == '\n' || *p == '\r')
      sb_printf(b, " ");
    else
      sb_printf(b, "%c", *p);
  }
  sb_printf(b, " |");
}

void sb_escaped(sbuf *b, const char *text) {
  for (const char *p = text ? text : ""; *p; p++) {
    if (*p == '|')
      sb_printf(b, "\\|");
    else
      sb_printf(b, "%c", *p);
  }
}

/* -------------------------------------------------------------- labels */

const char *report_method_label(json_t *c, char *buf, size_t len) {
  json_t *m = json_object_get(c, "method");
  json_t *used = json_object_get(c, "backend_used");
  if (!json_is_string(used) || !json_is_object(m)) {
    results_doc_method_label(m, buf, len);
    return buf;
  }
  json_t *as_run = json_deep_copy(m);
  if (as_run) json_object_set(as_run, "backend", used);
  results_doc_method_label(as_run ? as_run : m, buf, len);
  json_decref(as_run);
  return buf;
}

static void put_member(char *buf, size_t len, size_t *used, const char *key, json_t *v) {
  if (*used >= len) return;
  if (json_is_string(v))
    *used += (size_t)snprintf(buf + *used, len - *used, " %s=%s", key, json_string_value(v));
  else if (json_is_integer(v))
    *used += (size_t)snprintf(buf + *used, len - *used, " %s=%lld", key,
                              (long long)json_integer_value(v));
  else if (json_is_real(v))
    *used += (size_t)snprintf(buf + *used, len - *used, " %s=%g", key, json_real_value(v));
}

const char *report_case_label(json_t *c, char *buf, size_t len) {
  json_t *id = json_object_get(c, "id");
  if (json_is_string(id) && json_string_value(id)[0]) {
    snprintf(buf, len, "%s", json_string_value(id));
    return buf;
  }
  size_t used = (size_t)snprintf(buf, len, "nside=%lld kernel=%s",
                                 jint(c, "nside", 0), jstr(json_object_get(c, "kernel"), "type", "?"));
  const char *k;
  json_t *v;
  json_object_foreach(json_object_get(c, "kernel"), k, v)
    if (strcmp(k, "type") && strcmp(k, "support_deg")) put_member(buf, len, &used, k, v);
  if (used < len)
    used += (size_t)snprintf(buf + used, len - used, " method=%s", case_method(c));
  json_object_foreach(json_object_get(c, "method"), k, v)
    if (strcmp(k, "name")) put_member(buf, len, &used, k, v);
  if (used < len) snprintf(buf + used, len - used, " threads=%lld", jint(c, "threads", 0));
  return buf;
}

/* ------------------------------------------------------ JSON accessors */

const char *jstr(json_t *obj, const char *key, const char *dflt) {
  json_t *v = json_object_get(obj, key);
  return json_is_string(v) ? json_string_value(v) : dflt;
}

double jnum(json_t *obj, const char *key, double dflt) {
  json_t *v = json_object_get(obj, key);
  return json_is_number(v) ? json_number_value(v) : dflt;
}

long long jint(json_t *obj, const char *key, long long dflt) {
  json_t *v = json_object_get(obj, key);
  return json_is_integer(v) ? (long long)json_integer_value(v)
         : json_is_real(v)  ? (long long)json_real_value(v)
                            : dflt;
}

int case_is(json_t *c, const char *status) { return !strcmp(jstr(c, "status", ""), status); }

const char *case_method(json_t *c) { return jstr(json_object_get(c, "method"), "name", "?"); }

const char *case_backend(json_t *c) {
  return jstr(c, "backend_used", jstr(json_object_get(c, "method"), "backend", "cpu"));
}

double case_tmed(json_t *c) { return jnum(json_object_get(c, "time"), "median", NAN); }

double case_support(json_t *c) {
  return round(jnum(json_object_get(c, "kernel"), "support_deg", NAN) * 1e6) / 1e6;
}

const char *case_fwhm(json_t *c, char *buf, size_t len) {
  json_t *k = json_object_get(c, "kernel");
  json_t *f = json_object_get(k, "fwhm_arcmin");
  if (json_is_number(f))
    snprintf(buf, len, "%g'", json_number_value(f));
  else
    snprintf(buf, len, "%s", jstr(k, "type", "?"));
  return buf;
}

/* ------------------------------------------------------------- formats */

const char *fmt_t(double t, char *buf, size_t len) {
  if (isnan(t))
    snprintf(buf, len, "—");
  else if (t >= 100)
    snprintf(buf, len, "%.0f s", t);
  else if (t >= 1)
    snprintf(buf, len, "%.3g s", t);
  else
    snprintf(buf, len, "%.3g ms", t * 1e3);
  return buf;
}

const char *fmt_ev(double x, char *buf, size_t len) {
  if (isnan(x))
    snprintf(buf, len, "—");
  else if (x == 0)
    snprintf(buf, len, "0");
  else
    snprintf(buf, len, "%.1e", x);
  return buf;
}

const char *fmt_e(json_t *v, char *buf, size_t len) {
  return fmt_ev(json_is_number(v) ? json_number_value(v) : NAN, buf, len);
}

void stage_groups(json_t *c, double share[4], double *total) {
  json_t *s = json_object_get(c, "stages");
  double g[4] = {jnum(s, "map_fft", 0) + jnum(s, "kernel_fft", 0) + jnum(s, "map_ifft", 0),
                 jnum(s, "kernel_eval", 0), jnum(s, "reduction", 0),
                 jnum(s, "other", 0) + jnum(s, "h2d", 0) + jnum(s, "d2h", 0)};
  double tot = g[0] + g[1] + g[2] + g[3];
  for (int k = 0; k < 4; k++) share[k] = tot > 0 ? 100.0 * g[k] / tot : NAN;
  *total = tot;
}

/* ------------------------------------------------------------- outputs */

int report_mkdirs(const char *path) {
  char tmp[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof tmp) return -1;
  memcpy(tmp, path, n + 1);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0777) && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0777) && errno != EEXIST) return -1;
  struct stat st;
  return stat(tmp, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

int report_write(const char *dir, const char *name, const sbuf *b, arkcos_error *err) {
  char path[4096];
  if (b->oom) return arkcos_fail(err, ARKCOS_ENOMEM, "%s/%s: out of memory", dir, name);
  if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: path too long", dir);
  return atomic_write_text(path, b->s ? b->s : "", err);
}

/* An absolute, normalised path ("." and ".." resolved lexically). */
static void abspath(const char *p, char *out, size_t len) {
  char raw[8192] = "";
  if (p[0] != '/' && getcwd(raw, sizeof raw - 1)) strcat(raw, "/");
  strncat(raw, p, sizeof raw - strlen(raw) - 1);
  size_t o = 0;
  out[0] = '\0';
  for (char *tok = strtok(raw, "/"); tok; tok = strtok(NULL, "/")) {
    if (!strcmp(tok, ".")) continue;
    if (!strcmp(tok, "..")) {
      while (o > 0 && out[o - 1] != '/') o--;
      if (o > 0) o--;
      out[o] = '\0';
      continue;
    }
    if (o < len) o += (size_t)snprintf(out + o, len - o, "/%s", tok);
  }
  if (!out[0]) snprintf(out, len, "/");
}

const char *report_relpath(const char *target, const char *from, char *buf, size_t len) {
  char t[4096], f[4096];
  abspath(target, t, sizeof t);
  abspath(from, f, sizeof f);
  size_t common = 0; /* length of the shared folder prefix */
  for (size_t i = 0;; i++) {
    int tend = t[i] == '/' || !t[i], fend = f[i] == '/' || !f[i];
    if (tend && fend) common = i;
    if (!t[i] || !f[i] || t[i] != f[i]) break;
  }
  size_t used = 0;
  buf[0] = '\0';
  for (const char *p = f + common; *p; p++)
    if (*p == '/' && used < len) used += (size_t)snprintf(buf + used, len - used, "../");
  const char *rest = t + common + (t[common] == '/');
  if (used < len) snprintf(buf + used, len - used, "%s", rest);
  if (!buf[0]) snprintf(buf, len, ".");
  else if (buf[strlen(buf) - 1] == '/') buf[strlen(buf) - 1] = '\0';
  return buf;
}

void gp_var_str(sbuf *b, const char *name, const char *value) {
  sb_printf(b, "%s = '", name);
  for (const char *p = value; *p; p++) sb_printf(b, *p == '\'' ? "''" : "%c", *p);
  sb_printf(b, "'\n");
}

void gp_var_int(sbuf *b, const char *name, long long value) {
  sb_printf(b, "%s = %lld\n", name, value);
}

void gp_var_num(sbuf *b, const char *name, double v) {
  char s[64];
  if (isnan(v)) {
    snprintf(s, sizeof s, "nan");
  } else {
    for (int prec = 1; prec <= 17; prec++) { /* the shortest that reads back */
      snprintf(s, sizeof s, "%.*g", prec, v);
      if (strtod(s, NULL) == v) break;
    }
    if (!strpbrk(s, ".eni")) strcat(s, ".0");
  }
  sb_printf(b, "%s = %s\n", name, s);
}
