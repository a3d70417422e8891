/* report_common.h -- what the parts of `arkcos report` share: a string
 * builder, the one case label, JSON accessors for results documents, number
 * formats, and output files. */
#ifndef ARKCOS_HARNESS_REPORT_COMMON_H
#define ARKCOS_HARNESS_REPORT_COMMON_H

#include <stddef.h>
#include <jansson.h>

#include "arkcos/arkcos.h"

/* ------------------------------------------------------ string builder */
typedef struct {
  char *s;
  size_t len, cap;
  int oom;
} sbuf;

void sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A Markdown table cell: '|' escaped, line breaks flattened. */
void sb_cell(sbuf *b, const char *text);
/* text with '|' escaped as "\|" (Markdown table contents). */
void sb_escaped(sbuf *b, const char *text);

/* -------------------------------------------------------------- labels */
/* How every report names a case: its "id" (the canonical text of nside,
 * kernel, method and threads that `arkcos run` records), or, for a case
 * without one, the same fields composed from the case's members. */
const char *report_case_label(json_t *case_obj, char *buf, size_t len);
/* How every report names a case's method: results_doc_method_label of the
 * method as it ran (the backend used), e.g. "arkcos-cpu-enhanced-double",
 * "fsht-iter3". */
const char *report_method_label(json_t *case_obj, char *buf, size_t len);

/* ------------------------------------------------------ JSON accessors */
const char *jstr(json_t *obj, const char *key, const char *dflt);
double jnum(json_t *obj, const char *key, double dflt); /* dflt when absent */
long long jint(json_t *obj, const char *key, long long dflt);
int case_is(json_t *c, const char *status);             /* status equals */
const char *case_method(json_t *c);                     /* method.name */
const char *case_backend(json_t *c);                    /* backend used */
double case_tmed(json_t *c);                            /* time.median */
double case_support(json_t *c);  /* kernel.support_deg to 1e-6 */
/* The `fwhm'` of the case's kernel, or its type. */
const char *case_fwhm(json_t *c, char *buf, size_t len);

/* ------------------------------------------------------------- formats */
const char *fmt_t(double t, char *buf, size_t len);  /* "—", "12 s", "3.4 ms" */
const char *fmt_e(json_t *v, char *buf, size_t len); /* "—", "0", "1.2e-05" */
const char *fmt_ev(double v, char *buf, size_t len); /* same for a double */

/* Stage shares in the four groups of the paper's Table 1 (ffts,
 * kernel_eval, reduction, others), percent of their sum; *total = sum. */
void stage_groups(json_t *c, double share[4], double *total);

/* ------------------------------------------------------------- outputs */
int report_mkdirs(const char *dir);
/* Writes text to dir/name atomically. */
int report_write(const char *dir, const char *name, const sbuf *b, arkcos_error *err);
/* The path of target relative to the folder from (both made absolute
 * against the working folder, like Python's os.path.relpath). */
const char *report_relpath(const char *target, const char *from, char *buf, size_t len);

/* gnuplot variable files: name = 'text' / number, one a line. */
void gp_var_str(sbuf *b, const char *name, const char *value);
void gp_var_int(sbuf *b, const char *name, long long value);
void gp_var_num(sbuf *b, const char *name, double value); /* shortest form */

#endif
