/*
 * test_fits.c -- harness/common/mapio.c at the C level: round trips (RING and
 * NESTED, float32 and float64, nside powers of two and not, several
 * columns), the healpy header layout, UNSEEN/NaN handling, partial-sky
 * tables, and the failures a user can cause. healpy's view of the same files
 * is tested in tests/test_healpy.py.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <fitsio.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/common/mapio.h"
#include "tests/testlib.h"

static char tmpdir[256];

static const char *tpath(const char *name) {
  static char buf[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
  return buf[k];
}

/* Number of entries in tmpdir whose name contains ".tmp-" (left-over
 * temporary outputs). */
static int count_tmp_files(void) {
  DIR *d = opendir(tmpdir);
  int n = 0;
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".tmp-")) n++;
  closedir(d);
  return n;
}

static int exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

/* A deterministic map with distinct values, exactly representable in float32
 * so that float32 round trips can be checked for equality. */
static double *make_map(int64_t nside, int seed) {
  int64_t npix = 12 * nside * nside;
  double *m = malloc(sizeof *m * (size_t)npix);
  for (int64_t p = 0; p < npix; p++)
    m[p] = (double)(float)(seed * 1000.0 + (double)p * 0.25 - 17.0);
  return m;
}

static void read_header_key(const char *path, const char *key, char *val) {
  fitsfile *fp;
  int status = 0;
  val[0] = 0;
  fits_open_diskfile(&fp, path, READONLY, &status);
  fits_movabs_hdu(fp, 2, NULL, &status);
  char comment[FLEN_COMMENT];
  fits_read_keyword(fp, key, val, comment, &status);
  if (status) snprintf(val, FLEN_VALUE, "<missing, status %d>", status);
  status = 0;
  fits_close_file(fp, &status);
  fits_clear_errmsg();
}

TEST_GROUP(roundtrip) {
  const int64_t nsides[] = {1, 2, 3, 5, 16, 32};
  for (size_t i = 0; i < sizeof nsides / sizeof nsides[0]; i++) {
    int64_t nside = nsides[i], npix = 12 * nside * nside;
    int pow2 = (nside & (nside - 1)) == 0;
    for (int nested = 0; nested <= pow2; nested++)
      for (int f32 = 0; f32 <= 1; f32++) {
        double *m = make_map(nside, 1);
        const char *path = tpath("rt.fits");
        arkcos_error err = {0};
        int rc = hpx_write_maps(path, (const double *const *)&m, 1, nside,
                                nested, f32, 1, &err);
        CHECK(rc == 0, "write nside %lld nested %d f32 %d: %s",
              (long long)nside, nested, f32, err.msg);
        double *back = NULL;
        hpx_map_info info;
        rc = hpx_read_map(path, &back, &info, &err);
        CHECK(rc == 0, "read: %s", err.msg);
        if (rc == 0) {
          int64_t ndiff = 0;
          for (int64_t p = 0; p < npix; p++) ndiff += back[p] != m[p];
          CHECK(ndiff == 0, "nside %lld nested %d f32 %d: %lld pixels differ",
                (long long)nside, nested, f32, (long long)ndiff);
          CHECK(info.nside == nside && info.nested == nested &&
                    info.is_float32 == f32 && info.ncols == 1 &&
                    info.nbad == 0,
                "info nside %lld nested %d f32 %d ncols %d nbad %lld",
                (long long)info.nside, info.nested, info.is_float32,
                info.ncols, (long long)info.nbad);
        }
        /* healpy's layout: 1024-value rows when they fit evenly. */
        char tform[FLEN_VALUE];
        read_header_key(path, "TFORM1", tform);
        const char *want = npix % 1024 == 0 ? (f32 ? "'1024E   '" : "'1024D   '")
                                            : (f32 ? "'1E      '" : "'1D      '");
        CHECK(!strcmp(tform, want), "nside %lld: TFORM1 = %s, expected %s",
              (long long)nside, tform, want);
        free(back);
        free(m);
      }
  }
  CHECK(count_tmp_files() == 0, "temporary files left behind");
}

TEST_GROUP(header) {
  double *m = make_map(4, 2);
  const char *path = tpath("hdr.fits");
  arkcos_error err = {0};
  CHECK(hpx_write_maps(path, (const double *const *)&m, 1, 4, 1, 0, 1, &err) == 0,
        "%s", err.msg);
  static const char *const keys[][2] = {
      {"PIXTYPE", "'HEALPIX '"}, {"ORDERING", "'NESTED  '"},
      {"NSIDE", "4"},            {"FIRSTPIX", "0"},
      {"LASTPIX", "191"},        {"INDXSCHM", "'IMPLICIT'"},
      {"OBJECT", "'FULLSKY '"},  {"TTYPE1", "'TEMPERATURE'"},
  };
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char val[FLEN_VALUE];
    read_header_key(path, keys[i][0], val);
    CHECK(!strcmp(val, keys[i][1]), "%s = %s, expected %s", keys[i][0], val,
          keys[i][1]);
  }
  free(m);
}

