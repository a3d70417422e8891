/*
 * mapio.c -- HEALPix maps in FITS binary tables, as healpy writes them.
 *
 * Reading accepts what healpy (and the HEALPix Fortran/IDL tools) write:
 * the first binary-table extension with PIXTYPE = 'HEALPIX' (or, failing
 * that, the first with an NSIDE keyword), ORDERING RING or NESTED, any
 * numeric column type, 1024-element or one-value rows, and explicit-index
 * (partial-sky, INDXSCHM = 'EXPLICIT') tables whose first column is PIXEL.
 * Every problem a user can cause (missing file, not FITS, not HEALPix, bad
 * NSIDE, wrong length) is ARKCOS_EINVAL so that the command exits with 2.
 *
 * Files are opened with the "diskfile" entry points, which do not parse
 * CFITSIO's extended file-name syntax: a map called "sky[1].fits" or
 * "!x.fits" means exactly that file.
 */
#define _POSIX_C_SOURCE 200809L
#include "harness/mapio.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fitsio.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/util.h"

/* Largest HEALPix nside (2^29): 12 nside^2 still fits int64 with room, and
 * no HEALPix code goes beyond it. */
#define HPX_NSIDE_MAX ((int64_t)1 << 29)

/* ------------------------------------------------------------ messages */

/* Turns a CFITSIO status (and the first message on CFITSIO's error stack,
 * which usually says more than the status text) into err, naming the file.
 * Clears the stack so that later messages do not inherit stale text. */
static int fits_fail(arkcos_error *err, int code, const char *path, int status,
                     const char *what) {
  char stat_txt[FLEN_STATUS] = "";
  char detail[FLEN_ERRMSG] = "", msg[FLEN_ERRMSG];
  fits_get_errstatus(status, stat_txt);
  /* CFITSIO splits a message over several stack entries ("... of file:",
   * then the file name); keep the first entry that says something beyond
   * the file name, without its dangling colon. */
  while (!detail[0] && fits_read_errmsg(msg)) {
    size_t n = strlen(msg);
    while (n && (isspace((unsigned char)msg[n - 1]) || msg[n - 1] == ':'))
      msg[--n] = 0;
    const char *m = msg;
    while (isspace((unsigned char)*m)) m++;
    if (*m && strcmp(m, path)) snprintf(detail, sizeof detail, "%s", m);
  }
  fits_clear_errmsg();
  if (detail[0] && strcmp(detail, stat_txt))
    return arkcos_fail(err, code, "%s: %s: %s (CFITSIO status %d: %s)", path,
                       what, stat_txt, status, detail);
  return arkcos_fail(err, code, "%s: %s: %s (CFITSIO status %d)", path, what,
                     stat_txt, status);
}

/* Copies a keyword string value, trimmed of blanks, upper-cased. */
static void upper_trim(char *dst, const char *src, size_t len) {
  while (*src == ' ') src++;
  size_t n = 0;
  for (; src[n] && n + 1 < len; n++) dst[n] = (char)toupper((unsigned char)src[n]);
  while (n && dst[n - 1] == ' ') n--;
  dst[n] = 0;
}

/* Reads an optional string keyword; returns 1 if present, 0 if absent,
 * -1 on another CFITSIO error (status set). */
static int read_str_key(fitsfile *fp, const char *key, char *val,
                        int *status) {
  char buf[FLEN_VALUE] = "";
  fits_read_key(fp, TSTRING, key, buf, NULL, status);
  if (*status == KEY_NO_EXIST) {
    *status = 0;
    fits_clear_errmsg();
    val[0] = 0;
    return 0;
  }
  if (*status) return -1;
  snprintf(val, FLEN_VALUE, "%s", buf);
  return 1;
}

static int is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/* ---------------------------------------------------------------- header */

typedef struct hpx_table {
  fitsfile *fp;         /* positioned at the HEALPix HDU */
  int64_t nside, npix;
  int nested;
  int explicit_index;   /* partial sky: column 1 holds pixel indices */
  int first_map_col;    /* 1-based FITS column of the first map */
  int nmapcols;
  int64_t nrows;        /* table rows */
  long long nvalues;    /* values per column (rows x repeat) */
  int first_is_float32;
  char coordsys[FLEN_VALUE];
} hpx_table;

