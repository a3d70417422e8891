#!/usr/bin/env python3
"""kink_weights.py -- derives the 17 ring-weight corrections at |z| = 2/3 that
arkcos_healpix_ring_weights (arkcos/geometry.c) carries, and checks them on
maps and nsides the fit did not see. Reports, never asserts.

    python3 scripts/kink_weights.py [--validate 128,256]

The fit: at nside 64, band-limited random maps (white C_l, lmax = 2 nside,
seed 1) smoothed by Gaussians in angle of 4, 6, 8, 12 and 16 pixels per FWHM
(cut at 1e-13, normalised to unit integral), output rings nside - 16 ..
nside + 16. The pixel sum with the ring weights (1, and 1 - 1 / (12 nside) at
ring nside) is linear in the weights of rings nside - 8 .. nside + 8; their
corrections d_k / nside are the least-squares solution that brings that sum
to the exact result alm2map(B_l a_lm), with the constant map's smoothing
(exact: 1) as further rows and a ridge of 1e-4 on d. B_l is the kernel's
Legendre transform by Gauss-Legendre quadrature. The same d serves every
nside: the kink's geometry in ring units does not depend on it.

With --validate, the same comparison for other maps (seed 2) at nside 64 and
for the nsides given (seed 3): the largest error relative to the exact map's
largest value, before and after.
"""
import argparse
import sys

import numpy as np

from bandlimited import gaussian_kernel, random_alm

try:
    import healpy as hp
except ImportError:
    sys.exit("kink_weights.py: needs healpy (Debian's python3-healpy)")

KK = 8          # corrections on rings nside - KK .. nside + KK
OUT = 16        # output rings nside - OUT .. nside + OUT
RIDGE = 1e-4


def case(nside, ppf, seed):
    """Columns of the pixel sum by input ring (map and constant), the exact
    result, and which input rings the columns are."""
    npix, lmax = 12 * nside * nside, 2 * nside
    sig, cut, norm, bl = gaussian_kernel(nside, ppf, lmax)
    alm = random_alm(hp, lmax, seed)
    m = hp.alm2map(alm, nside, lmax=lmax)
    exact = hp.alm2map(hp.almxfl(alm, bl), nside, lmax=lmax)
    counts = [4 * min(r, nside, 4 * nside - r) for r in range(1, 4 * nside)]
    starts = np.concatenate([[0], np.cumsum(counts)])
    reach = int(np.ceil(cut / (0.6 / nside))) + 2
    outs = range(nside - OUT, nside + OUT + 1)
    opix = np.concatenate([np.arange(starts[r - 1], starts[r - 1] + counts[r - 1]) for r in outs])
    rings = list(range(max(1, nside - OUT - reach), min(4 * nside - 1, nside + OUT + reach) + 1))
    vp = np.array(hp.pix2vec(nside, opix)).T
    h2 = (2 * np.sin(cut / 2)) ** 2
    S = np.zeros((len(opix), len(rings)))
    C = np.zeros_like(S)
    for i, r in enumerate(rings):
        q = np.arange(starts[r - 1], starts[r - 1] + counts[r - 1])
        ch2 = np.clip(2 - 2 * vp @ np.array(hp.pix2vec(nside, q)), 0, None)
        al = 2 * np.arcsin(np.sqrt(ch2) / 2)
        k = np.where(ch2 <= h2, np.exp(-al ** 2 / (2 * sig ** 2)), 0) / norm * (4 * np.pi / npix)
        S[:, i] = k @ m[q]
        C[:, i] = k.sum(1)
    rings = np.array(rings)
    w = np.ones(len(rings))
    w[rings == nside] -= 1 / (12 * nside)
    cols = [int(np.where(rings == nside + k)[0][0]) for k in range(-KK, KK + 1)]
    return S, C, exact[opix], np.abs(exact).max(), w, cols


def fit(nside=64, ppfs=(4, 6, 8, 12, 16), seed=1):
    rows, rhs = [], []
    for ppf in ppfs:
        S, C, ex, mx, w, cols = case(nside, ppf, seed)
        rows += [S[:, cols] / nside / mx, C[:, cols] / nside]
        rhs += [(ex - S @ w) / mx, 1 - C @ w]
    rows.append(RIDGE * np.eye(2 * KK + 1))
    rhs.append(np.zeros(2 * KK + 1))
    d, *_ = np.linalg.lstsq(np.vstack(rows), np.concatenate(rhs), rcond=None)
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--validate", default="", help="nsides to check besides 64, e.g. 128,256")
    a = ap.parse_args()
    d = fit()
    print("corrections d_k (ring nside + k gets d_k / nside), k = -%d .. %d:" % (KK, KK))
    print(",\n".join(", ".join("%.6e" % v for v in d[i:i + 6]) for i in range(0, len(d), 6)))
    if not a.validate:
        return
    checks = [(64, ppf, 2) for ppf in (4, 6, 8, 12, 16)]
    checks += [(int(n), ppf, 3) for n in a.validate.split(",") if n for ppf in (4, 8)]
    print("%-6s %-5s %-5s %-24s %-24s" % ("nside", "px", "seed", "map: before -> after", "constant: before -> after"))
    for nside, ppf, seed in checks:
        S, C, ex, mx, w, cols = case(nside, ppf, seed)
        w2 = w.copy()
        w2[cols] += d / nside
        print("%-6d %-5g %-5d %.2e -> %.2e       %.2e -> %.2e" % (
            nside, ppf, seed, np.abs(S @ w - ex).max() / mx, np.abs(S @ w2 - ex).max() / mx,
            np.abs(C @ w - 1).max(), np.abs(C @ w2 - 1).max()))


if __name__ == "__main__":
    main()
