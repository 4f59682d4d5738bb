"""Tar archives, as tvm.support.tar: in-process (libarchive), hostile archives refused."""

import os

from .._native import native as _native


def tar(output, files):
    """Create a gzip-compressed tarball at `output` holding `files` under their base names.

    Raises ValueError for two files with the same base name, FileNotFoundError for a missing file.
    """
    _native.tar(os.fspath(output), [os.fspath(f) for f in files])


tar.output_format = "tar"


def untar(tar_file, directory):
    """Unpack the archive `tar_file` (plain or gzip) into `directory`.

    Members that would land outside `directory` (absolute paths, "..", links) are refused with a
    RuntimeError naming the member, and nothing is written outside.
    """
    _native.untar(os.fspath(tar_file), os.fspath(directory))


def normalize_file_list_by_unpacking_tars(temp, file_list):
    """Replace each ".tar" in `file_list` by the files it holds, unpacked into temp/temp<N>.

    `temp` is a TempDirectory (or a directory path); other paths are kept as they are.
    """
    directory = temp.temp_dir if hasattr(temp, "temp_dir") else os.fspath(temp)
    return _native.normalize_file_list_by_unpacking_tars(
        directory, [os.fspath(f) for f in file_list]
    )
