#!/usr/bin/env bash
# make bench: ARKCoS CPU vs libsharp FSHT, one run, same threads. Reports only.
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
bin="${BUILD:-build}/tools/bench"
"$bin" --threads "${THREADS:-2}" --nside "${NSIDES:-512,1024,2048}" "$@"
"$bin" --threads "${THREADS:-2}" --nside "${TOPHAT_NSIDES:-1024,2048}" --tophat-px 10 --no-cache
"$bin" --threads "${THREADS:-2}" --support-sweep "${SWEEP_NSIDE:-1024}"
"$bin" --threads "${THREADS:-2}" --nside "${SPIN2_NSIDES:-1024,2048}" --spin2
