"""What kiln.support's rocm, ndk, xcode, emcc and clang modules share: TVM's facts when TVM is
loaded, never importing it otherwise."""

import sys


def tvm_loaded():
    """Whether TVM has been imported in this process (kiln never imports it itself)."""
    return "tvm" in sys.modules


def tvm_llvm_major():
    """The LLVM major version TVM was built with, when TVM is loaded and knows it; else None."""
    if not tvm_loaded():
        return None
    try:
        import tvm.target  # pylint: disable=import-outside-toplevel

        return tvm.target.codegen.llvm_version_major(allow_none=True)
    except Exception:  # pylint: disable=broad-except
        # A TVM without LLVM, or one still being imported: no preference.
        return None

