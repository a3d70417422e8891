/*
 * test_gpu_emul.cpp -- the CUDA backend's pipeline run on the host. Plan
 * creation is gpu.cu's (gpu_tables.h: ring and pair tables, FFT batches,
 * blocks of output rings, arena layout); every kernel launch becomes loops
 * over its blocks and threads calling the kernel's body (gpu_bodies.h, the
 * code the device runs); every cuFFT plan becomes the FFTW plan of the same
 * shape (rank 1, batch, distances). Device memory is host memory filled with
 * NaN, so that a read of anything the pipeline has not written shows in the
 * result.
 *
 * Not emulated: streams, events and CUDA graphs (the emulation runs the
 * work in issue order, the order their dependencies preserve), the pinned
 * staging ring and its copy threads (a plain conversion to R and back), and
 * the device memory query (the arena budget is a parameter, as
 * ARKCOS_GPU_ARENA_BYTES caps it).
 *
 * References, in the precision and mode of each case:
 *  - the CPU backend, the whole map (in enhanced mode the CPU sums the ring
 *    pairs off the kernel grid from pairs_direct.c's tables, the GPU with
 *    body_direct, each weight computed where it is used);
 *  - the same algorithm written out with plain DFTs (textbook below; its
 *    direct pairs by brute force), the whole map in both modes;
 *  - in the equatorial belt, a brute-force direct sum (enhanced mode is
 *    exact there).
 * Metric: rms(a - b) / rms(b).
 */
#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <vector>

#include "arkcos/gpu_tables.h"
#include "tests/testkernels.h"
#include "tests/testlib.h"

#define DEG (ARKCOS_PI / 180)

