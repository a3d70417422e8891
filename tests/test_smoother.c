/*
 * test_smoother.c -- arkcos_smoother (arkcos.h) through its public API:
 * the spec's refusals (create gives exactly what check gives), warnings as
 * data, missing data against the plain plan, the mask, Q and U, NESTED
 * order, normalize, the identity, in-place calls, the memory estimate.
 * Bit-identity with `arkcos smooth` and Python: test_smoother_identity.sh.
 */
#include "arkcos/arkcos.h"
#include "tests/testlib.h"

#define PI 3.14159265358979323846
#define ARCMIN (PI / 10800.0)

static double *random_map(int64_t npix, unsigned seed) {
  double *m = malloc(sizeof *m * (size_t)npix);
  unsigned s = seed;
  for (int64_t p = 0; p < npix; p++) {
    s = s * 1103515245u + 12345u;
    m[p] = 1.0 + (double)(s >> 8) / (double)(1u << 24);
  }
  return m;
}

static arkcos_smoother_spec spec_fwhm(int64_t nside, double fwhm_arcmin) {
  arkcos_smoother_spec s;
  arkcos_smoother_spec_default(&s);
  s.nside = nside;
  s.kernel.fwhm = fwhm_arcmin * ARCMIN;
  s.options.threads = 2;
  return s;
}

/* create and check agree: same code, same message; create NULL */
static void refused(const char *what, const arkcos_smoother_spec *s, const char *text) {
  arkcos_error e1 = {0, ""}, e2 = {0, ""};
  arkcos_warning w[4];
  int nw = 4;
  int rc = arkcos_smoother_check(s, w, &nw, &e1);
  arkcos_smoother *sm = arkcos_smoother_create(s, &e2);
  CHECK(rc == ARKCOS_EINVAL, "%s: check gave %d (%s)", what, rc, e1.msg);
  CHECK(!sm, "%s: create made a smoother", what);
  CHECK(e2.code == e1.code && !strcmp(e1.msg, e2.msg), "%s: create said '%s', check '%s'", what, e2.msg,
        e1.msg);
  CHECK(strstr(e1.msg, text) != NULL, "%s: '%s' does not say '%s'", what, e1.msg, text);
  arkcos_smoother_destroy(sm);
}

TEST_GROUP(refusals) {
  arkcos_smoother_spec s = spec_fwhm(16, 600);
  s.nside = 0;
  refused("nside 0", &s, "nside must be >= 1");
  s = spec_fwhm(12, 600);
  s.nested = 1;
  refused("NESTED nside 12", &s, "power of 2");
  s = spec_fwhm(16, 600);
  s.mask_mode = ARKCOS_MASK_ZERO;
  s.min_weight = 0.3;
  refused("min_weight with zero", &s, "min_weight applies to the normalize");
  s = spec_fwhm(16, 600);
  s.min_weight = 1.5;
  refused("min_weight 1.5", &s, "min_weight must be in [0, 1]");
  s.min_weight = -0.5; /* not the default's -1: refused, not taken as the default */
  refused("min_weight -0.5", &s, "min_weight must be in [0, 1]");
  s = spec_fwhm(16, 60); /* 0.27 pixels per FWHM */
  refused("sub-pixel Gaussian", &s, "below 1 pixel per FWHM");
  s = spec_fwhm(16, 600);
  s.kernel.type = ARKCOS_KERNEL_TOPHAT; /* no radius */
  s.kernel.fwhm = 0;
  arkcos_error e = {0, ""};
  CHECK(arkcos_smoother_check(&s, NULL, NULL, &e) == ARKCOS_EINVAL, "top-hat without radius: %s", e.msg);
  double bl[3] = {1, 0.5, 0.2};
  s = spec_fwhm(16, 600);
  s.beam = bl;
  s.beam_lmax = 2;
  refused("beam and fwhm", &s, "give one kernel");
}

TEST_GROUP(warnings) {
  /* 350' at nside 16: 1.59 pixels per FWHM, a warning, nothing printed */
  arkcos_smoother_spec s = spec_fwhm(16, 350);
  arkcos_warning w[4];
  int nw = 4;
  arkcos_error e = {0, ""};
  CHECK(arkcos_smoother_check(&s, w, &nw, &e) == 0, "check: %s", e.msg);
  CHECK(nw == 1 && w[0].code == ARKCOS_WARN_NARROW, "check: %d warnings, code %d", nw, nw ? w[0].code : -1);
  CHECK(nw && strstr(w[0].msg, "1.59 pixels per FWHM at nside 16"), "warning: %s", nw ? w[0].msg : "");
  arkcos_smoother *sm = arkcos_smoother_create(&s, &e);
  CHECK(sm && arkcos_smoother_nwarnings(sm) == 1, "create: %d warnings", sm ? arkcos_smoother_nwarnings(sm) : -1);
  CHECK(sm && !strcmp(arkcos_smoother_warning(sm, 0)->msg, w[0].msg), "create's warning differs from check's");
  CHECK(sm && !arkcos_smoother_warning(sm, 1), "a warning beyond the count");
  CHECK(sm && fabs(arkcos_smoother_pixels_per_fwhm(sm) - 1.59) < 0.01, "ppf %g",
        sm ? arkcos_smoother_pixels_per_fwhm(sm) : 0);
  arkcos_smoother_destroy(sm);
  /* allow_subpixel: a warning instead of the refusal */
  s = spec_fwhm(16, 100);
  s.allow_subpixel = 1;
  nw = 4;
  CHECK(arkcos_smoother_check(&s, w, &nw, &e) == 0 && nw == 1 && w[0].code == ARKCOS_WARN_SUBPIXEL,
        "allow_subpixel: %d warnings", nw);
}