TEST_GROUP(columns) {
  const int64_t nside = 8, npix = 12 * nside * nside;
  double *m[3] = {make_map(nside, 1), make_map(nside, 2), make_map(nside, 3)};
  hpx_column cols[3] = {{"I_STOKES", "K_CMB"}, {"Q_STOKES", "K_CMB"},
                        {"U_STOKES", "K_CMB"}};
  const char *path = tpath("iqu.fits");
  arkcos_error err = {0};
  CHECK(hpx_write_maps_ex(path, (const double *const *)m, 3, nside, 0, 1, 1,
                          cols, "G", &err) == 0,
        "%s", err.msg);
  hpx_map_info info;
  hpx_header h;
  CHECK(hpx_read_header(path, &h, &err) == 0, "%s", err.msg);
  CHECK(h.ncols == 3 && h.nside == nside && h.is_float32 == 1,
        "ncols %d nside %lld f32 %d", h.ncols, (long long)h.nside,
        h.is_float32);
  for (int c = 0; c < 3 && c < h.ncols; c++)
    CHECK(!strcmp(h.cols[c].name, cols[c].name) &&
              !strcmp(h.cols[c].unit, cols[c].unit),
          "column %d: %s [%s]", c, h.cols[c].name, h.cols[c].unit);
  CHECK(!strcmp(h.coordsys, "G"), "COORDSYS %s", h.coordsys);
  /* The pixel reader works from the header: two columns of three. */
  double **two = NULL;
  int ntwo = 2;
  int64_t nbad = -1;
  CHECK(hpx_read_columns(&h, &two, &ntwo, &nbad, &err) == 0 && ntwo == 2 &&
            nbad == 0,
        "%s", err.msg);
  if (two)
    for (int64_t p = 0; p < npix; p++)
      CHECK((float)m[1][p] == (float)two[1][p], "column 2 pixel %lld",
            (long long)p);
  hpx_free_maps(two, ntwo);
  ntwo = 4;
  CHECK(hpx_read_columns(&h, &two, &ntwo, &nbad, &err) == ARKCOS_EINVAL &&
            !two && strstr(err.msg, "3 map column(s), 4 requested"),
        "%s", err.msg);
  hpx_header_free(&h);
  CHECK(!h.path && !h.cols, "header not cleared");

  double **back = NULL;
  int ncols = 0;
  CHECK(hpx_read_maps(path, &back, &ncols, &info, &err) == 0, "%s", err.msg);
  CHECK(ncols == 3, "read %d columns", ncols);
  int64_t ndiff = 0;
  for (int c = 0; c < ncols; c++)
    for (int64_t p = 0; p < npix; p++) ndiff += back[c][p] != m[c][p];
  CHECK(ndiff == 0, "%lld values differ", (long long)ndiff);
  hpx_free_maps(back, ncols);

  /* Asking for more columns than there are is the caller's error. */
  ncols = 4;
  back = NULL;
  CHECK(hpx_read_maps(path, &back, &ncols, &info, &err) == ARKCOS_EINVAL &&
            strstr(err.msg, "iqu.fits") && back == NULL,
        "4 of 3 columns: %s", err.msg);
  /* Default names are healpy's. */
  CHECK(hpx_write_maps(path, (const double *const *)m, 3, nside, 0, 0, 1,
                       &err) == 0, "%s", err.msg);
  CHECK(hpx_read_header(path, &h, &err) == 0 && h.ncols == 3, "%s", err.msg);
  CHECK(h.cols && !strcmp(h.cols[1].name, "Q_POLARISATION"), "name %s",
        h.cols ? h.cols[1].name : "?");
  hpx_header_free(&h);
  for (int c = 0; c < 3; c++) free(m[c]);
}

TEST_GROUP(bad_pixels) {
  const int64_t nside = 4, npix = 12 * nside * nside;
  for (int f32 = 0; f32 <= 1; f32++)
    for (int nested = 0; nested <= 1; nested++) {
      double *m = make_map(nside, 1);
      m[5] = HPX_UNSEEN;
      m[77] = NAN;
      m[npix - 1] = HPX_UNSEEN;
      const char *path = tpath("bad.fits");
      arkcos_error err = {0};
      CHECK(hpx_write_maps(path, (const double *const *)&m, 1, nside, nested,
                           f32, 1, &err) == 0, "%s", err.msg);
      double *back = NULL;
      hpx_map_info info;
      CHECK(hpx_read_map(path, &back, &info, &err) == 0, "%s", err.msg);
      if (!back) continue;
      CHECK(info.nbad == 3, "f32 %d nested %d: nbad %lld, expected 3", f32,
            nested, (long long)info.nbad);
      CHECK(back[5] == 0 && back[77] == 0 && back[npix - 1] == 0 &&
                back[6] == m[6],
            "bad pixels not zeroed: %g %g %g", back[5], back[77],
            back[npix - 1]);
      free(back);
      free(m);
    }
}

