"""kiln's hold on TVM in this process: whether ``kiln.tvm.install()`` is in effect, what it replaced
(to give back on uninstall(), and to find TVM's own functions while kiln's are in their place),
and the environment variable that carries the install to the processes this one starts.

kiln.tvm changes it; kiln._tvm_hook (which installs kiln in a process that inherits the variable)
and kiln.support.libinfo (which asks for TVM's own libinfo) read it. It imports nothing of kiln,
so that every module of the package may import it; and neither TVM nor kiln's extension.
"""

from __future__ import annotations

import importlib
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

    from tvm_ffi import Function  # type: ignore[import-not-found,unused-ignore]

__all__ = ["VARIABLE", "attributes", "copies", "functions", "installed", "lock", "original",
           "tvm_module"]

# "1" in a process's environment: install kiln into TVM the moment the process imports tvm.
VARIABLE = "KILN_TVM"

# Held while install() or uninstall() changes what follows.
lock = threading.Lock()
# (tvm.support module, name) -> TVM's attribute, while installed (module "": tvm.support itself).
attributes: dict[tuple[str, str], Any] = {}
# TVM global function name -> TVM's function (None: there was none), while installed.
functions: dict[str, Function | None] = {}
# (loaded tvm.* module name, name) -> TVM's object, for modules that had copied it, while installed.
copies: dict[tuple[str, str], object] = {}


def installed() -> bool:
    """Whether kiln.tvm.install() is in effect."""
    return bool(attributes or functions)


def tvm_module(module: str) -> ModuleType:
    """tvm.support.<module>, or tvm.support itself for module "" (ImportError without TVM)."""
    return importlib.import_module("tvm.support" + (f".{module}" if module else ""))


def original(module: str, name: str) -> Any:
    """TVM's own tvm.support.<module>.<name> (module "": tvm.support.<name>), installed or not;
    None when TVM or it is absent."""
    if (module, name) in attributes:
        return attributes[(module, name)]
    try:
        loaded = tvm_module(module)
    except ImportError:
        return None
    return getattr(loaded, name, None)
