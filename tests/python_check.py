#!/usr/bin/env python3
"""python_check.py -- the Python package (python/arkcos) against `arkcos smooth`
and healpy. Run by tests/test_python.sh with the Python of a virtual
environment the package was pip-installed into (not a test_*.py: the system
Python that runs those has no package).

arguments: ARKCOS (the binary), WORKDIR, ABI (output of tests/python_abi.c)
Last line: "TESTS <passed> <failed>".
"""
import json
import math
import os
import subprocess
import sys
import threading
import tracemalloc
import warnings

import numpy as np

import arkcos
from arkcos import _lib

ARKCOS, D, ABI = sys.argv[1:4]
import pycheck
from pycheck import check, check_ge, check_le
ARCMIN = math.pi / (180.0 * 60.0)  # as harness/smooth/cmd_smooth.c
DEG = math.pi / 180.0

# The package's fwhm is healpy's Gaussian beam (gaussian="harmonic"), the
# command's --fwhm-arcmin the Gaussian in angle: the comparisons below with
# --fwhm-arcmin ask the package for the command's (the defaults are checked
# against --gaussian harmonic at the end).
_smoothing, _Plan = arkcos.smoothing, arkcos.Plan
arkcos.smoothing = lambda *a, **kw: _smoothing(*a, **{"gaussian": "profile", **kw})
arkcos.Plan = lambda *a, **kw: _Plan(*a, **{"gaussian": "profile", **kw})




def same_bits(a, b):
    """Equal to the last bit (healpy reads FITS as big-endian arrays)."""
    a, b = np.asarray(a), np.asarray(b)
    a, b = a.astype(a.dtype.newbyteorder("=")), b.astype(b.dtype.newbyteorder("="))
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def raises(exc, f, *args, contains="", **kw):
    try:
        f(*args, **kw)
    except exc as e:
        if contains in str(e):
            return True
        print(f"  message without '{contains}': {e}")
        return False
    except Exception as e:  # noqa: BLE001 -- the wrong kind is the failure
        print(f"  {type(e).__name__} instead of {exc.__name__}: {e}")
        return False
    return False


# ------------------------------------------------------------------- ABI
def check_abi():
    structs = _lib.STRUCTS
    bad = []
    for line in open(ABI):
        name, value = line.split()
        value = int(value)
        if "." in name:
            s, f = name.split(".")
            got = getattr(structs[s], f).offset
        else:
            got = __import__("ctypes").sizeof(structs[name])
        if got != value:
            bad.append(f"{name}: C {value}, ctypes {got}")
    check(not bad, f"ctypes layouts differ from arkcos.h: {bad}")


check_abi()

try:
    import healpy as hp
except ImportError:
    hp = None
    print("SKIP healpy is not importable: no FITS fixtures, no comparison with healpy")
    pycheck.report()
    sys.exit(0)
warnings.simplefilter("ignore")
warnings.simplefilter("always", arkcos.ArkcosWarning)


def smooth_cli(inp, out, *args):
    r = subprocess.run([ARKCOS, "smooth", inp, out, "--force", *map(str, args)],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"arkcos smooth {inp} {' '.join(map(str, args))}: {r.stderr}")
    return r.stdout


def read(path, nest=False, dtype=None):
    m = hp.read_map(path, field=None, nest=nest, dtype=dtype)
    return m


# ---------------------------------------------------- fixtures (nside 32)
NSIDE = 32
NPIX = 12 * NSIDE ** 2
rng = np.random.default_rng(18)
ell = np.arange(3 * NSIDE)
cl = 1.0 / (ell + 10.0) ** 2
np.random.seed(18)
iqu = hp.synfast([cl, cl / 10, cl / 20, cl / 40], NSIDE, lmax=2 * NSIDE, new=True)
m = iqu[0] + 0.01 * rng.standard_normal(NPIX)
F = 400.0                   # arcmin: 3.6 pixels per FWHM at nside 32
FWHM = F * ARCMIN
hp.write_map(f"{D}/m.fits", m, dtype=np.float64, overwrite=True)
hp.write_map(f"{D}/m32.fits", m, dtype=np.float32, overwrite=True)
hp.write_map(f"{D}/mnest.fits", hp.reorder(m, r2n=True), nest=True, dtype=np.float64,
             overwrite=True)
hp.write_map(f"{D}/iqu.fits", iqu, dtype=np.float64, overwrite=True)
holes = m.copy()
holes[hp.query_disc(NSIDE, hp.ang2vec(1.0, 2.0), math.radians(12))] = hp.UNSEEN
holes[rng.choice(NPIX, 40, replace=False)] = hp.UNSEEN
hp.write_map(f"{D}/holes.fits", holes, dtype=np.float64, overwrite=True)
iqu_holes = iqu.copy()
iqu_holes[1, hp.query_disc(NSIDE, hp.ang2vec(0.3, 1.0), math.radians(10))] = hp.UNSEEN
iqu_holes[:, rng.choice(NPIX, 25, replace=False)] = hp.UNSEEN
hp.write_map(f"{D}/iqu_holes.fits", iqu_holes, dtype=np.float64, overwrite=True)
# a weight map: a galactic cut |b| < 15 deg, apodised to 1 at |b| = 30 deg
theta = hp.pix2ang(NSIDE, np.arange(NPIX))[0]
gal = np.clip((np.abs(90 - np.degrees(theta)) - 15) / 15, 0, 1)
hp.write_map(f"{D}/gal.fits", gal, dtype=np.float64, overwrite=True)
hp.write_map(f"{D}/gal_nest.fits", hp.reorder(gal, r2n=True), nest=True, dtype=np.float64,
             overwrite=True)
