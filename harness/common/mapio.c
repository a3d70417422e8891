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
#include "harness/common/mapio.h"

#include "arkcos/bigmem.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fitsio.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/common/util.h"

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
 * else the first with an NSIDE keyword (some older writers omit PIXTYPE).
 * *hdu receives its 1-based number. */
static int find_healpix_hdu(fitsfile *fp, const char *path, int *hdu,
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
    if (!strcmp(up, "HEALPIX")) {
      *hdu = i;
      return ARKCOS_OK;
    }
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
    *hdu = fallback;
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

/* The checks CFITSIO's own messages would make obscure: a missing,
 * unreadable or directory path. */
static int check_input_path(const char *path, arkcos_error *err) {
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
  return ARKCOS_OK;
}

/* NSIDE: mandatory. healpy itself infers nside from the data length, but a
 * table without NSIDE is not what DESIGN.md calls a HEALPix map, and the
 * length check needs an independent value. */
/* The value is read as text and converted here: CFITSIO 4.2's own
 * conversion (ffc2j) overflows its message buffer on a long value that is
 * not a number, and the fortified library aborts (found by fuzz_fits). */
static int read_nside(fitsfile *fp, hpx_header *h, arkcos_error *err) {
  int status = 0;
  char value[FLEN_VALUE] = "", *end = NULL;
  fits_read_keyword(fp, "NSIDE", value, NULL, &status);
  if (status == KEY_NO_EXIST) {
    fits_clear_errmsg();
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: not a HEALPix map (NSIDE keyword missing)", h->path);
  }
  if (status)
    return fits_fail(err, ARKCOS_EINVAL, h->path, status, "cannot read NSIDE");
  /* an integer, or a real with an integral value, or either quoted, as
   * CFITSIO accepts them (it truncated 1.5 to 1: refused here) */
  char *v = value;
  size_t n = strlen(v);
  if (n >= 2 && v[0] == '\'' && v[n - 1] == '\'') {
    v[n - 1] = 0;
    v++;
  }
  errno = 0;
  long long nside = strtoll(v, &end, 10);
  while (*end == ' ') end++;
  if (end == v || *end || errno) {
    double d = strtod(v, &end);
    while (*end == ' ') end++;
    if (end == v || *end || !(fabs(d) < 1e18) || d != floor(d))
      return arkcos_fail(err, ARKCOS_EINVAL, "%s: NSIDE = %.40s is not an integer",
                         h->path, v);
    nside = (long long)d;
  }
  if (nside < 1 || nside > HPX_NSIDE_MAX)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: NSIDE = %lld is outside [1, %lld]",
                       h->path, nside, (long long)HPX_NSIDE_MAX);
  h->nside = nside;
  h->npix = 12 * h->nside * h->nside;
  return ARKCOS_OK;
}

/* ORDERING: healpy assumes RING when it is absent, and so do we. */
static int read_ordering(fitsfile *fp, hpx_header *h, arkcos_error *err) {
  int status = 0;
  char val[FLEN_VALUE], up[FLEN_VALUE];
  if (read_str_key(fp, "ORDERING", val, &status) < 0)
    return fits_fail(err, ARKCOS_EINVAL, h->path, status, "cannot read ORDERING");
  upper_trim(up, val, sizeof up);
  if (!up[0] || !strcmp(up, "RING")) {
    h->nested = 0;
    return ARKCOS_OK;
  }
  if (strcmp(up, "NESTED") && strcmp(up, "NEST"))
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: unknown ORDERING '%s' (expected RING or NESTED)",
                       h->path, val);
  h->nested = 1;
  if (!is_power_of_two(h->nside))
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: ORDERING = NESTED needs a power-of-two NSIDE, "
                       "got %lld",
                       h->path, (long long)h->nside);
  return ARKCOS_OK;
}

/* Partial-sky maps: INDXSCHM = EXPLICIT (or OBJECT = PARTIAL, as healpy also
 * accepts) means column 1 lists the pixels present. */
static int read_index_scheme(fitsfile *fp, hpx_header *h, arkcos_error *err) {
  int status = 0;
  char val[FLEN_VALUE], up[FLEN_VALUE];
  if (read_str_key(fp, "INDXSCHM", val, &status) < 0)
    return fits_fail(err, ARKCOS_EINVAL, h->path, status, "cannot read INDXSCHM");
  upper_trim(up, val, sizeof up);
  h->explicit_index = !strcmp(up, "EXPLICIT");
  if (!up[0]) {
    if (read_str_key(fp, "OBJECT", val, &status) < 0)
      return fits_fail(err, ARKCOS_EINVAL, h->path, status, "cannot read OBJECT");
    upper_trim(up, val, sizeof up);
    h->explicit_index = !strcmp(up, "PARTIAL");
  } else if (!h->explicit_index && strcmp(up, "IMPLICIT")) {
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: unknown INDXSCHM '%s' (expected IMPLICIT or "
                       "EXPLICIT)",
                       h->path, val);
  }
  return ARKCOS_OK;
}

/* Column c must be numeric, fixed-length, and hold one value per pixel
 * (implicit) or one per listed pixel (explicit). */
static int check_column(fitsfile *fp, int c, hpx_header *h, arkcos_error *err) {
  int type = 0, status = 0;
  long repeat = 0, width = 0;
  if (fits_get_eqcoltype(fp, c, &type, &repeat, &width, &status))
    return fits_fail(err, ARKCOS_EINVAL, h->path, status,
                     "cannot read column type");
  if (!numeric_type(type))
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: column %d is not a fixed-length numeric column "
                       "(FITS type code %d)",
                       h->path, c, type);
  long long nvalues = (long long)repeat * h->nrows;
  if (c == (h->explicit_index ? 1 : h->first_col)) h->nvalues = nvalues;
  if (c == h->first_col) h->is_float32 = type == TFLOAT;
  if (h->explicit_index) {
    if (nvalues != h->nvalues || nvalues > h->npix)
      return arkcos_fail(err, ARKCOS_EINVAL,
                         "%s: partial-sky column %d has %lld values; expected "
                         "%lld, at most 12 nside^2 = %lld (NSIDE = %lld)",
                         h->path, c, nvalues, h->nvalues, (long long)h->npix,
                         (long long)h->nside);
  } else if (nvalues != h->npix) {
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: column %d has %lld values, but 12 nside^2 = %lld "
                       "for NSIDE = %lld",
                       h->path, c, nvalues, (long long)h->npix,
                       (long long)h->nside);
  }
  return ARKCOS_OK;
}

/* Table size and the type and length of every column used. */
static int read_layout(fitsfile *fp, hpx_header *h, arkcos_error *err) {
  int status = 0, ncols = 0;
  long long nrows = 0;
  if (fits_get_num_cols(fp, &ncols, &status) ||
      fits_get_num_rowsll(fp, &nrows, &status))
    return fits_fail(err, ARKCOS_EINVAL, h->path, status, "cannot read table size");
  h->nrows = nrows;
  h->first_col = h->explicit_index ? 2 : 1;
  h->ncols = ncols - h->first_col + 1;
  if (h->ncols < 1)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: HEALPix table has no map column",
                       h->path);
  for (int c = h->explicit_index ? 1 : h->first_col; c <= ncols; c++) {
    int rc = check_column(fp, c, h, err);
    if (rc) return rc;
  }
  return ARKCOS_OK;
}

static int read_coordsys(fitsfile *fp, hpx_header *h, arkcos_error *err) {
  int status = 0;
  if (read_str_key(fp, "COORDSYS", h->coordsys, &status) < 0)
    return fits_fail(err, ARKCOS_EINVAL, h->path, status, "cannot read COORDSYS");
  return ARKCOS_OK;
}

/* The names and units of the map columns. */
static int read_column_labels(fitsfile *fp, hpx_header *h, arkcos_error *err) {
  int status = 0;
  h->cols = calloc((size_t)h->ncols, sizeof *h->cols);
  if (!h->cols)
    return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", h->path);
  for (int c = 0; c < h->ncols; c++) {
    char key[FLEN_KEYWORD];
    int col = h->first_col + c;
    snprintf(key, sizeof key, "TTYPE%d", col);
    if (read_str_key(fp, key, h->cols[c].name, &status) < 0)
      return fits_fail(err, ARKCOS_EINVAL, h->path, status, "cannot read TTYPE");
    snprintf(key, sizeof key, "TUNIT%d", col);
    if (read_str_key(fp, key, h->cols[c].unit, &status) < 0)
      return fits_fail(err, ARKCOS_EINVAL, h->path, status, "cannot read TUNIT");
  }
  return ARKCOS_OK;
}

void hpx_header_free(hpx_header *h) {
  if (!h) return;
  free(h->path);
  free(h->cols);
  memset(h, 0, sizeof *h);
}

/* ------------------------------------------------- headers before CFITSIO */

/* The integer a keyword's value starts with (after the '=' of column 9),
 * trailing text ignored as CFITSIO's header parser ignores it; 0 if there
 * is none. */
