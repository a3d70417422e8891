#!/usr/bin/env bash
# test_mask.sh -- missing data in `arkcos smooth`: UNSEEN / NaN pixels,
# partial-sky maps and --mask are left out of the smoothing.
#
# The sky is a random field with a non-zero mean at nside 32, with a real
# looking mask: a galactic cut |b| < 20 deg and point-source holes of radius
# 2 pixels. The reference is computed independently of the masking code: the
# zero-filled product w m and the weight map w are written as complete maps
# and smoothed plainly with --method direct (the exact pixel sum), and
# A_direct(w m) / A_direct(w) is formed here in Python. Fixtures are written
# with healpy/astropy ($PYTHON). Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
. tests/cli_lib.sh mask

# ---------------------------------------------------------------- fixtures
if ! "$PYTHON" - "$T" <<'EOF'
import sys, warnings
import numpy as np
import healpy as hp
warnings.simplefilter("ignore")
d = sys.argv[1]
nside = 32
npix = 12 * nside ** 2
rng = np.random.default_rng(11)
def field(seed, mean):
    np.random.seed(seed)
    ell = np.arange(2 * nside + 1)
    return hp.synfast(1.0 / (ell + 10.0) ** 2, nside, lmax=2 * nside) + mean
m, q, u = field(1, 1.5), field(2, 0.0), field(3, -0.5)
theta, phi = hp.pix2ang(nside, np.arange(npix))
b = 90 - np.degrees(theta)
gal = np.abs(b) >= 20                 # True: observed
holes = np.ones(npix, bool)
for k in range(8):                    # point sources off the plane
    lat = rng.uniform(25, 75) * (1 if k % 2 else -1)
    v = hp.ang2vec(np.radians(90 - lat), rng.uniform(0, 2 * np.pi))
    holes[hp.query_disc(nside, v, 2 * hp.nside2resol(nside))] = False
w = gal & holes
W = w.astype(np.float64)
def put(name, x, **kw):
    hp.write_map(f"{d}/{name}", x, overwrite=True, **kw)
f64 = dict(dtype=np.float64)
put("complete.fits", m, **f64)
put("masked.fits", np.where(w, m, hp.UNSEEN), **f64)
put("masked_nest.fits", hp.reorder(np.where(w, m, hp.UNSEEN), r2n=True), nest=True, **f64)
put("nan32.fits", np.where(w, m, np.nan), dtype=np.float32)
# +inf and -inf are missing data too (as in Python's arkcos.smoothing)
put("inf.fits", np.where(w, m, np.where(np.arange(npix) % 2, np.inf, -np.inf)), **f64)
put("partial.fits", np.where(w, m, hp.UNSEEN), partial=True, **f64)
put("holes.fits", np.where(holes, m, hp.UNSEEN), **f64)
put("wm.fits", W * m, **f64)
put("w.fits", W, **f64)
put("mask.fits", W, **f64)
put("mask_nest.fits", hp.reorder(W, r2n=True), nest=True, dtype=np.int16)
put("mask_unseen.fits", np.where(w, 1.0, hp.UNSEEN), dtype=np.float32)
put("gal.fits", gal.astype(np.float32), dtype=np.float32)
# an apodised mask: 0 below |b| = 15 deg, 1 above 25 deg, linear between
apod = np.clip((np.abs(b) - 15) / 10, 0, 1)
put("apod.fits", apod, **f64)
put("wm_apod.fits", apod * m, **f64)
put("w_apod.fits", apod, **f64)
# I, Q, U: I misses the galactic cut and the sources, Q and U the cut only
put("iqu.fits", [np.where(w, m, hp.UNSEEN), np.where(gal, q, hp.UNSEEN),
                 np.where(gal, u, np.nan)], column_names=["I", "Q", "U"], **f64)
put("wq.fits", gal * q, **f64)
put("wu.fits", gal * u, **f64)
put("wgal.fits", gal.astype(np.float64), **f64)
# bad masks
put("mask16.fits", np.ones(12 * 16 ** 2), **f64)
put("mask_range.fits", np.where(w, 1.0, 2.0), **f64)
put("mask_neg.fits", np.where(w, 1.0, -0.25), **f64)
with open(f"{d}/notfits.fits", "w") as f:
    f.write("not a FITS file\n")
