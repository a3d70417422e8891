/* options.c -- the option table and the checks that serve JSON configs and
 * command lines alike (options.h). */
#include "harness/common/options.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/common/util.h"

/* ------------------------------------------------------------ the table */

#define NOLIM HUGE_VAL
#define ROW(ID, KEY, FLAG, TYPE, MIN, MAX, DEF, HELP) \
  [ID] = {.key = KEY, .flag = FLAG, .type = TYPE, .min = MIN, .max = MAX, .def = DEF, .help = HELP}
#define ROWX(ID, KEY, FLAG, TYPE, MIN, MAX, DEF, HELP) \
  [ID] = {.key = KEY, .flag = FLAG, .type = TYPE, .min = MIN, .max = MAX, .min_exclusive = 1, \
          .def = DEF, .help = HELP}
#define CHOICE(ID, KEY, FLAG, CHOICES, DEF, HELP) \
  [ID] = {.key = KEY, .flag = FLAG, .type = OPT_T_ENUM, .choices = CHOICES, .def = DEF, .help = HELP}

/* Ranges are one per key: the widest that any command or config accepted
 * before they shared this table, so that nothing that ran stops running
 * (--iter 0..1000, as `arkcos smooth` had; configs and compare-maps had
 * 0..100), except where a value was meaningless (cutoff_rel 1: a cut at the
 * peak). */
