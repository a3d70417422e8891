#!/usr/bin/env python3
"""quadrature_error.py -- where the pixel sum's quadrature errs: `arkcos smooth`
of a band-limited map against the exact harmonic result, by region. Reports,
never asserts.

    python3 scripts/quadrature_error.py [--arkcos build/arkcos]
                                        [--cases 64:240,128:120,32:600]
                                        [--quadrature ring,point,polar] [--healpy]
                                        [--spectrum white|red] [--seed N]

Per case NSIDE:FWHM_ARCMIN: a random map with a white spectrum (or, with
--spectrum red, C_l = 1 / (l + 1)^2) up to lmax = 2 nside (fixed seed), smoothed by `arkcos smooth --gaussian harmonic
--fwhm-arcmin FWHM` (healpy's Gaussian beam), against
alm2map(B_l a_lm) with healpy's gauss_beam. The error is relative to the
exact map's largest value, maxima per region:
  - belt: |z| <= 2/3 without the kink band;
  - kink: the 17 rings around each |z| = 2/3 (rings nside - 8 .. nside + 8);
  - mid cap: |z| > 2/3 from ring 16 of the cap to the kink band;
  - pole: the first 15 rings of each cap.
With --healpy, healpy.smoothing(iter=3) (its default, lmax = 3 nside - 1)
is measured the same way beside it.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

from bandlimited import random_alm

try:
    import healpy as hp
except ImportError:
    sys.exit("quadrature_error.py: needs healpy (Debian's python3-healpy)")


def ring_of_pixels(nside):
    """1-based HEALPix ring of every RING-ordered pixel."""
    counts = [4 * min(r, nside, 4 * nside - r) for r in range(1, 4 * nside)]
    return np.repeat(np.arange(1, 4 * nside), counts)


def regions(nside):
    r = ring_of_pixels(nside)
    rn = np.minimum(r, 4 * nside - r)  # ring counted from the nearer pole
    kink = np.abs(rn - nside) <= 8
    belt = (rn >= nside) & ~kink
    pole = rn <= 15
    mid = (rn < nside) & ~kink & ~pole
    return {"belt": belt, "kink": kink, "mid cap": mid, "pole": pole}


def errors(out, exact, nside):
    d = np.abs(out - exact) / np.abs(exact).max()
    return {k: (float(d[m].max()) if m.any() else float("nan")) for k, m in regions(nside).items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arkcos", default=os.path.join(os.path.dirname(__file__), "..", "build", "arkcos"))
    ap.add_argument("--cases", default="64:240,128:120,32:600")
    ap.add_argument("--quadrature", default="ring,point,polar")
    ap.add_argument("--healpy", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--spectrum", choices=["white", "red"], default="white",
                    help="white: C_l = 1; red: C_l = 1 / (l + 1)^2")
    a = ap.parse_args()
    print("%-18s %-10s %9s %9s %9s %9s" % ("case", "method", "belt", "kink", "mid cap", "pole"))
    for case in a.cases.split(","):
        nside, fwhm = case.split(":")
        nside, fwhm = int(nside), float(fwhm)
        lmax = 2 * nside
        alm = random_alm(hp, lmax, a.seed, a.spectrum)
        m = hp.alm2map(alm, nside, lmax=lmax)
        bl = hp.gauss_beam(np.radians(fwhm / 60), lmax=lmax)
        exact = hp.alm2map(hp.almxfl(alm, bl), nside, lmax=lmax)
        label = "%d, %g'" % (nside, fwhm)
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "in.fits")
            hp.write_map(src, m, dtype=np.float64, overwrite=True)
            for q in a.quadrature.split(","):
                dst = os.path.join(tmp, "out_%s.fits" % q)
                r = subprocess.run([a.arkcos, "smooth", src, dst, "--fwhm-arcmin", str(fwhm), "--gaussian",
                                    "harmonic", "--quadrature", q], capture_output=True, text=True)
                if r.returncode:
                    sys.exit("quadrature_error.py: arkcos smooth failed (exit %d): %s" % (r.returncode, r.stderr))
                e = errors(hp.read_map(dst), exact, nside)
                print("%-18s %-10s %9.2e %9.2e %9.2e %9.2e" % (label, q, e["belt"], e["kink"], e["mid cap"],
                                                             e["pole"]))
        if a.healpy:
            e = errors(hp.smoothing(m, fwhm=np.radians(fwhm / 60), iter=3), exact, nside)
            print("%-18s %-10s %9.2e %9.2e %9.2e %9.2e" % (label, "healpy it3", e["belt"], e["kink"],
                                                         e["mid cap"], e["pole"]))


if __name__ == "__main__":
    main()