static int card_int(const char *card, long long *v) {
  char buf[72];
  memcpy(buf, card + 9, 71);
  buf[71] = 0;
  char *end;
  errno = 0;
  *v = strtoll(buf, &end, 10);
  return end != buf && !errno;
}

/* One header (from the file position to its END card): the TTYPEn cards
 * must hold quoted strings, TFIELDS be at most 999; the sizes that locate the next header are
 * returned in *data_bytes (-1 when they cannot be read). 1 at the end of the
 * file, 0 after END, EINVAL for a bad TTYPEn. */
static int scan_header(FILE *f, const char *path, int hdu, long long *data_bytes,
                       arkcos_error *err) {
  long long bitpix = 0, naxis = -1, pcount = 0, gcount = 1, prod = 1, v;
  char block[2880];
  for (int b = 0; b < 100000; b++) {
    if (fread(block, 1, sizeof block, f) != sizeof block) return 1;
    for (int c = 0; c < 36; c++) {
      const char *card = block + 80 * c;
      if (!memcmp(card, "END     ", 8)) {
        int ok = bitpix && naxis >= 0 && prod >= 0 && pcount >= 0 && gcount >= 0 &&
                 prod < (1LL << 50) && pcount < (1LL << 50) && gcount < 1024;
        long long nb = (bitpix < 0 ? -bitpix : bitpix) / 8;
        *data_bytes = !ok ? -1 : naxis == 0 ? 0 : nb * gcount * (pcount + prod);
        return 0;
      }
      /* TTYPEn: CFITSIO finds a value after an "=" anywhere past the
       * keyword, not only in column 9 (found by fuzz_fits: "TTYPE2 x!=..."
       * with binary junk) */
      const char *eq = !memcmp(card, "TTYPE", 5) && isdigit((unsigned char)card[5]) ? memchr(card + 6, '=', 74) : NULL;
      if (card[8] != '=' && !eq) continue; /* CFITSIO takes "=" without the blank too */
      if (eq) {
        int i = (int)(eq - card) + 1;
        while (i < 80 && card[i] == ' ') i++;
        int klen = 5;
        while (klen < 8 && card[klen] != ' ') klen++;
        if (i < 80 && card[i] != '\'')
          return arkcos_fail(err, ARKCOS_EINVAL,
                             "%s: HDU %d, header card %d: %.*s is not a quoted string "
                             "(FITS writes TTYPEn = 'name')",
                             path, hdu, 36 * b + c + 1, klen, card);
      } else if (!memcmp(card, "BITPIX  ", 8) && card_int(card, &v)) {
        bitpix = v;
      } else if (!memcmp(card, "NAXIS   ", 8) && card_int(card, &v)) {
        naxis = v;
      } else if (!memcmp(card, "NAXIS", 5) && isdigit((unsigned char)card[5]) && card_int(card, &v)) {
        prod = v < 0 || (v > 0 && prod > (1LL << 50) / v) ? -1 : prod * v;
      } else if (!memcmp(card, "PCOUNT  ", 8) && card_int(card, &v)) {
        pcount = v;
      } else if (!memcmp(card, "GCOUNT  ", 8) && card_int(card, &v)) {
        gcount = v;
      } else if (!memcmp(card, "TFIELDS ", 8) && card_int(card, &v) && (v < 0 || v > 999)) {
        return arkcos_fail(err, ARKCOS_EINVAL,
                           "%s: HDU %d, header card %d: TFIELDS = %lld is outside [0, 999] (FITS)",
                           path, hdu, 36 * b + c + 1, v);
      }
    }
  }
  *data_bytes = -1;
  return 0;
}

/* CFITSIO 4.2 (Debian 12) copies an unquoted TTYPEn value that fills its
 * card (70 characters) into a 70-byte field with strcpy, and the fortified
 * library aborts the program (found by fuzz_fits); it also allocates and
 * initialises TFIELDS column descriptions before any check (15 GB resident
 * for TFIELDS = 99999999 in an 8 kB file). FITS requires TTYPEn to be a
 * quoted string and TFIELDS <= 999, so every header is checked before CFITSIO
 * parses it: the
 * headers are read (a few kB), the data units skipped by their size. Where
 * a header's sizes cannot be read the scan stops and CFITSIO judges the
 * rest. */
int hpx_fits_check_headers(const char *path, arkcos_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return ARKCOS_OK; /* the open that follows reports it */
  int rc = ARKCOS_OK;
  for (int hdu = 1; hdu <= 10000; hdu++) {
    long long bytes = -1;
    if ((rc = scan_header(f, path, hdu, &bytes, err)) || bytes < 0) break;
    if (fseeko(f, (off_t)((bytes + 2879) / 2880 * 2880), SEEK_CUR)) break;
  }
  fclose(f);
  return rc == 1 ? ARKCOS_OK : rc;
}

int hpx_read_header(const char *path, hpx_header *h, arkcos_error *err) {
  memset(h, 0, sizeof *h);
  int rc = check_input_path(path, err);
  if (!rc) rc = hpx_fits_check_headers(path, err);
  if (rc) return rc;
  if (!(h->path = strdup(path)))
    return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", path);
  fitsfile *fp = NULL;
  int status = 0;
  if (fits_open_diskfile(&fp, path, READONLY, &status)) {
    fp = NULL;
    rc = fits_fail(err, ARKCOS_EINVAL, path, status, "not a FITS file");
  }
  if (!rc) rc = find_healpix_hdu(fp, path, &h->hdu, err);
  if (!rc) rc = read_nside(fp, h, err);
  if (!rc) rc = read_ordering(fp, h, err);
  if (!rc) rc = read_index_scheme(fp, h, err);
  if (!rc) rc = read_coordsys(fp, h, err);
  if (!rc) rc = read_layout(fp, h, err);
  if (!rc) rc = read_column_labels(fp, h, err);
  close_quietly(fp);
  if (rc) hpx_header_free(h);
  return rc;
}

void hpx_header_info(const hpx_header *h, hpx_map_info *info) {
  info->nside = h->nside;
  info->nested = h->nested;
  info->ncols = h->ncols;
  info->nbad = 0;
  info->is_float32 = h->is_float32;
}

/* ------------------------------------------------------------------ read */

/* healpy's mask_bad test: |x - UNSEEN| <= 1e-8 + 1e-5 |UNSEEN|, which also
 * catches UNSEEN after a round trip through float32; NaN and +-inf are
 * missing too (no smoothing can carry them: they would spread through a
 * ring's FFT). */
static int is_bad(double x) {
  return !isfinite(x) || fabs(x - HPX_UNSEEN) <= 1e-8 + 1e-5 * fabs(HPX_UNSEEN);
}

/* Replaces bad values in v[0..n) by bad_value (0, or NaN to keep them
 * recognisable as missing) and returns how many there were. */
static int64_t replace_bad(double *v, int64_t n, double bad_value) {
  int64_t nbad = 0;
#pragma omp parallel for reduction(+ : nbad) schedule(static)
  for (int64_t i = 0; i < n; i++)
    if (is_bad(v[i])) {
      v[i] = bad_value;
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
  /* Float columns are read without CFITSIO's null check, which would also
   * flush denormal values to 0 (a map of 1e-310 came back all zero); NaN
   * and inf arrive as they are and is_bad takes them. Integer columns keep
   * it: their TNULL value becomes NaN. */
  const int is_float = abs(type) == TFLOAT || abs(type) == TDOUBLE;
  double nulval = NAN;
  int anynul = 0;
  return fits_read_col(fp, TDOUBLE, col, first / repeat + 1, first % repeat + 1,
                       n, is_float ? NULL : &nulval, dst, &anynul, status);
}

/* What reading the columns of one file needs besides the maps. */
typedef struct col_reader {
  const hpx_header *h;
  fitsfile *fp;      /* at the HEALPix table */
  double *buf;       /* values in file order (NESTED or partial sky) */
  long long *pixel;  /* partial sky: pixel index per row */
  double bad_value;  /* what UNSEEN, NaN and unlisted pixels become: 0 or NaN */
  int status;        /* CFITSIO status of the last read */
} col_reader;

/* Opens the file again at the table the header found (no header parsing). */
static int reopen_table(col_reader *r, arkcos_error *err) {
  int type = 0;
  if (fits_open_diskfile(&r->fp, r->h->path, READONLY, &r->status)) {
    r->fp = NULL;
    return fits_fail(err, ARKCOS_EINVAL, r->h->path, r->status, "not a FITS file");
  }
  if (fits_movabs_hdu(r->fp, r->h->hdu, &type, &r->status))
    return fits_fail(err, ARKCOS_EINVAL, r->h->path, r->status, "cannot read HDU");
  return ARKCOS_OK;
}

/* Partial sky: reads and checks the PIXEL column. */
static int read_pixel_index(col_reader *r, arkcos_error *err) {
  const hpx_header *h = r->h;
  long long nul = 0;
  int anynul = 0;
  if (h->nvalues > 0 &&
      fits_read_col(r->fp, TLONGLONG, 1, 1, 1, h->nvalues, &nul, r->pixel,
                    &anynul, &r->status))
    return fits_fail(err, ARKCOS_EINVAL, h->path, r->status,
                     "cannot read the PIXEL column");
  for (long long i = 0; i < h->nvalues; i++)
    if (r->pixel[i] < 0 || r->pixel[i] >= h->npix)
      return arkcos_fail(err, ARKCOS_EINVAL,
                         "%s: partial-sky row %lld lists pixel %lld outside "
                         "[0, %lld)",
                         h->path, i + 1, r->pixel[i], (long long)h->npix);
  /* A pixel listed twice has two values and no rule says which counts: one
   * bit per pixel (1/64 of a map column) finds it. */
  unsigned char *seen = calloc((size_t)(h->npix / 8 + 1), 1);
  if (!seen) return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", h->path);
  for (long long i = 0; i < h->nvalues; i++) {
    const long long q = r->pixel[i];
    if (seen[q >> 3] & (1u << (q & 7))) {
      long long first = 0;
      while (r->pixel[first] != q) first++;
      free(seen);
      return arkcos_fail(err, ARKCOS_EINVAL,
                         "%s: partial-sky rows %lld and %lld both list pixel %lld",
                         h->path, first + 1, i + 1, q);
    }
    seen[q >> 3] |= (unsigned char)(1u << (q & 7));
  }
  free(seen);
  return ARKCOS_OK;
}

static int reader_oom(const hpx_header *h, int want, arkcos_error *err) {
  return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory reading %d map(s) of %lld pixels",
                     h->path, want, (long long)h->npix);
}