namespace {

/* ------------------------------------------------------ cuFFT as FFTW */

/* cufftMakePlanMany64(rank 1, n = {N}, stride 1, idist, odist, batch rows)
 * and its exec calls; FFTW_UNALIGNED so that one plan serves every offset,
 * as one cuFFT plan serves every pointer. */
template <class R> struct fft;
template <> struct fft<double> {
  typedef fftw_plan plan;
  static plan make(const fft_desc &fd) {
    int n = (int)fd.N, rows = (int)fd.rows, id = (int)fd.idist, od = (int)fd.odist;
    const unsigned fl = FFTW_ESTIMATE | FFTW_UNALIGNED;
    double *re = fftw_alloc_real((size_t)rows * (size_t)(fd.kind == 1 ? od : id));
    fftw_complex *c = fftw_alloc_complex((size_t)rows * (size_t)(fd.kind == 1 ? id : od));
    plan p = fd.kind == 1 ? fftw_plan_many_dft_c2r(1, &n, rows, c, nullptr, 1, id, re, nullptr, 1, od, fl)
                          : fftw_plan_many_dft_r2c(1, &n, rows, re, nullptr, 1, id, c, nullptr, 1, od, fl);
    fftw_free(re);
    fftw_free(c);
    return p;
  }
  static void r2c(plan p, double *in, cx<double>::T *out) { fftw_execute_dft_r2c(p, in, (fftw_complex *)out); }
  static void c2r(plan p, cx<double>::T *in, double *out) { fftw_execute_dft_c2r(p, (fftw_complex *)in, out); }
  static void destroy(plan p) { fftw_destroy_plan(p); }
};
template <> struct fft<float> {
  typedef fftwf_plan plan;
  static plan make(const fft_desc &fd) {
    int n = (int)fd.N, rows = (int)fd.rows, id = (int)fd.idist, od = (int)fd.odist;
    const unsigned fl = FFTW_ESTIMATE | FFTW_UNALIGNED;
    float *re = fftwf_alloc_real((size_t)rows * (size_t)(fd.kind == 1 ? od : id));
    fftwf_complex *c = fftwf_alloc_complex((size_t)rows * (size_t)(fd.kind == 1 ? id : od));
    plan p = fd.kind == 1 ? fftwf_plan_many_dft_c2r(1, &n, rows, c, nullptr, 1, id, re, nullptr, 1, od, fl)
                          : fftwf_plan_many_dft_r2c(1, &n, rows, re, nullptr, 1, id, c, nullptr, 1, od, fl);
    fftwf_free(re);
    fftwf_free(c);
    return p;
  }
  static void r2c(plan p, float *in, cx<float>::T *out) { fftwf_execute_dft_r2c(p, in, (fftwf_complex *)out); }
  static void c2r(plan p, cx<float>::T *in, float *out) { fftwf_execute_dft_c2r(p, (fftwf_complex *)in, out); }
  static void destroy(plan p) { fftwf_destroy_plan(p); }
};

/* --------------------------------------------------------- launches */

int g_reverse = 0; /* run blocks and threads in decreasing order */

/* One launch of gridDim (gx, gy, gz) x blockDim bd: fn(blockIdx.x, .y, .z,
 * threadIdx.x) for every thread, one after the other (no body synchronises
 * threads, so any order must give the same result). */
template <class F> void launch(unsigned gx, unsigned gy, unsigned gz, unsigned bd, F &&fn) {
  const uint64_t nb = (uint64_t)gx * gy * gz;
  for (uint64_t i = 0; i < nb; i++) {
    const uint64_t b = g_reverse ? nb - 1 - i : i;
    const unsigned bx = (unsigned)(b % gx), by = (unsigned)(b / gx % gy), bz = (unsigned)(b / ((uint64_t)gx * gy));
    for (unsigned t = 0; t < bd; t++) fn(bx, by, bz, g_reverse ? bd - 1 - t : t);
  }
}

/* ------------------------------------------------- the emulated plan */

struct emu_opts {
  int64_t direct_max = DIRECT_MAX; /* ARKCOS_GPU_DIRECT_MAX */
  size_t arena_bytes = 0;          /* ARKCOS_GPU_ARENA_BYTES; 0: no cap */
  int min_arena = 0;               /* 1: the smallest arena plan creation allows */
  int overlap = 0;                 /* 1: execute_overlap's order (pinned maps) */
};

struct emu_stats {
  int64_t dense = 0, sparse = 0; /* ring pairs by kernel path */
  int64_t blocks = 0, split = 0; /* blocks of output rings; blocks ending inside a task */
  int64_t dft = 0, ffts = 0;     /* rings by direct DFT (both ways); cuFFT plans */
};

/* The device state of gpu.cu's create_t, in host memory. */
template <class R> struct emu_plan {
  typedef typename cx<R>::T C;
  typedef typename fft<R>::plan fplan;
  host_plan h;
  dtables T;
  arkcos_kfun kf;
  std::vector<R> map, fmap, xin; /* xin: the input, kept for the direct pairs */
  std::vector<C> spec, ospec, tw;
  std::vector<cx<double>::T> arena; /* bytes, 16-byte aligned */
  std::vector<fplan> plan;
  emu_stats st;

  ~emu_plan() {
    for (fplan q : plan) fft<R>::destroy(q);
  }

  /* create_t without the device: 0, or -1 if no block fits the budget */
  int create(const arkcos_plan *p, const emu_opts &o) {
    const size_t rs = sizeof(R);
    hp_build(p, &h, o.direct_max);
    T = hp_tables(h, [](const void *src, size_t) { return src; });
    tw = hp_twiddles<R>(h.L);
    kf = p->kf;
    for (int64_t q = 0; q < h.P; q++) (h.pkind[(size_t)q] ? st.dense : st.sparse)++;
    size_t budget = (size_t)4 << 30;
    if (o.arena_bytes) budget = std::min(budget, o.arena_bytes);
    if (o.min_arena) budget = hp_min_arena(&h, rs);
    if (hp_blocks(&h, rs, budget) != 0) return -1;
    std::vector<int64_t>().swap(h.fpre); /* as create_t: not used after the block layout */
    std::vector<int64_t>().swap(h.dpre);
    st.blocks = (int64_t)h.blocks.size();
    st.dft = (int64_t)(h.dftf.size() + h.dfti.size());
    st.ffts = (int64_t)h.desc.size();
    for (const blockp &b : h.blocks) st.split += b.pb < h.tp[(size_t)b.tb];
    /* cudaMalloc'd memory holds anything: NaN here */
    const R nan = (R)NAN;
    C cnan;
    cnan.x = cnan.y = nan;
    map.assign((size_t)h.npix, nan);
    if (h.ndirect > 0) xin.assign((size_t)h.npix, nan);
    if (h.padded) fmap.assign((size_t)h.fsize, nan);
    spec.assign((size_t)(h.nr * h.nmp), cnan);
    ospec.assign((size_t)h.osz, cnan);
    arena.resize(h.arena / sizeof(arena[0]) + 1);
    memset((void *)arena.data(), 0xff, arena.size() * sizeof(arena[0]));
    for (const fft_desc &fd : h.desc) plan.push_back(fft<R>::make(fd));
    for (fplan q : plan)
      if (!q) return -1;
    return 0;
  }

  R *fm() { return h.padded ? fmap.data() : map.data(); }
  R *xi() { return h.ndirect > 0 ? xin.data() : map.data(); }

  /* issue_forward: map -> spec */
  void forward() {
    R *mp = xi(), *fp = fm();
    C *sp = spec.data();
    const dtables t = T;
    launch((unsigned)h.nr, 1, 1, TPB, [&](unsigned bx, unsigned, unsigned, unsigned tx) {
      body_weight<R>(mp, fp, t, bx, tx, TPB);
    });
    for (const fft_item &it : h.fwd) fft<R>::r2c(plan[(size_t)it.desc], fp + it.in_off, sp + it.out_off);
    const int64_t nmp0 = h.nmp;
    if (!h.dftf.empty())
      launch((unsigned)h.dftf.size(), 1, 1, TPB, [&](unsigned bx, unsigned, unsigned, unsigned tx) {
        body_dft_r2c<R>(fp, sp, t, nmp0, bx, tx, TPB);
      });
    const int64_t nm = h.nm, nmp = h.nmp;
    const int paper = h.paper;
    launch((unsigned)h.nr, 1, 1, TPB, [&](unsigned bx, unsigned, unsigned, unsigned tx) {
      body_extend<R>(sp, t, nm, nmp, paper, bx, tx, TPB);
    });
  }

  /* issue_inverse: ospec -> map */
  void inverse() {
    R *mp = map.data(), *fp = fm();
    for (const fft_item &it : h.inv) fft<R>::c2r(plan[(size_t)it.desc], ospec.data() + it.in_off, fp + it.out_off);
    if (!h.dfti.empty()) {
      const dtables t = T;
      const C *op = ospec.data();
      launch((unsigned)h.dfti.size(), 1, 1, TPB, [&](unsigned bx, unsigned, unsigned, unsigned tx) {
        body_dft_c2r<R>(op, fp, t, bx, tx, TPB);
      });
    }
    if (h.padded) {
      const dtables t = T;
      launch((unsigned)h.nr, 1, 1, TPB, [&](unsigned bx, unsigned, unsigned, unsigned tx) {
        body_unpack<R>(mp, fp, t, bx, tx, TPB);
      });
    }
  }

  /* execute_body: h2d, forward, the blocks of output rings, inverse, d2h */
  void execute(const double *in, double *out, int overlap = 0) {
    R *x = xi();
    std::vector<double> early; /* the output that execute_overlap copies back early */
    if (overlap && h.nbfirst > 0) {
      /* execute_overlap: the caps' input only, their direct pairs, their
       * output copied back now; then the rest of the input */
      for (const auto &q : h.in_first)
        for (int64_t k = q.first; k < q.first + q.second; k++) x[k] = (R)in[k];
      direct_blocks(0, grid_direct_first(h));
      for (const auto &q : h.out_first)
        for (int64_t k = q.first; k < q.first + q.second; k++) early.push_back((double)map[(size_t)k]);
      for (const auto &q : h.in_rest)
        for (int64_t k = q.first; k < q.first + q.second; k++) x[k] = (R)in[k];
    } else {
      for (int64_t k = 0; k < h.npix; k++) x[k] = (R)in[k];
      overlap = 0;
    }
    forward();
    const double twopi_L = 2 * ARKCOS_PI / (double)h.L, invL = 1.0 / (double)h.L;
    const unsigned my = grid_reduce_y(h), fy = grid_fold_y(h);
    const int64_t L = h.L, Lp = h.Lp, nm = h.nm, nmp = h.nmp;
    const int paper = h.paper;
    const dtables t = T;
    const arkcos_kfun k = kf;
    for (size_t bi = 0; bi < h.blocks.size(); bi++) {
      blockp b = h.blocks[bi];
      hp_place(&b, arena.data());
      if (b.nf > 0) memset(b.grid_p, 0, (size_t)(b.nf * h.Lp) * sizeof(R));
      if (b.ns > 0)
        launch(grid_eval(b), 1, 1, TPB, [&](unsigned bx, unsigned, unsigned, unsigned tx) {
          body_eval<R>(t, b, k, L, Lp, twopi_L, (int64_t)bx * TPB + tx);
        });
      for (int64_t r0 = 0; r0 < b.nf;) {
        const int kb = hp_kbatch(h, b.nf - r0);
        fft<R>::r2c(plan[(size_t)h.kdesc[kb]], (R *)b.grid_p + r0 * h.Lp, (C *)b.hspec_p + r0 * h.nmp);
        r0 += (int64_t)1 << kb;
      }
      const unsigned ntask = (unsigned)(b.tb - b.ta);
      const C *sp = spec.data(), *twp = tw.data();
      launch(ntask, my, 1, RTPB, [&](unsigned bx, unsigned by, unsigned, unsigned tx) {
        body_reduce<R>(t, b, sp, twp, nm, nmp, L, invL, bx, (int64_t)by * RTPB + tx);
      });
      C *op = ospec.data();
      launch(ntask, fy, 2, TPB, [&](unsigned bx, unsigned by, unsigned bz, unsigned tx) {
        body_fold<R>(t, b, op, nm, nmp, L, paper, invL, bx, (int64_t)by * TPB + tx, (int)bz);
      });
    }
    inverse();
    for (const auto &z : h.zero) /* issue_direct */
      for (int64_t q = 0; q < z.second; q++) map[(size_t)(z.first + q)] = 0;
    direct_blocks(overlap ? grid_direct_first(h) : 0, grid_direct(h));
    for (int64_t q = 0; q < h.npix; q++) out[q] = (double)map[(size_t)q];
    size_t e = 0;
    for (const auto &q : overlap ? h.out_first : std::vector<std::pair<int64_t, int64_t>>())
      for (int64_t k = q.first; k < q.first + q.second; k++) out[k] = early[e++];
  }

  /* k_direct's thread blocks [b0, b1) */
  void direct_blocks(unsigned b0, unsigned b1) {
    const dtables t = T;
    const arkcos_kfun k = kf;
    const R *x = xi();
    R *y = map.data();
    if (b1 > b0)
      launch(b1 - b0, 1, 1, DTPB, [&](unsigned bx, unsigned, unsigned, unsigned tx) {
        body_direct<R>(t, k, x, y, (int64_t)b0 + bx, (int)tx);
      });
  }
};

/* ------------------------------------------------------------ helpers */

uint64_t rng_state = 12345;
double urand() { /* splitmix64 -> [0, 1) */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

std::vector<double> random_map(int64_t n) {
  std::vector<double> m((size_t)n);
  for (double &v : m) v = 2 * urand() - 1;
  return m;
}

/* rms(a - b) / rms(b); NaN anywhere gives NaN */
double frac_rms(const std::vector<double> &a, const std::vector<double> &b) {
  double d = 0, r = 0;
  for (size_t i = 0; i < a.size(); i++) {
    d += (a[i] - b[i]) * (a[i] - b[i]);
    r += b[i] * b[i];
  }
  return sqrt(d / r);
}

arkcos_kernel *gauss(double fwhm, double rel) {
  arkcos_kernel_spec s;
  memset(&s, 0, sizeof s);
  s.type = ARKCOS_KERNEL_GAUSSIAN;
  s.fwhm = fwhm;
  s.cutoff_rel = rel;
  arkcos_error e;
  arkcos_kernel *k = arkcos_kernel_create(&s, &e);
  if (!k) fprintf(stderr, "kernel: %s\n", e.msg);
  return k;
}

/* The CPU backend (the GPU's kernel grid): the reference, and the plan
 * (rings, tasks, mirrors, kernel) the emulation builds its tables from. */
arkcos_plan *cpu_plan(const arkcos_geometry *g, const arkcos_kernel *k, int paper, int single) {
  arkcos_options o;
  arkcos_options_default(&o);
  o.mode = paper ? ARKCOS_MODE_PAPER : ARKCOS_MODE_ENHANCED;
  o.precision = single ? ARKCOS_SINGLE : ARKCOS_DOUBLE;
  o.backend = ARKCOS_BACKEND_CPU;
  arkcos_error e;
  arkcos_plan *p = arkcos_plan_create(g, k, &o, &e);
  if (!p) fprintf(stderr, "plan: %s\n", e.msg);
  return p;
}

/* ARKCoS on the 4 nside grid written out with plain DFTs, sharing no code
 * with either backend beyond the kernel profile and the squared chord
 * distance: every ring pair, every one of the L kernel samples, ring and
 * kernel spectra as direct sums (cpu_impl.h's notation), and the output as
 * the trigonometric sum of A_i at the ring's own azimuths, which is what
 * folding (enhanced) or truncating (paper) and a c2r of length N_i compute.
 * Double precision. */
/* The ring pairs an exact plan sums directly (off the kernel grid), by
 * brute force: every output pixel against every pixel of the input ring. */
void textbook_direct(const arkcos_plan *p, const std::vector<double> &in, std::vector<double> *out) {
  const arkcos_ring *rg = p->geom->rings;
  const int nr = p->geom->nrings;
  for (int i = 0; i < nr; i++)
    for (int j = 0; j < nr; j++) {
      if (!arkcos_pair_is_direct(p, i, j)) continue;
      const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta)), sdt2 = sdt * sdt;
      const double ss = sin(rg[i].theta) * sin(rg[j].theta);
      for (int64_t a = 0; a < rg[i].nph; a++) {
        double v = 0;
        const double pa = rg[i].phi0 + 2 * ARKCOS_PI * (double)a / (double)rg[i].nph;
        for (int64_t b = 0; b < rg[j].nph; b++) {
          const double dphi = pa - rg[j].phi0 - 2 * ARKCOS_PI * (double)b / (double)rg[j].nph;
          v += rg[j].weight * arkcos_kfun_d2(&p->kf, arkcos_chord2(sdt2, ss, dphi)) * in[(size_t)(rg[j].ofs + b)];
        }
        (*out)[(size_t)(rg[i].ofs + a)] += v;
      }
    }
}

