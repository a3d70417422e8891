/*
 * cpu_impl.h -- the CPU backend, instantiated twice by cpu.c: once in
 * double precision (R = double, FFTW's fftw_*) and once in single precision
 * (R = float, fftwf_*). Kernel values, distances and kernel spectra are
 * computed in double (paper section 4.1); ring FFTs and the reduction in R.
 *
 * Notation (DESIGN.md, paper section 4.1): ring j has N_j pixels, spectrum
 * R_j[m] = w_j sum_k r_jk e^{-2 pi i m k / N_j}; L = max N_j is the kernel
 * grid length; for output ring i and input ring j the kernel is sampled at
 * dphi_n = delta + 2 pi n / L (enhanced: delta = phi0_i - phi0_j, the pixels'
 * true offset; paper: delta = 0 and phase rotations instead), its DFT
 * H_ij[m] = sum_n h_n e^{-2 pi i m n / L} formed, and A_i[m] = sum_j H_ij[m] R_j[m].
 * The output spectrum is A_i folded onto the ring's own N_i modes (enhanced)
 * or truncated at its Nyquist frequency (paper), and s_i = c2r(...) / L.
 * For N_i = N_j = L this is the exact circular convolution of the ring with
 * the kernel samples, i.e. the direct sum, whatever the kernel's width.
 *
 * Exact plans (p->direct_caps, the default) leave every pair that involves
 * a cap ring to pairs_direct.c, which sums it directly and exactly; only
 * pairs of two length-L rings come here. A kernel too wide in pixels for
 * that (plan.c, plan_paths) keeps the Fourier path for cap pairs too, with
 * the machinery below, not exact in the caps (arkcos_plan_exactness).
 *
 * Oversampling (enhanced mode, wide kernels): pairs that involve a cap ring
 * (N_i or N_j below L) use a kernel grid of q L points instead; the kernel's azimuthal
 * spectrum then aliases only beyond q L / 2, where it has decayed. All pairs
 * accumulate into one spectrum of q L / 2 + 1 modes, folded with L_acc = q L:
 * a pair on the L grid enters scaled by q (the 1/L_acc normalisation) with
 * its Nyquist mode L/2 halved (the +L/2 and -L/2 halves of that grid).
 * Belt pairs stay exact: L_acc is a multiple of their ring length.
 *
 * Coarser grids toward the poles: the kernel on a ring pair is a function
 * of sin th_i sin th_j sin^2(dphi / 2), so its width in azimuth grows as
 * 1 / sqrt(sin th_i sin th_j) and its spectrum shrinks by the same factor.
 * A cap pair with sqrt(sin th_i sin th_j) <= s_ref / 2^s (s_ref: the largest
 * sin th of a cap ring) therefore uses the grid of q L / 2^s points: it has
 * as many samples per kernel width as the cap pairs at the belt's edge on
 * the q L grid, so it aliases no more than they do, for 2^s times fewer
 * samples and modes. Such a pair enters only modes m <= q L / 2^(s+1) of the
 * accumulation (scaled by 2^s, its Nyquist mode halved as above), and ring
 * spectra are kept only up to the highest mode some pair reads.
 *
 * Rotated frame and pair symmetry (with the coarser grids): see pair_real
 * and pairsym_stage. Kernel spectra become real and symmetric in (i, j), so
 * each is one Clenshaw chain, computed once for both of its output rings.
 *
 * H_ij: a compact kernel has few non-zero samples (|n| <= nmax). Then
 * H[m] = sum_k (h_k + h_-k) cos(k t) - i sum_k (h_k - h_-k) sin(k t),
 * t = 2 pi m / L, is a short Chebyshev series in cos t, summed for all m by
 * Clenshaw's recurrence (kernel_clenshaw): O(nmax L) vectorised work, much
 * cheaper than an FFT of length L when nmax is small (near the equator).
 * Wide windows (near the poles) use an FFTW r2c of the kernel grid.
 *
 * Files (each included once per precision, in this order):
 *   cpu_impl.h      backend state, create, destroy, execute (this file)
 *   cpu_ringfft.h   ring FFTs in and out: periodic extension, fold
 *   cpu_pairspec.h  pair kernel spectra: sampling, Clenshaw, kernel FFT
 *   cpu_reduce.h    reduction over ring pairs, per ring or pair-symmetric
 *   cpu_setup.h     plan-time steps: grids, extents, chunks, buffers, FFTW
 */

