/* meta.c -- hardware and software metadata (see meta.h). */
#include "harness/common/meta.h"

#include <fftw3.h>
#include <fitsio.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "arkcos/arkcos.h"


void meta_utc_time(char *buf, size_t len, int compact) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, compact ? "%Y%m%dT%H%M%SZ" : "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* First line of a command's output, trimmed; 0 if it failed or said nothing. */
static int command_line_output(const char *cmd, char *buf, size_t len) {
  FILE *p = popen(cmd, "r");
  if (!p) return 0;
  buf[0] = 0;
  if (!fgets(buf, (int)len, p)) buf[0] = 0;
  int status = pclose(p);
  buf[strcspn(buf, "\r\n")] = 0;
  return status == 0 && buf[0];
}

/* Quotes a string for the shell only where it needs it. */
static void shell_quote(const char *s, char *out, size_t len) {
  int plain = *s != 0;
  for (const char *c = s; *c; c++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                "_./=:,+-@%", *c))
      plain = 0;
  if (plain) {
    snprintf(out, len, "%s", s);
    return;
  }
  size_t u = 0;
  if (u < len - 1) out[u++] = '\'';
  for (const char *c = s; *c && u < len - 5; c++) {
    if (*c == '\'') {
      memcpy(out + u, "'\\''", 4);
      u += 4;
    } else {
      out[u++] = *c;
    }
  }
  if (u < len - 1) out[u++] = '\'';
  out[u] = 0;
}

static void cpu_model(char *buf, size_t len) {
  snprintf(buf, len, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    /* x86: "model name"; arm64: no model name, but "CPU part"; ppc: "cpu" */
    if (!strncmp(line, "model name", 10) || !strncmp(line, "Model\t", 6) ||
        !strncmp(line, "cpu\t", 4)) {
      char *colon = strchr(line, ':');
      if (!colon) continue;
      colon++;
      while (*colon == ' ' || *colon == '\t') colon++;
      colon[strcspn(colon, "\r\n")] = 0;
      if (*colon) {
        snprintf(buf, len, "%s", colon);
        break;
      }
    }
  }
  fclose(f);
}

/* Physical memory of the machine in bytes (0 if unknown), meta.memory_bytes:
 * a fact about the machine, not a limit (a sweep's default limit is the
 * engine's, arkcos_memory_available). A cgroup limit (container) below the
 * physical memory wins. */
static double meta_memory_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  double mem = pages > 0 && psize > 0 ? (double)pages * (double)psize : 0;
  const char *limits[] = {"/sys/fs/cgroup/memory.max",
                          "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
  for (int i = 0; i < 2; i++) {
    FILE *f = fopen(limits[i], "r");
    if (!f) continue;
    char line[64];
    if (fgets(line, sizeof line, f)) {
      char *end;
      double v = strtod(line, &end);
      if (end != line && v > 0 && (mem == 0 || v < mem)) mem = v;
    }
    fclose(f);
  }
  return mem;
}

static void os_name(char *buf, size_t len) {
  struct utsname u;
  char pretty[256] = "";
  FILE *f = fopen("/etc/os-release", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f))
      if (!strncmp(line, "PRETTY_NAME=", 12)) {
        char *v = line + 12;
        v[strcspn(v, "\r\n")] = 0;
        if (*v == '"') {
          v++;
          char *q = strrchr(v, '"');
          if (q) *q = 0;
        }
        snprintf(pretty, sizeof pretty, "%.200s", v);
      }
    fclose(f);
  }
  if (uname(&u) == 0)
    snprintf(buf, len, "%s%s%s %s %s", pretty, *pretty ? ", " : "", u.sysname,
             u.release, u.machine);
  else
    snprintf(buf, len, "%s", *pretty ? pretty : "unknown");
}

/* The Makefile passes its CFLAGS as ARKCOS_CFLAGS; the predefined macros add
 * what flags like -march=native resolved to on the build machine. */
static void compiler_flags(char *buf, size_t len) {
  static const char detected[] = ""
#ifdef __OPTIMIZE__
                                 " optimized"
#else
                                 " -O0"
#endif
#ifdef _OPENMP
                                 " openmp"
#endif
#ifdef __FAST_MATH__
                                 " fast-math"
#endif
#ifdef __AVX512F__
                                 " avx512f"
#endif
#ifdef __AVX2__
                                 " avx2"
#endif
#ifdef __FMA__
                                 " fma"
#endif
#ifdef __ARM_NEON
                                 " neon"
#endif
      ;
#ifdef ARKCOS_CFLAGS
  snprintf(buf, len, "%s (detected:%s)", ARKCOS_CFLAGS, detected);
#else
  snprintf(buf, len, "unknown (built without ARKCOS_CFLAGS; detected:%s)", detected);
#endif
}

