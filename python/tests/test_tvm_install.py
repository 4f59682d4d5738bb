"""kiln.tvm.install() makes TVM use kiln's functions and callbacks; uninstall() gives TVM its own
back. (The CUDA callback, called the way TVM's runtime calls it, is in test_tvm_cuda.py.)"""

import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not importable (scripts/install-deps.sh)")

import tvm.support.cc  # noqa: E402
import tvm.support.utils  # noqa: E402
import tvm_ffi  # noqa: E402

import kiln.support.cc  # noqa: E402
import kiln.support.utils  # noqa: E402
import kiln.tvm  # noqa: E402


@pytest.fixture
def installed():
    kiln.tvm.install()
    yield
    kiln.tvm.uninstall()


def test_install_points_tvm_support_at_kiln_and_uninstall_restores():
    theirs = tvm.support.cc.create_shared
    tempdir = tvm.support.utils.tempdir
    describe = tvm.support.describe
    kiln.tvm.install()
    try:
        assert kiln.tvm.installed()
        assert tvm.support.cc.create_shared is kiln.support.cc.create_shared
        assert tvm.support.cc.cross_compiler is kiln.support.cc.cross_compiler
        assert tvm.support.utils.tempdir is kiln.support.utils.tempdir
        assert tvm.support.describe is kiln.support.describe
        assert kiln.tvm.original("cc", "create_shared") is theirs
        kiln.tvm.install()  # idempotent: the originals stay TVM's
        assert kiln.tvm.original("cc", "create_shared") is theirs
    finally:
        kiln.tvm.uninstall()
    assert not kiln.tvm.installed()
    assert tvm.support.cc.create_shared is theirs and tvm.support.utils.tempdir is tempdir
    assert tvm.support.describe is describe
    kiln.tvm.uninstall()  # a no-op


def test_every_global_resolves_to_kiln_after_install(installed):
    for name, (module, attribute) in kiln.tvm.GLOBALS.items():
        kiln_module = pytest.importorskip(f"kiln.support.{module}")
        function = getattr(kiln_module, attribute, None)
        if function is None:
            continue
        assert tvm_ffi.get_global_func(name) is not None, name


def test_export_library_uses_kiln_by_default_after_install(installed, workdir, monkeypatch):
    te = pytest.importorskip("tvm.te")
    calls = []
    real = kiln.support.cc._native.create_shared

    def spy(*args):
        calls.append(args[0])
        return real(*args)

    monkeypatch.setattr(kiln.support.cc._native, "create_shared", spy, raising=False)
    a = te.placeholder((8,), name="a")
    b = te.compute((8,), lambda i: a[i] + 1.0, name="b")
    path = str(workdir / "lib.so")
    tvm.compile(te.create_prim_func([a, b]), target="llvm").export_library(path)
    assert calls == [path]
    assert tvm.runtime.load_module(path)["main"] is not None
