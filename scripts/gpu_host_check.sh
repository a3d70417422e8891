#!/usr/bin/env bash
# gpu_host_check.sh -- everything a GPU host measures, in one run of about
# 5 minutes (H100: see README, "GPU"), written to results/gpu/<host>-<date>/:
#   gpucheck.log  `make gpucheck`'s groups (GPU against the CPU backend and
#                 the direct sum, repeats, chunking, errors, pinned maps)
#   bench.log     gpu_check bench: nside 1024, 2048, 4096 in double and
#                 single, pageable and pinned maps, all host threads and one,
#                 plan stages, device memory, the copy floor; then nside 8192
#                 double when time is left
#   headline/     arkcos run configs/paper/headline.json (the paper profile's
#                 headline: GPU, CPU and FSHT at nside 2048, 1 and all threads)
#   fig2/         arkcos run configs/gpu/fig2.json (GPU Fig. 2 sweep; its
#                 last two cases, nside 2048 with a 16-degree support, take
#                 the oversampled Fourier path in the caps: on the H100 their
#                 cuFFT plans for every cap-ring length took 77-131 s, past
#                 the step's 100 s, and `arkcos run ... --resume` finished
#                 them; those rings are direct DFTs now, not yet timed)
#   report/       arkcos report of headline/results.json beside a CPU
#                 machine's results file, when one is given (CPU_RESULTS)
#   python_cpu.*  scripts/cpu_host_check.py: the CPU's one call and execute
#                 on 2 threads beside ducc0, when python3 imports ducc0
#   host.txt      the device, the driver, the CPU and the build
#
# Usage, from the project root:
#   bash scripts/gpu_host_check.sh [OUTDIR]
# with binaries from a packed build (../shared/gpu-host/pack.sh makes
# .gpu-host/; this script sources its env.sh) or else from $BUILD (build/).
# Environment: HOST_NAME names the folder (default: hostname -s),
# CPU_RESULTS a CPU machine's headline results.json for the report,
# CHECK_SECONDS the time after which the optional steps are skipped (300).
# Each step is line-buffered (a step killed at its time limit keeps its
# output) and has its own limit; the script's exit status is the number of
# steps that failed.
set -u
cd "$(dirname "$0")/.."
if [ -f .gpu-host/env.sh ]; then
  # shellcheck disable=SC1091
  source .gpu-host/env.sh
  BIN=$B
  TOOLS=$B/tools
  RUN=(env "LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
else
  BIN=${BUILD:-build}
  TOOLS=$BIN/tools
  RUN=(env)
fi
host=${HOST_NAME:-$(hostname -s 2>/dev/null || echo host)}
out=${1:-results/gpu/$host-$(date -u +%F)}
mkdir -p "$out"
for f in gpucheck bench headline fig2 report; do : >"$out/$f.log"; done
budget=${CHECK_SECONDS:-300}
t0=$(date +%s)
fails=0
elapsed() { echo $(($(date +%s) - t0)); }
# step NAME LIMIT LOG CMD...: run CMD under a time limit, output appended to LOG
step() {
  local name=$1 limit=$2 log=$3
  shift 3
  echo "[t=$(elapsed)s] $name" | tee -a "$log"
  timeout "$limit" stdbuf -oL -eL "${RUN[@]}" "$@" >>"$log" 2>&1
  local rc=$?
  echo "[t=$(elapsed)s] $name: rc=$rc" | tee -a "$log"
  [ "$rc" -eq 0 ] || fails=$((fails + 1))
}

{
  echo "date $(date -u +%FT%TZ)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1
  echo "cores $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
  grep PRETTY_NAME /etc/os-release 2>/dev/null
  "${RUN[@]}" "$BIN/arkcos" --version 2>&1
} >"$out/host.txt"
cat "$out/host.txt"

for g in device gpu_vs_cpu gpu_vs_direct repeatable chunking errors pinned nside1024; do
  step "gpu_check $g" 120 "$out/gpucheck.log" "$TOOLS/gpu_check" "$g"
done
grep -E "^ok|^FAIL|TESTS" "$out/gpucheck.log" | sort | uniq -c | sort -rn | head -20
step "gpu_check bench" 200 "$out/bench.log" "$TOOLS/gpu_check" bench
step "arkcos run headline (paper profile)" 150 "$out/headline.log" \
  "$BIN/arkcos" run configs/paper/headline.json --out "$out/headline" --force
step "arkcos run gpu fig2" 100 "$out/fig2.log" "$BIN/arkcos" run configs/gpu/fig2.json --out "$out/fig2" --force
if [ -n "${CPU_RESULTS:-}" ] && [ -f "$out/headline/results.json" ]; then
  step "arkcos report" 60 "$out/report.log" \
    "$BIN/arkcos" report "$out/headline/results.json" "$CPU_RESULTS" -o "$out/report" --force
fi
# the CPU's one call and execute on 2 threads beside ducc0 (healpy's
# transforms), where ducc0 can be imported (carried as a wheel: PYTHONPATH)
if python3 -c "import ducc0, numpy" 2>/dev/null; then
  step "cpu_host_check (2 threads)" 150 "$out/python_cpu.log" env PYTHONPATH="python${PYTHONPATH:+:$PYTHONPATH}" \
    ARKCOS_PYTHON_LIBRARY="$(cd "$BIN" && pwd)/libarkcos.so.1" PYTHONUNBUFFERED=1 \
    python3 scripts/cpu_host_check.py --nsides 1024,2048 --threads 2 --json "$out/python_cpu.json"
fi
if [ "$(elapsed)" -lt "$budget" ]; then
  step "gpu_check nside8192" 120 "$out/bench.log" "$TOOLS/gpu_check" nside8192
else
  echo "[t=$(elapsed)s] nside 8192 skipped: past CHECK_SECONDS=$budget" | tee -a "$out/bench.log"
fi
echo "[t=$(elapsed)s] done: $fails step(s) failed -> $out"
exit "$fails"
