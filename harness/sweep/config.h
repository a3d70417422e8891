/*
 * config.h -- the JSON sweep definition read by `arkcos run`.
 *
 * Validation is table-driven: every object in the config is checked against
 * a table of {key, type, range, default} rows (a kernel against the table
 * of its "type", a method against that of its "name"); unknown keys, wrong
 * types and out-of-range values are errors whose messages name the JSON
 * path (`grid.nside[1]: must be >= 1`). A document that passes the tables
 * is then checked for what they cannot express (a kernel's cutoffs, repeated
 * kernels or methods, unreadable files, the reference). Every error found
 * is reported, not just the first; malformed JSON is reported with the file,
 * line and column. configs/README.md documents the schema.
 *
 * Angles in the config are in degrees (cutoff_deg, theta_deg, ...) or
 * arcminutes (fwhm_arcmin); the structs below keep the same units.
 */
#ifndef ARKCOS_HARNESS_CONFIG_H
#define ARKCOS_HARNESS_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#include "arkcos/arkcos.h"
#include "harness/common/method.h"

typedef enum {
  CFG_INPUT_RANDOM = 0,
  CFG_INPUT_POINT_SOURCES = 1,
  CFG_INPUT_FITS = 2
} cfg_input_type;

typedef enum {
  CFG_KERNEL_GAUSSIAN = 0,
  CFG_KERNEL_TOPHAT = 1,
  CFG_KERNEL_FILE = 2
} cfg_kernel_type;

/* Special values of run_config.reference (otherwise an index into methods). */
enum { CFG_REF_NONE = -1, CFG_REF_EXACT = -2 };

typedef struct cfg_source {
  double theta_deg, phi_deg, amplitude;
} cfg_source;

typedef struct cfg_input {
  cfg_input_type type;
  double lmax_factor;   /* random: band limit method_lmax(lmax_factor, nside) */
  uint64_t seed;        /* random */
  char *cl_file;        /* random: resolved path, NULL = built-in CMB C_l */
  int pol;              /* random: I, Q, U; every case also runs as spin 2 on Q, U */
  cfg_source *sources;  /* point_sources */
  int nsources;
  char *path;           /* fits: resolved path */
} cfg_input;

typedef struct cfg_kernel {
  cfg_kernel_type type;
  double fwhm_arcmin;   /* gaussian */
  char *path;           /* file: resolved path */
  int unit;             /* file: arkcos_angle_unit of the angle column */
  int allow_negative;   /* file: negative K accepted */
  double cutoff_deg;    /* 0 when not given */
  double cutoff_rel;    /* 0 when not given */
  json_t *json;         /* the kernel object with defaults (borrowed) */
  char *id;             /* canonical text for case ids: "gaussian fwhm_arcmin=240 cutoff_deg=6" */
  char *label;          /* CSV "kernel" column: type, or file:<basename> */
} cfg_kernel;

typedef struct cfg_method {
  /* method_spec_from_json of json (method.h), the one translation: kind,
   * the arkcos options (backend, mode, precision, cache, accuracy), iter;
   * threads, spin and the fsht lmax are the case's (sweep_method.c) */
  method_spec spec;
  int had_oversample;          /* arkcos: the config gave "oversample" (no effect, ignored) */
  double lmax_factor;          /* fsht: lmax = method_lmax(lmax_factor, nside) */
  char *ring_weights;          /* fsht: resolved path or NULL */
  int64_t sample;              /* direct: output pixels sampled, 0 = all */
  int repeats, warmup;         /* resolved (the method's own or the global) */
  json_t *json;                /* the method object with defaults (borrowed) */
  char *id;                    /* method_id: "arkcos backend=cpu mode=enhanced precision=double" */
  char *label;                 /* "arkcos-cpu-enhanced-double", "fsht-iter3", "direct" */
} cfg_method;

typedef struct cfg_patch {
  double theta_deg, phi_deg, side_deg;
  int n;
  int log;
} cfg_patch;

typedef struct run_config {
  char *path;          /* the config file as given */
  char *name;
  int repeats, warmup;
  int interleave;      /* the methods' repeats in turns (sweep_case.c) */
  int *threads;        /* 0 = all cores */
  int nthreads;
  int64_t *nside;
  int nnside;
  cfg_input input;
  cfg_kernel *kernels;
  int nkernels;
  cfg_method *methods;
  int nmethods;
  int reference;       /* index into methods, CFG_REF_NONE or CFG_REF_EXACT */
  int oversample_at;   /* 1 + index in the file of the first method that gives
                        * "oversample" (which has no effect), or 0 */
  double direct_max_evals;
  double memory_bytes; /* 0 = the memory available (arkcos_memory_available) */
  double min_pixels_per_fwhm; /* arkcos and direct cases below are skipped (harness/common/narrow.h) */
  struct {
    int maps, maps_float32, spectra, spectra_iter;
    double spectra_lmax_factor;
    cfg_patch *patches;
    int npatches;
  } outputs;
  json_t *given;       /* the document as parsed */
  json_t *normalized;  /* validated, with every default filled in */
} run_config;

/* Reads and validates a config file. A config may extend another:
 * "extends": "FILE" (relative to its folder) starts from FILE's document
 * (itself possibly extending another, at most 8 deep) and merges its own
 * keys over it: an object member of both is merged key by key, null
 * removes a key, anything else (numbers, strings, lists) replaces the
 * base's. The merged document is the config (cfg->given, results.json's
 * meta.config); its relative paths resolve against the folder of `path`,
 * also those it took from the base. On failure returns ARKCOS_EINVAL with
 * every error found, one per line, in err->msg, each prefixed by the file
 * name (as many as fit, then "... and N more"); a file that cannot be opened
 * or is malformed JSON gives one message, also ARKCOS_EINVAL. */
int config_load(const char *path, run_config *cfg, arkcos_error *err);

/* Validates an already parsed document; relative paths in it are resolved
 * against the folder of `path` (which need not exist). Takes a reference to
 * root. */
int config_from_json(json_t *root, const char *path, run_config *cfg,
                     arkcos_error *err);

void config_free(run_config *cfg); /* safe on a zeroed or failed config */

/* 1 if two normalized configs describe the same sweep (numbers compared to
 * a relative 1e-12, so a round trip through results.json does not matter). */
int config_equal(const json_t *a, const json_t *b);

#endif
