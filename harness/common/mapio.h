/*
 * mapio.h -- HEALPix maps in FITS files as healpy writes and reads them:
 * a binary-table extension with PIXTYPE = 'HEALPIX', ORDERING = 'RING' or
 * 'NESTED', NSIDE, INDXSCHM = 'IMPLICIT'; float32 or float64 columns, either
 * 1024-element rows or one value per row. Maps in memory are RING ordered.
 */
#ifndef ARKCOS_HARNESS_MAPIO_H
#define ARKCOS_HARNESS_MAPIO_H

#include <stdint.h>

#include "arkcos/arkcos.h"

#define HPX_UNSEEN (-1.6375e30)

typedef struct hpx_map_info {
  int64_t nside;
  int nested;      /* input ORDERING was NESTED (converted to RING on read) */
  int ncols;       /* number of map columns in the table */
  int64_t nbad;    /* UNSEEN or NaN pixels (set to 0) over all columns read */
  int is_float32;  /* first column stored as float32 */
} hpx_map_info;

/* Column name and unit as stored in TTYPEn / TUNITn ("" when absent). */
#define HPX_NAME_LEN 72
typedef struct hpx_column {
  char name[HPX_NAME_LEN];
  char unit[HPX_NAME_LEN];
} hpx_column;

/* Everything the header of a HEALPix FITS file says, read and validated
 * once by hpx_read_header; the pixel reader works from it without parsing
 * the header again. */
typedef struct hpx_header {
  char *path;          /* the file (malloc'd copy) */
  int64_t nside, npix;
  int nested;          /* ORDERING is NESTED (maps are converted to RING) */
  int ncols;           /* map columns */
  int is_float32;      /* first map column stored as float32 */
  hpx_column *cols;    /* ncols names and units (malloc'd) */
  char coordsys[HPX_NAME_LEN]; /* COORDSYS value or "" */
  /* layout of the table */
  int hdu;             /* 1-based HDU of the HEALPix table */
  int explicit_index;  /* partial sky: FITS column 1 lists the pixels */
  int first_col;       /* 1-based FITS column of the first map */
  int64_t nrows;       /* table rows */
  long long nvalues;   /* values per column (rows x repeat) */
} hpx_header;

/* Reads and validates the header of path (no pixel data: cheap for large
 * maps), so that a command can check every input before the expensive work.
 * Errors (EINVAL) name the file and the problem: missing, not FITS, not a
 * HEALPix map, bad NSIDE, length not 12 nside^2, unknown ORDERING. On
 * failure h holds nothing to free. */
int hpx_read_header(const char *path, hpx_header *h, arkcos_error *err);
/* Checks every header of a FITS file for what CFITSIO cannot parse safely
 * (an unquoted TTYPEn, TFIELDS above 999), EINVAL naming the HDU and card; called by
 * hpx_read_header and by every other reader before CFITSIO opens a file. */
int hpx_fits_check_headers(const char *path, arkcos_error *err);
void hpx_header_free(hpx_header *h); /* zeroes h; a zeroed h is a no-op */
/* info as hpx_read_maps fills it for all columns of h (nbad 0). */
void hpx_header_info(const hpx_header *h, hpx_map_info *info);

/* Reads map columns [0, *ncols) of the file h describes (all if *ncols <= 0;
 * on return *ncols is the number read) into maps[c] (malloc'd, RING order).
 * UNSEEN and NaN pixels become 0 and are counted in *nbad. The file is
 * opened again at the table h found; its header is not parsed again. */
int hpx_read_columns(const hpx_header *h, double ***maps, int *ncols,
                     int64_t *nbad, arkcos_error *err);

/* As hpx_read_columns, but UNSEEN and NaN pixels (and the pixels a
 * partial-sky map does not list) become NaN instead of 0, so that the
 * caller can tell missing data from zeros; *nbad counts them. */
int hpx_read_columns_missing(const hpx_header *h, double ***maps, int *ncols,
                             int64_t *nbad, arkcos_error *err);

/* Convenience on top of hpx_read_header and hpx_read_columns: header and columns [0, ncols) of a
 * map (all columns if *ncols <= 0; on return *ncols is the number read),
 * with info->nbad the UNSEEN/NaN count. */
int hpx_read_maps(const char *path, double ***maps, int *ncols,
                  hpx_map_info *info, arkcos_error *err);
/* Convenience: first column only. */
int hpx_read_map(const char *path, double **map, hpx_map_info *info,
                 arkcos_error *err);
