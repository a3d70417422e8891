/*
 * cmd_smooth.c -- `arkcos smooth`: convolve HEALPix maps with a radial
 * kernel (ARKCoS, the direct sum or libsharp FSHT smoothing).
 *
 * Everything a user can get wrong is checked before any map is smoothed:
 * options, kernel, every input's header, every output's name. One kernel
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
#include "harness/commands.h"
#include "harness/mapio.h"
#include "harness/util.h"
#include "reference/reference.h"

#define PI 3.14159265358979323846
#define DEG (PI / 180.0)
#define ARCMIN (PI / (180.0 * 60.0))
/* Default truncation of a Gaussian: where it falls to 1e-5 of its peak, the
 * level the paper and the benchmarks use (DESIGN.md, issue 7). */
#define DEFAULT_CUTOFF_REL 1e-5

typedef enum { METHOD_ARKCOS, METHOD_DIRECT, METHOD_FSHT } smooth_method;
static const char *const method_names[] = {"arkcos", "direct", "fsht"};

typedef struct smooth_args {
  const char **pos;
  int npos;
  double fwhm_arcmin, cutoff_deg, cutoff_rel;
  const char *kernel_file;
  smooth_method method;
  arkcos_mode mode;
  arkcos_precision precision;
  long oversample; /* arkcos_options.oversample: 0 automatic */
  arkcos_backend backend;
  long threads, lmax, iter;
  int force;
  /* which options were given: for the "both / neither" and "does not apply
   * to this method" checks */
  int has_fwhm, has_kernel, has_cutoff_deg, has_cutoff_rel, has_method,
      has_mode, has_precision, has_backend, has_threads, has_lmax, has_iter, has_oversample;
} smooth_args;

static void usage(FILE *f) {
  fprintf(f,
"usage: arkcos smooth IN.fits OUT.fits (--fwhm-arcmin F | --kernel-file FILE)\n"
"                     [--cutoff-deg R | --cutoff-rel EPS] [options]\n"
"       arkcos smooth IN1.fits [IN2.fits ...] OUTDIR/ ...\n"
"\n"
"Smooths HEALPix maps (FITS binary tables as healpy writes them) with a\n"
"radial kernel truncated at a cutoff and normalised to unit integral, so a\n"
"constant map stays constant.\n"
"\n"
"With several inputs, or when the last argument is an existing folder or ends\n"
"in '/', each IN is written to OUTDIR/<name of IN> (the folder is created if\n"
"it ends in '/' and does not exist). Every column of a multi-column map (I, Q,\n"
"U, ...) is smoothed and written to the same column of the output, which keeps\n"
"the input's ORDERING (RING or NESTED), float type, column names and COORDSYS.\n"
"One kernel and one plan serve all maps of the same nside. UNSEEN and NaN\n"
"pixels are treated as 0 and counted (bad_pixels=).\n"
"\n"
"Kernel (exactly one):\n"
"  --fwhm-arcmin F      Gaussian beam of full width at half maximum F arcmin\n"
"  --kernel-file FILE   radial profile: two columns, angle in radians and K,\n"
"                       increasing angles ('#' comments allowed)\n"
"Truncation (at most one; default: --cutoff-rel 1e-5 for a Gaussian, the last\n"
"tabulated angle for a kernel file):\n"
"  --cutoff-deg R       cut at R degrees, 0 < R <= 180\n"
"  --cutoff-rel EPS     cut where K first falls below EPS K(0), 0 < EPS < 1\n"
"Method:\n"
"  --method M           arkcos (default), direct (exact direct sum over the\n"
"                       pixels within the cutoff; slow), fsht (libsharp\n"
"                       map2alm, times K_l, alm2map)\n"
"  --mode M             arkcos only: enhanced (default) or paper\n"
"  --precision P        arkcos only: double (default) or single\n"
"  --oversample Q       arkcos only: kernel grid of Q x 4 nside points for ring\n"
"                       pairs that involve a polar-cap ring (1 = off; default:\n"
"                       2 where the 4 nside grid would alias above the cutoff)\n"
"  --backend B          arkcos only: auto (default: GPU if one is usable, else\n"
"                       CPU), cpu or gpu (exit 2 if there is no usable GPU)\n"
"  --lmax L             fsht only: band limit, 1 <= L <= 4 nside\n"
"                       (default 3 nside - 1)\n"
"  --iter N             fsht only: Jacobi iterations of map2alm, N >= 0\n"
"                       (default 3, as HEALPix and healpy)\n"
"Other:\n"
"  --threads N          CPU threads (default: all, %d here)\n"
"  --force              overwrite existing outputs\n"
"  --help               this text\n"
"\n"
"Prints one line per input file with the stage times, plus a plan/per-map\n"
"line when several maps were smoothed. Exit status: 0 success, 1 runtime\n"
"failure, 2 bad usage or bad input (nothing is written). Outputs are written\n"
"to a temporary file and renamed; with several inputs, outputs finished\n"
"before a runtime failure are kept.\n",
          omp_get_max_threads());
}