/* A kernel grid: L points in azimuth, nm = L / 2 + 1 modes kept. */
typedef struct SFX(kgrid_t) {
  int64_t L, nm;
  int cheb_max;         /* largest nmax for the direct cosine sum */
  int half;             /* index of the grid of L / 2 points, or -1 */
  int64_t rowlen;       /* padded row length (>= nm + 1, whole Clenshaw blocks) */
  double *cos_m, *sin_m;/* cos, sin(2 pi m / L), padded to nmp */
  double *ch_m;         /* cos(pi m / L): the real kernel spectrum of samples
                         * symmetric about a half step */
  FFTWP(plan) kplan;    /* r2c of length L */
} SFX(kgrid_t);

typedef struct SFX(cpu_state) {
  int nthreads;
  int q;                /* oversampling of cap pairs' kernel grids */
  int64_t Lacc, nmacc;  /* accumulated spectra: q L, q L / 2 + 1 modes */
  int64_t nmp;          /* padded row length (>= nmacc) */
  int ngrid;            /* kernel grids of distinct lengths: */
  SFX(kgrid_t) grid[ARKCOS_MAX_GRIDS]; /* [0]: L = max ring length (belt pairs) */
  int nlev;             /* cap-pair levels s = 0 .. nlev - 1 (0: none, all on L) */
  int lev[ARKCOS_MAX_GRIDS]; /* grid of level s: q L / 2^s points */
  int64_t levL[ARKCOS_MAX_GRIDS]; /* ... and its length (arkcos_pair_level) */
  double s_ref;         /* sqrt(sin th_i sin th_j) up to which level 0 holds */
  /* smooth caps (a Gaussian cut where negligible): a pair's spectrum is
   * used up to bl_scale sqrt(sin th_i sin th_j) modes only (pair_len) */
  double bl_scale;
  int sym;              /* rotated frame: real kernel spectra (see pair_real) */
  /* pair symmetry (see pairsym_stage): each pair's G computed once for both
   * of its output rings; tasks in nchunk chunks of >= 2 (w + 1) tasks */
  int pairsym, w, nchunk;
  int *chunk0;          /* first task of chunk c; chunk0[nchunk] = ntasks */
  int *tidx;            /* task that ring j belongs to */
  R *tslots;            /* per-thread rings of w + 1 slots */
  size_t slot_sz;       /* R values per slot: 4 rows of nmp */
  int64_t *ring_nm;     /* modes of ring j's spectrum that some pair reads */
  size_t *spec_ofs;     /* ring j's spectrum: spec_re / spec_im + spec_ofs[j] */
  int64_t *task_nm;     /* modes task t's accumulators receive */
  R *spec_re, *spec_im; /* ring spectra, one padded row per ring (NULL with window) */
  /* window (arkcos_spectra_window): pair-symmetric plans keep each thread's
   * ring spectra in ww + 1 slots of 4 rows of wrow R values (a task's ring
   * and mirror, re and im), transformed as its chunk reaches them */
  int window, ww;
  int64_t wrow;
  R *wspec;
  FFTWP(plan) *r2c, *c2r; /* per ring, from the process-wide cache */
  /* rings shorter than L (the caps): Bluestein's DFTs instead (bluestein.c;
   * NULL where FFTW's plan is used), one per distinct length (owned by
   * blue_own), and per-thread double workspaces of bwstride */
  arkcos_bluestein **blue, **blue_own;
  int nblue;
  double *bwork;
  size_t bwstride;
  R *work;              /* per-thread workspace */
  size_t wstride;       /* R values per thread */
  R *hcache;            /* cache_kernel_spectra: H of every ring pair (re row, im row) */
  size_t *pair_ofs;     /* first pair of each task */
  size_t *hofs;         /* each pair's rows in hcache */
  unsigned char *pair_used; /* 0: kernel does not reach the pair; else 1 + grid */
} SFX(cpu_state);

