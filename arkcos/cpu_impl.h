/*
 * cpu_impl.h -- the CPU backend, instantiated twice by cpu.c: once in
 * double precision (R = double, FFTW's fftw_*) and once in single precision
 * (R = float, fftwf_*). Kernel values and distances are always computed in
 * double (paper section 4.1); FFTs and the reduction run in R.
 *
 * Notation (DESIGN.md, paper section 4.1): ring j has N_j pixels, spectrum
 * R_j[m] = w_j sum_k r_jk e^{-2 pi i m k / N_j}; L = max N_j is the kernel
 * grid length; for output ring i and input ring j the kernel is sampled at
 * dphi_n = delta + 2 pi n / L (enhanced: delta = phi0_i - phi0_j, the pixels'
 * true offset; paper: delta = 0 and phase rotations instead), its DFT
 * H_ij[m] computed, and A_i[m] = sum_j H_ij[m] R_j[m]. The output spectrum is
 * A_i folded onto the ring's own N_i modes (enhanced) or truncated at its
 * Nyquist frequency (paper), and s_i = c2r(...) / L.
 * For N_i = N_j = L this is the exact circular convolution of the ring with
 * the kernel samples, i.e. the direct sum, whatever the kernel's width.
 */

typedef struct SFX(cpu_state) {
  int nthreads;
  int64_t nmp;          /* padded row length (complex values) */
  R *spec;              /* nrings x nmp ring spectra, interleaved re/im */
  FFTWP(plan) *r2c, *c2r; /* per ring, pointing into plans[] */
  FFTWP(plan) *plans;   /* owned: distinct lengths, 2 per length */
  int nplans;
  FFTWP(plan) kplan;    /* kernel grid r2c of length L */
  R *work;              /* per-thread workspace */
  size_t wstride;       /* R values per thread */
} SFX(cpu_state);

/* workspace layout per thread (R units), each part padded */
#define WS_KGRID(s, p) 0
#define WS_KSPEC(s, p) ((s)->nmp * 2)
#define WS_ACC1(s, p) ((s)->nmp * 4)
#define WS_ACC2(s, p) ((s)->nmp * 6)
#define WS_RIN(s, p) ((s)->nmp * 8)
#define WS_RSPEC(s, p) ((s)->nmp * 10)
#define WS_ROUT(s, p) ((s)->nmp * 12)
#define WS_SIZE(s, p) ((s)->nmp * 14)

static void SFX(cpu_destroy)(arkcos_plan *p) {
  SFX(cpu_state) *s = (SFX(cpu_state) *)p->impl;
  if (!s) return;
  for (int i = 0; i < s->nplans; i++)
    if (s->plans[i]) FFTWP(destroy_plan)(s->plans[i]);
  if (s->kplan) FFTWP(destroy_plan)(s->kplan);
  free(s->plans);
  free(s->r2c);
  free(s->c2r);
  FFTWP(free)(s->spec);
  FFTWP(free)(s->work);
  free(s);
  p->impl = NULL;
}

static double SFX(now)(void) { return omp_get_wtime(); }

