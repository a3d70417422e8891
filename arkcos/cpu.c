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
/* most kernel grids of distinct lengths a plan keeps */
#define ARKCOS_MAX_GRIDS 16
/* a cap pair moves to the grid of q L / 2^s points only when
 * sqrt(sin th_i sin th_j) <= ARKCOS_LEVEL_MARGIN s_ref / 2^s: with 1.0 the
 * coarsest pairs alias as much as those at the belt's edge, which at nside 32
 * on coarsened 4 nside grids raised the whole-sphere error at 4.4-10 pixels
 * per FWHM (cut 1e-8) from 1.1e-7 to 4.8e-7; 0.7 keeps it at 1.2e-7 */
#define ARKCOS_LEVEL_MARGIN 0.7

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
