/*
 * cmd_smooth.c -- `arkcos smooth`: convolve HEALPix maps with a radial
 * kernel (ARKCoS, the direct sum or libsharp FSHT smoothing).
 *
 * Flags, FITS I/O and printing around the engine's smoother
 * (arkcos_smoother, arkcos.h), which holds what smoothing a map means:
 * missing data and masks, Q and U, the narrow-kernel rule, --normalize, the
 * default cut; the method (arkcos, direct, fsht, the MPI split) is its
 * operator here. Everything a user can get wrong is checked before any map
 * is smoothed: options, kernel, every input's header, every output's name. One kernel
 * and one plan (per nside) serve all the maps, which is the point of plan
 * reuse (issue 7): a Planck channel's detector maps or a batch of Monte
 * Carlo realisations pay for the kernel set-up once.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <libgen.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arkcos/arkcos.h"
#include "arkcos/bigmem.h"
#include "harness/commands.h"
#include "harness/common/hmpi.h"
#include "harness/common/mapio.h"
#include "harness/common/method.h"
#include "harness/common/options.h"
#include "harness/smooth/smooth_mask.h"
#include "harness/smooth/smooth_checks.h"
#include "harness/smooth/smooth_beam.h"
#include "harness/smooth/smooth_memory.h"
#include "harness/smooth/smooth_progress.h"
#include "harness/common/status.h"
#include "harness/common/util.h"

/* --beam-file's default --cutoff-rel (smooth_beam.c's usage; a Gaussian's
 * default cut is the engine smoother's, arkcos_gaussian_default_cutoff_rel) */
#define DEFAULT_CUTOFF_REL 1e-5

typedef struct smooth_args {
  const char **pos;
  int npos;
  double fwhm_arcmin, tophat_deg, cutoff_deg, cutoff_rel;
  const char *kernel_file;
  double accuracy; /* arkcos_options.accuracy: 0 exact */
  double max_memory; /* arkcos_options.max_memory: 0 the memory available */
  method_kind method;
  arkcos_mode mode;
  arkcos_precision precision;
  arkcos_backend backend;
  long threads, lmax, iter;
  int force, verbose, quiet;
  int mpi_split; /* --mpi-split: each map over all MPI ranks (docs/MPI.md) */
  int dry_run;   /* --dry-run: the checks and the memory prediction, nothing else */
  long ranks;    /* --ranks N: the ranks --dry-run predicts for (mpirun's without it) */
  pol_opts pol; /* --pol, --no-pol */
  mask_opts mask; /* --mask, --mask-mode, --min-weight, --write-weight */
  narrow_opts narrow; /* --normalize, --allow-subpixel, --kernel-unit, --allow-negative */
  beam_opts beam;     /* --beam-file, --beam-column, --beam-tolerance */
  /* which options were given: for the "both / neither" checks, the
   * --accuracy and --ranks rules and the defaults that depend on them (the
   * "applies only to" checks read the parsed table, opts) */
  int has_fwhm, has_kernel, has_tophat, has_cutoff_deg, has_cutoff_rel, has_lmax, has_oversample,
      has_accuracy, has_ranks;
  int quadrature;        /* --quadrature: ARKCOS_QUADRATURE_POLAR (default), _RING or _POINT */
  json_t *opts;          /* the parsed options (options.h); strings above point into it or argv */
  int gaussian_harmonic; /* --gaussian harmonic: healpy's Gaussian beam for --fwhm-arcmin */
} smooth_args;

static void usage(FILE *f) {
  fprintf(f,
"usage: arkcos smooth IN.fits OUT.fits\n"
"                     (--fwhm-arcmin F | --kernel-file FILE | --tophat-deg R |\n"
"                      --beam-file FILE)\n"
"                     [--cutoff-deg R | --cutoff-rel EPS] [options]\n"
"       arkcos smooth IN1.fits [IN2.fits ...] OUTDIR/ ...\n"
"\n"
"Smooths HEALPix maps (FITS binary tables as healpy writes them) with a\n"
"radial kernel truncated at a cutoff and normalised to unit integral, so a\n"
"constant map stays constant.\n"
"\n"
"With several inputs, or when the last argument is an existing folder or ends\n"
"in '/', each IN is written to OUTDIR/<name of IN> (the folder is created if\n"
"it ends in '/' and does not exist). Every column of a multi-column map is\n"
"smoothed and written to the same column of the output, which keeps the\n"
"input's ORDERING (RING or NESTED), float type, column names, units and\n"
"COORDSYS; Stokes Q and U together as one spin-2 field (see Polarization).\n"
"One kernel and one plan serve all maps of the same nside.\n"
"\n"
"Kernel (exactly one):\n"
"  --fwhm-arcmin F      Gaussian beam of full width at half maximum F arcmin\n"
"  --gaussian G         profile (default): --fwhm-arcmin is a Gaussian in angle,\n"
"                       exp(-a^2 / 2 sigma^2) (the paper's); harmonic: healpy's\n"
"                       Gaussian beam B_l = exp(-l(l+1) sigma^2 / 2), as\n"
"                       healpy.smoothing(fwhm=) means it (wider by sigma^2 / 12)\n"
"  --kernel-file FILE   radial profile: two columns, angle (radians, or see\n"
"                       --kernel-unit) and K >= 0 (see --allow-negative),\n"
"                       increasing angles ('#' comments allowed)\n"
"  --tophat-deg R       top-hat: constant inside a radius of R degrees, 0 outside,\n"
"                       0 < R <= 180 (R is the cutoff)\n"
"  --beam-file FILE     beam transfer function B_l (healpy/Planck FITS or text\n"
"                       `l B_l`), made a compact kernel: see Beam transfer\n"
"                       functions below\n"
"Truncation (at most one; not with --tophat-deg; default for a Gaussian:\n"
"--cutoff-rel 1e-13 for scalar columns with at least 4 pixels per FWHM, whose\n"
"polar caps are then exact through the Fourier path with no tables, and for\n"
"Q, U of a beam whose band limit 9.4 / sigma + 8 is low enough for the\n"
"harmonic path (with libsharp; 2.5 nside at nside 1024, docs/POLARIZATION.md);\n"
"else 1e-5; for a kernel file the last tabulated angle):\n"
"  --cutoff-deg R       cut at R degrees, 0 < R <= 180\n"
"  --cutoff-rel EPS     cut where K first falls below EPS K(0), 0 < EPS < 1\n"
"Method:\n"
"  --method M           arkcos (default), direct (exact direct sum over the\n"
"                       pixels within the cutoff; slow), fsht (libsharp\n"
"                       map2alm, times K_l, alm2map)\n"
"  --quadrature Q       arkcos and direct: polar (default): ring, and the\n"
"                       integral within ~26 rings of each pole taken against\n"
"                       the map's band-limited reconstruction there (Q and U\n"
"                       as one spin-2 field): a band-limited map's error next\n"
"                       to the poles falls from 1e-3 - 5e-3 to 3e-7 at 4 pixels\n"
"                       per FWHM and wider (nside >= 64; docs/EXACTNESS.md);\n"
"                       kernels below 2 pixels per FWHM, top-hats, nside <\n"
"                       32, and a cap with missing or masked pixels near its\n"
"                       pole (over MPI ranks as in one process) take ring;\n"
"                       the summary line's polar= says\n"
"                       which caps took it (both, north, south, none; per\n"
"                       column where they differ), its plan= the time making\n"
"                       it took (polar S); ring: each ring's pixels weighted\n"
"                       for an accurate integral at |z| = 2/3 and near the\n"
"                       poles (a band-limited map's error falls 350-7000 fold\n"
"                       at |z| = 2/3 from 4 pixels per FWHM, 2-6 fold next to\n"
"                       the poles), and below 8 pixels per FWHM the result\n"
"                       divided by the smoothing of those weights, A(W m) /\n"
"                       A(W), so that a constant map stays constant (wider:\n"
"                       within 2e-6 without it); point: pixel centres, equal\n"
"                       weights, A(m)\n"
"                       (the paper's, healpy's iter 0)\n"
"  --mode M             arkcos only: enhanced (default) or paper\n"
"  --precision P        arkcos only: double (default) or single\n"
"  --oversample Q       arkcos only: no effect (the polar caps are summed exactly\n"
"                       now); Q in [0, 8] is still accepted, with a warning\n"
"  --backend B          arkcos only: auto (default: GPU if one is usable, else\n"
"                       CPU; the CPU also where only its plan of the kernel is\n"
"                       exact, e.g. wide Gaussians, with a note), cpu or gpu\n"
"                       (exit 2 if there is no usable GPU)\n"
"  --accuracy EPS       arkcos, enhanced mode only: 0 (default) = exact, the\n"
"                       direct sum to rounding everywhere; EPS > 0 lets the plan\n"
"                       take cheaper paths while its a-priori bound on\n"
"                       max |ARKCoS - direct| / max |input| stays below EPS\n"
"  --lmax L             fsht only: band limit, 1 <= L <= 4 nside\n"
"                       (default 3 nside - 1)\n"
"  --iter N             fsht only: Jacobi iterations of map2alm, N >= 0\n"
"                       (default 3, as HEALPix and healpy)\n"
"Missing data (UNSEEN, NaN and +-inf pixels, pixels a partial-sky map does not\n"
"list, pixels a --mask gives weight 0; each column has its own; bad_pixels= counts\n"
"them over the columns):\n"
"  --mask FILE          HEALPix map of 0/1 or weights in [0, 1] with the input's\n"
"                       NSIDE (any ORDERING); the weight w of a pixel is 0 where\n"
"                       the data are missing, else the mask's value (1 without)\n"
"  --mask-mode M        normalize (default): out = A(w m) / A(w), the normalised\n"
"                       convolution (an average of the data that exist); zero:\n"
"                       out = A(w m), missing pixels count as 0, every output\n"
"                       pixel kept\n"
"  --min-weight W       normalize only: output UNSEEN where A(w) < W, 0 <= W <= 1\n"
"                       (default 0.5; 0: no threshold); A is the smoothing\n"
"  --write-weight       also write A(w) as a column WEIGHT after the maps\n"
"                       (WEIGHT_<column> per column when their w differ)\n"
"Columns without missing pixels are smoothed as is when there is no --mask.\n"
"Per column, stderr says how many pixels were missing and became UNSEEN.\n"
"Other:\n"
"  --threads N          CPU threads; 0 or none: all cores (%d here)\n"
"  --max-memory SIZE    arkcos: memory a plan may hold (bytes, or 8G, 500M);\n"
"                       default the memory available now; a plan estimated\n"
"                       above it is refused before it allocates (exit 1)\n"
"  --force              overwrite existing outputs\n"
"  -q, --quiet          no progress lines (they are shown only when stderr is a\n"
"                       terminal: the plans being made and each map done, with\n"
"                       the time elapsed and the time expected for the rest)\n"
"  --mpi-split          under mpirun (a build with make MPI=1): smooth each map\n"
"                       with all ranks, its rings split into latitude bands\n"
"                       (the default for a single input); without it several\n"
"                       inputs are shared out over the ranks, a map per rank\n"
"  --dry-run            arkcos: run every check, then print the memory each\n"
"                       rank would hold (maps, the plan's tables, spectra and\n"
"                       buffers) and whether it fits the memory available on\n"
"                       its host; read, plan and write nothing (exit 0 fits,\n"
"                       1 does not fit); under mpirun, a run makes the same\n"
"                       check before it reads a map and refuses (exit 1)\n"
"  --ranks N            --dry-run without mpirun: predict for N ranks on this\n"
"                       host (default 1; a single input is split into bands)\n"
"  -v, --verbose        also print each plan's a-priori bound against the\n"
"                       direct sum (\"bound: ...\" lines; \"spin=2\" on the\n"
"                       plan of Q and U)\n"
"  --help               this text\n"
"%s%s%s"
"\n"
"Prints one line per input file with the stage times, plus a plan/per-map\n"
"line when several maps were smoothed. Exit status: 0 success, 1 runtime\n"
"failure, 2 bad usage or bad input (nothing is written). Outputs are written\n"
"to a temporary file and renamed; with several inputs, outputs finished\n"
"before a runtime failure are kept.\n",
          omp_get_max_threads(), smooth_checks_pol_usage, smooth_checks_usage, smooth_beam_usage);
}

