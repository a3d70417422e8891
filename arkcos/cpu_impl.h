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
 * Oversampling (enhanced mode): pairs that involve a cap ring (N_i or N_j
 * below L) use a kernel grid of q L points instead; the kernel's azimuthal
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
  double *sh_k;         /* sin(pi k / (2 L)), k = 0 .. L: sin(dphi / 2) at the
                         * samples of offsets 0 and +-pi / L */
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
  double s_ref;         /* sqrt(sin th_i sin th_j) up to which level 0 holds */
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
  R *spec_re, *spec_im; /* ring spectra, one padded row per ring */
  FFTWP(plan) *r2c, *c2r; /* per ring, from the process-wide cache */
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

/* ---- process-wide FFTW plan cache: planning awkward lengths (4r, r with
 * large prime factors) is slow, and plans are immutable and thread-safe to
 * execute, so every arkcos plan shares them. */
typedef struct { int64_t n; FFTWP(plan) r2c, c2r; } SFX(plan_entry);
static SFX(plan_entry) *SFX(cache);
static int SFX(ncache), SFX(capcache);

/* Returns the cached pair for length n, planning it if needed (*fresh += 1). */
static SFX(plan_entry) *SFX(plans_for)(int64_t n, unsigned flags, int *fresh) {
  SFX(plan_entry) *e = NULL;
  pthread_mutex_lock(&fftw_planner_lock);
  for (int i = 0; i < SFX(ncache); i++)
    if (SFX(cache)[i].n == n) {
      e = &SFX(cache)[i];
      break;
    }
  if (!e) {
    if (SFX(ncache) == SFX(capcache)) {
      int cap = SFX(capcache) ? 2 * SFX(capcache) : 256;
      SFX(plan_entry) *c = (SFX(plan_entry) *)realloc(SFX(cache), sizeof *c * (size_t)cap);
      if (!c) goto out;
      SFX(cache) = c;
      SFX(capcache) = cap;
    }
    R *a = (R *)FFTWP(malloc)(sizeof(R) * (size_t)(n + 2));
    R *b = (R *)FFTWP(malloc)(sizeof(R) * (size_t)(n + 2));
    if (a && b) {
      FFTWP(plan) p1 = FFTWP(plan_dft_r2c_1d)((int)n, a, (FFTWP(complex) *)b, flags);
      FFTWP(plan) p2 = FFTWP(plan_dft_c2r_1d)((int)n, (FFTWP(complex) *)b, a, flags);
      if (p1 && p2) {
        e = &SFX(cache)[SFX(ncache)++];
        e->n = n;
        e->r2c = p1;
        e->c2r = p2;
        (*fresh)++;
      }
    }
    FFTWP(free)(a);
    FFTWP(free)(b);
  }
out:
  pthread_mutex_unlock(&fftw_planner_lock);
  return e;
}

