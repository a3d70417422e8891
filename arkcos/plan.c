/*
 * plan.c -- backend-independent plan creation: kernel grid size, which
 * input rings each output ring needs, north/south mirror pairs; then the
 * chosen backend builds its FFT plans and buffers.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "arkcos/kernel_internal.h"
#include "arkcos/plan_internal.h"
#ifdef _OPENMP
#include <omp.h>
#endif

static int omp_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

void arkcos_options_default(arkcos_options *o) {
  memset(o, 0, sizeof *o);
  o->mode = ARKCOS_MODE_ENHANCED;
  o->precision = ARKCOS_DOUBLE;
  o->backend = ARKCOS_BACKEND_AUTO;
}

static void plan_free(arkcos_plan *p) {
  arkcos_direct_destroy(p->direct);
  arkcos_geometry_destroy(p->geom);
  free(p->spline);
  free(p->jlo);
  free(p->jhi);
  free(p->mirror);
  free(p->task);
  free(p->cut);
  free(p->sin_theta);
  free(p);
}

void arkcos_plan_destroy(arkcos_plan *p) {
  if (!p) return;
  if (p->mpi_destroy) p->mpi_destroy(p);
  if (p->destroy) p->destroy(p);
  plan_free(p);
}

/* Rings i and nrings-1-i are mirror images when theta_i + theta_j = pi and
 * they share length, first azimuth and weight: then the kernel spectra of
 * the pair (i, j) and (mirror i, mirror j) are equal and computed once. */
static int geometry_symmetric(const arkcos_geometry *g) {
  for (int i = 0; i < g->nrings; i++) {
    const arkcos_ring *a = &g->rings[i], *b = &g->rings[g->nrings - 1 - i];
    if (fabs(a->theta + b->theta - M_PI) > 1e-13 || a->nph != b->nph ||
        a->phi0 != b->phi0 || fabs(a->weight - b->weight) > 1e-15 * a->weight)
      return 0;
  }
  return 1;
}

static int plan_paths_for(arkcos_plan *p, const int *first, int nparts, arkcos_error *err);
static void paths_reset(arkcos_plan *p);
static int gpu_usable(char *why, size_t len);
static int plan_memory_check(const arkcos_plan *p, int rank, int nranks, arkcos_error *err);

/* The one backend rule (arkcos.h, arkcos_backend): CPU and GPU are taken as
 * asked; AUTO takes the backend plan_paths chose (the GPU when a CUDA
 * device is usable, unless only the CPU's plan of the kernel is exact) and,
 * when the GPU's plan cannot be made, the CPU, and says why in p->note. */
static int create_backend(arkcos_plan *p, arkcos_error *err) {
  arkcos_backend want = p->opt.backend;
  if (want != ARKCOS_BACKEND_AUTO && want != ARKCOS_BACKEND_CPU && want != ARKCOS_BACKEND_GPU)
    return arkcos_fail(err, ARKCOS_EINVAL, "plan: unknown backend %d", (int)want);
  if (p->opt.spin == 2) { /* spin-2 plans: the CPU only (arkcos.h, options.spin) */
    char why[256] = "";
    if (want == ARKCOS_BACKEND_GPU)
      return arkcos_fail(err, ARKCOS_ENODEV,
                         "plan: spin-2 (polarization) plans run on the CPU only; ask for the CPU backend");
    if (want == ARKCOS_BACKEND_AUTO && gpu_usable(why, sizeof why))
      snprintf(p->note, sizeof p->note, "spin-2 (polarization) plans run on the CPU only");
    p->backend = ARKCOS_BACKEND_CPU;
    return p->harmonic ? arkcos_harmonic_create(p, err) : arkcos_spin2_create(p, err);
  }
  if (want == ARKCOS_BACKEND_GPU) {
    p->backend = ARKCOS_BACKEND_GPU;
    return arkcos_gpu_create(p, err);
  }
  if (want == ARKCOS_BACKEND_AUTO && p->target == ARKCOS_BACKEND_GPU) { /* plan_paths chose it */
    arkcos_error gerr = {0, ""};
    p->backend = ARKCOS_BACKEND_GPU;
    if (arkcos_gpu_create(p, &gerr) == ARKCOS_OK) return ARKCOS_OK;
    if (p->destroy) p->destroy(p);
    p->impl = NULL;
    p->execute = NULL;
    p->destroy = NULL;
    p->bytes = 0;
    const char *m = gerr.msg; /* the library's GPU errors are worded for --backend gpu */
    if (!strncmp(m, "--backend gpu: ", 15)) m += 15;
    snprintf(p->note, sizeof p->note, "GPU plan failed (%.280s); using the CPU", m);
    /* the paths again, for the CPU (AUTO plans are one process's) */
    const int first[2] = {0, p->ntasks};
    paths_reset(p);
    p->target = ARKCOS_BACKEND_CPU;
    if (plan_paths_for(p, first, 1, err) || plan_memory_check(p, 0, 1, err))
      return err && err->code ? err->code : ARKCOS_EINVAL;
  }
  p->backend = ARKCOS_BACKEND_CPU;
  if (p->harmonic) return arkcos_harmonic_create(p, err);
  return p->opt.precision == ARKCOS_DOUBLE ? arkcos_cpu_create_double(p, err)
                                           : arkcos_cpu_create_float(p, err);
}

/* Options: the caller's, or the defaults; unknown enums refused. */
static int plan_options(arkcos_plan *p, const arkcos_options *o, arkcos_error *err) {
  if (o) p->opt = *o; else arkcos_options_default(&p->opt);
  if (p->opt.mode != ARKCOS_MODE_ENHANCED && p->opt.mode != ARKCOS_MODE_PAPER)
    return arkcos_fail(err, ARKCOS_EINVAL, "plan: unknown mode %d", (int)p->opt.mode);
  if (p->opt.precision != ARKCOS_DOUBLE && p->opt.precision != ARKCOS_SINGLE)
    return arkcos_fail(err, ARKCOS_EINVAL, "plan: unknown precision %d", (int)p->opt.precision);
  if (!(p->opt.accuracy >= 0) || isinf(p->opt.accuracy))
    return arkcos_fail(err, ARKCOS_EINVAL, "plan: accuracy must be a finite number >= 0 (got %g)",
                       p->opt.accuracy);
  if (p->opt.direct_weights < ARKCOS_WEIGHTS_AUTO || p->opt.direct_weights > ARKCOS_WEIGHTS_ON_THE_FLY)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "plan: direct_weights must be 0 (auto), 1 (tables) or 2 (on the fly), got %d",
                       p->opt.direct_weights);
  if (p->opt.cache_kernel_spectra < 0 || p->opt.cache_kernel_spectra > ARKCOS_CACHE_AUTO)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "plan: cache_kernel_spectra must be 0 (no), 1 (yes) or 2 (auto), got %d",
                       p->opt.cache_kernel_spectra);
  if (p->opt.spin != 0 && p->opt.spin != 2)
    return arkcos_fail(err, ARKCOS_EINVAL, "plan: spin must be 0 (scalar) or 2 (Q, U), got %d",
                       p->opt.spin);
  if (p->opt.spin == 2 && p->opt.mode != ARKCOS_MODE_ENHANCED)
    return arkcos_fail(err, ARKCOS_EINVAL, "plan: spin-2 plans need the enhanced mode (paper mode is scalar only)");
  if (p->opt.spin == 2 && p->opt.precision != ARKCOS_DOUBLE)
    return arkcos_fail(err, ARKCOS_EINVAL, "plan: spin-2 plans are double precision only");
  return ARKCOS_OK;
}

/* Private copies of the geometry and the kernel profile (its spline), and
 * the per-ring arrays. */
static int plan_alloc(arkcos_plan *p, const arkcos_geometry *g, const arkcos_kernel *k,
                      arkcos_error *err) {
  int n = g->nrings;
  arkcos_geometry *c = calloc(1, sizeof *c);
  if (c) {
    *c = *g;
    c->rings = malloc(sizeof(arkcos_ring) * (size_t)n);
    if (c->rings) memcpy(c->rings, g->rings, sizeof(arkcos_ring) * (size_t)n);
  }
  p->geom = c;
  p->kf = arkcos_kernel_fun(k)[0];
  if (p->kf.type == ARKCOS_KERNEL_TABLE) {
    p->spline = malloc(sizeof(double) * 5 * (size_t)p->kf.nknots);
    if (p->spline) memcpy(p->spline, p->kf.spline, sizeof(double) * 5 * (size_t)p->kf.nknots);
    p->kf.spline = p->spline;
  }
  p->jlo = malloc(sizeof(int) * n);
  p->jhi = malloc(sizeof(int) * n);
  p->mirror = malloc(sizeof(int) * n);
  p->task = malloc(sizeof(int) * n);
  p->sin_theta = malloc(sizeof(double) * n);
  if (!p->geom || !p->geom->rings || !p->jlo || !p->jhi || !p->mirror || !p->task ||
      !p->sin_theta || (p->kf.type == ARKCOS_KERNEL_TABLE && !p->spline))
    return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  return ARKCOS_OK;
}

/* Kernel grid length (the longest ring) and, per output ring, the input
 * rings whose latitude is within the cutoff: the same chord test as
 * arkcos_dphi_window, so no ring with kernel samples is missed. */
