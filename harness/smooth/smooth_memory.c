/*
 * smooth_memory.c -- `arkcos smooth`'s memory predicted before anything is
 * read (smooth_memory.h). Per rank and nside:
 *
 *   maps: a rank that reads the files holds a file's columns and their
 *         outputs, (ncols + 1) x 8 npix bytes at the peak (each input column
 *         is freed once smoothed; ncols + 2 with Q and U, whose two inputs
 *         are held until both are smoothed), 2 x 8 npix more with --mask (the weights
 *         and their smoothing); a rank that serves a band holds its band and
 *         halo (arkcos_estimate.maps), with --mask the mask's band and
 *         A(w) there, and with Q and U their band and halo at the spin-2
 *         plan's kernel, in and out;
 *   plan: arkcos_plan_estimate_rank (the band's tables, spectra, cached
 *         kernel spectra and workspace), plus the spin-2 plan's where Q and
 *         U are smoothed (the whole plan in one process, a band's over
 *         ranks).
 *
 * and the process itself (PROCESS_BYTES). A rank's need is its largest over the nsides (plans are made per nside
 * and freed before the next). The ranks of a host are summed and compared
 * with the memory available there (arkcos_memory_available: MemAvailable,
 * the cgroup's limit, or $ARKCOS_MEMORY_GB).
 */
#define _POSIX_C_SOURCE 200809L
#include "harness/smooth/smooth_memory.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/common/hmpi.h"

/* One rank's figures for one nside */
typedef struct smem_row {
  int rank, band, rings;
  long long out_px, halo_px;
  double maps, tables, spectra, other, plan, total;
} smem_row;

/* The process itself (code, libraries): measured 14.4 MB of peak resident
 * memory for `arkcos smooth` at nside 16 (FFTW's plans estimated, no
 * wisdom); an MPI build under mpirun 24.6 to 31.8 MB (its libraries,
 * docs/MPI.md); a CUDA build 23.9 to 24.1 MB where the NVIDIA driver is
 * installed (--backend auto opens the GPU module and the CUDA runtime even
 * without a device; without the driver it does not, arkcos_gpu_driver) */
#define PROCESS_CUDA_BYTES (arkcos_gpu_driver() ? 10e6 : 0.0)
#define PROCESS_BYTES ((hmpi_built() || nranks > 1 ? 32e6 : 15e6) + PROCESS_CUDA_BYTES)
/* the host memory of a CUDA context, where the GPU runs the maps: nside
 * 256 at 38' on an H200 host (CUDA 13), peak 186 MB with the GPU against
 * 36.5 MB on its CPU, about 140 MB more than the maps and plans predicted */
#define CUDA_CONTEXT_BYTES 140e6

