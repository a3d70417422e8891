#!/usr/bin/env bash
# test_compare.sh -- `arkcos compare` (regression rule, normalisation, exit
# codes) and `arkcos report` (machines, shared cases, charts) on synthetic
# results files written by a small generator below. No timing happens here:
# the samples are made up, so every verdict is deterministic.
set -u
cd "$(dirname "$0")/.."
ARKCOS="${ARKCOS:-$PWD/build/arkcos}"
PY="${PYTHON:-/usr/bin/python3}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arkcos-test-compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0
ok()   { passed=$((passed + 1)); echo "ok   $1"; }
bad()  { failed=$((failed + 1)); echo "FAIL $1"; [ -f "$tmp/out" ] && sed 's/^/    | /' "$tmp/out" | head -40; [ -f "$tmp/err" ] && sed 's/^/    ! /' "$tmp/err" | head -10; }
# expect_rc RC DESCRIPTION -- ARGS: runs arkcos ARGS, checks the exit status
expect_rc() {
  local want=$1 what=$2; shift 3
  "$ARKCOS" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ "$rc" -eq "$want" ]; then ok "$what (exit $rc)"; else bad "$what: exit $rc, expected $want"; fi
}
# has PATTERN FILE DESCRIPTION
has()   { if grep -qE -- "$1" "$2"; then ok "$3"; else bad "$3: /$1/ not in $(basename "$2")"; fi; }
hasnt() { if grep -qE -- "$1" "$2"; then bad "$3: /$1/ found in $(basename "$2")"; else ok "$3"; fi; }

if [ ! -x "$ARKCOS" ]; then
  echo "no arkcos binary at $ARKCOS"; echo "TESTS 0 1"; exit 1
fi

cat >"$tmp/gen.py" <<'EOF'
"""Writes a synthetic results.json in the format of `arkcos run`."""
import argparse, json, random

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--host", default="alpha")
p.add_argument("--cpu", default="Example CPU A @ 3.0GHz")
p.add_argument("--cores", type=int, default=2)
p.add_argument("--gpu", default=None)
p.add_argument("--scale", type=float, default=1.0, help="every time times this")
p.add_argument("--scale-case", action="append", default=[], help="ID=FACTOR")
p.add_argument("--samples", action="append", default=[], help="ID=v1,v2,... (replaces)")
p.add_argument("--fail", action="append", default=[], help="ID: status failed")
p.add_argument("--noise", type=float, default=0.01)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--repeats", type=int, default=7)
p.add_argument("--nside", default="128,256,512")
p.add_argument("--fwhm", type=float, default=60.0)
p.add_argument("--no-ids", action="store_true")
p.add_argument("--extra-nside", type=int, default=None, help="one more arkcos case")
p.add_argument("--plain", action="store_true", help="a run without \"interleave\": true")
p.add_argument("--threads", type=int, default=2)
p.add_argument("--cpu-samples", action="store_true", help="time.cpu_samples too")
p.add_argument("--wait-policy", default=None, help="meta.omp_wait_policy (absent: none)")
p.add_argument("--wall-only", action="append", default=[],
               help="ID=FACTOR: the elapsed samples alone times FACTOR (a loaded machine)")
a = p.parse_args()
rng = random.Random(a.seed)
kernel = {"type": "gaussian", "fwhm_arcmin": a.fwhm, "cutoff_deg": 3.0, "cutoff_rel": None}
methods = [("fsht0", {"name": "fsht", "iter": 0, "lmax_factor": 2}, 0.02),
           ("fsht3", {"name": "fsht", "iter": 3, "lmax_factor": 2}, 0.08),
           ("arkcos", {"name": "arkcos", "backend": "cpu", "mode": "enhanced", "precision": "double"}, 0.01),
           ("gpu", {"name": "arkcos", "backend": "gpu", "mode": "enhanced", "precision": "double"}, 0.001)]
