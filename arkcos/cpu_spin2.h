/*
 * cpu_spin2.h -- the spin-2 (polarization) CPU backend, double precision,
 * included once by cpu.c (it shares FFTW's planner lock and wisdom).
 *
 * P = Q + iU is smoothed as P'(p) = sum_q w_q K(alpha_pq) w(p, q) P(q), the
 * transport factor w of docs/POLARIZATION.md (arkcos_spin2_transport). As
 * for scalars, w and K depend on the two colatitudes and the azimuth offset
 * only, so each ring pair is a circular convolution, with a complex kernel:
 *
 *   belt pairs (both rings of length L with their first pixel on the
 *   half-step grid pi / L): the ring's complex FFT in the rotated frame
 *     Pt_j[m] = e^{-i m phi0_j} w_j sum_k P_j(k) e^{-2 pi i m k / L},
 *   m signed in [-L/2, L/2), gives Pt'_i[m] = sum_j F_ij[m] Pt_j[m] exactly
 *   (the circular convolution of the ring with the kernel's samples), with
 *     F_ij[m] = sum_x W_ij(x) e^{i m x},  x over the offsets phi_q - phi_p,
 *   W_ij(x) = w_j K(alpha) w(p, q) with the pixel weight w_j,
 *   x = pi (2n + sigma) / L, sigma = 0 or 1. The offsets are symmetric about
 *   0 and W is Hermitian in x (W(-x) = conj W(x)), so F is real:
 *     F[+-m] = C[m] -+ S[m],  C = sum_x>=0 c_x Re W(x) cos(m x),
 *                             S = sum_x>=0 c_x Im W(x) sin(m x)
 *   (c_x = 2, 1 at x = 0 and pi), each a short Chebyshev-like series in
 *   cos(2 pi m / L) summed by Clenshaw's recurrence: sigma = 0 in T_n and
 *   U_(n-1) (times sin(2 pi m / L)), sigma = 1 in the third and fourth kinds
 *   V_n, W_n (times cos, sin(pi m / L)). The N/S mirror pair conjugates W:
 *   F_i'j'[m] = F_ij[-m], the same C and S.
 *
 *   every other pair (the caps, rings off the grid) is summed directly with
 *   complex weights tabulated at plan time (pairs_direct.c).
 *
 * Spectra are kept as four rows per ring: m = 0 .. L/2 (re, im) and
 * m = 0, -1, .., -L/2 (re, im); the +L/2 and the second m = 0 entries are
 * zero, so each DFT bin is counted once with a definite signed m.
 */

typedef struct {
  int nthreads;
  int64_t L, nh;        /* ring length of the Fourier path, L / 2 + 1 */
  size_t rowp;          /* padded row length (>= nh, multiple of 8) */
  int *bidx;            /* ring -> index of its spectrum, or -1 (off the grid, or not read by
                         * a band plan's tasks) */
  unsigned char *need;  /* a band plan (MPI): the rings its tasks read; NULL: all of them */
  unsigned char *own;   /* a band plan: the rings its tasks write; NULL: all of them */
  unsigned char *grid;  /* ring -> on the Fourier path's grid */
  int64_t *hs;          /* ring's first azimuth in half steps pi / L */
  double *xm, *cth, *sth, *s2t; /* per m: cos(2 pi m / L), cos, sin(pi m / L), sin(2 pi m / L) */
  double *er, *ei;      /* e^{-i pi k / L}, k < 2 L */
  double *spec;         /* 4 rows of rowp per ring on the grid (NULL with window) */
  /* window (arkcos_spin2_window): each thread takes fixed chunks of tasks
   * [chunk0[c], chunk0[c + 1]) in order and keeps the spectra of tasks
   * t - ww .. t + ww in 2 ww + 1 slots of two rings' four rows (wspec) */
  int window, ww, nchunk;
  int *chunk0, *tidx;
  double *wspec;
  fftw_plan fwd, bwd;   /* split complex DFTs of length L */
  double *work;         /* per thread: 4 L (FFT in/out), 8 rowp (outputs), coefficients, pairs */
  size_t wstride;
  int nsamp;            /* longest sample list of a belt pair */
  size_t ncoef;         /* per-thread coefficient space: 3 (nsamp + 1) per pair of a task */
  int maxpairs;         /* most belt pairs of one output ring */
} s2_state;

