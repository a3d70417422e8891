#!/usr/bin/env bash
# perfcheck.sh -- the CI performance guard behind `make perfcheck` and
# `make perfcheck-update`.
#
#   scripts/perfcheck.sh            run configs/ci-perf.json (about 1 minute on
#                                   2 cores) and compare it with the committed
#                                   baseline with `arkcos compare`'s defaults
#                                   (times divided by the FSHT iter 0 case of
#                                   the same nside, repeat by repeat, CPU time
#                                   of threads that wait passively, which
#                                   `arkcos run` sets); exit 3 on a
#                                   regression, 4 when the machine was too
#                                   noisy to judge
#   scripts/perfcheck.sh --update   run it and record it as the new baseline
#                                   (results/baselines/ci-perf.json; commit it)
#
# A regression has to show twice: when the first comparison finds one, the
# sweep runs again and only cases that regress in both runs fail the check.
# A comparison that is too noisy to judge (compare's exit 4: the repeats of a
# run spread too widely, a burst of other load) gets one more run too; its
# verdict stands. A regression whose case the second run finds too noisy to
# judge is neither confirmed nor refuted: exit 4.
#
# Environment: BUILD (build), ARKCOS ($BUILD/arkcos), PERFCHECK_CONFIG,
# PERFCHECK_BASELINE, PERFCHECK_OUT (results/ci-perf/latest),
# PERFCHECK_THRESHOLD and PERFCHECK_NORMALIZE (unset: compare's defaults,
# 15 % and auto), PERFCHECK_CONFIRM (1: rerun to confirm a regression or
# after a too-noisy verdict; 0: the first comparison decides).
# Exit status: 0 no regression, 3 regression, 4 too noisy to judge, 2 no
# baseline / bad input, 1 the sweep failed.
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
ARKCOS=${ARKCOS:-$BUILD/arkcos}
CONFIG=${PERFCHECK_CONFIG:-configs/ci-perf.json}
BASELINE=${PERFCHECK_BASELINE:-results/baselines/ci-perf.json}
OUT=${PERFCHECK_OUT:-results/ci-perf/latest}
THRESHOLD=${PERFCHECK_THRESHOLD:-}
NORMALIZE=${PERFCHECK_NORMALIZE:-}
CONFIRM=${PERFCHECK_CONFIRM:-1}

update=0
case "${1:-}" in
  "") ;;
  --update) update=1 ;;
  -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "perfcheck.sh: unknown argument '$1' (expected --update)" >&2; exit 2 ;;
esac

if [ ! -x "$ARKCOS" ]; then
  echo "perfcheck.sh: $ARKCOS not found; run make first" >&2
  exit 1
fi

# run_sweep DIR: the CI sweep into DIR (started afresh)
run_sweep() {
  echo "perfcheck: $ARKCOS run $CONFIG --out $1" >&2
  local t0=$SECONDS
  "$ARKCOS" run "$CONFIG" --out "$1" --force
  local rc=$?
  echo "perfcheck: sweep took $((SECONDS - t0)) s (exit $rc)" >&2
  return $rc
}

# compare_to NEW LOG: compares NEW with the baseline, table to stdout and LOG
compare_to() {
  local opts=()
  [ -n "$NORMALIZE" ] && opts+=(--normalize-by "$NORMALIZE")
  [ -n "$THRESHOLD" ] && opts+=(--threshold "$THRESHOLD")
  "$ARKCOS" compare "$BASELINE" "$1" "${opts[@]}" | tee "$2"
  return "${PIPESTATUS[0]}"
}

# regressed LOG: the names of the regressed cases in a compare log, one a line
regressed() {
  sed -n '/^[0-9]* REGRESSIONS*:$/,$p' "$1" | sed -n 's/^  \(.*\): [+-][0-9].*$/\1/p; s/^  \(.*\): failed in the new run.*$/\1/p' | sort -u
}

# too_noisy LOG: the names of the cases compare found too noisy to judge
too_noisy() {
  sed -n '/TOO NOISY TO JUDGE/,/^$/p' "$1" | sed -n 's/^  \(.*\): [+-][0-9].*$/\1/p' | sort -u
}

