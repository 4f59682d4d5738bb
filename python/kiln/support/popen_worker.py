"""The worker program of kiln.support.popen_pool: ``python -u -m kiln.support.popen_worker``.

Its serve loop is kiln's C++ one (kiln::pool::serve_worker): it reads the parent's requests,
calls back here for each, writes the answers, and dies with its parent. A request is a pickled
``(fn, args, kwargs)``; the answer is the pickled result, or the pickled exception that
``fn`` raised rebuilt as tvm.support's worker does (same type, the worker's traceback as its
message). Until a task needs more, the worker imports nothing but kiln's extension: plain
``pickle`` reads what cloudpickle wrote, importing cloudpickle only for a payload that refers
to it (a lambda, a closure).

A task that ends the worker's process (sys.exit, as tvm.testing.terminate_self does, an uncaught
KeyboardInterrupt, or os._exit) tells the parent first: the call fails with ChildProcessError
("exited with code N") at once, however long the process then takes to end (tens of
milliseconds once TVM is loaded) and however short the call's timeout. The worker then ends at
once, without atexit hooks, as a task's os._exit would: the parent kills its process group.

An answer carries, beside the result, the modules the worker imported since its last answer:
the parent's worker template (popen_pool.warm) imports them, so that the workers forked from it
have them already. Started as a template (its last two arguments ``--kiln-pool-template PID``),
this program imports what the parent names and forks a worker for each of its requests.

A worker started with ``KILN_TVM=1`` in its environment (by a process where kiln.tvm.install()
is in effect) installs kiln into TVM the moment a task imports tvm (kiln._tvm_hook).
"""

from __future__ import annotations

import importlib
import os
import pickle
import sys

from kiln._native import native
from kiln.support._popen_message import MAX_MESSAGE_BYTES, initialize

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

    # What run() returns: (True, pickled result) or (False, pickled exception, type name, message).
    _Answer = tuple[bool, bytes] | tuple[bool, bytes, str, str]


def _dumps(value: object) -> bytes:
    """Pickle `value` like the parent does: plainly when that works, else with cloudpickle."""
    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # pylint: disable=broad-except
        # pylint: disable-next=import-outside-toplevel
        import cloudpickle  # type: ignore[import-untyped,import-not-found,unused-ignore]

        data: bytes = cloudpickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        return data


def _type_name(error: BaseException) -> str:
    kind = type(error)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def _failure(error: BaseException, text: str) -> tuple[bool, bytes, str, str]:
    """The answer for `error`: (False, pickled exception, type name, message).

    The exception travels as tvm.support's worker sends it, ``type(error)(traceback text)``; an
    exception type that cannot be rebuilt from one string goes as itself; one that cannot be
    pickled at all goes as nothing, and the parent raises a RuntimeError naming it.
    """
    candidate: Callable[[], BaseException]
    for candidate in (lambda: type(error)(text), lambda: error):
        try:
            return (False, _dumps(candidate()), _type_name(error), text)
        except Exception:  # pylint: disable=broad-except
            continue
    return (False, b"", _type_name(error), text)


def _traceback_text() -> str:
    import traceback  # pylint: disable=import-outside-toplevel

    return traceback.format_exc()


# os._exit as Python has it; tasks get _exit_telling_the_parent in its place.
_os_exit = os._exit  # pylint: disable=protected-access


def _exit_telling_the_parent(status: int) -> NoReturn:
    """os._exit for tasks (its parameter's name is os._exit's): tells the parent the task ends this
    worker with `status`, then exits.
    (In a process the task forked, which is no worker, it only exits.)"""
    try:
        native.task_ends_process(int(status))
    except Exception:  # pylint: disable=broad-except
        pass  # not an int: os._exit raises for it below, as it would have
    _os_exit(status)


def _exit_for(error: BaseException) -> NoReturn:
    """A task raised SystemExit or KeyboardInterrupt: the worker ends, as tvm.support's does."""
    code = error.code if isinstance(error, SystemExit) else 1
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    _exit_telling_the_parent(code or 0)