static void plan_ring_ranges(arkcos_plan *p, const arkcos_geometry *g) {
  const int n = g->nrings;
  const arkcos_ring *r = g->rings;
  p->L = 0;
  for (int i = 0; i < n; i++) {
    if (r[i].nph > p->L) p->L = r[i].nph;
    p->sin_theta[i] = sin(r[i].theta);
  }
  p->nm = p->L / 2 + 1;
  int lo = 0, hi = 0;
  for (int i = 0; i < n; i++) {
    while (lo < n && 0.25 * p->kf.cut_d2 - pow(sin(0.5 * (r[i].theta - r[lo].theta)), 2) < 0 &&
           r[lo].theta < r[i].theta)
      lo++;
    if (hi < i) hi = i;
    while (hi + 1 < n && 0.25 * p->kf.cut_d2 - pow(sin(0.5 * (r[hi + 1].theta - r[i].theta)), 2) >= 0)
      hi++;
    p->jlo[i] = lo;
    p->jhi[i] = hi;
  }
}

/* Output tasks: a ring and its north/south mirror together when the
 * geometry is symmetric, else one ring each. */
static void plan_tasks(arkcos_plan *p, const arkcos_geometry *g) {
  const int n = g->nrings, sym = geometry_symmetric(g);
  p->ntasks = 0;
  for (int i = 0; i < n; i++) {
    p->mirror[i] = sym ? n - 1 - i : -1;
    if (!sym || i <= n - 1 - i) p->task[p->ntasks++] = i;
  }
}

/* A positive number from the environment, or dflt */
static double env_double(const char *name, double dflt) {
  const char *v = getenv(name);
  char *end;
  if (!v || !*v) return dflt;
  const double x = strtod(v, &end);
  return *end == 0 && x > 0 ? x : dflt;
}

/* Memory the direct tables may take: $ARKCOS_DIRECT_MAX_GB, else half the
 * machine's physical memory. */
static double direct_budget_bytes(void) {
  const double gb = env_double("ARKCOS_DIRECT_MAX_GB", 0);
  if (gb > 0) return gb * 1e9;
  const long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && psz > 0 ? 0.5 * (double)pages * (double)psz : 8e9;
}

/* The direct weights' mode: $ARKCOS_DIRECT_WEIGHTS (tables, fly) over
 * the options' */
static int direct_weights_mode(const arkcos_options *o) {
  const char *v = getenv("ARKCOS_DIRECT_WEIGHTS");
  if (v && !strcmp(v, "tables")) return ARKCOS_WEIGHTS_TABLES;
  if (v && !strcmp(v, "fly")) return ARKCOS_WEIGHTS_ON_THE_FLY;
  return o->direct_weights;
}

/* Pixels within the kernel's cutoff around a pixel (disc area / pixel area) */
static double direct_support_pixels(const arkcos_plan *p) {
  const double c = p->kf.cutoff, area = 2 * M_PI * (1 - cos(c));
  return area / (4 * M_PI / (double)p->geom->npix);
}

/* What the CPU's direct sums cost per output pixel, in support pixels: a
 * top-hat's scalar pairs sum a row as the difference of two prefix sums
 * (konst, pairs_direct.c), so they cost a row each, the rings the support
 * crosses (2 c / (pi / nrings)); every other kernel a weight per pixel.
 * Measured at nside 1024, 2 threads, the exact caps against the
 * oversampled Fourier path they had past 4000 pixels: top-hats of 4, 8
 * and 16 degrees, executes 1.83 / 2.23, 3.68 / 4.76 and 9.07 / 10.0 s; at
 * 2048, 2 degrees, 7.7 / 10.6 s. */
static double direct_support_cost(const arkcos_plan *p) {
  if (p->kf.type == ARKCOS_KERNEL_TOPHAT && p->opt.spin == 0 && p->target != ARKCOS_BACKEND_GPU)
    return 2 * p->kf.cutoff / (M_PI / (double)p->geom->nrings);
  return direct_support_pixels(p);
}

/* A smooth kernel needs no direct sums in the caps: the oversampled
 * Fourier path there errs by the aliasing of the kernel's azimuthal
 * spectrum, which for a Gaussian resolved by the pixels decays below
 * rounding within the grid, plus the jump at the cutoff, negligible where
 * the cut is at ARKCOS_SMOOTH_CAPS_LEVEL of the peak or below. Measured
 * against the exact plan (nside 256, max relative difference, cut 1e-13):
 * 4 px per FWHM 9.8e-14, 5.8 px 5.7e-14, 8.7 px 4.7e-14; 3 px 2.6e-11 (the
 * aliasing: below ARKCOS_SMOOTH_CAPS_PIXELS the caps stay direct). Such a
 * plan holds no direct tables, and its bound carries the caps' term
 * (arkcos_plan_set_bound). Scalar CPU plans only: the GPU backend samples
 * the caps on the L grid (no oversampling), spin-2 plans keep their direct
 * transport sums. ARKCOS_SMOOTH_CAPS=0 keeps the direct caps. */
#define ARKCOS_SMOOTH_CAPS_LEVEL 1e-12
#define ARKCOS_SMOOTH_CAPS_PIXELS 4.0
#define ARKCOS_SMOOTH_CAPS_CUT 1e-13
/* The largest band limit, per unit of the rings' length L, at which the
 * harmonic path (harmonic.c) is taken. The transforms cost about
 * nrings l_K^2, ARKCoS about nrings (pairs per ring) (modes per pair), which
 * at a given width in pixels grows more slowly with nside, so the ratio
 * falls with nside: 0.41 at nside 1024 (L / 4), 0.09 less per doubling,
 * within [0.2, 0.6]. Measured break-even since the ring spectra's window
 * made ARKCoS cheaper (one call, plan + execute, medians of three, 2
 * threads, the AMD virtual machine; ARKCoS against harmonic): nside 512 at
 * 70' (l_K 0.53 L) 0.32 s against 0.34 s, at 85' (0.44 L) 0.34 against
 * 0.26 s; nside 1024 at 44' (0.44 L) 1.06 against 1.23 s, at 48' (0.40 L)
 * 0.95 against 1.08 s, at 52' (0.37 L) 1.26 against 0.91 s; nside 2048 at
 * 24' (0.38 L) 5.07 against 5.74 s, at 28' (0.33 L) 5.55 against 5.20 s:
 * the path turns harmonic at 75' (nside 512), 46' (1024) and 29' (2048)
 * (before it, 0.48 at nside 1024 and 0.1 less per doubling, from break-
 * evens of 0.42-0.62 L at 512, 0.47-0.53 L at 1024, 0.31-0.47 L at 2048).
 * Q and U keep the earlier rule plus 0.15 (within [0.2, 0.65]; not
 * measured again), the spin-2 tables costing more: I, Q, U at
 * nside 1024 and 0.59 L, 4.9 s and 0.74 GB against 6.0 s and 5.7 GB with
 * the tables cut at 1e-5 (19 s and 12.7 GB at 1e-13); nside 512 at 1 deg
 * (0.62 L) 0.79 s against 1.5 s; at 0.72 L (nside 1024) 8.7 s against
 * 6.1 s. */
static double harmonic_ratio(int64_t L, int spin) {
  const double x = log2((double)L / 4096.0);
  const double r = spin == 2 ? 0.63 - 0.1 * x : 0.41 - 0.09 * x;
  const double hi = spin == 2 ? 0.65 : 0.6;
  return r < 0.2 ? 0.2 : r > hi ? hi : r;
}
static int harmonic_by_default(double fwhm, int64_t nside);
double arkcos_gaussian_default_cutoff_rel(double fwhm, int64_t nside, int spin) {
  const double pix = nside > 0 ? sqrt(4 * M_PI / (12.0 * (double)nside * (double)nside)) : INFINITY;
  if (spin == 0 && fwhm >= ARKCOS_SMOOTH_CAPS_PIXELS * pix) return ARKCOS_SMOOTH_CAPS_CUT;
  /* Q and U: cut where negligible when the harmonic path takes them */
  return spin == 2 && harmonic_by_default(fwhm, nside) ? ARKCOS_SMOOTH_CAPS_CUT : 1e-5;
}

static int smooth_caps_exact(const arkcos_plan *p) {
  const char *env = getenv("ARKCOS_SMOOTH_CAPS");
  if (env && !strcmp(env, "0")) return 0;
  if (p->opt.spin != 0 || p->kf.type != ARKCOS_KERNEL_GAUSSIAN || !(p->kf.inv2s2 > 0)) return 0;
  if (p->opt.oversample == 1) return 0; /* the L grid asked for: it aliases */
  if (arkcos_kfun_cut_level(&p->kf) > ARKCOS_SMOOTH_CAPS_LEVEL) return 0;
  const double fwhm = sqrt(8 * log(2.0) / (2 * p->kf.inv2s2)), pix = sqrt(4 * M_PI / (double)p->geom->npix);
  if (fwhm < ARKCOS_SMOOTH_CAPS_PIXELS * pix) return 0;
  return p->target != ARKCOS_BACKEND_GPU;
}

/* The harmonic path (harmonic.c) for the whole plan: a Gaussian cut where
 * it is negligible (as the smooth caps'), scalar or Q, U (spin 2), double
 * precision, on the CPU (one process, or the bands of a map split over MPI
 * ranks, each analysing and synthesising its own rings), libsharp at hand, and
 * a band limit l_K of at most harmonic_ratio L: there the two transforms
 * cost less than ARKCoS's kernel spectra and reduction (at nside 2048, 1
 * and 2 deg: 2.2 and 1.7 s against 5.0 and 6.2 s). ARKCOS_HARMONIC=0 never
 * takes it, =1 whatever l_K. */
