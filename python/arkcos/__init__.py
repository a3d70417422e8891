"""arkcos -- ARKCoS smoothing of HEALPix maps from Python.

The engine convolves a map with a compact radial kernel by ring FFTs and
ring-pair spectra (Elsner & Wandelt 2011); in its default (enhanced) mode
the result is the direct pixel sum (4 pi / npix) sum_q K(alpha_pq) m_q to
rounding on the whole sphere. Arguments are those of healpy.smoothing where
they mean the same:

    out = arkcos.smoothing(m, fwhm=np.radians(10 / 60))      # Gaussian, FWHM in radians
    out = arkcos.smoothing([i, q, u], fwhm=..., pol=True)     # Q, U as one spin-2 field
    out = arkcos.smoothing([q, u], fwhm=..., pol="QU")        # Q, U without I
    out = arkcos.smoothing(m, beam_window=bl)                 # a B_l (l = 0..lmax)
    out = arkcos.smoothing(m, tophat=np.radians(1))           # 1 inside 1 degree
    out, aw = arkcos.smoothing(m, fwhm=..., mask=w, return_weight=True)
    plan = arkcos.Plan(nside, fwhm=..., threads=0)            # one plan, many maps
    outs = [plan(x) for x in maps]

Missing data, as `arkcos smooth` (harness/smooth_mask.c): UNSEEN, NaN, +inf
and -inf pixels, the masked entries of numpy masked arrays (one, or a list
of them as healpy.ma gives) and the pixels a mask= weight map sets to 0 are
left out. With w the weight (0 where missing, the mask's value elsewhere, 1
without mask=) and A the smoothing:

    mask_mode="normalize" (default)  out = A(w m) / A(w), UNSEEN where
                                     A(w) < min_weight (default 0.5)
    mask_mode="zero"                 out = A(w m) on every pixel

Masked input gives a masked array back (masked where the output is UNSEEN).
Errors of the engine raise ArkcosError, a ValueError carrying the C message;
bad arguments raise ValueError naming the argument.

FFTW's plans are estimated (FFTW_ESTIMATE, a few milliseconds; the rings
of the polar caps go through power-of-two FFTs), so the first call of a
process costs what later ones do and no wisdom file is read or written.
ARKCOS_FFTW_PLANNER=measure times them instead (seconds at nside 1024; kept
in the wisdom file ~/.cache/arkcos/fftw-wisdom, $XDG_CACHE_HOME/arkcos/...,
or the file $ARKCOS_FFTW_WISDOM names, shared with `arkcos smooth`).
"""
import math
import threading
import warnings
from ctypes import byref

import numpy as np

from . import _lib
from ._lib import lib

__version__ = "0.1.0"
__all__ = ["smoothing", "Plan", "ArkcosError", "ArkcosWarning", "UNSEEN", "nest2ring",
           "build_info"]

UNSEEN = -1.6375e30
# healpy's mask_bad: |x - UNSEEN| <= 1e-8 + 1e-5 |UNSEEN| (UNSEEN after float32 too)
_UNSEEN_TOL = 1e-8 + 1e-5 * abs(UNSEEN)
# below this A(w) a pixel is not divided by it (as arkcos smooth, smooth_mask.c)
_WEIGHT_FLOOR = 1e-12
_MIN_WEIGHT_DEFAULT = 0.5
_DEFAULT_CUTOFF_REL = 1e-5
_FWHM_PER_SIGMA = math.sqrt(8 * math.log(2))


def build_info():
    """What the loaded engine library was built from, fixed at its build:

    {"version": ARKCOS_VERSION of the library, "commit": the git commit of
     the source tree (40 hex digits, or "unknown" for a tree without git
     history), "dirty": True if tracked files differed from that commit,
     False if not, None if unknown, "library": the path of the library}

    The same commit as `arkcos info` of a build from the same tree; nothing
    asks git at run time.
    """
    dirty = lib.arkcos_build_dirty()
    return {"version": lib.arkcos_version().decode(),
            "commit": lib.arkcos_build_commit().decode(),
            "dirty": None if dirty < 0 else bool(dirty),
            "library": _lib.LIBRARY_PATH}