static void s2_destroy(arkcos_plan *p) {
  s2_state *s = (s2_state *)p->impl;
  if (!s) return;
  free(s->bidx);
  free(s->need);
  free(s->own);
  free(s->grid);
  free(s->hs);
  fftw_free(s->xm);
  fftw_free(s->cth);
  fftw_free(s->sth);
  fftw_free(s->s2t);
  fftw_free(s->er);
  fftw_free(s->ei);
  fftw_free(s->spec);
  fftw_free(s->wspec);
  free(s->chunk0);
  free(s->tidx);
  fftw_free(s->work);
  pthread_mutex_lock(&arkcos_fftw_planner_lock);
  if (s->fwd) fftw_destroy_plan(s->fwd);
  if (s->bwd) fftw_destroy_plan(s->bwd);
  pthread_mutex_unlock(&arkcos_fftw_planner_lock);
  free(s);
  p->impl = NULL;
}

/* Kernel samples of belt pair (i, j): x = pi (2n + sigma) / L >= 0 inside
 * the window, ca[n] = c_x Re W(x), cb[n] = c_x Im W(x). Returns the count,
 * 0 when the kernel does not reach. */
static int s2_samples(const arkcos_plan *p, const s2_state *s, int i, int j, int sigma, double *ca,
                      double *cb) {
  const arkcos_ring *rg = p->geom->rings;
  const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
  const double sdt2 = sdt * sdt, ss = p->sin_theta[i] * p->sin_theta[j];
  const double half = arkcos_dphi_window(&p->kf, sdt2, ss);
  if (half < 0) return 0;
  const int64_t L = s->L;
  int64_t nmax = L / 2 - (sigma ? 1 : 0); /* the last x below or at pi */
  if (half < ARKCOS_PI) {
    const int64_t n = (int64_t)floor((half * (double)L / ARKCOS_PI - sigma) / 2) + 1;
    if (n < nmax) nmax = n;
  }
  for (int64_t n = 0; n <= nmax; n++) {
    const double x = ARKCOS_PI * (double)(2 * n + sigma) / (double)L;
    const double sh = sin(0.5 * x);
    const double v = rg[j].weight * arkcos_kfun_d2(&p->kf, 4.0 * (sdt2 + ss * sh * sh));
    double wr = 1, wi = 0;
    if (v != 0) arkcos_spin2_transport(rg[i].theta, rg[j].theta, x, &wr, &wi);
    const double c = (2 * n + sigma == 0 || 2 * (2 * n + sigma) == 2 * L) ? 1.0 : 2.0;
    ca[n] = c * v * wr;
    cb[n] = c * v * wi;
  }
  return (int)(nmax + 1);
}

/* Ring j's spectrum in the rotated frame (four rows from pr) from Q, U. */
static void s2_forward(const arkcos_plan *p, const s2_state *s, int j, const double *q, const double *u,
                       double *w, double *pr) {
  const arkcos_ring *r = &p->geom->rings[j];
  const int64_t L = s->L, nh = s->nh, sj = s->hs[j] % (2 * L);
  double *ir = w, *ii = w + L, *o_r = w + 2 * L, *oi = w + 3 * L;
  for (int64_t k = 0; k < L; k++) {
    ir[k] = q[r->ofs + k]; /* the pixel weight w_j is in F_ij */
    ii[k] = u[r->ofs + k];
  }
  fftw_execute_split_dft(s->fwd, ir, ii, o_r, oi);
  double *pi = pr + s->rowp, *nr = pi + s->rowp, *ni = nr + s->rowp;
  int64_t k = 0; /* (m sj) mod 2L */
  for (int64_t m = 0; m < nh; m++) {
    const double c = s->er[k], e = s->ei[k]; /* e^{-i pi m sj / L} */
    if (m < L - m) { /* +m */
      pr[m] = o_r[m] * c - oi[m] * e;
      pi[m] = o_r[m] * e + oi[m] * c;
    } else {
      pr[m] = pi[m] = 0;
    }
    if (m > 0) { /* -m: bin L - m, phase e^{+i pi m sj / L} */
      const int64_t b = L - m;
      nr[m] = o_r[b] * c + oi[b] * e;
      ni[m] = oi[b] * c - o_r[b] * e;
    } else {
      nr[m] = ni[m] = 0;
    }
    k += sj;
    if (k >= 2 * L) k -= 2 * L;
  }
  for (int64_t m = nh; m < (int64_t)s->rowp; m++) pr[m] = pi[m] = nr[m] = ni[m] = 0;
}

