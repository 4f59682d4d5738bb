"""The Android NDK's standalone compiler, as tvm.support.ndk, run by kiln's C++ library.

$TVM_NDK_CC names the compiler (e.g. .../bin/aarch64-linux-android24-clang); llvm-ar, llvm-ranlib
and llvm-nm come from its directory. Without it every function raises RuntimeError, as 0.27 does.
_ndk_export is the function TVM registers as s_tir.meta_schedule.builder.export_ndk;
``kiln.tvm.install()`` registers it (importing this module registers nothing).
"""

from __future__ import annotations

import os
import tempfile

from .._native import native as _native
from .cc import get_target_by_dump_machine

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from _typeshed import StrPath

__all__ = ["create_shared", "create_staticlib", "get_global_symbol_section_map"]

_NO_COMPILER = "Require environment variable TVM_NDK_CC to be the NDK standalone compiler"


def _paths(objects: StrPath | Iterable[StrPath]) -> list[str]:
    if isinstance(objects, str | os.PathLike):
        return [os.fspath(objects)]
    return [os.fspath(o) for o in objects]


def _require_compiler() -> None:
    if "TVM_NDK_CC" not in os.environ:
        raise RuntimeError(_NO_COMPILER)


def create_shared(
    output: StrPath, objects: StrPath | Iterable[StrPath], options: Sequence[str] | None = None
) -> None:
    """Create a shared library: ``$TVM_NDK_CC -o output objects... options...``.

    options: the compiler's options after the objects; None or empty: ``-shared -fPIC -lm``.
    A failing compiler raises RuntimeError("Compilation error:...").
    """
    _require_compiler()
    options = list(options) if options else None  # None: the defaults
    _native.ndk_create_shared(os.fspath(output), _paths(objects), options)


# Attributes of a function, which type checkers do not track (python/mypy#2087).
create_shared.output_format = "so"  # type: ignore[attr-defined]
create_shared.get_target_triple = (  # type: ignore[attr-defined]
    get_target_by_dump_machine(os.environ["TVM_NDK_CC"]) if "TVM_NDK_CC" in os.environ else None
)


def create_staticlib(output: StrPath, inputs: StrPath | Iterable[StrPath]) -> None:
    """Create a static library with the NDK's ``llvm-ar qcs`` then ``llvm-ranlib`` (.tar inputs
    are unpacked first); the library is moved to `output` once complete."""
    _require_compiler()
    _native.ndk_create_staticlib(os.fspath(output), _paths(inputs))


create_staticlib.output_format = "a"  # type: ignore[attr-defined]


def get_global_symbol_section_map(path: StrPath, *, nm: StrPath | None = None) -> dict[str, str]:
    """Map each defined global symbol of `path` to its section letter, with the NDK's llvm-nm
    (or `nm`)."""
    _require_compiler()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} does not exist")
    return dict(_native.ndk_get_global_symbol_section_map(path, os.fspath(nm) if nm else ""))


def _ndk_export(mod: Any) -> str:
    """s_tir.meta_schedule.builder.export_ndk: export `mod` as a shared library built by the NDK
    (create_shared) in a new temporary directory; returns the library's path. `mod` is a
    tvm.runtime.Module (TVM has no type information)."""
    binary_path = os.path.join(tempfile.mkdtemp(), "tmp_binary.so")
    mod.export_library(binary_path, fcompile=create_shared)
    return binary_path