/* per-thread workspace layout, in units of nmp R values (hr, hi are
 * written in whole Clenshaw blocks, which nmp is a multiple of) */
enum { SFX(WS_KGRID) = 0, SFX(WS_KSPEC) = 2, SFX(WS_HR) = 4, SFX(WS_HI) = 5, SFX(WS_A1R) = 6,
       SFX(WS_A1I) = 7, SFX(WS_A2R) = 8, SFX(WS_A2I) = 9, SFX(WS_RIN) = 10, SFX(WS_RSPEC) = 12,
       SFX(WS_ROUT) = 14, SFX(WS_SIZE) = 16 };
#define WS(s, part) ((size_t)(s)->nmp * SFX(part))

#include "arkcos/cpu_ringfft.h"
#include "arkcos/cpu_pairspec.h"
#include "arkcos/cpu_reduce.h"
#include "arkcos/cpu_setup.h"

static void SFX(cpu_destroy)(arkcos_plan *p) {
  SFX(cpu_state) *s = (SFX(cpu_state) *)p->impl;
  if (!s) return;
  free(s->r2c);
  free(s->c2r);
  for (int b = 0; b < s->nblue; b++) arkcos_bluestein_destroy(s->blue_own[b]);
  free(s->blue);
  free(s->blue_own);
  FFTWP(free)(s->bwork);
  free(s->ring_nm);
  free(s->spec_ofs);
  free(s->task_nm);
  free(s->hofs);
  for (int g = 0; g < s->ngrid; g++) {
    FFTWP(free)(s->grid[g].cos_m);
    FFTWP(free)(s->grid[g].sin_m);
    FFTWP(free)(s->grid[g].ch_m);
  }
  FFTWP(free)(s->spec_re);
  FFTWP(free)(s->spec_im);
  FFTWP(free)(s->wspec);
  FFTWP(free)(s->work);
  FFTWP(free)(s->hcache);
  free(s->pair_ofs);
  free(s->pair_used);
  free(s->chunk0);
  free(s->tidx);
  FFTWP(free)(s->tslots);
  free(s);
  p->impl = NULL;
}

/* Per-stage times of the last execute: per-thread sums averaged over
 * threads approximate wall-clock shares */
static void SFX(record_times)(arkcos_plan *p, const SFX(cpu_state) *s, double t_start, double t_mapfft,
                              const double st[4]) {
  double total = omp_get_wtime() - t_start;
  arkcos_stage_times *T = &p->last;
  memset(T, 0, sizeof *T);
  T->map_fft = t_mapfft;
  T->kernel_eval = st[0] / s->nthreads;
  T->kernel_fft = st[1] / s->nthreads;
  T->reduction = st[2] / s->nthreads;
  T->map_ifft = st[3] / s->nthreads;
  T->total = total;
  T->other = total - (T->map_fft + T->kernel_eval + T->kernel_fft + T->reduction + T->map_ifft);
  if (T->other < 0) T->other = 0;
}

static int SFX(cpu_execute)(arkcos_plan *p, const double *in, double *out, arkcos_error *err) {
  (void)err;
  SFX(cpu_state) *s = (SFX(cpu_state) *)p->impl;
  /* 0. a constant map (A(1)), where the plan allows: the direct sum without
   * FFTs (pairs_direct.c) */
  if (arkcos_direct_execute_constant(p, in, out, s->nthreads)) return ARKCOS_OK;
  double t_start = omp_get_wtime();
  /* 1. ring FFTs, spectra extended to the kernel grid's L/2 + 1 modes
   * (with a window: in step 2, as each thread reaches them) */
  if (!s->window) SFX(ring_ffts_in)(p, s, in);
  double t_mapfft = omp_get_wtime() - t_start;
  /* 2. per output ring (and its mirror): kernel samples, their spectra,
   * the reduction over input rings; then fold and inverse FFT */
  double st[5] = {0, 0, 0, 0, 0}; /* kernel_eval, kernel_fft, reduction, map_ifft, window's ring FFTs */
  if (s->pairsym) SFX(pairsym_stage)(p, s, in, out, st);
  else SFX(perring_stage)(p, s, out, st);
  t_mapfft += st[4] / s->nthreads;
  /* 3. the ring pairs off the kernel grid, summed directly (exact plans) */
  double t_direct;
  if (arkcos_direct_apply(p, in, out, &t_direct))
    return arkcos_fail(err, ARKCOS_ENOMEM, "execute: out of memory for a ring pair's direct weights");
  st[2] += s->nthreads * t_direct;
  SFX(record_times)(p, s, t_start, t_mapfft, st);
  p->last.direct = t_direct;
  return ARKCOS_OK;
}

