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
        info = _tvm_libinfo()
        if info is not None:
            return info
    from .._native import native  # pylint: disable=import-outside-toplevel

    return dict(native.libinfo())


def _tvm_libinfo():
    try:
        import tvm_ffi  # pylint: disable=import-outside-toplevel

        get_lib_info = tvm_ffi.get_global_func("support.GetLibInfo", allow_missing=True)
    except (ImportError, AttributeError):
        get_lib_info = None
    if get_lib_info is not None:
        return {str(k): str(v) for k, v in get_lib_info().items()}
    from .. import tvm as _kiln_tvm  # pylint: disable=import-outside-toplevel

    original = _kiln_tvm.original("libinfo", "libinfo")
    return original() if original is not None else None
