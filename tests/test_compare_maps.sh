#!/usr/bin/env bash
# test_compare_maps.sh -- `arkcos compare-maps`: the JSON metrics on maps
# with hand-computable answers (identical maps, B = 2 A, a NESTED copy), the
# spectra with --lmax, and exit 2 for every bad input (nsides differ, lmax
# out of range, missing or non-FITS file, bad options). Fixtures are written
# with healpy ($PYTHON). Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
ARKCOS="${ARKCOS:-$PWD/build/arkcos}"
PYTHON="${PYTHON:-/usr/bin/python3}"
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

T=$(mktemp -d /tmp/arkcos-test-compare-maps-XXXXXX)
trap 'rm -rf "$T"' EXIT

if [ ! -x "$ARKCOS" ]; then
  echo "FAIL no arkcos binary at $ARKCOS"; echo "TESTS 0 1"; exit 1
fi

if ! "$PYTHON" - "$T" <<'EOF'
import sys, warnings
import numpy as np
import healpy as hp
warnings.simplefilter("ignore")
d = sys.argv[1]
nside = 16
rng = np.random.default_rng(3)
a = rng.standard_normal(12 * nside ** 2)
hp.write_map(f"{d}/a.fits", a, dtype=np.float64)
hp.write_map(f"{d}/a_nest.fits", hp.reorder(a, r2n=True), nest=True,
             dtype=np.float64)
hp.write_map(f"{d}/twice.fits", 2 * a, dtype=np.float64)
hp.write_map(f"{d}/small.fits", np.ones(12 * 8 ** 2), dtype=np.float64)
# I, Q, U: B's Q is A's doubled, its U A's plus half its rms: the columns differ
# by known amounts, and only the first agrees
iqu = rng.standard_normal((3, 12 * nside ** 2))
hp.write_map(f"{d}/iqu_a.fits", iqu, dtype=np.float64)
hp.write_map(f"{d}/iqu_b.fits", [iqu[0], 2 * iqu[1], iqu[2] + 0.5 * np.sqrt(np.mean(iqu[2] ** 2))],
             dtype=np.float64)
with open(f"{d}/notfits.fits", "w") as f:
    f.write("not a FITS file\n")
EOF
then
  echo "FAIL cannot write fixtures with $PYTHON (healpy)"; echo "TESTS 0 1"; exit 1
fi

