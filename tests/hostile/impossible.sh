#!/usr/bin/env bash
# impossible.sh -- README, Guarantees: a job that cannot fit ends at once.
# Under an 8 GiB address-space limit (ulimit -v 8388608): a sweep at nside
# 2^20 with the memory guard turned off ("limits": {"memory_bytes": 1e18}),
# `arkcos smooth` of a partial-sky map of nside 2^20 with --max-memory far
# above the limit, and the Python package's Plan(2**20): each fails with a
# message naming the limit, in well under 30 s (measured: 0.1, 0.01 and 0.4
# s; before, the sweep computed on one core for minutes). Last line:
# "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/../.."
. tests/cli_lib.sh impossible
LIMIT=30  # seconds; measured 0.01-0.4
# timed NAME WANT_RC TEXT CMD...: under ulimit -v 8 GiB, exit WANT_RC, TEXT in
# the output, within LIMIT seconds
timed() {
  local name=$1 want=$2 text=$3; shift 3
  local t0; t0=$(date +%s%N)
  timeout 120 bash -c 'ulimit -v 8388608 && exec "$@"' _ "$@" >"$T/out" 2>&1
  local rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ $rc -ne "$want" ]; then bad "$name: exit $rc, expected $want: $(tail -c 300 "$T/out")"; else ok; fi
  grep -qF -- "$text" "$T/out" && ok || bad "$name: '$text' not in: $(tail -c 300 "$T/out")"
  check_le "$name, seconds" "$(awk -v m="$ms" 'BEGIN { print m / 1000 }')" "$LIMIT"
}
cat >"$T/huge.json" <<'EOF2'
{"name": "huge", "grid": {"nside": [1048576]}, "kernels": [{"type": "gaussian", "fwhm_arcmin": 1, "cutoff_rel": 1e-5}],
 "methods": [{"name": "arkcos", "backend": "cpu"}, {"name": "fsht", "iter": 0}], "repeats": 1,
 "reference": "none", "limits": {"memory_bytes": 1e18}}
EOF2
timed "sweep at nside 2^20, memory_bytes 1e18" 1 "2 failed" "$ARKCOS" run "$T/huge.json" --out "$T/huge"
"$PYTHON" -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d['cases']) == 2 and all(c['status'] == 'failed' and 'RLIMIT_AS' in c['reason'] for c in d['cases']), d['cases']
print('  ' + d['cases'][0]['reason'])" "$T/huge/results.json" && ok || bad "sweep: the failures do not name the limit"
"$PYTHON" tests/partial_map.py "$T/huge_partial.fits" 1048576
timed "smooth at nside 2^20, --max-memory 1000000G" 1 "RLIMIT_AS" \
  "$ARKCOS" smooth "$T/huge_partial.fits" "$T/o.fits" --fwhm-arcmin 1 --backend cpu --max-memory 1000000G
[ -e "$T/o.fits" ] && bad "smooth: output written" || ok
cat >"$T/plan.py" <<'EOF2'
import arkcos
try:
    arkcos.Plan(2 ** 20, fwhm=1e-4)
except arkcos.ArkcosError as e:
    print(e)
    raise SystemExit(1)
EOF2
timed "python Plan(2**20)" 1 "RLIMIT_AS" env PYTHONPATH=python \
  ARKCOS_PYTHON_LIBRARY="$(dirname "$ARKCOS")/libarkcos.so" "$PYTHON" "$T/plan.py"
echo "TESTS $pass $fail"
[ "$fail" -eq 0 ]
