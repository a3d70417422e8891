#!/usr/bin/env python3
"""polar_prototype.py -- what it would take to make the polar caps as accurate
as the belt: two numpy prototypes of the direct sum near the north pole, for a
band-limited map, against the exact result. Not the engine; reports, never
asserts (docs/EXACTNESS.md, "What limits the poles").

    python3 scripts/polar_prototype.py [--nside 64] [--ppf 4.4] [--spectrum white|red]
                                       [--method kriging,window] [--nugget 1e-10]

The map: white C_l (or red, 1 / (l + 1)^2) up to lmax = 2 nside, seed 1; the
kernel a Gaussian in angle of PPF pixels per FWHM cut at 1e-13, normalised to
unit integral, B_l its Legendre transform. The prior of both methods is the
band-limited white covariance C(a) = sum_{l <= 2 nside} (2l + 1) / (4 pi)
P_l(cos a), with a nugget of NUGGET times its variance.

- ring: the pixel sum with the ring weights' polar end corrections.
- kriging: each output of rings 1..14 as the best linear estimate of the
  kernel's integral from the pixels of rings 1..14 + the kernel's reach
  (one dense solve); also the weights' sums and absolute sums.
- window: the map reconstructed by the same kriging on the first T2 + MARGIN
  rings, the kernel integrated against it on a fine grid under a smooth
  window that is 1 up to ring T1 and 0 from ring T2 (--window T1,T2,MARGIN,
  default 4,20,6), and the pixel sum of the rest.
Prints the largest error on output rings (odd ones) relative to the exact
map's largest value.
"""
import argparse
import sys

import numpy as np
from numpy.polynomial.legendre import leggauss, legval

from bandlimited import gaussian_kernel, random_alm

try:
    import healpy as hp
except ImportError:
    sys.exit("polar_prototype.py: needs healpy (Debian's python3-healpy)")

END = [252769.0 / 1814400.0, -68119.0 / 1814400.0, 1469.0 / 201600.0, -2497.0 / 3628800.0]


def setup(nside, ppf, spectrum):
    npix, lmax = 12 * nside * nside, 2 * nside
    sig, cut, norm, bl = gaussian_kernel(nside, ppf, lmax)
    alm = random_alm(hp, lmax, 1, spectrum)
    m = hp.alm2map(alm, nside, lmax=lmax)
    exact = hp.alm2map(hp.almxfl(alm, bl), nside, lmax=lmax)

    def kern(v, p):
        ch2 = np.clip(2 - 2 * p @ v.T, 0, None)
        al = 2 * np.arcsin(np.sqrt(ch2) / 2)
        return np.where(al <= cut, np.exp(-al ** 2 / (2 * sig ** 2)), 0) / norm

    counts = [4 * min(r, nside, 4 * nside - r) for r in range(1, 4 * nside)]
    starts = np.concatenate([[0], np.cumsum(counts)])
    reach = int(np.ceil(cut / (0.8 / nside))) + 1
    cov = (2 * np.arange(lmax + 1) + 1) / (4 * np.pi)
    return dict(nside=nside, npix=npix, m=m, exact=exact, kern=kern, counts=counts, starts=starts,
                reach=reach, cov=cov, covk=cov * bl, vec=np.array(hp.pix2vec(nside, np.arange(npix))).T)


def upto(s, ring):
    return np.arange(s["starts"][ring])


def ring_pixels(s, r):
    return np.arange(s["starts"][r - 1], s["starts"][r])


def pixel_sum(s, outs, last_ring, weight):
    out = np.zeros(len(outs))
    for r in range(1, last_ring + 1):
        q = ring_pixels(s, r)
        out += weight(r) * (4 * np.pi / s["npix"]) * (s["kern"](s["vec"][q], s["vec"][outs]) @ s["m"][q])
    return out


def ring_weight(r):
    return 1 + (END[r - 1] if r <= 4 else 0)