const opt_def opt_table[OPT_COUNT] = {
    /* methods: `only` names the one method a row applies to */
    CHOICE(OPT_METHOD, "name", "--method", "arkcos|direct|fsht", "\"arkcos\"",
           "arkcos, direct (the exact pixel sum) or fsht (libsharp)"),
    [OPT_BACKEND] = {.key = "backend", .flag = "--backend", .type = OPT_T_ENUM, .choices = "auto|cpu|gpu",
                     .def = "\"auto\"", .only = "arkcos",
                     .help = "arkcos: auto (the GPU if one is usable, else the CPU), cpu or gpu"},
    [OPT_MODE] = {.key = "mode", .flag = "--mode", .type = OPT_T_ENUM, .choices = "enhanced|paper",
                  .def = "\"enhanced\"", .only = "arkcos", .help = "arkcos: enhanced or paper"},
    [OPT_PRECISION] = {.key = "precision", .flag = "--precision", .type = OPT_T_ENUM, .choices = "double|single",
                       .def = "\"double\"", .only = "arkcos", .help = "arkcos: double or single"},
    [OPT_CACHE_KERNEL_SPECTRA] = {.key = "cache_kernel_spectra", .type = OPT_T_BOOL, .def = "false",
                                  .only = "arkcos", .help = "arkcos: keep the kernel spectra from plan creation"},
    [OPT_DIRECT_WEIGHTS] = {.key = "weights", .type = OPT_T_ENUM, .choices = "tables|auto|fly",
                            .def = "\"tables\"", .only = "arkcos",
                            .help = "arkcos: the polar caps' direct weights of the reused plan: tables (default: a "
                                    "sweep times the execute), auto (the library's: tables where the plan stays "
                                    "within two maps and 64 MB) or fly (computed in each execute)"},
    [OPT_OVERSAMPLE] = {.key = "oversample", .flag = "--oversample", .type = OPT_T_INT, .min = 0, .max = 8,
                        .only = "arkcos",
                        .help = "arkcos: no effect (the polar caps are summed exactly); accepted, ignored"},
    [OPT_ACCURACY] = {.key = "accuracy", .flag = "--accuracy", .type = OPT_T_NUM, .min = 0, .max = NOLIM,
                      .def = "0", .only = "arkcos",
                      .help = "arkcos, enhanced: 0 exact, EPS > 0 the a-priori bound the plan may spend"},
    [OPT_ITER] = {.key = "iter", .flag = "--iter", .type = OPT_T_INT, .min = 0, .max = 1000, .def = "3",
                  .only = "fsht", .help = "fsht: Jacobi iterations of map2alm (3 as HEALPix and healpy)"},
    [OPT_LMAX] = {.key = "lmax", .flag = "--lmax", .type = OPT_T_INT, .min = 1, .max = 2147483647.0,
                  .only = "fsht", .help = "band limit L (at most 4 nside, checked against the map)"},
    [OPT_FSHT_LMAX_FACTOR] = {.key = "lmax_factor", .type = OPT_T_NUM, .min = 0, .max = 3, .min_exclusive = 1,
                              .def = "3", .only = "fsht",
                              .help = "fsht: band limit floor(f nside), at most 3 nside - 1"},
    [OPT_RING_WEIGHTS] = {.key = "ring_weights", .type = OPT_T_STR, .only = "fsht",
                          .help = "fsht: per-ring weights file"},
    [OPT_SAMPLE] = {.key = "sample", .type = OPT_T_INT, .min = 1, .max = 1e12, .only = "direct",
                    .help = "direct: output pixels sampled (all without)"},
    ROW(OPT_METHOD_REPEATS, "repeats", NULL, OPT_T_INT, 1, 10000, NULL,
        "timed repeats of this method (default: the config's)"),
    ROW(OPT_METHOD_WARMUP, "warmup", NULL, OPT_T_INT, 0, 1000, NULL,
        "untimed runs of this method (default: the config's)"),
    ROW(OPT_THREADS, "threads", "--threads", OPT_T_INT, 0, 4096, "0", "CPU threads; 0: all cores"),
    [OPT_MAX_MEMORY] = {.key = "max_memory", .flag = "--max-memory", .type = OPT_T_BYTES, .min = 0,
                        .max = NOLIM, .min_exclusive = 1, .only = "arkcos",
                        .help = "arkcos: memory a plan may hold (bytes, or 8G, 500M)"},
    /* kernels */
    ROWX(OPT_FWHM_ARCMIN, "fwhm_arcmin", "--fwhm-arcmin", OPT_T_NUM, 0, 10800, OPT_REQUIRED,
         "Gaussian: full width at half maximum, arcmin"),
    ROWX(OPT_CUTOFF_DEG, "cutoff_deg", "--cutoff-deg", OPT_T_NUM, 0, 180, NULL, "cut at this radius, degrees"),
    ROWX(OPT_TOPHAT_DEG, "cutoff_deg", NULL, OPT_T_NUM, 0, 180, OPT_REQUIRED,
         "top-hat: its radius (the cutoff), degrees"),
    [OPT_CUTOFF_REL] = {.key = "cutoff_rel", .flag = "--cutoff-rel", .type = OPT_T_NUM, .min = 0, .max = 1,
                        .min_exclusive = 1, .max_exclusive = 1,
                        .help = "cut where K first falls below EPS K(0)"},
    ROW(OPT_KERNEL_PATH, "path", "--kernel-file", OPT_T_STR, 0, 0, OPT_REQUIRED,
        "radial profile: angle, K columns"),
    CHOICE(OPT_KERNEL_UNIT, "unit", "--kernel-unit", "rad|deg|arcmin", "\"rad\"",
           "unit of the kernel file's angle column"),
    ROW(OPT_ALLOW_NEGATIVE, "allow_negative", "--allow-negative", OPT_T_BOOL, 0, 0, "false",
        "accept negative K in a kernel file"),
    /* inputs */
    ROWX(OPT_INPUT_LMAX_FACTOR, "lmax_factor", NULL, OPT_T_NUM, 0, 3, "2",
         "random input: band limit floor(f nside), at most 3 nside - 1"),
    ROW(OPT_SEED, "seed", NULL, OPT_T_INT, 0, 9007199254740992.0, "1", "random input: seed"),
    ROW(OPT_CL_FILE, "cl_file", NULL, OPT_T_STR, 0, 0, NULL, "random input: `l C_l` text file"),
    ROW(OPT_POL, "pol", NULL, OPT_T_BOOL, 0, 0, "false", "random input: I, Q, U (every case also as spin 2)"),
    ROW(OPT_INPUT_POL, "pol", NULL, OPT_T_BOOL, 0, 0, NULL, "accepted as false only"),
    ROW(OPT_SOURCES, "sources", NULL, OPT_T_SOURCES, 0, 0, OPT_REQUIRED,
        "point sources: [theta_deg, phi_deg, amplitude] rows"),
    ROW(OPT_FITS_PATH, "path", NULL, OPT_T_STR, 0, 0, OPT_REQUIRED, "HEALPix FITS map"),
    /* sweep, top level */
    ROW(OPT_NAME, "name", NULL, OPT_T_STR, 0, 0, NULL, "names the output folder"),
    ROW(OPT_DESCRIPTION, "description", NULL, OPT_T_STR, 0, 0, NULL, "free text"),
    ROW(OPT_REPEATS, "repeats", NULL, OPT_T_INT, 1, 10000, "3", "timed repeats per case"),
    ROW(OPT_WARMUP, "warmup", NULL, OPT_T_INT, 0, 1000, "1", "untimed runs before the repeats"),
    ROW(OPT_INTERLEAVE, "interleave", NULL, OPT_T_BOOL, 0, 0, "false", "time the methods in turns"),
    ROW(OPT_THREADS_AXIS, "threads", NULL, OPT_T_INT_LIST, 0, 4096, "0", "CPU threads, an axis; 0: all cores"),
    ROW(OPT_NSIDE_AXIS, "nside", NULL, OPT_T_INT_LIST, 1, 1 << 20, OPT_REQUIRED, "HEALPix nside, an axis"),
    ROW(OPT_REFERENCE, "reference", NULL, OPT_T_STR, 0, 0, NULL, "what the metrics are computed against"),
    ROW(OPT_DIRECT_MAX_EVALS, "direct_max_evals", NULL, OPT_T_NUM, 0, NOLIM, "1e10",
        "direct cases above this many kernel evaluations are skipped"),
    ROW(OPT_MEMORY_BYTES, "memory_bytes", NULL, OPT_T_NUM, 0, NOLIM, "0", "memory a case may use; 0: the memory available"),
    ROW(OPT_MIN_PIXELS_PER_FWHM, "min_pixels_per_fwhm", NULL, OPT_T_NUM, 0, NOLIM, "1",
        "arkcos and direct cases below are skipped"),
    /* sweep outputs */
    ROW(OPT_MAPS, "maps", NULL, OPT_T_BOOL, 0, 0, "false", "write the maps"),
    ROW(OPT_MAPS_FLOAT32, "maps_float32", NULL, OPT_T_BOOL, 0, 0, "false", "write them as float32"),
    ROW(OPT_SPECTRA, "spectra", NULL, OPT_T_BOOL, 0, 0, "false", "write spectra"),
    ROWX(OPT_SPECTRA_LMAX_FACTOR, "spectra_lmax_factor", NULL, OPT_T_NUM, 0, 3, "2", "their band limit factor"),
    ROW(OPT_SPECTRA_ITER, "spectra_iter", NULL, OPT_T_INT, 0, 1000, "3", "their map2alm iterations"),
    ROW(OPT_PATCH_THETA_DEG, "theta_deg", NULL, OPT_T_NUM, 0, 180, OPT_REQUIRED, "patch centre colatitude"),
    ROW(OPT_PATCH_PHI_DEG, "phi_deg", NULL, OPT_T_NUM, -360, 360, OPT_REQUIRED, "patch centre longitude"),
    ROWX(OPT_PATCH_SIDE_DEG, "side_deg", NULL, OPT_T_NUM, 0, 90, OPT_REQUIRED, "patch side"),
    ROW(OPT_PATCH_N, "n", NULL, OPT_T_INT, 2, 4096, "200", "patch samples per side"),
    ROW(OPT_PATCH_LOG, "log", NULL, OPT_T_BOOL, 0, 0, "false", "log10 of |value|"),
    /* command lines of run, report, compare */
    ROW(OPT_OUT, "out", "--out", OPT_T_STR, 0, 0, NULL, "output folder"),
    ROW(OPT_RESUME, "resume", "--resume", OPT_T_BOOL, 0, 0, "false", "continue the run in the folder"),
    ROW(OPT_FORCE, "force", "--force", OPT_T_BOOL, 0, 0, "false", "overwrite existing outputs"),
    ROW(OPT_PUBLISHED, "published", "--published", OPT_T_STR, 0, 0, NULL, "the paper's published numbers"),
    ROW(OPT_NO_PUBLISHED, "no_published", "--no-published", OPT_T_BOOL, 0, 0, "false",
        "leave the paper's column out"),
    ROW(OPT_FSHT_SELECTOR, "fsht", "--fsht", OPT_T_STR, 0, 0, "\"fsht\"", "the FSHT case speed-ups refer to"),
    [OPT_THRESHOLD] = {.key = "threshold", .flag = "--threshold", .type = OPT_T_NUM, .min = 0, .max = 100,
                       .min_exclusive = 1, .def = "0.15", .percent = 1,
                       .help = "relative slowdown that matters: 0.15 or 15%"},
    [OPT_ALPHA] = {.key = "alpha", .flag = "--alpha", .type = OPT_T_NUM, .min = 0, .max = 1,
                   .min_exclusive = 1, .max_exclusive = 1, .def = "0.05",
                   .help = "significance level of the U test"},
    ROW(OPT_NORMALIZE_BY, "normalize_by", "--normalize-by", OPT_T_STR, 0, 0, NULL,
        "divide every time by this method's"),
    CHOICE(OPT_CLOCK, "clock", "--clock", "auto|cpu|wall", "\"auto\"", "which time is judged"),
    ROW(OPT_TRUST_REPEATS, "trust_repeats", "--trust-repeats", OPT_T_BOOL, 0, 0, "false",
        "judge without the noise checks"),
    /* `arkcos smooth` */
    ROW(OPT_RANKS, "ranks", "--ranks", OPT_T_INT, 1, 1000000, NULL, "--dry-run: the ranks to predict for"),
    ROW(OPT_DRY_RUN, "dry_run", "--dry-run", OPT_T_BOOL, 0, 0, "false", "the checks and the memory, nothing else"),
    ROW(OPT_MPI_SPLIT, "mpi_split", "--mpi-split", OPT_T_BOOL, 0, 0, "false", "each map over all MPI ranks"),
    ROW(OPT_QUIET, "quiet", "--quiet", OPT_T_BOOL, 0, 0, "false", "no progress lines"),
    ROW(OPT_VERBOSE, "verbose", "--verbose", OPT_T_BOOL, 0, 0, "false", "also each plan's a-priori bound"),
    /* the kernel of `arkcos smooth` (a config's top-hat is {"type": "tophat", "cutoff_deg": R}) */
    ROWX(OPT_TOPHAT_RADIUS, "tophat_deg", "--tophat-deg", OPT_T_NUM, 0, 180, NULL,
         "top-hat: constant inside this radius (its cutoff), degrees"),
    CHOICE(OPT_GAUSSIAN, "gaussian", "--gaussian", "profile|harmonic", "\"profile\"",
           "--fwhm-arcmin: a Gaussian in angle (profile) or healpy's harmonic beam"),
    CHOICE(OPT_QUADRATURE, "quadrature", "--quadrature", "ring|point|polar", "\"polar\"",
           "arkcos and direct: ring-weighted pixels, pixel centres, or ring-weighted with the poles reconstructed"),
    ROW(OPT_BEAM_FILE, "beam_file", "--beam-file", OPT_T_STR, 0, 0, NULL,
        "beam transfer function B_l (FITS table or `l B_l` text)"),
    ROW(OPT_BEAM_COLUMN, "beam_column", "--beam-column", OPT_T_STR, 0, 0, NULL,
        "--beam-file: the FITS column of B_l, a name or a number from 1"),
    /* 1e-4: a Gaussian B_l cut at the default --cutoff-rel 1e-5 has 6e-6 (tests/test_beam.c), and
     * 1e-4 is below the pixel-quadrature error of a kernel at 2.5 to 4 pixels per FWHM
     * (docs/NARROW_BEAMS.md), so it does not dominate */
    [OPT_BEAM_TOLERANCE] = {.key = "beam_tolerance", .flag = "--beam-tolerance", .type = OPT_T_NUM, .min = 0,
                            .max = 1, .min_exclusive = 1, .max_exclusive = 1, .def = "1e-4",
                            .help = "--beam-file: the largest window error accepted"},
    /* missing data */
    ROW(OPT_MASK, "mask", "--mask", OPT_T_STR, 0, 0, NULL, "HEALPix map of weights in [0, 1]"),
    CHOICE(OPT_MASK_MODE, "mask_mode", "--mask-mode", "normalize|zero", "\"normalize\"",
           "normalize: A(w m) / A(w); zero: A(w m)"),
    ROW(OPT_MIN_WEIGHT, "min_weight", "--min-weight", OPT_T_NUM, 0, 1, NULL,
        "normalize: UNSEEN where A(w) < W (default 0.5; 0: no threshold)"),
    ROW(OPT_WRITE_WEIGHT, "write_weight", "--write-weight", OPT_T_BOOL, 0, 0, "false", "also write A(w)"),
    /* narrow kernels, Q and U */
    ROW(OPT_NORMALIZE, "normalize", "--normalize", OPT_T_BOOL, 0, 0, "false", "divide by A(1)"),
    ROW(OPT_ALLOW_SUBPIXEL, "allow_subpixel", "--allow-subpixel", OPT_T_BOOL, 0, 0, "false",
        "direct: a kernel below 1 pixel per FWHM anyway"),
    ROW(OPT_SMOOTH_POL, "pol", "--pol", OPT_T_BOOL, 0, 0, "false", "Q and U without an intensity as spin 2"),
    ROW(OPT_NO_POL, "no_pol", "--no-pol", OPT_T_BOOL, 0, 0, "false", "every column a scalar, Q and U too"),
};