# +inf and -inf where holes has UNSEEN
infs = np.where(holes == hp.UNSEEN, np.where(np.arange(NPIX) % 2, np.inf, -np.inf), holes)
hp.write_map(f"{D}/inf.fits", infs, dtype=np.float64, overwrite=True)
# Q, U without I
hp.write_map(f"{D}/qu.fits", iqu[1:], dtype=np.float64, overwrite=True,
             column_names=["Q_STOKES", "U_STOKES"])

# Every `arkcos smooth` first: FFTW loads its wisdom once per process, so the
# package must see the FFT plans (FFTW_MEASURE) that the command chose and
# saved; otherwise the results agree to rounding only (~1e-16).
smooth_cli(f"{D}/m.fits", f"{D}/m_s.fits", "--fwhm-arcmin", F, "--threads", 2)
smooth_cli(f"{D}/m.fits", f"{D}/m_s0.fits", "--fwhm-arcmin", F, "--threads", 0)
smooth_cli(f"{D}/m.fits", f"{D}/m_cut.fits", "--fwhm-arcmin", F, "--cutoff-deg", 7.3)
smooth_cli(f"{D}/m.fits", f"{D}/m_rel.fits", "--fwhm-arcmin", F, "--cutoff-rel", 1e-8)
smooth_cli(f"{D}/m.fits", f"{D}/m_top.fits", "--tophat-deg", 6.1)
smooth_cli(f"{D}/m32.fits", f"{D}/m32_s.fits", "--fwhm-arcmin", F)
smooth_cli(f"{D}/mnest.fits", f"{D}/mnest_s.fits", "--fwhm-arcmin", F)
smooth_cli(f"{D}/holes.fits", f"{D}/holes_s.fits", "--fwhm-arcmin", F)
smooth_cli(f"{D}/holes.fits", f"{D}/holes_w0.fits", "--fwhm-arcmin", F, "--min-weight", 0.1)
smooth_cli(f"{D}/iqu.fits", f"{D}/iqu_s.fits", "--fwhm-arcmin", F)
smooth_cli(f"{D}/iqu.fits", f"{D}/iqu_np.fits", "--fwhm-arcmin", F, "--no-pol")
smooth_cli(f"{D}/iqu_holes.fits", f"{D}/iqu_holes_s.fits", "--fwhm-arcmin", F)
smooth_cli(f"{D}/holes.fits", f"{D}/holes_zero.fits", "--fwhm-arcmin", F, "--mask-mode", "zero")
smooth_cli(f"{D}/m.fits", f"{D}/m_mask.fits", "--fwhm-arcmin", F, "--mask", f"{D}/gal.fits",
           "--write-weight")
smooth_cli(f"{D}/holes.fits", f"{D}/holes_mask.fits", "--fwhm-arcmin", F, "--mask",
           f"{D}/gal_nest.fits", "--write-weight")
smooth_cli(f"{D}/holes.fits", f"{D}/holes_mask_zero.fits", "--fwhm-arcmin", F, "--mask",
           f"{D}/gal.fits", "--mask-mode", "zero", "--write-weight")
smooth_cli(f"{D}/m.fits", f"{D}/m_w.fits", "--fwhm-arcmin", F, "--write-weight")
smooth_cli(f"{D}/iqu_holes.fits", f"{D}/iqu_holes_mask.fits", "--fwhm-arcmin", F, "--mask",
           f"{D}/gal.fits", "--write-weight")
inf_summary = smooth_cli(f"{D}/inf.fits", f"{D}/inf_s.fits", "--fwhm-arcmin", F)
smooth_cli(f"{D}/qu.fits", f"{D}/qu_s.fits", "--fwhm-arcmin", F, "--pol")
# 5.5 pixels per FWHM: the default cut is 1e-13 for I (smooth caps), 1e-5 for Q, U
F_WIDE = 600.0
smooth_cli(f"{D}/iqu.fits", f"{D}/iqu_wide.fits", "--fwhm-arcmin", F_WIDE)
smooth_cli(f"{D}/m.fits", f"{D}/m_wide.fits", "--fwhm-arcmin", F_WIDE)

# ------------------------------------------- bit for bit with arkcos smooth
print("against arkcos smooth (same kernel, threads 2):")
ref = read(f"{D}/m_s.fits")
out = arkcos.smoothing(m, fwhm=FWHM, threads=2)
check(same_bits(out, ref), "smoothing(m) differs from arkcos smooth: max "
      f"{np.max(np.abs(out - ref)):.3e}")
