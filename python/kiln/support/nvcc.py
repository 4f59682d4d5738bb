"""CUDA compiles (NVRTC or nvcc) and the CUDA toolkit, as tvm.support.nvcc, run by kiln's library.

The names, signatures, defaults, return types and exception types are tvm.support 0.27's:
compile_cuda returns a bytearray, a failed compile raises RuntimeError with the compiler's log, a
bad argument ValueError, a toolkit part that cannot be found RuntimeError. What kiln adds:

- NVRTC is loaded by kiln (no cuda-bindings package needed) and, from Python, compiles in kiln's
  NVRTC compile server (the kiln program shipped with this package, KILN_SERVICE_PROGRAM), whose
  precompiled headers make the toolkit's headers nearly free.
- Results go through kiln's kernel cache (KILN_CACHE_DIR, KILN_NO_CACHE: see kiln's README),
  keyed by everything that changes the output; TVM_KERNEL_DUMP turns it off for that compile.
- When TVM has been imported, a missing arch comes from ``tvm.target.Target.current()`` as in
  TVM; kiln never imports TVM itself. Without TVM (or outside a target scope), from GPU 0 when
  there is one, else ValueError asking for an arch.

Where kiln differs from 0.27 on purpose, the function's docstring says so.
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
import warnings

from .._native import native as _native

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Protocol, TypeVar

    from _typeshed import StrPath

    _T = TypeVar("_T")

    class _Target(Protocol):
        """What kiln reads of a tvm.target.Target: its attributes ("arch": "sm_80")."""

        @property
        def attrs(self) -> Mapping[str, object]: ...

__all__ = [
    "callback_libdevice_path",
    "compile_cuda",
    "find_cuda_path",
    "find_libdevice_path",
    "find_nvshmem_paths",
    "get_cuda_version",
    "get_target_compute_version",
    "have_bf16",
    "have_cudagraph",
    "have_fp16",
    "have_fp4",
    "have_fp8",
    "have_int8",
    "have_tensorcore",
    "parse_compute_version",
    "tvm_callback_cuda_compile",
]

def _current_target() -> _Target | None:
    """TVM's current target when TVM is already imported and a target scope is open, else None."""
    target_module = sys.modules.get("tvm.target")
    if target_module is None:
        return None
    target: _Target | None = target_module.Target.current(allow_none=True)
    return target


def _digits(compute_version: str) -> str:
    """ "9.0.a" -> "90a": the arch suffix of sm_XY / compute_XY."""
    return compute_version.replace(".", "")


def _not_found_as_runtime_error(call: Callable[..., _T], *args: object) -> _T:
    """call(*args), a missing file or toolkit reported as RuntimeError (as tvm.support does)."""
    try:
        return call(*args)
    except FileNotFoundError as error:
        raise RuntimeError(error.strerror or str(error)) from None


def _ptxas_option_flags() -> list[str]:
    """The flags kiln (and TVM) give ptxas: -v, --register-usage-level (TVM_CUDA_PTXAS_REG_LEVEL,
    default 10), --warn-on-local-memory-usage, then TVM_CUDA_PTXAS_EXTRA_OPTS split as a shell
    would."""
    flags = [
        "-v",
        f"--register-usage-level={os.environ.get('TVM_CUDA_PTXAS_REG_LEVEL', '10')}",
        "--warn-on-local-memory-usage",
    ]
    extra = os.environ.get("TVM_CUDA_PTXAS_EXTRA_OPTS", "").strip()
    if extra:
        flags.extend(shlex.split(extra))
    return flags


def _option_list(options: str | list[str] | None) -> list[str]:
    """The options as a list of str (one str is one option; bytes are decoded)."""
    if options is None:
        return []
    if isinstance(options, str):
        return [options]
    if not isinstance(options, list):
        raise ValueError("options must be str or list of str")
    return [o.decode() if isinstance(o, bytes) else str(o) for o in options]


