"""What the script tests that need torch share (tests/scripts/*_test.py).

    from checks import Checks, require_torch
    require_torch()          # exits 77, which ctest reports as skipped, where torch is absent
    check = Checks()
    check(condition, "what was expected")   # prints and keeps each failure
    check.finish("what was tested")         # one line, exit 1 on any failure
"""
import sys


def require_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: no torch in this Python (scripts/setup-torch.sh)")
        sys.exit(77)


class Checks:
    def __init__(self):
        self.failures = []

    def __call__(self, condition, what):
        if not condition:
            self.failures.append(what)
            print("FAILED:", what)

    def finish(self, what):
        print(f"{'FAILED' if self.failures else 'passed'}: {what}")
        sys.exit(1 if self.failures else 0)
