#!/usr/bin/env python3
"""test_healpy.py -- healpy as a real client of `arkcos smooth`.

healpy writes the inputs (RING and NESTED, float32 and float64, a
non-power-of-two nside, a 3-column I,Q,U map, UNSEEN pixels, a partial-sky
map), `arkcos smooth` smooths them, healpy reads the outputs back. Checks
that the FITS layer moves no pixel and changes no header a client relies on,
and that the smoothing agrees with healpy.smoothing at the level measured.

Run with /usr/bin/python3 (Debian's python3-healpy). Environment: ARKCOS
(default build/arkcos). Last line: "TESTS <passed> <failed>".
"""
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

warnings.simplefilter("ignore")  # healpy's dtype chatter on write/read
import healpy as hp  # noqa: E402
from astropy.io import fits  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ARKCOS = os.environ.get("ARKCOS", os.path.join(HERE, "..", "build", "arkcos"))
import pycheck
from pycheck import check, check_ge, check_le




def smooth(args, expect_rc=0):
    r = subprocess.run([ARKCOS, "smooth", *map(str, args)], capture_output=True, text=True)
    check(r.returncode == expect_rc,
          f"arkcos smooth {' '.join(map(str, args))}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def same(a, b):
    """Equal up to the last bit or two: the engine's FFTW plans and thread
    schedule may differ from run to run (measured: 2.2e-16 absolute on O(1)
    values between two identical runs), and in a float32 output one double
    ulp can flip the float32 rounding."""
    tol = 2e-7 if a.dtype.itemsize == 4 else 1e-13
    return a.shape == b.shape and float(np.abs(a - b).max()) <= tol * float(np.abs(b).max())


def frac_rms(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)) / np.sqrt(np.mean(b ** 2)))


def header(path):
    with fits.open(path) as f:
        return f[1].header, f[1].columns


def random_map(nside, seed):
    """A smooth-ish random field: band-limited at 2 nside, C_l ~ (l+10)^-2."""
    ell = np.arange(2 * nside + 1)
    np.random.seed(seed)
    return hp.synfast(1.0 / (ell + 10.0) ** 2, nside, lmax=2 * nside)


def test_orderings_and_types(d):
    """RING/NESTED x float32/float64: the same pixels give the same result."""
    nside = 16
    m = random_map(nside, 1)
    gauss = ["--fwhm-arcmin", 600]
    results = {}
    for nest in (False, True):
        for dtype in (np.float32, np.float64):
            tag = f"{'nest' if nest else 'ring'}_{np.dtype(dtype).name}"
            src = hp.reorder(m, r2n=True) if nest else m
            hp.write_map(f"{d}/{tag}.fits", src, nest=nest, dtype=dtype, overwrite=True)
            r = smooth([f"{d}/{tag}.fits", f"{d}/{tag}_out.fits", *gauss])
            if r.returncode:
                continue
            hdr, cols = header(f"{d}/{tag}_out.fits")
            check(hdr["ORDERING"] == ("NESTED" if nest else "RING"), f"{tag}: ORDERING {hdr['ORDERING']}")
            check(hdr["NSIDE"] == nside and hdr["PIXTYPE"] == "HEALPIX" and hdr["INDXSCHM"] == "IMPLICIT"
                  and hdr["FIRSTPIX"] == 0 and hdr["LASTPIX"] == 12 * nside ** 2 - 1,
                  f"{tag}: header {dict(hdr)}")
            want_fmt = "1024E" if dtype == np.float32 else "1024D"
            check(cols[0].format == want_fmt, f"{tag}: TFORM {cols[0].format}, expected {want_fmt}")
            out = hp.read_map(f"{d}/{tag}_out.fits", nest=False, dtype=None)
            check(out.dtype.kind == "f" and out.dtype.itemsize == np.dtype(dtype).itemsize,
                  f"{tag}: read back as {out.dtype}")
            check(f"ordering={'NESTED' if nest else 'RING'}" in r.stdout and "bad_pixels=0" in r.stdout,
                  f"{tag}: summary {r.stdout}")
            results[tag] = out
    # NESTED in = NESTED out with exactly the values of the RING run.
    for dt in ("float32", "float64"):
        a, b = results.get(f"ring_{dt}"), results.get(f"nest_{dt}")
        if a is not None and b is not None:
            check(same(a, b), f"{dt}: NESTED result differs from RING by {np.abs(a - b).max()}")
    a, b = results.get("ring_float32"), results.get("ring_float64")
    if a is not None and b is not None:
        # Only the input's rounding to float32 and the output's differ:
        # measured 4.1e-8.
        check_le("float32 vs float64 input, frac rms", frac_rms(a.astype(np.float64), b), 2e-7)