/* A partial-sky table as healpy writes it with partial=True. */
TEST_GROUP(partial_sky) {
  const char *path = tpath("partial.fits");
  unlink(path);
  fitsfile *fp;
  int status = 0;
  char *ttype[] = {"PIXEL", "SIGNAL"}, *tform[] = {"1J", "1D"},
       *tunit[] = {"", ""};
  fits_create_diskfile(&fp, path, &status);
  fits_create_tbl(fp, BINARY_TBL, 3, 2, ttype, tform, tunit, "xtension",
                  &status);
  long long nside = 2;
  fits_write_key(fp, TSTRING, "PIXTYPE", "HEALPIX", NULL, &status);
  fits_write_key(fp, TSTRING, "ORDERING", "NESTED", NULL, &status);
  fits_write_key(fp, TLONGLONG, "NSIDE", &nside, NULL, &status);
  fits_write_key(fp, TSTRING, "INDXSCHM", "EXPLICIT", NULL, &status);
  fits_write_key(fp, TSTRING, "OBJECT", "PARTIAL", NULL, &status);
  int pix[3] = {0, 7, 47};
  double val[3] = {1.5, 2.5, 3.5};
  fits_write_col(fp, TINT, 1, 1, 1, 3, pix, &status);
  fits_write_col(fp, TDOUBLE, 2, 1, 1, 3, val, &status);
  fits_close_file(fp, &status);
  CHECK(status == 0, "CFITSIO status %d writing the fixture", status);

  double *m = NULL;
  hpx_map_info info;
  arkcos_error err = {0};
  CHECK(hpx_read_map(path, &m, &info, &err) == 0, "%s", err.msg);
  if (!m) return;
  CHECK(info.nbad == 48 - 3, "nbad %lld, expected 45", (long long)info.nbad);
  double sum = 0;
  for (int p = 0; p < 48; p++) sum += m[p];
  CHECK(sum == 7.5, "sum %g", sum);
  for (int i = 0; i < 3; i++) {
    int64_t r = arkcos_healpix_nest2ring(2, pix[i]);
    CHECK(m[r] == val[i], "pixel %d (ring %lld) = %g", pix[i], (long long)r,
          m[r]);
  }
  free(m);
}

/* A partial-sky table of nside 4 listing pix[0..n) (in the file's
 * ORDERING) with values val. */
static void write_partial(const char *path, int nested, const long long *pix, const double *val, long n) {
  fitsfile *fp;
  int status = 0;
  char *ttype[] = {"PIXEL", "T"}, *tform[] = {"1K", "1D"}, *tunit[] = {"", ""};
  long long nside = 4;
  unlink(path);
  fits_create_diskfile(&fp, path, &status);
  fits_create_tbl(fp, BINARY_TBL, n, 2, ttype, tform, tunit, "xtension", &status);
  fits_write_key(fp, TSTRING, "PIXTYPE", "HEALPIX", NULL, &status);
  fits_write_key(fp, TSTRING, "ORDERING", nested ? "NESTED" : "RING", NULL, &status);
  fits_write_key(fp, TLONGLONG, "NSIDE", &nside, NULL, &status);
  fits_write_key(fp, TSTRING, "INDXSCHM", "EXPLICIT", NULL, &status);
  fits_write_key(fp, TSTRING, "OBJECT", "PARTIAL", NULL, &status);
  fits_write_col(fp, TLONGLONG, 1, 1, 1, n, (void *)pix, &status);
  fits_write_col(fp, TDOUBLE, 2, 1, 1, n, (void *)val, &status);
  fits_close_file(fp, &status);
  if (status) fprintf(stderr, "fixture %s: CFITSIO status %d\n", path, status);
}

/* hpx_read_column_runs of a partial-sky table (RING and NESTED, pixels in
 * a shuffled order, some unlisted, UNSEEN and NaN among the values) against
 * the whole-map read at the same pixels, bit for bit, and its nbad the
 * missing pixels of the runs; a pixel listed twice or out of range: the
 * whole-map reader's message from every set of runs that holds it, runs
 * that do not hold a pixel listed twice read. */
