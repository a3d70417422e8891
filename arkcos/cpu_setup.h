/*
 * cpu_setup.h -- CPU plan creation steps, run once per plan: the kernel
 * grids and cap-pair levels, the modes each ring spectrum and each task
 * needs, the pair-symmetry chunks, the buffers, the FFTW plans (from a
 * process-wide cache) and the optional cache of every pair's kernel
 * spectrum. Part of the CPU backend template (see cpu_impl.h): included
 * once per precision, R / FFTWP / SFX set by cpu.c.
 */

/* ---- process-wide FFTW plan cache: planning awkward lengths (4r, r with
 * large prime factors) is slow, and plans are immutable and thread-safe to
 * execute, so every arkcos plan shares them. */
typedef struct { int64_t n; unsigned flags; FFTWP(plan) r2c, c2r; } SFX(plan_entry);
static SFX(plan_entry) *SFX(cache);
static int SFX(ncache), SFX(capcache);

/* Returns the cached pair for length n and flags, planning it if needed
 * (*fresh += 1). Keyed by the flags too: a length that one geometry plans
 * with FFTW_ESTIMATE (a cap ring) and another with FFTW_MEASURE (its
 * kernel grid) gets both, so a plan's FFTs do not depend on which plans the
 * process made before (docs/MPI.md). */
static SFX(plan_entry) *SFX(plans_for)(int64_t n, unsigned flags, int *fresh) {
  SFX(plan_entry) *e = NULL;
  pthread_mutex_lock(&arkcos_fftw_planner_lock);
  for (int i = 0; i < SFX(ncache); i++)
    if (SFX(cache)[i].n == n && SFX(cache)[i].flags == flags) {
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
        e->flags = flags;
        e->r2c = p1;
        e->c2r = p2;
        (*fresh)++;
      }
    }
    FFTWP(free)(a);
    FFTWP(free)(b);
  }
out:
  pthread_mutex_unlock(&arkcos_fftw_planner_lock);
  return e;
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
  if (!G->cos_m || !G->sin_m || !G->ch_m) return -1;
  for (int64_t m = 0; m < G->rowlen; m++) {
    G->cos_m[m] = m < G->nm ? cos(2 * ARKCOS_PI * (double)m / (double)L) : 0;
    G->sin_m[m] = m < G->nm ? sin(2 * ARKCOS_PI * (double)m / (double)L) : 0;
    G->ch_m[m] = m < G->nm ? cos(ARKCOS_PI * (double)m / (double)L) : 0;
  }
  *bytes += 3 * sizeof(double) * (size_t)G->rowlen;
  return s->ngrid++;
}

/* Oversampling q, the kernel grids (L, then the cap-pair levels q L / 2^s
 * down to 16 points), s_ref, each grid's half grid, and the row length nmp */
