"""clang and LLVM IR, as tvm.support.clang, run by kiln's C++ library.

find_clang prefers the clang of the LLVM that TVM was built with when TVM is loaded (as
tvm.support.clang does), else the one kiln was built with. Importing this module does not import
TVM.
"""

from __future__ import annotations

import os

from .._native import native as _native
from ._toolchain_common import tvm_llvm_major

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from _typeshed import StrPath

__all__ = ["create_llvm", "find_clang"]


def find_clang(required: bool = True) -> list[str]:
    """Every clang found: clang-<M>.0, clang-<M> (M: TVM's LLVM major), clang, clang.exe.

    Each name is looked up as tvm.support.utils.which does (itself, /bin, then PATH). With
    `required`, finding none raises RuntimeError listing the candidates; otherwise the list may be
    empty.
    """
    return list(_native.clang_find_clang(bool(required), tvm_llvm_major()))


def create_llvm(
    inputs: str | Iterable[StrPath],
    output: StrPath | None = None,
    options: Sequence[str] | None = None,
    cc: StrPath | None = None,
) -> str:
    """LLVM text IR from C/C++: ``cc -S -emit-llvm options... -o output inputs...``.

    inputs: a file name or inline source, or a list of them (an input that is not a source path
    is written to input<i>.cc in a temporary directory). output: where the IR goes (None: a
    temporary file). cc: the clang to run (None: the first of find_clang()). Returns the IR text;
    a failing compile raises RuntimeError("Compilation error:...").
    """
    cc = cc if cc else find_clang()[0]
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    return _native.clang_create_llvm(
        [os.fspath(i) for i in inputs],
        os.fspath(output) if output else "",
        list(options or []),
        os.fspath(cc),
    )
