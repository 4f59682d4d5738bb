"""A module whose process is slow to end, as one that imported TVM is (~40 ms on two busy cores):
it holds 256 MiB of memory it wrote to, which the kernel takes 50-130 ms to free when the process
exits. A task of this module that ends its process must still be reported as a crash under a
15 ms timeout, as TVM's own test does with tvm.testing.terminate_self (issue 27)."""

import os
import sys

BALLAST = b"\x01" * (256 << 20)


def exit_with(code):
    """sys.exit(code), as tvm.testing.terminate_self does."""
    sys.exit(code)


def os_exit_with(code):
    """os._exit(code): no exception, no cleanup."""
    os._exit(code)  # pylint: disable=protected-access


def interrupt():
    """Raise KeyboardInterrupt, which also ends a worker."""
    raise KeyboardInterrupt