def test_non_power_of_two(d):
    """nside 12 (RING only) round trip; one-value rows as healpy writes them
    without fits_IDL."""
    nside = 12
    m = random_map(nside, 2)
    hp.write_map(f"{d}/ns12.fits", m, fits_IDL=False, dtype=np.float64, overwrite=True)
    r = smooth([f"{d}/ns12.fits", f"{d}/ns12_out.fits", "--fwhm-arcmin", 900])
    if r.returncode:
        return
    out = hp.read_map(f"{d}/ns12_out.fits")
    check(hp.get_nside(out) == nside, f"nside {hp.get_nside(out)}")
    _, cols = header(f"{d}/ns12_out.fits")
    check(cols[0].format == "D", f"nside 12: TFORM {cols[0].format}, expected one value per row")
    # direct sum on the same map: ARKCoS enhanced is exact in the belt and
    # close in the caps; measured whole-sphere frac rms 6.7e-6 (15 deg FWHM,
    # 3 pixels per FWHM, cut at 1e-5).
    smooth([f"{d}/ns12.fits", f"{d}/ns12_direct.fits", "--fwhm-arcmin", 900, "--method", "direct"])
    ref = hp.read_map(f"{d}/ns12_direct.fits")
    check_le("nside 12: arkcos vs direct, frac rms", frac_rms(out, ref), 1e-5)


def test_iqu(d):
    """A 3-column I,Q,U map: Q and U as spin 2 by default (tests/test_pol.sh
    checks the values); with --no-pol column by column with one plan."""
    nside = 16
    maps = [random_map(nside, s) for s in (3, 4, 5)]
    names = ["I_STOKES", "Q_STOKES", "U_STOKES"]
    hp.write_map(f"{d}/iqu.fits", maps, column_names=names, column_units="K_CMB",
                 coord="G", dtype=np.float32, overwrite=True)
    # Q and U are spin-2: as scalars only when asked (--no-pol), never silently
    r = smooth([f"{d}/iqu.fits", f"{d}/iqu_pol.fits", "--fwhm-arcmin", 600])
    check("spin2=Q_STOKES,U_STOKES" in r.stdout, f"IQU without --no-pol: not spin 2: {r.stdout}")
    r = smooth([f"{d}/iqu.fits", f"{d}/iqu_out.fits", "--fwhm-arcmin", 600, "--no-pol"])
    if r.returncode:
        return
    check("maps=3" in r.stdout and "smooth: 3 maps in 1 file(s), 1 plan(s)" in r.stdout,
          f"IQU summary: {r.stdout}")
    hdr, cols = header(f"{d}/iqu_out.fits")
    check(list(cols.names) == names and all(c.unit == "K_CMB" for c in cols) and hdr.get("COORDSYS") == "G",
          f"IQU: columns {cols.names} units {[c.unit for c in cols]} COORDSYS {hdr.get('COORDSYS')}")
    out = hp.read_map(f"{d}/iqu_out.fits", field=(0, 1, 2), dtype=None)
    for c in range(3):
        hp.write_map(f"{d}/col{c}.fits", maps[c], dtype=np.float32, overwrite=True)
        smooth([f"{d}/col{c}.fits", f"{d}/col{c}_out.fits", "--fwhm-arcmin", 600])
        single = hp.read_map(f"{d}/col{c}_out.fits", dtype=None)
        check(same(out[c], single), f"IQU column {c} differs from smoothing it alone")