static void compiler_name(char *buf, size_t len) {
#if defined(__clang__)
  snprintf(buf, len, "clang %s", __clang_version__);
#elif defined(__GNUC__)
  snprintf(buf, len, "gcc %s", __VERSION__);
#elif defined(__VERSION__)
  snprintf(buf, len, "%s", __VERSION__);
#else
  snprintf(buf, len, "unknown");
#endif
}

static json_t *cuda_version(int built, int v, int three) {
  if (!built) return json_string("none");
  if (v <= 0) return json_string("unknown");
  char b[32];
  if (three) /* cuFFT: major * 1000 + minor * 100 + patch */
    snprintf(b, sizeof b, "%d.%d.%d", v / 1000, (v % 1000) / 100, v % 100);
  else /* CUDA runtime / driver: major * 1000 + minor * 10 */
    snprintf(b, sizeof b, "%d.%d", v / 1000, (v % 1000) / 10);
  return json_string(b);
}

/* The command line, each argument quoted for the shell where needed. */
static void command_text(int argc, char **argv, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; i < argc && used < len - 1; i++) {
    char q[1024];
    shell_quote(argv[i], q, sizeof q);
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " " : "", q);
  }
}

/* Cores this process may run on (its affinity mask), else those online. */
static int available_cores(void) {
  int cores = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
  if (cores <= 0) cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  return cores;
}

