/*
 * spin2_direct_tool.c -- the spin-2 references for tests/test_spin2.py:
 * raw little-endian float64 arrays in and out, no FITS, no CLI contract
 * (built into build/tests/ beside the tests, not installed, not run as a
 * test itself).
 *
 *   spin2_direct_tool smooth NSIDE FWHM CUTOFF_REL spin2|scalar IN OUT
 *       IN: I, Q, U maps (3 x 12 NSIDE^2 doubles, RING order); OUT the
 *       same three maps smoothed by the direct sums with a Gaussian of FWHM
 *       radians cut at CUTOFF_REL of its peak: I by ref_direct_sum; Q and U
 *       by ref_direct_sum_spin2 (spin2) or each as a scalar map by
 *       ref_direct_sum (scalar: no parallel transport).
 *   spin2_direct_tool kl FWHM CUTOFF_REL LMAX OUT
 *       OUT: K_l (arkcos_kernel_legendre) then K_l^(2)
 *       (ref_kernel_legendre_spin2), 2 (LMAX + 1) doubles.
 *
 * Prints "cutoff <radians>" on success; exit 1 on failure, 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/arkcos.h"
#include "reference/reference.h"

static int usage(void) {
  fprintf(stderr,
          "usage: spin2_direct_tool smooth NSIDE FWHM CUTOFF_REL spin2|scalar IN OUT\n"
          "       spin2_direct_tool kl FWHM CUTOFF_REL LMAX OUT\n");
  return 2;
}

static arkcos_kernel *gaussian(double fwhm, double cutoff_rel) {
  arkcos_error err = {0, ""};
  arkcos_kernel_spec s;
  memset(&s, 0, sizeof s);
  s.type = ARKCOS_KERNEL_GAUSSIAN;
  s.fwhm = fwhm;
  s.cutoff_rel = cutoff_rel;
  arkcos_kernel *k = arkcos_kernel_create(&s, &err);
  if (!k) fprintf(stderr, "kernel: %s\n", err.msg);
  return k;
}

static int read_doubles(const char *path, double *x, size_t n) {
  FILE *f = fopen(path, "rb");
  size_t got = f ? fread(x, sizeof *x, n, f) : 0;
  int extra = f ? fgetc(f) != EOF : 0;
  if (f) fclose(f);
  if (got != n || extra) {
    fprintf(stderr, "%s: expected %zu doubles\n", path, n);
    return 1;
  }
  return 0;
}

static int write_doubles(const char *path, const double *x, size_t n) {
  FILE *f = fopen(path, "wb");
  int ok = f && fwrite(x, sizeof *x, n, f) == n;
  if (f && fclose(f)) ok = 0;
  if (!ok) fprintf(stderr, "%s: cannot write\n", path);
  return !ok;
}

static int cmd_smooth(char **argv) {
  const long nside = atol(argv[2]);
  const int spin2 = !strcmp(argv[5], "spin2");
  if (nside < 1 || (!spin2 && strcmp(argv[5], "scalar"))) return usage();
  arkcos_error err = {0, ""};
  arkcos_geometry *g = arkcos_geometry_healpix(nside, &err);
  arkcos_kernel *k = gaussian(atof(argv[3]), atof(argv[4]));
  if (!g || !k) return 1;
  const size_t n = (size_t)g->npix;
  double *in = malloc(3 * n * sizeof *in), *out = malloc(3 * n * sizeof *out);
  int rc = !in || !out || read_doubles(argv[6], in, 3 * n);
  if (!rc) rc = ref_direct_sum(g, k, in, out, NULL, 0, 0, &err);
  if (!rc && spin2)
    rc = ref_direct_sum_spin2(g, k, in + n, in + 2 * n, out + n, out + 2 * n,
                              NULL, 0, 0, &err);
  if (!rc && !spin2) rc = ref_direct_sum(g, k, in + n, out + n, NULL, 0, 0, &err);
  if (!rc && !spin2)
    rc = ref_direct_sum(g, k, in + 2 * n, out + 2 * n, NULL, 0, 0, &err);
  if (rc && err.code) fprintf(stderr, "direct sum: %s\n", err.msg);
  if (!rc) rc = write_doubles(argv[7], out, 3 * n);
  if (!rc) printf("cutoff %.17g\n", arkcos_kernel_cutoff(k));
  free(in);
  free(out);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
  return rc ? 1 : 0;
}

static int cmd_kl(char **argv) {
  const int lmax = atoi(argv[4]);
  if (lmax < 0) return usage();
  arkcos_error err = {0, ""};
  arkcos_kernel *k = gaussian(atof(argv[2]), atof(argv[3]));
  if (!k) return 1;
  double *kl = malloc(2 * (size_t)(lmax + 1) * sizeof *kl);
  int rc = !kl;
  if (!rc) rc = arkcos_kernel_legendre(k, lmax, kl, &err);
  if (!rc) rc = ref_kernel_legendre_spin2(k, lmax, kl + lmax + 1, &err);
  if (rc && err.code) fprintf(stderr, "K_l: %s\n", err.msg);
  if (!rc) rc = write_doubles(argv[5], kl, 2 * (size_t)(lmax + 1));
  if (!rc) printf("cutoff %.17g\n", arkcos_kernel_cutoff(k));
  free(kl);
  arkcos_kernel_destroy(k);
  return rc ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 8 && !strcmp(argv[1], "smooth")) return cmd_smooth(argv);
  if (argc == 6 && !strcmp(argv[1], "kl")) return cmd_kl(argv);
  return usage();
}
