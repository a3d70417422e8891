/*
 * gpu.cu -- the CUDA backend: the algorithm of cpu_impl.h (the reference)
 * restated for a GPU with cuFFT, in double (R = double) or single (R = float)
 * precision. Kernel values and distances are always computed in double
 * (paper section 4.1); FFTs, products and sums run in R.
 *
 * Notation as in cpu_impl.h: ring j has N_j pixels and spectrum
 * R_j[m] = w_j sum_k r_jk e^{-2 pi i m k / N_j}, m < nm = L/2 + 1, extended
 * periodically (enhanced) or phase-rotated and zero padded (paper); for output
 * ring i and input ring j the kernel is sampled at delta + 2 pi n / L, its DFT
 * H_ij[m] taken, A_i[m] = sum_j H_ij[m] R_j[m]; the output spectrum is A_i
 * folded (enhanced) or truncated (paper), and s_i = c2r(...) / L.
 *
 * Device memory (C = complex R):
 *   map    npix R                 the output map (and, without direct pairs,
 *                                 the input, overwritten)
 *   xin    npix R                 exact plans: the input map, which the
 *                                 direct pairs read after the Fourier path
 *   dmap   npix double            single plans: pinned double maps' copy
 *   fmap   the map with every ring at an even offset (cuFFT wants 16-byte
 *          aligned rows); only for geometries with odd ring offsets, else
 *          the map itself
 *   spec   nrings x nmp C         ring spectra, one padded row per ring
 *   ospec  sum_i (N_i/2 + 1) C    output half-spectra, ring after ring
 *   tables ring, task, ring-pair and direct-pair descriptions (built once,
 *          on the host: no weights, a few numbers per pair)
 *   tw     L C                    e^{-2 pi i q / L}
 *   arena  one block of output rings at a time: accumulators A (two rows
 *          per task: ring and mirror), kernel grids and their spectra, and
 *          the samples of sparse kernel rows
 * plus cuFFT work areas. Output rings are processed in blocks sized to the
 * free memory, so a map runs whenever its spectra fit.
 *
 * Per execute, on one stream (cap-ring FFTs forked onto a few more):
 *  1. h2d: the map through a ring of pinned staging slots (host conversion
 *     of chunk c+1 overlaps the copy of chunk c), converted to R on the host;
 *     a pinned double map (arkcos_map_alloc) in one DMA (single plans:
 *     converted on the device).
 *  2. map_fft: weights, batched r2c straight from the map into the spectra
 *     rectangle (one plan per arithmetic run of equal-length rings: the
 *     equatorial belt in batches, each north/south cap pair as a batch of 2),
 *     then periodic extension or phase rotation, for the rings a Fourier
 *     pair reads (exact plans: not the polar caps; in an enhanced plan whose
 *     caps take the Fourier path, each cap ring by a direct DFT, body_dft_*,
 *     rather than a cuFFT plan per length). Captured once as a CUDA graph.
 *  3. per block of output rings:
 *     kernel_eval  samples of every ring pair (i, j) inside the cutoff, each
 *                  computed once for (i, j) and (mirror i, mirror j);
 *                  dense pairs into zeroed L-point grids, sparse pairs (at
 *                  most direct_max samples) into a compact list;
 *     kernel_fft   one batched r2c of the dense grids (batches of 2^k rows);
 *     reduction    one thread per output mode m loops over the input rings
 *                  in a fixed order (no atomics: bit-identical run to run),
 *                  taking H_ij[m] from the grid spectra or, for sparse pairs,
 *                  as a direct DFT of the few samples (fused here, so those
 *                  spectra are never stored);
 *     map_ifft     (first part) fold / truncate + 1/L into ospec.
 *  4. map_ifft: batched c2r of the output rings a Fourier pair writes into
 *     the map (graph).
 *  5. direct pairs (exact plans; counted in reduction and in direct): the
 *     ring pairs off the kernel grid, pairs_direct.c's sums with every
 *     weight computed where it is used (gpu_bodies.h, body_direct): one
 *     thread per output pixel and its three quarter-turn images and their
 *     mirrors, pairs in a fixed order, no atomics.
 *  6. d2h: back through the staging slots, or one DMA into a pinned map.
 * With pinned maps an exact plan overlaps copies and compute instead
 * (execute_overlap): a copy stream brings the caps' input first; the caps'
 * direct pairs (step 5 for the rings no Fourier pair touches) run while the
 * rest arrives, and their output goes back while the belt runs steps 2-5.
 *
 * Stage times come from CUDA events (h2d from the first host conversion to
 * the last copy; d2h is wall time from the end of the compute to the last
 * host conversion); sparse kernel rows are transformed inside the reduction
 * and timed there; with the overlap the stages add up to more than the
 * total. A plan executes one map at a time.
 *
 * Environment (for tests and tuning): ARKCOS_GPU_ARENA_BYTES caps the block
 * arena (forces chunking), ARKCOS_GPU_DIRECT_MAX sets the largest sparse
 * kernel row (0: every row through cuFFT), ARKCOS_GPU_GRAPHS=0 issues the map
 * FFTs directly instead of as CUDA graphs, ARKCOS_GPU_OVERLAP=0 keeps pinned
 * maps in the sequential order.
 *
 * Files: the kernels' bodies are in gpu_bodies.h and the host-side planning
 * (tables, FFT batches, blocks, launch shapes) in gpu_tables.h; both compile
 * without CUDA, and tests/test_gpu_emul.cpp runs this pipeline on a host.
 * This file holds the CUDA side: wrappers, streams, plans, memory, copies.
 */
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <thread>
#include <tuple>
#include <vector>

#include "arkcos/gpu_bodies.h"
#include "arkcos/gpu_tables.h"
#include "arkcos/plan_internal.h"