std::vector<double> textbook(const arkcos_plan *p, const std::vector<double> &in) {
  typedef std::complex<double> Z;
  const arkcos_ring *rg = p->geom->rings;
  const int nr = p->geom->nrings, paper = p->opt.mode == ARKCOS_MODE_PAPER;
  const int64_t L = p->L, nm = L / 2 + 1;
  const double twopi = 2 * ARKCOS_PI;
  /* R_j[m] = w_j sum_l r_jl e^{-2 pi i m l / N_j}, m <= L/2: periodic in m
   * (enhanced); paper: rotated onto phi = 0, Nyquist halved, zero above */
  std::vector<Z> spec((size_t)(nr * nm));
  for (int j = 0; j < nr; j++) {
    const int64_t N = rg[j].nph;
    for (int64_t m = 0; m < nm; m++) {
      Z v = 0;
      if (!paper || 2 * m <= N) {
        for (int64_t l = 0; l < N; l++)
          v += rg[j].weight * in[(size_t)(rg[j].ofs + l)] * std::polar(1.0, -twopi * (double)(m * l % N) / (double)N);
        if (paper) v *= std::polar(2 * m == N ? 0.5 : 1.0, -(double)m * rg[j].phi0);
      }
      spec[(size_t)(j * nm + m)] = v;
    }
  }
  std::vector<Z> tw((size_t)L);
  for (int64_t q = 0; q < L; q++) tw[(size_t)q] = std::polar(1.0, -twopi * (double)q / (double)L);
  std::vector<double> out(in.size());
  std::vector<Z> A((size_t)nm);
  std::vector<int64_t> sn;
  std::vector<double> sv;
  for (int i = 0; i < nr; i++) {
    std::fill(A.begin(), A.end(), Z(0));
    for (int j = 0; j < nr; j++) {
      if (arkcos_pair_is_direct(p, i, j)) continue; /* textbook_direct below */
      const double sdt = sin(0.5 * (rg[i].theta - rg[j].theta)), sdt2 = sdt * sdt;
      if (sdt2 > 0.25 * p->kf.cut_d2 * (1 + 1e-9)) continue; /* the whole ring is beyond the cutoff */
      const double ss = sin(rg[i].theta) * sin(rg[j].theta), delta = paper ? 0.0 : rg[i].phi0 - rg[j].phi0;
      sn.clear();
      sv.clear();
      for (int64_t n = 0; n < L; n++) {
        const double h = arkcos_kfun_d2(&p->kf, arkcos_chord2(sdt2, ss, delta + twopi * (double)n / (double)L));
        if (h != 0) {
          sn.push_back(n);
          sv.push_back(h);
        }
      }
      for (int64_t m = 0; m < nm; m++) {
        Z H = 0;
        for (size_t q = 0; q < sn.size(); q++) H += sv[q] * tw[(size_t)(m * sn[q] % L)];
        A[(size_t)m] += H * spec[(size_t)(j * nm + m)];
      }
    }
    const int64_t N = rg[i].nph;
    for (int64_t k = 0; k < N; k++) {
      double v = 0;
      if (!paper) { /* sum over m in (-L/2, L/2], the two halves of an even L's Nyquist mode at half weight */
        for (int64_t m = 0; m < nm; m++) {
          const double c = m == 0 || 2 * m == L ? 1.0 : 2.0;
          v += c * (A[(size_t)m] * std::polar(1.0, twopi * (double)(m * k % N) / (double)N)).real();
        }
      } else { /* bins d <= N/2 rotated back to the ring's phi0; +N/2 and -N/2 meet */
        for (int64_t d = 0; 2 * d <= N; d++) {
          const Z b = A[(size_t)d] * std::polar(1.0, (double)d * rg[i].phi0);
          if (d == 0) v += b.real();
          else if (2 * d == N) v += 2 * b.real() * (k % 2 ? -1.0 : 1.0);
          else v += 2 * (b * std::polar(1.0, twopi * (double)(d * k % N) / (double)N)).real();
        }
      }
      out[(size_t)(rg[i].ofs + k)] = v / (double)L;
    }
  }
  textbook_direct(p, in, &out);
  return out;
}

