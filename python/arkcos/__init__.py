"""arkcos -- ARKCoS smoothing of HEALPix maps from Python.

The engine convolves a map with a compact radial kernel by ring FFTs and
ring-pair spectra (Elsner & Wandelt 2011); in its default (enhanced) mode
the result is the direct pixel sum (4 pi / npix) sum_q K(alpha_pq) m_q to
rounding on the whole sphere. Arguments are those of healpy.smoothing where
they mean the same:

    out = arkcos.smoothing(m, fwhm=np.radians(10 / 60))      # Gaussian, FWHM in radians
    out = arkcos.smoothing([i, q, u], fwhm=..., pol=True)     # Q, U as one spin-2 field
    out = arkcos.smoothing(m, beam_window=bl)                 # a B_l (l = 0..lmax)
    out = arkcos.smoothing(m, tophat=np.radians(1))           # 1 inside 1 degree
    plan = arkcos.Plan(nside, fwhm=..., threads=0)            # one plan, many maps
    outs = [plan(x) for x in maps]

Missing data (UNSEEN, NaN, masked entries of a numpy masked array) are left
out, as `arkcos smooth` does: out = A(w m) / A(w) with w = 0 at the missing
pixels, UNSEEN where A(w) < min_weight (0.5). Errors of the engine raise
ArkcosError, a ValueError carrying the C message.
"""
import math
import threading
import warnings
from ctypes import byref, c_double, c_void_p

import numpy as np

from . import _lib
from ._lib import lib

__version__ = "0.1.0"
__all__ = ["smoothing", "Plan", "ArkcosError", "ArkcosWarning", "UNSEEN", "nest2ring"]

UNSEEN = -1.6375e30
# healpy's mask_bad: |x - UNSEEN| <= 1e-8 + 1e-5 |UNSEEN| (UNSEEN after float32 too)
_UNSEEN_TOL = 1e-8 + 1e-5 * abs(UNSEEN)
# below this A(w) a pixel is not divided by it (as arkcos smooth, smooth_mask.c)
_WEIGHT_FLOOR = 1e-12
_DEFAULT_CUTOFF_REL = 1e-5
_FWHM_PER_SIGMA = math.sqrt(8 * math.log(2))


class ArkcosError(ValueError):
    """An error of the engine: the C message, and its ARKCOS_E* code in .code."""

    def __init__(self, msg, code=_lib.ARKCOS_EINVAL):
        super().__init__(msg)
        self.code = code


class ArkcosWarning(UserWarning):
    """Arguments of healpy.smoothing that have no meaning here, narrow kernels."""


def _check(err, what):
    msg = err.msg.decode(errors="replace") or f"{what} failed"
    raise ArkcosError(msg, err.code or _lib.ARKCOS_ERUNTIME)


# ------------------------------------------------------------ pixel order

def _npix2nside(npix):
    nside = int(round(math.sqrt(npix / 12.0)))
    if nside < 1 or 12 * nside * nside != npix:
        raise ValueError(f"a map of {npix} pixels is not a HEALPix map (12 nside^2 pixels)")
    return nside


_N2R_CACHE = {}


def nest2ring(nside):
    """Array r with r[p] the RING index of NESTED pixel p (nside a power of 2).
    RING order from NESTED: ring[r] = nest_map; back: nest_map = ring[r]."""
    if nside < 1 or nside & (nside - 1):
        raise ValueError(f"nest=True: NESTED order needs nside a power of 2, got {nside}")
    r = _N2R_CACHE.get(nside)
    if r is not None:
        return r
    npface = nside * nside
    p = np.arange(12 * npface, dtype=np.int64)
    face, ipf = np.divmod(p, npface)
    ix = np.zeros_like(p)
    iy = np.zeros_like(p)
    for b in range(nside.bit_length() - 1):   # de-interleave: x on even bits, y on odd
        ix |= ((ipf >> (2 * b)) & 1) << b
        iy |= ((ipf >> (2 * b + 1)) & 1) << b
    jrll = np.array([2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4], dtype=np.int64)
    jpll = np.array([1, 3, 5, 7, 0, 2, 4, 6, 1, 3, 5, 7], dtype=np.int64)
    jr = jrll[face] * nside - ix - iy - 1          # ring number, 1 .. 4 nside - 1
    north, south = jr < nside, jr > 3 * nside
    nr = np.where(north, jr, np.where(south, 4 * nside - jr, nside))
    npix = 12 * npface
    before = np.where(north, 2 * nr * (nr - 1),
                      np.where(south, npix - 2 * nr * (nr + 1),
                               2 * nside * (nside - 1) + (jr - nside) * 4 * nside))
    kshift = np.where(north | south, 0, (jr - nside) & 1)
    jp = (jpll[face] * nr + ix - iy + 1 + kshift) // 2
    jp = np.where(jp > 4 * nside, jp - 4 * nside, jp)
    jp = np.where(jp < 1, jp + 4 * nside, jp)
    r = before + jp - 1
    if len(_N2R_CACHE) > 4:
        _N2R_CACHE.clear()
    _N2R_CACHE[nside] = r
    return r


