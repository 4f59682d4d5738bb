"""kiln.support: Apache TVM's tvm.support (0.27), run by kiln.

The modules are loaded on first use (``kiln.support.cc``, ``from kiln.support import nvcc``), so
that importing kiln.support stays cheap.
"""

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

    # What __getattr__ loads on first use, as type checkers should see it.
    from . import cc, clang, emcc, ndk, nvcc, popen_pool, rocm, tar, utils, xcode
    from .libinfo import libinfo as libinfo  # as in tvm.support: the name is the function

# The one list of kiln.support's modules, those of tvm.support: __getattr__ loads them, kiln.tvm
# replaces TVM's functions module by module from it; the imports for type checkers above and the
# lists of the tests are checked against it (python/tests/test_module_list.py).
_MODULES = (
    "cc", "clang", "emcc", "libinfo", "ndk", "nvcc", "popen_pool", "rocm", "tar", "utils", "xcode",
)

__all__ = ["describe", *_MODULES]


def __getattr__(name: str) -> "ModuleType":  # (a string: nothing imported for it)
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def describe() -> None:
    """Print out information about TVM (or kiln, without TVM) and the current Python environment."""
    from ._describe import describe as _describe  # pylint: disable=import-outside-toplevel

    _describe()