/* rms(a - b) / rms(b) over the rings with mask[ring] (all if NULL); NaN
 * anywhere in them gives NaN */
double frac_rms_rings(const arkcos_geometry *g, const std::vector<double> &a, const std::vector<double> &b,
                      const std::vector<int> *mask) {
  double d = 0, r = 0;
  for (int i = 0; i < g->nrings; i++) {
    if (mask && !(*mask)[(size_t)i]) continue;
    for (int64_t q = 0; q < g->rings[i].nph; q++) {
      const size_t k = (size_t)(g->rings[i].ofs + q);
      d += (a[k] - b[k]) * (a[k] - b[k]);
      r += b[k] * b[k];
    }
  }
  return sqrt(d / r);
}

struct result {
  double text = NAN;    /* against the textbook sum (double), whole map */
  double cpu = NAN;     /* against the CPU in the same precision, whole map */
  emu_stats st;
  std::vector<double> out;
};

template <class R>
int emulate(const arkcos_plan *p, const emu_opts &o, const std::vector<double> &in, std::vector<double> *out,
            emu_stats *st) {
  emu_plan<R> e;
  if (e.create(p, o)) return -1;
  out->assign(in.size(), 0.0);
  e.execute(in.data(), out->data(), o.overlap); /* the direct pairs too, as gpu.cu's execute_body */
  *st = e.st;
  return 0;
}

/* One case: the emulated GPU, the CPU and (text != 0) the textbook sum on the
 * same random map. */
result run_case(const arkcos_geometry *g, const arkcos_kernel *k, int paper, int single, const emu_opts &o,
                int text = 1) {
  result r;
  std::vector<double> in = random_map(g->npix), ref((size_t)g->npix);
  arkcos_plan *p = cpu_plan(g, k, paper, single);
  arkcos_error err;
  if (!p || arkcos_execute(p, in.data(), ref.data(), &err)) {
    arkcos_plan_destroy(p);
    return r;
  }
  int rc = single ? emulate<float>(p, o, in, &r.out, &r.st) : emulate<double>(p, o, in, &r.out, &r.st);
  if (rc == 0) {
    r.cpu = frac_rms_rings(g, r.out, ref, nullptr);
    if (text) r.text = frac_rms_rings(g, r.out, textbook(p, in), nullptr);
  }
  arkcos_plan_destroy(p);
  return r;
}

double worse(double w, double v) { return (v <= w) ? w : v; } /* NaN sticks */

/* Worst agreement over a group's cases, per precision (0 double, 1 single). */
struct tally {
  double text[2] = {0, 0}, cpu[2] = {0, 0};
  int64_t dense = 0, sparse = 0;
  void add(const result &r, int single) {
    text[single] = worse(text[single], r.text);
    cpu[single] = worse(cpu[single], r.cpu);
    dense += r.st.dense;
    sparse += r.st.sparse;
  }
  /* bounds: the measured worst (noted at each call) loosened */
  void check(const char *what, double bd, double bs) const {
    char b[160];
    snprintf(b, sizeof b, "%s, double: vs textbook, worst", what);
    CHECK_LE(b, text[0], bd);
    snprintf(b, sizeof b, "%s, double: vs CPU, worst", what);
    CHECK_LE(b, cpu[0], bd);
    snprintf(b, sizeof b, "%s, single: vs textbook (double), worst", what);
    CHECK_LE(b, text[1], bs);
    snprintf(b, sizeof b, "%s, single: vs CPU single, worst", what);
    CHECK_LE(b, cpu[1], bs);
  }
};

void print_case(const char *what, int paper, int single, const result &r) {
  printf("  %-40s %-8s %-6s: textbook %.2e, CPU %.2e [%lld dense, %lld sparse]\n", what, paper ? "paper" : "enhanced",
         single ? "single" : "double", r.text, r.cpu, (long long)r.st.dense, (long long)r.st.sparse);
}

} /* namespace */

/* ------------------------------------------------------------- groups */

/* Structure of the plan gpu_tables.h builds: every ring in exactly one map
 * FFT batch each way, at its own offsets; the blocks cover every task and
 * pair once, in order, within the arena; the pair tables' prefixes. */