/* ------------------------------------------------------------- parsing */

/* The command's options: rows of the harness's one option table
 * (harness/common/options.h), which checks each value against its row's
 * type and range as it checks a JSON config's; the method rows (--method,
 * --mode, --iter, ...) become the method spec as a config's method object
 * does (method_spec_from_json). */
static const opt_arg smooth_opts[] = {
    /* kernel and truncation */
    {OPT_FWHM_ARCMIN, NULL}, {OPT_GAUSSIAN, NULL}, {OPT_KERNEL_PATH, NULL}, {OPT_TOPHAT_RADIUS, NULL},
    {OPT_BEAM_FILE, NULL}, {OPT_BEAM_COLUMN, NULL}, {OPT_BEAM_TOLERANCE, NULL}, {OPT_CUTOFF_DEG, NULL},
    {OPT_CUTOFF_REL, NULL}, {OPT_KERNEL_UNIT, NULL}, {OPT_ALLOW_NEGATIVE, NULL},
    /* method */
    {OPT_METHOD, NULL}, {OPT_QUADRATURE, NULL}, {OPT_MODE, NULL}, {OPT_PRECISION, NULL},
    {OPT_OVERSAMPLE, NULL}, {OPT_BACKEND, NULL}, {OPT_ACCURACY, NULL}, {OPT_LMAX, NULL}, {OPT_ITER, NULL},
    {OPT_NORMALIZE, NULL}, {OPT_ALLOW_SUBPIXEL, NULL},
    /* missing data, Q and U */
    {OPT_MASK, NULL}, {OPT_MASK_MODE, NULL}, {OPT_MIN_WEIGHT, NULL}, {OPT_WRITE_WEIGHT, NULL},
    {OPT_SMOOTH_POL, NULL}, {OPT_NO_POL, NULL},
    /* other */
    {OPT_THREADS, NULL}, {OPT_MAX_MEMORY, NULL}, {OPT_FORCE, NULL}, {OPT_QUIET, "-q"},
    {OPT_MPI_SPLIT, NULL}, {OPT_DRY_RUN, NULL}, {OPT_RANKS, NULL}, {OPT_VERBOSE, "-v"},
};
#define NSMOOTH_OPTS ((int)(sizeof smooth_opts / sizeof smooth_opts[0]))

/* Exactly one kernel, at most one cutoff, and none for a top-hat, whose
 * radius is its cutoff. */
static int check_kernel_options(const smooth_args *a) {
  int nkernels = a->has_fwhm + a->has_kernel + a->has_tophat + a->beam.has_file;
  if (nkernels > 1)
    return smooth_usage_error("give only one kernel: --fwhm-arcmin, --kernel-file, --tophat-deg or "
                              "--beam-file");
  if (!nkernels)
    return smooth_usage_error("a kernel is needed: --fwhm-arcmin F, --kernel-file FILE, --tophat-deg R "
                              "or --beam-file FILE");
  if (a->has_cutoff_deg && a->has_cutoff_rel)
    return smooth_usage_error("give either --cutoff-deg or --cutoff-rel, not both");
  if (a->has_tophat && (a->has_cutoff_deg || a->has_cutoff_rel))
    return smooth_usage_error("%s does not apply to --tophat-deg (its radius is the cutoff)",
                   a->has_cutoff_deg ? "--cutoff-deg" : "--cutoff-rel");
  return 0;
}

/* Options that would silently do nothing are errors: a user who asks for
 * --mode paper with --method direct should learn it has no effect. */
static int check_combinations(const smooth_args *a, const json_t *vals) {
  int rc = check_kernel_options(a);
  if (!rc) rc = smooth_beam_combinations(&a->beam, a->has_cutoff_deg);
  if (!rc) rc = smooth_checks_combinations(&a->narrow, a->method, a->has_kernel);
  if (!rc) rc = smooth_checks_pol_combination(&a->pol);
  /* the rows that apply to one method (--mode, --iter, ...: their `only`) */
  if (!rc) rc = opt_check_applies("arkcos smooth", vals, smooth_opts, NSMOOTH_OPTS, method_name(a->method));
  if (rc) return rc;
  const char *m = method_name(a->method);
  /* paper mode's polar caps are not exact: it has no bound to trade */
  if (a->has_accuracy && a->mode == ARKCOS_MODE_PAPER)
    return smooth_usage_error("--accuracy applies only to --mode enhanced, not paper");
  if (a->npos < 2)
    return smooth_usage_error("need an input map and an output (IN.fits OUT.fits)");
  if (a->dry_run && a->method != METHOD_ARKCOS)
    return smooth_usage_error("--dry-run predicts the memory of --method arkcos, not %s", m);
  if (a->has_ranks && !a->dry_run)
    return smooth_usage_error("--ranks applies only to --dry-run (a run's ranks are mpirun's)");
  if (a->has_ranks && hmpi_size() > 1 && a->ranks != hmpi_size())
    return smooth_usage_error("--ranks %ld: under mpirun the ranks are mpirun's (%d)", a->ranks, hmpi_size());
  return 0;
}

