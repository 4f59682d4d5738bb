"""A call's trip through kiln.support.popen_pool: the pickled call that goes to a worker, and
what its end (a tuple from kiln's C++ pool) comes back as, a result or an exception.
"""

from __future__ import annotations

import concurrent.futures
import io
import pickle
import sys
import threading

from ._popen_message import MAX_MESSAGE_BYTES
from ._popen_template import Template

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

    from .._kiln import PoolEnd

__all__ = ["checked", "dumps", "exception_of", "unwrap"]

# One cloudpickle Pickler per thread, reused: making one per call (cloudpickle.dumps) costs more
# than pickling a typical call, and its garbage wakes the cycle collector.
_picklers = threading.local()


def dumps(
    fn: Callable[..., object], args: Iterable[object], kwargs: Mapping[str, object] | None
) -> bytes:
    """The payload of the call fn(*args, **kwargs): the pickled (fn, args, kwargs).

    What plain pickle writes is what cloudpickle would when everything in the call is found by
    reference (module-level functions and classes of importable modules, plain data): then the
    C pickler alone does it, at a third of the cost. Anything it cannot pickle (a lambda, a
    closure, a local class), anything from ``__main__`` (the worker's ``__main__`` is another
    module), and everything once a module is registered to travel by value goes through
    cloudpickle, as in tvm.support.
    """
    call = (fn, args if type(args) is tuple else tuple(args), dict(kwargs) if kwargs else {})
    if not _pickled_by_value():
        try:
            data = pickle.dumps(call, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # pylint: disable=broad-except
            data = None
        if data is not None and b"__main__" not in data:
            return data
    return _cloudpickle_dumps(call)


def _pickled_by_value() -> bool:
    """Whether cloudpickle has modules registered to be pickled by value (or may have: an
    unknown cloudpickle without the registry this reads counts as yes)."""
    module = sys.modules.get("cloudpickle.cloudpickle")
    if module is None:
        return False  # cloudpickle not imported yet: nothing can be registered with it
    return bool(getattr(module, "_PICKLE_BY_VALUE_MODULES", True))


def _cloudpickle_dumps(call: object) -> bytes:
    """`call` pickled by this thread's cloudpickle Pickler."""
    state = getattr(_picklers, "state", None)
    if state is None:
        # pylint: disable-next=import-outside-toplevel
        import cloudpickle  # type: ignore[import-untyped,import-not-found,unused-ignore]

        buffer = io.BytesIO()
        pickler = cloudpickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        state = _picklers.state = (buffer, pickler)
    buffer, pickler = state
    try:
        pickler.dump(call)
        data: bytes = buffer.getvalue()
        return data
    finally:  # each payload stands alone: nothing of this call stays in the pickler
        pickler.clear_memo()
        pickler.globals_ref = {}  # cloudpickle's per-dump table of function globals
        buffer.seek(0)
        buffer.truncate()


def checked(payload: bytes, fn: object) -> bytes:
    """`payload`, the pickled call of `fn`, once it is known to fit in one message."""
    if len(payload) > MAX_MESSAGE_BYTES:
        raise ValueError(
            f"the call of {getattr(fn, '__qualname__', fn)!r} is {len(payload)} bytes pickled, "
            f"over the pool's limit of {MAX_MESSAGE_BYTES} bytes for one message "
            "(MAX_MESSAGE_BYTES); pass large data in a file instead"
        )
    return payload


def exception_of(end: PoolEnd) -> BaseException:
    """The exception a call's end (a native tuple, not "ok") stands for."""
    kind = end[0]
    if end[0] == "exception":  # end[0], not kind: type checkers narrow `end` by its own item
        _, data, type_name, message = end
        if data:
            try:
                exception: BaseException = pickle.loads(data)
                return exception
            except Exception as error:  # pylint: disable=broad-except
                why = f"it cannot be unpickled here: {error}"
                return RuntimeError(f"{type_name} ({why}): {message}")
        return RuntimeError(f"{type_name}: {message}")
    if kind == "timeout":
        return TimeoutError(end[1])
    if kind == "died":
        return ChildProcessError(end[1])
    if kind == "cancelled":
        return concurrent.futures.CancelledError(end[1])
    return RuntimeError(end[1])


def unwrap(end: PoolEnd) -> Any:
    """The result a call's end carries, or raise what it stands for."""
    if end[0] == "ok":
        value, learned = pickle.loads(end[1])
        if learned:
            Template.want(learned)
        return value
    raise exception_of(end)