/* Missing data: out = A(w m) / A(w) against the plan run by hand. */
TEST_GROUP(missing) {
  const int64_t nside = 16, npix = 12 * nside * nside;
  arkcos_smoother_spec s = spec_fwhm(nside, 900);
  arkcos_error e = {0, ""};
  arkcos_smoother *sm = arkcos_smoother_create(&s, &e);
  CHECK(sm != NULL, "create: %s", e.msg);
  if (!sm) return;
  double *m = random_map(npix, 1), *out = malloc(sizeof *out * npix), *aw = malloc(sizeof *aw * npix);
  for (int64_t p = 0; p < npix; p += 7) m[p] = p % 2 ? ARKCOS_UNSEEN : NAN;
  const double *in[1] = {m};
  double *outs[1] = {out}, *ws[1] = {aw};
  arkcos_smoother_maps mm = {1, in, outs, ws, -1, -1, NULL, NULL, NULL, 0};
  CHECK(arkcos_smoother_execute(sm, &mm, &e) == 0, "execute: %s", e.msg);
  /* by hand: the plan of the same kernel */
  arkcos_geometry *g = arkcos_geometry_healpix(nside, &e);
  arkcos_options o;
  arkcos_options_default(&o);
  o.threads = 2;
  arkcos_plan *p = arkcos_plan_create(g, arkcos_smoother_kernel(sm, 0), &o, &e);
  double *wm = malloc(sizeof *wm * npix), *w = malloc(sizeof *w * npix), *a1 = malloc(sizeof *a1 * npix),
         *a2 = malloc(sizeof *a2 * npix);
  int64_t nmiss = 0;
  for (int64_t q = 0; q < npix; q++) {
    const int miss = q % 7 == 0;
    nmiss += miss;
    w[q] = miss ? 0 : 1;
    wm[q] = miss ? 0 : m[q];
  }
  arkcos_execute(p, wm, a1, &e);
  arkcos_execute(p, w, a2, &e);
  /* ring quadrature (the default): the same sums over rings weighted by
   * arkcos_healpix_ring_weights, the threshold and the weight output on
   * the share A(W w) / A(W) */
  arkcos_geometry *gw = arkcos_geometry_healpix(nside, &e);
  double rw[4 * 16];
  arkcos_healpix_ring_weights(nside, rw);
  for (int r = 0; r < gw->nrings; r++) gw->rings[r].weight *= rw[r];
  arkcos_plan *pw = arkcos_plan_create(gw, arkcos_smoother_kernel(sm, 0), &o, &e);
  double *b1 = malloc(sizeof *b1 * npix), *b2 = malloc(sizeof *b2 * npix), *b3 = malloc(sizeof *b3 * npix),
         *one = malloc(sizeof *one * npix);
  for (int64_t q = 0; q < npix; q++) one[q] = 1;
  arkcos_execute(pw, wm, b1, &e);
  arkcos_execute(pw, w, b2, &e);
  arkcos_execute(pw, one, b3, &e);
  int64_t diff = 0, unseen = 0;
  for (int64_t q = 0; q < npix; q++) {
    const double share = b2[q] / b3[q], want = share < 0.5 ? ARKCOS_UNSEEN : b1[q] / b2[q];
    diff += out[q] != want || aw[q] != share;
    unseen += share < 0.5;
  }
  CHECK(diff == 0, "%lld pixels differ from A(W w m) / A(W w) by hand (ring quadrature)", (long long)diff);
  /* point quadrature: A(w m) / A(w) on the plain pixel sum */
  arkcos_smoother_spec sp = s;
  sp.quadrature = ARKCOS_QUADRATURE_POINT;
  arkcos_smoother *smp = arkcos_smoother_create(&sp, &e);
  double *outp = malloc(sizeof *outp * npix), *awp = malloc(sizeof *awp * npix);
  double *outsp[1] = {outp}, *wsp[1] = {awp};
  arkcos_smoother_maps mp = {1, in, outsp, wsp, -1, -1, NULL, NULL, NULL, 0};
  CHECK(smp && arkcos_smoother_execute(smp, &mp, &e) == 0, "point quadrature: %s", e.msg);
  int64_t diffp = 0, unseenp = 0;
  for (int64_t q = 0; q < npix; q++) {
    const double want = a2[q] < 0.5 ? ARKCOS_UNSEEN : a1[q] / a2[q];
    diffp += outp[q] != want || awp[q] != a2[q];
    unseenp += a2[q] < 0.5;
  }
  CHECK(diffp == 0, "%lld pixels differ from A(w m) / A(w) by hand (point quadrature)", (long long)diffp);
  /* a constant map: constant to rounding with ring quadrature, not with point */
  double *c1 = malloc(sizeof *c1 * npix), *c2 = malloc(sizeof *c2 * npix);
  const double *inc[1] = {one};
  double *oc1[1] = {c1}, *oc2[1] = {c2};
  arkcos_smoother_maps mc1 = {1, inc, oc1, NULL, -1, -1, NULL, NULL, NULL, 0}, mc2 = mc1;
  mc2.out = oc2;
  double e1 = 0, e2 = 0;
  if (!arkcos_smoother_execute(sm, &mc1, &e) && !arkcos_smoother_execute(smp, &mc2, &e))
    for (int64_t q = 0; q < npix; q++) e1 = fmax(e1, fabs(c1[q] - 1)), e2 = fmax(e2, fabs(c2[q] - 1));
  /* measured: 0 ring, 1.6e-2 point (nside 16, 15 deg, 4.1 px/FWHM) */
  printf("  constant map, max |out - 1|: ring quadrature %.2e, point %.2e\n", e1, e2);
  CHECK(e1 <= 1e-14 && e2 > 1e-3, "constant map: ring %.3e, point %.3e", e1, e2);
  free(c1);
  free(c2);
  free(outp);
  free(awp);
  CHECK(arkcos_smoother_divides(sm) == 1 && arkcos_smoother_divides(smp) == 0, "divides: ring 4 px %d, point %d",
        arkcos_smoother_divides(sm), arkcos_smoother_divides(smp));
  arkcos_smoother_destroy(smp);
  free(b1);
  free(b2);
  free(b3);
  free(one);
  arkcos_plan_destroy(pw);
  arkcos_geometry_destroy(gw);
  unseen += 0 * unseenp;
  CHECK(arkcos_smoother_execute(sm, &mm, &e) == 0, "execute again: %s", e.msg); /* the reports below are its */
  /* wide beams: the ring weights alone, no division (ARKCOS_RING_DIVIDE_PPF) */
  {
    arkcos_smoother_spec sw = spec_fwhm(nside, 16 * 3.664 * 60); /* 16 pixels per FWHM */
    arkcos_smoother *smw = arkcos_smoother_create(&sw, &e);
    double *cw = malloc(sizeof *cw * npix), *onew = malloc(sizeof *onew * npix);
    for (int64_t q = 0; q < npix; q++) onew[q] = 1;
    const double *inw[1] = {onew};
    double *ow[1] = {cw};
    arkcos_smoother_maps mw = {1, inw, ow, NULL, -1, -1, NULL, NULL, NULL, 0};
    double ew = 1;
    if (smw && !arkcos_smoother_execute(smw, &mw, &e)) {
      ew = 0;
      for (int64_t q = 0; q < npix; q++) ew = fmax(ew, fabs(cw[q] - 1));
    }
    /* measured 9.3e-7 (nside 16, 16 px/FWHM; 1.1e-7 at nside 64) */
    printf("  constant map, 16 px/FWHM, ring weights alone: max |out - 1| %.2e\n", ew);
    CHECK(smw && arkcos_smoother_divides(smw) == 0 && ew <= 2.1e-6,
          "16 px/FWHM: divides %d, constant map off by %.3e", smw ? arkcos_smoother_divides(smw) : -1, ew);
    arkcos_smoother_destroy(smw);
    free(cw);
    free(onew);
  }
  arkcos_smoother_map_report r;
  arkcos_smoother_report rep;
  CHECK(arkcos_smoother_last_map(sm, 0, &r) == 0 && r.missing == nmiss && r.excluded == nmiss &&
            r.unseen == unseen && r.weighted,
        "report: missing %lld (%lld), unseen %lld (%lld)", (long long)r.missing, (long long)nmiss,
        (long long)r.unseen, (long long)unseen);
  CHECK(arkcos_smoother_last(sm, &rep) == 0 && rep.nmaps == 1 && rep.weights_smoothed == 1 &&
            rep.stages.total > 0,
        "call report: %d maps, %d weights", rep.nmaps, rep.weights_smoothed);
  CHECK(arkcos_smoother_last_map(sm, 1, &r) == ARKCOS_EINVAL, "a map beyond the call");
  /* a mask value outside [0, 1]: EINVAL naming the pixel */
  double *mask = malloc(sizeof *mask * npix);
  for (int64_t q = 0; q < npix; q++) mask[q] = 1;
  mask[5] = 2;
  mm.mask = mask;
  CHECK(arkcos_smoother_execute(sm, &mm, &e) == ARKCOS_EINVAL && strstr(e.msg, "pixel 5 (RING) = 2"),
        "mask 2: %s", e.msg);
  /* the same call in place gives the same bytes */
  double *again = malloc(sizeof *again * npix);
  memcpy(again, m, sizeof *again * npix);
  const double *in2[1] = {again};
  double *out2[1] = {again};
  arkcos_smoother_maps m2 = {1, in2, out2, NULL, -1, -1, NULL, NULL, NULL, 0};
  CHECK(arkcos_smoother_execute(sm, &m2, &e) == 0 && !memcmp(again, out, sizeof *out * npix),
        "in place: differs (%s)", e.msg);
  /* overwrite_in: the input becomes w m, the output the same bytes */
  memcpy(again, m, sizeof *again * npix);
  double *out3 = malloc(sizeof *out3 * npix);
  double *out3s[1] = {out3};
  arkcos_smoother_maps m3 = {1, in2, out3s, NULL, -1, -1, NULL, NULL, NULL, 1};
  CHECK(arkcos_smoother_execute(sm, &m3, &e) == 0 && !memcmp(out3, out, sizeof *out * npix) && again[7] == 0,
        "overwrite_in: differs, or the input not weighted (%s)", e.msg);
  free(out3);
  free(again);
  free(mask);
  free(wm), free(w), free(a1), free(a2), free(m), free(out), free(aw);
  arkcos_plan_destroy(p);
  arkcos_geometry_destroy(g);
  arkcos_smoother_destroy(sm);
}

