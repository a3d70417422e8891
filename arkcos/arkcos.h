/*
 * arkcos.h -- public interface of the ARKCoS engine.
 *
 * ARKCoS (Elsner & Wandelt 2011, A&A 532, A35) convolves a map sampled on
 * isolatitude rings with a compact radial kernel: ring FFTs, kernel spectra
 * per ring pair, a reduction over the rings inside the kernel support, and
 * inverse ring FFTs.
 *
 * Units: angles in radians; theta is colatitude in [0, pi]; phi in [0, 2 pi).
 * Maps are HEALPix RING ordered (or, for other geometries, ring after ring in
 * the order of the geometry), double precision, pixel indices int64_t.
 *
 * Conventions shared by every module:
 *  - a kernel K(alpha) is zero for alpha > cutoff and normalised to unit
 *    integral over the sphere (K_0 = 1 in K_l = 2 pi int K(z) P_l(z) dz);
 *  - the discrete convolution approximated is the direct sum
 *    s_p = sum_q w_q K(alpha_pq) r_q, w_q the pixel's solid angle
 *    (4 pi / npix on HEALPix).
 *
 * Errors: functions return NULL or a non-zero ARKCOS_E* code and fill the
 * caller's arkcos_error (which may be NULL).  Nothing here calls exit().
 */
#ifndef ARKCOS_H
#define ARKCOS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARKCOS_VERSION "0.1.0"

/* What was built, fixed at build time (nothing asks git at run time):
 * arkcos_version() is ARKCOS_VERSION of the library (which may differ from
 * the header a program was compiled with); arkcos_build_commit() the git
 * commit of the source tree it was built from (40 hex digits), or "unknown"
 * for a tree without its own git history (a tarball); arkcos_build_dirty()
 * 1 if tracked files differed from that commit, 0 if not, -1 unknown. */
const char *arkcos_version(void);
const char *arkcos_build_commit(void);
int arkcos_build_dirty(void);

/* ---------------------------------------------------------------- errors */

enum {
  ARKCOS_OK = 0,
  ARKCOS_ERUNTIME = 1,   /* internal failure (FFTW plan, CUDA call, ...) */
  ARKCOS_EINVAL = 2,     /* bad argument or bad input data */
  ARKCOS_ENOMEM = 3,     /* allocation failed */
  ARKCOS_EIO = 4,        /* file could not be read or written */
  ARKCOS_ENODEV = 5      /* GPU requested but no CUDA device / no CUDA build */
};

typedef struct arkcos_error {
  int code;
  char msg[512];
} arkcos_error;

/* Records code and a printf-style message in err (if err is not NULL);
 * returns code so that callers can write `return arkcos_fail(...)`. */
