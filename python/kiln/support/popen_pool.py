"""Processes that run Python calls with timeouts: tvm.support.popen_pool (0.27), run by kiln's pool.

``PopenWorker`` is one worker process; ``PopenPoolExecutor`` a pool of them fed from one queue.
Both have tvm.support's names, signatures and semantics: functions and arguments travel with
cloudpickle (lambdas and closures work), an exception raised by the call is raised again in the
caller with its type and the worker's traceback as its message, a call past its timeout raises
TimeoutError and one whose worker dies ChildProcessError, and the worker is started afresh for
the next call. The timeout counts from when the function starts, as tvm.support's does, not
while the worker unpickles it (which may import modules).

What kiln does underneath: the parent's side is kiln's C++ pool (kiln::pool), which enforces the
deadlines itself (killing the worker's whole process group), keeps one dispatcher thread for all
workers, sends quick calls to a worker several at a time, and waits with the GIL released; no
Python thread runs per call. Workers are ``python -u -m kiln.support.popen_worker``: they import
kiln's extension and nothing else until a call needs it, die with their parent (even when it is
SIGKILLed), and write their stdout and stderr unbuffered, so that what a task printed before it
was killed is not lost.

Warm worker templates: a new worker is forked from a template process of this parent that has
imported, once, what the tasks need (see warm()), instead of a fresh interpreter that imports it
all again; a call waits while the template is being prepared rather than starting workers that
would each import the same. Forked workers are this process's own children and behave as
started ones. KILN_POOL_TEMPLATE=0 turns templates off; KILN_POOL_DEBUG=1 says why a worker was
started afresh.

Where kiln goes further than tvm.support: a task that ends its worker (sys.exit, os._exit) is a
ChildProcessError the moment it happens, whatever the timeout; a task that closes or replaces
the worker's answer pipe (its descriptor 4) is killed and reported as crashed; Ctrl-C interrupts
recv() and join() at once; a process forked from one that used a pool (os.fork, multiprocessing's
"fork" start method) makes and uses pools of its own, while a PopenPoolExecutor it inherited
raises RuntimeError there (a PopenWorker it inherited starts a worker of its own). A call's
pickled arguments or result may take up to MAX_MESSAGE_BYTES (256 MiB, less a little); larger
ones raise ValueError naming both sizes (tvm.support's limit is its 4-byte length, 2 GiB).

This module holds tvm.support's names and kiln's warm() and template_stats(); the parts behind
them are modules of their own: _popen_template (the worker template and the workers' command),
_popen_payload (a call pickled, and its end turned back into a result or an exception),
_popen_collector (an executor's threads, and stopping every pool at exit) and _popen_message
(the message limit, shared with the worker program popen_worker).
"""

from __future__ import annotations

import concurrent.futures
import io
import os
import subprocess
import sys
import threading
import time
from collections import namedtuple
from enum import IntEnum

from .._native import native
from ._popen_collector import OPEN, close, collect
from ._popen_message import MAX_MESSAGE_BYTES, initialize
from ._popen_payload import checked, dumps, unwrap
from ._popen_template import COMMAND, Template

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from typing import Any, Literal, ParamSpec, TypeVar

    from _typeshed import FileDescriptorLike
    from typing_extensions import Self

    from .._kiln import TemplateStats, WorkerOptions

    _P = ParamSpec("_P")
    _T = TypeVar("_T")

__all__ = [
    "MAX_MESSAGE_BYTES",
    "MapResult",
    "PopenPoolExecutor",
    "PopenWorker",
    "StatusKind",
    "kill_child_processes",
    "template_stats",
    "warm",
]

# How long (seconds) a call may take to unpickle its function (importing its modules) before its
# own timeout starts; tvm.support has no limit, a hung import would hang the caller forever.
_PREPARATION_S = 600.0


class _Settled:
    """The tasks whose worker template was found settled (none being prepared that they would
    wait for), so that a call of one of them skips Template.want_module_of's native check: that
    check releases the GIL, which hands it to the executor's collector thread at every submit
    (a context switch each way), and cost a fast task half its throughput. What Python asks for
    (Template.want, which grows Template.wanted, or a first join) unsettles them at once; a
    preparation kiln's C++ side starts by itself (a template that died is rebuilt) is seen at
    the first call after RECHECK_S."""

    RECHECK_S = 0.001

    def __init__(self) -> None:
        self.tasks: set[object] = set()
        self.until = 0.0
        self.epoch: tuple[int, bool] = (-1, False)

    def want_module_of(self, function: object) -> None:
        """Template.want_module_of(function), unless its task was found settled just now."""
        task = getattr(function, "__module__", None)
        if Template.companions:  # the modules a task waits for depend on its name, too
            task = (task, getattr(function, "__qualname__", None))
        epoch = (len(Template.wanted), Template.joined)
        if epoch == self.epoch and time.monotonic() < self.until and task in self.tasks:
            return
        Template.want_module_of(function)
        now, epoch = time.monotonic(), (len(Template.wanted), Template.joined)
        if epoch != self.epoch or now >= self.until:
            self.tasks = set()
            self.until, self.epoch = now + self.RECHECK_S, epoch
        self.tasks.add(task)