static void check_plan(const char *what, const arkcos_plan *p, const emu_opts &o) {
  emu_plan<double> e;
  if (e.create(p, o)) {
    CHECK(0, "%s: plan", what);
    return;
  }
  const host_plan &h = e.h;
  int bad = 0;
  for (int dir = 0; dir < 2; dir++) {
    std::vector<int> seen((size_t)h.nr, 0);
    for (const fft_item &it : dir ? h.inv : h.fwd) {
      const fft_desc &fd = h.desc[(size_t)it.desc];
      bad += fd.kind != dir;
      for (int64_t r = 0; r < fd.rows; r++) {
        const int64_t io = it.in_off + r * fd.idist, oo = it.out_off + r * fd.odist;
        int ring = -1;
        for (int q = 0; q < h.nr; q++)
          if ((dir ? h.oofs[(size_t)q] : h.pofs[(size_t)q]) == io && h.nph[(size_t)q] == fd.N) ring = q;
        if (ring < 0) {
          bad++;
          continue;
        }
        seen[(size_t)ring]++;
        bad += oo != (dir ? h.pofs[(size_t)ring] : ring * h.nmp);
      }
      /* rows do not overlap */
      bad += fd.rows > 1 && (fd.idist < (dir ? fd.N / 2 + 1 : fd.N) || fd.odist < (dir ? fd.N : fd.N / 2 + 1));
    }
    /* exactly the rings a Fourier pair reads (r2c) or writes (c2r), by
     * cuFFT or by a direct DFT */
    for (int r : dir ? h.dfti : h.dftf) seen[(size_t)r]++;
    for (int q = 0; q < h.nr; q++) bad += seen[(size_t)q] != (dir ? h.need_inv : h.need_fwd)[(size_t)q];
  }
  CHECK(bad == 0, "%s: map FFT batches: %d faults", what, bad);
  /* needs: every Fourier pair's input ring (and the mirror's) is transformed */
  bad = 0;
  for (int t = 0; t < h.ntasks; t++)
    for (int64_t q = h.tp[(size_t)t]; q < h.tp[(size_t)t + 1]; q++) {
      const int j = h.pj[(size_t)q], i = h.task[(size_t)t];
      bad += !h.need_fwd[(size_t)j] || !h.need_inv[(size_t)i];
      if (p->mirror[i] >= 0 && p->mirror[i] != i) bad += !h.need_fwd[(size_t)p->mirror[j]];
    }
  CHECK(bad == 0, "%s: Fourier pairs' rings transformed: %d faults", what, bad);
  /* an exact plan transforms no ring off the kernel grid (its pairs are all
   * direct), a paper plan every ring */
  int off = 0, skipped_f = 0, skipped_i = 0;
  for (int r = 0; r < h.nr; r++) {
    off += p->direct_caps && h.nph[(size_t)r] != h.L;
    skipped_f += !h.need_fwd[(size_t)r];
    skipped_i += !h.need_inv[(size_t)r];
  }
  printf("  %s: %d of %d rings off the kernel grid skip the map FFTs; %zu direct tasks, %lld of %zu thread blocks "
         "first\n", what, skipped_f, h.nr, h.dti.size(), (long long)h.nbfirst, h.btask.size());
  CHECK(skipped_f == off && skipped_i == off, "%s: rings without map FFTs: %d r2c, %d c2r (expected %d)", what,
        skipped_f, skipped_i, off);
  /* direct pairs: pairs_direct.c's list, task by task; every row of a
   * direct task in exactly one thread block; every pixel written by the
   * c2r, a direct task or a zero range exactly once */
  bad = 0;
  std::vector<int> cover((size_t)h.npix, 0);
  for (int r = 0; r < h.nr; r++)
    if (h.need_inv[(size_t)r])
      for (int64_t q = 0; q < h.nph[(size_t)r]; q++) cover[(size_t)(h.ofs[(size_t)r] + q)]++;
  for (const auto &z : h.zero)
    for (int64_t q = 0; q < z.second; q++) cover[(size_t)(z.first + q)]++;
  size_t dt = 0;
  for (int t = 0; t < h.ntasks; t++) {
    const int i = h.task[(size_t)t], i2 = p->mirror[i];
    std::vector<int> js;
    for (int j = p->jlo[i]; j <= p->jhi[i]; j++)
      if (arkcos_pair_is_direct(p, i, j)) js.push_back(j);
    if (dt < h.dti.size() && h.dti[dt] == i) {
      std::vector<int> got(h.qj.begin() + h.dp[dt], h.qj.begin() + h.dp[dt + 1]);
      for (int j : got) bad += std::find(js.begin(), js.end(), j) == js.end();
      bad += got.empty() || h.drows[dt] * h.dlanes[dt] != h.nph[(size_t)i];
      bad += h.dfour[dt] != h.need_inv[(size_t)i];
      if (!h.dfour[dt]) {
        for (int64_t q = 0; q < h.nph[(size_t)i]; q++) cover[(size_t)(h.ofs[(size_t)i] + q)]++;
        if (h.dti2[dt] >= 0)
          for (int64_t q = 0; q < h.nph[(size_t)i2]; q++) cover[(size_t)(h.ofs[(size_t)i2] + q)]++;
      }
      dt++;
    }
  }
  bad += dt != h.dti.size();
  for (int c : cover) bad += c != 1;
  std::vector<int64_t> rows(h.dti.size(), 0);
  for (size_t b = 0; b < h.btask.size(); b++) {
    const int d = h.btask[b];
    bad += h.brow[b] != rows[(size_t)d];
    rows[(size_t)d] += std::min<int64_t>(DTPB, h.drows[(size_t)d] - h.brow[b]);
  }
  for (size_t d = 0; d < rows.size(); d++) bad += rows[d] != h.drows[d];
  /* the overlap (pinned maps): the first blocks' tasks write only rings no
   * Fourier pair touches and read only inside in_first; in and out ranges
   * each split [0, npix) into first and rest */
  std::vector<int> inside((size_t)h.npix, 0), outside((size_t)h.npix, 0);
  for (const auto *rs : {&h.in_first, &h.in_rest})
    for (const auto &q : *rs)
      for (int64_t k = q.first; k < q.first + q.second; k++) inside[(size_t)k] += rs == &h.in_first ? 1 : 2;
  for (const auto *rs : {&h.out_first, &h.out_rest})
    for (const auto &q : *rs)
      for (int64_t k = q.first; k < q.first + q.second; k++) outside[(size_t)k] += rs == &h.out_first ? 1 : 2;
  for (int64_t k = 0; k < h.npix; k++) bad += (inside[(size_t)k] != 1 && inside[(size_t)k] != 2) ||
                                              (outside[(size_t)k] != 1 && outside[(size_t)k] != 2);
  for (int64_t b = 0; b < h.nbfirst; b++) {
    const int d = h.btask[(size_t)b];
    for (int r : {h.dti[(size_t)d], h.dti2[(size_t)d]}) {
      if (r < 0) continue;
      bad += h.need_fwd[(size_t)r] || h.need_inv[(size_t)r];
      for (int64_t k = 0; k < h.nph[(size_t)r]; k++) bad += outside[(size_t)(h.ofs[(size_t)r] + k)] != 1;
    }
    for (int64_t q = h.dp[(size_t)d]; q < h.dp[(size_t)d + 1]; q++)
      for (int r : {h.qj[(size_t)q], h.qjm[(size_t)q]}) {
        if (r < 0) continue;
        for (int64_t k = 0; k < h.nph[(size_t)r]; k++) bad += inside[(size_t)(h.ofs[(size_t)r] + k)] != 1;
      }
  }
  bad += (h.nbfirst > 0) != (off > 0); /* an exact plan's caps go first */
  CHECK(bad == 0, "%s: %zu direct tasks, %lld direct pairs, %zu thread blocks: %d faults", what, h.dti.size(),
        (long long)h.ndirect, h.btask.size(), bad);
  /* pair tables: ord and sample prefixes from kind and count alone */
  bad = 0;
  int64_t nf = 0, nd = 0, ns = 0;
  for (int64_t q = 0; q < h.P; q++) {
    bad += h.psoff[(size_t)q] != ns;
    bad += h.pord[(size_t)q] != (h.pkind[(size_t)q] ? nf : nd);
    bad += h.pkind[(size_t)q] != (h.pcnt[(size_t)q] > h.direct_max);
    ns += h.pcnt[(size_t)q];
    if (h.pkind[(size_t)q]) nf++;
    else nd += h.pcnt[(size_t)q];
  }
  bad += h.psoff[(size_t)h.P] != ns;
  CHECK(bad == 0, "%s: pair tables: %d faults", what, bad);
  /* blocks */
  bad = 0;
  int64_t ta = 0, pa = 0;
  for (size_t bi = 0; bi < h.blocks.size(); bi++) {
    const blockp &b = h.blocks[bi];
    bad += b.ta != ta || b.pa != pa || b.tb <= b.ta || b.pb < b.pa || b.end > h.arena;
    bad += b.pa < h.tp[(size_t)b.ta] || b.pb > h.tp[(size_t)b.tb];
    const bool split = b.pb < h.tp[(size_t)b.tb];
    bad += split && b.tb - b.ta != 1; /* only a block of one task ends inside it */
    int64_t f = 0, d = 0, n = 0, f0 = -1, d0 = -1;
    for (int64_t q = b.pa; q < b.pb; q++) {
      n += h.pcnt[(size_t)q];
      if (h.pkind[(size_t)q]) {
        if (f0 < 0) f0 = h.pord[(size_t)q];
        f++;
      } else {
        if (d0 < 0) d0 = h.pord[(size_t)q];
        d += h.pcnt[(size_t)q];
      }
    }
    bad += b.nf != f || b.nd != d || b.ns != n || b.s0 != h.psoff[(size_t)b.pa];
    bad += (f0 >= 0 && b.f0 != f0) || (d0 >= 0 && b.d0 != d0);
    blockp lay;
    hp_layout(&h, sizeof(double), b.tb - b.ta, f, d, &lay);
    bad += b.acc != lay.acc || b.hspec != lay.hspec || b.grid != lay.grid || b.dsamp != lay.dsamp;
    ta = split ? b.tb - 1 : b.tb;
    pa = b.pb;
  }
  bad += ta != h.ntasks || pa != h.P;
  CHECK(bad == 0, "%s: %zu blocks: %d faults", what, h.blocks.size(), bad);
}

