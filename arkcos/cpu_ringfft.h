/*
 * cpu_ringfft.h -- CPU stages "map FFT" and "map inverse FFT": the ring
 * FFTs in and out, with the periodic extension of a ring's spectrum to the
 * kernel grid's modes and the fold of an accumulated spectrum back onto the
 * ring's own modes. Part of the CPU backend template (see cpu_impl.h):
 * included once per precision, R / FFTWP / SFX set by cpu.c.
 *
 * In:  r2c of each ring (weighted), then enhanced mode: the spectrum
 *      extended periodically (rotated by -phi0 in the rotated frame);
 *      paper mode: phase-aligned, Nyquist halved, zero-padded.
 * Out: enhanced mode: fold_out; paper mode: paper_out (rotate back,
 *      truncate at the ring's Nyquist frequency); then c2r into the map.
 * rotate_rows is also used by the kernel spectra (cpu_pairspec.h).
 */

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

/* Ring io's c2r by Bluestein's DFT (a cap ring), from the half spectrum
 * rspec (R values) into out[0 .. N), times scale; in double, rounded to R
 * where the plan is single, as FFTW's c2r in R would be. */
static void SFX(blue_c2r)(const SFX(cpu_state) *s, int io, int64_t N, const R *rspec, double *out,
                          double scale) {
  double *bw = s->bwork + (size_t)omp_get_thread_num() * s->bwstride, *X = bw + s->bwstride - 2 * N - 16;
  double *x = X + N + 4; /* N + 2 values of X, then N of x (aligned: N is even) */
  x = (double *)((uintptr_t)(x + 1) & ~(uintptr_t)15);
  for (int64_t m = 0; m <= N / 2; m++) {
    X[2 * m] = (double)rspec[2 * m];
    X[2 * m + 1] = (double)rspec[2 * m + 1];
  }
  arkcos_bluestein_c2r(s->blue[io], X, x, bw);
  for (int64_t k = 0; k < N; k++) out[k] = scale * (double)(R)x[k];
}

/* Enhanced mode: ring j's spectrum (sre, sim; the nmj modes pairs read)
 * from its half spectrum sp, times wf. The DFT of a sampled ring is
 * periodic in m: one period from the half spectrum (Hermitian), rotated in
 * the rotated frame, then S[m + p N] = c^p S[m], c = e^{-i N phi0} there
 * and 1 otherwise */
static inline void SFX(spectrum_extend)(const SFX(cpu_state) *s, const arkcos_ring *rj, const R *sp, R wf,
                                        int64_t nmj, R *sre, R *sim) {
  const int64_t N = rj->nph;
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
  const double phi = s->sym ? rj->phi0 : 0;
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
}

/* Paper mode: align rings by phase rotation (Eq. 8), half weight on the
 * Nyquist mode (it stands for +N/2 and -N/2), zero padding above */
static inline void SFX(spectrum_paper)(const arkcos_ring *rj, const R *sp, int64_t nmj, R *sre, R *sim) {
  const int64_t N = rj->nph;
  for (int64_t m = 0; m <= N / 2 && m < nmj; m++) {
    double c = cos(m * rj->phi0), sn = -sin(m * rj->phi0);
    double re = sp[2 * m], im = sp[2 * m + 1];
    double f = (2 * m == N) ? 0.5 : 1.0;
    sre[m] = (R)(f * (re * c - im * sn));
    sim[m] = (R)(f * (re * sn + im * c));
  }
  for (int64_t m = N / 2 + 1; m < nmj; m++) sre[m] = sim[m] = 0;
}

/* Ring j of the map in: r2c, then its spectrum rows sre, sim (its row in
 * s->spec_re / spec_im, or its slot of a window) */
static inline void SFX(ring_spectrum)(const arkcos_plan *p, const SFX(cpu_state) *s, const double *in, int j,
                                      R *sre, R *sim) {
  const arkcos_ring *rg = p->geom->rings;
  const int paper = p->opt.mode == ARKCOS_MODE_PAPER;
  R *ws = s->work + (size_t)omp_get_thread_num() * s->wstride;
  R *rin = ws + WS(s, WS_RIN), *sp = ws + WS(s, WS_RSPEC);
  const int64_t N = rg[j].nph, nmj = s->ring_nm[j];
  if (nmj == 0) return; /* no Fourier pair reads it (a cap ring of an exact plan) */
  const double w = rg[j].weight;
  const double *src = in + rg[j].ofs;
  R wf = 1; /* the weight, where it still has to be applied */
  if (s->blue[j]) { /* a cap ring: Bluestein's DFT in double, weighted after */
    double *bw = s->bwork + (size_t)omp_get_thread_num() * s->bwstride, *X = bw + s->bwstride - 2 * N - 16;
    arkcos_bluestein_r2c(s->blue[j], src, X, bw);
    const double ws = paper ? w : 1.0;
    for (int64_t m = 0; m <= N / 2; m++) {
      sp[2 * m] = (R)(ws * X[2 * m]);
      sp[2 * m + 1] = (R)(ws * X[2 * m + 1]);
    }
    wf = (R)(paper ? 1.0 : w);
  } else if (sizeof(R) == sizeof(double) && !paper && FFTWP(alignment_of)((R *)(uintptr_t)src) == 0) {
    /* double precision, input aligned as planned: transform the map in
     * place of a copy (an out-of-place r2c keeps its input), weight after */
    FFTWP(execute_dft_r2c)(s->r2c[j], (R *)(uintptr_t)src, (FFTWP(complex) *)sp);
    wf = (R)w;
  } else if (sizeof(R) == sizeof(double) && !paper) {
    /* unaligned: the same transform of a copy, weight after as above, so
     * that the result does not depend on the map's address (bit for bit:
     * MPI ranks and one process agree, docs/MPI.md) */
    for (int64_t k = 0; k < N; k++) rin[k] = (R)src[k];
    FFTWP(execute_dft_r2c)(s->r2c[j], rin, (FFTWP(complex) *)sp);
    wf = (R)w;
  } else {
    for (int64_t k = 0; k < N; k++) rin[k] = (R)(w * src[k]);
    FFTWP(execute_dft_r2c)(s->r2c[j], rin, (FFTWP(complex) *)sp);
  }
  if (!paper) SFX(spectrum_extend)(s, &rg[j], sp, wf, nmj, sre, sim);
  else SFX(spectrum_paper)(&rg[j], sp, nmj, sre, sim);
}

