#!/usr/bin/env python3
"""support_ducc0.py -- the support sweep of `make bench` (tools/bench
--support-sweep, read from stdin) beside ducc0's iter-0 smoothing at lmax
2 nside on the same threads, whose time does not depend on the kernel.
Reports, never asserts.

    build/tools/bench --support-sweep 1024 | python3 scripts/support_ducc0.py --nside 1024 [--threads 2]

Prints the sweep as it came, then per support ARKCoS's execute (a reused
plan), ducc0's iter 0 (median of 3 calls) and their ratio, and whether
ARKCoS was slower than ducc0 anywhere up to the largest support.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onecall  # noqa: E402  (healpy, ducc0 and the iter-0 smoothing)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nside", type=int, required=True)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    rows = []
    for line in sys.stdin:
        sys.stdout.write(line)
        f = line.split()
        if len(f) >= 4 and not line.startswith("#"):
            try:
                rows.append((float(f[0]), float(f[3])))
            except ValueError:
                pass
    if onecall.ducc0 is None:
        print("# ducc0 is not importable: no ducc0 column")
        return
    lmax = 2 * a.nside
    m = np.random.default_rng(7).standard_normal(12 * a.nside * a.nside)
    bl = np.ones(lmax + 1)
    onecall.ducc0_iter0(m, bl, a.nside, lmax, a.threads)  # first call: ducc0's own set-up
    ts = []
    for _ in range(3):
        t0 = time.perf_counter()
        onecall.ducc0_iter0(m, bl, a.nside, lmax, a.threads)
        ts.append(time.perf_counter() - t0)
    d = statistics.median(ts)
    print(f"# ducc0 {onecall.ducc0.__version__} iter 0, lmax {lmax}, {a.threads} threads: {d:.4f} s (median of 3)")
    print(f"# {'support':>8} {'arkcos_s':>10} {'ducc0_s':>10} {'ducc0/arkcos':>13}")
    for s, t in rows:
        print(f"  {s:8.2f} {t:10.4f} {d:10.4f} {d / t:13.2f}")
    slow = [s for s, t in rows if t > d]
    print("# ARKCoS's execute was " + (f"slower than ducc0's iter 0 at supports {', '.join(f'{s:g}' for s in slow)} deg"
                                        if slow else "faster than ducc0's iter 0 at every support measured"))


if __name__ == "__main__":
    main()
