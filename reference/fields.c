/*
 * fields.c -- input fields: a CMB-like power spectrum, spectra from text
 * files, Gaussian random a_lm, spectra of a_lm, and point-source maps.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference/reference.h"

#define TWO_PI 6.283185307179586476925286766559

/* A smooth analytic stand-in for the CMB temperature spectrum, in
 * D_l = l (l + 1) C_l / (2 pi) [muK^2]:
 *
 *   D_l = [1000 (1 - s) + s (1800 + 6000 o^1.5 exp(-max(l - 220, 0) / 600))]
 *         * exp(-(l / 1400)^1.6),
 *   s = l^2 / (l^2 + 150^2)                  (onset of the acoustic peaks),
 *   o = (1 + cos(2 pi (l - 220) / 300)) / 2  (peaks at l = 220, 520, 820...).
 *
 * A Sachs-Wolfe plateau of ~1000 muK^2 at low l, a first peak of ~5400 at
 * l = 220, decaying further peaks (~4200 at 520, ~2600 at 820) with troughs
 * between, and a damping tail (D ~ 660 at l = 1500, 355 at 2000, 61 at 3000,
 * 0.06 at 6000). Positive for every l >= 2; C_0 = C_1 = 0.
 * Not a cosmological model: only a realistic shape for accuracy tests. */
void ref_cl_cmb(int lmax, double *cl) {
  for (int l = 0; l <= lmax; l++) {
    if (l < 2) {
      cl[l] = 0.0;
      continue;
    }
    double x = (double)l;
    double s = x * x / (x * x + 150.0 * 150.0);
    double o = 0.5 * (1.0 + cos(TWO_PI * (x - 220.0) / 300.0));
    double decay = exp(-fmax(x - 220.0, 0.0) / 600.0);
    double d = (1000.0 * (1.0 - s) + s * (1800.0 + 6000.0 * pow(o, 1.5) * decay)) *
               exp(-pow(x / 1400.0, 1.6));
    cl[l] = d * TWO_PI / (x * (x + 1.0));
  }
}

/* Parses one number; returns the end pointer or NULL. */
static const char *parse_number(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  if (end == s || errno == ERANGE || !isfinite(*v)) return NULL;
  if (*end && !isspace((unsigned char)*end) && *end != ',') return NULL;
  return end;
}

/* Reads `l C_l` from the start of p (further columns ignored) and checks
 * both values; line number lineno is for messages. */
static int parse_cl_pair(const char *path, long lineno, const char *p,
                         double *lv, double *c, arkcos_error *err) {
  const char *q = parse_number(p, lv);
  if (!q)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s:%ld: l is not a number", path,
                       lineno);
  while (isspace((unsigned char)*q) || *q == ',') q++;
  if (!*q)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s:%ld: expected two columns `l C_l`", path, lineno);
  if (!parse_number(q, c))
    return arkcos_fail(err, ARKCOS_EINVAL, "%s:%ld: C_l is not a number",
                       path, lineno);
  if (*lv < 0 || *lv != floor(*lv) || *lv > 1e9)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "%s:%ld: l = %g is not a non-negative integer", path,
                       lineno, *lv);
  if (*c < 0)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s:%ld: negative C_l = %g", path,
                       lineno, *c);
  return ARKCOS_OK;
}

/* One line of a C_l file: comments and blank lines are skipped, an `l C_l`
 * pair counted in *nvalues and, for l <= lmax, stored in cl (seen marks the
 * l already given). */
static int read_cl_line(const char *path, long lineno, char *line, int lmax,
                        double *cl, unsigned char *seen, long *nvalues,
                        arkcos_error *err) {
  char *hash = strchr(line, '#');
  if (hash) *hash = '\0';
  const char *p = line;
  while (isspace((unsigned char)*p)) p++;
  if (!*p) return ARKCOS_OK;
  double lv = 0.0, c = 0.0;
  int rc = parse_cl_pair(path, lineno, p, &lv, &c, err);
  if (rc) return rc;
  (*nvalues)++;
  if (lv > lmax) return ARKCOS_OK;
  int l = (int)lv;
  if (seen[l])
    return arkcos_fail(err, ARKCOS_EINVAL, "%s:%ld: l = %d appears twice",
                       path, lineno, l);
  seen[l] = 1;
  cl[l] = c;
  return ARKCOS_OK;
}

/* `l C_l` per line; '#' starts a comment; blank lines are skipped; further
 * numeric columns (e.g. EE, BB of a CAMB file) are ignored. l must be a
 * non-negative integer, C_l finite and >= 0, each l at most once. l above
 * lmax is ignored; missing l are 0. */