/* NESTED in, NESTED out: the RING result reordered. Q and U as a pair. */
TEST_GROUP(nested_pol) {
  const int64_t nside = 16, npix = 12 * nside * nside;
  arkcos_smoother_spec s = spec_fwhm(nside, 900);
  arkcos_error e = {0, ""};
  arkcos_smoother *ring = arkcos_smoother_create(&s, &e);
  s.nested = 1;
  arkcos_smoother *nest = arkcos_smoother_create(&s, &e);
  CHECK(ring && nest, "create: %s", e.msg);
  if (!ring || !nest) return;
  double *x[3], *r[3], *xn[3], *rn[3];
  for (int c = 0; c < 3; c++) {
    x[c] = random_map(npix, 10 + c);
    x[c][40 + c] = NAN; /* Q and U miss different pixels */
    r[c] = malloc(sizeof(double) * npix);
    xn[c] = malloc(sizeof(double) * npix);
    rn[c] = malloc(sizeof(double) * npix);
    for (int64_t p = 0; p < npix; p++) xn[c][p] = x[c][arkcos_healpix_nest2ring(nside, p)];
  }
  arkcos_smoother_maps mr = {3, (const double *const *)x, r, NULL, 1, 2, NULL, NULL, NULL, 0};
  arkcos_smoother_maps mn = {3, (const double *const *)xn, rn, NULL, 1, 2, NULL, NULL, NULL, 0};
  CHECK(arkcos_smoother_execute(ring, &mr, &e) == 0, "ring: %s", e.msg);
  arkcos_smoother_report rep;
  arkcos_smoother_last(ring, &rep);
  CHECK(rep.pol_union == 2 && rep.nweight_maps == 2, "pol union %lld, %d weight maps", (long long)rep.pol_union,
        rep.nweight_maps);
  CHECK(arkcos_smoother_execute(nest, &mn, &e) == 0, "nested: %s", e.msg);
  int64_t diff = 0;
  for (int c = 0; c < 3; c++)
    for (int64_t p = 0; p < npix; p++) diff += rn[c][p] != r[c][arkcos_healpix_nest2ring(nside, p)];
  CHECK(diff == 0, "NESTED: %lld values differ from RING reordered", (long long)diff);
  CHECK(arkcos_smoother_plan(ring, 2) != NULL && arkcos_smoother_bound(ring) < 1e-10, "spin-2 plan, bound %g",
        arkcos_smoother_bound(ring));
  /* bad pairs */
  mr.pol_u = 1;
  CHECK(arkcos_smoother_execute(ring, &mr, &e) == ARKCOS_EINVAL, "pol_q = pol_u accepted");
  for (int c = 0; c < 3; c++) free(x[c]), free(r[c]), free(xn[c]), free(rn[c]);
  arkcos_smoother_destroy(ring);
  arkcos_smoother_destroy(nest);
}