/* Rank `rank`'s row for nside w; 0 or an ARKCOS_E* code (err filled) */
static int rank_row(const smem_nside *w, const arkcos_kernel *k, int rank, int nranks, int split,
                    smem_row *row, arkcos_error *err) {
  memset(row, 0, sizeof *row);
  row->rank = rank;
  row->band = -1;
  arkcos_geometry *g = arkcos_geometry_healpix(w->nside, err);
  if (!g) return err->code ? err->code : ARKCOS_EINVAL;
  const double npix = (double)g->npix;
  const int bands = split && nranks > 1;
  arkcos_estimate e;
  int rc = arkcos_plan_estimate_rank(g, w->k0 ? w->k0 : k, &w->o0, bands ? rank : 0, bands ? nranks : 1, &e, err);
  /* whole files: one process; else each rank reads its band (hmpi.h) */
  const int reads = !bands;
  const double whole_maps = 8 * npix * (w->maxcols + 1 + w->spin2 + 2 * w->masked + (w->normalize && !w->norm_streamed));
  if (!rc) {
    row->band = bands ? e.band : -1;
    row->rings = e.rings_out;
    row->out_px = (long long)e.pixels_out;
    row->halo_px = (long long)e.halo_pixels;
    /* band and halo: the columns, an output, A(W) and ones; with --mask
     * the mask's band and A(w), and with the polar caps their correction
     * of 1 laid out on the band (hmpi.c's band_caps_add) */
    row->maps = reads ? whole_maps
                : 8 * (double)e.pixels_in *
                      (w->maxcols + 1 + 2 * w->normalize + 2 * w->masked + (w->masked && w->polar > 0));
    row->tables = e.tables;
    row->spectra = e.spectra;
    /* the polar reconstruction: the smoother's, on rank 0 (hmpi.h) */
    row->other = e.kernel_spectra + e.workspace + e.fft + (bands && rank > 0 ? 0 : w->polar);
    row->plan = e.total + (bands && rank > 0 ? 0 : w->polar);
  }
  /* the spin-2 plan: a band plan over ranks with the scalar plan's bands
   * (arkcos_plan_create_mpi_as), the whole plan in one process; band-wise,
   * Q and U are read again at its band and halo with two outputs */
  if (!rc && w->spin2) {
    arkcos_estimate e2;
    rc = bands ? arkcos_plan_estimate_rank_as(g, w->k2 ? w->k2 : k, &w->o2, w->k0 ? w->k0 : k, &w->o0, rank, nranks,
                                              &e2, err)
               : arkcos_plan_estimate_rank(g, w->k2 ? w->k2 : k, &w->o2, 0, 1, &e2, err);
    if (!rc) row->plan += e2.total;
    if (!rc && !reads) row->maps += 8 * (4 + w->masked) * (double)e2.pixels_in;
    if (!rc) e.collective |= e2.collective;
  }
  /* a collective band execute (the harmonic path) sends the file to the
   * whole-map path: rank 0 holds the maps as one process does, the others
   * their band's input and output (hmpi.c) */
  if (!rc && bands && e.collective)
    row->maps = rank == 0 ? whole_maps : 8 * (double)e.pixels_in * 2 * (1 + w->spin2);
  /* an accuracy where the smoother divides by A(1): an exact plan makes it
   * (held with the others over ranks, made and freed in one process) */
  if (!rc && w->normalize && w->o0.accuracy > 0) {
    arkcos_options oe = w->o0;
    oe.accuracy = 0;
    arkcos_estimate en;
    rc = bands ? arkcos_plan_estimate_rank_as(g, w->k0 ? w->k0 : k, &oe, w->k0 ? w->k0 : k, &w->o0, rank, nranks, &en,
                                              err)
               : arkcos_plan_estimate_rank(g, w->k0 ? w->k0 : k, &oe, 0, 1, &en, err);
    if (!rc) row->plan += en.total;
  }
  row->total = PROCESS_BYTES + (w->gpu ? CUDA_CONTEXT_BYTES : 0) + row->maps + row->plan;
  arkcos_geometry_destroy(g);
  return rc;
}

static void print_header(const smem_nside *w, int nranks, int split, int threads) {
  const int bands = split && nranks > 1;
  printf("dry run: nside %lld, files of up to %d column(s)%s, %d rank(s)%s, %d thread(s) per rank\n",
         (long long)w->nside, w->maxcols, w->spin2 ? " (Q, U as spin 2)" : "", nranks,
         bands ? ", each map split into latitude bands" : nranks > 1 ? ", the files shared out" : "", threads);
  printf("(MB: plan = 1.15 (tables + spectra + other: cached kernel spectra, workspace, FFTW plans) + 0.5; total = "
         "maps + plan + %.0f for the process%s%s)\n", PROCESS_BYTES / 1e6,
         w->gpu ? " + 140 for the CUDA context (the GPU takes the maps)" : "",
         nranks > 1 && !hmpi_built() ? "; a prediction: this arkcos is built without MPI (make MPI=1)" : "");
  printf("%-5s %-16s %4s %6s %11s %10s %10s %10s %10s %10s %10s %10s\n", "rank", "host", "band", "rings",
         "out_px", "halo_px", "maps_MB", "tables_MB", "spectra_MB", "other_MB", "plan_MB", "total_MB");
}

static void print_row(const smem_row *r, const char *host) {
  char band[16] = "-";
  if (r->band >= 0) snprintf(band, sizeof band, "%d", r->band);
  printf("%-5d %-16s %4s %6d %11lld %10lld %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", r->rank, host, band,
         r->rings, r->out_px, r->halo_px, r->maps / 1e6, r->tables / 1e6, r->spectra / 1e6, r->other / 1e6,
         r->plan / 1e6, r->total / 1e6);
}

/* The band cost model that cut the bands (arkcos_plan_estimate_cost):
 * each rank's modelled seconds per map, at one thread and at `threads`
 * (perfect scaling within a rank assumed), and the slowest band against the
 * mean (how far the cut is from even). */