static void SFX(cpu_destroy)(arkcos_plan *p) {
  SFX(cpu_state) *s = (SFX(cpu_state) *)p->impl;
  if (!s) return;
  free(s->r2c);
  free(s->c2r);
  free(s->ring_nm);
  free(s->spec_ofs);
  free(s->task_nm);
  free(s->hofs);
  for (int g = 0; g < s->ngrid; g++) {
    FFTWP(free)(s->grid[g].cos_m);
    FFTWP(free)(s->grid[g].sin_m);
    FFTWP(free)(s->grid[g].ch_m);
    FFTWP(free)(s->grid[g].sh_k);
  }
  FFTWP(free)(s->spec_re);
  FFTWP(free)(s->spec_im);
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

/* Stores one vector of doubles as R values. */
static inline void SFX(store_vd)(R *dst, arkcos_vd v) {
  double t[ARKCOS_VL];
  memcpy(t, &v, sizeof t);
  for (int q = 0; q < ARKCOS_VL; q++) dst[q] = (R)t[q];
}

/* Kernel spectrum H[m], m < nm (rounded up to whole blocks), by Clenshaw's
 * recurrence in x_m = cos(2 pi m / L), ARKCOS_NV independent vectors at a
 * time to hide the recurrence's latency. kind:
 *   0  general offset: H = sum_k a_k T_k(x) - i sin(t) sum_{k>=1} b_k U_{k-1}(x),
 *      a_k = h_k + h_-k, b_k = h_k - h_-k (k = 0..K)
 *   1  samples symmetric about 0 (delta = 0): the same with b = 0: H real
 *  +2/-2  samples symmetric about a half step (delta = +-pi/L):
 *      H = e^{+-i t/2} cos(t/2) sum_k a_k V_k(x), V the third-kind polynomials
 *      (cos((2k+1)t/2) = cos(t/2) V_k(cos t)), i.e.
 *      Re H = (1 + x)/2 S, Im H = +-sin(t)/2 S.
 * hi == NULL asks for the real spectrum G[m] = e^{-i m delta} H[m] of the
 * samples' absolute positions (the rotated frame, see pair_real): H itself
 * for kind 1, cos(t/2) S for kinds +-2; kind 0 has no real form. */
static void SFX(kernel_clenshaw)(const SFX(kgrid_t) *s, int64_t nm, int kind, const double *a,
                                 const double *b, int K, R *hr, R *hi) {
  enum { VL = ARKCOS_VL, NV = ARKCOS_NV };
  for (int64_t m = 0; m < nm; m += VL * NV) {
    arkcos_vd x2[NV], p1[NV], p2[NV], q1[NV], q2[NV];
    for (int v = 0; v < NV; v++) {
      arkcos_vd x;
      memcpy(&x, s->cos_m + m + v * VL, sizeof x);
      x2[v] = x + x;
      p1[v] = p2[v] = q1[v] = q2[v] = (arkcos_vd){0};
    }
    if (kind == 0) {
      for (int k = K; k >= 2; k--) {
        const double ak = a[k], bk = b[k];
        for (int v = 0; v < NV; v++) {
          arkcos_vd p0 = (ak - p2[v]) + x2[v] * p1[v];
          p2[v] = p1[v];
          p1[v] = p0;
          arkcos_vd q0 = (bk - q2[v]) + x2[v] * q1[v];
          q2[v] = q1[v];
          q1[v] = q0;
        }
      }
    } else {
      for (int k = K; k >= 2; k--) {
        const double ak = a[k];
        for (int v = 0; v < NV; v++) {
          arkcos_vd p0 = (ak - p2[v]) + x2[v] * p1[v];
          p2[v] = p1[v];
          p1[v] = p0;
        }
      }
    }
    const double a1 = K >= 1 ? a[1] : 0, b1 = K >= 1 ? b[1] : 0;
    for (int v = 0; v < NV; v++) {
      const int64_t mv = m + v * VL;
      arkcos_vd x, sn, re, im;
      memcpy(&x, s->cos_m + mv, sizeof x);
      memcpy(&sn, s->sin_m + mv, sizeof sn);
      arkcos_vd c1 = a1 + x2[v] * p1[v] - p2[v]; /* Clenshaw b_1 */
      if (kind == 0 || kind == 1) {
        re = a[0] + x * c1 - p1[v];
        im = kind == 0 ? -sn * (b1 + x2[v] * q1[v] - q2[v]) : (arkcos_vd){0};
      } else if (!hi) {
        arkcos_vd ch;
        memcpy(&ch, s->ch_m + mv, sizeof ch);
        re = ch * (a[0] + (x2[v] - 1.0) * c1 - p1[v]);
      } else {
        arkcos_vd S = a[0] + (x2[v] - 1.0) * c1 - p1[v];
        re = 0.5 * (1.0 + x) * S;
        im = (kind > 0 ? 0.5 : -0.5) * sn * S;
      }
      SFX(store_vd)(hr + mv, re);
      if (hi) SFX(store_vd)(hi + mv, im);
    }
  }
}

/* Symmetry of kernel samples at delta + 2 pi n / L: 1 about 0 (delta = 0),
 * +-2 about a half step (delta = +-pi / L), else 0. */
static int SFX(offset_kind)(double delta, int64_t L) {
  const double half_step = ARKCOS_PI / (double)L;
  if (delta == 0) return 1;
  if (fabs(delta - half_step) < 1e-12 * half_step) return 2;
  if (fabs(delta + half_step) < 1e-12 * half_step) return -2;
  return 0;
}

/* Multiplies (re + i im)[m], m < n, by e^{i m phi}: phasors from a table of
 * 16 steps times a block phasor that is recomputed exactly every 256 modes
 * (rounding stays near 1e-16 whatever n). */
static void SFX(rotate_rows)(R *re, R *im, int64_t n, double phi) {
  enum { B = 16 };
  double tc[B], ts[B];
  for (int k = 0; k < B; k++) {
    tc[k] = cos(k * phi);
    ts[k] = sin(k * phi);
  }
  const double sc = cos(B * phi), ss = sin(B * phi);
  double bc = 1, bs = 0;
  for (int64_t m0 = 0; m0 < n; m0 += B) {
    if (m0 % (16 * B) == 0) {
      bc = cos((double)m0 * phi);
      bs = sin((double)m0 * phi);
    }
    const int cnt = n - m0 < B ? (int)(n - m0) : B;
    R *xr = re + m0, *xi = im + m0;
#pragma omp simd
    for (int k = 0; k < cnt; k++) {
      const double zc = bc * tc[k] - bs * ts[k], zs = bc * ts[k] + bs * tc[k];
      const double a = (double)xr[k], b = (double)xi[k];
      xr[k] = (R)(a * zc - b * zs);
      xi[k] = (R)(a * zs + b * zc);
    }
    const double t = bc * sc - bs * ss;
    bs = bc * ss + bs * sc;
    bc = t;
  }
}

/* Spectrum on grid G (modes m < G->nm) of kernel samples hs[n - n0],
 * n0 <= n <= n1, taken at azimuths delta + 2 pi n / G->L, by Clenshaw sums;
 * |n| must not exceed ARKCOS_CHEB_LIMIT. */
static void SFX(samples_spectrum)(const SFX(kgrid_t) *G, const double *hs, int64_t n0, int64_t n1,
                                  double delta, R *hr, R *hi) {
  const double half_step = ARKCOS_PI / (double)G->L;
  double ca[ARKCOS_CHEB_LIMIT + 2], cb[ARKCOS_CHEB_LIMIT + 2];
  const int64_t nmax = n1 > -n0 ? n1 : -n0;
#define HS(n) ((n) >= n0 && (n) <= n1 ? hs[(n) - n0] : 0.0)
  int kind = SFX(offset_kind)(delta, G->L), K;
  (void)half_step;
  if (kind == 1) {
    K = (int)nmax;
    for (int k = 0; k <= K; k++) ca[k] = k ? HS(k) + HS(-k) : HS(0);
  } else if (kind == 2) { /* samples at (2n + 1) pi / L: pairs n, -1 - n */
    K = (int)(n1 > -1 - n0 ? n1 : -1 - n0);
    for (int k = 0; k <= K; k++) ca[k] = HS(k) + HS(-1 - k);
  } else if (kind == -2) {
    /* samples at (2n - 1) pi / L: pairs n, 1 - n */
    K = (int)(n1 - 1 > -n0 ? n1 - 1 : -n0);
    for (int k = 0; k <= K; k++) ca[k] = HS(k + 1) + HS(-k);
  } else {
    K = (int)nmax;
    for (int k = 0; k <= K; k++) {
      ca[k] = k ? HS(k) + HS(-k) : HS(0);
      cb[k] = k ? HS(k) - HS(-k) : 0;
    }
  }
#undef HS
  SFX(kernel_clenshaw)(G, G->nm, kind, ca, cb, K, hr, hi);
}

/* Kernel sample at delta + 2 pi n / G->L; e: 0, +-1 when delta is 0 or
 * +-pi / L (then sin(dphi / 2) comes from the grid's table, symmetric in
 * n -> -n, e -> -e), else 2. */
static inline double SFX(ksample)(const arkcos_plan *p, const SFX(kgrid_t) *G, double sdt2, double ss,
                                  double delta, int e, int64_t n) {
  double sh;
  if (e != 2) {
    int64_t k = 2 * n + e;
    if (k < 0) k = -k;
    if (k > G->L) k = 2 * G->L - k;
    sh = G->sh_k[k];
  } else {
    sh = sin(0.5 * (delta + 2 * ARKCOS_PI / (double)G->L * (double)n));
  }
  return arkcos_kfun_d2(&p->kf, 4.0 * (sdt2 + ss * sh * sh));
}

/* Kernel grid of ring pair (i, j): L for belt pairs (exact) and in paper
 * mode, else level s of q L / 2^s points by sqrt(sin th_i sin th_j). */
static int SFX(pair_grid)(const arkcos_plan *p, const SFX(cpu_state) *s, int i, int j) {
  const arkcos_ring *rg = p->geom->rings;
  if (s->nlev == 0 || (rg[i].nph == p->L && rg[j].nph == p->L)) return 0;
  const double r = sqrt(p->sin_theta[i] * p->sin_theta[j]);
  int lv = 0;
  while (lv + 1 < s->nlev && r * (double)((int64_t)2 << lv) <= ARKCOS_LEVEL_MARGIN * s->s_ref) lv++;
  return s->lev[lv];
}

/* Whether the kernel reaches ring j from ring i (some sample in its window) */
static int SFX(pair_reached)(const arkcos_plan *p, int i, int j, int64_t L) {
  const arkcos_ring *rg = p->geom->rings;
  double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  double half = arkcos_dphi_window(&p->kf, sdt * sdt, p->sin_theta[i] * p->sin_theta[j]);
  double delta = p->opt.mode == ARKCOS_MODE_PAPER ? 0.0 : rg[i].phi0 - rg[j].phi0;
  int64_t n0, n1;
  return arkcos_sample_range(half, delta, L, &n0, &n1) > 0;
}

/* The rotated frame (s->sym): ring spectra are multiplied by e^{-i m phi0_j}
 * after the FFT and accumulated spectra by e^{+i m phi0_i} before the fold,
 * so that a pair enters through G[m] = e^{-i m delta} H[m], the spectrum of
 * its kernel samples taken at their absolute azimuths. G is real when the
 * samples are symmetric about 0: a belt pair's true offsets delta = 0 or
 * +-pi/L (HEALPix, equal-offset grids) keep its exactness, and the other
 * pairs, whose kernel grids only resolve the kernel, are sampled at
 * delta = 0 instead of the pixels' offset. A real G halves the Clenshaw
 * sums (one chain instead of a cosine and a sine chain) and the reduction.
 * Used with the coarser cap grids; oversample 1 keeps the paper's 4 nside
 * algorithm with true offsets throughout, as the GPU backend has it. */
static int SFX(pair_real)(const arkcos_plan *p, const SFX(cpu_state) *s, int i, int j) {
  const arkcos_ring *rg = p->geom->rings;
  if (!s->sym) return 0;
  if (rg[i].nph != p->L || rg[j].nph != p->L) return 1;
  return SFX(offset_kind)(rg[i].phi0 - rg[j].phi0, p->L) != 0;
}

/* Kernel spectrum H_ij[m] of output ring i and input ring j into hr, hi,
 * ready to be accumulated (scaled and halved for the L grid when q > 1);
 * in the rotated frame G_ij, into hr alone where it is real (*real = 1).
 * *t_eval is the time the kernel samples were ready. Returns 0 when the
 * kernel does not reach ring j, else 1 + the grid used (its nm modes are
 * written). ws: the calling thread's workspace. */
static int SFX(pair_spectrum)(const arkcos_plan *p, const SFX(cpu_state) *s, int i, int j, R *ws, R *hr,
                              R *hi, double *t_eval, int *real) {
  const arkcos_ring *rg = p->geom->rings;
  const int gi = SFX(pair_grid)(p, s, i, j);
  const int re_only = SFX(pair_real)(p, s, i, j);
  *real = re_only;
  const SFX(kgrid_t) *G = &s->grid[gi];
  const int64_t L = G->L, nm = G->nm;
  double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  double sdt2 = sdt * sdt, ss = p->sin_theta[i] * p->sin_theta[j];
  double half = arkcos_dphi_window(&p->kf, sdt2, ss);
  double delta = p->opt.mode == ARKCOS_MODE_PAPER ? 0.0 : rg[i].phi0 - rg[j].phi0;
  if (s->sym && (rg[i].nph != p->L || rg[j].nph != p->L)) delta = 0; /* symmetric samples */
  int64_t n0, n1, cnt = arkcos_sample_range(half, delta, L, &n0, &n1);
  if (cnt == 0) return 0;
  const int kd = SFX(offset_kind)(delta, L), e = kd == 1 ? 0 : kd == 2 ? 1 : kd == -2 ? -1 : 2;
  int64_t nmax = n1 > -n0 ? n1 : -n0;
  /* an L-grid pair in a q L accumulation enters scaled by q (the 1/(q L)
   * normalisation); the factor goes into the samples, which is free */
  const double scale = (double)s->Lacc / (double)L;
  /* where a grid of L / 2 points exists, the Clenshaw sums run on it, once
   * for the even and once for the odd samples, so they may reach twice as
   * far (belt pairs' short single-chain sums stay on their own grid) */
  const int decim = G->half >= 0 && gi != 0 && nmax <= 2 * s->grid[G->half].cheb_max;
  if (cnt < L && (decim || nmax <= G->cheb_max)) {
    double hs[4 * ARKCOS_CHEB_LIMIT + 8];
    for (int64_t n = n0; n <= n1; n++)
      hs[n - n0] = scale * SFX(ksample)(p, G, sdt2, ss, delta, e, n);
    *t_eval = omp_get_wtime();
    if (decim) {
      /* H'[m] = E[m] + e^{-i pi m / L0} O[m] (decimation in azimuth): E, O the
       * L0-grid spectra of the even samples (offset delta) and the odd ones
       * (offset delta + pi / L0), L0-periodic and Hermitian */
      const SFX(kgrid_t) *C = &s->grid[G->half];
      const int64_t L0 = C->L;
      double he[2 * ARKCOS_CHEB_LIMIT + 4], ho[2 * ARKCOS_CHEB_LIMIT + 4];
      /* even n = 2u: u in [ceil(n0/2), floor(n1/2)];
       * odd n = 2u + 1: u in [ceil((n0-1)/2), floor((n1-1)/2)] */
      const int64_t e0 = -arkcos_floor_div2(-n0), e1 = arkcos_floor_div2(n1);
      const int64_t o0 = -arkcos_floor_div2(1 - n0), o1 = arkcos_floor_div2(n1 - 1);
      for (int64_t u = e0; u <= e1; u++) he[u - e0] = hs[2 * u - n0];
      for (int64_t u = o0; u <= o1; u++) ho[u - o0] = hs[2 * u + 1 - n0];
      /* scratch free while pairs are processed: the ring-input buffer for
       * E, the FFT-path spectrum buffer for O (2 nmp values each) */
      R *er = ws + WS(s, WS_RIN), *ei = er + s->nmp;
      R *orr = ws + WS(s, WS_KSPEC), *oi = orr + s->nmp;
      if (e1 >= e0) SFX(samples_spectrum)(C, he, e0, e1, delta, er, re_only ? NULL : ei);
      else memset(er, 0, sizeof(R) * 2 * (size_t)s->nmp);
      if (o1 >= o0) SFX(samples_spectrum)(C, ho, o0, o1, delta + ARKCOS_PI / (double)L0, orr, re_only ? NULL : oi);
      else memset(orr, 0, sizeof(R) * 2 * (size_t)s->nmp);
      const double *tc = G->cos_m, *ts = G->sin_m; /* cos, sin(pi m / L0) */
      const int64_t h0 = L0 / 2;
      if (re_only) {
        /* G = G_E + G_O: G_E even and L0-periodic, G_O (samples at odd
         * multiples of pi / L0) odd about L0 / 2 */
#pragma omp simd
        for (int64_t m = 0; m <= h0; m++) hr[m] = (R)(er[m] + orr[m]);
#pragma omp simd
        for (int64_t m = h0 + 1; m < nm; m++) hr[m] = (R)(er[L0 - m] - orr[L0 - m]);
        goto nyquist;
      }
#pragma omp simd
      for (int64_t m = 0; m <= h0; m++) {
        hr[m] = (R)(er[m] + tc[m] * orr[m] + ts[m] * oi[m]);
        hi[m] = (R)(ei[m] + tc[m] * oi[m] - ts[m] * orr[m]);
      }
      /* m > L0/2: E and O at L0 - m, conjugated (Hermitian) */
#pragma omp simd
      for (int64_t m = h0 + 1; m < nm; m++) {
        const int64_t mm = L0 - m;
        hr[m] = (R)(er[mm] + tc[m] * orr[mm] - ts[m] * oi[mm]);
        hi[m] = (R)(-ei[mm] - tc[m] * oi[mm] - ts[m] * orr[mm]);
      }
    } else {
      SFX(samples_spectrum)(G, hs, n0, n1, delta, hr, re_only ? NULL : hi);
      if (!re_only && s->sym && delta != 0) SFX(rotate_rows)(hr, hi, nm, -delta);
    }
  } else {
    R *kgrid = ws + WS(s, WS_KGRID), *kspec = ws + WS(s, WS_KSPEC);
    for (int64_t n = n0; n <= n1; n++)
      kgrid[arkcos_wrap(n, L)] =
          (R)(scale * SFX(ksample)(p, G, sdt2, ss, delta, e, n));
    *t_eval = omp_get_wtime();
    FFTWP(execute_dft_r2c)(G->kplan, kgrid, (FFTWP(complex) *)kspec);
    for (int64_t n = n0; n <= n1; n++) kgrid[arkcos_wrap(n, L)] = 0;
    if (s->sym && delta != 0) { /* G = e^{-i m delta} H (scratch: the ring-input rows) */
      R *tr = ws + WS(s, WS_RIN), *ti = tr + s->nmp;
      for (int64_t m = 0; m < nm; m++) {
        tr[m] = kspec[2 * m];
        ti[m] = kspec[2 * m + 1];
      }
      SFX(rotate_rows)(tr, ti, nm, -delta);
      memcpy(hr, tr, sizeof(R) * (size_t)nm);
      if (!re_only) memcpy(hi, ti, sizeof(R) * (size_t)nm);
    } else {
      for (int64_t m = 0; m < nm; m++) {
        hr[m] = kspec[2 * m];
        if (!re_only) hi[m] = kspec[2 * m + 1];
      }
    }
  }
nyquist:
  if (L != s->Lacc && L % 2 == 0) { /* the L grid's Nyquist mode is +L/2 and -L/2 */
    hr[L / 2] *= (R)0.5;
    if (!re_only) hi[L / 2] *= (R)0.5;
  }
  return 1 + gi;
}

/* Output ring io from its accumulated spectrum (ar, ai; amax modes; ar
 * and ai are modified): fold, inverse FFT, into out (enhanced mode). */
static void SFX(fold_out)(const arkcos_plan *p, const SFX(cpu_state) *s, R *ws, int io, R *ar, R *ai,
                          int64_t amax, double *out) {
  const arkcos_ring *rg = p->geom->rings;
  const int64_t N = rg[io].nph, L = s->Lacc;
  R *rspec = ws + WS(s, WS_RSPEC), *rout = ws + WS(s, WS_ROUT);
  /* fold onto the ring's N / 2 + 1 bins (arkcos_fold's rule, by
   * periods): P[r] = sum_p A[r + p N] over the modes m >= 0, then
   * bin r gets P[r] + conj(P[N - r]) (the negative modes), less
   * A[0] counted twice at r = 0. In the rotated frame A = e^{i m
   * phi0} A', so P[r] = e^{i r phi0} sum_p c^p A'[r + p N] with
   * c = e^{i N phi0}. The 1 / L_acc normalisation goes in here. */
  R *pr = ws + WS(s, WS_RIN), *pi = ws + WS(s, WS_KSPEC); /* N values each */
  if (L % 2 == 0 && L / 2 < amax) { /* the Nyquist mode is +L/2 and -L/2 */
    ar[L / 2] *= (R)0.5;
    ai[L / 2] *= (R)0.5;
  }
  const double phi = s->sym ? rg[io].phi0 : 0;
  const int64_t np = amax < N ? amax : N;
  memcpy(pr, ar, sizeof(R) * (size_t)np);
  memcpy(pi, ai, sizeof(R) * (size_t)np);
  if (np < N) {
    memset(pr + np, 0, sizeof(R) * (size_t)(N - np));
    memset(pi + np, 0, sizeof(R) * (size_t)(N - np));
  }
  for (int64_t m0 = N, per = 1; m0 < amax; m0 += N, per++) {
    const int64_t cnt = amax - m0 < N ? amax - m0 : N;
    const double cr = cos((double)(per * N) * phi), ci = sin((double)(per * N) * phi);
    const R *br = ar + m0, *bi = ai + m0;
    if (fabs(ci) < 1e-14) {
      const R c = (R)cr;
#pragma omp simd
      for (int64_t m = 0; m < cnt; m++) {
        pr[m] += c * br[m];
        pi[m] += c * bi[m];
      }
    } else {
#pragma omp simd
      for (int64_t m = 0; m < cnt; m++) {
        const double a = (double)br[m], b = (double)bi[m];
        pr[m] += (R)(a * cr - b * ci);
        pi[m] += (R)(a * ci + b * cr);
      }
    }
  }
  if (phi != 0) SFX(rotate_rows)(pr, pi, N, phi);
  const R sc = (R)(1.0 / (double)L);
  const int64_t h = N / 2;
  rspec[0] = sc * (2 * pr[0] - ar[0]);
  rspec[1] = 0;
#pragma omp simd
  for (int64_t r = 1; r <= h; r++) {
    rspec[2 * r] = sc * (pr[r] + pr[N - r]);
    rspec[2 * r + 1] = sc * (pi[r] - pi[N - r]);
  }
  if (N % 2 == 0 && h > 0) rspec[2 * h + 1] = 0;
  double *o = out + rg[io].ofs;
  if (sizeof(R) == sizeof(double) && FFTWP(alignment_of)((R *)(void *)o) == 0) {
    FFTWP(execute_dft_c2r)(s->c2r[io], (FFTWP(complex) *)rspec, (R *)(void *)o); /* straight into the map */
  } else {
    FFTWP(execute_dft_c2r)(s->c2r[io], (FFTWP(complex) *)rspec, rout);
    for (int64_t k = 0; k < N; k++) o[k] = (double)rout[k];
  }
}

/* Pair symmetry. In the rotated frame G_ij = G_ji (the pair's kernel grid,
 * samples and sums do not depend on its order, bit for bit), and the mirror
 * pair has the same G. So task t (ring i, mirror i2) computes G only for
 * input rings j whose task u = tidx[j] is t or later, and adds it to both
 * ends: A_i += G S_j, A_i2 += G S_j' (j' the mirror of j), and, for u > t,
 * A_j += G S_i, A_j' += G S_i2. Each task's accumulators (a slot: rows a1r,
 * a1i, a2r, a2i) then collect from tasks t - w .. t. A thread takes a chunk
 * of consecutive tasks [c0, c1) with a ring of w + 1 slots: first a
 * prologue over tasks c0 - w .. c0 - 1 adds only what their pairs give the
 * chunk's first tasks, then each task is complete once processed and is
 * folded at once. Prologue pairs are computed twice (by this chunk and the
 * previous one), a few per cent of all pairs with chunks of >= 2 (w + 1)
 * tasks. The chunking is fixed at plan time, so results do not depend on
 * the threads. */
static inline R *SFX(slot)(const SFX(cpu_state) *s, int t, int tid) {
  return s->tslots + ((size_t)tid * (size_t)(s->w + 1) + (size_t)(t % (s->w + 1))) * s->slot_sz;
}

static void SFX(slot_zero)(const arkcos_plan *p, const SFX(cpu_state) *s, R *a, int t) {
  const int i = p->task[t], two = p->mirror[i] >= 0 && p->mirror[i] != i;
  const size_t n = (size_t)s->task_nm[t];
  for (int r = 0; r < (two ? 4 : 2); r++) memset(a + (size_t)r * s->nmp, 0, sizeof(R) * n);
}

/* Kernel spectrum of pair (i, j) of task t: from the cache, or computed
 * into hr, hi. Sets *kr, *ki (its rows), *real, and the times the samples
 * (*t1) and the spectrum (*t2) were ready; returns 0 when the kernel does
 * not reach ring j, else 1 + the grid used. */
static int SFX(pair_row)(const arkcos_plan *p, const SFX(cpu_state) *s, int t, int i, int j, R *ws, R *hr, R *hi,
                         const R **kr, const R **ki, int *real, double t0, double *t1, double *t2) {
  int used;
  if (s->hcache) {
    const size_t pk = s->pair_ofs[t] + (size_t)(j - p->jlo[i]);
    if (!(used = s->pair_used[pk])) return 0;
    *real = used >> 7;
    used &= 0x7f;
    *kr = s->hcache + s->hofs[pk];
    *ki = *kr + s->grid[used - 1].rowlen;
    *t1 = *t2 = t0;
    return used;
  }
  if (!(used = SFX(pair_spectrum)(p, s, i, j, ws, hr, hi, t1, real))) return 0;
  *kr = hr;
  *ki = hi;
  *t2 = omp_get_wtime();
  return used;
}

/* One pair (i, j) of task t, j in task u >= t, G in kr (len modes): adds
 * to task t's slot A (own, unless a prologue) and, for u > t, to task u's
 * slot B (far, unless u is past the chunk). */
static void SFX(pair_reduce)(const arkcos_plan *p, const SFX(cpu_state) *s, int t, int j, int u, const R *kr,
                             int64_t len, R *A, R *B, int own, int far) {
  const size_t nmp = (size_t)s->nmp;
  const int i = p->task[t], i2 = p->mirror[i];
  const int two = i2 >= 0 && i2 != i;
  const int jm = two ? p->mirror[j] : j;
  const R *sr = s->spec_re + s->spec_ofs[j], *si = s->spec_im + s->spec_ofs[j];
  const R *qr = s->spec_re + s->spec_ofs[jm], *qi = s->spec_im + s->spec_ofs[jm];
  R *a1r = A, *a1i = A + nmp, *a2r = A + 2 * nmp, *a2i = A + 3 * nmp;
  if (u == t || !far) { /* j is i or i2 (both ends are this task's), or the far end is not needed */
    if (!own) return;
    if (two) {
#pragma omp simd
      for (int64_t m = 0; m < len; m++) {
        const R g = kr[m];
        a1r[m] += g * sr[m];
        a1i[m] += g * si[m];
        a2r[m] += g * qr[m];
        a2i[m] += g * qi[m];
      }
    } else {
#pragma omp simd
      for (int64_t m = 0; m < len; m++) {
        a1r[m] += kr[m] * sr[m];
        a1i[m] += kr[m] * si[m];
      }
    }
    return;
  }
  /* the far end: task u's rows for j and j' (its ring or its mirror; a task
   * without mirror has one pair of rows) */
  const R *s1r = s->spec_re + s->spec_ofs[i], *s1i = s->spec_im + s->spec_ofs[i];
  const R *s2r = two ? s->spec_re + s->spec_ofs[i2] : s1r, *s2i = two ? s->spec_im + s->spec_ofs[i2] : s1i;
  const int uring = p->task[u], utwo = p->mirror[uring] >= 0 && p->mirror[uring] != uring;
  R *bjr = B, *bji = B + nmp, *bkr = B + 2 * nmp, *bki = B + 3 * nmp;
  if (utwo && j != uring) { /* j is u's mirror ring */
    bjr = B + 2 * nmp;
    bji = B + 3 * nmp;
    bkr = B;
    bki = B + nmp;
  }
  if (!own) { /* prologue: the far end only */
    if (two && utwo) {
#pragma omp simd
      for (int64_t m = 0; m < len; m++) {
        const R g = kr[m];
        bjr[m] += g * s1r[m];
        bji[m] += g * s1i[m];
        bkr[m] += g * s2r[m];
        bki[m] += g * s2i[m];
      }
    } else if (two) {
#pragma omp simd
      for (int64_t m = 0; m < len; m++) {
        const R g = kr[m];
        bjr[m] += g * (s1r[m] + s2r[m]);
        bji[m] += g * (s1i[m] + s2i[m]);
      }
    } else {
#pragma omp simd
      for (int64_t m = 0; m < len; m++) {
        bjr[m] += kr[m] * s1r[m];
        bji[m] += kr[m] * s1i[m];
      }
    }
    return;
  }
  if (two && utwo) {
#pragma omp simd
    for (int64_t m = 0; m < len; m++) {
      const R g = kr[m];
      a1r[m] += g * sr[m];
      a1i[m] += g * si[m];
      a2r[m] += g * qr[m];
      a2i[m] += g * qi[m];
      bjr[m] += g * s1r[m];
      bji[m] += g * s1i[m];
      bkr[m] += g * s2r[m];
      bki[m] += g * s2i[m];
    }
  } else if (two) { /* u without mirror (the equator): both ends land on it */
#pragma omp simd
    for (int64_t m = 0; m < len; m++) {
      const R g = kr[m];
      a1r[m] += g * sr[m];
      a1i[m] += g * si[m];
      a2r[m] += g * qr[m];
      a2i[m] += g * qi[m];
      bjr[m] += g * (s1r[m] + s2r[m]);
      bji[m] += g * (s1i[m] + s2i[m]);
    }
  } else {
#pragma omp simd
    for (int64_t m = 0; m < len; m++) {
      const R g = kr[m];
      a1r[m] += g * sr[m];
      a1i[m] += g * si[m];
      bjr[m] += g * s1r[m];
      bji[m] += g * s1i[m];
    }
  }
}

static void SFX(pairsym_stage)(const arkcos_plan *p, const SFX(cpu_state) *s, double *out, double st[4]) {
  const int w = s->w;
#pragma omp parallel num_threads(s->nthreads) reduction(+ : st[:4])
  {
    const int tid = omp_get_thread_num();
    R *ws = s->work + (size_t)tid * s->wstride;
    R *hr = ws + WS(s, WS_HR), *hi = ws + WS(s, WS_HI);
    const size_t nmp = (size_t)s->nmp;
#pragma omp for schedule(dynamic, 1)
    for (int c = 0; c < s->nchunk; c++) {
      const int c0 = s->chunk0[c], c1 = s->chunk0[c + 1];
      for (int t = c0; t <= c0 + w && t < c1; t++) SFX(slot_zero)(p, s, SFX(slot)(s, t, tid), t);
      for (int t = c0 - w > 0 ? c0 - w : 0; t < c1; t++) {
        double t0 = omp_get_wtime();
        const int own = t >= c0; /* else the prologue */
        if (t > c0 && t + w < c1) SFX(slot_zero)(p, s, SFX(slot)(s, t + w, tid), t + w);
        const int i = p->task[t], i2 = p->mirror[i];
        const int two = i2 >= 0 && i2 != i;
        R *A = own ? SFX(slot)(s, t, tid) : NULL;
        for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
          const int u = s->tidx[j];
          if (u < t || (!own && u < c0)) continue;
          double t1, t2;
          const R *kr, *ki;
          int real;
          const int used = SFX(pair_row)(p, s, t, i, j, ws, hr, hi, &kr, &ki, &real, t0, &t1, &t2);
          if (!used) continue;
          st[0] += t1 - t0;
          st[1] += t2 - t1;
          const int far = u > t && u < c1;
          SFX(pair_reduce)(p, s, t, j, u, kr, s->grid[used - 1].nm, A, far ? SFX(slot)(s, u, tid) : NULL, own,
                           far);
          t0 = omp_get_wtime();
          st[2] += t0 - t2;
        }
        if (own) { /* complete: fold now */
          SFX(fold_out)(p, s, ws, i, A, A + nmp, s->task_nm[t], out);
          if (two) SFX(fold_out)(p, s, ws, i2, A + 2 * nmp, A + 3 * nmp, s->task_nm[t], out);
        }
        st[3] += omp_get_wtime() - t0;
      }
    }
  }
}

