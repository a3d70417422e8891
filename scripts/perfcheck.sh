#!/usr/bin/env bash
# perfcheck.sh -- the CI performance guard behind `make perfcheck` and
# `make perfcheck-update`.
#
#   scripts/perfcheck.sh            run configs/ci-perf.json (about 1 minute on
#                                   2 cores) with this build and with the
#                                   reference commit's, on this machine, and
#                                   compare the two with `arkcos compare`'s
#                                   defaults (times divided by the FSHT iter 0
#                                   case of the same nside, repeat by repeat,
#                                   CPU time of threads that wait passively,
#                                   which `arkcos run` sets); exit 3 on a
#                                   regression, 4 when the machine was too
#                                   noisy to judge
#   scripts/perfcheck.sh --update   run it and record it as the new baseline
#                                   (results/baselines/ci-perf.json; commit it):
#                                   its meta.git_commit becomes the reference
#
# The reference is the commit the committed baseline was recorded from
# (its meta.git_commit). perfcheck exports that commit from git, builds its
# `arkcos` under $BUILD/perfcheck-ref/COMMIT (kept for the next check) and
# times both builds here, one sweep after the other: a baseline's ratios to
# FSHT recorded on another processor differ by 20 % and more (an AMD EPYC
# baseline against an Intel Xeon run: +21 % at nside 512 for the same code),
# two builds on one machine do not. Where the commit cannot be had (not a git
# checkout, a history without it, its build fails), the committed results
# themselves are the reference, with a warning saying why; those ratios
# judge a run on another machine only as far as both processors favour FSHT
# and ARKCoS alike.
#
# A regression has to show twice: when the first comparison finds one, both
# sweeps run again (the other build first, so that a drift of the machine
# does not favour one) and only cases that regress in both comparisons fail
# the check. A comparison that is too noisy to judge (compare's exit 4: the
# repeats of a run spread too widely, a burst of other load) gets one more
# run too; its verdict stands. A regression whose case the second run finds
# too noisy to judge is neither confirmed nor refuted: exit 4.
#
# Environment: BUILD (build), ARKCOS ($BUILD/arkcos), PERFCHECK_CONFIG,
# PERFCHECK_BASELINE, PERFCHECK_OUT (results/ci-perf/latest; the reference's
# sweeps go to $PERFCHECK_OUT-ref), PERFCHECK_THRESHOLD and
# PERFCHECK_NORMALIZE (unset: compare's defaults, 15 % and auto),
# PERFCHECK_CONFIRM (1: rerun to confirm a regression or after a too-noisy
# verdict; 0: the first comparison decides), PERFCHECK_REFERENCE (auto: the
# baseline's commit built here, else the baseline's results; commit: the
# commit or exit 2; baseline: the committed results), PERFCHECK_REF_COMMIT
# (another commit to build as the reference, e.g. origin/main),
# PERFCHECK_REF_ARKCOS (an `arkcos` already built from the reference: no
# build).
# Exit status: 0 no regression, 3 regression, 4 too noisy to judge, 2 no
# baseline / bad input / (PERFCHECK_REFERENCE=commit) no reference build, 1
# the sweep failed.
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
REFERENCE=${PERFCHECK_REFERENCE:-auto}
REF_COMMIT=${PERFCHECK_REF_COMMIT:-}
REF_ARKCOS=${PERFCHECK_REF_ARKCOS:-}

update=0
case "${1:-}" in
  "") ;;
  --update) update=1 ;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "perfcheck.sh: unknown argument '$1' (expected --update)" >&2; exit 2 ;;
esac
case $REFERENCE in
  auto|commit|baseline) ;;
  *) echo "perfcheck.sh: PERFCHECK_REFERENCE='$REFERENCE' (expected auto, commit or baseline)" >&2; exit 2 ;;
esac

if [ ! -x "$ARKCOS" ]; then
  echo "perfcheck.sh: $ARKCOS not found; run make first" >&2
  exit 1
fi