namespace {

/* ------------------------------------------------------------ constants */

/* (launch constants in gpu_bodies.h, planning constants in gpu_tables.h) */
const int64_t MAX_L = (int64_t)1 << 23; /* grid dims and 48-bit products */
const int64_t STAGE_CHUNK = (int64_t)4 << 20; /* staging chunk, elements */
const int NSLOT = 4;              /* staging slots */
const size_t ARENA_MAX = (size_t)4 << 30;

/* ------------------------------------------------------- error handling */

const char *cufft_string(cufftResult r) {
  switch (r) {
    case CUFFT_SUCCESS: return "success";
    case CUFFT_INVALID_PLAN: return "invalid plan";
    case CUFFT_ALLOC_FAILED: return "allocation failed";
    case CUFFT_INVALID_TYPE: return "invalid type";
    case CUFFT_INVALID_VALUE: return "invalid value";
    case CUFFT_INTERNAL_ERROR: return "internal error";
    case CUFFT_EXEC_FAILED: return "execution failed";
    case CUFFT_SETUP_FAILED: return "setup failed";
    case CUFFT_INVALID_SIZE: return "invalid size";
    case CUFFT_UNALIGNED_DATA: return "unaligned data";
    case CUFFT_INVALID_DEVICE: return "invalid device";
    case CUFFT_NO_WORKSPACE: return "no workspace";
    case CUFFT_NOT_IMPLEMENTED: return "not implemented";
    case CUFFT_NOT_SUPPORTED: return "not supported";
    default: return "unknown cuFFT error";
  }
}

/* "cudaMalloc(&x, n)" -> "cudaMalloc": messages name the call, not its text */
void call_name(const char *expr, char *buf, size_t len) {
  size_t n = 0;
  while (expr[n] && expr[n] != '(' && n + 1 < len) n++;
  memcpy(buf, expr, n);
  buf[n] = 0;
}

int cuda_fail(arkcos_error *err, cudaError_t e, const char *expr, const char *file, int line) {
  char name[96];
  call_name(expr, name, sizeof name);
  (void)cudaGetLastError(); /* clear a non-sticky error */
  int code = e == cudaErrorMemoryAllocation ? ARKCOS_ENOMEM
             : (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorInvalidDevice)
                 ? ARKCOS_ENODEV
                 : ARKCOS_ERUNTIME;
  return arkcos_fail(err, code, "GPU: %s failed: %s (%s:%d)", name, cudaGetErrorString(e), file, line);
}

int cufft_fail(arkcos_error *err, cufftResult r, const char *expr, const char *file, int line) {
  char name[96];
  call_name(expr, name, sizeof name);
  int code = r == CUFFT_ALLOC_FAILED ? ARKCOS_ENOMEM : ARKCOS_ERUNTIME;
  return arkcos_fail(err, code, "GPU: %s failed: %s (%s:%d)", name, cufft_string(r), file, line);
}

/* Every CUDA and cuFFT call goes through one of these: the failure is
 * recorded with file and line and the enclosing function returns its code;
 * plan creation then releases everything through gpu_destroy. */
#define CUDA_CHECK(call)                                                     \
  do {                                                                       \
    cudaError_t ck_e = (call);                                               \
    if (ck_e != cudaSuccess) return cuda_fail(err, ck_e, #call, __FILE__, __LINE__); \
  } while (0)
#define CUFFT_CHECK(call)                                                    \
  do {                                                                       \
    cufftResult ck_r = (call);                                               \
    if (ck_r != CUFFT_SUCCESS) return cufft_fail(err, ck_r, #call, __FILE__, __LINE__); \
  } while (0)
#define LAUNCH_CHECK(name)                                                   \
  do {                                                                       \
    cudaError_t ck_e = cudaGetLastError();                                   \
    if (ck_e != cudaSuccess) return cuda_fail(err, ck_e, "launch of " name, __FILE__, __LINE__); \
  } while (0)

/* ----------------------------------------------------- precision traits */

/* (cx<R>::T, the complex type of precision R, is in gpu_bodies.h) */
cufftType r2c_type(double) { return CUFFT_D2Z; }
cufftType r2c_type(float) { return CUFFT_R2C; }
cufftType c2r_type(double) { return CUFFT_Z2D; }
cufftType c2r_type(float) { return CUFFT_C2R; }
cufftResult exec_r2c(cufftHandle h, double *in, double2 *out) { return cufftExecD2Z(h, in, out); }
cufftResult exec_r2c(cufftHandle h, float *in, float2 *out) { return cufftExecR2C(h, in, out); }
cufftResult exec_c2r(cufftHandle h, double2 *in, double *out) { return cufftExecZ2D(h, in, out); }
cufftResult exec_c2r(cufftHandle h, float2 *in, float *out) { return cufftExecC2R(h, in, out); }

/* ------------------------------------------------------- device kernels */
/* The bodies (gpu_bodies.h) behind thin __global__ wrappers; the launch
 * shapes are in gpu_tables.h. */

template <class R> __global__ void k_weight(const R *map, R *fmap, dtables t) {
  body_weight<R>(map, fmap, t, blockIdx.x, threadIdx.x, blockDim.x);
}
template <class R> __global__ void k_unpack(R *map, const R *fmap, dtables t) {
  body_unpack<R>(map, fmap, t, blockIdx.x, threadIdx.x, blockDim.x);
}
template <class R>
__global__ void k_extend(typename cx<R>::T *spec, dtables t, int64_t nm, int64_t nmp, int paper) {
  body_extend<R>(spec, t, nm, nmp, paper, blockIdx.x, threadIdx.x, blockDim.x);
}
template <class R>
__global__ void k_eval(dtables t, blockp b, arkcos_kfun kf, int64_t L, int64_t Lp, double twopi_L) {
  body_eval<R>(t, b, kf, L, Lp, twopi_L, (int64_t)blockIdx.x * blockDim.x + threadIdx.x);
}
template <class R>
__global__ void __launch_bounds__(RTPB)
    k_reduce(dtables t, blockp b, const typename cx<R>::T *spec, const typename cx<R>::T *tw, int64_t nm,
             int64_t nmp, int64_t L, double invL) {
  body_reduce<R>(t, b, spec, tw, nm, nmp, L, invL, blockIdx.x, (int64_t)blockIdx.y * blockDim.x + threadIdx.x);
}
template <class R>
__global__ void k_dft_r2c(const R *fmap, typename cx<R>::T *spec, dtables t, int64_t nmp) {
  body_dft_r2c<R>(fmap, spec, t, nmp, blockIdx.x, threadIdx.x, blockDim.x);
}
template <class R> __global__ void k_dft_c2r(const typename cx<R>::T *ospec, R *fmap, dtables t) {
  body_dft_c2r<R>(ospec, fmap, t, blockIdx.x, threadIdx.x, blockDim.x);
}

/* precision conversions on the device (single plans, pinned double maps) */
__global__ void k_d2f(const double *src, float *dst, int64_t n) {
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x)
    dst[k] = (float)src[k];
}
__global__ void k_f2d(const float *src, double *dst, int64_t n) {
  for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x)
    dst[k] = (double)src[k];
}
const unsigned CONV_BLOCKS = 4096;

template <class R>
__global__ void __launch_bounds__(DTPB) k_direct(dtables t, arkcos_kfun kf, const R *x, R *y, unsigned b0) {
  body_direct<R>(t, kf, x, y, (int64_t)b0 + blockIdx.x, threadIdx.x);
}
template <class R>
__global__ void k_fold(dtables t, blockp b, typename cx<R>::T *ospec, int64_t nm, int64_t nmp, int64_t L,
                       int paper, double invL) {
  body_fold<R>(t, b, ospec, nm, nmp, L, paper, invL, blockIdx.x,
               (int64_t)blockIdx.y * blockDim.x + threadIdx.x, blockIdx.z);
}

/* ------------------------------------------------ host copy thread pool */

/* Fork-join helpers for the host side of the staging copies: one host
 * thread moves about 5-10 GB/s, less than a PCIe 5 link. The calling thread
 * takes part; workers only copy (no CUDA calls off the calling thread). */
class host_pool {
 public:
  ~host_pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto &t : th_) t.join();
  }
  void start(int nthreads) {
    for (int i = 0; i + 1 < nthreads; i++) {
      try {
        th_.emplace_back(&host_pool::worker, this, i + 1);
      } catch (...) {
        break; /* fewer helpers */
      }
    }
  }
  /* kind 0: memcpy of n bytes; 1: n doubles -> floats; 2: n floats -> doubles */
  void run(int kind, const void *src, void *dst, int64_t n) {
    const int64_t unit = kind == 0 ? 1 : 8;
    if (th_.empty() || n < ((int64_t)1 << 20) / unit) {
      copy(kind, src, dst, 0, n);
      return;
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      kind_ = kind;
      src_ = src;
      dst_ = dst;
      n_ = n;
      pending_ = (int)th_.size();
      gen_++;
    }
    cv_.notify_all();
    part(kind, src, dst, 0, n);
    std::unique_lock<std::mutex> lk(mu_);
    done_.wait(lk, [&] { return pending_ == 0; });
  }

 private:
  /* share id of n among the calling thread (id 0) and the workers */
  void part(int kind, const void *src, void *dst, int id, int64_t n) {
    const int64_t np = (int64_t)th_.size() + 1;
    copy(kind, src, dst, n * id / np, n * (id + 1) / np);
  }
  static void copy(int kind, const void *src, void *dst, int64_t a, int64_t b) {
    if (kind == 0) {
      memcpy((char *)dst + a, (const char *)src + a, (size_t)(b - a));
    } else if (kind == 1) {
      const double *s = (const double *)src;
      float *d = (float *)dst;
      for (int64_t k = a; k < b; k++) d[k] = (float)s[k];
    } else {
      const float *s = (const float *)src;
      double *d = (double *)dst;
      for (int64_t k = a; k < b; k++) d[k] = (double)s[k];
    }
  }
  void worker(int id) {
    uint64_t seen = 0;
    for (;;) {
      int kind;
      const void *src;
      void *dst;
      int64_t n;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return quit_ || gen_ != seen; });
        if (quit_) return;
        seen = gen_;
        kind = kind_;
        src = src_;
        dst = dst_;
        n = n_;
      }
      part(kind, src, dst, id, n);
      std::lock_guard<std::mutex> lk(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
  std::vector<std::thread> th_;
  std::mutex mu_;
  std::condition_variable cv_, done_;
  uint64_t gen_ = 0;
  int pending_ = 0;
  bool quit_ = false;
  int kind_ = 0;
  const void *src_ = nullptr;
  void *dst_ = nullptr;
  int64_t n_ = 0;
};

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/* --------------------------------------------------------- device state */

