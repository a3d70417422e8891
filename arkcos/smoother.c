/*
 * smoother.c -- arkcos_smoother (arkcos.h): what "smooth this map" means
 * for every caller. The spec's checks, the kernels (the default cut of a
 * Gaussian per nside and spin), the narrow-kernel rule, the plans or the
 * caller's operator, NESTED order, the warnings; the missing data and the
 * masks of one call are smoother_mask.c's.
 */
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"
#include "arkcos/kernel_internal.h"
#include "arkcos/plan_internal.h" /* arkcos_stages_add, arkcos_execute_two */
#include "arkcos/smoother_internal.h"
#include "arkcos/smoother_narrow.h"

/* The cut of a beam's kernel when the spec gives none (as the command's
 * --cutoff-rel default and the paper's level). */
#define BEAM_CUTOFF_REL 1e-5

void arkcos_smoother_spec_default(arkcos_smoother_spec *s) {
  memset(s, 0, sizeof *s);
  s->kernel.type = ARKCOS_KERNEL_GAUSSIAN;
  arkcos_options_default(&s->options);
  s->mask_mode = ARKCOS_MASK_NORMALIZE;
  s->min_weight = -1;
  s->quadrature = ARKCOS_QUADRATURE_POLAR;
}

/* ---------------------------------------------------------------- kernel */

/* 1 when the spec's kernel is no smoothing (a Gaussian of FWHM 0). */
static int gaussian_type(int t) { return t == ARKCOS_KERNEL_GAUSSIAN || t == ARKCOS_KERNEL_GAUSSIAN_HARMONIC; }

static int is_identity(const arkcos_smoother_spec *s) {
  return !s->user_kernel && !s->beam && gaussian_type(s->kernel.type) && s->kernel.fwhm == 0;
}

/* 1 when the spec's kernel is a Gaussian whose FWHM is its width. */
static int is_gaussian(const arkcos_smoother_spec *s) {
  return !s->user_kernel && !s->beam && gaussian_type(s->kernel.type);
}

arkcos_kernel *arkcos_smoother_make_kernel(const arkcos_smoother_spec *spec, int spin,
                                           arkcos_error *err) {
  if (err) err->code = 0;
  if (is_identity(spec)) return NULL;
  if (spec->user_kernel)
    return arkcos_fail(err, ARKCOS_EINVAL, "make_kernel: the spec's kernel is the caller's (user_kernel)"),
           NULL;
  if (spec->beam)
    return arkcos_kernel_from_beam(spec->beam, spec->beam_lmax,
                                   spec->kernel.cutoff_rel > 0 ? spec->kernel.cutoff_rel : BEAM_CUTOFF_REL,
                                   err);
  arkcos_kernel_spec k = spec->kernel;
  if (gaussian_type(k.type) && k.cutoff == 0 && k.cutoff_rel == 0)
    k.cutoff_rel = arkcos_gaussian_default_cutoff_rel(k.fwhm, spec->nside, spin);
  if (k.type == ARKCOS_KERNEL_GAUSSIAN_HARMONIC)
    return arkcos_kernel_gaussian_harmonic_cut(k.fwhm, k.cutoff_rel, k.cutoff, err);
  return arkcos_kernel_create(&k, err);
}

/* 1 when the smoother integrates with the rings' quadrature weights (and
 * divides by A(W)): the default, for pixel-space smoothing. */
int smoother_ring_quadrature(const arkcos_smoother_spec *s) {
  return (s->quadrature == ARKCOS_QUADRATURE_RING || s->quadrature == ARKCOS_QUADRATURE_POLAR) &&
         !(s->op && s->op->harmonic) && !is_identity(s);
}

/* ----------------------------------------------------------------- checks */

static int is_pow2(int64_t n) { return n > 0 && !(n & (n - 1)); }

/* What needs no kernel: nside, order, the kernel's choice, the missing
 * data's options. */