static int harmonic_exact(const arkcos_plan *p) {
  const char *env = getenv("ARKCOS_HARMONIC");
  if (env && !strcmp(env, "0")) return 0;
  if (p->opt.mode != ARKCOS_MODE_ENHANCED || p->opt.precision != ARKCOS_DOUBLE) return 0;
  const int lk = arkcos_harmonic_lmax(&p->kf);
  if (lk < 0 || arkcos_kfun_cut_level(&p->kf) > ARKCOS_SMOOTH_CAPS_LEVEL) return 0;
  const double rule = arkcos_harmonic_rule_l(sqrt(0.5 / p->kf.inv2s2));
  if (!(env && !strcmp(env, "1")) && rule > harmonic_ratio(p->L, p->opt.spin) * (double)p->L) return 0;
  if (p->target == ARKCOS_BACKEND_GPU) return 0; /* a scalar plan on a GPU keeps ARKCoS */
  return arkcos_harmonic_available() ? lk : 0;
}

/* Whether Q and U smoothed by a Gaussian of this FWHM on HEALPix nside take
 * the harmonic path (their default cut follows: arkcos_gaussian_default_cutoff_rel) */
static int harmonic_by_default(double fwhm, int64_t nside) {
  const char *env = getenv("ARKCOS_HARMONIC");
  if ((env && !strcmp(env, "0")) || nside < 1) return 0;
  const double rule = arkcos_harmonic_rule_l(fwhm / sqrt(8 * log(2.0)));
  return rule > 0 && rule <= harmonic_ratio(4 * nside, 2) * 4.0 * (double)nside && arkcos_harmonic_available();
}

/* Which path the ring pairs take: in enhanced mode, pairs of rings off the
 * kernel grid (length L) are summed directly and exactly (pairs_direct.c),
 * or, for a smooth kernel (smooth_caps_exact), by the oversampled Fourier
 * path, exact for it; the others by the Fourier path, exact for them;
 * paper mode keeps the paper's algorithm everywhere. */
static int plan_paths_for(arkcos_plan *p, const int *first, int nparts, arkcos_error *err) {
  if ((p->harmonic_lmax = harmonic_exact(p)) > 0) {
    p->harmonic = 1;
    return ARKCOS_OK;
  }
  int uniform = 1;
  for (int j = 0; j < p->geom->nrings; j++) uniform &= p->geom->rings[j].nph == p->L;
  /* spin-2 plans also sum directly the pairs whose rings are off the
   * half-step azimuth grid, so they may need it on uniform grids */
  p->direct_caps = p->opt.mode == ARKCOS_MODE_ENHANCED && (!uniform || p->opt.spin == 2);
  if (p->direct_caps && smooth_caps_exact(p)) {
    p->direct_caps = 0;
    p->smooth_caps = 1;
  }
  if (!p->direct_caps) return ARKCOS_OK;
  /* The direct sums grow with the kernel's area in pixels (time and the
   * tables' memory), the Fourier path only with its radius: a kernel
   * wider than the limits keeps the oversampled Fourier path in the caps,
   * which is not exact there, and the plan says so (arkcos_plan_exactness). */
  /* the budget is a process's: split over ranks (arkcos_mpi.h), the band
   * holding the most tables decides, the same way on every rank */
  double need = 0;
  for (int r = 0; r < nparts; r++) {
    const double b = arkcos_direct_estimate_bytes(p, first[r], first[r + 1]);
    if (b > need) need = b;
  }
  /* a GPU plan keeps no tables: its device computes each weight where it
   * is used (gpu_bodies.h, body_direct); only the support limits it */
  const double have = p->target == ARKCOS_BACKEND_GPU ? INFINITY : direct_budget_bytes();
  /* The direct sums cost (cap pixels) x (support pixels): on the CPU 4000
   * support pixels keep them near the Fourier path's time. A GPU plan (no
   * tables: body_direct) sums about 6e11 such pixel pairs a second on an
   * H100 (nside 4096 at 4.7': 67M cap pixels x ~380 in 41.5 ms), so its
   * limit is 1.2e12 / npix support pixels (4e11 pairs, under a second),
   * never below the CPU's */
  const double gpu_px = fmax(4000, 1.2e12 / (double)p->geom->npix);
  const int rows = direct_support_cost(p) != direct_support_pixels(p);
  const double px = direct_support_cost(p),
               pxmax = env_double("ARKCOS_DIRECT_MAX_PIXELS", p->target == ARKCOS_BACKEND_GPU ? gpu_px : 4000);
  /* the weights on the fly where asked, or where the tables do not fit
   * and the caller did not insist on tables (direct_weights) */
  /* (on the fly as asked: double precision, exact plans; the others
   * round some weights to float by their bound, arkcos_plan_set_bound) */
  const int dw = direct_weights_mode(&p->opt);
  const int exact_double = p->opt.precision == ARKCOS_DOUBLE && !(p->opt.accuracy > 0);
  p->direct_fly = p->target != ARKCOS_BACKEND_GPU &&
                  ((dw == ARKCOS_WEIGHTS_ON_THE_FLY && exact_double) || (dw == ARKCOS_WEIGHTS_AUTO && need > have));
  const int over = !p->direct_fly && need > have; /* tables asked for that do not fit */
  if ((over || px > pxmax) && p->opt.spin == 2)
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "plan: this kernel is too wide for the exact spin-2 path: its support covers about "
                       "%.0f pixels (limit %.0f, ARKCOS_DIRECT_MAX_PIXELS) and the polar caps' tables would "
                       "hold %.2g GB%s (limit %.2g GB, ARKCOS_DIRECT_MAX_GB)",
                       px, pxmax, need / 1e9, nparts > 1 ? " on one rank" : "", have / 1e9);
  if (over || px > pxmax) {
    p->direct_caps = p->direct_fly = 0;
    snprintf(p->exactness, sizeof p->exactness,
             "the polar caps are not exact: the kernel's support %s about %.0f %s (limit %.0f, "
             "ARKCOS_DIRECT_MAX_PIXELS) and the exact path's tables would hold %.2g GB%s (limit %.2g GB, "
             "ARKCOS_DIRECT_MAX_GB), so ring pairs of different lengths take the oversampled Fourier "
             "path; their error is about the kernel's relative level at its cutoff (%.1e) or below",
             rows ? "crosses" : "covers", px, rows ? "rings (a top-hat's direct sums cost a ring each)" : "pixels",
             pxmax, need / 1e9, nparts > 1 ? " on one rank" : "", have / 1e9, arkcos_kfun_alpha(&p->kf, p->kf.cutoff) /
             (arkcos_kfun_alpha(&p->kf, 0) != 0 ? arkcos_kfun_alpha(&p->kf, 0) : 1));
  }
  return ARKCOS_OK;
}

int arkcos_plan_pretend_gpu = -1;

static int gpu_usable(char *why, size_t len) {
  if (arkcos_plan_pretend_gpu >= 0) {
    if (why && len) snprintf(why, len, "%s", arkcos_plan_pretend_gpu ? "" : "no GPU (pretended)");
    return arkcos_plan_pretend_gpu;
  }
  return arkcos_gpu_available(why, len);
}

/* The paths' choices undone, to plan them again for another backend */
static void paths_reset(arkcos_plan *p) {
  p->harmonic = p->harmonic_lmax = p->direct_caps = p->smooth_caps = p->direct_fly = 0;
  p->exactness[0] = 0;
}

/* The backend the paths are planned for (p->target), then the paths. The
 * backend asked is taken as asked. AUTO plans for the GPU when one is
 * usable (scalar plans of one process), but where the GPU's plan of this
 * kernel would not be exact in the polar caps (a support past its direct
 * sums' limit) and the CPU's would (the harmonic path, the smooth caps or
 * direct caps within the CPU's limits), for the CPU, and says so in
 * p->note: measured on an H200 host before this rule, a 1-degree Gaussian
 * at nside 2048 got the GPU's inexact caps and a 2-degree one a refusal
 * (184 GB), where the CPU's harmonic path is exact in 1.4 s. */
static int plan_paths(arkcos_plan *p, const int *first, int nparts, arkcos_error *err) {
  char why[256] = "";
  p->target = p->opt.backend != ARKCOS_BACKEND_AUTO ? p->opt.backend
              : p->opt.spin == 0 && nparts == 1 && gpu_usable(why, sizeof why) ? ARKCOS_BACKEND_GPU
                                                                               : ARKCOS_BACKEND_CPU;
  if (plan_paths_for(p, first, nparts, err)) return err && err->code ? err->code : ARKCOS_EINVAL;
  if (p->opt.backend != ARKCOS_BACKEND_AUTO || p->target != ARKCOS_BACKEND_GPU || !p->exactness[0])
    return ARKCOS_OK;
  paths_reset(p);
  p->target = ARKCOS_BACKEND_CPU;
  arkcos_error cerr = {0, ""};
  if (plan_paths_for(p, first, nparts, &cerr) == ARKCOS_OK && !p->exactness[0]) {
    snprintf(p->note, sizeof p->note,
             "the GPU's plan of this kernel would not be exact in the polar caps (its support is past the "
             "GPU's direct sums); the CPU's is%s",
             p->harmonic ? " (the harmonic path)" : "");
    return ARKCOS_OK;
  }
  paths_reset(p);
  p->target = ARKCOS_BACKEND_GPU;
  return plan_paths_for(p, first, nparts, err);
}

/* Output pixels of task t: its ring and its mirror */
static double task_pixels(const arkcos_plan *p, int t) {
  const arkcos_ring *rg = p->geom->rings;
  const int i = p->task[t], i2 = p->mirror[i];
  return (double)rg[i].nph + (i2 >= 0 && i2 != i ? (double)rg[i2].nph : 0);
}

/* Tasks into nparts contiguous ranges of about equal weight w(t): cut r
 * falls at the task boundary nearest to r / nparts of the total. */