static int SFX(cpu_execute)(arkcos_plan *p, const double *in, double *out, arkcos_error *err) {
  (void)err;
  SFX(cpu_state) *s = (SFX(cpu_state) *)p->impl;
  const arkcos_ring *rg = p->geom->rings;
  const int nr = p->geom->nrings, paper = p->opt.mode == ARKCOS_MODE_PAPER;
  const int64_t L = p->L, nm = p->nm, nmp = s->nmp;
  const double twopi_L = 2 * ARKCOS_PI / (double)L;
  double t_start = SFX(now)();

  /* 1. ring FFTs, spectra extended to the kernel grid's L/2 + 1 modes */
#pragma omp parallel for schedule(dynamic, 4) num_threads(s->nthreads)
  for (int j = 0; j < nr; j++) {
    R *ws = s->work + (size_t)omp_get_thread_num() * s->wstride;
    R *rin = ws + WS_RIN(s, p), *sp = s->spec + (size_t)j * nmp * 2;
    const int64_t N = rg[j].nph;
    const double w = rg[j].weight;
    for (int64_t k = 0; k < N; k++) rin[k] = (R)(w * in[rg[j].ofs + k]);
    FFTWP(execute_dft_r2c)(s->r2c[j], rin, (FFTWP(complex) *)sp);
    if (!paper) {
      /* the DFT of a sampled ring is periodic in m */
      for (int64_t m = N / 2 + 1; m < nm; m++) {
        int64_t q = m % N;
        if (2 * q <= N) {
          sp[2 * m] = sp[2 * q];
          sp[2 * m + 1] = sp[2 * q + 1];
        } else {
          sp[2 * m] = sp[2 * (N - q)];
          sp[2 * m + 1] = -sp[2 * (N - q) + 1];
        }
      }
    } else {
      /* paper: align rings by phase rotation (Eq. 8), half weight on the
       * Nyquist mode (it stands for +N/2 and -N/2), zero padding above */
      for (int64_t m = 0; m <= N / 2; m++) {
        double c = cos(m * rg[j].phi0), sn = -sin(m * rg[j].phi0);
        double re = sp[2 * m], im = sp[2 * m + 1];
        double f = (2 * m == N) ? 0.5 : 1.0;
        sp[2 * m] = (R)(f * (re * c - im * sn));
        sp[2 * m + 1] = (R)(f * (re * sn + im * c));
      }
      for (int64_t m = N / 2 + 1; m < nm; m++) sp[2 * m] = sp[2 * m + 1] = 0;
    }
  }
  double t_mapfft = SFX(now)() - t_start;

  /* 2. per output ring (and its mirror): kernel grids, their FFTs, and the
   * reduction over input rings; then fold and inverse FFT */
  double st[4] = {0, 0, 0, 0}; /* kernel_eval, kernel_fft, reduction, map_ifft */
#pragma omp parallel num_threads(s->nthreads) reduction(+ : st[:4])
  {
    R *ws = s->work + (size_t)omp_get_thread_num() * s->wstride;
    R *kgrid = ws + WS_KGRID(s, p), *kspec = ws + WS_KSPEC(s, p);
    R *acc1 = ws + WS_ACC1(s, p), *acc2 = ws + WS_ACC2(s, p);
    R *rspec = ws + WS_RSPEC(s, p), *rout = ws + WS_ROUT(s, p);
#pragma omp for schedule(dynamic, 1)
    for (int t = 0; t < p->ntasks; t++) {
      const int i = p->task[t], i2 = p->mirror[i];
      const int two = i2 >= 0 && i2 != i;
      double t0 = SFX(now)();
      memset(acc1, 0, sizeof(R) * 2 * nm);
      if (two) memset(acc2, 0, sizeof(R) * 2 * nm);
      for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
        double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
        double sdt2 = sdt * sdt, ss = p->sin_theta[i] * p->sin_theta[j];
        double half = arkcos_dphi_window(&p->kf, sdt2, ss);
        double delta = paper ? 0.0 : rg[i].phi0 - rg[j].phi0;
        int64_t n0, n1;
        if (arkcos_sample_range(half, delta, L, &n0, &n1) == 0) continue;
        for (int64_t n = n0; n <= n1; n++)
          kgrid[arkcos_wrap(n, L)] =
              (R)arkcos_kfun_d2(&p->kf, arkcos_chord2(sdt2, ss, delta + twopi_L * (double)n));
        double t1 = SFX(now)();
        st[0] += t1 - t0;
        FFTWP(execute_dft_r2c)(s->kplan, kgrid, (FFTWP(complex) *)kspec);
        for (int64_t n = n0; n <= n1; n++) kgrid[arkcos_wrap(n, L)] = 0;
        double t2 = SFX(now)();
        st[1] += t2 - t1;
        const R *sp = s->spec + (size_t)j * nmp * 2;
        for (int64_t m = 0; m < nm; m++) {
          R kr = kspec[2 * m], ki = kspec[2 * m + 1];
          acc1[2 * m] += kr * sp[2 * m] - ki * sp[2 * m + 1];
          acc1[2 * m + 1] += kr * sp[2 * m + 1] + ki * sp[2 * m];
        }
        if (two) {
          const R *sq = s->spec + (size_t)p->mirror[j] * nmp * 2;
          for (int64_t m = 0; m < nm; m++) {
            R kr = kspec[2 * m], ki = kspec[2 * m + 1];
            acc2[2 * m] += kr * sq[2 * m] - ki * sq[2 * m + 1];
            acc2[2 * m + 1] += kr * sq[2 * m + 1] + ki * sq[2 * m];
          }
        }
        t0 = SFX(now)();
        st[2] += t0 - t2;
      }
      for (int pass = 0; pass < 1 + two; pass++) {
        const int io = pass ? i2 : i;
        const R *acc = pass ? acc2 : acc1;
        const int64_t N = rg[io].nph;
        memset(rspec, 0, sizeof(R) * 2 * (N / 2 + 1));
        if (!paper) {
          for (int64_t m = 0; m < nm; m++) {
            int64_t d, mi;
            double w;
            arkcos_fold(m, N, L, &d, &mi, &w);
            if (d >= 0) {
              rspec[2 * d] += (R)w * acc[2 * m];
              rspec[2 * d + 1] += (R)w * acc[2 * m + 1];
            }
            if (mi >= 0) {
              rspec[2 * mi] += (R)w * acc[2 * m];
              rspec[2 * mi + 1] -= (R)w * acc[2 * m + 1];
            }
          }
        } else {
          for (int64_t m = 0; m <= N / 2; m++) {
            double c = cos(m * rg[io].phi0), sn = sin(m * rg[io].phi0);
            double re = acc[2 * m] * c - acc[2 * m + 1] * sn;
            double im = acc[2 * m] * sn + acc[2 * m + 1] * c;
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
      double t3 = SFX(now)();
      st[3] += t3 - t0;
    }
  }
  double total = SFX(now)() - t_start;
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

int SFX(arkcos_cpu_create)(arkcos_plan *p, arkcos_error *err) {
  SFX(cpu_state) *s = (SFX(cpu_state) *)calloc(1, sizeof *s);
  if (!s) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  p->impl = s;
  p->execute = SFX(cpu_execute);
  p->destroy = SFX(cpu_destroy);
  s->nthreads = p->opt.threads > 0 ? p->opt.threads : omp_get_max_threads();
  const int nr = p->geom->nrings;
  /* rows padded to 64 bytes so every row keeps FFTW's SIMD alignment */
  const int64_t per64 = 64 / (2 * (int64_t)sizeof(R));
  s->nmp = (p->nm + 1 + per64 - 1) / per64 * per64;
  size_t spec_n = (size_t)nr * (size_t)s->nmp * 2;
  s->wstride = (size_t)WS_SIZE(s, p);
  s->spec = (R *)FFTWP(malloc)(sizeof(R) * spec_n);
  s->work = (R *)FFTWP(malloc)(sizeof(R) * s->wstride * (size_t)s->nthreads);
  s->r2c = (FFTWP(plan) *)calloc((size_t)nr, sizeof(FFTWP(plan)));
  s->c2r = (FFTWP(plan) *)calloc((size_t)nr, sizeof(FFTWP(plan)));
  s->plans = (FFTWP(plan) *)calloc((size_t)2 * nr, sizeof(FFTWP(plan)));
  if (!s->spec || !s->work || !s->r2c || !s->c2r || !s->plans)
    return arkcos_fail(err, ARKCOS_ENOMEM,
                       "plan: out of memory (ring spectra need %.1f MB)",
                       sizeof(R) * (double)spec_n / 1e6);
  memset(s->work, 0, sizeof(R) * s->wstride * (size_t)s->nthreads);
  p->bytes = sizeof(R) * (spec_n + s->wstride * (size_t)s->nthreads);

  /* FFTW's planner is not re-entrant: plan everything here, once */
  R *a = s->work + WS_RIN(s, p), *b = s->work + WS_RSPEC(s, p);
  for (int j = 0; j < nr; j++) {
    int64_t N = p->geom->rings[j].nph;
    int found = -1;
    for (int q = 0; q < j; q++)
      if (p->geom->rings[q].nph == N) {
        found = q;
        break;
      }
    if (found >= 0) {
      s->r2c[j] = s->r2c[found];
      s->c2r[j] = s->c2r[found];
      continue;
    }
    unsigned flags = (N == p->L ? FFTW_MEASURE : FFTW_ESTIMATE);
    s->r2c[j] = FFTWP(plan_dft_r2c_1d)((int)N, a, (FFTWP(complex) *)b, flags);
    s->c2r[j] = FFTWP(plan_dft_c2r_1d)((int)N, (FFTWP(complex) *)b, a, flags);
    s->plans[s->nplans++] = s->r2c[j];
    s->plans[s->nplans++] = s->c2r[j];
    if (!s->r2c[j] || !s->c2r[j])
      return arkcos_fail(err, ARKCOS_ERUNTIME, "plan: FFTW could not plan length %lld", (long long)N);
  }
  s->kplan = FFTWP(plan_dft_r2c_1d)((int)p->L, s->work + WS_KGRID(s, p),
                                   (FFTWP(complex) *)(s->work + WS_KSPEC(s, p)), FFTW_MEASURE);
  if (!s->kplan) return arkcos_fail(err, ARKCOS_ERUNTIME, "plan: FFTW could not plan the kernel grid");
  memset(s->work, 0, sizeof(R) * s->wstride * (size_t)s->nthreads);
  return ARKCOS_OK;
}

#undef WS_KGRID
#undef WS_KSPEC
#undef WS_ACC1
#undef WS_ACC2
#undef WS_RIN
#undef WS_RSPEC
#undef WS_ROUT
#undef WS_SIZE