class ArkcosError(ValueError):
    """An error of the engine: the C message, and its ARKCOS_E* code in .code."""

    def __init__(self, msg, code=_lib.ARKCOS_EINVAL):
        super().__init__(msg)
        self.code = code


class ArkcosWarning(UserWarning):
    """Arguments of healpy.smoothing that have no meaning here, narrow kernels."""


def _check(err, what):
    msg = err.msg.decode(errors="replace") or f"{what} failed"
    code = err.code or _lib.ARKCOS_ERUNTIME
    if code == _lib.ARKCOS_ENODEV:
        # the engine words it for the command line ("--backend gpu: ...")
        why = msg.split(": ", 1)[1] if msg.startswith("--backend gpu: ") else msg
        why = why.replace("this binary was", "the library was")
        msg = (f"backend='gpu': {why} (library {_lib.LIBRARY_PATH}); use backend='auto' "
               "(the GPU where one is usable, else the CPU) or backend='cpu'")
    raise ArkcosError(msg, code)


# ------------------------------------------------------------ pixel order

def _npix2nside(npix):
    nside = int(round(math.sqrt(npix / 12.0)))
    if nside < 1 or 12 * nside * nside != npix:
        raise ValueError(f"map_in: a map of {npix} pixels is not a HEALPix map "
                         "(12 nside^2 pixels)")
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
    """Boolean array of the missing pixels of a float64 map (UNSEEN, NaN,
    +-inf, or True in mask), or None if there are none. Two reductions in
    the common case of a complete map."""
    lo, hi = m.min(), m.max()
    if mask is None and lo > UNSEEN + _UNSEEN_TOL and hi < np.inf:
        return None   # NaN fails both comparisons
    bad = ~np.isfinite(m) | (np.abs(m - UNSEEN) <= _UNSEEN_TOL)
    if mask is not None:
        bad |= mask
    return bad if bad.any() else None


def _as_maps(map_in):
    """(data, mask or None, masked): map_in as an array, the mask of a masked
    array or of a sequence of masked arrays (healpy.ma), and whether there
    was one."""
    if np.ma.isMaskedArray(map_in):
        return np.asanyarray(np.ma.getdata(map_in)), np.ma.getmaskarray(map_in), True
    if isinstance(map_in, (list, tuple)) and any(np.ma.isMaskedArray(x) for x in map_in):
        try:
            data = np.array([np.ma.getdata(x) for x in map_in])
            mask = np.array([np.ma.getmaskarray(x) for x in map_in])
        except ValueError as e:
            raise ValueError(f"map_in: maps of different lengths ({e})") from None
        return data, mask, True
    try:
        return np.asanyarray(map_in), None, False
    except ValueError as e:
        raise ValueError(f"map_in: maps of different lengths ({e})") from None


def _masked_output(res):
    """healpy.ma of the output: masked where it is UNSEEN."""
    return np.ma.masked_array(res, mask=np.abs(res - UNSEEN) <= _UNSEEN_TOL, fill_value=UNSEEN, copy=False)

# ----------------------------------------------------------------- kernels