static void split_by(const arkcos_plan *p, int nparts, int *first, double (*w)(const arkcos_plan *, int)) {
  first[0] = 0;
  first[nparts] = p->ntasks;
  if (nparts == 1) return; /* one process: no model to evaluate */
  double total = 0, run = 0;
  for (int t = 0; t < p->ntasks; t++) total += w(p, t);
  int t = 0;
  first[0] = 0;
  for (int r = 1; r < nparts; r++) {
    const double goal = total * r / nparts;
    while (t < p->ntasks && run + 0.5 * w(p, t) <= goal) run += w(p, t++);
    first[r] = t;
  }
  first[nparts] = p->ntasks;
}

/* The band cost model: seconds per map of task t at one thread,
 *   direct multiply-adds x COST_DIRECT + Fourier pairs x (L log2 L x
 *   COST_KERNEL + nm x m x COST_REDUCE) + ring FFT points x log2 x COST_FFT,
 * m = 2 for a ring with its mirror. A direct pair costs nph_i x (2 hw + 1)
 * multiply-adds per output ring (arkcos_direct_estimate_bytes / 8 counts
 * an eighth of them: its tables keep one octant's weights); a Fourier pair,
 * nm complex multiply-adds per output ring and its share of the kernel
 * spectra. The constants were fitted to the stage times of the four bands
 * of nside 512, FWHM 3 pixels, on a 2-core AMD EPYC (docs/MPI.md): a direct
 * multiply-add 1.1 ns, a Fourier mode 5.5 ns, an FFT point x log2 3.4 ns;
 * only their ratios cut the bands. */
#define COST_DIRECT 1.1e-9
#define COST_KERNEL 0.05e-9
#define COST_REDUCE 5.5e-9
#define COST_FFT 3.4e-9

void arkcos_plan_task_cost(const arkcos_plan *p, int t, double parts[3]) {
  const arkcos_ring *rg = p->geom->rings;
  const int i = p->task[t], i2 = p->mirror[i];
  const double m = i2 >= 0 && i2 != i ? 2 : 1, L = (double)p->L;
  if (p->harmonic) { /* the transforms' Legendre sums: l_K^2 / 2 per ring and direction, whatever its length */
    const double lk = (double)p->harmonic_lmax + 1;
    parts[0] = parts[2] = 0;
    parts[1] = 2 * m * 0.5 * lk * lk * COST_REDUCE;
    return;
  }
  double direct = 0, fourier = 0;
  for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
    if (arkcos_pair_is_direct(p, i, j)) continue;
    fourier += L * log2(L > 2 ? L : 2) * COST_KERNEL + (double)p->nm * m * COST_REDUCE;
  }
  if (p->direct_caps) direct = arkcos_direct_estimate_bytes(p, t, t + 1) * m * COST_DIRECT;
  const double n = (double)rg[i].nph;
  parts[0] = direct;
  parts[1] = fourier;
  parts[2] = 2 * m * n * log2(n > 2 ? n : 2) * COST_FFT;
}

static double task_cost(const arkcos_plan *p, int t) {
  double c[3];
  arkcos_plan_task_cost(p, t, c);
  return c[0] + c[1] + c[2];
}

/* Bands of about equal modelled cost (ARKCOS_MPI_BANDS=pixels: of equal
 * output pixels, as before the cost model) */
void arkcos_plan_split(const arkcos_plan *p, int nparts, int *first) {
  if (p->cut && p->ncut == nparts) {
    memcpy(first, p->cut, sizeof *first * (size_t)(nparts + 1));
    return;
  }
  const char *how = getenv("ARKCOS_MPI_BANDS");
  split_by(p, nparts, first, how && !strcmp(how, "pixels") ? task_pixels : task_cost);
}

/* Whether a CPU plan keeps its ring spectra in a window per thread (see
 * plan_internal.h) and how many tasks ahead it reaches, or -1 for one row
 * per ring. The conditions are those of the backend's pair symmetry
 * (cpu_setup.h, setup_grids and setup_pairsym) that the plan alone can
 * tell: scalar, enhanced mode, rings of several lengths, coarser cap grids
 * or direct caps (the rotated frame), belt rings on the 0 / half-step
 * azimuth grid (real belt pairs), at least 4 chunks; and the window at
 * most half the rows. */
int arkcos_spectra_window(const arkcos_plan *p, int nthreads, double row_bytes, double rows_bytes) {
  const arkcos_geometry *g = p->geom;
  const char *env = getenv("ARKCOS_SPECTRA_WINDOW"); /* "0": a row per ring */
  if (env && !strcmp(env, "0")) return -1;
  if (p->target == ARKCOS_BACKEND_GPU || p->opt.spin != 0 || p->opt.mode == ARKCOS_MODE_PAPER || p->harmonic)
    return -1;
  const int coarsen = p->opt.oversample != 1 && arkcos_kfun_cut_level(&p->kf) <= 1e-3;
  if (!coarsen && !p->direct_caps) return -1;
  int uniform = 1;
  const double half = M_PI / (double)p->L;
  for (int j = 0; j < g->nrings; j++) {
    if (g->rings[j].nph != p->L) {
      uniform = 0;
      continue;
    }
    const double f = g->rings[j].phi0;
    if (f != 0 && fabs(f - half) >= 1e-12 * half) return -1;
  }
  if (uniform || p->ntasks < 1) return -1;
  const int w = arkcos_tasks_reach(p, 0);
  int len = 2 * (w + 1);
  if (len < (p->ntasks + 31) / 32) len = (p->ntasks + 31) / 32;
  if (w < 0 || p->ntasks / len < 4) return -1;
  const double win = (double)nthreads * (w + 1) * 4 * row_bytes;
  return 2 * win <= rows_bytes ? w : -1;
}

int *arkcos_ring_tasks(const arkcos_plan *p) {
  int *tidx = malloc(sizeof(int) * (size_t)p->geom->nrings);
  if (!tidx) return NULL;
  for (int j = 0; j < p->geom->nrings; j++) tidx[j] = -1;
  for (int t = 0; t < p->ntasks; t++) {
    tidx[p->task[t]] = t;
    if (p->mirror[p->task[t]] >= 0) tidx[p->mirror[p->task[t]]] = t;
  }
  return tidx;
}

/* The farthest task (in task order) that a task's pairs read: ahead only
 * (both = 0: the pair-symmetric schedule) or either way; -1 when out of
 * memory. */
int arkcos_tasks_reach(const arkcos_plan *p, int both) {
  int *tidx = arkcos_ring_tasks(p);
  if (!tidx) return -1;
  int w = 0;
  for (int t = 0; t < p->ntasks; t++) {
    const int i = p->task[t];
    for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
      const int d = both && tidx[j] < t ? t - tidx[j] : tidx[j] - t;
      if (tidx[j] >= 0 && d > w) w = d;
    }
  }
  free(tidx);
  return w;
}

int *arkcos_task_chunks(const arkcos_plan *p, int len, int nthreads, int *nchunk) {
  const int nt = p->task_hi - p->task_lo;
  if (len < p->ntasks / (8 * nthreads)) len = p->ntasks / (8 * nthreads);
  *nchunk = nt <= 0 ? 0 : nt / len > 1 ? nt / len : 1;
  int *chunk0 = malloc(sizeof(int) * (size_t)(*nchunk + 1));
  if (chunk0)
    for (int c = 0; c <= *nchunk; c++) chunk0[c] = p->task_lo + (*nchunk ? (int)((int64_t)nt * c / *nchunk) : 0);
  return chunk0;
}

/* A spin-2 CPU plan's ring spectra in a window per thread (cpu_spin2.h;
 * see plan_internal.h): w, the tasks either way a task's pairs read, or -1
 * for one row per ring. Each thread takes fixed chunks of at least
 * 4 (w + 1) tasks (and at most 32 chunks), at least 4 of them, and holds
 * 2 w + 1 slots of a task's two rings (row_bytes each); at most half the
 * rows' bytes. */
int arkcos_spin2_window(const arkcos_plan *p, int nthreads, double row_bytes, double rows_bytes, int *chunk_len) {
  const char *env = getenv("ARKCOS_SPECTRA_WINDOW");
  if (env && !strcmp(env, "0")) return -1;
  if (p->target == ARKCOS_BACKEND_GPU || p->opt.spin != 2 || p->harmonic || p->ntasks < 1) return -1;
  const int w = arkcos_tasks_reach(p, 1);
  int len = 4 * (w + 1);
  if (len < (p->ntasks + 31) / 32) len = (p->ntasks + 31) / 32;
  if (w < 0 || (p->task_hi - p->task_lo) / len < 4) return -1;
  const double win = (double)nthreads * (2 * w + 1) * 2 * row_bytes;
  if (chunk_len) *chunk_len = len;
  return 2 * win <= rows_bytes ? w : -1;
}

void arkcos_plan_rings_needed(const arkcos_plan *p, int lo, int hi, unsigned char *need) {
  if (p->harmonic) { /* each band analyses its own rings only: no halo */
    memset(need, 0, (size_t)p->geom->nrings);
    for (int t = lo; t < hi; t++) {
      need[p->task[t]] = 1;
      if (p->mirror[p->task[t]] >= 0) need[p->mirror[p->task[t]]] = 1;
    }
    return;
  }
  int a = p->geom->nrings, b = -1;
  for (int t = lo; t < hi; t++) {
    const int i = p->task[t];
    if (p->jlo[i] < a) a = p->jlo[i];
    if (p->jhi[i] > b) b = p->jhi[i];
  }
  for (int j = 0; j < p->geom->nrings; j++) {
    const int jm = p->mirror[j];
    need[j] = (unsigned char)((j >= a && j <= b) || (jm >= 0 && jm >= a && jm <= b));
  }
}

