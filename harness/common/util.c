#define _POSIX_C_SOURCE 200809L
#include "harness/common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/common/status.h"

int report_error(const arkcos_error *err) {
  fprintf(stderr, "arkcos: %s\n", err->msg[0] ? err->msg : "unknown error");
  return exit_status_of(err->code);
}

/* The temporary file being written now (one at a time: writers are
 * sequential), so that SIGINT / SIGTERM can remove it; and the line to
 * print then. Both are read by the handler, which only calls unlink,
 * write and raise (async-signal-safe). */
static char pending_tmp[4096];
static volatile sig_atomic_t pending_set;
static char stop_note[2048];
static volatile sig_atomic_t stop_note_len;

static void pending_begin(const char *tmp) {
  pending_set = 0;
  snprintf(pending_tmp, sizeof pending_tmp, "%s", tmp);
  pending_set = 1;
}

static void pending_end(void) { pending_set = 0; }

static void on_stop_signal(int sig) {
  if (pending_set) unlink(pending_tmp);
  if (stop_note_len > 0) {
    ssize_t w = write(2, stop_note, (size_t)stop_note_len);
    (void)w;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void signals_install(void) {
  /* Past a file-size limit (ulimit -f) a write fails with EFBIG, which every
   * writer reports (exit 1, temporary file removed), instead of SIGXFSZ
   * killing the process without a word. */
  signal(SIGXFSZ, SIG_IGN);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
  for (int i = 0; i < 3; i++) {
    struct sigaction old;
    /* a signal ignored by whoever started us (nohup) stays ignored */
    if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    sigaction(sigs[i], &sa, NULL);
  }
}

void signals_stop_note(const char *line) {
  stop_note_len = 0;
  if (!line) return;
  snprintf(stop_note, sizeof stop_note, "%s", line);
  stop_note_len = (sig_atomic_t)strlen(stop_note);
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
  if (!*path) return arkcos_fail(err, ARKCOS_EINVAL, "empty output file name");
  /* a stop signal between mkstemp and pending_begin would leave the file
   * behind (seen once under AddressSanitizer's slower code): held back
   * until the handler knows the name */
  sigset_t stop, old;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop, &old);
  int fd = mkstemp(tmp);
  if (fd >= 0) pending_begin(tmp);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
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
    pending_end();
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
    pending_end();
    return arkcos_fail(err, ARKCOS_EIO, "%s: cannot rename output: %s", path,
                       strerror(e));
  }
  pending_end();
  return ARKCOS_OK;
}

void atomic_abort(const char *tmp) {
  unlink(tmp);
  pending_end();
}

/* "NAME.tmp-XXXXXX" as atomic_begin makes them. */
static int is_atomic_tmp(const char *name) {
  const char *t = strstr(name, ".tmp-");
  while (t && strstr(t + 1, ".tmp-")) t = strstr(t + 1, ".tmp-");
  return t && t != name && strlen(t + 5) == 6;
}

int atomic_remove_stale(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!is_atomic_tmp(e->d_name)) continue;
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISREG(st.st_mode) && unlink(p) == 0) n++;
  }
  closedir(d);
  return n;
}

int folder_lock(const char *dir, const char *what, int *fd_out, arkcos_error *err) {
  char p[4200];
  snprintf(p, sizeof p, "%s/.arkcos.lock", dir);
  int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0)
    return arkcos_fail(err, ARKCOS_EIO, "%s: cannot create the lock file: %s", p, strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    char holder[64] = "";
    ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
    holder[n > 0 ? n : 0] = 0;
    holder[strcspn(holder, "\n")] = 0;
    close(fd);
    if (e == EWOULDBLOCK)
      return arkcos_fail(err, ARKCOS_ERUNTIME,
                         "%s is in use by another %s%s%s (lock %s); wait for it to finish, or "
                         "use another folder", dir, what, holder[0] ? ", pid " : "", holder, p);
    return arkcos_fail(err, ARKCOS_EIO, "%s: cannot lock: %s", p, strerror(e));
  }
  char pid[32];
  int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)len, 0) != len) { /* informative only */ }
  *fd_out = fd;
  return ARKCOS_OK;
}

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
  int e = 0;
  if (fwrite(text, 1, len, f) != len || fflush(f) != 0 || fsync(fileno(f)) != 0) e = errno;
  if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
  if (e) {
    atomic_abort(tmp);
    return arkcos_fail(err, ARKCOS_EIO, "%s: write failed: %s", path, strerror(e));
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