_settled = _Settled()


def kill_child_processes(pid: int) -> None:
    """Kill all child processes recursively for a given pid (not the process itself).

    Parameters
    ----------
    pid : int
        The process whose descendants are killed.
    """
    native.kill_child_processes(pid)


class StatusKind(IntEnum):
    """Running and return value status."""

    RUNNING = 0
    COMPLETE = 1
    EXCEPTION = 2
    TIMEOUT = 3


class MapResult(namedtuple("MapResult", ["status", "value"])):
    """Result of map_with_error_catching.

    Parameters
    ----------
    status : StatusKind
        The status of the result.

    value : Any
        The result value, or the exception (TimeoutError for a timeout).
    """

    __slots__ = []


def _seconds(timeout: float | None) -> float | None:
    """A timeout as kiln's extension takes every one: seconds as a float, None for none (its
    C++ side rounds up to whole milliseconds; a negative one has passed already)."""
    return None if timeout is None else float(timeout)


def _stream_fd(
    stream: FileDescriptorLike | None,
    name: str,
    stdout_fd: int | None,
    keep: list[io.BufferedWriter],
) -> int | None:
    """The descriptor a worker's stdout or stderr goes to, for subprocess-style `stream`."""
    if stream is None:
        return None
    if stream == subprocess.PIPE:
        raise ValueError(
            f"{name}=subprocess.PIPE: nobody reads that pipe, and a worker would block once it "
            "is full; pass DEVNULL, a file, or None"
        )
    if stream == subprocess.DEVNULL:
        devnull = open(os.devnull, "wb")  # pylint: disable=consider-using-with
        keep.append(devnull)
        return devnull.fileno()
    if stream == subprocess.STDOUT:
        if name != "stderr":
            raise ValueError("subprocess.STDOUT is only for stderr")
        return stdout_fd if stdout_fd is not None else 1
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(f"{name}={stream}: not a file descriptor")
        return stream
    if hasattr(stream, "fileno"):
        return stream.fileno()
    raise TypeError(f"{name} must be None, a file descriptor, a file object or DEVNULL")


def warm(modules: Iterable[str] = (), timeout: float | None = None) -> bool:
    """Prepare this process's worker template: a process that imports `modules` (and what the
    pool learned so far) once, from which every new worker is forked.

    Parameters
    ----------
    modules : Iterable[str]
        Modules the tasks will need (e.g. ["tvm", "tvm.s_tir.tensor_intrin"]).

    timeout : float
        Wait up to this many seconds for the template to be ready; None: do not wait.

    Returns
    -------
    ready : bool
        Whether a template is ready now (always False with KILN_POOL_TEMPLATE=0).
    """
    Template.want(list(modules))
    if not Template.enabled():
        return False
    if not Template.wanted:
        native.prepare_template(COMMAND, [])
    return bool(native.wait_for_template(COMMAND, float(timeout or 0)))


def template_stats() -> TemplateStats:
    """What this process's worker templates did: {"forks", "fallbacks", "started", "lost",
    "last_reason"} (why the last worker was started afresh instead of forked), and the template
    services it joined or found stale: {"joined", "stale", "last_stale"}."""
    return native.template_stats()


def template_services(stop: bool = False) -> list[dict[str, str]]:
    """This user's worker template services in this process's cgroup and namespaces (those an
    earlier process left for later ones to join, KILN_POOL_TEMPLATE_SERVICE): each one's socket
    and status ("pid N\ncallers N\nworkers N\nfiles N\nnames N"). `stop`: tell each to stop
    first (it serves no new process and ends once its workers have), as `kiln templates --stop`."""
    return native.template_services(stop)


