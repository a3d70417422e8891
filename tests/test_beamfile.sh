#!/usr/bin/env bash
# test_beamfile.sh -- `arkcos smooth --beam-file` on the command line
# (harness/smooth/smooth_beam.h): malformed beam files exit 2 naming the file and
# the line (or column), a window cut in harmonic space that rings and a
# window error above --beam-tolerance are refused with the measured figure,
# the option combinations that do not apply are refused, and nothing is
# written. The accuracy against healpy is tests/test_beamfile.py's.
# Fixtures are written with healpy ($PYTHON). Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
. tests/cli_lib.sh beamfile

if ! "$PYTHON" - "$T" <<'EOF2'
import sys, warnings
import numpy as np
import healpy as hp
warnings.simplefilter("ignore")
d = sys.argv[1]
hp.write_map(f"{d}/map.fits", np.random.default_rng(2).standard_normal(12 * 16 ** 2), dtype=np.float64)
bl = hp.gauss_beam(np.radians(15), lmax=128)  # 15 deg: 4.1 pixels per FWHM at nside 16
hp.write_cl(f"{d}/gauss.fits", bl)
np.savetxt(f"{d}/gauss.txt", np.c_[np.arange(bl.size), bl], fmt="%d %.17g")
np.savetxt(f"{d}/gauss_only.txt", bl)
def text(name, s):
    with open(f"{d}/{name}", "w") as f:
        f.write(s)
g = lambda l: f"{np.exp(-l * (l + 1) * 1e-3):.8f}"
text("bad_gap.txt", "# l B_l\n" + "".join(f"{l} {g(l)}\n" for l in (0, 1, 2, 4, 5)))
text("bad_word.txt", "0 1\n1 0.99\n2 abc\n")
text("bad_cols.txt", "0 1 1\n1 0.99 0.98\n")
text("bad_mixed.txt", "0 1\n1 0.99\n0.97\n")
text("bad_nan.txt", "0 1\n1 nan\n2 0.9\n")
text("bad_b0.txt", "0 0\n1 0.5\n2 0.2\n")
text("bad_one.txt", "# only l = 0\n0 1\n")
text("bad_empty.txt", "")
# a top-hat window in l (1 to l = 24, 0 beyond): its Legendre sum rings over
# the whole sphere
text("tophat_l.txt", "".join(f"{l} {1 if l <= 24 else 0}\n" for l in range(49)))
EOF2
then
  echo "FAIL cannot write fixtures with $PYTHON (healpy needed)"
  echo "TESTS 0 1"; exit 1
fi

M=$T/map.fits
O=$T/out.fits
# expect_fail NAME REGEX ARGS... : exit 2, stderr matches REGEX, $O not written.
expect_fail() {
  local name=$1 re=$2; shift 2
  rm -f "$O"
  "$ARKCOS" smooth "$M" "$O" "$@" >"$T/stdout" 2>"$T/stderr"
  local rc=$?
  if [ $rc -ne 2 ]; then bad "$name: exit $rc, expected 2 ($(cat "$T/stderr"))"; return; fi
  if ! grep -qE -- "$re" "$T/stderr"; then bad "$name: message does not match '$re': $(cat "$T/stderr")"; return; fi
  if [ -e "$O" ]; then bad "$name: $O was written"; return; fi
  ok
}

# ------------------------------------------------------------- it works
for f in gauss.fits gauss.txt gauss_only.txt; do
  rm -f "$O"
  "$ARKCOS" smooth "$M" "$O" --beam-file "$T/$f" -v >"$T/stdout" 2>"$T/stderr"
  rc=$?
  [ $rc -eq 0 ] && [ -s "$O" ] && ok || bad "$f: exit $rc $(cat "$T/stderr")"
  grep -qE "^arkcos smooth: beam .*$f: window error max \|K_l - B_l/B_0\| = [0-9.e-]+ at l = [0-9]+ \(l <= 47, nside 16; B_l to l = 128\)" "$T/stderr" &&
    ok || bad "$f: no window error line on stderr: $(cat "$T/stderr")"
  grep -qE "^window: [0-9.e-]+ .* nside=16 " "$T/stdout" && ok || bad "$f: -v has no window: line: $(cat "$T/stdout")"
  grep -qE "beam=.*$f window_err=[0-9.e-]+ cutoff=" "$T/stdout" && ok || bad "$f: summary line: $(cat "$T/stdout")"
done
# the column by name and by number (healpy's write_cl names it TEMPERATURE)
for c in TEMPERATURE temperature 1; do
  "$ARKCOS" smooth "$M" "$O" --force --beam-file "$T/gauss.fits" --beam-column "$c" >/dev/null 2>"$T/stderr" &&
    ok || bad "--beam-column $c: $(cat "$T/stderr")"
done
# every method takes it
for m in direct fsht; do
  "$ARKCOS" smooth "$M" "$O" --force --beam-file "$T/gauss.fits" --method $m >/dev/null 2>"$T/stderr" &&
    ok || bad "--method $m: $(cat "$T/stderr")"
