"""bandlimited.py -- what the quadrature scripts share (quadrature_error.py,
kink_weights.py, polar_prototype.py): a band-limited random map's a_lm and a
Gaussian kernel in angle with its Legendre transform."""
import numpy as np
from numpy.polynomial.legendre import leggauss


def random_alm(hp, lmax, seed, spectrum="white"):
    """a_lm of a real random field up to lmax: white C_l = 1, or red
    C_l = 1 / (l + 1)^2; numpy's default generator with SEED."""
    rng = np.random.default_rng(seed)
    nalm = hp.Alm.getsize(lmax)
    alm = (rng.standard_normal(nalm) + 1j * rng.standard_normal(nalm)) / np.sqrt(2)
    ll, mm = hp.Alm.getlm(lmax)
    alm[mm == 0] = alm[mm == 0].real * np.sqrt(2)
    if spectrum == "red":
        alm /= ll + 1.0
    return alm


def gaussian_kernel(nside, ppf, lmax):
    """A Gaussian in angle of PPF pixels per FWHM at NSIDE, cut at 1e-13 of
    its peak and normalised to unit integral: (sigma, cut, norm, B_l for
    l <= lmax), B_l by Gauss-Legendre quadrature of its Legendre transform;
    the kernel is exp(-a^2 / (2 sigma^2)) / norm for a <= cut."""
    npix = 12 * nside * nside
    sig = ppf * np.sqrt(4 * np.pi / npix) / np.sqrt(8 * np.log(2))
    cut = sig * np.sqrt(2 * np.log(1e13))
    x, wq = leggauss(600)
    a = 0.5 * cut * (x + 1)
    wa = 0.5 * cut * wq * np.sin(a) * np.exp(-a ** 2 / (2 * sig ** 2))
    norm = 2 * np.pi * wa.sum()
    bl = np.zeros(lmax + 1)
    p0, p1, ca = np.ones_like(a), np.cos(a), np.cos(a)
    for l in range(lmax + 1):
        if l == 0:
            p = p0
        elif l == 1:
            p = p1
        else:
            p = ((2 * l - 1) * ca * p1 - (l - 1) * p0) / l
            p0, p1 = p1, p
        bl[l] = 2 * np.pi * (wa * p).sum() / norm
    return sig, cut, norm, bl