/* The buffers the file's layout needs (none for a full-sky RING map), and
 * the pixel index of a partial-sky map, checked: an index outside the map
 * (EINVAL) must stop the read before any pixel is stored by it. */
static int prepare_reader(col_reader *r, int want, arkcos_error *err) {
  const hpx_header *h = r->h;
  if (h->explicit_index || h->nested) {
    long long nbuf = h->explicit_index ? h->nvalues
                     : h->nvalues < HPX_CHUNK ? h->nvalues
                                              : HPX_CHUNK;
    r->buf = malloc(sizeof *r->buf * (size_t)(nbuf > 0 ? nbuf : 1));
    if (!r->buf) return reader_oom(h, want, err);
  }
  if (!h->explicit_index) return ARKCOS_OK;
  r->pixel = malloc(sizeof *r->pixel * (size_t)(h->nvalues > 0 ? h->nvalues : 1));
  if (!r->pixel) return reader_oom(h, want, err);
  return read_pixel_index(r, err);
}

/* One map column into m (npix values, RING order); returns the number of
 * bad values, or -1 on a read error (r->status set). */
static int64_t read_one_column(col_reader *r, int col, double *m) {
  const hpx_header *h = r->h;
  if (h->explicit_index) {
    /* Pixels not listed are unobserved: UNSEEN in healpy, bad (0 or NaN)
     * and counted here. Listed pixels are in the file's ORDERING. */
    if (h->nvalues > 0 && read_flat(r->fp, col, 0, h->nvalues, r->buf, &r->status))
      return -1;
    for (int64_t p = 0; p < h->npix; p++) m[p] = NAN;
    for (long long i = 0; i < h->nvalues; i++)
      m[h->nested ? arkcos_healpix_nest2ring(h->nside, r->pixel[i]) : r->pixel[i]] =
          r->buf[i];
    return replace_bad(m, h->npix, r->bad_value);
  }
  if (!h->nested) {
    if (read_flat(r->fp, col, 0, h->npix, m, &r->status)) return -1;
    return replace_bad(m, h->npix, r->bad_value);
  }
  const int64_t nside = h->nside;
  int64_t nbad = 0;
  double *buf = r->buf;
  for (long long q0 = 0; q0 < h->npix; q0 += HPX_CHUNK) {
    long long n = h->npix - q0 < HPX_CHUNK ? h->npix - q0 : HPX_CHUNK;
    if (read_flat(r->fp, col, q0, n, buf, &r->status)) return -1;
    nbad += replace_bad(buf, n, r->bad_value);
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; i++)
      m[arkcos_healpix_nest2ring(nside, q0 + i)] = buf[i];
  }
  return nbad;
}

/* Bytes of the rows read at once by read_raw and written at once by
 * write_rows */
#define HPX_IO_CHUNK ((long long)8 << 20)

/* ARKCOS_FITS_RAW=0: every map read and written through CFITSIO's column
 * calls (the reference the raw paths are tested against) */
static int raw_io(void) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const char *e = getenv("ARKCOS_FITS_RAW");
  return !(e && !strcmp(e, "0"));
#else
  return 0; /* the raw paths swap bytes from big-endian to a little-endian host's */
#endif
}

/* Whether the file starts as a FITS file does (not gzip-compressed, which
 * CFITSIO inflates in memory) */
static int plain_fits(int fd) {
  char magic[9] = "";
  return pread(fd, magic, 9, 0) == 9 && !memcmp(magic, "SIMPLE  =", 9);
}

/* A full-sky table's columns as bytes of its data unit: what the raw
 * readers need (raw_open) */
typedef struct raw_table {
  int fd;                  /* the file, or -1 */
  long long rowlen, data;  /* NAXIS1; the data unit's offset */
  long long nrows;
  long repeat;             /* values per row, the same in every column read */
  long long *tbcol;        /* per column read: its offset within a row */
  int *esize;              /* 4 (float32) or 8 (float64) */
} raw_table;

static void raw_close(raw_table *t) {
  if (t->fd >= 0) close(t->fd);
  free(t->tbcol);
  free(t->esize);
  *t = (raw_table){.fd = -1};
}

/* Map columns [c0, c0 + n) (1-based FITS columns) of the full-sky table r
 * is at, where every one is float32 or float64 without TSCAL/TZERO (what
 * healpy writes) and of one length: 0 with t open; 1 where the layout needs
 * CFITSIO (integer or scaled columns, partial sky, a compressed file: t
 * closed); else an arkcos status (a truncated file). */
static int raw_open(const col_reader *r, int c0, int n, raw_table *t, arkcos_error *err) {
  const hpx_header *h = r->h;
  *t = (raw_table){.fd = -1};
  if (raw_io() == 0 || h->explicit_index || !r->fp || !r->fp->Fptr || n < 1) return 1;
  const FITSfile *F = r->fp->Fptr;
  if (F->hdutype != BINARY_TBL || !F->tableptr || c0 < 1 || F->tfield < c0 + n - 1) return 1;
  t->rowlen = F->rowlength, t->nrows = h->nrows, t->data = F->datastart;
  if (t->rowlen <= 0 || t->nrows <= 0 || t->data < 0 || t->nrows > (LLONG_MAX - t->data) / t->rowlen) return 1;
  t->tbcol = malloc(sizeof *t->tbcol * (size_t)n);
  t->esize = malloc(sizeof *t->esize * (size_t)n);
  int ok = t->tbcol && t->esize;
  for (int c = 0; c < n && ok; c++) {
    const tcolumn *col = F->tableptr + (c0 + c - 1);
    t->esize[c] = col->tdatatype == TDOUBLE ? 8 : col->tdatatype == TFLOAT ? 4 : 0;
    ok = t->esize[c] && col->tscale == 1.0 && col->tzero == 0.0 && (!c || col->trepeat == t->repeat);
    t->repeat = (long)col->trepeat;
    t->tbcol[c] = col->tbcol;
    ok = ok && t->tbcol[c] >= 0 && t->tbcol[c] + t->repeat * t->esize[c] <= t->rowlen;
  }
  if (ok) ok = t->repeat >= 1 && (long long)t->repeat * t->nrows == h->npix;
  if (ok) ok = (t->fd = open(h->path, O_RDONLY)) >= 0; /* else CFITSIO, which opened it, reads */
  struct stat st;
  if (ok) ok = plain_fits(t->fd) && fstat(t->fd, &st) == 0;
  if (!ok) {
    raw_close(t);
    return 1;
  }
  if ((long long)st.st_size < t->data + t->nrows * t->rowlen) {
    raw_close(t);
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: cannot read map data (truncated file?): the table needs %lld bytes, "
                       "the file has %lld",
                       h->path, t->data + t->nrows * t->rowlen, (long long)st.st_size);
  }
  return 0;
}

/* Rows [r0, r0 + nr) of t into buf (nr rowlen bytes) */
static int raw_rows(const raw_table *t, const char *path, long long r0, long long nr, unsigned char *buf,
                    arkcos_error *err) {
  const size_t bytes = (size_t)(nr * t->rowlen);
  for (size_t done = 0; done < bytes;) {
    errno = 0;
    const ssize_t k = pread(t->fd, buf + done, bytes - done, (off_t)(t->data + r0 * t->rowlen + (long long)done));
    if (k <= 0)
      return arkcos_fail(err, ARKCOS_EINVAL, "%s: cannot read map data: %s", path,
                         k < 0 ? strerror(errno) : "unexpected end of file");
    done += (size_t)k;
  }
  return ARKCOS_OK;
}

/* Value e of a row's column of esize es at src: big-endian to double, as
 * CFITSIO converts without a null check (float32 widened) */
