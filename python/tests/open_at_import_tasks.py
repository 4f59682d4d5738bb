"""A module that opens files when it is imported, as ``logging.basicConfig(filename=...)`` does,
for test_popen_pool_template.py: the worker template imports it, and every worker forked from the
template must still have those files under the descriptors their objects hold, as a worker that
imported the module itself would. Where: the directory $KILN_TEST_OPEN_DIR, which holds `data`."""

import logging
import os

_DIR = os.environ["KILN_TEST_OPEN_DIR"]

logging.basicConfig(filename=os.path.join(_DIR, "log"), level=logging.INFO, format="%(message)s")
# A descriptor of its own, opened with os.open (no Python file object to notice a change).
DATA_FD = os.open(os.path.join(_DIR, "data"), os.O_RDONLY | os.O_CLOEXEC)
# Where the import put them, and which files they were.
LOG_FD = logging.getLogger().handlers[0].stream.fileno()
OPENED = {fd: (os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in (LOG_FD, DATA_FD)}


def log_line(number):
    """Logs a line; returns what this worker's descriptors from the import are now."""
    logging.info("task %d in %d", number, os.getpid())
    now = {fd: (os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in OPENED}
    return {"pid": os.getpid(), "opened": OPENED, "now": now, "data": os.pread(DATA_FD, 64, 0)}