/* smooth_args from the parsed options (checked by their rows). */
static int args_from_options(const json_t *v, smooth_args *a) {
  arkcos_error err = {0, ""};
  method_spec m;
  if (method_spec_from_json(v, 0, &m, &err)) return smooth_usage_error("--method: %s", err.msg);
  a->method = m.kind;
  a->mode = m.kind == METHOD_ARKCOS ? m.arkcos.mode : ARKCOS_MODE_ENHANCED;
  a->precision = m.kind == METHOD_ARKCOS ? m.arkcos.precision : ARKCOS_DOUBLE;
  a->backend = m.kind == METHOD_ARKCOS ? m.arkcos.backend : ARKCOS_BACKEND_AUTO;
  a->accuracy = opt_num(v, OPT_ACCURACY, 0);
  a->max_memory = opt_num(v, OPT_MAX_MEMORY, 0);
  a->iter = (long)opt_num(v, OPT_ITER, 3);
  a->lmax = (long)opt_num(v, OPT_LMAX, 0);
  a->threads = (long)opt_num(v, OPT_THREADS, 0);
  if (a->threads == 0) a->threads = omp_get_max_threads(); /* 0: all cores */
  a->ranks = opt_given(v, OPT_RANKS) ? (long)opt_num(v, OPT_RANKS, 1) : hmpi_size();
  a->fwhm_arcmin = opt_num(v, OPT_FWHM_ARCMIN, 0);
  a->tophat_deg = opt_num(v, OPT_TOPHAT_RADIUS, 0);
  a->cutoff_deg = opt_num(v, OPT_CUTOFF_DEG, 0);
  a->cutoff_rel = opt_num(v, OPT_CUTOFF_REL, 0);
  a->kernel_file = opt_str(v, OPT_KERNEL_PATH);
  {
    const int q = opt_choice(v, OPT_QUADRATURE);
    a->quadrature = q == 1 ? ARKCOS_QUADRATURE_POINT : q == 2 ? ARKCOS_QUADRATURE_POLAR : ARKCOS_QUADRATURE_RING;
  }
  a->gaussian_harmonic = opt_choice(v, OPT_GAUSSIAN) == 1;
  a->force = opt_bool(v, OPT_FORCE);
  a->verbose = opt_bool(v, OPT_VERBOSE);
  a->quiet = opt_bool(v, OPT_QUIET);
  a->dry_run = opt_bool(v, OPT_DRY_RUN);
  a->mpi_split = opt_bool(v, OPT_MPI_SPLIT);
  a->has_fwhm = opt_given(v, OPT_FWHM_ARCMIN);
  a->has_kernel = opt_given(v, OPT_KERNEL_PATH);
  a->has_tophat = opt_given(v, OPT_TOPHAT_RADIUS);
  a->has_cutoff_deg = opt_given(v, OPT_CUTOFF_DEG);
  a->has_cutoff_rel = opt_given(v, OPT_CUTOFF_REL);
  a->has_lmax = opt_given(v, OPT_LMAX);
  a->has_oversample = opt_given(v, OPT_OVERSAMPLE);
  a->has_accuracy = opt_given(v, OPT_ACCURACY);
  a->has_ranks = opt_given(v, OPT_RANKS);
  mask_opts_read(&a->mask, v);
  smooth_beam_read(&a->beam, v);
  smooth_checks_read(&a->narrow, v);
  smooth_checks_pol_read(&a->pol, v);
  return 0;
}

/* Parses argv into a; returns 0, or an exit status (0 is never returned for
 * --help: -1 means "help printed, exit 0"). The values of a point into
 * argv and a->opts. */
static int parse_args(int argc, char **argv, smooth_args *a) {
  memset(a, 0, sizeof *a);
  a->pos = calloc((size_t)argc + 1, sizeof *a->pos);
  a->opts = json_object();
  if (!a->pos || !a->opts) return smooth_usage_error("out of memory");
  int rc = opt_parse_argv("arkcos smooth", argc, argv, smooth_opts, NSMOOTH_OPTS, a->opts, a->pos, argc,
                          &a->npos);
  if (rc == -1) {
    usage(stdout);
    return -1;
  }
  if (rc) return rc;
  for (int i = 0; i < a->npos; i++)
    if (!strcmp(a->pos[i], "-")) return smooth_usage_error("'-': standard input is not supported");
  if (opt_bool(a->opts, OPT_MPI_SPLIT) && !hmpi_built())
    return smooth_usage_error("--mpi-split: this arkcos was built without MPI (make MPI=1)");
  if ((rc = args_from_options(a->opts, a)) || (rc = check_combinations(a, a->opts))) return rc;
  if (a->has_oversample)
    fprintf(stderr, "arkcos smooth: warning: --oversample has no effect (the polar caps are exact "
                    "now); ignored\n");
  return mask_opts_finish(&a->mask);
}

/* --------------------------------------------------------------- outputs */

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) || stat(b, &sb)) return 0;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The folder part of path ("." for a bare name); malloc'd. */
static char *parent_dir(const char *path) {
  char *copy = strdup(path);
  if (!copy) return NULL;
  char *dir = strdup(dirname(copy));
  free(copy);
  return dir;
}

/* OUTDIR/<last path component of in>, or NULL if out of memory. */
static char *path_in_dir(const char *dir, const char *in) {
  char *copy = strdup(in);
  if (!copy) return NULL;
  const char *base = basename(copy);
  size_t n = strlen(dir) + strlen(base) + 2;
  char *out = malloc(n);
  if (out) {
    size_t dl = strlen(dir);
    snprintf(out, n, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", base);
  }
  free(copy);
  return out;
}

/* --------------------------------------------------------------- running */

/* A kernel made for one nside and spin (kernel_for), kept for the run. */
typedef struct made_kernel {
  int64_t nside;
  int spin;
  arkcos_kernel *k;
} made_kernel;

typedef struct smooth_state {
  const smooth_args *a;
  /* What smoothing means (arkcos_smoother, arkcos.h): the kernel, the
   * options, missing data, --normalize and the narrow-kernel rule; nside set
   * per use. The method runs through this command's operator (op below). */
  arkcos_smoother_spec spec;
  arkcos_smoother_operator op;
  arkcos_kernel *kernel; /* --kernel-file or --beam-file (spec.user_kernel), else the
                          * kernel of the first input's nside (messages, estimates) */
  made_kernel *made;     /* kernel_for's */
  int nmade;
  arkcos_smoother *lib;  /* of the current nside (NULL: none yet) */
  int nwarn_done;        /* lib's warnings printed so far */
  int64_t nside;        /* of geometry and smoothers below (0: none yet) */
  const arkcos_geometry *geom; /* lib's */
  smoother *sm;         /* scalar columns and weight maps (NULL until needed) */
  smoother *sm2;        /* Stokes Q and U as spin 2 (NULL until needed) */
  struct file_job *job; /* the file being smoothed: the operator adds its stages, the
                         * progress its times */
  double t_mark, plan_mark; /* progress: time and plan_time at the last map done */
  int rc_done;          /* progress: an error (out of memory) */
  double plan_time;     /* sum over arkcos plans created */
  double plan_fftw, plan_tables; /* their FFTW planning and direct tables */
  double plan_polar;    /* the engine's polar reconstructions made (part of plan_time) */
  double polar_seen;    /* arkcos_smoother_polar_time(lib) when last taken */
  int nplans;
  double *map_times;    /* execute time per map */
  int nmaps_done, map_cap;
  int ninputs;
  hpx_header *inputs;   /* per input: its header, read once by the check */
  pol_columns *pol;     /* per input: its Q and U columns smoothed as spin 2 */
  char **outs;          /* per input: where its output goes */
  mask_weights mask;    /* --mask, read by the check */
  beam_kernel beam;     /* --beam-file: its B_l (smooth_beam.h) */
  double *beam_win;     /* --beam-file: per input, the window error at its nside */
  smooth_progress progress; /* lines on a terminal (smooth_progress.h) */
  int split;            /* MPI: each map over all ranks (--mpi-split, or one input) */
} smooth_state;

/* Maps over all inputs that share this nside, for the scalar plan (spin 0:
 * columns but the Q, U pairs) or the spin-2 plan (spin 2: the pairs): one
 * plan serves them all. */
static int maps_with_nside(const smooth_state *s, int64_t nside, int spin) {
  int n = 0;
  for (int i = 0; i < s->ninputs; i++) {
    if (s->inputs[i].nside != nside) continue;
    const int pair = s->pol[i].q >= 0;
    n += spin == 2 ? pair : s->inputs[i].ncols - 2 * pair;
  }
  return n;
}

/* The method's spec for the scalar (spin 0) or the spin-2 smoother; Q and
 * U are exact whatever --accuracy says (the spin-2 path keeps its weights
 * in double), so the spin-2 plan is asked for exactness. */
static void method_spec_for(const smooth_state *s, int64_t nside, int spin, method_spec *m) {
  const smooth_args *a = s->a;
  method_spec_default(m);
  m->kind = a->method;
  m->arkcos.mode = a->mode;
  m->arkcos.precision = a->precision;
  m->arkcos.backend = a->backend;
  m->arkcos.accuracy = spin == 2 ? 0 : a->accuracy;
  m->arkcos.max_memory = a->max_memory;
  m->arkcos.spin = spin;
  /* With four maps or more, keep the kernel spectra from plan creation so
   * that every map costs only FFTs and the reduction, where the plan with
   * them stays within two maps and 64 MB (ARKCOS_CACHE_AUTO): at nside 1024
   * and 5 pixels per FWHM (2 threads) they cost 0.31 s of plan to save
   * 0.09 s a map (even at 3.4 maps) and 860 MB, which AUTO declines; at 2.8
   * pixels they save nothing measurable. */
  m->arkcos.cache_kernel_spectra = maps_with_nside(s, nside, spin) >= 4 ? ARKCOS_CACHE_AUTO : 0;
  /* Likewise the polar caps' direct weights: computed in the execute, not
   * tabulated, for up to five maps of the spin. One map: the same time and
   * no tables' memory (nside 1024 at 2.8 pixels per FWHM, one call
   * 0.67-0.73 s and 772 MB with tables, 0.63 s and 407 MB without); a
   * --mask's A(w) is smoothed with the map in one call, its weights shared
   * (arkcos_execute_two: 1.42 s and 937 MB with tables, 1.45 s and 581 MB
   * without). Several maps: the tables' build (0.24 s at nside 1024 and 2.8
   * pixels, 1.2 s at 2048 and 4.7', 2 threads) pays from about five maps
   * (a map 0.16 s with tables against 0.23 s on the fly at 1024, 0.75 s
   * against 1.0 s at 2048). Plan + execute, medians: three maps at 1024,
   * 2.8 px, 0.76 s with tables (972 MB peak) and 0.71 s without (509 MB),
   * a 10-pixel top-hat 0.84 and 0.60 s; at 2048, 4.7', 4.0 and 2.75 s;
   * eight maps at 1024, 2.8 px, 1.54 and 1.86 s. Six maps or more, and a
   * mask's map split over MPI ranks (its bands smooth A(w) and the map in
   * two calls), leave it to the library (ARKCOS_WEIGHTS_AUTO): tables where
   * the plan with them stays within two maps' bytes and 64 MB (nside 256
   * at 2.8 px), on the fly where it would not (nside 1024 at 2.8 px). */
  if (maps_with_nside(s, nside, spin) < 6 && !(s->a->mask.file && s->split))
    m->arkcos.direct_weights = ARKCOS_WEIGHTS_ON_THE_FLY;
  m->threads = (int)a->threads;
  m->lmax = a->has_lmax ? (int)a->lmax : (int)(3 * nside - 1);
  m->iter = (int)a->iter;
  m->mpi_split = s->split && a->method == METHOD_ARKCOS;
}

/* -v: a smoother's a-priori bound against the direct sum, on its own
 * line (printed once per plan, before the maps it serves); " spin=2" ends
 * the line of the plan of Q and U. */
static void print_bound(const smooth_state *s, const smoother *sm) {
  const double b = smoother_bound(sm);
  const char *what = "a-priori, max |ARKCoS - direct| per unit max |input|";
  const char *spin = smoother_spin(sm) == 2 ? " spin=2" : "";
  if (s->a->method == METHOD_DIRECT)
    printf("bound: 0 (the direct sum itself) nside=%lld%s\n", (long long)s->nside, spin);
  else if (s->a->method == METHOD_FSHT)
    printf("bound: none (fsht: a band limit has no a-priori bound against the direct sum) "
           "nside=%lld%s\n", (long long)s->nside, spin);
  else if (isinf(b) && s->a->mode == ARKCOS_MODE_PAPER)
    printf("bound: none (paper mode: its polar caps are not exact) nside=%lld%s\n",
           (long long)s->nside, spin);
  else if (isinf(b) || isnan(b))
    printf("bound: inf (%s) nside=%lld%s\n", what, (long long)s->nside, spin);
  else
    printf("bound: %.3g (%s) nside=%lld%s\n", b, what, (long long)s->nside, spin);
  fflush(stdout);
}

/* The operator's prepare (arkcos_smoother_operator): the method's smoother
 * of spin 0 or 2 for the smoother's geometry and its kernel of that spin. */
static int op_prepare(void *ctx, int spin, const arkcos_geometry *g, const arkcos_kernel *k,
                      arkcos_error *err) {
  smooth_state *s = ctx;
  method_spec m;
  method_spec_for(s, s->nside, spin, &m);
  char what[64];
  snprintf(what, sizeof what, "%s%s", method_name(s->a->method), spin == 2 ? ", Stokes Q and U" : "");
  smooth_progress_plan_begin(&s->progress, (long long)s->nside, what);
  smoother *sm = smoother_create(&m, g, k, err);
  if (sm) smooth_progress_plan_end(&s->progress);
  if (!sm) {
    if (spin == 2 && err->code)
      snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
               " (nside %lld: the plan of Stokes Q and U, spin 2; --method direct or fsht smooth "
               "them as spin 2 too)", (long long)s->nside);
    return err->code ? err->code : ARKCOS_ERUNTIME;
  }
  *(spin == 2 ? &s->sm2 : &s->sm) = sm;
  if (spin == 0) s->geom = g; /* the smoother's (its ring weights): hmpi_split_norm_plan's */
  const char *note = smoother_note(sm);
  if (hmpi_rank() > 0) return ARKCOS_OK; /* MPI: rank 0 says it once */
  if (note[0]) fprintf(stderr, "arkcos smooth: note: %s\n", note);
  const char *inexact = smoother_exactness(sm);
  if (inexact[0])
    fprintf(stderr, "arkcos smooth: warning: nside %lld: %s\n", (long long)s->nside, inexact);
  if (s->a->verbose) print_bound(s, sm);
  if (s->a->method == METHOD_ARKCOS) {
    s->plan_time += smoother_plan_time(sm);
    arkcos_plan_times pt;
    smoother_plan_setup(sm, &pt);
    s->plan_fftw += pt.fftw;
    s->plan_tables += pt.tables;
    s->nplans++;
  }
  return ARKCOS_OK;
}