scale_case = dict(s.split("=") for s in a.scale_case)
samples_for = {k: [float(x) for x in v.split(",")] for k, v in (s.split("=") for s in a.samples)}
nsides = [int(x) for x in a.nside.split(",")]
if a.extra_nside: nsides.append(a.extra_nside)
cases = []
for nside in nsides:
    for tag, method, t128 in methods:
        if a.extra_nside and nside == a.extra_nside and tag != "arkcos":
            continue
        cid = f"{tag}-{nside}"
        c = {"id": cid, "nside": nside, "kernel": kernel, "method": method, "threads": a.threads,
             "threads_used": a.threads}
        if a.no_ids: del c["id"]
        if tag == "gpu" and not a.gpu:
            c.update(status="skipped", reason="no CUDA device")
            cases.append(c); continue
        if cid in a.fail:
            c.update(status="failed", reason="out of memory")
            cases.append(c); continue
        t = t128 * (nside / 128) ** 2 * a.scale * float(scale_case.get(cid, 1))
        s = samples_for.get(cid) or [t * (1 + a.noise * rng.uniform(-1, 1)) for _ in range(a.repeats)]
        ss = sorted(s)
        cpu = list(s)
        f = float(dict(x.split("=") for x in a.wall_only).get(cid, 1))
        s = [x * f for x in s]
        ss = sorted(s)
        c.update(status="ok", reason=None,
                 time={"min": ss[0], "median": ss[len(ss) // 2] if len(ss) % 2 else 0.5 * (ss[len(ss)//2 - 1] + ss[len(ss)//2]),
                       "max": ss[-1], "samples": s},
                 peak_memory=1000000, plan_memory=500000, metrics={"frac_rms": 1e-9})
        if method["name"] == "arkcos":
            m = c["time"]["median"]
            c["stages"] = {"map_fft": 0.2 * m, "kernel_eval": 0.3 * m, "kernel_fft": 0.1 * m,
                           "reduction": 0.25 * m, "map_ifft": 0.1 * m,
                           "h2d": 0.02 * m if tag == "gpu" else 0, "d2h": 0.02 * m if tag == "gpu" else 0,
                           "other": 0.01 * m}
        if a.cpu_samples:
            c["time"]["cpu_samples"] = cpu
        cases.append(c)
gpus = [{"name": a.gpu, "sm_count": 132, "memory_bytes": 80 * 2**30, "clock_khz": 1980000,
         "memory_clock_khz": 2619000}] if a.gpu else []
meta = {"date": "2024-05-01T12:00:00Z", "command": "arkcos run configs/ci-perf.json",
        "config": {"name": "ci-perf", "interleave": not a.plain}, "git_commit": "0123abcd", "host": a.host,
        "cpu_model": a.cpu, "cores": a.cores, "memory_bytes": 16 * 2**30, "os": "Linux 6.1",
        "compiler": "gcc 12.2", "cflags": "-O2 -march=native",
        "versions": {"arkcos": "0.1.0", "fftw": "fftw-3.3.10", "libsharp": "1.0.0",
                     "cfitsio": "4.2.0", "jansson": "2.14", "cuda_runtime": None,
                     "cuda_driver": None, "cufft": None},
        "gpus": gpus}
if a.wait_policy: meta["omp_wait_policy"] = a.wait_policy
json.dump({"meta": meta, "cases": cases}, open(a.out, "w"), indent=1)
EOF
gen() { "$PY" "$tmp/gen.py" "$@"; }

# ---------------------------------------------------------------- compare
gen "$tmp/base.json" --seed 1
gen "$tmp/same.json" --seed 1
expect_rc 0 "identical results" -- compare "$tmp/base.json" "$tmp/same.json"
has "6 judged: 0 REGRESSION, 0 too-noisy, 0 slower-noise, 6 same" "$tmp/out" "identical: every case the same"
has "^fsht0-128 .*yardstick" "$tmp/out" "by default normalised by FSHT iter 0"
has "repeat by repeat \(interleaved runs\)" "$tmp/out" "by default repeat by repeat in interleaved runs"
has "^gpu-256 .* skipped .*no CUDA device" "$tmp/out" "skipped case listed with its reason, not judged"
hasnt "warning" "$tmp/err" "identical: no hardware warning"

gen "$tmp/slow.json" --seed 2 --scale-case arkcos-256=2
expect_rc 3 "2x slower arkcos" -- compare "$tmp/base.json" "$tmp/slow.json"
has "^arkcos-256 .*\+100\.[0-9]%.* U +REGRESSION" "$tmp/out" "2x slower case judged REGRESSION by the U test"
has "^  arkcos-256: \+100" "$tmp/out" "regression list names the case"
has "1 REGRESSION, 0 too-noisy, 0 slower-noise" "$tmp/out" "only that case regressed"

gen "$tmp/slow2.json" --seed 3 --scale 1.02
expect_rc 0 "2% slower run" -- compare "$tmp/base.json" "$tmp/slow2.json"

expect_rc 0 "2x slower with --threshold 150%" -- compare "$tmp/base.json" "$tmp/slow.json" --threshold 150%
expect_rc 0 "2x slower with --threshold 1.5" -- compare "$tmp/base.json" "$tmp/slow.json" --threshold 1.5

gen "$tmp/machine2x.json" --seed 4 --scale 2 --host beta --cpu "Example CPU B @ 1.5GHz"
expect_rc 0 "uniformly 2x slower machine, --normalize-by fsht" -- compare "$tmp/base.json" "$tmp/machine2x.json" --normalize-by fsht
has "^fsht0-256 .*yardstick" "$tmp/out" "normalising case shown as yardstick"
has "^fsht3-256 .* same" "$tmp/out" "other fsht variant judged after normalisation"
hasnt "hardware differs" "$tmp/err" "no hardware warning when normalised"
expect_rc 4 "uniformly 2x slower machine, no normalisation: too noisy" -- compare "$tmp/base.json" "$tmp/machine2x.json" --normalize-by none
has "TOO NOISY TO JUDGE" "$tmp/out" "without a yardstick a slowdown is too noisy to judge"
has "^arkcos-256 .* too-noisy .*no yardstick" "$tmp/out" "the row says why"
expect_rc 3 "uniformly 2x slower machine, no normalisation, --trust-repeats" -- compare "$tmp/base.json" "$tmp/machine2x.json" --normalize-by none --trust-repeats
has "hardware differs" "$tmp/err" "hardware warning without normalisation"
has "cpu_model" "$tmp/err" "warning names the differing field"
expect_rc 0 "2x slower machine, --normalize-by fsht:iter=3" -- compare "$tmp/base.json" "$tmp/machine2x.json" --normalize-by fsht:iter=3
has "^fsht3-256 .*yardstick" "$tmp/out" "fsht:iter=3 picks the iter 3 case"
# a real regression still shows through the normalisation
gen "$tmp/machine2x_slow.json" --seed 5 --scale 2 --host beta --scale-case arkcos-512=1.5
expect_rc 3 "2x slower machine with a 1.5x arkcos regression, normalised" -- compare "$tmp/base.json" "$tmp/machine2x_slow.json" --normalize-by fsht
has "^  arkcos-512: \+5[0-9]\.[0-9]%" "$tmp/out" "normalised regression named"

# noisy samples, overlapping, median +20%: the rank test (p = 0.0973, scipy)
# says the difference is within the noise
noisy_b=1.00,0.80,1.25,0.90,1.15,0.85,1.10
noisy_n=1.20,0.96,1.46,1.06,1.36,1.01,1.31
gen "$tmp/noisy_b.json" --seed 1 --samples "arkcos-512=$noisy_b"
gen "$tmp/noisy_n.json" --seed 1 --samples "arkcos-512=$noisy_n"
expect_rc 0 "noisy +20%: within the noise" -- compare "$tmp/noisy_b.json" "$tmp/noisy_n.json" --normalize-by none --trust-repeats
has "^arkcos-512 .*\+20\.0%  +7/7 +0\.0973 +U +slower-noise" "$tmp/out" "noisy +20%: U test p = 0.0973 (scipy), slower-noise"
# the same +20% shift with tight samples: p = 0.000583 (scipy), a regression
tight_b=1.0,1.01,0.99,1.005,0.995,1.002,0.998
tight_n=1.2,1.212,1.188,1.206,1.194,1.2024,1.1976
gen "$tmp/tight_b.json" --seed 1 --samples "arkcos-512=$tight_b"
gen "$tmp/tight_n.json" --seed 1 --samples "arkcos-512=$tight_n"
expect_rc 3 "tight +20%: regression" -- compare "$tmp/tight_b.json" "$tmp/tight_n.json" --normalize-by none --trust-repeats
has "^arkcos-512 .*\+20\.0%  +7/7 +0\.000583 +U +REGRESSION" "$tmp/out" "tight +20%: U test p = 0.000583 (scipy), REGRESSION"
# 3 + 3 repeats: the U test cannot reach p < 0.05 (its minimum is 0.1), the
# [min, max] ranges decide
gen "$tmp/few_b.json" --seed 1 --repeats 3 --samples "arkcos-512=1.0,1.02,0.98"
gen "$tmp/few_n.json" --seed 1 --repeats 3 --samples "arkcos-512=1.2,1.22,1.18"
gen "$tmp/few_o.json" --seed 1 --repeats 3 --samples "arkcos-512=1.2,0.99,1.3"
expect_rc 3 "3 repeats, disjoint ranges, +20%" -- compare "$tmp/few_b.json" "$tmp/few_n.json" --normalize-by none --trust-repeats
has "^arkcos-512 .* 3/3 +- +range +REGRESSION" "$tmp/out" "3 repeats: range rule decides REGRESSION"
has "ranges disjoint" "$tmp/out" "regression list says the range rule decided"
expect_rc 0 "3 repeats, overlapping ranges, +20%" -- compare "$tmp/few_b.json" "$tmp/few_o.json" --normalize-by none --trust-repeats
has "^arkcos-512 .* range +slower-noise" "$tmp/out" "3 repeats: overlapping ranges are noise"
# faster
gen "$tmp/fast.json" --seed 6 --scale-case arkcos-128=0.5
expect_rc 0 "2x faster case" -- compare "$tmp/base.json" "$tmp/fast.json"
has "^arkcos-128 .* faster" "$tmp/out" "2x faster case judged faster"
# a case that now fails
gen "$tmp/failnew.json" --seed 1 --fail arkcos-128
expect_rc 3 "case failed in the new run" -- compare "$tmp/base.json" "$tmp/failnew.json"
has "^arkcos-128 .*FAILED" "$tmp/out" "failed case shown as FAILED"
# matching without ids (canonical parameters)
gen "$tmp/noid_b.json" --seed 1 --no-ids
gen "$tmp/noid_n.json" --seed 2 --no-ids --scale-case arkcos-256=2
expect_rc 3 "no ids: cases matched by their parameters" -- compare "$tmp/noid_b.json" "$tmp/noid_n.json"
has "6 judged: 1 REGRESSION" "$tmp/out" "no ids: all cases matched"
has "^nside=256 gaussian fwhm=60' cutoff=3deg \| arkcos cpu enhanced double \| threads=2 .*REGRESSION" "$tmp/out" "no ids: readable case label"
# subsets: only the shared cases are compared, the rest counted
gen "$tmp/sub.json" --seed 2 --nside 256
expect_rc 0 "baseline with more cases than the new run" -- compare "$tmp/base.json" "$tmp/sub.json"
has "8 cases only in the baseline, 0 only in the new run" "$tmp/out" "cases in one file only are counted"
expect_rc 0 "--help" -- compare --help
has "4 too noisy to judge" "$tmp/out" "--help documents exit 4"

# ------------------------------------------------- noise: the default judgement
# runs without "interleave": a real 2x slowdown is too noisy to judge (exit
# 4), never a REGRESSION, since one run's repeats share one stretch of time
gen "$tmp/plain_b.json" --seed 1 --plain
gen "$tmp/plain_slow.json" --seed 2 --plain --scale-case arkcos-256=2
expect_rc 4 "not interleaved, 2x slower: too noisy to judge" -- compare "$tmp/plain_b.json" "$tmp/plain_slow.json"
has "^arkcos-256 .* too-noisy .*not interleaved" "$tmp/out" "not interleaved: the row says so"
has "1 too-noisy" "$tmp/out" "not interleaved: counted as too noisy"
hasnt "REGRESSION:" "$tmp/out" "not interleaved: no regression listed"
expect_rc 0 "not interleaved, same: clean" -- compare "$tmp/plain_b.json" "$tmp/plain_b.json"
expect_rc 3 "not interleaved, 2x slower, --trust-repeats" -- compare "$tmp/plain_b.json" "$tmp/plain_slow.json" --trust-repeats
# a case failed in the new run is a regression however noisy the runs
gen "$tmp/plain_fail.json" --seed 1 --plain --fail arkcos-128 --scale-case arkcos-256=2
expect_rc 3 "not interleaved, a failed case: regression" -- compare "$tmp/plain_b.json" "$tmp/plain_fail.json"
# interleaved, but one run's repeats spread over 2x (a load burst): +50 %
# is too noisy to judge, where the same +50 % on steady repeats regresses
burst=1.0,2.2,1.1,2.5,1.05,2.3,1.2
gen "$tmp/burst_b.json" --seed 1
gen "$tmp/burst_n.json" --seed 1 --samples "arkcos-512=$(echo $burst | awk -F, '{for (i=1;i<=NF;i++) printf "%s%.4f", (i>1?",":""), $i*0.16*1.5*2}')"
expect_rc 4 "interleaved, repeats spread by 2x in one run: too noisy" -- compare "$tmp/burst_b.json" "$tmp/burst_n.json"
has "^arkcos-512 .* too-noisy .*repeats spread by" "$tmp/out" "spread named as the reason"
gen "$tmp/steady_n.json" --seed 1 --scale-case arkcos-512=1.5
expect_rc 3 "interleaved, steady repeats, +50 %: regression" -- compare "$tmp/burst_b.json" "$tmp/steady_n.json"
# one machine in another state: every time of the new run 10x (a run
# stretched to whole scheduler slices), the ratio +50 %: too noisy; the same
# from another host (a slower machine) is judged
gen "$tmp/slices_n.json" --seed 1 --scale 10 --scale-case arkcos-512=1.5
expect_rc 4 "one machine, raw times 10x, +50 %: too noisy" -- compare "$tmp/burst_b.json" "$tmp/slices_n.json"
has "^arkcos-512 .* too-noisy .*raw times changed 1[0-9]\.[0-9]x between the runs on one machine" "$tmp/out" "the machine's change named as the reason"
gen "$tmp/other_host_n.json" --seed 1 --scale 10 --scale-case arkcos-512=1.5 --host beta
expect_rc 3 "another host 10x slower, +50 %: regression" -- compare "$tmp/burst_b.json" "$tmp/other_host_n.json"
# one machine whose state sped the yardstick up and not the case: FSHT iter 0
# 25 % faster in the new run, ARKCoS unchanged, so its ratio grew by a third
# while its own time did not grow at all (as measured for the same binary
# on a loaded machine), more than the yardstick's fall alone mostly moves
# it (27 %): too noisy, not a REGRESSION; from another host the raw times
# say nothing and the ratio is judged
gen "$tmp/yfast_n.json" --seed 1 --scale-case fsht0-256=0.75
expect_rc 4 "one machine, yardstick 25 % faster, case unchanged: too noisy" -- compare "$tmp/burst_b.json" "$tmp/yfast_n.json"
has "^arkcos-256 .* too-noisy .*its own median did not grow \(\+0\.0%\); the yardstick's changed -25\.0%" "$tmp/out" "the reason names both changes"
hasnt "REGRESSION:" "$tmp/out" "yardstick faster: no regression listed"
gen "$tmp/yfast_other.json" --seed 1 --scale-case fsht0-256=0.75 --host beta
expect_rc 3 "another host, yardstick 25 % faster: the ratio judged, regression" -- compare "$tmp/burst_b.json" "$tmp/yfast_other.json"
# FSHT iter 0 20 % faster, ARKCoS unchanged: its ratio grew by 25 %, what
# the yardstick's fall alone mostly does (up to 27 %): judged on its own
# time, the same -- a clean bill, not "too noisy"; 23 % faster (ratio +29.9 %)
# is beyond: too noisy
gen "$tmp/yfast20_n.json" --seed 1 --scale-case fsht0-256=0.8
expect_rc 0 "one machine, yardstick 20 % faster, case unchanged: same" -- compare "$tmp/burst_b.json" "$tmp/yfast20_n.json"
has "^arkcos-256 .* \+25\.0% .* same .*its own median did not grow \(\+0\.0%\); the yardstick's changed -20\.0%, which explains a ratio up to \+27%" "$tmp/out" "same: the row says the yardstick's fall explains the ratio"
gen "$tmp/yfast23_n.json" --seed 1 --scale-case fsht0-256=0.77
expect_rc 4 "one machine, yardstick 23 % faster, case unchanged: too noisy" -- compare "$tmp/burst_b.json" "$tmp/yfast23_n.json"
# not in runs that did not interleave (no ratio repeat by repeat): too noisy
gen "$tmp/plain_yfast20.json" --seed 1 --plain --scale-case fsht0-256=0.8
expect_rc 4 "not interleaved, yardstick 20 % faster, case unchanged: too noisy" -- compare "$tmp/plain_b.json" "$tmp/plain_yfast20.json"
# the whole group 30 % faster (both FSHT methods), ARKCoS's own time
# unchanged (+43 % to each): a slowdown that a faster machine hid, or a
# method that the machine's state speeds up less than the others (measured:
# the single-precision ARKCoS method): too noisy either way, not a REGRESSION
gen "$tmp/gfast_n.json" --seed 1 --scale-case fsht0-256=0.7 --scale-case fsht3-256=0.7
expect_rc 4 "one machine, group 30 % faster, case unchanged: too noisy" -- compare "$tmp/burst_b.json" "$tmp/gfast_n.json"
has "^arkcos-256 .* \+42\.9% .* too-noisy .*which explains a ratio up to \+27% only" "$tmp/out" "too noisy: the row says the ratio grew beyond what the yardstick explains"
# both FSHT methods 30 % faster at every nside, ARKCoS's own times unchanged: its
# ratio regressed at each nside, which a state that favours the yardstick
# at one nside does not do (measured), so a slowdown that the faster
# machine hid: REGRESSION at each
gen "$tmp/yfast_all_n.json" --seed 1 --scale-case fsht0-128=0.7 --scale-case fsht0-256=0.7 --scale-case fsht0-512=0.7 --scale-case fsht3-128=0.7 --scale-case fsht3-256=0.7 --scale-case fsht3-512=0.7
expect_rc 3 "one machine, yardstick 30 % faster at every nside, case unchanged: regression" -- compare "$tmp/burst_b.json" "$tmp/yfast_all_n.json"
has "^arkcos-256 .* REGRESSION .*its own median did not grow \(\+0\.0%\), the yardstick's changed -30\.0%; the method's ratio regressed at the other nsides too" "$tmp/out" "the row names the other nsides as the evidence"
has "3 REGRESSION, 0 too-noisy" "$tmp/out" "every nside of the method regressed"
# ... but not where the method's ratio did not regress at one of them (its
# own time fell with the yardstick's at 512): too noisy at 128 and 256
gen "$tmp/yfast_most_n.json" --seed 1 --scale-case fsht0-128=0.7 --scale-case fsht0-256=0.7 --scale-case fsht0-512=0.7 --scale-case fsht3-128=0.7 --scale-case fsht3-256=0.7 --scale-case fsht3-512=0.7 --scale-case arkcos-512=0.7
expect_rc 4 "one machine, yardstick 30 % faster at every nside, case too at one: too noisy" -- compare "$tmp/burst_b.json" "$tmp/yfast_most_n.json"
has "0 REGRESSION, 2 too-noisy" "$tmp/out" "too noisy at the two nsides"
# a short case (under 1.5 ms a repeat: ARKCoS at nside 32 here, 0.6 ms) 20 %
# slower alone: two processes of one binary differ that much (measured,
# SHORT_CASE_S), so slower-noise, not a failure; with its method 20 % slower at nside 128 too,
# a REGRESSION at both; a long case 20 % slower alone stays a REGRESSION
gen "$tmp/short_b.json" --seed 1 --nside 32,128
gen "$tmp/short_n.json" --seed 2 --nside 32,128 --scale-case arkcos-32=1.2
expect_rc 0 "short case 20 % slower alone: slower-noise" -- compare "$tmp/short_b.json" "$tmp/short_n.json"
has "^arkcos-32 .* \+(19|2[0-9])\.[0-9]% .* slower-noise .*a repeat takes under 1\.5 ms, where two processes of one binary differ" "$tmp/out" "short case: the row says why"
has "0 REGRESSION, 0 too-noisy, 1 slower-noise" "$tmp/out" "short case alone: no REGRESSION"
gen "$tmp/short_both.json" --seed 2 --nside 32,128 --scale-case arkcos-32=1.2 --scale-case arkcos-128=1.2
expect_rc 3 "short case 20 % slower with its method slower at nside 128: regression" -- compare "$tmp/short_b.json" "$tmp/short_both.json"
has "^arkcos-32 .* REGRESSION .*a repeat takes under 1\.5 ms; the method's ratio regressed at the other nside too" "$tmp/out" "short case confirmed by the other nside"
has "2 REGRESSION, 0 too-noisy" "$tmp/out" "both nsides regressed"
gen "$tmp/long_n.json" --seed 2 --nside 32,128 --scale-case arkcos-128=1.2
expect_rc 3 "long case 20 % slower alone: regression" -- compare "$tmp/short_b.json" "$tmp/long_n.json"
has "1 REGRESSION, 0 too-noisy" "$tmp/out" "long case alone: its REGRESSION stands"
# a case whose own time fell with the yardstick's is the same
gen "$tmp/gfast_all.json" --seed 1 --scale-case fsht0-256=0.7 --scale-case fsht3-256=0.7 --scale-case arkcos-256=0.7
expect_rc 0 "one machine, everything 30 % faster at one nside: same" -- compare "$tmp/burst_b.json" "$tmp/gfast_all.json"
# a real slowdown on one machine grows the case's own time too: judged
gen "$tmp/yfast_slow.json" --seed 1 --scale-case fsht0-256=0.9 --scale-case arkcos-256=1.3
expect_rc 3 "one machine, yardstick 10 % faster, case 30 % slower: regression" -- compare "$tmp/burst_b.json" "$tmp/yfast_slow.json"
has "^  arkcos-256: \+4[0-9]\.[0-9]%" "$tmp/out" "the regression named with its ratio's change"
# the clock: single-threaded runs with CPU times are judged on them; the
# elapsed times of a loaded machine (2x here) then do not matter
gen "$tmp/c1_b.json" --seed 1 --threads 1 --cpu-samples
gen "$tmp/c1_n.json" --seed 2 --threads 1 --cpu-samples --wall-only arkcos-256=2
expect_rc 0 "one thread, CPU times steady, elapsed 2x: clean" -- compare "$tmp/c1_b.json" "$tmp/c1_n.json"
has "CPU time of each repeat on one thread" "$tmp/out" "the header names the clock"
expect_rc 3 "the same with --clock wall: regression" -- compare "$tmp/c1_b.json" "$tmp/c1_n.json" --clock wall
# with two threads the CPU time counts threads waiting for each other, so
# the default judges elapsed times there
gen "$tmp/c2_b.json" --seed 1 --cpu-samples
gen "$tmp/c2_n.json" --seed 2 --cpu-samples --wall-only arkcos-256=2
expect_rc 3 "two threads: elapsed times judged by default" -- compare "$tmp/c2_b.json" "$tmp/c2_n.json"
has "times: +elapsed time of each repeat" "$tmp/out" "two threads: the header says elapsed"
expect_rc 0 "two threads, --clock cpu" -- compare "$tmp/c2_b.json" "$tmp/c2_n.json" --clock cpu
# threads that waited passively (what `arkcos run` sets: meta.omp_wait_policy
# "passive") spin at no barrier, so their CPU time is the work: judged by
# default on every thread count, when both runs say so
gen "$tmp/p2_b.json" --seed 1 --cpu-samples --wait-policy passive
gen "$tmp/p2_n.json" --seed 2 --cpu-samples --wait-policy passive --wall-only arkcos-256=2
expect_rc 0 "two threads waiting passively, CPU times steady, elapsed 2x: clean" -- compare "$tmp/p2_b.json" "$tmp/p2_n.json"
has "times: +CPU time of each repeat \(time.cpu_samples; threads waiting passively\)" "$tmp/out" "passive: the header names the clock"
expect_rc 3 "the same with --clock wall: regression" -- compare "$tmp/p2_b.json" "$tmp/p2_n.json" --clock wall
gen "$tmp/p2_slow.json" --seed 2 --cpu-samples --wait-policy passive --scale-case arkcos-256=1.5
expect_rc 3 "two threads waiting passively, CPU 1.5x: regression" -- compare "$tmp/p2_b.json" "$tmp/p2_slow.json"
has "^arkcos-256 .*\+5[0-9]\.[0-9]%.* REGRESSION" "$tmp/out" "passive: the CPU-time regression named"
# only when both runs waited passively: one spinning run (the policy set
# otherwise, or resumed under another) and the elapsed times are judged
for other in "default (spinning)" active "mixed (resumed)" "passive GOMP_SPINCOUNT=1000"; do
  gen "$tmp/p2_o.json" --seed 2 --cpu-samples --wait-policy "$other" --wall-only arkcos-256=2
  expect_rc 3 "baseline passive, new '$other': elapsed times judged" -- compare "$tmp/p2_b.json" "$tmp/p2_o.json"
  has "times: +elapsed time of each repeat" "$tmp/out" "new '$other': the header says elapsed"
  expect_rc 0 "baseline '$other', new passive: 2x faster elapsed" -- compare "$tmp/p2_o.json" "$tmp/p2_b.json"
  has "^arkcos-256 .* faster" "$tmp/out" "baseline '$other': elapsed times judged"
done
# single-threaded cases keep their CPU times whatever the policy
gen "$tmp/p1_b.json" --seed 1 --threads 1 --cpu-samples --wait-policy "default (spinning)"
gen "$tmp/p1_n.json" --seed 2 --threads 1 --cpu-samples --wait-policy passive --wall-only arkcos-256=2
expect_rc 0 "one thread, policies differ, elapsed 2x: CPU times judged, clean" -- compare "$tmp/p1_b.json" "$tmp/p1_n.json"
has "CPU time of each repeat on one thread" "$tmp/out" "one thread: the header names the clock"
# `arkcos run` records how its threads waited: passive unless the caller set
# OMP_WAIT_POLICY or GOMP_SPINCOUNT (a tiny real sweep; no time is checked)
cat >"$tmp/tiny.json" <<'EOF'
{"name": "tiny", "repeats": 2, "warmup": 0, "threads": 2, "interleave": true,
 "input": {"type": "random", "lmax_factor": 2, "seed": 3}, "grid": {"nside": [8]},
 "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}],
 "methods": [{"name": "fsht", "iter": 0}, {"name": "arkcos", "mode": "enhanced"}],
 "reference": "none"}
EOF
wait_policy() { "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["meta"].get("omp_wait_policy"))' "$1"; }
for env in OMP_WAIT_POLICY=active GOMP_SPINCOUNT=1000 OMP_WAIT_POLICY=Passive ""; do
  want=passive
  case $env in
    OMP_WAIT_POLICY=active) want=active ;;
    GOMP_SPINCOUNT=*) want="default (spinning) GOMP_SPINCOUNT=1000" ;;
  esac
  rm -rf "$tmp/tiny"
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT $env "$ARKCOS" run "$tmp/tiny.json" --out "$tmp/tiny" \
    >"$tmp/out" 2>"$tmp/err"
  got=$(wait_policy "$tmp/tiny/results.json" 2>&1)
  if [ "$got" = "$want" ]; then ok "run with '${env:-nothing set}': meta.omp_wait_policy '$got'"
  else bad "run with '${env:-nothing set}': meta.omp_wait_policy '$got', expected '$want'"; fi