/* fwhm 0 is the identity (missing data aside); normalize keeps a constant constant */
TEST_GROUP(identity_normalize) {
  const int64_t nside = 8, npix = 12 * nside * nside;
  arkcos_smoother_spec s = spec_fwhm(nside, 0);
  arkcos_error e = {0, ""};
  arkcos_smoother *sm = arkcos_smoother_create(&s, &e);
  CHECK(sm && !arkcos_smoother_kernel(sm, 0) && arkcos_smoother_bound(sm) == 0, "identity: %s", e.msg);
  double *m = random_map(npix, 3), *out = malloc(sizeof *out * npix);
  const double *in[1] = {m};
  double *outs[1] = {out};
  arkcos_smoother_maps mm = {1, in, outs, NULL, -1, -1, NULL, NULL, NULL, 0};
  CHECK(sm && arkcos_smoother_execute(sm, &mm, &e) == 0 && !memcmp(m, out, sizeof *m * npix), "identity: %s",
        e.msg);
  arkcos_smoother_destroy(sm);
  s = spec_fwhm(nside, 1700); /* 1.9 pixels per FWHM: a constant is not kept without normalize */
  s.normalize = 1;
  sm = arkcos_smoother_create(&s, &e);
  for (int64_t p = 0; p < npix; p++) m[p] = 3.0;
  double dev = 0;
  if (sm && !arkcos_smoother_execute(sm, &mm, &e))
    for (int64_t p = 0; p < npix; p++) dev = fmax(dev, fabs(out[p] - 3.0));
  else
    dev = 1;
  /* measured 1.8e-15 */
  CHECK_LE("normalize: max |A(3) / A(1) - 3|", dev, 1e-14);
  arkcos_smoother_destroy(sm);
  free(m);
  free(out);
}