int arkcos_band_of_rank(int rank, int nranks) {
  return nranks > 1 ? (rank + nranks - 1) % nranks : 0;
}

/* Band plans (nparts > 1) run on the CPU: the GPU keeps the whole map on
 * one device. Scalar and spin-2 plans alike compute their band's tasks. */
static int part_options(arkcos_plan *p, int nparts, arkcos_error *err) {
  p->nparts = nparts;
  if (nparts == 1) return ARKCOS_OK;
  if (p->opt.backend == ARKCOS_BACKEND_GPU)
    return arkcos_fail(err, ARKCOS_ENODEV, "plan: a map split over ranks (MPI) runs on the CPU backend");
  p->opt.backend = ARKCOS_BACKEND_CPU;
  return ARKCOS_OK;
}

/* A number from the first line of a file (cgroup limits: "max" is none) */
static double file_number(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[64] = "";
  const int ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  char *end;
  const double v = ok ? strtod(line, &end) : -1;
  return ok && end != line && v > 0 ? v : -1;
}

/* A "Key: N kB" line of /proc/self/status or /proc/meminfo, in bytes; -1
 * when absent. */
static double proc_kb(const char *path, const char *key) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[256];
  const size_t n = strlen(key);
  double kb = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, n) && line[n] == ':' && sscanf(line + n + 1, "%lf", &kb) == 1) break;
  fclose(f);
  return kb >= 0 ? kb * 1024 : -1;
}

/* What the process's cgroup (v2, or v1) leaves under its limit; -1 when
 * there is no limit. */
static double cgroup_left(void) {
  const double lim2 = file_number("/sys/fs/cgroup/memory.max");
  const double use2 = file_number("/sys/fs/cgroup/memory.current");
  const double lim1 = file_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  const double use1 = file_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  double left = -1;
  if (lim2 > 0) left = lim2 - (use2 > 0 ? use2 : 0);
  if (lim1 > 0 && lim1 < 1e18 && (left < 0 || lim1 - (use1 > 0 ? use1 : 0) < left))
    left = lim1 - (use1 > 0 ? use1 : 0);
  return left < 0 ? -1 : left;
}

/* The address space left under RLIMIT_AS (ulimit -v): the limit less what
 * the process maps already (VmSize); -1 when unlimited. */
static double address_space_left(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur == RLIM_INFINITY) return -1;
  const double used = proc_kb("/proc/self/status", "VmSize");
  const double left = (double)rl.rlim_cur - (used > 0 ? used : 0);
  return left > 0 ? left : 0;
}

double arkcos_memory_limit(const char **what) {
  double have = -1;
  const char *why = "no limit known";
  const double avail = proc_kb("/proc/meminfo", "MemAvailable");
  const double swap = proc_kb("/proc/meminfo", "SwapFree");
  if (avail > 0) {
    have = avail + (swap > 0 ? swap : 0);
    why = "the memory the system has free (MemAvailable + SwapFree)";
  }
  const double cg = cgroup_left();
  if (cg >= 0 && (have < 0 || cg < have)) {
    have = cg;
    why = "what the cgroup's memory limit leaves";
  }
  const double as = address_space_left();
  if (as >= 0 && (have < 0 || as < have)) {
    have = as;
    why = "the address space left under the process's limit (RLIMIT_AS, ulimit -v)";
  }
  if (what) *what = why;
  return have < 0 ? INFINITY : have;
}

/* Memory available now: $ARKCOS_MEMORY_GB when set; else MemAvailable
 * from /proc/meminfo (the physical memory without it), lowered to what the
 * process's cgroup (v2, or v1) leaves under its limit, as a batch system's
 * job is held to its cgroup rather than to the node. Never more than the
 * address space left under RLIMIT_AS (ulimit -v): beyond it every
 * allocation fails, whatever the machine has. */
double arkcos_memory_available(void) {
  const double as = address_space_left();
  const double gb = env_double("ARKCOS_MEMORY_GB", 0);
  if (gb > 0) return as >= 0 && as < gb * 1e9 ? as : gb * 1e9;
  double have = proc_kb("/proc/meminfo", "MemAvailable");
  if (have <= 0) {
    const long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
    have = pages > 0 && psz > 0 ? (double)pages * (double)psz : 8e9;
  }
  const double cg = cgroup_left();
  if (cg >= 0 && cg < have) have = cg;
  if (as >= 0 && as < have) have = as;
  return have > 0 ? have : 0;
}

/* The memory of the plan's tasks [task_lo, task_hi) from what plan_paths
 * decided (p->direct_caps): the direct tables, the spectra of the rings
 * they read (a padded row per ring, twice for spin 2), the cached kernel
 * spectra when asked, per-thread workspaces; for a band plan (nparts > 1)
 * and a rank that does not hold the whole maps, its band's maps. */
