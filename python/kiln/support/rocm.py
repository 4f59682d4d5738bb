"""ROCm, as tvm.support.rocm, run by kiln's C++ library: ld.lld for AMDGPU code objects, the
device libraries' bitcode, the GPU's architecture and the ROCm installation.

The three functions TVM registers as global callbacks (tvm_callback_rocm_link,
tvm_callback_rocm_bitcode_path, tvm_callback_rocm_get_arch) are here under tvm.support.rocm's
names; ``kiln.tvm.install()`` registers them. Importing this module does not import TVM or
register anything.

Where kiln differs on purpose: without ROCm installed, callback_rocm_bitcode_path also looks in
the distribution's device-library directories (Debian's /usr/lib/<multiarch>/amdgcn/bitcode/)
instead of failing; get_rocm_arch falls back to "gfx900" when rocminfo is missing too (0.27
raises FileNotFoundError from subprocess there).
"""

from __future__ import annotations

import os

from .._native import native as _native
from ._toolchain_common import tvm_llvm_major, tvm_loaded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from _typeshed import ReadableBuffer, StrPath

__all__ = [
    "callback_rocm_bitcode_path",
    "callback_rocm_link",
    "find_lld",
    "find_rocm_path",
    "get_rocm_arch",
    "have_matrixcore",
    "parse_compute_version",
    "rocm_link",
]


def find_lld(required: bool = True) -> list[str]:
    """Every ld.lld found: ld.lld-<M>.0, ld.lld-<M> (M: TVM's LLVM major, when TVM is loaded),
    ld.lld, then the same names under /opt/rocm/llvm/bin/.

    With `required`, finding none raises RuntimeError listing the candidates.
    """
    return list(_native.rocm_find_lld(bool(required), tvm_llvm_major()))


def rocm_link(in_file: StrPath, out_file: StrPath, lld: StrPath | None = None) -> None:
    """Link a relocatable AMDGPU object into a code object: ``ld.lld --no-undefined -shared in -o
    out`` (lld None: the first of find_lld()). An undefined symbol fails here, with the linker's
    message, as RuntimeError("Linking error using ld.lld:...")."""
    lld = lld if lld is not None else find_lld()[0]
    _native.rocm_link(os.fspath(in_file), os.fspath(out_file), os.fspath(lld))


def callback_rocm_link(obj_bin: ReadableBuffer) -> bytearray:
    """tvm_callback_rocm_link: the object file's bytes in, the HSA code object's bytes out
    (bytearray)."""
    return bytearray(_native.rocm_callback_link(bytes(obj_bin), find_lld()[0]))


def _as_tvm_array(paths: list[str]) -> Sequence[str]:
    """A list for Python; TVM's Array (what 0.27 returns) when TVM is loaded."""
    if tvm_loaded():
        try:
            # pylint: disable-next=import-outside-toplevel
            import tvm.runtime  # type: ignore[import-untyped,import-not-found,unused-ignore]

            array: Sequence[str] = tvm.runtime.convert(paths)
            return array
        except (ImportError, AttributeError):
            pass
    return paths


def callback_rocm_bitcode_path(rocdl_dir: StrPath | None = None) -> Sequence[str]:
    """tvm_callback_rocm_bitcode_path: the ROCm device libraries to link, in link order.

    rocdl_dir: where they are (None: <ROCm>/amdgcn/bitcode/, else /opt/rocm/lib/, else the
    distribution's amdgcn/bitcode directory). Each is N.bc or N.amdgcn.bc; a missing one other than
    an isa_version or irif library raises RuntimeError naming it. Returns TVM's Array of str when
    TVM is loaded, else a list.
    """
    paths = _native.rocm_bitcode_path(os.fspath(rocdl_dir) if rocdl_dir is not None else "")
    return _as_tvm_array(list(paths))


def parse_compute_version(compute_version: str) -> tuple[int, int]:
    """(major, minor) of a compute version such as "9.0"; RuntimeError without two numbers."""
    parts = compute_version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError) as error:
        raise RuntimeError("Compute version parsing error: " + str(error)) from None


def have_matrixcore(compute_version: str | None = None) -> bool:
    """Whether a GPU of this compute version has matrix cores (major >= 8).

    compute_version None: that of ROCm device 0, through TVM's runtime; RuntimeError when TVM is not
    loaded or has no ROCm device.
    """
    if compute_version is None:
        compute_version = _rocm_device_compute_version()
    major, _ = parse_compute_version(compute_version)
    return major >= 8


def _rocm_device_compute_version() -> str:
    if tvm_loaded():
        # pylint: disable-next=import-outside-toplevel
        import tvm  # type: ignore[import-untyped,import-not-found,unused-ignore]

        device = tvm.rocm(0)
        if device.exist:
            compute_version: str = device.compute_version
            return compute_version
    raise RuntimeError("No ROCm runtime found")


def get_rocm_arch(rocm_path: StrPath | None = None) -> str:
    """tvm_callback_rocm_get_arch: the AMD GPU's architecture ("gfx90a", ...) from
    <rocm_path>/bin/rocminfo (rocm_path None: find_rocm_path()).

    Without ROCm, or when rocminfo cannot tell, prints why and returns the default "gfx900".
    """
    arch, reason = _native.rocm_get_arch(os.fspath(rocm_path) if rocm_path is not None else "")
    if reason:
        print(reason)
    return arch


def find_rocm_path() -> str:
    """The ROCm installation: $ROCM_PATH, else two levels above the real path of hipcc on PATH,
    else /opt/rocm when it has bin/hipcc; RuntimeError when there is none."""
    return _native.rocm_find_rocm_path()
