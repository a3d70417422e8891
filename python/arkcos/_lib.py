"""ctypes declarations of the engine's public interface (arkcos/arkcos.h).

The library is the libarkcos.so.1 bundled beside this file by
`pip install ./python`, or the one ARKCOS_PYTHON_LIBRARY names.

The structures mirror the header field by field; the package's tests check
their sizes and offsets against the C compiler's. ctypes releases the GIL
for every call into the library.
"""
import ctypes
import os
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int64, c_size_t,
                    c_void_p)

ARKCOS_OK, ARKCOS_ERUNTIME, ARKCOS_EINVAL, ARKCOS_ENOMEM, ARKCOS_EIO, ARKCOS_ENODEV = range(6)
KERNEL_GAUSSIAN, KERNEL_TOPHAT, KERNEL_TABLE, KERNEL_GAUSSIAN_HARMONIC = range(4)
QUADRATURE_RING, QUADRATURE_POINT, QUADRATURE_POLAR = 0, 1, 2
MODE_ENHANCED, MODE_PAPER = range(2)
DOUBLE, SINGLE = range(2)
BACKEND_AUTO, BACKEND_CPU, BACKEND_GPU = range(3)


class Error(Structure):
    _fields_ = [("code", c_int), ("msg", c_char * 512)]


class Geometry(Structure):
    _fields_ = [("kind", c_int), ("nside", c_int64), ("npix", c_int64), ("nrings", c_int),
                ("rings", c_void_p)]


class KernelSpec(Structure):
    _fields_ = [("type", c_int), ("fwhm", c_double), ("alpha", POINTER(c_double)),
                ("value", POINTER(c_double)), ("ntable", c_int), ("cutoff", c_double),
                ("cutoff_rel", c_double)]


class Options(Structure):
    _fields_ = [("mode", c_int), ("precision", c_int), ("backend", c_int), ("threads", c_int),
                ("cache_kernel_spectra", c_int), ("device", c_int), ("oversample", c_int),
                ("accuracy", c_double), ("spin", c_int), ("max_memory", c_double),
                ("direct_weights", c_int)]


class StageTimes(Structure):
    _fields_ = [(name, c_double) for name in
                ("map_fft", "kernel_eval", "kernel_fft", "reduction", "map_ifft", "h2d", "d2h",
                 "other", "total", "direct")]


MASK_NORMALIZE, MASK_ZERO = range(2)
WEIGHTS_AUTO, WEIGHTS_TABLES, WEIGHTS_ON_THE_FLY = range(3)
WARN_NARROW, WARN_SUBPIXEL, WARN_NOTE, WARN_INEXACT = 1, 2, 3, 4


class SmootherSpec(Structure):
    _fields_ = [("nside", c_int64), ("nested", c_int), ("kernel", KernelSpec),
                ("beam", POINTER(c_double)), ("beam_lmax", c_int), ("user_kernel", c_void_p),
                ("options", Options), ("mask_mode", c_int), ("min_weight", c_double),
                ("normalize", c_int), ("allow_subpixel", c_int), ("op", c_void_p),
                ("normalize_name", c_char_p), ("allow_subpixel_name", c_char_p),
                ("harmonic_name", c_char_p), ("quadrature", c_int)]


class SmootherMaps(Structure):
    _fields_ = [("nmaps", c_int), ("in_", POINTER(c_void_p)), ("out", POINTER(c_void_p)),
                ("weight", POINTER(c_void_p)), ("pol_q", c_int), ("pol_u", c_int),
                ("mask", c_void_p), ("progress", c_void_p), ("progress_ctx", c_void_p),
                ("overwrite_in", c_int)]


class WarningRecord(Structure):
    _fields_ = [("code", c_int), ("msg", c_char * 1024)]


class SmootherMapReport(Structure):
    _fields_ = [("missing", c_int64), ("excluded", c_int64), ("unseen", c_int64),
                ("weighted", c_int), ("weight_map", c_int)]


class SmootherReport(Structure):
    _fields_ = [("nmaps", c_int), ("nweight_maps", c_int), ("weights_smoothed", c_int),
                ("pol_union", c_int64), ("weight_time", c_double), ("stages", StageTimes)]