static int check_plain(const arkcos_smoother_spec *s, arkcos_error *err) {
  if (!s) return arkcos_fail(err, ARKCOS_EINVAL, "smoother: no spec");
  if (s->nside < 1) return arkcos_fail(err, ARKCOS_EINVAL, "nside must be >= 1, got %lld", (long long)s->nside);
  if (s->nested && !is_pow2(s->nside))
    return arkcos_fail(err, ARKCOS_EINVAL, "NESTED order needs nside a power of 2, got %lld",
                       (long long)s->nside);
  const int plain_kernel = gaussian_type(s->kernel.type) && s->kernel.fwhm == 0 &&
                           s->kernel.cutoff == 0;
  if (s->user_kernel && (s->beam || !plain_kernel || s->kernel.cutoff_rel != 0))
    return arkcos_fail(err, ARKCOS_EINVAL, "give one kernel: user_kernel, beam or kernel");
  if (s->beam && !plain_kernel)
    return arkcos_fail(err, ARKCOS_EINVAL, "give one kernel: beam or kernel (a beam's kernel is cut by "
                       "level, kernel.cutoff_rel, not by angle)");
  if (gaussian_type(s->kernel.type) && !(s->kernel.fwhm >= 0))
    return arkcos_fail(err, ARKCOS_EINVAL, "fwhm must be >= 0 radians, got %g", s->kernel.fwhm);
  if (s->mask_mode != ARKCOS_MASK_NORMALIZE && s->mask_mode != ARKCOS_MASK_ZERO)
    return arkcos_fail(err, ARKCOS_EINVAL, "mask_mode: %d is neither normalize (0) nor zero (1)",
                       (int)s->mask_mode);
  if (!(s->min_weight >= 0 && s->min_weight <= 1) && s->min_weight != -1)
    return arkcos_fail(err, ARKCOS_EINVAL, "min_weight must be in [0, 1] (or -1: the default), got %g",
                       s->min_weight);
  if (s->mask_mode == ARKCOS_MASK_ZERO && s->min_weight != -1)
    return arkcos_fail(err, ARKCOS_EINVAL, "min_weight applies to the normalize mask mode only (zero keeps "
                       "every pixel)");
  if (s->quadrature != ARKCOS_QUADRATURE_RING && s->quadrature != ARKCOS_QUADRATURE_POINT &&
      s->quadrature != ARKCOS_QUADRATURE_POLAR)
    return arkcos_fail(err, ARKCOS_EINVAL, "quadrature: %d is none of ring (0), point (1), polar (2)",
                       s->quadrature);
  if (s->normalize && s->op && s->op->harmonic)
    return arkcos_fail(err, ARKCOS_EINVAL, "%s applies only to pixel-space smoothing, not harmonic "
                       "smoothing (it keeps a constant map constant by construction)",
                       s->normalize_name ? s->normalize_name : "normalize");
  if (s->op && (!s->op->prepare || !s->op->apply || !s->op->apply_spin2))
    return arkcos_fail(err, ARKCOS_EINVAL, "operator: prepare, apply and apply_spin2 are all needed");
  return ARKCOS_OK;
}

static void add_warning(arkcos_warning *w, int *n, int room, int code, const char *msg) {
  if (!w || *n >= room) return;
  w[*n].code = code;
  snprintf(w[*n].msg, sizeof w[*n].msg, "%s", msg);
  (*n)++;
}

/* The narrow-kernel rule for kernel k of width (radians) at nside: 0 with
 * the warnings, or EINVAL with the refusal. */
static int check_sampling(const arkcos_smoother_spec *s, const arkcos_kernel *k, double width,
                          arkcos_warning *w, int *nw, int room, arkcos_error *err) {
  if (s->op && s->op->harmonic) return ARKCOS_OK;
  const int gaussian = is_gaussian(s);
  const double ppf = narrow_pixels_per_fwhm(width, s->nside);
  if (ppf >= NARROW_WARN) return ARKCOS_OK;
  arkcos_error gerr = {0, ""};
  arkcos_geometry *g = arkcos_geometry_healpix(s->nside, &gerr);
  double lo = NAN, hi = NAN;
  if (!g || narrow_constant_range(g, k, &lo, &hi, &gerr)) lo = hi = NAN;
  arkcos_geometry_destroy(g);
  char msg[1024];
  if (ppf < NARROW_REFUSE && !s->allow_subpixel) {
    narrow_refusal_named(width, gaussian, s->nside, lo, hi, s->harmonic_name, s->allow_subpixel_name, msg,
                         sizeof msg);
    return arkcos_fail(err, ARKCOS_EINVAL, "%s", msg);
  }
  if (ppf < NARROW_REFUSE) {
    char d[200];
    narrow_describe(width, gaussian, s->nside, d, sizeof d);
    snprintf(msg, sizeof msg, "the kernel is %s, below %g: the pixel sum (%s) is no "
             "smoothing; a constant map of 1 comes out between %.4g and %.4g%s%s", d, NARROW_REFUSE,
             s->allow_subpixel_name ? s->allow_subpixel_name : "allow_subpixel", lo, hi,
             s->normalize ? " before " : "", s->normalize ? (s->normalize_name ? s->normalize_name : "normalize") : "");
    add_warning(w, nw, room, ARKCOS_WARN_SUBPIXEL, msg);
    return ARKCOS_OK;
  }
  narrow_warning_named(width, gaussian, s->nside, lo, hi, s->normalize || smoother_ring_quadrature(s),
                       s->normalize ? s->normalize_name : "the normalisation of ring quadrature", msg, sizeof msg);
  add_warning(w, nw, room, ARKCOS_WARN_NARROW, msg);
  return ARKCOS_OK;
}

