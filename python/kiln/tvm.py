"""Make Apache TVM use kiln: ``kiln.tvm.install()``, undone by ``kiln.tvm.uninstall()``.

install() points ``tvm.support.<module>.<name>`` at kiln.support's function of the same name (for
every function and class kiln.support.<module> defines that TVM's module has too), and registers
kiln's functions as TVM's global callbacks (tvm_callback_cuda_compile, ...), with override. TVM's
C++ side and every ``tvm.support.cc.create_shared(...)``-style call then run kiln. TVM's own
modules that copied a name out of tvm.support before install() (``from tvm.support.popen_pool
import PopenPoolExecutor`` in MetaSchedule's builders and runners, the RPC server) get kiln's too;
code outside TVM that did so keeps TVM's. Importing this module does not import TVM; install()
does (ImportError when TVM is not installed).

Which processes install() reaches:

- this process, at once;
- every process this process starts afterwards, and every process those start: install() sets
  ``KILN_TVM=1`` in this process's environment, and a process that inherits it installs kiln the
  moment it imports tvm (kiln._tvm_hook). kiln's pool workers (kiln.support.popen_pool: the pools
  of MetaSchedule's LocalBuilder and LocalRunner and of TVM's RPC server once kiln is installed)
  do that themselves; any other Python process (``python -m tvm.exec.rpc_server``, TVM's own
  popen workers, a subprocess running a script) does it through the ``tvm.backends`` entry point
  that the kiln wheel declares and ``import tvm`` calls, so it needs kiln installed in its
  interpreter (a process that only has this checkout on PYTHONPATH sees no entry point), and
  TVM's backend autoload on (not TVM_DEVICE_BACKEND_AUTOLOAD=0);
- not processes started with an environment of their own that drops KILN_TVM, nor processes
  already running.

uninstall() gives TVM back its own functions here and removes KILN_TVM from the environment, so
processes started afterwards keep TVM's; processes already started keep what they have.

What install() replaced is kept in kiln._tvm_state, which kiln._tvm_hook and kiln.support.libinfo
read too: this module imports kiln.support, and nothing of kiln imports this one but the hook.
"""

from __future__ import annotations

import os
import sys

from . import _tvm_state as state
from . import support
from ._tvm_state import VARIABLE, installed, original

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

__all__ = ["install", "installed", "original", "uninstall"]

# tvm.support modules whose functions kiln replaces: all of kiln.support's (the one list).
MODULES = support._MODULES  # pylint: disable=protected-access

# TVM's global functions -> (kiln.support module, function).
GLOBALS = {
    "tvm_callback_cuda_compile": ("nvcc", "tvm_callback_cuda_compile"),
    "tvm_callback_libdevice_path": ("nvcc", "find_libdevice_path"),
    "tvm.support.nvcc.get_compute_version": ("nvcc", "get_target_compute_version"),
    "tvm.support.nvcc.supports_bf16": ("nvcc", "have_bf16"),
    "tvm.support.nvcc.supports_fp8": ("nvcc", "have_fp8"),
    "tvm.support.nvcc.supports_fp4": ("nvcc", "have_fp4"),
    "tvm_callback_rocm_link": ("rocm", "callback_rocm_link"),
    "tvm_callback_rocm_bitcode_path": ("rocm", "callback_rocm_bitcode_path"),
    "tvm_callback_rocm_get_arch": ("rocm", "get_rocm_arch"),
    "s_tir.meta_schedule.builder.export_ndk": ("ndk", "_ndk_export"),
}

# Modules that tasks import while they run, by the prefix of the task function's
# "module.qualname": the worker template of kiln.support.popen_pool imports them ahead.
# LocalBuilder.build's tasks run default_build, which imports tvm.s_tir.tensor_intrin (25-50 s
# on two cores) inside the builder's timeout; its sanity check and the runner's tasks do not.
TEMPLATE_COMPANIONS = {
    "tvm.s_tir.meta_schedule.builder.local_builder.LocalBuilder.build.": ("tvm.s_tir.tensor_intrin",),
}


def _replace_copies(replaced: list[tuple[object, object]]) -> None:
    """In every loaded tvm.* module, point names bound to a replaced TVM object at kiln's."""
    by_id = {id(tvm_object): kiln_object for tvm_object, kiln_object in replaced}
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("tvm.") or module_name.startswith("tvm.support."):
            continue
        for name, value in list(getattr(module, "__dict__", {}).items()):
            kiln_object = by_id.get(id(value))
            if kiln_object is not None:
                state.copies[(module_name, name)] = value
                setattr(module, name, kiln_object)


def _replacements(module: str) -> Iterator[tuple[str, Callable[..., Any]]]:
    """(name, kiln object) for each function or class kiln.support.<module> defines."""
    kiln_module = getattr(support, module)  # kiln.support loads it on first use
    for name, value in vars(kiln_module).items():
        if callable(value) and getattr(value, "__module__", None) == kiln_module.__name__:
            yield name, value


def install() -> None:
    """Make TVM use kiln's tvm.support functions and global callbacks (idempotent)."""
    # pylint: disable-next=import-outside-toplevel
    import tvm_ffi  # type: ignore[import-not-found,unused-ignore]

    # Here, not at the top: it loads kiln's extension, which importing kiln.tvm must not.
    from .support import _popen_template  # pylint: disable=import-outside-toplevel

    with state.lock:
        if installed():
            return
        replaced: list[tuple[object, object]] = []
        for module in MODULES:
            tvm_module = state.tvm_module(module)
            for name, value in _replacements(module):
                if hasattr(tvm_module, name):
                    state.attributes[(module, name)] = getattr(tvm_module, name)
                    replaced.append((state.attributes[(module, name)], value))
                    setattr(tvm_module, name, value)
        _replace_copies(replaced)
        state.attributes[("", "describe")] = state.tvm_module("").describe
        setattr(state.tvm_module(""), "describe", support.describe)
        os.environ[VARIABLE] = "1"  # what this process starts installs kiln too
        # What a MetaSchedule build imports inside its timed task (default_build): the worker
        # template imports it once, instead of every worker within its build timeout.
        _popen_template.Template.companions.update(TEMPLATE_COMPANIONS)
        for global_name, (module, name) in GLOBALS.items():
            function = dict(_replacements(module)).get(name)
            if function is None:
                continue
            state.functions[global_name] = tvm_ffi.get_global_func(global_name, allow_missing=True)
            tvm_ffi.register_global_func(global_name, function, override=True)


def uninstall() -> None:
    """Give TVM back its own functions and callbacks (a no-op when not installed)."""
    with state.lock:
        if not installed():
            return
        # pylint: disable-next=import-outside-toplevel
        import tvm_ffi  # type: ignore[import-not-found,unused-ignore]

        for (module, name), value in state.attributes.items():
            setattr(state.tvm_module(module), name, value)
        for (module_name, name), value in state.copies.items():
            loaded = sys.modules.get(module_name)
            if loaded is not None:
                setattr(loaded, name, value)
        for global_name, function in state.functions.items():
            if function is None:
                tvm_ffi.remove_global_func(global_name)
            else:
                tvm_ffi.register_global_func(global_name, function, override=True)
        state.attributes.clear()
        state.functions.clear()
        state.copies.clear()
        os.environ.pop(VARIABLE, None)
