#!/usr/bin/env bash
# make fuzz: runs each libFuzzer target (tests/fuzz/fuzz_<target>.c, built in
# $FUZZ_BUILD/fuzz by the Makefile) for $FUZZ_SECONDS seconds, one after the
# other, starting from the committed seeds (tests/fuzz/corpus/<target>) plus
# what earlier runs on this machine added ($FUZZ_BUILD/fuzz/corpus/<target>).
# Prints the executions of each target; a crash, a sanitizer report, a
# timeout or an out-of-memory leaves its input in
# $FUZZ_BUILD/fuzz/crashes/<target>/ and fails the run. Such an input belongs
# in tests/fuzz/regress/<target>/ once the reader is fixed (make test replays
# it through tests/test_fuzz_regress.c).
set -u
cd "$(dirname "$0")/.."
FUZZ_BUILD="${FUZZ_BUILD:-build-fuzz}"
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(config fits kernel beam results)
dir="$FUZZ_BUILD/fuzz"
# UBSan findings are crashes too; leaks fail as well (LeakSanitizer runs at
# the end of the run and after each input that grew memory). An allocation
# too large for the machine returns NULL, as it does without the sanitizer:
# CFITSIO asks for what a garbled header claims (calloc of 16 GB for the
# columns of one mutated table, never touched) and copes with NULL.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# max_allocation_size_mb: a garbled header can make CFITSIO calloc what it
# claims (gigabytes); fresh from mmap that memory is never touched, but once
# the allocator reuses freed chunks (after thousands of inputs) its calloc
# clears them and the process's RSS jumps past -rss_limit_mb (seen once: 3.4
# GB at input 13009 of the FITS target; the same input alone peaks at 41
# MB). Above 2 GB the allocation returns NULL, which CFITSIO reports.
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=2048"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
# the targets' scratch files in a folder of this run, removed at the end: a
# target that stops inside an entry (a crash, a timeout, a kill) does not
# reach its unlink, and arkcos-fuzz-<pid>.* files were found left in /tmp
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/arkcos-fuzz-XXXXXX") || exit 2
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
failed=()
for t in "${targets[@]}"; do
  bin="$dir/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz: no $bin (make fuzz builds it)"; exit 2; }
  work="$dir/corpus/$t"; crashes="$dir/crashes/$t"; log="$dir/fuzz_$t.log"
  mkdir -p "$work" "$crashes"
  # FITS seeds are 8640 to 20160 bytes (FITS blocks are 2880); text
  # readers get 8 KiB inputs. -timeout 10: any input slower than 10 s is a
  # hang. -rss_limit_mb 3072: memory a reader really uses for a small file
  # is a finding; -malloc_limit_mb 65536: one allocation above 64 GB too,
  # while CFITSIO's untouched calloc of what a header claims is not.
  maxlen=8192; [ "$t" = fits ] && maxlen=24576; [ "$t" = beam ] && maxlen=12288
  "$bin" -max_total_time="$FUZZ_SECONDS" -max_len="$maxlen" -timeout=10 -rss_limit_mb=3072 -malloc_limit_mb=65536 \
    -print_final_stats=1 -artifact_prefix="$crashes/" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
  ncr=$(find "$crashes" -type f | wc -l)
  printf 'fuzz %-8s %8s executions in %s s, coverage %s, corpus %s files, exit %d, %d crash files\n' \
    "$t" "${execs:-?}" "$FUZZ_SECONDS" "${cov:-?}" "$(find "$work" -type f | wc -l)" "$rc" "$ncr"
  if [ "$rc" -ne 0 ] || [ "$ncr" -gt 0 ]; then
    failed+=("$t")
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -20
    # what came before the finding: a "deadly signal" (abort, SIGILL) has no
    # sanitizer report of its own, its cause is in the lines above it (a
    # fortified library's "buffer overflow detected", an entry's "refused
    # an input without a message", an OpenMP runtime error) and its stack
    echo "fuzz $t: $(grep -m 1 'INFO: Seed' "$log") (-seed= replays the run); the log before the finding ($log):"
    grep -v -E '^#[0-9]+|^==[0-9]+==WARNING: AddressSanitizer failed to allocate' "$log" |
      grep -B 40 -A 30 -m 1 -E 'ERROR: libFuzzer|ERROR: AddressSanitizer|runtime error|ERROR: LeakSanitizer' | head -80
    # and the inputs themselves, which a fresh machine's run would lose:
    # gzip | base64 (FITS inputs of a few kB: mostly blanks and zeros);
    # `base64 -d | gunzip > crash.fits` restores one
    for f in "$crashes"/*; do
      [ -f "$f" ] || continue
      echo "fuzz $t: input $(basename "$f") ($(wc -c <"$f") bytes), gzip | base64:"
      gzip -9c "$f" | base64 -w 0 | head -c 20000
      echo
    done
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]} (logs and inputs in $dir)"; exit 1
fi
echo "fuzz: no findings"
