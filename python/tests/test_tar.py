"""kiln.support.tar against tvm.support.tar: same members and contents both ways round; the same
errors; hostile archives refused without writing outside the target."""

import os
import tarfile

import pytest

from conftest import same_error, tvm_module
from kiln.support import tar as ktar
from kiln.support import utils


@pytest.fixture
def ttar():
    return tvm_module("tar")


def make_files(directory, names):
    paths = []
    for index, name in enumerate(names):
        path = os.path.join(directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as file:
            file.write(bytes([index]) * (1000 * (index + 1)))
        paths.append(path)
    return paths


def members(archive):
    with tarfile.open(archive) as bundle:
        return {m.name.lstrip("./"): bundle.extractfile(m).read() for m in bundle if m.isfile()}


def test_tar_holds_the_same_members_as_tvms(ttar, workdir):
    files = make_files(str(workdir / "in"), ["a.o", "sub/b.o", "c.txt"])
    ours, theirs = str(workdir / "k.tar"), str(workdir / "t.tar")
    ktar.tar(ours, files)
    ttar.tar(theirs, files)
    assert members(ours) == members(theirs) and set(members(ours)) == {"a.o", "b.o", "c.txt"}
    assert ktar.tar.output_format == ttar.tar.output_format == "tar"


def test_untar_reads_tvms_archives_and_tvm_reads_ours(ttar, workdir):
    files = make_files(str(workdir / "in"), ["a.o", "b.o"])
    ttar.tar(str(workdir / "t.tar"), files)
    ktar.tar(str(workdir / "k.tar"), files)
    for archive, unpack in (("t.tar", ktar.untar), ("k.tar", ttar.untar)):
        target = workdir / ("out-" + archive)
        target.mkdir()
        unpack(str(workdir / archive), str(target))
        assert sorted(os.listdir(target)) == ["a.o", "b.o"]
        with open(target / "b.o", "rb") as file:
            assert file.read() == bytes([1]) * 2000


def test_normalize_file_list(ttar, workdir):
    files = make_files(str(workdir / "in"), ["a.o", "b.o"])
    bundle = str(workdir / "objs.tar")
    ktar.tar(bundle, files)
    loose = make_files(str(workdir / "loose"), ["c.o"])[0]
    with utils.tempdir() as ours, tvm_module("utils").tempdir() as theirs:
        kiln_list = ktar.normalize_file_list_by_unpacking_tars(ours, [loose, bundle])
        tvm_list = ttar.normalize_file_list_by_unpacking_tars(theirs, [loose, bundle])
        # tvm.support lists an archive's files in os.walk order; kiln sorts them (deterministic).
        assert kiln_list[0] == tvm_list[0] == loose
        assert sorted(os.path.relpath(p, ours.temp_dir) for p in kiln_list[1:]) == sorted(
            os.path.relpath(p, theirs.temp_dir) for p in tvm_list[1:]) == ["temp0/a.o", "temp0/b.o"]


def test_errors_match_tvms(ttar, workdir):
    files = make_files(str(workdir / "x"), ["a.o"]) + make_files(str(workdir / "y"), ["a.o"])
    out = str(workdir / "dup.tar")
    assert same_error(lambda: ttar.tar(out, files), lambda: ktar.tar(out, files)) is ValueError
    missing = [str(workdir / "missing.o")]
    assert same_error(lambda: ttar.tar(out, missing),
                      lambda: ktar.tar(out, missing)) is FileNotFoundError
    not_tar = str(workdir / "junk.tar")
    with open(not_tar, "w", encoding="utf-8") as file:
        file.write("this is not a tar archive\n" * 40)
    target = workdir / "t"
    target.mkdir()
    assert same_error(lambda: ttar.untar(not_tar, str(target)),
                      lambda: ktar.untar(not_tar, str(target))) is RuntimeError


def test_a_hostile_member_is_refused_and_nothing_lands_outside(workdir):
    evil = str(workdir / "evil.tar")
    payload = workdir / "payload"
    payload.write_bytes(b"owned")
    with tarfile.open(evil, "w") as bundle:
        bundle.add(str(payload), arcname="../escaped")
    target = workdir / "target"
    target.mkdir()
    with pytest.raises(RuntimeError, match="escaped"):
        ktar.untar(evil, str(target))
    assert not (workdir / "escaped").exists()
