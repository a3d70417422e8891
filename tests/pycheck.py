"""The Python tests' checks: counters, one line per measured value, and the
closing "TESTS <passed> <failed>" line that tests/run.sh reads."""

passed = failed = 0


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