TEST_GROUP(plan_tables) {
  arkcos_geometry *gs[] = {arkcos_geometry_healpix(13, nullptr), arkcos_geometry_ecp(17, 35, 0.5, nullptr)};
  arkcos_kernel *k = gauss(25 * DEG, 1e-5);
  for (arkcos_geometry *g : gs) {
    for (int paper = 0; paper < 2; paper++) {
      arkcos_plan *p = cpu_plan(g, k, paper, 0);
      CHECK(p != nullptr, "plan");
      if (!p) continue;
      char what[96];
      const char *gn = g->kind == ARKCOS_GEOM_HEALPIX ? "healpix 13" : "ECP 17 x 35";
      emu_opts o;
      snprintf(what, sizeof what, "%s %s, one block", gn, paper ? "paper" : "enhanced");
      check_plan(what, p, o);
      o.min_arena = 1;
      snprintf(what, sizeof what, "%s %s, smallest arena", gn, paper ? "paper" : "enhanced");
      check_plan(what, p, o);
      o.min_arena = 0;
      o.arena_bytes = 40000;
      o.direct_max = 0;
      snprintf(what, sizeof what, "%s %s, 40 kB arena, all dense", gn, paper ? "paper" : "enhanced");
      check_plan(what, p, o);
      arkcos_plan_destroy(p);
    }
    arkcos_geometry_destroy(g);
  }
  arkcos_kernel_destroy(k);
}

/* A kernel past the exact path's limit (ARKCOS_DIRECT_MAX_PIXELS) keeps
 * the oversampled Fourier path in the caps: there the cap rings' FFTs are
 * direct DFTs (body_dft_r2c, body_dft_c2r), not a cuFFT plan per length;
 * against the textbook sum of the same algorithm. (The CPU's plan samples
 * the caps on an oversampled grid, the GPU's on the L grid: both are
 * inexact there, and they differ by the aliasing, 1e-6 for the Gaussian
 * here, printed.) Paper mode (cuFFT for every length) has no DFT rings. */
TEST_GROUP(cap_dft) {
  double worst[2] = {0, 0};
  int64_t dft = 0, ffts = 0;
  setenv("ARKCOS_DIRECT_MAX_PIXELS", "1", 1);
  setenv("ARKCOS_SMOOTH_CAPS", "0", 1);
  const int64_t nsides[] = {8, 13, 16};
  for (int64_t nside : nsides) {
    arkcos_geometry *g = arkcos_geometry_healpix(nside, nullptr);
    const double pix = sqrt(4 * ARKCOS_PI / (double)g->npix);
    arkcos_kernel *ks[2] = {gauss(4 * pix, 1e-8), tophat(3 * pix)};
    for (arkcos_kernel *k : ks)
      for (int single = 0; single < 2; single++) {
        result r = run_case(g, k, 0, single, emu_opts());
        char what[96];
        snprintf(what, sizeof what, "nside %lld, caps by DFT", (long long)nside);
        print_case(what, 0, single, r);
        printf("    %lld rings by direct DFT (r2c + c2r), %lld cuFFT plans\n", (long long)r.st.dft,
               (long long)r.st.ffts);
        CHECK(r.st.dft == 4 * (nside - 1), "%s: every cap ring by DFT both ways: %lld", what, (long long)r.st.dft);
        dft += r.st.dft;
        ffts = std::max(ffts, r.st.ffts);
        worst[single] = worse(worst[single], r.text);
        result rp = run_case(g, k, 1, single, emu_opts(), 0);
        CHECK(rp.st.dft == 0, "paper mode: no ring by DFT (%lld)", (long long)rp.st.dft);
      }
    for (arkcos_kernel *k : ks) arkcos_kernel_destroy(k);
    arkcos_geometry_destroy(g);
  }
  unsetenv("ARKCOS_DIRECT_MAX_PIXELS");
  unsetenv("ARKCOS_SMOOTH_CAPS");
  printf("  %lld rings by DFT in all; at most %lld cuFFT plans a case\n", (long long)dft, (long long)ffts);
  /* measured: double 1.8e-15, single 2.1e-7 */
  CHECK_LE("caps by DFT, double: vs textbook, worst", worst[0], 1e-14);
  CHECK_LE("caps by DFT, single: vs textbook (double), worst", worst[1], 1e-6);
}

/* execute_overlap's order (pinned maps): the caps' direct pairs from the
 * caps' input alone (the rest of the input NaN until it arrives), their
 * output taken before the belt is computed; the same output, bit for bit,
 * as the sequential order, and the CPU's */
TEST_GROUP(overlap) {
  tally t;
  int same = 0, cases = 0;
  const int64_t nsides[] = {8, 13, 16};
  for (int64_t nside : nsides) {
    arkcos_geometry *g = arkcos_geometry_healpix(nside, nullptr);
    const double pix = sqrt(4 * ARKCOS_PI / (double)g->npix);
    arkcos_kernel *ks[3] = {gauss(3 * pix, 1e-6), tophat(4 * pix),
                            arkcos_kernel_gaussian_harmonic(5 * pix, 1e-5, nullptr)};
    for (arkcos_kernel *k : ks)
      for (int single = 0; single < 2; single++) {
        emu_opts o;
        o.overlap = 1;
        rng_state = 99;
        result r = run_case(g, k, 0, single, o);
        rng_state = 99;
        result r0 = run_case(g, k, 0, single, emu_opts(), 0);
        char what[96];
        snprintf(what, sizeof what, "nside %lld, overlapped order", (long long)nside);
        print_case(what, 0, single, r);
        same += !r.out.empty() && r.out == r0.out;
        cases++;
        t.add(r, single);
      }
    for (arkcos_kernel *k : ks) arkcos_kernel_destroy(k);
    arkcos_geometry_destroy(g);
  }
  CHECK(same == cases, "overlapped order bit-identical to the sequential one: %d of %d cases", same, cases);
  /* measured: double 2.5e-15 vs textbook, 6.8e-16 vs CPU; single 2.4e-7 */
  t.check("overlapped order", 1e-14, 1e-6);
}