/* ------------------------------------------------------------ messages */

void opt_error(opt_errors *e, const char *path, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  e->n++;
  if (e->len >= sizeof e->text - 1) return;
  int w = snprintf(e->text + e->len, sizeof e->text - e->len, "%s%s%s%s%s%s",
                   e->n > 1 ? "\n" : "", e->file ? e->file : "", e->file ? ": " : "",
                   path ? path : "", path && *path ? ": " : "", msg);
  if (w > 0) e->len += (size_t)w;
  if (e->len > sizeof e->text - 1) e->len = sizeof e->text - 1;
}

void opt_format_number(double v, char *buf, size_t len) {
  if (!buf || !len) return;
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(buf, len, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}

void opt_range_text(const opt_def *f, char *buf, size_t len) {
  char lo[64], hi[64];
  opt_format_number(f->min, lo, sizeof lo);
  opt_format_number(f->max, hi, sizeof hi);
  if (isinf(f->max))
    snprintf(buf, len, "%s %s", f->min_exclusive ? ">" : ">=", lo);
  else
    snprintf(buf, len, "%s%s, %s%s", f->min_exclusive ? "(" : "[", lo, hi, f->max_exclusive ? ")" : "]");
}

/* "a, b or c" from "a|b|c" */
static void choice_text(const char *choices, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  int n = 1;
  for (const char *c = choices; *c; c++) n += *c == '|';
  int k = 0;
  for (const char *c = choices; *c && used < len;) {
    const char *bar = strchr(c, '|');
    size_t cl = bar ? (size_t)(bar - c) : strlen(c);
    used += (size_t)snprintf(buf + used, len - used, "%s%.*s", k == 0 ? "" : k == n - 1 ? " or " : ", ",
                             (int)cl, c);
    k++;
    c += cl + (bar ? 1 : 0);
  }
}

/* ------------------------------------------------------------ JSON checks */

static void child_path(char *out, size_t len, const char *parent, const char *key) {
  if (parent && *parent)
    snprintf(out, len, "%s.%s", parent, key);
  else
    snprintf(out, len, "%s", key);
}

/* Checks a number against a row's range; returns 1 if fine. */
static int check_range(opt_errors *e, const char *path, const opt_def *f, double v) {
  char b[64];
  if (f->min_exclusive ? !(v > f->min) : !(v >= f->min)) {
    opt_format_number(f->min, b, sizeof b);
    opt_error(e, path, "must be %s %s", f->min_exclusive ? ">" : ">=", b);
    return 0;
  }
  if (f->max_exclusive ? !(v < f->max) : !(v <= f->max)) {
    opt_format_number(f->max, b, sizeof b);
    opt_error(e, path, "must be %s %s", f->max_exclusive ? "<" : "<=", b);
    return 0;
  }
  return 1;
}

/* An integer value (integral reals accepted) or NULL after an error. */
static json_t *check_int(opt_errors *e, const char *path, const opt_def *f, json_t *v) {
  double d;
  if (json_is_integer(v)) {
    d = (double)json_integer_value(v);
  } else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
             fabs(json_real_value(v)) < 9.1e18) {
    d = json_real_value(v);
  } else {
    opt_error(e, path, "must be an integer");
    return NULL;
  }
  if (!check_range(e, path, f, d)) return NULL;
  return json_integer((json_int_t)d);
}