def _kernel(fwhm, sigma, tophat, beam_window, cutoff, cutoff_rel, nside=0, spin=0):
    """The engine kernel and, for Gaussians, the FWHM in radians; (None, 0.0)
    for fwhm=0 or sigma=0 (no smoothing). A Gaussian without cutoff or
    cutoff_rel is cut at arkcos_gaussian_default_cutoff_rel for nside and
    spin (1e-13 for scalar maps of >= 4 pixels per FWHM, else 1e-5), as
    arkcos smooth does."""
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
        if width == 0:
            return None, 0.0   # no smoothing: the identity (a copy), as healpy
        if not width > 0:
            raise ValueError(f"{given[0]} must be >= 0 radians, got {fwhm if fwhm is not None else sigma}")
        spec.type = _lib.KERNEL_GAUSSIAN
        spec.fwhm = width
        spec.cutoff = 0.0 if cutoff is None else float(cutoff)
        spec.cutoff_rel = (0.0 if cutoff is not None else
                           lib.arkcos_gaussian_default_cutoff_rel(width, nside, spin) if cutoff_rel is None
                           else float(cutoff_rel))
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


# healpy.smoothing's arguments that mean nothing here, with healpy's defaults:
# any other value is ignored with an ArkcosWarning
_HEALPY_DEFAULTS = {"iter": 3, "lmax": None, "mmax": None, "use_weights": False,
                    "use_pixel_weights": False, "datapath": None, "verbose": True}


def _is_default(value, default):
    if value is default:
        return True
    try:
        return default is not None and value is not None and bool(value == default)
    except (TypeError, ValueError):
        return False


def _warn_ignored(given):
    names = [f"{n}={given[n]!r}" for n, d in _HEALPY_DEFAULTS.items()
             if not _is_default(given[n], d)]
    if names:
        warnings.warn(f"{', '.join(names)} ignored: arkcos smooths in pixel space (the direct "
                      "sum: no band limit, no harmonic iterations, no quadrature weights)",
                      ArkcosWarning, stacklevel=3)

# -------------------------------------------------------------------- plan

