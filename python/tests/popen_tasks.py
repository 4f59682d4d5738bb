"""Task functions the process-pool tests send to worker processes.

cloudpickle sends a module-level function by reference (module name + qualified name), so the
worker must be able to import this module: the tests put python/tests/ on the workers' PYTHONPATH.
Exception classes defined here travel the same way, so the parent sees the very class it knows.

Nothing here imports TVM or tvm_ffi at module level: the kiln worker imports only what a task
needs, and a test without TVM must still be able to use these tasks.
"""

import os
import signal
import sys
import time

# Set by initializer(); read back by read_globals() to prove the initializer ran in this process.
INIT_A = None
INIT_B = None
INIT_C = None


class TaskError(Exception):
    """A project-defined exception raised by a task (rebuilt from one string, like builtins)."""


class TwoPartError(Exception):
    """An exception whose constructor needs two arguments: TVM's worker cannot rebuild it from the
    formatted traceback (type(e)(message) raises TypeError there)."""

    def __init__(self, code, detail):
        super().__init__(code, detail)
        self.code = code
        self.detail = detail


def identity(value):
    """Return value unchanged."""
    return value


def identity_after(value, seconds):
    """Sleep, then return value (a task that outlives a short timeout)."""
    time.sleep(seconds)
    return value


def sleep_for(seconds):
    """Sleep and return nothing."""
    time.sleep(seconds)


def exit_now(code=3):
    """End the worker process at once, without cleanup (a crash)."""
    os._exit(code)  # pylint: disable=protected-access


def kill_self():
    """SIGKILL the worker process from inside the task."""
    os.kill(os.getpid(), signal.SIGKILL)


def getpid():
    """The worker's process id."""
    return os.getpid()


def raise_value_error(message):
    raise ValueError(message)


def raise_task_error(message):
    raise TaskError(message)


def raise_key_error(key):
    return {}[key]


def raise_two_part_error(code, detail):
    raise TwoPartError(code, detail)


def initializer(a, b, c):
    """Record the initializer's arguments in this worker's globals."""
    global INIT_A, INIT_B, INIT_C  # pylint: disable=global-statement
    INIT_A, INIT_B, INIT_C = a, b, c


def read_globals():
    """What initializer() recorded in this process (Nones when it did not run here)."""
    return INIT_A, INIT_B, INIT_C


def failing_initializer_unless_gone(marker):
    """An initializer that raises TaskError while the file `marker` exists, else records 1, 2, 3."""
    if os.path.exists(marker):
        raise TaskError(f"initializer refused: {marker} exists")
    initializer(1, 2, 3)


def join_words(first, second="b", *, third="c"):
    """Positional, keyword-or-positional and keyword-only arguments, joined with '-'."""
    return f"{first}-{second}-{third}"


def pattern_bytes(size):
    """size bytes of a fixed, position-dependent pattern (the parent rebuilds it to compare)."""
    block = bytes(range(256))
    return (block * (size // 256 + 1))[:size]


def reversed_bytes(data):
    """data reversed: a large argument goes in, a different large result comes out."""
    return data[::-1]


def print_marks(mark):
    """Print `mark` to stdout and stderr (each flushed), return it."""
    print(f"{mark}-stdout", flush=True)
    print(f"{mark}-stderr", file=sys.stderr, flush=True)
    return mark


def print_then_hang(mark, seconds):
    """Print `mark` to stdout without flushing, then sleep past any short timeout."""
    print(mark)
    time.sleep(seconds)


def unpicklable_result():
    """A result pickle refuses (a lock)."""
    import threading  # pylint: disable=import-outside-toplevel

    return threading.Lock()


def behave(kind):
    """One task whose outcome is chosen by kind: 'ok' returns 'ok', 'raise' raises ValueError,
    'hang' sleeps 60 s, 'crash' ends the worker."""
    if kind == "raise":
        raise ValueError("asked to raise")
    if kind == "hang":
        time.sleep(60)
    if kind == "crash":
        os._exit(5)  # pylint: disable=protected-access
    return kind


def stress_task(index):
    """The stress mix: 1% crash (index % 100 == 37), 1% hang (== 73), the rest return index * 2."""
    if index % 100 == 37:
        os._exit(1)  # pylint: disable=protected-access
    if index % 100 == 73:
        time.sleep(30)
    return index * 2


def pid_at_barrier(directory, count, limit=20.0):
    """Record this worker's pid in `directory`, then wait (up to `limit` seconds) until `count`
    distinct workers have: `count` such tasks in flight at once prove `count` live workers."""
    open(os.path.join(directory, str(os.getpid())), "w", encoding="utf-8").close()
    deadline = time.monotonic() + limit
    while len(os.listdir(directory)) < count and time.monotonic() < deadline:
        time.sleep(0.005)
    return os.getpid()


# --- TVM FFI tasks (tvm_ffi and TVM are imported only when a task runs) ---

def register_ffi():
    """Initializer: register a Python function as an FFI global in this worker."""
    import tvm_ffi  # pylint: disable=import-outside-toplevel

    tvm_ffi.register_global_func("kiln_tests.identity_py", lambda value: value, override=True)


def call_registered_ffi(value):
    """Call the FFI global that register_ffi() registered in this worker."""
    import tvm_ffi  # pylint: disable=import-outside-toplevel

    return tvm_ffi.get_global_func("kiln_tests.identity_py")(value)


def call_tvm_echo(value):
    """Call TVM's C++ global testing.echo through tvm.testing."""
    import tvm.testing  # pylint: disable=import-outside-toplevel

    return tvm.testing.echo(value)


def call_echo_by_name(value):
    """Look up TVM's C++ global testing.echo by name in the FFI registry and call it."""
    import tvm  # pylint: disable=import-outside-toplevel,unused-import
    import tvm_ffi  # pylint: disable=import-outside-toplevel

    return tvm_ffi.get_global_func("testing.echo")(value)


# --- the child process of the parent-killed stress test ---

def hold_workers_main(module, workers, barrier_root):
    """Run as a child process: with popen_pool module `module` (e.g. "kiln.support.popen_pool"),
    a PopenPoolExecutor with `workers` workers and one PopenWorker, each worker's pid printed on
    its own line ("pid <n>"), then "ready", then sleep until killed."""
    import importlib  # pylint: disable=import-outside-toplevel

    popen_pool = importlib.import_module(module)

    pool = popen_pool.PopenPoolExecutor(max_workers=workers)
    barrier = os.path.join(barrier_root, "pool")
    os.mkdir(barrier)
    futures = [pool.submit(pid_at_barrier, barrier, workers) for _ in range(workers)]
    pids = {future.result() for future in futures}
    single = popen_pool.PopenWorker()
    single.send(getpid)
    pids.add(single.recv())
    for pid in sorted(pids):
        print(f"pid {pid}", flush=True)
    print("ready", flush=True)
    time.sleep(600)
