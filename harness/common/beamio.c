/* beamio.c -- beam transfer functions from FITS tables or text (beamio.h). */
#include "harness/common/beamio.h"

#include <ctype.h>
#include <errno.h>
#include <fitsio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "harness/common/mapio.h"

static int is_fits(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char head[9] = {0};
  const size_t n = fread(head, 1, 8, f);
  fclose(f);
  return n == 8 && !memcmp(head, "SIMPLE  ", 8);
}

static int check_values(const char *path, const double *b, int lmax, arkcos_error *err) {
  for (int l = 0; l <= lmax; l++)
    if (!isfinite(b[l])) return arkcos_fail(err, ARKCOS_EINVAL, "%s: B_l at l = %d is not a finite number", path, l);
  if (lmax < 1) return arkcos_fail(err, ARKCOS_EINVAL, "%s: a beam needs B_l for at least l = 0 and 1", path);
  if (!(b[0] > 0))
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: B_0 = %g; a smoothing beam has B_0 > 0", path, b[0]);
  return ARKCOS_OK;
}

static int read_fits(const char *path, const char *column, double **bl, int *lmax, arkcos_error *err) {
  fitsfile *f = NULL;
  int status = 0, hdutype = 0, nhdu = 0;
  int rc = hpx_fits_check_headers(path, err);
  if (rc) return rc;
  if (fits_open_diskfile(&f, path, READONLY, &status))
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: cannot open as FITS (CFITSIO status %d)", path, status);
  fits_get_num_hdus(f, &nhdu, &status);
  int found = 0;
  for (int h = 2; h <= nhdu && !found; h++) {
    status = 0;
    if (!fits_movabs_hdu(f, h, &hdutype, &status) && (hdutype == BINARY_TBL || hdutype == ASCII_TBL)) found = 1;
  }
  if (!found) {
    fits_close_file(f, &status);
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: no table extension (a beam file holds B_l in a FITS table)", path);
  }
  int ncols = 0;
  long nrows = 0;
  status = 0;
  fits_get_num_cols(f, &ncols, &status);
  fits_get_num_rows(f, &nrows, &status);
  int col = 1;
  if (column && *column) {
    char *end;
    const long c = strtol(column, &end, 10);
    if (*end == 0 && c >= 1 && c <= ncols) {
      col = (int)c;
    } else if (*end == 0) {
      fits_close_file(f, &status);
      return arkcos_fail(err, ARKCOS_EINVAL, "%s: column %s does not exist (the table has %d)", path, column, ncols);
    } else {
      col = 0;
      for (int i = 1; i <= ncols && !col; i++) {
        char key[16], name[FLEN_VALUE] = "";
        int st = 0;
        snprintf(key, sizeof key, "TTYPE%d", i);
        if (!fits_read_key(f, TSTRING, key, name, NULL, &st) && !strcasecmp(name, column)) col = i;
      }
      if (!col) {
        fits_close_file(f, &status);
        return arkcos_fail(err, ARKCOS_EINVAL, "%s: no column named %s (TTYPEn keywords)", path, column);
      }
    }
  }
  int typecode = 0;
  long repeat = 0, width = 0;
  fits_get_coltype(f, col, &typecode, &repeat, &width, &status);
  const long long n = (long long)nrows * (repeat > 0 ? repeat : 1);
  if (status || n < 2 || n > 1000000000LL) {
    fits_close_file(f, &status);
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: column %d has %lld values (need l = 0 .. lmax, lmax >= 1)", path, col,
                       n);
  }
  double *b = malloc(sizeof(double) * (size_t)n);
  if (!b) {
    fits_close_file(f, &status);
    return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", path);
  }
  int anynul = 0;
  fits_read_col(f, TDOUBLE, col, 1, 1, n, NULL, b, &anynul, &status);
  const int st = status;
  status = 0;
  fits_close_file(f, &status);
  if (st) {
    free(b);
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: cannot read column %d as numbers (CFITSIO status %d)", path, col, st);
  }
  *bl = b;
  *lmax = (int)(n - 1);
  return ARKCOS_OK;
}

static int read_text(const char *path, const char *column, double **bl, int *lmax, arkcos_error *err) {
  if (column && *column && strcmp(column, "1") && strcmp(column, "2"))
    return arkcos_fail(err, ARKCOS_EINVAL, "%s: a text beam file has no column %s (it holds `l B_l` or B_l)", path,
                       column);
  FILE *f = fopen(path, "r");
  if (!f) return arkcos_fail(err, ARKCOS_EINVAL, "%s: cannot read beam file: %s", path, strerror(errno));
  size_t cap = 1024, n = 0;
  double *b = malloc(sizeof(double) * cap);
  char *line = NULL;
  size_t lcap = 0;
  int lineno = 0, ncol = 0, rc = ARKCOS_OK;
  while (b && getline(&line, &lcap, f) > 0) {
    lineno++;
    char *p = line;
    while (isspace((unsigned char)*p)) p++;
    if (!*p || *p == '#') continue;
    double v[3];
    int k = 0;
    char *end;
    while (k < 3) {
      while (isspace((unsigned char)*p) || *p == ',') p++;
      if (!*p || *p == '#') break;
      v[k] = strtod(p, &end);
      if (end == p) {
        rc = arkcos_fail(err, ARKCOS_EINVAL, "%s:%d: not a number: %.40s", path, lineno, p);
        break;
      }
      p = end;
      k++;
    }
    if (rc) break;
    while (isspace((unsigned char)*p)) p++;
    if (k == 3 || (*p && *p != '#')) {
      rc = arkcos_fail(err, ARKCOS_EINVAL, "%s:%d: expected `l B_l` or B_l, found more columns", path, lineno);
      break;
    }
    if (!ncol) ncol = k;
    if (k != ncol) {
      rc = arkcos_fail(err, ARKCOS_EINVAL, "%s:%d: %d columns where the file's first line has %d", path, lineno, k,
                       ncol);
      break;
    }
    if (k == 2 && v[0] != (double)n) {
      rc = arkcos_fail(err, ARKCOS_EINVAL,
                       "%s:%d: multipole %g where %zu was expected (l must run 0, 1, 2, ... without gaps)", path,
                       lineno, v[0], n);
      break;
    }
    if (n == cap) {
      double *nb = realloc(b, sizeof(double) * (cap *= 2));
      if (!nb) {
        free(b);
        b = NULL;
        break;
      }
      b = nb;
    }
    b[n++] = k == 2 ? v[1] : v[0];
  }
  free(line);
  fclose(f);
  if (!b) return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory", path);
  if (!rc && n < 2) rc = arkcos_fail(err, ARKCOS_EINVAL, "%s: %zu multipoles; a beam needs l = 0 and 1 at least", path, n);
  if (rc) {
    free(b);
    return rc;
  }
  *bl = b;
  *lmax = (int)n - 1;
  return ARKCOS_OK;
}

int beam_read(const char *path, const char *column, double **bl, int *lmax, arkcos_error *err) {
  *bl = NULL;
  *lmax = -1;
  int rc = is_fits(path) ? read_fits(path, column, bl, lmax, err) : read_text(path, column, bl, lmax, err);
  if (!rc) rc = check_values(path, *bl, *lmax, err);
  if (rc) {
    free(*bl);
    *bl = NULL;
  }
  return rc;
}
