"""A module that takes half a second to import, for the test that a call's timeout does not
count the worker's unpickling of its function (which imports this module)."""

import time

time.sleep(0.5)


def answer():
    """42, once the module is imported."""
    return 42
