"""Build information, as tvm.support.libinfo."""

from __future__ import annotations

import sys
import types

from .._tvm_state import original

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def libinfo() -> dict[str, str]:
    """Returns a dictionary of compile-time info.

    With TVM loaded (``import tvm`` done), TVM's build options: through TVM's FFI
    (``support.GetLibInfo``) when the library registers it, else what tvm.support.libinfo reports
    (TVM 0.27 no longer registers it and synthesizes the values). Without TVM, kiln's: its build
    facts and the toolchains found on this machine, TVM_USE_<X> overriding USE_<X> as in TVM.
    """
    if "tvm" in sys.modules:
        source = _tvm_source()
        if source is not None:
            return source()
    from .._native import native  # pylint: disable=import-outside-toplevel

    return native.libinfo()


_TVM_SOURCE: list[Callable[[], dict[str, str]] | None] = []


def _tvm_source() -> Callable[[], dict[str, str]] | None:
    """The function giving TVM's libinfo, looked up once (None: TVM offers none)."""
    if not _TVM_SOURCE:
        _TVM_SOURCE.append(_find_tvm_source())
    return _TVM_SOURCE[0]


def _find_tvm_source() -> Callable[[], dict[str, str]] | None:
    try:
        # pylint: disable-next=import-outside-toplevel
        import tvm_ffi  # type: ignore[import-not-found,unused-ignore]

        get_lib_info = tvm_ffi.get_global_func("support.GetLibInfo", allow_missing=True)
    except (ImportError, AttributeError):
        get_lib_info = None
    if get_lib_info is not None:
        return lambda: {str(k): str(v) for k, v in get_lib_info().items()}
    # TVM's own, also while kiln.tvm.install() has put kiln's in its place.
    tvm_libinfo: Callable[[], dict[str, str]] | None = original("libinfo", "libinfo")
    return tvm_libinfo


class _CallableModule(types.ModuleType):
    """In tvm.support 0.27 the name ``libinfo`` is the function (tvm/support/__init__.py imports
    it over the submodule), so ``tvm.support.libinfo()`` is how TVM's users call it. This module
    can be called the same way, and ``kiln.support.libinfo.libinfo()`` works too."""

    def __call__(self) -> dict[str, str]:
        return libinfo()


sys.modules[__name__].__class__ = _CallableModule