static int numeric_type(int t) {
  switch (t) {
    case TBYTE: case TSBYTE: case TSHORT: case TUSHORT: case TINT: case TUINT:
    case TLONG: case TULONG: case TLONGLONG: case TULONGLONG: case TFLOAT:
    case TDOUBLE:
      return 1;
    default:
      return 0;
  }
}

/* Moves to the HEALPix table: the first binary table with PIXTYPE = HEALPIX,
 * else the first with an NSIDE keyword (some older writers omit PIXTYPE). */
static int find_healpix_hdu(fitsfile *fp, const char *path,
                            arkcos_error *err) {
  int status = 0, nhdu = 0, fallback = 0;
  if (fits_get_num_hdus(fp, &nhdu, &status))
    return fits_fail(err, ARKCOS_EINVAL, path, status, "cannot read HDUs");
  for (int i = 1; i <= nhdu; i++) {
    int type = 0;
    if (fits_movabs_hdu(fp, i, &type, &status))
      return fits_fail(err, ARKCOS_EINVAL, path, status, "cannot read HDU");
    if (type != BINARY_TBL) continue;
    char pixtype[FLEN_VALUE], up[FLEN_VALUE];
    if (read_str_key(fp, "PIXTYPE", pixtype, &status) < 0)
      return fits_fail(err, ARKCOS_EINVAL, path, status, "cannot read PIXTYPE");
    upper_trim(up, pixtype, sizeof up);
    if (!strcmp(up, "HEALPIX")) return ARKCOS_OK;
    if (!fallback && !pixtype[0]) {
      char card[FLEN_CARD];
      if (fits_read_card(fp, "NSIDE", card, &status) == 0) fallback = i;
      status = 0;
      fits_clear_errmsg();
    }
  }
  if (fallback) {
    int type;
    if (fits_movabs_hdu(fp, fallback, &type, &status))
      return fits_fail(err, ARKCOS_EINVAL, path, status, "cannot read HDU");
    return ARKCOS_OK;
  }
  return arkcos_fail(err, ARKCOS_EINVAL,
                     "%s: not a HEALPix map (no binary table with PIXTYPE = "
                     "'HEALPIX')",
                     path);
}

static void close_quietly(fitsfile *fp) {
  int status = 0;
  if (fp) fits_close_file(fp, &status);
  fits_clear_errmsg();
}