class _Setup:
    """What every (re)start of a worker gets: command, initializer, uses, output."""

    def __init__(
        self,
        initializer: Callable[..., object] | None,
        initargs: Iterable[object],
        maximum_uses: int | None,
        stdout: FileDescriptorLike | None,
        stderr: FileDescriptorLike | None,
        who: str,
    ) -> None:
        if initializer is not None and not callable(initializer):
            raise TypeError(f"initializer must be callable for {who}")
        # Files opened here (DEVNULL) stay open as long as the workers may start.
        self.keep: list[io.BufferedWriter] = []
        stdout_fd = _stream_fd(stdout, "stdout", None, self.keep)
        if initializer is not None:
            Template.want_module_of(initializer)
        self.options: WorkerOptions = {
            "command": COMMAND,
            "from_template": Template.enabled(),
            "initializer": (None if initializer is None else
                            dumps(initialize, (initializer, *initargs), None)),
            "max_uses": int(maximum_uses or 0),
            "stdout_fd": stdout_fd,
            "stderr_fd": _stream_fd(stderr, "stderr", stdout_fd, self.keep),
            "preparation_timeout": _PREPARATION_S,
        }


class PopenWorker:
    """A subprocess worker: one process that runs the calls sent to it, one at a time.

    Parameters
    ----------
    initializer: callable or None
        Called in the worker at every start (not counted as a use).

    initargs: Tuple[object]
        The initializer's arguments.

    maximum_uses: Optional[int]
        After this many calls the process is replaced by a fresh one; None: reused until a
        call times out or the process dies.

    stdout: Union[None, int, IO[Any]]
        Where the worker's standard output goes (subprocess.DEVNULL, a descriptor, a file).

    stderr: Union[None, int, IO[Any]]
        Where the worker's standard error goes (also subprocess.STDOUT).
    """

    def __init__(
        self,
        initializer: Callable[..., object] | None = None,
        initargs: Iterable[object] = (),
        maximum_uses: int | None = None,
        stdout: FileDescriptorLike | None = None,
        stderr: FileDescriptorLike | None = None,
    ) -> None:
        self._setup = _Setup(initializer, initargs, maximum_uses, stdout, stderr, "PopenWorker")
        self._native = native.PoolWorker(**self._setup.options)

    def __del__(self) -> None:
        native_worker = getattr(self, "_native", None)
        if native_worker is not None:
            native_worker.kill()

    def kill(self) -> None:
        """Kill the process (and everything it started) and reap it; the next send starts anew."""
        self._native.kill()

    def join(self, timeout: float | None = None) -> None:
        """Wait until the process exits on its own, at most `timeout` seconds when given."""
        self._native.join(_seconds(timeout))

    def is_alive(self) -> bool:
        """Whether the worker process is running."""
        return self._native.is_alive()

    def send(
        self,
        fn: Callable[..., object],
        args: Iterable[object] = (),
        kwargs: Mapping[str, object] | None = None,
        timeout: float | None = None,
    ) -> None:
        """Send the call ``fn(*args, **kwargs)`` to the worker, starting it if needed.

        Parameters
        ----------
        fn : function
            The function to call.

        args : list
            Positional arguments.

        kwargs : dict
            Keyword arguments.

        timeout : float
            Seconds the call may run, from when the function starts; None: no limit.

        Note
        ----
        recv() the result before the next send.
        """
        _settled.want_module_of(fn)
        self._native.send(checked(dumps(fn, args, kwargs), fn), _seconds(timeout))

    def recv(self) -> Any:
        """Receive the result of the last send.

        Returns
        -------
        result: object
            What the function returned.

        Raises
        ------
        ChildProcessError: if the worker died.
        TimeoutError: if the call ran past its timeout (the worker was killed).
        Exception: what the function raised, with its type.
        """
        return unwrap(self._native.recv())


