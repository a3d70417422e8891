/*
 * test_method.c -- the one method/backend selection (harness/common/method.h):
 * every method through a smoother gives bit for bit what the engine or the
 * reference gives when called directly; the AUTO backend follows the
 * engine's rule; the accuracy asked reaches the plan and its a-priori
 * bound comes back; what a method cannot do is refused with a message.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"
#include "harness/common/method.h"
#include "reference/reference.h"
#include "tests/testlib.h"
#include "tests/testmaps.h"

#define NSIDE 16

typedef struct fixture {
  arkcos_geometry *g;
  arkcos_kernel *k;
  double *in, *a, *b;
} fixture;

static int fixture_make(fixture *f) {
  arkcos_error e = {0, ""};
  arkcos_kernel_spec s;
  memset(&s, 0, sizeof s);
  s.type = ARKCOS_KERNEL_GAUSSIAN;
  s.fwhm = 4.0 * M_PI / 180.0; /* 4 degrees: 3.5 pixels per FWHM at nside 16 */
  s.cutoff_rel = 1e-6;
  f->g = arkcos_geometry_healpix(NSIDE, &e);
  f->k = arkcos_kernel_create(&s, &e);
  int64_t n = f->g ? f->g->npix : 0;
  f->in = random_map(n);
  f->a = calloc((size_t)n, sizeof(double));
  f->b = calloc((size_t)n, sizeof(double));
  return f->g && f->k && f->in && f->a && f->b;
}

static void fixture_free(fixture *f) {
  arkcos_geometry_destroy(f->g);
  arkcos_kernel_destroy(f->k);
  free(f->in);
  free(f->a);
  free(f->b);
}

