/* report_paper.h -- the parts of REPORT.md: the claims table rows
 * (report_claims.c), the whole-sphere accuracy section (report_exact.c) and
 * the document around them (report_paper.c). */
#ifndef ARKCOS_HARNESS_REPORT_PAPER_H
#define ARKCOS_HARNESS_REPORT_PAPER_H

#include <jansson.h>

#include "harness/report/report_common.h"
#include "harness/report/report_sweeps.h"

typedef struct {
  sweeps sw;
  json_t *pub;        /* published.json */
  json_t *claims;     /* its "claims" */
  sbuf rows;          /* "| `id` | paper | here | verdict |" lines */
} paper_ctx;

/* One table row; the cells get '|' escaped. */
void claim_row(paper_ctx *p, const char *id, const char *paper, const char *here,
               const char *verdict);
/* The published claim with this id (NULL if none). */
json_t *claim_by_id(const paper_ctx *p, const char *id);

void claims_time(paper_ctx *p);
void claims_table1(paper_ctx *p);
void claims_accuracy(paper_ctx *p);
void claims_speedup(paper_ctx *p);
void claims_ringing(paper_ctx *p);

/* "## Whole-sphere accuracy against the direct sum": the `exact` sweep's
 * cases per kernel family and method, or why there are none. */
void report_exact(sbuf *b, const paper_ctx *p, const char *profile);

#endif