int arkcos_fail(arkcos_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;


/* -------------------------------------------------------------- geometry */

typedef struct arkcos_ring {
  double theta;   /* colatitude of the ring */
  double phi0;    /* azimuth of the ring's first pixel */
  double weight;  /* solid angle of one pixel of the ring (quadrature weight) */
  int64_t nph;    /* number of pixels on the ring */
  int64_t ofs;    /* index of the ring's first pixel in the map */
} arkcos_ring;

typedef enum {
  ARKCOS_GEOM_HEALPIX = 0,
  ARKCOS_GEOM_ECP = 1,
  ARKCOS_GEOM_CUSTOM = 2
} arkcos_geometry_kind;

typedef struct arkcos_geometry {
  arkcos_geometry_kind kind;
  int64_t nside;      /* HEALPix resolution (0 for other kinds) */
  int64_t npix;       /* total number of pixels */
  int nrings;
  arkcos_ring *rings; /* ordered by increasing theta */
} arkcos_geometry;

/* HEALPix RING geometry for any nside >= 1 (powers of two or not). */
arkcos_geometry *arkcos_geometry_healpix(int64_t nside, arkcos_error *err);

/* Equiangular (ECP) grid: ntheta rings at theta_i = (i + 1/2) pi / ntheta,
 * nphi pixels each at phi = (k + phi_shift) 2 pi / nphi; weights are the
 * exact solid angles of the cells. */
arkcos_geometry *arkcos_geometry_ecp(int ntheta, int64_t nphi, double phi_shift,
                                     arkcos_error *err);

/* Generic constructor; the others only fill these arrays. weight may be NULL
 * for equal-area pixels (4 pi / npix). Rings must have increasing theta. */
arkcos_geometry *arkcos_geometry_from_rings(int nrings, const double *theta,
                                            const double *phi0,
                                            const int64_t *nph,
                                            const int64_t *ofs,
                                            const double *weight,
                                            arkcos_error *err);

void arkcos_geometry_destroy(arkcos_geometry *g); /* NULL is a no-op */

/* HEALPix helpers (RING scheme). */
int64_t arkcos_healpix_npix(int64_t nside);
int64_t arkcos_healpix_ang2pix_ring(int64_t nside, double theta, double phi);
void arkcos_healpix_pix2ang_ring(int64_t nside, int64_t pix, double *theta,
                                 double *phi);
int64_t arkcos_healpix_nest2ring(int64_t nside, int64_t pix); /* nside 2^k */
int64_t arkcos_healpix_ring2nest(int64_t nside, int64_t pix); /* nside 2^k */
/* Quadrature weights of the 4 nside - 1 HEALPix rings (north to south), as
 * factors of the equal pixel area 4 pi / npix: a sum over the pixels of
 * w_ring f(pixel) 4 pi / npix integrates a smooth f over the sphere as well
 * near the poles and at the cap/belt boundary as inside the belt. Pixel
 * centres alone form a quadrature whose error concentrates at those places:
 * in the ring index t, ring areas grow as t in the caps and stay constant in
 * the belt, so the sum over rings is a trapezoid rule in t whose
 * Euler-Maclaurin terms live at the pole (t = 0, not a ring) and at the kink
 * t = nside. The first four rings of each cap take end corrections c_1..c_4
 * (sum_i c_i i^n = B_(n+1) / (n + 1) for n = 1, 3, 5, 7: 0.1393, -0.0375,
 * 0.0073, -0.0007) and the two rings at |z| = 2/3 take -1 / (12 nside);
 * from nside 32 the 17 rings around each |z| = 2/3 also take a fitted
 * correction (times 1 / nside) that brings a band-limited map's error there
 * to the belt's (2e-7 from 2e-5 - 8e-5 at 4-16 px/FWHM; geometry.c).
 * Measured on a constant map smoothed with a 4.4 px/FWHM Gaussian at nside
 * 64: max |1 - out| 1.4e-2 with plain pixels, 7e-5 with these weights; what
 * remains sits on rings 3-6, from the few pixels of the innermost rings.
 * nside >= 1 (below 8 the end corrections overlap and are not applied); w
 * holds 4 nside - 1 values. Returns 0, or -1 for a bad argument. */
int arkcos_healpix_ring_weights(int64_t nside, double *w);

/* ---------------------------------------------------------------- kernels */

typedef enum {
  ARKCOS_KERNEL_GAUSSIAN = 0, /* exp(-alpha^2 / (2 sigma^2)), sigma from FWHM */
  ARKCOS_KERNEL_TOPHAT = 1,   /* constant inside the cutoff */
  ARKCOS_KERNEL_TABLE = 2,    /* tabulated radial profile, cubic interpolation */
  ARKCOS_KERNEL_GAUSSIAN_HARMONIC = 3 /* healpy's Gaussian beam of FWHM fwhm, for
                                       * arkcos_smoother_spec; a kernel of it alone:
                                       * arkcos_kernel_gaussian_harmonic (the create
                                       * below refuses this type) */
} arkcos_kernel_type;

typedef struct arkcos_kernel_spec {
  arkcos_kernel_type type;
  double fwhm;              /* GAUSSIAN(_HARMONIC): full width at half maximum, radians */
  const double *alpha;      /* TABLE: increasing angles, radians, alpha[0] >= 0 */
  const double *value;      /* TABLE: profile values (any normalisation) */
  int ntable;               /* TABLE: number of points (>= 2) */
  double cutoff;            /* truncation angle in (0, pi]; 0: use cutoff_rel */
  double cutoff_rel;        /* cut where K first falls below cutoff_rel * K(0) */
} arkcos_kernel_spec;

typedef struct arkcos_kernel arkcos_kernel;

/* The default truncation of a Gaussian beam of FWHM fwhm (radians) smoothing
 * a HEALPix map of nside, as a level of its peak (cutoff_rel): 1e-13 for a
 * scalar map (spin 0) when the beam spans at least 4 pixels per FWHM, where
 * a CPU plan then sums the polar caps exactly through the oversampled
 * Fourier path and holds no direct tables (one call several times faster,
 * the plan a fraction of the memory); else 1e-5 (narrow beams and spin 2,
 * whose caps are summed directly, and whose tables grow with the cut's
 * radius). The Gaussian then differs from the untruncated one by less than
 * the level. */
double arkcos_gaussian_default_cutoff_rel(double fwhm, int64_t nside, int spin);

/* Creates a truncated kernel normalised to unit integral over the sphere.
 * TOPHAT needs an explicit cutoff (its radius). For TABLE without a cutoff
 * and without cutoff_rel the last tabulated angle is the cutoff. */
arkcos_kernel *arkcos_kernel_create(const arkcos_kernel_spec *spec,
                                    arkcos_error *err);

/* Reads a two-column text file (angle in radians, K; '#' comments allowed)
 * and creates a TABLE kernel. Malformed files give ARKCOS_EINVAL naming the
 * file and the line. */
arkcos_kernel *arkcos_kernel_from_file(const char *path, double cutoff,
                                       double cutoff_rel, arkcos_error *err);

/* The unit of a kernel file's angle column. */
typedef enum {
  ARKCOS_ANGLE_RAD = 0,
  ARKCOS_ANGLE_DEG = 1,
  ARKCOS_ANGLE_ARCMIN = 2
} arkcos_angle_unit;

typedef struct arkcos_kernel_file_options {
  arkcos_angle_unit unit;  /* of the first column (default radians) */
  int allow_negative;      /* K < 0 accepted (wavelets); else ARKCOS_EINVAL */
  double cutoff, cutoff_rel; /* as in arkcos_kernel_spec */
  /* How the caller's users set the two switches above, quoted in messages
   * ("--kernel-unit", "--allow-negative"); NULL: described in words. */
  const char *unit_name, *allow_negative_name;
} arkcos_kernel_file_options;

/* arkcos_kernel_from_file with options (o == NULL: all zero; the plain
 * function is this with radians, the cutoffs given and negative values
 * refused). Besides malformed lines it refuses, naming the file and the
 * line: angles beyond pi in the given unit (with a hint when they look like
 * degrees or arcminutes), a first column 0, 1, 2, ... that looks like the
 * multipoles of a beam transfer function `l B_l`, negative K unless
 * allowed, NaN or infinite values, non-increasing angles, fewer than two
 * data lines. */
arkcos_kernel *arkcos_kernel_from_file_ex(const char *path,
                                          const arkcos_kernel_file_options *o,
                                          arkcos_error *err);

/* A kernel from a beam transfer function B_l, l = 0..lmax (a healpy or
 * Planck beam): the Legendre sum K(t) = sum_l (2l+1)/(4 pi) (B_l / B_0)
 * P_l(cos t), truncated where |K| stays below cutoff_rel K(0) up to pi, as
 * a TABLE kernel whose spline follows the sum to ~4e-9 of K(0) (negative
 * lobes kept). A window cut in harmonic space whose Legendre sum rings above
 * that level everywhere is refused (ARKCOS_EINVAL) with the measured level
 * and B_l's last value: give B_l to a higher l. For a Gaussian B_l (healpy
 * gauss_beam) the kernel is the spherical heat kernel, not the flat
 * Gaussian of ARKCOS_KERNEL_GAUSSIAN. */
arkcos_kernel *arkcos_kernel_from_beam(const double *bl, int lmax, double cutoff_rel,
                                       arkcos_error *err);
/* healpy's Gaussian beam: the kernel of B_l = exp(-l (l + 1) sigma^2 / 2),
 * sigma = fwhm / sqrt(8 ln 2) (healpy.gauss_beam, the meaning of fwhm in
 * healpy.smoothing and HEALPix's smoothing), summed to the l where B_l falls
 * below 1e-17 and cut where it falls below cutoff_rel K(0). It is held as
 * a Gaussian times a smooth factor fitted to the Legendre sum (to 4e-14 of
 * K(0) at 5', 2e-15 at 10 degrees), so plans treat it as a Gaussian (smooth
 * polar caps, no tables); where no factor of up to 24 Chebyshev terms fits
 * (FWHM beyond about 60 degrees, cut at 180) it is a table as
 * arkcos_kernel_from_beam makes. It is wider than ARKCOS_KERNEL_GAUSSIAN of
 * the same fwhm by a relative sigma^2 / 12 in width (3e-4 of the map's rms
 * at 10 degrees). 0 < fwhm <= pi. */
arkcos_kernel *arkcos_kernel_gaussian_harmonic(double fwhm, double cutoff_rel, arkcos_error *err);
/* The untruncated Legendre sum of B_l / B_0 at angle alpha (NAN if B_0 = 0). */
double arkcos_beam_profile(const double *bl, int lmax, double alpha);
/* What a kernel really applies against the window asked for:
 * *max_err = max over l <= lmax of |K_l - B_l / B_0|, at l = *l_worst. */
int arkcos_kernel_window_error(const arkcos_kernel *k, const double *bl, int lmax, double *max_err,
                               int *l_worst, arkcos_error *err);

void arkcos_kernel_destroy(arkcos_kernel *k); /* NULL is a no-op */

double arkcos_kernel_cutoff(const arkcos_kernel *k);   /* radians */
/* Relative level K(cutoff)/K(0) at the truncation (0 for a top-hat edge is
 * reported as 1: the kernel jumps by its full height). */
double arkcos_kernel_cutoff_level(const arkcos_kernel *k);
/* Normalised kernel value at angle alpha (0 beyond the cutoff). */
double arkcos_kernel_value(const arkcos_kernel *k, double alpha);
/* Legendre coefficients K_l, l = 0..lmax, of the truncated, normalised
 * kernel (paper Eq. 2). kl has lmax + 1 entries. */
int arkcos_kernel_legendre(const arkcos_kernel *k, int lmax, double *kl,
                           arkcos_error *err);
/* Eq. (7): RMS error added by truncation for a map with spectrum cl[0..lmax]:
 * sigma^2 = sum_l (2l+1)/(4 pi) (K_l^untruncated - K_l)^2 C_l, where the
 * untruncated kernel is the same profile extended to pi (GAUSSIAN) or to the
 * last tabulated angle (TABLE), normalised to unit integral. Returns sigma. */
double arkcos_kernel_truncation_rms(const arkcos_kernel *k, const double *cl,
                                    int lmax);

/* ------------------------------------------------------------------ plans */

typedef enum { ARKCOS_MODE_ENHANCED = 0, ARKCOS_MODE_PAPER = 1 } arkcos_mode;
typedef enum { ARKCOS_DOUBLE = 0, ARKCOS_SINGLE = 1 } arkcos_precision;
typedef enum {
  ARKCOS_BACKEND_AUTO = 0,
  ARKCOS_BACKEND_CPU = 1,
  ARKCOS_BACKEND_GPU = 2
} arkcos_backend;

typedef struct arkcos_options {
  arkcos_mode mode;           /* default ENHANCED */
  arkcos_precision precision; /* default DOUBLE */
  /* default AUTO, the one backend rule of every command and binding: the
   * GPU when a CUDA device is usable and its plan can be made, else the CPU;
   * also the CPU where only the CPU's plan of the kernel is exact (a support
   * past the GPU's direct sums, as wide Gaussians, which the CPU's harmonic
   * path sums exactly); arkcos_plan_note says why. CPU and GPU are taken as
   * asked (GPU without a device: ARKCOS_ENODEV). */
  arkcos_backend backend;
  int threads;                /* CPU threads; <= 0: OpenMP default */
  int cache_kernel_spectra;   /* keep kernel spectra from plan creation on:
                               * 0 no, 1 yes, ARKCOS_CACHE_AUTO (2) where
                               * the plan with them stays within two maps'
                               * bytes and 64 MB (16 npix + 64e6), else no */
  int device;                 /* CUDA device ordinal */
  /* Oversampling of the kernel grid for ring pairs that involve a
   * polar-cap ring, used only by enhanced plans whose kernel is too wide for
   * the exact path of the caps (arkcos_plan_exactness): 0 = automatic,
   * 1 = the L grid, 2..8 = that factor. Exact plans sum those pairs directly
   * and ignore it; paper mode keeps the paper's L grid. */
  int oversample;
  /* Accuracy asked of the plan (enhanced mode), as a bound on
   * max_p |ARKCoS(x)_p - direct(x)_p| / max_q |x_q| over every map x:
   * 0 (default) = exact: every ring pair takes an exact path (the belt's
   * ring-pair convolution, where both rings have the kernel grid's length;
   * a direct sum over the kernel's support with weights tabulated at plan
   * time everywhere else), so the result equals the direct pixel sum to
   * rounding on the whole sphere. A value EPS > 0 lets the plan take, pair
   * by pair, the cheapest path whose a-priori bound stays below EPS.
   * arkcos_plan_bound reports the bound the plan reached. */
  double accuracy;
  /* 0 (default): a scalar plan, run with arkcos_execute. 2: a spin-2 plan
   * for polarization, run with arkcos_execute_spin2 on Q and U (healpy's
   * convention, docs/POLARIZATION.md): each input pixel's P = Q + iU is
   * carried along the great circle to the output pixel's frame, then
   * weighted with the kernel. Spin-2 plans are enhanced, double precision,
   * CPU (a GPU request gives ARKCOS_ENODEV, AUTO takes the CPU and says so in
   * arkcos_plan_note) and exact on the whole sphere; a kernel too wide for
   * the exact path of the caps is refused. */
  int spin;
  /* Memory the plan may hold, in bytes: 0 (default) = the memory available
   * now (arkcos_memory_available). A plan whose estimate
   * (arkcos_plan_estimate) exceeds it is refused up front with
   * ARKCOS_ENOMEM and both figures, before anything large is allocated. */
  double max_memory;
  /* The polar caps' direct weights (exact CPU plans with direct caps):
   * ARKCOS_WEIGHTS_AUTO (0, default) tabulates them at plan time where the
   * plan with the tables stays within two maps' bytes and 64 MB (16 npix +
   * 64e6, as ARKCOS_CACHE_AUTO; nside 256 at 2.8 pixels per FWHM, 29 MB)
   * and computes them in each execute where it would not (nside 1024 at
   * 2.8 pixels: 88 MB against 455 MB, each execute 1.5-2.5 times as long);
   * double precision, exact plans (the others tabulate where the tables fit
   * $ARKCOS_DIRECT_MAX_GB, else half the machine's memory);
   * ARKCOS_WEIGHTS_TABLES always tabulates them (a plan whose tables do not
   * fit sums the caps on the inexact Fourier path, as arkcos_plan_exactness
   * says); ARKCOS_WEIGHTS_ON_THE_FLY never does (double precision, exact
   * plans; the others tabulate, rounding weights to float where their bound
   * allows): the plan holds no tables and each execute computes the weights
   * it uses, taking about what the tables cost to build (the right choice
   * for a plan executed once; the outputs are bit-identical).
   * $ARKCOS_DIRECT_WEIGHTS=tables|fly overrides. */
  int direct_weights;
} arkcos_options;

enum { ARKCOS_WEIGHTS_AUTO = 0, ARKCOS_WEIGHTS_TABLES = 1, ARKCOS_WEIGHTS_ON_THE_FLY = 2 };
enum { ARKCOS_CACHE_AUTO = 2 };

void arkcos_options_default(arkcos_options *o);

/* Stage timers of the last execute, in seconds (names of the paper's
 * Table 1; "FFTs" there = map_fft + kernel_fft + map_ifft). On the CPU the
 * per-thread times are averaged over threads so that they add up to the wall
 * time; "other" is the wall time not attributed to a stage. */
typedef struct arkcos_stage_times {
  double map_fft, kernel_eval, kernel_fft, reduction, map_ifft;
  double h2d, d2h, other, total;
  double direct; /* the part of reduction spent in directly summed ring pairs */
} arkcos_stage_times;

typedef struct arkcos_plan arkcos_plan;

arkcos_plan *arkcos_plan_create(const arkcos_geometry *g,
                                const arkcos_kernel *k,
                                const arkcos_options *o, arkcos_error *err);
/* in and out hold g->npix values each and must not overlap. */
int arkcos_execute(arkcos_plan *p, const double *in, double *out,
                   arkcos_error *err);
/* Spin-2 plans (options.spin = 2): q_out + i u_out = S (q + i u), each
 * array g->npix values; outputs must not overlap the inputs or each other.
 * arkcos_execute on a spin-2 plan, or this on a scalar plan, is EINVAL. */
int arkcos_execute_spin2(arkcos_plan *p, const double *q, const double *u, double *q_out,
                         double *u_out, arkcos_error *err);
/* The plan's spin: 0 or 2. */
int arkcos_plan_spin(const arkcos_plan *p);
/* 0, or exactly the error arkcos_plan_create(g, k, o) would give for the
 * options, the geometry and kernel, the memory (estimate against what is
 * available) and the backend rule (spin 2 or no device with the GPU asked
 * for), without building the plan's tables, spectra or FFT plans. A create
 * that passes the check can still fail while allocating (ENOMEM) or on the
 * device (a GPU's own memory, a CUDA error). */
int arkcos_plan_check(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                      arkcos_error *err);
/* The part of arkcos_plan_check that needs no geometry or kernel: the
 * options alone (mode, precision, accuracy, spin and their combinations)
 * and the backend rule; the same code and message. */
int arkcos_options_check(const arkcos_options *o, arkcos_error *err);
/* Bytes a plan for (g, k, o) would hold (tables, spectra, FFT buffers,
 * per-thread workspace), estimated without building it, on the high side:
 * measured 1.07-1.27 times arkcos_plan_memory at nside 512, 1.07-1.34 at
 * nside 64-256 (up to 5 at nside 16). 0 with err filled on bad input. */
double arkcos_plan_estimate(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                            arkcos_error *err);
/* One band of a map split over ranks (arkcos_mpi.h), estimated before
 * anything is built: what rank `rank` of `nranks` would hold. The bands are
 * contiguous ranges of |latitude| balanced by output pixels; rank 0 (which
 * reads and writes the files and holds the whole maps) takes the band at
 * the equator, whose rings have no direct tables, the other ranks the bands
 * from the poles down (arkcos_band_of_rank). nranks = 1 is the whole plan:
 * total equals arkcos_plan_estimate. Works in every build (no MPI needed),
 * so that a job can be sized before it is submitted. */
typedef struct arkcos_estimate {
  double total;          /* bytes of the plan: tables + spectra + kernel_spectra
                          * + workspace + fft, with a 15 % margin, + 0.5 MB */
  double tables;         /* the direct tables of the band's cap pairs (exact path) */
  double spectra;        /* ring spectra of the band's output and halo rings */
  double kernel_spectra; /* cached kernel spectra (options.cache_kernel_spectra) */
  double workspace;      /* per-thread work rows */
  double fft;            /* FFTW's plans of the ring lengths it transforms */
  double maps;           /* the band's input (band + halo) and output rings,
                          * 8 bytes a pixel, held by a rank that does not hold
                          * the whole maps (ranks > 0); 0 when nranks = 1 */
  int64_t pixels_out;    /* output pixels of the band */
  int64_t pixels_in;     /* input pixels it reads: its own rings and the halo */
  int64_t halo_pixels;   /* input pixels beyond its own rings */
  int rings_out;         /* output rings of the band */
  int band;              /* which band: 0 at the poles .. nranks - 1 at the equator */
  int collective;        /* 1: the band's execute is collective (the harmonic
                          * path: its a_lm summed over the ranks), so `arkcos
                          * smooth` takes the whole-map path (docs/MPI.md) */
} arkcos_estimate;

int arkcos_plan_estimate_rank(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                              int rank, int nranks, arkcos_estimate *e, arkcos_error *err);
/* The same for a band plan cut as the plan of kernel k_like and options
 * o_like over the same geometry and ranks would be (an MPI plan made with
 * arkcos_plan_create_mpi_as: a spin-2 plan with the scalar plan's bands). */
int arkcos_plan_estimate_rank_as(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                                 const arkcos_kernel *k_like, const arkcos_options *o_like, int rank, int nranks,
                                 arkcos_estimate *e, arkcos_error *err);
/* The band cost model (plan.c) that cuts the bands over ranks: rank's
 * modelled seconds per map at one thread, parts[0] direct sums, parts[1]
 * Fourier pairs (kernel spectra and reduction), parts[2] ring FFTs. */
int arkcos_plan_estimate_cost(const arkcos_geometry *g, const arkcos_kernel *k, const arkcos_options *o,
                              int rank, int nranks, double parts[3], arkcos_error *err);
/* Bytes of memory available now, what plans are checked against when
 * options.max_memory is 0: $ARKCOS_MEMORY_GB when set (e.g. a node shared
 * with other jobs), else MemAvailable (/proc/meminfo), lowered to what the
 * process's cgroup leaves under its limit (batch systems hold a job to it). */
double arkcos_memory_available(void);
/* Bytes of memory this process can obtain at all, now: the least of the
 * address space left under RLIMIT_AS (ulimit -v, less what is mapped
 * already), what the cgroup leaves under its limit and MemAvailable +
 * SwapFree; INFINITY when none is known. A job that needs more cannot
 * succeed, whatever max_memory or a config's limits say (a plan's
 * max_memory above it is lowered to it). *what (when not NULL) names the
 * bound that decided, as a phrase for messages. ARKCOS_MEMORY_GB does not
 * raise it. arkcos_memory_available() is never above the RLIMIT_AS part. */
double arkcos_memory_limit(const char **what);
/* The band of rank `rank` of `nranks`: rank 0 the last (at the equator),
 * rank r > 0 band r - 1. */
int arkcos_band_of_rank(int rank, int nranks);
void arkcos_plan_stages(const arkcos_plan *p, arkcos_stage_times *t);
/* Where arkcos_plan_create spent its time, in seconds of wall clock: FFTW's
 * planning (FFTW_ESTIMATE unless ARKCOS_FFTW_PLANNER=measure), the polar
 * caps' direct tables, the cached kernel spectra (cache_kernel_spectra),
 * and the whole creation (total; the rest is ring ranges, grids, buffers
 * and the bound). Zero where a stage did not run (a GPU plan fills total). */
typedef struct arkcos_plan_times {
  double fftw, tables, kernel_spectra, total;
} arkcos_plan_times;
void arkcos_plan_setup_times(const arkcos_plan *p, arkcos_plan_times *t);
arkcos_backend arkcos_plan_backend(const arkcos_plan *p); /* CPU or GPU */
size_t arkcos_plan_memory(const arkcos_plan *p); /* bytes held by the plan */
/* How plan p holds the polar caps' direct weights (options.direct_weights;
 * AUTO decides by the plan's memory): ARKCOS_WEIGHTS_TABLES, tabulated at
 * plan time; ARKCOS_WEIGHTS_ON_THE_FLY, computed in each execute (a GPU
 * plan's device does so too); 0 where no ring pair is summed directly (the
 * harmonic path, the smooth caps, paper mode, caps on the inexact path). */
int arkcos_plan_direct_weights(const arkcos_plan *p);
/* Room for n map values, 64-byte aligned, for arkcos_execute's in and out:
 * page-locked (pinned) host memory when p runs on the GPU, so that the
 * copies to and from the device run at the link's rate with no staging
 * (any other memory works, through pinned staging buffers); ordinary
 * memory otherwise, or when no pinned memory can be had. NULL when out of
 * memory. Give it back with arkcos_map_free (NULL is a no-op). */
double *arkcos_map_alloc(const arkcos_plan *p, int64_t n);
void arkcos_map_free(double *map);
/* Why an AUTO plan runs on the CPU although a GPU was found ("" otherwise). */
const char *arkcos_plan_note(const arkcos_plan *p);
/* A-priori worst-case bound of the plan against the direct pixel sum:
 * for every input map x, max_p |out_p - direct_p| <= bound * max_q |x_q|
 * (rounding of every stage included; docs/EXACTNESS.md derives it).
 * Paper mode, whose polar caps are not exact, reports +infinity. */
double arkcos_plan_bound(const arkcos_plan *p);
/* "" when the plan is exact on the whole sphere (enhanced mode); else why
 * not: a kernel so wide (in pixels) that the exact path of the polar caps
 * would cost too much keeps the oversampled Fourier path there, whose error
 * is about the kernel's relative level at its cutoff. Its bound is then
 * +infinity. Paper mode says nothing here (it is the paper's algorithm). */
const char *arkcos_plan_exactness(const arkcos_plan *p);
void arkcos_plan_destroy(arkcos_plan *p); /* NULL is a no-op */

/* --------------------------------------------------------------- smoother */

/* What "smooth this map" means, for every caller (the `arkcos smooth`
 * command, the Python package, C programs): HEALPix maps in, smoothed maps
 * out, with the policy that goes with it: missing data and masks, the
 * narrow-kernel rule, the default truncation of a Gaussian per nside and
 * spin, Stokes Q and U as one spin-2 field, RING or NESTED order, and the
 * certified bound and every warning returned as data (nothing printed).
 *
 * Missing data: a pixel is missing where it is NaN, +-inf or UNSEEN
 * (ARKCOS_UNSEEN, within healpy's tolerance |x - UNSEEN| <= 1e-8 +
 * 1e-5 |UNSEEN|). With m a map with its missing pixels set to 0, w its
 * weight (0 where m is missing, the mask's value elsewhere, 1 without a
 * mask) and A the smoothing:
 *
 *   ARKCOS_MASK_NORMALIZE  out = A(w m) / A(w), the normalised convolution
 *                          (an average of the data that exist), UNSEEN
 *                          where A(w) < min_weight or A(w) <= 1e-12
 *   ARKCOS_MASK_ZERO       out = A(w m), missing pixels count as 0
 *
 * A(w) costs one smoothing per distinct weight map in a call: maps whose
 * missing pixels are the same share it. A map without missing pixels and
 * without a mask is smoothed as is (w = 1: no division, no threshold).
 * Stokes Q and U (pol_q, pol_u) are one field P = Q + iU smoothed with the
 * spin-2 plan S2: missing where Q or U is, out = S2(w P) / S0(w) (normalize)
 * or S2(w P) (zero), S0(w) = A(w) the scalar smoothing of the weights.
 *
 * Narrow kernels (docs/NARROW_BEAMS.md): below 1 pixel per FWHM (the FWHM
 * of a Gaussian, the effective width sqrt(4 ln 2 <alpha^2>) of any other
 * kernel, over the pixel size sqrt(4 pi / npix)) a pixel-space smoothing is
 * refused (ARKCOS_EINVAL) unless allow_subpixel; below 2.5 a warning gives
 * the error expected against harmonic smoothing. normalize divides by the
 * response to a constant map, A(m) / A(1), so that a constant map stays
 * constant (not again where the mask's A(w m) / A(w) normalised it). */

#define ARKCOS_UNSEEN (-1.6375e30)

typedef enum { ARKCOS_MASK_NORMALIZE = 0, ARKCOS_MASK_ZERO = 1 } arkcos_mask_mode;

/* A caller's smoothing operator in place of the engine's plans (a
 * reference method, a plan split over MPI ranks, ...). prepare is called
 * once per spin (0: scalar, 2: Q and U) at the first need, with the
 * smoother's geometry and the kernel of that spin (both live as long as the
 * smoother); apply / apply_spin2 then smooth one map (one Q, U pair) in
 * RING order, outputs never overlapping inputs. Each returns 0 or an
 * ARKCOS_E* code with err filled. harmonic: the operator does not sample
 * the kernel on the pixels (harmonic smoothing): no narrow-kernel rule, and
 * normalize does not apply. plan (may be NULL, the last member: initialise
 * the whole struct): the engine plan that apply runs for that spin, after
 * prepare, or NULL when it runs none; where the smoother divides by A(1) it
 * then makes A(1) from that plan ring by ring (never a whole map of ones or
 * of A(1)), as with its own plans. */
typedef struct arkcos_smoother_operator {
  void *ctx;
  int (*prepare)(void *ctx, int spin, const arkcos_geometry *g, const arkcos_kernel *k,
                 arkcos_error *err);
  int (*apply)(void *ctx, const double *in, double *out, arkcos_error *err);
  int (*apply_spin2)(void *ctx, const double *q, const double *u, double *q_out,
                     double *u_out, arkcos_error *err);
  int harmonic;
  arkcos_plan *(*plan)(void *ctx, int spin);
} arkcos_smoother_operator;

typedef struct arkcos_smoother_spec {
  int64_t nside;      /* >= 1; a power of 2 when nested */
  int nested;         /* maps and masks in NESTED order (returned NESTED) */
  /* The kernel, one of three (the first set wins; two set is EINVAL):
   * user_kernel, a kernel of the caller's (borrowed, must outlive the
   * smoother); beam, a B_l (l = 0..beam_lmax) made a kernel by
   * arkcos_kernel_from_beam cut at kernel.cutoff_rel (0: 1e-5; copied at
   * create); else kernel: GAUSSIAN (fwhm; fwhm = 0 is no smoothing, the
   * identity), TOPHAT (cutoff = radius), TABLE. A Gaussian without cutoff
   * and cutoff_rel is cut at arkcos_gaussian_default_cutoff_rel for nside
   * and the spin of the maps (its scalar and spin-2 kernels may differ). */
  arkcos_kernel_spec kernel;
  const double *beam;
  int beam_lmax;
  const arkcos_kernel *user_kernel;
  /* The plans' options (spin is ignored: the scalar plan has 0, the plan of
   * Q and U 2, exact and double precision whatever accuracy and precision
   * say; a pair with precision SINGLE is EINVAL). */
  arkcos_options options;
  arkcos_mask_mode mask_mode;
  double min_weight;  /* normalize: in [0, 1] (0: no threshold); -1: the
                       * default, 0.5 (normalize) or 0 (zero, where any
                       * other value is EINVAL); else EINVAL */
  int normalize;      /* divide by A(1) (pixel-space smoothing only) */
  int allow_subpixel; /* below 1 pixel per FWHM: smooth anyway, with a warning */
  const arkcos_smoother_operator *op; /* NULL: the engine's plans (copied) */
  /* How the caller's users ask for normalize, allow_subpixel and harmonic
   * smoothing, quoted in messages ("--normalize", "--allow-subpixel with
   * --method direct", "--method fsht"); NULL: in words, or the remedy is not
   * offered. Borrowed for the smoother's life. */
  const char *normalize_name, *allow_subpixel_name, *harmonic_name;
  /* How the pixel sum integrates (not for harmonic operators):
   * ARKCOS_QUADRATURE_POLAR (arkcos_smoother_spec_default's; a zeroed spec
   * has RING): ring quadrature, and the part of the integral within ~26
   * rings of each pole taken against the map's band-limited reconstruction
   * there, Q and U as one spin-2 field (docs/EXACTNESS.md, "Polar
   * reconstruction"): a band-limited map's error next to the poles falls
   * from 1e-3 - 5e-3 to 3e-7, the kink's level, from 4 pixels per FWHM at
   * nside >= 64; its solve rounds at ~5e-8 of the output for maps with
   * pixel-scale noise. Kernels below ARKCOS_POLAR_MIN_PPF pixels per
   * FWHM, top-hats, nside < 32, a cap with a missing or
   * masked pixel among its first ~32 rings as RING (a masked set's
   * caps divided by its A(w), ring quadrature, plus the correction of 1;
   * arkcos smooth over MPI ranks applies it to the
   * bands itself through arkcos_smoother_polar, polar.h; a map with missing
   * pixels or a mask there as RING, with a note). ARKCOS_QUADRATURE_RING: each ring's pixels weighted by
   * arkcos_healpix_ring_weights, which cuts a band-limited map's error at
   * the cap/belt boundary 350-7000 fold from 4 pixels per FWHM and next to
   * the poles 2-6 fold (docs/EXACTNESS.md, "Polar quadrature"); below
   * ARKCOS_RING_DIVIDE_PPF pixels per FWHM the result (RING or POLAR) is
   * also divided by the smoothing of those weights, A(W m) / A(W) (with a
   * mask: A(W w m) / A(W w), zero mode A(W w m) / A(W)), so that a constant
   * map stays constant to rounding, at the cost of one more smoothing per
   * smoother; wider, the weights alone keep it within 2.1e-6 (3e-8 at 24
   * pixels per FWHM; 1e-7 with POLAR). ARKCOS_QUADRATURE_POINT: pixel
   * centres with equal weights, A(m) (healpy's iter 0 and the paper). */
  int quadrature;
} arkcos_smoother_spec;

enum { ARKCOS_QUADRATURE_RING = 0, ARKCOS_QUADRATURE_POINT = 1, ARKCOS_QUADRATURE_POLAR = 2 };
#define ARKCOS_RING_DIVIDE_PPF 8.0
/* ARKCOS_QUADRATURE_POLAR reconstructs the caps from this many pixels per
 * FWHM: narrower, the pixel sum's own error on the caps' middle rings
 * (4.7e-2 of a band-limited map's largest value at 1.5 px/FWHM, nside 64)
 * is larger than what the reconstruction removes at the pole (there 4.7e-2
 * -> 2.1e-2), so it would cost time for no gain in the map's worst pixel;
 * at 2 px/FWHM that worst pixel goes from 2.3e-2 to 9.3e-3. */
#define ARKCOS_POLAR_MIN_PPF 2.0

/* nside 0 (must be set), a Gaussian of fwhm 0, no beam, no user kernel,
 * arkcos_options_default, normalize mode, min_weight -1 (default), no
 * normalize, no allow_subpixel, no operator, no names, quadrature
 * ARKCOS_QUADRATURE_POLAR. */
void arkcos_smoother_spec_default(arkcos_smoother_spec *s);

/* A warning returned as data: code and message (no trailing newline). */
enum {
  ARKCOS_WARN_NARROW = 1,   /* below 2.5 pixels per FWHM: the expected error */
  ARKCOS_WARN_SUBPIXEL = 2, /* below 1 pixel per FWHM, allow_subpixel: no smoothing */
  ARKCOS_WARN_NOTE = 3,     /* a plan's note (arkcos_plan_note: AUTO took the CPU) */
  ARKCOS_WARN_INEXACT = 4   /* a plan that is not exact (arkcos_plan_exactness) */
};
typedef struct arkcos_warning {
  int code;
  char msg[1024];
} arkcos_warning;

typedef struct arkcos_smoother arkcos_smoother;

/* The error arkcos_smoother_create would give for spec (the same code and
 * message), found without building a plan or any map: the kernel is made
 * and freed again (below 2.5 pixels per FWHM, with the nside's rings, to
 * measure it on a sample of pixels). 0 or an ARKCOS_E* code with err
 * filled. The narrow-kernel warnings create would record go to warn[0 ..
 * *nwarn) when warn is not NULL (*nwarn: in, the room; out, how many). */
int arkcos_smoother_check(const arkcos_smoother_spec *spec, arkcos_warning *warn, int *nwarn,
                          arkcos_error *err);
/* A smoother for maps of spec->nside: the geometry and the kernels now,
 * each plan (or operator) at its first need (arkcos_smoother_prepare makes
 * it before). NULL with err filled on failure. */
arkcos_smoother *arkcos_smoother_create(const arkcos_smoother_spec *spec, arkcos_error *err);
/* Makes the plan (prepares the operator) of spin 0 or 2 now. */
int arkcos_smoother_prepare(arkcos_smoother *s, int spin, arkcos_error *err);

/* One call's maps: nmaps maps of npix values each in the spec's order.
 * out[i] may be in[i] (smoothed in place); weight (NULL, or nmaps pointers,
 * NULL ones not wanted) receives A(w) of each map (Q and U share theirs);
 * where ring quadrature divides by A(W) (arkcos_smoother_divides) the share
 * A(W w) / A(W), 1 where nothing is missing (elsewhere A(W w), within 2e-6
 * of it), which min_weight also holds against.
 * pol_q, pol_u: the two maps smoothed as one spin-2 field, or -1, -1.
 * mask: NULL, or npix weights in [0, 1] in the spec's order (NaN, +-inf and
 * UNSEEN count as 0; others outside [0, 1] are EINVAL naming the pixel),
 * applied to every map. progress (or NULL) is called with progress_ctx
 * after each map is smoothed (n = 1, map its index) and after the Q, U pair
 * (n = 2, map = pol_q), in the order they are smoothed; in[map] (in[pol_q]
 * and in[pol_u]) is not read after it, so it may be freed there.
 * overwrite_in = 1 lets a RING call use an input that is not its own
 * output as work space (w m, then the map of ones of A(W)): in[i] must then
 * be writable and its values are lost; it spares work maps. */
typedef struct arkcos_smoother_maps {
  int nmaps;
  const double *const *in;
  double *const *out;
  double *const *weight;
  int pol_q, pol_u;
  const double *mask;
  void (*progress)(void *ctx, int map, int n);
  void *progress_ctx;
  int overwrite_in;
} arkcos_smoother_maps;

int arkcos_smoother_execute(arkcos_smoother *s, const arkcos_smoother_maps *m, arkcos_error *err);

/* What the last execute did, per map and over the call. */
typedef struct arkcos_smoother_map_report {
  int64_t missing;  /* input pixels missing (Q and U: where either is) */
  int64_t excluded; /* left out: missing, or given weight 0 by the mask */
  int64_t unseen;   /* output pixels set to UNSEEN */
  int weighted;     /* 0: complete and no mask, smoothed as is */
  int weight_map;   /* which distinct weight map (0 ..) it has */
} arkcos_smoother_map_report;

typedef struct arkcos_smoother_report {
  int nmaps;
  int nweight_maps;      /* distinct weight maps of the call */
  int weights_smoothed;  /* A(w) smoothed (0 when no map needed one) */
  int64_t pol_union;     /* pixels missing in only one of Q and U (made missing in both) */
  double weight_time;    /* seconds of the A(w) smoothings */
  arkcos_stage_times stages; /* the engine's plans: summed over the call's smoothings */
} arkcos_smoother_report;

/* 0, or EINVAL when i is not a map of the last call. */
int arkcos_smoother_last(const arkcos_smoother *s, arkcos_smoother_report *r);
int arkcos_smoother_last_map(const arkcos_smoother *s, int i, arkcos_smoother_map_report *r);
/* The caps where map i of the last call took the polar reconstruction
 * (ARKCOS_QUADRATURE_POLAR): bit 0 the north cap, bit 1 the south; 0 where
 * it took ring quadrature throughout (another quadrature; nside below 32, a
 * top-hat, a kernel narrower than ARKCOS_POLAR_MIN_PPF pixels per FWHM or
 * reaching too far from the caps; missing or masked pixels in a cap's
 * disc; Q and U divided by an A(1) that took none); -1 when i is not a map
 * of the last call. */
int arkcos_smoother_last_polar(const arkcos_smoother *s, int i);
/* Seconds the smoother has spent making its polar reconstructions (with
 * each spin's plan, at its first map: plan work, not counted in the
 * stages of arkcos_smoother_last), over its life. */
double arkcos_smoother_polar_time(const arkcos_smoother *s);

/* The warnings recorded so far (narrow kernel at create, each plan's note
 * and exactness when it is made), i = 0 .. arkcos_smoother_nwarnings - 1. */
int arkcos_smoother_nwarnings(const arkcos_smoother *s);
const arkcos_warning *arkcos_smoother_warning(const arkcos_smoother *s, int i);

/* The kernel of spin 0 or 2 (NULL: the identity, fwhm 0). */
const arkcos_kernel *arkcos_smoother_kernel(const arkcos_smoother *s, int spin);
/* The kernel a smoother of spec would use for maps of spin 0 or 2, made
 * for the caller (destroy it); NULL with err filled, or with err->code 0
 * for the identity. */
arkcos_kernel *arkcos_smoother_make_kernel(const arkcos_smoother_spec *spec, int spin,
                                           arkcos_error *err);
/* The engine's plan of spin 0 or 2 once made (NULL before, with an
 * operator, and for the identity): its backend, note, memory, stages. */
const arkcos_plan *arkcos_smoother_plan(const arkcos_smoother *s, int spin);
/* The a-priori bound of the plans made so far (the largest; 0 for the
 * identity or before any; NAN with an operator): for every map x,
 * max |out - direct sum of x| <= bound * max |x| where nothing is missing. */
double arkcos_smoother_bound(const arkcos_smoother *s);
/* 1 when the smoother divides its outputs by the smoothing of a constant
 * map (A(W) under ring quadrature below ARKCOS_RING_DIVIDE_PPF pixels per
 * FWHM, A(1) with normalize), else 0. */
int arkcos_smoother_divides(const arkcos_smoother *s);
/* 1 when a smoother of spec that divides (normalize: as
 * arkcos_smoother_divides says) makes A(1) (A(W)) ring by ring where it
 * divides a map, never holding it whole: maps without a mask or missing
 * pixels (masked 0), the exact CPU plan (enhanced mode, no accuracy to
 * trade, backend cpu, or auto where no GPU is usable) with its direct
 * weights on the fly (options.direct_weights), and an operator, if any,
 * that lends its plan (not harmonic). The rule of the execute
 * (smoother_mask.c), for memory estimates. */
int arkcos_smoother_streams_division(const arkcos_smoother_spec *spec, int normalize, int masked);
/* Pixels per FWHM of the kernel at the smoother's nside (0: identity). */
double arkcos_smoother_pixels_per_fwhm(const arkcos_smoother *s);
/* Bytes a smoother of spec would hold for calls of nmaps maps (pair: a Q,
 * U pair among them; masked: a mask or missing pixels): its plans
 * (arkcos_plan_estimate) and its work maps, estimated without building
 * anything; 0 with err filled on bad input. */
double arkcos_smoother_estimate(const arkcos_smoother_spec *spec, int nmaps, int pair, int masked,
                                arkcos_error *err);
void arkcos_smoother_destroy(arkcos_smoother *s); /* NULL is a no-op */

/* ------------------------------------------------------------ GPU / info */

/* 1 if built with CUDA and a device is present; otherwise 0 and a reason
 * ("built without CUDA", "no CUDA device found: ...") in why. */
int arkcos_gpu_available(char *why, size_t len);
/* 1 if built with CUDA and the NVIDIA driver's libcuda.so.1 can be loaded
 * (or $ARKCOS_GPU_MODULE names a module): then arkcos_gpu_available loads
 * the GPU module (the CUDA runtime and cuFFT, about 10 MB resident) to
 * look for a device; 0 otherwise, when it answers without loading it. */
int arkcos_gpu_driver(void);
/* Multi-line human-readable description of the CUDA runtime, driver, cuFFT
 * and devices, or "built without CUDA". */
void arkcos_gpu_describe(char *buf, size_t len);

typedef struct arkcos_gpu_device_info {
  char name[256];
  int sm_count, cc_major, cc_minor;
  size_t total_memory;
  int clock_khz, memory_clock_khz;
} arkcos_gpu_device_info;

typedef struct arkcos_gpu_info {
  int built_with_cuda;
  int runtime_version, driver_version, cufft_version;
  int ndevices;
  arkcos_gpu_device_info devices[8];
} arkcos_gpu_info;

void arkcos_gpu_query(arkcos_gpu_info *info);

/* The host-device copy limit: median seconds to copy `bytes` from pinned
 * host memory to the device (*h2d) and back (*d2h) over `reps` repeats.
 * ARKCOS_ENODEV without a device or without CUDA. */
int arkcos_gpu_copy_time(int device, size_t bytes, int reps, double *h2d, double *d2h,
                         arkcos_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ARKCOS_H */