/* The stages of the apply just made, added to the file's (METHOD_ARKCOS). */
static void op_stages(smooth_state *s, const smoother *sm);

static int op_apply(void *ctx, const double *in, double *out, arkcos_error *err) {
  smooth_state *s = ctx;
  int rc = smoother_apply(s->sm, in, out, err);
  if (!rc) op_stages(s, s->sm);
  return rc;
}

static int op_apply_spin2(void *ctx, const double *q, const double *u, double *qo, double *uo,
                          arkcos_error *err) {
  smooth_state *s = ctx;
  int rc = smoother_apply_spin2(s->sm2, q, u, qo, uo, err);
  if (!rc) op_stages(s, s->sm2);
  return rc;
}

/* The operator's plan: the engine plan behind apply (ARKCOS), else NULL */
static arkcos_plan *op_plan(void *ctx, int spin) {
  smooth_state *s = ctx;
  return smoother_engine_plan(spin == 2 ? s->sm2 : s->sm);
}

/* The polar reconstructions the engine's smoother made since the last
 * look (in its prepare, at a spin's first map): plan time, not the
 * execute's (METHOD_ARKCOS; the other methods report no plan). */
static void take_polar_time(smooth_state *s) {
  if (!s->lib || s->a->method != METHOD_ARKCOS) return;
  const double t = arkcos_smoother_polar_time(s->lib), d = t - s->polar_seen;
  s->polar_seen = t;
  s->plan_time += d;
  s->plan_polar += d;
}

/* The engine's smoother for nside (kept while the nside stays) and, made
 * now, the method's smoothers a file needs: scalar (need0) and spin 2
 * (need2); else each is made at the first need. */
static int ensure_smoothers(smooth_state *s, int64_t nside, int need0, int need2,
                            arkcos_error *err) {
  if (!s->lib || s->nside != nside) {
    smoother_destroy(s->sm);
    smoother_destroy(s->sm2);
    arkcos_smoother_destroy(s->lib);
    s->sm = s->sm2 = NULL;
    s->geom = NULL;
    s->nside = nside;
    s->spec.nside = nside;
    s->lib = arkcos_smoother_create(&s->spec, err);
    if (!s->lib) {
      s->nside = 0;
      return err->code ? err->code : ARKCOS_ERUNTIME;
    }
    /* the narrow-kernel warnings were printed by the checks */
    s->nwarn_done = arkcos_smoother_nwarnings(s->lib);
    s->polar_seen = 0;
  }
  int rc = ARKCOS_OK;
  if (need0) rc = arkcos_smoother_prepare(s->lib, 0, err);
  if (!rc && need2) rc = arkcos_smoother_prepare(s->lib, 2, err);
  take_polar_time(s);
  return rc;
}

static int record_map_time(smooth_state *s, double t) {
  if (s->nmaps_done == s->map_cap) {
    int cap = s->map_cap ? 2 * s->map_cap : 16;
    double *n = realloc(s->map_times, sizeof *n * (size_t)cap);
    if (!n) return ARKCOS_ENOMEM;
    s->map_times = n;
    s->map_cap = cap;
  }
  s->map_times[s->nmaps_done++] = t;
  return ARKCOS_OK;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* One input file on its way through smooth_one. */
typedef struct file_job file_job;
struct file_job {
  int idx;                 /* the input's position */
  const char *in, *out;
  const hpx_header *h;
  pol_columns pol;         /* Q and U smoothed as spin 2, or -1 */
  double **maps;           /* read (each freed once smoothed) */
  double **outs;           /* smoothed */
  double **weights;        /* --write-weight: A(w) per column */
  int ncols;
  int64_t nbad;
  arkcos_stage_times sum;  /* METHOD_ARKCOS: stages over the columns */
  double t_read, t_exec, t_write, plan_time;
  double plan_fftw, plan_tables, plan_polar; /* parts of plan_time */
  const int *polar_of;     /* the caps each column took the polar reconstruction on (a split map's), or
                            * NULL: the smoother's arkcos_smoother_last_polar */
};


static void op_stages(smooth_state *s, const smoother *sm) {
  if (s->a->method != METHOD_ARKCOS || !s->job) return;
  arkcos_stage_times t;
  smoother_stages(sm, &t);
  stage_times_add(&s->job->sum, &t);
}

/* The engine smoother's progress: column `map` (n = 1) or the Q, U pair
 * (n = 2) done, in the time since the last (plans made meanwhile left out;
 * the first column that needs a weight map A(w) includes its smoothing). */
static void maps_done(void *ctx, int map, int n) {
  (void)map;
  smooth_state *s = ctx;
  file_job *job = s->job;
  take_polar_time(s);
  const double now = wall_time(), dt = now - s->t_mark - (s->plan_time - s->plan_mark);
  s->t_mark = now;
  s->plan_mark = s->plan_time;
  job->t_exec += dt;
  /* the input column is not read again: a multi-column map costs one input
   * column plus the outputs */
  for (int k = 0; k < n; k++) {
    const int c = k == 0 ? map : job->pol.u;
    free(job->maps[c]);
    job->maps[c] = NULL;
  }
  smooth_progress_maps(&s->progress, job->in, n, dt);
  for (int k = 0; k < n && !s->rc_done; k++) s->rc_done = record_map_time(s, dt / n);
}

/* The file's columns smoothed by the engine's smoother (missing data, Q and
 * U, --normalize: arkcos_smoother_execute), in place. */
static int smooth_columns(smooth_state *s, file_job *job, arkcos_error *err) {
  int rc = ensure_smoothers(s, job->h->nside, 0, 0, err);
  if (rc) return rc;
  if (s->a->mask.write_weight) {
    job->weights = calloc((size_t)job->ncols, sizeof *job->weights);
    for (int c = 0; job->weights && c < job->ncols && !rc; c++)
      if (!(job->weights[c] = malloc(sizeof **job->weights * (size_t)job->h->npix))) rc = ARKCOS_ENOMEM;
      else arkcos_hint_huge(job->weights[c], sizeof **job->weights * (size_t)job->h->npix);
    if (!job->weights || rc) return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory for the weight maps", job->in);
  }
  job->outs = calloc((size_t)job->ncols, sizeof *job->outs);
  for (int c = 0; job->outs && c < job->ncols && !rc; c++)
    if (!(job->outs[c] = malloc(sizeof **job->outs * (size_t)job->h->npix))) rc = ARKCOS_ENOMEM;
    else arkcos_hint_huge(job->outs[c], sizeof **job->outs * (size_t)job->h->npix);
  if (!job->outs || rc) return arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory for the output maps", job->in);
  const arkcos_smoother_maps m = {job->ncols, (const double *const *)job->maps, job->outs, job->weights,
                                  job->pol.q, job->pol.u, s->mask.w, maps_done, s,
                                  1 /* the columns read are this call's own */};
  s->job = job;
  s->t_mark = wall_time();
  s->plan_mark = s->plan_time;
  s->rc_done = ARKCOS_OK;
  rc = arkcos_smoother_execute(s->lib, &m, err);
  s->job = NULL;
  take_polar_time(s);
  /* what the smoother ran on the operator's plan itself (A(W) made ring by
   * ring where it divides): its stages beside the applies' */
  if (!rc && s->a->method == METHOD_ARKCOS) {
    arkcos_smoother_report r;
    arkcos_smoother_last(s->lib, &r);
    stage_times_add(&job->sum, &r.stages);
  }
  /* the library's messages name its spec; the command's option is --normalize */
  if (rc && !strncmp(err->msg, "normalize: ", 11)) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "--%.500s", err->msg);
    memcpy(err->msg, msg, sizeof msg);
  }
  if (rc) return rc;
  return s->rc_done ? arkcos_fail(err, s->rc_done, "out of memory") : ARKCOS_OK;
}

