#!/usr/bin/env python3
"""bench.py -- arkcos from Python against healpy.smoothing (and ducc0 when it
is importable), in one run, and the cost of calling the engine through the
package.

    python python/bench.py [--nside 1024] [--ppf 2.8] [--threads 0] [--repeats 5]

Prints, for a Gaussian of --ppf pixels per FWHM cut at 1e-5 of its peak:
  - arkcos: plan time, and per map the wall time of plan(x) (median over
    repeats) against the engine's own execute time (arkcos_plan_stages'
    total, measured inside the C call): the difference is what Python
    costs (argument checks, the missing-pixel scan, ctypes); with and
    without a preallocated output;
  - arkcos.smoothing (plan + one map), healpy.smoothing (iter=3,
    lmax = 3 nside - 1) and ducc0 (pseudo_analysis with 3 iterations,
    B_l, synthesis) once each on one white-noise map, and their relative
    rms against each other.
A benchmark reports, it does not assert.
"""
import argparse
import math
import os
import statistics
import sys
import time
import warnings

import numpy as np

# the installed package, not the source folder this script sits in
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
import arkcos  # noqa: E402


def timed(f, *args, **kw):
    t0 = time.perf_counter()
    r = f(*args, **kw)
    return r, time.perf_counter() - t0


def rel_rms(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2) / np.mean(b ** 2)))


def ducc0_smoothing(m, fwhm, nside, lmax, threads):
    """healpy's smoothing (3 Jacobi iterations, Gaussian B_l) with ducc0."""
    import ducc0
    base = ducc0.healpix.Healpix_Base(nside, "RING")
    geom = base.sht_info()
    nthreads = threads or os.cpu_count()
    mp = m.reshape(1, -1)
    # the pseudo-inverse analysis plays the part of healpy's iterations
    alm = ducc0.sht.experimental.pseudo_analysis(map=mp, lmax=lmax, spin=0, nthreads=nthreads,
                                                 maxiter=3, epsilon=1e-10, **geom)[0]
    ell = np.arange(lmax + 1)
    bl = np.exp(-0.5 * ell * (ell + 1) * (fwhm / math.sqrt(8 * math.log(2))) ** 2)
    mi = np.concatenate([np.arange(m_, lmax + 1) for m_ in range(lmax + 1)])
    alm = alm * bl[mi]
    return ducc0.sht.experimental.synthesis(alm=alm, lmax=lmax, spin=0, nthreads=nthreads,
                                            **geom)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nside", type=int, default=1024)
    ap.add_argument("--ppf", type=float, default=2.8, help="pixels per FWHM")
    ap.add_argument("--threads", type=int, default=0, help="0: all cores")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-harmonic", action="store_true", help="skip healpy and ducc0")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    nside, npix = a.nside, 12 * a.nside ** 2
    fwhm = a.ppf * math.sqrt(4 * math.pi / npix)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(npix)
    print(f"nside {nside}, Gaussian FWHM {math.degrees(fwhm) * 60:.3g} arcmin "
          f"({a.ppf} pixels), cut at 1e-5; threads {a.threads or os.cpu_count()}; "
          f"library {arkcos._lib.LIBRARY_PATH}")

    plan, t_plan = timed(arkcos.Plan, nside, fwhm=fwhm, threads=a.threads)
    print(f"arkcos plan: {t_plan:.3f} s, {plan.memory / 1e6:.0f} MB, backend {plan.backend}")
    plan(x)  # warm-up
    out = np.empty(npix)
    for label, call in (("plan(x, out=o)", lambda: plan(x, out=out)),
                        ("plan(x)       ", lambda: plan(x))):
        walls, engine = [], []
        for _ in range(a.repeats):
            _, w = timed(call)
            walls.append(w)
            engine.append(plan.stages()["total"])
        over = [w - e for w, e in zip(walls, engine)]
        med_e = statistics.median(engine)
        print(f"arkcos {label}: {statistics.median(walls):.4f} s per map, engine execute "
              f"{med_e:.4f} s; Python's share {statistics.median(over) * 1e3:.2f} ms "
              f"= {100 * statistics.median(over) / med_e:.2f} % (median of {a.repeats})")
    res = {}
    res["arkcos"], t = timed(arkcos.smoothing, x, fwhm=fwhm, threads=a.threads)
    print(f"arkcos.smoothing (plan + map): {t:.3f} s")
    if a.no_harmonic:
        return
    lmax = 3 * nside - 1
    try:
        import healpy as hp
        res["healpy"], t = timed(hp.smoothing, x, fwhm=fwhm, lmax=lmax, iter=3)
        print(f"healpy.smoothing (iter 3, lmax {lmax}): {t:.3f} s")
    except ImportError:
        print("healpy: not importable")
    try:
        import ducc0  # noqa: F401
        res["ducc0"], t = timed(ducc0_smoothing, x, fwhm, nside, lmax, a.threads)
        print(f"ducc0 (pseudo_analysis 3 iterations + synthesis, lmax {lmax}): {t:.3f} s")
    except ImportError:
        print("ducc0: not importable")
    except Exception as e:  # noqa: BLE001 -- a benchmark goes on
        print(f"ducc0: failed: {e}")
    print("(a white-noise map is not band-limited: the harmonic methods alias it, so these "
          "differences exceed the quadrature level of band-limited maps)")
    names = sorted(res)
    for i, p in enumerate(names):
        for q in names[i + 1:]:
            print(f"relative rms {p} - {q}: {rel_rms(res[p], res[q]):.3e}")


if __name__ == "__main__":
    sys.exit(main())
