#!/usr/bin/env python3
"""cpu_host_check.py -- what a user waits for on a host that has ducc0 but
no healpy (a GPU host): ARKCoS's one call (plan + execute of
arkcos.smoothing, a new process, no FFTW wisdom) and its execute with a
reused plan (median of 3), beside ducc0's iter-0 smoothing at lmax 2 nside
and its iter-3 smoothing at lmax 3 nside - 1 (the transforms healpy's
default runs; healpy adds its own overhead), on the same threads, in one
run. Reports, never asserts.

    python3 scripts/cpu_host_check.py [--nsides 1024,2048,4096] [--threads 2]
                                      [--beams g1.5px,g2.8px,...] [--json FILE]
                                      [--backend cpu|auto|gpu] [--weights auto|tables|fly]

Beams: Gaussians as healpy means them (B_l = exp(-l(l+1) sigma^2 / 2), the
Python package's default), FWHM in pixels (g1.5px, g2.8px, g5px), degrees
(g1deg, g2deg) or arcminutes (g4.7am, not in the default list), and the
top-hat of radius 10 pixels (th10px). Each ARKCoS row runs in a new process
and also reports that process's peak resident memory (VmHWM) after the one
call (rss_one_call_MB: the map, the output and the plan) and at its end.
Maps: random, band-limited at lmax 2 nside (ducc0's synthesis). The Python
package is found through PYTHONPATH (python/) and its library through
ARKCOS_PYTHON_LIBRARY. Ratios are the other's time over ARKCoS's (> 1:
ARKCoS faster). --backend (default cpu) is the Python package's backend;
--weights (default auto) the reused Plan's direct weights (the one call
computes them in its execute, as smoothing() does).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import ducc0

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ducc0_smoothing  # noqa: E402

BEAMS = {"g1.5px": ("px", 1.5), "g2.8px": ("px", 2.8), "g5px": ("px", 5.0),
         "g1deg": ("deg", 1.0), "g2deg": ("deg", 2.0), "th10px": ("tophat_px", 10.0),
         "g4.7am": ("arcmin", 4.7)}
DEFAULT_BEAMS = "g1.5px,g2.8px,g5px,g1deg,g2deg,th10px"


def beam_kwargs(name, nside):
    kind, v = BEAMS[name]
    pix = math.sqrt(4 * math.pi / (12 * nside * nside))
    if kind == "px":
        return {"fwhm": v * pix}
    if kind == "deg":
        return {"fwhm": math.radians(v)}
    if kind == "arcmin":
        return {"fwhm": math.radians(v / 60)}
    return {"tophat": v * pix}


def random_map(nside, threads, seed=1):
    lmax = 2 * nside
    rng = np.random.default_rng(seed)
    nalm = (lmax + 1) * (lmax + 2) // 2
    alm = (rng.standard_normal(nalm) + 1j * rng.standard_normal(nalm)) / math.sqrt(2)
    alm *= 1.0 / (ducc0_smoothing.m_index(lmax) + 10.0)
    alm[: lmax + 1] = alm[: lmax + 1].real  # m = 0: real
    return ducc0.sht.experimental.synthesis(alm=alm.reshape(1, -1), lmax=lmax, spin=0,
                                            nthreads=threads, **ducc0_smoothing.geometry(nside))[0]


def ducc0_smooth(m, nside, lmax, iters, threads, fwhm=0.01):
    ell = np.arange(lmax + 1)
    bl = np.exp(-0.5 * ell * (ell + 1) * (fwhm / math.sqrt(8 * math.log(2))) ** 2)
    return ducc0_smoothing.smooth(m, bl, nside, lmax, iters, threads)


def timed(f, *a, **k):
    t = time.perf_counter()
    r = f(*a, **k)
    return r, time.perf_counter() - t


ONE_CALL = r"""
import json, sys, time, warnings
import numpy as np
import arkcos
warnings.simplefilter("ignore")
def vmhwm_mb():  # this process's peak RSS; ru_maxrss would carry the parent's across fork + exec
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024
m = np.load(sys.argv[1])
kw = json.loads(sys.argv[2])
t = time.perf_counter()
arkcos.smoothing(m, **kw)
one = time.perf_counter() - t
rss_one = vmhwm_mb()
with arkcos.Plan(int(round((m.size / 12) ** 0.5)), weights=sys.argv[3], **kw) as p:
    t = time.perf_counter()
    p(m)  # the plan's first execute (FFTW plans made here when lazy)
    first = time.perf_counter() - t
    ex = []
    for _ in range(3):
        t = time.perf_counter(); p(m); ex.append(time.perf_counter() - t)
    st = p.stages()
    print(json.dumps({"one_call_s": one, "first_execute_s": first, "execute_s": sorted(ex)[1],
                      "exactness": p.exactness, "memory": p.memory, "stages": st,
                      "rss_one_call_MB": rss_one,
                      "rss_MB": vmhwm_mb()}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nsides", default="1024,2048,4096")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--beams", default=DEFAULT_BEAMS)
    ap.add_argument("--repeats", type=int, default=3, help="ducc0 iter-0 timings, median (default 3)")
    ap.add_argument("--iter3-max-nside", type=int, default=2048,
                    help="time ducc0's iter 3 only up to this nside (it takes minutes at 4096 on 2 threads)")
    ap.add_argument("--backend", default="cpu", choices=("cpu", "auto", "gpu"))
    ap.add_argument("--weights", default="auto", choices=("auto", "tables", "fly"),
                    help="the reused Plan's direct weights (default auto)")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    names = a.beams.split(",")
    for n in names:
        if n not in BEAMS:
            sys.exit(f"cpu_host_check.py: --beams: unknown beam {n!r} (known: {', '.join(BEAMS)})")
    T = a.threads
    env = dict(os.environ, OMP_NUM_THREADS=str(T), ARKCOS_FFTW_WISDOM="none")
    print(f"# cpu_host_check: {os.cpu_count()} cores, {T} threads, ducc0 {ducc0.__version__}, "
          f"backend {a.backend}, reused plan's weights {a.weights}, no FFTW wisdom; times in seconds; ratio = ducc0's / ARKCoS's", flush=True)
    print(f"# {'nside':>5} {'beam':>7} | {'one_call':>8} {'execute':>8} | {'ducc0_i0':>8} {'ducc0_i3':>8} | "
          f"{'i0/one':>7} {'i3/one':>7} {'i0/exec':>7} | exactness", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for nside in [int(s) for s in a.nsides.split(",")]:
            m = random_map(nside, T)
            path = os.path.join(tmp, f"m{nside}.npy")
            np.save(path, m)
            d0 = statistics.median(timed(ducc0_smooth, m, nside, 2 * nside, 0, T)[1] for _ in range(a.repeats))
            d3 = timed(ducc0_smooth, m, nside, 3 * nside - 1, 3, T)[1] if nside <= a.iter3_max_nside else math.nan
            for name in names:
                kw = dict(beam_kwargs(name, nside), threads=T, backend=a.backend)
                r = subprocess.run([sys.executable, "-c", ONE_CALL, path, json.dumps(kw), a.weights], env=env,
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"  {nside:5d} {name:>7} | failed: {r.stderr.strip().splitlines()[-1:]}", flush=True)
                    continue
                o = json.loads(r.stdout.strip().splitlines()[-1])
                row = dict(nside=nside, beam=name, threads=T, weights=a.weights, ducc0_iter0_lmax2n_s=d0,
                           ducc0_iter3_lmax3n_s=d3, **o)
                rows.append(row)
                print(f"  {nside:5d} {name:>7} | {o['one_call_s']:8.3f} {o['execute_s']:8.3f} | {d0:8.3f} {d3:8.3f} | "
                      f"{d0 / o['one_call_s']:7.2f} {d3 / o['one_call_s']:7.2f} {d0 / o['execute_s']:7.2f} | "
                      f"{o['exactness'] or 'exact'}; peak {o['rss_one_call_MB']:.0f} MB, plan "
                      f"{o['memory'] / 1e6:.0f} MB", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"host_cores": os.cpu_count(), "threads": T, "ducc0": ducc0.__version__, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
