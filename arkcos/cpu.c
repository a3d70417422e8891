/* cpu.c -- instantiates the CPU backend (cpu_impl.h) in double and single
 * precision. */
#include <complex.h> /* not used for arithmetic; keeps fftw_complex a C type */
#include <fftw3.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/plan_internal.h"

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
