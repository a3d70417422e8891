/*
 * kernel_profile.c -- prints a truncated, normalised Gaussian kernel for the
 * paper's Fig. 3: its radial profile K(alpha) and its Legendre coefficients
 * K_l (paper Eq. 2, K_0 = 1). Used by scripts/reproduce.sh; not a test.
 *
 * usage: kernel_profile --fwhm-arcmin F (--cutoff-deg R | --cutoff-rel EPS)
 *                       [--lmax L] [--npoints N]
 *
 * Output: comment lines (# fwhm_arcmin, cutoff_deg, cutoff_rel, ...), then two
 * gnuplot data blocks separated by two blank lines:
 *   index 0:  alpha_arcmin  K(alpha)  K(alpha)/K(0)      (0 .. 1.2 * cutoff)
 *   index 1:  l  K_l                                      (0 .. lmax)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static int usage(void) {
  fprintf(stderr, "usage: kernel_profile --fwhm-arcmin F (--cutoff-deg R | --cutoff-rel EPS) "
                  "[--lmax L] [--npoints N]\n");
  return 2;
}

int main(int argc, char **argv) {
  double fwhm_arcmin = 0, cutoff_deg = 0, cutoff_rel = 0;
  int lmax = 4096, npoints = 2000;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) return usage();
    if (!strcmp(argv[i], "--fwhm-arcmin")) fwhm_arcmin = atof(argv[++i]);
    else if (!strcmp(argv[i], "--cutoff-deg")) cutoff_deg = atof(argv[++i]);
    else if (!strcmp(argv[i], "--cutoff-rel")) cutoff_rel = atof(argv[++i]);
    else if (!strcmp(argv[i], "--lmax")) lmax = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--npoints")) npoints = atoi(argv[++i]);
    else return usage();
  }
  if (!(fwhm_arcmin > 0) || (cutoff_deg > 0) == (cutoff_rel > 0) || lmax < 0 || npoints < 2)
    return usage();

  arkcos_kernel_spec spec = {0};
  spec.type = ARKCOS_KERNEL_GAUSSIAN;
  spec.fwhm = fwhm_arcmin / 60.0 * M_PI / 180.0;
  spec.cutoff = cutoff_deg * M_PI / 180.0;
  spec.cutoff_rel = cutoff_rel;
  arkcos_error err = {0, ""};
  arkcos_kernel *k = arkcos_kernel_create(&spec, &err);
  double *kl = k ? malloc(sizeof(double) * ((size_t)lmax + 1)) : NULL;
  if (!k || !kl || arkcos_kernel_legendre(k, lmax, kl, &err)) {
    fprintf(stderr, "kernel_profile: %s\n", err.msg[0] ? err.msg : "out of memory");
    free(kl);
    arkcos_kernel_destroy(k);
    return 1;
  }
  double cut = arkcos_kernel_cutoff(k), k0 = arkcos_kernel_value(k, 0);
  printf("# Gaussian kernel, truncated and normalised to unit integral over the sphere\n");
  printf("# fwhm_arcmin %.10g\n# cutoff_deg %.10g\n# cutoff_arcmin %.10g\n# cutoff_rel %.6g\n",
         fwhm_arcmin, cut * 180 / M_PI, cut * 180 * 60 / M_PI, arkcos_kernel_cutoff_level(k));
  printf("# K0 %.10g\n# lmax %d\n", k0, lmax);
  printf("# alpha_arcmin  K(alpha)  K(alpha)/K(0)\n");
  double amax = 1.2 * cut;
  for (int i = 0; i < npoints; i++) {
    double a = amax * i / (npoints - 1);
    double v = arkcos_kernel_value(k, a);
    printf("%.8g %.10e %.10e\n", a * 180 * 60 / M_PI, v, v / k0);
  }
  printf("\n\n# l  K_l\n");
  for (int l = 0; l <= lmax; l++) printf("%d %.10e\n", l, kl[l]);
  free(kl);
  arkcos_kernel_destroy(k);
  return 0;
}
