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

/* Reads columns [0, ncols) of a HEALPix map (all columns if *ncols <= 0;
 * on return *ncols is the number read) into maps[c] (malloc'd, RING order).
 * UNSEEN and NaN pixels become 0 and are counted in info->nbad. Errors
 * (EIO/EINVAL) name the file and the problem: missing, not FITS, not a
 * HEALPix map, length not 12 nside^2, unknown ORDERING. */
int hpx_read_maps(const char *path, double ***maps, int *ncols,
                  hpx_map_info *info, arkcos_error *err);
/* Convenience: first column only. */
int hpx_read_map(const char *path, double **map, hpx_map_info *info,
                 arkcos_error *err);
void hpx_free_maps(double **maps, int ncols);

/* Column name and unit as stored in TTYPEn / TUNITn ("" when absent). */
#define HPX_NAME_LEN 72
typedef struct hpx_column {
  char name[HPX_NAME_LEN];
  char unit[HPX_NAME_LEN];
} hpx_column;

/* Header only (no pixel data read, so cheap for large maps): validates the
 * file exactly as hpx_read_maps does and fills info (nbad is 0). cols (may be
 * NULL) receives the names and units of the first maxcols map columns;
 * coordsys (may be NULL, HPX_NAME_LEN bytes) the COORDSYS value or "". Lets
 * a command check every input before it starts the expensive work. */
int hpx_read_info(const char *path, hpx_map_info *info, hpx_column *cols,
                  int maxcols, char *coordsys, arkcos_error *err);

/* Writes nmaps RING-ordered maps as one HEALPix table (float64 columns,
 * float32 if as_float32), in NESTED order if nested. Atomic: written to a
 * temporary file in the same folder and renamed; refuses to replace an
 * existing path unless force. */
int hpx_write_maps(const char *path, const double *const *maps, int nmaps,
                   int64_t nside, int nested, int as_float32, int force,
                   arkcos_error *err);
/* As hpx_write_maps, with column names and units (cols may be NULL: healpy's
 * standard names TEMPERATURE, Q_POLARISATION, ... and no units) and a
 * COORDSYS value (NULL or "": keyword omitted), so that a smoothed map keeps
 * its input's labels. */
int hpx_write_maps_ex(const char *path, const double *const *maps, int nmaps,
                      int64_t nside, int nested, int as_float32, int force,
                      const hpx_column *cols, const char *coordsys,
                      arkcos_error *err);
#endif
