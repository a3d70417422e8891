#!/usr/bin/env bash
# make valgrind: the smoke tests of the command under valgrind's memcheck, on
# the portable debug build in $BUILD (the -march=native build can use
# instructions valgrind does not know: SIGILL). smooth (a scalar map and an
# I, Q, U map, which takes the spin-2 path), compare-maps, run on a tiny
# sweep, compare and report. Fails on any invalid access, use of
# uninitialised memory or definite leak, and when a command fails.
set -u
cd "$(dirname "$0")/.."
BUILD="${BUILD:-build-vg}"
ARKCOS="$PWD/$BUILD/arkcos"
[ -x "$ARKCOS" ] || { echo "valgrind: no $ARKCOS (make valgrind builds it)"; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind: valgrind is not installed (scripts/install-deps.sh)"; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/arkcos-valgrind-XXXXXX")
trap 'rm -rf "$T"' EXIT
logs="$PWD/$BUILD/valgrind-logs"
rm -rf "$logs"; mkdir -p "$logs"
export OMP_NUM_THREADS=2
# set, so that `arkcos run` does not execute itself again for passive threads
# (sweep.h), which memcheck would not follow
export OMP_WAIT_POLICY=passive
fails=0; n=0
vg() {  # NAME ARGS...: the command under memcheck, its log in $logs/NAME.log
  local name=$1; shift
  n=$((n + 1))
  valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
    --errors-for-leak-kinds=definite --log-file="$logs/$name.log" "$ARKCOS" "$@" \
    >"$logs/$name.out" 2>&1
  local rc=$?
  if [ "$rc" -ne 0 ] || [ -s "$logs/$name.log" ]; then
    fails=$((fails + 1))
    echo "FAIL $name: exit $rc"; head -40 "$logs/$name.log"; tail -5 "$logs/$name.out"
  else
    echo "ok   $name"
  fi
}
C=tests/fuzz/corpus
cat >"$T/tiny.json" <<'EOF'
{"name": "valgrind", "repeats": 2, "warmup": 0, "threads": [2],
 "input": {"type": "random", "lmax_factor": 2, "seed": 3},
 "grid": {"nside": [8]},
 "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}],
 "methods": [{"name": "direct"}, {"name": "arkcos", "mode": "enhanced"},
             {"name": "arkcos", "mode": "paper", "precision": "single"},
             {"name": "fsht", "iter": 1}],
 "reference": "direct"}
EOF
vg smooth        smooth "$C/fits/nside16_rows1024_f32.fits" "$T/s.fits" --fwhm-arcmin 600
vg smooth_pol    smooth "$C/fits/nside2_iqu_nest_f32.fits" "$T/p.fits" --fwhm-arcmin 3000 --force
vg compare_maps  compare-maps "$T/s.fits" "$C/fits/nside16_rows1024_f32.fits"
vg run           run "$T/tiny.json" --out "$T/run"
vg compare       compare "$T/run/results.json" "$T/run/results.json"
vg report        report "$T/run/results.json" -o "$T/report"
echo "valgrind: $((n - fails)) of $n commands clean (logs in $logs)"
[ "$fails" -eq 0 ]
