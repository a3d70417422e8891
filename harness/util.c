#define _POSIX_C_SOURCE 200809L
#include "harness/util.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/status.h"

int report_error(const arkcos_error *err) {
  fprintf(stderr, "arkcos: %s\n", err->msg[0] ? err->msg : "unknown error");
  return exit_status_of(err->code);
}

int atomic_begin(const char *path, int force, char *tmp, size_t tmplen,
                 arkcos_error *err) {
  struct stat st;
  if (!force && stat(path, &st) == 0)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: output exists (use --force to overwrite)", path);
  int n = snprintf(tmp, tmplen, "%s.tmp-XXXXXX", path);
  if (n < 0 || (size_t)n >= tmplen)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: path too long", path);
  int fd = mkstemp(tmp);
  if (fd < 0)
    return arkcos_fail(err, ARKCOS_EIO, "%s: cannot create output: %s", path,
                       strerror(errno));
  /* mkstemp creates the file 0600; outputs get the mode any new file gets */
  mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, 0666 & ~mask) != 0) {
    int e = errno;
    close(fd);
    unlink(tmp);
    return arkcos_fail(err, ARKCOS_EIO, "%s: cannot set the output's mode: %s", path,
                       strerror(e));
  }
  close(fd);
  /* CFITSIO refuses to create over an existing file: callers that need a
   * fresh name remove it first; text writers just truncate it. */
  return ARKCOS_OK;
}

int atomic_commit(const char *tmp, const char *path, arkcos_error *err) {
  if (rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return arkcos_fail(err, ARKCOS_EIO, "%s: cannot rename output: %s", path,
                       strerror(e));
  }
  return ARKCOS_OK;
}

void atomic_abort(const char *tmp) { unlink(tmp); }

int atomic_write_text(const char *path, const char *text, arkcos_error *err) {
  char tmp[4096];
  int rc = atomic_begin(path, 1, tmp, sizeof tmp, err);
  if (rc) return rc;
  FILE *f = fopen(tmp, "w");
  if (!f) {
    atomic_abort(tmp);
    return arkcos_fail(err, ARKCOS_EIO, "%s: %s", tmp, strerror(errno));
  }
  size_t len = strlen(text);
  int bad = fwrite(text, 1, len, f) != len;
  bad |= fflush(f) != 0;
  bad |= fsync(fileno(f)) != 0;
  bad |= fclose(f) != 0;
  if (bad) {
    atomic_abort(tmp);
    return arkcos_fail(err, ARKCOS_EIO, "%s: write failed", path);
  }
  return atomic_commit(tmp, path, err);
}

double wall_time(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

size_t peak_rss_bytes(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return (size_t)ru.ru_maxrss * 1024u;
}

int parse_double(const char *s, double *v) {
  if (!s || !*s) return 0;
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (*end || errno || !isfinite(x)) return 0;
  *v = x;
  return 1;
}

int parse_bytes(const char *s, double *v) {
  if (!s || !*s) return 0;
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (end == s || errno || !isfinite(x) || !(x > 0)) return 0;
  static const char units[] = "KMGT";
  const char *u = *end ? strchr(units, *end) : NULL;
  if (u && *end) {
    x *= pow(1e3, (double)(u - units + 1));
    end++;
  }
  if (*end == 'B') end++;
  if (*end) return 0;
  *v = x;
  return 1;
}

int parse_long(const char *s, long *v) {
  if (!s || !*s) return 0;
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (*end || errno) return 0;
  *v = x;
  return 1;
}

int smooth_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "arkcos smooth: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(arkcos smooth --help for usage)\n");
  va_end(ap);
  return 2;
}

void stage_times_add(arkcos_stage_times *sum, const arkcos_stage_times *t) {
  sum->map_fft += t->map_fft;
  sum->kernel_eval += t->kernel_eval;
  sum->kernel_fft += t->kernel_fft;
  sum->reduction += t->reduction;
  sum->map_ifft += t->map_ifft;
  sum->h2d += t->h2d;
  sum->d2h += t->d2h;
  sum->other += t->other;
  sum->total += t->total;
  sum->direct += t->direct;
}