static int cmp_int64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void plan_estimate_parts(const arkcos_plan *p, int own_maps, arkcos_estimate *e) {
  const arkcos_geometry *g = p->geom;
  const double rsz = p->opt.precision == ARKCOS_SINGLE ? 4 : 8;
  const int nt = p->opt.threads > 0 ? p->opt.threads : omp_threads();
  const int lo = p->task_lo, hi = p->task_hi;
  memset(e, 0, sizeof *e);
  if (p->harmonic) { /* a_lm, K_l, libsharp's buffers; the band's own rings in and out, no halo */
    int64_t px = 0;
    for (int t = lo; t < hi; t++) {
      const int i = p->task[t], i2 = p->mirror[i];
      px += g->rings[i].nph + (i2 >= 0 && i2 != i ? g->rings[i2].nph : 0);
      e->rings_out += 1 + (i2 >= 0 && i2 != i);
    }
    e->workspace = arkcos_harmonic_bytes(p->harmonic_lmax, e->rings_out, nt, p->opt.spin);
    e->pixels_in = e->pixels_out = px;
    e->total = 1.15 * e->workspace + 0.5e6;
    e->maps = own_maps ? 16 * (double)px : 0;
    return;
  }
  /* The direct tables' weights, plus their window ends, pair records and
   * per-thread gather buffers (measured 60 % more than the weights in
   * double: nside 1024 and 2048 at 2.8 pixels, 384 and 1531 MB held
   * against 240 and 968 MB of weights; spin-2 weights are complex, counted
   * in full, and their tables held 1.18-1.24 times them at nside 128-512,
   * 2.8 and 4 pixels); scalar single precision plans hold the weights in
   * float. A top-hat's scalar pairs hold no weights, only their rows'
   * extents, counted in full. */
  const int konst = p->kf.type == ARKCOS_KERNEL_TOPHAT && p->opt.spin == 0;
  const double dscale = konst ? 1.0 : p->opt.spin == 2 ? 1.3 : p->opt.precision == ARKCOS_SINGLE ? 1.17 : 1.6;
  e->tables = !p->direct_caps || p->target == ARKCOS_BACKEND_GPU ? 0
              : p->direct_fly ? arkcos_direct_fly_bytes(p, lo, hi, nt)
                              : dscale * arkcos_direct_estimate_bytes(p, lo, hi);
  unsigned char *need = malloc((size_t)g->nrings + 1);
  int64_t in = 0, out = 0;
  for (int t = lo; t < hi; t++) {
    const int i = p->task[t], i2 = p->mirror[i];
    out += g->rings[i].nph + (i2 >= 0 && i2 != i ? g->rings[i2].nph : 0);
    e->rings_out += 1 + (i2 >= 0 && i2 != i);
  }
  /* FFTW's plans of the distinct lengths of the rings transformed (inputs
   * read, outputs): about 10 bytes per unit of length (r2c and c2r; about
   * 20 nside^2 bytes for a whole HEALPix plan, measured 86 MB at nside
   * 2048), on the safe side for a band whose inputs are all read */
  int64_t *len = malloc(sizeof(int64_t) * ((size_t)g->nrings + 1));
  int nlen = 0;
  if (need && len) {
    arkcos_plan_rings_needed(p, lo, hi, need);
    for (int t = lo; t < hi; t++) {
      need[p->task[t]] = 1;
      if (p->mirror[p->task[t]] >= 0) need[p->mirror[p->task[t]]] = 1;
    }
    for (int j = 0; j < g->nrings; j++) {
      if (!need[j]) continue;
      in += g->rings[j].nph;
      len[nlen++] = g->rings[j].nph;
    }
  } else {
    in = g->npix; /* on the safe side */
    for (int j = 0; len && j < g->nrings; j++) len[nlen++] = g->rings[j].nph;
  }
  qsort(len, (size_t)nlen, sizeof *len, cmp_int64);
  /* rings shorter than L: none transformed with direct caps (their pairs
   * are all direct; spin 2 likewise); else Bluestein's DFTs (bluestein.c):
   * per thread a workspace of two M-point FFTs (M >= n - 1, a power of
   * two), the chirp, its spectrum and the twiddles, about 4 M + 3 n
   * doubles, and the ring's own buffers */
  const int caps_fourier = !p->direct_caps && p->opt.spin == 0;
  int64_t bmax = 0;
  for (int q = 0; q < nlen; q++) {
    if (q > 0 && len[q] == len[q - 1]) continue;
    if (len[q] == p->L) {
      e->fft += 10 * (double)len[q];
    } else if (caps_fourier && len[q] % 2 == 0) {
      int64_t M = 1;
      while (M < len[q] - 1) M *= 2;
      e->fft += 64;
      if (M > bmax) bmax = M;
    } else if (caps_fourier) {
      e->fft += 10 * (double)len[q];
    }
  }
  e->fft += (double)nt * 8 * (double)(8 * bmax + 64);
  free(len);
  e->pixels_out = out;
  e->pixels_in = in;
  e->halo_pixels = in - out;
  /* ring spectra, padded rows: with the caps summed directly, about a
   * ring's own modes (measured 1.2 values per pixel); otherwise (paper
   * mode, a kernel too wide for the direct tables, an accuracy to trade)
   * cap rings may be read by Fourier pairs on the kernel grid, whose rows
   * are the grid's modes: L / 2 + 1, or q L / 2 + 1 with the caps'
   * oversampling q */
  int uniform = 1;
  for (int j = 0; j < g->nrings; j++) uniform &= g->rings[j].nph == p->L;
  double *rowj = NULL, rowmax = 0; /* the longest row (below: a window instead) */
  unsigned char *fread = p->opt.spin == 0 && p->direct_caps && !(p->opt.accuracy > 0)
                             ? calloc((size_t)g->nrings + 1, 1) : NULL;
  if (fread) {
    /* direct caps: a row of the grid's modes for each ring a Fourier pair
     * reads (pairs of two rings of length L; cpu_setup.h, ring_nm), none for
     * the rings read only by direct pairs (nside 2048 at 2.8 pixels: 269
     * against the 483 MB of 1.2 values per pixel) */
    double vals = 0;
    for (int t = lo; t < hi; t++) {
      const int i = p->task[t], i2 = p->mirror[i];
      for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
        if (arkcos_pair_is_direct(p, i, j)) continue;
        fread[j] = 1;
        if (i2 >= 0 && i2 != i && p->mirror[j] >= 0) fread[p->mirror[j]] = 1;
      }
    }
    for (int j = 0; j < g->nrings; j++) vals += fread[j] ? (double)((p->nm + 7) / 8 * 8) : 0;
    e->spectra = 2 * rsz * vals;
    rowmax = vals > 0 ? (double)((p->nm + 7) / 8 * 8) : 0;
    free(fread);
  } else if (arkcos_band_scale(p) > 0 && (rowj = calloc((size_t)g->nrings + 1, sizeof(double)))) {
    /* smooth caps: a pair's row is its grid's modes (cpu_setup.h,
     * setup_grids and setup_extents; cpu_pairspec.h, pair_grid): the L
     * grid, then levels of q L / 2^s points; a cap pair takes the level of
     * sqrt(sin th_i sin th_j) against s_ref, then the coarsest level whose
     * modes hold its band limit bl r + 8; a belt pair keeps the L grid
     * unless a level shorter than L holds it. A ring's row: its reached
     * pairs' largest (nside 1024 at 5 px: the bound 2 (bl r + 8) + 2
     * counted 171 MB for 126 MB held) */
    const double bl = arkcos_band_scale(p);
    const int64_t Lacc = arkcos_caps_oversample(p) * p->L;
    const int coarsen = p->opt.oversample != 1 && arkcos_kfun_cut_level(&p->kf) <= 1e-3;
    int64_t levL[ARKCOS_MAX_GRIDS];
    int nlev = 0;
    for (int lv = 0; lv < ARKCOS_MAX_GRIDS - 1; lv++) {
      const int64_t Ls = Lacc >> lv;
      if (lv > 0 && (!coarsen || Lacc % ((int64_t)2 << lv) != 0 || Ls < 16)) break;
      levL[nlev++] = Ls;
    }
    double s_ref = 0;
    for (int j = 0; j < g->nrings; j++)
      if (g->rings[j].nph < p->L && p->sin_theta[j] > s_ref) s_ref = p->sin_theta[j];
    for (int t = lo; t < hi; t++) {
      const int i = p->task[t], i2 = p->mirror[i];
      for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
        const double r = sqrt(p->sin_theta[i] * p->sin_theta[j]);
        const int belt = g->rings[i].nph == p->L && g->rings[j].nph == p->L;
        const int lv = arkcos_pair_level(levL, nlev, p->L, belt, r, bl * r + 8, s_ref);
        const int64_t GL = lv < 0 ? p->L : levL[lv];
        /* reached: some sample of the grid in the kernel's window */
        const double sdt = sin(0.5 * (g->rings[i].theta - g->rings[j].theta));
        const double half = arkcos_dphi_window(&p->kf, sdt * sdt, p->sin_theta[i] * p->sin_theta[j]);
        int64_t n0, n1;
        if (arkcos_sample_range(half, g->rings[i].phi0 - g->rings[j].phi0, GL, &n0, &n1) <= 0) continue;
        const double row = (double)(GL / 2 + 1);
        if (row > rowj[j]) rowj[j] = row;
        if (i2 >= 0 && i2 != i && p->mirror[j] >= 0 && row > rowj[p->mirror[j]]) rowj[p->mirror[j]] = row;
      }
    }
    double vals = 0;
    for (int j = 0; j < g->nrings; j++) {
      vals += ceil(rowj[j] / 8) * 8;
      if (ceil(rowj[j] / 8) * 8 > rowmax) rowmax = ceil(rowj[j] / 8) * 8;
    }
    e->spectra = 2 * rsz * vals;
    free(rowj);
  } else if (p->opt.spin == 2 || uniform || (p->direct_caps && !(p->opt.accuracy > 0))) {
    e->spectra = (p->opt.spin == 2 ? 2.2 : 1.2) * (double)in * rsz;
  } else {
    int64_t q = 1;
    if (p->opt.mode != ARKCOS_MODE_PAPER && !p->direct_caps) q = arkcos_caps_oversample(p);
    double vals = 0;
    for (int j = 0; j < g->nrings; j++)
      if (!need || need[j]) vals += (double)((g->rings[j].nph == p->L ? p->L : q * p->L) / 2 + 1 + 7);
    e->spectra = 2 * rsz * vals;
  }
  free(need);
  /* pair-symmetric plans: the rows' window per thread instead, beside each
   * thread's w + 1 accumulator slots of 4 rows of up to rowmax + 48 values
   * (cpu_setup.h, setup_pairsym; which the rows' 15 % cover) */
  const int ww = rowmax > 0 ? arkcos_spectra_window(p, nt, rsz * rowmax, e->spectra) : -1;
  if (ww >= 0) e->spectra = (double)nt * (ww + 1) * 4 * rsz * (2 * rowmax + 48);
  /* spin 2: four rows of rowp doubles a ring (cpu_spin2.h), or the window
   * of 2 w + 1 tasks' two rings per thread */
  const double row2 = 32.0 * (double)((p->L / 2 + 1 + 7) / 8 * 8);
  const int w2 = p->opt.spin == 2 && e->spectra > 0 ? arkcos_spin2_window(p, nt, row2, e->spectra, NULL) : -1;
  if (w2 >= 0) e->spectra = (double)nt * (2 * w2 + 1) * 2 * row2;
  e->workspace = (double)nt * 24 * (double)p->L * 8;
  if (p->opt.cache_kernel_spectra) {
    double pairs = 0;
    for (int t = lo; t < hi; t++) pairs += p->jhi[p->task[t]] - p->jlo[p->task[t]] + 1;
    e->kernel_spectra = pairs * (double)p->nm * 2 * rsz;
  }
  e->total = 1.15 * (e->tables + e->spectra + e->kernel_spectra + e->workspace + e->fft) + 0.5e6;
  e->maps = own_maps ? 8 * (double)(in + out) : 0;
}

static double plan_estimate_bytes(const arkcos_plan *p, int own_maps) {
  arkcos_estimate e;
  plan_estimate_parts(p, own_maps, &e);
  return e.total + e.maps;
}

static int plan_memory_check(const arkcos_plan *p, int rank, int nranks, arkcos_error *err) {
  const double need = plan_estimate_bytes(p, nranks > 1 && rank > 0);
  /* max_memory may lower the limit, not raise it beyond what the process
   * can have at all (arkcos_memory_limit: ulimit -v, cgroup, free memory) */
  const char *bound = NULL;
  const double most = arkcos_memory_limit(&bound);
  const int capped = p->opt.max_memory > most;
  const double have = p->opt.max_memory > 0 ? (capped ? most : p->opt.max_memory)
                                            : arkcos_memory_available();
  if (capped && need > have)
    return arkcos_fail(err, ARKCOS_ENOMEM,
                       "plan: would need about %.3g GB at nside %lld%s (tables, spectra, buffers) but "
                       "this process can have at most %.3g GB: %s; max_memory (%.3g GB) cannot raise "
                       "that; smaller nside or kernel, fewer threads%s",
                       need / 1e9, (long long)p->geom->nside, nranks > 1 ? " on this rank" : "",
                       have / 1e9, bound, p->opt.max_memory / 1e9,
                       nranks > 1 ? ", more ranks" : "");
  char who[64] = "";
  if (nranks > 1) snprintf(who, sizeof who, " on rank %d of %d (its band and halo)", rank, nranks);
  if (need > have)
    return arkcos_fail(err, ARKCOS_ENOMEM,
                       "plan: would need about %.3g GB at nside %lld%s (tables, spectra, buffers) but %.3g GB %s; "
                       "smaller nside or kernel, fewer threads, %sor a larger memory limit",
                       need / 1e9, (long long)p->geom->nside, who, have / 1e9,
                       p->opt.max_memory > 0 ? "are allowed (max_memory; --max-memory of arkcos smooth)"
                                             : "are available now (max_memory, --max-memory, overrides)",
                       nranks > 1 ? "more ranks, " : "");
  return ARKCOS_OK;
}

/* What a light plan may hold: two maps' bytes and 64 MB (16 npix + 64e6),
 * the budget of AUTO's direct weights and ARKCOS_CACHE_AUTO's spectra */