struct gpu_state {
  int dev = 0, single = 0;
  char devname[256] = "";
  host_plan h;
  size_t rsize = 8;
  /* streams and events: stream 0 is s[0] */
  cudaStream_t s[1 + NAUX] = {};
  int nstreams = 0;
  cudaEvent_t ev_start = nullptr, ev_h2d = nullptr, ev_ifft = nullptr, ev_fork = nullptr, ev_inv = nullptr;
  cudaEvent_t ev_f0 = nullptr, ev_in1 = nullptr, ev_c0 = nullptr, ev_c1 = nullptr, ev_done = nullptr;
  cudaStream_t scopy = nullptr; /* pinned maps: the copies, beside the compute */
  cudaEvent_t ev_join[NAUX] = {};
  std::vector<cudaEvent_t> ev_blk;  /* 4 per block + 1 */
  cudaEvent_t ev_slot[NSLOT] = {};
  /* device memory */
  std::vector<void *> dmem;
  size_t dbytes = 0, plan_bytes = 0;
  void *map = nullptr, *spec = nullptr, *ospec = nullptr, *tw = nullptr, *arena = nullptr;
  void *xin = nullptr; /* the input map, kept for the direct pairs: == map when there are none */
  void *dmap = nullptr; /* single plans: the map in double, for pinned maps (one DMA, converted here) */
  void *fmap = nullptr; /* the map in the FFT layout: == map unless padded */
  void *work[1 + NAUX] = {};
  dtables T;
  arkcos_kfun kf;
  /* FFT plans, one per fft_desc */
  std::vector<cufftHandle> plan;
  cudaGraphExec_t gfwd = nullptr, ginv = nullptr;
  /* pinned staging */
  void *stage[NSLOT] = {};
  int nslot = 0;
  int64_t chunk = 0;
  host_pool *pool = nullptr;
};

int dalloc(gpu_state *st, void **ptr, size_t bytes, const char *what, arkcos_error *err) {
  *ptr = nullptr;
  if (bytes == 0) bytes = 256;
  cudaError_t e = cudaMalloc(ptr, bytes);
  if (e != cudaSuccess) {
    *ptr = nullptr;
    (void)cudaGetLastError();
    return arkcos_fail(err, e == cudaErrorMemoryAllocation ? ARKCOS_ENOMEM : ARKCOS_ERUNTIME,
                       "GPU: cudaMalloc of %.3f GB for %s failed: %s (%s:%d)", bytes / 1e9, what,
                       cudaGetErrorString(e), __FILE__, __LINE__);
  }
  st->dmem.push_back(*ptr);
  st->dbytes += bytes;
  return 0;
}

void gpu_destroy(arkcos_plan *p) {
  gpu_state *st = (gpu_state *)p->impl;
  if (!st) return;
  /* best effort: nothing here may fail the caller */
  cudaSetDevice(st->dev);
  if (st->s[0]) cudaStreamSynchronize(st->s[0]);
  for (int k = 1; k < st->nstreams; k++)
    if (st->s[k]) cudaStreamSynchronize(st->s[k]);
  if (st->gfwd) cudaGraphExecDestroy(st->gfwd);
  if (st->ginv) cudaGraphExecDestroy(st->ginv);
  for (cufftHandle hnd : st->plan) cufftDestroy(hnd);
  for (void *ptr : st->dmem) cudaFree(ptr);
  for (int k = 0; k < NSLOT; k++) {
    if (st->stage[k]) cudaFreeHost(st->stage[k]);
    if (st->ev_slot[k]) cudaEventDestroy(st->ev_slot[k]);
  }
  for (cudaEvent_t e : st->ev_blk) cudaEventDestroy(e);
  if (st->scopy) cudaStreamSynchronize(st->scopy);
  cudaEvent_t ev[10] = {st->ev_start, st->ev_h2d, st->ev_ifft, st->ev_fork, st->ev_inv,
                        st->ev_f0,    st->ev_in1, st->ev_c0,   st->ev_c1,   st->ev_done};
  for (cudaEvent_t e : ev)
    if (e) cudaEventDestroy(e);
  for (int k = 0; k < NAUX; k++)
    if (st->ev_join[k]) cudaEventDestroy(st->ev_join[k]);
  for (int k = 0; k < st->nstreams; k++)
    if (st->s[k]) cudaStreamDestroy(st->s[k]);
  if (st->scopy) cudaStreamDestroy(st->scopy);
  (void)cudaGetLastError();
  delete st->pool;
  delete st;
  p->impl = nullptr;
}

/* Fork the auxiliary streams off the main one / join them back: plain
 * event dependencies, which stream capture turns into graph edges. */
int fork_aux(gpu_state *st, arkcos_error *err) {
  if (st->nstreams <= 1) return 0;
  CUDA_CHECK(cudaEventRecord(st->ev_fork, st->s[0]));
  for (int k = 1; k < st->nstreams; k++) CUDA_CHECK(cudaStreamWaitEvent(st->s[k], st->ev_fork, 0));
  return 0;
}
int join_aux(gpu_state *st, arkcos_error *err) {
  for (int k = 1; k < st->nstreams; k++) {
    CUDA_CHECK(cudaEventRecord(st->ev_join[k - 1], st->s[k]));
    CUDA_CHECK(cudaStreamWaitEvent(st->s[0], st->ev_join[k - 1], 0));
  }
  return 0;
}

/* map -> spec (weights, r2c batches, extension / rotation) */
template <class R> int issue_forward(gpu_state *st, arkcos_error *err) {
  typedef typename cx<R>::T C;
  const host_plan &h = st->h;
  k_weight<R><<<(unsigned)h.nr, TPB, 0, st->s[0]>>>((const R *)st->xin, (R *)st->fmap, st->T);
  LAUNCH_CHECK("k_weight");
  int rc = fork_aux(st, err);
  if (rc) return rc;
  for (const fft_item &it : h.fwd)
    CUFFT_CHECK(exec_r2c(st->plan[(size_t)it.desc], (R *)st->fmap + it.in_off, (C *)st->spec + it.out_off));
  if (!h.dftf.empty()) {
    k_dft_r2c<R><<<(unsigned)h.dftf.size(), TPB, 0, st->s[0]>>>((const R *)st->fmap, (C *)st->spec, st->T, h.nmp);
    LAUNCH_CHECK("k_dft_r2c");
  }
  rc = join_aux(st, err);
  if (rc) return rc;
  k_extend<R><<<(unsigned)h.nr, TPB, 0, st->s[0]>>>((C *)st->spec, st->T, h.nm, h.nmp, h.paper);
  LAUNCH_CHECK("k_extend");
  return 0;
}

/* ospec -> map (c2r batches) */
template <class R> int issue_inverse(gpu_state *st, arkcos_error *err) {
  typedef typename cx<R>::T C;
  int rc = fork_aux(st, err);
  if (rc) return rc;
  for (const fft_item &it : st->h.inv)
    CUFFT_CHECK(exec_c2r(st->plan[(size_t)it.desc], (C *)st->ospec + it.in_off, (R *)st->fmap + it.out_off));
  if (!st->h.dfti.empty()) {
    k_dft_c2r<R><<<(unsigned)st->h.dfti.size(), TPB, 0, st->s[0]>>>((const C *)st->ospec, (R *)st->fmap, st->T);
    LAUNCH_CHECK("k_dft_c2r");
  }
  rc = join_aux(st, err);
  if (rc) return rc;
  if (st->h.padded) {
    k_unpack<R><<<(unsigned)st->h.nr, TPB, 0, st->s[0]>>>((R *)st->map, (const R *)st->fmap, st->T);
    LAUNCH_CHECK("k_unpack");
  }
  return 0;
}

/* Records one issue_* sequence as a CUDA graph (fewer launches: a HEALPix
 * map has 2 (nside - 1) cap batches per direction). On any failure the
 * sequence is simply issued directly at execute time. */
template <class R> void capture(gpu_state *st, int inverse, cudaGraphExec_t *out) {
  *out = nullptr;
  const char *env = getenv("ARKCOS_GPU_GRAPHS");
  if (env && env[0] == '0') return;
  if (cudaStreamBeginCapture(st->s[0], cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  arkcos_error scratch;
  int rc = inverse ? issue_inverse<R>(st, &scratch) : issue_forward<R>(st, &scratch);
  cudaGraph_t g = nullptr;
  cudaError_t e = cudaStreamEndCapture(st->s[0], &g);
  if (rc == 0 && e == cudaSuccess && g) {
    if (cudaGraphInstantiate(out, g, 0) != cudaSuccess) *out = nullptr;
  }
  if (g) cudaGraphDestroy(g);
  (void)cudaGetLastError();
}

void append(char *buf, size_t len, size_t *o, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void append(char *buf, size_t len, size_t *o, const char *fmt, ...) {
  if (*o >= len) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf + *o, len - *o, fmt, ap);
  va_end(ap);
  if (k > 0) *o = std::min(len, *o + (size_t)k);
}

/* Number of CUDA devices; 0 with the reason in why when there is none. */
int cuda_device_count(char *why, size_t len) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (why && len) snprintf(why, len, "no CUDA device found: %s", cudaGetErrorString(e));
    return 0;
  }
  if (n <= 0) {
    if (why && len) snprintf(why, len, "no CUDA device found: cudaGetDeviceCount reports 0 devices");
    return 0;
  }
  return n;
}