def compile_cuda(
    code: str,
    target_format: str | None = None,
    arch: str | Sequence[str] | None = None,
    options: str | list[str] | None = None,
    path_target: StrPath | None = None,
    compiler: str = "nvrtc",
) -> bytearray:
    """Compile CUDA source with NVRTC (default) or nvcc; the result as a bytearray.

    target_format: "ptx", "cubin" or "fatbin" (nvcc only); default cubin with NVRTC, ptx with
    nvcc (cubin when the code includes nvshmem.h or nvshmemx.h). arch: "sm_80", "sm_90a",
    "compute_80", or for nvcc a list of nvcc arguments such as ``["-gencode",
    "arch=compute_80,code=sm_80"]``; None: TVM's current target's, else GPU 0's. options: one
    option or a list (NVRTC drops nvcc-only ones such as -O3 and -std=...). path_target: also
    write the result there. compiler: "nvrtc" or "nvcc" (ValueError otherwise).

    Unlike 0.27, nvcc with an explicit arch does not also require a target or a GPU (0.27 asks
    for a compute version it never uses), and NVRTC needs no cuda-bindings package.
    """
    use_nvshmem = "#include <nvshmem.h>" in code or "#include <nvshmemx.h>" in code
    if compiler == "nvcc":
        return _compile_cuda_nvcc(code, target_format, arch, options, path_target, use_nvshmem)
    if compiler == "nvrtc":
        return _compile_cuda_nvrtc(code, target_format, arch, options, path_target, use_nvshmem)
    raise ValueError(f"CUDA compiler must be 'nvcc' or 'nvrtc', got: {compiler}")


def _compile_cuda_nvcc(
    code: str,
    target_format: str | None = None,
    arch: str | Sequence[str] | None = None,
    options: str | list[str] | None = None,
    path_target: StrPath | None = None,
    use_nvshmem: bool = False,
) -> bytearray:
    """compile_cuda with nvcc (use_nvshmem is read from the code itself)."""
    del use_nvshmem  # kiln's C++ side reads it from the code, as compile_cuda does
    if arch is None:
        # TVM's rule: the target's own sm_ arch when it has one, else its compute version.
        target = _current_target()
        target_arch = getattr(target, "arch", None) if target is not None else None
        if isinstance(target_arch, str) and target_arch.startswith("sm_"):
            suffix = target_arch[3:]
        else:
            suffix = _digits(get_target_compute_version(target))
        arch = [f"sm_{suffix}"]  # kiln's nvcc: -gencode arch=compute_<suffix>,code=sm_<suffix>
    if options and not isinstance(options, str | list):
        raise ValueError("options must be str or list of str")
    return _compile(code, target_format, arch, _option_list(options or None), path_target, "nvcc")


def _compile_cuda_nvrtc(
    code: str,
    target_format: str | None = None,
    arch: str | Sequence[str] | None = None,
    options: str | list[str] | None = None,
    path_target: StrPath | None = None,
    use_nvshmem: bool = False,
) -> bytearray:
    """compile_cuda with NVRTC (use_nvshmem is read from the code itself)."""
    del use_nvshmem  # kiln's C++ side reads it from the code, as compile_cuda does
    options = _option_list(options)
    if arch is None:
        arch = "sm_" + _digits(get_target_compute_version(_current_target()))
    try:
        return _compile(code, target_format, arch, options, path_target, "nvrtc")
    except FileNotFoundError as error:  # no toolkit or no headers: RuntimeError in 0.27
        raise RuntimeError(error.strerror or str(error)) from None


def _compile(
    code: str,
    target_format: str | None,
    arch: str | Sequence[str],
    options: list[str],
    path_target: StrPath | None,
    compiler: str,
) -> bytearray:
    if isinstance(arch, list | tuple):
        arch = [str(word) for word in arch]
    result, cache_warning = _native.compile_cuda(
        code,
        target_format or "",
        arch,
        options,
        os.fspath(path_target) if path_target else "",
        compiler,
    )
    if cache_warning:  # compiled uncached; shown once per process (the same text, one line)
        warnings.warn(cache_warning, RuntimeWarning, stacklevel=2)
    return result


def _find_cuda_target_include(cuda_path: str) -> str | None:
    """The toolkit's targets/<triple>/include directory, or None (ARM64 servers: sbsa-linux)."""
    machine = platform.machine()
    system = platform.system().lower()
    triples = [f"{machine}-{system}"]
    if system == "linux" and machine.lower() in ("aarch64", "arm64"):
        triples.insert(0, "sbsa-linux")
    for triple in triples:
        include_dir = os.path.join(cuda_path, "targets", triple, "include")
        if os.path.isdir(include_dir):
            return include_dir
    return None


def find_cuda_path() -> str:
    """The CUDA toolkit's root: $CUDA_PATH, else two levels above the real path of nvcc on PATH,
    else /usr/local/cuda when it has bin/nvcc; RuntimeError when none."""
    return _not_found_as_runtime_error(_native.find_cuda_path)


def get_cuda_version(cuda_path: StrPath | None = None) -> tuple[int, int, int]:
    """The toolkit's version as a tuple of ints, e.g. (13, 0, 88), from version.txt, Debian's
    lib/cuda/version.txt, version.json or ``nvcc --version``. cuda_path None: find_cuda_path().

    kiln always gives three fields (a version file saying "12.4" gives (12, 4, 0)).
    """
    if cuda_path is None:
        cuda_path = find_cuda_path()
    return _native.get_cuda_version(os.fspath(cuda_path))


