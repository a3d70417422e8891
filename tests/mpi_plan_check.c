/*
 * mpi_plan_check.c -- arkcos_plan_create_mpi against one process, run by
 * tests/test_mpi.sh under `mpirun -n 1..4` (built by `make mpi`; not named
 * test_*, so tests/run.sh does not run it without mpirun).
 *
 * For every case, rank 0 smooths a random map with arkcos_plan_create +
 * arkcos_execute (one process) and every rank takes part in the same
 * smoothing with arkcos_plan_create_mpi + arkcos_execute_mpi: the two maps
 * must be equal byte for byte. Then the bands: every output ring computed
 * by exactly one rank, pixels balanced, halos as predicted; the refusals.
 * Spin-2 plans (Q and U) alike, through arkcos_execute2_mpi and
 * arkcos_execute2_mpi_local. Plans of the harmonic path, whose bands' a_lm
 * are summed over the ranks, within rounding of one process instead.
 * Rank 0 prints the per-rank figures (docs/MPI.md) and the TESTS line.
 */
#include <mpi.h>
#include <stdint.h>

#include "arkcos/arkcos.h"
#include "arkcos/arkcos_mpi.h"
#include "tests/testlib.h"
#include "tests/testmaps.h"

/* the slowest band's modelled time over the mean: measured 1.000 to 1.055
 * (gauss nside 32, 4 ranks) over the eight plans, N = 1..4 */
#define COST_SPREAD 1.1

#define DEG (3.14159265358979323846 / 180)

static int rank, nranks;

typedef struct {
  const char *name;
  int64_t nside;        /* HEALPix; 0: ECP grid of 24 x 48 */
  arkcos_kernel_type type;
  double fwhm_pix;      /* GAUSSIAN: FWHM in pixels (sqrt of the pixel area) */
  double cutoff_deg;    /* TOPHAT: radius */
  arkcos_mode mode;
  arkcos_precision precision;
  int cache;
  double accuracy;
  int spin;             /* 2: Q and U (arkcos_execute2_mpi, ..._local) */
  double tol;           /* 0: byte for byte; else the harmonic path (a Gaussian cut
                         * at 1e-13, its a_lm summed over the ranks): within tol of
                         * the map's largest value */
} mcase;

static arkcos_geometry *case_geometry(const mcase *c) {
  return c->nside ? arkcos_geometry_healpix(c->nside, NULL) : arkcos_geometry_ecp(24, 48, 0.5, NULL);
}

static arkcos_kernel *case_kernel(const mcase *c, const arkcos_geometry *g) {
  arkcos_kernel_spec ks = {0};
  ks.type = c->type;
  if (c->type == ARKCOS_KERNEL_GAUSSIAN) {
    ks.fwhm = c->fwhm_pix * sqrt(4 * 3.14159265358979323846 / (double)g->npix);
    ks.cutoff_rel = c->tol > 0 ? 1e-13 : 1e-5;
  } else {
    ks.cutoff = c->cutoff_deg * DEG;
  }
  return arkcos_kernel_create(&ks, NULL);
}

/* Pixel q of a map against one process's: byte for byte, or within tol
 * of the reference's largest value (mx) for the harmonic path */
static double worst; /* the largest |a - b| / mx seen (the harmonic cases) */
static int differs(double a, double b, double tol, double mx) {
  if (!(tol > 0)) return memcmp(&a, &b, sizeof a) != 0;
  const double d = fabs(a - b) / mx;
  worst = d > worst ? d : worst;
  return !(d <= tol);
}

static double max_abs(const double *x, int64_t n) {
  double m = 0;
  for (int64_t q = 0; q < n; q++) m = fabs(x[q]) > m ? fabs(x[q]) : m;
  return m;
}

