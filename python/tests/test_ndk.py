"""Parity of kiln.support.ndk with apache-tvm 0.27's tvm.support.ndk.

No Android NDK is installed here. TVM_NDK_CC is set, for both sides alike, to a real compiler in an
NDK-like directory (with llvm-ar, llvm-ranlib and llvm-nm beside it): either the host's gcc, or
clang-15 for aarch64-linux-android24 (a two-line wrapper adding --target, as the NDK's own
aarch64-linux-android24-clang script does). Without the NDK's sysroot, the Android compiler can
only link -nostdlib libraries.
"""

import importlib
import os
import subprocess
import tarfile

import pytest
from conftest import require_tool, same_error, tvm_module

import kiln.support.ndk as kiln_ndk

SOURCE = "int add(int a, int b) { return a + b; }\nint counter = 3;\n"
OTHER = "int twice(int a) { return 2 * a; }\n"


@pytest.fixture(name="tvm_ndk")
def fixture_tvm_ndk():
    return tvm_module("ndk")


def _ndk_dir(path, compiler_name, compiler_text=None, compiler_link=None):
    """An NDK-like bin directory: the compiler plus the LLVM binutils ndk.py looks for."""
    path.mkdir()
    compiler = path / compiler_name
    if compiler_text is not None:
        compiler.write_text(compiler_text)
        compiler.chmod(0o755)
    else:
        compiler.symlink_to(compiler_link)
    for tool in ("llvm-ar", "llvm-ranlib", "llvm-nm"):
        (path / tool).symlink_to(require_tool(tool))
    return compiler


@pytest.fixture(name="host_ndk")
def fixture_host_ndk(tmp_path, monkeypatch):
    """TVM_NDK_CC = the host's gcc (so default options link a real library)."""
    compiler = _ndk_dir(tmp_path / "host-ndk", "gcc", compiler_link=require_tool("gcc"))
    monkeypatch.setenv("TVM_NDK_CC", str(compiler))
    return compiler


@pytest.fixture(name="android_ndk")
def fixture_android_ndk(tmp_path, monkeypatch):
    """TVM_NDK_CC = clang-15 for aarch64-linux-android24, linking with lld."""
    clang = require_tool("clang-15")
    require_tool("ld.lld")
    script = (
        "#!/bin/sh\n# Stand-in for the NDK's aarch64-linux-android24-clang (test fixture).\n"
        f'exec {clang} --target=aarch64-linux-android24 -fuse-ld=lld '
        '-Wno-unused-command-line-argument "$@"\n'
    )
    compiler = _ndk_dir(tmp_path / "android-ndk", "aarch64-linux-android24-clang", script)
    monkeypatch.setenv("TVM_NDK_CC", str(compiler))
    return compiler


def _objects(compiler, directory, sources=(SOURCE, OTHER)):
    """Position-independent objects compiled by `compiler`."""
    objects = []
    for i, text in enumerate(sources):
        source = directory / f"part{i}.c"
        source.write_text(text)
        obj = directory / f"part{i}.o"
        subprocess.run([str(compiler), "-fPIC", "-c", str(source), "-o", str(obj)], check=True)
        objects.append(str(obj))
    return objects


def test_create_shared_default_options_byte_equal(tvm_ndk, host_ndk, tmp_path):
    objects = _objects(host_ndk, tmp_path)
    tvm_ndk.create_shared(str(tmp_path / "libtvm.so"), objects)
    kiln_ndk.create_shared(str(tmp_path / "libkiln.so"), objects)
    library = (tmp_path / "libkiln.so").read_bytes()
    assert library == (tmp_path / "libtvm.so").read_bytes()
    assert library[:4] == b"\x7fELF"


def test_create_shared_android_byte_equal(tvm_ndk, android_ndk, tmp_path):
    objects = _objects(android_ndk, tmp_path)
    options = ["-shared", "-fPIC", "-nostdlib"]
    tvm_ndk.create_shared(str(tmp_path / "libtvm.so"), objects, options)
    kiln_ndk.create_shared(str(tmp_path / "libkiln.so"), objects, options)
    library = (tmp_path / "libkiln.so").read_bytes()
    assert library == (tmp_path / "libtvm.so").read_bytes()
    assert library[18:20] == (183).to_bytes(2, "little")  # e_machine EM_AARCH64


