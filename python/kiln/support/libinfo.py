"""Build information, as tvm.support.libinfo."""

import sys


def libinfo():
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


_TVM_SOURCE = []


def _tvm_source():
    """The function giving TVM's libinfo, looked up once (None: TVM offers none)."""
    if not _TVM_SOURCE:
        _TVM_SOURCE.append(_find_tvm_source())
    return _TVM_SOURCE[0]


def _find_tvm_source():
    try:
        import tvm_ffi  # pylint: disable=import-outside-toplevel

        get_lib_info = tvm_ffi.get_global_func("support.GetLibInfo", allow_missing=True)
    except (ImportError, AttributeError):
        get_lib_info = None
    if get_lib_info is not None:
        return lambda: {str(k): str(v) for k, v in get_lib_info().items()}
    from .. import tvm as _kiln_tvm  # pylint: disable=import-outside-toplevel

    return _kiln_tvm.original("libinfo", "libinfo")
