"""Common system utilities, as tvm.support.utils: temporary directories, file locks, which."""

from __future__ import annotations

import atexit
import contextlib
import datetime
import os
import pathlib
import tempfile
import threading

from .._native import native as _native

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import TracebackType

    from _typeshed import StrPath
    from typing_extensions import Self

    from .. import _kiln


class DirectoryCreatedPastAtExit(Exception):
    """Raised when a TempDirectory is created after the atexit hook runs."""


class TempDirectory:
    """A temporary directory, removed (with its contents) when it goes out of scope.

    The class attributes are tvm.support.utils.TempDirectory's (TEMPDIRS, _KEEP_FOR_DEBUG, ...),
    so code and tests that reach into them keep working; removal is kiln's (C++, no per-entry
    Python overhead).
    """

    # When True, TempDirectory objects are kept, in a predictable tree, past the program's exit.
    _KEEP_FOR_DEBUG = False
    # In debug mode, each directory is named after its sequence number.
    _NUM_TEMPDIR_CREATED = 0
    _NUM_TEMPDIR_CREATED_LOCK = threading.Lock()
    _DEBUG_PARENT_DIR: str | None = None
    # The directories to remove at exit; None once the exit hook has run.
    TEMPDIRS: set[str] | None = set()

    # The directory's path (None once removed, as in tvm.support; typed str for its users).
    temp_dir: str

    @classmethod
    def _increment_num_tempdir_created(cls) -> int:
        with cls._NUM_TEMPDIR_CREATED_LOCK:
            number = cls._NUM_TEMPDIR_CREATED
            cls._NUM_TEMPDIR_CREATED += 1
        return number

    @classmethod
    def _get_debug_parent_dir(cls) -> str:
        if cls._DEBUG_PARENT_DIR is None:
            all_parents = f"{tempfile.gettempdir()}/tvm-debug-mode-tempdirs"
            os.makedirs(all_parents, exist_ok=True)
            cls._DEBUG_PARENT_DIR = tempfile.mkdtemp(
                prefix=datetime.datetime.now().strftime("%Y-%m-%dT%H-%M-%S___"), dir=all_parents
            )
        return cls._DEBUG_PARENT_DIR

    @classmethod
    def remove_tempdirs(cls) -> None:
        """Remove every directory not kept for debugging (the exit hook)."""
        temp_dirs = getattr(cls, "TEMPDIRS", None)
        if temp_dirs is None:
            return
        for path in temp_dirs:
            _native.remove_tree(path)
        cls.TEMPDIRS = None

    @classmethod
    @contextlib.contextmanager
    def set_keep_for_debug(cls, set_to: bool = True) -> Iterator[None]:
        """Keep temporary directories past program exit for debugging."""
        old_keep_for_debug = cls._KEEP_FOR_DEBUG
        try:
            cls._KEEP_FOR_DEBUG = set_to
            yield
        finally:
            cls._KEEP_FOR_DEBUG = old_keep_for_debug

    def __init__(self, custom_path: str | None = None, keep_for_debug: bool | None = None) -> None:
        if self.TEMPDIRS is None:
            raise DirectoryCreatedPastAtExit()
        if keep_for_debug is not None:
            self._created_with_keep_for_debug = keep_for_debug
        else:
            self._created_with_keep_for_debug = self._KEEP_FOR_DEBUG
        if custom_path:
            os.mkdir(custom_path)
            self.temp_dir = custom_path
        elif self._created_with_keep_for_debug:
            parent_dir = self._get_debug_parent_dir()
            self.temp_dir = f"{parent_dir}/{self._increment_num_tempdir_created():05d}"
            os.mkdir(self.temp_dir)
        else:
            self.temp_dir = tempfile.mkdtemp()
        if not self._created_with_keep_for_debug:
            self.TEMPDIRS.add(self.temp_dir)

    def remove(self) -> None:
        """Remove the directory and its contents (a kept one is only forgotten)."""
        if self.temp_dir:
            if not self._created_with_keep_for_debug:
                _native.remove_tree(self.temp_dir)
                self.TEMPDIRS.remove(self.temp_dir)  # type: ignore[union-attr]  # None: as TVM's
            self.temp_dir = None  # type: ignore[assignment]

    @property
    def path(self) -> pathlib.Path:
        return pathlib.Path(self.temp_dir)

    def __truediv__(self, other: str | pathlib.Path) -> pathlib.Path:
        if not isinstance(other, str | pathlib.Path):
            raise TypeError(
                f"TempDirectory / operator: must supply str or pathlib.Path; got {other!r}"
            )
        return self.path / other

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        ptype: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.remove()

    def __del__(self) -> None:
        if getattr(self, "TEMPDIRS", None) is None or not hasattr(self, "temp_dir"):
            return  # the exit hook has run, or __init__ failed
        self.remove()

    def relpath(self, name: StrPath) -> str:
        """The path of `name` in the directory (a str)."""
        return os.path.join(self.temp_dir, name)

    def listdir(self) -> list[str]:
        """The names of the directory's entries."""
        return os.listdir(self.temp_dir)


atexit.register(TempDirectory.remove_tempdirs)


def tempdir(custom_path: str | None = None, keep_for_debug: bool | None = None) -> TempDirectory:
    """Create a temporary directory, removed with its contents when it goes out of scope."""
    return TempDirectory(custom_path=custom_path, keep_for_debug=keep_for_debug)


class FileLock:
    """An exclusive lock on the file at `path` (created when missing), held until release()."""

    def __init__(self, path: StrPath) -> None:
        self.lock_file: _kiln.FileLock | None = _native.FileLock(os.fspath(path))

    def release(self) -> None:
        """Release the lock."""
        if self.lock_file:
            self.lock_file.release()
            self.lock_file = None


def filelock(path: StrPath) -> FileLock:
    """Lock the file at `path`, waiting for other holders; returns the FileLock."""
    return FileLock(path)


def is_source_path(path: StrPath) -> bool:
    """Whether `path` is an existing path or looks like a file name (not code text)."""
    return _native.is_source_path(os.fspath(path))


def which(exec_name: str) -> str | None:
    """The full path of executable `exec_name` (searched as tvm.support.utils.which), or None."""
    return _native.which(exec_name)
