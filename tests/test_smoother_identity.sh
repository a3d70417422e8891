#!/usr/bin/env bash
# test_smoother_identity.sh -- one smoothing layer (arkcos_smoother,
# arkcos.h): `arkcos smooth`, the Python package and a C program over the
# library (tests/smoother_api.c) give the same bytes.
#
# A matrix of `arkcos smooth` runs at nside 16 and 32: methods (arkcos,
# direct, fsht), modes (enhanced, paper), double and single precision,
# RING and NESTED files, I and I, Q, U files, UNSEEN pixels, --mask in both
# --mask-mode's, --write-weight, a beam file, a kernel file, a top-hat,
# narrow kernels with and without --normalize, 1 and 2 threads. For the
# cases the library serves itself (--method arkcos, files of one nside) the
# output of the C program over the library and of arkcos.smoothing must be
# the CLI's byte for byte (the maps' bytes: the files' headers differ).
#
# With ARKCOS_OLD=path/to/an/older/arkcos every case is also compared, as
# FITS bytes with cmp, with that binary's output (the check made when the
# command moved onto the library). Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
. tests/cli_lib.sh identity
BUILD="${BUILD:-build}"
API="$BUILD/tests/smoother_api"
OLD="${ARKCOS_OLD:-}"

# ---------------------------------------------------------------- fixtures
if ! "$PYTHON" - "$T" <<'PYEOF'
import sys, warnings
import numpy as np
import healpy as hp
warnings.simplefilter("ignore")
d = sys.argv[1]
rng = np.random.default_rng(5)
def put(name, x, **kw):
    hp.write_map(f"{d}/{name}", x, overwrite=True, **kw)
for nside in (16, 32):
    npix = 12 * nside ** 2
    i, q, u = rng.normal(1.0, 1.0, npix), rng.normal(0, 1, npix), rng.normal(0, 1, npix)
    theta, phi = hp.pix2ang(nside, np.arange(npix))
    b = 90 - np.degrees(theta)
    gal = np.abs(b) >= 20
    hole = rng.random(npix) < 0.03
    f64 = dict(dtype=np.float64)
    put(f"i{nside}.fits", i, **f64)
    put(f"i{nside}_f32.fits", i, dtype=np.float32)
    put(f"i{nside}_nest.fits", hp.reorder(i, r2n=True), nest=True, **f64)
    put(f"holes{nside}.fits", np.where(hole, hp.UNSEEN, i), **f64)
    put(f"holes{nside}_nest.fits", hp.reorder(np.where(hole, hp.UNSEEN, i), r2n=True), nest=True, **f64)
    put(f"iqu{nside}.fits", [i, q, u], **f64)
    put(f"iqu{nside}_nest.fits", [hp.reorder(x, r2n=True) for x in (i, q, u)], nest=True, **f64)
    # Q and U miss different pixels: P is missing where either is
    qh, uh = np.where(hole, hp.UNSEEN, q), np.where(np.roll(hole, 7), hp.UNSEEN, u)
    put(f"iquholes{nside}.fits", [np.where(gal, i, hp.UNSEEN), qh, uh], **f64)
    put(f"qu{nside}.fits", [q, u], column_names=["Q_STOKES", "U_STOKES"], **f64)
    put(f"mask{nside}.fits", gal.astype(np.float64), **f64)
    apod = np.clip((np.abs(b) - 15) / 10, 0, 1)
    put(f"apod{nside}.fits", apod, **f64)
hp.write_cl(f"{d}/beam.fits", hp.gauss_beam(np.radians(5.0), lmax=400), overwrite=True)
a = np.linspace(0, np.radians(8), 60)
np.savetxt(f"{d}/kernel.txt", np.c_[a, np.exp(-0.5 * (a / np.radians(2.5)) ** 2) * (1 + 0.2 * np.cos(a * 40))])
PYEOF
then echo "FAIL fixtures"; echo "TESTS 0 1"; exit 1; fi

# run NAME BINARY OUTFILE ARGS...
run() {
  local bin=$1 out=$2; shift 2
  "$bin" smooth "$@" "$out" --force -q >"$out.stdout" 2>"$out.stderr"
}

# case NAME API(1: also the C program and Python) ARGS... (IN first)
n=0
case_() {
  local name=$1 api=$2; shift 2
  n=$((n + 1))
  local new="$T/new$n.fits"
  if ! run "$ARKCOS" "$new" "$@"; then bad "$name: arkcos smooth failed ($(cat "$new.stderr"))"; return; fi
  if [ -n "$OLD" ]; then
    local old="$T/old$n.fits"
    run "$OLD" "$old" "$@" || { bad "$name: the older binary failed ($(cat "$old.stderr"))"; return; }
    if cmp -s "$old" "$new"; then ok; else bad "$name: differs from $OLD"; fi
  fi
  if [ "$api" = 1 ]; then echo "$name|$new|$*" >>"$T/api_cases"; fi
  echo "  $name: $(md5sum <"$new" | cut -c1-12)"
  ok
}

