/* grid.c -- what the planner decides about the kernel grids, for every
 * backend and for the exact path: the kernel's relative jump at its cutoff,
 * the cap pairs' oversampling, and which rings of a spin-2 plan lie on the
 * grid. Depends on the plan's data only (plan_internal.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arkcos/plan_internal.h"

/* Default oversampling of cap pairs' kernel grids: 2 when the aliasing of
 * the kernel's azimuthal spectrum on the L grid, estimated for a Gaussian
 * of the kernel's RMS width sigma at the equator as exp(-(L sigma)^2 / 4),
 * exceeds the error the truncation makes anyway (the relative level of the
 * kernel at its cutoff); else 1. Measured at nside 256: 2.8 pixels per
 * FWHM, cut 1e-5: caps 7.8e-4 (q 1) -> 6.4e-6 (q 2); 4.4 pixels, cut 1e-8:
 * 1.7e-7 -> 5.6e-9; 6 pixels, cut 1e-8: 4.6e-9 either way. */
/* |K(cutoff) / K(0)|: the kernel's relative jump at its cutoff */
double arkcos_kfun_cut_level(const arkcos_kfun *kf) {
  const double k0 = arkcos_kfun_alpha(kf, 0);
  return k0 != 0 ? fabs(arkcos_kfun_alpha(kf, kf->cutoff) / k0) : 1;
}

int arkcos_auto_oversample(const arkcos_kfun *kf, int64_t L) {
  const int n = 4000;
  const double c = kf->cutoff, h = c / n;
  double m0 = 0, m2 = 0;
  for (int i = 0; i <= n; i++) { /* Simpson: int K sin a da, int K a^2 sin a da */
    double a = i * h, w = (i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2);
    double f = w * arkcos_kfun_alpha(kf, a) * sin(a);
    m0 += f;
    m2 += f * a * a;
  }
  if (!(m0 > 0)) return 1;
  const double sigma = sqrt(0.5 * m2 / m0); /* 2-D: <a^2> = 2 sigma^2 */
  const double alias = exp(-0.25 * (double)L * (double)L * sigma * sigma);
  double level = arkcos_kfun_cut_level(kf);
  if (level < 1e-12) level = 1e-12;
  return alias > level ? 2 : 1;
}

/* spin-2 plans: ring i takes part in the Fourier path (length L, first
 * pixel on the half-step grid pi / L) */
int arkcos_spin2_ring_on_grid(const arkcos_plan *p, int i) {
  const arkcos_ring *r = &p->geom->rings[i];
  if (r->nph != p->L || p->L < 2 || p->L % 2) return 0;
  const double x = r->phi0 * (double)p->L / ARKCOS_PI;
  return fabs(x - floor(x + 0.5)) < 1e-9 && x > -0.5;
}

int arkcos_caps_oversample(const arkcos_plan *p) {
  if (p->opt.oversample > 0) return p->opt.oversample < 8 ? p->opt.oversample : 8;
  return arkcos_auto_oversample(&p->kf, p->L);
}

/* The Gaussian's azimuthal spectrum on a pair falls below 1e-17 of its
 * peak by m = 8.85 sqrt(z) (cpu_pairspec.h, pair_len): 1.2 x 8.85
 * sqrt(rho_cut) / sigma, rho_cut = (cutoff / its chord)^2 */
double arkcos_band_scale(const arkcos_plan *p) {
  const char *bl = getenv("ARKCOS_BAND_LIMIT"); /* "0": every pair's full spectrum */
  if (!p->smooth_caps || (bl && !strcmp(bl, "0"))) return 0;
  const double sigma = sqrt(0.5 / p->kf.inv2s2), c = p->kf.cutoff, ch = 2 * sin(0.5 * c);
  return 1.2 * 8.85 * (c / ch) / sigma;
}
