#!/usr/bin/env bash
# make bench: ARKCoS CPU vs libsharp FSHT, one run, same threads. Reports only.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${BUILD:-build}/tests/bench" --threads "${THREADS:-2}" "$@"