static inline double raw_value(const unsigned char *src, int es, long e) {
  double v;
  if (es == 8) {
    uint64_t u;
    memcpy(&u, src + 8 * e, 8);
    u = __builtin_bswap64(u);
    memcpy(&v, &u, 8);
  } else {
    uint32_t u;
    float f;
    memcpy(&u, src + 4 * e, 4);
    u = __builtin_bswap32(u);
    memcpy(&f, &u, 4);
    v = (double)f;
  }
  return v;
}

/* v as element e of esize es at dst, big-endian, as CFITSIO converts
 * (float32 by a cast: the caller refuses what does not fit) */
static inline void raw_put(unsigned char *dst, int es, long e, double v) {
  if (es == 4) {
    const float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    u = __builtin_bswap32(u);
    memcpy(dst + 4 * e, &u, 4);
  } else {
    uint64_t u;
    memcpy(&u, &v, 8);
    u = __builtin_bswap64(u);
    memcpy(dst + 8 * e, &u, 8);
  }
}

/* Rows of HPX_IO_CHUNK bytes at a time for t, at least one, at most all */
static long long raw_chunk_rows(const raw_table *t) {
  long long per = HPX_IO_CHUNK / t->rowlen > 0 ? HPX_IO_CHUNK / t->rowlen : 1;
  return per < t->nrows ? per : t->nrows;
}

/* Full-sky maps (raw_open's tables) read straight from the table's data
 * unit: rows in chunks of HPX_IO_CHUNK bytes, one pread each, every wanted
 * column taken from the chunk on every thread. The values are CFITSIO's
 * without a null check (float32 widened, float64 bit for bit); CFITSIO's
 * own reads go through 2880-byte records, column after column: I, Q, U at
 * nside 1024 took 0.4 million read and 0.5 million lseek calls. Returns 1
 * where the layout needs CFITSIO, else an arkcos status. */
static int read_raw(col_reader *r, double **maps, int want, arkcos_error *err) {
  const hpx_header *h = r->h;
  raw_table t;
  int rc = raw_open(r, h->first_col, want, &t, err);
  if (rc) return rc;
  const long long per = raw_chunk_rows(&t), rowlen = t.rowlen;
  const long repeat = t.repeat;
  unsigned char *buf = malloc((size_t)(per * rowlen));
  rc = buf ? ARKCOS_OK : reader_oom(h, want, err);
  const int64_t nside = h->nside;
  const int nested = h->nested;
  for (long long r0 = 0; !rc && r0 < t.nrows; r0 += per) {
    const long long nr = t.nrows - r0 < per ? t.nrows - r0 : per;
    if ((rc = raw_rows(&t, h->path, r0, nr, buf, err))) break;
    for (int c = 0; c < want; c++) {
      double *m = maps[c];
      const long long off = t.tbcol[c];
      const int es = t.esize[c];
#pragma omp parallel for schedule(static)
      for (long long row = 0; row < nr; row++) {
        const unsigned char *src = buf + row * rowlen + off;
        const int64_t q0 = (r0 + row) * repeat;
        for (long e = 0; e < repeat; e++)
          m[nested ? arkcos_healpix_nest2ring(nside, q0 + e) : q0 + e] = raw_value(src, es, e);
      }
    }
  }
  free(buf);
  raw_close(&t);
  return rc;
}

/* Reads the first want map columns into maps (allocated here). */
static int read_all_columns(col_reader *r, double **maps, int want,
                            int64_t *nbad, arkcos_error *err) {
  const hpx_header *h = r->h;
  for (int c = 0; c < want; c++) {
    if (!(maps[c] = malloc(sizeof **maps * (size_t)h->npix)))
      return arkcos_fail(err, ARKCOS_ENOMEM,
                         "%s: out of memory reading %d map(s) of %lld pixels",
                         h->path, want, (long long)h->npix);
    arkcos_hint_huge(maps[c], sizeof **maps * (size_t)h->npix);
  }
  const int raw = read_raw(r, maps, want, err);
  if (raw == ARKCOS_OK) {
    for (int c = 0; c < want; c++) *nbad += replace_bad(maps[c], h->npix, r->bad_value);
    return ARKCOS_OK;
  }
  if (raw != 1) return raw;
  for (int c = 0; c < want; c++) {
    int64_t n = read_one_column(r, h->first_col + c, maps[c]);
    if (n < 0)
      return fits_fail(err, ARKCOS_EINVAL, h->path, r->status,
                       "cannot read map data (truncated file?)");
    *nbad += n;
  }
  return ARKCOS_OK;
}

/* hpx_read_columns and hpx_read_columns_missing: bad pixels become
 * bad_value. */
static int read_columns(const hpx_header *h, double ***maps_out, int *ncols,
                        int64_t *nbad, double bad_value, arkcos_error *err) {
  *maps_out = NULL;
  *nbad = 0;
  int want = *ncols <= 0 ? h->ncols : *ncols;
  if (want > h->ncols)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: has %d map column(s), %d requested", h->path,
                       h->ncols, want);
  col_reader r = {.h = h, .bad_value = bad_value};
  double **maps = calloc((size_t)want, sizeof *maps);
  int rc = maps ? reopen_table(&r, err) : reader_oom(h, want, err);
  if (!rc) rc = prepare_reader(&r, want, err);
  if (!rc) rc = read_all_columns(&r, maps, want, nbad, err);
  close_quietly(r.fp);
  free(r.buf);
  free(r.pixel);
  if (rc) {
    hpx_free_maps(maps, want);
    *nbad = 0;
    return rc;
  }
  *ncols = want;
  *maps_out = maps;
  return ARKCOS_OK;
}

int hpx_read_columns(const hpx_header *h, double ***maps, int *ncols,
                     int64_t *nbad, arkcos_error *err) {
  return read_columns(h, maps, ncols, nbad, 0.0, err);
}

int hpx_read_columns_missing(const hpx_header *h, double ***maps, int *ncols,
                             int64_t *nbad, arkcos_error *err) {
  return read_columns(h, maps, ncols, nbad, NAN, err);
}