/* ----------------------------------------------------------- execution */

/* Whether the n doubles at ptr lie in page-locked host memory (cudaHostAlloc,
 * cudaHostRegister, arkcos_map_alloc): the DMA engines read and write them
 * directly, at the link's rate, without the staging slots. */
bool host_pinned(const void *ptr, int64_t n) {
  if (!ptr || n <= 0) return false;
  const void *ends[2] = {ptr, (const double *)ptr + (n - 1)};
  for (const void *q : ends) {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, q) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    if (a.type != cudaMemoryTypeHost) return false;
  }
  return true;
}

/* 1. h2d into the input buffer: one copy from a pinned double map; else
 * through the staging slots, where the host conversion of chunk c overlaps
 * the copy of chunk c - 1 */
template <class R> int upload_map(gpu_state *st, const double *in, arkcos_error *err) {
  cudaStream_t s0 = st->s[0];
  const int64_t npix = st->h.npix, ch = st->chunk;
  const int64_t nch = (npix + ch - 1) / ch;
  const int conv_in = sizeof(R) == sizeof(double) ? 0 : 1;
  const int64_t unit_in = conv_in == 0 ? (int64_t)sizeof(double) : 1; /* memcpy counts bytes */
  CUDA_CHECK(cudaEventRecord(st->ev_start, s0));
  if ((conv_in == 0 || st->dmap) && host_pinned(in, npix)) {
    void *dst = conv_in == 0 ? st->xin : st->dmap;
    CUDA_CHECK(cudaMemcpyAsync(dst, in, (size_t)npix * sizeof(double), cudaMemcpyHostToDevice, s0));
    if (conv_in) {
      k_d2f<<<CONV_BLOCKS, TPB, 0, s0>>>((const double *)st->dmap, (float *)st->xin, npix);
      LAUNCH_CHECK("k_d2f");
    }
    CUDA_CHECK(cudaEventRecord(st->ev_h2d, s0));
    return 0;
  }
  for (int64_t c = 0; c < nch; c++) {
    const int k = (int)(c % st->nslot);
    const int64_t a = c * ch, n = std::min(ch, npix - a);
    if (c >= st->nslot) CUDA_CHECK(cudaEventSynchronize(st->ev_slot[k]));
    st->pool->run(conv_in, in + a, st->stage[k], n * unit_in);
    CUDA_CHECK(cudaMemcpyAsync((R *)st->xin + a, st->stage[k], (size_t)n * sizeof(R), cudaMemcpyHostToDevice, s0));
    CUDA_CHECK(cudaEventRecord(st->ev_slot[k], s0));
  }
  CUDA_CHECK(cudaEventRecord(st->ev_h2d, s0));
  return 0;
}

/* 3. blocks of output rings: kernel samples, their FFTs, the reduction and
 * the fold, with an event before each stage */
template <class R> int run_blocks(gpu_state *st, arkcos_error *err) {
  typedef typename cx<R>::T C;
  const host_plan &h = st->h;
  cudaStream_t s0 = st->s[0];
  const double twopi_L = 2 * ARKCOS_PI / (double)h.L, invL = 1.0 / (double)h.L;
  const unsigned my = grid_reduce_y(h), fy = grid_fold_y(h);
  CUDA_CHECK(cudaEventRecord(st->ev_blk[0], s0));
  for (size_t bi = 0; bi < h.blocks.size(); bi++) {
    blockp b = h.blocks[bi];
    cudaEvent_t *e = &st->ev_blk[4 * bi];
    hp_place(&b, st->arena);
    if (b.nf > 0) CUDA_CHECK(cudaMemsetAsync(b.grid_p, 0, (size_t)(b.nf * h.Lp) * sizeof(R), s0));
    if (b.ns > 0) {
      k_eval<R><<<grid_eval(b), TPB, 0, s0>>>(st->T, b, st->kf, h.L, h.Lp, twopi_L);
      LAUNCH_CHECK("k_eval");
    }
    CUDA_CHECK(cudaEventRecord(e[1], s0));
    /* dense grids: batches of 1024 rows, then the binary digits of the rest */
    for (int64_t r0 = 0; r0 < b.nf;) {
      const int k = hp_kbatch(h, b.nf - r0);
      CUFFT_CHECK(exec_r2c(st->plan[(size_t)h.kdesc[k]], (R *)b.grid_p + r0 * h.Lp,
                           (C *)b.hspec_p + r0 * h.nmp));
      r0 += (int64_t)1 << k;
    }
    CUDA_CHECK(cudaEventRecord(e[2], s0));
    const unsigned ntask = (unsigned)(b.tb - b.ta);
    k_reduce<R><<<dim3(ntask, my), RTPB, 0, s0>>>(st->T, b, (const C *)st->spec, (const C *)st->tw, h.nm,
                                                   h.nmp, h.L, invL);
    LAUNCH_CHECK("k_reduce");
    CUDA_CHECK(cudaEventRecord(e[3], s0));
    k_fold<R><<<dim3(ntask, fy, 2), TPB, 0, s0>>>(st->T, b, (C *)st->ospec, h.nm, h.nmp, h.L, h.paper, invL);
    LAUNCH_CHECK("k_fold");
    CUDA_CHECK(cudaEventRecord(e[4], s0));
  }
  return 0;
}

/* 5. d2h: one copy into a pinned double map; else the first slots' copies
 * are queued behind the compute and the host conversion of chunk c
 * overlaps the copies of the next ones. *t_d2h: when the compute was done. */
template <class R> int download_map(gpu_state *st, double *out, arkcos_error *err, double *t_d2h) {
  cudaStream_t s0 = st->s[0];
  const int64_t npix = st->h.npix, ch = st->chunk;
  const int64_t nch = (npix + ch - 1) / ch;
  const int conv_out = sizeof(R) == sizeof(double) ? 0 : 2;
  const int64_t unit_out = conv_out == 0 ? (int64_t)sizeof(double) : 1;
  if ((conv_out == 0 || st->dmap) && host_pinned(out, npix)) {
    if (conv_out) {
      k_f2d<<<CONV_BLOCKS, TPB, 0, s0>>>((const float *)st->map, (double *)st->dmap, npix);
      LAUNCH_CHECK("k_f2d");
    }
    CUDA_CHECK(cudaEventSynchronize(st->ev_ifft));
    *t_d2h = wall_seconds();
    CUDA_CHECK(cudaMemcpyAsync(out, conv_out ? st->dmap : st->map, (size_t)npix * sizeof(double),
                               cudaMemcpyDeviceToHost, s0));
    CUDA_CHECK(cudaStreamSynchronize(s0));
    return 0;
  }
  for (int64_t c = 0; c < nch && c < st->nslot; c++) {
    const int64_t a = c * ch, n = std::min(ch, npix - a);
    CUDA_CHECK(cudaMemcpyAsync(st->stage[c], (R *)st->map + a, (size_t)n * sizeof(R), cudaMemcpyDeviceToHost, s0));
    CUDA_CHECK(cudaEventRecord(st->ev_slot[c], s0));
  }
  CUDA_CHECK(cudaEventSynchronize(st->ev_ifft));
  *t_d2h = wall_seconds();
  for (int64_t c = 0; c < nch; c++) {
    const int k = (int)(c % st->nslot);
    const int64_t a = c * ch, n = std::min(ch, npix - a);
    CUDA_CHECK(cudaEventSynchronize(st->ev_slot[k]));
    st->pool->run(conv_out, st->stage[k], out + a, n * unit_out);
    const int64_t c2 = c + st->nslot;
    if (c2 < nch) {
      const int64_t a2 = c2 * ch, n2 = std::min(ch, npix - a2);
      CUDA_CHECK(cudaMemcpyAsync(st->stage[k], (R *)st->map + a2, (size_t)n2 * sizeof(R),
                                 cudaMemcpyDeviceToHost, s0));
      CUDA_CHECK(cudaEventRecord(st->ev_slot[k], s0));
    }
  }
  return 0;
}

/* Stage times from the events (all complete now) */
/* caps_direct: the seconds of the caps' direct pairs run apart from the
 * main sequence (execute_overlap), else 0 */