def test_create_shared_one_object_as_str(tvm_ndk, android_ndk, tmp_path):
    (obj,) = _objects(android_ndk, tmp_path, sources=(SOURCE,))
    tvm_ndk.create_shared(str(tmp_path / "libtvm.so"), obj, ["-shared", "-nostdlib"])
    kiln_ndk.create_shared(str(tmp_path / "libkiln.so"), obj, ["-shared", "-nostdlib"])
    assert (tmp_path / "libkiln.so").read_bytes() == (tmp_path / "libtvm.so").read_bytes()


def test_create_shared_link_error(tvm_ndk, android_ndk, tmp_path):
    """The default options need the NDK's sysroot (-lm, crtbegin_so.o): both fail alike."""
    objects = _objects(android_ndk, tmp_path)
    error = same_error(
        lambda: tvm_ndk.create_shared(str(tmp_path / "libtvm.so"), objects),
        lambda: kiln_ndk.create_shared(str(tmp_path / "libkiln.so"), objects),
    )
    assert error is RuntimeError
    with pytest.raises(RuntimeError, match="Compilation error:"):
        kiln_ndk.create_shared(str(tmp_path / "libkiln.so"), objects)


def test_create_shared_missing_compiler(tvm_ndk, tmp_path, monkeypatch):
    monkeypatch.setenv("TVM_NDK_CC", str(tmp_path / "no-such-clang"))
    assert same_error(
        lambda: tvm_ndk.create_shared(str(tmp_path / "a.so"), [str(tmp_path / "a.o")]),
        lambda: kiln_ndk.create_shared(str(tmp_path / "a.so"), [str(tmp_path / "a.o")]),
    ) is FileNotFoundError


def test_without_tvm_ndk_cc_every_function_raises(tvm_ndk, tmp_path, monkeypatch):
    monkeypatch.delenv("TVM_NDK_CC", raising=False)
    library = tmp_path / "lib.so"
    library.write_bytes(b"")
    calls = [
        ("create_shared", (str(library), ["a.o"])),
        ("create_staticlib", (str(tmp_path / "lib.a"), ["a.o"])),
        ("get_global_symbol_section_map", (str(library),)),
    ]
    for name, args in calls:
        assert same_error(
            lambda name=name, args=args: getattr(tvm_ndk, name)(*args),
            lambda name=name, args=args: getattr(kiln_ndk, name)(*args),
        ) is RuntimeError, name


def test_create_staticlib_byte_equal_with_a_tar(tvm_ndk, android_ndk, tmp_path):
    """Objects and a .tar of objects (unpacked first); llvm-ar is deterministic."""
    first, second = _objects(android_ndk, tmp_path)
    bundle = tmp_path / "more.tar"
    with tarfile.open(bundle, "w") as tar:
        tar.add(second, arcname="part1.o")
    inputs = [first, str(bundle)]
    (tmp_path / "tvm").mkdir()
    (tmp_path / "kiln").mkdir()
    tvm_ndk.create_staticlib(str(tmp_path / "tvm" / "libparts.a"), inputs)
    kiln_ndk.create_staticlib(str(tmp_path / "kiln" / "libparts.a"), inputs)
    archive = (tmp_path / "kiln" / "libparts.a").read_bytes()
    assert archive == (tmp_path / "tvm" / "libparts.a").read_bytes()
    assert archive.startswith(b"!<arch>\n") and b"part1.o" in archive


def test_create_staticlib_bad_input(tvm_ndk, android_ndk, tmp_path):
    missing = [str(tmp_path / "missing.o")]
    assert same_error(
        lambda: tvm_ndk.create_staticlib(str(tmp_path / "libtvm.a"), missing),
        lambda: kiln_ndk.create_staticlib(str(tmp_path / "libkiln.a"), missing),
    ) is RuntimeError


def test_get_global_symbol_section_map(tvm_ndk, android_ndk, tmp_path):
    objects = _objects(android_ndk, tmp_path)
    library = str(tmp_path / "libparts.so")
    kiln_ndk.create_shared(library, objects, ["-shared", "-nostdlib"])
    expected = tvm_ndk.get_global_symbol_section_map(library)
    assert kiln_ndk.get_global_symbol_section_map(library) == expected
    assert expected["add"] == "T" and expected["counter"] == "D"
    nm = require_tool("llvm-nm")
    assert kiln_ndk.get_global_symbol_section_map(library, nm=nm) == expected
    missing = str(tmp_path / "missing.so")
    assert same_error(
        lambda: tvm_ndk.get_global_symbol_section_map(missing),
        lambda: kiln_ndk.get_global_symbol_section_map(missing),
    ) is FileNotFoundError