def find_nvshmem_paths() -> tuple[str, str]:
    """(include directory, library directory) of NVSHMEM; RuntimeError listing where it looked.

    Also finds NVIDIA's nvshmem wheel layout (libnvshmem_device.a, libnvshmem_host.so.N), which
    0.27 misses.
    """
    return _not_found_as_runtime_error(_native.find_nvshmem_paths)


def tvm_callback_cuda_compile(code: str) -> bytearray:
    """TVM's CUDA compile callback: TVM_CUDA_COMPILE_MODE (default "nvrtc", any case) picks NVRTC
    -> cubin or nvcc -> fatbin; the arch is TVM's current target's. ValueError for another mode."""
    compiler = os.environ.get("TVM_CUDA_COMPILE_MODE", "nvrtc").lower()
    if compiler == "nvrtc":
        return compile_cuda(code, target_format="cubin", compiler="nvrtc")
    if compiler == "nvcc":
        return compile_cuda(code, target_format="fatbin", compiler="nvcc")
    raise ValueError(f"Invalid TVM_CUDA_COMPILE_MODE: {compiler}. Expected 'nvcc' or 'nvrtc'.")


def find_libdevice_path(arch: int) -> str:
    """The libdevice bitcode for compute capability `arch` (an int, e.g. 80); RuntimeError when
    there is none."""
    return _not_found_as_runtime_error(_native.find_libdevice_path, arch)


def callback_libdevice_path(arch: int) -> str:
    """find_libdevice_path(arch), or "" with a warning ("Cannot find libdevice path: why") when
    there is none."""
    path, warning = _native.callback_libdevice_path(arch)
    if warning:
        warnings.warn(warning)
    return path


def get_target_compute_version(target: _Target | None = None) -> str:
    """The compute capability to compile for ("8.6", "9.0.a"): the arch of `target`, else of TVM's
    current target, else GPU 0's (".a" added from 9.0 on); ValueError when there is none.

    An arch kiln cannot read ("sm_xx") is ValueError, where 0.27 returns a malformed version.
    """
    target = target or _current_target()
    target_arch = str(target.attrs.get("arch", "")) if target else ""
    if target_arch:
        return _native.compute_version_of_arch(target_arch)
    return _native.get_target_compute_version("")  # GPU 0's, else ValueError saying why


def parse_compute_version(compute_version: str) -> tuple[int, int]:
    """ "8.6" -> (8, 6); RuntimeError when it is not such a version."""
    try:
        return _native.parse_compute_version(compute_version)
    except ValueError as error:
        raise RuntimeError(str(error)) from None


def _has(feature: Callable[[str], bool], compute_version: str) -> bool:
    try:
        return feature(compute_version)
    except ValueError as error:
        raise RuntimeError(str(error)) from None


def have_fp16(compute_version: str) -> bool:
    """Whether the compute capability has fp16 arithmetic (5.3, or 6.0 and later)."""
    return _has(_native.have_fp16, compute_version)


def have_int8(compute_version: str) -> bool:
    """Whether the compute capability has int8 dot products (6.0 and later)."""
    return _has(_native.have_int8, compute_version)


def have_tensorcore(compute_version: str | None = None, target: _Target | None = None) -> bool:
    """Whether the compute capability has tensor cores (7.0 and later).

    compute_version None: GPU 0's, else `target`'s arch; without either, False with a warning.
    Unlike 0.27, a target arch with a suffix or three digits ("sm_90a", "sm_100") is read, not
    a ValueError.
    """
    if compute_version is None:
        compute_version = _native.device_compute_version()
    if compute_version is None:
        if target is None or "arch" not in target.attrs:
            warnings.warn(
                "Tensorcore will be disabled due to no CUDA architecture specified."
                "Try specifying it by adding '-arch=sm_xx' to your target."
            )
            return False
        compute_version = _native.compute_version_of_arch(str(target.attrs["arch"]))
    return _has(_native.have_tensorcore, compute_version)


def have_cudagraph() -> bool:
    """Whether the CUDA toolkit supports CUDA graphs (10.0 and later); False without a toolkit."""
    return _native.have_cudagraph()


def have_bf16(compute_version: str) -> bool:
    """Whether the compute capability has bf16 (8.0 and later)."""
    return _has(_native.have_bf16, compute_version)


def have_fp8(compute_version: str) -> bool:
    """Whether the compute capability has fp8 (8.9, or 9.0 and later)."""
    return _has(_native.have_fp8, compute_version)


def have_fp4(compute_version: str) -> bool:
    """Whether the compute capability has fp4 (exactly 10.0, as 0.27 says)."""
    return _has(_native.have_fp4, compute_version)