/* Opens path and validates the HEALPix header and column layout. */
static int open_table(const char *path, hpx_table *t, arkcos_error *err) {
  memset(t, 0, sizeof *t);
  struct stat st;
  if (!path || !*path)
    return arkcos_fail(err, ARKCOS_EINVAL, "empty input file name");
  if (stat(path, &st) != 0)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: cannot open: %s", path,
                       strerror(errno));
  if (S_ISDIR(st.st_mode))
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: is a directory, not a FITS file",
                       path);
  if (access(path, R_OK) != 0)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: cannot read: %s", path,
                       strerror(errno));

  int status = 0;
  if (fits_open_diskfile(&t->fp, path, READONLY, &status)) {
    t->fp = NULL;
    return fits_fail(err, ARKCOS_EINVAL, path, status, "not a FITS file");
  }
  int rc = find_healpix_hdu(t->fp, path, err);
  if (rc) goto fail;

  /* NSIDE: mandatory. healpy itself infers nside from the data length, but
   * a table without NSIDE is not what DESIGN.md calls a HEALPix map, and the
   * length check below needs an independent value. */
  long long nside = 0;
  fits_read_key(t->fp, TLONGLONG, "NSIDE", &nside, NULL, &status);
  if (status == KEY_NO_EXIST) {
    fits_clear_errmsg();
    rc = arkcos_fail(err, ARKCOS_EINVAL,
                     "%s: not a HEALPix map (NSIDE keyword missing)", path);
    goto fail;
  }
  if (status) {
    rc = fits_fail(err, ARKCOS_EINVAL, path, status,
                   "NSIDE is not an integer");
    goto fail;
  }
  if (nside < 1 || nside > HPX_NSIDE_MAX) {
    rc = arkcos_fail(err, ARKCOS_EINVAL,
                     "%s: NSIDE = %lld is outside [1, %lld]", path, nside,
                     (long long)HPX_NSIDE_MAX);
    goto fail;
  }
  t->nside = nside;
  t->npix = 12 * t->nside * t->nside;

  /* ORDERING: healpy assumes RING when it is absent, and so do we. */
  char val[FLEN_VALUE], up[FLEN_VALUE];
  if (read_str_key(t->fp, "ORDERING", val, &status) < 0) {
    rc = fits_fail(err, ARKCOS_EINVAL, path, status, "cannot read ORDERING");
    goto fail;
  }
  upper_trim(up, val, sizeof up);
  if (!up[0] || !strcmp(up, "RING")) {
    t->nested = 0;
  } else if (!strcmp(up, "NESTED") || !strcmp(up, "NEST")) {
    t->nested = 1;
    if (!is_power_of_two(t->nside)) {
      rc = arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: ORDERING = NESTED needs a power-of-two NSIDE, "
                       "got %lld",
                       path, (long long)t->nside);
      goto fail;
    }
  } else {
    rc = arkcos_fail(err, ARKCOS_EINVAL,
                     "%s: unknown ORDERING '%s' (expected RING or NESTED)",
                     path, val);
    goto fail;
  }

  /* Partial-sky maps: INDXSCHM = EXPLICIT (or OBJECT = PARTIAL, as healpy
   * also accepts) means column 1 lists the pixels present. */
  if (read_str_key(t->fp, "INDXSCHM", val, &status) < 0) {
    rc = fits_fail(err, ARKCOS_EINVAL, path, status, "cannot read INDXSCHM");
    goto fail;
  }
  upper_trim(up, val, sizeof up);
  t->explicit_index = !strcmp(up, "EXPLICIT");
  if (!up[0]) {
    if (read_str_key(t->fp, "OBJECT", val, &status) < 0) {
      rc = fits_fail(err, ARKCOS_EINVAL, path, status, "cannot read OBJECT");
      goto fail;
    }
    upper_trim(up, val, sizeof up);
    t->explicit_index = !strcmp(up, "PARTIAL");
  } else if (!t->explicit_index && strcmp(up, "IMPLICIT")) {
    rc = arkcos_fail(err, ARKCOS_EINVAL,
                     "%s: unknown INDXSCHM '%s' (expected IMPLICIT or "
                     "EXPLICIT)",
                     path, val);
    goto fail;
  }
  if (read_str_key(t->fp, "COORDSYS", t->coordsys, &status) < 0) {
    rc = fits_fail(err, ARKCOS_EINVAL, path, status, "cannot read COORDSYS");
    goto fail;
  }

  int ncols = 0;
  long long nrows = 0;
  if (fits_get_num_cols(t->fp, &ncols, &status) ||
      fits_get_num_rowsll(t->fp, &nrows, &status)) {
    rc = fits_fail(err, ARKCOS_EINVAL, path, status, "cannot read table size");
    goto fail;
  }
  t->nrows = nrows;
  t->first_map_col = t->explicit_index ? 2 : 1;
  t->nmapcols = ncols - t->first_map_col + 1;
  if (t->nmapcols < 1) {
    rc = arkcos_fail(err, ARKCOS_EINVAL, "%s: HEALPix table has no map column",
                     path);
    goto fail;
  }
  /* Every column used must be numeric, fixed-length, and hold one value per
   * pixel (implicit) or one per listed pixel (explicit). */
  for (int c = t->explicit_index ? 1 : t->first_map_col; c <= ncols; c++) {
    int type = 0;
    long repeat = 0, width = 0;
    if (fits_get_eqcoltype(t->fp, c, &type, &repeat, &width, &status)) {
      rc = fits_fail(err, ARKCOS_EINVAL, path, status,
                     "cannot read column type");
      goto fail;
    }
    if (!numeric_type(type)) {
      rc = arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: column %d is not a fixed-length numeric column "
                       "(FITS type code %d)",
                       path, c, type);
      goto fail;
    }
    long long nvalues = (long long)repeat * nrows;
    if (c == (t->explicit_index ? 1 : t->first_map_col)) t->nvalues = nvalues;
    if (c == t->first_map_col) t->first_is_float32 = type == TFLOAT;
    if (t->explicit_index) {
      if (nvalues != t->nvalues || nvalues > t->npix) {
        rc = arkcos_fail(err, ARKCOS_EINVAL,
                         "%s: partial-sky column %d has %lld values; expected "
                         "%lld, at most 12 nside^2 = %lld (NSIDE = %lld)",
                         path, c, nvalues, t->nvalues, (long long)t->npix,
                         (long long)t->nside);
        goto fail;
      }
    } else if (nvalues != t->npix) {
      rc = arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: column %d has %lld values, but 12 nside^2 = %lld "
                       "for NSIDE = %lld",
                       path, c, nvalues, (long long)t->npix,
                       (long long)t->nside);
      goto fail;
    }
  }
  return ARKCOS_OK;