static int SFX(setup_grids)(arkcos_plan *p, SFX(cpu_state) *s, size_t *bytes, arkcos_error *err) {
  const int nr = p->geom->nrings;
  const arkcos_ring *rg = p->geom->rings;
  /* oversampling of cap pairs: enhanced mode only, and only where rings
   * of different lengths meet */
  int uniform = 1;
  for (int j = 0; j < nr; j++) uniform &= rg[j].nph == p->L;
  const int paper = p->opt.mode == ARKCOS_MODE_PAPER;
  s->q = arkcos_caps_oversample(p);
  if (paper || uniform || p->direct_caps) s->q = 1; /* direct caps: belt pairs only */
  s->Lacc = s->q * p->L;
  s->bl_scale = arkcos_band_scale(p); /* pair_len */
  s->nmacc = s->Lacc / 2 + 1;
  /* kernel grids: L, then the cap-pair levels q L / 2^s down to 16 points */
  int ok = SFX(grid_add)(s, p->L, bytes) == 0;
  /* coarser cap-pair grids: not when oversample is 1 (the 4 nside grid
   * everywhere, as DESIGN.md and the GPU backend have it), nor for kernels
   * with a large jump at the cutoff (a top-hat: the jump, not the width,
   * sets the spectrum there) */
  const int coarsen = p->opt.oversample != 1 && arkcos_cut_level(&p->kf) <= 1e-3;
  s->sym = (coarsen || p->direct_caps) && !paper && !uniform;
  if (!paper && !uniform && !p->direct_caps) {
    for (int lv = 0; lv < ARKCOS_MAX_GRIDS - 1 && ok; lv++) {
      const int64_t Ls = s->Lacc >> lv;
      if (lv > 0 && (!coarsen || s->Lacc % ((int64_t)2 << lv) != 0 || Ls < 16)) break;
      int g = SFX(grid_add)(s, Ls, bytes);
      ok = g >= 0;
      s->levL[s->nlev] = Ls;
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
  return ARKCOS_OK;
}

/* Which modes each ring's spectrum and each task's accumulators need */
static int SFX(setup_extents)(arkcos_plan *p, SFX(cpu_state) *s, arkcos_error *err) {
  const int nr = p->geom->nrings;
  s->ring_nm = (int64_t *)calloc((size_t)nr, sizeof(int64_t));
  s->spec_ofs = (size_t *)calloc((size_t)nr + 1, sizeof(size_t));
  s->task_nm = (int64_t *)calloc((size_t)p->ntasks, sizeof(int64_t));
  if (!s->ring_nm || !s->spec_ofs || !s->task_nm) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  for (int t = p->task_lo; t < p->task_hi; t++) { /* a band plan: its tasks' rings only */
    const int i = p->task[t], i2 = p->mirror[i];
    for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
      const SFX(kgrid_t) *G = &s->grid[SFX(pair_grid)(p, s, i, j)];
      if (!SFX(pair_reached)(p, i, j, G->L)) continue;
      if (G->nm > s->task_nm[t]) s->task_nm[t] = G->nm;
      if (G->nm > s->ring_nm[j]) s->ring_nm[j] = G->nm;
      if (i2 >= 0 && i2 != i && G->nm > s->ring_nm[p->mirror[j]]) s->ring_nm[p->mirror[j]] = G->nm;
    }
  }
  return ARKCOS_OK;
}

/* Pair symmetry: the task of every ring; the farthest task a task's pairs
 * reach (w); whether every reached pair is real and reached from both
 * ends; then the chunks and each thread's ring of w + 1 slots */
static int SFX(setup_pairsym)(arkcos_plan *p, SFX(cpu_state) *s, size_t *bytes, arkcos_error *err) {
  if (!(s->tidx = arkcos_ring_tasks(p))) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
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
   * pairs), at most 32 (under 7% for compact kernels). With fewer than 4
   * the threads would idle, so then each pair is computed twice, as without
   * the symmetry: that choice does not depend on the threads. The chunks
   * themselves do, at most 8 a thread (fewer prologues, and with a window
   * fewer rings transformed twice, where threads are few): a task's sums do
   * not depend on where the chunks start (pairsym_stage). Each thread's
   * ring of w + 1 slots is counted in the plan. */
  s->slot_sz = 4 * (size_t)s->nmp;
  s->nchunk = 0;
  int len = 1;
  if (s->w > 0) {
    len = 2 * (s->w + 1);
    if (len < (p->ntasks + 31) / 32) len = (p->ntasks + 31) / 32;
    s->nchunk = p->ntasks / len;
  }
  s->pairsym = psym && s->nchunk >= 4;
  if (s->pairsym) {
    /* a band plan (task_lo, task_hi) chunks its own tasks alike; a task's
     * sums do not depend on where the chunks start (see pairsym_stage) */
    s->chunk0 = arkcos_task_chunks(p, len, s->nthreads, &s->nchunk);
    s->tslots = (R *)FFTWP(malloc)(sizeof(R) * s->slot_sz * (size_t)((s->w + 1) * s->nthreads));
    if (!s->chunk0 || !s->tslots) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
    *bytes += sizeof(R) * s->slot_sz * (size_t)((s->w + 1) * s->nthreads);
  }
  return ARKCOS_OK;
}

/* Ring spectra (rows of 64-byte multiples, or per-thread windows of them:
 * arkcos_spectra_window), per-thread workspaces, the per-ring FFTW plan
 * tables; sets p->bytes */