np.savetxt(f"{d}/counts.txt", [(~w).sum(), (~gal).sum()], fmt="%d")
EOF
then
  echo "FAIL cannot write fixtures with $PYTHON (healpy, astropy needed)"
  echo "TESTS 0 1"; exit 1
fi
read -r NMISS NGAL < <(tr '\n' ' ' <"$T/counts.txt")

# run NAME OUT ARGS...: arkcos smooth ARGS OUT, exit 0 and OUT written;
# stderr kept in $T/NAME.err
run() {
  local name=$1 out=$2; shift 2
  "$ARKCOS" smooth "$@" "$out" >"$T/$name.out" 2>"$T/$name.err"
  local rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$out" ]; then bad "$name: exit $rc: $(cat "$T/$name.err")"; else ok; fi
}
# 4 deg: about 2.2 pixels per FWHM at nside 32; ring quadrature: the references
# are complete maps, which polar quadrature (the default) corrects next to the
# poles, while a cap whose disc has missing pixels keeps ring quadrature
G=(--fwhm-arcmin 240 --quadrature ring)
TH=(--tophat-deg 5.3 --quadrature point)   # point: the top-hat puts A(w) at exactly 0.5 on some pixels, where the two methods must agree to the bit

# ----------------------------------------------------------- the runs
# the reference: complete maps, plain direct sums
for f in wm w wm_apod w_apod wq wu wgal; do
  run "ref_$f" "$T/d_$f.fits" "$T/$f.fits" "${G[@]}" --method direct
done
run ref_th_wm "$T/dth_wm.fits" "$T/wm.fits" "${TH[@]}" --method direct
run ref_th_w  "$T/dth_w.fits"  "$T/w.fits"  "${TH[@]}" --method direct
for f in wm w; do
  run "ref_fsht_$f" "$T/f_$f.fits" "$T/$f.fits" "${G[@]}" --method fsht
done
run zfill "$T/a_wm.fits" "$T/wm.fits" "${G[@]}"
run plain "$T/a_complete.fits" "$T/complete.fits" "${G[@]}"
# the masked maps
run norm      "$T/n.fits"       "$T/masked.fits" "${G[@]}" --write-weight
run norm_dir  "$T/n_dir.fits"   "$T/masked.fits" "${G[@]}" --method direct
run norm_fsht "$T/n_fsht.fits"  "$T/masked.fits" "${G[@]}" --method fsht
run norm_th   "$T/n_th.fits"    "$T/masked.fits" "${TH[@]}"
run nest      "$T/n_nest.fits"  "$T/masked_nest.fits" "${G[@]}"
run nan32     "$T/n_nan32.fits" "$T/nan32.fits" "${G[@]}"
run inf       "$T/n_inf.fits"   "$T/inf.fits" "${G[@]}"
run partial   "$T/n_part.fits"  "$T/partial.fits" "${G[@]}"
run zero0     "$T/z0.fits"      "$T/masked.fits" "${G[@]}" --mask-mode zero
run zero      "$T/z.fits"       "$T/masked.fits" "${G[@]}" --mask-mode zero --write-weight
run minw      "$T/n_minw.fits"  "$T/masked.fits" "${G[@]}" --min-weight 0.9 --write-weight
run mask      "$T/mk.fits"      "$T/complete.fits" "${G[@]}" --mask "$T/mask.fits"
run mask_nest "$T/mk_nest.fits" "$T/complete.fits" "${G[@]}" --mask "$T/mask_nest.fits"
run mask_unseen "$T/mk_unseen.fits" "$T/complete.fits" "${G[@]}" --mask "$T/mask_unseen.fits"
run mask_prod "$T/mk_prod.fits" "$T/holes.fits" "${G[@]}" --mask "$T/gal.fits" --write-weight
run apod      "$T/mk_apod.fits" "$T/complete.fits" "${G[@]}" --mask "$T/apod.fits" --write-weight
run iqu       "$T/iqu_out.fits" "$T/iqu.fits" "${G[@]}" --write-weight --no-pol
run clean_w   "$T/clean_w.fits" "$T/complete.fits" "${G[@]}" --write-weight