# ---------------------------------------------------------------- missing

def _missing(m, mask=None):
    """Boolean array of the missing pixels of a float64 map, or None if there
    are none. One reduction in the common case of a complete map."""
    lo = m.min()
    if mask is None and not np.isnan(lo) and lo > UNSEEN + _UNSEEN_TOL:
        return None
    bad = np.isnan(m) | (np.abs(m - UNSEEN) <= _UNSEEN_TOL)
    if mask is not None:
        bad |= mask
    return bad if bad.any() else None


# ----------------------------------------------------------------- kernels

def _kernel(fwhm, sigma, tophat, beam_window, cutoff, cutoff_rel):
    """The engine kernel and, for Gaussians, the FWHM in radians."""
    given = [n for n, v in (("fwhm", fwhm), ("sigma", sigma), ("tophat", tophat),
                            ("beam_window", beam_window)) if v is not None]
    if len(given) != 1:
        raise ValueError("give exactly one kernel: fwhm, sigma, beam_window or tophat"
                         + (f" (got {', '.join(given)})" if given else ""))
    if cutoff is not None and cutoff_rel is not None:
        raise ValueError("give at most one of cutoff (radians) and cutoff_rel")
    err = _lib.Error()
    if beam_window is not None:
        if cutoff is not None:
            raise ValueError("beam_window: cut by level only (cutoff_rel), not by angle")
        bl = np.ascontiguousarray(beam_window, dtype=np.float64)
        if bl.ndim != 1 or bl.size < 2:
            raise ValueError("beam_window: a 1-d B_l, l = 0..lmax, with lmax >= 1 "
                             f"(got shape {bl.shape})")
        k = lib.arkcos_kernel_from_beam(bl.ctypes.data_as(_lib._dbl), bl.size - 1,
                                        _DEFAULT_CUTOFF_REL if cutoff_rel is None
                                        else float(cutoff_rel), byref(err))
        return k or _check(err, "beam_window"), None
    spec = _lib.KernelSpec()
    if tophat is not None:
        if cutoff is not None or cutoff_rel is not None:
            raise ValueError("tophat: its radius is the cutoff; cutoff and cutoff_rel do not apply")
        spec.type = _lib.KERNEL_TOPHAT
        spec.cutoff = float(tophat)
        width = None
    else:
        width = float(fwhm) if fwhm is not None else float(sigma) * _FWHM_PER_SIGMA
        if not width > 0:
            raise ValueError(f"{given[0]} must be > 0 radians, got {fwhm if fwhm is not None else sigma}")
        spec.type = _lib.KERNEL_GAUSSIAN
        spec.fwhm = width
        spec.cutoff = 0.0 if cutoff is None else float(cutoff)
        spec.cutoff_rel = (0.0 if cutoff is not None else
                           _DEFAULT_CUTOFF_REL if cutoff_rel is None else float(cutoff_rel))
    k = lib.arkcos_kernel_create(byref(spec), byref(err))
    return k or _check(err, "kernel"), width


def _narrow_check(fwhm, nside):
    """arkcos smooth's rule for Gaussians narrow against the pixels
    (docs/NARROW_BEAMS.md): refused below 1 pixel per FWHM, a warning with
    the measured error against harmonic smoothing below 2.5."""
    ppf = fwhm / math.sqrt(4 * math.pi / (12.0 * nside * nside))
    if ppf < 1:
        raise ValueError(f"fwhm = {fwhm:.4g} rad is {ppf:.3g} pixels at nside {nside}: a kernel "
                         "narrower than a pixel is not sampled by the pixel sum")
    if ppf < 2.5:
        warnings.warn(f"fwhm = {fwhm:.4g} rad is {ppf:.3g} pixels at nside {nside}: the pixel sum "
                      "differs from harmonic smoothing by about 0.4 % at 2, 2.5 % at 1.5 and 23 % "
                      "at 1 pixel per FWHM (docs/NARROW_BEAMS.md)", ArkcosWarning, stacklevel=3)