static int SFX(setup_buffers)(arkcos_plan *p, SFX(cpu_state) *s, size_t bytes, arkcos_error *err) {
  const int nr = p->geom->nrings;
  int64_t rowmax = 0;
  for (int j = 0; j < nr; j++) { /* rows of 64-byte multiples */
    const int64_t row = (s->ring_nm[j] + 7) / 8 * 8;
    s->spec_ofs[j + 1] = s->spec_ofs[j] + (size_t)row;
    if (row > rowmax) rowmax = row;
  }
  size_t spec_n = s->spec_ofs[nr];
  const int ww = s->pairsym && rowmax > 0
                     ? arkcos_spectra_window(p, s->nthreads, (double)sizeof(R) * (double)rowmax,
                                             2.0 * sizeof(R) * (double)spec_n)
                     : -1;
  if (ww >= 0) {
    s->window = 1;
    s->ww = ww;
    s->wrow = rowmax;
    spec_n = (size_t)s->nthreads * (size_t)(ww + 1) * 4 * (size_t)rowmax;
    s->wspec = (R *)FFTWP(malloc)(sizeof(R) * spec_n);
  } else {
    s->spec_re = (R *)FFTWP(malloc)(sizeof(R) * (spec_n ? spec_n : 1));
    s->spec_im = (R *)FFTWP(malloc)(sizeof(R) * (spec_n ? spec_n : 1));
    arkcos_hint_huge(s->spec_re, sizeof(R) * spec_n);
    arkcos_hint_huge(s->spec_im, sizeof(R) * spec_n);
    spec_n *= 2;
  }
  s->wstride = WS(s, WS_SIZE);
  s->work = (R *)FFTWP(malloc)(sizeof(R) * s->wstride * (size_t)s->nthreads);
  s->r2c = (FFTWP(plan) *)calloc((size_t)nr, sizeof(FFTWP(plan)));
  s->c2r = (FFTWP(plan) *)calloc((size_t)nr, sizeof(FFTWP(plan)));
  if ((s->window ? !s->wspec : !s->spec_re || !s->spec_im) || !s->work || !s->r2c || !s->c2r)
    return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory (ring spectra need %.1f MB)",
                       sizeof(R) * (double)spec_n / 1e6);
  memset(s->work, 0, sizeof(R) * s->wstride * (size_t)s->nthreads);
  p->bytes = bytes + sizeof(R) * (spec_n + s->wstride * (size_t)s->nthreads);
  return ARKCOS_OK;
}

/* Rings shorter than L that the plan transforms (used, or read by Fourier
 * pairs): Bluestein's DFTs (bluestein.c), one per distinct length, made in
 * parallel (each mirror ring shares its partner's); the per-thread double
 * workspaces; their bytes into p->bytes. */