# ----------------------------------------------------------- stderr
# per column: the missing pixels and the output pixels made UNSEEN
grep -qE "masked.fits: T: $NMISS of 12288 pixels missing \(UNSEEN/NaN\), [0-9]+ output pixels UNSEEN \(A\(w\) < 0.5\)$" "$T/norm.err" &&
  ok || bad "missing/UNSEEN counts on stderr: $(cat "$T/norm.err")"
grep -q "1 weight map(s) A(w) smoothed" "$T/norm.err" && ok || bad "weight maps, one column: $(cat "$T/norm.err")"
grep -q "note:" "$T/norm.err" && bad "a note in normalize mode: $(cat "$T/norm.err")" || ok
grep -q "note: .*--mask-mode zero: the $NMISS missing pixel(s) count as 0" "$T/zero.err" &&
  ok || bad "zero mode note: $(cat "$T/zero.err")"
grep -q "bad_pixels=$NMISS$" "$T/norm.out" && ok || bad "summary bad_pixels: $(cat "$T/norm.out")"
# bad_pixels= counts every pixel left out: those a --mask gives weight 0 too
# (a complete map under the mask; UNSEEN sources times a galactic cut)
grep -q "bad_pixels=$NMISS$" "$T/inf.out" && ok || bad "bad_pixels with +-inf: $(cat "$T/inf.out")"
grep -q "bad_pixels=$NMISS$" "$T/mask.out" && ok || bad "bad_pixels with --mask: $(cat "$T/mask.out")"
grep -q "bad_pixels=$NMISS$" "$T/mask_prod.out" && ok || bad "bad_pixels, UNSEEN and --mask: $(cat "$T/mask_prod.out")"
grep -q "bad_pixels=$((NMISS + 2 * NGAL))$" "$T/iqu.out" && ok || bad "bad_pixels of I, Q, U: $(cat "$T/iqu.out")"
# zero mode keeps every pixel, and says so
grep -qE "masked.fits: T: $NMISS of 12288 pixels missing \(UNSEEN/NaN\), 0 output pixels UNSEEN \(--mask-mode zero keeps every pixel\)$" "$T/zero.err" &&
  ok || bad "zero mode stderr: $(cat "$T/zero.err")"
# I, Q, U: I has its own missing pixels, Q and U share theirs: two A(w)
grep -q "iqu.fits: I: $NMISS of 12288 pixels missing" "$T/iqu.err" &&
  grep -q "iqu.fits: Q: $NGAL of 12288 pixels missing" "$T/iqu.err" &&
  grep -q "iqu.fits: U: $NGAL of 12288 pixels missing" "$T/iqu.err" && ok ||
  bad "IQU missing counts: $(cat "$T/iqu.err")"
grep -q "2 weight map(s) A(w) smoothed" "$T/iqu.err" && ok || bad "IQU: not 2 weight maps: $(cat "$T/iqu.err")"
# --mask with complete data: one A(w); the mask's own line
grep -q "1 weight map(s) A(w) smoothed" "$T/mask.err" && ok || bad "--mask: $(cat "$T/mask.err")"
grep -qE "^arkcos smooth: --mask .*mask.fits: weight 0 on $NMISS of 12288 pixels" "$T/mask.err" && ok ||
  bad "--mask summary line: $(cat "$T/mask.err")"
# a complete map without --mask: no missing-data lines at all (the
# narrow-beam warning of this 2.2-pixel beam aside)
! grep -v "pixels per FWHM" "$T/plain.err" | grep -q . && ok || bad "complete map: stderr $(cat "$T/plain.err")"

# ----------------------------------------------------------- the values
# One Python for all comparisons (importing healpy is most of the time).
# Prints "LE name|value|bound" and "OK name|0 or 1|detail" lines.
"$PYTHON" - "$T" >"$T/checks.txt" 2>"$T/checks.err" <<'EOF'
import sys, warnings
import numpy as np
import healpy as hp
from astropy.io import fits
warnings.simplefilter("ignore")
d = sys.argv[1]
U = hp.UNSEEN
def rd(name, field=0):
    return hp.read_map(f"{d}/{name}", field=field, dtype=np.float64, nest=False)
def le(name, value, bound):
    print(f"LE {name}|{value:.3e}|{bound}")