def run(payload: bytes) -> _Answer:
    """Run one pickled call; the answer tuple kiln's C++ side writes back."""
    try:
        fn, args, kwargs = pickle.loads(payload)
    except Exception as error:  # pylint: disable=broad-except
        return _failure(error, _traceback_text())
    native.task_begins()  # the call's timeout counts from here, as tvm.support's does
    try:
        value = fn(*args, **kwargs)
    except Exception as error:  # pylint: disable=broad-except
        return _failure(error, _traceback_text())
    except BaseException as error:  # pylint: disable=broad-except
        _exit_for(error)
    try:
        data = _dumps((value, None if fn is initialize else _learned()))
    except Exception as error:  # pylint: disable=broad-except
        text = f"the result of {getattr(fn, '__qualname__', fn)!r} cannot be pickled: {error}"
        return _failure(type(error)(text), text)
    if len(data) > MAX_MESSAGE_BYTES:
        text = (
            f"the result of {getattr(fn, '__qualname__', fn)!r} is {len(data)} bytes pickled, "
            f"over the pool's limit of {MAX_MESSAGE_BYTES} bytes for one message "
            "(kiln.support.popen_pool.MAX_MESSAGE_BYTES); pass it in a file instead"
        )
        return _failure(ValueError(text), text)
    return (True, data)


# The modules this worker had when it last told the parent what it imported.
_known: set[str] = set()
# Never worth a template's import: they are not modules another process can import.
_UNIMPORTABLE = frozenset(("__main__", "__mp_main__"))


def _learned() -> list[str] | None:
    """The modules imported since the last answer (None: none), for the parent's template."""
    if len(sys.modules) == len(_known):
        return None
    new = [name for name in list(sys.modules) if name not in _known]
    _known.update(new)
    new = [name for name in new if name not in _UNIMPORTABLE]
    return new or None


def _prepare(names: list[str]) -> list[str]:
    """A template's preparation: import `names`, in order; returns those that failed."""
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except (Exception, SystemExit):  # pylint: disable=broad-except
            failed.append(name)
    return failed


def _sources() -> list[str]:
    """What a template service's imports depend on (pool/template_freshness.h): every imported
    module's file ("f<path>"), and each directory imports searched with the names in it that
    would shadow what was found ("d<dir>\t<name>..."): the top-level modules in each sys.path
    entry (and *.pth files, which extend sys.path), each package's submodules in its __path__."""
    files = []
    top: set[str] = {"*.pth"}
    children: dict[str, set[str]] = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            files.append("f" + os.path.abspath(path))
        package, _, leaf = name.rpartition(".")
        if not package:
            top.add(name)
            continue
        for directory in getattr(sys.modules.get(package), "__path__", None) or ():
            if isinstance(directory, str):
                children.setdefault(os.path.abspath(directory), set()).add(leaf)
    for entry in sys.path:
        directory = os.path.abspath(entry or os.getcwd())
        children.setdefault(directory, set()).update(top)
    dirs = ["d" + "\t".join([d, *sorted(stems)]) for d, stems in children.items()]
    return files + dirs


def _adopt_environment(environment: list[str]) -> None:
    """A worker forked from a template: os.environ becomes the environment of its request
    (already in the C library's environ)."""
    wanted = dict(entry.split("=", 1) for entry in environment if "=" in entry)
    for name in [name for name in os.environ if name not in wanted]:
        del os.environ[name]
    for name, value in wanted.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _reseed_numpy() -> None:
    """A worker forked from a template: numpy's global RandomState (np.random.random and the
    like) gets a seed of its own, as a fresh worker's does when it imports numpy and as Python's
    random does at every fork (its os.register_at_fork hook); without it every forked worker draws
    the template's sequence. Nothing happens where the template had not imported numpy.random."""
    random = sys.modules.get("numpy.random")
    seed = getattr(random, "seed", None)
    if seed is not None:
        try:
            seed()
        except Exception:  # pylint: disable=broad-except
            pass  # a numpy too broken to seed is the task's to find, as in a fresh worker


def main() -> int:
    """Serve the parent that started this process (or, as a template, fork the workers that do);
    returns the exit status."""
    from kiln import _tvm_hook  # pylint: disable=import-outside-toplevel

    if _tvm_hook.wanted():  # started by a process with kiln installed in TVM: so is this one
        _tvm_hook.arm()
    # pylint: disable-next=protected-access
    os._exit = _exit_telling_the_parent
    args = sys.argv
    if len(args) >= 3 and args[-2] == "--kiln-pool-template":
        served = native.serve_pool_template(args, _prepare, _sources)
        if isinstance(served, int):
            return served
        args, environment = served  # a worker, forked from this template
        _adopt_environment(environment)
        _reseed_numpy()
        sys.argv = list(args)
    _known.update(sys.modules)
    status = native.serve_pool_worker(args, run)
    if status is None:
        print(
            "kiln.support.popen_worker: started by kiln.support.popen_pool, not by hand",
            file=sys.stderr,
        )
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
