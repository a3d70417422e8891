/*
 * gpu_tables.h -- the host side of the CUDA backend's planning (gpu.cu):
 * ring and ring-pair tables, the batches of the map and kernel-grid FFTs,
 * the blocks of output rings and their arena layout, and the launch shapes
 * of the kernels in gpu_bodies.h. No CUDA calls: a host emulation of the
 * GPU pipeline (tests/test_gpu_emul.cpp) builds the same plan with it.
 *
 * Everything is in an unnamed namespace: private to the file including it.
 */
#ifndef ARKCOS_GPU_TABLES_H
#define ARKCOS_GPU_TABLES_H

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "arkcos/gpu_bodies.h"
#include "arkcos/plan_internal.h"

namespace {

const int NAUX = 4;               /* extra streams for the cap-ring FFTs */
const int64_t DIRECT_MAX = 48;    /* sparse pair: at most this many samples */
const int64_t RUN_ELEMS = 1 << 24; /* map FFT batches: at most 16M points */
const int KPLANS = 11;            /* kernel-grid batches 1, 2, 4, ..., 1024 */

/* A batched FFT: N points, rows transforms, distances in elements of the
 * input and output types; stream 0 is the main stream. */
struct fft_desc {
  int kind; /* 0: map r2c, 1: map c2r, 2: kernel-grid r2c */
  int64_t N, rows, idist, odist;
  int stream;
};
struct fft_item {
  int desc;
  int64_t in_off, out_off; /* elements of the input / output type */
};

/* Everything plan creation derives on the host; no CUDA calls. */
struct host_plan {
  int nr = 0, ntasks = 0, paper = 0;
  int64_t npix = 0, L = 0, Lp = 0, nm = 0, nmp = 0, osz = 0, P = 0, direct_max = DIRECT_MAX;
  int64_t fsize = 0; /* length of the FFT layout of the map */
  int padded = 0;    /* FFT layout differs from the map (odd ring offsets) */
  std::vector<int64_t> nph, ofs, oofs, pofs;
  std::vector<double> w, phi0;
  std::vector<int> mirror, task;
  std::vector<int64_t> tp;
  std::vector<int> pj, pcnt;
  std::vector<unsigned char> pkind;
  std::vector<int64_t> pn0, psoff, pord;
  std::vector<double> psdt2, pss, pdelta;
  std::vector<int64_t> fpre, dpre; /* dense pairs / sparse samples before pair p */
  /* direct pairs (gpu_bodies.h, dtables) and which rings the map FFTs need */
  std::vector<int> dti, dti2, dlanes;
  std::vector<int64_t> drows, dp;
  std::vector<unsigned char> dfour;
  std::vector<int> qj, qjm;
  std::vector<double> qsdt2, qss, qd0, qc0, qhw;
  std::vector<int> btask;
  std::vector<int64_t> brow;
  int64_t ndirect = 0;              /* direct pairs (each with its mirror) */
  std::vector<unsigned char> need_fwd, need_inv; /* ring read / written by a Fourier pair */
  std::vector<int> dftf, dfti; /* rings transformed by body_dft_r2c / body_dft_c2r */
  std::vector<std::pair<int64_t, int64_t>> zero; /* map ranges no path writes: set to 0 */
  /* Pinned maps overlap copies and compute: the direct tasks whose rings no
   * Fourier pair reads or writes (the polar caps: the first nbfirst thread
   * blocks) run as soon as their input (in_first) is on the device, and
   * their output (out_first) goes back while the belt is computed; the rest
   * of the map (in_rest, out_rest) follows. Map ranges (offset, count). */
  int64_t nbfirst = 0;
  std::vector<std::pair<int64_t, int64_t>> in_first, in_rest, out_first, out_rest;
  std::vector<fft_desc> desc;
  std::vector<fft_item> fwd, inv;
  int kdesc[KPLANS];
  int nkdesc = 0, naux = 0;
  std::vector<blockp> blocks;
  size_t arena = 0;
};

inline size_t align256(size_t x) { return (x + 255) / 256 * 256; }

/* Ring pairs in the CPU's order and with its arithmetic (cpu_impl.h). */
inline void hp_pairs(const arkcos_plan *p, host_plan *h) {
  const arkcos_ring *rg = p->geom->rings;
  const int64_t L = p->L;
  h->tp.assign((size_t)h->ntasks + 1, 0);
  int64_t nsamp = 0, nfft = 0, ndir = 0;
  for (int t = 0; t < h->ntasks; t++) {
    const int i = p->task[t];
    h->tp[t] = (int64_t)h->pj.size();
    for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
      if (arkcos_pair_is_direct(p, i, j)) continue; /* hp_direct: k_direct sums it */
      double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
      double sdt2 = sdt * sdt, ss = p->sin_theta[i] * p->sin_theta[j];
      double half = arkcos_dphi_window(&p->kf, sdt2, ss);
      double delta = h->paper ? 0.0 : rg[i].phi0 - rg[j].phi0;
      int64_t n0, n1;
      int64_t cnt = arkcos_sample_range(half, delta, L, &n0, &n1);
      if (cnt == 0) continue;
      const int dense = cnt > h->direct_max;
      h->pj.push_back(j);
      h->pcnt.push_back((int)cnt);
      h->pkind.push_back((unsigned char)dense);
      h->pn0.push_back(n0);
      h->psoff.push_back(nsamp);
      h->fpre.push_back(nfft);
      h->dpre.push_back(ndir);
      h->pord.push_back(dense ? nfft : ndir);
      h->psdt2.push_back(sdt2);
      h->pss.push_back(ss);
      h->pdelta.push_back(delta);
      nsamp += cnt;
      if (dense) nfft++;
      else ndir += cnt;
    }
  }
  h->P = (int64_t)h->pj.size();
  h->tp[h->ntasks] = h->P;
  h->psoff.push_back(nsamp);
  h->fpre.push_back(nfft);
  h->dpre.push_back(ndir);
}