/* Output ring i from its accumulated rotated spectrum A (four rows). */
static void s2_backward(const arkcos_plan *p, const s2_state *s, int i, const double *A, double *q_out,
                        double *u_out, double *w) {
  const arkcos_ring *r = &p->geom->rings[i];
  const int64_t L = s->L, nh = s->nh, si = s->hs[i] % (2 * L);
  const double *pr = A, *pi = A + s->rowp, *nr = pi + s->rowp, *ni = nr + s->rowp;
  double *ir = w, *ii = w + L, *o_r = w + 2 * L, *oi = w + 3 * L;
  int64_t k = 0;
  for (int64_t m = 0; m < nh; m++) {
    const double c = s->er[k], e = -s->ei[k]; /* e^{+i pi m si / L} */
    if (m < L - m) {
      ir[m] = pr[m] * c - pi[m] * e;
      ii[m] = pr[m] * e + pi[m] * c;
    }
    if (m > 0) {
      const int64_t b = L - m; /* signed -m: e^{-i pi m si / L} */
      ir[b] = nr[m] * c + ni[m] * e; /* at m = L / 2 only this entry holds data */
      ii[b] = ni[m] * c - nr[m] * e;
    }
    k += si;
    if (k >= 2 * L) k -= 2 * L;
  }
  /* the inverse DFT is the forward one with real and imaginary parts swapped */
  fftw_execute_split_dft(s->bwd, ii, ir, oi, o_r);
  const double sc = 1.0 / (double)L;
  for (int64_t k2 = 0; k2 < L; k2++) {
    q_out[r->ofs + k2] = sc * o_r[k2];
    u_out[r->ofs + k2] = sc * oi[k2];
  }
}

typedef double s2v __attribute__((vector_size(32)));
#define S2_NV 2 /* vectors of four modes per block: 2 S2_NV Clenshaw chains in registers */
#define S2_BLOCK (4 * S2_NV)

/* One belt pair's samples, ready for the series: C in ca[0..N], S in
 * cs[0..N] (sigma 0: the U_k coefficients cb[k + 1], zero at N). */
typedef struct {
  int N, sigma;
  const double *ca, *cs;
  const double *Pj, *Pj2; /* input spectra (four rows), of j and of j's mirror */
} s2_pair;

/* For the modes m0 .. m0 + 15: C[m] and S[m] of pair q by Clenshaw's
 * recurrence (P_0 = 1, P_1 = a x + b, P_n+1 = 2 x P_n - P_n-1; sigma 0: T
 * and U, sigma 1: V and W, times their prefactors), and their products
 * with the input spectra added to the output rows: F[+m] = C - S on the
 * +m rows, F[-m] = C + S on the -m rows, swapped for the mirror pair. */