/* check without the plain part: the kernel (k0: the scalar one, made or
 * borrowed) and its sampling. */
/* The width pixels per FWHM are counted in: a Gaussian's FWHM, else the
 * kernel's effective FWHM (smoother_narrow.c) */
static double kernel_width(const arkcos_smoother_spec *s, const arkcos_kernel *k0) {
  return is_gaussian(s) ? s->kernel.fwhm : narrow_kernel_width(k0, 0);
}

static int check_kernel(const arkcos_smoother_spec *s, const arkcos_kernel *k0, arkcos_warning *w,
                        int *nw, int room, double *width, arkcos_error *err) {
  *width = kernel_width(s, k0);
  return check_sampling(s, k0, *width, w, nw, room, err);
}

int arkcos_smoother_check(const arkcos_smoother_spec *spec, arkcos_warning *warn, int *nwarn,
                          arkcos_error *err) {
  const int room = nwarn && warn ? *nwarn : 0;
  int n = 0;
  if (nwarn) *nwarn = 0;
  int rc = check_plain(spec, err);
  if (rc || is_identity(spec)) return rc;
  arkcos_error kerr = {0, ""};
  arkcos_kernel *own = spec->user_kernel ? NULL : arkcos_smoother_make_kernel(spec, 0, &kerr);
  const arkcos_kernel *k = spec->user_kernel ? spec->user_kernel : own;
  if (!k) {
    if (err) *err = kerr;
    return kerr.code ? kerr.code : ARKCOS_EINVAL;
  }
  double width;
  rc = check_kernel(spec, k, warn, &n, room, &width, err);
  arkcos_kernel_destroy(own);
  if (nwarn) *nwarn = n;
  return rc;
}

/* --------------------------------------------------------------- warnings */

int smoother_warn(arkcos_smoother *s, int code, const char *fmt, ...) {
  if (s->nwarn == s->capwarn) {
    int cap = s->capwarn ? 2 * s->capwarn : 8;
    arkcos_warning *w = realloc(s->warn, sizeof *w * (size_t)cap);
    if (!w) return ARKCOS_ENOMEM;
    s->warn = w;
    s->capwarn = cap;
  }
  arkcos_warning *w = &s->warn[s->nwarn++];
  w->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->msg, sizeof w->msg, fmt, ap);
  va_end(ap);
  return ARKCOS_OK;
}

int arkcos_smoother_nwarnings(const arkcos_smoother *s) { return s ? s->nwarn : 0; }

const arkcos_warning *arkcos_smoother_warning(const arkcos_smoother *s, int i) {
  return s && i >= 0 && i < s->nwarn ? &s->warn[i] : NULL;
}

/* ----------------------------------------------------------------- create */