/* ------------------------------------------------------------- parsing */

/* Prints a usage error naming the offending argument; returns exit status 2. */
static int bad_arg(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static int bad_arg(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "arkcos smooth: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(arkcos smooth --help for usage)\n");
  va_end(ap);
  return 2;
}

static int parse_choice(const char *opt, const char *v,
                        const char *const *names, int n, int *out) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v, names[i])) {
      *out = i;
      return 0;
    }
  return bad_arg("%s: unknown value '%s'", opt, v);
}

/* Parses argv into a; returns 0, or an exit status (0 is never returned for
 * --help: -1 means "help printed, exit 0"). */
static int parse_args(int argc, char **argv, smooth_args *a) {
  static const char *const modes[] = {"enhanced", "paper"};
  static const char *const precisions[] = {"double", "single"};
  static const char *const backends[] = {"auto", "cpu", "gpu"};
  memset(a, 0, sizeof *a);
  a->pos = calloc((size_t)argc, sizeof *a->pos);
  if (!a->pos) return bad_arg("out of memory");
  int options_done = 0;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (options_done || arg[0] != '-' || !arg[1]) {
      if (!strcmp(arg, "-")) return bad_arg("'-': standard input is not supported");
      a->pos[a->npos++] = arg;
      continue;
    }
    if (!strcmp(arg, "--")) {
      options_done = 1;
      continue;
    }
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      usage(stdout);
      return -1;
    }
    if (!strcmp(arg, "--force")) {
      a->force = 1;
      continue;
    }
    /* Every other option takes a value: "--opt value" or "--opt=value". */
    char name[64];
    const char *val = NULL;
    const char *eq = strchr(arg, '=');
    if (eq && (size_t)(eq - arg) < sizeof name) {
      memcpy(name, arg, (size_t)(eq - arg));
      name[eq - arg] = 0;
      val = eq + 1;
    } else {
      snprintf(name, sizeof name, "%s", arg);
    }
    struct {
      const char *name;
      int *seen;
    } known[] = {
        {"--fwhm-arcmin", &a->has_fwhm},     {"--kernel-file", &a->has_kernel},
        {"--cutoff-deg", &a->has_cutoff_deg}, {"--cutoff-rel", &a->has_cutoff_rel},
        {"--method", &a->has_method},         {"--mode", &a->has_mode},
        {"--precision", &a->has_precision},   {"--backend", &a->has_backend},
        {"--threads", &a->has_threads},       {"--lmax", &a->has_lmax},
        {"--iter", &a->has_iter},             {"--oversample", &a->has_oversample},
    };
    int k = -1;
    for (int j = 0; j < (int)(sizeof known / sizeof known[0]); j++)
      if (!strcmp(name, known[j].name)) k = j;
    if (k < 0) return bad_arg("unknown option '%s'", arg);
    if (*known[k].seen) return bad_arg("%s given twice", name);
    *known[k].seen = 1;
    if (!val) {
      /* A following "--option" is a forgotten value, not a value; negative
       * numbers ("-5") are still taken, and rejected by the range checks. */
      if (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2))
        return bad_arg("%s needs a value", name);
      val = argv[++i];
    }
    int choice = 0, rc = 0;
    if (!strcmp(name, "--fwhm-arcmin")) {
      if (!parse_double(val, &a->fwhm_arcmin))
        return bad_arg("--fwhm-arcmin: '%s' is not a number", val);
      if (!(a->fwhm_arcmin > 0))
        return bad_arg("--fwhm-arcmin: %s must be positive", val);
    } else if (!strcmp(name, "--kernel-file")) {
      if (!*val) return bad_arg("--kernel-file: empty file name");
      a->kernel_file = val;
    } else if (!strcmp(name, "--cutoff-deg")) {
      if (!parse_double(val, &a->cutoff_deg))
        return bad_arg("--cutoff-deg: '%s' is not a number", val);
      if (!(a->cutoff_deg > 0 && a->cutoff_deg <= 180))
        return bad_arg("--cutoff-deg: %s is outside (0, 180] degrees", val);
    } else if (!strcmp(name, "--cutoff-rel")) {
      if (!parse_double(val, &a->cutoff_rel))
        return bad_arg("--cutoff-rel: '%s' is not a number", val);
      if (!(a->cutoff_rel > 0 && a->cutoff_rel < 1))
        return bad_arg("--cutoff-rel: %s is outside (0, 1)", val);
    } else if (!strcmp(name, "--method")) {
      if ((rc = parse_choice(name, val, method_names, 3, &choice))) return rc;
      a->method = (smooth_method)choice;
    } else if (!strcmp(name, "--mode")) {
      if ((rc = parse_choice(name, val, modes, 2, &choice))) return rc;
      a->mode = choice ? ARKCOS_MODE_PAPER : ARKCOS_MODE_ENHANCED;
    } else if (!strcmp(name, "--precision")) {
      if ((rc = parse_choice(name, val, precisions, 2, &choice))) return rc;
      a->precision = choice ? ARKCOS_SINGLE : ARKCOS_DOUBLE;
    } else if (!strcmp(name, "--backend")) {
      if ((rc = parse_choice(name, val, backends, 3, &choice))) return rc;
      a->backend = choice == 0 ? ARKCOS_BACKEND_AUTO
                   : choice == 1 ? ARKCOS_BACKEND_CPU
                                 : ARKCOS_BACKEND_GPU;
    } else if (!strcmp(name, "--threads")) {
      if (!parse_long(val, &a->threads) || a->threads < 1 || a->threads > 4096)
        return bad_arg("--threads: '%s' is not an integer in [1, 4096]", val);
    } else if (!strcmp(name, "--lmax")) {
      if (!parse_long(val, &a->lmax))
        return bad_arg("--lmax: '%s' is not an integer", val);
      if (a->lmax < 1) return bad_arg("--lmax: %s must be >= 1", val);
    } else if (!strcmp(name, "--oversample")) {
      if (!parse_long(val, &a->oversample) || a->oversample < 1 || a->oversample > 8)
        return bad_arg("--oversample: '%s' is not an integer in [1, 8]", val);
    } else if (!strcmp(name, "--iter")) {
      if (!parse_long(val, &a->iter) || a->iter > 1000)
        return bad_arg("--iter: '%s' is not an integer <= 1000", val);
      if (a->iter < 0) return bad_arg("--iter: %s must be >= 0", val);
    }
  }

  if (a->has_fwhm && a->has_kernel)
    return bad_arg("give either --fwhm-arcmin or --kernel-file, not both");
  if (!a->has_fwhm && !a->has_kernel)
    return bad_arg("a kernel is needed: --fwhm-arcmin F or --kernel-file FILE");
  if (a->has_cutoff_deg && a->has_cutoff_rel)
    return bad_arg("give either --cutoff-deg or --cutoff-rel, not both");
  /* Options that would silently do nothing are errors: a user who asks for
   * --mode paper with --method direct should learn it has no effect. */
  const char *m = method_names[a->method];
  if (a->method != METHOD_ARKCOS) {
    if (a->has_mode) return bad_arg("--mode applies only to --method arkcos, not %s", m);
    if (a->has_precision)
      return bad_arg("--precision applies only to --method arkcos, not %s", m);
    if (a->has_backend)
      return bad_arg("--backend applies only to --method arkcos, not %s", m);
    if (a->has_oversample)
      return bad_arg("--oversample applies only to --method arkcos, not %s", m);
  }
  if (a->method != METHOD_FSHT) {
    if (a->has_lmax) return bad_arg("--lmax applies only to --method fsht, not %s", m);
    if (a->has_iter) return bad_arg("--iter applies only to --method fsht, not %s", m);
  }
  if (a->npos < 2)
    return bad_arg("need an input map and an output (IN.fits OUT.fits)");
  if (!a->has_iter) a->iter = 3;
  if (!a->has_threads) a->threads = omp_get_max_threads();
  return 0;
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