static void print_costs(const smem_nside *w, int nranks, int threads) {
  arkcos_geometry *g = arkcos_geometry_healpix(w->nside, NULL);
  double *c = calloc((size_t)nranks, sizeof *c), mx = 0, sum = 0;
  int ok = g && c;
  printf("cost model (s per map at 1 thread = direct multiply-adds x 1.1 ns + Fourier pairs x (L log2 L "
         "x 0.05 ns + modes x 5.5 ns) + FFT points x log2 x 3.4 ns; time = that / threads):\n");
  for (int r = 0; r < nranks && ok; r++) {
    double parts[3];
    ok = arkcos_plan_estimate_cost(g, w->k0, &w->o0, r, nranks, parts, NULL) == ARKCOS_OK;
    c[r] = parts[0] + parts[1] + parts[2];
    if (ok) printf("cost rank %d: %.4g s (direct %.3g, Fourier %.3g, FFT %.3g); %.4g s at %d thread(s)\n", r, c[r],
                   parts[0], parts[1], parts[2], c[r] / (threads > 0 ? threads : 1), threads);
    sum += c[r];
    if (c[r] > mx) mx = c[r];
  }
  if (ok && sum > 0)
    printf("cost: the slowest band %.3g x the mean; one process about %.4g s per map at 1 thread\n",
           mx / (sum / nranks), sum);
  free(c);
  arkcos_geometry_destroy(g);
}

/* Rank 0: the rows of every rank (hosts[r], avail[r] its host's memory) for
 * one nside: printed, summed per host, judged. 0 fits, 1 does not. */
static int judge(const smem_nside *w, const smem_row *rows, char **hosts, const double *avail, int nranks,
                 int split, double max_memory, int print, int threads, int hard_only) {
  if (print) {
    print_header(w, nranks, split, threads);
    for (int r = 0; r < nranks; r++) print_row(&rows[r], hosts[r]);
    if (split && nranks > 1) print_costs(w, nranks, threads);
    /* no pixel is read: a map with missing pixels needs A(w) as a mask
     * does (measured at nside 1024: 506 MB against 429 MB predicted) */
    if (!w->masked)
      printf("(a map with missing pixels, UNSEEN or NaN, adds up to %.0f MB on the rank that reads it: its "
             "weight map and A(w); --dry-run reads no pixel)\n",
             16.0 * 12.0 * (double)w->nside * (double)w->nside / 1e6);
  }
  int fits = 1;
  /* one process (no mpirun): what it can have at all, whatever
   * --max-memory says (arkcos_memory_limit: ulimit -v, cgroup, free memory) */
  const char *bound = NULL;
  const double most = hmpi_size() > 1 ? INFINITY : arkcos_memory_limit(&bound);
  double need = 0;
  for (int r = 0; r < nranks; r++) need += rows[r].maps + rows[r].plan; /* the process is mapped */
  if (need > most) {
    fprintf(stderr, "arkcos smooth: nside %lld cannot fit: it would need about %.3g GB (maps %.3g, plan "
                    "%.3g) but this process can have at most %.3g GB: %s\n",
            (long long)w->nside, need / 1e9, rows[0].maps / 1e9, rows[0].plan / 1e9, most / 1e9, bound);
    return 1;
  }
  for (int r = 0; r < nranks && !hard_only; r++) {
    if (max_memory > 0) {
      if (rows[r].plan > max_memory) {
        fprintf(stderr, "arkcos smooth: nside %lld: rank %d's plan would need about %.3g GB but --max-memory "
                        "allows %.3g GB; more ranks, a smaller kernel or a larger limit\n",
                (long long)w->nside, r, rows[r].plan / 1e9, max_memory / 1e9);
        fits = 0;
      }
      continue;
    }
    int first = 1, n = 0, big = r;
    for (int q = 0; q < r && first; q++) first = strcmp(hosts[q], hosts[r]) != 0;
    if (!first) continue;
    double sum = 0;
    for (int q = r; q < nranks; q++)
      if (!strcmp(hosts[q], hosts[r])) {
        sum += rows[q].total;
        n++;
        if (rows[q].total > rows[big].total) big = q;
      }
    const int ok = sum <= avail[r];
    if (print)
      printf("host %s: %d rank(s) need about %.3g GB together; %.3g GB available now: %s\n", hosts[r], n,
             sum / 1e9, avail[r] / 1e9, ok ? "fits" : "does not fit");
    if (!ok) {
      fprintf(stderr, "arkcos smooth: nside %lld: the %d rank(s) on host %s would need about %.3g GB together "
                      "(rank %d the most, %.3g GB: maps %.3g, plan %.3g) but %.3g GB are available there now; "
                      "more nodes (fewer ranks per node), a smaller nside or kernel, or --max-memory to set "
                      "each rank's limit\n",
              (long long)w->nside, n, hosts[r], sum / 1e9, big, rows[big].total / 1e9, rows[big].maps / 1e9,
              rows[big].plan / 1e9, avail[r] / 1e9);
      fits = 0;
    }
  }
  return fits ? 0 : 1;
}

