"""kiln.tvm.install() makes TVM use kiln's functions and callbacks; uninstall() gives TVM its own
back. (The CUDA callback, called the way TVM's runtime calls it, is in test_tvm_cuda.py.)"""

import os
import subprocess

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


def test_a_broken_install_says_so_in_one_line_and_tvm_keeps_working(tmp_path):
    # kiln installed as a wheel installs it (its dist-info's tvm.backends entry point), but with
    # its extension truncated, as an interrupted copy leaves it: such a file can even load and
    # then crash the process with SIGBUS. `import tvm` with KILN_TVM=1 prints one line naming the
    # file and the way out, in this process and none in those it starts; without KILN_TVM
    # nothing; TVM works with its own tvm.support either way.
    import shutil  # pylint: disable=import-outside-toplevel

    import kiln_site  # pylint: disable=import-outside-toplevel

    extension = kiln.support.cc._native.__file__
    site = tmp_path / "site"
    shutil.copytree(os.path.dirname(kiln.__file__), site / "kiln",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(extension, "rb") as whole:
        (site / "kiln" / os.path.basename(extension)).write_bytes(whole.read(1 << 20))
    python = kiln_site.make_venv(str(tmp_path / "venv"),
                                 [str(site), os.path.dirname(os.path.dirname(tvm.__file__))])
    code = ("import subprocess, sys, tvm, tvm.support.cc\n"
            "print(tvm.support.cc.create_shared.__module__)\n"
            "subprocess.run([sys.executable, '-c', 'import tvm'], check=True)\n")
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KILN_TVM")}
    for wanted in (True, False):
        env = dict(environ, KILN_TVM="1") if wanted else environ
        done = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout == "tvm.support.cc\n", done.stdout + done.stderr
        if not wanted:
            assert done.stderr == ""
            continue
        (line,) = done.stderr.splitlines()
        assert line.startswith("kiln: KILN_TVM=1, but kiln is broken"), line
        assert os.path.basename(extension) in line and "truncated" in line, line
        assert "reinstall kiln" in line and "unset KILN_TVM" in line, line