/* The warnings the engine's smoother recorded since the last print. */
static void print_warnings(smooth_state *s) {
  if (!s->lib) return;
  const int n = arkcos_smoother_nwarnings(s->lib);
  for (; s->nwarn_done < n; s->nwarn_done++)
    if (hmpi_rank() == 0)
      fprintf(stderr, "arkcos smooth: warning: %s\n", arkcos_smoother_warning(s->lib, s->nwarn_done)->msg);
}

/* The kernel of the plans of nside and spin: the engine's smoother's
 * (arkcos_smoother_make_kernel: a Gaussian without an explicit cutoff is cut
 * at arkcos_gaussian_default_cutoff_rel, 1e-13 for scalar maps of >= 4
 * pixels per FWHM), made on first need, so that a map's smoothing does not
 * depend on the other inputs of the run. NULL with err set when it cannot
 * be made. */
static const arkcos_kernel *kernel_for(smooth_state *s, int64_t nside, int spin, arkcos_error *err) {
  if (s->spec.user_kernel) return s->spec.user_kernel;
  for (int i = 0; i < s->nmade; i++)
    if (s->made[i].nside == nside && s->made[i].spin == spin) return s->made[i].k;
  made_kernel *m = realloc(s->made, sizeof *m * (size_t)(s->nmade + 1));
  if (!m) return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory"), NULL;
  s->made = m;
  arkcos_smoother_spec spec = s->spec;
  spec.nside = nside;
  arkcos_kernel *k = arkcos_smoother_make_kernel(&spec, spin, err);
  if (!k) return NULL;
  s->made[s->nmade++] = (made_kernel){nside, spin, k};
  return k;
}

/* The summary line: what was done, with what, and where the time went. */
/* The caps column c took the polar reconstruction on (bits north, south) */
static int job_polar(const smooth_state *s, const file_job *job, int c) {
  if (job->polar_of) return job->polar_of[c < HMPI_MAX_COLS ? c : HMPI_MAX_COLS - 1];
  return arkcos_smoother_last_polar(s->lib, c);
}

static void print_summary(smooth_state *s, const file_job *job) {
  const smooth_args *a = s->a;
  const hpx_header *h = job->h;
  const int arkcos = a->method == METHOD_ARKCOS;
  const int gpu = arkcos && s->sm && smoother_backend(s->sm) == ARKCOS_BACKEND_GPU;
  char kern[160], extra[256] = "";
  if (a->has_fwhm)
    snprintf(kern, sizeof kern, "fwhm=%g'%s", a->fwhm_arcmin, a->gaussian_harmonic ? " gaussian=harmonic" : "");
  else if (a->has_tophat)
    snprintf(kern, sizeof kern, "tophat=%gdeg", a->tophat_deg);
  else if (a->beam.has_file)
    snprintf(kern, sizeof kern, "beam=%s window_err=%.2g", a->beam.file,
             s->beam_win[job->idx]);
  else
    snprintf(kern, sizeof kern, "kernel=%s", a->kernel_file);
  if (arkcos)
    snprintf(extra, sizeof extra, " backend=%s mode=%s precision=%s",
             gpu ? "gpu" : "cpu", a->mode == ARKCOS_MODE_PAPER ? "paper" : "enhanced",
             a->precision == ARKCOS_SINGLE ? "single" : "double");
  if (arkcos && a->has_accuracy)
    snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " accuracy=%g",
             a->accuracy);
  else if (a->method == METHOD_FSHT)
    snprintf(extra, sizeof extra, " lmax=%d iter=%ld",
             a->has_lmax ? (int)a->lmax : (int)(3 * h->nside - 1), a->iter);
  if (a->narrow.normalize)
    snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " normalize=yes");
  if (a->method != METHOD_FSHT)
    snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " quadrature=%s",
             s->spec.quadrature == ARKCOS_QUADRATURE_POINT   ? "point"
             : s->spec.quadrature == ARKCOS_QUADRATURE_POLAR ? "polar"
                                                             : "ring");
  /* where polar quadrature was asked: the caps that took it, per column
   * (one word when every column's are the same; counts past 8 columns) */
  if (a->method != METHOD_FSHT && s->spec.quadrature == ARKCOS_QUADRATURE_POLAR && job->ncols > 0) {
    static const char *const caps_name[4] = {"none", "north", "south", "both"};
    int same = 1, n[4] = {0}, c0 = job_polar(s, job, 0);
    for (int c = 0; c < job->ncols; c++) {
      const int k = job_polar(s, job, c);
      same &= k == c0;
      n[k >= 0 && k <= 3 ? k : 0]++;
    }
    char *e = extra + strlen(extra);
    const size_t room = sizeof extra - strlen(extra);
    if (same)
      snprintf(e, room, " polar=%s", c0 >= 0 && c0 <= 3 ? caps_name[c0] : "none");
    else if (job->ncols > 8)
      snprintf(e, room, " polar=mixed(both %d, one cap %d, none %d)", n[3], n[1] + n[2], n[0]);
    else
      for (int c = 0; c < job->ncols; c++) {
        const int k = job_polar(s, job, c);
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "%s%s", c ? "," : " polar=",
                 k >= 0 && k <= 3 ? caps_name[k] : "none");
      }
  }
  char pol[2 * HPX_NAME_LEN + 32] = "";
  if (job->pol.q >= 0) {
    char qb[HPX_NAME_LEN], ub[HPX_NAME_LEN];
    snprintf(pol, sizeof pol, " spin2=%s,%s",
             smooth_checks_column_name(h, job->pol.q, qb, sizeof qb),
             smooth_checks_column_name(h, job->pol.u, ub, sizeof ub));
  }
  /* the kernel of the job's scalar columns (of Q and U when it has none) */
  const arkcos_kernel *k2 = arkcos_smoother_kernel(s->lib, 2);
  const arkcos_kernel *kjob = job->ncols > 2 * (job->pol.q >= 0) ? arkcos_smoother_kernel(s->lib, 0) : k2;
  printf("smooth: %s -> %s nside=%lld maps=%d%s ordering=%s type=%s method=%s%s "
         "threads=%ld %s cutoff=%.4gdeg (K/K0=%.2g) pixels_per_fwhm=%.3g time=%.4gs",
         job->in, job->out, (long long)h->nside, job->ncols, pol,
         h->nested ? "NESTED" : "RING", h->is_float32 ? "float32" : "float64",
         method_name(a->method), extra, a->threads, kern,
         arkcos_kernel_cutoff(kjob) / DEG,
         arkcos_kernel_cutoff_level(kjob), arkcos_smoother_pixels_per_fwhm(s->lib),
         job->t_exec);
  if (k2 != kjob && job->pol.q >= 0) /* Q and U were cut elsewhere (kernel_for) */
    printf(" spin2_cutoff=%.4gdeg (K/K0=%.2g)", arkcos_kernel_cutoff(k2) / DEG, arkcos_kernel_cutoff_level(k2));
  const arkcos_stage_times *t = &job->sum;
  if (arkcos) {
    printf(" (map_fft %.3g kernel_eval %.3g kernel_fft %.3g reduction %.3g "
           "map_ifft %.3g",
           t->map_fft, t->kernel_eval, t->kernel_fft, t->reduction, t->map_ifft);
    if (gpu) printf(" h2d %.3g d2h %.3g", t->h2d, t->d2h);
    printf(" other %.3g) plan=%.3gs (fftw %.3g tables %.3g polar %.3g)", t->other, job->plan_time,
           job->plan_fftw, job->plan_tables, job->plan_polar);
  }
  printf(" read=%.3gs write=%.3gs bad_pixels=%lld\n", job->t_read, job->t_write,
         (long long)job->nbad);
  fflush(stdout);
}