def ok(name, cond, detail=""):
    print(f"OK {name}|{int(bool(cond))}|{detail}")
def rel(out, ref, keep):  # max |out - ref| / max |ref| over the kept pixels
    return float(np.abs(out[keep] - ref[keep]).max() / np.abs(ref[keep]).max())
def names(name):
    with fits.open(f"{d}/{name}") as f:
        return list(f[1].columns.names)
unseen = lambda x: hp.mask_bad(x)

dwm, dw = rd("d_wm.fits"), rd("d_w.fits")
keep = dw >= 0.5
ref = np.where(keep, dwm / np.where(keep, dw, 1), U)
n, nw = rd("n.fits", 0), rd("n.fits", 1)
ok("--write-weight column name", names("n.fits") == ["T", "WEIGHT"], names("n.fits"))
# measured 2.6e-15 (arkcos against the direct sum, 4 deg FWHM)
le("normalize, arkcos vs A_direct(w m)/A_direct(w), max rel", rel(n, ref, keep), 3e-14)
# the same threshold decision as the direct sum: no A(w) lies within
# rounding of 0.5 here (closest measured: 1.2e-3 away)
print(f"# closest A(w) to 0.5: {np.abs(dw - 0.5).min():.3e}")
ok("normalize: UNSEEN exactly where A_direct(w) < 0.5", np.array_equal(unseen(n), ~keep),
   f"{(unseen(n) != ~keep).sum()} pixels differ")
ok("normalize: UNSEEN exactly where its WEIGHT < 0.5", np.array_equal(unseen(n), nw < 0.5))
ok("normalize: some output UNSEEN, some holes filled",
   0 < unseen(n).sum() < int(open(f"{d}/counts.txt").read().split()[0]), unseen(n).sum())
# measured 1.0e-14
le("WEIGHT vs A_direct(w), max abs", float(np.abs(nw - dw).max()), 1e-13)
print(f"UNSEEN_COUNT {unseen(n).sum()}")
# --method direct through the masking code: the same arithmetic (measured 0)
le("normalize, --method direct vs reference, max rel", rel(rd("n_dir.fits"), ref, keep), 1e-14)
ok("normalize, --method direct: UNSEEN where A(w) < 0.5", np.array_equal(unseen(rd("n_dir.fits")), ~keep))
# fsht: A is libsharp's smoothing, applied to w m and to w (measured 0)
fwm, fw = rd("f_wm.fits"), rd("f_w.fits")
fk = fw >= 0.5
le("normalize, --method fsht vs A_fsht(w m)/A_fsht(w), max rel",
   rel(rd("n_fsht.fits"), fwm / np.where(fk, fw, 1), fk), 1e-13)
ok("normalize, --method fsht: UNSEEN where A_fsht(w) < 0.5", np.array_equal(unseen(rd("n_fsht.fits")), ~fk))
# top-hat (a kernel with a jump at its cutoff); measured 5.5e-16
tw, twm = rd("dth_w.fits"), rd("dth_wm.fits")
tk = tw >= 0.5
th = rd("n_th.fits")
le("top-hat 5.3 deg, arkcos vs direct normalised, max rel", rel(th, twm / np.where(tk, tw, 1), tk), 1e-14)
ok("top-hat: UNSEEN where A_direct(w) < 0.5", np.array_equal(unseen(th), ~tk))
# readers: NESTED, NaN in float32, partial sky: the same missing pixels
ok("NESTED input: same result", np.abs(rd("n_nest.fits") - n).max() <= 1e-13 * np.abs(n[keep]).max())
ok("+-inf input: the same map as UNSEEN, bit for bit", np.array_equal(rd("n_inf.fits"), n))
n32 = rd("n_nan32.fits")
ok("NaN float32 input: same UNSEEN pixels", np.array_equal(unseen(n32), ~keep))
# float32 rounding of input and output: measured 6.4e-8
le("NaN float32 input vs float64 UNSEEN, max rel", rel(n32, n, keep), 6e-7)
ok("partial-sky input: same result", np.abs(rd("n_part.fits") - n).max() <= 1e-13 * np.abs(n[keep]).max())
# zero mode: the zero-filled map smoothed, every pixel kept (no threshold)
awm = rd("a_wm.fits")
z0, z, zw = rd("z0.fits"), rd("z.fits", 0), rd("z.fits", 1)
# measured 0 (the same engine on the same numbers)
everywhere = np.ones(awm.size, bool)
le("zero vs smoothing the zero-filled map, max rel", rel(z0, awm, everywhere), 1e-13)
ok("zero: no UNSEEN output pixel", not unseen(z0).any() and not unseen(z).any(),
   f"{int(unseen(z).sum())} UNSEEN")