int hpx_read_maps(const char *path, double ***maps, int *ncols,
                  hpx_map_info *info, arkcos_error *err) {
  *maps = NULL;
  hpx_header h;
  int rc = hpx_read_header(path, &h, err);
  if (rc) return rc;
  int64_t nbad = 0;
  rc = hpx_read_columns(&h, maps, ncols, &nbad, err);
  if (!rc) {
    hpx_header_info(&h, info);
    info->ncols = *ncols;
    info->nbad = nbad;
  }
  hpx_header_free(&h);
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
const char *hpx_standard_column_name(int nmaps, int c, char *buf, size_t len) {
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

int hpx_compressed_name(const char *path) {
  const size_t n = strlen(path);
  return n >= 3 && !strcasecmp(path + n - 3, ".gz");
}

static int check_write_args(const char *path, int nmaps, const void *maps,
                            int64_t nside, int nested, arkcos_error *err) {
  if (!path || !*path) return arkcos_fail(err, ARKCOS_EINVAL, "empty output file name");
  /* the temporary file is written plain and renamed: a .gz name would hold
   * an uncompressed file */
  if (hpx_compressed_name(path))
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s: gzip-compressed output is not written; name it .fits", path);
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
  return ARKCOS_OK;
}

/* One table being written: its layout and the buffers that go with it. */
typedef struct map_writer {
  const char *path;      /* the output as the user named it (messages) */
  fitsfile *fp;
  int nmaps, nested;
  int64_t nside, npix;
  long repeat;           /* values per row */
  long long nrows;
  char tform[32];
  char **ttype, **tforms, **tunit;  /* per column, for fits_create_tbl */
  char (*names)[HPX_NAME_LEN];
  double *nestbuf;       /* NESTED: one chunk in file order */
  int status;            /* CFITSIO status */
} map_writer;

/* Rows of 1024 values as healpy/HEALPix write them when they fit evenly
 * (the classic IDL-compatible layout), else one value per row; column
 * names (cols', else healpy's) and units. 1 if out of memory. */
static int prepare_writer(map_writer *w, int as_float32, const hpx_column *cols) {
  w->npix = 12 * w->nside * w->nside;
  w->repeat = w->npix % 1024 == 0 ? 1024 : 1;
  w->nrows = w->npix / w->repeat;
  snprintf(w->tform, sizeof w->tform, "%ld%c", w->repeat, as_float32 ? 'E' : 'D');
  const size_t n = (size_t)w->nmaps;
  w->ttype = calloc(n, sizeof *w->ttype);
  w->tforms = calloc(n, sizeof *w->tforms);
  w->tunit = calloc(n, sizeof *w->tunit);
  w->names = calloc(n, sizeof *w->names);
  if (!w->ttype || !w->tforms || !w->tunit || !w->names) return 1;
  for (int c = 0; c < w->nmaps; c++) {
    const char *name = cols && cols[c].name[0]
                           ? cols[c].name
                           : hpx_standard_column_name(w->nmaps, c, w->names[c], HPX_NAME_LEN);
    if (name != w->names[c]) snprintf(w->names[c], HPX_NAME_LEN, "%s", name);
    w->ttype[c] = w->names[c];
    w->tforms[c] = w->tform;
    w->tunit[c] = cols && cols[c].unit[0] ? (char *)cols[c].unit : (char *)"";
  }
  if (w->nested) {
    w->nestbuf = malloc(sizeof *w->nestbuf *
                        (size_t)(w->npix < HPX_CHUNK ? w->npix : HPX_CHUNK));
    if (!w->nestbuf) return 1;
  }
  return 0;
}

static void free_writer(map_writer *w) {
  free(w->ttype);
  free(w->tforms);
  free(w->tunit);
  free(w->names);
  free(w->nestbuf);
}

/* Creates tmp with the table and healpy's HEALPix keywords. */
/* The table's header (and, unless empty, its rows as CFITSIO's zeros:
 * empty declares no rows, for patch_naxis2) */
static int create_table(map_writer *w, const char *tmp, const char *coordsys, int empty,
                        arkcos_error *err) {
  int *st = &w->status;
  if (fits_create_diskfile(&w->fp, tmp, st)) {
    w->fp = NULL;
    return fits_fail(err, ARKCOS_EIO, w->path, *st, "cannot create");
  }
  /* On an empty file fits_create_tbl first writes the null primary HDU
   * (with EXTEND = T) that healpy also writes. */
  fits_create_tbl(w->fp, BINARY_TBL, empty ? 0 : w->nrows, w->nmaps, w->ttype, w->tforms,
                  w->tunit, "xtension", st);
  long long nside_ll = w->nside, first = 0, last = w->npix - 1;
  fitsfile *fp = w->fp;
  fits_write_key(fp, TSTRING, "PIXTYPE", "HEALPIX", "HEALPIX pixelisation", st);
  fits_write_key(fp, TSTRING, "ORDERING", w->nested ? "NESTED" : "RING",
                 "Pixel ordering scheme, either RING or NESTED", st);
  if (coordsys && coordsys[0])
    fits_write_key(fp, TSTRING, "COORDSYS", (void *)coordsys,
                   "Ecliptic, Galactic or Celestial (equatorial)", st);
  fits_write_key(fp, TLONGLONG, "NSIDE", &nside_ll,
                 "Resolution parameter of HEALPIX", st);
  fits_write_key(fp, TLONGLONG, "FIRSTPIX", &first, "First pixel # (0 based)", st);
  fits_write_key(fp, TLONGLONG, "LASTPIX", &last, "Last pixel # (0 based)", st);
  fits_write_key(fp, TSTRING, "INDXSCHM", "IMPLICIT",
                 "Indexing: IMPLICIT or EXPLICIT", st);
  fits_write_key(fp, TSTRING, "OBJECT", "FULLSKY",
                 "Sky coverage, either FULLSKY or PARTIAL", st);
  fits_write_key(fp, TSTRING, "CREATOR", "arkcos " ARKCOS_VERSION,
                 "Software creating the FITS file", st);
  if (*st) return fits_fail(err, ARKCOS_EIO, w->path, *st, "cannot write header");
  return ARKCOS_OK;
}

/* CFITSIO casts doubles beyond the float range to inf without an error; a
 * corrupted pixel must not pass silently. */
static int check_float32_range(const map_writer *w, int c, const double *m,
                               arkcos_error *err) {
  int64_t bad = -1;
  for (int64_t p = 0; p < w->npix && bad < 0; p++)
    if (fabs(m[p]) > FLT_MAX && isfinite(m[p])) bad = p;
  if (bad < 0) return ARKCOS_OK;
  return arkcos_fail(err, ARKCOS_EINVAL,
                     "%s: column %d pixel %lld = %g does not fit in float32",
                     w->path, c + 1, (long long)bad, m[bad]);
}

/* Map m (RING) into column c + 1; nonzero CFITSIO status on failure. */
static int write_column(map_writer *w, int c, const double *m) {
  if (!w->nested)
    /* One call spanning all rows: CFITSIO treats the column as a flat
     * sequence of nrows x repeat values (and converts to float32). */
    return fits_write_col(w->fp, TDOUBLE, c + 1, 1, 1, w->npix, (void *)m,
                          &w->status);
  /* NESTED: chunks gathered through nest2ring (sequential writes, and
   * nest2ring is cheaper than ring2nest), written where they belong. */
  const int64_t nside = w->nside;
  double *buf = w->nestbuf;
  for (long long q0 = 0; q0 < w->npix; q0 += HPX_CHUNK) {
    long long n = w->npix - q0 < HPX_CHUNK ? w->npix - q0 : HPX_CHUNK;
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; i++)
      buf[i] = m[arkcos_healpix_nest2ring(nside, q0 + i)];
    if (fits_write_col(w->fp, TDOUBLE, c + 1, q0 / w->repeat + 1,
                       q0 % w->repeat + 1, n, buf, &w->status))
      return w->status;
  }
  return 0;
}

static int write_all_columns(map_writer *w, const double *const *maps,
                             int as_float32, arkcos_error *err) {
  for (int c = 0; c < w->nmaps; c++) {
    int rc = as_float32 ? check_float32_range(w, c, maps[c], err) : ARKCOS_OK;
    if (rc) return rc;
    errno = 0;
    if (write_column(w, c, maps[c])) {
      /* the system's reason (no space left, file too large) says more than
       * CFITSIO's "error writing data buffer" */
      char what[160];
      snprintf(what, sizeof what, "cannot write map data%s%s", errno ? ": " : "",
               errno ? strerror(errno) : "");
      return fits_fail(err, ARKCOS_EIO, w->path, w->status, what);
    }
  }
  return ARKCOS_OK;
}

/* Closes the file and, with sync, flushes it to disk (hpx_band_create's
 * header is flushed with the rows, by hpx_band_commit: an fsync is a
 * journal commit, 0.1-0.2 s on an ext4 virtual disk). */
static int finish_file(map_writer *w, const char *tmp, int sync, arkcos_error *err) {
  fitsfile *fp = w->fp;
  w->fp = NULL;
  errno = 0;
  if (fits_close_file(fp, &w->status)) {
    char what[160];
    snprintf(what, sizeof what, "cannot finish writing%s%s", errno ? ": " : "",
             errno ? strerror(errno) : "");
    return fits_fail(err, ARKCOS_EIO, w->path, w->status, what);
  }
  if (sync && fsync_path(tmp) != 0)
    return arkcos_fail(err, ARKCOS_EIO, "%s: cannot flush output: %s", w->path,
                       strerror(errno));
  return ARKCOS_OK;
}

static int write_rows(const char *tmp, const char *path, const hpx_band_layout *L, const double *const *maps,
                      arkcos_error *err);

int hpx_write_maps_ex(const char *path, const double *const *maps, int nmaps,
                      int64_t nside, int nested, int as_float32, int force,
                      const hpx_column *cols, const char *coordsys,
                      arkcos_error *err) {
  int rc = check_write_args(path, nmaps, maps, nside, nested, err);
  if (rc) return rc;
  char tmp[4096];
  if (raw_io()) {
    /* the header through CFITSIO (hpx_band_create: the same table), the
     * rows straight into the data unit (write_rows) */
    hpx_band_layout L;
    if ((rc = hpx_band_create(path, nmaps, nside, nested, as_float32, force, cols, coordsys, tmp, sizeof tmp,
                              &L, err)))
      return rc;
    map_writer w = {.path = path, .nmaps = nmaps, .npix = L.npix};
    for (int c = 0; c < nmaps && !rc && as_float32; c++) rc = check_float32_range(&w, c, maps[c], err);
    if (!rc) rc = write_rows(tmp, path, &L, maps, err);
    if (rc) {
      hpx_band_abort(tmp);
      return rc;
    }
    return hpx_band_commit(tmp, path, err);
  }
  if ((rc = atomic_begin(path, force, tmp, sizeof tmp, err))) return rc;
  /* atomic_begin reserved the name with an empty file; CFITSIO refuses to
   * create over an existing file, so free the name for it. */
  unlink(tmp);

  map_writer w = {.path = path, .nmaps = nmaps, .nested = nested, .nside = nside};
  if (prepare_writer(&w, as_float32, cols))
    rc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory writing %d map(s)",
                     path, nmaps);
  if (!rc) rc = create_table(&w, tmp, coordsys, 0, err);
  if (!rc) rc = write_all_columns(&w, maps, as_float32, err);
  if (!rc) rc = finish_file(&w, tmp, 1, err);
  free_writer(&w);
  if (!rc) return atomic_commit(tmp, path, err);
  close_quietly(w.fp);
  atomic_abort(tmp);
  return rc;
}

int hpx_write_maps(const char *path, const double *const *maps, int nmaps,
                   int64_t nside, int nested, int as_float32, int force,
                   arkcos_error *err) {
  return hpx_write_maps_ex(path, maps, nmaps, nside, nested, as_float32,
                           force, NULL, NULL, err);
}

/* ------------------------------------------------- band I/O (MPI ranks) */