/* The smoothed columns (and the weights with --write-weight) into job->out,
 * with the input's ordering, float type, column labels and COORDSYS. */
static int write_output(const smooth_state *s, file_job *job, arkcos_error *err) {
  const hpx_header *h = job->h;
  const double **all = NULL;
  hpx_column *cols = NULL;
  int nall = 0;
  job->t_write = wall_time();
  int rc = mask_file_columns(&s->a->mask, s->lib, job->outs, job->weights, h, &all, &cols, &nall, err);
  if (!rc)
    rc = hpx_write_maps_ex(job->out, all, nall, h->nside, h->nested, h->is_float32,
                           s->a->force, cols, h->coordsys, err);
  job->t_write = wall_time() - job->t_write;
  free(all);
  free(cols);
  return rc;
}

/* Q and U are one field: P is missing where either is. A note says how
 * many pixels that took from one of them (r: the smoother's report of the
 * file, or the bands'). */
static void pol_union_note(const file_job *job, const arkcos_smoother_report *rp) {
  const pol_columns *p = &job->pol;
  const arkcos_smoother_report r = *rp;
  if (p->q < 0 || !r.pol_union) return;
  char qb[HPX_NAME_LEN], ub[HPX_NAME_LEN];
  fprintf(stderr,
          "arkcos smooth: note: %s: %s and %s miss different pixels; P = Q + iU is missing where "
          "either is (%lld pixel(s) taken out of one of them)\n",
          job->in, smooth_checks_column_name(job->h, p->q, qb, sizeof qb),
          smooth_checks_column_name(job->h, p->u, ub, sizeof ub), (long long)r.pol_union);
}

/* Input i: its columns read (the header is the check's), smoothed, written
 * with the input's ordering, float type, column labels and COORDSYS. */
static int smooth_one(smooth_state *s, int i, arkcos_error *err) {
  file_job job = {.idx = i, .in = s->a->pos[i], .out = s->outs[i], .h = &s->inputs[i], .pol = s->pol[i]};
  const hpx_header *h = job.h;
  const double p0 = s->plan_time, f0 = s->plan_fftw, t0 = s->plan_tables, q0 = s->plan_polar;
  if (s->split && s->a->method == METHOD_ARKCOS) { /* MPI: each rank its own band (hmpi.h) */
    hmpi_file_stats st;
    int rc = ensure_smoothers(s, h->nside, 1, job.pol.q >= 0, err);
    const int normalize = rc == 0 && arkcos_smoother_divides(s->lib);
    /* the identity (fwhm 0, which the command line refuses; the engine's
     * smoother allows it) makes no plan: whole; the engine's A(1) under
     * --accuracy is an exact plan's: made over the ranks too */
    const int bands = !rc && arkcos_smoother_kernel(s->lib, 0);
    if (bands && normalize && s->a->accuracy > 0)
      rc = hmpi_split_norm_plan(s->geom, arkcos_smoother_kernel(s->lib, 0), &s->spec.options, err);
    if (rc) return rc;
    const mask_opts *mo = &s->a->mask;
    const hmpi_mask mk = {mo->has_file ? mo->file : NULL, mo->mode == MASK_MODE_ZERO, mo->min_weight,
                          s->spec.quadrature != ARKCOS_QUADRATURE_POINT, mo->write_weight};
    /* rank 0's polar reconstructions (the smoother's, made with its plans;
     * hmpi.h), and the correction of 1 (A(1)'s where the maps are divided
     * by it, A(w)'s where weights are in play) */
    hmpi_polar pl = {arkcos_smoother_polar(s->lib, 0, NULL),
                     job.pol.q >= 0 ? arkcos_smoother_polar(s->lib, 2, NULL) : NULL, NULL, (int)s->a->threads};
    if (bands && pl.p0 && !(pl.delta1 = arkcos_smoother_polar_delta_one(s->lib)))
      return arkcos_fail(err, ARKCOS_ENOMEM, "out of memory for the polar caps");
    take_polar_time(s);
    if (bands && (rc = hmpi_split_file(job.in, job.out, job.pol.q, job.pol.u, s->a->force, normalize, &mk, &pl,
                                       &st, err)) != HMPI_WHOLE_MAP) {
      if (rc) return rc;
      job.ncols = st.ncols, job.t_read = st.t_read, job.t_exec = st.t_exec, job.t_write = st.t_write;
      job.sum = st.stages, job.plan_time = s->plan_time - p0, job.plan_fftw = s->plan_fftw - f0;
      job.plan_tables = s->plan_tables - t0;
      job.plan_polar = s->plan_polar - q0;
      job.polar_of = st.polar;
      for (int c = 0; c < st.ncols && !rc; c++) rc = record_map_time(s, st.map_time[c < HMPI_MAX_COLS ? c : 0]);
      if (st.reported) {
        job.nbad = 0;
        for (int c = 0; c < st.ncols; c++) job.nbad += st.rep[c].excluded; /* --mask's zeros too */
        pol_union_note(&job, &st.last);
        mask_file_report_of(mo, mo->has_file, job.in, h, &st.last, st.rep, job.pol.q, job.pol.u);
      }
      if (!rc) print_summary(s, &job);
      return rc ? arkcos_fail(err, rc, "out of memory") : ARKCOS_OK;
    }
    if (rc && rc != HMPI_WHOLE_MAP) return rc;
  }
  if (mask_weights_need(&s->mask)) /* the whole-map path: rank 0 holds the mask */
    return arkcos_fail(err, ARKCOS_EIO, "--mask %s: cannot be read", s->a->mask.file);
  job.t_read = wall_time();
  int rc = hpx_read_columns_missing(h, &job.maps, &job.ncols, &job.nbad, err);
  if (rc) return rc;
  job.t_read = wall_time() - job.t_read;
  rc = smooth_columns(s, &job, err);
  /* the plans this file made (0 when reused), those made for the bands
   * before it took the whole-map path included */
  job.plan_time = s->plan_time - p0, job.plan_fftw = s->plan_fftw - f0;
  job.plan_tables = s->plan_tables - t0, job.plan_polar = s->plan_polar - q0;
  print_warnings(s);
  if (!rc) {
    arkcos_smoother_report r;
    arkcos_smoother_last(s->lib, &r);
    pol_union_note(&job, &r);
    job.nbad = mask_file_excluded(s->lib, job.ncols); /* --mask's zeros too */
    rc = write_output(s, &job, err);
  }
  if (!rc) mask_file_report(&s->a->mask, s->mask.w != NULL, job.in, h, s->lib, job.pol.q, job.pol.u);
  if (!rc) print_summary(s, &job);
  hpx_free_maps(job.weights, job.weights ? job.ncols : 0);
  hpx_free_maps(job.outs, job.outs ? job.ncols : 0);
  hpx_free_maps(job.maps, job.ncols);
  return rc;
}

/* ---------------------------------------------------------------- checks */

/* Where the outputs go: a folder (several inputs, an existing folder, or a
 * name ending in '/') or one file. Returns 0 or an exit status. */
static int check_target(const smooth_state *s, const char *last, int to_dir) {
  if (s->ninputs > 1 && !to_dir)
    return smooth_usage_error("with several inputs the last argument must be a folder "
                   "(existing, or ending in '/'): '%s'", last);
  struct stat st;
  if (to_dir && !is_dir(last) && stat(last, &st) == 0)
    return smooth_usage_error("%s: exists and is not a folder", last);
  return 0;
}

/* A missing or read-only output folder is found now, not after the
 * smoothing (which may take minutes). */
static int check_output_folder(const char *out) {
  char *dir = parent_dir(out);
  int ok = dir && is_dir(dir) && access(dir, W_OK) == 0;
  if (!ok)
    fprintf(stderr, "arkcos smooth: %s: cannot write into folder '%s': %s\n", out,
            dir ? dir : "?", dir && !is_dir(dir) ? "no such folder" : strerror(errno));
  free(dir);
  return ok ? 0 : 2;
}

/* An existing output: never a folder, replaced only with --force. */
static int check_existing_output(const smooth_state *s, int i) {
  const char *out = s->outs[i];
  struct stat st;
  if (stat(out, &st) != 0) return 0;
  if (S_ISDIR(st.st_mode)) {
    fprintf(stderr, "arkcos smooth: %s: output is a folder\n", out);
    return 2;
  }
  if (!s->a->force) {
    fprintf(stderr, "arkcos smooth: %s: output exists (use --force to overwrite)\n",
            out);
    return 2;
  }
  /* Overwriting an input is safe (the output is renamed into place after
   * the input was read) but almost always a slip of the hand. */
  if (same_file(out, s->a->pos[i]))
    fprintf(stderr, "arkcos smooth: note: %s replaces its own input\n", out);
  return 0;
}

/* Input i's header (kept for the read), its Q and U columns, and its
 * output's name. Returns 0 or an exit status. */
