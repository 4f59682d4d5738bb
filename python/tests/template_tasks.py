"""Tasks for test_popen_pool_template.py, run in workers forked from the worker template."""

import os
import sys
import threading
import time


def facts():
    """Where this worker stands: its parent, its process group, what it has imported."""
    return {"pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0),
            "modules": sorted(m for m in sys.modules if m.endswith("_import_tasks")),
            "env": dict(os.environ)}


def import_late():
    """Imports a module while it runs (what the template learns from the answer)."""
    import late_import_tasks  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import

    return os.getpid()


def sleep_for(seconds):
    time.sleep(seconds)
    return seconds


def exit_now(code):
    os._exit(code)  # pylint: disable=protected-access


def mark_initialized(path):
    with open(path, "a", encoding="utf-8") as file:
        file.write(f"{os.getpid()}\n")


def thread_count():
    return threading.active_count()


def import_slowly():
    """Imports rebuild_import_tasks (3 s) while it runs: the template learns it from the answer."""
    import rebuild_import_tasks  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import

    return os.getpid()


def numpy_draw():
    """A draw of numpy's global RandomState, and who drew it."""
    import numpy  # pylint: disable=import-outside-toplevel

    return os.getpid(), float(numpy.random.random())