static int SFX(cpu_execute)(arkcos_plan *p, const double *in, double *out, arkcos_error *err) {
  (void)err;
  SFX(cpu_state) *s = (SFX(cpu_state) *)p->impl;
  const arkcos_ring *rg = p->geom->rings;
  const int nr = p->geom->nrings, paper = p->opt.mode == ARKCOS_MODE_PAPER;
  const int64_t L = s->Lacc;
  double t_start = omp_get_wtime();

  /* 1. ring FFTs, spectra extended to the kernel grid's L/2 + 1 modes */
#pragma omp parallel for schedule(dynamic, 4) num_threads(s->nthreads)
  for (int j = 0; j < nr; j++) {
    R *ws = s->work + (size_t)omp_get_thread_num() * s->wstride;
    R *rin = ws + WS(s, WS_RIN), *sp = ws + WS(s, WS_RSPEC);
    R *sre = s->spec_re + s->spec_ofs[j], *sim = s->spec_im + s->spec_ofs[j];
    const int64_t N = rg[j].nph, nmj = s->ring_nm[j];
    const double w = rg[j].weight;
    const double *src = in + rg[j].ofs;
    R wf = 1; /* the weight, where it still has to be applied */
    if (sizeof(R) == sizeof(double) && !paper && FFTWP(alignment_of)((R *)(uintptr_t)src) == 0) {
      /* double precision, input aligned as planned: transform the map in
       * place of a copy (an out-of-place r2c keeps its input), weight after */
      FFTWP(execute_dft_r2c)(s->r2c[j], (R *)(uintptr_t)src, (FFTWP(complex) *)sp);
      wf = (R)w;
    } else {
      for (int64_t k = 0; k < N; k++) rin[k] = (R)(w * src[k]);
      FFTWP(execute_dft_r2c)(s->r2c[j], rin, (FFTWP(complex) *)sp);
    }
    if (!paper) {
      /* the DFT of a sampled ring is periodic in m: one period from the
       * half spectrum (Hermitian), rotated in the rotated frame, then
       * S[m + p N] = c^p S[m], c = e^{-i N phi0} there and 1 otherwise */
      const int64_t np = nmj < N ? nmj : N, h = N / 2;
      for (int64_t m = 0; m < np && m <= h; m++) {
        sre[m] = wf * sp[2 * m];
        sim[m] = wf * sp[2 * m + 1];
      }
#pragma omp simd
      for (int64_t m = h + 1; m < np; m++) {
        sre[m] = wf * sp[2 * (N - m)];
        sim[m] = -wf * sp[2 * (N - m) + 1];
      }
      const double phi = s->sym ? rg[j].phi0 : 0;
      if (phi != 0) SFX(rotate_rows)(sre, sim, np, -phi);
      for (int64_t m0 = N, per = 1; m0 < nmj; m0 += N, per++) {
        const int64_t cnt = nmj - m0 < N ? nmj - m0 : N;
        const double cr = cos((double)(per * N) * phi), ci = -sin((double)(per * N) * phi);
        R *dr = sre + m0, *di = sim + m0;
        if (fabs(ci) < 1e-14) { /* c = +-1 (HEALPix caps: -1) */
          const R c = (R)cr;
#pragma omp simd
          for (int64_t m = 0; m < cnt; m++) {
            dr[m] = c * sre[m];
            di[m] = c * sim[m];
          }
        } else {
#pragma omp simd
          for (int64_t m = 0; m < cnt; m++) {
            const double a = (double)sre[m], b = (double)sim[m];
            dr[m] = (R)(a * cr - b * ci);
            di[m] = (R)(a * ci + b * cr);
          }
        }
      }
    } else {
      /* paper: align rings by phase rotation (Eq. 8), half weight on the
       * Nyquist mode (it stands for +N/2 and -N/2), zero padding above */
      for (int64_t m = 0; m <= N / 2 && m < nmj; m++) {
        double c = cos(m * rg[j].phi0), sn = -sin(m * rg[j].phi0);
        double re = sp[2 * m], im = sp[2 * m + 1];
        double f = (2 * m == N) ? 0.5 : 1.0;
        sre[m] = (R)(f * (re * c - im * sn));
        sim[m] = (R)(f * (re * sn + im * c));
      }
      for (int64_t m = N / 2 + 1; m < nmj; m++) sre[m] = sim[m] = 0;
    }
  }
  double t_mapfft = omp_get_wtime() - t_start;

  /* 2. per output ring (and its mirror): kernel samples, their spectra,
   * the reduction over input rings; then fold and inverse FFT */
  double st[4] = {0, 0, 0, 0}; /* kernel_eval, kernel_fft, reduction, map_ifft */
  if (s->pairsym) SFX(pairsym_stage)(p, s, out, st);
  else
#pragma omp parallel num_threads(s->nthreads) reduction(+ : st[:4])
  {
    R *ws = s->work + (size_t)omp_get_thread_num() * s->wstride;
    R *hr = ws + WS(s, WS_HR), *hi = ws + WS(s, WS_HI);
    R *a1r = ws + WS(s, WS_A1R), *a1i = ws + WS(s, WS_A1I);
    R *a2r = ws + WS(s, WS_A2R), *a2i = ws + WS(s, WS_A2I);
    R *rspec = ws + WS(s, WS_RSPEC), *rout = ws + WS(s, WS_ROUT);
#pragma omp for schedule(dynamic, 1)
    for (int t = 0; t < p->ntasks; t++) {
      const int i = p->task[t], i2 = p->mirror[i];
      const int two = i2 >= 0 && i2 != i;
      const int64_t amax = s->task_nm[t]; /* modes of A_i that pairs reach */
      double t0 = omp_get_wtime();
      memset(a1r, 0, sizeof(R) * amax);
      memset(a1i, 0, sizeof(R) * amax);
      if (two) {
        memset(a2r, 0, sizeof(R) * amax);
        memset(a2i, 0, sizeof(R) * amax);
      }
      for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
        double t1, t2;
        const R *kr, *ki;
        int real;
        const int used = SFX(pair_row)(p, s, t, i, j, ws, hr, hi, &kr, &ki, &real, t0, &t1, &t2);
        if (!used) continue;
        const int64_t len = s->grid[used - 1].nm; /* modes this pair fills */
        st[0] += t1 - t0;
        st[1] += t2 - t1;
        const R *sr = s->spec_re + s->spec_ofs[j], *si = s->spec_im + s->spec_ofs[j];
        if (real) { /* real G: half the multiplications (a1r .. a2i are consecutive rows) */
          SFX(pair_reduce)(p, s, t, j, t, kr, len, a1r, NULL, 1, 0);
        } else if (two) { /* ring and mirror in one pass: H read once */
          const R *qr = s->spec_re + s->spec_ofs[p->mirror[j]], *qi = s->spec_im + s->spec_ofs[p->mirror[j]];
#pragma omp simd
          for (int64_t m = 0; m < len; m++) {
            const R hr_ = kr[m], hi_ = ki[m];
            a1r[m] += hr_ * sr[m] - hi_ * si[m];
            a1i[m] += hr_ * si[m] + hi_ * sr[m];
            a2r[m] += hr_ * qr[m] - hi_ * qi[m];
            a2i[m] += hr_ * qi[m] + hi_ * qr[m];
          }
        } else {
#pragma omp simd
          for (int64_t m = 0; m < len; m++) {
            a1r[m] += kr[m] * sr[m] - ki[m] * si[m];
            a1i[m] += kr[m] * si[m] + ki[m] * sr[m];
          }
        }
        t0 = omp_get_wtime();
        st[2] += t0 - t2;
      }
      for (int pass = 0; pass < 1 + two; pass++) {
        const int io = pass ? i2 : i;
        R *ar = pass ? a2r : a1r, *ai = pass ? a2i : a1i;
        const int64_t N = rg[io].nph;
        if (!paper) {
          SFX(fold_out)(p, s, ws, io, ar, ai, amax, out);
          continue; /* next pass */
        }
        {
          /* paper: rotate back by the ring's offset, truncate at its
           * Nyquist frequency */
          for (int64_t m = 0; m <= N / 2; m++) {
            double c = cos(m * rg[io].phi0), sn = sin(m * rg[io].phi0);
            double re = ar[m] * c - ai[m] * sn;
            double im = ar[m] * sn + ai[m] * c;
            if (m > 0 && 2 * m == N) { /* +N/2 and -N/2 meet */
              re *= 2;
              im = 0;
            }
            rspec[2 * m] = (R)re;
            rspec[2 * m + 1] = (R)im;
          }
        }
        FFTWP(execute_dft_c2r)(s->c2r[io], (FFTWP(complex) *)rspec, rout);
        const double scale = 1.0 / (double)L;
        double *o = out + rg[io].ofs;
        for (int64_t k = 0; k < N; k++) o[k] = scale * (double)rout[k];
      }
      double t3 = omp_get_wtime();
      st[3] += t3 - t0;
    }
  }
  double total = omp_get_wtime() - t_start;
  arkcos_stage_times *T = &p->last;
  memset(T, 0, sizeof *T);
  /* per-thread sums averaged over threads approximate wall-clock shares */
  T->map_fft = t_mapfft;
  T->kernel_eval = st[0] / s->nthreads;
  T->kernel_fft = st[1] / s->nthreads;
  T->reduction = st[2] / s->nthreads;
  T->map_ifft = st[3] / s->nthreads;
  T->total = total;
  T->other = total - (T->map_fft + T->kernel_eval + T->kernel_fft + T->reduction + T->map_ifft);
  if (T->other < 0) T->other = 0;
  return ARKCOS_OK;
}