TEST_GROUP(partial_runs) {
  enum { NPIX = 192, N = 150 };
  long long perm[NPIX], pix[N];
  double val[N];
  for (int i = 0; i < NPIX; i++) perm[i] = i;
  unsigned u = 12345;
  for (int i = NPIX - 1; i > 0; i--) { /* a fixed shuffle */
    u = u * 1103515245u + 12345u;
    const int j = (int)((u >> 8) % (unsigned)(i + 1));
    long long t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int i = 0; i < N; i++) {
    pix[i] = perm[i];
    val[i] = i % 17 == 3 ? HPX_UNSEEN : i % 29 == 5 ? NAN : 0.5 * i - 20;
  }
  const int64_t runs[][6] = {{0, 20, 50, 51, 100, 192}, {0, 192, 0, 0, 0, 0}, {7, 9, 180, 181, 0, 0}};
  const int nruns[] = {3, 1, 2};
  for (int nested = 0; nested < 2; nested++) {
    const char *path = tpath("partial_runs.fits");
    write_partial(path, nested, pix, val, N);
    hpx_header h;
    arkcos_error err = {0};
    if (hpx_read_header(path, &h, &err)) {
      CHECK(0, "%s", err.msg);
      continue;
    }
    double **maps = NULL;
    int ncols = 1;
    int64_t nbad = 0;
    CHECK(hpx_read_columns_missing(&h, &maps, &ncols, &nbad, &err) == 0, "%s", err.msg);
    for (int k = 0; maps && k < 3; k++) {
      double dst[NPIX];
      int64_t nb = -1, len = 0, want = 0;
      CHECK(hpx_read_column_runs(&h, 0, runs[k], nruns[k], dst, &nb, &err) == 0, "%s", err.msg);
      for (int s = 0; s < nruns[k]; s++)
        for (int64_t p = runs[k][2 * s]; p < runs[k][2 * s + 1]; p++, len++) {
          want += isnan(maps[0][p]);
          CHECK(memcmp(&dst[len], &maps[0][p], sizeof *dst) == 0, "nested %d runs %d: pixel %lld = %g, whole %g",
                nested, k, (long long)p, dst[len], maps[0][p]);
        }
      CHECK(nb == want, "nested %d runs %d: nbad %lld, want %lld", nested, k, (long long)nb, (long long)want);
      if (k == 1) CHECK(nb == nbad, "whole sphere: nbad %lld, whole map %lld", (long long)nb, (long long)nbad);
    }
    hpx_free_maps(maps, ncols);
    hpx_header_free(&h);
  }
  /* defects: rows 41 and 121 list one pixel; row 91 a pixel outside */
  for (int defect = 0; defect < 2; defect++) {
    const char *path = tpath("partial_bad.fits");
    long long bad[N];
    memcpy(bad, pix, sizeof bad);
    if (defect == 0) bad[120] = bad[40];
    else bad[90] = NPIX + 3;
    write_partial(path, 0, bad, val, N);
    hpx_header h;
    arkcos_error e1 = {0}, e2 = {0};
    if (hpx_read_header(path, &h, &e1)) {
      CHECK(0, "%s", e1.msg);
      continue;
    }
    double **maps = NULL, dst[NPIX];
    int ncols = 1;
    int64_t nbad = 0, nb = 0;
    CHECK(hpx_read_columns_missing(&h, &maps, &ncols, &nbad, &e1) == ARKCOS_EINVAL, "defect %d read whole", defect);
    const int64_t at[2] = {bad[40], bad[40] + 1}, all[2] = {0, NPIX};
    CHECK(hpx_read_column_runs(&h, 0, defect ? all : at, 1, dst, &nb, &e2) == ARKCOS_EINVAL, "defect %d read by runs",
          defect);
    CHECK(!strcmp(e1.msg, e2.msg), "defect %d: '%s' by runs, '%s' whole", defect, e2.msg, e1.msg);
    CHECK(strstr(e1.msg, defect ? "row 91 lists pixel 195" : "rows 41 and 121") != NULL, "defect %d: %s", defect,
          e1.msg);
    if (defect == 0) { /* runs without the pixel listed twice: read */
      const int64_t other[2] = {bad[40] + 1, NPIX};
      CHECK(hpx_read_column_runs(&h, 0, other, 1, dst, &nb, &e2) == 0, "runs without the pixel: %s", e2.msg);
    }
    hpx_free_maps(maps, ncols);
    hpx_header_free(&h);
  }
}

