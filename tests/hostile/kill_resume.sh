#!/usr/bin/env bash
# kill_resume.sh -- README, Guarantees: a sweep SIGKILLed at random moments
# and resumed, ten times in a row (KILLS), ends with the same cases, statuses
# and metrics as an uninterrupted run (timings aside); results.json parses at
# every moment (a watcher reads it every 20 ms throughout); no temporary file
# is left once the last run finished. Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/../.."
. tests/cli_lib.sh kill-resume
CFG=tests/hostile/kill_resume.json
KILLS=${KILLS:-10}

t0=$(date +%s%N)
"$ARKCOS" run "$CFG" --out "$T/whole" >/dev/null 2>&1 && ok || bad "uninterrupted run failed"
D=$(( ($(date +%s%N) - t0) / 1000000 ))   # milliseconds
TOTAL=$("$PYTHON" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['cases']))" "$T/whole/results.json")
echo "  uninterrupted: $TOTAL cases in $D ms"
# the watcher: every 20 ms, results.json (when present) must parse
"$PYTHON" - "$T/killed/results.json" "$T/watch.stop" >"$T/watch.out" 2>&1 <<'PYEOF' &
import json, os, sys, time
path, stop = sys.argv[1], sys.argv[2]
reads = bad = 0
while not os.path.exists(stop):
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        time.sleep(0.02); continue
    reads += 1
    try:
        d = json.loads(text); assert "meta" in d and "cases" in d
    except Exception as e:
        bad += 1; print("invalid:", e)
    time.sleep(0.02)
print(f"reads {reads} invalid {bad}")
PYEOF
watcher=$!
seen=()
for k in $(seq 1 "$KILLS"); do
  "$ARKCOS" run "$CFG" --out "$T/killed" --resume >/dev/null 2>&1 &
  pid=$!
  # a random moment within the time the cases left would take: most kills
  # land mid-run although each resume has fewer cases left
  n=0; [ ${#seen[@]} -gt 0 ] && n=${seen[${#seen[@]}-1]}
  sleep "$("$PYTHON" -c "import random; print(round(random.uniform(0.1, 0.8) * $D * ($TOTAL - $n) / $TOTAL / 1000 + 0.05, 3))")"
  kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
  n=$("$PYTHON" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['cases']))" "$T/killed/results.json" 2>/dev/null || echo 0)
  seen+=("$n")
done
echo "  cases recorded after each kill: ${seen[*]} (of $TOTAL)"
cut=0
for n in "${seen[@]}"; do [ "$n" -lt "$TOTAL" ] && cut=$((cut + 1)); done
[ "$cut" -ge $((KILLS / 2)) ] && ok || bad "only $cut of $KILLS kills stopped a run before its end"
"$ARKCOS" run "$CFG" --out "$T/killed" --resume >/dev/null 2>"$T/final.err" && ok || bad "final resume: $(cat "$T/final.err")"
: >"$T/watch.stop"; wait $watcher
echo "  watcher: $(tail -1 "$T/watch.out")"
grep -q "invalid 0" "$T/watch.out" && ok || bad "results.json was invalid at some moment: $(cat "$T/watch.out")"
left=$(find "$T/killed" -name '*.tmp-*')
[ -z "$left" ] && ok || bad "temporary files left: $left"
"$PYTHON" - "$T/whole/results.json" "$T/killed/results.json" <<'PYEOF' && ok || bad "killed and resumed run differs from the uninterrupted one"
import json, math, sys
a = {c["id"]: c for c in json.load(open(sys.argv[1]))["cases"]}
b = {c["id"]: c for c in json.load(open(sys.argv[2]))["cases"]}
assert sorted(a) == sorted(b), (sorted(set(a) ^ set(b)))
for k in a:
    assert a[k]["status"] == b[k]["status"] == "ok", (k, a[k]["status"], b[k]["status"])
    ma, mb = a[k].get("metrics", {}), b[k].get("metrics", {})
    assert sorted(ma) == sorted(mb), k
    for key, v in ma.items():
        if isinstance(v, float):
            assert math.isclose(v, mb[key], rel_tol=1e-9, abs_tol=1e-300), (k, key, v, mb[key])
        else:
            assert v == mb[key], (k, key)
    assert len(a[k]["time"]["samples"]) == len(b[k]["time"]["samples"]), k
print(f"  {len(a)} cases, statuses and metrics equal")
PYEOF
echo "TESTS $pass $fail"
[ "$fail" -eq 0 ]
