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
