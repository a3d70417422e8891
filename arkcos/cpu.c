/* cpu.c -- instantiates the CPU backend (cpu_impl.h and its stage files
 * cpu_ringfft.h, cpu_pairspec.h, cpu_reduce.h, cpu_setup.h) in double and single
 * precision, and the spin-2 backend (cpu_spin2.h). FFTW's planner lives in
 * fftw_plans.c, the kernel-grid choices in grid.c. */
#include <complex.h> /* keeps fftw_complex a C99 type; arithmetic is done by hand */
#include <fftw3.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arkcos/bigmem.h"
#include "arkcos/plan_internal.h"

#define arkcos_cut_level arkcos_kfun_cut_level

/* largest half-width (in kernel-grid samples) of the direct cosine sum */
#define ARKCOS_CHEB_LIMIT 64

/* Explicit SIMD through GCC/Clang vector extensions (no intrinsics): four
 * doubles, AVX2 width; the compiler splits or widens as the target allows. */
typedef double arkcos_vd __attribute__((vector_size(32)));
#define ARKCOS_VL 4
#define ARKCOS_NV 3

/* floor(n / 2), negative n included */
static inline int64_t arkcos_floor_div2(int64_t n) { return n >= 0 ? n / 2 : -((-n + 1) / 2); }

#define R double
#define FFTWP(x) fftw_##x
#define SFX(x) x##_double
#include "arkcos/cpu_impl.h"
#undef R
#undef FFTWP
#undef SFX

#define R float
#define FFTWP(x) fftwf_##x
#define SFX(x) x##_float
#include "arkcos/cpu_impl.h"
#undef R
#undef FFTWP
#undef SFX

#include "arkcos/cpu_spin2.h"