out0 = arkcos.smoothing(m, fwhm=FWHM, threads=0)
check(same_bits(out0, read(f"{D}/m_s0.fits")), "threads=0 differs from --threads 0")
check(same_bits(arkcos.smoothing(m, sigma=FWHM / math.sqrt(8 * math.log(2)), threads=2), ref)
      or np.max(np.abs(arkcos.smoothing(m, sigma=FWHM / math.sqrt(8 * math.log(2))) - ref))
      < 1e-14, "sigma= is not fwhm / sqrt(8 ln 2)")

check(same_bits(arkcos.smoothing(m, fwhm=FWHM, cutoff=7.3 * DEG), read(f"{D}/m_cut.fits")),
      "cutoff= differs from --cutoff-deg")
check(same_bits(arkcos.smoothing(m, fwhm=FWHM, cutoff_rel=1e-8), read(f"{D}/m_rel.fits")),
      "cutoff_rel= differs from --cutoff-rel")
check(same_bits(arkcos.smoothing(m, tophat=6.1 * DEG), read(f"{D}/m_top.fits")),
      "tophat= differs from --tophat-deg")

# float32: computed in double as arkcos smooth does, returned as float32
m32 = read(f"{D}/m32.fits", dtype=np.float32)
ref32 = read(f"{D}/m32_s.fits", dtype=np.float32)
out32 = arkcos.smoothing(m32, fwhm=FWHM)
check(out32.dtype == np.float32 and ref32.dtype == np.float32, f"float32 in gave {out32.dtype}")
check(same_bits(out32, ref32), "float32 map differs from arkcos smooth on a float32 file")
outs = arkcos.smoothing(m32, fwhm=FWHM, precision="single")
check(outs.dtype == np.float32, "precision='single' does not return float32")
check_le("precision='single' against double, max relative",
         float(np.max(np.abs(outs - out32)) / np.max(np.abs(out32))), 1e-5)  # measured 2.0e-7

# NESTED
mn = read(f"{D}/mnest.fits", nest=True)
outn = arkcos.smoothing(mn, fwhm=FWHM, nest=True)
check(same_bits(outn, read(f"{D}/mnest_s.fits", nest=True)), "nest=True differs from a NESTED file")
check(same_bits(outn, hp.reorder(ref, r2n=True)), "nest=True is not the RING result reordered")
check(np.array_equal(arkcos.nest2ring(NSIDE), hp.nest2ring(NSIDE, np.arange(NPIX))),
      "nest2ring differs from healpy")
check(raises(ValueError, arkcos.smoothing, np.zeros(12 * 3 ** 2), fwhm=1.0, nest=True,
             contains="power of 2"), "nest=True with nside 3 accepted")

# UNSEEN: left out, normalised, UNSEEN where A(w) < 0.5
refh = read(f"{D}/holes_s.fits")
outh = arkcos.smoothing(holes, fwhm=FWHM)
check(same_bits(outh, refh), "UNSEEN map differs from arkcos smooth")
nun = int(np.sum(outh == hp.UNSEEN))
print(f"  UNSEEN: {int(np.sum(holes == hp.UNSEEN))} missing pixels in, {nun} UNSEEN out")
check(0 < nun < int(np.sum(holes == hp.UNSEEN)), "no UNSEEN output, or more than missing input")
masked = np.ma.masked_array(m, mask=holes == hp.UNSEEN)
check(same_bits(arkcos.smoothing(masked, fwhm=FWHM), outh), "a masked array differs from UNSEEN")
nan = np.where(holes == hp.UNSEEN, np.nan, holes)
check(same_bits(arkcos.smoothing(nan, fwhm=FWHM), outh), "NaN differs from UNSEEN")
check(same_bits(holes, np.where(nan != nan, hp.UNSEEN, holes)), "input map was modified")
check(same_bits(arkcos.smoothing(holes, fwhm=FWHM, min_weight=0.1), read(f"{D}/holes_w0.fits")),
      "min_weight=0.1 differs from --min-weight 0.1")

# pol=True: I scalar, Q, U one spin-2 field; pol=False: all scalars
refp = read(f"{D}/iqu_s.fits")
outp = arkcos.smoothing(iqu, fwhm=FWHM)          # healpy's default pol=True
check(same_bits(outp, refp), "pol=True differs from arkcos smooth on I, Q, U")
check(same_bits(arkcos.smoothing(iqu, fwhm=FWHM, pol=False), read(f"{D}/iqu_np.fits")),
      "pol=False differs from --no-pol")
check(not same_bits(outp, arkcos.smoothing(iqu, fwhm=FWHM, pol=False)), "pol has no effect")
check(same_bits(arkcos.smoothing(iqu_holes, fwhm=FWHM), read(f"{D}/iqu_holes_s.fits")),
      "I, Q, U with UNSEEN differ from arkcos smooth")
check(same_bits(arkcos.smoothing(list(iqu), fwhm=FWHM), outp), "a list of maps differs")

# the default cut follows the pixels per FWHM and the spin, as arkcos smooth
wide = F_WIDE * ARCMIN
check(same_bits(arkcos.smoothing(iqu, fwhm=wide), read(f"{D}/iqu_wide.fits")),
      "5.5 px per FWHM: I, Q, U differ from arkcos smooth (default cuts)")
