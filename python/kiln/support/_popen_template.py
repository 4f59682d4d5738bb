"""kiln.support.popen_pool's warm worker template (Template), and the command of every worker.

popen_pool's warm() and template_stats() are the public side of it; kiln.tvm names the modules
that MetaSchedule's tasks import (Template.companions).
"""

from __future__ import annotations

import sys
import threading

from .. import _settings
from .._native import native

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["COMMAND", "Template"]

# The worker program: unbuffered, so that output survives a kill.
_WORKER = ("-u", "-m", "kiln.support.popen_worker")
# The longest a call waits for a worker template being prepared before it starts workers afresh.
_TEMPLATE_WAIT_S = 300.0
# The command of every worker (and of the worker template) this process starts.
COMMAND = [sys.executable, *_WORKER]


class Template:
    """This process's warm worker template (kiln::pool::prepare_template): a worker process that
    has imported what the tasks need, from which new workers are forked in milliseconds.

    What it imports, in order: the modules named by warm(), the modules of the functions and
    initializers sent to workers, and what the workers imported while they ran their tasks (each
    answer says). It is rebuilt in the background when that grows, and used by every
    PopenWorker and PopenPoolExecutor of this process while KILN_POOL_TEMPLATE is on.
    """

    lock = threading.Lock()
    wanted: list[str] = []
    # Whether this process has looked for a template service another process left (one that
    # has what earlier runs imported serves from the first call, before anything is wanted).
    joined = False
    seen: set[str | None] = {*sys.builtin_module_names, "__main__", "__mp_main__", None}

    @staticmethod
    def enabled() -> bool:
        return _settings.flag("KILN_POOL_TEMPLATE")

    # Prefix of a task function's "module.qualname" -> modules those tasks import while they
    # run, named ahead so that the template has them before the task's time starts (kiln.tvm
    # names those of MetaSchedule's builder). Keyed by function, not module: another task of the
    # same module (LocalBuilder's sanity check) does not wait for imports it never makes.
    companions: dict[str, tuple[str, ...]] = {}

    @classmethod
    def want(cls, names: Iterable[str | None], unless_elsewhere: bool = False) -> bool:
        """Ask for `names` too; starts the template (again) when one is new (`unless_elsewhere`:
        nor when another process prepares its service). Returns whether it started one."""
        with cls.lock:
            # (None, a function without a module, is in `seen`: never new.)
            new = [n for n in dict.fromkeys(names) if n is not None and n not in cls.seen]
            if not new:
                return False
            cls.seen.update(new)
            cls.wanted.extend(new)
            wanted = list(cls.wanted)
        if cls.enabled():
            return bool(native.prepare_template(COMMAND, wanted, unless_elsewhere))
        return False

    @classmethod
    def ahead(cls, names: Iterable[str]) -> bool:
        """Prepare, in the background, a template that imports `names` for this process's pools
        and, as a template service, for later processes (kiln.tvm's `tvm` at a process's first
        import under KILN_TVM=1): unless a service that has them is there, another process is
        preparing one, or services are off (KILN_POOL_TEMPLATE_SERVICE, KILN_TVM_TEMPLATE).
        Returns whether it started one."""
        if not (cls.enabled() and _settings.flag("KILN_POOL_TEMPLATE_SERVICE")):
            return False
        cls.joined = True  # what prepare_template does first
        return cls.want(names, unless_elsewhere=True)

    @classmethod
    def want_module_of(cls, function: object) -> None:
        """Ask for the module that defines `function` (a lookup, when it is known already);
        then, while a template that would have it is being prepared, wait for it: the workers
        about to start would spend that time importing the same modules, each on its own. A ready
        template that has them already serves at once, while its successor prepares what other
        tasks taught it (a slow import learned elsewhere does not hold up this call)."""
        name = getattr(function, "__module__", None)
        names = [name]
        if cls.companions:
            task = f"{name}.{getattr(function, '__qualname__', '')}"
            for prefix, extra in list(cls.companions.items()):
                if task.startswith(prefix):
                    names.extend(extra)
        if any(n not in cls.seen for n in names):
            cls.want(names)
        if not cls.joined and cls.enabled():
            cls.joined = True
            if not cls.wanted:
                native.prepare_template(COMMAND, [])
        if cls.wanted and cls.enabled():
            needed = [n for n in names if n is not None]
            native.wait_for_template(COMMAND, _TEMPLATE_WAIT_S, True, needed)