def test_output_formats(tvm_ndk):
    assert kiln_ndk.create_shared.output_format == tvm_ndk.create_shared.output_format == "so"
    assert kiln_ndk.create_staticlib.output_format == tvm_ndk.create_staticlib.output_format == "a"


def test_get_target_triple_is_set_at_import(tvm_ndk, android_ndk, monkeypatch):
    """create_shared.get_target_triple: $TVM_NDK_CC -dumpmachine when it was set at import, else
    None. kiln's triple has no trailing newline (kiln.support.cc strips it; TVM strips it where it
    reads it)."""
    tvm_cc = tvm_module("cc")
    try:
        module = importlib.reload(kiln_ndk)
        triple = module.create_shared.get_target_triple()
        assert triple == tvm_cc.get_target_by_dump_machine(str(android_ndk))().strip()
        assert triple.startswith("aarch64") and "android" in triple
        monkeypatch.delenv("TVM_NDK_CC")
        assert importlib.reload(kiln_ndk).create_shared.get_target_triple is None
    finally:
        monkeypatch.undo()
        importlib.reload(kiln_ndk)


def _tvm_add_one_module():
    import tvm  # pylint: disable=import-outside-toplevel
    from tvm import te  # pylint: disable=import-outside-toplevel

    a = te.placeholder((16,), name="A", dtype="float32")
    b = te.compute(a.shape, lambda i: a[i] + 1.0, name="B")
    return tvm.compile(te.create_prim_func([a, b]), target="llvm").mod  # a runtime.Module


def _run_add_one(path):
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tvm  # pylint: disable=import-outside-toplevel

    module = tvm.runtime.load_module(path)
    a = tvm.runtime.tensor(np.arange(16, dtype="float32"))
    b = tvm.runtime.tensor(np.zeros(16, dtype="float32"))
    module["main"](a, b)
    return b.numpy()


def test_ndk_export_builds_a_loadable_library(tvm_ndk, host_ndk):
    """s_tir.meta_schedule.builder.export_ndk: a TVM module exported through the NDK compiler
    (here the host's gcc, so that the library loads and runs here)."""
    module = _tvm_add_one_module()
    tvm_path = str(tvm_ndk._ndk_export(module))  # pylint: disable=protected-access
    kiln_path = kiln_ndk._ndk_export(module)  # pylint: disable=protected-access
    assert isinstance(kiln_path, str)
    assert os.path.basename(kiln_path) == os.path.basename(tvm_path) == "tmp_binary.so"
    assert os.path.dirname(kiln_path) != os.path.dirname(tvm_path)
    expected = _run_add_one(tvm_path)
    assert (_run_add_one(kiln_path) == expected).all()
    assert expected[3] == 4.0


def test_ndk_export_through_tvm_global(tvm_ndk, host_ndk, monkeypatch):
    """After kiln.tvm.install(), TVM's s_tir.meta_schedule.builder.export_ndk is kiln's: it links
    with kiln.support.ndk.create_shared (recorded here)."""
    import tvm_ffi  # pylint: disable=import-outside-toplevel

    import kiln.tvm  # pylint: disable=import-outside-toplevel

    del tvm_ndk  # loaded: TVM's own export_ndk is registered
    linked = []
    original = kiln_ndk.create_shared

    def recording_create_shared(output, objects, options=None):
        linked.append(output)
        original(output, objects, options)

    recording_create_shared.output_format = original.output_format
    monkeypatch.setattr(kiln_ndk, "create_shared", recording_create_shared)
    module = _tvm_add_one_module()
    kiln.tvm.install()
    try:
        path = tvm_ffi.get_global_func("s_tir.meta_schedule.builder.export_ndk")(module)
    finally:
        kiln.tvm.uninstall()
    assert [os.fspath(p) for p in linked] == [str(path)]
    assert os.path.basename(path) == "tmp_binary.so"
    assert _run_add_one(str(path))[15] == 16.0