done
expect_rc 0 "a run compared with itself" -- compare "$tmp/tiny/results.json" "$tmp/tiny/results.json"
has "threads waiting passively" "$tmp/out" "a default run's CPU times judged on 2 threads"
# a resume under another policy: the cases' CPU times were taken under two
rm -rf "$tmp/tiny2"
OMP_WAIT_POLICY=active "$ARKCOS" run "$tmp/tiny.json" --out "$tmp/tiny2" >/dev/null 2>&1
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$ARKCOS" run "$tmp/tiny.json" --out "$tmp/tiny2" --resume >/dev/null 2>&1
got=$(wait_policy "$tmp/tiny2/results.json" 2>&1)
[ "$got" = "mixed (resumed)" ] && ok "resumed under another policy: '$got'" || bad "resumed under another policy: '$got'"
expect_rc 0 "a mixed run compared with itself" -- compare "$tmp/tiny2/results.json" "$tmp/tiny2/results.json"
has "times: +elapsed time" "$tmp/out" "a mixed run: elapsed times judged on 2 threads"
# no FSHT case: nothing to normalise by, said in the header
"$PY" - "$tmp/base.json" "$tmp/nofsht.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["cases"] = [c for c in d["cases"] if c["method"]["name"] != "fsht"]
json.dump(d, open(sys.argv[2], "w"))
EOF
expect_rc 0 "no FSHT case: raw times" -- compare "$tmp/nofsht.json" "$tmp/nofsht.json"
has "not normalised \(no yardstick\)" "$tmp/out" "no FSHT case: the header says so"
expect_rc 2 "bad --normalize-by value" -- compare "$tmp/base.json" "$tmp/same.json" --normalize-by ""