# Reads a JSON key (dotted path) from stdin with $PYTHON.
jget() { "$PYTHON" -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(len(v) if isinstance(v, list) else v)' "$1"; }
# near VALUE WANT TOL: |VALUE - WANT| <= TOL
near() { "$PYTHON" -c 'import sys; v, w, t = map(float, sys.argv[1:]); sys.exit(abs(v - w) > t)' "$@"; }

# --------------------------------------------------------------- metrics
out=$("$ARKCOS" compare-maps "$T/a.fits" "$T/a.fits"); rc=$?
[ $rc -eq 0 ] && ok || bad "identical maps: exit $rc"
for k in frac_rms max_rel frac_rms_north frac_rms_belt frac_rms_south \
         max_rel_north max_rel_belt max_rel_south; do
  v=$(echo "$out" | jget $k 2>/dev/null)
  near "${v:-nan}" 0 0 && ok || bad "identical maps: $k = $v"
done
[ "$(echo "$out" | jget nside)" = 16 ] && ok || bad "nside not 16"

# A = 2 B against B: rms(A - B) / rms(B) = 1 exactly, in every region too.
out=$("$ARKCOS" compare-maps "$T/twice.fits" "$T/a.fits"); rc=$?
[ $rc -eq 0 ] && ok || bad "twice: exit $rc"
near "$(echo "$out" | jget frac_rms)" 1 1e-9 && ok || bad "twice: frac_rms $(echo "$out" | jget frac_rms)"
# a against 2a: rms(-a) / rms(2a) = 0.5
out=$("$ARKCOS" compare-maps "$T/a.fits" "$T/twice.fits")
near "$(echo "$out" | jget frac_rms)" 0.5 1e-9 && ok || bad "half: frac_rms"

# NESTED input is converted on read: the same map.
out=$("$ARKCOS" compare-maps "$T/a_nest.fits" "$T/a.fits"); rc=$?
[ $rc -eq 0 ] && near "$(echo "$out" | jget max_rel)" 0 0 && ok || bad "NESTED copy differs"

# Spectra with A = a, B = 2a: C^B = 4 C^A, so (C^A - C^B) / C^B = -0.75 at
# every l, and A - B = -a gives C^{A-B} / C^B = 0.25.
out=$("$ARKCOS" compare-maps "$T/a.fits" "$T/twice.fits" --lmax 32); rc=$?
[ $rc -eq 0 ] && ok || bad "--lmax 32: exit $rc"
near "$(echo "$out" | jget spectra.max_rel_residual)" 0.75 1e-9 && ok || bad "spectra: max_rel_residual"
near "$(echo "$out" | jget spectra.diff_max_ratio)" 0.25 1e-9 && ok || bad "spectra: diff_max_ratio"
[ "$(echo "$out" | jget spectra.cl_a)" = 33 ] && ok || bad "spectra: cl_a has not lmax + 1 entries"
"$ARKCOS" compare-maps "$T/a.fits" "$T/twice.fits" --lmax=64 >/dev/null && ok || bad "--lmax=64 (4 nside) refused"

# I, Q, U files: every column compared, and said so. B = (I, 2Q, U + rms(U)/2):
# frac_rms = 0 for I, 0.5 for Q (rms(-Q) / rms(2Q)), and for U
# rms(U)/2 / rms(U + rms(U)/2) = 0.5 / sqrt(1.25 + mean(U) / rms(U)) (mean ~ 0).
out=$("$ARKCOS" compare-maps "$T/iqu_a.fits" "$T/iqu_b.fits" 2>"$T/err"); rc=$?
[ $rc -eq 0 ] && ok || bad "I, Q, U: exit $rc"
[ "$(echo "$out" | jget ncols)" = 3 ] && [ "$(echo "$out" | jget columns)" = 3 ] && ok ||
  bad "I, Q, U: not 3 columns compared: $out"
[ "$(echo "$out" | jget columns.1.name)" = Q_POLARISATION ] && [ "$(echo "$out" | jget column)" = TEMPERATURE ] &&
  ok || bad "I, Q, U: column names"
near "$(echo "$out" | jget columns.0.frac_rms)" 0 0 && near "$(echo "$out" | jget frac_rms)" 0 0 && ok ||
  bad "I, Q, U: I differs"
near "$(echo "$out" | jget columns.1.frac_rms)" 0.5 1e-9 && ok || bad "I, Q, U: Q frac_rms $(echo "$out" | jget columns.1.frac_rms)"
near "$(echo "$out" | jget columns.2.frac_rms)" 0.447 0.02 && ok || bad "I, Q, U: U frac_rms $(echo "$out" | jget columns.2.frac_rms)"
grep -q "3 columns compared one by one" "$T/err" && ok || bad "I, Q, U: no note on stderr: $(cat "$T/err")"
out=$("$ARKCOS" compare-maps "$T/iqu_a.fits" "$T/a.fits" 2>"$T/err"); rc=$?
[ $rc -eq 0 ] && [ "$(echo "$out" | jget ncols)" = 1 ] && grep -q "has 3 column(s), .* has 1: the first 1 compared" "$T/err" &&
  ok || bad "3 columns against 1: exit $rc, $(cat "$T/err")"
"$ARKCOS" compare-maps "$T/a.fits" "$T/twice.fits" 2>"$T/err" >/dev/null
[ -s "$T/err" ] && bad "a note for one column each: $(cat "$T/err")" || ok

# ------------------------------------------------------------- bad input
expect2() {
  local what=$1; shift
  "$ARKCOS" compare-maps "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ $rc -eq 2 ] && [ -s "$T/err" ]; then ok; else bad "$what: exit $rc (want 2): $(cat "$T/err")"; fi
}
expect2 "nsides differ" "$T/a.fits" "$T/small.fits"
grep -q small.fits "$T/err" && ok || bad "nside message does not name the file"
expect2 "--lmax 0" "$T/a.fits" "$T/twice.fits" --lmax 0
expect2 "--lmax 4 nside + 1" "$T/a.fits" "$T/twice.fits" --lmax 65
expect2 "--lmax abc" "$T/a.fits" "$T/twice.fits" --lmax abc
expect2 "--lmax without value" "$T/a.fits" "$T/twice.fits" --lmax
expect2 "--iter -1" "$T/a.fits" "$T/twice.fits" --lmax 8 --iter -1
grep -q -- "--iter: must be >= 0, got '-1'" "$T/err" && ok || bad "--iter -1: message: $(cat "$T/err")"
# --iter takes 0..1000 as everywhere (the option table: arkcos smooth, the configs' "iter")
expect2 "--iter 1001" "$T/a.fits" "$T/twice.fits" --lmax 8 --iter 1001
grep -q -- "--iter: must be <= 1000, got '1001'" "$T/err" && ok || bad "--iter 1001: message: $(cat "$T/err")"
"$ARKCOS" compare-maps "$T/a.fits" "$T/twice.fits" --lmax 8 --iter 1000 >/dev/null 2>"$T/err" && ok ||
  bad "--iter 1000 refused: $(cat "$T/err")"
grep -q -- "--lmax: must be >= 1, got '0'" <("$ARKCOS" compare-maps "$T/a.fits" "$T/twice.fits" --lmax 0 2>&1) && ok ||
  bad "--lmax 0: the message does not name the flag and the bound"
expect2 "missing file" "$T/a.fits" "$T/nope.fits"
grep -q nope.fits "$T/err" && ok || bad "missing-file message does not name the file"
expect2 "not FITS" "$T/notfits.fits" "$T/a.fits"
expect2 "one map" "$T/a.fits"
expect2 "three maps" "$T/a.fits" "$T/a.fits" "$T/a.fits"
expect2 "unknown option" "$T/a.fits" "$T/a.fits" --frobnicate
"$ARKCOS" compare-maps --help | grep -q frac_rms && ok || bad "--help"
expect2 "--threads -1" "$T/a.fits" "$T/twice.fits" --lmax 8 --threads -1
"$ARKCOS" compare-maps "$T/a.fits" "$T/twice.fits" --lmax 8 --threads 0 >/dev/null && ok ||
  bad "--threads 0 (all cores) refused"

echo "TESTS $pass $fail"
[ $fail -eq 0 ]
