#!/usr/bin/env bash
# make gpucheck: GPU backend against the CPU backend and the direct sum.
# Prints one skip line and exits 0 where there is no CUDA device.
set -u
cd "$(dirname "$0")/.."
exec "${BUILD:-build}/tools/gpu_check" "$@"