fail:
  close_quietly(t->fp);
  t->fp = NULL;
  return rc;
}

static int read_columns_meta(const hpx_table *t, const char *path,
                             hpx_column *cols, int maxcols,
                             arkcos_error *err) {
  int status = 0;
  for (int c = 0; c < maxcols && c < t->nmapcols; c++) {
    char key[FLEN_KEYWORD];
    int col = t->first_map_col + c;
    snprintf(key, sizeof key, "TTYPE%d", col);
    if (read_str_key(t->fp, key, cols[c].name, &status) < 0)
      return fits_fail(err, ARKCOS_EINVAL, path, status, "cannot read TTYPE");
    snprintf(key, sizeof key, "TUNIT%d", col);
    if (read_str_key(t->fp, key, cols[c].unit, &status) < 0)
      return fits_fail(err, ARKCOS_EINVAL, path, status, "cannot read TUNIT");
  }
  return ARKCOS_OK;
}

static void fill_info(const hpx_table *t, hpx_map_info *info, int ncols) {
  info->nside = t->nside;
  info->nested = t->nested;
  info->ncols = ncols;
  info->nbad = 0;
  info->is_float32 = t->first_is_float32;
}

int hpx_read_info(const char *path, hpx_map_info *info, hpx_column *cols,
                  int maxcols, char *coordsys, arkcos_error *err) {
  hpx_table t;
  int rc = open_table(path, &t, err);
  if (rc) return rc;
  if (cols && maxcols > 0) {
    memset(cols, 0, sizeof *cols * (size_t)maxcols);
    rc = read_columns_meta(&t, path, cols, maxcols, err);
  }
  if (!rc) {
    hpx_map_info tmp;
    fill_info(&t, info ? info : &tmp, t.nmapcols);
    if (coordsys) snprintf(coordsys, HPX_NAME_LEN, "%s", t.coordsys);
  }
  close_quietly(t.fp);
  return rc;
}

/* ------------------------------------------------------------------ read */

/* healpy's mask_bad test: |x - UNSEEN| <= 1e-8 + 1e-5 |UNSEEN|, which also
 * catches UNSEEN after a round trip through float32. */
static int is_bad(double x) {
  return isnan(x) || fabs(x - HPX_UNSEEN) <= 1e-8 + 1e-5 * fabs(HPX_UNSEEN);
}

/* Zeroes bad values in v[0..n) and returns how many there were. */
static int64_t zero_bad(double *v, int64_t n) {
  int64_t nbad = 0;
#pragma omp parallel for reduction(+ : nbad) schedule(static)
  for (int64_t i = 0; i < n; i++)
    if (is_bad(v[i])) {
      v[i] = 0.0;
      nbad++;
    }
  return nbad;
}

void hpx_free_maps(double **maps, int ncols) {
  if (!maps) return;
  for (int c = 0; c < ncols; c++) free(maps[c]);
  free(maps);
}

/* NESTED maps are converted through a buffer of this many values (8 MB)
 * rather than a second whole map: at nside 8192 a map is 6.4 GB. A multiple
 * of 1024 so that chunks start at row boundaries of healpy's layout. */
#define HPX_CHUNK ((long long)1 << 20)

/* Reads values [first, first + n) of column col, seen as one flat sequence
 * of rows x repeat values. With nulval = NaN CFITSIO turns undefined values
 * (IEEE NaN in float columns, TNULL in integer ones) into NaN, so that one
 * test counts both. */
static int read_flat(fitsfile *fp, int col, long long first, long long n,
                     double *dst, int *status) {
  int type = 0;
  long repeat = 1, width = 0;
  if (fits_get_coltype(fp, col, &type, &repeat, &width, status)) return *status;
  double nulval = NAN;
  int anynul = 0;
  return fits_read_col(fp, TDOUBLE, col, first / repeat + 1, first % repeat + 1,
                       n, &nulval, dst, &anynul, status);
}

