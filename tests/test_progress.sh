#!/usr/bin/env bash
# test_progress.sh -- `arkcos smooth`'s progress lines (smooth_progress.h):
# on a terminal (script(1) gives the command one) the plans and each map
# with the time elapsed and expected; nothing when stderr is piped or a
# file, nor with -q/--quiet. Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
. tests/cli_lib.sh progress

if ! "$PYTHON" - "$T" <<'EOF2'
import sys, warnings
import numpy as np
import healpy as hp
warnings.simplefilter("ignore")
d = sys.argv[1]
r = np.random.default_rng(4)
hp.write_map(f"{d}/a.fits", r.standard_normal(12 * 16 ** 2), dtype=np.float64)
hp.write_map(f"{d}/iqu.fits", r.standard_normal((3, 12 * 16 ** 2)), dtype=np.float64)
EOF2
then
  echo "FAIL cannot write fixtures with $PYTHON (healpy needed)"
  echo "TESTS 0 1"; exit 1
fi
K=(--fwhm-arcmin 900)  # 4.1 pixels per FWHM at nside 16
PROG='^arkcos smooth: (planning|plan made|\[[0-9]+/[0-9]+\])'

# piped (stderr a file): the same stderr as before progress existed
"$ARKCOS" smooth "$T/a.fits" "$T/iqu.fits" "$T/o1/" "${K[@]}" >"$T/stdout" 2>"$T/stderr"
rc=$?
[ $rc -eq 0 ] && ok || bad "piped run: exit $rc $(cat "$T/stderr")"
grep -qE "$PROG" "$T/stderr" && bad "progress lines on a piped stderr: $(cat "$T/stderr")" || ok
[ -s "$T/stderr" ] && bad "piped stderr not empty: $(cat "$T/stderr")" || ok
"$ARKCOS" smooth "$T/a.fits" "$T/o1b.fits" "${K[@]}" 2>&1 | grep -qE "$PROG" &&
  bad "progress lines through a pipe" || ok

if ! command -v script >/dev/null; then
  echo "FAIL script(1) (bsdutils) is missing: scripts/install-deps.sh installs it"
  echo "TESTS $pass $((fail + 1))"; exit 1
fi
# on a terminal: plans, then [done/total] per map with elapsed and expected
# time (the Q, U pair is 2 maps: a.fits 1, iqu.fits I then Q, U)
script -qec "'$ARKCOS' smooth '$T/a.fits' '$T/iqu.fits' '$T/o2/' ${K[*]}" /dev/null >"$T/tty" 2>&1
rc=$?
tr -d '\r' <"$T/tty" >"$T/tty.txt"
[ $rc -eq 0 ] && ok || bad "terminal run: exit $rc $(cat "$T/tty.txt")"
grep -qE "^arkcos smooth: planning nside 16 \(arkcos\), elapsed [0-9.]+ s$" "$T/tty.txt" && ok ||
  bad "no planning line: $(cat "$T/tty.txt")"
grep -qE "^arkcos smooth: planning nside 16 \(arkcos, Stokes Q and U\)" "$T/tty.txt" && ok ||
  bad "no planning line for the spin-2 plan: $(cat "$T/tty.txt")"
grep -qE "^arkcos smooth: plan made in [0-9.]+ s, elapsed [0-9.]+ s$" "$T/tty.txt" && ok ||
  bad "no plan-made line: $(cat "$T/tty.txt")"
grep -qE "^arkcos smooth: \[1/4\] .*a\.fits: 1 map in [0-9.]+ s, elapsed [0-9.]+ s, expected [0-9.]+ s more$" "$T/tty.txt" &&
  ok || bad "no [1/4] line: $(cat "$T/tty.txt")"
grep -qE "^arkcos smooth: \[4/4\] .*iqu\.fits: 2 maps in [0-9.]+ s, elapsed [0-9.]+ s, expected 0\.0 s more$" "$T/tty.txt" &&
  ok || bad "no [4/4] line: $(cat "$T/tty.txt")"
cmp -s "$T/o1/iqu.fits" "$T/o2/iqu.fits" && ok || bad "the output depends on the terminal"
# -q and --quiet on a terminal: none
for q in -q --quiet; do
  script -qec "'$ARKCOS' smooth '$T/a.fits' '$T/o3.fits' --force $q ${K[*]}" /dev/null >"$T/tty" 2>&1
  rc=$?
  [ $rc -eq 0 ] && ok || bad "$q: exit $rc $(cat "$T/tty")"
  tr -d '\r' <"$T/tty" | grep -qE "$PROG" && bad "$q: progress lines: $(cat "$T/tty")" || ok
  tr -d '\r' <"$T/tty" | grep -qE "^smooth: .*a\.fits -> " && ok || bad "$q: no summary line: $(cat "$T/tty")"
done
"$ARKCOS" smooth --help | grep -qE -- "-q, --quiet +no progress lines" && ok || bad "--help has no -q"

echo "TESTS $pass $fail"
[ "$fail" -eq 0 ]
