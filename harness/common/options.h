/*
 * options.h -- the one table of the harness's options: every value a user
 * gives, on the command line (`--iter 3`) or in a JSON sweep config
 * (`"iter": 3`), is a row {key, flag, type, range, default, help} of
 * opt_table, and both are checked by the same code against the same row,
 * so that a flag and its JSON key accept the same values everywhere.
 *
 * JSON: config.c lists, per object of a config, the rows it accepts
 * (opt_schema) and calls opt_check_object; messages name the JSON path
 * (`methods[1].iter: must be <= 1000`). Command line: a command lists its
 * rows and calls opt_parse_argv, which turns "--iter 3" / "--iter=3" into
 * {"iter": 3} and checks it with the same row; messages name the flag
 * (`arkcos compare-maps: --iter: must be >= 0, got '-1'`).
 *
 * The method rows (backend, mode, precision, accuracy, iter, lmax,
 * lmax_factor, ...) are what method.h turns into a method_spec, an id and a
 * label (method_spec_from_json, method_id, method_label), whichever of the
 * two gave them.
 *
 * Angles in options are in degrees (`_deg`) or arcminutes (`_arcmin`);
 * DEG and ARCMIN convert them to radians.
 */
#ifndef ARKCOS_HARNESS_OPTIONS_H
#define ARKCOS_HARNESS_OPTIONS_H

#include <jansson.h>
#include <math.h>
#include <stddef.h>

#define DEG (M_PI / 180.0)      /* radians per degree */
#define ARCMIN (M_PI / 10800.0) /* radians per arcminute */

typedef enum {
  OPT_T_INT,      /* integer (a real with an integral value is accepted) */
  OPT_T_NUM,      /* any finite number */
  OPT_T_BOOL,     /* JSON true/false; on the command line a flag without value */
  OPT_T_STR,      /* non-empty string */
  OPT_T_ENUM,     /* one of the strings in `choices` ("a|b|c") */
  OPT_T_INT_LIST, /* an integer or a non-empty list of distinct integers; normalized to a list */
  OPT_T_OBJ,      /* object checked against `sub` */
  OPT_T_OBJ_LIST, /* non-empty list of objects checked against `sub` */
  OPT_T_SOURCES,  /* non-empty list of [theta_deg, phi_deg, amplitude] */
  OPT_T_BYTES     /* a byte count > 0: a number; on the command line also "8G", "500M" (parse_bytes) */
} opt_type;

typedef struct opt_schema opt_schema;

typedef struct opt_def {
  const char *key;    /* JSON key; also the key of a parsed command line */
  const char *flag;   /* command-line flag ("--iter"), or NULL: configs only */
  opt_type type;
  double min, max;    /* inclusive range of numbers (list elements too) */
  int min_exclusive;  /* the value must be > min */
  int max_exclusive;  /* the value must be < max */
  const char *def;    /* JSON text of the default; NULL: optional; OPT_REQUIRED */
  const char *choices;
  const opt_schema *sub;
  const char *help;   /* one line: what it is (units, meaning of 0) */
  int percent;        /* command line: "15%" is accepted as 0.15 */
  const char *only;   /* the one method it applies to ("arkcos", "fsht", "direct"), or NULL */
} opt_def;

#define OPT_REQUIRED "\x01"

/* Every option of the harness; opt_table[OPT_X] is the row of OPT_X. Rows
 * that share a key (or flag) share type and range (tests/test_options.c
 * checks it); only the default and the help may differ with the object the
 * key is in (lmax_factor: 2 for an input, 3 for fsht). */
typedef enum {
  /* methods (JSON "methods[]", `arkcos smooth`) */
  OPT_METHOD,
  OPT_BACKEND,
  OPT_MODE,
  OPT_PRECISION,
  OPT_CACHE_KERNEL_SPECTRA,
  OPT_DIRECT_WEIGHTS,
  OPT_OVERSAMPLE,
  OPT_ACCURACY,
  OPT_ITER,
  OPT_LMAX,
  OPT_FSHT_LMAX_FACTOR,
  OPT_RING_WEIGHTS,
  OPT_SAMPLE,
  OPT_METHOD_REPEATS,
  OPT_METHOD_WARMUP,
  OPT_THREADS,
  OPT_MAX_MEMORY,
  /* kernels */
  OPT_FWHM_ARCMIN,
  OPT_CUTOFF_DEG,
  OPT_TOPHAT_DEG,
  OPT_CUTOFF_REL,
  OPT_KERNEL_PATH,
  OPT_KERNEL_UNIT,
  OPT_ALLOW_NEGATIVE,
  /* inputs */
  OPT_INPUT_LMAX_FACTOR,
  OPT_SEED,
  OPT_CL_FILE,
  OPT_POL,
  OPT_INPUT_POL,
  OPT_SOURCES,
  OPT_FITS_PATH,
  /* sweep, top level */
  OPT_NAME,
  OPT_DESCRIPTION,
  OPT_REPEATS,
  OPT_WARMUP,
  OPT_INTERLEAVE,
  OPT_THREADS_AXIS,
  OPT_NSIDE_AXIS,
  OPT_REFERENCE,
  OPT_DIRECT_MAX_EVALS,
  OPT_MEMORY_BYTES,
  OPT_MIN_PIXELS_PER_FWHM,
  /* sweep outputs */
  OPT_MAPS,
  OPT_MAPS_FLOAT32,
  OPT_SPECTRA,
  OPT_SPECTRA_LMAX_FACTOR,
  OPT_SPECTRA_ITER,
  OPT_PATCH_THETA_DEG,
  OPT_PATCH_PHI_DEG,
  OPT_PATCH_SIDE_DEG,
  OPT_PATCH_N,
  OPT_PATCH_LOG,
  /* command lines of run, report, compare */
  OPT_OUT,
  OPT_RESUME,
  OPT_FORCE,
  OPT_PUBLISHED,
  OPT_NO_PUBLISHED,
  OPT_FSHT_SELECTOR,
  OPT_THRESHOLD,
  OPT_ALPHA,
  OPT_NORMALIZE_BY,
  OPT_CLOCK,
  OPT_TRUST_REPEATS,
  /* `arkcos smooth`'s flags */
  OPT_RANKS,
  OPT_DRY_RUN,
  OPT_MPI_SPLIT,
  OPT_QUIET,
  OPT_VERBOSE,
  OPT_TOPHAT_RADIUS,
  OPT_GAUSSIAN,
  OPT_QUADRATURE,
  OPT_BEAM_FILE,
  OPT_BEAM_COLUMN,
  OPT_BEAM_TOLERANCE,
  OPT_MASK,
  OPT_MASK_MODE,
  OPT_MIN_WEIGHT,
  OPT_WRITE_WEIGHT,
  OPT_NORMALIZE,
  OPT_ALLOW_SUBPIXEL,
  OPT_SMOOTH_POL,
  OPT_NO_POL,
  OPT_COUNT
} opt_id;