static json_t *check_num(opt_errors *e, const char *path, const opt_def *f, json_t *v) {
  if (!json_is_number(v)) {
    opt_error(e, path, "must be a number");
    return NULL;
  }
  if (!check_range(e, path, f, json_number_value(v))) return NULL;
  return json_real(json_number_value(v));
}

/* One of the strings in f->choices ("a|b|c"). */
static json_t *check_enum(opt_errors *e, const char *path, const opt_def *f, json_t *v) {
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
  choice_text(f->choices, list, sizeof list);
  if (s)
    opt_error(e, path, "expected %s, got '%s'", list, s);
  else
    opt_error(e, path, "must be a string (%s)", list);
  return NULL;
}

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
static int check_distinct(opt_errors *e, const char *path, const json_t *a) {
  const size_t n = json_array_size(a);
  indexed_value *s = malloc((n ? n : 1) * sizeof *s);
  size_t *first = malloc((n ? n : 1) * sizeof *first);
  if (!s || !first) {
    free(s);
    free(first);
    opt_error(e, path, "out of memory checking for repeated values");
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
      opt_error(e, sub, "repeats the value %lld of [%zu]",
                (long long)json_integer_value(json_array_get(a, i)), first[i]);
      ok = 0;
    }
  free(s);
  free(first);
  return ok;
}