static inline void s2_block(const s2_state *s, const s2_pair *q, int64_t m0, double *Ai, double *Ai2) {
  s2v x[S2_NV], c1[S2_NV], c2[S2_NV], d1[S2_NV], d2[S2_NV];
  for (int v = 0; v < S2_NV; v++) {
    memcpy(&x[v], s->xm + m0 + 4 * v, sizeof x[v]);
    c1[v] = c2[v] = d1[v] = d2[v] = (s2v){0, 0, 0, 0};
  }
  for (int k = q->N; k >= 1; k--) {
    const double a = q->ca[k], b = q->cs[k];
    for (int v = 0; v < S2_NV; v++) {
      const s2v tx = x[v] + x[v];
      const s2v tc = a + tx * c1[v] - c2[v], td = b + tx * d1[v] - d2[v];
      c2[v] = c1[v];
      c1[v] = tc;
      d2[v] = d1[v];
      d1[v] = td;
    }
  }
  const size_t rp = s->rowp;
  for (int v = 0; v < S2_NV; v++) {
    const int64_t m = m0 + 4 * v;
    s2v C, S, pc, ps;
    if (q->sigma == 0) {
      C = q->ca[0] + c1[v] * x[v] - c2[v];
      S = q->cs[0] + d1[v] * (x[v] + x[v]) - d2[v];
      memcpy(&ps, s->s2t + m, sizeof ps);
      S *= ps;
    } else {
      C = q->ca[0] + c1[v] * (x[v] + x[v] - 1.0) - c2[v];
      S = q->cs[0] + d1[v] * (x[v] + x[v] + 1.0) - d2[v];
      memcpy(&pc, s->cth + m, sizeof pc);
      memcpy(&ps, s->sth + m, sizeof ps);
      C *= pc;
      S *= ps;
    }
    const s2v fp = C - S, fn = C + S;
    for (int r = 0; r < 4; r++) {
      s2v acc, in;
      memcpy(&acc, Ai + r * rp + m, sizeof acc);
      memcpy(&in, q->Pj + r * rp + m, sizeof in);
      acc += (r < 2 ? fp : fn) * in;
      memcpy(Ai + r * rp + m, &acc, sizeof acc);
    }
    if (!Ai2) continue;
    for (int r = 0; r < 4; r++) {
      s2v acc, in;
      memcpy(&acc, Ai2 + r * rp + m, sizeof acc);
      memcpy(&in, q->Pj2 + r * rp + m, sizeof in);
      acc += (r < 2 ? fn : fp) * in;
      memcpy(Ai2 + r * rp + m, &acc, sizeof acc);
    }
  }
}

/* Ring j's four rows: in spec, or with a window win (a thread's) in its
 * task's slot there */
static inline double *s2_rows(const arkcos_plan *p, const s2_state *s, double *win, int j) {
  if (!win) return s->spec + (size_t)s->bidx[j] * 4 * s->rowp;
  const int t = s->tidx[j];
  return win + ((size_t)(t % (2 * s->ww + 1)) * 2 + (j == p->task[t] ? 0 : 1)) * 4 * s->rowp;
}

/* Window: task x's rings (those with a spectrum) transformed into its slot */
static void s2_window_load(const arkcos_plan *p, const s2_state *s, int x, const double *q, const double *u,
                           double *w, double *win) {
  const int i = p->task[x], i2 = p->mirror[i];
  if (s->bidx[i] >= 0) s2_forward(p, s, i, q, u, w, s2_rows(p, s, win, i));
  if (i2 >= 0 && i2 != i && s->bidx[i2] >= 0) s2_forward(p, s, i2, q, u, w, s2_rows(p, s, win, i2));
}

/* Task t: its belt pairs' samples, then, block of modes by block, their
 * series and the reduction (the output rows stay in cache), the inverse
 * FFTs. w: the thread's workspace; win: its window or NULL. */