/* Writes a HEALPix-like table with chosen defects using CFITSIO directly. */
static void write_fixture(const char *path, long long nrows, const char *nside,
                          const char *ordering, const char *pixtype) {
  fitsfile *fp;
  int status = 0;
  char *ttype[] = {"T"}, *tform[] = {"1D"}, *tunit[] = {""};
  unlink(path);
  fits_create_diskfile(&fp, path, &status);
  fits_create_tbl(fp, BINARY_TBL, nrows, 1, ttype, tform, tunit, "x", &status);
  if (pixtype) fits_write_key(fp, TSTRING, "PIXTYPE", (void *)pixtype, NULL, &status);
  if (ordering) fits_write_key(fp, TSTRING, "ORDERING", (void *)ordering, NULL, &status);
  if (nside) {
    long long v;
    if (sscanf(nside, "%lld", &v) == 1)
      fits_write_key(fp, TLONGLONG, "NSIDE", &v, NULL, &status);
    else
      fits_write_key(fp, TSTRING, "NSIDE", (void *)nside, NULL, &status);
  }
  double *zero = calloc((size_t)nrows, sizeof *zero);
  fits_write_col(fp, TDOUBLE, 1, 1, 1, nrows, zero, &status);
  free(zero);
  fits_close_file(fp, &status);
  if (status) fprintf(stderr, "fixture %s: CFITSIO status %d\n", path, status);
}

TEST_GROUP(read_errors) {
  struct {
    const char *name, *expect;
    long long nrows;
    const char *nside, *ordering, *pixtype;
  } cases[] = {
      {"nonside.fits", "NSIDE", 192, NULL, "RING", "HEALPIX"},
      {"nside0.fits", "NSIDE = 0", 192, "0", "RING", "HEALPIX"},
      {"nsideneg.fits", "NSIDE = -4", 192, "-4", "RING", "HEALPIX"},
      {"nsidestr.fits", "NSIDE", 192, "four", "RING", "HEALPIX"},
      {"badlen.fits", "12 nside^2", 190, "4", "RING", "HEALPIX"},
      {"badorder.fits", "ORDERING", 192, "4", "XYZ", "HEALPIX"},
      {"nest3.fits", "power-of-two", 108, "3", "NESTED", "HEALPIX"},
      {"notpix.fits", "not a HEALPix map", 192, NULL, "RING", "GRID"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *path = tpath(cases[i].name);
    write_fixture(path, cases[i].nrows, cases[i].nside, cases[i].ordering,
                  cases[i].pixtype);
    double *m = NULL;
    hpx_map_info info;
    arkcos_error err = {0};
    int rc = hpx_read_map(path, &m, &info, &err);
    CHECK(rc == ARKCOS_EINVAL && strstr(err.msg, cases[i].name) &&
              strstr(err.msg, cases[i].expect) && !m,
          "%s: rc %d, message '%s' (expected '%s')", cases[i].name, rc,
          err.msg, cases[i].expect);
    free(m);
  }
  /* No ORDERING: RING, as healpy assumes. */
  const char *path = tpath("noorder.fits");
  write_fixture(path, 192, "4", NULL, "HEALPIX");
  hpx_header h;
  arkcos_error err = {0};
  CHECK(hpx_read_header(path, &h, &err) == 0 && !h.nested, "%s", err.msg);
  hpx_header_free(&h);

  /* Not a file, not FITS, not there. */
  const char *text = tpath("text.fits");
  FILE *f = fopen(text, "w");
  fputs("SIMPLE? no, just text\n", f);
  fclose(f);
  struct {
    const char *path, *expect;
  } files[] = {{tpath("missing.fits"), "missing.fits"},
               {text, "not a FITS file"},
               {tmpdir, "directory"}};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    double *m = NULL;
    hpx_map_info info;
    int rc = hpx_read_map(files[i].path, &m, &info, &err);
    CHECK(rc == ARKCOS_EINVAL && strstr(err.msg, files[i].expect),
          "%s: rc %d '%s'", files[i].path, rc, err.msg);
    /* The header reader fails the same way and leaves nothing to free. */
    rc = hpx_read_header(files[i].path, &h, &err);
    CHECK(rc == ARKCOS_EINVAL && strstr(err.msg, files[i].expect) && !h.path &&
              !h.cols,
          "header %s: rc %d '%s'", files[i].path, rc, err.msg);
  }
}