int record_times(arkcos_plan *p, gpu_state *st, double t_start, double t_d2h, double t_end, double caps_direct,
                 arkcos_error *err) {
  const host_plan &h = st->h;
  arkcos_stage_times *T = &p->last;
  memset(T, 0, sizeof *T);
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, st->ev_start, st->ev_h2d));
  T->h2d = ms * 1e-3;
  CUDA_CHECK(cudaEventElapsedTime(&ms, st->ev_f0, st->ev_blk[0]));
  T->map_fft = ms * 1e-3;
  for (size_t bi = 0; bi < h.blocks.size(); bi++) {
    cudaEvent_t *e = &st->ev_blk[4 * bi];
    CUDA_CHECK(cudaEventElapsedTime(&ms, e[0], e[1]));
    T->kernel_eval += ms * 1e-3;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e[1], e[2]));
    T->kernel_fft += ms * 1e-3;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e[2], e[3]));
    T->reduction += ms * 1e-3;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e[3], e[4]));
    T->map_ifft += ms * 1e-3;
  }
  CUDA_CHECK(cudaEventElapsedTime(&ms, st->ev_blk[4 * h.blocks.size()], st->ev_inv));
  T->map_ifft += ms * 1e-3;
  CUDA_CHECK(cudaEventElapsedTime(&ms, st->ev_inv, st->ev_ifft));
  T->direct = ms * 1e-3 + caps_direct; /* the direct pairs (k_direct): part of the reduction */
  T->reduction += T->direct;
  T->d2h = t_end - t_d2h;
  T->total = t_end - t_start;
  T->other = T->total - (T->h2d + T->map_fft + T->kernel_eval + T->kernel_fft + T->reduction + T->map_ifft +
                         T->d2h);
  if (T->other < 0) T->other = 0;
  return 0;
}

/* Direct-pair thread blocks [b0, b1) on stream s (k_direct) */
template <class R> int launch_direct(gpu_state *st, unsigned b0, unsigned b1, cudaStream_t s, arkcos_error *err) {
  if (b1 <= b0) return 0;
  k_direct<R><<<b1 - b0, DTPB, 0, s>>>(st->T, st->kf, (const R *)st->xin, (R *)st->map, b0);
  LAUNCH_CHECK("k_direct");
  return 0;
}

/* The map ranges no path writes set to 0, then the direct pairs' blocks
 * from b0 on added to (or, in rings without a Fourier part, written into)
 * the output map */
template <class R> int issue_direct(gpu_state *st, unsigned b0, arkcos_error *err) {
  const host_plan &h = st->h;
  for (const auto &z : h.zero)
    CUDA_CHECK(cudaMemsetAsync((R *)st->map + z.first, 0, (size_t)z.second * sizeof(R), st->s[0]));
  return launch_direct<R>(st, b0, grid_direct(h), st->s[0], err);
}

/* Steps 2-5 on the main stream once the input is on the device: ring
 * spectra, the blocks of output rings, the output rings, then the direct
 * pairs' thread blocks from b0 on; events ev_f0, ev_inv and ev_ifft */
template <class R> int issue_compute(gpu_state *st, unsigned b0, arkcos_error *err) {
  cudaStream_t s0 = st->s[0];
  int rc;
  CUDA_CHECK(cudaEventRecord(st->ev_f0, s0));
  if (st->gfwd) {
    CUDA_CHECK(cudaGraphLaunch(st->gfwd, s0));
  } else if ((rc = issue_forward<R>(st, err))) {
    return rc;
  }
  if ((rc = run_blocks<R>(st, err))) return rc;
  if (st->ginv) {
    CUDA_CHECK(cudaGraphLaunch(st->ginv, s0));
  } else if ((rc = issue_inverse<R>(st, err))) {
    return rc;
  }
  CUDA_CHECK(cudaEventRecord(st->ev_inv, s0));
  if ((rc = issue_direct<R>(st, b0, err))) return rc;
  CUDA_CHECK(cudaEventRecord(st->ev_ifft, s0));
  return 0;
}

/* Pinned maps, copies on their own stream: ranges of the input map into
 * the device (into the double copy and converted, for single plans), or
 * of the output map back (converted first) */
template <class R> int copy_ranges(gpu_state *st, const std::vector<std::pair<int64_t, int64_t>> &rs, const double *in,
                                   double *out, arkcos_error *err) {
  cudaStream_t sc = st->scopy;
  const bool conv = sizeof(R) != sizeof(double);
  for (const auto &q : rs) {
    const int64_t a = q.first, n = q.second;
    const size_t bytes = (size_t)n * sizeof(double);
    if (in) {
      CUDA_CHECK(cudaMemcpyAsync(conv ? (double *)st->dmap + a : (double *)st->xin + a, in + a, bytes,
                                 cudaMemcpyHostToDevice, sc));
      if (conv) {
        k_d2f<<<CONV_BLOCKS, TPB, 0, sc>>>((const double *)st->dmap + a, (float *)st->xin + a, n);
        LAUNCH_CHECK("k_d2f");
      }
    } else {
      if (conv) {
        k_f2d<<<CONV_BLOCKS, TPB, 0, sc>>>((const float *)st->map + a, (double *)st->dmap + a, n);
        LAUNCH_CHECK("k_f2d");
      }
      CUDA_CHECK(cudaMemcpyAsync(out + a, conv ? (double *)st->dmap + a : (double *)st->map + a, bytes,
                                 cudaMemcpyDeviceToHost, sc));
    }
  }
  return 0;
}

/* Pinned maps, exact plans: copies overlap the compute. The copy stream
 * takes the caps' input first; the caps' direct pairs run as soon as it is
 * there, while the rest of the map arrives; the caps' output goes back
 * while the belt's Fourier pairs run; then the belt's edge (its direct
 * pairs) and the rest of the map. Stage times: h2d and d2h are the copy
 * stream's, the others the main stream's, so with the overlap they add up
 * to more than the total. */
template <class R> int execute_overlap(arkcos_plan *p, gpu_state *st, const double *in, double *out,
                                       arkcos_error *err, double t_start) {
  cudaStream_t s0 = st->s[0], sc = st->scopy;
  const host_plan &h = st->h;
  int rc;
  CUDA_CHECK(cudaEventRecord(st->ev_start, s0));
  CUDA_CHECK(cudaStreamWaitEvent(sc, st->ev_start, 0));
  if ((rc = copy_ranges<R>(st, h.in_first, in, nullptr, err))) return rc;
  CUDA_CHECK(cudaEventRecord(st->ev_in1, sc));
  if ((rc = copy_ranges<R>(st, h.in_rest, in, nullptr, err))) return rc;
  CUDA_CHECK(cudaEventRecord(st->ev_h2d, sc));
  /* the caps */
  CUDA_CHECK(cudaStreamWaitEvent(s0, st->ev_in1, 0));
  CUDA_CHECK(cudaEventRecord(st->ev_c0, s0));
  if ((rc = launch_direct<R>(st, 0, grid_direct_first(h), s0, err))) return rc;
  CUDA_CHECK(cudaEventRecord(st->ev_c1, s0));
  CUDA_CHECK(cudaStreamWaitEvent(sc, st->ev_c1, 0));
  if ((rc = copy_ranges<R>(st, h.out_first, nullptr, out, err))) return rc;
  /* the belt */
  CUDA_CHECK(cudaStreamWaitEvent(s0, st->ev_h2d, 0));
  if ((rc = issue_compute<R>(st, grid_direct_first(h), err))) return rc;
  CUDA_CHECK(cudaStreamWaitEvent(sc, st->ev_ifft, 0));
  if ((rc = copy_ranges<R>(st, h.out_rest, nullptr, out, err))) return rc;
  CUDA_CHECK(cudaEventRecord(st->ev_done, sc));
  CUDA_CHECK(cudaEventSynchronize(st->ev_ifft));
  const double t_d2h = wall_seconds();
  CUDA_CHECK(cudaEventSynchronize(st->ev_done));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, st->ev_c0, st->ev_c1)); /* the caps' direct pairs */
  return record_times(p, st, t_start, t_d2h, wall_seconds(), ms * 1e-3, err);
}

template <class R> int execute_body(arkcos_plan *p, gpu_state *st, const double *in, double *out,
                                    arkcos_error *err, double t_start) {
  int rc;
  if ((rc = upload_map<R>(st, in, err))) return rc;
  if ((rc = issue_compute<R>(st, 0, err))) return rc;
  double t_d2h = 0;
  if ((rc = download_map<R>(st, out, err, &t_d2h))) return rc;
  return record_times(p, st, t_start, t_d2h, wall_seconds(), 0, err);
}