/* Which map pixel file index q holds: itself (RING), or nest2ring(q) */
static int64_t file_to_ring(int nested, int64_t nside, int64_t q) {
  return nested ? arkcos_healpix_nest2ring(nside, q) : q;
}

/* The local position of RING pixel p in runs seg (local base lofs[k] of
 * run k), or -1: the runs are few (a band and its mirror), so a scan. */
static int64_t run_local(const int64_t *seg, const int64_t *lofs, int nseg, int64_t p) {
  for (int k = 0; k < nseg; k++)
    if (p >= seg[2 * k] && p < seg[2 * k + 1]) return lofs[k] + (p - seg[2 * k]);
  return -1;
}

/* The 1-based ring of RING pixel p */
static int64_t ring_of(int64_t nside, int64_t p) {
  const int64_t ncap = 2 * nside * (nside - 1), npix = 12 * nside * nside;
  if (p < ncap) {
    int64_t i = (int64_t)((1 + sqrt(1.0 + 2.0 * (double)p)) / 2);
    while (i > 1 && 2 * i * (i - 1) > p) i--;
    while (2 * (i + 1) * i <= p) i++;
    return i;
  }
  if (p < npix - ncap) return (p - ncap) / (4 * nside) + nside;
  return 4 * nside - ring_of(nside, npix - 1 - p);
}

/* The file index ranges that may hold the runs' pixels, as pairs in *out
 * (malloc'd): the runs themselves (RING); for NESTED, the blocks of S^2
 * consecutive indices (one pixel at nside / S) whose rings, S jr - S + 1 to
 * S jr + S - 1 for the block's ring jr at nside / S, meet the runs' rings,
 * merged; so a rank walks its band's part of the file, not all of it. */
static int file_ranges(int nested, int64_t nside, const int64_t *seg, int nseg, int64_t **out, int *nout) {
  *out = NULL;
  *nout = 0;
  if (!nested) {
    *out = malloc(sizeof **out * (size_t)(2 * nseg + 2));
    if (!*out) return ARKCOS_ENOMEM;
    memcpy(*out, seg, sizeof **out * (size_t)(2 * nseg));
    *nout = nseg;
    return ARKCOS_OK;
  }
  int64_t *rr = malloc(sizeof *rr * (size_t)(2 * nseg + 2));
  if (!rr) return ARKCOS_ENOMEM;
  for (int k = 0; k < nseg; k++) {
    if (seg[2 * k] >= seg[2 * k + 1]) { /* an empty run meets no block */
      rr[2 * k] = 1, rr[2 * k + 1] = 0;
      continue;
    }
    rr[2 * k] = ring_of(nside, seg[2 * k]);
    rr[2 * k + 1] = ring_of(nside, seg[2 * k + 1] - 1);
  }
  const int64_t S = nside < 32 ? nside : 32, nc = nside / S, ncoarse = 12 * nc * nc;
  int cap = 64, n = 0;
  int64_t *r = malloc(sizeof *r * (size_t)(2 * cap));
  for (int64_t c = 0; r && c < ncoarse; c++) {
    const int64_t jr = ring_of(nc, arkcos_healpix_nest2ring(nc, c)), lo = S * jr - S + 1, hi = S * jr + S - 1;
    int meet = 0;
    for (int k = 0; k < nseg && !meet; k++) meet = lo <= rr[2 * k + 1] && hi >= rr[2 * k];
    if (!meet) continue;
    if (n && r[2 * n - 1] == c * S * S) {
      r[2 * n - 1] = (c + 1) * S * S;
      continue;
    }
    if (n == cap) {
      int64_t *g = realloc(r, sizeof *r * (size_t)(4 * cap));
      if (!g) {
        free(r);
        r = NULL;
        break;
      }
      r = g;
      cap *= 2;
    }
    r[2 * n] = c * S * S;
    r[2 * n + 1] = (c + 1) * S * S;
    n++;
  }
  free(rr);
  if (!r) return ARKCOS_ENOMEM;
  *out = r;
  *nout = n;
  return ARKCOS_OK;
}

/* The file's index ranges holding the runs' pixels (file_ranges), each
 * pixel placed by nest2ring in a NESTED file. For each stretch of
 * consecutive file indices [q, q + n) whose pixels are in the runs,
 * fn(ctx, q, n, loc) with loc[i] the local position of the pixel at file
 * index q + i. */
typedef int (*stretch_fn)(void *ctx, long long q, long long n, const int64_t *loc);

static int for_stretches(int nested, int64_t nside, const int64_t *seg, const int64_t *lofs, int nseg,
                         stretch_fn fn, void *ctx) {
  int64_t *loc = malloc(sizeof *loc * (size_t)HPX_CHUNK), *fr = NULL;
  int nfr = 0;
  int rc = loc ? file_ranges(nested, nside, seg, nseg, &fr, &nfr) : ARKCOS_ENOMEM;
  for (int k = 0; k < nfr && !rc; k++) {
    const int64_t lo = fr[2 * k], hi = fr[2 * k + 1];
    for (long long q0 = lo; q0 < hi && !rc; q0 += HPX_CHUNK) {
      const long long n = hi - q0 < HPX_CHUNK ? hi - q0 : HPX_CHUNK;
#pragma omp parallel for schedule(static)
      for (long long i = 0; i < n; i++) loc[i] = run_local(seg, lofs, nseg, file_to_ring(nested, nside, q0 + i));
      for (long long i = 0; i < n && !rc;) {
        if (loc[i] < 0) {
          i++;
          continue;
        }
        long long j = i + 1;
        while (j < n && loc[j] >= 0) j++;
        rc = fn(ctx, q0 + i, j - i, loc + i);
        i = j;
      }
    }
  }
  free(fr);
  free(loc);
  return rc;
}

/* The local bases of runs laid back to back */
static int64_t *runs_back_to_back(const int64_t *seg, int nseg) {
  int64_t *lofs = malloc(sizeof *lofs * (size_t)(nseg + 1)), at = 0;
  for (int k = 0; lofs && k < nseg; k++) {
    lofs[k] = at;
    at += seg[2 * k + 1] - seg[2 * k];
  }
  return lofs;
}

typedef struct band_reader {
  col_reader r;
  int col;
  double *dst, *buf;
  int64_t nbad;
  raw_table raw;       /* the column's bytes (fd >= 0), else CFITSIO */
  unsigned char *rows; /* raw: HPX_IO_CHUNK bytes of rows */
  arkcos_error *err;
  int said;            /* err holds the failure's message */
} band_reader;

/* File indices [q, q + n) of the band reader's column from its raw table
 * into b->buf: the rows holding them, HPX_IO_CHUNK bytes at a time */
static int raw_stretch(band_reader *b, long long q, long long n) {
  const raw_table *t = &b->raw;
  const long long per = raw_chunk_rows(t);
  for (long long i = 0; i < n;) {
    const long long r0 = (q + i) / t->repeat, nr0 = (q + n - 1) / t->repeat - r0 + 1;
    const long long nr = nr0 < per ? nr0 : per;
    int rc = raw_rows(t, b->r.h->path, r0, nr, b->rows, b->err);
    if (rc) {
      b->said = 1;
      return rc;
    }
    const long long end = (r0 + nr) * t->repeat < q + n ? (r0 + nr) * t->repeat : q + n; /* file index */
    for (long long k = q + i; k < end; k++)
      b->buf[k - q] = raw_value(b->rows + (k / t->repeat - r0) * t->rowlen + t->tbcol[0], t->esize[0],
                                k % t->repeat);
    i = end - q;
  }
  return ARKCOS_OK;
}

static int read_stretch(void *ctx, long long q, long long n, const int64_t *loc) {
  band_reader *b = ctx;
  if (b->raw.fd >= 0) {
    const int rc = raw_stretch(b, q, n);
    if (rc) return rc;
  } else if (read_flat(b->r.fp, b->col, q, n, b->buf, &b->r.status)) {
    return ARKCOS_EINVAL;
  }
  b->nbad += replace_bad(b->buf, n, NAN);
  for (long long i = 0; i < n; i++) b->dst[loc[i]] = b->buf[i];
  return ARKCOS_OK;
}

/* ---- partial sky by runs: the PIXEL column streamed in chunks */

/* File indices [first, first + n) of the PIXEL column (column 1) as
 * read_pixel_index reads them (undefined values 0) */
static int read_index_flat(fitsfile *fp, long long first, long long n, long long *dst, int *status) {
  int type = 0;
  long repeat = 1, width = 0;
  long long nul = 0;
  int anynul = 0;
  if (fits_get_coltype(fp, 1, &type, &repeat, &width, status)) return *status;
  return fits_read_col(fp, TLONGLONG, 1, first / repeat + 1, first % repeat + 1, n, &nul, dst, &anynul, status);
}

/* The local position of RING pixel p in runs seg (increasing; local base
 * lofs[k] of run k), or -1: a binary search, one per listed pixel. */
static int64_t run_search(const int64_t *seg, const int64_t *lofs, int nseg, int64_t p) {
  int lo = 0, hi = nseg; /* the run holding p is in [lo, hi) */
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (p < seg[2 * mid]) hi = mid;
    else if (p >= seg[2 * mid + 1]) lo = mid + 1;
    else return lofs[mid] + (p - seg[2 * mid]);
  }
  return -1;
}

