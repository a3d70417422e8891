#!/usr/bin/env bash
# make sanitize: the tests of tests/run.sh on the build in $BUILD (built by
# the Makefile with AddressSanitizer and UBSan), minus the slow ones below,
# with every sanitizer report written to $BUILD/san-logs. Fails when a test
# fails or when any report was written: a report inside a command a test
# expects to fail (exit 1 or 2) would otherwise pass unnoticed.
set -u
cd "$(dirname "$0")/.."
BUILD="${BUILD:-build-san}"
logs="$PWD/$BUILD/san-logs"
rm -rf "$logs"; mkdir -p "$logs"
# Reports go to files named report.<pid>; UBSan stops the program at the
# first finding. Leaks are findings (detect_leaks=1); tests/lsan.supp would
# list a library's one-time allocations that are not ours to free. An
# allocation too large for the machine returns NULL, as it does without the
# sanitizer: CFITSIO asks for what a garbled header claims (16 GB for one
# input of tests/fuzz/regress) and copes with NULL.
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:log_path=$logs/report:strict_string_checks=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/report"
# The slow tier, left to make test: the reproduce pipeline (66 s at -O3,
# 462 s under the sanitizers on a shared 2-core machine; its sweeps run the
# same code as test_harness.sh) and the host emulation of the GPU kernels
# (38 s, 126 s; C++ over the CPU backend that test_engine covers).
# TESTS_SKIP="" runs everything (2509 checks, no report, 21 min there).
# Three tests build their own programs with the plain flags and cannot run on
# a sanitized build: test_install.sh (make install links bin/arkcos again),
# test_python.sh (an uninstrumented python3 cannot load a sanitized
# libarkcos.so) and test_mpi.sh (make mpi links with mpicc); make test runs them.
TESTS_SKIP="${TESTS_SKIP-test_gpu_emul test_reproduce_ci.sh test_install.sh test_python.sh test_mpi.sh}"
export TESTS_SKIP
BUILD="$BUILD" bash tests/run.sh
rc=$?
# A finding is an ERROR (ASan, LeakSanitizer) or a runtime error (UBSan);
# the sanitizer's warnings (such as a failed allocation that returned NULL)
# are shown but do not fail.
shopt -s nullglob
reports=(); warnings=()
for r in "$logs"/report.*; do
  if grep -qE 'ERROR: |runtime error:' "$r"; then reports+=("$r"); else warnings+=("$r"); fi
done
for r in "${warnings[@]}"; do echo "sanitize: warning ($r): $(head -1 "$r")"; done
if [ "${#reports[@]}" -gt 0 ]; then
  echo "sanitize: ${#reports[@]} sanitizer report(s) in $logs:"
  for r in "${reports[@]}"; do
    echo "== $r"; head -40 "$r"
  done
  exit 1
fi
[ "$rc" -eq 0 ] || { echo "sanitize: tests failed"; exit 1; }
echo "sanitize: no sanitizer reports"
