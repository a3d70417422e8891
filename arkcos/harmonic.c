/*
 * harmonic.c -- the harmonic path of wide, smooth kernels: the same
 * pixel-space operator as the direct sum,
 *   y(x) = sum_p w_p K(x . y_p) f_p,
 * computed through the kernel's Legendre series K = sum_l (2l+1)/(4 pi)
 * K_l P_l and the addition theorem: a_lm = sum_p w_p Y*_lm(p) f_p (an
 * analysis with the rings' own weights, no quadrature assumed), times K_l,
 * then y = sum_lm K_l a_lm Y_lm (a synthesis at the pixel centres). Every
 * ring keeps its own pixels, short polar rings included (their spectra
 * alias onto their few modes, as the pixel sum does), so the result is
 * the direct sum of the kernel cut at l_K, whatever the pixelisation.
 *
 * Taken by plans of Gaussians cut where they are negligible (the smooth
 * caps' kernels, plan.c, harmonic_exact) whose band limit l_K is small
 * beside the rings' length: the transforms then cost about nrings l_K^2,
 * against ARKCoS's kernel spectra and reduction, which grow with the
 * kernel's width. l_K is where the Gaussian's B_l = exp(-l(l+1) sigma^2/2)
 * falls below 1e-15 (8.31 / sigma, plus 8: the series' tail beyond it is
 * 5.5e-16 of K(0) at 1 degree; 1e-19 before, 9.4 / sigma, took 13 % more
 * l, and the execute 6 % (1 degree) to 16 % (I, Q, U at 1 degree) more
 * time at nside 1024; which kernels take the path is still decided in
 * those units, arkcos_harmonic_rule_l); K_l are the cut kernel's own
 * (arkcos_kernel_legendre's quadrature), so the series differs from the
 * cut kernel by its jump at the cutoff (1e-13 of the peak, spread as
 * Gibbs's oscillation) and by the tail beyond l_K: the plan's bound
 * counts both, as for the smooth caps (pairs_direct.c).
 *
 * A band plan of a map split over MPI ranks analyses its own rings only,
 * the bands' a_lm are summed over the ranks (p->alm_sum, arkcos_mpi.c:
 * collective) and it synthesises its own rings: one process's operator,
 * the sum in another order.
 *
 * The transforms are libsharp's (1.0, as Debian packages it), opened at
 * the first plan that could use them (dlopen of libsharp.so.0); without it
 * the plans keep ARKCoS. ARKCOS_HARMONIC=0 turns the path off, =1 takes it
 * for every kernel it is exact for (tests), whatever the cost.
 */
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/plan_internal.h"

/* libsharp 1.0's interface (libsharp/sharp.h), as its shared library
 * exports it: opaque geometry and a_lm layouts, one call per transform */
typedef struct sharp_geom sharp_geom;
typedef struct sharp_alm sharp_alm;
enum { SHARP_MAP2ALM_JOB = 0, SHARP_ALM2MAP_JOB = 1, SHARP_DP_FLAG = 1 << 4 };
typedef void (*make_geom_fn)(int, const int *, const ptrdiff_t *, const int *, const double *, const double *,
                             const double *, sharp_geom **);
typedef void (*make_alm_fn)(int, int, int, sharp_alm **);
typedef void (*destroy_geom_fn)(sharp_geom *);
typedef void (*destroy_alm_fn)(sharp_alm *);
typedef void (*execute_fn)(int, int, void *, void *, const sharp_geom *, const sharp_alm *, int, double *,
                           unsigned long long *);

static struct {
  make_geom_fn make_geom;
  make_alm_fn make_alm;
  destroy_geom_fn destroy_geom;
  destroy_alm_fn destroy_alm;
  execute_fn execute;
  int ok;
} sharp;
static pthread_once_t sharp_once = PTHREAD_ONCE_INIT;

