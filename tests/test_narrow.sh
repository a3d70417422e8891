#!/usr/bin/env bash
# test_narrow.sh -- kernels narrow against the pixels and kernel files
# (docs/NARROW_BEAMS.md): below 1 pixel per FWHM `arkcos smooth` refuses
# (exit 2, the figure in the message) unless --method direct
# --allow-subpixel; below 2.5 a warning with the expected error;
# --normalize keeps a constant map constant; malformed kernel files exit 2
# naming the file and the line; --kernel-unit; the same checks in sweeps.
# Fixtures are written with healpy ($PYTHON). Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
. tests/cli_lib.sh narrow

# ---------------------------------------------------------------- fixtures
if ! "$PYTHON" - "$T" <<'EOF'
import sys, warnings
import numpy as np
import healpy as hp
from astropy.io import fits
warnings.simplefilter("ignore")
d = sys.argv[1]
npix = 12 * 16 ** 2
hp.write_map(f"{d}/const7.fits", np.full(npix, 7.0), dtype=np.float64)
hp.write_map(f"{d}/ones.fits", np.ones(npix), dtype=np.float64)
hp.write_map(f"{d}/rand.fits", np.random.default_rng(3).standard_normal(npix), dtype=np.float64)
# The same Gaussian profile (FWHM 10 deg, to 15 deg) in three units.
a = np.linspace(0, 15, 151)
k = np.exp(-0.5 * (a / (10 / np.sqrt(8 * np.log(2)))) ** 2)
np.savetxt(f"{d}/k_rad.txt", np.c_[np.radians(a), k])
np.savetxt(f"{d}/k_deg.txt", np.c_[a, k])
np.savetxt(f"{d}/k_arcmin.txt", np.c_[a * 60, k])
# A Mexican hat (negative lobes), scale 12 deg, to 40 deg.
r = np.linspace(0, 40, 201)
x = r / 12
np.savetxt(f"{d}/k_mexhat.txt", np.c_[np.radians(r), (1 - x ** 2) * np.exp(-x ** 2 / 2)])
def text(name, s):
    with open(f"{d}/{name}", "w") as f:
        f.write(s)
text("bad_degrees.txt", "# beam in degrees\n0 1\n1 0.9\n2.5 0.6\n4 0.3\n6 0.05\n")
text("bad_bl.txt", "# l B_l\n" + "".join(f"{l} {np.exp(-l * (l + 1) * 1e-3):.6f}\n" for l in range(40)))
text("bad_bl4.txt", "".join(f"{l} 1 0.9 0.9\n" for l in range(10)))
text("bad_negative.txt", "0 1\n0.01 0.5\n0.02 -0.1\n0.03 0\n")
text("bad_nan.txt", "0 1\n0.01 nan\n0.02 0.1\n")
text("bad_nonmonotone.txt", "0 1\n0.02 0.5\n0.01 0.2\n")
text("bad_repeated.txt", "0 1\n0.02 0.5\n0.02 0.2\n")
text("bad_onerow.txt", "# one row\n0 1\n")
text("bad_empty.txt", "")
text("bad_text.txt", "0 1\n0.01 abc\n")
fits.PrimaryHDU(np.zeros((4, 4))).writeto(f"{d}/bad_fits.txt")
EOF
then
  echo "FAIL cannot write fixtures with $PYTHON (healpy, astropy needed)"
  echo "TESTS 0 1"; exit 1
fi

# expect_fail NAME REGEX OUT ARGS... : exit 2, stderr matches REGEX
# (extended), OUT does not exist afterwards.
expect_fail() {
  local name=$1 re=$2 out=$3; shift 3
  rm -f "$out"
  "$ARKCOS" smooth "$@" >"$T/stdout" 2>"$T/stderr"
  local rc=$?
  if [ $rc -ne 2 ]; then bad "$name: exit $rc, expected 2 ($(cat "$T/stderr"))"; return; fi
  if ! grep -qE -- "$re" "$T/stderr"; then bad "$name: message does not match '$re': $(cat "$T/stderr")"; return; fi
  if [ -e "$out" ]; then bad "$name: $out was written"; return; fi
  ok
}
O=$T/out.fits
C=$T/const7.fits