extern const opt_def opt_table[OPT_COUNT];

/* An object is a NULL-terminated list of rows or, when `discriminator` is
 * set, one of `variants`, chosen by the string value of that key (kernels
 * by "type", methods by "name"); `what` names the variants in messages. */
typedef struct opt_variant {
  const char *value;
  const opt_def *const *fields;
} opt_variant;

struct opt_schema {
  const opt_def *const *fields;
  const char *discriminator;
  const char *what;
  const opt_variant *variants;
};

/* Collected messages, one a line, each "FILE: PATH: message" (FILE left
 * out when file is NULL). */
typedef struct opt_errors {
  char text[4096];
  size_t len;
  int n;
  const char *file;
} opt_errors;

void opt_error(opt_errors *e, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Validates v against one row / object; returns the normalized value (new
 * reference; objects with keys in table order and defaults filled in) or
 * NULL after recording errors at path. */
json_t *opt_check_value(opt_errors *e, const char *path, const opt_def *f, json_t *v);
json_t *opt_check_object(opt_errors *e, const char *path, const opt_schema *s, json_t *v);

/* The row's range as text: "[0, 1000]", "(0, 180]", ">= 1". */
void opt_range_text(const opt_def *f, char *buf, size_t len);

/* Shortest text that reads back as the same double ("240", "0.001"). */
void opt_format_number(double v, char *buf, size_t len);

/* ------------------------------------------------------------ argv */

/* A command line's option: a row of opt_table, with an optional second
 * spelling of the flag ("-o" for "--out", "--normalise-by"). */
typedef struct opt_arg {
  opt_id id;
  const char *alias;
} opt_arg;

/* An option word "--name=value" or "--name": the name into name (len
 * bytes), *val the text after '=' or NULL. */
void opt_split_arg(const char *arg, char *name, size_t len, const char **val);

/* Parses argv[1..argc-1]: options of `args` (n of them) as "--flag VALUE"
 * or "--flag=VALUE" (booleans take no value), each checked with its row and
 * set in vals under its key; "--" ends the options; the rest are
 * positional, stored in pos (at most maxpos). Returns 0; -1 for -h/--help
 * (nothing printed); or 2 after printing "CMD: --flag: message" on stderr
 * (an unknown option, a value missing or out of range, an option given
 * twice, too many positional arguments). A value that starts with "--" is
 * taken as a forgotten value; negative numbers are values. */
int opt_parse_argv(const char *cmd, int argc, char **argv, const opt_arg *args, int n,
                   json_t *vals, const char **pos, int maxpos, int *npos);
/* The same, and texts[k] (when texts is not NULL) the value of args[k] as
 * typed, a pointer into argv (NULL when not given; "" for a flag). */
int opt_parse_argv_texts(const char *cmd, int argc, char **argv, const opt_arg *args, int n,
                         json_t *vals, const char **pos, int maxpos, int *npos, const char **texts);

/* For every option of args given in vals whose row applies to one method
 * only (row.only) and method differs: "CMD: --mode applies only to
 * --method arkcos, not direct" on stderr, and 2; else 0. */
int opt_check_applies(const char *cmd, const json_t *vals, const opt_arg *args, int n, const char *method);

/* Typed reads of a parsed command line or a normalized JSON object: the
 * value under the row's key, else the row's default, else def. */
double opt_num(const json_t *vals, opt_id id, double def);
const char *opt_str(const json_t *vals, opt_id id); /* NULL if absent */
int opt_bool(const json_t *vals, opt_id id);
int opt_given(const json_t *vals, opt_id id);
/* The index of an enum row's value (or default) in its choices ("a|b|c":
 * 0, 1, 2); -1 when it is none of them. */
int opt_choice(const json_t *vals, opt_id id);

#endif
