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
/* Removes the temporary files (NAME.tmp-XXXXXX) that a killed writer left
 * in dir; returns how many. Call it only while holding dir's lock. */
int atomic_remove_stale(const char *dir);
/* Takes an exclusive lock on dir (flock on dir/.arkcos.lock, which records
 * the holder's pid); *fd holds it until the process ends. ARKCOS_ERUNTIME
 * naming the folder and the holder when another process has it ("another
 * `what`"). */
int folder_lock(const char *dir, const char *what, int *fd, arkcos_error *err);
/* SIGXFSZ ignored (a write past `ulimit -f` fails with EFBIG and is
 * reported); SIGINT, SIGTERM and SIGHUP remove the temporary file being
 * written, print the stop note (if any) and end the process by the signal.
 * Outputs already renamed into place stay. */
void signals_install(void);
/* The line printed on SIGINT / SIGTERM / SIGHUP (NULL: none). */
void signals_stop_note(const char *line);
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
