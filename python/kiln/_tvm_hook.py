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

import os
import sys

__all__ = ["VARIABLE", "arm", "armed", "autoload", "wanted"]

VARIABLE = "KILN_TVM"


def wanted(environ=None):
    """Whether `environ` (os.environ by default) asks for kiln in TVM."""
    return (os.environ if environ is None else environ).get(VARIABLE) == "1"


class _InstallAfterTvm:
    """tvm's loader, which calls kiln.tvm.install() once tvm's module has executed."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        # The module carries tvm's own loader, as it would have without the hook.
        module.__loader__ = self.loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        _install()

    def __getattr__(self, name):
        return getattr(self.loader, name)


class TvmImportHook:
    """The finder arm() adds: on the first import of tvm it steps aside and wraps tvm's loader."""

    def find_spec(self, name, path=None, target=None):
        if name != "tvm":
            return None
        _disarm()
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is None:
                continue
            spec = find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _InstallAfterTvm(spec.loader)
                return spec
        return None


def _install():
    """kiln.tvm.install(), or a warning that says why it could not be: an import of tvm never
    fails because of kiln."""
    try:
        import kiln.tvm  # pylint: disable=import-outside-toplevel

        kiln.tvm.install()
    except Exception as error:  # pylint: disable=broad-except
        print(f"kiln: {VARIABLE}=1, but kiln.tvm.install() failed in process {os.getpid()}: "
              f"{type(error).__name__}: {error}; TVM keeps its own tvm.support here",
              file=sys.stderr)


def armed():
    """Whether arm()'s finder waits for tvm."""
    return any(isinstance(finder, TvmImportHook) for finder in sys.meta_path)


def _disarm():
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, TvmImportHook)]


def arm():
    """Install kiln into TVM when this process imports tvm (at once, when it already has)."""
    if "tvm" in sys.modules:
        _install()
    elif not armed():
        sys.meta_path.insert(0, TvmImportHook())


def autoload():
    """TVM's ``tvm.backends`` entry point: install kiln when the environment asks for it."""
    if wanted():
        _install()