arkcos_smoother *arkcos_smoother_create(const arkcos_smoother_spec *spec, arkcos_error *err) {
  if (check_plain(spec, err)) return NULL;
  arkcos_smoother *s = calloc(1, sizeof *s);
  if (!s) return arkcos_fail(err, ARKCOS_ENOMEM, "smoother: out of memory"), NULL;
  s->spec = *spec;
  s->spec.beam = NULL; /* used now only */
  if (spec->op) {
    s->op = *spec->op;
    s->has_op = 1;
    s->spec.op = &s->op;
  }
  s->identity = is_identity(spec);
  s->g = arkcos_geometry_healpix(spec->nside, err);
  int rc = s->g ? ARKCOS_OK : ARKCOS_ERUNTIME;
  s->ring_quadrature = !rc && !s->identity && smoother_ring_quadrature(spec);
  s->normalize = spec->normalize;
  if (s->ring_quadrature) {
    /* every plan and operator integrates with the rings' quadrature
     * weights: the pixel sum over ring r is weighted w_r 4 pi / npix */
    double *w = malloc(sizeof *w * (size_t)s->g->nrings);
    if (!w || arkcos_healpix_ring_weights(spec->nside, w)) rc = arkcos_fail(err, ARKCOS_ENOMEM, "smoother: out of memory");
    for (int r = 0; !rc && r < s->g->nrings; r++) s->g->rings[r].weight *= w[r];
    free(w);
  }
  if (!rc && !s->identity) {
    for (int k = 0; k < 2 && !rc; k++) {
      const int spin = 2 * k;
      if (spec->user_kernel) {
        s->k[k] = spec->user_kernel;
      } else if (k == 1 && !(is_gaussian(spec) && spec->kernel.cutoff == 0 && spec->kernel.cutoff_rel == 0 &&
                             arkcos_gaussian_default_cutoff_rel(spec->kernel.fwhm, spec->nside, 2) !=
                                 arkcos_gaussian_default_cutoff_rel(spec->kernel.fwhm, spec->nside, 0))) {
        s->k[1] = s->k[0]; /* one kernel for both spins */
      } else {
        s->own[k] = arkcos_smoother_make_kernel(spec, spin, err);
        s->k[k] = s->own[k];
        if (!s->own[k]) rc = err && err->code ? err->code : ARKCOS_EINVAL;
      }
    }
    arkcos_warning w[4];
    int nw = 0;
    if (!rc) rc = check_kernel(spec, s->k[0], w, &nw, 4, &s->width, err);
    /* below ARKCOS_RING_DIVIDE_PPF the ring weights alone leave a constant
     * map off by more than 2e-6 (1.1e-4 at 4 pixels per FWHM): divide by A(W) */
    if (!rc && s->ring_quadrature && narrow_pixels_per_fwhm(s->width, spec->nside) < ARKCOS_RING_DIVIDE_PPF)
      s->normalize = 1;
    for (int i = 0; i < nw && !rc; i++) rc = smoother_warn(s, w[i].code, "%s", w[i].msg);
  }
  if (!rc && spec->nested) {
    s->n2r = malloc(sizeof *s->n2r * (size_t)s->g->npix);
    if (!s->n2r) rc = arkcos_fail(err, ARKCOS_ENOMEM, "smoother: out of memory for the NESTED order");
    for (int64_t p = 0; !rc && p < s->g->npix; p++) s->n2r[p] = arkcos_healpix_nest2ring(spec->nside, p);
  }
  if (rc) {
    if (err && !err->code) arkcos_fail(err, rc, "smoother: cannot be made");
    arkcos_smoother_destroy(s);
    return NULL;
  }
  return s;
}

/* ------------------------------------------------------------------ plans */

/* ARKCOS_QUADRATURE_POLAR's reconstruction (polar.h), of spin 0 or 2:
 * where it applies, every apply of that spin adds it (the plans' and the
 * operators' alike, so the direct sum defines the same operator). */
static int make_polar(arkcos_smoother *s, int spin, arkcos_error *err) {
  arkcos_polar **pp = spin ? &s->polar2 : &s->polar;
  if (!s->ring_quadrature || s->spec.quadrature != ARKCOS_QUADRATURE_POLAR || s->identity || *pp ||
      !(narrow_pixels_per_fwhm(s->width, s->spec.nside) >= ARKCOS_POLAR_MIN_PPF))
    return ARKCOS_OK;
  arkcos_error e = {0};
  const double t0 = omp_get_wtime();
  *pp = spin ? arkcos_polar_create_spin2(s->g, s->k[1], s->spec.options.threads, &e)
             : arkcos_polar_create(s->g, s->k[0], s->spec.options.threads, &e);
  s->polar_time += omp_get_wtime() - t0; /* plan work, not the apply's: arkcos_smoother_polar_time */
  if (!*pp && e.code) {
    if (err) *err = e;
    return e.code;
  }
  if (spin) s->polar2_caps = 3;
  else s->polar_caps = 3;
  return ARKCOS_OK;
}