static int check_input(smooth_state *s, int i, const char *last, int to_dir,
                       arkcos_error *err) {
  const smooth_args *a = s->a;
  const hpx_header *h = &s->inputs[i];
  if (hpx_read_header(a->pos[i], &s->inputs[i], err)) return report_error(err);
  const pol_request r = {a->method, a->mode, a->precision, a->backend};
  if (smooth_checks_polarization(&a->pol, &r, h, &s->pol[i])) return 2;
  if (a->has_lmax && a->lmax > 4 * h->nside) {
    fprintf(stderr, "arkcos smooth: --lmax %ld is above 4 nside = %lld for %s\n",
            a->lmax, (long long)(4 * h->nside), a->pos[i]);
    return 2;
  }
  s->outs[i] = to_dir ? path_in_dir(last, a->pos[i]) : strdup(last);
  if (!s->outs[i]) {
    fprintf(stderr, "arkcos smooth: out of memory\n");
    return 1;
  }
  if (!s->outs[i][0]) return smooth_usage_error("the output file name is empty");
  if (hpx_compressed_name(s->outs[i])) {
    fprintf(stderr, "arkcos smooth: %s: gzip-compressed output is not written (the name "
            "ends in .gz); name it .fits and compress it afterwards\n", s->outs[i]);
    return 2;
  }
  for (int j = 0; j < i; j++)
    if (!strcmp(s->outs[i], s->outs[j])) {
      fprintf(stderr, "arkcos smooth: %s and %s would both be written to %s\n",
              a->pos[j], a->pos[i], s->outs[i]);
      return 2;
    }
  /* A folder named with a trailing '/' is created later, so only its
   * parent must be writable. */
  int rc = !to_dir || is_dir(last) ? check_output_folder(s->outs[i]) : 0;
  return rc ? rc : check_existing_output(s, i);
}

/* The serving ranks' kernel of a split plan of nside and spin */
static const arkcos_kernel *split_kernel(void *ctx, int64_t nside, int spin) {
  arkcos_error err = {0, ""};
  return kernel_for((smooth_state *)ctx, nside, spin, &err);
}

/* The engine smoother's spec of the run (arkcos_smoother_spec, its nside set
 * per use), the method as its operator, and s->kernel: the kernel of a file
 * (--kernel-file, --beam-file), or, for messages and estimates, that of the
 * first input's nside. 0 or an exit status. */
static int make_kernel(smooth_state *s, arkcos_error *err) {
  const smooth_args *a = s->a;
  arkcos_smoother_spec *sp = &s->spec;
  arkcos_smoother_spec_default(sp);
  sp->nside = s->inputs[0].nside;
  sp->options.mode = a->mode;
  sp->options.precision = a->precision;
  sp->options.backend = a->backend;
  sp->options.threads = (int)a->threads;
  sp->options.accuracy = a->accuracy;
  sp->options.max_memory = a->max_memory;
  sp->mask_mode = a->mask.mode == MASK_MODE_ZERO ? ARKCOS_MASK_ZERO : ARKCOS_MASK_NORMALIZE;
  sp->min_weight = a->mask.mode == MASK_MODE_ZERO ? -1 : a->mask.min_weight;
  sp->normalize = a->narrow.normalize;
  sp->allow_subpixel = a->narrow.allow_subpixel;
  sp->normalize_name = "--normalize";
  sp->allow_subpixel_name = "--allow-subpixel with --method direct";
  sp->harmonic_name = "--method fsht";
  s->op = (arkcos_smoother_operator){s, op_prepare, op_apply, op_apply_spin2, a->method == METHOD_FSHT, op_plan};
  sp->op = &s->op;
  sp->quadrature = a->quadrature;
  if (a->has_fwhm) {
    sp->kernel.type = a->gaussian_harmonic ? ARKCOS_KERNEL_GAUSSIAN_HARMONIC : ARKCOS_KERNEL_GAUSSIAN;
    sp->kernel.fwhm = a->fwhm_arcmin * ARCMIN;
    sp->kernel.cutoff = a->has_cutoff_deg ? a->cutoff_deg * DEG : 0;
    sp->kernel.cutoff_rel = a->has_cutoff_rel ? a->cutoff_rel : 0; /* 0 0: the default cut */
  } else if (a->has_tophat) {
    sp->kernel.type = ARKCOS_KERNEL_TOPHAT;
    sp->kernel.cutoff = a->tophat_deg * DEG;
  } else if (a->beam.has_file) {
    s->kernel = smooth_beam_kernel(&a->beam, a->has_cutoff_rel ? a->cutoff_rel : DEFAULT_CUTOFF_REL,
                                   &s->beam, err);
    sp->user_kernel = s->kernel;
  } else {
    s->kernel = smooth_checks_kernel_file(
        &a->narrow, a->kernel_file, a->has_cutoff_deg ? a->cutoff_deg * DEG : 0,
        a->has_cutoff_rel ? a->cutoff_rel : 0, err);
    sp->user_kernel = s->kernel;
  }
  if (a->has_fwhm || a->has_tophat) s->kernel = arkcos_smoother_make_kernel(sp, 0, err);
  if (s->kernel) return 0;
  if (!err->code) arkcos_fail(err, ARKCOS_EINVAL, "cannot create the kernel");
  return report_error(err);
}

/* The engine's narrow-kernel rule (arkcos_smoother_check) for each input's
 * nside, once per nside: refused (exit 2, the message naming the input) or
 * its warnings printed. 0 or an exit status. */
static int check_sampling(smooth_state *s) {
  for (int i = 0; i < s->ninputs; i++) {
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = s->inputs[j].nside == s->inputs[i].nside;
    if (seen) continue;
    arkcos_smoother_spec spec = s->spec;
    spec.nside = s->inputs[i].nside;
    arkcos_warning w[4];
    int nw = 4;
    arkcos_error err = {0, ""};
    if (arkcos_smoother_check(&spec, w, &nw, &err)) {
      fprintf(stderr, "arkcos smooth: %s: %s\n", s->inputs[i].path, err.msg);
      return exit_status_of(err.code);
    }
    for (int k = 0; k < nw; k++)
      fprintf(stderr, "arkcos smooth: warning: %s: %s\n", s->inputs[i].path, w[k].msg);
  }
  return 0;
}

/* The engine's verdict on the scalar plan's options alone
 * (arkcos_options_check, the judge plan creation uses): --backend gpu where
 * there is no usable GPU is refused here, before any input is read, in the
 * engine's words (exit 2). */
static int check_options(const smooth_state *s) {
  if (s->a->method != METHOD_ARKCOS) return 0;
  method_spec m;
  method_spec_for(s, 0, 0, &m);
  arkcos_error err = {0, ""};
  if (!arkcos_options_check(&m.arkcos, &err)) return 0;
  fprintf(stderr, "arkcos smooth: %s\n", err.msg);
  return exit_status_of(err.code);
}

/* --pol where no input has Q and U does nothing: refused. --accuracy with
 * Q and U applies to the scalar columns: a note says so. 0 or 2. */
static int check_pol_inputs(const smooth_state *s) {
  int npol = 0;
  for (int i = 0; i < s->ninputs; i++) npol += s->pol[i].q >= 0;
  if (s->a->pol.pol && !npol) {
    fprintf(stderr, "arkcos smooth: --pol: %s no Stokes Q and U columns (nothing to smooth as spin 2)\n",
            s->ninputs > 1 ? "no input has" : "the input has");
    return 2;
  }
  if (npol && s->a->accuracy > 0)
    fprintf(stderr, "arkcos smooth: note: --accuracy %g applies to the scalar columns; Stokes Q and U "
            "(spin 2) are smoothed exactly\n", s->a->accuracy);
  return 0;
}

/* Everything a user can get wrong, before any map is smoothed. Returns 0
 * or an exit status. */
static int check_all(smooth_state *s, const char *last, int to_dir,
                     arkcos_error *err) {
  int status = check_target(s, last, to_dir);
  for (int i = 0; i < s->ninputs && !status; i++)
    status = check_input(s, i, last, to_dir, err);
  if (!status) status = check_pol_inputs(s);
  /* one map over ranks: each rank reads its band of the mask itself */
  const int bands = hmpi_size() > 1 && (s->a->mpi_split || s->ninputs == 1) && s->a->method == METHOD_ARKCOS;
  if (!status) status = mask_load(&s->mask, &s->a->mask, s->inputs, s->ninputs, !bands);
  if (!status) status = make_kernel(s, err);
  if (!status && s->a->beam.has_file) {
    s->beam_win = calloc((size_t)s->ninputs, sizeof *s->beam_win);
    status = !s->beam_win ? 1
             : smooth_beam_window(&s->a->beam, &s->beam, s->kernel,
                                  s->a->method == METHOD_FSHT && s->a->has_lmax ? s->a->lmax : 0,
                                  s->a->verbose, s->inputs, s->ninputs, s->beam_win);
  }
  if (!status)
    status = check_sampling(s);
  if (!status) status = check_options(s);
  if (!status && to_dir && !s->a->dry_run && !is_dir(last) && mkdir(last, 0777) != 0 &&
      !(errno == EEXIST && is_dir(last))) { /* MPI: another rank made it */
    fprintf(stderr, "arkcos smooth: %s: cannot create folder: %s\n", last,
            strerror(errno));
    status = 2;
  }
  return status;
}

