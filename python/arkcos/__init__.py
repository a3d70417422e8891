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

Missing data, as `arkcos smooth` (both are the engine's arkcos_smoother, arkcos.h,
arkcos/smoother_mask.c): UNSEEN, NaN, +inf
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
from ctypes import byref, c_void_p

import numpy as np

from . import _lib
from ._lib import lib

__version__ = "0.1.0"
__all__ = ["smoothing", "Plan", "ArkcosError", "ArkcosWarning", "UNSEEN", "nest2ring",
           "build_info"]

UNSEEN = -1.6375e30
# healpy's mask_bad: |x - UNSEEN| <= 1e-8 + 1e-5 |UNSEEN| (UNSEEN after float32 too)
_UNSEEN_TOL = 1e-8 + 1e-5 * abs(UNSEEN)
_MIN_WEIGHT_DEFAULT = 0.5  # the engine's default (arkcos.h, min_weight), for Plan.min_weight
_FWHM_PER_SIGMA = math.sqrt(8 * math.log(2))
_NORMALIZE_NAME = b"normalize=True"
_HARMONIC_NAME = b"healpy.smoothing"


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


def _ptrs(arrays):
    """A C array of the data pointers of arrays (None: NULL)."""
    return (c_void_p * len(arrays))(*[None if a is None else a.ctypes.data for a in arrays])


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
                      "sum: no band limit, no harmonic iterations, no healpy weight files; its "
                      "own quadrature is chosen by quadrature=)",
                      ArkcosWarning, stacklevel=3)

# -------------------------------------------------------------------- plan

_POLAR_CAPS = {0: "none", 1: "north", 2: "south", 3: "both"}