TEST_GROUP(write_errors) {
  double *m = make_map(2, 1);
  const double *const *mp = (const double *const *)&m;
  const char *path = tpath("exists.fits");
  arkcos_error err = {0};
  CHECK(hpx_write_maps(path, mp, 1, 2, 0, 0, 1, &err) == 0, "%s", err.msg);
  struct stat before, after;
  stat(path, &before);
  int rc = hpx_write_maps(path, mp, 1, 2, 0, 1, 0, &err);
  stat(path, &after);
  CHECK(rc == ARKCOS_EINVAL && strstr(err.msg, "exists") &&
            before.st_ino == after.st_ino && before.st_size == after.st_size,
        "no --force: rc %d '%s'", rc, err.msg);
  /* With force the file is replaced (a new inode: renamed into place). */
  CHECK(hpx_write_maps(path, mp, 1, 2, 0, 1, 1, &err) == 0, "%s", err.msg);
  hpx_header h;
  CHECK(hpx_read_header(path, &h, &err) == 0 && h.is_float32 == 1,
        "forced overwrite not float32: %s", err.msg);
  hpx_header_free(&h);

  rc = hpx_write_maps(tpath("nodir/x.fits"), mp, 1, 2, 0, 0, 1, &err);
  CHECK(rc == ARKCOS_EIO && strstr(err.msg, "nodir/x.fits"), "rc %d '%s'", rc,
        err.msg);
  rc = hpx_write_maps(tpath("n3.fits"), mp, 1, 3, 1, 0, 1, &err);
  CHECK(rc == ARKCOS_EINVAL && !exists(tpath("n3.fits")), "rc %d '%s'", rc,
        err.msg);
  rc = hpx_write_maps(tpath("n0.fits"), mp, 1, 0, 0, 0, 1, &err);
  CHECK(rc == ARKCOS_EINVAL && !exists(tpath("n0.fits")), "rc %d '%s'", rc,
        err.msg);
  /* float32 overflow is a CFITSIO conversion error: nothing must remain. */
  m[3] = 1e300;
  rc = hpx_write_maps(tpath("ovf.fits"), mp, 1, 2, 0, 1, 1, &err);
  CHECK(rc != 0 && !exists(tpath("ovf.fits")) && strstr(err.msg, "ovf.fits"),
        "overflow: rc %d '%s'", rc, err.msg);
  CHECK(count_tmp_files() == 0, "temporary files left behind");
  free(m);
}