/* Stage "map FFT": every ring's spectrum, extended to the modes pairs read */
static void SFX(ring_ffts_in)(const arkcos_plan *p, const SFX(cpu_state) *s, const double *in) {
  const int nr = p->geom->nrings;
  /* a ring and its mirror together: a cap ring's DFT then reuses the
   * chirp its mirror's prepared (bluestein.c) */
#pragma omp parallel for schedule(dynamic, 2) num_threads(s->nthreads)
  for (int j = 0; j < (nr + 1) / 2; j++) {
    SFX(ring_spectrum)(p, s, in, j, s->spec_re + s->spec_ofs[j], s->spec_im + s->spec_ofs[j]);
    if (nr - 1 - j != j)
      SFX(ring_spectrum)(p, s, in, nr - 1 - j, s->spec_re + s->spec_ofs[nr - 1 - j],
                         s->spec_im + s->spec_ofs[nr - 1 - j]);
  }
}

/* Window: task x's ring and mirror transformed into its slot of win */
static void SFX(window_load)(const arkcos_plan *p, const SFX(cpu_state) *s, const double *in, R *win, int x) {
  const int i = p->task[x], i2 = p->mirror[i];
  R *row = win + (size_t)(x % (s->ww + 1)) * 4 * (size_t)s->wrow;
  SFX(ring_spectrum)(p, s, in, i, row, row + s->wrow);
  if (i2 >= 0 && i2 != i) SFX(ring_spectrum)(p, s, in, i2, row + 2 * s->wrow, row + 3 * s->wrow);
}

/* Ring j's spectrum rows (re returned, im in *im): its row in spec_re /
 * spec_im, or with a window win (a thread's) its task's slot there */
static inline const R *SFX(spec_rows)(const arkcos_plan *p, const SFX(cpu_state) *s, const R *win, int j,
                                      const R **im) {
  if (!win) {
    *im = s->spec_im + s->spec_ofs[j];
    return s->spec_re + s->spec_ofs[j];
  }
  const int t = s->tidx[j];
  const R *re = win + ((size_t)(t % (s->ww + 1)) * 4 + (j == p->task[t] ? 0 : 2)) * (size_t)s->wrow;
  *im = re + s->wrow;
  return re;
}

/* Output ring io from its accumulated spectrum (ar, ai; amax modes; ar
 * and ai are modified): fold, inverse FFT, into out (enhanced mode). */
/* Long on purpose: one pass over the accumulated rows (fold by periods, rotate, pack, c2r) with its scratch. */
static void SFX(fold_out)(const arkcos_plan *p, const SFX(cpu_state) *s, R *ws, int io, R *ar, R *ai,
                          int64_t amax, double *out) {
  const arkcos_ring *rg = p->geom->rings;
  const int64_t N = rg[io].nph, L = s->Lacc;
  R *rspec = ws + WS(s, WS_RSPEC), *rout = ws + WS(s, WS_ROUT);
  if (amax == 0) { /* no Fourier pair: only the direct pairs add to it */
    memset(out + rg[io].ofs, 0, sizeof(double) * (size_t)N);
    return;
  }
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
  if (s->blue[io]) {
    SFX(blue_c2r)(s, io, N, rspec, o, 1.0);
  } else if (sizeof(R) == sizeof(double) && FFTWP(alignment_of)((R *)(void *)o) == 0) {
    FFTWP(execute_dft_c2r)(s->c2r[io], (FFTWP(complex) *)rspec, (R *)(void *)o); /* straight into the map */
  } else {
    FFTWP(execute_dft_c2r)(s->c2r[io], (FFTWP(complex) *)rspec, rout);
    for (int64_t k = 0; k < N; k++) o[k] = (double)rout[k];
  }
}

/* Output ring io from its accumulated spectrum (ar, ai) in paper mode:
 * rotate back by the ring's offset, truncate at its Nyquist frequency,
 * inverse FFT, into out. */
static void SFX(paper_out)(const arkcos_plan *p, const SFX(cpu_state) *s, R *ws, int io, const R *ar, const R *ai,
                           double *out) {
  const arkcos_ring *rg = p->geom->rings;
  R *rspec = ws + WS(s, WS_RSPEC), *rout = ws + WS(s, WS_ROUT);
  const int64_t N = rg[io].nph;
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
  const double scale = 1.0 / (double)s->Lacc;
  double *o = out + rg[io].ofs;
  if (s->blue[io]) {
    SFX(blue_c2r)(s, io, N, rspec, o, scale);
    return;
  }
  FFTWP(execute_dft_c2r)(s->c2r[io], (FFTWP(complex) *)rspec, rout);
  for (int64_t k = 0; k < N; k++) o[k] = scale * (double)rout[k];
}
