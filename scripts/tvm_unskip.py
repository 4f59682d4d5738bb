"""pytest plugin for scripts/tvm-own-tests.py --unskip: runs the TVM tests that TVM's markers
skip for reasons that do not hold here.

- "need rpc": the apache-tvm wheel's libinfo() lacks USE_RPC, though its RPC works.
- "Tuning test - launches runner": TVM's CI skips tests that start MetaSchedule's runners.
"""
REASONS = {"need rpc", "Tuning test - launches runner"}


def pytest_collection_modifyitems(items):
    for item in items:
        item.own_markers[:] = [mark for mark in item.own_markers if not _unskipped(mark)]


def _unskipped(mark):
    """Whether `mark` skips for one of REASONS (as skip or skipif, reason as arg or keyword)."""
    reason = mark.kwargs.get("reason", mark.args[0] if mark.name == "skip" and mark.args else None)
    return mark.name in ("skip", "skipif") and reason in REASONS