check(same_bits(arkcos.smoothing(m, fwhm=wide), read(f"{D}/m_wide.fits")),
      "5.5 px per FWHM: one map differs from arkcos smooth (default cut)")
with arkcos.Plan(NSIDE, fwhm=wide) as pw, arkcos.Plan(NSIDE, fwhm=wide, cutoff_rel=1e-13) as p13:
    check(pw.cutoff == p13.cutoff and pw.cutoff > 0, f"5.5 px per FWHM: default cut {pw.cutoff} is not 1e-13's")
with arkcos.Plan(NSIDE, fwhm=FWHM) as pn, arkcos.Plan(NSIDE, fwhm=FWHM, cutoff_rel=1e-5) as p5:
    check(pn.cutoff == p5.cutoff, f"3.6 px per FWHM: default cut {pn.cutoff} is not 1e-5's")

# ------------------------------------------ masked arrays, inf, fwhm = 0
print("masked arrays, +-inf, fwhm=0, pol with 2 maps:")
# a list of healpy masked arrays: every mask honoured (the data under the
# masks left intact, so only the masks can make the difference)
bad_iqu = np.abs(iqu_holes - hp.UNSEEN) <= 1e-5 * abs(hp.UNSEEN)
mlist = [np.ma.masked_array(iqu[k], mask=bad_iqu[k]) for k in range(3)]
outl = arkcos.smoothing(mlist, fwhm=FWHM)
refih = read(f"{D}/iqu_holes_s.fits")
check(np.ma.isMaskedArray(outl), f"a list of masked arrays gave {type(outl).__name__}, not a masked array")
check(same_bits(np.ma.getdata(outl), refih),
      "a list of masked arrays differs from arkcos smooth on the UNSEEN file: max "
      f"{np.max(np.abs(np.ma.getdata(outl) - refih)):.3e}")
check(np.array_equal(np.ma.getmaskarray(outl), refih == hp.UNSEEN),
      "the output's mask is not where it is UNSEEN")
outm = arkcos.smoothing(masked, fwhm=FWHM)
check(np.ma.isMaskedArray(outm) and np.array_equal(outm.mask, outh == hp.UNSEEN)
      and same_bits(outm.data, outh), "a masked array does not come back as healpy.ma of the result")
check(not np.ma.isMaskedArray(arkcos.smoothing(holes, fwhm=FWHM)), "a plain array came back masked")
# +-inf: missing data, as in arkcos smooth (bit for bit, and as UNSEEN)
check(same_bits(arkcos.smoothing(infs, fwhm=FWHM), outh), "+-inf differs from UNSEEN")
check(same_bits(read(f"{D}/inf_s.fits"), outh), "arkcos smooth: +-inf differs from UNSEEN")
nmiss = int(np.sum(holes == hp.UNSEEN))
check(f"bad_pixels={nmiss}" in inf_summary, f"arkcos smooth: +-inf not counted: {inf_summary}")
# fwhm = 0, sigma = 0: a copy, as healpy
c = arkcos.smoothing(m, fwhm=0)
check(same_bits(c, m) and c is not m and not np.shares_memory(c, m), "fwhm=0 is not a copy")
check(same_bits(arkcos.smoothing(m32, sigma=0.0), m32), "sigma=0 on float32 is not a copy")
check(same_bits(arkcos.smoothing(iqu, fwhm=0), iqu), "fwhm=0 on I, Q, U is not a copy")
c = arkcos.smoothing(masked, fwhm=0)
check(np.ma.isMaskedArray(c) and np.array_equal(c.mask, masked.mask)
      and same_bits(c.data, np.where(masked.mask, hp.UNSEEN, m)),
      "fwhm=0 on a masked array: not a masked copy")
check(raises(ValueError, arkcos.smoothing, m, fwhm=-0.1, contains="fwhm"), "fwhm < 0 accepted")
# pol=True takes 1 or 3 maps, as healpy; 2 maps are Q, U only with pol="QU"
check(raises(ValueError, arkcos.smoothing, iqu[1:], fwhm=FWHM, contains="pol='QU'"),
      "pol=True with 2 maps accepted")
check(raises(ValueError, arkcos.smoothing, [iqu[1], iqu[2]], fwhm=FWHM, pol=True,
             contains="pol=True: 2 maps"), "a list of 2 maps with pol=True accepted")
check(raises(ValueError, arkcos.smoothing, np.vstack([iqu, m]), fwhm=FWHM, contains="pol=False"),
      "pol=True with 4 maps accepted")
check(raises(ValueError, arkcos.smoothing, iqu, fwhm=FWHM, pol="QU", contains="pol='QU'"),
      "pol='QU' with 3 maps accepted")
check(raises(ValueError, arkcos.smoothing, iqu, fwhm=FWHM, pol="EB", contains="pol"),
      "pol='EB' accepted")
outqu = arkcos.smoothing(iqu[1:], fwhm=FWHM, pol="QU")
check(same_bits(outqu, read(f"{D}/qu_s.fits")), "pol='QU' differs from arkcos smooth --pol")
check(same_bits(outqu, outp[1:]), "pol='QU' differs from Q, U of pol=True on I, Q, U")
check(same_bits(arkcos.smoothing(iqu[1:], fwhm=FWHM, pol=False), read(f"{D}/iqu_np.fits")[1:]),
      "2 maps with pol=False are not 2 scalars")