template <class R> int execute_t(arkcos_plan *p, const double *in, double *out, arkcos_error *err) {
  gpu_state *st = (gpu_state *)p->impl;
  if (!st) return arkcos_fail(err, ARKCOS_EINVAL, "execute: GPU plan is not initialised");
  const double t_start = wall_seconds();
  CUDA_CHECK(cudaSetDevice(st->dev));
  /* pinned maps of an exact plan: copies overlap the compute (unless
   * ARKCOS_GPU_OVERLAP=0, for comparison) */
  const char *ov = getenv("ARKCOS_GPU_OVERLAP");
  const bool overlap = !(ov && ov[0] == '0') && st->h.nbfirst > 0 && (sizeof(R) == sizeof(double) || st->dmap) &&
                       host_pinned(in, st->h.npix) && host_pinned(out, st->h.npix);
  int rc = overlap ? execute_overlap<R>(p, st, in, out, err, t_start) : execute_body<R>(p, st, in, out, err, t_start);
  if (rc) {
    /* leave nothing in flight that still reads the caller's buffers */
    cudaStreamSynchronize(st->s[0]);
    if (st->scopy) cudaStreamSynchronize(st->scopy);
    (void)cudaGetLastError();
  }
  return rc;
}

/* ------------------------------------------------------------ creation */

int64_t env_int(const char *name, int64_t dflt) {
  const char *v = getenv(name);
  if (!v || !*v) return dflt;
  char *end;
  long long x = strtoll(v, &end, 10);
  return (*end == 0 && x >= 0) ? (int64_t)x : dflt;
}

/* Device memory the plan needs outside the block arena, in bytes */
struct dev_sizes {
  size_t map_b, xin_b, dmap_b, fmap_b, spec_b, ospec_b, tw_b, tab_b, spline_b;
  size_t fixed;     /* all of the above, each 256-byte aligned */
  size_t reserve;   /* left free: context, cuFFT, fragmentation */
  size_t min_arena; /* the smallest block arena */
};

template <class R> dev_sizes plan_sizes(const arkcos_plan *p, const host_plan &h) {
  typedef typename cx<R>::T C;
  const size_t rs = sizeof(R), cs = sizeof(C);
  dev_sizes z = {};
  z.map_b = (size_t)h.npix * rs;
  z.xin_b = h.ndirect > 0 ? (size_t)h.npix * rs : 0; /* the input, kept for the direct pairs */
  z.dmap_b = rs < sizeof(double) ? (size_t)h.npix * sizeof(double) : 0; /* single: pinned maps' double copy */
  z.fmap_b = h.padded ? (size_t)h.fsize * rs : 0;
  z.spec_b = (size_t)h.nr * (size_t)h.nmp * cs;
  z.ospec_b = (size_t)h.osz * cs;
  z.tw_b = (size_t)h.L * cs;
  z.tab_b = 0; /* the tables' image: a dry run of its layout */
  hp_tables(h, [&](const void *, size_t bytes) -> const void * {
    z.tab_b += align256(bytes);
    return nullptr;
  });
  z.spline_b = p->kf.type == ARKCOS_KERNEL_TABLE ? sizeof(double) * 5 * (size_t)p->kf.nknots : 0;
  z.fixed = align256(z.map_b) + align256(z.xin_b) + align256(z.dmap_b) + align256(z.fmap_b) + align256(z.spec_b) +
            align256(z.ospec_b) + align256(z.tw_b) +
            z.tab_b + align256(z.spline_b);
  z.min_arena = hp_min_arena(&h, rs);
  return z;
}

/* Everything but the block arena must fit, else ENOMEM; sets z->reserve */
int check_memory(const arkcos_plan *p, gpu_state *st, dev_sizes *z, arkcos_error *err) {
  size_t free0 = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free0, &total));
  z->reserve = std::max((size_t)256 << 20, total / 50); /* context, cuFFT, fragmentation */
  if (z->fixed + z->min_arena + z->reserve <= free0) return 0;
  char what[64];
  if (p->geom->kind == ARKCOS_GEOM_HEALPIX)
    snprintf(what, sizeof what, "nside %lld", (long long)p->geom->nside);
  else
    snprintf(what, sizeof what, "this %lld-pixel map", (long long)st->h.npix);
  return arkcos_fail(err, ARKCOS_ENOMEM,
                     "GPU: not enough device memory for %s in %s precision: the map and its ring "
                     "spectra need %.2f GB (+%.2f GB reserve), but only %.2f GB of %.2f GB are free on "
                     "device %d (%s)",
                     what, st->single ? "single" : "double", (z->fixed + z->min_arena) / 1e9, z->reserve / 1e9,
                     free0 / 1e9, total / 1e9, st->dev, st->devname);
}

/* The map, spectra and twiddles; the tables (one host image, one copy);
 * the kernel profile with its spline points on the device */
template <class R> int alloc_fixed(const arkcos_plan *p, gpu_state *st, const dev_sizes &z, arkcos_error *err) {
  typedef typename cx<R>::T C;
  const host_plan &h = st->h;
  int rc;
  if ((rc = dalloc(st, &st->map, z.map_b, "the map", err))) return rc;
  st->xin = st->map;
  if (z.xin_b && (rc = dalloc(st, &st->xin, z.xin_b, "the input map", err))) return rc;
  if (z.dmap_b && (rc = dalloc(st, &st->dmap, z.dmap_b, "the map in double", err))) return rc;
  st->fmap = st->map;
  if (h.padded && (rc = dalloc(st, &st->fmap, z.fmap_b, "the map's FFT layout", err))) return rc;
  if ((rc = dalloc(st, &st->spec, z.spec_b, "the ring spectra", err))) return rc;
  if ((rc = dalloc(st, &st->ospec, z.ospec_b, "the output spectra", err))) return rc;
  if ((rc = dalloc(st, &st->tw, z.tw_b, "the twiddle table", err))) return rc;
  {
    std::vector<char> img(z.tab_b);
    void *dtab;
    if ((rc = dalloc(st, &dtab, z.tab_b, "the ring-pair tables", err))) return rc;
    size_t off = 0;
    auto put = [&](const void *src, size_t bytes) -> const void * {
      if (bytes) memcpy(img.data() + off, src, bytes);
      const void *dp = (const char *)dtab + off;
      off += align256(bytes);
      return dp;
    };
    st->T = hp_tables(h, put);
    CUDA_CHECK(cudaMemcpy(dtab, img.data(), off, cudaMemcpyHostToDevice));
  }
  {
    const std::vector<C> tw = hp_twiddles<R>(h.L);
    CUDA_CHECK(cudaMemcpy(st->tw, tw.data(), z.tw_b, cudaMemcpyHostToDevice));
  }
  st->kf = p->kf;
  if (z.spline_b) {
    void *dsp;
    if ((rc = dalloc(st, &dsp, z.spline_b, "the kernel table", err))) return rc;
    CUDA_CHECK(cudaMemcpy(dsp, p->kf.spline, z.spline_b, cudaMemcpyHostToDevice));
    st->kf.spline = (const double *)dsp; /* the device copy of the profile points here */
  } else {
    st->kf.spline = nullptr;
  }
  return 0;
}

