/* install_smooth.c -- a client of the installed library (tests/test_install.sh):
 * built once against the installed libarkcos.so with
 * `pkg-config --cflags --libs arkcos` and once against build/libarkcos.a;
 * smooths a fixed nside 16 map with a Gaussian and writes the output as raw
 * float64 to argv[1], so that the two builds can be compared byte for byte.
 * Only arkcos.h as a user has it: no header of the repository. */
#include <arkcos.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: install_smooth OUT.raw\n");
    return 2;
  }
  const int64_t nside = 16;
  arkcos_error err = {0};
  arkcos_geometry *g = arkcos_geometry_healpix(nside, &err);
  arkcos_kernel_spec spec = {0};
  spec.type = ARKCOS_KERNEL_GAUSSIAN;
  const double pi = 3.14159265358979323846;
  spec.fwhm = 3.0 * sqrt(4 * pi / (double)arkcos_healpix_npix(nside));
  spec.cutoff_rel = 1e-5;
  arkcos_kernel *k = g ? arkcos_kernel_create(&spec, &err) : NULL;
  arkcos_options o;
  arkcos_options_default(&o);
  o.backend = ARKCOS_BACKEND_CPU;
  o.threads = 1;
  arkcos_plan *p = k ? arkcos_plan_create(g, k, &o, &err) : NULL;
  double *in = g ? malloc(sizeof *in * (size_t)g->npix) : NULL;
  double *out = g ? malloc(sizeof *out * (size_t)g->npix) : NULL;
  int rc = !p || !in || !out;
  if (!rc) {
    for (int64_t q = 0; q < g->npix; q++) {
      double theta, phi;
      arkcos_healpix_pix2ang_ring(nside, q, &theta, &phi);
      in[q] = cos(3 * theta) + sin(theta) * cos(2 * phi) + (q % 7 == 0);
    }
    rc = arkcos_execute(p, in, out, &err);
  }
  if (!rc) {
    FILE *f = fopen(argv[1], "wb");
    rc = !f || fwrite(out, sizeof *out, (size_t)g->npix, f) != (size_t)g->npix;
    if (f && fclose(f)) rc = 1;
    if (rc) fprintf(stderr, "install_smooth: cannot write %s\n", argv[1]);
  } else {
    fprintf(stderr, "install_smooth: %s\n", err.msg[0] ? err.msg : "out of memory");
  }
  if (!rc) printf("install_smooth: nside %lld smoothed, bound %.3g, version %s\n",
                  (long long)nside, arkcos_plan_bound(p), ARKCOS_VERSION);
  arkcos_plan_destroy(p);
  arkcos_kernel_destroy(k);
  arkcos_geometry_destroy(g);
  free(in);
  free(out);
  return rc ? 1 : 0;
}
