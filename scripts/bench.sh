#!/usr/bin/env bash
# make bench: ARKCoS CPU vs healpy, ducc0 and libsharp FSHT, one run, same threads. Reports only.
#   1. the 4.7'-at-nside-2048 beam (same pixels per FWHM at every nside),
#      nside 512, 1024, 2048: times, ratios to FSHT iter 0 and 3, stage
#      shares, memory, per-map time with cached kernel spectra;
#   2. a top-hat of 10 pixels' radius at nside 1024 and 2048 (TOPHAT_NSIDES);
#   3. time against kernel support at nside 1024: slope and crossover;
#   4. polarization: Q and U through one spin-2 plan against one scalar map
#      and libsharp's spin-2 smoothing (SPIN2_NSIDES, default 1024,2048).
# Every table has the default (exact) plan and one with --accuracy 1e-5.
# THREADS (default 2) and NSIDES (default 512,1024,2048) override.
set -euo pipefail
cd "$(dirname "$0")/.."
# 0. one call (plan + execute, a new process) of `arkcos smooth` beside
#    healpy.smoothing (iter 0 at lmax 2 nside, and its default) and ducc0
#    (pip, in a virtual environment made here; left out if pip cannot get
#    it), Gaussians 1.5 px to 2 deg, top-hats, I Q U (scripts/onecall.py).
#    ONECALL_NSIDES (default 256,512,1024); ONECALL=0 skips it.
venv="${BUILD:-build}/bench-venv"
py=/usr/bin/python3
if [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv" >/dev/null 2>&1; then
  "$venv/bin/python" -c "import ducc0" 2>/dev/null || "$venv/bin/pip" install -q ducc0 >/dev/null 2>&1 ||
    echo "bench: ducc0 could not be installed (pip); its columns stay empty"
  py="$venv/bin/python"
fi
if [ "${ONECALL:-1}" != 0 ]; then
  "$py" scripts/onecall.py --arkcos "${BUILD:-build}/arkcos" --threads "${THREADS:-2}" \
    --nsides "${ONECALL_NSIDES:-256,512,1024}" --json "${BUILD:-build}/onecall.json"
fi
bin="${BUILD:-build}/tools/bench"
"$bin" --threads "${THREADS:-2}" --nside "${NSIDES:-512,1024,2048}" "$@"
"$bin" --threads "${THREADS:-2}" --nside "${TOPHAT_NSIDES:-1024,2048}" --tophat-px 10 --no-cache
# the support sweep beside ducc0's iter 0 (its time does not depend on the kernel)
if "$py" -c "import ducc0, healpy" 2>/dev/null; then
  "$bin" --threads "${THREADS:-2}" --support-sweep "${SWEEP_NSIDE:-1024}" |
    "$py" scripts/support_ducc0.py --nside "${SWEEP_NSIDE:-1024}" --threads "${THREADS:-2}"
else
  "$bin" --threads "${THREADS:-2}" --support-sweep "${SWEEP_NSIDE:-1024}"
fi
"$bin" --threads "${THREADS:-2}" --nside "${SPIN2_NSIDES:-1024,2048}" --spin2
