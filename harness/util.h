/* util.h -- small helpers for the command line: messages, safe output. */
#ifndef ARKCOS_HARNESS_UTIL_H
#define ARKCOS_HARNESS_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include "arkcos/arkcos.h"

/* Prints "arkcos: <msg>" to stderr and returns the exit status for err. */
int report_error(const arkcos_error *err);

/* Atomic output: open a temporary file next to `path` (same folder). Fails
 * with ARKCOS_EINVAL if path exists and force is 0. tmp receives the
 * temporary name (size >= 4096). The file gets mode 0666 & ~umask, like
 * any file the process creates. */
int atomic_begin(const char *path, int force, char *tmp, size_t tmplen,
                 arkcos_error *err);
/* Renames tmp onto path. */
int atomic_commit(const char *tmp, const char *path, arkcos_error *err);
/* Removes tmp (after a failure); ignores errors. */
void atomic_abort(const char *tmp);
/* Writes a whole text buffer to path atomically (overwrites). */
int atomic_write_text(const char *path, const char *text, arkcos_error *err);

double wall_time(void);               /* seconds, monotonic */
size_t peak_rss_bytes(void);          /* process peak resident set */
int parse_double(const char *s, double *v);  /* whole string, finite */
int parse_long(const char *s, long *v);      /* whole string */
/* A positive byte count: a number with an optional K, M, G or T (powers of
 * 1000) and an optional B ("8G", "500MB", "2.5e9"). 1 if valid. */
int parse_bytes(const char *s, double *v);

/* sum += t, stage by stage (every field of arkcos_stage_times). */
void stage_times_add(arkcos_stage_times *sum, const arkcos_stage_times *t);

/* `arkcos smooth`'s usage error: "arkcos smooth: <message>" and a pointer
 * to --help on stderr; returns exit status 2. */
int smooth_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#endif