class PopenPoolExecutor:
    """A parallel executor backed by worker processes.

    Parameters
    ----------
    max_workers : int
        Maximum number of workers; None: os.cpu_count().

    timeout : float
        Seconds each call may run, from when its function starts; None: no limit.

    initializer: callable or None
        Called in each worker at every start.

    initargs: Tuple[object]
        The initializer's arguments.

    maximum_process_uses: Optional[int]
        After this many calls a worker process is replaced by a fresh one; None: never.

    stdout: Union[None, int, IO[Any]]
        Where the workers' standard output goes.

    stderr: Union[None, int, IO[Any]]
        Where the workers' standard error goes.
    """

    def __init__(
        self,
        max_workers: int | None = None,
        timeout: float | None = None,
        initializer: Callable[..., object] | None = None,
        initargs: Iterable[object] = (),
        maximum_process_uses: int | None = None,
        stdout: FileDescriptorLike | None = None,
        stderr: FileDescriptorLike | None = None,
    ) -> None:
        if max_workers is None:
            max_workers = os.cpu_count()
        setup = _Setup(
            initializer, initargs, maximum_process_uses, stdout, stderr, "PopenPoolExecutor"
        )
        self._setup = setup
        self._native = native.PoolExecutor(
            int(max_workers),  # type: ignore[arg-type]  # os.cpu_count() None: TypeError here
            _seconds(timeout),
            **setup.options,
        )
        self._pid = os.getpid()  # in a process forked from this one the pool is not usable
        self._futures: dict[int, concurrent.futures.Future[Any]] = {}
        self._lock = threading.Lock()
        self._next = 0
        self._collector: threading.Thread | None = None
        self._shutdown = False
        OPEN.add(self._native)

    def __del__(self) -> None:
        # Never blocks (a pool collected while its owner waits would deadlock, apache/tvm#18157):
        # calls already submitted finish in the background, then the workers are reaped.
        if not getattr(self, "_shutdown", True):
            self.shutdown(wait=False)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> Literal[False]:
        self.shutdown(wait=True)
        return False

    def _check_process(self) -> None:
        """Raise RuntimeError in a process forked from the one that made the pool: its threads
        (kiln's dispatcher, the collector) were not copied, and its lock may be held forever."""
        if os.getpid() != self._pid:
            raise RuntimeError(
                f"this PopenPoolExecutor was made by process {self._pid}; a process forked from "
                "it cannot use it (fork copies none of its threads): make a new one here"
            )

    def _register(
        self, futures: concurrent.futures.Future[Any] | list[concurrent.futures.Future[Any]]
    ) -> int:
        """Index the future (or list of futures) of calls about to be submitted; returns the
        first index (the caller has checked the process)."""
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            first = self._next
            if isinstance(futures, concurrent.futures.Future):
                self._futures[first] = futures
                self._next = first + 1
            else:
                self._futures.update(zip(range(first, first + len(futures)), futures))
                self._next = first + len(futures)
            if self._collector is None:
                self._collector = threading.Thread(
                    target=collect,
                    args=(self._native, self._futures, self._lock),
                    name="kiln-popen-pool-collector",
                    daemon=True,
                )
                self._collector.start()
                OPEN.add(self._native, self._collector)
        return first

    def submit(
        self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs
    ) -> concurrent.futures.Future[_T]:
        """Submit the call ``fn(*args, **kwargs)``; returns its concurrent.futures.Future."""
        self._check_process()
        _settled.want_module_of(fn)
        payload = checked(dumps(fn, args, kwargs), fn)
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()
        self._native.submit(self._register(future), (payload,))
        return future

    def map_with_error_catching(
        self, fn: Callable[[_T], object], iterator: Iterable[_T]
    ) -> Iterator[MapResult]:
        """Call `fn` on every item; yields a MapResult per item, in order, errors caught.

        Every call is submitted at once; the results are yielded as the caller iterates.
        """
        self._check_process()
        _settled.want_module_of(fn)
        payloads = [checked(dumps(fn, (item,), None), fn) for item in iterator]
        futures: list[concurrent.futures.Future[Any]] = [
            concurrent.futures.Future() for _ in payloads
        ]
        self._native.submit(self._register(futures), payloads)

        def results() -> Iterator[MapResult]:
            for future in futures:
                try:
                    yield MapResult(status=StatusKind.COMPLETE, value=future.result())
                except TimeoutError as error:
                    yield MapResult(status=StatusKind.TIMEOUT, value=error)
                except Exception as error:  # pylint: disable=broad-except
                    yield MapResult(status=StatusKind.EXCEPTION, value=error)

        return results()

    def shutdown(self, wait: bool = True) -> None:
        """Stop taking calls. wait: return once every submitted call has ended and the workers
        are gone; otherwise return at once, the calls finishing in the background. In a process
        forked from the one that made the pool, does nothing: the pool is the parent's."""
        if os.getpid() != getattr(self, "_pid", None):
            self._shutdown = True
            return
        with self._lock:
            already = self._shutdown
            self._shutdown = True
            collector = self._collector
        if wait:
            close(self._native, collector)
        elif OPEN.stopped or sys.is_finalizing():  # exiting: no thread can start now
            self._native.shutdown(False)
        elif not already:
            closer = threading.Thread(
                target=close, args=(self._native, collector), name="kiln-popen-pool-close"
            )
            closer.daemon = True
            OPEN.add(self._native, closer)
            closer.start()