/* normalize by A(W) made ring by ring (weights on the fly, no mask, no
 * weight output: divide_streamed) against A(W) held whole (tables): the
 * same maps bit for bit, I and the Q, U pair, first and later calls; a
 * weight output (A(W) held again) changes nothing; a constant stays one */
TEST_GROUP(divide_streamed) {
  const int64_t nside = 32, npix = 12 * nside * nside;
  arkcos_smoother_spec s = spec_fwhm(nside, 330); /* 3 pixels per FWHM: ring quadrature divides */
  s.quadrature = ARKCOS_QUADRATURE_RING; /* the default (polar) below, and in the group polar */
  arkcos_error e = {0, ""};
  s.options.direct_weights = ARKCOS_WEIGHTS_ON_THE_FLY;
  arkcos_smoother *fly = arkcos_smoother_create(&s, &e);
  s.options.direct_weights = ARKCOS_WEIGHTS_TABLES;
  arkcos_smoother *tab = arkcos_smoother_create(&s, &e);
  CHECK(fly && tab && arkcos_smoother_divides(fly), "create: %s", e.msg);
  if (!fly || !tab) return;
  double *x[3], *a[3], *b[3], *wt = malloc(sizeof *wt * npix);
  for (int c = 0; c < 3; c++) {
    x[c] = random_map(npix, 20 + c);
    a[c] = malloc(sizeof(double) * npix);
    b[c] = malloc(sizeof(double) * npix);
  }
  arkcos_smoother_maps ma = {3, (const double *const *)x, a, NULL, 1, 2, NULL, NULL, NULL, 0};
  arkcos_smoother_maps mb = {3, (const double *const *)x, b, NULL, 1, 2, NULL, NULL, NULL, 0};
  for (int call = 0; call < 2; call++) {
    CHECK(arkcos_smoother_execute(fly, &ma, &e) == 0, "on the fly, call %d: %s", call, e.msg);
    CHECK(arkcos_smoother_execute(tab, &mb, &e) == 0, "tables, call %d: %s", call, e.msg);
    int64_t diff = 0;
    for (int c = 0; c < 3; c++) diff += memcmp(a[c], b[c], sizeof(double) * npix) != 0;
    CHECK(diff == 0, "call %d: %lld of 3 maps differ between A(W) by rings and A(W) held", call, (long long)diff);
  }
  /* the weight output asks for A(W) whole: the same map */
  double *wo[3] = {wt, NULL, NULL};
  arkcos_smoother_maps mw = {1, (const double *const *)x, a, wo, -1, -1, NULL, NULL, NULL, 0};
  CHECK(arkcos_smoother_execute(fly, &mw, &e) == 0, "with weight output: %s", e.msg);
  CHECK(!memcmp(a[0], b[0], sizeof(double) * npix), "with a weight output the map differs");
  /* a constant: A(3 W) / A(W) made by rings */
  arkcos_smoother_destroy(fly);
  s.options.direct_weights = ARKCOS_WEIGHTS_ON_THE_FLY;
  fly = arkcos_smoother_create(&s, &e);
  for (int64_t p = 0; p < npix; p++) x[0][p] = 3.0;
  ma.nmaps = 1, ma.pol_q = ma.pol_u = -1;
  double dev = 1;
  if (fly && !arkcos_smoother_execute(fly, &ma, &e)) {
    dev = 0;
    for (int64_t p = 0; p < npix; p++) dev = fmax(dev, fabs(a[0][p] - 3.0));
  }
  /* measured 4.4e-16 */
  CHECK_LE("A(3 W) / A(W) by rings: max |out - 3|", dev, 2e-15);
  /* the default, polar: the reconstruction's solve rounds (its nugget, 1e-8 of C(0)) */
  arkcos_smoother_destroy(fly);
  s.quadrature = ARKCOS_QUADRATURE_POLAR;
  fly = arkcos_smoother_create(&s, &e);
  dev = 1;
  if (fly && !arkcos_smoother_execute(fly, &ma, &e)) {
    dev = 0;
    for (int64_t p = 0; p < npix; p++) dev = fmax(dev, fabs(a[0][p] - 3.0));
  }
  /* measured 1.6e-12 (-O3 -march=native), 5.5e-12 (the sanitizers' build) */
  CHECK_LE("polar: A(3 W) / A(W) by rings: max |out - 3|", dev, 2e-11);
  for (int c = 0; c < 3; c++) free(x[c]), free(a[c]), free(b[c]);
  free(wt);
  arkcos_smoother_destroy(fly);
  arkcos_smoother_destroy(tab);
}