const double *arkcos_smoother_polar_delta_one(arkcos_smoother *s) {
  const double t0 = omp_get_wtime();
  const double *d = arkcos_polar_delta_one(s->polar, s->spec.options.threads);
  s->polar_time += omp_get_wtime() - t0; /* made once, with the first division: plan work */
  return d;
}

arkcos_polar *arkcos_smoother_polar(arkcos_smoother *s, int spin, arkcos_error *err) {
  if (!s || arkcos_smoother_prepare(s, spin, err)) return NULL;
  return spin ? s->polar2 : s->polar;
}

int smoother_polar_norm(arkcos_smoother *s) {
  arkcos_polar *p = s->polar;
  if (!p || s->norm_polar || !s->norm_w) return ARKCOS_OK;
  const double *d = arkcos_smoother_polar_delta_one(s);
  if (!d) return ARKCOS_ENOMEM;
  const int64_t n = arkcos_polar_out_pixels(p);
  double *v = malloc(sizeof *v * 2 * (size_t)n);
  if (!v) return ARKCOS_ENOMEM;
  for (int64_t j = 0; j < n; j++) {
    v[j] = s->norm_w[j] + d[j];
    v[n + j] = s->norm_w[arkcos_polar_mirror(p, j)] + d[j];
  }
  s->norm_polar = v;
  return ARKCOS_OK;
}

/* The correction added to out; an error (out of memory for its scratch)
 * fails the apply: out is then not the operator's. */
static int add_polar(arkcos_smoother *s, const double *in, double *out, arkcos_error *err) {
  if (!s->polar || !s->polar_caps) return ARKCOS_OK;
  const double t0 = omp_get_wtime();
  const int rc = arkcos_polar_apply(s->polar, in, out, s->polar_caps, s->spec.options.threads);
  s->last.stages.other += omp_get_wtime() - t0;
  return rc ? arkcos_fail(err, rc, "smoother: out of memory for the polar caps' correction") : ARKCOS_OK;
}

static int add_polar2(arkcos_smoother *s, const double *q, const double *u, double *qo, double *uo,
                      arkcos_error *err) {
  if (!s->polar2 || !s->polar2_caps) return ARKCOS_OK;
  const double t0 = omp_get_wtime();
  const int rc = arkcos_polar_apply2(s->polar2, q, u, qo, uo, s->polar2_caps, s->spec.options.threads);
  s->last.stages.other += omp_get_wtime() - t0;
  return rc ? arkcos_fail(err, rc, "smoother: out of memory for the polar caps' correction of Q, U") : ARKCOS_OK;
}

int arkcos_smoother_prepare(arkcos_smoother *s, int spin, arkcos_error *err) {
  if (spin != 0 && spin != 2) return arkcos_fail(err, ARKCOS_EINVAL, "spin must be 0 or 2, got %d", spin);
  const int k = spin / 2;
  if (s->ready[k] || s->identity) return ARKCOS_OK;
  if (s->has_op) {
    int rc = s->op.prepare(s->op.ctx, spin, s->g, s->k[k], err);
    if (rc) return rc;
    s->ready[k] = 1;
    return make_polar(s, spin, err);
  }
  arkcos_options o = s->spec.options;
  o.spin = spin;
  if (spin == 2) {
    if (o.precision == ARKCOS_SINGLE)
      return arkcos_fail(err, ARKCOS_EINVAL, "Stokes Q and U (spin 2) are smoothed in double precision only");
    o.accuracy = 0; /* Q and U are exact whatever accuracy says */
  }
  s->plan[k] = arkcos_plan_create(s->g, s->k[k], &o, err);
  if (!s->plan[k]) return err && err->code ? err->code : ARKCOS_ERUNTIME;
  s->ready[k] = 1;
  if (k == 0 && !s->normalize) arkcos_direct_drop_constant_sums(s->plan[0]); /* A(1) never asked for */
  const int prc = make_polar(s, spin, err);
  if (prc) return prc;
  const char *note = arkcos_plan_note(s->plan[k]), *inexact = arkcos_plan_exactness(s->plan[k]);
  int rc = note[0] ? smoother_warn(s, ARKCOS_WARN_NOTE, "%s", note) : ARKCOS_OK;
  if (!rc && inexact[0])
    rc = smoother_warn(s, ARKCOS_WARN_INEXACT, "nside %lld: %s", (long long)s->spec.nside, inexact);
  return rc ? arkcos_fail(err, rc, "smoother: out of memory") : ARKCOS_OK;
}

