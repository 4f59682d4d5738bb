"""KILN_TVM=1: install kiln into TVM as soon as a process imports tvm.

Two ways in, both ending in ``kiln.tvm.install()`` (idempotent) the moment tvm's own ``__init__``
has run, before the statement that imported tvm goes on:

- ``autoload()``: the wheel declares it an entry point of the group ``tvm.backends``, which
  ``import tvm`` (0.27) calls at the end of its ``__init__`` in every process: a Python process
  that never imports tvm runs nothing of kiln, not even a .pth line (python -c pass costs the
  same with kiln installed or not). TVM_DEVICE_BACKEND_AUTOLOAD=0 turns TVM's entry points off,
  kiln's with them.
- ``arm()``: a one-shot finder at the front of ``sys.meta_path``. When ``import tvm`` runs (in any
  form: ``import tvm.support.cc``, ``python -m tvm.exec.rpc_server``), it finds tvm's spec the way
  the import system would have and wraps its loader so that install() runs once tvm has executed.
  kiln's pool workers arm it when they start with ``KILN_TVM=1``, so they get kiln also where kiln
  is not installed as a wheel (a source checkout on PYTHONPATH declares no entry point).

Nothing here imports TVM or kiln's extension before tvm is imported, and nothing of kiln but
kiln._tvm_state (VARIABLE); kiln.tvm only once tvm is there. A broken install (kiln's extension
missing, truncated or failing to load) costs one line on stderr at ``import tvm``, naming what is
broken and the way out, and TVM keeps its own tvm.support; that process sets KILN_TVM=0, so the
processes it starts, which would find the same install, say nothing.
"""

from __future__ import annotations

import os
import sys

from ._settings import flag, flag_before_extension
from ._tvm_state import VARIABLE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any

__all__ = ["VARIABLE", "arm", "armed", "autoload", "wanted"]


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether `environ` (os.environ by default) asks for kiln in TVM."""
    return flag_before_extension(VARIABLE, environ)


class _InstallAfterTvm:
    """tvm's loader, which calls kiln.tvm.install() once tvm's module has executed."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # The module carries tvm's own loader, as it would have without the hook.
        module.__loader__ = self.loader
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            spec.loader = self.loader
        self.loader.exec_module(module)
        _install()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


class TvmImportHook:
    """The finder arm() adds: on the first import of tvm it steps aside and wraps tvm's loader."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name != "tvm":
            return None
        _disarm()
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is None:
                continue
            spec: ModuleSpec | None = find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    # A loader by duck typing: it forwards everything else to tvm's.
                    spec.loader = _InstallAfterTvm(spec.loader)  # type: ignore[assignment]
                return spec
        return None


# How to get out of a broken install, in every line that reports one.
_REMEDY = (
    "reinstall kiln (pip install --force-reinstall kiln) or unset KILN_TVM; TVM keeps its own "
    "tvm.support here"
)


def _extension_problem() -> str | None:
    """What is wrong with kiln's extension module on disk, found without loading it (None when
    nothing is seen): a truncated ELF file can load and then crash the process with SIGBUS when a
    page past its end is touched, so it must not be dlopen()ed at all."""
    import importlib.util  # pylint: disable=import-outside-toplevel

    spec = importlib.util.find_spec("kiln._kiln")
    if spec is None or not spec.origin or not spec.origin.endswith(".so"):
        return None if spec is not None else "its extension module kiln._kiln is missing"
    try:
        with open(spec.origin, "rb") as file:
            header = file.read(64)
            size = os.fstat(file.fileno()).st_size
    except OSError as error:
        return f"its extension {spec.origin} cannot be read: {error.strerror}"
    if header[:4] != b"\x7fELF" or len(header) < 64:
        return f"its extension {spec.origin} is not an ELF file ({size} bytes)"
    if header[4] != 2:  # not ELFCLASS64: its layout is not checked here
        return None
    little = header[5] == 1

    def number(first: int, last: int) -> int:
        return int.from_bytes(header[first:last], "little" if little else "big")

    # The section header table comes last in a linked file: its end is the file's size.
    end = number(0x28, 0x30) + number(0x3A, 0x3C) * number(0x3C, 0x3E)
    if size < end:
        return f"its extension {spec.origin} is truncated ({size} of at least {end} bytes)"
    return None


def _report(problem: str) -> None:
    """One line on stderr for this process, and none for the processes it starts: they would
    find the same install broken (KILN_TVM=0 in the environment: they leave TVM alone)."""
    print(f"kiln: {VARIABLE}=1, but kiln is broken in process {os.getpid()}: {problem}; "
          f"{_REMEDY}", file=sys.stderr)
    os.environ[VARIABLE] = "0"


def _install() -> None:
    """kiln.tvm.install(), or one line that says why it could not be: an import of tvm never
    fails because of kiln."""
    try:
        problem = _extension_problem()
    except Exception as error:  # pylint: disable=broad-except
        problem = f"its extension module cannot be found: {type(error).__name__}: {error}"
    if problem is not None:
        _report(problem)
        return
    try:
        import kiln.tvm  # pylint: disable=import-outside-toplevel

        kiln.tvm.install()
    except Exception as error:  # pylint: disable=broad-except
        text = " ".join(f"{type(error).__name__}: {error}".split())  # one line
        _report(f"kiln.tvm.install() failed: {text}")
        return
    _prepare_ahead()


def _prepare_ahead() -> None:
    """The worker template for `import tvm`, prepared in the background (KILN_TVM_TEMPLATE): a
    later pool of this process, or of a later one that joins its service, forks warm workers
    from its first call. Not in kiln's own workers and templates (their __main__ is the worker
    program): they are what it makes."""
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if getattr(main_spec, "name", None) == "kiln.support.popen_worker":
        return
    try:
        from .support import _popen_template  # pylint: disable=import-outside-toplevel

        if flag("KILN_TVM_TEMPLATE"):
            _popen_template.Template.ahead(["tvm"])
    except Exception as error:  # pylint: disable=broad-except
        # An import of tvm never fails because of kiln: the pools start workers afresh.
        text = " ".join(f"{type(error).__name__}: {error}".split())
        print(f"kiln: no worker template made ahead for tvm: {text}", file=sys.stderr)


def armed() -> bool:
    """Whether arm()'s finder waits for tvm."""
    return any(isinstance(finder, TvmImportHook) for finder in sys.meta_path)


def _disarm() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, TvmImportHook)]


def arm() -> None:
    """Install kiln into TVM when this process imports tvm (at once, when it already has)."""
    if "tvm" in sys.modules:
        _install()
    elif not armed():
        sys.meta_path.insert(0, TvmImportHook())


def autoload() -> None:
    """TVM's ``tvm.backends`` entry point: install kiln when the environment asks for it."""
    if wanted():
        _install()
