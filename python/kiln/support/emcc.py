"""Emscripten for tvmjs, as tvm.support.emcc, run by kiln's C++ library: TVM's WebAssembly runtime
libraries linked with the generated objects into one standalone .wasm module.

The runtime libraries (wasm_runtime.bc, tvmjs_support.bc, webgpu_runtime.bc) are found under
<root>/web/dist/wasm and <root>/web/dist, where root is $TVM_HOME, else TVM's source tree (as
0.27: two levels above the tvm package, found without importing TVM when it is not loaded).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib

from .._native import native as _native
from ._toolchain_common import tvm_loaded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from _typeshed import StrPath

__all__ = ["create_tvmjs_wasm", "find_wasm_lib"]


def _root() -> str:
    """Where web/dist is looked for: $TVM_HOME, else TVM's top directory, else "" (none)."""
    home = os.environ.get("TVM_HOME")
    if home:
        return home
    if not _tvm_top_directory:
        top = _find_tvm_top_directory()
        if not top:
            return ""
        _tvm_top_directory.append(top)  # fixed for the process once found
    return _tvm_top_directory[0]


def _find_tvm_top_directory() -> str:
    """TVM's libinfo._dev_top_directory(), <tvm package>/../.., without importing TVM when it is
    not loaded yet; "" when TVM is not installed."""
    if tvm_loaded():
        try:
            # pylint: disable-next=import-outside-toplevel
            from tvm import libinfo  # type: ignore[import-untyped,import-not-found,unused-ignore]

            top: str = os.fspath(libinfo._dev_top_directory())  # pylint: disable=protected-access
            return top
        except (ImportError, AttributeError):
            return ""
    try:
        spec = importlib.util.find_spec("tvm")
    except (ImportError, ValueError):
        return ""
    if spec is None or not spec.origin:
        return ""
    return os.fspath(pathlib.Path(spec.origin).parent / ".." / "..")


# TVM's top directory, once found.
_tvm_top_directory: list[str] = []


def find_wasm_lib(name: str, optional: bool = False) -> list[str] | None:
    """The paths of the asset `name` (a .bc or .js file) under web/dist/wasm and web/dist.

    Returns a list; when nothing is found, None if `optional`, else RuntimeError naming the
    directories searched.
    """
    found = _native.emcc_find_wasm_lib(name, bool(optional), _root())
    return None if found is None else list(found)


def create_tvmjs_wasm(
    output: StrPath,
    objects: StrPath | Iterable[StrPath],
    options: Sequence[str] | None = None,
    cc: str = "emcc",
    libs: Sequence[StrPath] | None = None,
) -> None:
    """Create a .wasm for tvmjs: ``emcc -O3 -std=c++17 --no-entry -s WASM_BIGINT=1 -s
    ERROR_ON_UNDEFINED_SYMBOLS=0 -s STANDALONE_WASM=1 -s ALLOW_MEMORY_GROWTH=1 -s
    TOTAL_MEMORY=160MB -o output`` then the runtime libraries (wasm_runtime.bc unless an object is
    one), `libs`, the objects and the options.

    libs: a list of extra library files (ValueError when not a list, RuntimeError when one is
    missing). A failing emcc raises RuntimeError("Compilation error:...").
    """
    objects = [objects] if isinstance(objects, str | os.PathLike) else objects
    if libs and not isinstance(libs, list):
        raise ValueError("Expect `libs` to be a list of paths in string.")
    _native.emcc_create_tvmjs_wasm(
        os.fspath(output),
        [os.fspath(o) for o in objects],
        list(options or []),
        cc,
        [os.fspath(lib) for lib in (libs or [])],
        _root(),
    )


# An attribute of a function, which type checkers do not track (python/mypy#2087).
create_tvmjs_wasm.object_format = "bc"  # type: ignore[attr-defined]