typedef std::map<std::tuple<int, int64_t, int64_t, int64_t, int64_t>, int> fft_shapes;

/* The batch of map FFTs that starts at order[k], k < g1 (rings of length N
 * from k to g1 - 1): its rows and input / output steps. */
template <class In, class Out>
inline void hp_run_rows(const std::vector<int> &order, size_t k, size_t g1, int64_t in_min, int64_t out_min,
                        int64_t run_max, In in_off, Out out_off, int64_t *rows, int64_t *istep, int64_t *ostep) {
  *rows = 1;
  *istep = in_min;
  *ostep = out_min;
  if (k + 1 < g1) {
    int64_t is = in_off(order[k + 1]) - in_off(order[k]);
    int64_t os = out_off(order[k + 1]) - out_off(order[k]);
    if (is >= in_min && os >= out_min) {
      *istep = is;
      *ostep = os;
      while (k + *rows < g1 && *rows < run_max &&
             in_off(order[k + *rows]) - in_off(order[k + *rows - 1]) == is &&
             out_off(order[k + *rows]) - out_off(order[k + *rows - 1]) == os)
        (*rows)++;
    }
  }
  if (*rows == 1) {
    *istep = in_min;
    *ostep = out_min;
  }
}

/* The plan of a map FFT batch of this shape: found, or added to h->desc */
inline int hp_map_desc(host_plan *h, int dir, int64_t N, int64_t rows, int64_t istep, int64_t ostep,
                       fft_shapes *seen, int *rr) {
  auto key = std::make_tuple(dir, N, rows, istep, ostep);
  auto it = seen->find(key);
  if (it != seen->end()) return it->second;
  fft_desc fd;
  fd.kind = dir;
  fd.N = N;
  fd.rows = rows;
  fd.idist = istep;
  fd.odist = ostep;
  /* long batches on the main stream, the many small cap pairs spread
   * over the auxiliary streams so that they run concurrently */
  fd.stream = rows >= 3 ? 0 : 1 + ((*rr)++ % NAUX);
  const int d = (int)h->desc.size();
  h->desc.push_back(fd);
  (*seen)[key] = d;
  if (fd.stream > h->naux) h->naux = fd.stream;
  return d;
}

/* Map FFTs: rings of equal length whose map offsets and spectrum offsets
 * both advance by constant steps form one batched transform (the belt; a
 * north/south cap pair), at most RUN_ELEMS points per batch. dir 0: r2c
 * map -> spec rows; dir 1: c2r ospec -> map. Equal shapes share a plan. */