# ------------------------------------------ below 1 pixel per FWHM: refused
# 10' at nside 16 (pixels of 220'): 0.0455 pixels per FWHM. The pixel sum
# of a constant 7 would be 2987 (the kernel's discrete sum is 427).
expect_fail "sub-pixel kernel, arkcos" "const7.fits: the kernel is 0\.0455 pixels per FWHM at nside 16 .*below 1 pixel per FWHM.*as 426\.[0-9]" "$O" "$C" "$O" --fwhm-arcmin 10
expect_fail "sub-pixel kernel, direct" "0\.0455 pixels per FWHM.*--allow-subpixel" "$O" "$C" "$O" --fwhm-arcmin 10 --method direct
expect_fail "--allow-subpixel with arkcos" "--allow-subpixel applies only to --method direct" "$O" "$C" "$O" --fwhm-arcmin 10 --allow-subpixel
"$ARKCOS" smooth "$C" "$T/sub_direct.fits" --fwhm-arcmin 10 --method direct --allow-subpixel >"$T/stdout" 2>"$T/stderr"
rc=$?
[ $rc -eq 0 ] && [ -s "$T/sub_direct.fits" ] && ok || bad "--method direct --allow-subpixel: exit $rc $(cat "$T/stderr")"
grep -qE "^arkcos smooth: warning: .*0\.0455 pixels per FWHM" "$T/stderr" && ok ||
  bad "--allow-subpixel: no warning line: $(cat "$T/stderr")"
grep -q "pixels_per_fwhm=0.0455 " "$T/stdout" && ok || bad "summary line without pixels_per_fwhm: $(cat "$T/stdout")"
# fsht does not sample the kernel on the pixels: no refusal, no warning
"$ARKCOS" smooth "$C" "$T/sub_fsht.fits" --fwhm-arcmin 10 --method fsht >/dev/null 2>"$T/stderr" &&
  [ ! -s "$T/stderr" ] && ok || bad "fsht with a sub-pixel kernel: $(cat "$T/stderr")"

# --------------------------------------------- 1 to 2.5 pixels: a warning
# 352' at nside 16: 1.60 pixels per FWHM.
"$ARKCOS" smooth "$T/rand.fits" "$T/w.fits" --fwhm-arcmin 352 --quadrature point >"$T/stdout" 2>"$T/stderr"
rc=$?
[ $rc -eq 0 ] && [ -s "$T/w.fits" ] && ok || bad "1.6 pixels per FWHM: exit $rc $(cat "$T/stderr")"
grep -qE "^arkcos smooth: warning: .*rand\.fits: the kernel is 1\.6 pixels per FWHM at nside 16 .*expected error against harmonic smoothing [0-9]\.[0-9]e-0[0-9] rms.*between [0-9.]+ and [0-9.]+ here" "$T/stderr" &&
  ok || bad "1.6 pixels per FWHM: warning line: $(cat "$T/stderr")"
[ "$(grep -c 'warning:' "$T/stderr")" -eq 1 ] && ok || bad "not one warning line: $(cat "$T/stderr")"
# the default, ring quadrature, normalises: the warning gives the normalised error
"$ARKCOS" smooth "$T/rand.fits" "$T/wr.fits" --fwhm-arcmin 352 >/dev/null 2>"$T/stderr"
grep -qE "^arkcos smooth: warning: .*the kernel is 1\.6 pixels per FWHM .*[0-9]\.[0-9]e-0[0-9] rms with the normalisation of ring quadrature" "$T/stderr" &&
  ok || bad "1.6 pixels per FWHM, ring quadrature: warning line: $(cat "$T/stderr")"
"$ARKCOS" smooth "$T/rand.fits" "$T/w3.fits" --fwhm-arcmin 600 >/dev/null 2>"$T/stderr" &&
  [ ! -s "$T/stderr" ] && ok || bad "2.7 pixels per FWHM: not silent: $(cat "$T/stderr")"

