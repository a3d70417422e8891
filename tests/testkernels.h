/*
 * testkernels.h -- kernels shared by the GPU check (C) and the host
 * emulation of the GPU backend (C++): a top-hat and a tabulated profile.
 * Both report a failed creation on stderr and return NULL.
 */
#ifndef ARKCOS_TESTKERNELS_H
#define ARKCOS_TESTKERNELS_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arkcos/arkcos.h"

static inline arkcos_kernel *test_kernel_create(const arkcos_kernel_spec *s) {
  arkcos_error e;
  arkcos_kernel *k = arkcos_kernel_create(s, &e);
  if (!k) fprintf(stderr, "kernel: %s\n", e.msg);
  return k;
}

/* top-hat of the given radius (radians) */
static inline arkcos_kernel *tophat(double radius) {
  arkcos_kernel_spec s;
  memset(&s, 0, sizeof s);
  s.type = ARKCOS_KERNEL_TOPHAT;
  s.cutoff = radius;
  return test_kernel_create(&s);
}

/* a tabulated cos^2 profile of radius r, cut at 0.93 r (off the knots) */
static inline arkcos_kernel *table_kernel(double r) {
  double ang[60], val[60];
  for (int i = 0; i < 60; i++) {
    ang[i] = r * i / 59.0;
    val[i] = pow(cos(ang[i] / r * 3.14159265358979323846 / 2), 2);
  }
  arkcos_kernel_spec s;
  memset(&s, 0, sizeof s);
  s.type = ARKCOS_KERNEL_TABLE;
  s.alpha = ang;
  s.value = val;
  s.ntable = 60;
  s.cutoff = 0.93 * r;
  return test_kernel_create(&s);
}
#endif