static int same_bytes(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  int same = fa && fb;
  while (same) {
    const int ca = fgetc(fa), cb = fgetc(fb);
    if (ca != cb) same = 0;
    if (ca == EOF || cb == EOF) break;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

/* Reads every map column of path with ARKCOS_FITS_RAW=raw ("0": CFITSIO's
 * column reads; NULL: the default, the data unit read in row chunks) */
static int read_with(const char *path, const char *raw, double ***maps, int *ncols, int64_t *nbad,
                     arkcos_error *err) {
  if (raw) setenv("ARKCOS_FITS_RAW", raw, 1);
  else unsetenv("ARKCOS_FITS_RAW");
  hpx_header h;
  int rc = hpx_read_header(path, &h, err);
  *ncols = 0;
  *maps = NULL;
  if (!rc) rc = hpx_read_columns_missing(&h, maps, ncols, nbad, err);
  hpx_header_free(&h);
  unsetenv("ARKCOS_FITS_RAW");
  return rc;
}

/* Whether the two reads of path (CFITSIO's, the default) agree bit for bit */
static int reads_agree(const char *path, int want_ncols, const char *what) {
  double **a = NULL, **b = NULL;
  int na = 0, nb = 0;
  int64_t bad_a = -1, bad_b = -2;
  arkcos_error ea = {0}, eb = {0};
  const int ra = read_with(path, "0", &a, &na, &bad_a, &ea), rb = read_with(path, NULL, &b, &nb, &bad_b, &eb);
  hpx_header h;
  arkcos_error e = {0};
  int64_t npix = hpx_read_header(path, &h, &e) ? 0 : h.npix;
  hpx_header_free(&h);
  int same = ra == 0 && rb == 0 && na == want_ncols && nb == na && bad_a == bad_b && npix > 0;
  for (int c = 0; same && c < na; c++) same = !memcmp(a[c], b[c], sizeof(double) * (size_t)npix);
  CHECK(same, "%s: reads differ (rc %d %d, columns %d %d, bad %lld %lld; %s %s)", what, ra, rb, na, nb,
        (long long)bad_a, (long long)bad_b, ea.msg, eb.msg);
  /* runs (the MPI ranks' reads): every column at three runs, both ways,
   * against each other and the whole map */
  const int64_t want_seg[6] = {0, npix / 3 + 1, npix / 2, npix / 2 + 17, npix - 5, npix};
  int64_t seg[6], len = 0;
  int nseg = 0; /* the runs increasing, apart and in the map: fewer for small maps */
  for (int k = 0; k < 3; k++)
    if (want_seg[2 * k] < want_seg[2 * k + 1] && want_seg[2 * k + 1] <= npix &&
        (!nseg || want_seg[2 * k] > seg[2 * nseg - 1])) {
      seg[2 * nseg] = want_seg[2 * k], seg[2 * nseg + 1] = want_seg[2 * k + 1];
      len += seg[2 * nseg + 1] - seg[2 * nseg];
      nseg++;
    }
  double *ra_ = malloc(sizeof(double) * (size_t)(len + 1)), *rb_ = malloc(sizeof(double) * (size_t)(len + 1));
  for (int c = 0; same && c < na; c++) {
    int64_t nba = -1, nbb = -2;
    if (hpx_read_header(path, &h, &e)) break;
    setenv("ARKCOS_FITS_RAW", "0", 1);
    const int r1 = hpx_read_column_runs(&h, c, seg, nseg, ra_, &nba, &ea);
    unsetenv("ARKCOS_FITS_RAW");
    const int r2 = hpx_read_column_runs(&h, c, seg, nseg, rb_, &nbb, &eb);
    hpx_header_free(&h);
    int64_t at = 0, whole = 1;
    for (int k = 0; k < nseg; k++)
      for (int64_t p = seg[2 * k]; p < seg[2 * k + 1]; p++, at++)
        whole &= !memcmp(&rb_[at], &b[c][p], sizeof(double));
    same = r1 == 0 && r2 == 0 && nba == nbb && !memcmp(ra_, rb_, sizeof(double) * (size_t)len) && whole;
    CHECK(same, "%s: column %d read by runs: rc %d %d, bad %lld %lld, as the whole map %lld (%s %s)", what, c + 1,
          r1, r2, (long long)nba, (long long)nbb, (long long)whole, ea.msg, eb.msg);
  }
  /* an empty run among them reads nothing (it once took the ring of pixel -1) */
  if (same && nseg > 0 && !hpx_read_header(path, &h, &e)) {
    int64_t seg2[8], nb2 = -1;
    memcpy(seg2, seg, sizeof(int64_t) * 2 * (size_t)nseg);
    seg2[2 * nseg] = seg2[2 * nseg + 1] = npix;
    const int r3 = hpx_read_column_runs(&h, 0, seg2, nseg + 1, ra_, &nb2, &ea);
    CHECK(r3 == 0 && !memcmp(ra_, b[0], sizeof(double) * (size_t)seg[1]), "%s: runs with an empty one: rc %d %s",
          what, r3, ea.msg);
    hpx_header_free(&h);
  }
  free(ra_);
  free(rb_);
  hpx_free_maps(a, na);
  hpx_free_maps(b, nb);
  return same;
}

/* The data unit written and read in row chunks (the default) against
 * CFITSIO's column calls (ARKCOS_FITS_RAW=0): files byte for byte and maps
 * bit for bit over layouts (one value or 1024 a row, RING and NESTED,
 * float32 and float64, one to six columns), missing values (NaN, UNSEEN,
 * inf) and denormals; tables only CFITSIO reads (integer and scaled
 * columns, columns of different lengths, a gzip-compressed file) through
 * CFITSIO; a truncated file refused with its name. */
TEST_GROUP(raw_io) {
  const int64_t nsides[] = {1, 3, 8, 16, 64};
  const int ncols[] = {1, 3, 6};
  for (size_t i = 0; i < sizeof nsides / sizeof nsides[0]; i++)
    for (int nested = 0; nested <= 1; nested++)
      for (int f32 = 0; f32 <= 1; f32++)
        for (size_t k = 0; k < sizeof ncols / sizeof ncols[0]; k++) {
          const int64_t nside = nsides[i], npix = 12 * nside * nside;
          if (nested && nside == 3) continue;
          double *m[6];
          for (int c = 0; c < ncols[k]; c++) {
            m[c] = make_map(nside, c + 1);
            m[c][npix / 2] = NAN;
            m[c][npix - 1] = HPX_UNSEEN;
            if (npix > 8) m[c][3] = INFINITY, m[c][5] = 1e-310, m[c][7] = -0.0;
          }
          char what[96];
          snprintf(what, sizeof what, "nside %lld nested %d f32 %d, %d column(s)", (long long)nside, nested, f32,
                   ncols[k]);
          arkcos_error err = {0};
          setenv("ARKCOS_FITS_RAW", "0", 1);
          int rc = hpx_write_maps(tpath("cf.fits"), (const double *const *)m, ncols[k], nside, nested, f32, 1, &err);
          unsetenv("ARKCOS_FITS_RAW");
          rc = rc ? rc : hpx_write_maps(tpath("raw.fits"), (const double *const *)m, ncols[k], nside, nested, f32, 1, &err);
          CHECK(rc == 0, "%s: %s", what, err.msg);
          CHECK(same_bytes(tpath("cf.fits"), tpath("raw.fits")), "%s: the files differ", what);
          reads_agree(tpath("raw.fits"), ncols[k], what);
          for (int c = 0; c < ncols[k]; c++) free(m[c]);
        }
  /* tables of other layouts: 1D rows (Fortran tools), mixed E and D, an
   * integer column, a scaled column, a column of a different length */
  static const struct {
    const char *name, *tform[2], *scale;
    int ok;
  } t[] = {{"rows1.fits", {"1D", "1D"}, NULL, 1}, {"mixed.fits", {"1024E", "1024D"}, NULL, 1},
           {"int.fits", {"1024D", "1024J"}, NULL, 1}, {"scaled.fits", {"1024E", "1024E"}, "2.5", 1},
           {"lengths.fits", {"1024E", "512E"}, NULL, 0}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    const char *path = tpath(t[i].name);
    const long long nside = 32, npix = 12 * nside * nside;
    const long rep = atol(t[i].tform[0]);
    unlink(path);
    fitsfile *fp;
    int status = 0;
    char *ttype[] = {"A", "B"}, *tform[] = {(char *)t[i].tform[0], (char *)t[i].tform[1]}, *tunit[] = {"", ""};
    fits_create_diskfile(&fp, path, &status);
    fits_create_tbl(fp, BINARY_TBL, npix / rep, 2, ttype, tform, tunit, "x", &status);
    fits_write_key(fp, TSTRING, "PIXTYPE", "HEALPIX", NULL, &status);
    fits_write_key(fp, TSTRING, "ORDERING", "NESTED", NULL, &status);
    fits_write_key(fp, TLONGLONG, "NSIDE", (void *)&nside, NULL, &status);
    if (t[i].scale) {
      double sc = atof(t[i].scale), zero = 1.0;
      fits_write_key(fp, TDOUBLE, "TSCAL2", &sc, NULL, &status);
      fits_write_key(fp, TDOUBLE, "TZERO2", &zero, NULL, &status);
      fits_set_tscale(fp, 2, sc, zero, &status);
    }
    double *v = make_map(nside, 4);
    v[9] = NAN;
    for (int c = 1; c <= 2; c++) {
      long long n = c == 2 && rep == 1024 && atol(t[i].tform[1]) == 512 ? npix / 2 : npix;
      fits_write_col(fp, TDOUBLE, c, 1, 1, n, v, &status);
    }
    fits_close_file(fp, &status);
    free(v);
    CHECK(status == 0, "%s: CFITSIO status %d writing it", t[i].name, status);
    if (t[i].ok) reads_agree(path, 2, t[i].name);
  }
  /* gzip-compressed: CFITSIO inflates it, the reads agree */
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "gzip -c '%s' > '%s'", tpath("mixed.fits"), tpath("mixed.fits.gz"));
  if (system(cmd) == 0) reads_agree(tpath("mixed.fits.gz"), 2, "mixed.fits.gz");
  /* a truncated file: refused, named */
  snprintf(cmd, sizeof cmd, "head -c 40000 '%s' > '%s'", tpath("mixed.fits"), tpath("cut.fits"));
  if (system(cmd) == 0) {
    double **a = NULL;
    int na = 0;
    int64_t nbad = 0;
    arkcos_error err = {0};
    const int rc = read_with(tpath("cut.fits"), NULL, &a, &na, &nbad, &err);
    CHECK(rc == ARKCOS_EINVAL && strstr(err.msg, "cut.fits") && strstr(err.msg, "truncated") && !a,
          "truncated: rc %d '%s'", rc, err.msg);
    hpx_header h;
    double v[8];
    const int64_t run[2] = {12 * 32 * 32 - 8, 12 * 32 * 32};
    if (hpx_read_header(tpath("cut.fits"), &h, &err) == 0) {
      err = (arkcos_error){0};
      const int rc2 = hpx_read_column_runs(&h, 1, run, 1, v, &nbad, &err);
      CHECK(rc2 == ARKCOS_EINVAL && strstr(err.msg, "cut.fits") && strstr(err.msg, "truncated"),
            "truncated, by runs: rc %d '%s'", rc2, err.msg);
      hpx_header_free(&h);
    }
  }
  CHECK(count_tmp_files() == 0, "temporary files left behind");
}

static void cleanup(void) {
  DIR *d = opendir(tmpdir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') unlink(tpath(e->d_name));
  closedir(d);
  rmdir(tmpdir);
}

static void setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/arkcos-test-fits-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    exit(2);
  }
  atexit(cleanup);
}

/* The test groups run from TEST_MAIN; a constructor makes the scratch
 * folder first (testlib.h owns main). */
__attribute__((constructor)) static void init(void) { setup(); }

TEST_MAIN(TG(roundtrip), TG(header), TG(columns), TG(bad_pixels),
          TG(partial_sky), TG(partial_runs), TG(read_errors), TG(write_errors), TG(raw_io))