typedef struct smooth_state {
  const smooth_args *a;
  arkcos_kernel *kernel;
  int64_t nside;        /* of geometry and plan below (0: none yet) */
  arkcos_geometry *geom;
  arkcos_plan *plan;
  arkcos_backend backend; /* resolved: CPU or GPU */
  double plan_time;     /* sum over plans created */
  int nplans;
  double *map_times;    /* execute time per map */
  int nmaps_done, map_cap;
  int ninputs;
  int64_t *input_nside; /* per input, from the header check */
  int *input_ncols;
} smooth_state;

/* Maps (columns) over all inputs that share this nside: one plan serves
 * them all. */
static int maps_with_nside(const smooth_state *s, int64_t nside) {
  int n = 0;
  for (int i = 0; i < s->ninputs; i++)
    if (s->input_nside[i] == nside) n += s->input_ncols[i];
  return n;
}

static int ensure_geometry_and_plan(smooth_state *s, int64_t nside,
                                    arkcos_error *err) {
  if (s->geom && s->nside == nside) return ARKCOS_OK;
  arkcos_plan_destroy(s->plan);
  arkcos_geometry_destroy(s->geom);
  s->plan = NULL;
  s->nside = 0;
  s->geom = arkcos_geometry_healpix(nside, err);
  if (!s->geom) return err->code ? err->code : ARKCOS_ERUNTIME;
  s->nside = nside;
  if (s->a->method != METHOD_ARKCOS) return ARKCOS_OK;

  arkcos_options o;
  arkcos_options_default(&o);
  o.mode = s->a->mode;
  o.precision = s->a->precision;
  o.oversample = (int)s->a->oversample;
  o.threads = (int)s->a->threads;
  /* With more than one map, keep the kernel spectra from plan creation so
   * that every map costs only FFTs and the reduction (issue 7); with one map
   * caching would only cost memory. */
  o.cache_kernel_spectra = maps_with_nside(s, nside) > 1;
  double t0 = wall_time();
  if (s->a->backend == ARKCOS_BACKEND_GPU) {
    o.backend = ARKCOS_BACKEND_GPU;
    s->plan = arkcos_plan_create(s->geom, s->kernel, &o, err);
  } else {
    char why[256] = "";
    int gpu = s->a->backend == ARKCOS_BACKEND_AUTO &&
              arkcos_gpu_available(why, sizeof why);
    if (gpu) {
      o.backend = ARKCOS_BACKEND_GPU;
      s->plan = arkcos_plan_create(s->geom, s->kernel, &o, err);
      if (!s->plan)
        fprintf(stderr, "arkcos smooth: note: GPU plan failed (%s); using the CPU\n",
                err->msg);
    }
    if (!s->plan) {
      o.backend = ARKCOS_BACKEND_CPU;
      s->plan = arkcos_plan_create(s->geom, s->kernel, &o, err);
    }
  }
  if (!s->plan && o.cache_kernel_spectra && err->code == ARKCOS_ENOMEM) {
    /* Cached spectra did not fit: recomputing them per map is slower but
     * needs only the working memory of one map. */
    fprintf(stderr, "arkcos smooth: note: kernel spectra do not fit in memory "
                    "(%s); computing them per map\n", err->msg);
    o.cache_kernel_spectra = 0;
    s->plan = arkcos_plan_create(s->geom, s->kernel, &o, err);
  }
  if (!s->plan) return err->code ? err->code : ARKCOS_ERUNTIME;
  s->plan_time += wall_time() - t0;
  s->nplans++;
  s->backend = arkcos_plan_backend(s->plan);
  return ARKCOS_OK;
}