/* One scalar map, RING, in -> out (not overlapping). */
int smoother_apply0(arkcos_smoother *s, const double *in, double *out, arkcos_error *err) {
  if (s->identity) {
    memcpy(out, in, sizeof *out * (size_t)s->g->npix);
    return ARKCOS_OK;
  }
  int rc = arkcos_smoother_prepare(s, 0, err);
  if (rc) return rc;
  if (s->has_op) {
    rc = s->op.apply(s->op.ctx, in, out, err);
    return rc ? rc : add_polar(s, in, out, err);
  }
  rc = arkcos_execute(s->plan[0], in, out, err);
  if (!rc) {
    arkcos_stage_times t;
    arkcos_plan_stages(s->plan[0], &t);
    arkcos_stages_add(&s->last.stages, &t);
    rc = add_polar(s, in, out, err);
  }
  return rc;
}

int smoother_apply0_two(arkcos_smoother *s, const double *in1, double *out1, const double *in2, double *out2,
                        arkcos_error *err) {
  if (s->identity || s->has_op) {
    const int rc = smoother_apply0(s, in1, out1, err);
    return rc ? rc : smoother_apply0(s, in2, out2, err);
  }
  int rc = arkcos_smoother_prepare(s, 0, err);
  if (rc) return rc;
  rc = arkcos_execute_two(s->plan[0], in1, out1, in2, out2, err);
  if (!rc) {
    arkcos_stage_times t;
    arkcos_plan_stages(s->plan[0], &t);
    arkcos_stages_add(&s->last.stages, &t);
    rc = add_polar(s, in1, out1, err);
    if (!rc) rc = add_polar(s, in2, out2, err);
  }
  return rc;
}

int smoother_apply2(arkcos_smoother *s, const double *q, const double *u, double *qo, double *uo,
                    arkcos_error *err) {
  if (s->identity) {
    memcpy(qo, q, sizeof *qo * (size_t)s->g->npix);
    memcpy(uo, u, sizeof *uo * (size_t)s->g->npix);
    return ARKCOS_OK;
  }
  int rc = arkcos_smoother_prepare(s, 2, err);
  if (rc) return rc;
  if (s->has_op) {
    rc = s->op.apply_spin2(s->op.ctx, q, u, qo, uo, err);
    return rc ? rc : add_polar2(s, q, u, qo, uo, err);
  }
  rc = arkcos_execute_spin2(s->plan[1], q, u, qo, uo, err);
  if (!rc) {
    arkcos_stage_times t;
    arkcos_plan_stages(s->plan[1], &t);
    arkcos_stages_add(&s->last.stages, &t);
    rc = add_polar2(s, q, u, qo, uo, err);
  }
  return rc;
}

/* -------------------------------------------------------------- accessors */

const arkcos_kernel *arkcos_smoother_kernel(const arkcos_smoother *s, int spin) {
  return s && (spin == 0 || spin == 2) ? s->k[spin / 2] : NULL;
}

const arkcos_plan *arkcos_smoother_plan(const arkcos_smoother *s, int spin) {
  return s && (spin == 0 || spin == 2) ? s->plan[spin / 2] : NULL;
}

double arkcos_smoother_bound(const arkcos_smoother *s) {
  if (!s || s->identity) return 0;
  if (s->has_op) return NAN;
  double b = 0;
  for (int k = 0; k < 2; k++)
    if (s->plan[k]) b = fmax(b, arkcos_plan_bound(s->plan[k]));
  return b;
}

int arkcos_smoother_divides(const arkcos_smoother *s) { return s && s->normalize; }

int arkcos_smoother_streams_division(const arkcos_smoother_spec *spec, int normalize, int masked) {
  /* counted held where the GPU may take the map: gpu, or auto with a device */
  const arkcos_backend be = spec->options.backend;
  return normalize && !masked && !(spec->options.accuracy > 0) &&
         (!spec->op || (spec->op->plan && !spec->op->harmonic)) &&
         spec->options.direct_weights == ARKCOS_WEIGHTS_ON_THE_FLY && spec->options.mode == ARKCOS_MODE_ENHANCED &&
         (be == ARKCOS_BACKEND_CPU || (be == ARKCOS_BACKEND_AUTO && !arkcos_gpu_available(NULL, 0)));
}

