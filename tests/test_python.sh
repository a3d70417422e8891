#!/usr/bin/env bash
# test_python.sh -- the Python package: `pip install ./python` into a fresh
# virtual environment (system site packages: Debian's numpy and healpy, no
# network), then tests/python_check.py with that environment's Python:
# ctypes layouts against the C compiler's, results equal to `arkcos smooth`
# bit for bit (RING, NESTED, float32, UNSEEN, +-inf, masked arrays, I Q U,
# Q U with pol="QU", mask=, mask_mode=, return_weight=, Plan reuse, threads),
# the GIL released, no copies, errors as ValueError, and the agreement with
# healpy.smoothing. Last line: "TESTS <passed> <failed>".
set -u
cd "$(dirname "$0")/.."
. tests/cli_lib.sh python
BUILD="${BUILD:-build}"
export BUILD

if ! "$PYTHON" -c 'import venv, ensurepip, numpy' 2>/dev/null; then
  echo "SKIP $PYTHON lacks venv, ensurepip or numpy (python3-venv, python3-numpy)"
  echo "TESTS 0 0"; exit 0
fi
"$PYTHON" -m venv --system-site-packages "$T/venv" >"$T/venv.log" 2>&1 ||
  { bad "venv: $(cat "$T/venv.log")"; echo "TESTS $pass $fail"; exit 1; }
# the README's command; --no-build-isolation: setuptools from the system,
# --no-index: numpy is there already
if ! "$T/venv/bin/pip" install --no-index --no-build-isolation ./python >"$T/pip.log" 2>&1; then
  bad "pip install ./python failed"; tail -30 "$T/pip.log"; echo "TESTS $pass $fail"; exit 1
fi
ok
site=$("$T/venv/bin/python" -c 'import arkcos, os; print(os.path.dirname(arkcos.__file__))')
case $site in "$T"/venv/*) ok ;; *) bad "arkcos imported from $site, not the venv" ;; esac
[ -f "$site/libarkcos.so.1" ] && ok || bad "libarkcos.so.1 not bundled in $site"
"$T/venv/bin/python" -c 'import arkcos; arkcos.Plan(8, fwhm=0.6)' >"$T/import.log" 2>&1 && ok ||
  bad "a plan from the installed package: $(cat "$T/import.log")"

"${CC:-cc}" -I. -o "$T/abi" tests/python_abi.c && "$T/abi" >"$T/abi.txt" || bad "tests/python_abi.c"
# one FFTW wisdom for arkcos smooth and the package: the same FFT plans
export ARKCOS_FFTW_WISDOM=$T/wisdom
mkdir -p "$T/work"
"$T/venv/bin/python" tests/python_check.py "$ARKCOS" "$T/work" "$T/abi.txt" >"$T/check.out" \
  2>"$T/check.err"
rc=$?
grep -v '^TESTS ' "$T/check.out"
line=$(grep -E '^TESTS [0-9]+ [0-9]+$' "$T/check.out" | tail -1)
if [ -n "$line" ]; then
  set -- $line
  pass=$((pass + $2)); fail=$((fail + $3))
fi
[ $rc -eq 0 ] && [ -n "$line" ] || { bad "python_check.py exit $rc"; grep -v Warning "$T/check.err" | tail -20; }
echo "TESTS $pass $fail"