/* An integer or a non-empty list of distinct integers, as a list. */
static json_t *check_int_list(opt_errors *e, const char *path, const opt_def *f, json_t *v) {
  char sub[512];
  if (!json_is_array(v)) {
    json_t *one = check_int(e, path, f, v);
    if (!one) return NULL;
    json_t *a = json_array();
    json_array_append_new(a, one);
    return a;
  }
  if (json_array_size(v) == 0) {
    opt_error(e, path, "must not be empty");
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
static json_t *check_obj_list(opt_errors *e, const char *path, const opt_def *f, json_t *v) {
  char sub[512];
  if (!json_is_array(v)) {
    opt_error(e, path, "must be a list of objects");
    return NULL;
  }
  if (json_array_size(v) == 0) {
    opt_error(e, path, "must not be empty");
    return NULL;
  }
  json_t *a = json_array();
  int ok = 1;
  size_t i;
  json_t *x;
  json_array_foreach(v, i, x) {
    snprintf(sub, sizeof sub, "%s[%zu]", path, i);
    json_t *c = opt_check_object(e, sub, f->sub, x);
    if (!c) ok = 0;
    else json_array_append_new(a, c);
  }
  return list_or_null(a, ok);
}

/* One [theta_deg, phi_deg, amplitude] row at `sub`; appended to a even
 * when some column is wrong (the caller drops a then). Returns 1 if fine. */
static int check_source_row(opt_errors *e, const char *sub, json_t *x, json_t *a) {
  static const opt_def cols[3] = {
      {.key = "", .type = OPT_T_NUM, .min = 0, .max = 180},
      {.key = "", .type = OPT_T_NUM, .min = -360, .max = 360},
      {.key = "", .type = OPT_T_NUM, .min = -NOLIM, .max = NOLIM},
  };
  int ok = 1;
  json_t *row = json_array();
  for (size_t c = 0; c < 3; c++) {
    char cp[560];
    snprintf(cp, sizeof cp, "%s[%zu]", sub, c);
    json_t *n = opt_check_value(e, cp, &cols[c], json_array_get(x, c));
    if (!n) ok = 0;
    else json_array_append_new(row, n);
  }
  json_array_append_new(a, row);
  return ok;
}

/* A non-empty list of [theta_deg, phi_deg, amplitude]. */
static json_t *check_sources(opt_errors *e, const char *path, json_t *v) {
  char sub[512];
  if (!json_is_array(v) || json_array_size(v) == 0) {
    opt_error(e, path, "must be a non-empty list of [theta_deg, phi_deg, amplitude]");
    return NULL;
  }
  json_t *a = json_array();
  int ok = 1;
  size_t i;
  json_t *x;
  json_array_foreach(v, i, x) {
    snprintf(sub, sizeof sub, "%s[%zu]", path, i);
    if (!json_is_array(x) || json_array_size(x) != 3) {
      opt_error(e, sub, "must be [theta_deg, phi_deg, amplitude]");
      ok = 0;
      continue;
    }
    if (!check_source_row(e, sub, x, a)) ok = 0;
  }
  return list_or_null(a, ok);
}

json_t *opt_check_value(opt_errors *e, const char *path, const opt_def *f, json_t *v) {
  switch (f->type) {
  case OPT_T_INT:
    return check_int(e, path, f, v);
  case OPT_T_NUM:
  case OPT_T_BYTES:
    return check_num(e, path, f, v);
  case OPT_T_BOOL:
    if (!json_is_boolean(v)) {
      opt_error(e, path, "must be true or false");
      return NULL;
    }
    return json_incref(v);
  case OPT_T_STR:
    if (!json_is_string(v) || !*json_string_value(v)) {
      opt_error(e, path, "must be a non-empty string");
      return NULL;
    }
    return json_incref(v);
  case OPT_T_ENUM:
    return check_enum(e, path, f, v);
  case OPT_T_INT_LIST:
    return check_int_list(e, path, f, v);
  case OPT_T_OBJ:
    return opt_check_object(e, path, f->sub, v);
  case OPT_T_OBJ_LIST:
    return check_obj_list(e, path, f, v);
  case OPT_T_SOURCES:
    return check_sources(e, path, v);
  }
  return NULL;
}

static void key_list(const opt_def *const *fields, const char *extra, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  if (extra) used += (size_t)snprintf(buf, len, "%s", extra);
  for (const opt_def *const *f = fields; *f && used < len; f++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", (*f)->key);
}

/* The rows of the variant that v's discriminator names; NULL after
 * recording an error. */
static const opt_def *const *variant_fields(opt_errors *e, const char *path, const opt_schema *s,
                                            json_t *v) {
  char sub[512];
  child_path(sub, sizeof sub, path, s->discriminator);
  json_t *d = json_object_get(v, s->discriminator);
  char names[256] = "";
  size_t used = 0;
  for (const opt_variant *x = s->variants; x->value; x++)
    used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", x->value);
  if (!d) {
    opt_error(e, sub, "required (%s: %s)", s->what, names);
    return NULL;
  }
  if (!json_is_string(d)) {
    opt_error(e, sub, "must be a string (%s: %s)", s->what, names);
    return NULL;
  }
  const opt_def *const *fields = s->fields;
  for (const opt_variant *x = s->variants; x->value; x++)
    if (!strcmp(x->value, json_string_value(d))) fields = x->fields;
  if (!fields)
    opt_error(e, sub, "unknown %s '%s' (expected %s)", s->what, json_string_value(d), names);
  return fields;
}

/* Records an error for every key of v that is neither in fields nor the
 * discriminator; returns 1 if there is none. */
static int check_known_keys(opt_errors *e, const char *path, const opt_schema *s,
                            const opt_def *const *fields, json_t *v) {
  char sub[512];
  int ok = 1;
  const char *key;
  json_t *val;
  json_object_foreach(v, key, val) {
    if (s->discriminator && !strcmp(key, s->discriminator)) continue;
    const opt_def *const *f = fields;
    while (*f && strcmp((*f)->key, key)) f++;
    if (!*f) {
      char keys[512];
      key_list(fields, s->discriminator, keys, sizeof keys);
      child_path(sub, sizeof sub, path, key);
      opt_error(e, sub, "unknown key (expected one of: %s)", keys);
      ok = 0;
    }
  }
  return ok;
}

/* Checks every row of fields against v (defaults for missing keys) and sets
 * the normalized values in out, in table order; returns 1 if all are fine. */
static int check_fields(opt_errors *e, const char *path, const opt_def *const *fields, json_t *v,
                        json_t *out) {
  char sub[512];
  int ok = 1;
  for (const opt_def *const *fp = fields; *fp; fp++) {
    const opt_def *f = *fp;
    child_path(sub, sizeof sub, path, f->key);
    json_t *given = json_object_get(v, f->key);
    json_t *def = NULL;
    if (!given) {
      if (f->def == NULL) continue;
      if (!strcmp(f->def, OPT_REQUIRED)) {
        opt_error(e, sub, "required");
        ok = 0;
        continue;
      }
      def = json_loads(f->def, JSON_DECODE_ANY, NULL);
      given = def;
    }
    json_t *n = opt_check_value(e, sub, f, given);
    json_decref(def);
    if (!n) {
      ok = 0;
      continue;
    }
    json_object_set_new(out, f->key, n);
  }
  return ok;
}

json_t *opt_check_object(opt_errors *e, const char *path, const opt_schema *s, json_t *v) {
  if (!json_is_object(v)) {
    opt_error(e, path, "must be an object");
    return NULL;
  }
  const opt_def *const *fields = s->fields;
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

/* ------------------------------------------------------------ argv */

/* The JSON value of the text of an option of row f, or NULL after a
 * message in e (the text could not be read as the row's type). */
static json_t *value_of_text(opt_errors *e, const opt_def *f, const char *flag, const char *text) {
  if (f->type == OPT_T_INT) {
    long v;
    if (!parse_long(text, &v)) {
      opt_error(e, flag, "'%s' is not an integer", text);
      return NULL;
    }
    return json_integer(v);
  }
  if (f->type == OPT_T_BYTES) {
    double v;
    if (!parse_bytes(text, &v)) {
      opt_error(e, flag, "'%s' is not a positive size (bytes, or with K, M, G, T)", text);
      return NULL;
    }
    return json_real(v);
  }
  if (f->type == OPT_T_NUM) {
    char buf[128];
    double v, scale = 1;
    size_t n = strlen(text);
    snprintf(buf, sizeof buf, "%s", text);
    if (f->percent && n > 0 && n < sizeof buf && buf[n - 1] == '%') {
      buf[n - 1] = 0;
      scale = 0.01;
    }
    if (n >= sizeof buf || !parse_double(buf, &v)) {
      opt_error(e, flag, "'%s' is not a finite number%s", text,
                f->percent ? " (a fraction, e.g. 0.15, or a percentage, e.g. 15%)" : "");
      return NULL;
    }
    return json_real(v * scale);
  }
  return json_string(text);
}

static const opt_arg *find_arg(const opt_arg *args, int n, const char *name) {
  for (int k = 0; k < n; k++) {
    const opt_def *f = &opt_table[args[k].id];
    if ((f->flag && !strcmp(name, f->flag)) || (args[k].alias && !strcmp(name, args[k].alias)))
      return &args[k];
  }
  return NULL;
}

static int argv_fail(const char *cmd, opt_errors *e) {
  fprintf(stderr, "%s: %s\n(%s --help for usage)\n", cmd, e->text, cmd);
  return 2;
}

int opt_parse_argv(const char *cmd, int argc, char **argv, const opt_arg *args, int n,
                   json_t *vals, const char **pos, int maxpos, int *npos) {
  return opt_parse_argv_texts(cmd, argc, argv, args, n, vals, pos, maxpos, npos, NULL);
}

void opt_split_arg(const char *arg, char *name, size_t len, const char **val) {
  const char *eq = strchr(arg, '=');
  *val = NULL;
  if (eq && (size_t)(eq - arg) < len) {
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = 0;
    *val = eq + 1;
  } else {
    snprintf(name, len, "%s", arg);
  }
}

int opt_parse_argv_texts(const char *cmd, int argc, char **argv, const opt_arg *args, int n,
                         json_t *vals, const char **pos, int maxpos, int *npos, const char **texts) {
  int options_done = 0;
  for (int k = 0; texts && k < n; k++) texts[k] = NULL;
  opt_errors e = {.len = 0, .n = 0, .file = NULL};
  e.text[0] = 0;
  *npos = 0;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (options_done || arg[0] != '-' || !arg[1]) {
      if (*npos >= maxpos) {
        opt_error(&e, NULL, "unexpected argument '%s'", arg);
        return argv_fail(cmd, &e);
      }
      pos[(*npos)++] = arg;
      continue;
    }
    if (!strcmp(arg, "--")) {
      options_done = 1;
      continue;
    }
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) return -1;
    char name[64];
    const char *val;
    opt_split_arg(arg, name, sizeof name, &val);
    const opt_arg *a = find_arg(args, n, name);
    if (!a) {
      opt_error(&e, NULL, "unknown option '%s'", arg);
      return argv_fail(cmd, &e);
    }
    const opt_def *f = &opt_table[a->id];
    if (json_object_get(vals, f->key)) {
      opt_error(&e, f->flag, "given twice");
      return argv_fail(cmd, &e);
    }
    json_t *v;
    if (f->type == OPT_T_BOOL) {
      if (val) {
        opt_error(&e, f->flag, "takes no value");
        return argv_fail(cmd, &e);
      }
      v = json_true();
    } else {
      if (!val) {
        /* a following "--option" is a forgotten value, not a value */
        if (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2)) {
          if (f->choices) {
            char list[256];
            choice_text(f->choices, list, sizeof list);
            opt_error(&e, f->flag, "needs a value (%s)", list);
          } else {
            opt_error(&e, f->flag, "needs a value");
          }
          return argv_fail(cmd, &e);
        }
        val = argv[++i];
      }
      json_t *given = value_of_text(&e, f, f->flag, val);
      if (!given) return argv_fail(cmd, &e);
      v = opt_check_value(&e, f->flag, f, given);
      json_decref(given);
      if (!v) {
        if (f->type != OPT_T_ENUM && e.len + 32 < sizeof e.text)
          e.len += (size_t)snprintf(e.text + e.len, sizeof e.text - e.len, ", got '%s'", val);
        return argv_fail(cmd, &e);
      }
      if (f->percent && json_real_value(v) >= 1 && !strchr(val, '%'))
        fprintf(stderr, "%s: note: %s %s is a fraction (%.0f%%); write %s%% for percent\n", cmd,
                f->flag, val, 100 * json_real_value(v), val);
    }
    json_object_set_new(vals, f->key, v);
    if (texts) texts[a - args] = val ? val : "";
  }
  return 0;
}

int opt_check_applies(const char *cmd, const json_t *vals, const opt_arg *args, int n, const char *method) {
  for (int k = 0; k < n; k++) {
    const opt_def *f = &opt_table[args[k].id];
    if (f->only && strcmp(f->only, method) && json_object_get(vals, f->key)) {
      fprintf(stderr, "%s: %s applies only to %s %s, not %s\n(%s --help for usage)\n", cmd, f->flag,
              opt_table[OPT_METHOD].flag, f->only, method, cmd);
      return 2;
    }
  }
  return 0;
}

/* ------------------------------------------------------------ reads */

static json_t *value_or_default(const json_t *vals, opt_id id, json_t **tmp) {
  const opt_def *f = &opt_table[id];
  json_t *v = json_object_get(vals, f->key);
  *tmp = NULL;
  if (!v && f->def && strcmp(f->def, OPT_REQUIRED)) v = *tmp = json_loads(f->def, JSON_DECODE_ANY, NULL);
  return v;
}

double opt_num(const json_t *vals, opt_id id, double def) {
  json_t *tmp, *v = value_or_default(vals, id, &tmp);
  double r = v && json_is_number(v) ? json_number_value(v) : def;
  json_decref(tmp);
  return r;
}

const char *opt_str(const json_t *vals, opt_id id) {
  const opt_def *f = &opt_table[id];
  const char *s = json_string_value(json_object_get(vals, f->key));
  if (s || !f->def || f->def[0] != '"') return s;
  /* a string default: the row's text without its quotes, kept */
  static char defaults[OPT_COUNT][64];
  if (!defaults[id][0]) snprintf(defaults[id], sizeof defaults[id], "%.*s", (int)strlen(f->def) - 2, f->def + 1);
  return defaults[id];
}

int opt_bool(const json_t *vals, opt_id id) {
  json_t *tmp, *v = value_or_default(vals, id, &tmp);
  int r = json_is_true(v);
  json_decref(tmp);
  return r;
}

int opt_given(const json_t *vals, opt_id id) { return json_object_get(vals, opt_table[id].key) != NULL; }

int opt_choice(const json_t *vals, opt_id id) {
  const char *v = opt_str(vals, id), *c = opt_table[id].choices;
  for (int k = 0; v && c && *c; k++) {
    const char *bar = strchr(c, '|');
    size_t cl = bar ? (size_t)(bar - c) : strlen(c);
    if (cl == strlen(v) && !strncmp(c, v, cl)) return k;
    if (!bar) break;
    c = bar + 1;
  }
  return -1;
}
