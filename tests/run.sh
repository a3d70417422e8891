#!/usr/bin/env bash
# Runs every test: build/tests/test_* binaries, then tests/test_*.sh and
# tests/test_*.py. Each prints "TESTS <passed> <failed>" as its last line.
# Prints "<P> passed, <F> failed" at the end; exit 1 if anything failed.
# TESTS_SKIP="name ..." leaves out the named tests (file names, e.g.
# test_engine test_cli.sh); make sanitize and make valgrind use it.
set -u
cd "$(dirname "$0")/.."
export PYTHON="${PYTHON:-/usr/bin/python3}"
BUILD="${BUILD:-build}"
export ARKCOS="$PWD/$BUILD/arkcos"
passed=0; failed=0; broken=()
logdir=$BUILD/test-logs; mkdir -p "$logdir"
run_one() {
  local name=$1; shift
  case " ${TESTS_SKIP:-} " in *" $name "*) echo "skip   $name"; return ;; esac
  local log="$logdir/$name.log" t0=$SECONDS
  "$@" >"$log" 2>&1
  local rc=$?
  local line; line=$(grep -E '^TESTS [0-9]+ [0-9]+$' "$log" | tail -1)
  if [ -z "$line" ]; then
    echo "BROKEN $name (exit $rc, no TESTS line; see $log)"; tail -20 "$log"
    failed=$((failed + 1)); broken+=("$name"); return
  fi
  local p f; p=$(echo "$line" | cut -d' ' -f2); f=$(echo "$line" | cut -d' ' -f3)
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$f" -ne 0 ] || [ "$rc" -ne 0 ]; then
    [ "$f" -eq 0 ] && failed=$((failed + 1))
    echo "FAIL   $name: $p passed, $f failed, exit $rc ($((SECONDS - t0)) s)"
    grep -E '^FAIL|^  ' "$log" | head -40
    broken+=("$name")
  else
    echo "ok     $name: $p passed ($((SECONDS - t0)) s)"
  fi
}
for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] || continue
  run_one "$(basename "$t")" "$t"
done
for t in tests/test_*.sh; do
  [ -f "$t" ] || continue
  run_one "$(basename "$t")" bash "$t"
done
for t in tests/test_*.py; do
  [ -f "$t" ] || continue
  run_one "$(basename "$t")" "$PYTHON" "$t"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