static double light_bytes(const arkcos_geometry *g) { return 16.0 * (double)g->npix + 64e6; }

/* Everything but the backend: options, tables of ring ranges and tasks,
 * the bands, the paths of the whole plan (a band decides as one process
 * would, but with the direct tables' budget of the band holding the most),
 * and the band's task range: rank `rank` of `nranks` computes band
 * arkcos_band_of_rank. */
static arkcos_plan *plan_prepare_cut(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                                     int rank, int nranks, const int *cut, arkcos_error *err) {
  if (!g || !k) {
    arkcos_fail(err, ARKCOS_EINVAL, "plan: geometry and kernel are required");
    return NULL;
  }
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    arkcos_fail(err, ARKCOS_EINVAL, "plan: rank %d of %d", rank, nranks);
    return NULL;
  }
  arkcos_plan *p = calloc(1, sizeof *p);
  int *first = malloc(sizeof(int) * (size_t)(nranks + 1));
  if (!p || !first) {
    free(p);
    free(first);
    arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
    return NULL;
  }
  if (plan_options(p, o, err) || part_options(p, nranks, err) || plan_alloc(p, g, k, err)) goto fail;
  plan_ring_ranges(p, g);
  plan_tasks(p, g);
  /* the direct tables' budget is judged on bands of equal pixels, whose
   * polar band holds the most tables; then the bands are cut by cost,
   * which needs the paths */
  split_by(p, nranks, first, task_pixels);
  if (plan_paths(p, first, nranks, err)) goto fail;
  if (cut) { /* another plan's bands: the same tasks (they follow from the geometry) */
    int ok = cut[0] == 0 && cut[nranks] == p->ntasks;
    for (int r = 0; ok && r < nranks; r++) ok = cut[r] <= cut[r + 1];
    if (!ok || !(p->cut = malloc(sizeof *p->cut * (size_t)(nranks + 1)))) {
      arkcos_fail(err, ok ? ARKCOS_ENOMEM : ARKCOS_EINVAL, ok ? "plan: out of memory"
                  : "plan: the bands given are not a split of this plan's %d tasks", p->ntasks);
      goto fail;
    }
    memcpy(p->cut, cut, sizeof *p->cut * (size_t)(nranks + 1));
    p->ncut = nranks;
  }
  arkcos_plan_split(p, nranks, first);
  const int band = arkcos_band_of_rank(rank, nranks);
  p->task_lo = first[band];
  p->task_hi = first[band + 1];
  free(first);
  /* the polar caps' direct weights, asked for by nobody (AUTO): tabulated
   * where the plan with the tables stays light, within two maps' bytes and
   * 64 MB, as the kernel spectra below; else computed in each execute (the
   * same maps to the last bit). nside 1024 at 2.8 pixels per FWHM (2
   * threads): tables make a plan of 455 MB against 88 MB, whose executes
   * take 0.6-0.7 of the time on the fly; nside 256 keeps them (22 MB). */
  if (p->direct_caps && !p->direct_fly && p->target != ARKCOS_BACKEND_GPU &&
      direct_weights_mode(&p->opt) == ARKCOS_WEIGHTS_AUTO && p->opt.precision == ARKCOS_DOUBLE &&
      !(p->opt.accuracy > 0)) {
    arkcos_estimate e;
    const int cache = p->opt.cache_kernel_spectra;
    p->opt.cache_kernel_spectra = 0;
    plan_estimate_parts(p, 0, &e);
    p->opt.cache_kernel_spectra = cache;
    p->direct_fly = e.total > light_bytes(g);
  }
  /* kernel spectra kept where the plan with them stays light: at nside
   * 1024 (2 threads) they cost 0.31 s of plan and 860 MB to save 0.09 s a
   * map at 5 pixels per FWHM, nothing measurable at 2.8 */
  if (p->opt.cache_kernel_spectra == ARKCOS_CACHE_AUTO) {
    arkcos_estimate e;
    p->opt.cache_kernel_spectra = 1;
    plan_estimate_parts(p, 0, &e);
    p->opt.cache_kernel_spectra = e.total <= light_bytes(g);
  }
  return p;
fail:
  free(first);
  arkcos_plan_destroy(p);
  return NULL;
}

static arkcos_plan *plan_prepare(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                                 int rank, int nranks, arkcos_error *err) {
  return plan_prepare_cut(g, k, o, rank, nranks, NULL, err);
}

double arkcos_plan_estimate(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                            arkcos_error *err) {
  arkcos_plan *p = plan_prepare(g, k, o, 0, 1, err);
  if (!p) return 0;
  const double b = plan_estimate_bytes(p, 0);
  arkcos_plan_destroy(p);
  return b;
}

/* The estimate of band plan p (prepared, NULL after an error in err),
 * which it then destroys */
static int estimate_band(arkcos_plan *p, int rank, int nranks, arkcos_estimate *e, arkcos_error *err) {
  if (!p) return err && err->code ? err->code : ARKCOS_EINVAL;
  plan_estimate_parts(p, nranks > 1 && rank > 0, e);
  e->band = arkcos_band_of_rank(rank, nranks);
  e->collective = nranks > 1 && p->harmonic;
  arkcos_plan_destroy(p);
  return ARKCOS_OK;
}

int arkcos_plan_estimate_rank(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                              int rank, int nranks, arkcos_estimate *e, arkcos_error *err) {
  if (!e) return arkcos_fail(err, ARKCOS_EINVAL, "estimate: no place for the result");
  memset(e, 0, sizeof *e);
  return estimate_band(plan_prepare(g, k, o, rank, nranks, err), rank, nranks, e, err);
}

int arkcos_plan_estimate_rank_as(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                                 const arkcos_kernel *k_like, const arkcos_options *o_like, int rank, int nranks,
                                 arkcos_estimate *e, arkcos_error *err) {
  if (!e) return arkcos_fail(err, ARKCOS_EINVAL, "estimate: no place for the result");
  memset(e, 0, sizeof *e);
  int *cut = malloc(sizeof *cut * (size_t)(nranks > 0 ? nranks + 1 : 1));
  if (!cut) return arkcos_fail(err, ARKCOS_ENOMEM, "estimate: out of memory");
  arkcos_plan *like = plan_prepare(g, k_like, o_like, 0, nranks, err);
  if (like) arkcos_plan_split(like, nranks, cut);
  arkcos_plan *p = like ? plan_prepare_cut(g, k, o, rank, nranks, cut, err) : NULL;
  arkcos_plan_destroy(like);
  free(cut);
  return estimate_band(p, rank, nranks, e, err);
}

int arkcos_plan_estimate_cost(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                              int rank, int nranks, double parts[3], arkcos_error *err) {
  if (!parts) return arkcos_fail(err, ARKCOS_EINVAL, "estimate: no place for the result");
  parts[0] = parts[1] = parts[2] = 0;
  arkcos_plan *p = plan_prepare(g, k, o, rank, nranks, err);
  if (!p) return err && err->code ? err->code : ARKCOS_EINVAL;
  for (int t = p->task_lo; t < p->task_hi; t++) {
    double c[3];
    arkcos_plan_task_cost(p, t, c);
    for (int q = 0; q < 3; q++) parts[q] += c[q];
  }
  arkcos_plan_destroy(p);
  return ARKCOS_OK;
}

static double wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Before planning (whose analysis of ring pairs grows with the map): one
 * map of the plan's, 8 bytes a pixel (an execute reads one and writes
 * another; the plan's own ring spectra may be a window of a few rings),
 * against what the process can have at all (arkcos_memory_limit). An nside
 * far beyond the machine is refused at once, not after minutes of planning. */
static int plan_floor_check(const arkcos_geometry *g, int nranks, arkcos_error *err) {
  if (!g || nranks != 1) return ARKCOS_OK;
  const char *bound = NULL;
  const double floor = 8.0 * (double)g->npix, most = arkcos_memory_limit(&bound);
  if (floor <= most) return ARKCOS_OK;
  return arkcos_fail(err, ARKCOS_ENOMEM,
                     "plan: cannot fit at nside %lld: one of its maps alone needs %.3g GB "
                     "(%lld pixels) but at most %.3g GB are available to this process: %s",
                     (long long)g->nside, floor / 1e9, (long long)g->npix, most / 1e9, bound);
}

/* The backend rule's refusals that need no plan (create_backend): spin 2
 * with the GPU asked for, and the GPU asked for where there is none, in
 * create_backend's words and order. */
static int backend_check(const arkcos_options *o, arkcos_error *err) {
  if (o->backend != ARKCOS_BACKEND_AUTO && o->backend != ARKCOS_BACKEND_CPU && o->backend != ARKCOS_BACKEND_GPU)
    return arkcos_fail(err, ARKCOS_EINVAL, "plan: unknown backend %d", (int)o->backend);
  if (o->backend != ARKCOS_BACKEND_GPU) return ARKCOS_OK;
  if (o->spin == 2)
    return arkcos_fail(err, ARKCOS_ENODEV,
                       "plan: spin-2 (polarization) plans run on the CPU only; ask for the CPU backend");
  char why[256] = "";
  if (!arkcos_gpu_available(why, sizeof why)) return arkcos_fail(err, ARKCOS_ENODEV, "--backend gpu: %s", why);
  return ARKCOS_OK;
}

int arkcos_options_check(const arkcos_options *o, arkcos_error *err) {
  arkcos_plan *p = calloc(1, sizeof *p);
  if (!p) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  int rc = plan_options(p, o, err);
  if (!rc) rc = backend_check(&p->opt, err);
  free(p);
  return rc;
}