done

# ------------------------------------------------------- malformed files
expect_fail "gap in l" "bad_gap\.txt:5: multipole 4 where 3 was expected" --beam-file "$T/bad_gap.txt"
expect_fail "not a number" "bad_word\.txt:3: not a number: abc" --beam-file "$T/bad_word.txt"
expect_fail "three columns" "bad_cols\.txt:1: expected .l B_l. or B_l, found more columns" --beam-file "$T/bad_cols.txt"
expect_fail "columns change" "bad_mixed\.txt:3: 1 columns where the file's first line has 2" --beam-file "$T/bad_mixed.txt"
expect_fail "NaN" "bad_nan\.txt.*(l = 1|:2)" --beam-file "$T/bad_nan.txt"
expect_fail "B_0 = 0" "bad_b0\.txt: B_0 = 0" --beam-file "$T/bad_b0.txt"
expect_fail "one multipole" "bad_one\.txt: 1 multipoles" --beam-file "$T/bad_one.txt"
expect_fail "empty" "bad_empty\.txt: 0 multipoles" --beam-file "$T/bad_empty.txt"
expect_fail "missing file" "nothere\.fits: cannot read beam file" --beam-file "$T/nothere.fits"
expect_fail "FITS column name" "gauss\.fits: no column named POLARIZATION" --beam-file "$T/gauss.fits" --beam-column POLARIZATION
expect_fail "FITS column number" "gauss\.fits: column 2 does not exist \(the table has 1\)" --beam-file "$T/gauss.fits" --beam-column 2
expect_fail "text column name" "gauss\.txt: a text beam file has no column TEMPERATURE" --beam-file "$T/gauss.txt" --beam-column TEMPERATURE

# ---------------------------------------------------------------- refusals
# The top-hat window's sum reaches 0.04 K(0) from 90 degrees on (measured).
expect_fail "ringing window" "tophat_l\.txt: its kernel does not stay below 1e-05 of K\(0\) before 180 degrees .*reaches 0\.0[0-9]+ K\(0\).*l = 48" --beam-file "$T/tophat_l.txt"
# The Gaussian's window error (measured 7.3e-6 at nside 16; 7e-9 with
# --cutoff-rel 1e-8) above a
# tolerance of 1e-6; accepted at 1e-5.
expect_fail "window error above --beam-tolerance" "gauss\.fits: the beam cannot be made compact to --beam-tolerance 1e-06 at nside 16: window error max \|K_l - B_l/B_0\| = [0-9.]+e-06" --beam-file "$T/gauss.fits" --beam-tolerance 1e-6
"$ARKCOS" smooth "$M" "$O" --force --beam-file "$T/gauss.fits" --beam-tolerance 1e-5 >/dev/null 2>"$T/stderr" &&
  ok || bad "--beam-tolerance 1e-5: $(cat "$T/stderr")"
# a smaller --cutoff-rel lowers the window error below 1e-6
"$ARKCOS" smooth "$M" "$O" --force --beam-file "$T/gauss.fits" --beam-tolerance 1e-6 --cutoff-rel 1e-8 >/dev/null 2>"$T/stderr" &&
  ok || bad "--cutoff-rel 1e-8 --beam-tolerance 1e-6: $(cat "$T/stderr")"

# ------------------------------------------------------ option combinations
expect_fail "two kernels" "give only one kernel: .*--beam-file" --beam-file "$T/gauss.fits" --fwhm-arcmin 900
expect_fail "beam and kernel file" "give only one kernel" --beam-file "$T/gauss.fits" --kernel-file "$T/gauss.txt"
expect_fail "--beam-column alone" "--beam-column applies only to --beam-file" --fwhm-arcmin 900 --beam-column 1
expect_fail "--beam-tolerance alone" "--beam-tolerance applies only to --beam-file" --fwhm-arcmin 900 --beam-tolerance 1e-3
expect_fail "--cutoff-deg with a beam" "--cutoff-deg does not apply to --beam-file" --beam-file "$T/gauss.fits" --cutoff-deg 30
expect_fail "--beam-tolerance 0" "--beam-tolerance: must be > 0, got '0'" --beam-file "$T/gauss.fits" --beam-tolerance 0
expect_fail "--beam-tolerance word" "--beam-tolerance: 'x' is not a finite number" --beam-file "$T/gauss.fits" --beam-tolerance x
expect_fail "--kernel-unit with a beam" "--kernel-unit applies only to --kernel-file" --beam-file "$T/gauss.fits" --kernel-unit deg
expect_fail "--beam-file twice" "--beam-file: given twice" --beam-file "$T/gauss.fits" --beam-file "$T/gauss.txt"
expect_fail "no kernel" "a kernel is needed: .*--beam-file FILE"
"$ARKCOS" smooth --help | grep -q -- "--beam-file FILE     B_l from a FITS table" && ok || bad "--help does not describe --beam-file"

echo "TESTS $pass $fail"
[ "$fail" -eq 0 ]
