"""Tasks that python_popen_bench.py sends to kiln's and TVM's popen workers.

They live in a module of their own, imported by name in both the bench and the workers (the bench
puts this directory on the workers' PYTHONPATH), so that cloudpickle sends them by reference and
the same bytes reach both pools. Each imports nothing a fresh interpreter has not already loaded.
"""

import os
import time


def identity(value):
    """Returns its argument: the trivial task of every round-trip figure."""
    return value


def sleep(seconds):
    """Sleeps far past the timeout under test; the pool kills the worker before it returns."""
    time.sleep(seconds)
    return seconds


def crash():
    """Ends the worker process at once, as a segfaulting extension would, without any answer."""
    os._exit(3)


def import_tvm_and_intrinsics():
    """An initializer as MetaSchedule's workers need: tvm and its tensor intrinsics."""
    import tvm  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    import tvm.s_tir.tensor_intrin  # noqa: F401  pylint: disable=import-outside-toplevel