/* cache_kernel_spectra: every ring pair's kernel spectrum computed once, so
 * that each further map costs only the FFTs and the reduction. */
static int SFX(fill_cache)(arkcos_plan *p, SFX(cpu_state) *s, arkcos_error *err) {
  size_t npairs = 0, nvals = 0;
  s->pair_ofs = (size_t *)malloc(sizeof(size_t) * (size_t)p->ntasks);
  if (!s->pair_ofs) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  for (int t = 0; t < p->ntasks; t++) {
    s->pair_ofs[t] = npairs;
    npairs += (size_t)(p->jhi[p->task[t]] - p->jlo[p->task[t]] + 1);
  }
  s->pair_used = (unsigned char *)calloc(npairs ? npairs : 1, 1);
  s->hofs = (size_t *)calloc(npairs ? npairs : 1, sizeof(size_t));
  if (!s->pair_used || !s->hofs) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  /* rows only for the pairs the kernel reaches, each as long as its grid's */
  for (int t = 0; t < p->ntasks; t++) {
    const int i = p->task[t];
    for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
      const int g = SFX(pair_grid)(p, s, i, j);
      const size_t pk = s->pair_ofs[t] + (size_t)(j - p->jlo[i]);
      s->hofs[pk] = nvals; /* a real G has no imaginary row */
      if (s->pairsym && s->tidx[j] < t) continue; /* the other end's */
      if (SFX(pair_reached)(p, i, j, s->grid[g].L))
        nvals += (SFX(pair_real)(p, s, i, j) ? 1 : 2) * (size_t)s->grid[g].rowlen;
    }
  }
  double bytes = (double)nvals * sizeof(R);
  s->hcache = (R *)FFTWP(malloc)(nvals ? sizeof(R) * nvals : 1);
  if (!s->hcache)
    return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory: cached kernel spectra need %.1f MB", bytes / 1e6);
  p->bytes += (size_t)bytes + npairs * (1 + sizeof(size_t));