inline void hp_runs(host_plan *h, int dir, fft_shapes *seen, int *rr) {
  /* only the rings a Fourier pair reads (r2c) or writes (c2r): in an exact
   * plan the polar caps' rings take direct pairs only, and their FFTs (two
   * small batches per ring length, thousands of launches) are skipped */
  const std::vector<unsigned char> &need = dir == 0 ? h->need_fwd : h->need_inv;
  std::vector<int> order;
  for (int r = 0; r < h->nr; r++)
    if (need[(size_t)r]) order.push_back(r);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return h->nph[a] < h->nph[b]; });
  auto in_off = [&](int r) { return dir == 0 ? h->pofs[r] : h->oofs[r]; };
  auto out_off = [&](int r) { return dir == 0 ? (int64_t)r * h->nmp : h->pofs[r]; };
  size_t g0 = 0;
  while (g0 < order.size()) {
    size_t g1 = g0;
    const int64_t N = h->nph[order[g0]];
    while (g1 < order.size() && h->nph[order[g1]] == N) g1++;
    /* a length of at most two rings (a cap pair) in an enhanced plan: a
     * direct DFT (body_dft_*) instead of a cuFFT plan of its own */
    if (!h->paper && g1 - g0 <= 2) {
      for (size_t k = g0; k < g1; k++) (dir == 0 ? h->dftf : h->dfti).push_back(order[k]);
      g0 = g1;
      continue;
    }
    const int64_t half = N / 2 + 1;
    const int64_t in_min = dir == 0 ? N : half, out_min = dir == 0 ? half : N;
    const int64_t run_max = std::max<int64_t>(1, RUN_ELEMS / N);
    size_t k = g0;
    while (k < g1) {
      int64_t rows, istep, ostep;
      hp_run_rows(order, k, g1, in_min, out_min, run_max, in_off, out_off, &rows, &istep, &ostep);
      fft_item it2;
      it2.desc = hp_map_desc(h, dir, N, rows, istep, ostep, seen, rr);
      it2.in_off = in_off(order[k]);
      it2.out_off = out_off(order[k]);
      (dir == 0 ? h->fwd : h->inv).push_back(it2);
      k += (size_t)rows;
    }
    g0 = g1;
  }
}

/* Per-ring tables (lengths, offsets, weights, phases, mirrors), the output
 * spectra's offsets and the map's FFT layout */
inline void hp_rings(const arkcos_plan *p, host_plan *h) {
  const arkcos_geometry *g = p->geom;
  const int nr = g->nrings;
  h->nph.resize(nr);
  h->ofs.resize(nr);
  h->oofs.resize(nr);
  h->pofs.resize(nr);
  h->w.resize(nr);
  h->phi0.resize(nr);
  h->mirror.resize(nr);
  h->osz = 0;
  for (int r = 0; r < nr; r++) {
    h->nph[r] = g->rings[r].nph;
    h->ofs[r] = g->rings[r].ofs;
    h->w[r] = g->rings[r].weight;
    h->phi0[r] = g->rings[r].phi0;
    h->mirror[r] = p->mirror[r];
    h->oofs[r] = h->osz;
    h->osz += g->rings[r].nph / 2 + 1;
    if (g->rings[r].ofs % 2) h->padded = 1;
  }
  /* cuFFT needs 16-byte aligned real rows: with an odd ring offset the
   * rings are laid out again, each starting at an even offset */
  h->fsize = h->npix;
  if (h->padded) {
    h->fsize = 0;
    for (int r = 0; r < nr; r++) {
      h->pofs[r] = h->fsize;
      h->fsize += (g->rings[r].nph + 1) / 2 * 2;
    }
  } else {
    h->pofs = h->ofs;
  }
}