TEST_GROUP(estimate) {
  arkcos_smoother_spec s = spec_fwhm(64, 120);
  arkcos_error e = {0, ""};
  const double est = arkcos_smoother_estimate(&s, 3, 1, 1, &e);
  arkcos_geometry *g = arkcos_geometry_healpix(64, &e);
  arkcos_kernel *k = arkcos_smoother_make_kernel(&s, 0, &e);
  const double plan = arkcos_plan_estimate(g, k, &s.options, &e);
  CHECK(est > plan + 5 * 8.0 * 12 * 64 * 64, "estimate %g, plan %g", est, plan);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
  s.nside = -1;
  CHECK(arkcos_smoother_estimate(&s, 1, 0, 0, &e) == 0 && e.code == ARKCOS_EINVAL, "bad nside: %g", est);
}

/* The rule shared by the estimates (arkcos_smoother_estimate, arkcos
 * smooth's --dry-run) for A(W) made ring by ring; divide_streamed above
 * checks the execute that follows it */
static arkcos_plan *no_plan(void *ctx, int spin) {
  (void)ctx, (void)spin;
  return NULL;
}
TEST_GROUP(streams_division) {
  arkcos_smoother_spec s = spec_fwhm(32, 330);
  s.options.backend = ARKCOS_BACKEND_CPU;
  s.options.direct_weights = ARKCOS_WEIGHTS_ON_THE_FLY;
  CHECK(arkcos_smoother_streams_division(&s, 1, 0) == 1, "CPU, weights on the fly: streamed");
  CHECK(arkcos_smoother_streams_division(&s, 0, 0) == 0, "no division: not streamed");
  CHECK(arkcos_smoother_streams_division(&s, 1, 1) == 0, "masked: not streamed");
  arkcos_smoother_spec t = s;
  t.options.direct_weights = ARKCOS_WEIGHTS_TABLES;
  CHECK(arkcos_smoother_streams_division(&t, 1, 0) == 0, "tables: not streamed");
  t = s;
  t.options.accuracy = 1e-6;
  CHECK(arkcos_smoother_streams_division(&t, 1, 0) == 0, "an accuracy to trade: not streamed");
  t = s;
  t.options.mode = ARKCOS_MODE_PAPER;
  CHECK(arkcos_smoother_streams_division(&t, 1, 0) == 0, "paper mode: not streamed");
  t = s;
  t.options.backend = ARKCOS_BACKEND_GPU;
  CHECK(arkcos_smoother_streams_division(&t, 1, 0) == 0, "GPU backend: not streamed");
  arkcos_smoother_operator op = {NULL, NULL, NULL, NULL, 0, no_plan};
  t = s;
  t.op = &op;
  CHECK(arkcos_smoother_streams_division(&t, 1, 0) == 1, "an operator that lends its plan: streamed");
  op.harmonic = 1;
  CHECK(arkcos_smoother_streams_division(&t, 1, 0) == 0, "a harmonic operator: not streamed");
  op.harmonic = 0;
  op.plan = NULL;
  CHECK(arkcos_smoother_streams_division(&t, 1, 0) == 0, "an operator without a plan: not streamed");
}

/* ARKCOS_QUADRATURE_POLAR (polar.h): a constant map stays constant with
 * and without the division by A(W); A(W) made ring by ring and held give
 * the same maps bit for bit; a cap with a masked pixel in its disc keeps
 * ring quadrature (bit for bit), the other cap does not; the estimate
 * counts the reconstruction; arkcos_smoother_last_polar says which caps
 * took it, arkcos_smoother_polar_time what making it took */
static int polar_caps_seen;        /* arkcos_smoother_last_polar of the last smooth_polar */
static double polar_time_seen;     /* and its arkcos_smoother_polar_time */
static double *smooth_polar(const arkcos_smoother_spec *s, const double *x, const double *mask) {
  const int64_t npix = 12 * s->nside * s->nside;
  arkcos_error e = {0, ""};
  arkcos_smoother *sm = arkcos_smoother_create(s, &e);
  double *o = malloc(sizeof *o * (size_t)npix);
  const double *in[1] = {x};
  double *out[1] = {o};
  arkcos_smoother_maps m = {1, in, out, NULL, -1, -1, mask, NULL, NULL, 0};
  const int rc = sm ? arkcos_smoother_execute(sm, &m, &e) : -1;
  CHECK(rc == 0, "polar smoothing: %s", e.msg);
  polar_caps_seen = rc ? -2 : arkcos_smoother_last_polar(sm, 0);
  polar_time_seen = arkcos_smoother_polar_time(sm);
  if (!rc)
    CHECK(arkcos_smoother_last_polar(sm, 1) == -1 && arkcos_smoother_last_polar(sm, -1) == -1,
          "arkcos_smoother_last_polar: a map beyond the call's is not -1");
  arkcos_smoother_destroy(sm);
  if (rc) {
    free(o);
    return NULL;
  }
  return o;
}