#pragma omp parallel for schedule(dynamic, 1) num_threads(s->nthreads)
  for (int t = 0; t < p->ntasks; t++) {
    R *ws = s->work + (size_t)omp_get_thread_num() * s->wstride;
    const int i = p->task[t];
    for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
      const size_t pk = s->pair_ofs[t] + (size_t)(j - p->jlo[i]);
      const int g = SFX(pair_grid)(p, s, i, j);
      if (s->pairsym && s->tidx[j] < t) continue;
      if (!SFX(pair_reached)(p, i, j, s->grid[g].L)) continue;
      R *hr = s->hcache + s->hofs[pk];
      double te;
      int real, used = SFX(pair_spectrum)(p, s, i, j, ws, hr, hr + s->grid[g].rowlen, &te, &real);
      s->pair_used[pk] = (unsigned char)(used | (used && real ? 0x80 : 0));
    }
  }
  return ARKCOS_OK;
}

/* Adds a kernel grid of length L (or finds one); returns its index or -1. */
static int SFX(grid_add)(SFX(cpu_state) *s, int64_t L, size_t *bytes) {
  for (int g = 0; g < s->ngrid; g++)
    if (s->grid[g].L == L) return g;
  if (s->ngrid == ARKCOS_MAX_GRIDS) return -1;
  SFX(kgrid_t) *G = &s->grid[s->ngrid];
  G->L = L;
  G->nm = L / 2 + 1;
  G->rowlen = (G->nm + 1 + 47) / 48 * 48; /* whole Clenshaw blocks, 64-byte multiples */
  /* the direct cosine sum costs ~nmax L/2 multiply-adds (vectorised), the
   * FFT ~2.5 L log2 L flops: switch at a few times log2 L */
  int lg = 0;
  while (((int64_t)1 << lg) < L) lg++;
  G->cheb_max = 2 * lg < ARKCOS_CHEB_LIMIT ? 2 * lg : ARKCOS_CHEB_LIMIT;
  G->half = -1;
  G->cos_m = (double *)FFTWP(malloc)(sizeof(double) * (size_t)G->rowlen);
  G->sin_m = (double *)FFTWP(malloc)(sizeof(double) * (size_t)G->rowlen);
  G->ch_m = (double *)FFTWP(malloc)(sizeof(double) * (size_t)G->rowlen);
  G->sh_k = (double *)FFTWP(malloc)(sizeof(double) * (size_t)(L + 1));
  if (!G->cos_m || !G->sin_m || !G->ch_m || !G->sh_k) return -1;
  for (int64_t k = 0; k <= L; k++) G->sh_k[k] = sin(ARKCOS_PI * (double)k / (2.0 * (double)L));
  *bytes += sizeof(double) * (size_t)(L + 1);
  for (int64_t m = 0; m < G->rowlen; m++) {
    G->cos_m[m] = m < G->nm ? cos(2 * ARKCOS_PI * (double)m / (double)L) : 0;
    G->sin_m[m] = m < G->nm ? sin(2 * ARKCOS_PI * (double)m / (double)L) : 0;
    G->ch_m[m] = m < G->nm ? cos(ARKCOS_PI * (double)m / (double)L) : 0;
  }
  *bytes += 3 * sizeof(double) * (size_t)G->rowlen;
  return s->ngrid++;
}