class Plan:
    """One kernel on one nside, planned once and applied to many maps.

    Plan(nside, fwhm=None, sigma=None, beam_window=None, tophat=None,
         cutoff=None, cutoff_rel=None, nest=False, pol=True, threads=0,
         precision="double", backend="auto", accuracy=0.0, min_weight=None,
         mask_mode="normalize", normalize=False, gaussian="harmonic",
         quadrature="polar")

    Arguments
      nside        the maps' HEALPix nside (any nside >= 1; a power of 2
                   with nest=True)
      fwhm, sigma  a Gaussian beam in radians (fwhm = sigma sqrt(8 ln 2));
                   0 plans the identity (the maps come back as they are,
                   missing data aside). As healpy means it (gaussian=
                   "harmonic", the default): B_l = exp(-l(l+1) sigma^2 / 2),
                   healpy.gauss_beam's window; gaussian="profile": the
                   Gaussian exp(-a^2 / 2 sigma^2) in the angle a (the
                   paper's, `arkcos smooth --fwhm-arcmin`'s default),
                   narrower by a relative sigma^2 / 12
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
      normalize    True: divide by the response to a constant map of 1,
                   A(m) / A(1), so that a constant map stays exactly
                   constant (kernels narrow against the pixels, as
                   `arkcos smooth --normalize`; not where mask_mode
                   "normalize" divided by A(w) already)
      quadrature   "polar" (default): "ring", and the integral within
                   ~26 rings of each pole taken against the map's
                   band-limited reconstruction there (Q and U as one
                   spin-2 field): a band-limited map's error next to the
                   poles falls from 1e-3 - 5e-3 to 3e-7 from 4 pixels per
                   FWHM (nside >= 64); kernels below 2 pixels per FWHM,
                   top-hats, nside < 32, and a cap with
                   missing or masked pixels near its pole as "ring";
                   "ring": each ring's pixels weighted for an accurate
                   integral near the poles and at |z| = 2/3 (a
                   band-limited map's error falls 350-7000 fold at
                   |z| = 2/3 from 4 pixels per FWHM, 2-6 fold next to
                   the poles), and below 8 pixels per FWHM ("ring" or
                   "polar") the result divided by the smoothing of those
                   weights, A(W m) / A(W), so that a constant map stays
                   constant (wider: within 2e-6 without it, 1e-7 with
                   "polar"); "point": pixel centres with equal weights,
                   A(m) (healpy's iter 0, the paper's); as `arkcos smooth
                   --quadrature`
      weights      the polar caps' direct weights (narrow beams: below 4
                   pixels per FWHM, and top-hats): "auto" (default)
                   tabulated when the plan is made where the plan with
                   them stays within two maps' bytes and 64 MB (nside 256
                   at 2.8 pixels per FWHM: 29 MB), else as "fly" (nside
                   1024 at 2.8 pixels); "tables": always tabulated (the
                   fastest calls, for many maps where memory allows);
                   "fly": computed in each
                   call, no tables (a plan about as light as a map, the
                   same maps to the last bit; nside 1024, 2.8 pixels per
                   FWHM, 2 threads: a plan of 455 MB, 0.20-0.28 s to make,
                   and calls of 0.22-0.29 s with tables; 88 MB, 0.01 s and
                   calls 1.5-2.5 times as long on the fly: 0.25-0.27 s
                   against 0.15-0.20 s on a 2-core AMD EPYC (Zen 3); on
                   older builds 0.35-0.41 s on a 2-core AMD machine and
                   0.60-0.73 s on a 2-core Xeon).
                   ARKCOS_DIRECT_WEIGHTS=tables|fly overrides

    Calling it: plan(map_in, out=None, mask=None, return_weight=False), see
    __call__. Making the Plan (FFTW's estimated plans; the direct tables of
    narrow beams where it keeps them) is part of a one-map call; its calls
    reuse all of it.

    Properties: nside, npix, nest, pol, precision, mask_mode, min_weight (as
    given), bound, backend, note, exactness, memory, weights, cutoff, polar
    (below) and stages().

    Threads: a Plan may be called from several threads; the calls on one
    plan run one at a time (each uses the plan's CPU threads). For maps
    in parallel, make one plan per thread. The GIL is released while the
    engine runs.
    """

    def __init__(self, nside, fwhm=None, sigma=None, beam_window=None, tophat=None,
                 cutoff=None, cutoff_rel=None, nest=False, pol=True, threads=0,
                 precision="double", backend="auto", accuracy=0.0, min_weight=None,
                 mask_mode="normalize", normalize=False, gaussian="harmonic", quadrature="polar",
                 weights="auto", _cache=True, _once=False):
        # the library's arkcos_smoother (arkcos.h) holds every rule: missing
        # data, the narrow-kernel rule, the default cut, Q and U, NESTED order;
        # here the arguments are translated and the results wrapped
        self._sm = None
        self._nwarn = 0
        nside = int(nside)
        if precision not in ("double", "single"):
            raise ValueError(f"precision: 'double' or 'single', got {precision!r}")
        if backend not in ("auto", "cpu", "gpu"):
            raise ValueError(f"backend: 'auto', 'cpu' or 'gpu', got {backend!r}")
        if int(threads) < 0:
            raise ValueError(f"threads must be >= 0 (0: all cores), got {threads}")
        if gaussian not in ("harmonic", "profile"):
            raise ValueError(f"gaussian: 'harmonic' (healpy's B_l) or 'profile' (a Gaussian in "
                             f"angle), got {gaussian!r}")
        if quadrature not in ("ring", "point", "polar"):
            raise ValueError(f"quadrature: 'ring', 'point' or 'polar', got {quadrature!r}")
        if mask_mode not in ("normalize", "zero"):
            raise ValueError(f"mask_mode: 'normalize' or 'zero', got {mask_mode!r}")
        if weights not in ("auto", "tables", "fly"):
            raise ValueError(f"weights: 'auto', 'tables' or 'fly', got {weights!r}")
        if isinstance(pol, str):
            if pol.upper() != "QU":
                raise ValueError(f"pol: True, False or 'QU' (2 maps: Stokes Q, U), got {pol!r}")
            pol = "QU"
        else:
            pol = bool(pol)
        given = [n for n, v in (("fwhm", fwhm), ("sigma", sigma), ("tophat", tophat),
                                ("beam_window", beam_window)) if v is not None]
        if len(given) != 1:
            raise ValueError("give exactly one kernel: fwhm, sigma, beam_window or tophat"
                             + (f" (got {', '.join(given)})" if given else ""))
        if cutoff is not None and cutoff_rel is not None:
            raise ValueError("give at most one of cutoff (radians) and cutoff_rel")
        spec = _lib.SmootherSpec()
        lib.arkcos_smoother_spec_default(byref(spec))
        spec.nside, spec.nested = nside, int(bool(nest))
        if beam_window is not None:
            if cutoff is not None:
                raise ValueError("beam_window: cut by level only (cutoff_rel), not by angle")
            bl = np.ascontiguousarray(beam_window, dtype=np.float64)
            if bl.ndim != 1 or bl.size < 2:
                raise ValueError("beam_window: a 1-d B_l, l = 0..lmax, with lmax >= 1 "
                                 f"(got shape {bl.shape})")
            spec.beam, spec.beam_lmax = bl.ctypes.data_as(_lib._dbl), bl.size - 1
        elif tophat is not None:
            if cutoff is not None or cutoff_rel is not None:
                raise ValueError("tophat: its radius is the cutoff; cutoff and cutoff_rel do not apply")
            spec.kernel.type = _lib.KERNEL_TOPHAT
            spec.kernel.cutoff = float(tophat)
        else:
            width = float(fwhm) if fwhm is not None else float(sigma) * _FWHM_PER_SIGMA
            if not width >= 0:
                raise ValueError(f"{given[0]} must be >= 0 radians, got "
                                 f"{fwhm if fwhm is not None else sigma}")
            spec.kernel.type = (_lib.KERNEL_GAUSSIAN_HARMONIC if gaussian == "harmonic"
                                else _lib.KERNEL_GAUSSIAN)
            spec.kernel.fwhm = width
            if cutoff is not None:
                spec.kernel.cutoff = float(cutoff)
        if cutoff_rel is not None:
            spec.kernel.cutoff_rel = float(cutoff_rel)
        o = spec.options
        o.precision = _lib.SINGLE if precision == "single" else _lib.DOUBLE
        o.backend = {"auto": _lib.BACKEND_AUTO, "cpu": _lib.BACKEND_CPU,
                     "gpu": _lib.BACKEND_GPU}[backend]
        o.threads = int(threads)
        o.accuracy = float(accuracy)
        # kernel spectra kept for the next maps where the plan stays light
        # (ARKCOS_CACHE_AUTO: within two maps' bytes and 64 MB)
        o.cache_kernel_spectra = 2 if _cache else 0
        # few executes per plan (smoothing() of up to five maps, as `arkcos
        # smooth`): the polar caps' direct weights computed in them, no tables
        o.direct_weights = (_lib.WEIGHTS_ON_THE_FLY if _once or weights == "fly" else
                            _lib.WEIGHTS_TABLES if weights == "tables" else _lib.WEIGHTS_AUTO)
        spec.mask_mode = _lib.MASK_ZERO if mask_mode == "zero" else _lib.MASK_NORMALIZE
        if min_weight is not None and not 0 <= min_weight <= 1:
            raise ValueError(f"min_weight must be in [0, 1], got {min_weight}")
        spec.min_weight = -1.0 if min_weight is None else float(min_weight)
        spec.normalize = int(bool(normalize))
        spec.quadrature = {"point": _lib.QUADRATURE_POINT, "polar": _lib.QUADRATURE_POLAR}.get(
            quadrature, _lib.QUADRATURE_RING)
        # how the messages name the remedies (borrowed by the engine: constants)
        spec.normalize_name, spec.harmonic_name = _NORMALIZE_NAME, _HARMONIC_NAME
        err = _lib.Error()
        sm = lib.arkcos_smoother_create(byref(spec), byref(err))
        if not sm:
            _check(err, "smoother")
        self._sm = sm
        self.nside, self.npix = nside, 12 * nside * nside
        self.nest, self.pol = bool(nest), pol
        self.min_weight = (float(min_weight) if min_weight is not None else
                           _MIN_WEIGHT_DEFAULT if mask_mode == "normalize" else 0.0)
        self.precision, self.mask_mode = precision, mask_mode
        self._lock = threading.Lock()
        self._identity = not lib.arkcos_smoother_kernel(sm, 0)
        self._warn()
        if not self._identity and lib.arkcos_smoother_prepare(sm, 0, byref(err)):
            _check(err, "plan")

    def _warn(self):
        """The smoother's narrow-kernel warnings not given yet, as ArkcosWarning."""
        n = lib.arkcos_smoother_nwarnings(self._sm)
        for i in range(self._nwarn, n):
            w = lib.arkcos_smoother_warning(self._sm, i).contents
            if w.code in (_lib.WARN_NARROW, _lib.WARN_SUBPIXEL):
                warnings.warn(w.msg.decode(errors="replace"), ArkcosWarning, stacklevel=4)
        self._nwarn = n

    def _plan(self, spin=0):
        return None if self._sm is None else lib.arkcos_smoother_plan(self._sm, spin)

    # ------------------------------------------------------------ facts
    @property
    def bound(self):
        """A-priori bound: max |out - direct sum| <= bound * max |input| (0
        for fwhm=0)."""
        return 0.0 if self._identity else lib.arkcos_plan_bound(self._plan())

    @property
    def backend(self):
        """Where the scalar maps run: "cpu" or "gpu" ("none" for fwhm=0).
        Q and U (spin 2) always run on the CPU."""
        if self._identity:
            return "none"
        return "gpu" if lib.arkcos_plan_backend(self._plan()) == _lib.BACKEND_GPU else "cpu"

    @property
    def note(self):
        """The engine's note on its choices (why backend="auto" chose the
        CPU, for instance); "" when there is nothing to say."""
        if self._identity:
            return "fwhm = 0: no smoothing, the maps are copied"
        return lib.arkcos_plan_note(self._plan()).decode()

    @property
    def exactness(self):
        """How the plan stands to the direct sum, in words."""
        if self._identity:
            return "exact (no smoothing)"
        return lib.arkcos_plan_exactness(self._plan()).decode()

    @property
    def memory(self):
        """Bytes the plan holds (tables, cached spectra, buffers)."""
        return 0 if self._identity else lib.arkcos_plan_memory(self._plan())

    @property
    def weights(self):
        """How the plan holds the polar caps' direct weights: "tables"
        (tabulated when it was made), "fly" (computed in each call; what
        weights="auto" chooses where the tables would make the plan heavier
        than two maps and 64 MB) or "none" (no ring pair summed directly:
        wide or smooth kernels, fwhm=0)."""
        w = 0 if self._identity else lib.arkcos_plan_direct_weights(self._plan())
        return {_lib.WEIGHTS_TABLES: "tables", _lib.WEIGHTS_ON_THE_FLY: "fly"}.get(w, "none")

    @property
    def polar(self):
        """Where the last call's maps took the polar caps' reconstruction
        (quadrature="polar"): a tuple of "both", "north", "south" or "none",
        one per map of that call (its Q and U alike); "none" where it took
        ring quadrature: another quadrature, nside below 32, a top-hat, a
        kernel below 2 pixels per FWHM, missing or masked pixels in a cap's
        disc. () before the first call."""
        return getattr(self, "_polar", ())

    @property
    def cutoff(self):
        """The kernel's truncation radius, radians (0 for fwhm=0)."""
        return 0.0 if self._identity else lib.arkcos_kernel_cutoff(lib.arkcos_smoother_kernel(self._sm, 0))

    def stages(self):
        """Stage times of the last scalar execute, seconds (Table 1's names:
        map_fft, kernel_eval, kernel_fft, reduction, map_ifft, h2d, d2h,
        other, total, direct)."""
        t = _lib.StageTimes()
        if not self._identity:
            lib.arkcos_plan_stages(self._plan(), byref(t))
        return {name: getattr(t, name) for name, _ in _lib.StageTimes._fields_}

    # ---------------------------------------------------------- running
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
        """mask= as a float64 weight map in the plan's order for the engine
        (which refuses values outside [0, 1] and takes UNSEEN, NaN and +-inf
        as 0; masked entries become NaN here), or None."""
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
        if mm is not None:
            w[mm] = np.nan
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
                got = (f"a {out.dtype.str} array of shape {out.shape}"
                       + ("" if out.flags.c_contiguous else ", not C-contiguous")
                       if isinstance(out, np.ndarray) else type(out).__name__)
                raise ValueError(f"out: a C-contiguous float64 array (native byte order) of shape {arr.shape}"
                                 + (" (and a float64 map)" if f32 else "") + f" is needed, got {got}")
            res = out.reshape(maps.shape)
        else:
            res = np.empty(maps.shape, dtype=np.float64)
        wres = np.empty(maps.shape, dtype=np.float64) if return_weight else None
        rows = []
        for i in range(maps.shape[0]):
            x = np.ascontiguousarray(maps[i], dtype=np.float64)  # no copy when it is one
            if inmask is not None and inmask[i].any():
                x = np.where(inmask[i], np.nan, x)   # masked entries are missing
            rows.append(x)
        m = _lib.SmootherMaps()
        m.nmaps = len(rows)
        ins, outs = _ptrs(rows), _ptrs(list(res))
        ws = _ptrs(list(wres)) if wres is not None else None
        m.in_, m.out = ins, outs
        m.weight = ws
        m.pol_q, m.pol_u = pair if pair is not None else (-1, -1)
        m.mask = None if mw is None else mw.ctypes.data
        err = _lib.Error()
        with self._lock:
            rc = lib.arkcos_smoother_execute(self._sm, byref(m), byref(err))
            self._warn()
            if not rc:
                self._polar = tuple(_POLAR_CAPS.get(lib.arkcos_smoother_last_polar(self._sm, i), "none")
                                    for i in range(len(rows)))
        if rc:
            _check(err, "smoothing")
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

    # ---------------------------------------------------------- cleanup
    def close(self):
        """Frees the plans (also done when the Plan is garbage-collected)."""
        sm, self._sm = getattr(self, "_sm", None), None
        if sm:
            lib.arkcos_smoother_destroy(sm)

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
              mask=None, mask_mode="normalize", return_weight=False, normalize=False,
              gaussian="harmonic", quadrature="polar"):
    """Smooths a HEALPix map, or I, Q, U maps, with a radial kernel.

    As healpy.smoothing: map_in is one map or a sequence of maps (numpy
    arrays or masked arrays, RING, or NESTED with nest=True); fwhm or sigma
    of a Gaussian beam in radians, as healpy means it (B_l = exp(-l(l+1)
    sigma^2 / 2); gaussian="profile": a Gaussian in angle instead), 0: no
    smoothing, a copy of the input; or a beam_window B_l. pol=True (the default) with three maps smooths I as a
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
    A(w m) on every pixel) and return_weight (also return A(w)), normalize
    (True: A(m) / A(1), a constant map stays constant), quadrature ("polar",
    the default: ring weights, A(W m) / A(W) below 8 pixels per FWHM, and
    the poles' integral against the map's band-limited reconstruction, Q
    and U's too; "ring": without the reconstruction; "point": pixel
    centres, healpy's iter 0). See
    Plan for each argument.

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
    Plan once: each smoothing() call plans again. Up to five maps (one I,
    Q, U among them), with or without a mask, are smoothed with the polar
    caps' direct weights computed where they are used, no tables (less
    memory, the same result to the last bit; the tables' build pays from
    about five maps; a mask's A(w) is smoothed with the map in one call,
    sharing them); six maps or more, and a Plan, keep tables where the
    plan with them stays within two maps' bytes and 64 MB (weights="auto";
    weights="tables" keeps them whatever they hold).
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
                mask_mode=mask_mode, normalize=normalize, gaussian=gaussian,
                quadrature=quadrature, _cache=False,
                _once=arr.ndim == 1 or arr.shape[0] < 6)
    try:
        return plan(map_in, mask=mask, return_weight=return_weight)
    finally:
        plan.close()