# run_sweep BINARY DIR: the CI sweep with BINARY into DIR (started afresh)
run_sweep() {
  echo "perfcheck: $1 run $CONFIG --out $2" >&2
  local t0=$SECONDS
  "$1" run "$CONFIG" --out "$2" --force
  local rc=$?
  echo "perfcheck: sweep took $((SECONDS - t0)) s (exit $rc)" >&2
  return $rc
}

# compare_to REF NEW LOG: compares NEW with REF, table to stdout and LOG
compare_to() {
  local opts=()
  [ -n "$NORMALIZE" ] && opts+=(--normalize-by "$NORMALIZE")
  [ -n "$THRESHOLD" ] && opts+=(--threshold "$THRESHOLD")
  "$ARKCOS" compare "$1" "$2" "${opts[@]}" | tee "$3"
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

# meta_field FILE KEY: a string field of a results file's meta, or nothing
meta_field() {
  sed -n 's/^ *"'"$2"'": "\(.*\)",*$/\1/p' "$1" | head -1
}

if [ "$update" -eq 1 ]; then
  run_sweep "$ARKCOS" "$OUT" || { echo "perfcheck: the sweep failed or a case failed; baseline not updated" >&2; exit 1; }
  mkdir -p "$(dirname "$BASELINE")"
  tmp="$BASELINE.tmp-$$"
  cp "$OUT/results.json" "$tmp" && mv "$tmp" "$BASELINE" || { rm -f "$tmp"; exit 1; }
  echo "perfcheck: recorded $BASELINE from this machine's run; review it (arkcos compare OLD NEW) and commit it"
  c=$(meta_field "$BASELINE" git_commit)
  if grep -q '"git_dirty": true' "$BASELINE"; then
    echo "perfcheck: warning: this build had local changes; later checks build commit ${c:-unknown} as the reference, not them" >&2
  else
    echo "perfcheck: later checks build commit ${c:-unknown} as the reference"
  fi
  exit 0
fi

# A baseline whose threads spun at barriers (recorded before `arkcos run`
# set OMP_WAIT_POLICY=passive, or with another policy) has no CPU times of
# the work on 2 threads: compare then judges elapsed times, which a loaded
# machine makes too noisy to judge.
check_policy() {
  local policy
  policy=$(meta_field "$BASELINE" omp_wait_policy)
  if [ "$policy" != passive ]; then
    echo "perfcheck: warning: the baseline's threads did not wait passively (meta.omp_wait_policy: ${policy:-absent});" \
         "its multi-threaded cases are judged on elapsed time; record a new one (make perfcheck-update)" >&2
  fi
}

# build_ref COMMIT: exports COMMIT and builds its arkcos; sets REF_BIN, or
# returns 1 with the reason in WHY
build_ref() {
  local c=$1 full dir log
  if ! command -v git >/dev/null 2>&1 || ! git rev-parse --git-dir >/dev/null 2>&1; then
    WHY="this is not a git checkout"; return 1
  fi
  if ! full=$(git rev-parse --verify -q "$c^{commit}" 2>/dev/null); then
    WHY="commit '$c' is not in this repository's history (a shallow clone?)"; return 1
  fi
  dir=$BUILD/perfcheck-ref/$full
  log=$BUILD/perfcheck-ref/$full.log
  if [ -x "$dir/build/arkcos" ] && [ -f "$dir/.built" ]; then
    echo "perfcheck: reference build of $full found in $dir" >&2
    REF_BIN=$dir/build/arkcos; return 0
  fi
  rm -rf "$dir"; mkdir -p "$dir" || { WHY="cannot create $dir"; return 1; }
  echo "perfcheck: building the reference, commit $full, in $dir (log: $log)" >&2
  local t0=$SECONDS
  if ! git archive --format=tar "$full" | tar -x -C "$dir"; then
    WHY="git archive of $full failed"; rm -rf "$dir"; return 1
  fi
  # the reference's own make, not this one's: no inherited flags or folders
  if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD -u ARKCOS \
       ARKCOS_BUILD_COMMIT="$full" ARKCOS_BUILD_DIRTY=0 \
       make -C "$dir" BUILD=build -j"$(nproc 2>/dev/null || echo 2)" build/arkcos >"$log" 2>&1; then
    WHY="its build failed (the end of $log: $(tail -n 3 "$log" | tr '\n' ' '))"; return 1
  fi
  touch "$dir/.built"
  echo "perfcheck: reference built in $((SECONDS - t0)) s" >&2
  REF_BIN=$dir/build/arkcos
}

# The reference: a build of the baseline's commit here, else the baseline's
# results themselves.
need_baseline() {
  if [ ! -f "$BASELINE" ]; then
    echo "perfcheck: no baseline at $BASELINE; record one with 'make perfcheck-update' and commit it" >&2
    exit 2
  fi
}
REF_BIN=
WHY=
if [ -n "$REF_ARKCOS" ]; then
  if [ ! -x "$REF_ARKCOS" ]; then
    echo "perfcheck.sh: PERFCHECK_REF_ARKCOS=$REF_ARKCOS is not an executable" >&2; exit 2
  fi
  REF_BIN=$REF_ARKCOS
  echo "perfcheck: reference: $REF_BIN (PERFCHECK_REF_ARKCOS), timed here"
elif [ "$REFERENCE" != baseline ]; then
  c=$REF_COMMIT
  if [ -z "$c" ]; then
    need_baseline
    c=$(meta_field "$BASELINE" git_commit)
  fi
  if [ -z "$c" ] || [ "$c" = unknown ]; then
    WHY="$BASELINE names no commit (meta.git_commit: ${c:-absent})"
  elif build_ref "$c"; then
    echo "perfcheck: reference: commit $c, built here and timed here beside this build"
  fi
  if [ -z "$REF_BIN" ]; then
    if [ "$REFERENCE" = commit ]; then
      echo "perfcheck.sh: no reference build (PERFCHECK_REFERENCE=commit): $WHY" >&2
      exit 2
    fi
    echo "perfcheck: warning: the reference commit cannot be built here: $WHY;" \
         "judging against the results recorded in $BASELINE instead (their ratios come from the machine that recorded them)" >&2
  fi
fi
if [ -z "$REF_BIN" ]; then
  need_baseline
  check_policy
  here=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo 2>/dev/null | head -1)
  there=$(meta_field "$BASELINE" cpu_model)
  echo "perfcheck: reference: the results in $BASELINE (recorded on ${there:-an unnamed processor}; this machine: ${here:-unknown})"
