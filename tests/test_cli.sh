#!/usr/bin/env bash
# test_cli.sh -- `arkcos smooth` end to end: every bad input exits with 2,
# names the offending argument or file and leaves no output (nor a
# temporary file) behind; --force; several inputs into a folder; a constant
# map stays constant. Fixtures are written with healpy/astropy ($PYTHON).
# Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
. tests/cli_lib.sh cli

# ---------------------------------------------------------------- fixtures
if ! "$PYTHON" - "$T" <<'EOF'
import sys, warnings
import numpy as np
import healpy as hp
from astropy.io import fits
warnings.simplefilter("ignore")
d = sys.argv[1]
nside = 16
npix = 12 * nside ** 2
hp.write_map(f"{d}/const.fits", np.full(npix, 2.5), dtype=np.float64)
rng = np.random.default_rng(7)
hp.write_map(f"{d}/rand.fits", rng.standard_normal(npix), dtype=np.float32)
hp.write_map(f"{d}/rand2.fits", rng.standard_normal(npix), dtype=np.float64)
# One unit pixel on the equator (the top-hat's disc stays in the belt).
src = np.zeros(npix)
src[hp.ang2pix(nside, np.pi / 2, 0.3)] = 1
hp.write_map(f"{d}/source.fits", src, dtype=np.float64)
fits.PrimaryHDU(np.zeros((4, 4))).writeto(f"{d}/image.fits")
def table(name, n, **keys):
    h = fits.BinTableHDU.from_columns(
        [fits.Column(name="T", format="D", array=np.zeros(n))])
    for k, v in keys.items():
        h.header[k] = v
    fits.HDUList([fits.PrimaryHDU(), h]).writeto(f"{d}/{name}")
table("nonside.fits", npix, PIXTYPE="HEALPIX", ORDERING="RING")
table("nside0.fits", npix, PIXTYPE="HEALPIX", ORDERING="RING", NSIDE=0)
table("badlen.fits", npix - 7, PIXTYPE="HEALPIX", ORDERING="RING", NSIDE=nside)
table("badorder.fits", npix, PIXTYPE="HEALPIX", ORDERING="SPIRAL", NSIDE=nside)
with open(f"{d}/notfits.fits", "w") as f:
    f.write("this is not a FITS file\n")
with open(f"{d}/const.fits", "rb") as f:
    data = f.read()