/* HEALPix nside 8, 13, 16, 32: narrow kernels (sparse rows, direct DFT) and
 * wide ones (rings near the poles through the kernel-grid FFT), both modes,
 * both precisions. */
TEST_GROUP(healpix) {
  const int64_t nsides[] = {8, 13, 16, 32};
  tally t;
  for (int64_t nside : nsides) {
    arkcos_geometry *g = arkcos_geometry_healpix(nside, nullptr);
    const double pix = sqrt(4 * ARKCOS_PI / (double)g->npix);
    struct {
      const char *name;
      arkcos_kernel *k;
    } ks[] = {
        {"gauss 3 pix FWHM, cut 1e-8", gauss(3 * pix, 1e-8)},
        {"gauss 25 deg, cut 1e-5", gauss(25 * DEG, 1e-5)},
        {"top-hat 2.7 pix", tophat(2.7 * pix)},
        {"top-hat 31.3 deg", tophat(31.3 * DEG)},
    };
    for (auto &kc : ks) {
      CHECK(kc.k != nullptr, "kernel %s", kc.name);
      if (!kc.k) continue;
      char what[96];
      snprintf(what, sizeof what, "nside %lld, %s", (long long)nside, kc.name);
      for (int paper = 0; paper < 2; paper++)
        for (int single = 0; single < 2; single++) {
          result r = run_case(g, kc.k, paper, single, emu_opts());
          print_case(what, paper, single, r);
          t.add(r, single);
        }
      arkcos_kernel_destroy(kc.k);
    }
    arkcos_geometry_destroy(g);
  }
  CHECK(t.dense > 0 && t.sparse > 0, "both kernel paths taken: %lld dense, %lld sparse pairs", (long long)t.dense,
        (long long)t.sparse);
  /* measured: double 2.9e-15 against the textbook sum (its own rounding),
   * 1.8e-15 against the CPU; single 2.7e-7 and 3.1e-7 */
  t.check("healpix", 1e-14, 1e-6);
}

/* ARKCOS_GPU_DIRECT_MAX: every kernel row through the FFT (0), a small
 * threshold, the default, and every row as a direct DFT */
TEST_GROUP(kernel_paths) {
  const int64_t nsides[] = {13, 16};
  const int64_t dmax[] = {0, 8, DIRECT_MAX, (int64_t)1 << 30};
  tally t;
  for (int64_t nside : nsides) {
    arkcos_geometry *g = arkcos_geometry_healpix(nside, nullptr);
    arkcos_kernel *k = gauss(25 * DEG, 1e-5);
    for (int64_t dm : dmax)
      for (int paper = 0; paper < 2; paper++)
        for (int single = 0; single < 2; single++) {
          emu_opts o;
          o.direct_max = dm;
          result r = run_case(g, k, paper, single, o);
          char what[96];
          snprintf(what, sizeof what, "nside %lld, direct_max %lld", (long long)nside, (long long)dm);
          print_case(what, paper, single, r);
          if (dm == 0) CHECK(r.st.sparse == 0 && r.st.dense > 0, "direct_max 0: every pair dense");
          if (dm >= 4 * nside) CHECK(r.st.dense == 0 && r.st.sparse > 0, "direct_max >= L: every pair sparse");
          t.add(r, single);
        }
    arkcos_kernel_destroy(k);
    arkcos_geometry_destroy(g);
  }
  /* measured: double 1.5e-15 (textbook), 7.3e-16 (CPU); single 2.3e-7, 2.4e-7 */
  t.check("every split of kernel rows", 1e-14, 1e-6);
}

/* small arenas (ARKCOS_GPU_ARENA_BYTES): many blocks, tasks split across
 * blocks with their accumulators carried over */
TEST_GROUP(chunking) {
  tally t;
  double vs_one = 0;
  int64_t split = 0;
  const int64_t nsides[] = {13, 16};
  for (int64_t nside : nsides) {
    arkcos_geometry *g = arkcos_geometry_healpix(nside, nullptr);
    arkcos_kernel *k = gauss(25 * DEG, 1e-5);
    for (int variant = 0; variant < 3; variant++)
      for (int paper = 0; paper < 2; paper++)
        for (int single = 0; single < 2; single++) {
          emu_opts o;
          const char *v;
          if (variant == 0) {
            o.min_arena = 1;
            v = "smallest arena";
          } else if (variant == 1) {
            o.arena_bytes = 30000; /* several blocks also when the caps are summed on the host */
            v = "30 kB arena";
          } else {
            o.arena_bytes = 20000;
            o.direct_max = 0;
            v = "20 kB arena, all dense";
          }
          rng_state = 777;
          result r = run_case(g, k, paper, single, o);
          emu_opts whole = o;
          whole.min_arena = 0;
          whole.arena_bytes = 0;
          rng_state = 777;
          result r1 = run_case(g, k, paper, single, whole, 0);
          const double f = r.out.size() == r1.out.size() && !r.out.empty() ? frac_rms(r.out, r1.out) : NAN;
          char what[96];
          snprintf(what, sizeof what, "nside %lld, %s", (long long)nside, v);
          print_case(what, paper, single, r);
          printf("    %lld blocks, %lld of them end inside a task; vs one block %.2e\n", (long long)r.st.blocks,
                 (long long)r.st.split, f);
          CHECK(r.st.blocks > 1, "%s: several blocks", what);
          split += r.st.split;
          vs_one = worse(vs_one, f);
          t.add(r, single);
        }
    arkcos_kernel_destroy(k);
    arkcos_geometry_destroy(g);
  }
  CHECK(split > 0, "some tasks split across blocks (%lld block ends)", (long long)split);
  /* measured: double 1.4e-15 (textbook), 6.2e-16 (CPU); single 2.3e-7, 2.2e-7;
   * against one block 0 */
  t.check("chunked", 1e-14, 1e-6);
  CHECK_LE("chunked vs one block (same sums in the same order), worst", vs_one, 0);
}

/* ECP grids (odd ring lengths: rings at odd offsets, the padded FFT
 * layout), rings without a north/south mirror, a tabulated kernel */