STRUCTS = {"arkcos_error": Error, "arkcos_geometry": Geometry,
           "arkcos_kernel_spec": KernelSpec, "arkcos_options": Options,
           "arkcos_stage_times": StageTimes, "arkcos_smoother_spec": SmootherSpec,
           "arkcos_smoother_maps": SmootherMaps, "arkcos_warning": WarningRecord,
           "arkcos_smoother_map_report": SmootherMapReport,
           "arkcos_smoother_report": SmootherReport}

_dbl = POINTER(c_double)
_err = POINTER(Error)

# name: (restype, argtypes)
_FUNCTIONS = {
    "arkcos_geometry_healpix": (POINTER(Geometry), [c_int64, _err]),
    "arkcos_geometry_destroy": (None, [c_void_p]),
    "arkcos_kernel_create": (c_void_p, [POINTER(KernelSpec), _err]),
    "arkcos_kernel_from_beam": (c_void_p, [_dbl, c_int, c_double, _err]),
    "arkcos_kernel_destroy": (None, [c_void_p]),
    "arkcos_kernel_cutoff": (c_double, [c_void_p]),
    "arkcos_kernel_cutoff_level": (c_double, [c_void_p]),
    "arkcos_gaussian_default_cutoff_rel": (c_double, [c_double, c_int64, c_int]),
    "arkcos_options_default": (None, [POINTER(Options)]),
    "arkcos_plan_create": (c_void_p, [c_void_p, c_void_p, POINTER(Options), _err]),
    "arkcos_execute": (c_int, [c_void_p, c_void_p, c_void_p, _err]),
    "arkcos_execute_spin2": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, _err]),
    "arkcos_plan_stages": (None, [c_void_p, POINTER(StageTimes)]),
    "arkcos_plan_backend": (c_int, [c_void_p]),
    "arkcos_plan_memory": (c_size_t, [c_void_p]),
    "arkcos_plan_note": (c_char_p, [c_void_p]),
    "arkcos_plan_bound": (c_double, [c_void_p]),
    "arkcos_plan_exactness": (c_char_p, [c_void_p]),
    "arkcos_plan_direct_weights": (c_int, [c_void_p]),
    "arkcos_plan_destroy": (None, [c_void_p]),
    "arkcos_smoother_spec_default": (None, [POINTER(SmootherSpec)]),
    "arkcos_smoother_check": (c_int, [POINTER(SmootherSpec), POINTER(WarningRecord), POINTER(c_int), _err]),
    "arkcos_smoother_create": (c_void_p, [POINTER(SmootherSpec), _err]),
    "arkcos_smoother_prepare": (c_int, [c_void_p, c_int, _err]),
    "arkcos_smoother_execute": (c_int, [c_void_p, POINTER(SmootherMaps), _err]),
    "arkcos_smoother_last": (c_int, [c_void_p, POINTER(SmootherReport)]),
    "arkcos_smoother_last_map": (c_int, [c_void_p, c_int, POINTER(SmootherMapReport)]),
    "arkcos_smoother_last_polar": (c_int, [c_void_p, c_int]),
    "arkcos_smoother_nwarnings": (c_int, [c_void_p]),
    "arkcos_smoother_warning": (POINTER(WarningRecord), [c_void_p, c_int]),
    "arkcos_smoother_kernel": (c_void_p, [c_void_p, c_int]),
    "arkcos_smoother_plan": (c_void_p, [c_void_p, c_int]),
    "arkcos_smoother_bound": (c_double, [c_void_p]),
    "arkcos_smoother_pixels_per_fwhm": (c_double, [c_void_p]),
    "arkcos_smoother_destroy": (None, [c_void_p]),
    "arkcos_version": (c_char_p, []),
    "arkcos_build_commit": (c_char_p, []),
    "arkcos_build_dirty": (c_int, []),
}


def _load():
    path = os.environ.get("ARKCOS_PYTHON_LIBRARY") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "libarkcos.so.1")
    lib = ctypes.CDLL(path)
    for name, (restype, argtypes) in _FUNCTIONS.items():
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = argtypes
    return lib, path


lib, LIBRARY_PATH = _load()
