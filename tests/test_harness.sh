#!/usr/bin/env bash
# End-to-end tests of `arkcos run` (the sweep harness) and `arkcos info`:
# a tiny sweep with the results contract checked field by field, every kind
# of config error (exit 2 with the JSON path or line:column), GPU cases
# skipped without a device, skip rules, outputs, and a run killed after its
# first case and resumed (every case exactly once).
# Prints "TESTS <passed> <failed>" last.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
ARKCOS=${ARKCOS:-$ROOT/build/arkcos}
case $ARKCOS in /*) ;; *) ARKCOS=$ROOT/$ARKCOS ;; esac
PY=${PYTHON:-/usr/bin/python3}
T=$(mktemp -d "${TMPDIR:-/tmp}/arkcos-harness.XXXXXX")
trap 'rm -rf "$T"' EXIT
passed=0; failed=0

ok()   { passed=$((passed + 1)); echo "ok   $1"; }
bad()  { failed=$((failed + 1)); echo "FAIL $1"; shift; for l in "$@"; do echo "  $l"; done; }
check() { # check NAME COMMAND...: passes when the command succeeds
  local name=$1; shift
  local out; out=$("$@" 2>&1)
  if [ $? -eq 0 ]; then ok "$name"; else bad "$name" "$(echo "$out" | head -20)"; fi
}
# expect_exit NAME CODE PATTERN CMD...: exit status CODE and stderr matching PATTERN
expect_exit() {
  local name=$1 code=$2 pat=$3; shift 3
  "$@" >"$T/out.txt" 2>"$T/err.txt"
  local rc=$?
  if [ $rc -ne "$code" ]; then
    bad "$name" "exit $rc, expected $code" "$(head -5 "$T/err.txt")"
  elif [ -n "$pat" ] && ! grep -qE -- "$pat" "$T/err.txt"; then
    bad "$name" "stderr does not match /$pat/:" "$(head -5 "$T/err.txt")"
  else
    ok "$name"
  fi
}

if [ ! -x "$ARKCOS" ]; then
  echo "FAIL arkcos binary $ARKCOS not found (build first)"
  echo "TESTS 0 1"; exit 1
fi
cd "$T"

# ------------------------------------------------------------ arkcos info
check "info prints versions" bash -c "'$ARKCOS' info | grep -q '^fftw' && '$ARKCOS' info | grep -q '^libsharp'"
check "info --json has the meta keys" bash -c "'$ARKCOS' info --json | '$PY' -c '
import json, sys
m = json.load(sys.stdin)
for k in (\"date\", \"git_commit\", \"host\", \"cpu_model\", \"cores\", \"memory_bytes\", \"os\",
          \"compiler\", \"cflags\", \"versions\", \"gpus\"):
    assert k in m, k
for k in (\"arkcos\", \"fftw\", \"libsharp\", \"cfitsio\", \"jansson\", \"cuda_runtime\", \"cuda_driver\", \"cufft\"):
    assert isinstance(m[\"versions\"][k], str) and m[\"versions\"][k], k
'"
GPU_PRESENT=$("$ARKCOS" info --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["gpus"]))')
check "info prints each line once" bash -c "[ -z \"\$('$ARKCOS' info | sort | uniq -d)\" ]"
if [ "$GPU_PRESENT" = 0 ]; then
  check "info says which backend runs" bash -c "'$ARKCOS' info | grep -Eq '^backend +(no CUDA device: CPU backend|CPU backend \(built without CUDA\))'"
else
  check "info says which backend runs" bash -c "'$ARKCOS' info | grep -q '^backend  *GPU'"
fi

# ------------------------------------------------------------ config errors
base='"grid": {"nside": [8]}, "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}], "methods": [{"name": "arkcos"}]'
printf '{%s, "colour": "blue"}\n' "$base" > unknown_key.json
expect_exit "unknown top-level key -> 2 naming it" 2 'unknown_key.json: colour: unknown key' "$ARKCOS" run unknown_key.json --out e1
printf '{"grid": {"nside": [8]}, "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3, "sigma": 1}], "methods": [{"name": "arkcos"}]}\n' > unknown_nested.json
expect_exit "unknown nested key -> 2 with its path" 2 'kernels\[0\]\.sigma: unknown key' "$ARKCOS" run unknown_nested.json --out e2
printf '{"grid": {"nside": [8, 0]}, "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}], "methods": [{"name": "arkcos"}]}\n' > range.json
expect_exit "out of range -> 2 with grid.nside[1]: must be >= 1" 2 'grid\.nside\[1\]: must be >= 1' "$ARKCOS" run range.json --out e3
printf '{"grid": {"nside": [8]}, "repeats": "three", "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}], "methods": [{"name": "arkcos"}]}\n' > type.json
expect_exit "wrong type -> 2 with path" 2 'repeats: must be an integer' "$ARKCOS" run type.json --out e4
printf '{"grid": {"nside": [8]}, "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}], "methods": [{"name": "arkcos", "mode": "fast"}]}\n' > enum.json
expect_exit "unknown enum value -> 2 with path and choices" 2 "methods\[0\]\.mode: expected enhanced or paper, got 'fast'" "$ARKCOS" run enum.json --out e5
printf '{"grid": {"nside": [8]}, "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}], "methods": [{"name": "arkcos"}, {"name": "healpix"}]}\n' > method.json
expect_exit "unknown method -> 2 naming it" 2 "methods\[1\]\.name: unknown method 'healpix' \(expected arkcos, fsht, direct\)" "$ARKCOS" run method.json --out e6
printf '{\n  "grid": {"nside": [8]},\n  "kernels": [{"type": "gaussian",, "fwhm_arcmin": 600}]\n}\n' > malformed.json
expect_exit "malformed JSON -> 2 with file:line:column" 2 '^arkcos: malformed\.json:3:[0-9]+: malformed JSON' "$ARKCOS" run malformed.json --out e7
printf '{%s, "reference": "exact", "input": {"type": "point_sources", "sources": [[90, 0, 1]]}}\n' "$base" > exact.json
expect_exit "reference exact needs random input -> 2" 2 "reference: 'exact' needs input.type" "$ARKCOS" run exact.json --out e8
printf '{"grid": {"nside": [8]}, "kernels": [{"type": "gaussian", "fwhm_arcmin": 600}], "methods": [{"name": "arkcos"}]}\n' > cutoff.json
expect_exit "gaussian without a cutoff -> 2" 2 'kernels\[0\]: a gaussian kernel needs cutoff_deg or cutoff_rel' "$ARKCOS" run cutoff.json --out e9
printf '{"grid": {"nside": [8]}, "kernels": [{"type": "file", "path": "no-such-kernel.txt"}], "methods": [{"name": "arkcos"}]}\n' > kfile.json
expect_exit "missing kernel file -> 2 naming the path" 2 "kernels\[0\]\.path: cannot read 'no-such-kernel.txt'" "$ARKCOS" run kfile.json --out e10
printf '{"grid": {"nside": [8]}, "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}], "methods": [{"name": "arkcos"}], "input": {"type": "point_sources", "sources": [[200, 0, 1]]}}\n' > sources.json
expect_exit "source colatitude out of range -> 2 with path" 2 'input\.sources\[0\]\[0\]: must be <= 180' "$ARKCOS" run sources.json --out e11
expect_exit "missing config file -> 2" 2 'nope\.json' "$ARKCOS" run nope.json --out e12
expect_exit "unknown option -> 2" 2 "unknown option '--bogus'" "$ARKCOS" run range.json --bogus
# top-hat kernels: the radius is cutoff_deg, required, in (0, 180]; nothing else
th='"grid": {"nside": [8]}, "methods": [{"name": "arkcos"}]'
printf '{%s, "kernels": [{"type": "tophat"}]}\n' "$th" > th_none.json
expect_exit "top-hat without cutoff_deg -> 2 with path" 2 'kernels\[0\]\.cutoff_deg: required' "$ARKCOS" run th_none.json --out e13
printf '{%s, "kernels": [{"type": "gaussian", "fwhm_arcmin": 60, "cutoff_deg": 2.1}, {"type": "tophat", "cutoff_deg": 190}]}\n' "$th" > th_big.json
expect_exit "top-hat radius 190 deg -> 2 with path" 2 'kernels\[1\]\.cutoff_deg: must be <= 180' "$ARKCOS" run th_big.json --out e14
printf '{%s, "kernels": [{"type": "tophat", "cutoff_deg": 5.1, "cutoff_rel": 0.1}]}\n' "$th" > th_rel.json
expect_exit "top-hat with cutoff_rel -> 2 with path" 2 'kernels\[0\]\.cutoff_rel: unknown key \(expected one of: type, cutoff_deg\)' "$ARKCOS" run th_rel.json --out e15
# accuracy: arkcos only, a number >= 0, enhanced mode only
acc='"grid": {"nside": [8]}, "kernels": [{"type": "tophat", "cutoff_deg": 12.1}]'
printf '{%s, "methods": [{"name": "arkcos"}, {"name": "arkcos", "accuracy": -1e-6}]}\n' "$acc" > acc_neg.json
expect_exit "accuracy < 0 -> 2 with path" 2 'acc_neg\.json: methods\[1\]\.accuracy: must be >= 0' "$ARKCOS" run acc_neg.json --out e16
printf '{%s, "methods": [{"name": "arkcos", "accuracy": "1e-6"}]}\n' "$acc" > acc_str.json
expect_exit "accuracy as a string -> 2 with path" 2 'methods\[0\]\.accuracy: must be a number' "$ARKCOS" run acc_str.json --out e17
printf '{%s, "methods": [{"name": "arkcos", "mode": "paper", "accuracy": 1e-6}]}\n' "$acc" > acc_paper.json
expect_exit "accuracy in paper mode -> 2 with path" 2 'methods\[0\]\.accuracy: applies only to mode "enhanced"' "$ARKCOS" run acc_paper.json --out e18
printf '{%s, "methods": [{"name": "fsht", "accuracy": 1e-6}]}\n' "$acc" > acc_fsht.json
expect_exit "accuracy for fsht -> 2 with path" 2 'methods\[0\]\.accuracy: unknown key' "$ARKCOS" run acc_fsht.json --out e19
printf '{%s, "methods": [{"name": "arkcos"}, {"name": "arkcos", "accuracy": 0}]}\n' "$acc" > acc_same.json
expect_exit "accuracy 0 is the default: the same method -> 2" 2 'methods\[1\]: same method as methods\[0\]' "$ARKCOS" run acc_same.json --out e20
if ls -d e1 e2 e3 e4 e5 e6 e7 e8 e9 e10 e11 e12 e13 e14 e15 e16 e17 e18 e19 e20 >/dev/null 2>&1; then
  bad "invalid configs write nothing" "$(ls -d e* 2>/dev/null)"
else
  ok "invalid configs write nothing"
fi

# ------------------------------------------------------------ the tiny sweep
# 2 nside x 2 kernels x 5 methods x 2 threads = 40 cases; the full direct sum
# is the reference, a sampled direct sum must agree with it exactly.
cat > tiny.json <<'EOF'
{
  "name": "tiny",
  "repeats": 2,
  "warmup": 1,
  "threads": [1, 2],
  "input": {"type": "random", "lmax_factor": 2, "seed": 7},
  "grid": {"nside": [8, 16]},
  "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3},
              {"type": "tophat", "cutoff_deg": 12.1}],
  "methods": [{"name": "arkcos", "backend": "cpu", "mode": "enhanced"},
              {"name": "arkcos", "backend": "gpu"},
              {"name": "fsht", "iter": 0},
              {"name": "direct", "sample": 200},
              {"name": "direct"}],
  "reference": "direct",
  "outputs": {"maps": true, "spectra": true,
              "patches": [{"theta_deg": 0, "phi_deg": 0, "side_deg": 40, "n": 12},
                          {"theta_deg": 90, "phi_deg": 45, "side_deg": 40, "n": 10, "log": true}]}
}
EOF
"$ARKCOS" run tiny.json --out full >full.out 2>full.err
rc=$?
if [ $rc -eq 0 ]; then ok "tiny sweep exits 0"; else bad "tiny sweep exits 0" "exit $rc" "$(head -5 full.err)"; fi
# (nside 8 samples the 600' Gaussian with 1.4 pixels per FWHM: the one
# line on stderr is the run's warning about it, docs/NARROW_BEAMS.md)
if grep -qv '^arkcos run: warning: ' full.err; then bad "no progress output when stderr is not a terminal" "$(head -3 full.err)"; else ok "no progress output when stderr is not a terminal"; fi

hdr=$(dirname "$ARKCOS")/gen/arkcos_build_info.h
ARKCOS_BUILT="$(sed -n 's/^#define ARKCOS_BUILD_COMMIT "\(.*\)"$/\1/p' "$hdr") $(sed -n 's/^#define ARKCOS_BUILD_DIRTY //p' "$hdr")"
export ARKCOS_BUILT
cat > contract.py <<'EOF'
import csv, json, math, os, sys
folder, gpu_present, expect_n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = json.load(open(os.path.join(folder, "results.json")))
errors = []
def need(cond, msg):
    if not cond:
        errors.append(msg)
num = (int, float)
m = d["meta"]
for k in ("date", "command", "config", "git_commit", "host", "cpu_model", "cores", "memory_bytes",
          "os", "compiler", "cflags", "versions", "gpus"):
    need(k in m, "meta." + k + " missing")
need(m["command"].startswith("arkcos run tiny.json"), "meta.command: " + m["command"])
# the commit the binary was built from (its build header), not asked of git
built = os.environ["ARKCOS_BUILT"].split()
need([m["git_commit"], {True: "1", False: "0", None: "-1"}[m["git_dirty"]]] == built,
     f"meta.git_commit, git_dirty: {m['git_commit']} {m['git_dirty']}, built {built}")
need(m["config"]["name"] == "tiny" and m["config"]["threads"] == [1, 2], "meta.config is not the config")
need(isinstance(m["cores"], int) and m["cores"] >= 1, "meta.cores")
need(isinstance(m["memory_bytes"], int) and m["memory_bytes"] > 1 << 20, "meta.memory_bytes")
for k in ("arkcos", "fftw", "libsharp", "cfitsio", "jansson", "cuda_runtime", "cuda_driver", "cufft"):
    need(isinstance(m["versions"].get(k), str), "meta.versions." + k)
for g in m["gpus"]:
    for k in ("name", "sm_count", "memory_bytes", "clock_khz", "memory_clock_khz"):
        need(k in g, "meta.gpus[]." + k)
cases = d["cases"]
ids = [c["id"] for c in cases]
need(len(cases) == expect_n, "%d cases, expected %d" % (len(cases), expect_n))
need(len(set(ids)) == len(ids), "duplicate ids")
stage_keys = ("map_fft", "kernel_eval", "kernel_fft", "reduction", "map_ifft", "h2d", "d2h", "other")
ref_maps = {}
for c in cases:
    cid = c["id"]
    for k in ("id", "nside", "kernel", "method", "threads", "status"):
        need(k in c, cid + ": " + k + " missing")
    need(c["status"] in ("ok", "skipped", "failed"), cid + ": status " + c["status"])
    k, me = c["kernel"], c["method"]
    need(k["type"] in ("gaussian", "tophat"), cid + ": kernel.type")
    need(isinstance(k.get("cutoff_deg"), num) and k["cutoff_deg"] > 0, cid + ": kernel.cutoff_deg")
    need(isinstance(k.get("cutoff_rel"), num) and 0 < k["cutoff_rel"] <= 1, cid + ": kernel.cutoff_rel")
    if k["type"] == "gaussian":
        need(abs(k["cutoff_deg"] - 15.3) < 1e-9 and k["fwhm_arcmin"] == 600, cid + ": kernel as configured")
    if me["name"] == "arkcos":
        need(me.get("mode") in ("enhanced", "paper") and me.get("precision") == "double"
             and me.get("backend") in ("cpu", "gpu"), cid + ": arkcos defaults not filled in")
    if me["name"] == "fsht":
        need(me.get("iter") == 0 and me.get("lmax_factor") == 3, cid + ": fsht defaults")
    need("nside=%d " % c["nside"] in cid and cid.endswith("threads=%d" % c["threads"]), cid + ": id")
    if me["name"] == "arkcos" and me["backend"] == "gpu" and not gpu_present:
        # the engine's refusal (arkcos_plan_check), the words of arkcos smooth --backend gpu
        need(c["status"] == "skipped" and c.get("reason", "").startswith("no GPU: --backend gpu: "),
             cid + ": gpu case not skipped with the engine's reason")
        continue
    need(c["status"] == "ok", cid + ": status " + c["status"] + " " + c.get("reason", ""))
    if c["status"] != "ok":
        continue
    t = c["time"]
    need(len(t["samples"]) == 2 and all(s > 0 for s in t["samples"]), cid + ": samples")
    need(t["min"] == min(t["samples"]) and t["max"] == max(t["samples"]), cid + ": min/max")
    need(t["min"] <= t["median"] <= t["max"], cid + ": median")
    need(isinstance(c.get("peak_memory"), int) and c["peak_memory"] > 0, cid + ": peak_memory")
    if me["name"] == "arkcos":
        st = c.get("stages", {})
        need(all(isinstance(st.get(s), num) and st[s] >= 0 for s in stage_keys), cid + ": stages")
        tot = sum(st.get(s, 0) for s in stage_keys)
        need(tot <= 1.05 * t["median"] + 1e-4, cid + ": stages add up to %g > median %g" % (tot, t["median"]))
        need(c.get("plan_memory", 0) > 0 and c.get("plan_time", 0) > 0, cid + ": plan_memory / plan_time")
        b = c.get("bound", "missing")
        need(b is None or (isinstance(b, num) and b >= 0), cid + ": bound %r" % (b,))
    else:
        need("stages" not in c and "bound" not in c, cid + ": stages or bound for a non-arkcos method")
    mt = c.get("metrics", {})
    need(mt.get("reference") == "direct", cid + ": metrics.reference")
    for key in ("frac_rms", "max_rel", "frac_rms_north", "frac_rms_belt", "frac_rms_south",
                "max_rel_north", "max_rel_belt", "max_rel_south", "truncation_rms_eq7"):
        need(isinstance(mt.get(key), num) and mt[key] >= 0 and math.isfinite(mt[key]), cid + ": metrics." + key)
    if me["name"] == "direct":
        # the full direct sum is the reference; a sampled one must agree exactly
        need(mt["frac_rms"] == 0 and mt["max_rel"] == 0, cid + ": direct differs from the reference")
        need(mt.get("sampled", False) == ("sample" in me), cid + ": sampled flag")
        need(mt.get("compared_pixels") == (200 if "sample" in me else 12 * c["nside"] ** 2), cid + ": compared_pixels")
    else:
        need(mt["frac_rms"] > 0 and mt["frac_rms"] < 1, cid + ": frac_rms %g not in (0, 1)" % mt["frac_rms"])
    out = c.get("outputs")
    if me["name"] == "direct" and "sample" in me:
        need(out is None, cid + ": outputs for a sampled direct sum")
        continue
    need(out is not None, cid + ": outputs missing")
    if out is None:
        continue
    need(os.path.getsize(os.path.join(folder, out["map"])) > 2880, cid + ": map file")
    sp = [l.split() for l in open(os.path.join(folder, out["spectra"])) if not l.startswith("#")]
    need(len(sp) == 2 * c["nside"] + 1 and all(len(r) == 4 for r in sp), cid + ": spectra rows")
    need("cl_resid_max" in mt and "cl_diff_max" in mt, cid + ": spectra metrics")
    need(len(out["patches"]) == 2, cid + ": patches")
    for i, p in enumerate(out["patches"]):
        n = (12, 10)[i]
        need(p["n"] == n and p["log"] == (i == 1), cid + ": patch parameters")
        kinds = ("map",) if (me["name"] == "direct" and "sample" not in me) else ("map", "diff")
        for kind in kinds:
            rows = [l.split() for l in open(os.path.join(folder, p[kind]))
                    if l.strip() and not l.startswith("#")]
            need(len(rows) == n * n and all(len(r) == 3 for r in rows), cid + ": patch " + kind)
# the reference case first for every (nside, kernel)
order = [(c["nside"], c["kernel"]["type"], c["method"]["name"], "sample" in c["method"]) for c in cases]
for i, o in enumerate(order):
    if i == 0 or order[i - 1][:2] != o[:2]:
        need(o[2] == "direct" and not o[3], "case %d: the reference does not run first" % i)
rows = list(csv.reader(open(os.path.join(folder, "summary.csv"))))
header = ("id,nside,kernel,fwhm_arcmin,cutoff_deg,method,backend,mode,precision,iter,threads,status,"
          "t_min,t_median,t_max,map_fft,kernel_eval,kernel_fft,reduction,map_ifft,h2d,d2h,other,"
          "peak_memory,frac_rms,max_rel,frac_rms_north,frac_rms_belt,frac_rms_south").split(",")
need(rows[0] == header, "summary.csv header: %s" % rows[0])
need(len(rows) == len(cases) + 1, "summary.csv has %d rows for %d cases" % (len(rows) - 1, len(cases)))
labels = set()
for r, c in zip(rows[1:], cases):
    rec = dict(zip(header, r))
    need(len(r) == len(header), "summary.csv row width")
    need(rec["id"] == c["id"] and rec["status"] == c["status"], "summary.csv row for " + c["id"])
    labels.add(rec["method"])
    if c["status"] == "ok":
        need(float(rec["t_median"]) == c["time"]["median"] or
             abs(float(rec["t_median"]) / c["time"]["median"] - 1) < 1e-6, "summary.csv t_median")
    if c["method"]["name"] != "arkcos":
        need(rec["map_fft"] == "" and rec["backend"] == "", "summary.csv: arkcos columns not empty")
    if c["kernel"]["type"] == "tophat":
        need(rec["fwhm_arcmin"] == "", "summary.csv: fwhm for a top-hat")
need(labels == {"arkcos-cpu-enhanced-double", "arkcos-gpu-enhanced-double", "fsht-iter0", "direct"},
     "summary.csv method labels: %s" % sorted(labels))
for e in errors[:30]:
    print("  " + e)
sys.exit(1 if errors else 0)
EOF
check "results contract, field by field" "$PY" contract.py full "$GPU_PRESENT" 40

# healpy (the real client) reads a written map
if "$PY" -c 'import healpy' 2>/dev/null; then
  check "healpy reads a written map" "$PY" -c "
import healpy as hp, json, numpy as np
d = json.load(open('full/results.json'))
c = [c for c in d['cases'] if c['status'] == 'ok' and c['method']['name'] == 'arkcos' and c['nside'] == 16][0]
m = hp.read_map('full/' + c['outputs']['map'])
assert m.shape == (3072,) and np.isfinite(m).all() and m.std() > 0
"
fi

# ------------------------------------------------------------ rerun, resume
expect_exit "existing run without --resume -> 2" 2 'results.json exists' "$ARKCOS" run tiny.json --out full
"$ARKCOS" run tiny.json --out full --resume >resume0.out 2>&1
if [ $? -eq 0 ] && grep -q '0 run now' resume0.out; then ok "resuming a finished run runs nothing"; else bad "resuming a finished run runs nothing" "$(cat resume0.out)"; fi

sed 's/"repeats": 2/"repeats": 3/' tiny.json > tiny_changed.json
expect_exit "resume with a different config -> 2 naming the difference" 2 'differs .*first difference: repeats' "$ARKCOS" run tiny_changed.json --out full --resume

# killed after the first case, then resumed: every case exactly once
(ARKCOS_TEST_STOP_AFTER=1 "$ARKCOS" run tiny.json --out killed) >/dev/null 2>&1
rc=$?
n1=$("$PY" -c 'import json; print(len(json.load(open("killed/results.json"))["cases"]))' 2>/dev/null)
if [ $rc -eq 137 ] && [ "$n1" = 1 ]; then ok "run killed after its first case keeps that case"; else bad "run killed after its first case keeps that case" "exit $rc, cases $n1"; fi
nrows=$(($(wc -l < killed/summary.csv) - 1))
if [ "$nrows" = 1 ]; then ok "summary.csv written with the first case"; else bad "summary.csv written with the first case" "$nrows rows"; fi
(ARKCOS_TEST_STOP_AFTER=5 "$ARKCOS" run tiny.json --out killed --resume) >/dev/null 2>&1
"$ARKCOS" run tiny.json --out killed --resume >resume.out 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '34 run now' resume.out; then ok "resume runs only the missing cases"; else bad "resume runs only the missing cases" "exit $rc" "$(cat resume.out)"; fi
check "resumed run: every case exactly once, contract holds" "$PY" contract.py killed "$GPU_PRESENT" 40
check "resumed run has the same ids as the uninterrupted one" "$PY" -c "
import json
a = sorted(c['id'] for c in json.load(open('full/results.json'))['cases'])
b = sorted(c['id'] for c in json.load(open('killed/results.json'))['cases'])
assert a == b
r = json.load(open('killed/results.json'))['meta']['resumed']
assert len(r) == 2 and all('date' in x and 'command' in x for x in r), r
"
check "resumed results agree with the uninterrupted run" "$PY" -c "
import json
a = {c['id']: c for c in json.load(open('full/results.json'))['cases']}
b = {c['id']: c for c in json.load(open('killed/results.json'))['cases']}
for i in a:
    ma, mb = a[i].get('metrics', {}), b[i].get('metrics', {})
    assert abs(ma.get('frac_rms', 0) - mb.get('frac_rms', 0)) <= 1e-12 + 1e-9 * ma.get('frac_rms', 0), i
"

# default folder results/<name>/<timestamp>/ and --resume finding it
mkdir -p cwd && cd cwd
printf '{"name": "deflt", "repeats": 1, "warmup": 0, "threads": 1, "grid": {"nside": [8]}, "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}], "methods": [{"name": "arkcos"}, {"name": "fsht"}]}\n' > deflt.json
(ARKCOS_TEST_STOP_AFTER=1 "$ARKCOS" run deflt.json) >/dev/null 2>&1
"$ARKCOS" run deflt.json --resume >deflt.out 2>&1
rc=$?
n=$(ls -d results/deflt/*/ 2>/dev/null | wc -l)
if [ $rc -eq 0 ] && [ "$n" = 1 ] && grep -q '2 cases (2 ok, 0 skipped, 0 failed; 1 run now)' deflt.out &&
   ls results/deflt/*/results.json results/deflt/*/summary.csv >/dev/null 2>&1 &&
   ls -d results/deflt/*/ | grep -qE 'results/deflt/[0-9]{8}T[0-9]{6}Z'; then
  ok "default folder results/<name>/<UTC timestamp>/, --resume finds it"
else
  bad "default folder results/<name>/<UTC timestamp>/, --resume finds it" "exit $rc, $n folders" "$(cat deflt.out)"
fi
cd "$T"

# ------------------------------------------------------------ accuracy and bound
# "accuracy" is part of the method's id and label (only when set), reaches
# the plan, and the plan's bound is recorded: within the accuracy asked,
# finite for an exact plan, null (no bound) or a number in paper mode. The
# label can name the reference.
cat > acc.json <<'EOF'
{"repeats": 1, "warmup": 0, "threads": 1, "grid": {"nside": [8]},
 "kernels": [{"type": "tophat", "cutoff_deg": 12.1}],
 "methods": [{"name": "direct"}, {"name": "arkcos"}, {"name": "arkcos", "accuracy": 1e-6},
             {"name": "arkcos", "mode": "paper"}],
 "reference": "arkcos-auto-enhanced-double-a1e-06"}
EOF
"$ARKCOS" run acc.json --out acc >acc.out 2>&1
check "accuracy: id, label, method object, bound" "$PY" -c "
import csv, json, math
d = json.load(open('acc/results.json'))
cs = {(c['method']['name'], c['method'].get('mode'), c['method'].get('accuracy')): c for c in d['cases']}
assert len(cs) == 4 and all(c['status'] == 'ok' for c in cs.values()), [c.get('reason') for c in d['cases']]
a = cs[('arkcos', 'enhanced', 1e-6)]
assert a['id'].endswith('precision=double accuracy=1e-06 threads=1'), a['id']
assert d['cases'][0] is a, 'the reference (named by its label) runs first'
assert a['metrics']['reference'] == 'arkcos-auto-enhanced-double-a1e-06', a['metrics']
assert isinstance(a['bound'], float) and 0 <= a['bound'] <= 1e-6, a['bound']
e = cs[('arkcos', 'enhanced', 0)]
assert 'accuracy' not in e['id'], e['id']
assert isinstance(e['bound'], float) and math.isfinite(e['bound']) and e['bound'] >= 0, e['bound']
p = cs[('arkcos', 'paper', 0)]
assert 'bound' in p and (p['bound'] is None or p['bound'] >= 0), p.get('bound')
assert 'bound' not in cs[('direct', None, None)]
labels = [r['method'] for r in csv.DictReader(open('acc/summary.csv'))]
assert labels == ['arkcos-auto-enhanced-double-a1e-06', 'direct', 'arkcos-auto-enhanced-double',
                  'arkcos-auto-paper-double'], labels
"

# ------------------------------------------------------------ oversample
# "oversample" has no effect since the polar caps are summed exactly: still
# accepted, with one warning per run (a resumed run too); in no new id,
# label or method object, and methods that differed only by it run once. A
# results file written before, whose ids and labels name it, is still read
# by compare and report.
cat > os.json <<'EOF'
{"repeats": 1, "warmup": 0, "threads": 1, "grid": {"nside": [8]},
 "kernels": [{"type": "tophat", "cutoff_deg": 12.1}],
 "methods": [{"name": "arkcos", "oversample": 1}, {"name": "arkcos", "oversample": 2},
             {"name": "arkcos", "mode": "paper", "oversample": 0}]}
EOF
"$ARKCOS" run os.json --out os >os.out 2>os.err
rc=$?
"$ARKCOS" run os.json --out os --resume >os2.out 2>os2.err
rc2=$?
check "oversample: accepted with one warning, in no id, label or method object" "$PY" -c "
import csv, json
assert $rc == 0 and $rc2 == 0, ($rc, $rc2, open('os.err').read())
for f in ('os.err', 'os2.err'):
    err = open(f).read()
    assert err.count('oversample has no effect') == 1, err
d = json.load(open('os/results.json'))
assert len(d['cases']) == 2, [c['id'] for c in d['cases']]
for c in d['cases']:
    assert 'oversample' not in c['id'] and 'oversample' not in c['method'], c
labels = [r['method'] for r in csv.DictReader(open('os/summary.csv'))]
assert labels == ['arkcos-auto-enhanced-double', 'arkcos-auto-paper-double'], labels
q = json.loads(json.dumps(d['cases'][0]))
q['id'] = q['id'].replace('precision=double', 'precision=double oversample=2')
q['method']['oversample'] = 2
d['cases'].append(q)
json.dump(d, open('os_old.json', 'w'))
"
"$ARKCOS" compare os_old.json os/results.json >oscmp.out 2>&1
rc=$?
"$ARKCOS" report os_old.json -o osrep >osrep.out 2>&1
rc2=$?
check "oversample: older results naming it are read by compare and report" "$PY" -c "
assert $rc == 0 and $rc2 == 0, ($rc, $rc2)
out = open('oscmp.out').read()
assert '2 cases in common' in out and '1 cases only in the baseline' in out, out
assert 'oversample=2' in open('osrep/report.md').read()
"

# ------------------------------------------------------------ skips and failures
printf 'not a FITS file\n' > weights.fits
cat > skips.json <<'EOF'
{"repeats": 1, "warmup": 0, "threads": 1,
 "grid": {"nside": [8, 16]},
 "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}],
 "methods": [{"name": "direct"}, {"name": "arkcos"}, {"name": "arkcos", "backend": "gpu"},
             {"name": "fsht", "ring_weights": "weights.fits"}],
 "limits": {"direct_max_evals": 100000}}
EOF
"$ARKCOS" run skips.json --out skips >skips.out 2>skips.err
rc=$?
if [ $rc -eq 1 ]; then ok "a failed case gives exit 1"; else bad "a failed case gives exit 1" "exit $rc" "$(cat skips.err)"; fi
check "skip and failure reasons" "$PY" -c "
import json
cs = {(c['nside'], c['method']['name'], c['method'].get('backend')): c for c in json.load(open('skips/results.json'))['cases']}
assert len(cs) == 8
d8, d16 = cs[(8, 'direct', None)], cs[(16, 'direct', None)]
assert d8['status'] == 'ok', d8
assert d16['status'] == 'skipped' and 'direct_max_evals' in d16['reason'], d16
a16 = cs[(16, 'arkcos', 'auto')]
assert a16['status'] == 'ok' and 'unavailable' in a16['metrics'] and 'frac_rms' not in a16['metrics'], a16
assert 'frac_rms' in cs[(8, 'arkcos', 'auto')]['metrics']
g = cs[(8, 'arkcos', 'gpu')]
assert g['status'] == ('ok' if $GPU_PRESENT else 'skipped'), g
f = cs[(8, 'fsht', None)]
assert f['status'] == 'failed' and 'weights.fits' in f['reason'], f
"
cat > mem.json <<'EOF'
{"repeats": 1, "warmup": 0, "threads": 1, "grid": {"nside": [8, 64]},
 "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}],
 "methods": [{"name": "arkcos"}], "limits": {"memory_bytes": 2e6}}
EOF
"$ARKCOS" run mem.json --out mem >/dev/null 2>&1
check "cases over the memory limit are skipped" "$PY" -c "
import json
cs = {c['nside']: c for c in json.load(open('mem/results.json'))['cases']}
assert cs[8]['status'] == 'ok', cs[8]
assert cs[64]['status'] == 'skipped' and 'memory' in cs[64]['reason'], cs[64]
"

# FITS input: a map written by healpy (NESTED); other nsides skipped
if "$PY" -c 'import healpy' 2>/dev/null; then
  "$PY" -c "
import healpy as hp, numpy as np
np.random.seed(3)
hp.write_map('in16.fits', np.random.standard_normal(12 * 16 * 16), nest=True, overwrite=True)
" 2>/dev/null
  cat > fits.json <<'EOF'
{"repeats": 1, "warmup": 0, "threads": 1, "grid": {"nside": [16, 8]},
 "input": {"type": "fits", "path": "in16.fits"},
 "kernels": [{"type": "tophat", "cutoff_deg": 12.1}],
 "methods": [{"name": "direct"}, {"name": "arkcos"}]}
EOF
  "$ARKCOS" run fits.json --out fits >/dev/null 2>&1
  check "FITS input: matching nside runs, others are skipped" "$PY" -c "
import json
cs = {(c['nside'], c['method']['name']): c for c in json.load(open('fits/results.json'))['cases']}
assert cs[(16, 'direct')]['status'] == 'ok' and cs[(16, 'arkcos')]['status'] == 'ok'
assert 0 < cs[(16, 'arkcos')]['metrics']['frac_rms'] < 0.5, cs[(16, 'arkcos')]['metrics']
for m in ('direct', 'arkcos'):
    c = cs[(8, m)]
    assert c['status'] == 'skipped' and 'nside 16' in c['reason'], c
"
fi

# point sources: ringing metrics; the direct sum has none by construction
cat > ps.json <<'EOF'
{"repeats": 1, "warmup": 0, "threads": 2, "grid": {"nside": [16]},
 "input": {"type": "point_sources", "sources": [[10, 30, 1], [90, 100, 1], [170, 200, 2]]},
 "kernels": [{"type": "gaussian", "fwhm_arcmin": 300, "cutoff_deg": 9.9}],
 "methods": [{"name": "direct"}, {"name": "fsht"}, {"name": "arkcos"}],
 "reference": "exact_is_not_allowed_here"}
EOF
expect_exit "reference naming no method -> 2 listing the methods" 2 'reference: .* is none of the methods \(direct, fsht-iter3, arkcos-auto-enhanced-double\)' "$ARKCOS" run ps.json --out ps
sed -i 's/"reference": "exact_is_not_allowed_here"/"reference": "fsht-iter3"/' ps.json
"$ARKCOS" run ps.json --out ps >/dev/null 2>&1
check "point sources: ringing metrics, reference by label" "$PY" -c "
import json
d = json.load(open('ps/results.json'))
cs = {c['method']['name']: c for c in d['cases']}
assert d['cases'][0]['method']['name'] == 'fsht', 'reference first'
for n, c in cs.items():
    m = c['metrics']
    assert m['reference'] == 'fsht-iter3' and 'ringing_belt' in m and 'ringing_cap' in m, (n, m)
    assert 'truncation_rms_eq7' not in m
assert cs['direct']['metrics']['ringing_belt'] == 0 and cs['direct']['metrics']['ringing_cap'] == 0
assert cs['fsht']['metrics']['frac_rms'] == 0
"

# ------------------------------------------------------------ one option table
# The same key takes the same range everywhere: "iter" 0..1000 in a method
# and in outputs.spectra_iter (as `arkcos smooth --iter` and compare-maps).
printf '{%s, "methods": [{"name": "fsht", "iter": 1000}], "outputs": {"spectra_iter": 1000}}\n' \
  '"grid": {"nside": [8]}, "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}]' > it1000.json
sed 's/"iter": 1000/"iter": 1001/; s/"spectra_iter": 1000/"spectra_iter": 1001/' it1000.json > it1001.json
expect_exit "iter 1001 -> 2 naming both paths" 2 'methods\[0\]\.iter: must be <= 1000' "$ARKCOS" run it1001.json --out it1
grep -q 'outputs\.spectra_iter: must be <= 1000' "$T/err.txt" && ok "spectra_iter 1001 -> 2 with path" ||
  bad "spectra_iter 1001 -> 2 with path" "$(cat "$T/err.txt")"
# the backend's default is "auto" as on the command line (`arkcos smooth`):
# the GPU when one is usable, else the CPU, which a machine without a GPU
# runs; the case records which ran
cat > auto.json <<'EOF'
{"repeats": 1, "warmup": 0, "threads": 1, "grid": {"nside": [8]},
 "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}], "methods": [{"name": "arkcos"}]}
EOF
"$ARKCOS" run auto.json --out auto >/dev/null 2>auto.err
check "backend default auto: runs, id and backend_used say what ran" "$PY" -c "
import json
c = json.load(open('auto/results.json'))['cases'][0]
assert c['status'] == 'ok' and c['method']['backend'] == 'auto' and 'backend=auto' in c['id'], c
assert c['backend_used'] == ('gpu' if $GPU_PRESENT else 'cpu'), c['backend_used']
"

# ------------------------------------------------------------ extends
# A config extends another: objects merged key by key, other values
# replaced, null removes a key; relative paths resolve against the folder
# of the config that is run; the merged document is what results.json
# records and what --resume compares.
mkdir -p ext/base ext/p
printf '1 1\n' > ext/p/cl.txt
cat > ext/base/b.json <<'EOF'
{"repeats": 2, "warmup": 0, "threads": 1,
 "input": {"type": "random", "seed": 5, "cl_file": "cl.txt"},
 "kernels": [{"type": "gaussian", "fwhm_arcmin": 600, "cutoff_deg": 15.3}],
 "methods": [{"name": "direct"}, {"name": "fsht", "iter": 0}],
 "reference": "direct", "outputs": {"maps": true}}
EOF
cat > ext/p/run.json <<'EOF'
{"extends": "../base/b.json", "name": "ext-p", "repeats": 1, "grid": {"nside": [8]},
 "input": {"seed": 7}, "outputs": null}
EOF
"$ARKCOS" run ext/p/run.json --out extout >ext.out 2>ext.err
rc=$?
check "extends: merged config runs and is recorded merged" "$PY" -c "
import json
assert $rc == 0, open('ext.err').read()
d = json.load(open('extout/results.json'))
g = d['meta']['config']
assert 'extends' not in g, g
assert g['input'] == {'type': 'random', 'seed': 7, 'cl_file': 'cl.txt'}, g['input']
assert g['repeats'] == 1 and g['grid'] == {'nside': [8]} and 'outputs' not in g, g
assert len(d['cases']) == 2 and all(len(c['time']['samples']) == 1 for c in d['cases'])
assert not any('map' in c.get('outputs', {}) for c in d['cases']), 'outputs: null removed the maps'
"
"$ARKCOS" run ext/p/run.json --out extout --resume >/dev/null 2>ext2.err &&
  ok "extends: --resume of the same config" || bad "extends: --resume of the same config" "$(cat ext2.err)"
sed -i 's/"seed": 7/"seed": 8/' ext/p/run.json
expect_exit "extends: --resume after a change -> 2 naming the path" 2 'input\.seed' "$ARKCOS" run ext/p/run.json --out extout --resume
printf '{"extends": "nope.json", "grid": {"nside": [8]}}\n' > ext/p/missing.json
expect_exit "extends: missing base -> 2 naming both files" 2 'missing\.json: extends: .*nope\.json' "$ARKCOS" run ext/p/missing.json --out e30
printf '{"extends": "loop.json"}\n' > ext/p/loop.json
expect_exit "extends: a loop -> 2" 2 'loop\.json: extends: .*more than 8' "$ARKCOS" run ext/p/loop.json --out e31
printf '{"extends": 3}\n' > ext/p/num.json
expect_exit "extends: not a file name -> 2" 2 'num\.json: extends: must be the name of a config file' "$ARKCOS" run ext/p/num.json --out e32
printf '{"repeats": 1,,}\n' > ext/base/bad.json
printf '{"extends": "../base/bad.json"}\n' > ext/p/badbase.json
expect_exit "extends: malformed base -> 2 with its line and column" 2 'badbase\.json: extends: .*bad\.json:1:[0-9]+: malformed JSON' "$ARKCOS" run ext/p/badbase.json --out e33
printf '{"extends": "../base/b.json", "grid": {"nside": [8]}, "methods": [{"name": "fsht", "iter": -1}]}\n' > ext/p/badval.json
expect_exit "extends: a bad value -> 2 with the JSON path" 2 'badval\.json: methods\[0\]\.iter: must be >= 0' "$ARKCOS" run ext/p/badval.json --out e34
# the shipped profiles: a base is shared by the three profiles and is no sweep by itself
for f in "$ROOT"/configs/base/*.json; do
  expect_exit "configs/base/$(basename "$f") alone -> 2 (no grid)" 2 'grid: required' "$ARKCOS" run "$f" --out "e_$(basename "$f")"
done

echo "TESTS $passed $failed"
[ "$failed" -eq 0 ]
