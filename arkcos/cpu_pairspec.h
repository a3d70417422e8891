/*
 * cpu_pairspec.h -- CPU stages "kernel eval" and "kernel FFT": the kernel
 * spectrum of each ring pair. Part of the CPU backend template (see
 * cpu_impl.h): included once per precision, R / FFTWP / SFX set by cpu.c.
 *
 * For output ring i and input ring j: the pair's kernel grid (pair_grid:
 * L, or a coarser cap level), the kernel sampled on it (arkcos_kernel_samples) over the
 * window it reaches, and the samples' spectrum H_ij (or the real G_ij in
 * the rotated frame, pair_real) by
 *   - Clenshaw sums of the short Chebyshev series (samples_spectrum,
 *     kernel_clenshaw), optionally on the grid of half the points, even
 *     and odd samples apart (decim_spectrum), or
 *   - an FFTW r2c of the kernel grid for wide windows (fft_spectrum).
 * pair_row fetches a pair's spectrum from the cache or computes it.
 */

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
/* Long on purpose: one register-resident recurrence per block of modes; split, its state would spill. */
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

/* Kernel grid of ring pair (i, j): L for belt pairs (exact) and in paper
 * mode, else level s of q L / 2^s points by sqrt(sin th_i sin th_j). With
 * smooth caps (bl_scale > 0) a belt pair moves to the coarsest level grid
 * shorter than L whose modes hold its band limit (pair_len), if any: then
 * it is sampled as the cap pairs are (pair_off_grid). */
static int SFX(pair_grid)(const arkcos_plan *p, const SFX(cpu_state) *s, int i, int j) {
  const arkcos_ring *rg = p->geom->rings;
  const int belt = rg[i].nph == p->L && rg[j].nph == p->L;
  if (s->nlev == 0 || (belt && s->bl_scale <= 0)) return 0;
  const double r = sqrt(p->sin_theta[i] * p->sin_theta[j]);
  /* smooth caps: any coarser grid whose modes still hold the band limit
   * (pair_len; the spectrum beyond it, which the grid aliases, is below
   * 1e-17 of the peak) */
  const double need = s->bl_scale > 0 ? s->bl_scale * r + 8 : 0;
  const int lv = arkcos_pair_level(s->levL, s->nlev, p->L, belt, r, need, s->s_ref);
  return lv < 0 ? 0 : s->lev[lv];
}

/* Modes of pair (i, j)'s spectrum on grid G that the reduction adds: all of
 * G's, or, for a smooth-caps plan (a Gaussian of sigma cut at <= 1e-12 of
 * its peak), those up to its band limit. On the pair the kernel is
 * exp(-rho d2 / (2 sigma^2)), d2 = 4 sin^2(dth / 2) + 2 r^2 (1 - cos dphi),
 * r^2 = sin th_i sin th_j, rho = alpha^2 / d2 in [1, rho_cut]: its azimuthal
 * spectrum (modified Bessel functions I_m(z) e^{-z}, z = rho r^2 / sigma^2)
 * falls below 1e-17 of its peak by m = 8.85 sqrt(z); bl_scale = 1.2 x 8.85
 * sqrt(rho_cut) / sigma (setup_grids). Symmetric in (i, j). */
static inline int64_t SFX(pair_len)(const arkcos_plan *p, const SFX(cpu_state) *s, int i, int j,
                                    const SFX(kgrid_t) *G) {
  if (s->bl_scale <= 0) return G->nm;
  const double m = s->bl_scale * sqrt(p->sin_theta[i] * p->sin_theta[j]) + 8;
  return m < (double)G->nm ? (int64_t)m : G->nm;
}

/* Whether pair (i, j) is off the exact L grid: a cap pair, or a belt pair
 * moved to a coarser grid by its band limit (pair_grid) */
static inline int SFX(pair_off_grid)(const arkcos_plan *p, const SFX(cpu_state) *s, int i, int j) {
  const arkcos_ring *rg = p->geom->rings;
  if (rg[i].nph != p->L || rg[j].nph != p->L) return 1;
  return s->bl_scale > 0 && SFX(pair_grid)(p, s, i, j) != 0;
}

/* Whether the kernel reaches ring j from ring i (some sample in its window) */
static int SFX(pair_reached)(const arkcos_plan *p, int i, int j, int64_t L) {
  const arkcos_ring *rg = p->geom->rings;
  if (arkcos_pair_is_direct(p, i, j)) return 0; /* pairs_direct.c sums it */
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
  if (SFX(pair_off_grid)(p, s, i, j)) return 1;
  return SFX(offset_kind)(rg[i].phi0 - rg[j].phi0, p->L) != 0;
}