if [ "$update" -eq 1 ]; then
  run_sweep "$OUT" || { echo "perfcheck: the sweep failed or a case failed; baseline not updated" >&2; exit 1; }
  mkdir -p "$(dirname "$BASELINE")"
  tmp="$BASELINE.tmp-$$"
  cp "$OUT/results.json" "$tmp" && mv "$tmp" "$BASELINE" || { rm -f "$tmp"; exit 1; }
  echo "perfcheck: recorded $BASELINE from this machine's run; review it (arkcos compare OLD NEW) and commit it"
  exit 0
fi

if [ ! -f "$BASELINE" ]; then
  echo "perfcheck: no baseline at $BASELINE; record one with 'make perfcheck-update' and commit it" >&2
  exit 2
fi

# A baseline whose threads spun at barriers (recorded before `arkcos run`
# set OMP_WAIT_POLICY=passive, or with another policy) has no CPU times of
# the work on 2 threads: compare then judges elapsed times, which a loaded
# machine makes too noisy to judge.
policy=$(sed -n 's/^ *"omp_wait_policy": "\(.*\)",*$/\1/p' "$BASELINE" | head -1)
if [ "$policy" != passive ]; then
  echo "perfcheck: warning: the baseline's threads did not wait passively (meta.omp_wait_policy: ${policy:-absent});" \
       "its multi-threaded cases are judged on elapsed time; record a new one (make perfcheck-update)" >&2
fi

# sweep_for_check DIR: a sweep whose failed cases still get compared (they
# show as FAILED there); only a sweep without results stops the check.
sweep_for_check() {
  run_sweep "$1"
  local rc=$?
  [ "$rc" -eq 0 ] && return 0
  if [ "$rc" -eq 1 ] && [ -f "$1/results.json" ]; then
    echo "perfcheck: some cases failed; comparing what ran" >&2
    return 0
  fi
  echo "perfcheck: the sweep failed (exit $rc)" >&2
  exit $(( rc == 2 ? 2 : 1 ))
}

sweep_for_check "$OUT"
compare_to "$OUT/results.json" "$OUT/compare.txt"
rc=$?
if [ "$rc" -eq 4 ] && [ "$CONFIRM" = 1 ]; then
  echo
  echo "perfcheck: too noisy to judge; running the sweep again"
  sweep_for_check "$OUT-confirm"
  compare_to "$OUT-confirm/results.json" "$OUT-confirm/compare.txt"
  rc=$?
  case $rc in
    0) echo "perfcheck: no regression (second run)" ;;
    3) echo "perfcheck: REGRESSION (second run; the first was too noisy to judge)" ;;
    4) echo "perfcheck: TOO NOISY TO JUDGE twice: the machine is too busy for a verdict (exit 4)" ;;
  esac
  exit "$rc"
fi
if [ "$rc" -ne 3 ] || [ "$CONFIRM" != 1 ]; then
  exit "$rc"
fi

first=$(regressed "$OUT/compare.txt")
echo
echo "perfcheck: possible regression; running the sweep again to confirm it"
sweep_for_check "$OUT-confirm"
compare_to "$OUT-confirm/results.json" "$OUT-confirm/compare.txt"
rc2=$?
[ "$rc2" -eq 2 ] && exit 2
second=$(regressed "$OUT-confirm/compare.txt")
both=$(comm -12 <(printf '%s\n' "$first") <(printf '%s\n' "$second") | sed '/^$/d')
echo
if [ -n "$both" ]; then
  echo "perfcheck: REGRESSION confirmed by two runs in:"
  printf '%s\n' "$both" | sed 's/^/  /'
  exit 3
fi
unsure=$(comm -12 <(printf '%s\n' "$first") <(too_noisy "$OUT-confirm/compare.txt") | sed '/^$/d')
if [ -n "$unsure" ]; then
  echo "perfcheck: TOO NOISY TO JUDGE: the second run could neither confirm nor refute the first's regression in:"
  printf '%s\n' "$unsure" | sed 's/^/  /'
  exit 4
fi
echo "perfcheck: no case regressed in both runs; treated as noise (first run: $(printf '%s\n' "$first" | sed '/^$/d' | wc -l) case(s), second: $(printf '%s\n' "$second" | sed '/^$/d' | wc -l))"
exit 0