/* One case: the byte-for-byte comparison and the band figures */
static void run_case(const mcase *c) {
  arkcos_geometry *g = case_geometry(c);
  arkcos_kernel *k = case_kernel(c, g);
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.mode = c->mode;
  o.precision = c->precision;
  o.cache_kernel_spectra = c->cache;
  o.accuracy = c->accuracy;
  o.threads = 1;
  o.spin = c->spin;
  const int64_t n = g->npix;
  const int nm = c->spin == 2 ? 2 : 1; /* maps in and out: Q and U for spin 2 */
  double *in[2] = {NULL, NULL}, *ref[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
  if (rank == 0) { /* the whole maps live on rank 0 only */
    rng_state = 777 + (uint64_t)n;
    for (int m = 0; m < nm; m++) {
      in[m] = random_map(n);
      ref[m] = malloc(sizeof(double) * (size_t)n);
      out[m] = malloc(sizeof(double) * (size_t)n);
    }
    arkcos_plan *one = arkcos_plan_create(g, k, &o, NULL);
    CHECK(one && (nm == 2 ? arkcos_execute_spin2(one, in[0], in[1], ref[0], ref[1], NULL)
                          : arkcos_execute(one, in[0], ref[0], NULL)) == 0,
          "%s: one-process plan", c->name);
    arkcos_plan_destroy(one);
  }
  arkcos_error err = {0, ""};
  arkcos_plan *p = arkcos_plan_create_mpi(MPI_COMM_WORLD, g, k, &o, &err);
  CHECK(p != NULL, "%s: arkcos_plan_create_mpi: %s", c->name, err.msg);
  if (!p) goto done;
  double dummy[4] = {0, 0, 0, 0};
  CHECK(arkcos_execute(p, dummy, dummy + 1, NULL) == ARKCOS_EINVAL &&
            arkcos_execute_spin2(p, dummy, dummy + 1, dummy + 2, dummy + 3, NULL) == ARKCOS_EINVAL,
        "%s: arkcos_execute and arkcos_execute_spin2 on an MPI plan must be refused", c->name);
  /* the call of the other kind (one map on a spin-2 plan, two on a scalar one) */
  CHECK((nm == 2 ? arkcos_execute_mpi_local(p, dummy, dummy + 1, NULL)
                 : arkcos_execute2_mpi_local(p, dummy, dummy + 1, dummy + 2, dummy + 3, NULL)) == ARKCOS_EINVAL,
        "%s: the execute of the other spin must be refused", c->name);
  for (int rep = 0; rep < 2; rep++) { /* a plan serves many maps */
    for (int m = 0; rank == 0 && m < nm; m++) memset(out[m], 0xff, sizeof(double) * (size_t)n);
    CHECK((nm == 2 ? arkcos_execute2_mpi(p, in[0], in[1], out[0], out[1], &err)
                   : arkcos_execute_mpi(p, in[0], out[0], &err)) == 0,
          "%s: execute: %s", c->name, err.msg);
    for (int m = 0; rank == 0 && m < nm; m++) {
      int64_t diff = 0;
      const double mx = max_abs(ref[m], n);
      for (int64_t q = 0; q < n; q++) diff += differs(out[m][q], ref[m][q], c->tol, mx);
      CHECK(diff == 0, "%s: map %d: %lld of %lld pixels differ from one process (ranks %d, repeat %d)", c->name,
            m, (long long)diff, (long long)n, nranks, rep);
    }
  }
  /* band-local maps (parallel I/O, arkcos_execute_mpi_local and
   * arkcos_execute2_mpi_local): each rank gathers its band and halo from the
   * maps themselves and computes its band's output with no messages, bit
   * for bit the one-process pixels */
  {
    double *win[2] = {in[0], in[1]}, *wref[2] = {ref[0], ref[1]};
    if (rank != 0) {
      rng_state = 777 + (uint64_t)n;
      for (int m = 0; m < nm; m++) {
        win[m] = random_map(n);
        wref[m] = malloc(sizeof(double) * (size_t)n);
      }
    }
    for (int m = 0; m < nm; m++) MPI_Bcast(wref[m], (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    const arkcos_mpi_segment *si = NULL, *so = NULL;
    int ni = 0, no = 0;
    CHECK(arkcos_plan_mpi_segments(p, 0, &si, &ni, NULL) == 0 && arkcos_plan_mpi_segments(p, 1, &so, &no, NULL) == 0,
          "%s: segments", c->name);
    int64_t len = 0;
    for (int q = 0; q < ni; q++) len += si[q].b - si[q].a;
    double *li[2], *lo[2];
    for (int m = 0; m < nm; m++) {
      li[m] = malloc(sizeof(double) * (size_t)(len + 1));
      lo[m] = malloc(sizeof(double) * (size_t)(len + 1));
      for (int q = 0, at = 0; q < ni; at += (int)(si[q].b - si[q].a), q++)
        memcpy(li[m] + at, win[m] + si[q].a, sizeof(double) * (size_t)(si[q].b - si[q].a));
      memset(lo[m], 0xff, sizeof(double) * (size_t)(len + 1));
    }
    CHECK((nm == 2 ? arkcos_execute2_mpi_local(p, li[0], li[1], lo[0], lo[1], &err)
                   : arkcos_execute_mpi_local(p, li[0], lo[0], &err)) == 0,
          "%s: execute_local: %s", c->name, err.msg);
    int64_t diff = 0, seen = 0;
    double mx[2] = {nm > 0 ? max_abs(wref[0], n) : 0, nm > 1 ? max_abs(wref[1], n) : 0};
    for (int q = 0; q < no; q++) {
      int64_t base = 0;
      int k = 0;
      while (k < ni && si[k].b <= so[q].a) base += si[k].b - si[k].a, k++;
      for (int64_t x = so[q].a; k < ni && x < so[q].b; x++, seen++)
        for (int m = 0; m < nm; m++) diff += differs(lo[m][base + x - si[k].a], wref[m][x], c->tol, mx[m]);
    }
    int64_t tot[2] = {diff, seen}, sum[2] = {0, 0};
    MPI_Allreduce(tot, sum, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
      CHECK(sum[0] == 0 && sum[1] == n, "%s: band-local maps: %lld of %lld values differ from one process "
            "(%lld pixels seen, ranks %d)", c->name, (long long)sum[0], (long long)(nm * n), (long long)sum[1], nranks);
    for (int m = 0; m < nm; m++) {
      free(li[m]);
      free(lo[m]);
      if (rank != 0) {
        free(win[m]);
        free(wref[m]);
      }
    }
  }
  if (c->tol > 0) { /* the harmonic path's largest difference from one process, whole and band-local maps */
    double w = 0;
    MPI_Reduce(&worst, &w, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("  %-28s %d ranks: largest difference from one process %.3g of the largest value (bound %.3g)\n",
                          c->name, nranks, w, c->tol);
    worst = 0;
  }
  /* the bands: every output pixel once, their sizes and halos */
  arkcos_mpi_band b;
  CHECK(arkcos_plan_mpi_band(p, &b, NULL) == 0, "band");
  /* the estimate made before planning (arkcos_plan_estimate_rank, what
   * `arkcos smooth --dry-run` prints): the band's pixels exactly, its
   * memory on the high side of what the plan holds */
  arkcos_estimate est;
  CHECK(arkcos_plan_estimate_rank(g, k, &o, rank, nranks, &est, &err) == 0, "%s: estimate: %s", c->name, err.msg);
  CHECK(est.pixels_out == b.pixels_out && est.pixels_in == b.pixels_in && est.halo_pixels == b.halo_pixels &&
            est.rings_out == b.nrings_out,
        "%s: rank %d: estimated band (out %lld, in %lld, halo %lld px, %d rings) is not the plan's (%lld, %lld, "
        "%lld, %d)", c->name, rank, (long long)est.pixels_out, (long long)est.pixels_in,
        (long long)est.halo_pixels, est.rings_out, (long long)b.pixels_out, (long long)b.pixels_in,
        (long long)b.halo_pixels, b.nrings_out);
  const double held = (double)arkcos_plan_memory(p);
  char what[160];
  snprintf(what, sizeof what, "%s: rank %d of %d: estimate / held", c->name, rank, nranks);
  CHECK_GE(what, (est.total + est.maps) / held, 1.0);
  /* without the estimate's 0.5 MB floor (which carries the tiny bands):
   * measured 0.44 to 2.84 (the most: cached spectra at nside 48, N = 1, of
   * a top-hat, whose plans hold under 1 MB: its tables are the rows'
   * extents only, and the cached spectra's estimate is on the high side;
   * over one rank the plan holds no band maps, the caller's whole maps
   * being its band) */
  snprintf(what, sizeof what, "%s: rank %d of %d: (estimate - 0.5 MB) / held", c->name, rank, nranks);
  CHECK_LE(what, (est.total - 0.5e6 + est.maps) / held, 2.9);
  int64_t mine[5] = {b.pixels_out, b.pixels_in, b.halo_pixels, (int64_t)arkcos_plan_memory(p),
                     (int64_t)(est.total + est.maps)};
  int64_t all[5 * 8] = {0};
  MPI_Gather(mine, 5, MPI_INT64_T, all, 5, MPI_INT64_T, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    int64_t tot = 0, mx = 0;
    for (int r = 0; r < nranks && r < 8; r++) {
      const int64_t *a = all + 5 * r;
      tot += a[0];
      if (a[0] > mx) mx = a[0];
      printf("  %-28s rank %d/%d: out %8lld px, in %8lld px, halo %8lld px (%6.1f kB), plan %7.2f MB "
             "(estimated %7.2f MB)\n",
             c->name, r, nranks, (long long)a[0], (long long)a[1], (long long)a[2], 8e-3 * (double)a[2],
             1e-6 * (double)a[3], 1e-6 * (double)a[4]);
    }
    CHECK(tot == n, "%s: bands cover %lld of %lld pixels", c->name, (long long)tot, (long long)n);
    /* balanced by the cost model (plan.c): the slowest band's modelled
     * time against the mean (a band can miss the even share by one task) */
    double cmax = 0, csum = 0;
    for (int r = 0; r < nranks; r++) {
      double parts[3] = {0, 0, 0};
      CHECK(arkcos_plan_estimate_cost(g, k, &o, r, nranks, parts, NULL) == 0, "%s: cost estimate", c->name);
      const double cr = parts[0] + parts[1] + parts[2];
      csum += cr;
      if (cr > cmax) cmax = cr;
    }
    snprintf(what, sizeof what, "%s: %d ranks: slowest band's modelled time / mean", c->name, nranks);
    CHECK_LE(what, cmax / (csum / nranks), COST_SPREAD);
  }
  arkcos_plan_destroy(p);
done:
  for (int m = 0; m < 2; m++) {
    free(in[m]);
    free(ref[m]);
    free(out[m]);
  }
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

/* arkcos_plan_create_mpi_as: a spin-2 plan of another kernel with the
 * bands of a scalar plan: the same output runs on every rank (the halos
 * are each kernel's), Q and U bit for bit one process's; a plan that is
 * not an MPI plan of the geometry is refused on every rank */
static void bands_as(void) {
  arkcos_geometry *g = arkcos_geometry_healpix(32, NULL);
  const double pix = sqrt(4 * 3.14159265358979323846 / (double)g->npix);
  arkcos_kernel_spec ks = {.type = ARKCOS_KERNEL_GAUSSIAN, .fwhm = 3.5 * pix, .cutoff_rel = 1e-13};
  arkcos_kernel *k0 = arkcos_kernel_create(&ks, NULL);
  ks.cutoff_rel = 1e-5;
  arkcos_kernel *k2 = arkcos_kernel_create(&ks, NULL);
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.threads = 1;
  arkcos_error err = {0, ""};
  arkcos_plan *p0 = arkcos_plan_create_mpi(MPI_COMM_WORLD, g, k0, &o, &err);
  o.spin = 2;
  arkcos_plan *p2 = p0 ? arkcos_plan_create_mpi_as(MPI_COMM_WORLD, g, k2, &o, p0, &err) : NULL;
  CHECK(p0 && p2, "bands as another plan's: %s", err.msg);
  if (p0 && p2) {
    const arkcos_mpi_segment *a = NULL, *b = NULL;
    int na = 0, nb = 0, same = 1;
    arkcos_plan_mpi_segments(p0, 1, &a, &na, NULL);
    arkcos_plan_mpi_segments(p2, 1, &b, &nb, NULL);
    same = na == nb;
    for (int q = 0; same && q < na; q++) same = a[q].a == b[q].a && a[q].b == b[q].b;
    CHECK(same, "rank %d of %d: the spin-2 plan's output runs are the scalar plan's", rank, nranks);
    /* its estimate (what --dry-run prints) has its band exactly */
    arkcos_estimate est;
    arkcos_mpi_band band;
    arkcos_options o0 = o;
    o0.spin = 0;
    CHECK(arkcos_plan_estimate_rank_as(g, k2, &o, k0, &o0, rank, nranks, &est, &err) == 0 &&
              arkcos_plan_mpi_band(p2, &band, NULL) == 0 && est.pixels_out == band.pixels_out &&
              est.pixels_in == band.pixels_in && est.rings_out == band.nrings_out,
          "rank %d of %d: the estimate of a plan with another's bands: out %lld in %lld, the plan's %lld %lld (%s)",
          rank, nranks, (long long)est.pixels_out, (long long)est.pixels_in, (long long)band.pixels_out,
          (long long)band.pixels_in, err.msg);
    const int64_t n = g->npix;
    double *q = NULL, *u = NULL, *rq = NULL, *ru = NULL, *oq = NULL, *ou = NULL;
    if (rank == 0) {
      rng_state = 99;
      q = random_map(n);
      u = random_map(n);
      rq = malloc(sizeof(double) * (size_t)n), ru = malloc(sizeof(double) * (size_t)n);
      oq = malloc(sizeof(double) * (size_t)n), ou = malloc(sizeof(double) * (size_t)n);
      arkcos_plan *one = arkcos_plan_create(g, k2, &o, NULL);
      CHECK(one && arkcos_execute_spin2(one, q, u, rq, ru, NULL) == 0, "bands as: one-process plan");
      arkcos_plan_destroy(one);
    }
    CHECK(arkcos_execute2_mpi(p2, q, u, oq, ou, &err) == 0, "bands as: execute: %s", err.msg);
    if (rank == 0) {
      int64_t diff = 0;
      for (int64_t x = 0; x < n; x++) diff += memcmp(&oq[x], &rq[x], 8) != 0 || memcmp(&ou[x], &ru[x], 8) != 0;
      CHECK(diff == 0, "bands as: %lld of %lld pixels differ from one process (%d ranks)", (long long)diff,
            (long long)n, nranks);
    }
    free(q), free(u), free(rq), free(ru), free(oq), free(ou);
  }
  arkcos_plan_destroy(p2);
  err.code = 0;
  arkcos_plan *bad = arkcos_plan_create_mpi_as(MPI_COMM_WORLD, g, k2, &o, NULL, &err);
  CHECK(!bad && err.code == ARKCOS_EINVAL, "bands as no plan: refused on rank %d: %s", rank, err.msg);
  arkcos_plan_destroy(bad);
  arkcos_plan_destroy(p0);
  arkcos_kernel_destroy(k0);
  arkcos_kernel_destroy(k2);
  arkcos_geometry_destroy(g);
}

/* A NaN input and a GPU plan split over ranks are refused on every rank */
static void refusals(void) {
  arkcos_geometry *g = arkcos_geometry_healpix(8, NULL);
  arkcos_kernel_spec ks = {.type = ARKCOS_KERNEL_TOPHAT, .cutoff = 10 * DEG};
  arkcos_kernel *k = arkcos_kernel_create(&ks, NULL);
  arkcos_options o;
  arkcos_options_default(&o);
  /* a value the plan cannot carry (NaN) on rank 0: refused on every rank
   * in arkcos_execute's words, as in one process */
  {
    arkcos_error e1 = {0, ""}, e2 = {0, ""};
    arkcos_plan *pm = arkcos_plan_create_mpi(MPI_COMM_WORLD, g, k, &o, NULL);
    double *x = NULL, *y = NULL;
    if (rank == 0) {
      x = calloc((size_t)g->npix, sizeof *x);
      y = calloc((size_t)g->npix, sizeof *y);
      x[5] = NAN;
      arkcos_plan *one = arkcos_plan_create(g, k, &o, NULL);
      arkcos_execute(one, x, y, &e1);
      arkcos_plan_destroy(one);
    }
    MPI_Bcast(&e1, (int)sizeof e1, MPI_BYTE, 0, MPI_COMM_WORLD);
    const int rc = pm ? arkcos_execute_mpi(pm, x, y, &e2) : -1;
    CHECK(rc == ARKCOS_EINVAL && e1.code == ARKCOS_EINVAL && !strcmp(e1.msg, e2.msg),
          "a NaN input over %d ranks: rank %d: %d '%s' against one process's '%s'", nranks, rank, rc, e2.msg, e1.msg);
    arkcos_plan_destroy(pm);
    free(x);
    free(y);
  }
  o.backend = ARKCOS_BACKEND_GPU;
  arkcos_error err = {0, ""};
  arkcos_plan *p = arkcos_plan_create_mpi(MPI_COMM_WORLD, g, k, &o, &err);
  CHECK(nranks == 1 || (!p && err.code == ARKCOS_ENODEV), "gpu over %d ranks: %s", nranks, err.msg);
  arkcos_plan_destroy(p);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const mcase cases[] = {
      {"gauss nside 32", 32, ARKCOS_KERNEL_GAUSSIAN, 2.8, 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, 0, 0, 0, 0},
      {"gauss nside 64 cached", 64, ARKCOS_KERNEL_GAUSSIAN, 3.5, 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, 1, 0, 0, 0},
      {"tophat 9deg nside 24", 24, ARKCOS_KERNEL_TOPHAT, 0, 9.1, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, 0, 0, 0, 0},
      {"tophat 4deg nside 48 cached", 48, ARKCOS_KERNEL_TOPHAT, 0, 4.1, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, 1, 0, 0, 0},
      {"gauss nside 32 paper", 32, ARKCOS_KERNEL_GAUSSIAN, 3, 0, ARKCOS_MODE_PAPER, ARKCOS_DOUBLE, 0, 0, 0, 0},
      {"gauss nside 32 single", 32, ARKCOS_KERNEL_GAUSSIAN, 3, 0, ARKCOS_MODE_ENHANCED, ARKCOS_SINGLE, 0, 0, 0, 0},
      {"gauss nside 32 accuracy", 32, ARKCOS_KERNEL_GAUSSIAN, 3, 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, 0, 1e-6, 0, 0},
      {"tophat 20deg ecp", 0, ARKCOS_KERNEL_TOPHAT, 0, 20.3, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, 0, 0, 0, 0},
      {"spin 2 gauss nside 32", 32, ARKCOS_KERNEL_GAUSSIAN, 2.8, 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, 0, 0, 2, 0},
      {"spin 2 tophat 6deg nside 48", 48, ARKCOS_KERNEL_TOPHAT, 0, 6.1, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, 0, 0,
       2, 0},
      {"spin 2 gauss 8 px nside 24", 24, ARKCOS_KERNEL_GAUSSIAN, 8, 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, 0, 0, 2, 0},
      /* the harmonic path (18 px at nside 64: l_K 76; its band plans'
       * execute_local collective): measured within 8.2e-16 (scalar) and
       * 6.4e-16 (Q, U) of one process, whole and band-local maps, N = 2..4 */
      {"harmonic gauss 18 px nside 64", 64, ARKCOS_KERNEL_GAUSSIAN, 18, 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, 0, 0,
       0, 4e-15},
      {"harmonic spin 2 18 px nside 64", 64, ARKCOS_KERNEL_GAUSSIAN, 18, 0, ARKCOS_MODE_ENHANCED, ARKCOS_DOUBLE, 0, 0,
       2, 4e-15},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) run_case(&cases[c]);
  refusals();
  bands_as();
  int f = tl_failed, p = tl_passed, ftot = 0, ptot = 0;
  MPI_Reduce(&f, &ftot, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&p, &ptot, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("TESTS %d %d\n", ptot, ftot);
  MPI_Finalize();
  return ftot ? 1 : 0;
}