/* The weight output of complete maps under the polar default: A(w) = A(1)
 * plus the correction of 1 at the caps, over A(1) plus it, is 1 there as
 * in the belt (was 1 + 7.4e-5 at the caps: A(w) took the correction, the
 * share's A(1) did not). I alone, and I, Q, U sharing one weight. */
TEST_GROUP(polar_weight_complete) {
  const int64_t nside = 64, npix = 12 * nside * nside;
  arkcos_smoother_spec s = spec_fwhm(nside, 240); /* 4.4 px/FWHM: divides by A(W) */
  arkcos_error e = {0, ""};
  arkcos_smoother *sm = arkcos_smoother_create(&s, &e);
  CHECK(sm != NULL, "create: %s", e.msg);
  if (!sm) return;
  double *x[3], *y[3], *wt[3];
  for (int c = 0; c < 3; c++) {
    x[c] = random_map(npix, 40 + c);
    y[c] = malloc(sizeof(double) * npix);
    wt[c] = malloc(sizeof(double) * npix);
  }
  for (int n = 1; n <= 3; n += 2) {
    double *wo[3] = {wt[0], n == 3 ? wt[1] : NULL, n == 3 ? wt[2] : NULL};
    arkcos_smoother_maps m = {n, (const double *const *)x, y, wo, n == 3 ? 1 : -1, n == 3 ? 2 : -1,
                              NULL, NULL, NULL, 0};
    const int rc = arkcos_smoother_execute(sm, &m, &e);
    CHECK(rc == 0, "%d map(s) with weight outputs: %s", n, e.msg);
    if (rc) continue;
    CHECK(arkcos_smoother_last_polar(sm, 0) == 3, "%d map(s): caps %d, not both", n, arkcos_smoother_last_polar(sm, 0));
    for (int c = 0; c < n; c++) {
      double dcap = 0, dbelt = 0;
      for (int64_t p = 0; p < npix; p++) {
        const double d = fabs(wt[c][p] - 1);
        if (p < npix / 8 || p >= npix - npix / 8) dcap = fmax(dcap, d);
        else dbelt = fmax(dbelt, d);
      }
      char what[96];
      /* measured 0 at the caps and in the belt */
      snprintf(what, sizeof what, "%d map(s): weight of map %d at the caps, max |W - 1|", n, c);
      CHECK_LE(what, dcap, 1e-15);
      snprintf(what, sizeof what, "%d map(s): weight of map %d in the belt, max |W - 1|", n, c);
      CHECK_LE(what, dbelt, 1e-15);
    }
  }
  for (int c = 0; c < 3; c++) free(x[c]), free(y[c]), free(wt[c]);
  arkcos_smoother_destroy(sm);
}