/* read_pixel_index's checks and messages, the PIXEL column streamed in
 * chunks (idx: HPX_CHUNK values) with one bit per pixel: every row in
 * range first, then the first row listing a pixel listed before. The band
 * reader's path for a pixel listed twice in its runs, so that the message
 * is the whole-map reader's whichever band found it. */
static int check_index_stream(col_reader *r, long long *idx, arkcos_error *err) {
  const hpx_header *h = r->h;
  for (long long q0 = 0; q0 < h->nvalues; q0 += HPX_CHUNK) {
    const long long n = h->nvalues - q0 < HPX_CHUNK ? h->nvalues - q0 : HPX_CHUNK;
    if (read_index_flat(r->fp, q0, n, idx, &r->status))
      return fits_fail(err, ARKCOS_EINVAL, h->path, r->status, "cannot read the PIXEL column");
    for (long long i = 0; i < n; i++)
      if (idx[i] < 0 || idx[i] >= h->npix)
        return arkcos_fail(err, ARKCOS_EINVAL, "%s: partial-sky row %lld lists pixel %lld outside [0, %lld)",
                           h->path, q0 + i + 1, idx[i], (long long)h->npix);
  }
  unsigned char *seen = calloc((size_t)(h->npix / 8 + 1), 1);
  if (!seen) return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", h->path);
  long long twice = -1, q = -1;
  for (long long q0 = 0; q0 < h->nvalues && twice < 0; q0 += HPX_CHUNK) {
    const long long n = h->nvalues - q0 < HPX_CHUNK ? h->nvalues - q0 : HPX_CHUNK;
    if (read_index_flat(r->fp, q0, n, idx, &r->status)) {
      free(seen);
      return fits_fail(err, ARKCOS_EINVAL, h->path, r->status, "cannot read the PIXEL column");
    }
    for (long long i = 0; i < n && twice < 0; i++) {
      const long long v = idx[i];
      if (seen[v >> 3] & (1u << (v & 7))) twice = q0 + i, q = v;
      seen[v >> 3] |= (unsigned char)(1u << (v & 7));
    }
  }
  free(seen);
  if (twice < 0) return ARKCOS_OK;
  long long first = -1;
  for (long long q0 = 0; q0 < twice && first < 0; q0 += HPX_CHUNK) {
    const long long n = twice - q0 < HPX_CHUNK ? twice - q0 : HPX_CHUNK;
    if (read_index_flat(r->fp, q0, n, idx, &r->status))
      return fits_fail(err, ARKCOS_EINVAL, h->path, r->status, "cannot read the PIXEL column");
    for (long long i = 0; i < n && first < 0; i++)
      if (idx[i] == q) first = q0 + i;
  }
  return arkcos_fail(err, ARKCOS_EINVAL, "%s: partial-sky rows %lld and %lld both list pixel %lld", h->path,
                     first + 1, twice + 1, q);
}

/* A partial-sky column at the runs (lofs: their local bases; len pixels
 * in all): dst all NaN (unlisted: missing, as read_one_column leaves
 * them), then the PIXEL column and the value column read chunk by chunk,
 * the rows whose RING pixel is in the runs stored at its local position.
 * Every row's pixel is checked against the map's range as it passes; a
 * pixel listed twice within the runs (one bit per pixel of the runs)
 * sends the file to check_index_stream for the whole-map reader's
 * message. Since the bands of the ranks cover the sphere, a pixel listed
 * twice anywhere is in some rank's runs. */
static int read_partial_runs(band_reader *b, const int64_t *seg, const int64_t *lofs, int nseg, int64_t len,
                             arkcos_error *err) {
  const hpx_header *h = b->r.h;
  for (int64_t i = 0; i < len; i++) b->dst[i] = NAN;
  long long *idx = malloc(sizeof *idx * (size_t)HPX_CHUNK);
  int64_t *loc = malloc(sizeof *loc * (size_t)HPX_CHUNK);
  unsigned char *seen = calloc((size_t)(len / 8 + 1), 1);
  int rc = idx && loc && seen ? ARKCOS_OK : reader_oom(h, 1, err), twice = 0;
  for (long long q0 = 0; !rc && !twice && q0 < h->nvalues; q0 += HPX_CHUNK) {
    const long long n = h->nvalues - q0 < HPX_CHUNK ? h->nvalues - q0 : HPX_CHUNK;
    if (read_index_flat(b->r.fp, q0, n, idx, &b->r.status)) {
      rc = fits_fail(err, ARKCOS_EINVAL, h->path, b->r.status, "cannot read the PIXEL column");
      break;
    }
    long long kept = 0;
    for (long long i = 0; i < n; i++) {
      if (idx[i] < 0 || idx[i] >= h->npix) {
        rc = arkcos_fail(err, ARKCOS_EINVAL, "%s: partial-sky row %lld lists pixel %lld outside [0, %lld)",
                         h->path, q0 + i + 1, idx[i], (long long)h->npix);
        break;
      }
      loc[i] = run_search(seg, lofs, nseg, file_to_ring(h->nested, h->nside, idx[i]));
      kept += loc[i] >= 0;
    }
    if (rc || !kept) continue;
    if (read_flat(b->r.fp, b->col, q0, n, b->buf, &b->r.status)) {
      rc = fits_fail(err, ARKCOS_EINVAL, h->path, b->r.status, "cannot read map data (truncated file?)");
      break;
    }
    for (long long i = 0; i < n && !twice; i++) {
      const int64_t l = loc[i];
      if (l < 0) continue;
      if (seen[l >> 3] & (1u << (l & 7))) twice = 1;
      seen[l >> 3] |= (unsigned char)(1u << (l & 7));
      b->dst[l] = b->buf[i];
    }
  }
  free(seen);
  free(loc);
  if (!rc && twice) {
    rc = check_index_stream(&b->r, idx, err);
    if (!rc) rc = arkcos_fail(err, ARKCOS_ERUNTIME, "%s: a pixel listed twice was not found again", h->path);
  }
  free(idx);
  if (!rc) b->nbad = replace_bad(b->dst, len, NAN);
  return rc;
}

int hpx_read_column_runs(const hpx_header *h, int c, const int64_t *seg, int nseg, double *dst,
                         int64_t *nbad, arkcos_error *err) {
  *nbad = 0;
  if (c < 0 || c >= h->ncols) return arkcos_fail(err, ARKCOS_EINVAL, "%s: no map column %d", h->path, c + 1);
  band_reader b = {.r = {.h = h, .bad_value = NAN}, .col = h->first_col + c, .dst = dst, .raw = {.fd = -1}};
  int64_t *lofs = runs_back_to_back(seg, nseg);
  b.buf = malloc(sizeof *b.buf * (size_t)HPX_CHUNK);
  int rc = lofs && b.buf ? reopen_table(&b.r, err) : reader_oom(h, 1, err);
  if (!rc && h->explicit_index) {
    int64_t len = 0;
    for (int k = 0; k < nseg; k++) len += seg[2 * k + 1] - seg[2 * k];
    rc = read_partial_runs(&b, seg, lofs, nseg, len, err);
  } else if (!rc) {
    b.err = err;
    rc = raw_open(&b.r, b.col, 1, &b.raw, err); /* a status: err says why */
    if (rc == 0 && !(b.rows = malloc((size_t)(raw_chunk_rows(&b.raw) * b.raw.rowlen)))) rc = reader_oom(h, 1, err);
    if (rc == 0 || rc == 1) {
      rc = for_stretches(h->nested, h->nside, seg, lofs, nseg, read_stretch, &b);
      if (rc == ARKCOS_ENOMEM) reader_oom(h, 1, err);
      else if (rc && !b.said)
        fits_fail(err, ARKCOS_EINVAL, h->path, b.r.status, "cannot read map data (truncated file?)");
    }
  }
  raw_close(&b.raw);
  free(b.rows);
  close_quietly(b.r.fp);
  free(b.buf);
  free(lofs);
  *nbad = b.nbad;
  return rc;
}

/* NAXIS2 of the header at [head, data) of tmp set to nrows: the card
 * CFITSIO wrote for no rows, its value right-justified in columns 11-30
 * as CFITSIO writes it (the files are byte for byte those of a table
 * created with its rows: test_fits, raw_io) */
static int patch_naxis2(const char *tmp, const char *path, long long head, long long data, long long nrows,
                        arkcos_error *err) {
  const int fd = open(tmp, O_RDWR);
  if (fd < 0) return arkcos_fail(err, ARKCOS_EIO, "%s: cannot open %s: %s", path, tmp, strerror(errno));
  int rc = -1;
  char card[80];
  for (long long at = head; rc < 0 && at + 80 <= data; at += 80) {
    if (pread(fd, card, 80, (off_t)at) != 80) break;
    if (memcmp(card, "NAXIS2  = ", 10)) continue;
    char val[21];
    snprintf(val, sizeof val, "%20lld", nrows);
    errno = 0;
    rc = pwrite(fd, val, 20, (off_t)(at + 10)) == 20
             ? ARKCOS_OK
             : arkcos_fail(err, ARKCOS_EIO, "%s: cannot write header: %s", path,
                           errno ? strerror(errno) : "short write");
  }
  if (rc < 0) rc = arkcos_fail(err, ARKCOS_EIO, "%s: cannot write header: no NAXIS2 card in it", path);
  if (close(fd) != 0 && !rc) rc = arkcos_fail(err, ARKCOS_EIO, "%s: cannot write header: %s", path, strerror(errno));
  return rc;
}