/* Two maps (execute_two): each map's FFTs and Fourier reduction in turn
 * (the spectra buffers reused), then the direct pairs of both at once. A
 * constant map takes its own shortcut, as in cpu_execute. */
static int SFX(cpu_execute_two)(arkcos_plan *p, const double *in1, double *out1, const double *in2,
                                double *out2, arkcos_error *err) {
  SFX(cpu_state) *s = (SFX(cpu_state) *)p->impl;
  for (int m = 0; m < 2; m++)
    if (arkcos_direct_execute_constant(p, m ? in2 : in1, m ? out2 : out1, s->nthreads)) {
      const arkcos_stage_times t = p->last; /* the other map alone */
      const int rc = SFX(cpu_execute)(p, m ? in1 : in2, m ? out1 : out2, err);
      arkcos_stages_add(&p->last, &t);
      return rc;
    }
  double t_start = omp_get_wtime(), t_mapfft = 0, st[5] = {0, 0, 0, 0, 0};
  const double *in[2] = {in1, in2};
  double *out[2] = {out1, out2};
  for (int m = 0; m < 2; m++) {
    const double t0 = omp_get_wtime();
    if (!s->window) SFX(ring_ffts_in)(p, s, in[m]);
    t_mapfft += omp_get_wtime() - t0;
    if (s->pairsym) SFX(pairsym_stage)(p, s, in[m], out[m], st);
    else SFX(perring_stage)(p, s, out[m], st);
  }
  t_mapfft += st[4] / s->nthreads;
  double t_direct;
  if (arkcos_direct_apply_n(p, 2, in, out, &t_direct))
    return arkcos_fail(err, ARKCOS_ENOMEM, "execute: out of memory for a ring pair's direct weights");
  st[2] += s->nthreads * t_direct;
  SFX(record_times)(p, s, t_start, t_mapfft, st);
  p->last.direct = t_direct;
  return ARKCOS_OK;
}

int SFX(arkcos_cpu_create)(arkcos_plan *p, arkcos_error *err) {
  SFX(cpu_state) *s = (SFX(cpu_state) *)calloc(1, sizeof *s);
  if (!s) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  p->impl = s;
  p->execute = SFX(cpu_execute);
  p->execute_two = SFX(cpu_execute_two);
  p->destroy = SFX(cpu_destroy);
  s->nthreads = p->opt.threads > 0 ? p->opt.threads : omp_get_max_threads();
  size_t bytes = 0;
  int rc;
  if ((rc = SFX(setup_grids)(p, s, &bytes, err)) != ARKCOS_OK) return rc;
  if ((rc = SFX(setup_extents)(p, s, err)) != ARKCOS_OK) return rc;
  if ((rc = SFX(setup_pairsym)(p, s, &bytes, err)) != ARKCOS_OK) return rc;
  if ((rc = SFX(setup_buffers)(p, s, bytes, err)) != ARKCOS_OK) return rc;
  double t0 = omp_get_wtime();
  if ((rc = SFX(setup_fftw)(p, s, err)) != ARKCOS_OK) return rc;
  p->setup.fftw += omp_get_wtime() - t0;
  t0 = omp_get_wtime();
  if (p->direct_caps && (rc = arkcos_direct_create(p, s->nthreads, err)) != ARKCOS_OK) return rc;
  p->setup.tables += omp_get_wtime() - t0;
  t0 = omp_get_wtime();
  if (p->opt.cache_kernel_spectra && (rc = SFX(fill_cache)(p, s, err)) != ARKCOS_OK) return rc;
  p->setup.kernel_spectra += omp_get_wtime() - t0;
  return ARKCOS_OK;
}

#undef WS
