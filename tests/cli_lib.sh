# cli_lib.sh -- what the command-line test scripts share, sourced from the
# repository root as `. tests/cli_lib.sh NAME`: the binary and Python, the
# pass/fail counters with ok / bad / check_le, and a temporary folder $T
# (/tmp/arkcos-test-NAME-*) removed on exit. Stops the script with a failed
# TESTS line when there is no arkcos binary. Not a test itself.
ARKCOS="${ARKCOS:-$PWD/build/arkcos}"
PYTHON="${PYTHON:-/usr/bin/python3}"
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check_le() {  # NAME VALUE BOUND
  if "$PYTHON" -c "import sys; sys.exit(0 if float('$2') <= float('$3') else 1)" 2>/dev/null; then
    echo "  $1: $2 (bound $3)"; ok
  else bad "$1: $2 exceeds $3"; fi
}

T=$(mktemp -d "/tmp/arkcos-test-$1-XXXXXX")
trap 'rm -rf "$T"' EXIT

if [ ! -x "$ARKCOS" ]; then
  echo "FAIL no arkcos binary at $ARKCOS"; echo "TESTS 0 1"; exit 1
fi

# expect_refused NAME TEXT OUT ARGS...: `arkcos smooth ARGS` must exit 2 with
# TEXT (a fixed string) on stderr, leave OUT unwritten and no temporary file
# in $T; the refusal's first line is shown.
expect_refused() {
  local name=$1 text=$2 out=$3; shift 3
  rm -f "$out"
  "$ARKCOS" smooth "$@" >"$T/stdout" 2>"$T/stderr"
  local rc=$?
  if [ $rc -ne 2 ]; then bad "$name: exit $rc, expected 2 ($(cat "$T/stderr"))"; return; fi
  if ! grep -qF -- "$text" "$T/stderr"; then
    bad "$name: message does not name '$text': $(cat "$T/stderr")"; return
  fi
  if [ -e "$out" ]; then bad "$name: $out was written"; return; fi
  if [ -n "$(find "$T" -name '*.tmp-*' -print -quit)" ]; then
    bad "$name: temporary file left: $(find "$T" -name '*.tmp-*')"; return
  fi
  echo "  refused: $name: $(head -1 "$T/stderr")"
  ok
}