# ----------------------------------------- mask=, mask_mode=, return_weight=
print("mask=, mask_mode=, return_weight= against --mask, --mask-mode, --write-weight:")
check(same_bits(arkcos.smoothing(holes, fwhm=FWHM, mask_mode="zero"), read(f"{D}/holes_zero.fits")),
      "mask_mode='zero' differs from --mask-mode zero")
check(not np.any(read(f"{D}/holes_zero.fits") == hp.UNSEEN), "--mask-mode zero left UNSEEN pixels")
for name, x in (("m_mask", m), ("holes_mask", holes)):
    o, aw = arkcos.smoothing(x, fwhm=FWHM, mask=gal, return_weight=True)
    refm = hp.read_map(f"{D}/{name}.fits", field=0)
    check(same_bits(o, refm), f"mask= differs from --mask ({name}): max {np.max(np.abs(o - refm)):.3e}")
    check(same_bits(aw, hp.read_map(f"{D}/{name}.fits", field=1)),
          f"return_weight differs from --write-weight's WEIGHT ({name})")
print(f"  mask=: {int(np.sum(o == hp.UNSEEN))} UNSEEN of {NPIX} (the cut and the holes)")
check(np.sum(o == hp.UNSEEN) > np.sum(outh == hp.UNSEEN) + 1000, "mask= left nothing out")
o, aw = arkcos.smoothing(holes, fwhm=FWHM, mask=gal, mask_mode="zero", return_weight=True)
check(same_bits(o, hp.read_map(f"{D}/holes_mask_zero.fits", field=0)) and
      same_bits(aw, hp.read_map(f"{D}/holes_mask_zero.fits", field=1)),
      "mask= with mask_mode='zero' differs from arkcos smooth")
o, aw = arkcos.smoothing(m, fwhm=FWHM, return_weight=True)
check(same_bits(o, ref) and same_bits(aw, hp.read_map(f"{D}/m_w.fits", field=1)),
      "return_weight on a complete map differs from --write-weight")
o, aw = arkcos.smoothing(iqu_holes, fwhm=FWHM, mask=gal, return_weight=True)
refw = read(f"{D}/iqu_holes_mask.fits")
check(same_bits(o, refw[:3]), "I, Q, U with mask= differ from arkcos smooth --mask")
check(aw.shape == o.shape and same_bits(aw[0], refw[3]) and same_bits(aw[1], refw[4])
      and same_bits(aw[2], aw[1]), "I, Q, U weights differ from WEIGHT_<column>")
# NESTED: the mask in the maps' order
on = arkcos.smoothing(hp.reorder(holes, r2n=True), fwhm=FWHM, nest=True,
                      mask=hp.reorder(gal, r2n=True))
check(same_bits(on, hp.reorder(hp.read_map(f"{D}/holes_mask.fits", field=0), r2n=True)),
      "nest=True with a NESTED mask differs from the RING result")
# a masked-array mask and UNSEEN in the mask: weight 0, as --mask
gm = np.where(gal == 0, hp.UNSEEN, gal)
check(same_bits(arkcos.smoothing(holes, fwhm=FWHM, mask=gm), hp.read_map(f"{D}/holes_mask.fits", field=0)),
      "UNSEEN in mask= is not weight 0")
check(raises(ValueError, arkcos.smoothing, m, fwhm=FWHM, mask=gal > 0, contains="mask:"),
      "a boolean mask accepted (1 kept or 1 left out?)")
check(raises(ValueError, arkcos.smoothing, m, fwhm=FWHM, mask=gal * 2,
             contains="mask: pixel"), "mask values above 1 accepted")
check(raises(ValueError, arkcos.smoothing, m, fwhm=FWHM, mask=gal[:100], contains="mask:"),
      "a mask of 100 pixels accepted")
check(raises(ValueError, arkcos.smoothing, m, fwhm=FWHM, mask_mode="zero", min_weight=0.5,
             contains="min_weight"), "min_weight with mask_mode='zero' accepted")
check(raises(ValueError, arkcos.smoothing, m, fwhm=FWHM, mask_mode="average",
             contains="mask_mode"), "mask_mode='average' accepted")

# ------------------------------------------------------------------ Plan
print("Plan:")
plan = arkcos.Plan(NSIDE, fwhm=FWHM, threads=2)
maps = [m, holes, m * 2.5 + 1]
seq = [plan(x) for x in maps]
check(same_bits(seq[0], ref) and same_bits(seq[1], refh),
      "a Plan (kernel spectra cached) differs from arkcos smooth")
check(same_bits(plan(m), seq[0]), "a Plan's second call differs from its first")
check(same_bits(plan(iqu), outp), "a Plan on I, Q, U differs from smoothing")
o = np.empty(NPIX)
check(plan(m, out=o) is o and same_bits(o, ref), "out= not filled")
# an out= it cannot fill: refused, saying what it got (a big-endian array as
# healpy.read_map returns them, a wrong shape, a strided view, a list)
for bad, said in ((np.empty(NPIX, ">f8"), ">f8 array"), (np.empty(5), "shape (5,)"),
                  (np.empty((NPIX, 2))[:, 0], "not C-contiguous"), ([0.0], "got list")):
    check(raises(ValueError, plan, m, out=bad, contains=said), f"out= {said}: not refused as such")