/* Kernel-grid FFT batches of 1, 2, 4, ... rows, up to the dense pairs' count */
inline void hp_kernel_plans(host_plan *h) {
  const int64_t nfft = h->fpre[(size_t)h->P];
  h->nkdesc = 0;
  for (int k = 0; k < KPLANS && ((int64_t)1 << k) <= nfft; k++) {
    fft_desc fd;
    fd.kind = 2;
    fd.N = h->L;
    fd.rows = (int64_t)1 << k;
    fd.idist = h->Lp;
    fd.odist = h->nmp;
    fd.stream = 0;
    h->kdesc[k] = (int)h->desc.size();
    h->desc.push_back(fd);
    h->nkdesc = k + 1;
  }
}

/* Which rings the Fourier pairs read and write: ring j (and its mirror)
 * of each pair, every task's ring (and its mirror) that has a pair. */
inline void hp_needs(const arkcos_plan *p, host_plan *h) {
  h->need_fwd.assign((size_t)h->nr, 0);
  h->need_inv.assign((size_t)h->nr, 0);
  for (int t = 0; t < h->ntasks; t++) {
    if (h->tp[t + 1] == h->tp[t]) continue;
    const int i = h->task[t], i2 = p->mirror[i];
    h->need_inv[(size_t)i] = 1;
    if (i2 >= 0) h->need_inv[(size_t)i2] = 1;
    for (int64_t q = h->tp[t]; q < h->tp[t + 1]; q++) {
      const int j = h->pj[(size_t)q], jm = p->mirror[j];
      h->need_fwd[(size_t)j] = 1;
      if (i2 >= 0 && i2 != i && jm >= 0) h->need_fwd[(size_t)jm] = 1;
    }
  }
}

/* The map ranges (offset, count) of the rings marked in `set`, merged
 * where they touch, in map order; and the rest of [0, npix) */
inline std::vector<std::pair<int64_t, int64_t>> hp_ranges(const host_plan *h, const std::vector<unsigned char> &set) {
  std::vector<int> rings;
  for (int r = 0; r < h->nr; r++)
    if (set[(size_t)r] && h->nph[(size_t)r] > 0) rings.push_back(r);
  std::sort(rings.begin(), rings.end(), [&](int a, int b) { return h->ofs[(size_t)a] < h->ofs[(size_t)b]; });
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int r : rings) {
    const int64_t a = h->ofs[(size_t)r], n = h->nph[(size_t)r];
    if (!out.empty() && out.back().first + out.back().second == a) out.back().second += n;
    else out.push_back(std::make_pair(a, n));
  }
  return out;
}
inline std::vector<std::pair<int64_t, int64_t>> hp_complement(const std::vector<std::pair<int64_t, int64_t>> &r,
                                                              int64_t npix) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t at = 0;
  for (const auto &q : r) {
    if (q.first > at) out.push_back(std::make_pair(at, q.first - at));
    at = std::max(at, q.first + q.second);
  }
  if (npix > at) out.push_back(std::make_pair(at, npix - at));
  return out;
}

/* The direct pairs of every task (pairs_direct.c's list: arkcos_pair_is_direct
 * and within the kernel's reach), their windows, the thread blocks of
 * k_direct (the first tasks' before the others'), the overlap ranges; and
 * the map ranges that neither path writes. */
