"""Apple toolchains through xcrun, as tvm.support.xcode, run by kiln's C++ library: dylibs, Metal
libraries and Core ML models.

Every tool runs from an argument vector (0.27 runs Metal's two steps as one shell string), so paths
with spaces or shell characters pass through untouched. Where kiln differs on purpose, for the
macosx SDK: no empty argument when min_os_version is None (0.27 passes "", which a real clang takes
for a missing input file), and -mmacosx-version-min=V when it is given (0.27's -mios-version-min
makes clang build for iOS).
"""

from __future__ import annotations

import json
import os
import sys

from .._native import native as _native

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Protocol

    from _typeshed import StrPath

    class _CoreMLModel(Protocol):
        """What compile_coreml uses of a coremltools model (coremltools.models.MLModel)."""

        short_description: str

        @property
        def input_description(self) -> Iterable[str]: ...
        @property
        def output_description(self) -> Iterable[str]: ...
        def save(self, path: str, /) -> object: ...

__all__ = ["compile_coreml", "compile_metal", "create_dylib", "xcrun"]

_SDKS = ("macosx", "iphoneos", "iphonesimulator")


def _check_sdk(sdk: str) -> None:
    if sdk not in _SDKS:
        raise RuntimeError(f"Unsupported sdk: {sdk}")


def xcrun(cmd: Iterable[StrPath]) -> bytes:
    """Run ``xcrun cmd...``; returns its output (stdout and stderr) as stripped bytes, whatever its
    exit status, as 0.27 does. FileNotFoundError when there is no xcrun."""
    return _native.xcode_xcrun([os.fspath(c) for c in cmd]).strip()


def _paths(objects: StrPath | Iterable[StrPath]) -> list[str]:
    if isinstance(objects, str | os.PathLike):
        return [os.fspath(objects)]
    return [os.fspath(o) for o in objects]


def create_dylib(
    output: StrPath,
    objects: StrPath | Iterable[StrPath],
    arch: str,
    sdk: str = "macosx",
    min_os_version: str | None = None,
) -> None:
    """Create a dynamic library with the SDK's clang: ``clang -dynamiclib -arch ARCH -isysroot
    <sdk path> [-mios-version-min=V | -mmacosx-version-min=V] -o output objects...``.

    sdk: macosx, iphoneos or iphonesimulator (RuntimeError otherwise); the iOS SDKs default to
    min_os_version 13.0. A failing clang raises RuntimeError("Compilation error:...").
    """
    _check_sdk(sdk)
    _native.xcode_create_dylib(os.fspath(output), _paths(objects), arch, sdk, min_os_version)


# An attribute of a function, which type checkers do not track (python/mypy#2087).
create_dylib.output_format = "dylib"  # type: ignore[attr-defined]


def compile_metal(
    code: str,
    path_target: StrPath | None = None,
    sdk: str = "macosx",
    min_os_version: str | None = None,
) -> bytearray | None:
    """Compile Metal source to a metallib: ``xcrun -sdk SDK metal -std=<macos|ios>-metal2.3
    [minimum OS version, as for create_dylib] -O3 -c`` then ``xcrun -sdk SDK metallib``.

    Returns the metallib's bytes (bytearray), also written to `path_target` when given. When a tool
    fails, its output goes to stderr and the result is None, as in 0.27.
    """
    _check_sdk(sdk)
    try:
        metallib = _native.xcode_compile_metal(
            code, os.fspath(path_target) if path_target else "", sdk, min_os_version
        )
    except RuntimeError as error:
        sys.stderr.write(f"{error}\n")
        sys.stderr.flush()
        return None
    return bytearray(metallib)


def compile_coreml(
    model: _CoreMLModel | StrPath, model_name: str = "main", out_dir: StrPath = "."
) -> str:
    """Compile a Core ML model with ``xcrun coremlcompiler compile``; returns the compiled
    model's path, <out_dir>/<model_name>.mlmodelc.

    model: a coremltools model, as in 0.27: the names of its inputs and outputs are written, as
    JSON, into its short_description (where TVM's Core ML runtime reads them), and it is saved as
    <out_dir>/<model_name>.mlmodel. kiln also takes the path of a saved .mlmodel, into whose copy
    kiln's C++ layer writes the same description. RuntimeError when the compiler produced nothing.
    """
    out_dir = os.fspath(out_dir)
    if isinstance(model, str | os.PathLike):
        mlmodel_path = os.fspath(model)
    else:
        mlmodel_path = os.path.join(out_dir, model_name + ".mlmodel")
        metadata = {
            "inputs": list(model.input_description),
            "outputs": list(model.output_description),
        }
        model.short_description = json.dumps(metadata)
        model.save(mlmodel_path)
    return _native.xcode_compile_coreml(mlmodel_path, model_name, out_dir)