int SFX(arkcos_cpu_create)(arkcos_plan *p, arkcos_error *err) {
  SFX(cpu_state) *s = (SFX(cpu_state) *)calloc(1, sizeof *s);
  if (!s) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  p->impl = s;
  p->execute = SFX(cpu_execute);
  p->destroy = SFX(cpu_destroy);
  s->nthreads = p->opt.threads > 0 ? p->opt.threads : omp_get_max_threads();
  const int nr = p->geom->nrings;
  const arkcos_ring *rg = p->geom->rings;
  /* oversampling of cap pairs: enhanced mode only, and only where rings
   * of different lengths meet */
  int uniform = 1;
  for (int j = 0; j < nr; j++) uniform &= rg[j].nph == p->L;
  const int paper = p->opt.mode == ARKCOS_MODE_PAPER;
  s->q = p->opt.oversample > 0 ? p->opt.oversample : arkcos_auto_oversample(&p->kf, p->L);
  if (s->q > 8) s->q = 8;
  if (paper || uniform) s->q = 1;
  s->Lacc = s->q * p->L;
  s->nmacc = s->Lacc / 2 + 1;
  size_t bytes = 0;
  /* kernel grids: L, then the cap-pair levels q L / 2^s down to 16 points */
  int ok = SFX(grid_add)(s, p->L, &bytes) == 0;
  /* coarser cap-pair grids: not when oversample is 1 (the 4 nside grid
   * everywhere, as DESIGN.md and the GPU backend have it), nor for kernels
   * with a large jump at the cutoff (a top-hat: the jump, not the width,
   * sets the spectrum there) */
  const int coarsen = p->opt.oversample != 1 && arkcos_cut_level(&p->kf) <= 1e-3;
  s->sym = coarsen && !paper && !uniform;
  if (!paper && !uniform) {
    for (int lv = 0; lv < ARKCOS_MAX_GRIDS - 1 && ok; lv++) {
      const int64_t Ls = s->Lacc >> lv;
      if (lv > 0 && (!coarsen || s->Lacc % ((int64_t)2 << lv) != 0 || Ls < 16)) break;
      int g = SFX(grid_add)(s, Ls, &bytes);
      ok = g >= 0;
      s->lev[s->nlev++] = g;
    }
    for (int j = 0; j < nr; j++)
      if (rg[j].nph < p->L && p->sin_theta[j] > s->s_ref) s->s_ref = p->sin_theta[j];
  }
  for (int g = 0; g < s->ngrid && ok; g++)
    for (int h = 0; h < s->ngrid; h++)
      if (2 * s->grid[h].L == s->grid[g].L) s->grid[g].half = h;
  if (!ok) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  s->nmp = s->grid[s->ngrid - 1].rowlen;
  for (int g = 0; g < s->ngrid; g++)
    if (s->grid[g].rowlen > s->nmp) s->nmp = s->grid[g].rowlen;
  /* which modes each ring's spectrum and each task's accumulators need */
  s->ring_nm = (int64_t *)calloc((size_t)nr, sizeof(int64_t));
  s->spec_ofs = (size_t *)calloc((size_t)nr + 1, sizeof(size_t));
  s->task_nm = (int64_t *)calloc((size_t)p->ntasks, sizeof(int64_t));
  if (!s->ring_nm || !s->spec_ofs || !s->task_nm) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  for (int t = 0; t < p->ntasks; t++) {
    const int i = p->task[t], i2 = p->mirror[i];
    for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
      const SFX(kgrid_t) *G = &s->grid[SFX(pair_grid)(p, s, i, j)];
      if (!SFX(pair_reached)(p, i, j, G->L)) continue;
      if (G->nm > s->task_nm[t]) s->task_nm[t] = G->nm;
      if (G->nm > s->ring_nm[j]) s->ring_nm[j] = G->nm;
      if (i2 >= 0 && i2 != i && G->nm > s->ring_nm[p->mirror[j]]) s->ring_nm[p->mirror[j]] = G->nm;
    }
  }
  /* pair symmetry: the task of every ring; the farthest task a task's pairs
   * reach (w); every reached pair real and reached from both ends */
  s->tidx = (int *)malloc(sizeof(int) * (size_t)nr);
  if (!s->tidx) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  for (int t = 0; t < p->ntasks; t++) {
    s->tidx[p->task[t]] = t;
    if (p->mirror[p->task[t]] >= 0) s->tidx[p->mirror[p->task[t]]] = t;
  }
  int psym = s->sym;
  for (int t = 0; t < p->ntasks && psym; t++) {
    const int i = p->task[t];
    for (int j = p->jlo[i]; j <= p->jhi[i] && psym; j++) {
      const int g = SFX(pair_grid)(p, s, i, j);
      const int rij = SFX(pair_reached)(p, i, j, s->grid[g].L);
      if (s->tidx[j] < t) continue;
      psym = g == SFX(pair_grid)(p, s, j, i) && rij == SFX(pair_reached)(p, j, i, s->grid[g].L) &&
             (!rij || SFX(pair_real)(p, s, i, j));
      if (rij && s->tidx[j] - t > s->w) s->w = s->tidx[j] - t;
    }
  }
  /* chunks of >= 2 (w + 1) tasks (prologues under a quarter of a chunk's
   * pairs), at most 32 (under 7% for compact kernels); fixed, so the
   * summation order does not depend on the threads. With fewer than 4 the
   * threads would idle, so then each pair is computed twice, as without the
   * symmetry. Each thread's ring of w + 1 slots is counted in the plan. */
  s->slot_sz = 4 * (size_t)s->nmp;
  s->nchunk = 0;
  if (s->w > 0) {
    int len = 2 * (s->w + 1);
    if (len < (p->ntasks + 31) / 32) len = (p->ntasks + 31) / 32;
    s->nchunk = p->ntasks / len;
  }
  s->pairsym = psym && s->nchunk >= 4;
  if (s->pairsym) {
    s->chunk0 = (int *)malloc(sizeof(int) * (size_t)(s->nchunk + 1));
    s->tslots = (R *)FFTWP(malloc)(sizeof(R) * s->slot_sz * (size_t)((s->w + 1) * s->nthreads));
    if (!s->chunk0 || !s->tslots) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
    for (int c = 0; c <= s->nchunk; c++) s->chunk0[c] = (int)((int64_t)p->ntasks * c / s->nchunk);
    bytes += sizeof(R) * s->slot_sz * (size_t)((s->w + 1) * s->nthreads);
  }
  for (int j = 0; j < nr; j++) /* rows of 64-byte multiples */
    s->spec_ofs[j + 1] = s->spec_ofs[j] + (size_t)((s->ring_nm[j] + 7) / 8 * 8);
  const size_t spec_n = s->spec_ofs[nr];
  s->wstride = WS(s, WS_SIZE);
  s->spec_re = (R *)FFTWP(malloc)(sizeof(R) * (spec_n ? spec_n : 1));
  s->spec_im = (R *)FFTWP(malloc)(sizeof(R) * (spec_n ? spec_n : 1));
  s->work = (R *)FFTWP(malloc)(sizeof(R) * s->wstride * (size_t)s->nthreads);
  s->r2c = (FFTWP(plan) *)calloc((size_t)nr, sizeof(FFTWP(plan)));
  s->c2r = (FFTWP(plan) *)calloc((size_t)nr, sizeof(FFTWP(plan)));
  if (!s->spec_re || !s->spec_im || !s->work || !s->r2c || !s->c2r)
    return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory (ring spectra need %.1f MB)",
                       2 * sizeof(R) * (double)spec_n / 1e6);
  memset(s->work, 0, sizeof(R) * s->wstride * (size_t)s->nthreads);
  p->bytes = bytes + sizeof(R) * (2 * spec_n + s->wstride * (size_t)s->nthreads);
  arkcos_fftw_wisdom_load();
  int fresh = 0;
  for (int j = 0; j < nr; j++) {
    int64_t N = rg[j].nph;
    if (j > 0 && rg[j - 1].nph == N) {
      s->r2c[j] = s->r2c[j - 1];
      s->c2r[j] = s->c2r[j - 1];
      continue;
    }
    SFX(plan_entry) *e = SFX(plans_for)(N, N == p->L ? FFTW_MEASURE : FFTW_ESTIMATE, &fresh);
    if (!e) return arkcos_fail(err, ARKCOS_ERUNTIME, "plan: FFTW could not plan length %lld", (long long)N);
    s->r2c[j] = e->r2c;
    s->c2r[j] = e->c2r;
  }
  for (int g = 0; g < s->ngrid; g++) {
    SFX(plan_entry) *e = SFX(plans_for)(s->grid[g].L, FFTW_MEASURE, &fresh);
    if (!e) return arkcos_fail(err, ARKCOS_ERUNTIME, "plan: FFTW could not plan the kernel grid");
    s->grid[g].kplan = e->r2c;
  }
  if (fresh) arkcos_fftw_wisdom_save();
  if (p->opt.cache_kernel_spectra) return SFX(fill_cache)(p, s, err);
  return ARKCOS_OK;
}

#undef WS