inline void hp_direct(const arkcos_plan *p, host_plan *h) {
  const arkcos_ring *rg = p->geom->rings;
  std::vector<unsigned char> written(h->need_inv), in1((size_t)h->nr, 0), out1((size_t)h->nr, 0);
  std::vector<int> bfirst, blater;
  std::vector<int64_t> rfirst, rlater;
  for (int t = 0; t < h->ntasks; t++) {
    const int i = p->task[t], i2 = p->mirror[i];
    const int two = i2 >= 0 && i2 != i;
    const int64_t ni = rg[i].nph;
    const size_t q0 = h->qj.size();
    int lanes = ni % 4 == 0 ? 4 : 1;
    for (int j = p->jlo[i]; j <= p->jhi[i]; j++) {
      if (!arkcos_pair_is_direct(p, i, j)) continue;
      const int64_t nj = rg[j].nph;
      const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta));
      const double sdt2 = sdt * sdt, ss = p->sin_theta[i] * p->sin_theta[j];
      const double half = arkcos_dphi_window(&p->kf, sdt2, ss);
      if (half < 0) continue;
      h->qj.push_back(j);
      h->qjm.push_back(two ? p->mirror[j] : -1);
      h->qsdt2.push_back(sdt2);
      h->qss.push_back(ss);
      h->qd0.push_back(rg[i].phi0 - rg[j].phi0);
      h->qc0.push_back((rg[i].phi0 - rg[j].phi0) * (double)nj / (2 * ARKCOS_PI));
      h->qhw.push_back(half >= ARKCOS_PI ? (double)nj : half * (double)nj / (2 * ARKCOS_PI));
      if (nj % 4) lanes = 1;
    }
    if (h->qj.size() == q0) continue;
    const int dt = (int)h->dti.size();
    h->dti.push_back(i);
    h->dti2.push_back(two ? i2 : -1);
    h->dlanes.push_back(lanes);
    h->drows.push_back(ni / lanes);
    h->dp.push_back((int64_t)q0);
    h->dfour.push_back(h->need_inv[(size_t)i]);
    written[(size_t)i] = 1;
    if (two) written[(size_t)i2] = 1;
    /* first: no Fourier pair touches its rings, so its output is final
     * once it has run */
    const bool first = !h->need_inv[(size_t)i] && !h->need_fwd[(size_t)i] &&
                       (!two || (!h->need_inv[(size_t)i2] && !h->need_fwd[(size_t)i2]));
    if (first) {
      out1[(size_t)i] = 1;
      if (two) out1[(size_t)i2] = 1;
      for (size_t q = q0; q < h->qj.size(); q++) {
        in1[(size_t)h->qj[q]] = 1;
        if (h->qjm[q] >= 0) in1[(size_t)h->qjm[q]] = 1;
      }
    }
    for (int64_t r0 = 0; r0 < ni / lanes; r0 += DTPB) {
      (first ? bfirst : blater).push_back(dt);
      (first ? rfirst : rlater).push_back(r0);
    }
  }
  h->dp.push_back((int64_t)h->qj.size());
  h->ndirect = (int64_t)h->qj.size();
  h->nbfirst = (int64_t)bfirst.size();
  h->btask = bfirst;
  h->btask.insert(h->btask.end(), blater.begin(), blater.end());
  h->brow = rfirst;
  h->brow.insert(h->brow.end(), rlater.begin(), rlater.end());
  h->in_first = hp_ranges(h, in1);
  h->in_rest = hp_complement(h->in_first, h->npix);
  h->out_first = hp_ranges(h, out1);
  h->out_rest = hp_complement(h->out_first, h->npix);
  for (unsigned char &w : written) w = !w;
  h->zero = hp_ranges(h, written); /* the rings neither path writes */
}

/* The host plan: tables, pairs, FFT batches and kernel-grid batch plans. */
inline void hp_build(const arkcos_plan *p, host_plan *h, int64_t direct_max) {
  const arkcos_geometry *g = p->geom;
  h->nr = g->nrings;
  h->ntasks = p->ntasks;
  h->paper = p->opt.mode == ARKCOS_MODE_PAPER;
  h->npix = g->npix;
  h->L = p->L;
  h->nm = p->nm;
  h->direct_max = std::min(direct_max, p->L); /* at most every sample */
  const size_t csize = p->opt.precision == ARKCOS_SINGLE ? sizeof(cx<float>::T) : sizeof(cx<double>::T);
  const int64_t per = 128 / (int64_t)csize; /* rows aligned to 128 bytes */
  h->nmp = (h->nm + per - 1) / per * per;
  h->Lp = (h->L + 3) / 4 * 4; /* kernel-grid rows 16-byte aligned */
  hp_rings(p, h);
  h->task.assign(p->task, p->task + p->ntasks);
  hp_pairs(p, h);
  hp_needs(p, h);
  hp_direct(p, h);
  fft_shapes seen;
  int rr = 0;
  hp_runs(h, 0, &seen, &rr);
  hp_runs(h, 1, &seen, &rr);
  hp_kernel_plans(h);
}

/* Arena layout of a block with T tasks, F dense pairs and S sparse samples. */
inline void hp_layout(const host_plan *h, size_t rsize, int64_t T, int64_t F, int64_t S, blockp *b) {
  const size_t csize = 2 * rsize;
  b->acc = 0;
  b->hspec = align256((size_t)(2 * T * h->nmp) * csize);
  b->grid = b->hspec + align256((size_t)(F * h->nmp) * csize);
  b->dsamp = b->grid + align256((size_t)(F * h->Lp) * rsize);
  b->end = b->dsamp + align256((size_t)S * rsize);
}