static void add_stages(arkcos_stage_times *sum, const arkcos_stage_times *t) {
  sum->map_fft += t->map_fft;
  sum->kernel_eval += t->kernel_eval;
  sum->kernel_fft += t->kernel_fft;
  sum->reduction += t->reduction;
  sum->map_ifft += t->map_ifft;
  sum->h2d += t->h2d;
  sum->d2h += t->d2h;
  sum->other += t->other;
  sum->total += t->total;
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

static int smooth_one(smooth_state *s, const char *in, const char *out,
                      arkcos_error *err) {
  const smooth_args *a = s->a;
  hpx_map_info info;
  char coordsys[HPX_NAME_LEN] = "";
  double **maps = NULL, **outs = NULL;
  hpx_column *cols = NULL;
  int ncols = 0, rc;

  double t_read = wall_time();
  hpx_header h;
  if ((rc = hpx_read_header(in, &h, err))) return rc;
  cols = h.cols;
  h.cols = NULL;
  snprintf(coordsys, sizeof coordsys, "%s", h.coordsys);
  hpx_header_info(&h, &info);
  rc = hpx_read_columns(&h, &maps, &ncols, &info.nbad, err);
  hpx_header_free(&h);
  if (rc) goto done;
  t_read = wall_time() - t_read;

  double plan_time0 = s->plan_time;
  if ((rc = ensure_geometry_and_plan(s, info.nside, err))) goto done;
  double plan_time = s->plan_time - plan_time0; /* 0 when the plan is reused */
  const int64_t npix = s->geom->npix;
  outs = calloc((size_t)ncols, sizeof *outs);
  if (!outs) {
    rc = arkcos_fail(err, ARKCOS_ENOMEM, "out of memory");
    goto done;
  }
  int lmax = a->has_lmax ? (int)a->lmax : (int)(3 * info.nside - 1);
  arkcos_stage_times sum = {0};
  double t_exec = 0;
  for (int c = 0; c < ncols; c++) {
    outs[c] = malloc(sizeof *outs[c] * (size_t)npix);
    if (!outs[c]) {
      rc = arkcos_fail(err, ARKCOS_ENOMEM, "%s: out of memory for the output map", in);
      goto done;
    }
    double t0 = wall_time();
    switch (a->method) {
      case METHOD_ARKCOS:
        rc = arkcos_execute(s->plan, maps[c], outs[c], err);
        if (!rc) {
          arkcos_stage_times t;
          arkcos_plan_stages(s->plan, &t);
          add_stages(&sum, &t);
        }
        break;
      case METHOD_DIRECT:
        rc = ref_direct_sum(s->geom, s->kernel, maps[c], outs[c], NULL, 0,
                            (int)a->threads, err);
        break;
      case METHOD_FSHT:
        rc = ref_fsht_smooth(s->geom, s->kernel, maps[c], outs[c], lmax,
                             (int)a->iter, NULL, (int)a->threads, err);
        break;
    }
    if (rc) goto done;
    double dt = wall_time() - t0;
    t_exec += dt;
    if ((rc = record_map_time(s, dt))) {
      arkcos_fail(err, rc, "out of memory");
      goto done;
    }
    /* The input column is no longer needed: free it early so that a
     * multi-column map costs one input column plus the outputs. */
    free(maps[c]);
    maps[c] = NULL;
  }

  double t_write = wall_time();
  rc = hpx_write_maps_ex(out, (const double *const *)outs, ncols, info.nside,
                         info.nested, info.is_float32, a->force, cols,
                         coordsys, err);
  if (rc) goto done;
  t_write = wall_time() - t_write;

  /* The summary line: what was done, with what, and where the time went. */
  char kern[160], extra[256] = "";
  double cut = arkcos_kernel_cutoff(s->kernel);
  if (a->has_fwhm)
    snprintf(kern, sizeof kern, "fwhm=%g'", a->fwhm_arcmin);
  else
    snprintf(kern, sizeof kern, "kernel=%s", a->kernel_file);
  if (a->method == METHOD_ARKCOS) {
    snprintf(extra, sizeof extra, " backend=%s mode=%s precision=%s",
             s->backend == ARKCOS_BACKEND_GPU ? "gpu" : "cpu",
             a->mode == ARKCOS_MODE_PAPER ? "paper" : "enhanced",
             a->precision == ARKCOS_SINGLE ? "single" : "double");
  } else if (a->method == METHOD_FSHT) {
    snprintf(extra, sizeof extra, " lmax=%d iter=%ld", lmax, a->iter);
  }
  printf("smooth: %s -> %s nside=%lld maps=%d ordering=%s type=%s method=%s%s "
         "threads=%ld %s cutoff=%.4gdeg (K/K0=%.2g) time=%.4gs",
         in, out, (long long)info.nside, ncols, info.nested ? "NESTED" : "RING",
         info.is_float32 ? "float32" : "float64", method_names[a->method],
         extra, a->threads, kern, cut / DEG,
         arkcos_kernel_cutoff_level(s->kernel), t_exec);
  if (a->method == METHOD_ARKCOS) {
    printf(" (map_fft %.3g kernel_eval %.3g kernel_fft %.3g reduction %.3g "
           "map_ifft %.3g",
           sum.map_fft, sum.kernel_eval, sum.kernel_fft, sum.reduction,
           sum.map_ifft);
    if (s->backend == ARKCOS_BACKEND_GPU)
      printf(" h2d %.3g d2h %.3g", sum.h2d, sum.d2h);
    printf(" other %.3g)", sum.other);
  }
  if (a->method == METHOD_ARKCOS) printf(" plan=%.3gs", plan_time);
  printf(" read=%.3gs write=%.3gs bad_pixels=%lld\n", t_read, t_write,
         (long long)info.nbad);
  fflush(stdout);

done:
  if (outs)
    for (int c = 0; c < ncols; c++) free(outs[c]);
  free(outs);
  free(cols);
  hpx_free_maps(maps, ncols);
  return rc;
}

int cmd_smooth(int argc, char **argv) {
  smooth_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc) {
    free(a.pos);
    return rc < 0 ? 0 : rc;
  }
  arkcos_error err = {0};
  smooth_state s = {0};
  s.a = &a;
  const int nin = a.npos - 1;
  const char *last = a.pos[a.npos - 1];
  size_t lastlen = strlen(last);
  const int to_dir = is_dir(last) || (lastlen && last[lastlen - 1] == '/');
  char **outs = calloc((size_t)nin, sizeof *outs);
  s.ninputs = nin;
  s.input_nside = calloc((size_t)nin, sizeof *s.input_nside);
  s.input_ncols = calloc((size_t)nin, sizeof *s.input_ncols);
  int status = 2;
  if (!outs || !s.input_nside || !s.input_ncols) {
    free(outs);
    free(s.input_nside);
    free(s.input_ncols);
    fprintf(stderr, "arkcos smooth: out of memory\n");
    free(a.pos);
    return 1;
  }
  omp_set_num_threads((int)a.threads);

  if (nin > 1 && !to_dir) {
    status = bad_arg("with several inputs the last argument must be a folder "
                     "(existing, or ending in '/'): '%s'", last);
    goto out;
  }
  if (to_dir && !is_dir(last)) {
    struct stat st;
    if (stat(last, &st) == 0) {
      status = bad_arg("%s: exists and is not a folder", last);
      goto out;
    }
  }

  /* Check every input and output before any work. */
  for (int i = 0; i < nin; i++) {
    hpx_header info;
    if ((rc = hpx_read_header(a.pos[i], &info, &err))) {
      status = report_error(&err);
      goto out;
    }
    s.input_nside[i] = info.nside;
    s.input_ncols[i] = info.ncols;
    hpx_header_free(&info);
    if (a.has_lmax && a.lmax > 4 * s.input_nside[i]) {
      fprintf(stderr, "arkcos smooth: --lmax %ld is above 4 nside = %lld for %s\n",
              a.lmax, (long long)(4 * s.input_nside[i]), a.pos[i]);
      status = 2;
      goto out;
    }
    outs[i] = to_dir ? path_in_dir(last, a.pos[i]) : strdup(last);
    if (!outs[i]) {
      fprintf(stderr, "arkcos smooth: out of memory\n");
      status = 1;
      goto out;
    }
    for (int j = 0; j < i; j++)
      if (!strcmp(outs[i], outs[j])) {
        fprintf(stderr, "arkcos smooth: %s and %s would both be written to %s\n",
                a.pos[j], a.pos[i], outs[i]);
        status = 2;
        goto out;
      }
    /* A missing or read-only output folder is found now, not after the
     * smoothing (which may take minutes). A folder named with a trailing
     * '/' is created later, so only its parent must be writable. */
    if (!to_dir || is_dir(last)) {
      char *dir = parent_dir(outs[i]);
      if (!dir || !is_dir(dir) || access(dir, W_OK) != 0) {
        fprintf(stderr, "arkcos smooth: %s: cannot write into folder '%s': %s\n",
                outs[i], dir ? dir : "?",
                dir && !is_dir(dir) ? "no such folder" : strerror(errno));
        free(dir);
        status = 2;
        goto out;
      }
      free(dir);
    }
    struct stat st;
    if (stat(outs[i], &st) == 0) {
      if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "arkcos smooth: %s: output is a folder\n", outs[i]);
        status = 2;
        goto out;
      }
      if (!a.force) {
        fprintf(stderr, "arkcos smooth: %s: output exists (use --force to overwrite)\n",
                outs[i]);
        status = 2;
        goto out;
      }
      /* Overwriting an input is safe (the output is renamed into place
       * after the input was read) but almost always a slip of the hand. */
      if (same_file(outs[i], a.pos[i]))
        fprintf(stderr, "arkcos smooth: note: %s replaces its own input\n", outs[i]);
    }
  }

  if (a.has_fwhm) {
    arkcos_kernel_spec spec = {0};
    spec.type = ARKCOS_KERNEL_GAUSSIAN;
    spec.fwhm = a.fwhm_arcmin * ARCMIN;
    spec.cutoff = a.has_cutoff_deg ? a.cutoff_deg * DEG : 0;
    spec.cutoff_rel = a.has_cutoff_deg ? 0
                      : a.has_cutoff_rel ? a.cutoff_rel
                                         : DEFAULT_CUTOFF_REL;
    s.kernel = arkcos_kernel_create(&spec, &err);
  } else {
    s.kernel = arkcos_kernel_from_file(
        a.kernel_file, a.has_cutoff_deg ? a.cutoff_deg * DEG : 0,
        a.has_cutoff_rel ? a.cutoff_rel : 0, &err);
  }
  if (!s.kernel) {
    if (!err.code) arkcos_fail(&err, ARKCOS_EINVAL, "cannot create the kernel");
    status = report_error(&err);
    goto out;
  }

  if (a.method == METHOD_ARKCOS && a.backend == ARKCOS_BACKEND_GPU) {
    char why[256] = "";
    if (!arkcos_gpu_available(why, sizeof why)) {
      fprintf(stderr, "arkcos smooth: --backend gpu: %s\n",
              why[0] ? why : "no usable GPU");
      status = 2;
      goto out;
    }
  }

  if (to_dir && !is_dir(last) && mkdir(last, 0777) != 0) {
    fprintf(stderr, "arkcos smooth: %s: cannot create folder: %s\n", last,
            strerror(errno));
    status = 2;
    goto out;
  }

  for (int i = 0; i < nin; i++) {
    if ((rc = smooth_one(&s, a.pos[i], outs[i], &err))) {
      status = report_error(&err);
      goto out;
    }
  }
  if (s.nmaps_done > 1) {
    qsort(s.map_times, (size_t)s.nmaps_done, sizeof *s.map_times, cmp_double);
    double tot = 0;
    for (int i = 0; i < s.nmaps_done; i++) tot += s.map_times[i];
    printf("smooth: %d maps in %d file(s), %d plan(s) in %.4gs; per map: "
           "mean %.4gs median %.4gs min %.4gs max %.4gs\n",
           s.nmaps_done, nin, s.nplans, s.plan_time, tot / s.nmaps_done,
           s.map_times[s.nmaps_done / 2], s.map_times[0],
           s.map_times[s.nmaps_done - 1]);
  }
  status = 0;

out:
  for (int i = 0; i < nin; i++) free(outs[i]);
  free(outs);
  free(s.map_times);
  free(s.input_nside);
  free(s.input_ncols);
  arkcos_plan_destroy(s.plan);
  arkcos_geometry_destroy(s.geom);
  arkcos_kernel_destroy(s.kernel);
  free(a.pos);
  return status;
}