fi

# sweep_for_check BINARY DIR: a sweep whose failed cases still get compared
# (they show as FAILED there); only a sweep without results stops the check.
sweep_for_check() {
  run_sweep "$1" "$2"
  local rc=$?
  [ "$rc" -eq 0 ] && return 0
  if [ "$rc" -eq 1 ] && [ -f "$2/results.json" ]; then
    echo "perfcheck: some cases failed; comparing what ran" >&2
    return 0
  fi
  if [ "$1" != "$ARKCOS" ]; then
    echo "perfcheck: the reference's sweep failed (exit $rc)" >&2
    exit 2
  fi
  echo "perfcheck: the sweep failed (exit $rc)" >&2
  exit $(( rc == 2 ? 2 : 1 ))
}

# check SUFFIX ORDER: one comparison into $OUT$SUFFIX; with a reference
# build, both sweeps run, the reference first (ORDER ref) or second (new)
check() {
  local sfx=$1 ref
  if [ -n "$REF_BIN" ]; then
    if [ "$2" = ref ]; then
      sweep_for_check "$REF_BIN" "$OUT-ref$sfx"
      sweep_for_check "$ARKCOS" "$OUT$sfx"
    else
      sweep_for_check "$ARKCOS" "$OUT$sfx"
      sweep_for_check "$REF_BIN" "$OUT-ref$sfx"
    fi
    ref=$OUT-ref$sfx/results.json
  else
    sweep_for_check "$ARKCOS" "$OUT$sfx"
    ref=$BASELINE
  fi
  compare_to "$ref" "$OUT$sfx/results.json" "$OUT$sfx/compare.txt"
}

check "" ref
rc=$?
if [ "$rc" -eq 4 ] && [ "$CONFIRM" = 1 ]; then
  echo
  echo "perfcheck: too noisy to judge; running the sweep again"
  check -confirm new
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
check -confirm new
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
