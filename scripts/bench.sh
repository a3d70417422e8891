#!/usr/bin/env bash
# make bench: ARKCoS CPU vs libsharp FSHT, one run, same threads. Reports only.
#   1. the 4.7'-at-nside-2048 beam (same pixels per FWHM at every nside),
#      nside 512, 1024, 2048: times, ratios to FSHT iter 0 and 3, stage
#      shares, memory, per-map time with cached kernel spectra;
#   2. time against kernel support at nside 1024: slope and crossover.
# THREADS (default 2) and NSIDES (default 512,1024,2048) override.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${BUILD:-build}/tools/bench"
"$bin" --threads "${THREADS:-2}" --nside "${NSIDES:-512,1024,2048}" "$@"
"$bin" --threads "${THREADS:-2}" --support-sweep "${SWEEP_NSIDE:-1024}"