class Plan:
    """One kernel on one nside, planned once and applied to many maps.

    Plan(nside, fwhm=None, sigma=None, beam_window=None, tophat=None,
         cutoff=None, cutoff_rel=None, nest=False, pol=True, threads=0,
         precision="double", backend="auto", accuracy=0.0, min_weight=None,
         mask_mode="normalize")

    Arguments
      nside        the maps' HEALPix nside (any nside >= 1; a power of 2
                   with nest=True)
      fwhm, sigma  a Gaussian exp(-a^2 / 2 sigma^2) in the angle a, in
                   radians (fwhm = sigma sqrt(8 ln 2)); 0 plans the identity
                   (the maps come back as they are, missing data aside)
      beam_window  a B_l, l = 0..lmax: the kernel is its Legendre sum
      tophat       1 inside this radius (radians), 0 outside
                   (exactly one of fwhm, sigma, beam_window, tophat;
                   every kernel is normalised to unit integral)
      cutoff       truncation radius in radians, or cutoff_rel: cut where
                   the kernel falls below cutoff_rel of its peak (default
                   for a Gaussian: 1e-13 for maps of >= 4 pixels per FWHM,
                   whose polar caps are then exact with no tables, 1e-5 for
                   narrower beams and for Q, U; for a beam_window 1e-5:
                   where its Legendre sum stays below that level)
      nest         maps (and mask=) in NESTED order, returned NESTED
      pol          True (healpy's default): a stack of 3 maps is I, Q, U,
                   Q and U smoothed as one spin-2 field; one map is a
                   scalar; any other number of maps is refused. "QU": a
                   stack of 2 maps is Stokes Q, U (one spin-2 field).
                   False: every map a scalar.
      threads      CPU threads; 0: all cores
      precision    "double", or "single" (the engine in float; scalar maps
                   only)
      backend      "auto" (the GPU where one is usable, else the CPU), "cpu"
                   or "gpu" (ArkcosError where there is none)
      accuracy     0: exact (the direct sum to rounding); > 0 lets the plan
                   take cheaper paths while its bound stays below it
      mask_mode    "normalize" (default): out = A(w m) / A(w), UNSEEN where
                   A(w) < min_weight; "zero": out = A(w m) on every pixel
      min_weight   normalize only: the threshold, in [0, 1] (default 0.5;
                   0: none); refused with mask_mode="zero"

    Calling it: plan(map_in, out=None, mask=None, return_weight=False), see
    __call__. Making the Plan is most of a one-map call (the direct tables
    of narrow beams, FFTW's estimated plans); its calls reuse all of it.

    Properties: nside, npix, nest, pol, precision, mask_mode, min_weight (as
    given), bound, backend, note, exactness, memory, cutoff (below) and
    stages().

    Threads: a Plan may be called from several threads; the calls on one
    plan run one at a time (each uses the plan's CPU threads). For maps
    in parallel, make one plan per thread. The GIL is released while the
    engine runs.
    """

    def __init__(self, nside, fwhm=None, sigma=None, beam_window=None, tophat=None,
                 cutoff=None, cutoff_rel=None, nest=False, pol=True, threads=0,
                 precision="double", backend="auto", accuracy=0.0, min_weight=None,
                 mask_mode="normalize", _cache=True):
        self._plan = self._plan2 = self._kernel = self._kernel2 = self._geom = None
        nside = int(nside)
        if nside < 1:
            raise ValueError(f"nside must be >= 1, got {nside}")
        if precision not in ("double", "single"):
            raise ValueError(f"precision: 'double' or 'single', got {precision!r}")
        if backend not in ("auto", "cpu", "gpu"):
            raise ValueError(f"backend: 'auto', 'cpu' or 'gpu', got {backend!r}")
        if int(threads) < 0:
            raise ValueError(f"threads must be >= 0 (0: all cores), got {threads}")
        if mask_mode not in ("normalize", "zero"):
            raise ValueError(f"mask_mode: 'normalize' or 'zero', got {mask_mode!r}")
        if mask_mode == "zero" and min_weight is not None:
            raise ValueError("min_weight applies to mask_mode='normalize' only "
                             "(mask_mode='zero' keeps every pixel)")
        if min_weight is None:
            min_weight = _MIN_WEIGHT_DEFAULT if mask_mode == "normalize" else 0.0
        if not 0 <= min_weight <= 1:
            raise ValueError(f"min_weight must be in [0, 1], got {min_weight}")
        if isinstance(pol, str):
            if pol.upper() != "QU":
                raise ValueError(f"pol: True, False or 'QU' (2 maps: Stokes Q, U), got {pol!r}")
            pol = "QU"
        else:
            pol = bool(pol)
        self.nside, self.npix = nside, 12 * nside * nside
        self.nest, self.pol, self.min_weight = bool(nest), pol, float(min_weight)
        self.precision, self.mask_mode = precision, mask_mode
        if self.nest:
            nest2ring(nside)  # refuses an nside that is not a power of 2
        self._lock = threading.Lock()
        err = _lib.Error()
        self._kargs = (fwhm, sigma, tophat, beam_window, cutoff, cutoff_rel, nside)
        self._kernel, width = _kernel(fwhm, sigma, tophat, beam_window, cutoff, cutoff_rel, nside, 0)
        self._identity = self._kernel is None
        if self._identity:
            return
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
        """A-priori bound: max |out - direct sum| <= bound * max |input| (0
        for fwhm=0)."""
        return 0.0 if self._identity else lib.arkcos_plan_bound(self._plan)

    @property
    def backend(self):
        """Where the scalar maps run: "cpu" or "gpu" ("none" for fwhm=0).
        Q and U (spin 2) always run on the CPU."""
        if self._identity:
            return "none"
        return "gpu" if lib.arkcos_plan_backend(self._plan) == _lib.BACKEND_GPU else "cpu"

    @property
    def note(self):
        """The engine's note on its choices (why backend="auto" chose the
        CPU, for instance); "" when there is nothing to say."""
        if self._identity:
            return "fwhm = 0: no smoothing, the maps are copied"
        return lib.arkcos_plan_note(self._plan).decode()

    @property
    def exactness(self):
        """How the plan stands to the direct sum, in words."""
        if self._identity:
            return "exact (no smoothing)"
        return lib.arkcos_plan_exactness(self._plan).decode()

    @property
    def memory(self):
        """Bytes the plan holds (tables, cached spectra, buffers)."""
        return 0 if self._identity else lib.arkcos_plan_memory(self._plan)

    @property
    def cutoff(self):
        """The kernel's truncation radius, radians (0 for fwhm=0)."""
        return 0.0 if self._identity else lib.arkcos_kernel_cutoff(self._kernel)

    def stages(self):
        """Stage times of the last scalar execute, seconds (Table 1's names:
        map_fft, kernel_eval, kernel_fft, reduction, map_ifft, h2d, d2h,
        other, total, direct)."""
        t = _lib.StageTimes()
        if not self._identity:
            lib.arkcos_plan_stages(self._plan, byref(t))
        return {name: getattr(t, name) for name, _ in _lib.StageTimes._fields_}

    # ---------------------------------------------------------- running
    def _execute(self, x, out):
        if self._identity:
            out[...] = x
            return
        err = _lib.Error()
        if lib.arkcos_execute(self._plan, x.ctypes.data, out.ctypes.data, byref(err)):
            _check(err, "execute")

    def _spin2_plan(self):
        if self._plan2 is None:
            if self.precision == "single":
                raise ValueError("pol: Stokes Q and U (spin 2) are smoothed in double "
                                 "precision only; use precision='double' or pol=False")
            o = _lib.Options()
            o.mode, o.precision, o.backend = self._options.mode, _lib.DOUBLE, self._options.backend
            o.threads = self._options.threads
            o.cache_kernel_spectra = self._options.cache_kernel_spectra
            o.spin = 2  # exact whatever accuracy says, as arkcos smooth
            err = _lib.Error()
            # Q and U: a Gaussian's default cut is the spin-2 one (1e-5)
            self._kernel2, _ = _kernel(*self._kargs, 2)
            p = lib.arkcos_plan_create(self._geom, self._kernel2, byref(o), byref(err))
            self._plan2 = p or _check(err, "spin-2 plan")
        return self._plan2

    def _finish(self, aw, out):
        """normalize: out = A(w m) / A(w), UNSEEN where A(w) is below
        min_weight (or not above the floor): smooth_mask.c's finish_column.
        zero: out = A(w m) as it is."""
        if self.mask_mode == "zero":
            return
        bad = ~(aw > _WEIGHT_FLOOR)
        if self.min_weight > 0:
            bad |= aw < self.min_weight
        np.divide(out, aw, out=out, where=~bad)
        out[bad] = UNSEEN

    def _weight(self, miss, mw, cache):
        """A(w), w = 0 at the missing pixels, mw (or 1) elsewhere; once per
        distinct set of missing pixels in one call."""
        for k, aw in cache:
            if (k is None and miss is None) or (
                    k is not None and miss is not None and np.array_equal(k, miss)):
                return aw
        one = 1.0 if mw is None else mw
        w = np.where(miss, 0.0, one) if miss is not None else np.ones(self.npix) * one
        aw = np.empty(self.npix)
        self._execute(w, aw)
        cache.append((miss, aw))
        return aw

    @staticmethod
    def _weighted(x, miss, mw):
        """w m: 0 where missing or where mw is 0 (smooth_mask.c's apply_weight)."""
        if mw is None:
            return x if miss is None else np.where(miss, 0.0, x)
        drop = mw == 0 if miss is None else (miss | (mw == 0))
        with np.errstate(invalid="ignore", over="ignore"):
            return np.where(drop, 0.0, mw * x)

    def _scalar(self, x, miss, mw, out, wout, cache):
        trivial = miss is None and mw is None   # smoothed as is, as arkcos smooth
        self._execute(self._weighted(x, miss, mw), out)
        if not trivial or wout is not None:
            aw = self._weight(miss, mw, cache)
            if wout is not None:
                wout[...] = aw
            if not trivial:
                self._finish(aw, out)

    def _polar(self, q, u, mq, mu, mw, qo, uo, wq, wu, cache):
        # P is missing where Q or U is (smooth_mask.c's mask_pol_union)
        miss = mq if mu is None else mu if mq is None else (mq | mu)
        trivial = miss is None and mw is None
        q, u = self._weighted(q, miss, mw), self._weighted(u, miss, mw)
        if self._identity:
            qo[...], uo[...] = q, u
        else:
            p2 = self._spin2_plan()
            err = _lib.Error()
            q, u = np.ascontiguousarray(q), np.ascontiguousarray(u)
            if lib.arkcos_execute_spin2(p2, q.ctypes.data, u.ctypes.data, qo.ctypes.data,
                                        uo.ctypes.data, byref(err)):
                _check(err, "execute_spin2")
        if not trivial or wq is not None:
            aw = self._weight(miss, mw, cache)
            if wq is not None:
                wq[...], wu[...] = aw, aw
            if not trivial:
                self._finish(aw, qo)
                self._finish(aw, uo)

    def _pair(self, n):
        """The rows smoothed as Stokes Q, U (one spin-2 field), or None."""
        if self.pol == "QU":
            if n != 2:
                raise ValueError(f"pol='QU': 2 maps (Stokes Q, U) expected, got {n}")
            return (0, 1)
        if not self.pol or n == 1:
            return None
        if n == 3:
            return (1, 2)
        if n == 2:
            raise ValueError("pol=True: 2 maps given; as healpy, pol=True takes 1 map or 3 "
                             "(I, Q, U). Give pol='QU' to smooth them as Stokes Q, U (one "
                             "spin-2 field), or pol=False to smooth them as 2 scalar maps")
        raise ValueError(f"pol=True: {n} maps given; as healpy, pol=True takes 1 map or 3 "
                         f"(I, Q, U). Give pol=False to smooth {n} scalar maps")

    def _mask_weights(self, mask):
        """mask= as weights in [0, 1], RING order (UNSEEN, NaN, +-inf and
        masked entries: 0), or None."""
        if mask is None:
            return None
        mm = np.ma.getmaskarray(mask) if np.ma.isMaskedArray(mask) else None
        data = np.asanyarray(np.ma.getdata(mask))
        if data.dtype == bool:
            raise ValueError("mask: a weight map (1 kept, 0 left out, as --mask of arkcos "
                             "smooth), not booleans: pass mask=keep.astype(float) if True "
                             "means kept, or a numpy masked array as map_in if True means "
                             "left out")
        if data.dtype.kind not in "fiu":
            raise ValueError(f"mask: a weight map of real numbers, got dtype {data.dtype}")
        if data.shape != (self.npix,):
            raise ValueError(f"mask: one map of {self.npix} pixels (nside {self.nside}), "
                             f"got shape {data.shape}")
        w = np.array(data, dtype=np.float64)
        gone = ~np.isfinite(w) | (np.abs(w - UNSEEN) <= _UNSEEN_TOL)
        if mm is not None:
            gone |= mm
        w[gone] = 0.0
        outside = ~((w >= 0) & (w <= 1))
        if outside.any():
            p = int(np.argmax(outside))
            raise ValueError(f"mask: pixel {p} ({'NESTED' if self.nest else 'RING'}) = "
                             f"{w[p]:g} is outside [0, 1] (a mask is 0/1 or a weight in [0, 1])")
        if self.nest:
            r = np.empty(self.npix)
            r[nest2ring(self.nside)] = w
            w = r
        return w

    def __call__(self, map_in, out=None, mask=None, return_weight=False):
        """Smooths map_in: one map (npix,) or a stack (n, npix) or a sequence
        of n maps (arrays or numpy masked arrays, e.g. [hp.ma(i), hp.ma(q),
        hp.ma(u)]), in the plan's ordering.

        mask: a weight map (npix,) in [0, 1] in the same ordering, as
        `arkcos smooth --mask`: 0 leaves a pixel out, 1 keeps it, values
        between weight it; UNSEEN, NaN and masked entries count as 0. It
        applies to every map, together with each map's own missing pixels.

        Returns a new array of map_in's shape: float32 for float32 maps,
        float64 for every other real type (computed in float64 either way,
        rounded once, as `arkcos smooth` does for a float32 file); a numpy
        masked array (masked where the output is UNSEEN) when map_in is one
        or holds one. out (a C-contiguous float64 array of that shape, for
        float64 or integer maps) is filled and returned instead (as a
        masked array over it for masked input). With return_weight=True,
        (result, weight): weight is A(w) for each map, the smoothed weight
        map (w = 0 where missing, the mask's value or 1 elsewhere), an
        array of the result's shape and float type; Q and U share theirs.
        """
        data, inmask, was_masked = _as_maps(map_in)
        arr = data
        if arr.dtype.kind not in "fiu":
            raise ValueError(f"map_in: maps must be real numbers, got dtype {arr.dtype}")
        single = arr.ndim == 1
        maps = arr.reshape(1, -1) if single else arr
        if maps.ndim != 2 or maps.shape[1] != self.npix:
            raise ValueError(f"map_in: expected maps of {self.npix} pixels (nside {self.nside}), "
                             f"got shape {arr.shape}")
        pair = self._pair(maps.shape[0])
        mw = self._mask_weights(mask)
        if inmask is not None:
            inmask = inmask.reshape(maps.shape)
        f32 = arr.dtype == np.float32
        if out is not None:
            if (f32 or not isinstance(out, np.ndarray) or out.dtype != np.float64
                    or not out.flags.c_contiguous or out.shape != arr.shape):
                raise ValueError(f"out: a C-contiguous float64 array of shape {arr.shape}"
                                 + (" (and a float64 map)" if f32 else ""))
            res = out.reshape(maps.shape)
        else:
            res = np.empty(maps.shape, dtype=np.float64)
        wres = np.empty(maps.shape, dtype=np.float64) if return_weight else None
        n2r = nest2ring(self.nside) if self.nest else None
        rows = []
        for i in range(maps.shape[0]):
            x = np.ascontiguousarray(maps[i], dtype=np.float64)  # no copy when it is one
            if n2r is not None:
                r = np.empty(self.npix)
                r[n2r] = x
                x = r
            m = None if inmask is None else inmask[i]
            if m is not None and n2r is not None:
                m = np.empty(self.npix, dtype=bool)
                m[n2r] = inmask[i]
            rows.append((x, _missing(x, m)))
        with self._lock:
            self._run(rows, res, pair, mw, wres)
        if n2r is not None:
            for a in (res, wres) if wres is not None else (res,):
                for i in range(a.shape[0]):
                    a[i] = a[i][n2r]
        if out is not None:
            result = out
        else:
            result = res[0] if single else res
            result = result.astype(np.float32) if f32 else result
        if was_masked:
            result = _masked_output(result)
        if not return_weight:
            return result
        weight = wres[0] if single else wres
        return result, (weight.astype(np.float32) if f32 else weight)

    def _run(self, rows, res, pair, mw, wres):
        cache = []
        for i, (x, miss) in enumerate(rows):
            wi = None if wres is None else wres[i]
            if pair is not None and i == pair[0]:
                j = pair[1]
                self._polar(x, rows[j][0], miss, rows[j][1], mw, res[i], res[j], wi,
                            None if wres is None else wres[j], cache)
            elif pair is not None and i == pair[1]:
                continue
            else:
                self._scalar(x, miss, mw, res[i], wi, cache)

    # ---------------------------------------------------------- cleanup
    def close(self):
        """Frees the plans (also done when the Plan is garbage-collected)."""
        for name, destroy in (("_plan2", lib.arkcos_plan_destroy), ("_plan", lib.arkcos_plan_destroy),
                              ("_kernel", lib.arkcos_kernel_destroy), ("_kernel2", lib.arkcos_kernel_destroy),
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


def smoothing(map_in, fwhm=None, sigma=None, beam_window=None, pol=True, iter=3, lmax=None,
              mmax=None, use_weights=False, use_pixel_weights=False, datapath=None, verbose=True,
              nest=False, tophat=None, cutoff=None, cutoff_rel=None, threads=0,
              precision="double", backend="auto", accuracy=0.0, min_weight=None,
              mask=None, mask_mode="normalize", return_weight=False):
    """Smooths a HEALPix map, or I, Q, U maps, with a radial kernel.

    As healpy.smoothing: map_in is one map or a sequence of maps (numpy
    arrays or masked arrays, RING, or NESTED with nest=True); fwhm or sigma
    of a Gaussian in radians (0: no smoothing, a copy of the input), or a
    beam_window B_l. pol=True (the default) with three maps smooths I as a
    scalar and Q, U as one spin-2 field; with one map it has no effect; any
    other number of maps is refused (healpy refuses them too): pol="QU"
    smooths two maps as Stokes Q, U, pol=False every map as a scalar.

    Besides healpy's: tophat=R (1 inside R radians), cutoff (radians) or
    cutoff_rel (default 1e-13 of the peak at >= 4 pixels per FWHM, 1e-5
    for narrower beams and Q, U) for the truncation, threads (0:
    all cores), precision ("double", "single"), backend ("auto", "cpu",
    "gpu"), accuracy (0: exact), and for missing data mask (a weight map,
    0 left out, 1 kept, as `arkcos smooth --mask`), mask_mode ("normalize":
    A(w m) / A(w), UNSEEN where A(w) < min_weight, default 0.5; "zero":
    A(w m) on every pixel) and return_weight (also return A(w)). See Plan
    for each argument.

    Missing data: UNSEEN, NaN, +inf and -inf pixels, masked entries and
    mask's zeros are left out of the smoothing (they are not zeros), as
    `arkcos smooth` does; the result is the same to the last bit as
    `arkcos smooth` with the same options (with ARKCOS_FFTW_PLANNER=measure:
    given the same wisdom file; without it the two agree to ~1e-16).

    Returns the smoothed map(s), map_in's shape: float32 for float32 input,
    else float64; a numpy masked array (masked where UNSEEN) when map_in is
    or holds masked arrays, as healpy returns. With return_weight=True,
    (maps, weight), weight A(w) per map (see Plan.__call__).

    iter, lmax, mmax, use_weights, use_pixel_weights, datapath and verbose
    belong to healpy's spherical harmonic transforms: any value but
    healpy's default (iter=3, verbose=True, the others None or False) is
    ignored with an ArkcosWarning. For many maps with one kernel, make a
    Plan once: each smoothing() call plans again.
    """
    _warn_ignored(dict(iter=iter, lmax=lmax, mmax=mmax, use_weights=use_weights,
                       use_pixel_weights=use_pixel_weights, datapath=datapath, verbose=verbose))
    arr = _as_maps(map_in)[0]
    if arr.ndim not in (1, 2):
        raise ValueError(f"map_in: one map or a sequence of maps, got shape {arr.shape}")
    nside = _npix2nside(arr.shape[-1])
    plan = Plan(nside, fwhm=fwhm, sigma=sigma, beam_window=beam_window, tophat=tophat,
                cutoff=cutoff, cutoff_rel=cutoff_rel, nest=nest, pol=pol, threads=threads,
                precision=precision, backend=backend, accuracy=accuracy, min_weight=min_weight,
                mask_mode=mask_mode, _cache=False)
    try:
        return plan(map_in, mask=mask, return_weight=return_weight)
    finally:
        plan.close()