int ref_cl_read(const char *path, int lmax, double *cl, arkcos_error *err) {
  if (!path || !cl || lmax < 0)
    return arkcos_fail(err, ARKCOS_EINVAL, "spectrum: bad arguments");
  FILE *f = fopen(path, "r");
  if (!f)
    return arkcos_fail(err, ARKCOS_EIO, "%s: cannot open: %s", path,
                       strerror(errno));
  unsigned char *seen = calloc((size_t)lmax + 1, 1);
  if (!seen) {
    fclose(f);
    return arkcos_fail(err, ARKCOS_ENOMEM, "spectrum: out of memory");
  }
  for (int l = 0; l <= lmax; l++) cl[l] = 0.0;
  char *line = NULL;
  size_t cap = 0;
  long lineno = 0, nvalues = 0;
  int rc = ARKCOS_OK;
  while (!rc && getline(&line, &cap, f) >= 0)
    rc = read_cl_line(path, ++lineno, line, lmax, cl, seen, &nvalues, err);
  if (!rc && ferror(f))
    rc = arkcos_fail(err, ARKCOS_EIO, "%s: read error", path);
  if (!rc && nvalues == 0)
    rc = arkcos_fail(err, ARKCOS_EINVAL, "%s: no `l C_l` lines", path);
  free(line);
  free(seen);
  fclose(f);
  return rc;
}

/* xoshiro256** seeded by splitmix64: small, fast, reproducible everywhere. */
typedef struct {
  uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

/* Uniform in (0, 1]: never 0, so log() below is finite. */
static double rng_uniform(rng *r) {
  return ((double)(rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

/* Two independent standard normals (Box-Muller). */
static void rng_normal2(rng *r, double *a, double *b) {
  double u = rng_uniform(r), v = rng_uniform(r);
  double rad = sqrt(-2.0 * log(u));
  *a = rad * cos(TWO_PI * v);
  *b = rad * sin(TWO_PI * v);
}

/* <|a_lm|^2> = C_l: a_l0 real with variance C_l, real and imaginary parts of
 * m > 0 each with variance C_l / 2. Drawn in storage order (m outer, l
 * inner), two normals per coefficient, so a given seed gives the same a_lm
 * on every machine. */
void ref_alm_random(const double *cl, int lmax, uint64_t seed,
                    double complex *alm) {
  rng r;
  rng_seed(&r, seed);
  for (int m = 0; m <= lmax; m++)
    for (int l = m; l <= lmax; l++) {
      double a, b;
      rng_normal2(&r, &a, &b);
      double c = cl[l] > 0 ? cl[l] : 0.0;
      int64_t i = ref_alm_index(lmax, l, m);
      if (m == 0)
        alm[i] = sqrt(c) * a;
      else
        alm[i] = sqrt(0.5 * c) * (a + I * b);
    }
}

void ref_alm2cl(int lmax, const double complex *alm1,
                const double complex *alm2, double *cl) {
  for (int l = 0; l <= lmax; l++) {
    double sum = creal(alm1[ref_alm_index(lmax, l, 0)] *
                       conj(alm2[ref_alm_index(lmax, l, 0)]));
    for (int m = 1; m <= l; m++) {
      int64_t i = ref_alm_index(lmax, l, m);
      sum += 2.0 * creal(alm1[i] * conj(alm2[i]));
    }
    cl[l] = sum / (2.0 * l + 1.0);
  }
}

int ref_point_sources(const arkcos_geometry *g, const ref_source *src, int n,
                      double *map, arkcos_error *err) {
  if (!g || !map || (n > 0 && !src) || n < 0)
    return arkcos_fail(err, ARKCOS_EINVAL, "point sources: bad arguments");
  if (g->kind != ARKCOS_GEOM_HEALPIX || g->nside < 1)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "point sources: HEALPix geometries only");
  for (int i = 0; i < n; i++)
    if (!(src[i].theta >= 0 && src[i].theta <= M_PI) ||
        !isfinite(src[i].phi) || !isfinite(src[i].amplitude))
      return arkcos_fail(err, ARKCOS_EINVAL,
                         "point source %d: theta %g outside [0, pi] or a "
                         "non-finite value",
                         i, src[i].theta);
  memset(map, 0, (size_t)g->npix * sizeof *map);
  for (int i = 0; i < n; i++) {
    double phi = fmod(src[i].phi, TWO_PI);
    if (phi < 0) phi += TWO_PI;
    map[arkcos_healpix_ang2pix_ring(g->nside, src[i].theta, phi)] +=
        src[i].amplitude;
  }
  return ARKCOS_OK;
}