/* Streams (stream 0 and the auxiliary ones) and the timing events */
int create_streams(gpu_state *st, arkcos_error *err) {
  st->nstreams = 1 + st->h.naux;
  for (int k = 0; k < st->nstreams; k++) CUDA_CHECK(cudaStreamCreateWithFlags(&st->s[k], cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreate(&st->ev_start));
  CUDA_CHECK(cudaEventCreate(&st->ev_h2d));
  CUDA_CHECK(cudaEventCreate(&st->ev_ifft));
  CUDA_CHECK(cudaEventCreate(&st->ev_inv));
  CUDA_CHECK(cudaEventCreate(&st->ev_f0));
  CUDA_CHECK(cudaEventCreate(&st->ev_in1));
  CUDA_CHECK(cudaEventCreate(&st->ev_c0));
  CUDA_CHECK(cudaEventCreate(&st->ev_c1));
  CUDA_CHECK(cudaEventCreate(&st->ev_done));
  CUDA_CHECK(cudaStreamCreateWithFlags(&st->scopy, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&st->ev_fork, cudaEventDisableTiming));
  for (int k = 0; k < st->h.naux; k++) CUDA_CHECK(cudaEventCreateWithFlags(&st->ev_join[k], cudaEventDisableTiming));
  return 0;
}

/* cuFFT plans without their own work areas: one area per stream */
template <class R> int make_fft_plans(gpu_state *st, arkcos_error *err) {
  const host_plan &h = st->h;
  int rc;
  size_t free1 = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free1, &total));
  size_t wsize[1 + NAUX] = {};
  st->plan.reserve(h.desc.size());
  for (const fft_desc &fd : h.desc) {
    cufftHandle hnd;
    CUFFT_CHECK(cufftCreate(&hnd));
    st->plan.push_back(hnd);
    CUFFT_CHECK(cufftSetAutoAllocation(hnd, 0));
    const int64_t half = fd.N / 2 + 1;
    long long n[1] = {(long long)fd.N};
    long long in_e[1] = {(long long)(fd.kind == 1 ? half : fd.N)};
    long long out_e[1] = {(long long)(fd.kind == 1 ? fd.N : half)};
    cufftType type = fd.kind == 1 ? c2r_type(R()) : r2c_type(R());
    size_t ws = 0;
    CUFFT_CHECK(cufftMakePlanMany64(hnd, 1, n, in_e, 1, (long long)fd.idist, out_e, 1, (long long)fd.odist, type,
                                    (long long)fd.rows, &ws));
    wsize[fd.stream] = std::max(wsize[fd.stream], ws);
  }
  size_t free2 = 0;
  CUDA_CHECK(cudaMemGetInfo(&free2, &total));
  st->plan_bytes = free1 > free2 ? free1 - free2 : 0;
  for (int k = 0; k < st->nstreams; k++)
    if (wsize[k] && (rc = dalloc(st, &st->work[k], wsize[k], "cuFFT work areas", err))) return rc;
  for (size_t d = 0; d < h.desc.size(); d++) {
    const int k = h.desc[d].stream;
    CUFFT_CHECK(cufftSetStream(st->plan[d], st->s[k]));
    if (st->work[k]) CUFFT_CHECK(cufftSetWorkArea(st->plan[d], st->work[k]));
  }
  return 0;
}

/* Blocks of output rings sized to the memory that is left, their arena
 * and events */
int make_blocks(gpu_state *st, const dev_sizes &z, arkcos_error *err) {
  host_plan &h = st->h;
  int rc;
  size_t free3 = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free3, &total));
  size_t budget = free3 > z.reserve ? free3 - z.reserve : 0;
  budget = std::min(budget, ARENA_MAX);
  const int64_t cap = env_int("ARKCOS_GPU_ARENA_BYTES", 0); /* tests force small blocks */
  if (cap > 0) budget = std::min(budget, (size_t)cap);
  if (hp_blocks(&h, st->rsize, budget) != 0)
    return arkcos_fail(err, ARKCOS_ENOMEM,
                       "GPU: not enough device memory for one kernel row: %.3f GB free for blocks of output "
                       "rings on device %d (%s), %.3f GB needed",
                       budget / 1e9, st->dev, st->devname, z.min_arena / 1e9);
  if ((rc = dalloc(st, &st->arena, h.arena, "the blocks of output rings", err))) return rc;
  st->ev_blk.assign(4 * h.blocks.size() + 1, nullptr);
  for (cudaEvent_t &e : st->ev_blk) CUDA_CHECK(cudaEventCreate(&e));
  /* the per-pair prefix arrays served the block layout only */
  std::vector<int64_t>().swap(h.fpre);
  std::vector<int64_t>().swap(h.dpre);
  return 0;
}

/* Pinned staging and the host copy helpers */
int setup_staging(const arkcos_plan *p, gpu_state *st, arkcos_error *err) {
  const host_plan &h = st->h;
  st->chunk = std::min<int64_t>(STAGE_CHUNK, std::max<int64_t>(h.npix, 1));
  const int64_t nch = (h.npix + st->chunk - 1) / st->chunk;
  st->nslot = (int)std::min<int64_t>(NSLOT, std::max<int64_t>(nch, 1));
  for (int k = 0; k < st->nslot; k++) {
    CUDA_CHECK(cudaHostAlloc(&st->stage[k], (size_t)st->chunk * st->rsize, cudaHostAllocDefault));
    CUDA_CHECK(cudaEventCreateWithFlags(&st->ev_slot[k], cudaEventDisableTiming));
  }
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int nthreads = p->opt.threads > 0 ? p->opt.threads : (int)std::min(8u, hw);
  st->pool = new host_pool();
  st->pool->start(nthreads);
  return 0;
}

/* One direct run on a zero map loads every module and checks the plans;
 * then the two transform sequences are captured as graphs */
template <class R> int warm_and_capture(gpu_state *st, const dev_sizes &z, arkcos_error *err) {
  int rc;
  CUDA_CHECK(cudaMemsetAsync(st->map, 0, z.map_b, st->s[0]));
  if (z.xin_b) CUDA_CHECK(cudaMemsetAsync(st->xin, 0, z.xin_b, st->s[0]));
  if (st->h.padded) CUDA_CHECK(cudaMemsetAsync(st->fmap, 0, z.fmap_b, st->s[0]));
  CUDA_CHECK(cudaMemsetAsync(st->ospec, 0, z.ospec_b, st->s[0]));
  if ((rc = issue_forward<R>(st, err))) return rc;
  if ((rc = issue_inverse<R>(st, err))) return rc;
  CUDA_CHECK(cudaStreamSynchronize(st->s[0]));
  capture<R>(st, 0, &st->gfwd);
  capture<R>(st, 1, &st->ginv);
  for (int k = 0; k < st->nstreams; k++) {
    cudaStreamCaptureStatus cst = cudaStreamCaptureStatusNone;
    CUDA_CHECK(cudaStreamIsCapturing(st->s[k], &cst));
    if (cst != cudaStreamCaptureStatusNone)
      return arkcos_fail(err, ARKCOS_ERUNTIME, "GPU: stream %d left in capture mode (%s:%d)", k, __FILE__,
                         __LINE__);
  }
  return 0;
}

template <class R> int create_t(arkcos_plan *p, gpu_state *st, arkcos_error *err) {
  st->rsize = sizeof(R);
  /* host side: rings, pairs, FFT batches */
  double t0 = wall_seconds();
  hp_build(p, &st->h, env_int("ARKCOS_GPU_DIRECT_MAX", DIRECT_MAX));
  dev_sizes z = plan_sizes<R>(p, st->h);
  int rc;
  if ((rc = check_memory(p, st, &z, err))) return rc;
  if ((rc = alloc_fixed<R>(p, st, z, err))) return rc;
  p->setup.tables = wall_seconds() - t0;
  if ((rc = create_streams(st, err))) return rc;
  t0 = wall_seconds();
  if ((rc = make_fft_plans<R>(st, err))) return rc;
  p->setup.fftw = wall_seconds() - t0; /* cuFFT's plans */
  if ((rc = make_blocks(st, z, err))) return rc;
  if ((rc = setup_staging(p, st, err))) return rc;
  if ((rc = warm_and_capture<R>(st, z, err))) return rc;
  p->bytes = st->dbytes + st->plan_bytes;
  return 0;
}

} /* namespace */

/* ---------------------------------------------------------- public entry */

extern "C" int arkcos_gpu_available(char *why, size_t len) {
  const int n = cuda_device_count(why, len);
  if (n == 0) return 0;
  if (why && len) snprintf(why, len, "%d CUDA device%s", n, n == 1 ? "" : "s");
  return 1;
}

extern "C" void arkcos_gpu_query(arkcos_gpu_info *info) {
  memset(info, 0, sizeof *info);
  info->built_with_cuda = 1;
  if (cudaRuntimeGetVersion(&info->runtime_version) != cudaSuccess) info->runtime_version = 0;
  if (cudaDriverGetVersion(&info->driver_version) != cudaSuccess) info->driver_version = 0;
  if (cufftGetVersion(&info->cufft_version) != CUFFT_SUCCESS) info->cufft_version = 0;
  (void)cudaGetLastError();
  const int n = cuda_device_count(NULL, 0);
  if (n == 0) return;
  info->ndevices = n < 8 ? n : 8;
  for (int d = 0; d < info->ndevices; d++) {
    arkcos_gpu_device_info *di = &info->devices[d];
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) {
      snprintf(di->name, sizeof di->name, "%s", prop.name);
      di->sm_count = prop.multiProcessorCount;
      di->cc_major = prop.major;
      di->cc_minor = prop.minor;
      di->total_memory = prop.totalGlobalMem;
    }
    /* CUDA 13 dropped the clock fields of cudaDeviceProp; attributes stay */
    if (cudaDeviceGetAttribute(&di->clock_khz, cudaDevAttrClockRate, d) != cudaSuccess) di->clock_khz = 0;
    if (cudaDeviceGetAttribute(&di->memory_clock_khz, cudaDevAttrMemoryClockRate, d) != cudaSuccess)
      di->memory_clock_khz = 0;
    (void)cudaGetLastError();
  }
}

