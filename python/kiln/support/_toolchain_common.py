"""What kiln.support's rocm, ndk, xcode, emcc and clang modules share: TVM's facts when TVM is
loaded, never importing it otherwise."""

from __future__ import annotations

import sys


def tvm_loaded() -> bool:
    """Whether TVM has been imported in this process (kiln never imports it itself)."""
    return "tvm" in sys.modules


def tvm_llvm_major() -> int | None:
    """The LLVM major version TVM was built with, when TVM is loaded and knows it; else None."""
    if not tvm_loaded():
        return None
    try:
        # pylint: disable-next=import-outside-toplevel
        import tvm.target  # type: ignore[import-untyped,import-not-found,unused-ignore]

        major: int | None = tvm.target.codegen.llvm_version_major(allow_none=True)
        return major
    except Exception:  # pylint: disable=broad-except
        # A TVM without LLVM, or one still being imported: no preference.
        return None

