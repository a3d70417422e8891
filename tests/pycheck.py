"""The Python tests' checks: counters, one line per measured value, and the
closing "TESTS <passed> <failed>" line that tests/run.sh reads."""

import sys

passed = failed = 0


def healpy_or_skip():
    """healpy, or the skip line and "TESTS 0 0" and exit 0 where it cannot
    be imported (a test that compares with healpy has nothing to run)."""
    try:
        import healpy
    except ImportError:
        print(f"SKIP healpy is not importable with {sys.executable}")
        print("TESTS 0 0")
        sys.exit(0)
    return healpy


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL", what)


def check_le(what, value, bound):
    print(f"  {what:<66} {value:.3e} (bound {bound:.1e})")
    check(value <= bound, f"{what} = {value:.3e} exceeds {bound:.1e}")


def check_ge(what, value, bound):
    print(f"  {what:<66} {value:.3e} (at least {bound:.1e})")
    check(value >= bound, f"{what} = {value:.3e} is below {bound:.1e}")


def report():
    """Prints the TESTS line; 1 if a check failed, else 0."""
    print(f"TESTS {passed} {failed}")
    return 1 if failed else 0
