"""ducc0_smoothing.py -- healpy.smoothing's transforms through ducc0, for
the benchmarks that stand ARKCoS beside them (onecall.py,
support_ducc0.py, cpu_host_check.py): analysis by adjoint synthesis times
4 pi / npix plus `iters` Jacobi iterations (healpy's map2alm iter), B_l,
synthesis, at lmax. Imports ducc0 (an ImportError when it is absent)."""
import math

import numpy as np
import ducc0


def geometry(nside):
    """ducc0's description of the HEALPix RING rings of nside"""
    return ducc0.healpix.Healpix_Base(nside, "RING").sht_info()


def m_index(lmax):
    """m of each a_lm in ducc0's (healpy's) order"""
    return np.concatenate([np.arange(k, lmax + 1) for k in range(lmax + 1)])


def smooth(m, bl, nside, lmax, iters, threads):
    """The map m smoothed by the window bl (bl[l], l <= lmax)"""
    geom = geometry(nside)
    alm = ducc0.sht.experimental.adjoint_synthesis(map=m.reshape(1, -1), lmax=lmax, spin=0,
                                                   nthreads=threads, **geom)
    alm *= 4 * math.pi / m.size
    for _ in range(iters):
        back = ducc0.sht.experimental.synthesis(alm=alm, lmax=lmax, spin=0, nthreads=threads, **geom)
        alm += 4 * math.pi / m.size * ducc0.sht.experimental.adjoint_synthesis(
            map=m.reshape(1, -1) - back, lmax=lmax, spin=0, nthreads=threads, **geom)
    alm *= bl[m_index(lmax)]
    return ducc0.sht.experimental.synthesis(alm=alm, lmax=lmax, spin=0, nthreads=threads, **geom)[0]
