"""kiln.support.utils against tvm.support.utils: temporary directories (including the debug mode and
exit-hook internals TVM's own test_util.py reaches into), file locks, is_source_path, which."""

import datetime
import os
import pathlib
import shutil
import threading

import pytest

from conftest import same_error, tvm_module
from kiln.support import utils


def test_tempdir_is_made_and_removed(workdir):
    temp = utils.tempdir()
    path = temp.temp_dir
    assert os.path.isdir(path) and path in utils.TempDirectory.TEMPDIRS
    with open(temp.relpath("file"), "w", encoding="utf-8") as file:
        file.write("x")
    os.mkdir(temp.relpath("sub"))
    assert sorted(temp.listdir()) == ["file", "sub"]
    assert temp.path == pathlib.Path(path) and temp / "file" == pathlib.Path(path) / "file"
    with pytest.raises(TypeError):
        temp / 3  # pylint: disable=pointless-statement
    temp.remove()
    assert not os.path.exists(path) and temp.temp_dir is None
    with utils.tempdir() as scoped:
        scoped_path = scoped.temp_dir
    assert not os.path.exists(scoped_path)


def test_custom_path_must_not_exist(workdir):
    custom = str(workdir / "custom")
    temp = utils.tempdir(custom_path=custom)
    assert temp.temp_dir == custom and os.path.isdir(custom)
    tvm_utils = tvm_module("utils")
    assert same_error(lambda: tvm_utils.tempdir(custom_path=custom),
                      lambda: utils.tempdir(custom_path=custom)) is FileExistsError
    temp.remove()


def debug_number_and_age(temp):
    parent, name = os.path.split(temp.temp_dir)
    stamp = os.path.basename(parent).split("___", 1)[0]
    age = datetime.datetime.now() - datetime.datetime.strptime(stamp, "%Y-%m-%dT%H-%M-%S")
    return name, age


def test_debug_mode_numbers_kept_directories_and_exit_hook_ends_creation():
    assert utils.TempDirectory._KEEP_FOR_DEBUG is False
    saved_tempdirs = utils.TempDirectory.TEMPDIRS
    saved_count = utils.TempDirectory._NUM_TEMPDIR_CREATED
    try:
        names = []
        with utils.TempDirectory.set_keep_for_debug():
            for _ in range(3):
                kept = utils.tempdir()
                name, age = debug_number_and_age(kept)
                names.append(name)
                assert abs(age) < datetime.timedelta(seconds=60)
                assert kept.temp_dir not in utils.TempDirectory.TEMPDIRS
                kept_path = kept.temp_dir
                kept.remove()  # only forgotten
                assert os.path.isdir(kept_path) and kept.temp_dir is None
            assert names == [f"{n:05d}" for n in range(saved_count, saved_count + 3)]
            with utils.TempDirectory.set_keep_for_debug(False):
                doomed = utils.tempdir()
                doomed_path = doomed.temp_dir
                utils.TempDirectory.remove_tempdirs()
                utils.TempDirectory.remove_tempdirs()  # twice: a no-op
                assert not os.path.exists(doomed_path)
                with pytest.raises(utils.DirectoryCreatedPastAtExit):
                    utils.tempdir()
        assert utils.TempDirectory._KEEP_FOR_DEBUG is False
    finally:
        shutil.rmtree(utils.TempDirectory._DEBUG_PARENT_DIR, ignore_errors=True)
        utils.TempDirectory._DEBUG_PARENT_DIR = None
        utils.TempDirectory.TEMPDIRS = saved_tempdirs


def test_file_lock_excludes_another_holder(workdir):
    path = str(workdir / "lock")
    lock = utils.filelock(path)
    acquired = threading.Event()

    def other():
        second = utils.FileLock(path)
        acquired.set()
        second.release()

    thread = threading.Thread(target=other)
    thread.start()
    assert not acquired.wait(0.3)  # held by us
    lock.release()
    lock.release()  # twice: a no-op
    thread.join(10)
    assert acquired.is_set() and lock.lock_file is None


def test_file_lock_in_a_missing_directory_is_the_same_error(workdir):
    tvm_utils = tvm_module("utils")
    path = str(workdir / "no" / "lock")
    assert same_error(lambda: tvm_utils.filelock(path),
                      lambda: utils.filelock(path)) is FileNotFoundError


@pytest.mark.parametrize("text", [
    "kernel.cu", "a.b", "int main() {}\n", "no_extension", "x. y", "/etc/passwd", "", "dir/f.o",
    "code with spaces.c", "trailing.",
])
def test_is_source_path_matches_tvm(text):
    assert utils.is_source_path(text) == tvm_module("utils").is_source_path(text)


@pytest.mark.parametrize("name", ["gcc", "sh", "ls", "no-such-tool-kiln", "/bin/sh"])
def test_which_matches_tvm(name):
    assert utils.which(name) == tvm_module("utils").which(name)