/* Greedy blocks of whole tasks within `budget` arena bytes; a task whose
 * pairs alone exceed it is split over several blocks that hold only it.
 * Returns 0, or -1 if a single pair does not fit. */
inline int hp_blocks(host_plan *h, size_t rsize, size_t budget) {
  h->blocks.clear();
  h->arena = 0;
  int64_t t = 0, p = 0;
  blockp tmp;
  auto need = [&](int64_t T, int64_t pa, int64_t pb) {
    hp_layout(h, rsize, T, h->fpre[pb] - h->fpre[pa], h->dpre[pb] - h->dpre[pa], &tmp);
    return tmp.end;
  };
  while (t < h->ntasks) {
    blockp b;
    memset(&b, 0, sizeof b);
    b.ta = t;
    b.pa = p;
    int64_t T = 0;
    bool split = false;
    while (t < h->ntasks) {
      const int64_t pe = h->tp[t + 1];
      if (need(T + 1, b.pa, pe) <= budget) {
        T++;
        t++;
        p = pe;
        continue;
      }
      if (T == 0) { /* this task alone is too big: take what fits */
        int64_t q = p;
        while (q < pe && need(1, b.pa, q + 1) <= budget) q++;
        if (q == p) return -1;
        T = 1;
        p = q;
        split = true;
      }
      break;
    }
    b.tb = split ? t + 1 : t;
    b.pb = p;
    b.f0 = h->fpre[b.pa];
    b.nf = h->fpre[b.pb] - b.f0;
    b.d0 = h->dpre[b.pa];
    b.nd = h->dpre[b.pb] - b.d0;
    b.s0 = h->psoff[b.pa];
    b.ns = h->psoff[b.pb] - b.s0;
    hp_layout(h, rsize, b.tb - b.ta, b.nf, b.nd, &b);
    if (b.end > h->arena) h->arena = b.end;
    h->blocks.push_back(b);
  }
  return 0;
}

/* Smallest arena any block needs: one task's accumulators and its largest
 * pair. */
inline size_t hp_min_arena(const host_plan *h, size_t rsize) {
  blockp b;
  hp_layout(h, rsize, 1, 1, 0, &b);
  size_t dense = b.end;
  hp_layout(h, rsize, 1, 0, h->direct_max, &b);
  return std::max(dense, b.end);
}

/* The device tables laid out through put(src, bytes), which stores (or
 * only counts) one array and returns where the kernels will find it: a
 * device address inside one table image (gpu.cu), or src itself (a host
 * emulation). */