# ------------------------------------------------------------- --normalize
expect_fail "--normalize with fsht" "--normalize applies only to --method arkcos or direct" "$O" "$C" "$O" --fwhm-arcmin 352 --method fsht --normalize
for m in arkcos direct; do
  "$ARKCOS" smooth "$C" "$T/n_$m.fits" --fwhm-arcmin 352 --method $m --quadrature point --normalize >"$T/stdout" 2>"$T/stderr" ||
    bad "--normalize, $m: $(cat "$T/stderr")"
  grep -q "normalize=yes" "$T/stdout" && ok || bad "--normalize, $m: not in the summary line: $(cat "$T/stdout")"
  "$ARKCOS" smooth "$C" "$T/p_$m.fits" --fwhm-arcmin 352 --method $m --quadrature point >/dev/null 2>&1
  "$ARKCOS" smooth "$T/ones.fits" "$T/a1_$m.fits" --fwhm-arcmin 352 --method $m --quadrature point >/dev/null 2>&1
  "$ARKCOS" smooth "$T/rand.fits" "$T/r_$m.fits" --fwhm-arcmin 352 --method $m --quadrature point >/dev/null 2>&1
  "$ARKCOS" smooth "$T/rand.fits" "$T/rn_$m.fits" --fwhm-arcmin 352 --method $m --quadrature point --normalize >/dev/null 2>&1