print(f"  {plan!r}, memory {plan.memory / 1e6:.1f} MB")
check(0 < plan.bound < 1e-10, f"bound {plan.bound}")
check(plan.backend in ("cpu", "gpu") and plan.stages()["total"] > 0, "backend or stages")

# weights=: the caps' direct weights tabulated or computed in each call,
# the same maps to the last bit; the plan without tables lighter (nside 64
# at 2.8 pixels per FWHM: 2.74 MB with tables, 1.26 MB without, measured)
nw = 64
xw = np.random.default_rng(2).standard_normal(12 * nw ** 2)
pw = {w: arkcos.Plan(nw, fwhm=2.8 * math.sqrt(math.pi / 3) / nw, threads=2, weights=w)
      for w in ("tables", "fly", "auto")}
yw = {w: p(xw) for w, p in pw.items()}
check(same_bits(yw["tables"], yw["fly"]) and same_bits(yw["tables"], yw["auto"]),
      "weights='tables', 'fly' and 'auto' give different maps")
check(pw["fly"].memory < 0.6 * pw["tables"].memory,
      f"weights='fly' holds {pw['fly'].memory} bytes against {pw['tables'].memory} with tables")
# what each holds, as Plan.weights says: "auto" keeps light tables (nside
# 64) and computes them where they would not be (a 2-degree top-hat at
# nside 512: 157 MB of plan with tables against the 114 MB allowed, 27 MB
# on the fly, measured); a smooth kernel has none
check([pw[w].weights for w in ("tables", "fly", "auto")] == ["tables", "fly", "tables"],
      f"Plan.weights: {[pw[w].weights for w in ('tables', 'fly', 'auto')]}")
with arkcos.Plan(512, tophat=math.radians(2), threads=2) as pa:
    check(pa.weights == "fly" and pa.memory < 114e6, f"nside 512, 2-degree top-hat, weights='auto': "
          f"{pa.weights}, {pa.memory / 1e6:.1f} MB (two maps and 64 MB: 114.3 MB)")
check(arkcos.Plan(64, fwhm=math.radians(8), threads=2).weights == "none",
      "a wide Gaussian (harmonic path or smooth caps) should have no direct weights")
check(raises(ValueError, arkcos.Plan, nw, fwhm=0.05, weights="lazy", contains="weights"),
      "weights='lazy' accepted")
for p in pw.values():
    p.close()

# several threads on one plan: serialised, each result as alone
results = [None] * 8
def worker(k):
    results[k] = plan(maps[k % 3])
ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
for t in ts:
    t.start()
for t in ts:
    t.join()
check(all(same_bits(results[k], seq[k % 3]) for k in range(8)),
      "8 threads on one Plan differ from the calls one after another")

# the GIL is released while the engine runs: this thread keeps counting
big = arkcos.Plan(256, fwhm=3 * hp.nside2resol(256), threads=1)
x = np.random.default_rng(1).standard_normal(12 * 256 ** 2)
big(x)
t = threading.Thread(target=big, args=(x,))
count = 0
t.start()
while t.is_alive():
    count += 1
t.join()
print(f"  main thread counted to {count} while a call ran (GIL released; held: ~0)")
check(count > 5000, f"main thread counted to {count} only: the GIL is held during execute")

# contiguous float64 maps are not copied (out= given): nothing of map size
tracemalloc.start()
big(x, out=np.empty_like(x))
tracemalloc.reset_peak()
o = np.empty_like(x)
base = tracemalloc.get_traced_memory()[0]
big(x, out=o)
peak = tracemalloc.get_traced_memory()[1] - base
tracemalloc.stop()
check_le("Python allocations in one call, bytes (map: 6.3 MB)", float(peak), 1e5)
big.close()

# ---------------------------------------------------------------- errors
print("errors:")
check(raises(ValueError, arkcos.smoothing, m, tophat=4.0, contains="cutoff"),
      "tophat beyond pi: no ValueError with the C message")
check(issubclass(arkcos.ArkcosError, ValueError), "ArkcosError is not a ValueError")
check(raises(ValueError, arkcos.smoothing, m, contains="exactly one kernel"), "no kernel accepted")
check(raises(ValueError, arkcos.smoothing, m, fwhm=FWHM, tophat=0.1, contains="exactly one"),
      "two kernels accepted")
check(raises(ValueError, arkcos.smoothing, np.zeros(1000), fwhm=FWHM, contains="HEALPix"),
      "1000 pixels accepted")
check(raises(ValueError, plan, np.zeros(12 * 16 ** 2), contains="nside 32"),
      "a map of another nside accepted by a Plan")
check(raises(ValueError, arkcos.smoothing, iqu, fwhm=FWHM, precision="single",
             contains="double precision"), "pol=True in single precision accepted")
check(raises(ValueError, arkcos.smoothing, m, fwhm=0.2 * hp.nside2resol(NSIDE),
             contains="pixel"), "a sub-pixel Gaussian accepted")
