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

Nothing here imports TVM or kiln's extension before tvm is imported.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any

__all__ = ["VARIABLE", "arm", "armed", "autoload", "wanted"]

VARIABLE = "KILN_TVM"


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether `environ` (os.environ by default) asks for kiln in TVM."""
    return (os.environ if environ is None else environ).get(VARIABLE) == "1"


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


def _install() -> None:
    """kiln.tvm.install(), or a warning that says why it could not be: an import of tvm never
    fails because of kiln."""
    try:
        import kiln.tvm  # pylint: disable=import-outside-toplevel

        kiln.tvm.install()
    except Exception as error:  # pylint: disable=broad-except
        print(f"kiln: {VARIABLE}=1, but kiln.tvm.install() failed in process {os.getpid()}: "
              f"{type(error).__name__}: {error}; TVM keeps its own tvm.support here",
              file=sys.stderr)


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