F="--fwhm-arcmin 200"
case_ "I, default" 1 "$T/i32.fits" $F
case_ "I, 1 thread" 1 "$T/i32.fits" $F --threads 1
case_ "I, 2 threads" 1 "$T/i32.fits" $F --threads 2
case_ "I, float32 file" 1 "$T/i32_f32.fits" $F
case_ "I, NESTED" 1 "$T/i32_nest.fits" $F
case_ "I, single" 1 "$T/i32.fits" $F --precision single
case_ "I, paper" 1 "$T/i32.fits" $F --mode paper
case_ "I, paper single" 1 "$T/i32.fits" $F --mode paper --precision single
case_ "I, accuracy" 1 "$T/i32.fits" $F --accuracy 1e-6
case_ "I, cutoff-rel" 1 "$T/i32.fits" $F --cutoff-rel 1e-8
case_ "I, cutoff-deg" 1 "$T/i32.fits" $F --cutoff-deg 9.3
case_ "I, top-hat" 1 "$T/i32.fits" --tophat-deg 4.3
case_ "I, beam file" 1 "$T/i32.fits" --beam-file "$T/beam.fits"
case_ "I, kernel file" 1 "$T/i32.fits" --kernel-file "$T/kernel.txt"
case_ "I, harmonic Gaussian" 1 "$T/i32.fits" $F --gaussian harmonic
case_ "I, point quadrature" 1 "$T/i32.fits" $F --quadrature point
case_ "I, harmonic, point" 1 "$T/i32.fits" $F --gaussian harmonic --quadrature point
case_ "UNSEEN, zero, point" 1 "$T/holes32.fits" $F --mask-mode zero --quadrature point
case_ "IQU, point" 1 "$T/iqu32.fits" $F --quadrature point
case_ "IQU, harmonic" 1 "$T/iqu32.fits" $F --gaussian harmonic
case_ "I, direct" 0 "$T/i16.fits" --fwhm-arcmin 700 --method direct
case_ "I, fsht" 0 "$T/i32.fits" $F --method fsht
case_ "UNSEEN, normalize" 1 "$T/holes32.fits" $F
case_ "UNSEEN, NESTED" 1 "$T/holes32_nest.fits" $F
case_ "UNSEEN, min-weight 0.8" 1 "$T/holes32.fits" $F --min-weight 0.8
case_ "UNSEEN, zero" 1 "$T/holes32.fits" $F --mask-mode zero
case_ "UNSEEN, single" 1 "$T/holes32.fits" $F --precision single
case_ "UNSEEN, direct" 0 "$T/holes16.fits" --fwhm-arcmin 700 --method direct
case_ "UNSEEN, fsht" 0 "$T/holes32.fits" $F --method fsht
case_ "mask, normalize" 1 "$T/i32.fits" $F --mask "$T/mask32.fits"
case_ "mask, zero" 1 "$T/i32.fits" $F --mask "$T/mask32.fits" --mask-mode zero
case_ "apodised mask, write-weight" 1 "$T/holes32.fits" $F --mask "$T/apod32.fits" --write-weight
case_ "write-weight, complete" 1 "$T/i32.fits" $F --write-weight
case_ "IQU" 1 "$T/iqu32.fits" $F
case_ "IQU, NESTED" 1 "$T/iqu32_nest.fits" $F
case_ "IQU, 1 thread" 1 "$T/iqu32.fits" $F --threads 1
case_ "IQU, holes" 1 "$T/iquholes32.fits" $F
case_ "IQU, holes, zero" 1 "$T/iquholes32.fits" $F --mask-mode zero
case_ "IQU, holes, mask, write-weight" 1 "$T/iquholes32.fits" $F --mask "$T/apod32.fits" --write-weight
case_ "IQU, no-pol" 1 "$T/iqu32.fits" $F --no-pol
case_ "IQU, direct" 0 "$T/iqu16.fits" --fwhm-arcmin 700 --method direct
case_ "IQU, fsht" 0 "$T/iqu32.fits" $F --method fsht
case_ "QU, pol" 1 "$T/qu32.fits" $F --pol
case_ "IQU, beam file" 1 "$T/iqu32.fits" --beam-file "$T/beam.fits"
case_ "narrow" 1 "$T/i16.fits" --fwhm-arcmin 350
case_ "narrow, normalize" 1 "$T/i16.fits" --fwhm-arcmin 350 --normalize
case_ "narrow, normalize, holes" 1 "$T/holes16.fits" --fwhm-arcmin 350 --normalize
case_ "narrow, normalize, IQU" 1 "$T/iqu16.fits" --fwhm-arcmin 350 --normalize
case_ "narrow, normalize, direct" 0 "$T/i16.fits" --fwhm-arcmin 350 --normalize --method direct
case_ "sub-pixel, direct" 0 "$T/i16.fits" --fwhm-arcmin 100 --method direct --allow-subpixel
case_ "narrow top-hat, normalize" 1 "$T/i16.fits" --tophat-deg 4.5 --normalize

