"""Tar archives, as tvm.support.tar: in-process (libarchive), hostile archives refused."""

from __future__ import annotations

import os

from .._native import native as _native

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Protocol

    from _typeshed import StrPath

    class _TempDirectory(Protocol):
        """kiln.support.utils.TempDirectory, or tvm.support's."""

        @property
        def temp_dir(self) -> str: ...


def tar(output: StrPath, files: Iterable[StrPath]) -> None:
    """Create a gzip-compressed tarball at `output` holding `files` under their base names.

    Raises ValueError for two files with the same base name, FileNotFoundError for a missing file.
    """
    _native.tar(os.fspath(output), [os.fspath(f) for f in files])


# An attribute of a function, which type checkers do not track (python/mypy#2087).
tar.output_format = "tar"  # type: ignore[attr-defined]


def untar(tar_file: StrPath, directory: StrPath) -> None:
    """Unpack the archive `tar_file` (plain or gzip) into `directory`.

    Members that would land outside `directory` (absolute paths, "..", links) are refused with a
    RuntimeError naming the member, and nothing is written outside.
    """
    _native.untar(os.fspath(tar_file), os.fspath(directory))


def normalize_file_list_by_unpacking_tars(
    temp: _TempDirectory | StrPath, file_list: Iterable[StrPath]
) -> list[str]:
    """Replace each ".tar" in `file_list` by the files it holds, unpacked into temp/temp<N>.

    `temp` is a TempDirectory (or a directory path); other paths are kept as they are.
    """
    directory = temp.temp_dir if hasattr(temp, "temp_dir") else os.fspath(temp)
    return _native.normalize_file_list_by_unpacking_tars(
        directory, [os.fspath(f) for f in file_list]
    )
