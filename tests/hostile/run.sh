#!/usr/bin/env bash
# run.sh -- `make test-hostile`: every tests/hostile/*.sh but this one, each
# ending in "TESTS <passed> <failed>"; "<P> passed, <F> failed" at the end,
# exit 1 if anything failed.
set -u
cd "$(dirname "$0")/../.."
export PYTHON="${PYTHON:-/usr/bin/python3}"
BUILD="${BUILD:-build}"
export ARKCOS="$PWD/$BUILD/arkcos"
passed=0; failed=0
for t in tests/hostile/*.sh; do
  [ "$(basename "$t")" = run.sh ] && continue
  t0=$SECONDS
  out=$(bash "$t" 2>&1); rc=$?
  line=$(echo "$out" | grep -E '^TESTS [0-9]+ [0-9]+$' | tail -1)
  p=$(echo "${line:-TESTS 0 1}" | cut -d' ' -f2); f=$(echo "${line:-TESTS 0 1}" | cut -d' ' -f3)
  [ $rc -ne 0 ] && [ "$f" -eq 0 ] && f=1
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$f" -eq 0 ]; then echo "ok     $(basename "$t"): $p passed ($((SECONDS - t0)) s)"
  else echo "FAIL   $(basename "$t"): $p passed, $f failed ($((SECONDS - t0)) s)"; echo "$out" | tail -20; fi
  echo "$out" | grep -E "^  |^interleaved|^not interleaved|^compare.s defaults|^load average" | head -14
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