int hpx_read_maps(const char *path, double ***maps_out, int *ncols,
                  hpx_map_info *info, arkcos_error *err) {
  *maps_out = NULL;
  hpx_table t;
  int rc = open_table(path, &t, err);
  if (rc) return rc;

  int want = *ncols <= 0 ? t.nmapcols : *ncols;
  if (want > t.nmapcols) {
    rc = arkcos_fail(err, ARKCOS_EINVAL,
                     "%s: has %d map column(s), %d requested", path,
                     t.nmapcols, want);
    close_quietly(t.fp);
    return rc;
  }

  double **maps = calloc((size_t)want, sizeof *maps);
  double *buf = NULL;         /* values in file order (NESTED or partial) */
  long long *pixel = NULL;    /* partial sky: pixel index per row */
  int64_t nbad = 0;
  int status = 0;
  if (!maps) goto nomem;
  if (t.explicit_index || t.nested) {
    long long nbuf = t.explicit_index ? t.nvalues
                     : t.nvalues < HPX_CHUNK ? t.nvalues
                                             : HPX_CHUNK;
    buf = malloc(sizeof *buf * (size_t)(nbuf > 0 ? nbuf : 1));
    if (!buf) goto nomem;
  }
  if (t.explicit_index) {
    pixel = malloc(sizeof *pixel * (size_t)(t.nvalues > 0 ? t.nvalues : 1));
    if (!pixel) goto nomem;
    long long nul = 0;
    int anynul = 0;
    if (t.nvalues > 0 &&
        fits_read_col(t.fp, TLONGLONG, 1, 1, 1, t.nvalues, &nul, pixel,
                      &anynul, &status)) {
      rc = fits_fail(err, ARKCOS_EINVAL, path, status,
                     "cannot read the PIXEL column");
      goto fail;
    }
    for (long long i = 0; i < t.nvalues; i++)
      if (pixel[i] < 0 || pixel[i] >= t.npix) {
        rc = arkcos_fail(err, ARKCOS_EINVAL,
                         "%s: partial-sky row %lld lists pixel %lld outside "
                         "[0, %lld)",
                         path, i + 1, pixel[i], (long long)t.npix);
        goto fail;
      }
  }

  for (int c = 0; c < want; c++) {
    const int col = t.first_map_col + c;
    double *m = maps[c] = malloc(sizeof **maps * (size_t)t.npix);
    if (!m) goto nomem;
    if (t.explicit_index) {
      /* Pixels not listed are unobserved: UNSEEN in healpy, 0 and counted
       * as bad here. Listed pixels are in the file's ORDERING. */
      if (t.nvalues > 0 && read_flat(t.fp, col, 0, t.nvalues, buf, &status))
        goto read_failed;
      for (int64_t p = 0; p < t.npix; p++) m[p] = NAN;
      for (long long i = 0; i < t.nvalues; i++)
        m[t.nested ? arkcos_healpix_nest2ring(t.nside, pixel[i]) : pixel[i]] =
            buf[i];
      nbad += zero_bad(m, t.npix);
    } else if (t.nested) {
      const int64_t nside = t.nside;
      for (long long q0 = 0; q0 < t.npix; q0 += HPX_CHUNK) {
        long long n = t.npix - q0 < HPX_CHUNK ? t.npix - q0 : HPX_CHUNK;
        if (read_flat(t.fp, col, q0, n, buf, &status)) goto read_failed;
        nbad += zero_bad(buf, n);
#pragma omp parallel for schedule(static)
        for (long long i = 0; i < n; i++)
          m[arkcos_healpix_nest2ring(nside, q0 + i)] = buf[i];
      }
    } else {
      if (read_flat(t.fp, col, 0, t.npix, m, &status)) goto read_failed;
      nbad += zero_bad(m, t.npix);
    }
  }
  close_quietly(t.fp);
  free(buf);
  free(pixel);
  fill_info(&t, info, want);
  info->nbad = nbad;
  *ncols = want;
  *maps_out = maps;
  return ARKCOS_OK;

read_failed:
  rc = fits_fail(err, ARKCOS_EINVAL, path, status,
                 "cannot read map data (truncated file?)");
  goto fail;
nomem:
  rc = arkcos_fail(err, ARKCOS_ENOMEM,
                   "%s: out of memory reading %d map(s) of %lld pixels", path,
                   want, (long long)t.npix);
fail:
  close_quietly(t.fp);
  free(buf);
  free(pixel);
  hpx_free_maps(maps, want);
  return rc;
}