static void s2_task(const arkcos_plan *p, const s2_state *s, int t, double *w, double *win, double *q_out,
                    double *u_out, double st[4]) {
  double *Ai = w + 4 * s->L, *Ai2 = Ai + 4 * s->rowp, *coef = Ai2 + 4 * s->rowp;
  s2_pair *pr = (s2_pair *)(coef + s->ncoef);
  const int i = p->task[t], i2 = p->mirror[i] >= 0 && p->mirror[i] != i ? p->mirror[i] : -1;
  if (!s->grid[i]) return;
  double t0 = omp_get_wtime();
  int np = 0;
  double *cf = coef;
  for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
    if (arkcos_pair_is_direct(p, i, j)) continue;
    const int sigma = (int)(((s->hs[j] - s->hs[i]) % 2 + 2) % 2);
    double *ca = cf, *cb = cf + s->nsamp + 1, *ub = cb + s->nsamp + 1;
    const int ns = s2_samples(p, s, i, j, sigma, ca, cb);
    if (ns == 0) continue;
    const int N = ns - 1;
    for (int k = 0; k < N; k++) ub[k] = cb[k + 1];
    ub[N] = 0;
    pr[np].N = N;
    pr[np].sigma = sigma;
    pr[np].ca = ca;
    pr[np].cs = sigma ? cb : ub;
    pr[np].Pj = s2_rows(p, s, win, j);
    pr[np].Pj2 = i2 >= 0 ? s2_rows(p, s, win, p->mirror[j]) : NULL;
    np++;
    cf += 3 * (size_t)(s->nsamp + 1);
  }
  const double t1 = omp_get_wtime();
  st[0] += t1 - t0;
  memset(Ai, 0, sizeof(double) * 8 * s->rowp);
  for (int64_t m0 = 0; m0 < s->nh; m0 += S2_BLOCK)
    for (int k = 0; k < np; k++) s2_block(s, &pr[k], m0, Ai, i2 >= 0 ? Ai2 : NULL);
  const double t2 = omp_get_wtime();
  st[1] += t2 - t1; /* series and reduction together: "kernel_fft" */
  s2_backward(p, s, i, Ai, q_out, u_out, w);
  if (i2 >= 0) s2_backward(p, s, i2, Ai2, q_out, u_out, w);
  st[3] += omp_get_wtime() - t2;
}

static int s2_execute(arkcos_plan *p, const double *q, const double *u, double *q_out, double *u_out,
                      arkcos_error *err) {
  (void)err;
  s2_state *s = (s2_state *)p->impl;
  const arkcos_geometry *g = p->geom;
  const double t_start = omp_get_wtime();
  double st[5] = {0, 0, 0, 0, 0}; /* kernel_eval, kernel_fft (series), reduction, map_ifft, window's FFTs */
  /* 1. ring FFTs of the rings on the grid (a band plan: those its tasks
   * read; with a window: in step 2, as each thread reaches them); output
   * rings off the grid start at zero (the direct pairs add) */
#pragma omp parallel for schedule(dynamic, 4) num_threads(s->nthreads)
  for (int j = 0; j < g->nrings; j++) {
    double *w = s->work + (size_t)omp_get_thread_num() * s->wstride;
    if (!s->window && s->bidx[j] >= 0) s2_forward(p, s, j, q, u, w, s2_rows(p, s, NULL, j));
    if (!s->grid[j] && (!s->own || s->own[j])) {
      memset(q_out + g->rings[j].ofs, 0, sizeof(double) * (size_t)g->rings[j].nph);
      memset(u_out + g->rings[j].ofs, 0, sizeof(double) * (size_t)g->rings[j].nph);
    }
  }
  double t_mapfft = omp_get_wtime() - t_start;
  /* 2. per task (s2_task); with a window, chunk by chunk, each task after
   * the tasks up to ww ahead are in its thread's window (a chunk's first
   * task finds those up to ww behind it there too) */
#pragma omp parallel num_threads(s->nthreads) reduction(+ : st[:5])
  {
    double *w = s->work + (size_t)omp_get_thread_num() * s->wstride;
    if (!s->window) {
#pragma omp for schedule(dynamic, 1)
      for (int t = p->task_lo; t < p->task_hi; t++) s2_task(p, s, t, w, NULL, q_out, u_out, st);
    } else {
      double *win = s->wspec + (size_t)omp_get_thread_num() * (size_t)(2 * s->ww + 1) * 8 * s->rowp;
#pragma omp for schedule(dynamic, 1)
      for (int c = 0; c < s->nchunk; c++) {
        const int c0 = s->chunk0[c], c1 = s->chunk0[c + 1];
        int loaded = (c0 - s->ww > 0 ? c0 - s->ww : 0) - 1; /* the window holds tasks up to this one */
        for (int t = c0; t < c1; t++) {
          const double tf = omp_get_wtime();
          while (loaded < t + s->ww && loaded + 1 < p->ntasks) s2_window_load(p, s, ++loaded, q, u, w, win);
          st[4] += omp_get_wtime() - tf;
          s2_task(p, s, t, w, win, q_out, u_out, st);
        }
      }
    }
  }
  t_mapfft += st[4] / s->nthreads;
  /* 3. the direct pairs */
  double t_direct;
  if (arkcos_direct_apply_spin2(p, q, u, q_out, u_out, &t_direct))
    return arkcos_fail(err, ARKCOS_ENOMEM, "execute: out of memory for a ring pair's direct weights");
  arkcos_stage_times *T = &p->last;
  memset(T, 0, sizeof *T);
  T->map_fft = t_mapfft;
  T->kernel_eval = st[0] / s->nthreads;
  T->kernel_fft = st[1] / s->nthreads;
  T->reduction = st[2] / s->nthreads + t_direct;
  T->map_ifft = st[3] / s->nthreads;
  T->direct = t_direct;
  T->total = omp_get_wtime() - t_start;
  T->other = T->total - (T->map_fft + T->kernel_eval + T->kernel_fft + T->reduction + T->map_ifft);
  if (T->other < 0) T->other = 0;
  return ARKCOS_OK;
}