int hpx_band_create(const char *path, int nmaps, int64_t nside, int nested, int as_float32, int force,
                    const hpx_column *cols, const char *coordsys, char *tmp, size_t tmplen,
                    hpx_band_layout *L, arkcos_error *err) {
  int rc = check_write_args(path, nmaps, (void *)1, nside, nested, err);
  if (rc) return rc;
  if ((rc = atomic_begin(path, force, tmp, tmplen, err))) return rc;
  unlink(tmp); /* CFITSIO creates the file itself */
  map_writer w = {.path = path, .nmaps = nmaps, .nested = nested, .nside = nside};
  if (prepare_writer(&w, as_float32, cols))
    rc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory writing %d map(s)", path, nmaps);
  /* no rows declared: CFITSIO would write the whole data unit as zeros
   * when it closes the file (100 MB of 4 KiB writes at nside 1024), which
   * the ranks then write again; NAXIS2 is set afterwards */
  if (!rc) rc = create_table(&w, tmp, coordsys, 1, err);
  long long head = 0, data = 0, end = 0;
  if (!rc && fits_get_hduaddrll(w.fp, &head, &data, &end, &w.status))
    rc = fits_fail(err, ARKCOS_EIO, path, w.status, "cannot write header");
  if (!rc) {
    L->nside = nside;
    L->npix = w.npix;
    L->nested = nested;
    L->nmaps = nmaps;
    L->repeat = w.repeat;
    L->esize = as_float32 ? 4 : 8;
    L->row_bytes = (long long)nmaps * w.repeat * L->esize;
    L->data = data;
    const long long bytes = w.nrows * L->row_bytes;
    L->size = data + (bytes + 2879) / 2880 * 2880; /* the data unit padded to FITS blocks (zeros) */
    rc = finish_file(&w, tmp, 0, err);
    if (!rc) rc = patch_naxis2(tmp, path, head, data, w.nrows, err);
  }
  free_writer(&w);
  errno = 0;
  if (!rc && truncate(tmp, L->size) != 0)
    rc = arkcos_fail(err, ARKCOS_EIO, "%s: cannot size the output (%lld bytes): %s", path, L->size, strerror(errno));
  if (rc) {
    close_quietly(w.fp);
    atomic_abort(tmp);
  }
  return rc;
}

typedef struct band_writer {
  const hpx_band_layout *L;
  const char *path;
  int fd, col;
  const double *src;
  unsigned char *buf;
  arkcos_error *err;
} band_writer;

/* Values of file indices [q, q + n) of column col, big-endian, in place */
static int write_stretch(void *ctx, long long q, long long n, const int64_t *loc) {
  band_writer *b = ctx;
  const hpx_band_layout *L = b->L;
  for (long long i = 0; i < n;) {
    const long long row = (q + i) / L->repeat, e = (q + i) % L->repeat;
    const long long m = L->repeat - e < n - i ? L->repeat - e : n - i; /* to the row's end */
    for (long long t = 0; t < m; t++) {
      const double v = b->src[loc[i + t]];
      if (L->esize == 4 && fabs(v) > FLT_MAX && isfinite(v))
        return arkcos_fail(b->err, ARKCOS_EINVAL, "%s: column %d pixel %lld = %g does not fit in float32",
                           b->path, b->col + 1, (long long)file_to_ring(L->nested, L->nside, q + i + t), v);
      raw_put(b->buf, L->esize, (long)t, v);
    }
    const off_t at = (off_t)(L->data + row * L->row_bytes + (long long)b->col * L->repeat * L->esize + e * L->esize);
    size_t left = (size_t)(m * L->esize), done = 0;
    while (left > 0) {
      errno = 0;
      const ssize_t k = pwrite(b->fd, b->buf + done, left, at + (off_t)done);
      if (k <= 0)
        return arkcos_fail(b->err, ARKCOS_EIO, "%s: cannot write map data: %s", b->path,
                           errno ? strerror(errno) : "short write");
      done += (size_t)k;
      left -= (size_t)k;
    }
    i += m;
  }
  return ARKCOS_OK;
}

int hpx_band_write_column(const char *tmp, const char *path, const hpx_band_layout *L, int c,
                          const int64_t *seg, const int64_t *lofs, int nseg, const double *src,
                          arkcos_error *err) {
  if (c < 0 || c >= L->nmaps) return arkcos_fail(err, ARKCOS_EINVAL, "%s: no map column %d", path, c + 1);
  band_writer b = {.L = L, .path = path, .col = c, .src = src, .err = err};
  b.fd = open(tmp, O_WRONLY);
  if (b.fd < 0) return arkcos_fail(err, ARKCOS_EIO, "%s: cannot open %s: %s", path, tmp, strerror(errno));
  b.buf = malloc((size_t)L->repeat * 8);
  int rc = b.buf ? for_stretches(L->nested, L->nside, seg, lofs, nseg, write_stretch, &b)
                 : arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", path);
  if (rc == ARKCOS_ENOMEM && !err->code) arkcos_fail(err, rc, "%s: out of memory", path);
  errno = 0;
  if (fsync(b.fd) != 0 && !rc) rc = arkcos_fail(err, ARKCOS_EIO, "%s: cannot flush output: %s", path, strerror(errno));
  if (close(b.fd) != 0 && !rc) rc = arkcos_fail(err, ARKCOS_EIO, "%s: cannot finish writing: %s", path, strerror(errno));
  free(b.buf);
  return rc;
}

/* Every map column of a table made by hpx_band_create, rows in chunks of
 * HPX_IO_CHUNK bytes in file layout (big-endian, converted as CFITSIO
 * converts, on every thread), one pwrite each, then flushed. CFITSIO's
 * column writes go through its 2880-byte records, column after column: I,
 * Q, U at nside 1024 took 0.2 million write calls, and as many reads of
 * records written before. */
static int write_rows(const char *tmp, const char *path, const hpx_band_layout *L, const double *const *maps,
                      arkcos_error *err) {
  const long long rowlen = L->row_bytes, nrows = L->npix / L->repeat;
  long long per = HPX_IO_CHUNK / rowlen > 0 ? HPX_IO_CHUNK / rowlen : 1;
  if (per > nrows) per = nrows;
  const int fd = open(tmp, O_WRONLY);
  if (fd < 0) return arkcos_fail(err, ARKCOS_EIO, "%s: cannot open %s: %s", path, tmp, strerror(errno));
  unsigned char *buf = malloc((size_t)(per * rowlen));
  int rc = buf ? ARKCOS_OK : arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory writing %d map(s)", path, L->nmaps);
  const long repeat = L->repeat;
  const int es = L->esize, nmaps = L->nmaps, nested = L->nested;
  const int64_t nside = L->nside;
  for (long long r0 = 0; !rc && r0 < nrows; r0 += per) {
    const long long nr = nrows - r0 < per ? nrows - r0 : per;
#pragma omp parallel for schedule(static)
    for (long long row = 0; row < nr; row++)
      for (int c = 0; c < nmaps; c++) {
        unsigned char *dst = buf + row * rowlen + (long long)c * repeat * es;
        const double *m = maps[c];
        const int64_t q0 = (r0 + row) * repeat;
        for (long e = 0; e < repeat; e++) raw_put(dst, es, e, m[file_to_ring(nested, nside, q0 + e)]);
      }
    const size_t bytes = (size_t)(nr * rowlen);
    for (size_t done = 0; done < bytes;) {
      errno = 0;
      const ssize_t k = pwrite(fd, buf + done, bytes - done, (off_t)(L->data + r0 * rowlen + (long long)done));
      if (k <= 0) {
        rc = arkcos_fail(err, ARKCOS_EIO, "%s: cannot write map data: %s", path,
                         errno ? strerror(errno) : "short write");
        break;
      }
      done += (size_t)k;
    }
  }
  free(buf);
  errno = 0;
  if (!rc && fsync(fd) != 0) rc = arkcos_fail(err, ARKCOS_EIO, "%s: cannot flush output: %s", path, strerror(errno));
  if (close(fd) != 0 && !rc) rc = arkcos_fail(err, ARKCOS_EIO, "%s: cannot finish writing: %s", path, strerror(errno));
  return rc;
}

int hpx_band_commit(const char *tmp, const char *path, arkcos_error *err) {
  if (fsync_path(tmp) != 0)
    return arkcos_fail(err, ARKCOS_EIO, "%s: cannot flush output: %s", path, strerror(errno));
  return atomic_commit(tmp, path, err);
}

void hpx_band_abort(const char *tmp) { atomic_abort(tmp); }