# ------------------------------------------- the C API and Python, the same bytes
if [ ! -x "$API" ]; then bad "no $API (make)"; echo "TESTS $pass $fail"; exit 1; fi
napi=0
while IFS='|' read -r name cli args; do
  napi=$((napi + 1))
  # shellcheck disable=SC2086
  set -- $args
  in=$1; shift
  c="$T/api$napi.fits"
  if ! "$API" "$in" "$c" "$@" >"$c.stdout" 2>"$c.stderr"; then bad "$name: smoother_api failed: $(cat "$c.stderr")"; continue; fi
  if cmp -s "$cli" "$c"; then ok; else bad "$name: the C API's output differs from arkcos smooth's"; fi
  echo "$name|$cli|$in|$*" >>"$T/py_cases"
done <"$T/api_cases"
echo "  C API: $napi cases compared"

# Python: the cases its arguments can say (no paper mode or kernel files
# there); the maps' data compared as bytes
# Python (not over a sanitized library, make sanitize: an uninstrumented
# python3 cannot load it; make test runs this part)
if readelf -d "$PWD/$BUILD/libarkcos.so.1" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
  echo "  Python: skipped (a sanitized library)"
else
PYTHONPATH="$PWD/python" ARKCOS_PYTHON_LIBRARY="$PWD/$BUILD/libarkcos.so.1" \
  "$PYTHON" - "$T/py_cases" <<'PYEOF' || fail=$((fail + 1))
import math, sys, warnings
import numpy as np
import healpy as hp
from astropy.io import fits
import arkcos
warnings.simplefilter("ignore")
npass = nfail = nskip = 0
for line in open(sys.argv[1]):
    name, cli, inp, args = line.rstrip("\n").split("|")
    a = args.split()
    if any(x in a for x in ("--mode", "--kernel-file")):
        nskip += 1
        continue
    opt = dict(zip(a[::2], a[1::2]))
    kw = {}
    if "--fwhm-arcmin" in opt:
        kw["fwhm"] = float(opt["--fwhm-arcmin"]) * (math.pi / 10800)
        kw["gaussian"] = opt.get("--gaussian", "profile")   # the command's default; Python's is harmonic
    if "--quadrature" in opt: kw["quadrature"] = opt["--quadrature"]
    if "--tophat-deg" in opt: kw["tophat"] = float(opt["--tophat-deg"]) * (math.pi / 180)
    if "--beam-file" in opt: kw["beam_window"] = hp.read_cl(opt["--beam-file"])
    if "--cutoff-rel" in opt: kw["cutoff_rel"] = float(opt["--cutoff-rel"])
    if "--cutoff-deg" in opt: kw["cutoff"] = float(opt["--cutoff-deg"]) * (math.pi / 180)
    if "--precision" in opt: kw["precision"] = opt["--precision"]
    if "--accuracy" in opt: kw["accuracy"] = float(opt["--accuracy"])
    if "--threads" in opt: kw["threads"] = int(opt["--threads"])
    if "--mask-mode" in opt: kw["mask_mode"] = opt["--mask-mode"]
    if "--min-weight" in opt: kw["min_weight"] = float(opt["--min-weight"])
    if "--mask" in opt: kw["mask"] = hp.read_map(opt["--mask"], dtype=np.float64)
    if "--normalize" in a: kw["normalize"] = True
    with fits.open(inp) as f:
        h = f[1].header
        nest = h.get("ORDERING", "RING").strip() == "NESTED"
        data = f[1].data
        cols = [data.field(i).ravel() for i in range(len(data.columns))]
        names = [c.name for c in data.columns]
    if nest and "mask" in kw:
        kw["mask"] = hp.reorder(kw["mask"], r2n=True)
    pol = False if "--no-pol" in a else ("QU" if len(cols) == 2 else True)
    maps = np.array(cols) if len(cols) > 1 else cols[0]
    out = arkcos.smoothing(maps, nest=nest, pol=pol, **kw)
    out = np.atleast_2d(out)
    with fits.open(cli) as f:
        ref = [f[1].data.field(i).ravel() for i in range(len(cols))]
    same = all(np.asarray(o, dtype=r.dtype.newbyteorder("=")).tobytes() ==
               r.astype(r.dtype.newbyteorder("=")).tobytes() for o, r in zip(out, ref))
    if same:
        npass += 1
    else:
        nfail += 1
        d = max(float(np.max(np.abs(np.asarray(o, np.float64) - r))) for o, r in zip(out, ref))
        print(f"FAIL {name}: arkcos.smoothing differs from arkcos smooth (max |diff| {d:.3g})")
print(f"  Python: {npass} cases the same, {nskip} not expressible")
with open(sys.argv[1] + ".result", "w") as f:
    f.write(f"{npass} {nfail}\n")
PYEOF
fi
if [ -f "$T/py_cases.result" ]; then
  read -r pp pf <"$T/py_cases.result"
  pass=$((pass + pp)); fail=$((fail + pf))
fi
echo "TESTS $pass $fail"
[ "$fail" -eq 0 ]
