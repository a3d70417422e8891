#!/usr/bin/env python3
"""onecall.py -- what a user waits for: one call of `arkcos smooth` (plan +
execute, a new process) beside healpy.smoothing and ducc0, in one run, on
the same threads. Reports, never asserts.

    python3 scripts/onecall.py [--arkcos build/arkcos] [--nsides 256,512,1024]
                               [--threads 2] [--cases all] [--json FILE]
                               [--arkcos-args '--quadrature point']

Per case (beam, nside):
  - arkcos: `arkcos smooth IN OUT -v` in a fresh process; its summary line
    gives the plan time (and of it FFTW's planning, the polar caps' direct
    tables and their polar reconstruction) and the execute time; "one call"
    is plan + execute (the file read and write excluded, as for the others);
    peak RSS of the process
    (tests/peak_rss.py), the map itself included. FFTW plans are estimated (no
    wisdom is read or written) unless ARKCOS_FFTW_PLANNER=measure is set.
  - healpy.smoothing(iter=0, lmax=2 nside) and the default (iter=3,
    lmax=3 nside - 1), timed in this process (no planning to amortise);
  - ducc0 (when importable): the same iter-0 smoothing, adjoint synthesis
    times 4 pi / npix, B_l, synthesis, lmax = 2 nside.
Ratios are the others' time over arkcos's one call (> 1: arkcos faster).
"File to file" adds the map's read and write (FITS, float64): arkcos's
read + plan + execute + write from its summary line (the output a new file,
flushed to disk as arkcos always does), beside healpy's read_map +
smoothing(iter=0) + write_map timed in this process (interpreter and imports
excluded from both).
"""
import argparse
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

warnings.simplefilter("ignore")
PEAK_RSS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "peak_rss.py")
try:
    import healpy as hp
except ImportError:  # pragma: no cover - the bench needs it
    sys.exit("onecall.py: healpy is needed (python3-healpy)")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import ducc0
    import ducc0_smoothing
except ImportError:
    ducc0 = None

# (name, kind, value, pixels-per-FWHM scaled?) kind: gauss_px (FWHM in
# pixels), gauss_deg (FWHM in degrees), tophat_deg (radius), iqu_px
CASES = {
    "g1.5px": ("gauss_px", 1.5), "g2.8px": ("gauss_px", 2.8), "g5px": ("gauss_px", 5.0),
    "g1deg": ("gauss_deg", 1.0), "g2deg": ("gauss_deg", 2.0),
    "th10px": ("tophat_px", 10.0), "th2deg": ("tophat_deg", 2.0),
    "iqu2.8px": ("iqu_px", 2.8), "iqu1deg": ("iqu_deg", 1.0),
}


def pixel_rad(nside):
    return math.sqrt(4 * math.pi / (12 * nside * nside))


def timed(f, *a, **kw):
    t0 = time.perf_counter()
    r = f(*a, **kw)
    return r, time.perf_counter() - t0


def run_arkcos(exe, path, out, args, threads):
    # through tests/peak_rss.py, a small process of its own: the peak RSS
    # of a child forked from this one would count this process's maps
    rssfile = out + ".rss"
    cmd = [sys.executable, PEAK_RSS, rssfile, exe, "smooth", path, out, "--force", "-v",
           "--threads", str(threads)] + args
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    text = r.stdout + r.stderr
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]}
    with open(rssfile) as f:
        rss_kb = int(f.read().split()[0])
    res = {"wall": wall, "execute": 0.0, "plan": 0.0, "fftw": 0.0, "tables": 0.0, "polar": 0.0, "read": 0.0, "write": 0.0}
    for line in text.splitlines():
        if not line.startswith("smooth:"):
            continue
        m = re.search(r" time=([0-9.eE+-]+)s", line)
        res["execute"] += float(m.group(1)) if m else 0
        m = re.search(r" plan=([0-9.eE+-]+)s \(fftw ([0-9.eE+-]+) tables ([0-9.eE+-]+)(?: polar ([0-9.eE+-]+))?\)",
                      line)
        if m:
            res["plan"] += float(m.group(1))
            res["fftw"] += float(m.group(2))
            res["tables"] += float(m.group(3))
            res["polar"] += float(m.group(4) or 0)
        m = re.search(r"cutoff=([0-9.eE+-]+)deg \(K/K0=([0-9.eE+-]+)\)", line)
        if m:
            res["cutoff_deg"], res["cut_level"] = float(m.group(1)), float(m.group(2))
        m = re.search(r" read=([0-9.eE+-]+)s write=([0-9.eE+-]+)s", line)
        if m:
            res["read"] += float(m.group(1))
            res["write"] += float(m.group(2))
    m = re.search(r"bound: ([0-9.eE+-]+|inf)", text)
    res["bound"] = m.group(1) if m else "none"
    res["rss_mb"] = rss_kb / 1024
    res["one_call"] = res["plan"] + res["execute"]
    res["file_to_file"] = res["read"] + res["one_call"] + res["write"]
    return res


def tophat_bl(radius, lmax):
    theta = np.linspace(0, radius, 4000)
    return hp.beam2bl(np.ones_like(theta), theta, lmax) / (2 * math.pi * (1 - math.cos(radius)))


