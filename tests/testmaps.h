/*
 * testmaps.h -- helpers shared by the engine tests and the GPU check:
 * a reproducible random stream, random maps, fractional RMS over rings, and
 * the rings whose kernel disc lies in the equatorial belt.
 */
#ifndef ARKCOS_TESTMAPS_H
#define ARKCOS_TESTMAPS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "arkcos/arkcos.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static uint64_t rng_state = 12345;
static inline double urand(void) { /* splitmix64 -> [0, 1) */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/* n values uniform in [-1, 1); NULL if out of memory */
static inline double *random_map(int64_t n) {
  double *m = malloc(sizeof(double) * (size_t)n);
  if (!m) return NULL;
  for (int64_t i = 0; i < n; i++) m[i] = 2 * urand() - 1;
  return m;
}

/* rms(a - b) over the rings with mask[ring] (all if NULL), relative to the
 * rms of b over the whole map */
static inline double frac_rms(const arkcos_geometry *g, const double *a, const double *b, const int *mask) {
  double d = 0, r = 0;
  int64_t nd = 0;
  for (int i = 0; i < g->nrings; i++)
    for (int64_t q = 0; q < g->rings[i].nph; q++) {
      int64_t p = g->rings[i].ofs + q;
      r += b[p] * b[p];
      if (!mask || mask[i]) {
        d += (a[p] - b[p]) * (a[p] - b[p]);
        nd++;
      }
    }
  return sqrt(d / (double)(nd ? nd : 1)) / sqrt(r / (double)g->npix);
}

/* rings whose whole kernel disc lies in the equatorial belt |z| <= 2/3 */
static inline int *belt_mask(const arkcos_geometry *g, double cutoff) {
  int *m = calloc((size_t)g->nrings, sizeof(int));
  double tn = acos(2.0 / 3.0), ts = M_PI - tn;
  for (int i = 0; m && i < g->nrings; i++)
    m[i] = g->rings[i].theta - cutoff > tn + 1e-9 && g->rings[i].theta + cutoff < ts - 1e-9;
  return m;
}

#endif