static int same_bits(const double *a, const double *b, int64_t n) {
  return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

TEST_GROUP(names) {
  for (int i = 0; i < METHOD_NKINDS; i++)
    CHECK(method_from_name(method_name((method_kind)i)) == i, "name of method %d", i);
  CHECK(method_from_name("nope") == -1, "an unknown name is -1");
  CHECK(method_from_name(NULL) == -1, "NULL is -1");
  CHECK(!strcmp(method_name(METHOD_FSHT), "fsht"), "fsht");
}

TEST_GROUP(each_method_as_called_directly) {
  fixture f = {0};
  CHECK(fixture_make(&f), "fixture");
  if (!f.g) return;
  arkcos_error e = {0, ""};
  int64_t n = f.g->npix;

  /* arkcos on the CPU, against a plan made by hand */
  method_spec s;
  method_spec_default(&s);
  s.arkcos.backend = ARKCOS_BACKEND_CPU;
  s.threads = 2;
  smoother *sm = smoother_create(&s, f.g, f.k, &e);
  CHECK(sm != NULL, "arkcos smoother: %s", e.msg);
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.threads = 2;
  arkcos_plan *p = arkcos_plan_create(f.g, f.k, &o, &e);
  CHECK(p != NULL, "plan: %s", e.msg);
  if (sm && p) {
    CHECK(smoother_apply(sm, f.in, f.a, &e) == 0, "apply: %s", e.msg);
    CHECK(arkcos_execute(p, f.in, f.b, &e) == 0, "execute: %s", e.msg);
    CHECK(same_bits(f.a, f.b, n), "arkcos through the smoother is the plan's output bit for bit");
    CHECK(smoother_backend(sm) == ARKCOS_BACKEND_CPU, "CPU as asked");
    CHECK(smoother_plan_memory(sm) == arkcos_plan_memory(p), "plan memory");
    CHECK(smoother_plan_time(sm) > 0, "plan time recorded");
    arkcos_stage_times t;
    smoother_stages(sm, &t);
    CHECK(t.total > 0, "stage times of the last apply");
    CHECK(smoother_apply_pixels(sm, f.in, NULL, 0, f.a, &e) == ARKCOS_EINVAL &&
              strstr(e.msg, "direct") != NULL,
          "single pixels only from the direct sum: %s", e.msg);
  }
  arkcos_plan_destroy(p);
  smoother_destroy(sm);

  /* direct, whole map and listed pixels */
  s.kind = METHOD_DIRECT;
  sm = smoother_create(&s, f.g, f.k, &e);
  CHECK(sm != NULL, "direct smoother: %s", e.msg);
  if (sm) {
    CHECK(smoother_apply(sm, f.in, f.a, &e) == 0, "apply: %s", e.msg);
    CHECK(ref_direct_sum(f.g, f.k, f.in, f.b, NULL, 0, 2, &e) == 0, "direct: %s", e.msg);
    CHECK(same_bits(f.a, f.b, n), "direct through the smoother, bit for bit");
    int64_t pix[3] = {0, n / 2, n - 1};
    double v[3];
    CHECK(smoother_apply_pixels(sm, f.in, pix, 3, v, &e) == 0, "pixels: %s", e.msg);
    CHECK(v[0] == f.b[0] && v[1] == f.b[n / 2] && v[2] == f.b[n - 1],
          "listed pixels equal the whole-map sum there");
    CHECK(smoother_plan_time(sm) == 0 && smoother_plan_memory(sm) == 0, "no plan");
    CHECK(smoother_bound(sm) == 0, "the direct sum's bound against itself is 0");
  }
  smoother_destroy(sm);

  /* fsht */
  s.kind = METHOD_FSHT;
  s.lmax = 3 * NSIDE - 1;
  s.iter = 1;
  sm = smoother_create(&s, f.g, f.k, &e);
  CHECK(sm != NULL, "fsht smoother: %s", e.msg);
  if (sm) {
    CHECK(smoother_apply(sm, f.in, f.a, &e) == 0, "apply: %s", e.msg);
    CHECK(ref_fsht_smooth(f.g, f.k, f.in, f.b, s.lmax, 1, NULL, 2, &e) == 0, "fsht: %s", e.msg);
    CHECK(same_bits(f.a, f.b, n), "fsht through the smoother, bit for bit");
    CHECK(isinf(smoother_bound(sm)) && smoother_bound(sm) > 0, "fsht has no bound: +inf");
  }
  smoother_destroy(sm);
  fixture_free(&f);
}

/* AUTO follows the engine's rule: without a usable GPU it is the CPU, and
 * then there is nothing to note (no GPU plan was tried). */
TEST_GROUP(auto_backend) {
  fixture f = {0};
  CHECK(fixture_make(&f), "fixture");
  if (!f.g) return;
  arkcos_error e = {0, ""};
  char why[256] = "";
  int gpu = arkcos_gpu_available(why, sizeof why);
  method_spec s;
  method_spec_default(&s);
  CHECK(s.arkcos.backend == ARKCOS_BACKEND_AUTO, "AUTO is the default");
  smoother *sm = smoother_create(&s, f.g, f.k, &e);
  CHECK(sm != NULL, "auto smoother: %s", e.msg);
  if (sm && !gpu) {
    CHECK(smoother_backend(sm) == ARKCOS_BACKEND_CPU, "no GPU (%s): the CPU", why);
    CHECK(smoother_note(sm)[0] == 0, "nothing to note: %s", smoother_note(sm));
  }
  if (sm && gpu) CHECK(smoother_backend(sm) == ARKCOS_BACKEND_GPU, "a usable GPU is taken");
  smoother_destroy(sm);
  if (!gpu) {
    /* GPU asked for explicitly: refused as a missing device, never the CPU */
    s.arkcos.backend = ARKCOS_BACKEND_GPU;
    sm = smoother_create(&s, f.g, f.k, &e);
    CHECK(sm == NULL && e.code == ARKCOS_ENODEV, "GPU without a device: ENODEV (%s)", e.msg);
    smoother_destroy(sm);
  }
  fixture_free(&f);
}

/* spec.arkcos.accuracy is the plan's arkcos_options.accuracy: the same
 * output bit for bit and the same bound as a plan made by hand with it, and
 * a bound within what was asked (arkcos.h). */
static void check_accuracy(const fixture *f, double eps) {
  arkcos_error e = {0, ""};
  method_spec s;
  method_spec_default(&s);
  s.arkcos.backend = ARKCOS_BACKEND_CPU;
  s.arkcos.accuracy = eps;
  s.threads = 2;
  smoother *sm = smoother_create(&s, f->g, f->k, &e);
  CHECK(sm != NULL, "arkcos smoother, accuracy %g: %s", eps, e.msg);
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.threads = 2;
  o.accuracy = eps;
  arkcos_plan *p = arkcos_plan_create(f->g, f->k, &o, &e);
  CHECK(p != NULL, "plan, accuracy %g: %s", eps, e.msg);
  if (sm && p) {
    CHECK(smoother_apply(sm, f->in, f->a, &e) == 0, "apply: %s", e.msg);
    CHECK(arkcos_execute(p, f->in, f->b, &e) == 0, "execute: %s", e.msg);
    CHECK(same_bits(f->a, f->b, f->g->npix), "accuracy %g: the plan's output bit for bit", eps);
    double b = smoother_bound(sm);
    CHECK(b == arkcos_plan_bound(p), "accuracy %g: the plan's bound (%g)", eps, b);
    CHECK(isfinite(b) && b >= 0, "accuracy %g: a finite bound >= 0 (%g)", eps, b);
    if (eps > 0) CHECK(b <= eps, "accuracy %g: bound %g within it", eps, b);
  }
  arkcos_plan_destroy(p);
  smoother_destroy(sm);
}

TEST_GROUP(accuracy_and_bound) {
  fixture f = {0};
  CHECK(fixture_make(&f), "fixture");
  if (!f.g) return;
  method_spec s;
  method_spec_default(&s);
  CHECK(s.arkcos.accuracy == 0, "exact (0) is the default");
  check_accuracy(&f, 0);
  check_accuracy(&f, 1e-6);
  fixture_free(&f);
}

TEST_GROUP(refusals) {
  fixture f = {0};
  CHECK(fixture_make(&f), "fixture");
  if (!f.g) return;
  arkcos_error e = {0, ""};
  method_spec s;
  method_spec_default(&s);
  s.kind = (method_kind)7;
  CHECK(smoother_create(&s, f.g, f.k, &e) == NULL && e.code == ARKCOS_EINVAL,
        "unknown method refused: %s", e.msg);
  method_spec_default(&s);
  CHECK(smoother_create(&s, NULL, f.k, &e) == NULL && e.code == ARKCOS_EINVAL,
        "no geometry refused: %s", e.msg);
  smoother_destroy(NULL);
  fixture_free(&f);
}

TEST_MAIN(TG(names), TG(each_method_as_called_directly), TG(auto_backend),
          TG(accuracy_and_bound), TG(refusals))