done
read -r na nd pa pd da dd < <("$PYTHON" -c "
import healpy as h, numpy as n
r = lambda f: h.read_map('$T/' + f)
dev = lambda f: abs(r(f) / 7 - 1).max()
# --normalize is A(m) / A(1): the plain output divided by that of a map of ones
defn = lambda m: abs(r('rn_%s.fits' % m) - r('r_%s.fits' % m) / r('a1_%s.fits' % m)).max() / abs(r('rn_%s.fits' % m)).max()
print(dev('n_arkcos.fits'), dev('n_direct.fits'), dev('p_arkcos.fits'), dev('p_direct.fits'), defn('arkcos'), defn('direct'))" 2>/dev/null)
check_le "--normalize, arkcos: constant 7, max |s/7-1|" "${na:-nan}" 1e-12
check_le "--normalize, direct: constant 7, max |s/7-1|" "${nd:-nan}" 1e-12
# without it (point quadrature) the same constant is off by the quadrature error (measured 4.8e-2)
"$PYTHON" -c "import sys; sys.exit(0 if float('${pa:-0}') > 1e-2 and float('${pd:-0}') > 1e-2 else 1)" &&
  ok || bad "without --normalize the constant map should be off by > 1e-2: arkcos $pa direct $pd"
check_le "--normalize, arkcos: = A(m)/A(1), max rel difference" "${da:-nan}" 1e-12
check_le "--normalize, direct: = A(m)/A(1), max rel difference" "${dd:-nan}" 1e-12

# ------------------------------------------------------------ kernel files
K=(--fwhm-arcmin 600)
expect_fail "--kernel-unit without a file" "--kernel-unit applies only to --kernel-file" "$O" "$C" "$O" "${K[@]}" --kernel-unit deg
expect_fail "--allow-negative without a file" "--allow-negative applies only to --kernel-file" "$O" "$C" "$O" "${K[@]}" --allow-negative
expect_fail "--kernel-unit bogus" "--kernel-unit: expected rad, deg or arcmin, got 'furlong'" "$O" "$C" "$O" --kernel-file "$T/k_rad.txt" --kernel-unit furlong
expect_fail "--kernel-unit twice" "--kernel-unit: given twice" "$O" "$C" "$O" --kernel-file "$T/k_rad.txt" --kernel-unit deg --kernel-unit=rad
expect_fail "table in degrees" "bad_degrees\.txt:5: angle 4 is beyond pi.*look like degrees \(give --kernel-unit deg\)" "$O" "$C" "$O" --kernel-file "$T/bad_degrees.txt"
expect_fail "degree table in degrees" "k_deg\.txt:[0-9]+: angle .* beyond pi" "$O" "$C" "$O" --kernel-file "$T/k_deg.txt"
expect_fail "arcmin table in degrees" "k_arcmin\.txt:[0-9]+: angle .* beyond 180 degrees.*look like arcmin \(give --kernel-unit arcmin\)" "$O" "$C" "$O" --kernel-file "$T/k_arcmin.txt" --kernel-unit deg
expect_fail "l B_l file" "bad_bl\.txt:2: the first column runs 0, 1, 2, \.\.\. 39 .*beam transfer function" "$O" "$C" "$O" --kernel-file "$T/bad_bl.txt"
expect_fail "l B_T B_E B_B file" "bad_bl4\.txt:1: unexpected text after two columns .*beam transfer function" "$O" "$C" "$O" --kernel-file "$T/bad_bl4.txt"
expect_fail "negative K" "bad_negative\.txt:3: K = -0\.1 is negative.*--allow-negative" "$O" "$C" "$O" --kernel-file "$T/bad_negative.txt"
expect_fail "NaN" "bad_nan\.txt:2: NaN K" "$O" "$C" "$O" --kernel-file "$T/bad_nan.txt"
expect_fail "decreasing angle" "bad_nonmonotone\.txt:3: angles must increase" "$O" "$C" "$O" --kernel-file "$T/bad_nonmonotone.txt"
expect_fail "repeated angle" "bad_repeated\.txt:3: angles must increase" "$O" "$C" "$O" --kernel-file "$T/bad_repeated.txt"
expect_fail "one data line" "bad_onerow\.txt:3: end of file after 1 data line" "$O" "$C" "$O" --kernel-file "$T/bad_onerow.txt"
expect_fail "empty file" "bad_empty\.txt:1: end of file after 0 data lines" "$O" "$C" "$O" --kernel-file "$T/bad_empty.txt"
expect_fail "text in a column" "bad_text\.txt:2: expected two numbers" "$O" "$C" "$O" --kernel-file "$T/bad_text.txt"
expect_fail "a FITS file" "bad_fits\.txt:1: this is a FITS file" "$O" "$C" "$O" --kernel-file "$T/bad_fits.txt"
# negative lobes with --allow-negative: run, and the depth is reported
"$ARKCOS" smooth "$T/rand.fits" "$T/mexhat.fits" --kernel-file "$T/k_mexhat.txt" --allow-negative \
  >"$T/stdout" 2>"$T/stderr" && [ -s "$T/mexhat.fits" ] && ok || bad "--allow-negative: $(cat "$T/stderr")"
grep -qE "k_mexhat\.txt: kernel has negative lobes: min K/K\(0\) = -0\.44" "$T/stderr" && ok ||
  bad "--allow-negative: no report of the lobes: $(cat "$T/stderr")"
# one table, three units: the same output
for u in rad deg arcmin; do
  "$ARKCOS" smooth "$T/rand.fits" "$T/u_$u.fits" --kernel-file "$T/k_$u.txt" --kernel-unit $u >"$T/stdout" 2>"$T/stderr" ||
    bad "--kernel-unit $u: $(cat "$T/stderr")"
done
grep -q "cutoff=15deg" "$T/stdout" && ok || bad "--kernel-unit arcmin: cutoff is not 15 deg: $(cat "$T/stdout")"
read -r dd da < <("$PYTHON" -c "
import healpy as h
a = h.read_map('$T/u_rad.fits')
for u in ('deg', 'arcmin'): print(abs(h.read_map('$T/u_%s.fits' % u) - a).max() / abs(a).max(), end=' ')" 2>/dev/null)
check_le "--kernel-unit deg vs the table in radians, max rel difference" "${dd:-nan}" 1e-13
check_le "--kernel-unit arcmin vs the table in radians, max rel difference" "${da:-nan}" 1e-13

# ------------------------------------------------------------------ sweeps
# nside 8 (pixels of 440'): 352' is 0.8 pixels per FWHM, skipped for arkcos
# and direct, not for fsht; nside 16: 1.6, a warning. The file kernel is
# given in degrees.
cat >"$T/narrow.json" <<EOF
{"name": "narrow", "repeats": 1, "warmup": 0, "threads": 1,
 "grid": {"nside": [8, 16]},
 "kernels": [{"type": "gaussian", "fwhm_arcmin": 352, "cutoff_rel": 1e-5},
             {"type": "file", "path": "k_deg.txt", "unit": "deg"}],
 "methods": [{"name": "arkcos"}, {"name": "direct"}, {"name": "fsht"}],
 "reference": "none"}
EOF
sed 's/"reference": "none"}/"reference": "none", "limits": {"min_pixels_per_fwhm": 0}}/' "$T/narrow.json" >"$T/narrow0.json"
(cd "$T" && "$ARKCOS" run narrow.json --out run1 >run1.out 2>run1.err && "$ARKCOS" run narrow0.json --out run0 >run0.out 2>run0.err)
rc=$?
[ $rc -eq 0 ] && ok || bad "sweeps: exit $rc $(cat "$T/run1.err" "$T/run0.err" 2>/dev/null)"
grep -qE '^arkcos run: warning: [0-9]+ cases run now sample the kernel with fewer than 2.5 pixels per FWHM' "$T/run1.err" &&
  ok || bad "sweep: no warning line: $(cat "$T/run1.err")"
"$PYTHON" - "$T" <<'EOF' && ok || bad "sweep results (above)"
import json, sys
d = sys.argv[1]
def cases(run):
    return {(c["nside"], c["kernel"]["type"], c["method"]["name"]): c
            for c in json.load(open(f"{d}/{run}/results.json"))["cases"]}
errs = []
one, zero = cases("run1"), cases("run0")
for key, c in one.items():
    nside, kernel, method = key
    narrow = kernel == "gaussian" and nside == 8 and method != "fsht"
    if narrow != (c["status"] == "skipped"):
        errs.append(f"{key}: status {c['status']}")
    if narrow and "0.8 pixels per FWHM at nside 8" not in c.get("reason", "") + "" and \
            "pixels per FWHM" not in c.get("reason", ""):
        errs.append(f"{key}: reason {c.get('reason')}")
    if narrow and "min_pixels_per_fwhm" not in c.get("reason", ""):
        errs.append(f"{key}: reason does not name the limit: {c.get('reason')}")
    if "pixels_per_fwhm" not in c:
        errs.append(f"{key}: no pixels_per_fwhm")
    warned = c["status"] == "ok" and method != "fsht" and c["pixels_per_fwhm"] < 2.5
    if warned != ("warning" in c) or (warned and "expected error against harmonic smoothing" not in c["warning"]):
        errs.append(f"{key}: warning {c.get('warning')!r} at {c['pixels_per_fwhm']:.3g} pixels per FWHM")
    if kernel == "file" and c["kernel"].get("unit") != "deg":
        errs.append(f"{key}: kernel {c['kernel']}")
for key, c in zero.items():
    if c["status"] != "ok":
        errs.append(f"min_pixels_per_fwhm 0: {key}: {c['status']} {c.get('reason')}")
for e in errs:
    print("  " + e)
sys.exit(1 if errs else 0)
EOF
# a degree table without "unit": the config is refused, naming the key
sed 's/, "unit": "deg"//' "$T/narrow.json" >"$T/nounit.json"
(cd "$T" && "$ARKCOS" run nounit.json --out run2 >/dev/null 2>run2.err)
rc=$?
[ $rc -eq 2 ] && grep -qE "nounit\.json: kernels\[1\]: .*k_deg\.txt:[0-9]+: angle .* look like degrees \(give kernels\[1\]\.unit deg\)" "$T/run2.err" &&
  ok || bad "degree table in a sweep without unit: exit $rc $(cat "$T/run2.err")"

echo "TESTS $pass $fail"
[ "$fail" -eq 0 ]
