"""The harness the browser tests share (chat_page_test.py, dashboard_test.py): named checks that
report one line each and go on after a failure, a time budget for the whole test, and the
closing "N passed, N failed" line with the exit status.

    from checks import check, remaining_ms, run
    run(main)      # runs main(), prints the totals, exits 1 when a check failed or none ran
"""

import sys
import time
import traceback

TEST_BUDGET_S = 170          # the whole test stays under 3 minutes
STARTED_AT = time.monotonic()

_counts = {"passed": 0, "failed": 0}


def check(name, fn, *args):
    """Runs one check; returns its result, or None when it failed."""
    try:
        result = fn(*args)
    except AssertionError as e:
        _counts["failed"] += 1
        print(f"FAIL {name}: {e}", flush=True)
        return None
    except Exception as e:
        _counts["failed"] += 1
        print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        traceback.print_exc(limit=4)
        return None
    _counts["passed"] += 1
    print(f"ok   {name}", flush=True)
    return result if result is not None else True


def remaining_ms(cap_ms):
    """cap_ms, or what is left of the test's budget when that is less."""
    left = (TEST_BUDGET_S - (time.monotonic() - STARTED_AT)) * 1000
    assert left > 1000, "out of time"
    return int(min(cap_ms, left))


def run(main):
    try:
        main()
    except Exception as e:
        _counts["failed"] += 1
        print(f"FAIL the test could not run: {type(e).__name__}: {e}", flush=True)
        traceback.print_exc(limit=4)
    print(f"took {time.monotonic() - STARTED_AT:.0f} s")
    print(f"{_counts['passed']} passed, {_counts['failed']} failed")
    sys.exit(1 if _counts["failed"] or not _counts["passed"] else 0)