int smooth_memory_check(const smem_nside *w, int nw, const arkcos_kernel *k, int nranks, int split,
                        double max_memory, int print, int hard_only) {
  const int mpi = hmpi_size() > 1, me = hmpi_rank();
  const int threads = nw > 0 ? w[0].o0.threads : 1;
  smem_row *rows = calloc((size_t)nranks, sizeof *rows);
  char **hosts = NULL, host[256] = "";
  double *avail = calloc((size_t)nranks, sizeof *avail);
  int status = rows && avail ? 0 : 1;
  hmpi_host(host, sizeof host);
  if (!host[0]) snprintf(host, sizeof host, "this-host");
  const double here = arkcos_memory_available();
  const char *bound = NULL;
  const double most = mpi ? INFINITY : arkcos_memory_limit(&bound);
  for (int i = 0; i < nw && !status; i++) {
    /* the maps alone (a column in, one out), before the plan's estimate,
     * whose analysis of ring pairs grows with the map */
    const double maps = 16.0 * 12.0 * (double)w[i].nside * (double)w[i].nside;
    if (maps > most && !(split && nranks > 1)) { /* over ranks each holds its band (hmpi.h) */
      fprintf(stderr, "arkcos smooth: nside %lld cannot fit: its maps alone need at least %.3g GB but "
                      "this process can have at most %.3g GB: %s\n",
              (long long)w[i].nside, maps / 1e9, most / 1e9, bound);
      status = 1;
      break;
    }
    arkcos_error err = {0, ""};
    int rc = 0;
    if (mpi) { /* each rank its own row; rank 0 gathers them */
      smem_row mine;
      rc = rank_row(&w[i], k, me, nranks, split, &mine, &err);
      char line[512];
      snprintf(line, sizeof line, "%d %d %d %lld %lld %.17g %.17g %.17g %.17g %.17g %.17g %.17g %s", rc,
               mine.band, mine.rings, mine.out_px, mine.halo_px, mine.maps, mine.tables, mine.spectra,
               mine.other, mine.plan, mine.total, here, host);
      char **all = hmpi_gather_strings(line);
      if (me == 0 && all) {
        hosts = calloc((size_t)nranks, sizeof *hosts);
        for (int r = 0; r < nranks && hosts; r++) {
          smem_row *x = &rows[r];
          int rrc = 0, pos = 0;
          x->rank = r;
          sscanf(all[r], "%d %d %d %lld %lld %lf %lf %lf %lf %lf %lf %lf %n", &rrc, &x->band, &x->rings,
                 &x->out_px, &x->halo_px, &x->maps, &x->tables, &x->spectra, &x->other, &x->plan, &x->total,
                 &avail[r], &pos);
          hosts[r] = strdup(all[r] + pos);
          if (rrc && !rc) rc = rrc;
        }
      }
      for (int r = 0; all && r < nranks && me == 0; r++) free(all[r]);
      free(all);
      if (rc && me == 0 && !err.code) fprintf(stderr, "arkcos smooth: the memory estimate failed on a rank\n");
    } else { /* one process predicts every rank, all on this host */
      hosts = calloc((size_t)nranks, sizeof *hosts);
      for (int r = 0; r < nranks && !rc && hosts; r++) {
        rc = rank_row(&w[i], k, r, nranks, split, &rows[r], &err);
        hosts[r] = strdup(host);
        avail[r] = here;
      }
    }
    if (rc && hard_only) { /* the plan itself reports it, with its context */
      for (int r = 0; hosts && r < nranks; r++) free(hosts[r]);
      free(hosts);
      hosts = NULL;
      continue;
    }
    if (rc && err.code) fprintf(stderr, "arkcos smooth: %s\n", err.msg);
    status = rc ? 2 : 0;
    if (!status && me == 0)
      status = hosts ? judge(&w[i], rows, hosts, avail, nranks, split, max_memory, print, threads, hard_only) : 1;
    for (int r = 0; hosts && r < nranks; r++) free(hosts[r]);
    free(hosts);
    hosts = NULL;
    status = hmpi_max(status);
  }
  free(rows);
  free(avail);
  fflush(stdout);
  return status;
}