# bad inputs -> 2
expect_rc 2 "missing baseline file" -- compare "$tmp/nope.json" "$tmp/base.json"
has "nope.json" "$tmp/err" "message names the missing file"
printf '{"meta": {}, "cases": [ {"id": 1,,] }' >"$tmp/malformed.json"
expect_rc 2 "malformed JSON" -- compare "$tmp/base.json" "$tmp/malformed.json"
has "malformed.json:1:" "$tmp/err" "message gives line and column"
echo '{"meta": {}, "cases": [{"id": "x", "nside": 64, "method": {"name": "arkcos"}, "status": "ok"}]}' >"$tmp/notime.json"
expect_rc 2 "case with status ok but no time" -- compare "$tmp/base.json" "$tmp/notime.json"
has "cases\[0\]\.time" "$tmp/err" "message names the JSON path"
echo '{"meta": {}}' >"$tmp/nocases.json"
expect_rc 2 "no cases array" -- compare "$tmp/base.json" "$tmp/nocases.json"
gen "$tmp/other.json" --nside 64
expect_rc 2 "no cases in common" -- compare "$tmp/base.json" "$tmp/other.json"
has "no cases in common" "$tmp/err" "says there are no cases in common"
expect_rc 2 "bad --threshold (word)" -- compare "$tmp/base.json" "$tmp/same.json" --threshold abc
expect_rc 2 "bad --threshold (negative)" -- compare "$tmp/base.json" "$tmp/same.json" --threshold -0.1
expect_rc 2 "bad --threshold (zero)" -- compare "$tmp/base.json" "$tmp/same.json" --threshold 0
expect_rc 2 "--threshold without value" -- compare "$tmp/base.json" "$tmp/same.json" --threshold
expect_rc 2 "bad --alpha" -- compare "$tmp/base.json" "$tmp/same.json" --alpha 1.5
expect_rc 2 "one file only" -- compare "$tmp/base.json"
expect_rc 2 "unknown option" -- compare "$tmp/base.json" "$tmp/same.json" --frobnicate
expect_rc 2 "--normalize-by a method no file has" -- compare "$tmp/base.json" "$tmp/same.json" --normalize-by libpsht
has "libpsht" "$tmp/err" "message names the method"