int arkcos_plan_check(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                      arkcos_error *err) {
  if (plan_floor_check(g, 1, err)) return err && err->code ? err->code : ARKCOS_ENOMEM;
  arkcos_plan *p = plan_prepare(g, k, o, 0, 1, err);
  if (!p) return err && err->code ? err->code : ARKCOS_EINVAL;
  int rc = plan_memory_check(p, 0, 1, err);
  if (!rc) rc = backend_check(&p->opt, err);
  arkcos_plan_destroy(p);
  return rc;
}

/* A band plan is checked against its own estimate, with its maps on ranks
 * other than 0 (arkcos_mpi.c holds them). */
arkcos_plan *arkcos_plan_create_part(const arkcos_geometry *g, const arkcos_kernel *k,
                                     const arkcos_options *o, int rank, int nranks, arkcos_error *err) {
  return arkcos_plan_create_part_cut(g, k, o, rank, nranks, NULL, err);
}

arkcos_plan *arkcos_plan_create_part_cut(const arkcos_geometry *g, const arkcos_kernel *k,
                                         const arkcos_options *o, int rank, int nranks, const int *cut,
                                         arkcos_error *err) {
  const double t0 = wall_seconds();
  if (plan_floor_check(g, nranks, err)) return NULL;
  arkcos_plan *p = plan_prepare_cut(g, k, o, rank, nranks, cut, err);
  if (!p) return NULL;
  if (plan_memory_check(p, rank, nranks, err) || create_backend(p, err)) {
    arkcos_plan_destroy(p);
    return NULL;
  }
  arkcos_plan_set_bound(p, p->opt.precision == ARKCOS_SINGLE);
  p->setup.total = wall_seconds() - t0;
  return p;
}

void arkcos_plan_setup_times(const arkcos_plan *p, arkcos_plan_times *t) { *t = p->setup; }

arkcos_plan *arkcos_plan_create(const arkcos_geometry *g, const arkcos_kernel *k,
                                const arkcos_options *o, arkcos_error *err) {
  return arkcos_plan_create_part(g, k, o, 0, 1, err);
}

/* Input values the plan can carry: finite (an inf or NaN enters a whole
 * ring's FFT, and through it every output ring the ring reaches, far
 * beyond the kernel's reach of that pixel), and within float's range in a
 * single precision plan (else it becomes inf there). The first offending
 * pixel is named. One pass over the map, small beside the execution. */
int arkcos_plan_check_input(const arkcos_plan *p, const double *in, const char *name, arkcos_error *err) {
  const int64_t n = p->geom->npix;
  const double lim = p->opt.precision == ARKCOS_SINGLE ? 3.4028234663852886e38 : HUGE_VAL;
  int64_t bad = n;
  /* blocks of 4096 pixels, each tested in a vectorised pass; a block that
   * holds an offending pixel is searched for its first */
#pragma omp parallel for reduction(min : bad) schedule(static)
  for (int64_t b0 = 0; b0 < n; b0 += 4096) {
    const int64_t b1 = b0 + 4096 < n ? b0 + 4096 : n;
    int any = 0;
#pragma omp simd reduction(| : any)
    for (int64_t i = b0; i < b1; i++) any |= !(fabs(in[i]) < lim);
    for (int64_t i = b0; any && i < b1; i++)
      if (!(fabs(in[i]) < lim)) {
        if (i < bad) bad = i;
        break;
      }
  }
  if (bad == n) return ARKCOS_OK;
  if (!isfinite(in[bad]))
    return arkcos_fail(err, ARKCOS_EINVAL,
                       "execute: %s pixel %lld is %g; the engine takes finite values only (give "
                       "missing pixels weight 0, as arkcos smooth does for UNSEEN and NaN)",
                       name, (long long)bad, in[bad]);
  return arkcos_fail(err, ARKCOS_EINVAL,
                     "execute: %s pixel %lld = %g is beyond single precision's range (3.4e38); "
                     "use a double precision plan", name, (long long)bad, in[bad]);
}

int arkcos_execute(arkcos_plan *p, const double *in, double *out, arkcos_error *err) {
  if (!p || !in || !out) return arkcos_fail(err, ARKCOS_EINVAL, "execute: NULL argument");
  if (in == out) return arkcos_fail(err, ARKCOS_EINVAL, "execute: in and out must differ");
  if (p->mpi) return arkcos_fail(err, ARKCOS_EINVAL, "execute: this plan is split over MPI ranks; use arkcos_execute_mpi");
  if (p->opt.spin == 2)
    return arkcos_fail(err, ARKCOS_EINVAL, "execute: this is a spin-2 plan; use arkcos_execute_spin2");
  const int rc = arkcos_plan_check_input(p, in, "input", err);
  return rc ? rc : p->execute(p, in, out, err);
}

void arkcos_stages_add(arkcos_stage_times *a, const arkcos_stage_times *b) {
  a->map_fft += b->map_fft;
  a->kernel_eval += b->kernel_eval;
  a->kernel_fft += b->kernel_fft;
  a->reduction += b->reduction;
  a->map_ifft += b->map_ifft;
  a->h2d += b->h2d;
  a->d2h += b->d2h;
  a->other += b->other;
  a->total += b->total;
  a->direct += b->direct;
}

int arkcos_execute_two(arkcos_plan *p, const double *in1, double *out1, const double *in2, double *out2,
                       arkcos_error *err) {
  if (!p || !in1 || !out1 || !in2 || !out2) return arkcos_fail(err, ARKCOS_EINVAL, "execute: NULL argument");
  if (in1 == out1 || in2 == out2 || in1 == out2 || in2 == out1 || out1 == out2)
    return arkcos_fail(err, ARKCOS_EINVAL, "execute: the two maps' inputs and outputs must differ");
  if (p->mpi || p->opt.spin == 2)
    return arkcos_fail(err, ARKCOS_EINVAL, "execute: two maps at once take a scalar plan of one process");
  int rc = arkcos_plan_check_input(p, in1, "input", err);
  if (!rc) rc = arkcos_plan_check_input(p, in2, "input", err);
  if (rc) return rc;
  if (p->execute_two) return p->execute_two(p, in1, out1, in2, out2, err);
  rc = p->execute(p, in1, out1, err);
  if (rc) return rc;
  const arkcos_stage_times t = p->last;
  rc = p->execute(p, in2, out2, err);
  arkcos_stages_add(&p->last, &t);
  return rc;
}

int arkcos_execute_spin2(arkcos_plan *p, const double *q, const double *u, double *q_out,
                         double *u_out, arkcos_error *err) {
  if (!p || !q || !u || !q_out || !u_out) return arkcos_fail(err, ARKCOS_EINVAL, "execute: NULL argument");
  if (p->opt.spin != 2)
    return arkcos_fail(err, ARKCOS_EINVAL, "execute: this is a scalar plan; make it with options.spin = 2");
  if (p->mpi)
    return arkcos_fail(err, ARKCOS_EINVAL, "execute: this plan is split over MPI ranks; use arkcos_execute2_mpi");
  if (q_out == u_out || q_out == q || q_out == u || u_out == q || u_out == u)
    return arkcos_fail(err, ARKCOS_EINVAL, "execute: outputs must differ from the inputs and each other");
  int rc = arkcos_plan_check_input(p, q, "Q", err);
  if (!rc) rc = arkcos_plan_check_input(p, u, "U", err);
  return rc ? rc : p->execute2(p, q, u, q_out, u_out, err);
}

int arkcos_plan_spin(const arkcos_plan *p) { return p->opt.spin; }

void arkcos_plan_stages(const arkcos_plan *p, arkcos_stage_times *t) { *t = p->last; }
arkcos_backend arkcos_plan_backend(const arkcos_plan *p) { return p->backend; }
size_t arkcos_plan_memory(const arkcos_plan *p) { return p->bytes; }
int arkcos_plan_direct_weights(const arkcos_plan *p) {
  if (!p->direct_caps) return 0;
  return p->direct_fly || p->backend == ARKCOS_BACKEND_GPU ? ARKCOS_WEIGHTS_ON_THE_FLY : ARKCOS_WEIGHTS_TABLES;
}

/* Maps for arkcos_execute: a 64-byte header (a tag and whether the block
 * is page-locked) before the values, so that arkcos_map_free knows how to
 * give it back. */
#define MAP_TAG 0x61726b636f736d70ull /* "arkcosmp" */
double *arkcos_map_alloc(const arkcos_plan *p, int64_t n) {
  if (n < 0 || (uint64_t)n > (SIZE_MAX - 64) / sizeof(double)) return NULL;
  const size_t bytes = 64 + sizeof(double) * (size_t)(n > 0 ? n : 1);
  void *base = NULL;
  uint64_t pinned = 0;
  if (p && p->backend == ARKCOS_BACKEND_GPU && (base = arkcos_gpu_host_alloc(bytes))) pinned = 1;
  if (!base && posix_memalign(&base, 64, bytes)) return NULL;
  uint64_t *head = base;
  head[0] = MAP_TAG;
  head[1] = pinned;
  return (double *)((char *)base + 64);
}

void arkcos_map_free(double *map) {
  if (!map) return;
  uint64_t *head = (uint64_t *)((char *)map - 64);
  if (head[0] != MAP_TAG) return; /* not ours: leave it */
  head[0] = 0;
  if (head[1]) arkcos_gpu_host_free(head);
  else free(head);
}
const char *arkcos_plan_note(const arkcos_plan *p) { return p->note; }
double arkcos_plan_bound(const arkcos_plan *p) { return p->bound; }
const char *arkcos_plan_exactness(const arkcos_plan *p) { return p->exactness; }
