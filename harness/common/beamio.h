/*
 * beamio.h -- beam transfer functions B_l from files: a FITS binary table as
 * healpy (write_cl, gauss_beam saved) and the Planck RIMO write them (one row
 * per multipole from l = 0; the first column, or one named or numbered with
 * `column`), or a text file of lines `l B_l` (l = 0, 1, 2, ... in order) or
 * of B_l alone, '#' comments allowed. Errors name the file, and the line,
 * column or keyword.
 */
#ifndef ARKCOS_HARNESS_BEAMIO_H
#define ARKCOS_HARNESS_BEAMIO_H

#include "arkcos/arkcos.h"

/* *bl (malloc'ed, *lmax + 1 values). column: NULL or "" for the first, a
 * column name (case-insensitive) or a 1-based number; text files have one
 * B_l column and accept only NULL, "", "1" or "2" (the B_l of `l B_l`). */
int beam_read(const char *path, const char *column, double **bl, int *lmax, arkcos_error *err);

#endif