double arkcos_smoother_pixels_per_fwhm(const arkcos_smoother *s) {
  return !s || s->identity ? 0 : narrow_pixels_per_fwhm(s->width, s->spec.nside);
}

double arkcos_smoother_estimate(const arkcos_smoother_spec *spec, int nmaps, int pair, int masked,
                                arkcos_error *err) {
  if (check_plain(spec, err)) return 0;
  if (nmaps < 1) return arkcos_fail(err, ARKCOS_EINVAL, "nmaps must be >= 1, got %d", nmaps), 0;
  arkcos_geometry *g = arkcos_geometry_healpix(spec->nside, err);
  if (!g) return 0;
  const double npix = (double)g->npix;
  /* work maps: a map in (two for a pair, two more in NESTED order), the
   * weights and A(w) and the mask when masked, A(1) (A(W)) where the
   * smoother divides by it (normalize; ring quadrature below
   * ARKCOS_RING_DIVIDE_PPF pixels per FWHM, as arkcos_smoother_create
   * decides), and the NESTED index */
  int normalize = spec->normalize, polar = 0;
  if (smoother_ring_quadrature(spec)) {
    arkcos_kernel *own = spec->user_kernel || is_gaussian(spec) ? NULL : arkcos_smoother_make_kernel(spec, 0, NULL);
    const arkcos_kernel *kk = spec->user_kernel ? spec->user_kernel : own;
    const double width = is_gaussian(spec) || kk ? kernel_width(spec, kk) : 0;
    /* no kernel (an error the loop below reports): counted, on the safe side */
    if (!normalize) normalize = !(width > 0) || narrow_pixels_per_fwhm(width, spec->nside) < ARKCOS_RING_DIVIDE_PPF;
    polar = spec->quadrature == ARKCOS_QUADRATURE_POLAR &&
            (!(width > 0) || narrow_pixels_per_fwhm(width, spec->nside) >= ARKCOS_POLAR_MIN_PPF);
    arkcos_kernel_destroy(own);
  }
  /* A(1) made ring by ring, not held (smoother_mask.c, divide_streamed);
   * counted held with an operator, whose plan (op->plan) may be NULL */
  const int streamed = !spec->op && arkcos_smoother_streams_division(spec, normalize, masked);
  double bytes = 8 * npix * (2.0 + 2 * spec->nested + 3.0 * masked + (normalize && !streamed) + spec->nested);
  if (is_identity(spec) || spec->op) {
    arkcos_geometry_destroy(g);
    return bytes;
  }
  for (int k = 0; k < 1 + (pair != 0) && bytes > 0; k++) {
    const int spin = 2 * k;
    if (spin == 0 && nmaps <= 2 * (pair != 0) && !masked && !normalize) continue;
    arkcos_kernel *own = spec->user_kernel ? NULL : arkcos_smoother_make_kernel(spec, spin, err);
    const arkcos_kernel *kk = spec->user_kernel ? spec->user_kernel : own;
    arkcos_options o = spec->options;
    o.spin = spin;
    if (spin == 2) o.precision = ARKCOS_DOUBLE, o.accuracy = 0;
    double b = kk ? arkcos_plan_estimate(g, kk, &o, err) : 0;
    /* ring quadrature's polar reconstruction (polar.h), made with each spin's plan */
    if (b > 0 && polar)
      b += spin ? arkcos_polar_estimate_spin2(g, kk) : arkcos_polar_estimate(g, kk);
    arkcos_kernel_destroy(own);
    bytes = b > 0 ? bytes + b : 0;
  }
  arkcos_geometry_destroy(g);
  return bytes;
}

void arkcos_smoother_destroy(arkcos_smoother *s) {
  if (!s) return;
  for (int k = 0; k < 2; k++) {
    arkcos_plan_destroy(s->plan[k]);
    arkcos_kernel_destroy(s->own[k]);
  }
  arkcos_polar_destroy(s->polar);
  arkcos_polar_destroy(s->polar2);
  arkcos_geometry_destroy(s->g);
  free(s->n2r);
  free(s->norm_w);
  free(s->norm_polar);
  free(s->polar_used);
  free(s->warn);
  free(s->reports);
  free(s);
}