ok("zero: some pixels have A(w) < 0.5 (the test can see a threshold)", (zw < 0.5).sum() > 100)
le("zero --write-weight vs smoothing the zero-filled map, max rel", rel(z, awm, everywhere), 1e-13)
# --min-weight 0.9: more UNSEEN, the same values elsewhere
nm, nmw = rd("n_minw.fits", 0), rd("n_minw.fits", 1)
k9 = dw >= 0.9
ok("--min-weight 0.9: UNSEEN exactly where A(w) < 0.9",
   np.array_equal(unseen(nm), nmw < 0.9) and np.array_equal(unseen(nm), ~k9))
le("--min-weight 0.9 vs reference, max rel", rel(nm, ref, k9), 3e-14)  # measured 2.6e-15
# --mask on a complete map = UNSEEN at the mask's zeros; NESTED int16 mask;
# a mask whose zeros are UNSEEN; product of the file's UNSEEN (sources) and
# the --mask (galactic cut)
for f in ("mk.fits", "mk_nest.fits", "mk_unseen.fits", "mk_prod.fits"):
    x = rd(f)
    ok(f"--mask ({f}): same as the UNSEEN input",
       np.array_equal(unseen(x), ~keep) and np.abs(x - n).max() <= 1e-13 * np.abs(n[keep]).max(),
       f"{np.abs(x - n).max():.3e}")
# measured 1.0e-14
le("--mask product: WEIGHT vs A_direct(w), max abs", float(np.abs(rd("mk_prod.fits", 1) - dw).max()), 1e-13)
# apodised mask: weights in [0, 1]; measured 2.6e-15 and 9.7e-15 (WEIGHT)
aw, awm_ = rd("d_w_apod.fits"), rd("d_wm_apod.fits")
ak = aw >= 0.5
a = rd("mk_apod.fits", 0)
le("apodised --mask, arkcos vs A_direct(w m)/A_direct(w), max rel", rel(a, awm_ / np.where(ak, aw, 1), ak), 3e-14)
ok("apodised --mask: UNSEEN where A_direct(w) < 0.5", np.array_equal(unseen(a), ~ak))
le("apodised --mask: WEIGHT vs A_direct(w), max abs", float(np.abs(rd("mk_apod.fits", 1) - aw).max()), 1e-13)
# I, Q, U with their own weights: WEIGHT_<column> per column
ok("IQU --write-weight column names",
   names("iqu_out.fits") == ["I", "Q", "U", "WEIGHT_I", "WEIGHT_Q", "WEIGHT_U"], names("iqu_out.fits"))
iqu = [rd("iqu_out.fits", c) for c in range(6)]
gw = rd("d_wgal.fits")
gk = gw >= 0.5
ok("IQU: I as the single-column map", np.abs(iqu[0] - n).max() <= 1e-13 * np.abs(n[keep]).max())
for c, f in ((1, "wq"), (2, "wu")):  # measured 7.1e-15 (Q), 5.5e-15 (U)
    r = rd(f"d_{f}.fits") / np.where(gk, gw, 1)
    le(f"IQU column {'IQU'[c]} (own missing set) vs direct normalised, max rel", rel(iqu[c], r, gk), 7e-14)
    ok(f"IQU column {'IQU'[c]}: UNSEEN where its A(w) < 0.5", np.array_equal(unseen(iqu[c]), ~gk))
ok("IQU: WEIGHT_I is A(w) of I", np.abs(iqu[3] - dw).max() < 1e-13)
ok("IQU: WEIGHT_Q = WEIGHT_U = A(w) of the galactic cut",
   np.array_equal(iqu[4], iqu[5]) and np.abs(iqu[4] - gw).max() < 1e-13)