def ducc0_iter0(m, bl, nside, lmax, threads):
    return ducc0_smoothing.smooth(m, bl, nside, lmax, 0, threads)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arkcos", default=os.path.join(os.environ.get("BUILD", "build"), "arkcos"))
    ap.add_argument("--nsides", default="256,512,1024")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cases", default="all", help="comma-separated of " + ",".join(CASES))
    ap.add_argument("--json", default="", help="also write the rows here")
    ap.add_argument("--no-default", action="store_true", help="skip healpy's iter-3 default (slow)")
    ap.add_argument("--arkcos-args", default="", help="more options of arkcos smooth, e.g. '--quadrature point'")
    a = ap.parse_args()
    names = list(CASES) if a.cases == "all" else a.cases.split(",")
    for n in names:
        if n not in CASES:
            sys.exit(f"onecall.py: --cases: unknown case {n!r} (known: {', '.join(CASES)})")
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    T = a.threads
    print(f"one call, {T} threads, {platform.node()} ({platform.processor() or platform.machine()}); "
          f"healpy {hp.__version__}, ducc0 {ducc0.__version__ if ducc0 else 'absent'}; FFTW planner "
          f"{os.environ.get('ARKCOS_FFTW_PLANNER', 'estimate')} (no wisdom)", flush=True)
    hdr = ("| case | nside | px/FWHM | cut | arkcos one call (plan: fftw, tables, polar) | execute | RSS MB | "
           "healpy iter 0 | ratio | ducc0 iter 0 | ratio | healpy default | ratio | "
           "file to file: arkcos | healpy iter 0 | ratio |")
    print(hdr)
    print("|" + "---|" * 16)
    rows = []
    with tempfile.TemporaryDirectory(prefix="arkcos-onecall-") as tmp:
        for nside in [int(x) for x in a.nsides.split(",")]:
            rng = np.random.default_rng(nside)
            lmax0 = 2 * nside
            cl = 1.0 / (np.arange(3 * nside) + 10.0) ** 2
            m = hp.synfast(cl, nside, lmax=lmax0)
            qu = [hp.synfast(cl, nside, lmax=lmax0) for _ in range(2)]
            path = os.path.join(tmp, f"m{nside}.fits")
            hp.write_map(path, m, overwrite=True, dtype=np.float64)
            piqu = os.path.join(tmp, f"iqu{nside}.fits")
            hp.write_map(piqu, [m] + qu, overwrite=True, dtype=np.float64)
            pix = pixel_rad(nside)
            for name in names:
                kind, val = CASES[name]
                pol = kind.startswith("iqu")
                if kind in ("gauss_px", "iqu_px"):
                    fwhm = val * pix
                elif kind in ("gauss_deg", "iqu_deg"):
                    fwhm = math.radians(val)
                else:
                    fwhm = 0
                if fwhm:
                    args = ["--fwhm-arcmin", "%.10g" % (math.degrees(fwhm) * 60)]
                    beam = dict(fwhm=fwhm)
                    bl = hp.gauss_beam(fwhm, lmax=3 * nside - 1)
                    ppf = fwhm / pix
                else:
                    radius = val * pix if kind == "tophat_px" else math.radians(val)
                    args = ["--tophat-deg", "%.10g" % math.degrees(radius)]
                    bl = tophat_bl(radius, 3 * nside - 1)
                    beam = dict(beam_window=bl)
                    ppf = float("nan")
                out = os.path.join(tmp, "out.fits")
                if os.path.exists(out):
                    os.unlink(out)  # a new file, as for healpy's write below
                r = run_arkcos(a.arkcos, piqu if pol else path, out, args + a.arkcos_args.split(), T)
                inp = [m] + qu if pol else m
                sm, t_h0 = timed(hp.smoothing, inp, iter=0, lmax=lmax0, pol=pol, **beam)
                _, t_hr = timed(hp.read_map, piqu if pol else path, field=(0, 1, 2) if pol else 0)
                hout = os.path.join(tmp, "healpy_out.fits")
                _, t_hw = timed(hp.write_map, hout, sm, dtype=np.float64, overwrite=True)
                os.unlink(hout)
                t_hf = t_hr + t_h0 + t_hw
                t_d0 = None
                if ducc0 and not pol:
                    _, t_d0 = timed(ducc0_iter0, m, bl[:lmax0 + 1], nside, lmax0, T)
                t_hd = None
                if not a.no_default:
                    _, t_hd = timed(hp.smoothing, inp, pol=pol, **beam)
                row = dict(case=name, nside=nside, pixels_per_fwhm=ppf, threads=T, arkcos=r,
                           healpy_iter0=t_h0, ducc0_iter0=t_d0, healpy_default=t_hd,
                           healpy_read=t_hr, healpy_write=t_hw, healpy_file_to_file=t_hf)
                rows.append(row)
                oc = r.get("one_call")

                def rat(t):
                    return "-" if t is None or not oc else f"x{t / oc:.2f}"

                def sec(t):
                    return "-" if t is None else f"{t:.3g} s"
                if "error" in r:
                    ark = f"error: {r['error'][:60]}"
                    exe = rss = cut = "-"
                else:
                    ark = f"{oc:.3g} s ({r['plan']:.3g}: {r['fftw']:.2g}, {r['tables']:.2g}, {r['polar']:.2g})"
                    exe, rss, cut = f"{r['execute']:.3g} s", f"{r['rss_mb']:.0f}", f"{r.get('cut_level', 0):.0e}"
                ff = r.get("file_to_file")
                fr = "-" if not ff else f"x{t_hf / ff:.2f}"
                print(f"| {name} | {nside} | {ppf:.3g} | {cut} | {ark} | {exe} | {rss} | {sec(t_h0)} | "
                      f"{rat(t_h0)} | {sec(t_d0)} | {rat(t_d0)} | {sec(t_hd)} | {rat(t_hd)} | {sec(ff)} | "
                      f"{sec(t_hf)} | {fr} |", flush=True)
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump({"host": platform.node(), "threads": T, "rows": rows}, f, indent=1)
        os.replace(a.json + ".tmp", a.json)


if __name__ == "__main__":
    main()