int arkcos_spin2_create(arkcos_plan *p, arkcos_error *err) {
  s2_state *s = (s2_state *)calloc(1, sizeof *s);
  if (!s) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  p->impl = s;
  p->execute = NULL;
  p->execute2 = s2_execute;
  p->destroy = s2_destroy;
  s->nthreads = p->opt.threads > 0 ? p->opt.threads : omp_get_max_threads();
  const arkcos_geometry *g = p->geom;
  s->L = p->L;
  s->nh = s->L / 2 + 1;
  s->rowp = (size_t)(s->nh + S2_BLOCK - 1) / S2_BLOCK * S2_BLOCK;
  s->bidx = malloc(sizeof(int) * (size_t)g->nrings);
  s->hs = malloc(sizeof(int64_t) * (size_t)g->nrings);
  s->grid = malloc((size_t)g->nrings + 1);
  if (!s->bidx || !s->hs || !s->grid) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  if (p->task_lo > 0 || p->task_hi < p->ntasks) {
    /* a band plan (MPI): spectra of the rings its tasks read, outputs of
     * the rings they write (arkcos_plan_rings_needed, as the estimate) */
    s->need = malloc((size_t)g->nrings + 1);
    s->own = calloc((size_t)g->nrings + 1, 1);
    if (!s->need || !s->own) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
    arkcos_plan_rings_needed(p, p->task_lo, p->task_hi, s->need);
    for (int t = p->task_lo; t < p->task_hi; t++) {
      const int i = p->task[t];
      s->own[i] = 1;
      if (p->mirror[i] >= 0) s->own[p->mirror[i]] = 1;
    }
  }
  int nb = 0;
  for (int i = 0; i < g->nrings; i++) {
    s->grid[i] = (unsigned char)arkcos_spin2_ring_on_grid(p, i);
    s->bidx[i] = s->grid[i] && (!s->need || s->need[i]) ? nb++ : -1;
    s->hs[i] = s->grid[i] ? (int64_t)floor(g->rings[i].phi0 * (double)s->L / ARKCOS_PI + 0.5) : 0;
  }
  size_t bytes = 0;
  if (nb > 0) {
    const int64_t L = s->L;
    /* the longest sample list and the most belt pairs of one ring */
    s->nsamp = 1;
    s->maxpairs = 1;
    for (int i = 0; i < g->nrings; i++) {
      if (!s->grid[i]) continue;
      int np = 0;
      for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
        if (!s->grid[j]) continue;
        np++;
        const double sdt = sin(0.5 * (g->rings[i].theta - g->rings[j].theta));
        const double half = arkcos_dphi_window(&p->kf, sdt * sdt, p->sin_theta[i] * p->sin_theta[j]);
        const double n = half >= ARKCOS_PI ? (double)L : floor(half * (double)L / (2 * ARKCOS_PI)) + 2;
        const int ns = n + 1 < (double)(L / 2 + 1) ? (int)n + 1 : (int)(L / 2 + 1);
        if (ns > s->nsamp) s->nsamp = ns;
      }
      if (np > s->maxpairs) s->maxpairs = np;
    }
    s->ncoef = 3 * (size_t)(s->nsamp + 1) * (size_t)s->maxpairs;
    const size_t pairdbl = (sizeof(s2_pair) * (size_t)s->maxpairs + 7) / 8;
    const size_t rp = s->rowp;
    s->xm = fftw_malloc(sizeof(double) * rp);
    s->cth = fftw_malloc(sizeof(double) * rp);
    s->sth = fftw_malloc(sizeof(double) * rp);
    s->s2t = fftw_malloc(sizeof(double) * rp);
    s->er = fftw_malloc(sizeof(double) * 2 * (size_t)L);
    s->ei = fftw_malloc(sizeof(double) * 2 * (size_t)L);
    /* the spectra: a row per ring, or per-thread windows (arkcos_spin2_window) */
    int len = 0;
    const int ww = arkcos_spin2_window(p, s->nthreads, 32.0 * (double)rp, 32.0 * (double)rp * nb, &len);
    size_t nspec = 4 * rp * (size_t)nb;
    if (ww >= 0) {
      s->window = 1;
      s->ww = ww;
      /* at most 8 chunks a thread (a chunk transforms 2 ww rings twice);
       * each task's sums are its own, whatever the chunks */
      s->chunk0 = arkcos_task_chunks(p, len, s->nthreads, &s->nchunk);
      s->tidx = arkcos_ring_tasks(p);
      if (!s->chunk0 || !s->tidx) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
      nspec = (size_t)s->nthreads * (size_t)(2 * ww + 1) * 8 * rp;
      s->wspec = fftw_malloc(sizeof(double) * nspec);
    } else {
      s->spec = fftw_malloc(sizeof(double) * nspec);
    }
    s->wstride = ((size_t)(4 * L) + 8 * rp + s->ncoef + pairdbl + 7) / 8 * 8;
    s->work = fftw_malloc(sizeof(double) * s->wstride * (size_t)s->nthreads);
    if (!s->xm || !s->cth || !s->sth || !s->s2t || !s->er || !s->ei || !(s->window ? s->wspec : s->spec) ||
        !s->work)
      return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory (spin-2 spectra need %.1f MB)",
                         8.0 * (double)nspec / 1e6);
    for (size_t m = 0; m < rp; m++) { /* padding entries repeat harmless angles */
      const double th = ARKCOS_PI * (double)m / (double)L;
      s->xm[m] = cos(2 * th);
      s->cth[m] = cos(th);
      s->sth[m] = sin(th);
      s->s2t[m] = sin(2 * th);
    }
    for (int64_t k = 0; k < 2 * L; k++) {
      s->er[k] = cos(ARKCOS_PI * (double)k / (double)L);
      s->ei[k] = -sin(ARKCOS_PI * (double)k / (double)L);
    }
    bytes += sizeof(double) * (nspec + s->wstride * (size_t)s->nthreads + 4 * rp + 4 * (size_t)L);
    /* split-format DFTs of length L, planned on the workspace's layout */
    fftw_iodim dim = {(int)L, 1, 1};
    double *w = s->work;
    const double tf = omp_get_wtime();
    arkcos_fftw_wisdom_load();
    pthread_mutex_lock(&arkcos_fftw_planner_lock);
    s->fwd = fftw_plan_guru_split_dft(1, &dim, 0, NULL, w, w + L, w + 2 * L, w + 3 * L, arkcos_fftw_flags());
    s->bwd = fftw_plan_guru_split_dft(1, &dim, 0, NULL, w + 1 * L, w, w + 3 * L, w + 2 * L, arkcos_fftw_flags());
    pthread_mutex_unlock(&arkcos_fftw_planner_lock);
    if (!s->fwd || !s->bwd) return arkcos_fail(err, ARKCOS_ERUNTIME, "plan: FFTW could not plan length %lld",
                                               (long long)L);
    arkcos_fftw_wisdom_save();
    p->setup.fftw += omp_get_wtime() - tf;
  }
  p->bytes = bytes;
  if (p->direct_caps) {
    const double tt = omp_get_wtime();
    int rc = arkcos_direct_create(p, s->nthreads, err);
    if (rc != ARKCOS_OK) return rc;
    p->setup.tables += omp_get_wtime() - tt;
  }
  return ARKCOS_OK;
}