/* Spectrum on grid G (nm modes) of the samples hs[n - n0], n0 <= n <= n1
 * (offset delta), by decimation in azimuth on G's grid of L0 = L / 2 points:
 * H'[m] = E[m] + e^{-i pi m / L0} O[m], E, O the L0-grid spectra of the even
 * samples (offset delta) and the odd ones (offset delta + pi / L0),
 * L0-periodic and Hermitian. re_only: the real G into hr alone. */
static void SFX(decim_spectrum)(const SFX(cpu_state) *s, const SFX(kgrid_t) *G, const double *hs, int64_t n0,
                                int64_t n1, double delta, int re_only, R *ws, R *hr, R *hi) {
  const int64_t nm = G->nm;
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
    return;
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
}

/* Spectrum on grid G of the kernel samples n0 <= n <= n1 (times scale) by
 * an FFTW r2c of the whole grid (wide windows); *t_eval: the time the
 * samples were ready. */
static void SFX(fft_spectrum)(const arkcos_plan *p, const SFX(cpu_state) *s, const SFX(kgrid_t) *G, double sdt2,
                              double ss, double delta, int64_t n0, int64_t n1, double scale, int re_only,
                              R *ws, R *hr, R *hi, double *t_eval) {
  const int64_t L = G->L, nm = G->nm;
  R *kgrid = ws + WS(s, WS_KGRID), *kspec = ws + WS(s, WS_KSPEC);
  for (int64_t b = n0; b <= n1; b += ARKCOS_SAMPLES_CHUNK) {
    double hs[ARKCOS_SAMPLES_CHUNK];
    const int64_t cnt = n1 - b + 1 < ARKCOS_SAMPLES_CHUNK ? n1 - b + 1 : ARKCOS_SAMPLES_CHUNK;
    arkcos_kernel_samples(&p->kf, scale, sdt2, ss, delta, L, b, b + cnt - 1, hs);
    for (int64_t l = 0; l < cnt; l++) kgrid[arkcos_wrap(b + l, L)] = (R)hs[l];
  }
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

/* Kernel spectrum H_ij[m] of output ring i and input ring j into hr, hi,
 * ready to be accumulated (scaled and halved for the L grid when q > 1);
 * in the rotated frame G_ij, into hr alone where it is real (*real = 1).
 * *t_eval is the time the kernel samples were ready. Returns 0 when the
 * kernel does not reach ring j, else 1 + the grid used (its nm modes are
 * written). ws: the calling thread's workspace. */
static int SFX(pair_spectrum)(const arkcos_plan *p, const SFX(cpu_state) *s, int i, int j, R *ws, R *hr,
                              R *hi, double *t_eval, int *real) {
  const arkcos_ring *rg = p->geom->rings;
  if (arkcos_pair_is_direct(p, i, j)) return 0; /* pairs_direct.c sums it */
  const int gi = SFX(pair_grid)(p, s, i, j);
  const int re_only = SFX(pair_real)(p, s, i, j);
  *real = re_only;
  const SFX(kgrid_t) *G = &s->grid[gi];
  const int64_t L = G->L, nm = G->nm;
  double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  double sdt2 = sdt * sdt, ss = p->sin_theta[i] * p->sin_theta[j];
  double half = arkcos_dphi_window(&p->kf, sdt2, ss);
  double delta = p->opt.mode == ARKCOS_MODE_PAPER ? 0.0 : rg[i].phi0 - rg[j].phi0;
  if (s->sym && SFX(pair_off_grid)(p, s, i, j)) delta = 0; /* symmetric samples */
  int64_t n0, n1, cnt = arkcos_sample_range(half, delta, L, &n0, &n1);
  if (cnt == 0) return 0;
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
    arkcos_kernel_samples(&p->kf, scale, sdt2, ss, delta, G->L, n0, n1, hs);
    *t_eval = omp_get_wtime();
    if (decim) {
      SFX(decim_spectrum)(s, G, hs, n0, n1, delta, re_only, ws, hr, hi);
    } else {
      SFX(samples_spectrum)(G, hs, n0, n1, delta, hr, re_only ? NULL : hi);
      if (!re_only && s->sym && delta != 0) SFX(rotate_rows)(hr, hi, nm, -delta);
    }
  } else {
    SFX(fft_spectrum)(p, s, G, sdt2, ss, delta, n0, n1, scale, re_only, ws, hr, hi, t_eval);
  }
  if (L != s->Lacc && L % 2 == 0) { /* the L grid's Nyquist mode is +L/2 and -L/2 */
    hr[L / 2] *= (R)0.5;
    if (!re_only) hi[L / 2] *= (R)0.5;
  }
  return 1 + gi;
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