static int SFX(setup_bluestein)(arkcos_plan *p, SFX(cpu_state) *s, const unsigned char *used, arkcos_error *err) {
  const int nr = p->geom->nrings;
  const arkcos_ring *rg = p->geom->rings;
  s->blue = (arkcos_bluestein **)calloc((size_t)nr, sizeof *s->blue);
  s->blue_own = (arkcos_bluestein **)calloc((size_t)nr, sizeof *s->blue_own);
  int *bring = (int *)malloc(sizeof(int) * ((size_t)nr + 1));
  if (!s->blue || !s->blue_own || !bring) {
    free(bring);
    return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  }
  /* paper mode keeps FFTW's plans for every ring (the paper's algorithm,
   * as benchmarked; its planning is not a one-call concern) */
  const int paper_mode = p->opt.mode == ARKCOS_MODE_PAPER;
  for (int j = 0; j < nr && !paper_mode; j++) {
    const int jm = p->mirror[j];
    if ((!used[j] && s->ring_nm[j] == 0) || rg[j].nph == p->L || rg[j].nph % 2) continue;
    if (jm >= 0 && jm < j && rg[jm].nph == rg[j].nph && (used[jm] || s->ring_nm[jm])) continue;
    bring[s->nblue++] = j;
  }
  int bfail = 0;
  size_t bmax = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(s->nthreads) reduction(| : bfail) reduction(max : bmax)
  for (int b = 0; b < s->nblue; b++) {
    s->blue_own[b] = arkcos_bluestein_create(rg[bring[b]].nph);
    if (!s->blue_own[b]) bfail = 1;
    else if (arkcos_bluestein_work(s->blue_own[b]) > bmax) bmax = arkcos_bluestein_work(s->blue_own[b]);
  }
  double bbytes = 0; /* a length's record; its chirp and spectrum are the work buffer's */
  for (int b = 0; b < s->nblue; b++) {
    s->blue[bring[b]] = s->blue_own[b];
    if (s->blue_own[b]) bbytes += 64;
  }
  for (int j = 0; j < nr; j++) {
    const int jm = p->mirror[j];
    if (!s->blue[j] && jm >= 0 && s->blue[jm] && rg[jm].nph == rg[j].nph) s->blue[j] = s->blue[jm];
  }
  free(bring);
  int64_t nmax = 0;
  for (int j = 0; j < nr; j++)
    if (s->blue[j] && rg[j].nph > nmax) nmax = rg[j].nph;
  s->bwstride = (bmax + 2 * (size_t)nmax + 16 + 7) / 8 * 8;
  if (s->nblue) s->bwork = (double *)FFTWP(malloc)(sizeof(double) * s->bwstride * (size_t)s->nthreads);
  if (bfail || (s->nblue && !s->bwork))
    return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory (the caps' ring DFTs)");
  for (int t = 0; t < s->nthreads && s->bwork; t++) /* no chirp prepared yet (bluestein.c) */
    memset(s->bwork + (size_t)t * s->bwstride, 0, sizeof(double) * 8);
  p->bytes += (size_t)bbytes + sizeof(double) * s->bwstride * (size_t)s->nthreads;
  return ARKCOS_OK;
}

/* FFTW plans of every ring length and kernel grid, from the process-wide
 * cache; wisdom saved when some had to be planned */
static int SFX(setup_fftw)(arkcos_plan *p, SFX(cpu_state) *s, arkcos_error *err) {
  const int nr = p->geom->nrings;
  const arkcos_ring *rg = p->geom->rings;
  arkcos_fftw_wisdom_load();
  /* the rings this plan transforms: those Fourier pairs read (ring_nm) and
   * its output rings; a band plan (MPI) leaves the others unplanned, whose
   * FFTW plans would cost about 20 nside^2 bytes over the caps' lengths */
  unsigned char *used = (unsigned char *)calloc((size_t)nr + 1, 1);
  if (!used) return arkcos_fail(err, ARKCOS_ENOMEM, "plan: out of memory");
  /* output rings that some Fourier pair writes into: a cap ring of an
   * exact plan with direct caps gets only direct sums (fold_out writes its
   * zeros), and planning the caps' awkward lengths costs seconds (FFTW
   * takes 1-4 ms per length even estimated: 3.9 s for nside 512's 512) */
  for (int t = p->task_lo; t < p->task_hi; t++) {
    if (s->task_nm[t] == 0) continue;
    used[p->task[t]] = 1;
    if (p->mirror[p->task[t]] >= 0) used[p->mirror[p->task[t]]] = 1;
  }
  int fresh = 0, last = -1;
  const int brc = SFX(setup_bluestein)(p, s, used, err);
  if (brc != ARKCOS_OK) {
    free(used);
    return brc;
  }
  for (int j = 0; j < nr; j++) {
    if (!used[j] && s->ring_nm[j] == 0) continue;
    if (s->blue[j]) continue;
    int64_t N = rg[j].nph;
    if (last >= 0 && rg[last].nph == N) {
      s->r2c[j] = s->r2c[last];
      s->c2r[j] = s->c2r[last];
      continue;
    }
    last = j;
    SFX(plan_entry) *e = SFX(plans_for)(N, N == p->L ? arkcos_fftw_flags() : FFTW_ESTIMATE, &fresh);
    if (!e) {
      free(used);
      return arkcos_fail(err, ARKCOS_ERUNTIME, "plan: FFTW could not plan length %lld", (long long)N);
    }
    s->r2c[j] = e->r2c;
    s->c2r[j] = e->c2r;
  }
  free(used);
  for (int g = 0; g < s->ngrid; g++) {
    SFX(plan_entry) *e = SFX(plans_for)(s->grid[g].L, arkcos_fftw_flags(), &fresh);
    if (!e) return arkcos_fail(err, ARKCOS_ERUNTIME, "plan: FFTW could not plan the kernel grid");
    s->grid[g].kplan = e->r2c;
  }
  if (fresh) arkcos_fftw_wisdom_save();
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
  for (int t = p->task_lo - s->w > 0 ? p->task_lo - s->w : 0; t < p->task_hi; t++) {
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
  /* a band plan: its tasks and the w before them (their pairs into the
   * band, read by the first chunk's prologue) */
  const int tlo = p->task_lo - s->w > 0 ? p->task_lo - s->w : 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(s->nthreads)
  for (int t = tlo; t < p->task_hi; t++) {
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