extern "C" void arkcos_gpu_describe(char *buf, size_t len) {
  if (!buf || !len) return;
  buf[0] = 0;
  arkcos_gpu_info info;
  arkcos_gpu_query(&info);
  size_t o = 0;
  char drv[32];
  if (info.driver_version > 0)
    snprintf(drv, sizeof drv, "%d.%d", info.driver_version / 1000, (info.driver_version % 1000) / 10);
  else
    snprintf(drv, sizeof drv, "none");
  append(buf, len, &o, "CUDA runtime %d.%d, driver %s, cuFFT %d.%d.%d\n", info.runtime_version / 1000,
         (info.runtime_version % 1000) / 10, drv, info.cufft_version / 1000, (info.cufft_version % 1000) / 100,
         info.cufft_version % 100);
  if (info.ndevices == 0) {
    char why[256];
    cuda_device_count(why, sizeof why);
    append(buf, len, &o, "GPU: %s\n", why);
    return;
  }
  for (int d = 0; d < info.ndevices; d++) {
    const arkcos_gpu_device_info *di = &info.devices[d];
    append(buf, len, &o,
           "GPU %d: %s, compute capability %d.%d, %d SMs, %.1f GiB, clock %d MHz, memory clock %d MHz\n", d,
           di->name, di->cc_major, di->cc_minor, di->sm_count, di->total_memory / 1073741824.0,
           di->clock_khz / 1000, di->memory_clock_khz / 1000);
  }
}

extern "C" int arkcos_gpu_create(arkcos_plan *p, arkcos_error *err) {
  char why[256];
  const int n = cuda_device_count(why, sizeof why);
  if (n == 0)
    return arkcos_fail(err, ARKCOS_ENODEV, "--backend gpu: %s", why);
  const int dev = p->opt.device;
  if (dev < 0 || dev >= n)
    return arkcos_fail(err, ARKCOS_ENODEV, "--backend gpu: CUDA device %d does not exist (%d device%s)", dev, n,
                       n == 1 ? "" : "s");
  if (p->L > MAX_L)
    return arkcos_fail(err, ARKCOS_EINVAL, "GPU: rings of %lld pixels exceed the GPU backend's limit of %lld",
                       (long long)p->L, (long long)MAX_L);
  if (p->geom->npix <= 0 || p->geom->nrings <= 0)
    return arkcos_fail(err, ARKCOS_EINVAL, "GPU: empty geometry");
  gpu_state *st = new (std::nothrow) gpu_state();
  if (!st) return arkcos_fail(err, ARKCOS_ENOMEM, "GPU: out of host memory");
  st->dev = dev;
  st->single = p->opt.precision == ARKCOS_SINGLE;
  p->impl = st;
  p->destroy = gpu_destroy;
  p->execute = st->single ? execute_t<float> : execute_t<double>;
  int rc;
  try {
    cudaError_t e = cudaSetDevice(dev);
    if (e != cudaSuccess) {
      rc = cuda_fail(err, e, "cudaSetDevice", __FILE__, __LINE__);
    } else {
      cudaDeviceProp prop;
      if (cudaGetDeviceProperties(&prop, dev) == cudaSuccess)
        snprintf(st->devname, sizeof st->devname, "%s", prop.name);
      /* every ring pair, the exact path's direct pairs included, runs on the device */
      rc = st->single ? create_t<float>(p, st, err) : create_t<double>(p, st, err);
    }
  } catch (const std::bad_alloc &) {
    rc = arkcos_fail(err, ARKCOS_ENOMEM, "GPU: out of host memory while planning");
  } catch (...) {
    rc = arkcos_fail(err, ARKCOS_ERUNTIME, "GPU: unexpected failure while planning");
  }
  if (rc) {
    gpu_destroy(p); /* releases everything allocated so far */
    p->destroy = nullptr;
    p->execute = nullptr;
  }
  return rc;
}

/* Not in arkcos.h (yet): time of one cudaMemcpy of `bytes` each way between
 * pinned host memory and the device, the floor under host-in/host-out
 * timings. Median of `reps`. 0 or an ARKCOS_E* code. */
extern "C" int arkcos_gpu_copy_time(int device, size_t bytes, int reps, double *h2d, double *d2h,
                                    arkcos_error *err) {
  *h2d = *d2h = 0;
  void *hbuf = nullptr, *dbuf = nullptr;
  cudaEvent_t a = nullptr, b = nullptr;
  int rc = 0;
  std::vector<float> th, td;
  auto body = [&]() -> int {
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaHostAlloc(&hbuf, bytes, cudaHostAllocDefault));
    CUDA_CHECK(cudaMalloc(&dbuf, bytes));
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    memset(hbuf, 0, bytes);
    for (int r = 0; r <= reps; r++) { /* r = 0 warms up */
      float ms;
      CUDA_CHECK(cudaEventRecord(a, 0));
      CUDA_CHECK(cudaMemcpyAsync(dbuf, hbuf, bytes, cudaMemcpyHostToDevice, 0));
      CUDA_CHECK(cudaEventRecord(b, 0));
      CUDA_CHECK(cudaEventSynchronize(b));
      CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
      if (r) th.push_back(ms);
      CUDA_CHECK(cudaEventRecord(a, 0));
      CUDA_CHECK(cudaMemcpyAsync(hbuf, dbuf, bytes, cudaMemcpyDeviceToHost, 0));
      CUDA_CHECK(cudaEventRecord(b, 0));
      CUDA_CHECK(cudaEventSynchronize(b));
      CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
      if (r) td.push_back(ms);
    }
    return 0;
  };
  try {
    rc = reps > 0 ? body() : arkcos_fail(err, ARKCOS_EINVAL, "copy time: reps must be >= 1");
  } catch (...) {
    rc = arkcos_fail(err, ARKCOS_ENOMEM, "copy time: out of host memory");
  }
  if (rc == 0) {
    std::sort(th.begin(), th.end());
    std::sort(td.begin(), td.end());
    *h2d = th[th.size() / 2] * 1e-3;
    *d2h = td[td.size() / 2] * 1e-3;
  }
  if (a) cudaEventDestroy(a);
  if (b) cudaEventDestroy(b);
  if (dbuf) cudaFree(dbuf);
  if (hbuf) cudaFreeHost(hbuf);
  (void)cudaGetLastError();
  return rc;
}

/* Page-locked host memory for maps (arkcos_map_alloc): NULL when there is
 * no device or the allocation fails (the caller falls back to malloc). */
extern "C" void *arkcos_gpu_host_alloc(size_t bytes) {
  if (cuda_device_count(nullptr, 0) == 0) return nullptr;
  void *ptr = nullptr;
  if (cudaHostAlloc(&ptr, bytes ? bytes : 1, cudaHostAllocPortable) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return ptr;
}
extern "C" void arkcos_gpu_host_free(void *ptr) {
  if (ptr) cudaFreeHost(ptr);
  (void)cudaGetLastError();
}

#ifdef ARKCOS_GPU_MODULE
/* ---- as the module libarkcos_gpu.so.1 (gpu_module.h): the engine's host
 * code this file calls is reached through the table the loader gives; the
 * module's version script keeps these and the entry points above local. */
#include "arkcos/gpu_module.h"

static arkcos_gpu_host g_host;

extern "C" int arkcos_fail(arkcos_error *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_host.vfail(err, code, fmt, ap);
  va_end(ap);
  return code;
}
extern "C" int arkcos_pair_is_direct(const arkcos_plan *p, int i, int j) {
  return g_host.pair_is_direct(p, i, j);
}

extern "C" int arkcos_gpu_module_init(const arkcos_gpu_host *h, arkcos_gpu_module *m) {
  if (!h || h->abi != ARKCOS_GPU_MODULE_ABI) return -1;
  g_host = *h;
  m->available = arkcos_gpu_available;
  m->describe = arkcos_gpu_describe;
  m->query = arkcos_gpu_query;
  m->create = arkcos_gpu_create;
  m->copy_time = arkcos_gpu_copy_time;
  m->host_alloc = arkcos_gpu_host_alloc;
  m->host_free = arkcos_gpu_host_free;
  return 0;
}
#endif