def test_unseen(d):
    """UNSEEN and NaN pixels are missing data: counted, left out of the
    normalised convolution by default, zeros with --mask-mode zero; a
    partial-sky map's unlisted pixels are missing too. (tests/test_mask.sh
    checks the values against the direct sum.)"""
    nside = 16
    m = random_map(nside, 6)
    bad = np.zeros(m.size, bool)
    bad[::37] = True
    masked = m.copy()
    masked[bad] = hp.UNSEEN
    masked[5] = np.nan
    zeroed = np.where(bad, 0.0, m)
    zeroed[5] = 0.0
    hp.write_map(f"{d}/unseen.fits", masked, dtype=np.float64, overwrite=True)
    hp.write_map(f"{d}/zeroed.fits", zeroed, dtype=np.float64, overwrite=True)
    r = smooth([f"{d}/unseen.fits", f"{d}/unseen_out.fits", "--fwhm-arcmin", 600])
    rz = smooth([f"{d}/unseen.fits", f"{d}/unseen_zero.fits", "--fwhm-arcmin", 600,
                 "--mask-mode", "zero"])
    smooth([f"{d}/zeroed.fits", f"{d}/zeroed_out.fits", "--fwhm-arcmin", 600])
    nbad = int(bad.sum()) + (0 if bad[5] else 1)
    check(f"bad_pixels={nbad}" in r.stdout, f"UNSEEN count: expected {nbad}: {r.stdout}")
    check(f"{nbad} of {m.size} pixels missing" in r.stderr, f"missing count on stderr: {r.stderr}")
    check("note:" in rz.stderr and "--mask-mode zero" in rz.stderr, f"zero mode note: {rz.stderr}")
    a = hp.read_map(f"{d}/unseen_out.fits")
    z = hp.read_map(f"{d}/unseen_zero.fits")
    b = hp.read_map(f"{d}/zeroed_out.fits")
    # zero mode keeps every pixel: exactly the smoothing of the zero-filled map
    check(same(z, b), "--mask-mode zero: UNSEEN input differs from zeros")
    # one pixel in 37 missing: every output pixel keeps most of its weight,
    # and the normalised map is not the zero-filled one
    check(not np.any(a == hp.UNSEEN) and float(np.abs(a - b).max()) > 1e-3 * float(np.abs(b).max()),
          "normalize: UNSEEN output pixels, or no different from zero filling")
    # healpy's partial-sky layout (PIXEL column, INDXSCHM = EXPLICIT): the
    # pixels not listed are missing like UNSEEN ones.
    hp.write_map(f"{d}/partial.fits", np.where(bad, hp.UNSEEN, m), partial=True, dtype=np.float64,
                 overwrite=True)
    hp.write_map(f"{d}/full_unseen.fits", np.where(bad, hp.UNSEEN, m), dtype=np.float64,
                 overwrite=True)
    for mode in ("normalize", "zero"):
        smooth([f"{d}/partial.fits", f"{d}/partial_{mode}.fits", "--fwhm-arcmin", 600,
                "--mask-mode", mode])
        smooth([f"{d}/full_unseen.fits", f"{d}/full_{mode}.fits", "--fwhm-arcmin", 600,
                "--mask-mode", mode])
        if os.path.exists(f"{d}/partial_{mode}.fits") and os.path.exists(f"{d}/full_{mode}.fits"):
            check(same(hp.read_map(f"{d}/partial_{mode}.fits"), hp.read_map(f"{d}/full_{mode}.fits")),
                  f"{mode}: partial-sky input differs from the full map with UNSEEN")


