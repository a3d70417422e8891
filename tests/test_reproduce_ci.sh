#!/usr/bin/env bash
# `make reproduce PROFILE=ci` end to end, into a temporary folder (through
# ARKCOS_RESULTS_DIR / ARKCOS_PLOTS_DIR, so a user's results/ and plots/out/
# are left alone): every figure exists as a real PNG and PDF, REPORT.md embeds
# every figure and has a verdict line for every claim of
# results/paper/published.json, and a second run resumes without running a case.
# reproduce.sh runs without Python (PYTHON=/bin/false and python/python3 on
# PATH that fail and leave a trace), and under umask 022 its report files are
# mode 0644.
# Prints "TESTS <passed> <failed>" last.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export ARKCOS=${ARKCOS:-$PWD/$BUILD/arkcos}
export KERNEL_PROFILE=${KERNEL_PROFILE:-$(dirname "$ARKCOS")/tools/kernel_profile}
export PYTHON=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arkcos-reproduce-ci.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export ARKCOS_RESULTS_DIR=$tmp/results ARKCOS_PLOTS_DIR=$tmp/plots
res=$tmp/results/ci plots=$tmp/plots/ci
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

# no Python: any call of python or python3 leaves a trace and fails
mkdir -p "$tmp/nopython"
for py in python python3; do
  printf '#!/bin/sh\necho "$0 $*" >>"%s/python-calls"\nexit 1\n' "$tmp" >"$tmp/nopython/$py"
  chmod +x "$tmp/nopython/$py"
done
t0=$SECONDS
(umask 022; PATH="$tmp/nopython:$PATH" PYTHON=/bin/false bash scripts/reproduce.sh ci) >"$tmp/reproduce.log" 2>&1
rc=$?
echo "reproduce.sh ci: exit $rc in $((SECONDS - t0)) s"
if [ $rc -ne 0 ]; then tail -30 "$tmp/reproduce.log" | sed 's/^/  /'; fi
check "reproduce.sh ci exits 0" test $rc -eq 0
check "reproduce.sh ci calls no Python${tmp:+ ($(cat "$tmp/python-calls" 2>/dev/null | head -1))}" \
  test ! -e "$tmp/python-calls"
mode() { stat -c %a "$1" 2>/dev/null || echo missing; }
for f in "$res/REPORT.md" "$res/fig2/results.json" "$res/fig2/summary.csv" "$plots/data/table1.dat" \
    "$plots/data/fig2.vars.gp" "$plots/fig2.png"; do
  check "${f#$tmp/} is mode 644 under umask 022 ($(mode "$f"))" test "$(mode "$f")" = 644
done

# magic bytes: PNG \x89PNG, PDF %PDF. Minimum PNG sizes are about half of what the
# ci profile draws and well above a figure drawn without data (fig2 17 KB,
# fig4 34 KB, fig6 21 KB empty; table1 always holds the paper's bars, so its
# own data are checked below).
size() { stat -c %s "$1" 2>/dev/null || echo 0; }
real_png() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "89504e47" ] && [ "$(size "$1")" -gt "$2" ]; }
real_pdf() { [ "$(head -c 4 "$1" 2>/dev/null)" = "%PDF" ] && [ "$(size "$1")" -gt 5000 ]; }
for spec in fig2:40000 table1:30000 fig3:30000 fig4:80000 fig5:50000 fig6:80000; do
  fig=${spec%%:*} min=${spec#*:}
  check "$fig.png is a PNG of more than $min bytes ($(size "$plots/$fig.png"))" real_png "$plots/$fig.png" "$min"
  check "$fig.pdf is a PDF of more than 5000 bytes ($(size "$plots/$fig.pdf"))" real_pdf "$plots/$fig.pdf"
done
check "table1 has this run's stage shares for supports 1, 4 and 16 degrees" \
  test "$(grep -c '° here' "$plots/data/table1.dat" 2>/dev/null)" -ge 3

report=$res/REPORT.md
check "REPORT.md written" test -s "$report"
for fig in fig2 table1 fig3 fig4 fig5 fig6; do
  check "REPORT.md embeds $fig" grep -q "^!\[$fig\](.*$fig.png)" "$report"
done
ids=$(grep -o '"id": *"[^"]*"' results/paper/published.json | sed 's/.*"\([^"]*\)"$/\1/')
n=0 missing=""
for id in $ids; do
  n=$((n + 1))
  # a table row: | `id` | paper | here | verdict |, every cell non-empty
  grep -F "| \`$id\` |" "$report" | grep -qE '^\| `[^`]+` \| .+ \| .+ \| [^ |].* \|$' || missing="$missing $id"
done
check "REPORT.md has a claim line with a verdict for all $n published claims${missing:+ (missing:$missing)}" \
  test -z "$missing" -a "$n" -gt 20
check "REPORT.md states the machine" grep -q '^- host `' "$report"
check "REPORT.md lists skipped cases" grep -q '^## Skipped and failed cases' "$report"

# the engine's own guarantees, as the report states them
check "ringing is absent in the belt (enhanced mode)" \
  grep -qE '^\| `ringing.point_sources` .*\| belt: absent' "$report"
check "spectrum error below the paper's 1e-3" \
  grep -qE '^\| `accuracy.spectrum.gauss6` .*\| consistent' "$report"

for fig in fig2 fig2fsht fig4 fig5 fig6 headline; do
  check "$fig: results.json has no failed case" \
    "$PYTHON" -c "import json,sys; d=json.load(open('$res/$fig/results.json')); sys.exit(0 if d['cases'] and all(c['status'] in ('ok','skipped') for c in d['cases']) else 1)"
done

# resume: a second run of one sweep finds every case recorded
out=$("$ARKCOS" run configs/ci/fig6.json --out "$res/fig6" --resume 2>&1)
check "a second run resumes without running a case ($out)" grep -q ' 0 run now' <<<"$out"

echo "TESTS $passed $failed"
