/*
 * cpu_reduce.h -- CPU stage "reduction": A_i[m] = sum_j H_ij[m] R_j[m] over
 * the ring pairs of each task (an output ring and its mirror), then the
 * task's output rings through the fold and inverse FFT (cpu_ringfft.h).
 * Part of the CPU backend template (see cpu_impl.h): included once per
 * precision, R / FFTWP / SFX set by cpu.c.
 *
 * Two schedules, chosen at plan time (s->pairsym):
 *   perring_stage  each task computes the spectra of all its pairs;
 *   pairsym_stage  each pair's real G once, added to both of its ends.
 */

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

/* One pair (i, j) of task t, j in task u >= t, G in kr (len modes): adds
 * to task t's slot A (own, unless a prologue) and, for u > t, to task u's
 * slot B (far, unless u is past the chunk). Ring spectra from the rows, or
 * from the thread's window win. */
/* Long on purpose: six straight vectorised loops, one per (own, far, mirror) case, chosen once per pair. */
static void SFX(pair_reduce)(const arkcos_plan *p, const SFX(cpu_state) *s, const R *win, int t, int j, int u,
                             const R *kr, int64_t len, R *A, R *B, int own, int far) {
  const size_t nmp = (size_t)s->nmp;
  const int i = p->task[t], i2 = p->mirror[i];
  const int two = i2 >= 0 && i2 != i;
  const int jm = two ? p->mirror[j] : j;
  const R *si, *qi;
  const R *sr = SFX(spec_rows)(p, s, win, j, &si), *qr = SFX(spec_rows)(p, s, win, jm, &qi);
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
  const R *s1i, *s2i;
  const R *s1r = SFX(spec_rows)(p, s, win, i, &s1i), *s2r = two ? SFX(spec_rows)(p, s, win, i2, &s2i) : s1r;
  if (!two) s2i = s1i;
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

/* st: kernel_eval, kernel_fft, reduction, map_ifft and, with a window, the
 * ring FFTs (st[4]): a chunk transforms the rings of its tasks and of the w
 * after them as it reaches them (its prologue's from the first), so that a
 * task's pairs find tasks t .. t + w in the window. */
static void SFX(pairsym_stage)(const arkcos_plan *p, const SFX(cpu_state) *s, const double *in, double *out,
                               double st[5]) {
  const int w = s->w;
#pragma omp parallel num_threads(s->nthreads) reduction(+ : st[:5])
  {
    const int tid = omp_get_thread_num();
    R *ws = s->work + (size_t)tid * s->wstride;
    R *hr = ws + WS(s, WS_HR), *hi = ws + WS(s, WS_HI);
    R *win = s->window ? s->wspec + (size_t)tid * (size_t)(s->ww + 1) * 4 * (size_t)s->wrow : NULL;
    const size_t nmp = (size_t)s->nmp;
#pragma omp for schedule(dynamic, 1)
    for (int c = 0; c < s->nchunk; c++) {
      const int c0 = s->chunk0[c], c1 = s->chunk0[c + 1];
      for (int t = c0; t <= c0 + w && t < c1; t++) SFX(slot_zero)(p, s, SFX(slot)(s, t, tid), t);
      const int tfirst = c0 - w > 0 ? c0 - w : 0;
      int loaded = tfirst - 1; /* the window holds tasks up to this one */
      for (int t = tfirst; t < c1; t++) {
        if (win) {
          const double tf = omp_get_wtime();
          while (loaded < t + w && loaded + 1 < p->ntasks) SFX(window_load)(p, s, in, win, ++loaded);
          st[4] += omp_get_wtime() - tf;
        }
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
          SFX(pair_reduce)(p, s, win, t, j, u, kr, SFX(pair_len)(p, s, i, j, &s->grid[used - 1]), A,
                           far ? SFX(slot)(s, u, tid) : NULL, own, far);
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

/* Per-ring path, complex H (kr, ki; len modes): A_i += H S_j and, with a
 * mirror (two), A_i2 += H S_j' in the same pass, H read once. */
static inline void SFX(pair_reduce_complex)(const arkcos_plan *p, const SFX(cpu_state) *s, int j, int two,
                                            const R *kr, const R *ki, int64_t len, R *a1r, R *a1i, R *a2r,
                                            R *a2i) {
  const R *sr = s->spec_re + s->spec_ofs[j], *si = s->spec_im + s->spec_ofs[j];
  if (two) { /* ring and mirror in one pass: H read once */
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
}

/* Task t of the per-ring path (ws: the thread's workspace): its
 * accumulators over all its pairs, then its output rings. st: the thread's
 * stage times (kernel_eval, kernel_fft, reduction, map_ifft). */
static inline void SFX(perring_task)(const arkcos_plan *p, const SFX(cpu_state) *s, R *ws, int t, double *out,
                                     double st[4]) {
  R *hr = ws + WS(s, WS_HR), *hi = ws + WS(s, WS_HI);
  R *a1r = ws + WS(s, WS_A1R), *a1i = ws + WS(s, WS_A1I);
  R *a2r = ws + WS(s, WS_A2R), *a2i = ws + WS(s, WS_A2I);
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
    const int64_t len = SFX(pair_len)(p, s, i, j, &s->grid[used - 1]); /* modes this pair fills */
    st[0] += t1 - t0;
    st[1] += t2 - t1;
    if (real) /* real G: half the multiplications (a1r .. a2i are consecutive rows) */
      SFX(pair_reduce)(p, s, NULL, t, j, t, kr, len, a1r, NULL, 1, 0);
    else
      SFX(pair_reduce_complex)(p, s, j, two, kr, ki, len, a1r, a1i, a2r, a2i);
    t0 = omp_get_wtime();
    st[2] += t0 - t2;
  }
  for (int pass = 0; pass < 1 + two; pass++) {
    const int io = pass ? i2 : i;
    R *ar = pass ? a2r : a1r, *ai = pass ? a2i : a1i;
    if (p->opt.mode != ARKCOS_MODE_PAPER) SFX(fold_out)(p, s, ws, io, ar, ai, amax, out);
    else SFX(paper_out)(p, s, ws, io, ar, ai, out);
  }
  double t3 = omp_get_wtime();
  st[3] += t3 - t0;
}

/* Stage "reduction" without pair symmetry: per output ring (and its
 * mirror): kernel samples, their spectra, the reduction over input rings;
 * then fold and inverse FFT */
static void SFX(perring_stage)(const arkcos_plan *p, const SFX(cpu_state) *s, double *out, double st[4]) {
#pragma omp parallel num_threads(s->nthreads) reduction(+ : st[:4])
  {
    R *ws = s->work + (size_t)omp_get_thread_num() * s->wstride;
#pragma omp for schedule(dynamic, 1)
    for (int t = p->task_lo; t < p->task_hi; t++) SFX(perring_task)(p, s, ws, t, out, st);
  }
}