check(raises(ValueError, arkcos.smoothing, m, fwhm=FWHM, threads=-1), "threads=-1 accepted")
bl_cut = np.ones(40)  # a sharp harmonic cut rings: the engine refuses it
check(raises(ValueError, arkcos.smoothing, m, beam_window=bl_cut, contains="ring"),
      "a ringing beam_window accepted")
# every argument of healpy's harmonic transforms: a warning for any value but
# healpy's default, none for the defaults
for name, value in (("iter", 1), ("lmax", 2 * NSIDE), ("mmax", NSIDE), ("use_weights", True),
                    ("use_pixel_weights", True), ("datapath", "/tmp"), ("verbose", False)):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always", arkcos.ArkcosWarning)
        arkcos.smoothing(m, fwhm=FWHM, **{name: value})
    check(any(f"{name}=" in str(x.message) and "ignored" in str(x.message) for x in w),
          f"{name}={value!r} is not reported as ignored")
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always", arkcos.ArkcosWarning)
    arkcos.smoothing(m, fwhm=FWHM, iter=3, lmax=None, mmax=None, use_weights=False,
                     use_pixel_weights=False, datapath=None, verbose=True)
check(not any("ignored" in str(x.message) for x in w),
      f"healpy's defaults reported as ignored: {[str(x.message) for x in w]}")
# backend='gpu' without a usable GPU: worded for Python, not for the command line
try:
    arkcos.smoothing(m, fwhm=FWHM, backend="gpu")
    print("  backend='gpu' ran: a GPU is usable here, its error is not checked")
except arkcos.ArkcosError as e:
    print(f"  backend='gpu': {e}")
    check("backend='gpu'" in str(e) and "--backend" not in str(e) and "binary" not in str(e),
          f"backend='gpu' error worded for the command line: {e}")
# provenance: the library's build commit, as arkcos info of the same build
info = json.loads(subprocess.run([ARKCOS, "info", "--json"], capture_output=True, text=True,
                                 check=True).stdout)
bi = arkcos.build_info()
print(f"  build_info: {bi['commit'][:12]} dirty {bi['dirty']}, version {bi['version']}")
check(bi["commit"] == info["git_commit"] and bi["dirty"] == info["git_dirty"],
      f"build_info() {bi} differs from arkcos info {info['git_commit']} {info['git_dirty']}")
check(bi["version"] == arkcos.__version__ == info["versions"]["arkcos"],
      f"versions: library {bi['version']}, package {arkcos.__version__}")
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always", arkcos.ArkcosWarning)
    arkcos.smoothing(m, fwhm=1.6 * hp.nside2resol(NSIDE))
check(any("pixels" in str(x.message) for x in w), "no warning at 1.6 pixels per FWHM")

# ------------------------------------------------- against healpy.smoothing
print("against healpy.smoothing (nside 64, band-limited maps, lmax 2 nside):")
N2 = 64
np.random.seed(5)
cl2 = 1.0 / (np.arange(3 * N2) + 10.0) ** 2
iqu2 = hp.synfast([cl2, cl2 / 10, cl2 / 20, cl2 / 40], N2, lmax=2 * N2, new=True)


def rel(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2) / np.mean(b ** 2)))


# The pixel sum is a quadrature of the convolution that healpy computes in
# harmonic space: the difference is that quadrature's, and falls as 1 / nside
# (measured at nside 128: 4.0e-4 and 2.5e-4 for I). Measured here (nside 64):
# I 8.3e-4, P 9.0e-4 at 2.8 pixels per FWHM; I 5.7e-4, P 6.3e-4 at 5;
# beam_window 5.7e-4; Q, U smoothed as scalars 41 and 107 times worse in P.
# the defaults (polar quadrature, Q and U included) measured I 1.98e-4, P 1.94e-4 at 2.8; I 3.09e-5,
# P 3.19e-5 at 5 (ring quadrature: I 2.58e-4, 5.5e-5; Q, U by ring quadrature: P 2.61e-4, 6.42e-5)
DEFAULT_BOUNDS = ((2.8, 2.5e-4, 2.5e-4), (5.0, 4e-5, 4e-5))


def p_rel(a, h):
    return math.sqrt(np.mean((a[1] - h[1]) ** 2 + (a[2] - h[2]) ** 2)
                     / np.mean(h[1] ** 2 + h[2] ** 2))


for ppf, bi, bp in ((2.8, 1.1e-3, 1.2e-3), (5.0, 7.5e-4, 8e-4)):
    fw = ppf * hp.nside2resol(N2)
    a = arkcos.smoothing(iqu2, fwhm=fw, cutoff_rel=1e-8, quadrature="point")
    h = hp.smoothing(iqu2, fwhm=fw, lmax=3 * N2 - 1, iter=3)
    check_le(f"I at {ppf} pixels per FWHM, relative rms", rel(a[0], h[0]), bi)
    check_le(f"P at {ppf} pixels per FWHM, relative rms", p_rel(a, h), bp)
    scalar = arkcos.smoothing(iqu2, fwhm=fw, cutoff_rel=1e-8, pol=False, quadrature="point")
    print(f"  P with Q, U as scalars (pol=False): {p_rel(scalar, h):.3e}")
    check(p_rel(scalar, h) > 10 * p_rel(a, h), "pol=False is not far worse than pol=True")
