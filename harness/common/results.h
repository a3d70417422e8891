/*
 * results.h -- the results document of `arkcos run`: results.json and the
 * summary.csv beside it, rewritten atomically after every case so that a
 * killed run loses at most the case in progress and can be resumed.
 *
 * results.json = {"meta": {...}, "cases": [{...}, ...]}; configs/README.md
 * documents every field. Cases are keyed by their "id" (the canonical text of
 * nside, kernel, method and threads), which is stable across runs.
 */
#ifndef ARKCOS_HARNESS_RESULTS_H
#define ARKCOS_HARNESS_RESULTS_H

#include <jansson.h>

#include "arkcos/arkcos.h"

typedef struct results_doc {
  char dir[4096];
  char json_path[4200];
  char csv_path[4200];
  json_t *root;
} results_doc;

/* Creates dir (and its parents) and starts a document there with `meta`
 * (stolen) and no cases; written at once. Fails with ARKCOS_EINVAL when
 * dir/results.json exists and force is 0. */
int results_doc_create(results_doc *r, const char *dir, json_t *meta, int force,
                   arkcos_error *err);

/* Reads dir/results.json to resume it (ARKCOS_EINVAL if missing or not a
 * results document). */
int results_doc_open(results_doc *r, const char *dir, arkcos_error *err);

/* The recorded case with this id, or NULL (borrowed reference). */
json_t *results_doc_find(const results_doc *r, const char *id);

/* Records a case (stolen), replacing a recorded case with the same id in
 * place, and rewrites results.json and summary.csv. */
int results_doc_put(results_doc *r, json_t *c, arkcos_error *err);

/* Rewrites results.json and summary.csv (atomically, each). */
int results_doc_save(results_doc *r, arkcos_error *err);

/* The summary.csv text of a results document (malloc'd): a header row and
 * one row per case, empty fields where a value does not apply. */
char *results_doc_summary_csv(const json_t *root);

/* Short method label of a case's method object, as in the CSV "method"
 * column: "arkcos-cpu-enhanced-double", "fsht-iter3", "direct"; arkcos
 * options set away from their defaults add "-cached", "-a<accuracy>"
 * ("arkcos-cpu-enhanced-double-a1e-08"), and, in results written while
 * "oversample" had an effect, "-q<oversample>" before "-a". */
void results_doc_method_label(const json_t *method, char *buf, size_t len);

/* mkdir -p */
int results_doc_mkdirs(const char *dir, arkcos_error *err);

void results_doc_free(results_doc *r); /* safe on a zeroed document */

#endif