void hpx_free_maps(double **maps, int ncols);

/* The name healpy gives column c of a table of nmaps unnamed columns
 * (TEMPERATURE, Q_POLARISATION, ..., COLUMN_<c+1>); buf (len bytes) may
 * receive it. */
const char *hpx_standard_column_name(int nmaps, int c, char *buf, size_t len);

/* Writes nmaps RING-ordered maps as one HEALPix table (float64 columns,
 * float32 if as_float32), in NESTED order if nested. Atomic: written to a
 * temporary file in the same folder and renamed; refuses to replace an
 * existing path unless force. */
int hpx_write_maps(const char *path, const double *const *maps, int nmaps,
                   int64_t nside, int nested, int as_float32, int force,
                   arkcos_error *err);
/* 1 if path ends in .gz (any case): such outputs are refused, since the
 * file written would not be compressed. */
int hpx_compressed_name(const char *path);
/* As hpx_write_maps, with column names and units (cols may be NULL: healpy's
 * standard names TEMPERATURE, Q_POLARISATION, ... and no units) and a
 * COORDSYS value (NULL or "": keyword omitted), so that a smoothed map keeps
 * its input's labels. */
int hpx_write_maps_ex(const char *path, const double *const *maps, int nmaps,
                      int64_t nside, int nested, int as_float32, int force,
                      const hpx_column *cols, const char *coordsys,
                      arkcos_error *err);

/* ---- Band I/O: ranks that each read and write part of a map (MPI,
 * harness/common/hmpi.c). Pixel runs are given as nseg pairs seg[2k], seg[2k+1]:
 * RING pixel indices [a, b), increasing.
 *
 * hpx_read_column_runs: map column c (0-based) at the runs' pixels into
 * dst, the runs back to back; UNSEEN and NaN become NaN, counted in *nbad.
 * A RING file is read at the runs only; in a NESTED file the blocks of
 * 32 x 32 pixels whose rings meet the runs' are walked, and only the
 * stretches holding the runs' pixels are read. Memory: two
 * chunks (16 MB) besides dst. A partial-sky map is read in chunks of
 * the PIXEL column and the value column, all of them (three chunks, 24 MB,
 * and one bit per pixel of the runs besides dst; never the whole index):
 * the rows whose RING pixel is in the runs are stored, the runs' pixels
 * not listed are missing (NaN, counted), as the whole-map reader leaves
 * them. A pixel outside the map, or listed twice within the runs, fails
 * with the whole-map reader's message (a pixel listed twice is looked for
 * again over the whole index then, with one bit per map pixel): runs that
 * cover the sphere together catch every pixel listed twice. */
int hpx_read_column_runs(const hpx_header *h, int c, const int64_t *seg, int nseg, double *dst,
                         int64_t *nbad, arkcos_error *err);
/* Where each pixel of a table made by hpx_band_create lies: byte
 * data + row x row_bytes + column x repeat x esize + element x esize. */
typedef struct hpx_band_layout {
  int64_t nside, npix;
  int nested, nmaps, esize;
  long repeat;
  long long row_bytes, data, size;
} hpx_band_layout;
/* The header once (the table hpx_write_maps_ex writes: same keywords,
 * layout and padding) into a temporary file next to path (tmp, tmplen >=
 * 4096), its size set to the whole file (the data unit zeros until the
 * ranks write). Refuses an existing path unless force. */
int hpx_band_create(const char *path, int nmaps, int64_t nside, int nested, int as_float32, int force,
                    const hpx_column *cols, const char *coordsys, char *tmp, size_t tmplen,
                    hpx_band_layout *L, arkcos_error *err);
/* Column c's values at the runs' pixels, src[lofs[k] + p - a] for pixel p
 * of run k, written in place into tmp (pwrite: other ranks write other
 * pixels at the same time; no FITS block is rewritten whole), converted as
 * CFITSIO converts, then flushed. A value beyond float32's range in a
 * float32 file is refused (EINVAL). */
int hpx_band_write_column(const char *tmp, const char *path, const hpx_band_layout *L, int c,
                          const int64_t *seg, const int64_t *lofs, int nseg, const double *src,
                          arkcos_error *err);
/* Once every rank wrote: flushed and renamed onto path; or removed. */
int hpx_band_commit(const char *tmp, const char *path, arkcos_error *err);
void hpx_band_abort(const char *tmp);
#endif