fw = 5.0 * hp.nside2resol(N2)
bl = hp.gauss_beam(fw, lmax=4 * N2)
a = arkcos.smoothing(iqu2[0], beam_window=bl, quadrature="point")
h = hp.smoothing(iqu2[0], beam_window=bl, lmax=3 * N2 - 1, iter=3)
check_le("I with beam_window = gauss_beam at 5 pixels, relative rms", rel(a, h), 7.5e-4)

# The package's defaults: healpy's Gaussian beam and polar quadrature
# (docs/EXACTNESS.md, "Polar reconstruction"), the same bits as the command's
# --gaussian harmonic; closer to healpy than the figures above.
print("the defaults (gaussian='harmonic', quadrature='polar'):")
hp.write_map(f"{D}/iqu2.fits", iqu2, dtype=np.float64, overwrite=True)
for ppf, bi, bp in DEFAULT_BOUNDS:
    f_arcmin = ppf * hp.nside2resol(N2) / ARCMIN
    fw = f_arcmin * ARCMIN                 # as the command turns --fwhm-arcmin into radians
    a = _smoothing(iqu2, fwhm=fw)
    smooth_cli(f"{D}/iqu2.fits", f"{D}/iqu2_h.fits", "--fwhm-arcmin", f_arcmin, "--gaussian", "harmonic")
    check(same_bits(np.asarray(a), read(f"{D}/iqu2_h.fits")),
          f"{ppf} pixels per FWHM: smoothing's defaults differ from arkcos smooth --gaussian harmonic")
    h = hp.smoothing(iqu2, fwhm=fw, lmax=3 * N2 - 1, iter=3)
    check_le(f"defaults: I at {ppf} pixels per FWHM against healpy, relative rms", rel(a[0], h[0]), bi)
    check_le(f"defaults: P at {ppf} pixels per FWHM against healpy, relative rms", p_rel(a, h), bp)
    c = _smoothing(np.ones(hp.nside2npix(N2)), fwhm=fw)
    check_le(f"defaults: a constant map at {ppf} pixels per FWHM, max |out - 1|", float(np.max(np.abs(c - 1))), 1e-13)

# quadrature="polar" (the default): the same bits as arkcos smooth (whose
# default it is too) and as quadrature="polar" given; against "ring" I, Q
# and U change, and only near the poles
print("quadrature='polar':")
f_arcmin = 5.0 * hp.nside2resol(N2) / ARCMIN
a = _smoothing(iqu2, fwhm=f_arcmin * ARCMIN, quadrature="polar")
d = _smoothing(iqu2, fwhm=f_arcmin * ARCMIN)
r = _smoothing(iqu2, fwhm=f_arcmin * ARCMIN, quadrature="ring")
smooth_cli(f"{D}/iqu2.fits", f"{D}/iqu2_p.fits", "--fwhm-arcmin", f_arcmin, "--gaussian", "harmonic")
check(same_bits(np.asarray(a), np.asarray(d)), "polar: the default differs from quadrature='polar'")
check(same_bits(np.asarray(a), read(f"{D}/iqu2_p.fits")), "polar: smoothing differs from arkcos smooth")
z = np.abs(hp.pix2vec(N2, np.arange(hp.nside2npix(N2)))[2])
for c, name in enumerate("IQU"):
    moved = np.asarray(a)[c] != np.asarray(r)[c]
    check(moved.any() and z[moved].min() > 0.75,  # the first ~47 rings of each cap here (z > 0.82)
          f"polar: {name} moved where |z| = {z[moved].min() if moved.any() else 0:.3f}")
# Plan.polar: where the last call took it (the summary line's polar= of
# arkcos smooth): both caps at 5 px/FWHM for I, Q and U; none with ring
# quadrature; the south cap alone with a missing pixel in the north disc
pl = arkcos.Plan(N2, fwhm=f_arcmin * ARCMIN, pol=True)
check(pl.polar == (), f"Plan.polar before a call: {pl.polar}")
pl(iqu2)
check(pl.polar == ("both",) * 3, f"Plan.polar, I, Q, U at 5 px/FWHM: {pl.polar}")
pr = arkcos.Plan(N2, fwhm=f_arcmin * ARCMIN, quadrature="ring")
pr(iqu2[0])
check(pr.polar == ("none",), f"Plan.polar, ring quadrature: {pr.polar}")
hole = np.array(iqu2[0], dtype=np.float64)
hole[5] = hp.UNSEEN
ps = arkcos.Plan(N2, fwhm=f_arcmin * ARCMIN)
ps(hole)
check(ps.polar == ("south",), f"Plan.polar, a hole in the north disc: {ps.polar}")
try:
    _smoothing(iqu2[0], fwhm=f_arcmin * ARCMIN, quadrature="poles")
    check(False, "quadrature='poles' accepted")
except ValueError as e:
    check("'polar'" in str(e), f"quadrature='poles': {e}")

pycheck.report()
