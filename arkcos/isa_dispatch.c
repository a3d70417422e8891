/*
 * isa_dispatch.c -- the entry points of the portable library (make
 * portable-lib, the one the Python wheel carries); not part of the engine's
 * own builds.
 *
 * That library holds the whole engine four times, compiled for x86-64 (the
 * baseline every x86-64 CPU runs), x86-64-v2 (SSE4.2), x86-64-v3 (AVX2, FMA)
 * and x86-64-v4 (AVX-512), each copy's global symbols renamed NAME__v1 ..
 * NAME__v4 (the Makefile, with objcopy). Each public function NAME is a GNU
 * indirect function: the dynamic loader asks its resolver once which copy
 * to bind, and the resolver picks the highest level the CPU (and the
 * operating system's saved vector state) supports. Every resolver makes the
 * same choice, so one process runs one copy: its static state (FFTW's
 * planner lock, the plan caches) is never split between two.
 *
 * ISA_NAMES names the header $(BUILD)/portable/isa_names.h, made from
 * arkcos.h as the version script is: one ISA_FN(name) per public function.
 */
#ifndef ISA_NAMES
#error "built by the Makefile's portable-lib target only"
#endif

/* 1 .. 4: x86-64, -v2, -v3, -v4. Resolvers run before constructors, so the
 * CPU model is initialised here (GCC's documented requirement). */
static int isa_level(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return 4;
  if (__builtin_cpu_supports("x86-64-v3")) return 3;
  if (__builtin_cpu_supports("x86-64-v2")) return 2;
  return 1;
}

typedef void (*isa_fn)(void);

/* The copies are declared as functions of no arguments: only their
 * addresses are taken, and the loader binds NAME to one of them whatever
 * its real type. Hidden: their addresses are PC-relative, so a resolver
 * reads no relocated data. */
#define ISA_FN(name)                                                              \
  __attribute__((visibility("hidden"))) extern void name##__v1(void), name##__v2(void), \
      name##__v3(void), name##__v4(void);                                         \
  static isa_fn name##__pick(void) {                                              \
    switch (isa_level()) {                                                        \
    case 4: return name##__v4;                                                    \
    case 3: return name##__v3;                                                    \
    case 2: return name##__v2;                                                    \
    default: return name##__v1;                                                   \
    }                                                                             \
  }                                                                               \
  void name(void) __attribute__((ifunc(#name "__pick")));
#include ISA_NAMES
#undef ISA_FN

/* Which copy this process runs: "x86-64", "x86-64-v2", "x86-64-v3" or
 * "x86-64-v4" (tests/test_wheel.sh reads it; not in arkcos.h). */
const char *arkcos_portable_isa(void) {
  static const char *const name[4] = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
  return name[isa_level() - 1];
}