# ----------------------------------------------------------------- report
gen "$tmp/mA.json" --seed 1 --host alpha --cpu "Example CPU A @ 3.0GHz" --extra-nside 1024
gen "$tmp/mB.json" --seed 2 --host beta --cpu "Example CPU B @ 1.5GHz" --scale 2 --gpu "NVIDIA H100 80GB HBM3" --nside 128,256,512,2048 --fwhm 60
expect_rc 0 "report from two machines" -- report "$tmp/mA.json" "$tmp/mB.json" -o "$tmp/rep"
r="$tmp/rep/report.md"
if [ -f "$r" ]; then ok "report.md written"; else bad "report.md written"; touch "$r"; fi
has "M1: alpha" "$r" "report names machine 1"
has "M2: beta" "$r" "report names machine 2"
has "Example CPU A" "$r" "report has CPU of machine 1"
has "Example CPU B" "$r" "report has CPU of machine 2"
has "NVIDIA H100 80GB HBM3, 132 SMs" "$r" "report has the GPU"
has "fftw-3.3.10" "$r" "report has library versions"
has "!\[[^]]*\]\(time_per_case\.png\)" "$r" "report embeds the time chart"
has "!\[[^]]*\]\(stage_shares\.png\)" "$r" "report embeds the stage chart"
n_png=$(ls "$tmp/rep"/*.png 2>/dev/null | wc -l)
if [ "$n_png" -ge 1 ] && head -c 8 "$tmp/rep/time_per_case.png" | od -An -c | grep -q 'P   N   G'; then
  ok "PNG charts drawn ($n_png)"; else bad "PNG charts drawn ($n_png)"; fi
ls "$tmp/rep" | grep -q '\.tmp' && bad "temporary files left in the report folder" || ok "no temporary files left"
has '^\| `arkcos-256` \| [0-9.]+ m?s \| [0-9.]+ m?s \|$' "$r" "shared case with a time per machine"
has "x \(vs fsht iter=0 lmax_factor=2\)" "$r" "speed-up names the FSHT case"
has "Cases not in every file" "$r" "cases not shared are listed"
has '^\| `arkcos-1024` \|.*\| — \|' "$r" "a case of one file only shows — for the other"
has '^\| `[a-z0-9]+-2048` \|' "$r" "the other file's extra cases are listed too"
has "Table 1" "$r" "paper's Table 1 shares shown"
has "GTX 480" "$r" "paper's hardware shown"
# the paper's column where the parameters match (nside 2048, 4.7' Gaussian, fsht, 1 thread)
gen "$tmp/mP.json" --seed 3 --host gamma --nside 2048 --fwhm 4.7
"$PY" - "$tmp/mP.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["cases"]: c["threads"] = 1
json.dump(d, open(sys.argv[1], "w"))
EOF
expect_rc 0 "report with cases matching the paper" -- report "$tmp/mP.json" -o "$tmp/repP"
has "460 s \(HEALPix 2.15\); 160 s \(libpsht\)" "$tmp/repP/report.md" "published FSHT times where cases match"
has "20 s \(Intel Core2 Quad 2.8 GHz\)" "$tmp/repP/report.md" "published one-core ARKCoS time where the case matches"
has "23x vs HEALPix 2.15 \(1 core\)" "$tmp/repP/report.md" "speed-up the paper implies"
expect_rc 2 "report over an existing report.md without --force" -- report "$tmp/mA.json" -o "$tmp/rep"
expect_rc 0 "report with --force" -- report "$tmp/mA.json" "$tmp/mB.json" -o "$tmp/rep" --force
expect_rc 0 "report without the paper" -- report "$tmp/mA.json" -o "$tmp/rep2" --no-published
hasnt "GTX 480" "$tmp/rep2/report.md" "--no-published leaves the paper out"
expect_rc 2 "report: missing file" -- report "$tmp/nope.json" -o "$tmp/rep3"
expect_rc 2 "report: malformed file" -- report "$tmp/mA.json" "$tmp/malformed.json" -o "$tmp/rep3"
expect_rc 2 "report: no -o" -- report "$tmp/mA.json"
expect_rc 2 "report: malformed --published" -- report "$tmp/mA.json" -o "$tmp/rep3" --published "$tmp/malformed.json"
if [ ! -e "$tmp/rep3/report.md" ]; then ok "nothing written on bad input"; else bad "nothing written on bad input"; fi

# ------------------------------------------------------ scripts/perfcheck.sh
# `arkcos run` is replaced by a stub that hands out prepared results files in
# turn; `compare` is the real one. Checks the flow, not the timings.
pc="$tmp/pc"; mkdir -p "$pc"
cat >"$pc/arkcos" <<EOF
#!/usr/bin/env bash
if [ "\$1" = run ]; then      # run CONFIG --out DIR --force
  n=\$(( \$(cat "$pc/count" 2>/dev/null || echo 0) + 1 )); echo \$n >"$pc/count"
  echo "\$4" >>"$pc/order"
  mkdir -p "\$4" && cp "$pc/run\$n.json" "\$4/results.json"; exit
fi
exec "$ARKCOS" "\$@"
EOF
chmod +x "$pc/arkcos"
# perfcheck NAME RUN1 [RUN2 ...]: runs the script with these sweep results
# handed out in turn (PC_REF: PERFCHECK_REFERENCE, baseline unless given)
perfcheck() {
  local name=$1; shift
  rm -rf "$pc/out" "$pc/out-confirm" "$pc/out-ref" "$pc/out-ref-confirm" "$pc/count" "$pc/order" "$pc"/run*.json
  local n=0 f; for f in "$@"; do n=$((n + 1)); cp "$f" "$pc/run$n.json"; done
  ARKCOS="$pc/arkcos" PERFCHECK_BASELINE="$pc/baseline.json" PERFCHECK_OUT="$pc/out" \
    PERFCHECK_REFERENCE="${PC_REF:-baseline}" PERFCHECK_REF_ARKCOS="${PC_REF_ARKCOS:-}" \
    PERFCHECK_REF_COMMIT="${PC_REF_COMMIT:-}" \
    bash scripts/perfcheck.sh ${PC_ARGS:-} >"$tmp/out" 2>"$tmp/err"
  pc_rc=$?
  pc_runs=$(cat "$pc/count" 2>/dev/null || echo 0)
}
rm -f "$pc/baseline.json"
perfcheck "no baseline" "$tmp/base.json"
[ "$pc_rc" -eq 2 ] && ok "perfcheck without a baseline: exit 2" || bad "perfcheck without a baseline: exit $pc_rc"
has "perfcheck-update" "$tmp/err" "perfcheck says how to record a baseline"
PC_ARGS=--update perfcheck "update" "$tmp/base.json"
[ "$pc_rc" -eq 0 ] && cmp -s "$pc/baseline.json" "$tmp/base.json" && ok "perfcheck --update records the run as baseline" \
  || bad "perfcheck --update: exit $pc_rc"
perfcheck "same" "$tmp/same.json"
[ "$pc_rc" -eq 0 ] && [ "$pc_runs" -eq 1 ] && ok "perfcheck, no change: exit 0 after one run" || bad "perfcheck, no change: exit $pc_rc, $pc_runs runs"
perfcheck "other machine" "$tmp/machine2x.json"
[ "$pc_rc" -eq 0 ] && ok "perfcheck, 2x slower machine: exit 0 (normalised)" || bad "perfcheck, 2x slower machine: exit $pc_rc"
perfcheck "noise" "$tmp/slow.json" "$tmp/same.json"
[ "$pc_rc" -eq 0 ] && [ "$pc_runs" -eq 2 ] && ok "perfcheck, regression not repeated: rerun, exit 0" || bad "perfcheck, regression not repeated: exit $pc_rc, $pc_runs runs"
has "treated as noise" "$tmp/out" "perfcheck says the unconfirmed regression was noise"
gen "$tmp/slow512.json" --seed 7 --scale-case arkcos-512=2
perfcheck "different cases" "$tmp/slow.json" "$tmp/slow512.json"
[ "$pc_rc" -eq 0 ] && ok "perfcheck, different cases regress in the two runs: exit 0" || bad "perfcheck, different cases: exit $pc_rc"
gen "$tmp/slow_again.json" --seed 8 --scale-case arkcos-256=2
perfcheck "confirmed" "$tmp/slow.json" "$tmp/slow_again.json"
[ "$pc_rc" -eq 3 ] && [ "$pc_runs" -eq 2 ] && ok "perfcheck, regression in both runs: exit 3" || bad "perfcheck, regression in both runs: exit $pc_rc, $pc_runs runs"
has "^  arkcos-256$" "$tmp/out" "perfcheck names the confirmed case"

# too noisy to judge: one more run decides; twice too noisy is exit 4
perfcheck "noisy, then clean" "$tmp/plain_slow.json" "$tmp/same.json"
[ "$pc_rc" -eq 0 ] && [ "$pc_runs" -eq 2 ] && ok "perfcheck, too noisy then clean: rerun, exit 0" || bad "perfcheck, too noisy then clean: exit $pc_rc, $pc_runs runs"
perfcheck "noisy twice" "$tmp/plain_slow.json" "$tmp/plain_slow.json"
[ "$pc_rc" -eq 4 ] && [ "$pc_runs" -eq 2 ] && ok "perfcheck, too noisy twice: exit 4" || bad "perfcheck, too noisy twice: exit $pc_rc, $pc_runs runs"
has "TOO NOISY TO JUDGE twice" "$tmp/out" "perfcheck says it could not judge"
perfcheck "regression, then too noisy" "$tmp/slow.json" "$tmp/plain_slow.json"
[ "$pc_rc" -eq 4 ] && [ "$pc_runs" -eq 2 ] && ok "perfcheck, regression then too noisy on that case: exit 4" || bad "perfcheck, regression then too noisy: exit $pc_rc, $pc_runs runs"
has "^  arkcos-256$" "$tmp/out" "perfcheck names the unconfirmed case"
has "'fsht:iter=0' of the same file" "$tmp/out" "perfcheck reports compare's default judgement"
has "did not wait passively \(meta.omp_wait_policy: absent\)" "$tmp/err" "perfcheck warns of a baseline without passive threads"
# a baseline of passive threads: no warning, and the 2-thread cases judged on CPU time
PC_ARGS=--update perfcheck "update, passive" "$tmp/p2_b.json"
perfcheck "passive, elapsed 2x" "$tmp/p2_n.json"
[ "$pc_rc" -eq 0 ] && [ "$pc_runs" -eq 1 ] && ok "perfcheck, passive threads, elapsed 2x: exit 0" || bad "perfcheck, passive threads, elapsed 2x: exit $pc_rc, $pc_runs runs"
has "threads waiting passively" "$tmp/out" "perfcheck judges CPU times of passive threads"
hasnt "did not wait passively" "$tmp/err" "no warning for a baseline of passive threads"
# The reference built and timed on this machine: the stub stands for the
# reference's arkcos too (PERFCHECK_REF_ARKCOS), so that runs alternate
# reference, new; the confirmation runs the new build first.
PC_ARGS=--update perfcheck "update" "$tmp/base.json"
PC_REF_ARKCOS="$pc/arkcos" perfcheck "ref build, same" "$tmp/base.json" "$tmp/same.json"
[ "$pc_rc" -eq 0 ] && [ "$pc_runs" -eq 2 ] && ok "perfcheck against a reference build: exit 0 after its sweep and this one" \
  || bad "perfcheck against a reference build, same: exit $pc_rc, $pc_runs runs"
[ "$(tr '\n' ' ' <"$pc/order")" = "$pc/out-ref $pc/out " ] && ok "perfcheck times the reference first, then this build" \
  || bad "perfcheck's sweeps ran in the order $(tr '\n' ' ' <"$pc/order")"
has "baseline: $pc/out-ref/results.json" "$tmp/out" "perfcheck judges against the reference's sweep of this machine"
has "reference: $pc/arkcos \(PERFCHECK_REF_ARKCOS\)" "$tmp/out" "perfcheck says which reference it timed"
# the committed baseline (base.json) does not matter then: a reference sweep
# as slow as the new one is no regression
PC_REF_ARKCOS="$pc/arkcos" perfcheck "ref build, both slow" "$tmp/slow.json" "$tmp/slow.json"
[ "$pc_rc" -eq 0 ] && [ "$pc_runs" -eq 2 ] && ok "perfcheck: reference and build equally slow here: exit 0 (the baseline's numbers unused)" \
  || bad "perfcheck, reference and build equally slow: exit $pc_rc, $pc_runs runs"
PC_REF_ARKCOS="$pc/arkcos" perfcheck "ref build, confirmed" "$tmp/base.json" "$tmp/slow.json" "$tmp/slow_again.json" "$tmp/same.json"
[ "$pc_rc" -eq 3 ] && [ "$pc_runs" -eq 4 ] && ok "perfcheck against a reference build, regression twice: exit 3 after 4 sweeps" \
  || bad "perfcheck against a reference build, regression twice: exit $pc_rc, $pc_runs runs"
[ "$(tr '\n' ' ' <"$pc/order")" = "$pc/out-ref $pc/out $pc/out-confirm $pc/out-ref-confirm " ] \
  && ok "perfcheck's confirmation times this build first" || bad "perfcheck's sweeps ran in the order $(tr '\n' ' ' <"$pc/order")"
has "^  arkcos-256$" "$tmp/out" "perfcheck names the case confirmed against the reference build"
PC_REF_ARKCOS="$pc/arkcos" perfcheck "ref build, noise" "$tmp/base.json" "$tmp/slow.json" "$tmp/same.json" "$tmp/base.json"
[ "$pc_rc" -eq 0 ] && [ "$pc_runs" -eq 4 ] && ok "perfcheck against a reference build, regression once: exit 0" \
  || bad "perfcheck against a reference build, regression once: exit $pc_rc, $pc_runs runs"
PC_REF_ARKCOS="$pc/nope" perfcheck "ref build missing" "$tmp/base.json"
[ "$pc_rc" -eq 2 ] && [ "$pc_runs" -eq 0 ] && ok "perfcheck with a reference binary that is not there: exit 2" \
  || bad "perfcheck, missing reference binary: exit $pc_rc, $pc_runs runs"
has "PERFCHECK_REF_ARKCOS=$pc/nope is not an executable" "$tmp/err" "perfcheck names the missing reference binary"
# the baseline's commit cannot be had (base.json names 0123abcd): auto falls
# back to the committed results and says why; commit refuses
PC_REF=auto perfcheck "auto, unknown commit" "$tmp/same.json"
[ "$pc_rc" -eq 0 ] && [ "$pc_runs" -eq 1 ] && ok "perfcheck, baseline commit not in the history: the committed results judge" \
  || bad "perfcheck, auto with an unknown commit: exit $pc_rc, $pc_runs runs"
has "commit '0123abcd' is not in this repository's history" "$tmp/err" "perfcheck says why it cannot build the reference"
has "judging against the results recorded in $pc/baseline.json" "$tmp/err" "perfcheck says what judges instead"
PC_REF=commit perfcheck "commit, unknown commit" "$tmp/same.json"
[ "$pc_rc" -eq 2 ] && [ "$pc_runs" -eq 0 ] && ok "perfcheck, PERFCHECK_REFERENCE=commit without the commit: exit 2, nothing run" \
  || bad "perfcheck, commit mode, unknown commit: exit $pc_rc, $pc_runs runs"
has "no reference build \(PERFCHECK_REFERENCE=commit\): commit '0123abcd'" "$tmp/err" "perfcheck names the commit it lacks"
PC_REF=bogus perfcheck "bad reference" "$tmp/same.json"
[ "$pc_rc" -eq 2 ] && has "PERFCHECK_REFERENCE='bogus'" "$tmp/err" "perfcheck refuses an unknown PERFCHECK_REFERENCE" \
  || bad "perfcheck, PERFCHECK_REFERENCE=bogus: exit $pc_rc"
# a reference commit that does not build: auto falls back, commit refuses
# (a commit of a scratch repository whose make fails at once)
scratch="$tmp/scratch"; mkdir -p "$scratch/scripts"
cp scripts/perfcheck.sh "$scratch/scripts/"
printf 'build/arkcos:\n\t@echo "no such target here" >&2; exit 1\n' >"$scratch/Makefile"
( cd "$scratch" && git init -q && git -c user.email=t@t -c user.name=t add -A \
  && git -c user.email=t@t -c user.name=t commit -qm scratch ) >/dev/null 2>&1
if [ -d "$scratch/.git" ]; then
  rm -rf "$pc/count" "$pc/order"; cp "$tmp/same.json" "$pc/run1.json"
  ( cd "$scratch" && ARKCOS="$pc/arkcos" PERFCHECK_BASELINE="$pc/baseline.json" PERFCHECK_OUT="$pc/out" \
      PERFCHECK_CONFIG=/dev/null PERFCHECK_REFERENCE=commit PERFCHECK_REF_COMMIT=HEAD \
      bash scripts/perfcheck.sh >"$tmp/out" 2>"$tmp/err" ); sc_rc=$?
  [ "$sc_rc" -eq 2 ] && ok "perfcheck, a reference commit whose build fails: exit 2 (commit mode)" \
    || bad "perfcheck, a reference whose build fails: exit $sc_rc"
  has "its build failed \(the end of [^ ]*/perfcheck-ref/[0-9a-f]*.log: no such target here" "$tmp/err" \
    "perfcheck quotes the failed reference build's log"
else
  bad "perfcheck: could not make a scratch git repository for the failed-build case"
fi
echo "TESTS $passed $failed"
[ "$failed" -eq 0 ]