TEST_GROUP(polar) {
  const int64_t nside = 64, npix = 12 * nside * nside;
  double *one = malloc(sizeof *one * npix), *x = random_map(npix, 7), *mask = malloc(sizeof *mask * npix);
  for (int64_t p = 0; p < npix; p++) one[p] = 1, mask[p] = 1;
  /* 4.4 px/FWHM divides by A(W); 10 px/FWHM does not */
  const double fw[2] = {240, 546}, bound[2] = {5e-12, 2e-7};
  for (int i = 0; i < 2; i++) {
    arkcos_smoother_spec s = spec_fwhm(nside, fw[i]);
    s.quadrature = ARKCOS_QUADRATURE_POLAR;
    double *o = smooth_polar(&s, one, NULL), dev = 1;
    if (o) {
      dev = 0;
      for (int64_t p = 0; p < npix; p++) dev = fmax(dev, fabs(o[p] - 1));
    }
    char what[96];
    snprintf(what, sizeof what, "polar, %.0f': a constant map, max |out - 1|", fw[i]);
    /* measured 0 at 240' (map and A(W) take the same sums), 9.7e-8 at 546' (ring quadrature alone: see
     * test_engine ring_weights; the first rings reconstructed) */
    CHECK_LE(what, dev, bound[i]);
    free(o);
  }
  /* A(W) by rings (weights on the fly) and held (tables): the same maps */
  arkcos_smoother_spec s = spec_fwhm(nside, 165); /* 3 px/FWHM */
  s.quadrature = ARKCOS_QUADRATURE_POLAR;
  s.options.direct_weights = ARKCOS_WEIGHTS_ON_THE_FLY;
  double *a = smooth_polar(&s, x, NULL);
  CHECK(polar_caps_seen == 3 && polar_time_seen > 0, "polar, 3 px/FWHM: caps %d (not both), made in %g s",
        polar_caps_seen, polar_time_seen);
  s.options.direct_weights = ARKCOS_WEIGHTS_TABLES;
  double *b = smooth_polar(&s, x, NULL);
  CHECK(a && b && !memcmp(a, b, sizeof *a * npix), "polar: A(W) by rings and held give different maps");
  s.quadrature = ARKCOS_QUADRATURE_RING;
  double *r = smooth_polar(&s, x, NULL);
  CHECK(polar_caps_seen == 0 && polar_time_seen == 0, "ring quadrature: polar caps %d, made in %g s",
        polar_caps_seen, polar_time_seen);
  int64_t moved = 0;
  for (int64_t p = 0; a && r && p < npix; p++) moved += a[p] != r[p];
  /* the polar outputs of both caps, 4 px/FWHM and narrower: rings 1..26 + the kernel's reach */
  CHECK(moved > 2 * 2 * 26 * 27 && moved < npix / 4, "polar: %lld pixels differ from ring quadrature",
        (long long)moved);
  free(a), free(b), free(r);
  /* a masked pixel on the north cap's second ring: the north cap as ring quadrature */
  mask[5] = 0;
  s.options.direct_weights = ARKCOS_WEIGHTS_ON_THE_FLY;
  s.quadrature = ARKCOS_QUADRATURE_POLAR;
  a = smooth_polar(&s, x, mask);
  CHECK(polar_caps_seen == 2, "polar, masked north disc: caps %d, not the south's (2)", polar_caps_seen);
  s.quadrature = ARKCOS_QUADRATURE_RING;
  r = smooth_polar(&s, x, mask);
  const int64_t cap = 2 * 10 * 11; /* the first 10 rings */
  int64_t north = 0, south = 0;
  for (int64_t p = 0; a && r && p < cap; p++) north += a[p] != r[p], south += a[npix - 1 - p] != r[npix - 1 - p];
  CHECK(a && r && north == 0, "polar, masked north disc: %lld north pixels differ from ring quadrature",
        (long long)north);
  CHECK(south == cap, "polar, masked north disc: %lld of %lld south pixels corrected", (long long)south,
        (long long)cap);
  free(a), free(r);
  /* the same with --mask-mode zero --normalize (out = A(w m) / A(1)): the
   * north cap as ring quadrature to the bit. Before, its outputs were
   * divided by A(1) twice, once with the caps' own: 7.4e-5 off at nside 64
   * and 240' for a constant map with that hole */
  s.mask_mode = ARKCOS_MASK_ZERO;
  s.normalize = 1;
  s.quadrature = ARKCOS_QUADRATURE_POLAR;
  a = smooth_polar(&s, x, mask);
  CHECK(polar_caps_seen == 2, "polar, zero mode, masked north disc: caps %d, not the south's (2)",
        polar_caps_seen);
  s.quadrature = ARKCOS_QUADRATURE_RING;
  r = smooth_polar(&s, x, mask);
  north = south = 0;
  for (int64_t p = 0; a && r && p < cap; p++) north += a[p] != r[p], south += a[npix - 1 - p] != r[npix - 1 - p];
  CHECK(a && r && north == 0, "polar, zero mode, masked north disc: %lld north pixels differ from ring quadrature",
        (long long)north);
  CHECK(south == cap, "polar, zero mode, masked north disc: %lld of %lld south pixels corrected",
        (long long)south, (long long)cap);
  free(a), free(r);
  s.mask_mode = ARKCOS_MASK_NORMALIZE;
  s.normalize = 0;
  /* below ARKCOS_POLAR_MIN_PPF (2) pixels per FWHM no reconstruction: the
   * same bits as ring quadrature at 1.8 px/FWHM, not at 2.2 */
  for (int i = 0; i < 2; i++) {
    const double ppf = i ? 2.2 : 1.8;
    s = spec_fwhm(nside, ppf * sqrt(4 * PI / npix) / ARCMIN);
    s.quadrature = ARKCOS_QUADRATURE_POLAR;
    a = smooth_polar(&s, x, NULL);
    CHECK(polar_caps_seen == (i ? 3 : 0) && (polar_time_seen > 0) == i, "polar at %.1f px/FWHM: caps %d, made in %g s",
          ppf, polar_caps_seen, polar_time_seen);
    s.quadrature = ARKCOS_QUADRATURE_RING;
    r = smooth_polar(&s, x, NULL);
    const int same = a && r && !memcmp(a, r, sizeof *a * npix);
    CHECK(a && r && same == !i, "polar at %.1f px/FWHM: %s ring quadrature's map", ppf, same ? "the same as" : "not");
    free(a), free(r);
  }
  /* the estimate counts the reconstruction's tables */
  arkcos_error e = {0, ""};
  s = spec_fwhm(nside, 240);
  CHECK(s.quadrature == ARKCOS_QUADRATURE_POLAR, "arkcos_smoother_spec_default: quadrature %d, not polar",
        s.quadrature);
  s.quadrature = ARKCOS_QUADRATURE_RING;
  const double ring = arkcos_smoother_estimate(&s, 1, 0, 0, &e);
  s.quadrature = ARKCOS_QUADRATURE_POLAR;
  const double polar = arkcos_smoother_estimate(&s, 1, 0, 0, &e);
  CHECK(polar > ring + 4e6, "estimate: polar %g, ring %g bytes", polar, ring);
  free(one), free(x), free(mask);
}

TEST_MAIN(TG(refusals), TG(warnings), TG(missing), TG(nested_pol), TG(identity_normalize), TG(divide_streamed),
          TG(estimate), TG(streams_division), TG(polar_weight_complete), TG(polar))