with open(f"{d}/truncated.fits", "wb") as f:
    f.write(data[: len(data) // 2])
# Kernel files: a good one (Gaussian, 10 deg FWHM, to 15 deg) and broken ones.
a = np.linspace(0, np.radians(15), 200)
np.savetxt(f"{d}/kernel.txt", np.c_[a, np.exp(-0.5 * (a / np.radians(10 / 2.3548)) ** 2)])
with open(f"{d}/kernel_text.txt", "w") as f:
    f.write("0 1\n0.01 abc\n")
with open(f"{d}/kernel_decreasing.txt", "w") as f:
    f.write("0 1\n0.02 0.5\n0.01 0.2\n")
with open(f"{d}/kernel_negative.txt", "w") as f:
    f.write("-0.01 1\n0.02 0.5\n")
EOF
then
  echo "FAIL cannot write fixtures with $PYTHON (healpy, astropy needed)"
  echo "TESTS 0 1"; exit 1
fi

# expect_fail NAME EXPECTED_TEXT OUT ARGS... : exit 2, stderr contains
# EXPECTED_TEXT, OUT does not exist afterwards, no temporary file anywhere.
expect_fail() { expect_refused "$@"; } # NAME TEXT OUT ARGS (cli_lib.sh)

G=(--fwhm-arcmin 600)   # 10 deg: about 3 pixels per FWHM at nside 16
O=$T/out.fits

# ----------------------------------------------------------- bad inputs
expect_fail "missing input"   "nosuch.fits"        "$O" "$T/nosuch.fits" "$O" "${G[@]}"
expect_fail "not FITS"        "not a FITS file"    "$O" "$T/notfits.fits" "$O" "${G[@]}"
expect_fail "image, no table" "not a HEALPix map"  "$O" "$T/image.fits" "$O" "${G[@]}"
expect_fail "no NSIDE"        "NSIDE"              "$O" "$T/nonside.fits" "$O" "${G[@]}"
expect_fail "NSIDE 0"         "NSIDE = 0"          "$O" "$T/nside0.fits" "$O" "${G[@]}"
expect_fail "wrong length"    "12 nside^2"         "$O" "$T/badlen.fits" "$O" "${G[@]}"
expect_fail "bad ORDERING"    "SPIRAL"             "$O" "$T/badorder.fits" "$O" "${G[@]}"
expect_fail "truncated file"  "truncated.fits"     "$O" "$T/truncated.fits" "$O" "${G[@]}"
expect_fail "input is a dir"  "directory"          "$O" "$T" "$O" "${G[@]}"
if [ "$(id -u)" -ne 0 ]; then   # root reads a mode-000 file anyway
  cp "$T/const.fits" "$T/noread.fits"; chmod 000 "$T/noread.fits"
  expect_fail "unreadable input" "noread.fits" "$O" "$T/noread.fits" "$O" "${G[@]}"
fi
C=$T/const.fits
expect_fail "FWHM 0"          "--fwhm-arcmin"      "$O" "$C" "$O" --fwhm-arcmin 0
expect_fail "FWHM negative"   "--fwhm-arcmin"      "$O" "$C" "$O" --fwhm-arcmin -5
expect_fail "FWHM not number" "--fwhm-arcmin"      "$O" "$C" "$O" --fwhm-arcmin ten
expect_fail "FWHM inf"        "--fwhm-arcmin"      "$O" "$C" "$O" --fwhm-arcmin inf
expect_fail "cutoff 0 deg"    "--cutoff-deg"       "$O" "$C" "$O" "${G[@]}" --cutoff-deg 0
expect_fail "cutoff 181 deg"  "--cutoff-deg"       "$O" "$C" "$O" "${G[@]}" --cutoff-deg 181
expect_fail "cutoff-rel 0"    "--cutoff-rel"       "$O" "$C" "$O" "${G[@]}" --cutoff-rel 0
expect_fail "cutoff-rel 1"    "--cutoff-rel"       "$O" "$C" "$O" "${G[@]}" --cutoff-rel 1
expect_fail "both cutoffs"    "--cutoff-rel"       "$O" "$C" "$O" "${G[@]}" --cutoff-deg 5 --cutoff-rel 1e-3
expect_fail "both kernels"    "--kernel-file"      "$O" "$C" "$O" "${G[@]}" --kernel-file "$T/kernel.txt"
expect_fail "no kernel"       "--fwhm-arcmin"      "$O" "$C" "$O"
expect_fail "kernel missing"  "nokernel.txt"       "$O" "$C" "$O" --kernel-file "$T/nokernel.txt"
expect_fail "kernel text"     "kernel_text.txt"    "$O" "$C" "$O" --kernel-file "$T/kernel_text.txt"
expect_fail "kernel decreasing" "kernel_decreasing.txt" "$O" "$C" "$O" --kernel-file "$T/kernel_decreasing.txt"
expect_fail "kernel negative" "kernel_negative.txt" "$O" "$C" "$O" --kernel-file "$T/kernel_negative.txt"
expect_fail "lmax 0"          "--lmax"             "$O" "$C" "$O" "${G[@]}" --method fsht --lmax 0
expect_fail "lmax > 4 nside"  "--lmax"             "$O" "$C" "$O" "${G[@]}" --method fsht --lmax 65
expect_fail "iter -1"         "--iter"             "$O" "$C" "$O" "${G[@]}" --method fsht --iter -1
expect_fail "oversample 9"   "--oversample"       "$O" "$C" "$O" "${G[@]}" --oversample 9
expect_fail "oversample+direct" "--oversample"    "$O" "$C" "$O" "${G[@]}" --method direct --oversample 2
expect_fail "lmax w/o fsht"   "--lmax"             "$O" "$C" "$O" "${G[@]}" --lmax 10
expect_fail "mode w/ direct"  "--mode"             "$O" "$C" "$O" "${G[@]}" --method direct --mode paper
expect_fail "unknown method"  "--method"           "$O" "$C" "$O" "${G[@]}" --method magic
expect_fail "unknown mode"    "--mode"             "$O" "$C" "$O" "${G[@]}" --mode fast
expect_fail "threads -1"      "--threads"          "$O" "$C" "$O" "${G[@]}" --threads -1
expect_fail "tophat 0"        "--tophat-deg"       "$O" "$C" "$O" --tophat-deg 0
expect_fail "tophat negative" "--tophat-deg"       "$O" "$C" "$O" --tophat-deg -5
expect_fail "tophat 180.5"    "--tophat-deg"       "$O" "$C" "$O" --tophat-deg 180.5
expect_fail "tophat nan"      "--tophat-deg"       "$O" "$C" "$O" --tophat-deg nan
expect_fail "tophat inf"      "--tophat-deg"       "$O" "$C" "$O" --tophat-deg inf
expect_fail "tophat text"     "--tophat-deg"       "$O" "$C" "$O" --tophat-deg wide
expect_fail "tophat + fwhm"   "--tophat-deg"       "$O" "$C" "$O" --tophat-deg 10 "${G[@]}"
expect_fail "tophat + file"   "--tophat-deg"       "$O" "$C" "$O" --tophat-deg 10 --kernel-file "$T/kernel.txt"
expect_fail "tophat + cutoff-deg" "--cutoff-deg"   "$O" "$C" "$O" --tophat-deg 10 --cutoff-deg 5
expect_fail "tophat + cutoff-rel" "--cutoff-rel"   "$O" "$C" "$O" --tophat-deg 10 --cutoff-rel 1e-3
expect_fail "accuracy -1e-6"  "--accuracy"         "$O" "$C" "$O" "${G[@]}" --accuracy -1e-6
expect_fail "accuracy nan"    "--accuracy"         "$O" "$C" "$O" "${G[@]}" --accuracy nan
expect_fail "accuracy inf"    "--accuracy"         "$O" "$C" "$O" "${G[@]}" --accuracy inf
expect_fail "accuracy text"   "--accuracy"         "$O" "$C" "$O" "${G[@]}" --accuracy tight
expect_fail "accuracy 1e-3x"  "--accuracy"         "$O" "$C" "$O" "${G[@]}" --accuracy 1e-3x
expect_fail "accuracy empty"  "--accuracy"         "$O" "$C" "$O" "${G[@]}" --accuracy=
expect_fail "accuracy direct" "--accuracy"         "$O" "$C" "$O" "${G[@]}" --method direct --accuracy 1e-6
expect_fail "accuracy fsht"   "--accuracy"         "$O" "$C" "$O" "${G[@]}" --method fsht --accuracy 1e-6
expect_fail "accuracy paper"  "--accuracy"         "$O" "$C" "$O" "${G[@]}" --mode paper --accuracy 1e-6
expect_fail "unknown option"  "--bogus"            "$O" "$C" "$O" "${G[@]}" --bogus
expect_fail "missing value"   "--fwhm-arcmin"      "$O" "$C" "$O" --fwhm-arcmin
expect_fail "value is option" "--cutoff-deg"       "$O" "$C" "$O" "${G[@]}" --cutoff-deg --force
expect_fail "repeated option" "--fwhm-arcmin"      "$O" "$C" "$O" "${G[@]}" --fwhm-arcmin 5

# Every flag `smooth --help` lists is a row of the one option table
# (harness/common/options.h): given a value it cannot take, each is refused
# by its own name (never "unknown option"), with the table's wording.
flags=$("$ARKCOS" smooth --help | grep -oE -- '(^|[ ,(])--[a-z][a-z-]+' | grep -oE -- '--[a-z-]+' | sort -u)
nflags=$(echo "$flags" | wc -w)
# 37 today: the 36 rows of smooth_opts and --help
[ "$nflags" -ge 37 ] && ok || bad "smooth --help lists $nflags flags, expected at least 37 (36 rows and --help)"
for f in $flags; do
  [ "$f" = --help ] && continue
  rm -f "$O"
  "$ARKCOS" smooth "$C" "$O" "${G[@]}" "$f=@@" >"$T/stdout" 2>"$T/stderr"; rc=$?
  if [ $rc -eq 2 ] && { grep -qF -- "$f" "$T/stderr" || grep -qF "@@" "$T/stderr"; } && ! grep -q "unknown option" "$T/stderr" && [ ! -e "$O" ]; then
    ok
  else
    bad "$f=@@: exit $rc, expected 2 naming $f: $(head -1 "$T/stderr")"
  fi
done
# One flag, one range, the same words in every command: --iter and --lmax
# as `compare-maps` takes them.
expect_fail "iter 1001"       "--iter: must be <= 1000, got '1001'" "$O" "$C" "$O" "${G[@]}" --method fsht --iter 1001
"$ARKCOS" compare-maps "$C" "$C" --iter 1001 2>"$T/cm_err" >/dev/null
grep -qF -- "--iter: must be <= 1000, got '1001'" "$T/cm_err" && ok || bad "compare-maps --iter 1001: $(cat "$T/cm_err")"
expect_fail "lmax 0 words"    "--lmax: must be >= 1, got '0'" "$O" "$C" "$O" "${G[@]}" --method fsht --lmax 0
expect_fail "bool with value" "--force: takes no value" "$O" "$C" "$O" "${G[@]}" --force=yes
expect_fail "tophat + cutoff-deg words" "--cutoff-deg does not apply to --tophat-deg" "$O" "$C" "$O" --tophat-deg 10 --cutoff-deg 5
expect_fail "no output"       "OUT.fits"           "$O" "$C" "${G[@]}"
expect_fail "several in, file out" "$T/out.fits"   "$O" "$C" "$T/rand.fits" "$O" "${G[@]}"
expect_fail "no output folder" "nodir"            "$T/nodir/out.fits" "$C" "$T/nodir/out.fits" "${G[@]}"
mkdir -p "$T/d1/const.fits"   # OUTDIR/<name of IN> is itself a folder
expect_fail "output is a folder" "output is a folder" "$T/none" "$C" "$T/d1" "${G[@]}"
# One bad input among several: nothing at all is written.
mkdir -p "$T/batch"
expect_fail "bad input in batch" "badlen.fits"     "$T/batch/const.fits" "$C" "$T/badlen.fits" "$T/batch/" "${G[@]}"
[ -z "$(ls -A "$T/batch")" ] && ok || bad "bad input in batch: $(ls "$T/batch") written"
# Two inputs with the same name would overwrite each other's output.
mkdir -p "$T/sub"; cp "$C" "$T/sub/const.fits"
expect_fail "output collision" "const.fits"        "$T/batch/const.fits" "$C" "$T/sub/const.fits" "$T/batch/" "${G[@]}"

# --backend gpu: exit 2 with the reason where there is no usable GPU.
"$ARKCOS" smooth "$C" "$O" "${G[@]}" --backend gpu >"$T/stdout" 2>"$T/stderr"
rc=$?
if [ $rc -eq 0 ]; then
  grep -q "backend=gpu" "$T/stdout" && ok || bad "--backend gpu ran but did not report backend=gpu"
else
  [ $rc -eq 2 ] && grep -qF -- "--backend gpu" "$T/stderr" && [ ! -e "$O" ] && ok ||
    bad "--backend gpu without a device: exit $rc: $(cat "$T/stderr")"
fi
rm -f "$O"

# ------------------------------------------------------- --force, --help
"$ARKCOS" smooth --help >"$T/stdout" 2>&1 && grep -q -- "--cutoff-rel 1e-13 for scalar columns with at least" "$T/stdout" &&
  grep -q -- "harmonic path (with libsharp; 2.5 nside at nside 1024" "$T/stdout" && ok ||
  bad "--help: exit status or default cutoff not documented"
"$ARKCOS" smooth "$C" "$O" "${G[@]}" >"$T/stdout" 2>"$T/stderr" && [ -s "$O" ] && ok ||
  bad "smooth: $(cat "$T/stderr")"
grep -qE '^smooth: .*const.fits -> .*out.fits nside=16 .*method=arkcos .*time=[0-9.]+s .*map_fft .*bad_pixels=0$' "$T/stdout" && ok ||
  bad "summary line: $(cat "$T/stdout")"
cksum_before=$(cksum <"$O")
expect_fail "output exists"   "--force"            "$T/none" "$C" "$O" "${G[@]}"
[ "$(cksum <"$O")" = "$cksum_before" ] && ok || bad "existing output modified without --force"
"$ARKCOS" smooth "$T/rand.fits" "$O" --fwhm-arcmin=600 --force >/dev/null 2>"$T/stderr" && ok ||
  bad "--force: $(cat "$T/stderr")"
[ "$(cksum <"$O")" != "$cksum_before" ] && ok || bad "--force did not replace the output"
[ -z "$(find "$T" -name '*.tmp-*' -print -quit)" ] && ok || bad "temporary file left after --force"

# --threads 0: all cores, as in sweep configs
"$ARKCOS" smooth "$C" "$T/threads0.fits" "${G[@]}" --threads 0 >"$T/stdout" 2>"$T/stderr" &&
  grep -q "threads=$(nproc) " "$T/stdout" && ok ||
  bad "--threads 0 is not all cores: $(cat "$T/stdout" "$T/stderr")"

# ---------------------------------------------- several inputs, one plan
"$ARKCOS" smooth "$C" "$T/rand.fits" "$T/rand2.fits" "$T/many/" "${G[@]}" --threads 2 \
  >"$T/stdout" 2>"$T/stderr"
rc=$?
[ $rc -eq 0 ] && [ -s "$T/many/const.fits" ] && [ -s "$T/many/rand.fits" ] && [ -s "$T/many/rand2.fits" ] && ok ||
  bad "three inputs into a new folder: exit $rc $(cat "$T/stderr")"
[ "$(grep -c '^smooth: .* -> ' "$T/stdout")" -eq 3 ] && grep -q '^smooth: 3 maps in 3 file(s), 1 plan(s)' "$T/stdout" && ok ||
  bad "batch summary: $(cat "$T/stdout")"
# The batch result equals smoothing the map on its own (to rounding: the
# batch keeps kernel spectra from plan creation, and FFTW plans may differ
# from run to run; measured max relative difference 0 to 3.7e-16).
"$ARKCOS" smooth "$T/rand2.fits" "$T/single.fits" "${G[@]}" >/dev/null 2>&1
diff=$("$PYTHON" -c "
import healpy as h, numpy as n
a = h.read_map('$T/single.fits'); b = h.read_map('$T/many/rand2.fits')
print(abs(a - b).max() / abs(a).max())" 2>/dev/null)
check_le "batch vs single-map output, max rel difference" "${diff:-nan}" 1e-13
# An existing folder as the single output.
"$ARKCOS" smooth "$C" "$T/sub" "${G[@]}" --force >/dev/null 2>"$T/stderr" && ok || bad "into folder: $(cat "$T/stderr")"

# ------------------------------------------------ constant map stays constant
# K is normalised to unit integral; the discrete sum (4 pi / npix) sum K then
# differs from 1 by the quadrature error of HEALPix pixels, which shrinks as
# the kernel covers more pixels. Measured max |s/2.5 - 1| at nside 16:
# FWHM 10 deg (3 pixels per FWHM): 3.17e-2 (arkcos, direct);
# FWHM 40 deg: 2.46e-3 (arkcos and direct), fsht (iter 3) 1.2e-4.
const_dev() {  # prints max |map / 2.5 - 1|
  "$PYTHON" -c "import healpy as h, numpy as n; print(abs(h.read_map('$1') / 2.5 - 1).max())" 2>/dev/null
}
for m in arkcos direct; do
  "$ARKCOS" smooth "$C" "$T/c_$m.fits" --fwhm-arcmin 2400 --method $m >/dev/null 2>"$T/stderr" ||
    bad "constant, $m: $(cat "$T/stderr")"
  check_le "constant map, FWHM 40 deg, $m, max |s/2.5-1|" "$(const_dev "$T/c_$m.fits")" 3e-3
done
"$ARKCOS" smooth "$C" "$T/c_fsht.fits" --fwhm-arcmin 2400 --method fsht >/dev/null 2>"$T/stderr" ||
  bad "constant, fsht: $(cat "$T/stderr")"
check_le "constant map, FWHM 40 deg, fsht, max |s/2.5-1|" "$(const_dev "$T/c_fsht.fits")" 2e-4
# A kernel file: the same constancy at its own (10 deg, cut at 15 deg) level.
"$ARKCOS" smooth "$C" "$T/c_file.fits" --kernel-file "$T/kernel.txt" >"$T/stdout" 2>"$T/stderr" ||
  bad "kernel file: $(cat "$T/stderr")"
grep -q "cutoff=15deg" "$T/stdout" && ok || bad "kernel file cutoff is not its last angle: $(cat "$T/stdout")"
check_le "constant map, kernel file, max |s/2.5-1|" "$(const_dev "$T/c_file.fits")" 4e-2

# ---------------------------------------------------------------- top-hat
# A top-hat of radius R covers about 99 pixels at R = 20.3 deg, nside 16, so
# the pixel count inside the disc against its area is the quadrature error
# here. Measured max |s/2.5 - 1|: direct 4.6e-2, arkcos 4.1e-2 (6.7e-2 in
# paper mode, not tested). An unnormalised or Gaussian kernel misses by far.
R=20.3
# With --quadrature point (pixel centres, equal weights). One unit pixel on
# the equator: the smoothed map is (4 pi / npix) / (2 pi
# (1 - cos R)) on the pixels whose centres lie within R (healpy's
# query_disc) and 0 elsewhere. The disc stays in the belt, where both
# methods are the direct sum to rounding (measured 1.1e-15 relative).
# One Python for all four maps: importing healpy is most of the time.
for m in arkcos direct; do
  "$ARKCOS" smooth "$C" "$T/th_$m.fits" --tophat-deg $R --method $m --quadrature point >"$T/stdout" 2>"$T/stderr" ||
    bad "top-hat, $m: $(cat "$T/stderr")"
  grep -qE "tophat=${R}deg cutoff=${R}deg \(K/K0=1\)" "$T/stdout" && ok ||
    bad "top-hat summary line, $m: $(cat "$T/stdout")"
  "$ARKCOS" smooth "$T/source.fits" "$T/ths_$m.fits" --tophat-deg $R --method $m --quadrature point >/dev/null 2>"$T/stderr" ||
    bad "top-hat of a source, $m: $(cat "$T/stderr")"
  # the default, ring quadrature: A(W m) / A(W) keeps the constant map
  "$ARKCOS" smooth "$C" "$T/thr_$m.fits" --tophat-deg $R --method $m >/dev/null 2>"$T/stderr" ||
    bad "top-hat, ring quadrature, $m: $(cat "$T/stderr")"
done
read -r c_ark c_dir s_ark s_dir < <("$PYTHON" -c "
import healpy as h, numpy as n
ns = 16; r = n.radians($R)
def const(m): return abs(h.read_map('$T/th_%s.fits' % m) / 2.5 - 1).max()
def source(m):
    s = h.read_map('$T/ths_%s.fits' % m)
    k = 4 * n.pi / s.size / (2 * n.pi * (1 - n.cos(r)))
    disc = n.zeros(s.size, bool)
    disc[h.query_disc(ns, h.pix2vec(ns, h.ang2pix(ns, n.pi / 2, 0.3)), r)] = True
    return max(abs(s[disc] / k - 1).max(), abs(s[~disc]).max() / k)
print(const('arkcos'), const('direct'), source('arkcos'), source('direct'))" 2>/dev/null)
read -r r_ark r_dir < <("$PYTHON" -c "
import healpy as h, numpy as n
print(*[abs(h.read_map('$T/thr_%s.fits' % m) / 2.5 - 1).max() for m in ('arkcos', 'direct')])" 2>/dev/null)
# measured 4.4e-16 and 2.2e-16
check_le "constant map, top-hat $R deg, ring quadrature, arkcos, max |s/2.5-1|" "${r_ark:-nan}" 1e-13
check_le "constant map, top-hat $R deg, ring quadrature, direct, max |s/2.5-1|" "${r_dir:-nan}" 1e-13
check_le "constant map, top-hat $R deg, arkcos, max |s/2.5-1|" "${c_ark:-nan}" 6e-2
check_le "constant map, top-hat $R deg, direct, max |s/2.5-1|" "${c_dir:-nan}" 6e-2
check_le "top-hat of a source, arkcos: max deviation from K inside / 0 outside, relative" "${s_ark:-nan}" 1e-12
check_le "top-hat of a source, direct: max deviation from K inside / 0 outside, relative" "${s_dir:-nan}" 1e-12

# ---------------------------------------------------- --accuracy and -v
# -v prints the plan's a-priori bound on its own line; a plan asked for
# accuracy EPS must report a bound <= EPS (arkcos_options.accuracy).
bound_of() {  # prints the number on the "bound:" line of $T/stdout
  sed -n 's/^bound: \([^ ]*\) (a-priori, max |ARKCoS - direct| per unit max |input|) nside=16$/\1/p' "$T/stdout"
}
"$ARKCOS" smooth "$T/rand2.fits" "$T/acc.fits" "${G[@]}" --accuracy 1e-6 -v >"$T/stdout" 2>"$T/stderr" &&
  [ -s "$T/acc.fits" ] && ok || bad "--accuracy 1e-6: $(cat "$T/stderr")"
grep -q "mode=enhanced precision=double accuracy=1e-06 " "$T/stdout" && ok ||
  bad "--accuracy not in the summary line: $(cat "$T/stdout")"
[ "$(grep -c '^bound: ' "$T/stdout")" -eq 1 ] && ok || bad "-v: not one bound line: $(cat "$T/stdout")"
check_le "--accuracy 1e-6 -v: the plan's bound" "$(bound_of)" 1e-6
"$ARKCOS" smooth "$T/rand2.fits" "$T/acc0.fits" "${G[@]}" --verbose >"$T/stdout" 2>"$T/stderr" ||
  bad "--verbose: $(cat "$T/stderr")"
b=$(bound_of)
"$PYTHON" -c "import math, sys; b = float('$b'); sys.exit(0 if math.isfinite(b) and b >= 0 else 1)" 2>/dev/null &&
  ok || bad "--verbose, exact plan: bound '$b' is not a finite number >= 0: $(cat "$T/stdout")"
"$ARKCOS" smooth "$T/rand2.fits" "$T/acc1.fits" "${G[@]}" >"$T/stdout" 2>"$T/stderr" ||
  bad "without -v: $(cat "$T/stderr")"
grep -q '^bound:' "$T/stdout" && bad "a bound line without -v: $(cat "$T/stdout")" || ok
"$ARKCOS" smooth "$T/rand2.fits" "$T/accd.fits" "${G[@]}" --method direct -v >"$T/stdout" 2>"$T/stderr" ||
  bad "-v, direct: $(cat "$T/stderr")"
grep -q '^bound: 0 (the direct sum itself) nside=16$' "$T/stdout" && ok || bad "-v, direct: $(cat "$T/stdout")"

# ------------------------------------------------------------ --oversample
# No effect since the polar caps are summed exactly: still accepted (old
# scripts run), one warning on stderr, the same map as without it.
"$ARKCOS" smooth "$T/rand2.fits" "$T/os2.fits" "${G[@]}" --oversample 2 >"$T/stdout" 2>"$T/stderr" &&
  ok || bad "--oversample 2: $(cat "$T/stderr")"
[ "$(grep -c 'warning: --oversample has no effect' "$T/stderr")" -eq 1 ] && ok ||
  bad "--oversample 2: not one warning: $(cat "$T/stderr")"
"$PYTHON" -c "
import sys, numpy as n
from astropy.io import fits
a, b = (fits.getdata(f, 1)['T'] for f in sys.argv[1:])
sys.exit(0 if n.array_equal(a, b) else 1)" "$T/os2.fits" "$T/acc1.fits" 2>/dev/null && ok ||
  bad "--oversample 2 changed the map"

# ------------------------------------------ where polar quadrature applied
# The summary line says which caps took the polar reconstruction (polar=),
# and counts making it in the plan's time (plan=... polar S), not the
# execute's: nside 64, 4.4 px/FWHM both caps; 1.8 px/FWHM (below
# ARKCOS_POLAR_MIN_PPF) and a top-hat none; a missing pixel on the north
# cap's second ring leaves it the south cap; ring quadrature no field.
"$PYTHON" - "$T" <<'EOF2' || bad "polar fixtures"
import sys, warnings
import numpy as np
import healpy as hp
warnings.simplefilter("ignore")
d = sys.argv[1]
m = np.random.default_rng(3).standard_normal(12 * 64 ** 2)
hp.write_map(f"{d}/r64.fits", m, dtype=np.float64)
m[5] = hp.UNSEEN
hp.write_map(f"{d}/r64hole.fits", m, dtype=np.float64)
EOF2
polar_word() {  # FILE ARGS...: the summary line's polar= word ("-" if none)
  local f=$1; shift
  "$ARKCOS" smooth "$f" "$T/pw.fits" --force "$@" >"$T/pw.out" 2>"$T/pw.err" || { echo "exit"; return; }
  grep -o ' polar=[a-z,]*' "$T/pw.out" | sed 's/ polar=//' | grep . || echo "-"
}
w=$(polar_word "$T/r64.fits" --fwhm-arcmin 242); [ "$w" = both ] && ok || bad "polar at 4.4 px/FWHM: polar=$w"
pt=$(grep -o 'tables [^ ]* polar [^)]*' "$T/pw.out" | awk '{print $4}')
"$PYTHON" -c "import sys; sys.exit(0 if float('${pt:-0}') > 0 else 1)" && ok ||
  bad "polar at 4.4 px/FWHM: its plan time not in plan=: $(cat "$T/pw.out")"
w=$(polar_word "$T/r64.fits" --fwhm-arcmin 99); [ "$w" = none ] && ok || bad "polar at 1.8 px/FWHM: polar=$w"
w=$(polar_word "$T/r64.fits" --tophat-deg 2); [ "$w" = none ] && ok || bad "polar, a top-hat: polar=$w"
w=$(polar_word "$T/r64hole.fits" --fwhm-arcmin 242); [ "$w" = south ] && ok || bad "polar, a hole in the north disc: polar=$w"
w=$(polar_word "$T/r64.fits" --fwhm-arcmin 242 --quadrature ring); [ "$w" = - ] && ok || bad "ring quadrature: polar=$w"

echo "TESTS $pass $fail"
[ "$fail" -eq 0 ]