static void sharp_load(void) {
  static const char *const names[] = {"libsharp.so.0", "libsharp.so"};
  void *h = NULL;
  for (size_t i = 0; !h && i < sizeof names / sizeof names[0]; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  *(void **)&sharp.make_geom = dlsym(h, "sharp_make_geom_info");
  *(void **)&sharp.make_alm = dlsym(h, "sharp_make_triangular_alm_info");
  *(void **)&sharp.destroy_geom = dlsym(h, "sharp_destroy_geom_info");
  *(void **)&sharp.destroy_alm = dlsym(h, "sharp_destroy_alm_info");
  *(void **)&sharp.execute = dlsym(h, "sharp_execute");
  sharp.ok = sharp.make_geom && sharp.make_alm && sharp.destroy_geom && sharp.destroy_alm && sharp.execute;
}

int arkcos_harmonic_available(void) {
  pthread_once(&sharp_once, sharp_load);
  return sharp.ok;
}

int arkcos_harmonic_lmax_sigma(double sigma) {
  const double l = 8.31 / sigma + 8;
  return sigma > 0 && l < 1e8 ? (int)ceil(l) : -1;
}

double arkcos_harmonic_rule_l(double sigma) { return sigma > 0 ? ceil(9.4 / sigma + 8) : -1; }

int arkcos_harmonic_lmax(const arkcos_kfun *kf) {
  if (kf->type != ARKCOS_KERNEL_GAUSSIAN || !(kf->inv2s2 > 0)) return -1;
  return arkcos_harmonic_lmax_sigma(sqrt(0.5 / kf->inv2s2));
}

typedef struct {
  int lmax, nthreads;
  sharp_geom *geom; /* every ring; a band plan's: its own rings at offsets gofs */
  sharp_alm *alm;
  int nr;           /* a band plan (p->nparts > 1): its own output rings, ring[] */
  int *ring;
  int64_t *gofs;    /* their offsets when geom was made (the layout moves them) */
  double *kl;      /* K_l, l <= lmax */
  double *a;       /* a_lm, complex, m-major: m (2 lmax + 1 - m) / 2 + l;
                    * spin 2: E_lm, then B_lm */
  int64_t nalm;
} harm_state;

static void harm_destroy(arkcos_plan *p) {
  harm_state *s = p->impl;
  if (!s) return;
  if (s->geom) sharp.destroy_geom(s->geom);
  if (s->alm) sharp.destroy_alm(s->alm);
  free(s->ring);
  free(s->gofs);
  free(s->kl);
  free(s->a);
  free(s);
  p->impl = NULL;
}

/* a_lm *= K_l */
static void scale_alm(const harm_state *s, double *a) {
  for (int m = 0; m <= s->lmax; m++) {
    double *am = a + 2 * ((int64_t)m * (2 * s->lmax + 1 - m) / 2);
    for (int l = m; l <= s->lmax; l++) am[2 * l] *= s->kl[l], am[2 * l + 1] *= s->kl[l];
  }
}

/* libsharp's geometry of n rings (ring[] of g, or every ring when ring is
 * NULL) at their present offsets */
static sharp_geom *make_geometry(const arkcos_geometry *g, const int *ring, int n, arkcos_error *err) {
  int *nph = malloc(sizeof *nph * (size_t)n), *stride = malloc(sizeof *stride * (size_t)n);
  ptrdiff_t *ofs = malloc(sizeof *ofs * (size_t)n);
  double *phi0 = malloc(sizeof *phi0 * (size_t)n), *theta = malloc(sizeof *theta * (size_t)n),
         *wgt = malloc(sizeof *wgt * (size_t)n);
  sharp_geom *geom = NULL;
  if (nph && stride && ofs && phi0 && theta && wgt) {
    for (int i = 0; i < n; i++) {
      const arkcos_ring *r = &g->rings[ring ? ring[i] : i];
      nph[i] = (int)r->nph, stride[i] = 1, ofs[i] = (ptrdiff_t)r->ofs;
      phi0[i] = r->phi0, theta[i] = r->theta, wgt[i] = r->weight;
    }
    sharp.make_geom(n, nph, ofs, stride, phi0, theta, wgt, &geom);
    if (!geom) arkcos_fail(err, ARKCOS_ERUNTIME, "plan: libsharp's set-up failed");
  } else {
    arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  }
  free(nph);
  free(stride);
  free(ofs);
  free(phi0);
  free(theta);
  free(wgt);
  return geom;
}

/* A band plan's geometry for the layout its rings have now (whole maps or
 * band-local ones, arkcos_mpi.c), made again when they moved */
static int band_geometry(const arkcos_plan *p, harm_state *s, arkcos_error *err) {
  if (s->nr == 0) return ARKCOS_OK; /* a band without rings: nothing to transform */
  int same = s->geom != NULL;
  for (int i = 0; same && i < s->nr; i++) same = s->gofs[i] == p->geom->rings[s->ring[i]].ofs;
  if (same) return ARKCOS_OK;
  if (s->geom) sharp.destroy_geom(s->geom);
  s->geom = make_geometry(p->geom, s->ring, s->nr, err);
  for (int i = 0; s->geom && i < s->nr; i++) s->gofs[i] = p->geom->rings[s->ring[i]].ofs;
  return s->geom ? ARKCOS_OK : err && err->code ? err->code : ARKCOS_ERUNTIME;
}

/* spin 0: in -> out; spin 2: (in, in2) = (Q, U) -> (out, out2). A band
 * plan analyses its own rings, the bands' a_lm are summed over the ranks
 * (p->alm_sum, collective) and it synthesises its own rings; the others
 * stay untouched. */
static int harm_run(arkcos_plan *p, int spin, const double *in, const double *in2, double *out, double *out2,
                    arkcos_error *err) {
  harm_state *s = p->impl;
  const int band = p->nparts > 1;
  if (band && !p->alm_sum)
    return arkcos_fail(err, ARKCOS_EINVAL, "execute: a band plan of the harmonic path runs over MPI ranks "
                                           "only (arkcos_execute_mpi)");
  int rc = band ? band_geometry(p, s, err) : ARKCOS_OK;
  const double t0 = omp_get_wtime();
  const int old = omp_get_max_threads();
  omp_set_num_threads(s->nthreads); /* libsharp runs on the caller's OpenMP settings */
  void *almp[2] = {s->a, s->a + 2 * s->nalm}, *inp[2] = {(void *)in, (void *)in2}, *outp[2] = {out, out2};
  if (!rc && s->geom) sharp.execute(SHARP_MAP2ALM_JOB, spin, almp, inp, s->geom, s->alm, SHARP_DP_FLAG, NULL, NULL);
  else memset(s->a, 0, (spin ? 4 : 2) * sizeof *s->a * (size_t)s->nalm);
  /* every band takes part in the sum, a failed one with zeros, so that
   * none waits for it; the failure is its own */
  const int rs = band ? p->alm_sum(p, s->a, (spin ? 4 : 2) * s->nalm, rc ? NULL : err) : ARKCOS_OK;
  if (!rc) rc = rs;
  const double t1 = omp_get_wtime();
  if (!rc) {
    scale_alm(s, s->a);
    if (spin) scale_alm(s, s->a + 2 * s->nalm);
  }
  const double t2 = omp_get_wtime();
  /* the output's pages first touched by every thread: libsharp clears
   * the map on one (a fresh 400 MB map at nside 2048 took 1.0 s of faults
   * on one thread of a 2-core virtual machine) */
  if (!rc && !band) {
    const int64_t npix = p->geom->npix;
#pragma omp parallel for schedule(static) num_threads(s->nthreads)
    for (int64_t k = 0; k < npix; k++) {
      out[k] = 0;
      if (out2) out2[k] = 0;
    }
  }
  if (!rc && s->geom) sharp.execute(SHARP_ALM2MAP_JOB, spin, almp, outp, s->geom, s->alm, SHARP_DP_FLAG, NULL, NULL);
  omp_set_num_threads(old);
  arkcos_stage_times *T = &p->last;
  memset(T, 0, sizeof *T);
  T->map_fft = t1 - t0;      /* the analysis (a band's: and the sum over ranks) */
  T->kernel_fft = t2 - t1;   /* times K_l */
  T->map_ifft = omp_get_wtime() - t2; /* the synthesis */
  T->total = omp_get_wtime() - t0;
  return rc;
}

static int harm_execute(arkcos_plan *p, const double *in, double *out, arkcos_error *err) {
  return harm_run(p, 0, in, NULL, out, NULL, err);
}

static int harm_execute2(arkcos_plan *p, const double *q, const double *u, double *q_out, double *u_out,
                         arkcos_error *err) {
  return harm_run(p, 2, q, u, q_out, u_out, err);
}

int arkcos_harmonic_create(arkcos_plan *p, arkcos_error *err) {
  if (!arkcos_harmonic_available()) return arkcos_fail(err, ARKCOS_ERUNTIME, "plan: libsharp did not load");
  harm_state *s = calloc(1, sizeof *s);
  if (!s) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  p->impl = s;
  p->execute = harm_execute;
  p->execute2 = harm_execute2;
  p->destroy = harm_destroy;
  s->nthreads = p->opt.threads > 0 ? p->opt.threads : omp_get_max_threads();
  s->lmax = p->harmonic_lmax;
  const arkcos_geometry *g = p->geom;
  int n = g->nrings;
  s->nalm = (int64_t)(s->lmax + 1) * (s->lmax + 2) / 2;
  s->kl = malloc(sizeof *s->kl * (size_t)(s->lmax + 1));
  const int spin = p->opt.spin;
  s->a = malloc((spin ? 4 : 2) * sizeof *s->a * (size_t)s->nalm);
  int rc = s->kl && s->a ? ARKCOS_OK : arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  if (!rc && p->nparts > 1) { /* a band plan: its own rings */
    s->ring = malloc(sizeof *s->ring * (size_t)(2 * (p->task_hi - p->task_lo) + 1));
    s->gofs = malloc(sizeof *s->gofs * (size_t)(2 * (p->task_hi - p->task_lo) + 1));
    if (!s->ring || !s->gofs) rc = arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
    for (int t = p->task_lo; !rc && t < p->task_hi; t++) {
      const int i = p->task[t], i2 = p->mirror[i];
      s->ring[s->nr++] = i;
      if (i2 >= 0 && i2 != i) s->ring[s->nr++] = i2;
    }
    n = s->nr;
  }
  const double t0 = omp_get_wtime();
  if (!rc) rc = arkcos_kfun_legendre(&p->kf, s->lmax, spin, s->kl);
  if (rc == ARKCOS_ENOMEM) arkcos_fail(err, rc, "plan: out of memory");
  p->setup.kernel_spectra += omp_get_wtime() - t0;
  if (!rc) {
    sharp.make_alm(s->lmax, s->lmax, 1, &s->alm);
    if (!s->alm) rc = arkcos_fail(err, ARKCOS_ERUNTIME, "plan: libsharp's set-up failed");
  }
  if (!rc && p->nparts > 1) rc = band_geometry(p, s, err);
  else if (!rc && !(s->geom = make_geometry(g, NULL, n, err))) rc = err && err->code ? err->code : ARKCOS_ERUNTIME;
  p->bytes = rc ? 0 : arkcos_harmonic_bytes(s->lmax, n, s->nthreads, spin);
  return rc;
}

/* a_lm and K_l, libsharp's geometry (about 80 bytes a ring) and its work
 * arrays, which grow with l_K and hardly with the threads or the rings:
 * peak RSS of a whole call less its maps and 23.5 MB of process, beside
 * a_lm, 2 threads: 1.5 MB at l_K = 642, 11 MB at 1276 and 20.5 MB at 1911
 * (nside 1024), 3.9 MB at 642 (nside 512), 8 MB at 2543 (nside 2048);
 * counted as 12 kB per l and 1 kB more per l and thread (20 kB before:
 * --dry-run 1.10-1.19 times the peak) */
double arkcos_harmonic_bytes(int lmax, int nrings, int nthreads, int spin) {
  const double nalm = (double)(lmax + 1) * (lmax + 2) / 2, f = spin ? 2 : 1; /* spin 2: E and B */
  return f * (16 * nalm + (12e3 + 1e3 * nthreads) * (lmax + 1)) + 8.0 * (lmax + 1) + 80.0 * nrings;
}