/* The plan/per-map line, when several maps were smoothed. */
static void print_totals(smooth_state *s) {
  if (s->nmaps_done <= 1) return;
  if (hmpi_size() > 1) printf("rank %d/%d: ", hmpi_rank(), hmpi_size());
  qsort(s->map_times, (size_t)s->nmaps_done, sizeof *s->map_times, cmp_double);
  double tot = 0;
  for (int i = 0; i < s->nmaps_done; i++) tot += s->map_times[i];
  printf("smooth: %d maps in %d file(s), %d plan(s) in %.4gs; per map: "
         "mean %.4gs median %.4gs min %.4gs max %.4gs\n",
         s->nmaps_done, s->ninputs, s->nplans, s->plan_time, tot / s->nmaps_done,
         s->map_times[s->nmaps_done / 2], s->map_times[0],
         s->map_times[s->nmaps_done - 1]);
}

/* MPI, maps over ranks: rank 0 plans every nside first, then its FFTW
 * wisdom goes to every rank, so that all FFTs are rank 0's algorithms and
 * each output is byte for byte a single process's (docs/MPI.md). */
static int sync_wisdom(smooth_state *s, arkcos_error *err) {
  int status = 0;
  for (int i = 0; i < s->ninputs && !status && hmpi_rank() == 0; i++) {
    int seen = 0, need2 = 0;
    for (int j = 0; j < s->ninputs; j++) {
      seen |= j < i && s->inputs[j].nside == s->inputs[i].nside;
      need2 |= s->inputs[j].nside == s->inputs[i].nside && s->pol[j].q >= 0;
    }
    if (!seen && ensure_smoothers(s, s->inputs[i].nside, 1, need2, err)) status = report_error(err);
  }
  status = hmpi_max(status);
  if (!status && hmpi_share_wisdom(err)) status = report_error(err);
  return status;
}

/* Every input, one after the other; under mpirun (docs/MPI.md) either the
 * inputs shared out over the ranks in contiguous runs (each rank plans once
 * per nside), or each map over all ranks (s->split: rank 0 reads, drives and
 * writes; the others serve its plans). A failure on any rank is every
 * rank's exit status; its message comes from the rank that failed. */
static int smooth_all(smooth_state *s, arkcos_error *err) {
  const int n = hmpi_size(), r = hmpi_rank();
  s->split = n > 1 && (s->a->mpi_split || s->ninputs == 1);
  if (s->split && r > 0) return hmpi_max(hmpi_split_serve(split_kernel, s));
  int status = n > 1 && !s->split ? sync_wisdom(s, err) : 0;
  const int lo = s->split ? 0 : (int)((int64_t)s->ninputs * r / n);
  const int hi = s->split ? s->ninputs : (int)((int64_t)s->ninputs * (r + 1) / n);
  for (int i = lo; i < hi && !status; i++)
    if (smooth_one(s, i, err)) status = report_error(err);
  if (s->split) { /* the split plan goes before the others are let go */
    smoother_destroy(s->sm);
    s->sm = NULL;
    hmpi_split_stop();
  }
  return hmpi_max(status);
}

/* The memory prediction (smooth_memory.h) for --dry-run, and before an
 * arkcos run under mpirun reads anything: per nside, the largest file's
 * columns and the plans' options. 0 fits, else an exit status. */
static int check_memory(smooth_state *s, int hard_only) {
  const smooth_args *a = s->a;
  const int nranks = (int)a->ranks;
  const int split = nranks > 1 && (a->mpi_split || s->ninputs == 1);
  smem_nside *w = calloc((size_t)s->ninputs, sizeof *w);
  if (!w) return 1;
  int nw = 0;
  for (int i = 0; i < s->ninputs; i++) {
    const hpx_header *h = &s->inputs[i];
    int j = 0;
    while (j < nw && w[j].nside != h->nside) j++;
    if (j == nw) {
      method_spec m;
      w[j].nside = h->nside;
      method_spec_for(s, h->nside, 0, &m);
      w[j].o0 = m.arkcos;
      method_spec_for(s, h->nside, 2, &m);
      w[j].o2 = m.arkcos;
      w[j].o0.threads = w[j].o2.threads = (int)a->threads;
      w[j].o0.backend = w[j].o2.backend = ARKCOS_BACKEND_CPU; /* the CPU's model */
      arkcos_error kerr = {0, ""};
      w[j].k0 = kernel_for(s, h->nside, 0, &kerr);
      w[j].k2 = kernel_for(s, h->nside, 2, &kerr);
      w[j].masked = a->mask.has_file;
      /* A(W) is held where the smoother divides by it (--normalize; ring
       * quadrature below ARKCOS_RING_DIVIDE_PPF pixels per FWHM): a smoother
       * of this nside says (no plan made); on the safe side without one */
      arkcos_smoother_spec sp = s->spec;
      sp.nside = h->nside;
      arkcos_smoother *t = a->method != METHOD_FSHT ? arkcos_smoother_create(&sp, NULL) : NULL;
      w[j].normalize = a->method != METHOD_FSHT &&
                       (t ? arkcos_smoother_divides(t) : a->narrow.normalize || s->spec.quadrature != ARKCOS_QUADRATURE_POINT);
      arkcos_smoother_destroy(t);
      /* the GPU may take the maps: --backend gpu, or auto with a device */
      w[j].gpu = a->method == METHOD_ARKCOS && (a->backend == ARKCOS_BACKEND_GPU ||
                                                (a->backend == ARKCOS_BACKEND_AUTO && arkcos_gpu_available(NULL, 0)));
      /* A(W) made ring by ring: the engine's rule, with the weights' choice
       * of this nside (method_spec_for); the direct method has no plan */
      sp.options.direct_weights = w[j].o0.direct_weights;
      w[j].norm_streamed = a->method == METHOD_ARKCOS &&
                           arkcos_smoother_streams_division(&sp, w[j].normalize, w[j].masked);
      /* the polar reconstruction: what the smoother's estimate adds for it
       * (Q and U's own as well, for a file with them); rank 0's over ranks */
      if (a->method == METHOD_ARKCOS && sp.quadrature == ARKCOS_QUADRATURE_POLAR) {
        sp.op = NULL; /* the engine's plans: an operator's estimate counts maps only */
        const int qu = s->pol[i].q >= 0, nm = qu ? (int)h->ncols : 1;
        const double with = arkcos_smoother_estimate(&sp, nm, qu, 0, NULL);
        sp.quadrature = ARKCOS_QUADRATURE_RING;
        const double without = arkcos_smoother_estimate(&sp, nm, qu, 0, NULL);
        w[j].polar = with > without ? with - without : 0;
      }
      nw++;
    }
    if (h->ncols > w[j].maxcols) w[j].maxcols = h->ncols;
    w[j].spin2 |= s->pol[i].q >= 0;
  }
  const int status = smooth_memory_check(w, nw, s->kernel, nranks, split, a->max_memory, a->dry_run,
                                         hard_only);
  free(w);
  return status;
}

static void free_state(smooth_state *s) {
  for (int i = 0; i < s->ninputs; i++) {
    if (s->outs) free(s->outs[i]);
    if (s->inputs) hpx_header_free(&s->inputs[i]);
  }
  free(s->outs);
  free(s->inputs);
  free(s->pol);
  free(s->map_times);
  mask_weights_free(&s->mask);
  smoother_destroy(s->sm);
  smoother_destroy(s->sm2);
  arkcos_smoother_destroy(s->lib);
  arkcos_kernel_destroy(s->kernel);
  for (int i = 0; i < s->nmade; i++) arkcos_kernel_destroy(s->made[i].k);
  free(s->made);
  smooth_beam_free(&s->beam);
  free(s->beam_win);
}

int cmd_smooth(int argc, char **argv) {
  smooth_args a;
  int status = parse_args(argc, argv, &a);
  if (status) {
    free(a.pos);
    json_decref(a.opts);
    return status < 0 ? 0 : status;
  }
  arkcos_error err = {0};
  smooth_state s = {.a = &a, .ninputs = a.npos - 1};
  const char *last = a.pos[a.npos - 1];
  size_t lastlen = strlen(last);
  const int to_dir = is_dir(last) || (lastlen && last[lastlen - 1] == '/');
  s.outs = calloc((size_t)s.ninputs, sizeof *s.outs);
  s.inputs = calloc((size_t)s.ninputs, sizeof *s.inputs);
  s.pol = calloc((size_t)s.ninputs, sizeof *s.pol);
  if (!s.outs || !s.inputs || !s.pol) {
    fprintf(stderr, "arkcos smooth: out of memory\n");
    status = 1;
  } else {
    omp_set_num_threads((int)a.threads);
    hmpi_hold_stderr(); /* MPI: the common checks' messages once */
    status = check_all(&s, last, to_dir, &err);
  }
  status = hmpi_checks_done(status); /* MPI: every rank stops when one's checks failed */
  if (!status && (a.dry_run || (hmpi_size() > 1 && a.method == METHOD_ARKCOS))) {
    status = check_memory(&s, 0);
    if (a.dry_run) {
      free_state(&s);
      free(a.pos);
      json_decref(a.opts);
      return status;
    }
  }
  /* a job that cannot fit in what the process can have fails before any
   * map is read (exit 1) */
  else if (!status && a.method == METHOD_ARKCOS)
    status = check_memory(&s, 1);
  int total = 0;
  for (int i = 0; i < s.ninputs && !status; i++) total += s.inputs[i].ncols;
  smooth_progress_init(&s.progress, a.quiet || hmpi_size() > 1, total);
  if (!status) status = smooth_all(&s, &err);
  if (!status) print_totals(&s);
  free_state(&s);
  free(a.pos);
  json_decref(a.opts);
  return status;
}