int hpx_read_map(const char *path, double **map, hpx_map_info *info,
                 arkcos_error *err) {
  double **maps = NULL;
  int ncols = 1;
  *map = NULL;
  int rc = hpx_read_maps(path, &maps, &ncols, info, err);
  if (rc) return rc;
  *map = maps[0];
  free(maps);
  return ARKCOS_OK;
}

/* ----------------------------------------------------------------- write */

/* Column names healpy gives by default (fitsfunc.standard_column_names). */
static const char *standard_name(int nmaps, int c, char *buf, size_t len) {
  static const char *const iqu[] = {"TEMPERATURE", "Q_POLARISATION",
                                    "U_POLARISATION"};
  static const char *const cov[] = {"II", "IQ", "IU", "QQ", "QU", "UU"};
  if (nmaps == 1) return iqu[0];
  if (nmaps == 2) return iqu[c + 1];
  if (nmaps == 3) return iqu[c];
  if (nmaps == 6) return cov[c];
  snprintf(buf, len, "COLUMN_%d", c + 1);
  return buf;
}

/* Flushes the finished temporary file to disk before the rename, so that a
 * crash cannot leave a renamed but empty output. */
static int fsync_path(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

int hpx_write_maps_ex(const char *path, const double *const *maps, int nmaps,
                      int64_t nside, int nested, int as_float32, int force,
                      const hpx_column *cols, const char *coordsys,
                      arkcos_error *err) {
  if (nmaps < 1 || nmaps > 999 || !maps)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: cannot write %d maps (1 to 999 columns)", path,
                       nmaps);
  if (nside < 1 || nside > HPX_NSIDE_MAX)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: invalid NSIDE %lld", path,
                       (long long)nside);
  if (nested && !is_power_of_two(nside))
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: NESTED ordering needs a power-of-two NSIDE, got "
                       "%lld",
                       path, (long long)nside);
  const int64_t npix = 12 * nside * nside;

  char tmp[4096];
  int rc = atomic_begin(path, force, tmp, sizeof tmp, err);
  if (rc) return rc;
  /* atomic_begin reserved the name with an empty file; CFITSIO refuses to
   * create over an existing file, so free the name for it. */
  unlink(tmp);

  /* Rows of 1024 values as healpy/HEALPix write them when they fit evenly
   * (the classic IDL-compatible layout), else one value per row. */
  const long repeat = npix % 1024 == 0 ? 1024 : 1;
  const long long nrows = npix / repeat;
  char tform_s[32];
  snprintf(tform_s, sizeof tform_s, "%ld%c", repeat, as_float32 ? 'E' : 'D');

  char **ttype = calloc((size_t)nmaps, sizeof *ttype);
  char **tform = calloc((size_t)nmaps, sizeof *tform);
  char **tunit = calloc((size_t)nmaps, sizeof *tunit);
  char (*namebuf)[HPX_NAME_LEN] = calloc((size_t)nmaps, sizeof *namebuf);
  double *nestbuf = NULL;
  fitsfile *fp = NULL;
  int status = 0;
  if (!ttype || !tform || !tunit || !namebuf) goto nomem;
  for (int c = 0; c < nmaps; c++) {
    const char *name = cols && cols[c].name[0]
                           ? cols[c].name
                           : standard_name(nmaps, c, namebuf[c], HPX_NAME_LEN);
    if (name != namebuf[c]) snprintf(namebuf[c], HPX_NAME_LEN, "%s", name);
    ttype[c] = namebuf[c];
    tform[c] = tform_s;
    tunit[c] = cols && cols[c].unit[0] ? (char *)cols[c].unit : (char *)"";
  }
  if (nested) {
    nestbuf = malloc(sizeof *nestbuf * (size_t)(npix < HPX_CHUNK ? npix : HPX_CHUNK));
    if (!nestbuf) goto nomem;
  }

  if (fits_create_diskfile(&fp, tmp, &status)) {
    fp = NULL;
    rc = fits_fail(err, ARKCOS_EIO, path, status, "cannot create");
    goto fail;
  }
  /* On an empty file fits_create_tbl first writes the null primary HDU
   * (with EXTEND = T) that healpy also writes. */
  fits_create_tbl(fp, BINARY_TBL, nrows, nmaps, ttype, tform, tunit,
                  "xtension", &status);
  long long nside_ll = nside, first = 0, last = npix - 1;
  fits_write_key(fp, TSTRING, "PIXTYPE", "HEALPIX", "HEALPIX pixelisation",
                 &status);
  fits_write_key(fp, TSTRING, "ORDERING", nested ? "NESTED" : "RING",
                 "Pixel ordering scheme, either RING or NESTED", &status);
  if (coordsys && coordsys[0])
    fits_write_key(fp, TSTRING, "COORDSYS", (void *)coordsys,
                   "Ecliptic, Galactic or Celestial (equatorial)", &status);
  fits_write_key(fp, TLONGLONG, "NSIDE", &nside_ll,
                 "Resolution parameter of HEALPIX", &status);
  fits_write_key(fp, TLONGLONG, "FIRSTPIX", &first, "First pixel # (0 based)",
                 &status);
  fits_write_key(fp, TLONGLONG, "LASTPIX", &last, "Last pixel # (0 based)",
                 &status);
  fits_write_key(fp, TSTRING, "INDXSCHM", "IMPLICIT",
                 "Indexing: IMPLICIT or EXPLICIT", &status);
  fits_write_key(fp, TSTRING, "OBJECT", "FULLSKY",
                 "Sky coverage, either FULLSKY or PARTIAL", &status);
  fits_write_key(fp, TSTRING, "CREATOR", "arkcos " ARKCOS_VERSION,
                 "Software creating the FITS file", &status);
  if (status) {
    rc = fits_fail(err, ARKCOS_EIO, path, status, "cannot write header");
    goto fail;
  }

  for (int c = 0; c < nmaps; c++) {
    const double *m = maps[c];
    if (as_float32) {
      /* CFITSIO casts doubles beyond the float range to inf without an
       * error; a corrupted pixel must not pass silently. */
      int64_t bad = -1;
      for (int64_t p = 0; p < npix && bad < 0; p++)
        if (fabs(m[p]) > FLT_MAX && isfinite(m[p])) bad = p;
      if (bad >= 0) {
        rc = arkcos_fail(err, ARKCOS_EINVAL,
                         "%s: column %d pixel %lld = %g does not fit in "
                         "float32",
                         path, c + 1, (long long)bad, m[bad]);
        goto fail;
      }
    }
    if (!nested) {
      /* One call spanning all rows: CFITSIO treats the column as a flat
       * sequence of nrows x repeat values (and converts to float32). */
      if (fits_write_col(fp, TDOUBLE, c + 1, 1, 1, npix, (void *)m, &status))
        goto write_failed;
      continue;
    }
    /* NESTED: chunks gathered through nest2ring (sequential writes, and
     * nest2ring is cheaper than ring2nest), written where they belong. */
    for (long long q0 = 0; q0 < npix; q0 += HPX_CHUNK) {
      long long n = npix - q0 < HPX_CHUNK ? npix - q0 : HPX_CHUNK;
#pragma omp parallel for schedule(static)
      for (long long i = 0; i < n; i++)
        nestbuf[i] = m[arkcos_healpix_nest2ring(nside, q0 + i)];
      if (fits_write_col(fp, TDOUBLE, c + 1, q0 / repeat + 1, q0 % repeat + 1,
                         n, nestbuf, &status))
        goto write_failed;
    }
  }
  if (fits_close_file(fp, &status)) {
    fp = NULL;
    rc = fits_fail(err, ARKCOS_EIO, path, status, "cannot finish writing");
    goto fail;
  }
  fp = NULL;
  if (fsync_path(tmp) != 0) {
    rc = arkcos_fail(err, ARKCOS_EIO, "%s: cannot flush output: %s", path,
                     strerror(errno));
    goto fail;
  }
  free(ttype);
  free(tform);
  free(tunit);
  free(namebuf);
  free(nestbuf);
  return atomic_commit(tmp, path, err);

write_failed:
  rc = fits_fail(err, ARKCOS_EIO, path, status, "cannot write map data");
  goto fail;
nomem:
  rc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory writing %d map(s)",
                   path, nmaps);
fail:
  close_quietly(fp);
  atomic_abort(tmp);
  free(ttype);
  free(tform);
  free(tunit);
  free(namebuf);
  free(nestbuf);
  return rc;
}

int hpx_write_maps(const char *path, const double *const *maps, int nmaps,
                   int64_t nside, int nested, int as_float32, int force,
                   arkcos_error *err) {
  return hpx_write_maps_ex(path, maps, nmaps, nside, nested, as_float32,
                           force, NULL, NULL, err);
}