def test_round_trip_tiny_kernel(d):
    """A kernel narrower than the pixel spacing touches only its own pixel:
    the direct sum gives s_p = (4 pi / npix) K(0) r_p. Any pixel moved by the
    FITS layer (in either ORDERING) breaks the proportionality. Such a kernel
    (0.005 pixels per FWHM) is refused unless the pixel sum is asked for
    explicitly: --method direct --allow-subpixel (docs/NARROW_BEAMS.md)."""
    nside = 16
    m = random_map(nside, 7) + 3.0
    fwhm, eps = 1.0, 1e-5  # arcmin; cut at eps K(0): 2.5', pixels ~220' apart
    sigma = np.radians(fwhm / 60) / np.sqrt(8 * np.log(2))
    # K(0) of the Gaussian truncated at eps and normalised on the sphere:
    # 1 / (2 pi sigma^2 (1 - eps)) to O(sigma^2) = 1e-8.
    c = 4 * np.pi / hp.nside2npix(nside) / (2 * np.pi * sigma ** 2 * (1 - eps))
    for nest in (False, True):
        src = hp.reorder(m, r2n=True) if nest else m
        tag = "nest" if nest else "ring"
        hp.write_map(f"{d}/tiny_{tag}.fits", src, nest=nest, dtype=np.float64, overwrite=True)
        r = smooth([f"{d}/tiny_{tag}.fits", f"{d}/tiny_{tag}_arkcos.fits", "--fwhm-arcmin", fwhm],
                   expect_rc=2)
        check("0.00455 pixels per FWHM" in r.stderr and not os.path.exists(f"{d}/tiny_{tag}_arkcos.fits"),
              f"tiny kernel {tag}, arkcos: not refused with the figure: {r.stderr}")
        out_path = f"{d}/tiny_{tag}_direct.fits"
        smooth([f"{d}/tiny_{tag}.fits", out_path, "--fwhm-arcmin", fwhm, "--method", "direct",
                "--allow-subpixel", "--quadrature", "point"])  # the bare pixel sum
        if not os.path.exists(out_path):
            continue
        # compare in RING order
        ratio = hp.read_map(out_path, nest=False) / m
        # measured spread: 3.4e-16
        check_le(f"tiny kernel {tag} direct: spread of s/r", float(np.ptp(ratio) / ratio.mean()), 1e-13)
        # measured 5.1e-9 (the flat-sky K(0) is off by O(sigma^2))
        check_le(f"tiny kernel {tag} direct: s/r vs 4pi/npix K(0)", abs(ratio.mean() / c - 1), 2e-8)


def test_against_healpy_smoothing(d):
    """ARKCoS and our FSHT against healpy.smoothing (untruncated Gaussian beam
    in harmonic space, iter 3, lmax 3 nside - 1) on a band-limited map.
    The two smooth with different kernels: our K_l is that of the
    sphere-normalised Gaussian exp(-alpha^2 / 2 sigma^2), healpy's the beam
    exp(-l(l+1) sigma^2 / 2); and ARKCoS adds the quadrature error of the
    pixel sum. Measured at nside 32, FWHM 10 deg (5.5 pixels per FWHM):
    arkcos 1.03e-3, fsht 3.67e-4 (another seed: 1.32e-3, 4.06e-4; at nside
    64: 5.2e-4 and 4.2e-4; at nside 16 with 1.4 pixels per FWHM the pixel sum
    is off by 3e-2)."""
    nside = 32
    m = random_map(nside, 8)
    hp.write_map(f"{d}/hs.fits", m, dtype=np.float64, overwrite=True)
    ref = hp.smoothing(m, fwhm=np.radians(10), iter=3, lmax=3 * nside - 1)
    for method, bound in (("arkcos", 1.5e-3), ("fsht", 5e-4)):
        smooth([f"{d}/hs.fits", f"{d}/hs_{method}.fits", "--fwhm-arcmin", 600, "--method", method])
        if os.path.exists(f"{d}/hs_{method}.fits"):
            check_le(f"nside 32 FWHM 10 deg: {method} vs healpy.smoothing, frac rms",
                     frac_rms(hp.read_map(f"{d}/hs_{method}.fits"), ref), bound)


