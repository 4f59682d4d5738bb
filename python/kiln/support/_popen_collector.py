"""The threads behind a kiln.support.popen_pool.PopenPoolExecutor: its collector, which settles
each call's future as kiln's C++ pool reports the call's end; its closer; and, at exit, stopping
every pool that is still open.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import os
import threading

from ._popen_payload import unwrap

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .._kiln import PoolEnd, PoolExecutor

__all__ = ["OPEN", "close", "collect"]


def collect(
    native_pool: PoolExecutor,
    futures: dict[int, concurrent.futures.Future[Any]],
    lock: threading.Lock,
) -> None:
    """The collector thread: settles each call's future as the C++ pool reports its end."""
    while True:
        ends = native_pool.collect()  # waits with the GIL released; empty once closed
        if not ends:
            return
        with lock:
            settled = [(futures.pop(index, None), end) for index, end in ends]
        for future, end in settled:
            if future is not None:
                settle(future, end)


def settle(future: concurrent.futures.Future[Any], end: PoolEnd) -> None:
    """Give `future` the outcome `end` (it goes from pending to done: kiln cannot tell when a
    call starts in its worker, so a future is never reported running)."""
    if end[0] == "cancelled":
        future.cancel()
        return
    settle: Callable[[Any], None]
    try:
        value = unwrap(end)
    except BaseException as error:  # pylint: disable=broad-except
        settle, value = future.set_exception, error
    else:
        settle = future.set_result
    try:
        settle(value)
    except concurrent.futures.InvalidStateError:  # the caller cancelled it meanwhile: the call
        future.set_running_or_notify_cancel()  # ran anyway; its waiters hear of the cancel


class _Closing:
    """The native pools not yet closed, each with its collector thread.

    At exit every one of them is stopped without waiting (its workers killed, what it had left
    cancelled: nobody is left to take the results), so that exit is quick and no thread is still
    inside kiln's C++ code when the interpreter finalizes.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # id(native pool) -> (native pool, [its collector and closer threads])
        self.pools: dict[int, tuple[PoolExecutor, list[threading.Thread]]] = {}
        self.stopped = False  # at exit: no thread may start any more

    def after_fork(self) -> None:
        """In a forked child: the parent's pools are not the child's to stop, and another thread
        may have held the lock at the fork."""
        self.lock = threading.Lock()
        self.pools = {}
        self.stopped = False

    def add(self, native_pool: PoolExecutor, thread: threading.Thread | None = None) -> None:
        with self.lock:
            threads = self.pools.setdefault(id(native_pool), (native_pool, []))[1]
            if thread is not None:
                threads.append(thread)

    def discard(self, native_pool: PoolExecutor) -> None:
        with self.lock:
            self.pools.pop(id(native_pool), None)

    def stop_all(self) -> None:
        with self.lock:
            self.stopped = True
            pools = list(self.pools.values())
        for native_pool, _ in pools:
            native_pool.shutdown(False)
        for _, threads in pools:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join()


OPEN = _Closing()
atexit.register(OPEN.stop_all)
os.register_at_fork(after_in_child=OPEN.after_fork)


def close(native_pool: PoolExecutor, collector: threading.Thread | None) -> None:
    """Close `native_pool` once its calls have ended, then let its collector finish."""
    native_pool.shutdown(True)
    if collector is not None and collector is not threading.current_thread():
        collector.join()
    OPEN.discard(native_pool)