/* date, command, the build's commit, host, CPU, memory, OS and compiler. */
static void collect_machine(json_t *m, int argc, char **argv) {
  char buf[4096];
  meta_utc_time(buf, sizeof buf, 0);
  json_object_set_new(m, "date", json_string(buf));

  command_text(argc, argv, buf, sizeof buf);
  json_object_set_new(m, "command", json_string(buf));

  /* the commit the engine was built from, recorded at build time (never the
   * repository of the working directory: nothing asks git at run time) */
  const int dirty = arkcos_build_dirty();
  json_object_set_new(m, "git_commit", json_string(arkcos_build_commit()));
  json_object_set_new(m, "git_dirty", dirty < 0 ? json_null() : json_boolean(dirty));

  if (gethostname(buf, sizeof buf) != 0) snprintf(buf, sizeof buf, "unknown");
  buf[sizeof buf - 1] = 0;
  json_object_set_new(m, "host", json_string(buf));

  cpu_model(buf, sizeof buf);
  json_object_set_new(m, "cpu_model", json_string(buf));
  json_object_set_new(m, "cores", json_integer(available_cores()));
  json_object_set_new(m, "cores_online", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
  json_object_set_new(m, "memory_bytes", json_integer((json_int_t)meta_memory_bytes()));

  os_name(buf, sizeof buf);
  json_object_set_new(m, "os", json_string(buf));
  compiler_name(buf, sizeof buf);
  json_object_set_new(m, "compiler", json_string(buf));
  compiler_flags(buf, sizeof buf);
  json_object_set_new(m, "cflags", json_string(buf));
}

/* libsharp 1.0 has no version call: ask the package manager. */
static void libsharp_version(char *buf, size_t len) {
  if (!command_line_output("dpkg-query -W -f='${Version}' libsharp-dev 2>/dev/null",
                           buf, len) &&
      !command_line_output("dpkg-query -W -f='${Version}' libsharp0 2>/dev/null",
                           buf, len) &&
      !command_line_output("pkg-config --modversion libsharp 2>/dev/null", buf,
                           len))
    snprintf(buf, len, "unknown");
}

static void cfitsio_version(char *buf, size_t len) {
  float fv = 0;
  fits_get_version(&fv);
  /* the library reports major + minor / 100; the header knows the micro */
  int fmaj = (int)fv, fmin = (int)((fv - (float)fmaj) * 100.0f + 0.5f);
  snprintf(buf, len, "%d.%d", fmaj, fmin);
#if defined(CFITSIO_MAJOR) && defined(CFITSIO_MINOR) && defined(CFITSIO_MICRO)
  if (fmaj == CFITSIO_MAJOR && fmin == CFITSIO_MINOR)
    snprintf(buf, len, "%d.%d.%d", fmaj, fmin, CFITSIO_MICRO);
#endif
}

static json_t *library_versions(const arkcos_gpu_info *gi) {
  char buf[4096];
  json_t *v = json_object();
  json_object_set_new(v, "arkcos", json_string(arkcos_version()));
  json_object_set_new(v, "fftw", json_string(fftw_version));
  libsharp_version(buf, sizeof buf);
  json_object_set_new(v, "libsharp", json_string(buf));
  cfitsio_version(buf, sizeof buf);
  json_object_set_new(v, "cfitsio", json_string(buf));
  json_object_set_new(v, "jansson", json_string(JANSSON_VERSION));
  json_object_set_new(v, "cuda_runtime", cuda_version(gi->built_with_cuda, gi->runtime_version, 0));
  json_object_set_new(v, "cuda_driver", cuda_version(gi->built_with_cuda, gi->driver_version, 0));
  json_object_set_new(v, "cufft", cuda_version(gi->built_with_cuda, gi->cufft_version, 1));
  return v;
}

static json_t *gpu_list(const arkcos_gpu_info *gi) {
  char buf[32];
  json_t *gpus = json_array();
  int nd = gi->ndevices;
  if (nd > (int)(sizeof gi->devices / sizeof gi->devices[0]))
    nd = (int)(sizeof gi->devices / sizeof gi->devices[0]);
  for (int i = 0; i < nd; i++) {
    const arkcos_gpu_device_info *d = &gi->devices[i];
    json_t *g = json_object();
    json_object_set_new(g, "name", json_string(d->name));
    json_object_set_new(g, "sm_count", json_integer(d->sm_count));
    json_object_set_new(g, "memory_bytes", json_integer((json_int_t)d->total_memory));
    json_object_set_new(g, "clock_khz", json_integer(d->clock_khz));
    json_object_set_new(g, "memory_clock_khz", json_integer(d->memory_clock_khz));
    snprintf(buf, sizeof buf, "%d.%d", d->cc_major, d->cc_minor);
    json_object_set_new(g, "compute_capability", json_string(buf));
    json_array_append_new(gpus, g);
  }
  return gpus;
}

json_t *meta_collect(int argc, char **argv) {
  json_t *m = json_object();
  collect_machine(m, argc, argv);

  arkcos_gpu_info gi;
  memset(&gi, 0, sizeof gi);
  arkcos_gpu_query(&gi);
  json_object_set_new(m, "versions", library_versions(&gi));
  json_object_set_new(m, "gpus", gpu_list(&gi));
  return m;
}

static const char *s(const json_t *o, const char *k) {
  const char *v = json_string_value(json_object_get(o, k));
  return v ? v : "unknown";
}

void meta_print(FILE *f, const json_t *m) {
  const json_t *v = json_object_get(m, "versions");
  fprintf(f, "arkcos      %s\n", s(v, "arkcos"));
  const json_t *dirty = json_object_get(m, "git_dirty");
  fprintf(f, "built from  git commit %s%s\n", s(m, "git_commit"),
          json_is_true(dirty) ? " (with local changes)"
          : json_is_false(dirty) ? "" : " (no git history at build time)");
  fprintf(f, "host        %s\n", s(m, "host"));
  fprintf(f, "cpu         %s, %lld cores available\n", s(m, "cpu_model"),
          (long long)json_integer_value(json_object_get(m, "cores")));
  fprintf(f, "memory      %.1f GiB\n",
          (double)json_integer_value(json_object_get(m, "memory_bytes")) / 1073741824.0);
  fprintf(f, "os          %s\n", s(m, "os"));
  fprintf(f, "compiler    %s\n", s(m, "compiler"));
  fprintf(f, "cflags      %s\n", s(m, "cflags"));
  fprintf(f, "fftw        %s\n", s(v, "fftw"));
  fprintf(f, "libsharp    %s\n", s(v, "libsharp"));
  fprintf(f, "cfitsio     %s\n", s(v, "cfitsio"));
  fprintf(f, "jansson     %s\n", s(v, "jansson"));
  fprintf(f, "cuda        runtime %s, driver %s, cufft %s\n", s(v, "cuda_runtime"),
          s(v, "cuda_driver"), s(v, "cufft"));
  const json_t *gpus = json_object_get(m, "gpus");
  if (json_array_size(gpus) == 0) fprintf(f, "gpus        none\n");
  for (size_t i = 0; i < json_array_size(gpus); i++) {
    const json_t *g = json_array_get(gpus, i);
    fprintf(f, "gpu %zu       %s (cc %s), %lld SMs, %.1f GiB, %.0f MHz, memory %.0f MHz\n", i,
            s(g, "name"), s(g, "compute_capability"),
            (long long)json_integer_value(json_object_get(g, "sm_count")),
            (double)json_integer_value(json_object_get(g, "memory_bytes")) / 1073741824.0,
            (double)json_integer_value(json_object_get(g, "clock_khz")) / 1000.0,
            (double)json_integer_value(json_object_get(g, "memory_clock_khz")) / 1000.0);
  }
}