def test_quadrature_by_region(d):
    """--help's promise for ring quadrature, against the exact result
    alm2map(B_l a_lm) of a band-limited map (white C_l, lmax = 2 nside) with
    healpy's Gaussian beam (--gaussian harmonic), nside 64, 4 degrees FWHM
    (4.4 pixels per FWHM): the error on the 17 rings around each |z| = 2/3
    falls 350-7000 fold from the pixel sum, and next to the poles (rings
    1-15 of each cap) 2-6 fold. Measured (scripts/quadrature_error.py, the
    same map): kink 4.12e-4 point, 2.24e-7 ring (7.29e-5 before the fitted
    kink rows); pole 1.08e-2 point, 4.06e-3 ring. --quadrature polar holds
    the poles and mid caps to the kink's level: 2.68e-7 and 2.78e-7."""
    nside, lmax = 64, 128
    rng = np.random.default_rng(1)
    nalm = hp.Alm.getsize(lmax)
    alm = (rng.standard_normal(nalm) + 1j * rng.standard_normal(nalm)) / np.sqrt(2)
    _, mm = hp.Alm.getlm(lmax)
    alm[mm == 0] = alm[mm == 0].real * np.sqrt(2)
    m = hp.alm2map(alm, nside, lmax=lmax)
    exact = hp.alm2map(hp.almxfl(alm, hp.gauss_beam(np.radians(4), lmax=lmax)), nside, lmax=lmax)
    hp.write_map(f"{d}/bl.fits", m, dtype=np.float64, overwrite=True)
    counts = [4 * min(r, nside, 4 * nside - r) for r in range(1, 4 * nside)]
    rn = np.repeat([min(r, 4 * nside - r) for r in range(1, 4 * nside)], counts)
    kink, pole = np.abs(rn - nside) <= 8, rn <= 15
    mid = (rn < nside) & ~kink & ~pole
    err = {}
    for q in ("ring", "point", "polar"):
        smooth([f"{d}/bl.fits", f"{d}/bl_{q}.fits", "--fwhm-arcmin", 240, "--gaussian", "harmonic",
                "--quadrature", q])
        if os.path.exists(f"{d}/bl_{q}.fits"):
            e = np.abs(hp.read_map(f"{d}/bl_{q}.fits") - exact) / np.abs(exact).max()
            err[q] = (float(e[kink].max()), float(e[pole].max()), float(e[mid].max()))
    if len(err) == 3:
        check_le("ring quadrature: error at |z| = 2/3 (measured 2.24e-7)", err["ring"][0], 4e-7)
        check_ge("ring quadrature: gain at |z| = 2/3 over the pixel sum (measured 1840)",
                 err["point"][0] / err["ring"][0], 1000)
        check_ge("ring quadrature: gain next to the poles (measured 2.66)", err["point"][1] / err["ring"][1], 2)
        check_le("ring quadrature: error next to the poles (measured 4.06e-3)", err["ring"][1], 5e-3)
        # --quadrature polar (docs/EXACTNESS.md, "Polar reconstruction"): next to the
        # poles and in the mid caps the kink's level; the kink itself unchanged
        check_le("polar: error next to the poles (measured 2.68e-7)", err["polar"][1], 4e-7)
        check_le("polar: error in the mid caps (measured 2.78e-7; ring 1.24e-6)", err["polar"][2], 4e-7)
        check_le("polar: error at |z| = 2/3 (measured 2.24e-7, as ring)", err["polar"][0], 4e-7)


def main():
    if not os.access(ARKCOS, os.X_OK):
        print(f"FAIL no arkcos binary at {ARKCOS}")
        print("TESTS 0 1")
        return 1
    with tempfile.TemporaryDirectory(prefix="arkcos-test-healpy-") as d:
        for t in (test_orderings_and_types, test_non_power_of_two, test_iqu, test_unseen,
                  test_round_trip_tiny_kernel, test_against_healpy_smoothing, test_quadrature_by_region):
            print(f"[{t.__name__}]")
            f0 = pycheck.failed
            try:
                t(d)
            except Exception as e:  # a crash in one test is one failure
                check(False, f"{t.__name__}: {type(e).__name__}: {e}")
            print(("ok   " if pycheck.failed == f0 else "FAIL ") + t.__name__)
            sys.stdout.flush()
    return pycheck.report()


if __name__ == "__main__":
    sys.exit(main())