template <class Put> dtables hp_tables(const host_plan &h, Put &&put) {
  const size_t P = (size_t)h.P, nr = (size_t)h.nr, nt = (size_t)h.ntasks;
  dtables T;
  T.nph = (const int64_t *)put(h.nph.data(), nr * 8);
  T.ofs = (const int64_t *)put(h.ofs.data(), nr * 8);
  T.oofs = (const int64_t *)put(h.oofs.data(), nr * 8);
  T.pofs = (const int64_t *)put(h.pofs.data(), nr * 8);
  T.w = (const double *)put(h.w.data(), nr * 8);
  T.phi0 = (const double *)put(h.phi0.data(), nr * 8);
  T.mirror = (const int *)put(h.mirror.data(), nr * 4);
  T.nfwd = (const unsigned char *)put(h.need_fwd.data(), nr);
  T.ninv = (const unsigned char *)put(h.need_inv.data(), nr);
  T.task = (const int *)put(h.task.data(), nt * 4);
  T.tp = (const int64_t *)put(h.tp.data(), (nt + 1) * 8);
  T.pj = (const int *)put(h.pj.data(), P * 4);
  T.pcnt = (const int *)put(h.pcnt.data(), P * 4);
  T.pkind = (const unsigned char *)put(h.pkind.data(), P);
  T.pn0 = (const int64_t *)put(h.pn0.data(), P * 8);
  T.psoff = (const int64_t *)put(h.psoff.data(), (P + 1) * 8);
  T.pord = (const int64_t *)put(h.pord.data(), P * 8);
  T.psdt2 = (const double *)put(h.psdt2.data(), P * 8);
  T.pss = (const double *)put(h.pss.data(), P * 8);
  T.pdelta = (const double *)put(h.pdelta.data(), P * 8);
  const size_t nd = h.dti.size(), nq = h.qj.size(), nb = h.btask.size();
  T.dti = (const int *)put(h.dti.data(), nd * 4);
  T.dti2 = (const int *)put(h.dti2.data(), nd * 4);
  T.dlanes = (const int *)put(h.dlanes.data(), nd * 4);
  T.drows = (const int64_t *)put(h.drows.data(), nd * 8);
  T.dp = (const int64_t *)put(h.dp.data(), (nd + 1) * 8);
  T.dfour = (const unsigned char *)put(h.dfour.data(), nd);
  T.qj = (const int *)put(h.qj.data(), nq * 4);
  T.qjm = (const int *)put(h.qjm.data(), nq * 4);
  T.qsdt2 = (const double *)put(h.qsdt2.data(), nq * 8);
  T.qss = (const double *)put(h.qss.data(), nq * 8);
  T.qd0 = (const double *)put(h.qd0.data(), nq * 8);
  T.qc0 = (const double *)put(h.qc0.data(), nq * 8);
  T.qhw = (const double *)put(h.qhw.data(), nq * 8);
  T.dftf = (const int *)put(h.dftf.data(), h.dftf.size() * 4);
  T.dfti = (const int *)put(h.dfti.data(), h.dfti.size() * 4);
  T.btask = (const int *)put(h.btask.data(), nb * 4);
  T.brow = (const int64_t *)put(h.brow.data(), nb * 8);
  return T;
}

/* The twiddle table tw[q] = e^{-2 pi i q / L}, q < L, in precision R. */
template <class R> std::vector<typename cx<R>::T> hp_twiddles(int64_t L) {
  std::vector<typename cx<R>::T> tw((size_t)L);
  for (int64_t q = 0; q < L; q++) {
    double a = 2 * ARKCOS_PI * (double)q / (double)L;
    tw[(size_t)q].x = (R)cos(a);
    tw[(size_t)q].y = (R)-sin(a);
  }
  return tw;
}

/* A block's pieces of the arena at `arena`. */
inline void hp_place(blockp *b, void *arena) {
  b->acc_p = (char *)arena + b->acc;
  b->hspec_p = (char *)arena + b->hspec;
  b->grid_p = (char *)arena + b->grid;
  b->dsamp_p = (char *)arena + b->dsamp;
}

/* Kernel-grid FFTs of a block: batches of 1024 rows, then the binary digits
 * of the rest; the plan (index into kdesc) for the next batch when `left`
 * rows remain: 2^k rows. */
inline int hp_kbatch(const host_plan &h, int64_t left) {
  int k = h.nkdesc - 1;
  while (((int64_t)1 << k) > left) k--;
  return k;
}

/* Launch shapes (grid sizes; the block sizes are TPB and RTPB):
 *   k_weight, k_extend, k_unpack  nr blocks, one per ring
 *   k_eval    one thread per kernel sample of the block
 *   k_reduce  (tasks of the block) x grid_reduce_y, one thread per mode
 *   k_fold    (tasks of the block) x grid_fold_y x 2 (ring, mirror), one
 *             thread per output bin */
inline unsigned grid_eval(const blockp &b) { return (unsigned)((b.ns + TPB - 1) / TPB); }
inline unsigned grid_reduce_y(const host_plan &h) { return (unsigned)((h.nm + RTPB - 1) / RTPB); }
inline unsigned grid_fold_y(const host_plan &h) { return (unsigned)((h.L / 2 + 1 + TPB - 1) / TPB); }
/*   k_direct  one block of DTPB rows per entry of btask: the first
 *             nbfirst (grid_direct_first), then the others */
inline unsigned grid_direct(const host_plan &h) { return (unsigned)h.btask.size(); }
inline unsigned grid_direct_first(const host_plan &h) { return (unsigned)h.nbfirst; }

} /* namespace */

#endif
