"""Tasks that attack the pool's own machinery, for test_popen_pool_faults.py (issue 27): they
close or replace the worker's answer pipe (its fd 4), leave a grandchild holding it, end the
worker in the middle of a task, and run pools inside forked children.

The worker imports this module by reference, like popen_tasks (the tests put python/tests/ on
the workers' PYTHONPATH). Nothing here imports TVM.
"""

import ctypes
import os
import sys
import time

# The worker's end of the answer pipe (kiln's protocol: requests on fd 3, answers on fd 4).
ANSWER_FD = 4


def close_answer_pipe(seconds):
    """Close the worker's answer pipe, then keep running: the worker is alive but mute."""
    os.close(ANSWER_FD)
    time.sleep(seconds)
    return "never read"


def dup2_over_answer_pipe():
    """Put /dev/null where the answer pipe was and return: the answer goes nowhere and the
    worker waits for its next request, alive, forever."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, ANSWER_FD)
    os.close(devnull)
    return "into the void"


def garble_answer_pipe():
    """Write what is no answer on the answer pipe (a frame of 5 bytes that are not CBOR), then
    keep running."""
    os.write(ANSWER_FD, b"\x05\x00\x00\x00\xff\xff\xff\xff\xff")
    time.sleep(60)


def exit_leaving_grandchild(pid_file, code):
    """Fork a grandchild that leaves the worker's process group (setsid) and holds the answer
    pipe open for 60 s, write its pid to `pid_file`, then end the worker with `code` through
    libc's _exit: no Python-level notice, only the process's death tells the parent."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        time.sleep(60)
        os._exit(0)  # pylint: disable=protected-access
    with open(pid_file, "w", encoding="utf-8") as out:
        out.write(str(pid))
    sys.stdout.flush()
    ctypes.CDLL(None)._exit(code)  # pylint: disable=protected-access


def big_result(size):
    """A result of `size` bytes."""
    return bytes(size)


def use_a_pool_here(module, value):
    """Make a PopenPoolExecutor and a PopenWorker of popen_pool `module` in this process and
    return what each computed for `value` (their results' own 60 s limits bound a hang)."""
    import importlib  # pylint: disable=import-outside-toplevel

    popen_pool = importlib.import_module(module)
    with popen_pool.PopenPoolExecutor(max_workers=1) as pool:
        from_pool = pool.submit(abs, value).result(timeout=60)
    worker = popen_pool.PopenWorker()
    worker.send(abs, (value,))
    from_worker = worker.recv()
    worker.kill()
    return from_pool, from_worker
