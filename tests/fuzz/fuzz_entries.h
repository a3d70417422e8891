/*
 * fuzz_entries.h -- the readers of hostile files as fuzzing entry points:
 * each takes a file's bytes, writes them to a scratch file (the readers take
 * paths, as the commands do) and runs the same calls the commands make on
 * what they read. Included by the libFuzzer targets (tests/fuzz/fuzz_*.c,
 * `make fuzz`) and by tests/test_fuzz_regress.c, which feeds the committed
 * corpus and every input that once crashed through them without libFuzzer.
 *
 * An entry returns 0 when the reader accepted the input (in one of the
 * variants it tries), 1 when it refused it with a message. Either is fine;
 * a crash, a sanitizer report or a hang is a bug. A refusal must come with
 * a non-empty message (the entry aborts if not).
 */
#ifndef ARKCOS_FUZZ_ENTRIES_H
#define ARKCOS_FUZZ_ENTRIES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arkcos/arkcos.h"
#include "harness/common/beamio.h"
#include "harness/sweep/config.h"
#include "harness/common/mapio.h"
#include "harness/common/stats.h"

/* Maps larger than this are refused by the harness's header check only:
 * reading 12 nside^2 pixels of a header that claims nside 2^20 would measure
 * the machine's memory, not the reader (a header's nside is checked by
 * hpx_read_header; the pixels of small maps are read). */
#define FUZZ_MAX_READ_PIXELS (12LL * 256 * 256)
/* Beam files longer than this are read but not turned into kernels (the
 * Legendre sum costs lmax^2). */
#define FUZZ_MAX_BEAM_LMAX 512

/* The scratch file of this process and entry ("fits", "json", ...): FITS and
 * text readers look at the content, not the name, but the suffix keeps a
 * left-over file recognisable. */
static inline const char *fuzz_scratch(const char *suffix, const uint8_t *data, size_t size) {
  static char path[512];
  const char *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/arkcos-fuzz-%ld.%s", dir && *dir ? dir : "/tmp", (long)getpid(),
           suffix);
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    abort();
  }
  if (size && fwrite(data, 1, size, f) != size) {
    perror(path);
    abort();
  }
  if (fclose(f)) {
    perror(path);
    abort();
  }
  return path;
}

static inline int fuzz_refused(int rc, const arkcos_error *err, const char *what) {
  if (rc && !err->msg[0]) {
    fprintf(stderr, "%s refused an input without a message (code %d)\n", what, rc);
    abort();
  }
  return rc ? 1 : 0;
}

/* The sweep config reader of `arkcos run`. */
static inline int fuzz_config(const uint8_t *data, size_t size) {
  const char *path = fuzz_scratch("json", data, size);
  run_config cfg;
  arkcos_error err = {0};
  int rc = config_load(path, &cfg, &err);
  config_free(&cfg);
  unlink(path);
  return fuzz_refused(rc, &err, "config_load");
}

/* The map reader of `arkcos smooth` and `compare-maps`: the header, then
 * the pixels (missing ones as NaN, as smooth reads them) of small maps. */
static inline int fuzz_fits(const uint8_t *data, size_t size) {
  const char *path = fuzz_scratch("fits", data, size);
  hpx_header h;
  arkcos_error err = {0};
  int rc = hpx_read_header(path, &h, &err);
  if (!rc && h.npix <= FUZZ_MAX_READ_PIXELS) {
    double **maps = NULL;
    int ncols = 0;
    int64_t nbad = 0;
    rc = hpx_read_columns_missing(&h, &maps, &ncols, &nbad, &err);
    if (!rc) hpx_free_maps(maps, ncols);
  }
  hpx_header_free(&h);
  unlink(path);
  return fuzz_refused(rc, &err, "hpx_read_header/hpx_read_columns_missing");
}

/* The kernel-file reader of `smooth --kernel-file` and of sweep configs, in
 * its strict form and with the switches that loosen it. */
static inline int fuzz_kernel(const uint8_t *data, size_t size) {
  const char *path = fuzz_scratch("txt", data, size);
  static const arkcos_kernel_file_options opts[] = {
      {ARKCOS_ANGLE_RAD, 0, 0, 0, NULL, NULL},
      {ARKCOS_ANGLE_DEG, 1, 0, 1e-3, "--kernel-unit", "--allow-negative"},
      {ARKCOS_ANGLE_ARCMIN, 0, 0.05, 0, NULL, NULL},
  };
  int accepted = 0;
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
    arkcos_error err = {0};
    arkcos_kernel *k = arkcos_kernel_from_file_ex(path, &opts[i], &err);
    if (k) {
      double c = arkcos_kernel_cutoff(k);
      volatile double sum = 0;
      for (int j = 0; j <= 8; j++) sum += arkcos_kernel_value(k, c * j / 8);
      (void)sum;
    }
    accepted |= !fuzz_refused(!k, &err, "arkcos_kernel_from_file_ex");
    arkcos_kernel_destroy(k);
  }
  unlink(path);
  return !accepted;
}

/* The beam reader of `smooth --beam-file` (FITS tables and text), with the
 * first column and the second, and the kernel made from a short beam. */
static inline int fuzz_beam(const uint8_t *data, size_t size) {
  const char *path = fuzz_scratch("beam", data, size);
  static const char *const columns[] = {NULL, "2"};
  int accepted = 0;
  for (size_t i = 0; i < 2; i++) {
    double *bl = NULL;
    int lmax = -1;
    arkcos_error err = {0};
    int rc = beam_read(path, columns[i], &bl, &lmax, &err);
    accepted |= !fuzz_refused(rc, &err, "beam_read");
    if (!rc && lmax <= FUZZ_MAX_BEAM_LMAX) {
      arkcos_error kerr = {0};
      arkcos_kernel *k = arkcos_kernel_from_beam(bl, lmax, 1e-6, &kerr);
      fuzz_refused(!k, &kerr, "arkcos_kernel_from_beam");
      arkcos_kernel_destroy(k);
    }
    free(bl);
  }
  unlink(path);
  return !accepted;
}

/* The results reader of `compare` and `report`, and what they look up in
 * every case: labels, the case's own match, a normalising reference. */
static inline int fuzz_results(const uint8_t *data, size_t size) {
  const char *path = fuzz_scratch("results.json", data, size);
  results_file rf;
  arkcos_error err = {0};
  int rc = results_load(path, &rf, &err);
  if (!rc) {
    char buf[512];
    int same;
    for (size_t i = 0; i < rf.ncases; i++) {
      const results_case *c = &rf.cases[i];
      results_case_label(c, buf, sizeof buf);
      results_method_label(c->method_obj, buf, sizeof buf);
      results_kernel_label(c->kernel, buf, sizeof buf);
      if (results_match(&rf, c) < 0) {
        fprintf(stderr, "results case %zu does not match itself\n", i);
        abort();
      }
      results_find_reference(&rf, c, "fsht:iter=3", &same);
    }
    results_meta_str(&rf, "arkcos");
    results_free(&rf);
  }
  unlink(path);
  return fuzz_refused(rc, &err, "results_load");
}

#endif
