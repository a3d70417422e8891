/* python_abi.c -- sizes and field offsets of the public structures of
 * arkcos.h as the C compiler lays them out, one "NAME SIZE" or
 * "NAME.FIELD OFFSET" per line; tests/python_check.py compares them with
 * the ctypes declarations of the Python package (python/arkcos/_lib.py). */
#include <stddef.h>
#include <stdio.h>

#include "arkcos/arkcos.h"

#define SIZE(T) printf(#T " %zu\n", sizeof(T))
#define FIELD(T, f) printf(#T "." #f " %zu\n", offsetof(T, f))

int main(void) {
  SIZE(arkcos_error);
  FIELD(arkcos_error, code);
  FIELD(arkcos_error, msg);
  SIZE(arkcos_geometry);
  FIELD(arkcos_geometry, nside);
  FIELD(arkcos_geometry, npix);
  FIELD(arkcos_geometry, nrings);
  FIELD(arkcos_geometry, rings);
  SIZE(arkcos_kernel_spec);
  FIELD(arkcos_kernel_spec, type);
  FIELD(arkcos_kernel_spec, fwhm);
  FIELD(arkcos_kernel_spec, alpha);
  FIELD(arkcos_kernel_spec, value);
  FIELD(arkcos_kernel_spec, ntable);
  FIELD(arkcos_kernel_spec, cutoff);
  FIELD(arkcos_kernel_spec, cutoff_rel);
  SIZE(arkcos_options);
  FIELD(arkcos_options, mode);
  FIELD(arkcos_options, precision);
  FIELD(arkcos_options, backend);
  FIELD(arkcos_options, threads);
  FIELD(arkcos_options, cache_kernel_spectra);
  FIELD(arkcos_options, device);
  FIELD(arkcos_options, oversample);
  FIELD(arkcos_options, accuracy);
  FIELD(arkcos_options, spin);
  SIZE(arkcos_stage_times);
  FIELD(arkcos_stage_times, map_fft);
  FIELD(arkcos_stage_times, total);
  FIELD(arkcos_stage_times, direct);
  SIZE(arkcos_smoother_spec);
  FIELD(arkcos_smoother_spec, nside);
  FIELD(arkcos_smoother_spec, nested);
  FIELD(arkcos_smoother_spec, kernel);
  FIELD(arkcos_smoother_spec, beam);
  FIELD(arkcos_smoother_spec, beam_lmax);
  FIELD(arkcos_smoother_spec, user_kernel);
  FIELD(arkcos_smoother_spec, options);
  FIELD(arkcos_smoother_spec, mask_mode);
  FIELD(arkcos_smoother_spec, min_weight);
  FIELD(arkcos_smoother_spec, normalize);
  FIELD(arkcos_smoother_spec, allow_subpixel);
  FIELD(arkcos_smoother_spec, op);
  FIELD(arkcos_smoother_spec, normalize_name);
  FIELD(arkcos_smoother_spec, allow_subpixel_name);
  FIELD(arkcos_smoother_spec, harmonic_name);
  FIELD(arkcos_smoother_spec, quadrature);
  SIZE(arkcos_smoother_maps);
  FIELD(arkcos_smoother_maps, nmaps);
  printf("arkcos_smoother_maps.in_ %zu\n", offsetof(arkcos_smoother_maps, in));
  FIELD(arkcos_smoother_maps, out);
  FIELD(arkcos_smoother_maps, weight);
  FIELD(arkcos_smoother_maps, pol_q);
  FIELD(arkcos_smoother_maps, pol_u);
  FIELD(arkcos_smoother_maps, mask);
  FIELD(arkcos_smoother_maps, progress);
  FIELD(arkcos_smoother_maps, progress_ctx);
  FIELD(arkcos_smoother_maps, overwrite_in);
  SIZE(arkcos_warning);
  FIELD(arkcos_warning, code);
  FIELD(arkcos_warning, msg);
  SIZE(arkcos_smoother_map_report);
  FIELD(arkcos_smoother_map_report, missing);
  FIELD(arkcos_smoother_map_report, excluded);
  FIELD(arkcos_smoother_map_report, unseen);
  FIELD(arkcos_smoother_map_report, weighted);
  FIELD(arkcos_smoother_map_report, weight_map);
  SIZE(arkcos_smoother_report);
  FIELD(arkcos_smoother_report, nmaps);
  FIELD(arkcos_smoother_report, nweight_maps);
  FIELD(arkcos_smoother_report, weights_smoothed);
  FIELD(arkcos_smoother_report, pol_union);
  FIELD(arkcos_smoother_report, weight_time);
  FIELD(arkcos_smoother_report, stages);
  return 0;
}