# a complete map: smoothed as is; --write-weight gives A(1)
c0, c1 = rd("clean_w.fits", 0), rd("clean_w.fits", 1)
ok("complete map with --write-weight: data as without it", np.array_equal(c0, rd("a_complete.fits")))
ok("complete map: WEIGHT = A(1), within 10% of 1", np.abs(c1 - 1).max() < 0.1, f"{np.abs(c1 - 1).max():.3e}")
EOF
if [ ! -s "$T/checks.txt" ]; then
  bad "comparison script: $(cat "$T/checks.err")"
else
  [ -s "$T/checks.err" ] && echo "  (python stderr: $(head -5 "$T/checks.err"))"
  grep '^#' "$T/checks.txt"
  while IFS='|' read -r name value extra; do
    case $name in
      LE\ *) check_le "${name#LE }" "$value" "$extra" ;;
      OK\ *) [ "$value" = 1 ] && { echo "  ${name#OK }: ok"; ok; } || bad "${name#OK }: $extra" ;;
    esac
  done <"$T/checks.txt"
  nun=$(sed -n 's/^UNSEEN_COUNT //p' "$T/checks.txt")
  grep -q ", $nun output pixels UNSEEN (A(w) < 0.5)$" "$T/norm.err" && ok ||
    bad "stderr UNSEEN count is not the output's $nun: $(cat "$T/norm.err")"
fi

# ----------------------------------------------------------- bad usage
# expect_fail NAME EXPECTED_TEXT ARGS... : exit 2, stderr contains
# EXPECTED_TEXT, no output and no temporary file.
O=$T/fail.fits
expect_fail() { local name=$1 text=$2; shift 2; expect_refused "$name" "$text" "$O" "$@"; }
M=$T/masked.fits
expect_fail "min-weight -0.1"  "--min-weight" "$M" "$O" "${G[@]}" --min-weight -0.1
expect_fail "min-weight 1.5"   "--min-weight" "$M" "$O" "${G[@]}" --min-weight 1.5
expect_fail "min-weight nan"   "--min-weight" "$M" "$O" "${G[@]}" --min-weight nan
expect_fail "min-weight inf"   "--min-weight" "$M" "$O" "${G[@]}" --min-weight inf
expect_fail "min-weight text"  "--min-weight" "$M" "$O" "${G[@]}" --min-weight half
expect_fail "min-weight empty" "--min-weight" "$M" "$O" "${G[@]}" --min-weight=
expect_fail "min-weight twice" "--min-weight" "$M" "$O" "${G[@]}" --min-weight 0.5 --min-weight 0.6
expect_fail "mask-mode bogus"  "--mask-mode"  "$M" "$O" "${G[@]}" --mask-mode average
expect_fail "min-weight, zero" "--min-weight applies to --mask-mode normalize only" "$M" "$O" "${G[@]}" --mask-mode zero --min-weight 0.5
expect_fail "mask missing"     "nosuch.fits"  "$M" "$O" "${G[@]}" --mask "$T/nosuch.fits"
expect_fail "mask not FITS"    "notfits.fits" "$M" "$O" "${G[@]}" --mask "$T/notfits.fits"
expect_fail "mask nside"       "mask16.fits"  "$M" "$O" "${G[@]}" --mask "$T/mask16.fits"
grep -q "NSIDE = 16, but .*masked.fits has NSIDE = 32" "$T/stderr" && ok || bad "mask nside message: $(cat "$T/stderr")"
expect_fail "mask value 2"     "mask_range.fits" "$M" "$O" "${G[@]}" --mask "$T/mask_range.fits"
expect_fail "mask value -0.25" "mask_neg.fits" "$M" "$O" "${G[@]}" --mask "$T/mask_neg.fits"
expect_fail "mask no value"    "--mask"       "$M" "$O" "${G[@]}" --mask
# one input among several with another nside: nothing at all is written
mkdir -p "$T/batch"
"$ARKCOS" smooth "$M" "$T/holes.fits" "$T/batch/" "${G[@]}" --mask "$T/mask16.fits" >/dev/null 2>"$T/stderr"
rc=$?
[ $rc -eq 2 ] && [ -z "$(ls -A "$T/batch")" ] && ok || bad "batch with a mismatched mask: exit $rc, $(ls "$T/batch")"

echo "TESTS $pass $fail"
[ "$fail" -eq 0 ]