TEST_GROUP(other_geometries) {
  struct gc {
    const char *name;
    arkcos_geometry *g;
    arkcos_kernel *k;
  };
  std::vector<gc> cs;
  cs.push_back({"ECP 24 x 48, gauss 9 deg", arkcos_geometry_ecp(24, 48, 0.5, nullptr), gauss(9 * DEG, 1e-8)});
  cs.push_back({"ECP 17 x 35 (padded), gauss 20 deg", arkcos_geometry_ecp(17, 35, 0.5, nullptr),
                gauss(20 * DEG, 1e-6)});
  cs.push_back({"ECP 17 x 35 (padded), top-hat 23.3 deg", arkcos_geometry_ecp(17, 35, 0.25, nullptr),
                tophat(23.3 * DEG)});
  {
    const int nr = 40;
    double th[nr], ph[nr];
    int64_t nph[nr], ofs[nr];
    for (int i = 0; i < nr; i++) {
      th[i] = (i + 0.7) * ARKCOS_PI / 48;
      ph[i] = 0.013 * i;
      nph[i] = 60 + 4 * (i % 7) + (i % 3);
      ofs[i] = i ? ofs[i - 1] + nph[i - 1] : 0;
    }
    cs.push_back({"custom rings, no mirror, gauss 12 deg",
                  arkcos_geometry_from_rings(nr, th, ph, nph, ofs, nullptr, nullptr), gauss(12 * DEG, 1e-8)});
  }
  cs.push_back({"healpix 16, table cos^2 15 deg", arkcos_geometry_healpix(16, nullptr), table_kernel(15 * DEG)});
  /* healpy's Gaussian (a Chebyshev factor in the kernel function) */
  cs.push_back({"healpix 16, harmonic gauss 10 deg", arkcos_geometry_healpix(16, nullptr),
                arkcos_kernel_gaussian_harmonic(10 * DEG, 1e-5, nullptr)});
  tally t;
  for (gc &c : cs) {
    CHECK(c.g && c.k, "%s", c.name);
    if (!c.g || !c.k) continue;
    for (int paper = 0; paper < 2; paper++)
      for (int single = 0; single < 2; single++) {
        result r = run_case(c.g, c.k, paper, single, emu_opts());
        print_case(c.name, paper, single, r);
        t.add(r, single);
      }
    arkcos_kernel_destroy(c.k);
    arkcos_geometry_destroy(c.g);
  }
  /* measured: double 1.9e-15 (textbook), 8.4e-16 (CPU); single 2.1e-7, 2.3e-7 */
  t.check("other geometries", 1e-14, 1e-6);
}

/* No body synchronises threads or depends on the order in which threads and
 * blocks run: reversed order gives the same bits. */
TEST_GROUP(thread_order) {
  arkcos_geometry *g = arkcos_geometry_healpix(13, nullptr);
  arkcos_kernel *k = gauss(25 * DEG, 1e-5);
  int same = 0, total = 0;
  for (int paper = 0; paper < 2; paper++)
    for (int single = 0; single < 2; single++)
      for (int chunk = 0; chunk < 2; chunk++) {
        emu_opts o;
        o.min_arena = chunk;
        rng_state = 99;
        result a = run_case(g, k, paper, single, o);
        g_reverse = 1;
        rng_state = 99;
        result b = run_case(g, k, paper, single, o);
        g_reverse = 0;
        total++;
        same += !a.out.empty() && a.out == b.out;
      }
  printf("  healpix 13, 2 modes x 2 precisions x 2 arenas: %d of %d bit-identical in reversed order\n", same, total);
  CHECK(same == total, "%d of %d runs differ in reversed thread order", total - same, total);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
}

/* Independent of the CPU backend: in the equatorial belt the enhanced mode
 * is the direct sum (DESIGN.md), so the emulated GPU must match a brute-force
 * sum there to rounding. */
TEST_GROUP(belt_vs_direct) {
  arkcos_geometry *g = arkcos_geometry_healpix(16, nullptr);
  const double pix = sqrt(4 * ARKCOS_PI / (double)g->npix);
  arkcos_kernel *ks[] = {gauss(3 * pix, 1e-8), tophat(2.7 * pix), gauss(12 * DEG, 1e-6)};
  const int64_t n = g->npix;
  std::vector<double> v((size_t)(3 * n));
  for (int i = 0; i < g->nrings; i++)
    for (int64_t q = 0; q < g->rings[i].nph; q++) {
      const int64_t p = g->rings[i].ofs + q;
      const double th = g->rings[i].theta;
      const double ph = g->rings[i].phi0 + 2 * ARKCOS_PI * (double)q / (double)g->rings[i].nph;
      v[(size_t)(3 * p)] = sin(th) * cos(ph);
      v[(size_t)(3 * p + 1)] = sin(th) * sin(ph);
      v[(size_t)(3 * p + 2)] = cos(th);
    }
  const double tn = acos(2.0 / 3.0), ts = ARKCOS_PI - tn;
  double worst = 0;
  for (arkcos_kernel *k : ks) {
    const double c = arkcos_kernel_cutoff(k);
    rng_state = 4242;
    std::vector<double> in = random_map(n), emu;
    arkcos_plan *p = cpu_plan(g, k, 0, 0);
    emu_stats st;
    CHECK(p && emulate<double>(p, emu_opts(), in, &emu, &st) == 0, "emulated run");
    arkcos_plan_destroy(p);
    if (emu.empty()) continue;
    double d = 0, r = 0;
    int nring = 0;
    for (int i = 0; i < g->nrings; i++) {
      const double th = g->rings[i].theta;
      if (!(th - c > tn + 1e-9 && th + c < ts - 1e-9)) continue;
      nring++;
      for (int64_t pp = 0; pp < g->rings[i].nph; pp++) {
        const int64_t a = g->rings[i].ofs + pp;
        double s = 0;
        for (int j = 0; j < g->nrings; j++) {
          if (fabs(g->rings[j].theta - th) > c + 1e-9) continue;
          for (int64_t qq = 0; qq < g->rings[j].nph; qq++) {
            const int64_t b = g->rings[j].ofs + qq;
            const double *x = &v[(size_t)(3 * a)], *y = &v[(size_t)(3 * b)];
            const double ux = x[1] * y[2] - x[2] * y[1], uy = x[2] * y[0] - x[0] * y[2];
            const double uz = x[0] * y[1] - x[1] * y[0];
            const double al = atan2(sqrt(ux * ux + uy * uy + uz * uz), x[0] * y[0] + x[1] * y[1] + x[2] * y[2]);
            if (al <= c) s += g->rings[j].weight * arkcos_kernel_value(k, al) * in[(size_t)b];
          }
        }
        d += (emu[(size_t)a] - s) * (emu[(size_t)a] - s);
        r += s * s;
      }
    }
    const double f = sqrt(d / r);
    printf("  healpix 16, cutoff %.2f deg: %d belt rings, emulated GPU vs direct sum %.2e\n", c / DEG, nring, f);
    CHECK(nring > 0, "belt rings");
    worst = worse(worst, f);
    arkcos_kernel_destroy(k);
  }
  /* measured: 2.5e-15 */
  CHECK_LE("enhanced, double: belt vs direct sum, worst", worst, 1e-14);
  arkcos_geometry_destroy(g);
}

TEST_MAIN(TG(plan_tables), TG(healpix), TG(kernel_paths), TG(chunking), TG(other_geometries), TG(thread_order),
          TG(belt_vs_direct), TG(overlap), TG(cap_dft))