_IGNORED = ("iter", "lmax", "mmax", "use_weights", "use_pixel_weights", "datapath")


def _warn_ignored(given):
    names = [n for n in _IGNORED if given.get(n) not in (None, False)]
    if names:
        warnings.warn(f"{', '.join(names)} ignored: arkcos smooths in pixel space (the direct sum, "
                      "no band limit, no harmonic iterations)", ArkcosWarning, stacklevel=3)


# -------------------------------------------------------------------- plan

class Plan:
    """One kernel on one nside, planned once and applied to many maps.

    Plan(nside, fwhm=None, sigma=None, beam_window=None, tophat=None,
         cutoff=None, cutoff_rel=None, nest=False, pol=True, threads=0,
         precision="double", backend="auto", accuracy=0.0, min_weight=0.5)

    fwhm, sigma, tophat (a radius) and cutoff are in radians; a Gaussian is
    cut where it falls below cutoff_rel (default 1e-5) of its peak, a
    beam_window B_l where its Legendre sum stays below that level. threads=0
    uses all cores. precision "single" runs the engine in float (scalar
    maps only). plan(m) smooths one map (float32 or float64, any layout) or a
    (n, npix) stack; with pol=True a stack of 3 maps is I, Q, U and Q, U are
    smoothed as one spin-2 field (a second plan, made at the first such
    call). float32 maps are converted to float64 (one copy), smoothed in the
    plan's precision and returned as float32.

    Threads: a Plan may be called from several threads; the calls on one
    plan run one at a time (each uses the plan's CPU threads). For maps
    in parallel, make one plan per thread. The GIL is released while the
    engine runs.
    """

    def __init__(self, nside, fwhm=None, sigma=None, beam_window=None, tophat=None,
                 cutoff=None, cutoff_rel=None, nest=False, pol=True, threads=0,
                 precision="double", backend="auto", accuracy=0.0, min_weight=0.5,
                 _cache=True):
        self._plan = self._plan2 = self._kernel = self._geom = None
        nside = int(nside)
        if nside < 1:
            raise ValueError(f"nside must be >= 1, got {nside}")
        if precision not in ("double", "single"):
            raise ValueError(f"precision: 'double' or 'single', got {precision!r}")
        if backend not in ("auto", "cpu", "gpu"):
            raise ValueError(f"backend: 'auto', 'cpu' or 'gpu', got {backend!r}")
        if int(threads) < 0:
            raise ValueError(f"threads must be >= 0 (0: all cores), got {threads}")
        if not 0 <= min_weight <= 1:
            raise ValueError(f"min_weight must be in [0, 1], got {min_weight}")
        self.nside, self.npix = nside, 12 * nside * nside
        self.nest, self.pol, self.min_weight = bool(nest), bool(pol), float(min_weight)
        self.precision = precision
        if self.nest:
            nest2ring(nside)  # refuses an nside that is not a power of 2
        self._lock = threading.Lock()
        err = _lib.Error()
        self._kernel, width = _kernel(fwhm, sigma, tophat, beam_window, cutoff, cutoff_rel)
        if width is not None:
            _narrow_check(width, nside)
        g = lib.arkcos_geometry_healpix(nside, byref(err))
        if not g:
            _check(err, "geometry")
        self._geom = g
        o = _lib.Options()
        lib.arkcos_options_default(byref(o))
        o.precision = _lib.SINGLE if precision == "single" else _lib.DOUBLE
        o.backend = {"auto": _lib.BACKEND_AUTO, "cpu": _lib.BACKEND_CPU,
                     "gpu": _lib.BACKEND_GPU}[backend]
        o.threads = int(threads)
        o.accuracy = float(accuracy)
        o.cache_kernel_spectra = int(bool(_cache))
        self._options = o
        p = lib.arkcos_plan_create(g, self._kernel, byref(o), byref(err))
        self._plan = p or _check(err, "plan")

    # ------------------------------------------------------------ facts
    @property
    def bound(self):
        """A-priori bound: max |out - direct sum| <= bound * max |input|."""
        return lib.arkcos_plan_bound(self._plan)

    @property
    def backend(self):
        return "gpu" if lib.arkcos_plan_backend(self._plan) == _lib.BACKEND_GPU else "cpu"

    @property
    def note(self):
        return lib.arkcos_plan_note(self._plan).decode()

    @property
    def exactness(self):
        return lib.arkcos_plan_exactness(self._plan).decode()

    @property
    def memory(self):
        return lib.arkcos_plan_memory(self._plan)

    @property
    def cutoff(self):
        """The kernel's truncation radius, radians."""
        return lib.arkcos_kernel_cutoff(self._kernel)

    def stages(self):
        """Stage times of the last scalar execute, seconds (Table 1's names)."""
        t = _lib.StageTimes()
        lib.arkcos_plan_stages(self._plan, byref(t))
        return {name: getattr(t, name) for name, _ in _lib.StageTimes._fields_}

    # ---------------------------------------------------------- running
    def _execute(self, x, out):
        err = _lib.Error()
        if lib.arkcos_execute(self._plan, x.ctypes.data, out.ctypes.data, byref(err)):
            _check(err, "execute")

    def _spin2_plan(self):
        if self._plan2 is None:
            if self.precision == "single":
                raise ValueError("pol=True: Stokes Q and U (spin 2) are smoothed in double "
                                 "precision only; use precision='double' or pol=False")
            o = _lib.Options()
            o.mode, o.precision, o.backend = self._options.mode, _lib.DOUBLE, self._options.backend
            o.threads = self._options.threads
            o.cache_kernel_spectra = self._options.cache_kernel_spectra
            o.spin = 2  # exact whatever accuracy says, as arkcos smooth
            err = _lib.Error()
            p = lib.arkcos_plan_create(self._geom, self._kernel, byref(o), byref(err))
            self._plan2 = p or _check(err, "spin-2 plan")
        return self._plan2

    def _finish(self, aw, out):
        """out = A(w m) / A(w), UNSEEN where A(w) is below min_weight (or not
        above the floor): smooth_mask.c's finish_column."""
        bad = ~(aw > _WEIGHT_FLOOR)
        if self.min_weight > 0:
            bad |= aw < self.min_weight
        np.divide(out, aw, out=out, where=~bad)
        out[bad] = UNSEEN

    def _weight(self, miss, cache):
        """A(w) of these missing pixels, once per distinct set in one call."""
        for k, aw in cache:
            if np.array_equal(k, miss):
                return aw
        w = np.where(miss, 0.0, 1.0)
        aw = np.empty(self.npix)
        self._execute(w, aw)
        cache.append((miss, aw))
        return aw

    def _scalar(self, x, miss, out, cache):
        if miss is None:
            self._execute(x, out)
            return
        self._execute(np.where(miss, 0.0, x), out)
        self._finish(self._weight(miss, cache), out)

    def _polar(self, q, u, mq, mu, qo, uo, cache):
        p2 = self._spin2_plan()
        # P is missing where Q or U is (smooth_mask.c's mask_pol_union)
        miss = mq if mu is None else mu if mq is None else (mq | mu)
        if miss is not None:
            q, u = np.where(miss, 0.0, q), np.where(miss, 0.0, u)
        err = _lib.Error()
        if lib.arkcos_execute_spin2(p2, q.ctypes.data, u.ctypes.data, qo.ctypes.data,
                                    uo.ctypes.data, byref(err)):
            _check(err, "execute_spin2")
        if miss is not None:
            aw = self._weight(miss, cache)
            self._finish(aw, qo)
            self._finish(aw, uo)

    def __call__(self, map_in, out=None):
        """Smooths map_in (npix,) or (n, npix); returns a new array of the
        same shape (float32 for float32 input, else float64), or fills out
        (float64, C-contiguous, that shape) and returns it."""
        mask = np.ma.getmaskarray(map_in) if np.ma.isMaskedArray(map_in) else None
        data = np.ma.getdata(map_in) if mask is not None else map_in
        arr = np.asanyarray(data)
        if arr.dtype.kind not in "fiu":
            raise ValueError(f"maps must be real numbers, got dtype {arr.dtype}")
        single = arr.ndim == 1
        maps = arr.reshape(1, -1) if single else arr
        if maps.ndim != 2 or maps.shape[1] != self.npix:
            raise ValueError(f"expected maps of {self.npix} pixels (nside {self.nside}), "
                             f"got shape {arr.shape}")
        if mask is not None:
            mask = mask.reshape(maps.shape)
        f32 = arr.dtype == np.float32
        if out is not None:
            if f32 or out.dtype != np.float64 or not out.flags.c_contiguous or out.shape != arr.shape:
                raise ValueError(f"out: a C-contiguous float64 array of shape {arr.shape}"
                                 + (" (and a float64 map)" if f32 else ""))
            res = out.reshape(maps.shape)
        else:
            res = np.empty(maps.shape, dtype=np.float64)
        n2r = nest2ring(self.nside) if self.nest else None
        rows = []
        for i in range(maps.shape[0]):
            x = np.ascontiguousarray(maps[i], dtype=np.float64)  # no copy when it is one
            if n2r is not None:
                r = np.empty(self.npix)
                r[n2r] = x
                x = r
            m = None if mask is None else mask[i]
            if m is not None and n2r is not None:
                m = np.empty(self.npix, dtype=bool)
                m[n2r] = mask[i]
            rows.append((x, _missing(x, m)))
        with self._lock:
            self._run(rows, res)
        if n2r is not None:
            for i in range(res.shape[0]):
                res[i] = res[i][n2r]
        if out is not None:
            return out
        res = res[0] if single else res
        return res.astype(np.float32) if f32 else res

    def _run(self, rows, res):
        cache = []
        pol = self.pol and len(rows) == 3
        for i, (x, miss) in enumerate(rows):
            if pol and i == 1:
                self._polar(x, rows[2][0], miss, rows[2][1], res[1], res[2], cache)
            elif pol and i == 2:
                continue
            else:
                self._scalar(x, miss, res[i], cache)

    # ---------------------------------------------------------- cleanup
    def close(self):
        """Frees the plans (also done when the Plan is garbage-collected)."""
        for name, destroy in (("_plan2", lib.arkcos_plan_destroy), ("_plan", lib.arkcos_plan_destroy),
                              ("_kernel", lib.arkcos_kernel_destroy),
                              ("_geom", lib.arkcos_geometry_destroy)):
            h = getattr(self, name, None)
            if h:
                destroy(h)
            setattr(self, name, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return (f"arkcos.Plan(nside={self.nside}, cutoff={self.cutoff:.4g} rad, "
                f"backend={self.backend!r}, precision={self.precision!r}, bound={self.bound:.3g})")


def smoothing(map_in, fwhm=None, sigma=None, beam_window=None, pol=True, iter=None, lmax=None,
              mmax=None, use_weights=False, use_pixel_weights=False, datapath=None, verbose=None,
              nest=False, tophat=None, cutoff=None, cutoff_rel=None, threads=0,
              precision="double", backend="auto", accuracy=0.0, min_weight=0.5):
    """Smooths a HEALPix map, or I, Q, U maps, with a radial kernel.

    As healpy.smoothing: map_in is one map or a sequence of maps (RING, or
    NESTED with nest=True); fwhm or sigma of a Gaussian in radians, or a
    beam_window B_l; with pol=True and three maps, I is smoothed as a scalar
    and Q, U as one spin-2 field. Besides: tophat=R (1 inside R radians),
    cutoff (radians) or cutoff_rel (default 1e-5 of the peak) for the
    truncation, threads (0: all cores), precision, backend, accuracy (0:
    exact) and min_weight (missing data, see the module's help).

    lmax, mmax, iter, use_weights, use_pixel_weights and datapath belong to
    spherical harmonic transforms: they are ignored, with an ArkcosWarning.
    For many maps with one kernel, make a Plan once.
    """
    _warn_ignored(dict(iter=iter, lmax=lmax, mmax=mmax, use_weights=use_weights,
                       use_pixel_weights=use_pixel_weights, datapath=datapath))
    mask = np.ma.getmaskarray(map_in) if np.ma.isMaskedArray(map_in) else None
    arr = np.asanyarray(np.ma.getdata(map_in) if mask is not None else map_in)
    if arr.ndim not in (1, 2):
        raise ValueError(f"map_in: one map or a sequence of maps, got shape {arr.shape}")
    nside = _npix2nside(arr.shape[-1])
    plan = Plan(nside, fwhm=fwhm, sigma=sigma, beam_window=beam_window, tophat=tophat,
                cutoff=cutoff, cutoff_rel=cutoff_rel, nest=nest, pol=pol, threads=threads,
                precision=precision, backend=backend, accuracy=accuracy, min_weight=min_weight,
                _cache=False)
    try:
        return plan(map_in)
    finally:
        plan.close()