def report(s, name, outs, est):
    err = np.abs(est - s["exact"][outs]) / np.abs(s["exact"]).max()
    rings = np.searchsorted(s["starts"], outs, side="right")
    last = rings.max()
    print("%-8s max %.2e  by ring: %s" % (name, err.max(), " ".join(
        "%d:%.1e" % (r, err[rings == r].max()) for r in range(1, last + 1, 2))))


def kriging(s, nugget):
    rout = 14
    outs, q = upto(s, rout), upto(s, rout + s["reach"])
    vq = s["vec"][q]
    cqq = legval(np.clip(vq @ vq.T, -1, 1), s["cov"])
    kpq = legval(np.clip(s["vec"][outs] @ vq.T, -1, 1), s["covk"])
    c = np.linalg.solve(cqq + nugget * cqq[0, 0] * np.eye(len(q)), kpq.T).T
    report(s, "ring", outs, pixel_sum(s, outs, rout + s["reach"] + 2, ring_weight))
    report(s, "kriging", outs, c @ s["m"][q])
    print("         %d pixels; weights' sums %.9f - %.9f, absolute sums at most %.3f" % (
        len(q), c.sum(1).min(), c.sum(1).max(), np.abs(c).sum(1).max()))


def window(s, nugget, t1=4.0, t2=20.0, margin=6):
    n = s["nside"]

    def chi(t):
        u = np.clip((t - t1) / (t2 - t1), 0, 1)
        f = lambda v: np.where(v > 0, np.exp(-1 / np.maximum(v, 1e-300)), 0)
        return f(1 - u) / (f(1 - u) + f(u))

    rout = int(t2) + s["reach"]
    outs = upto(s, rout)
    vo = s["vec"][outs]
    outer = pixel_sum(s, outs, rout + s["reach"] + 2, lambda r: 1 - chi(r))
    q = upto(s, int(np.ceil(t2)) + margin)
    vq = s["vec"][q]
    cqq = legval(np.clip(vq @ vq.T, -1, 1), s["cov"])
    coef = np.linalg.solve(cqq + nugget * cqq[0, 0] * np.eye(len(q)), s["m"][q])
    xt, wt = leggauss(int(4 * t2))
    tt, wt = 0.5 * t2 * (xt + 1), 0.5 * t2 * wt
    z, dz = 1 - tt ** 2 / (3 * n * n), 2 * tt / (3 * n * n)
    nphi = int(8 * t2) + 8
    inner = np.zeros(len(outs))
    for i in range(len(tt)):
        th, ph = np.arccos(z[i]), 2 * np.pi * (np.arange(nphi) + 0.5) / nphi
        v = np.array([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.full(nphi, z[i])]).T
        mt = legval(np.clip(v @ vq.T, -1, 1), s["cov"]) @ coef
        inner += wt[i] * dz[i] * chi(tt[i]) * (2 * np.pi / nphi) * (s["kern"](v, vo) @ mt)
    report(s, "ring", outs, pixel_sum(s, outs, rout + s["reach"] + 2, ring_weight))
    report(s, "window", outs, inner + outer)
    print("         %d pixels in the reconstruction" % len(q))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nside", type=int, default=64)
    ap.add_argument("--ppf", type=float, default=4.4)
    ap.add_argument("--spectrum", choices=["white", "red"], default="white")
    ap.add_argument("--method", default="kriging,window")
    ap.add_argument("--nugget", type=float, default=1e-10)
    ap.add_argument("--window", default="4,20,6",
                    help="window: T1,T2,MARGIN (1 up to ring T1, 0 from T2, reconstruction to T2 + MARGIN)")
    a = ap.parse_args()
    s = setup(a.nside, a.ppf, a.spectrum)
    for meth in a.method.split(","):
        if meth == "window":
            t1, t2, margin = a.window.split(",")
            window(s, a.nugget, float(t1), float(t2), int(margin))
        else:
            kriging(s, a.nugget)


if __name__ == "__main__":
    main()
