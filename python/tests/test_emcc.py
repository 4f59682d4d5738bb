"""Parity of kiln.support.emcc with apache-tvm 0.27's tvm.support.emcc, on this machine's
Emscripten.

TVM's web runtime (web/dist/wasm/*.bc) is not built here: TVM_HOME points, for both sides alike, at
a tree whose runtime libraries are small objects compiled by emcc, each defining one function.
"""

import os
import subprocess
import sys

import pytest
from conftest import require_tool, same_error, tvm_module

import kiln.support.emcc as kiln_emcc

RUNTIME = ("wasm_runtime.bc", "tvmjs_support.bc", "webgpu_runtime.bc")
KERNEL = "int kernel_add(int a, int b) { return a + b; }\n"


@pytest.fixture(name="tvm_emcc")
def fixture_tvm_emcc():
    return tvm_module("emcc")


def _emcc_object(directory, name, source):
    """An object compiled by emcc -c (named `name`, as TVM's web build names its .bc files)."""
    emcc = require_tool("emcc")
    directory.mkdir(parents=True, exist_ok=True)
    src = directory / (name + ".c")
    src.write_text(source)
    obj = directory / name
    subprocess.run([emcc, "-O2", "-c", str(src), "-o", str(obj)], check=True)
    return obj


@pytest.fixture(name="tvm_home")
def fixture_tvm_home(tmp_path, monkeypatch):
    """TVM_HOME with web/dist/wasm/{wasm_runtime,tvmjs_support,webgpu_runtime}.bc, and
    web/dist/tvmjs_support.bc as well (found in both directories)."""
    home = tmp_path / "tvm-home"
    wasm = home / "web" / "dist" / "wasm"
    for i, name in enumerate(RUNTIME):
        _emcc_object(wasm, name, f"int runtime_part_{i}(void) {{ return {i}; }}\n")
    _emcc_object(home / "web" / "dist", "tvmjs_support.bc", "int dist_part(void) { return 7; }\n")
    monkeypatch.setenv("TVM_HOME", str(home))
    return home


def test_object_format(tvm_emcc):
    assert kiln_emcc.create_tvmjs_wasm.object_format == tvm_emcc.create_tvmjs_wasm.object_format
    assert kiln_emcc.create_tvmjs_wasm.object_format == "bc"


def test_find_wasm_lib_in_both_directories(tvm_emcc, tvm_home):
    expected = tvm_emcc.find_wasm_lib("tvmjs_support.bc")
    assert kiln_emcc.find_wasm_lib("tvmjs_support.bc") == expected
    assert len(expected) == 2  # web/dist/wasm first, then web/dist


def test_find_wasm_lib_in_one_directory(tvm_emcc, tvm_home):
    expected = tvm_emcc.find_wasm_lib("wasm_runtime.bc")
    assert kiln_emcc.find_wasm_lib("wasm_runtime.bc") == expected
    assert expected == [str(tvm_home / "web" / "dist" / "wasm" / "wasm_runtime.bc")]


def test_find_wasm_lib_missing(tvm_emcc, tvm_home):
    assert kiln_emcc.find_wasm_lib("missing.js", optional=True) is None
    assert tvm_emcc.find_wasm_lib("missing.js", optional=True) is None
    assert same_error(
        lambda: tvm_emcc.find_wasm_lib("missing.js"), lambda: kiln_emcc.find_wasm_lib("missing.js")
    ) is RuntimeError


def test_find_wasm_lib_without_tvm_home_uses_tvm_s_tree(tvm_emcc, monkeypatch):
    """Without TVM_HOME both search TVM's top directory (the wheel has no web/dist)."""
    monkeypatch.delenv("TVM_HOME", raising=False)
    expected = tvm_emcc.find_wasm_lib("wasm_runtime.bc", optional=True)
    assert kiln_emcc.find_wasm_lib("wasm_runtime.bc", optional=True) == expected
    if expected is None:
        assert same_error(
            lambda: tvm_emcc.find_wasm_lib("wasm_runtime.bc"),
            lambda: kiln_emcc.find_wasm_lib("wasm_runtime.bc"),
        ) is RuntimeError


def test_find_wasm_lib_without_tvm_loaded_searches_tvm_s_tree(tvm_emcc, tvm_home, monkeypatch):
    """Without TVM_HOME and with TVM not imported, kiln still searches TVM's top directory (found
    from the installed package, without importing TVM), as 0.27 does."""
    del tvm_emcc, tvm_home
    monkeypatch.delenv("TVM_HOME")
    from tvm import libinfo  # pylint: disable=import-outside-toplevel

    script = (
        "import sys, kiln.support.emcc as e; "
        "print(e._root()); print(e.find_wasm_lib('wasm_runtime.bc', optional=True)); "
        "print('tvm' in sys.modules)"
    )
    lines = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    top = os.fspath(libinfo._dev_top_directory())  # pylint: disable=protected-access
    assert lines == [top, "None", "False"]


def _both_wasm(tvm_emcc, tmp_path, objects, **kwargs):
    """create_tvmjs_wasm by each side to its own file; returns (tvm's bytes, kiln's bytes)."""
    tvm_emcc.create_tvmjs_wasm(str(tmp_path / "tvm.wasm"), objects, **kwargs)
    kiln_emcc.create_tvmjs_wasm(str(tmp_path / "kiln.wasm"), objects, **kwargs)
    return (tmp_path / "tvm.wasm").read_bytes(), (tmp_path / "kiln.wasm").read_bytes()


def test_create_tvmjs_wasm_byte_equal(tvm_emcc, tvm_home, tmp_path):
    obj = str(_emcc_object(tmp_path / "objs", "lib0.bc", KERNEL))
    options = ["-s", "EXPORTED_FUNCTIONS=_kernel_add,_runtime_part_0,_runtime_part_1"]
    expected, result = _both_wasm(tvm_emcc, tmp_path, [obj], options=options)
    assert result == expected
    assert result[:4] == b"\0asm" and b"kernel_add" in result and b"runtime_part_1" in result


def test_create_tvmjs_wasm_one_object_as_str_and_libs(tvm_emcc, tvm_home, tmp_path):
    obj = str(_emcc_object(tmp_path / "objs", "lib0.bc", KERNEL))
    extra = str(_emcc_object(tmp_path / "libs", "extra.bc", "int extra_fn(void) { return 5; }\n"))
    options = ["-s", "EXPORTED_FUNCTIONS=_kernel_add,_extra_fn"]
    expected, result = _both_wasm(tvm_emcc, tmp_path, obj, options=options, libs=[extra])
    assert result == expected
    assert b"extra_fn" in result


def test_create_tvmjs_wasm_with_its_own_runtime(tvm_emcc, tvm_home, tmp_path):
    """An object named wasm_runtime.bc replaces the runtime library."""
    runtime = "int own_runtime(void) { return 1; }\n"
    own = str(_emcc_object(tmp_path / "own", "wasm_runtime.bc", runtime))
    options = ["-s", "EXPORTED_FUNCTIONS=_own_runtime"]
    expected, result = _both_wasm(tvm_emcc, tmp_path, [own], options=options)
    assert result == expected
    assert b"own_runtime" in result


def test_create_tvmjs_wasm_bad_libs(tvm_emcc, tvm_home, tmp_path):
    obj = str(_emcc_object(tmp_path / "objs", "lib0.bc", KERNEL))
    out = str(tmp_path / "out.wasm")
    assert same_error(
        lambda: tvm_emcc.create_tvmjs_wasm(out, [obj], libs="extra.bc"),
        lambda: kiln_emcc.create_tvmjs_wasm(out, [obj], libs="extra.bc"),
    ) is ValueError
    missing = [str(tmp_path / "missing.bc")]
    assert same_error(
        lambda: tvm_emcc.create_tvmjs_wasm(out, [obj], libs=missing),
        lambda: kiln_emcc.create_tvmjs_wasm(out, [obj], libs=missing),
    ) is RuntimeError


def test_create_tvmjs_wasm_without_runtime_libraries(tvm_emcc, tmp_path, monkeypatch):
    monkeypatch.setenv("TVM_HOME", str(tmp_path / "empty-home"))
    out = str(tmp_path / "out.wasm")
    assert same_error(
        lambda: tvm_emcc.create_tvmjs_wasm(out, ["lib0.bc"]),
        lambda: kiln_emcc.create_tvmjs_wasm(out, ["lib0.bc"]),
    ) is RuntimeError


def test_create_tvmjs_wasm_compile_error(tvm_emcc, tvm_home, tmp_path):
    bad = tmp_path / "bad.bc"
    bad.write_text("not an object\n")
    out = str(tmp_path / "out.wasm")
    assert same_error(
        lambda: tvm_emcc.create_tvmjs_wasm(out, [str(bad)]),
        lambda: kiln_emcc.create_tvmjs_wasm(out, [str(bad)]),
    ) is RuntimeError
    with pytest.raises(RuntimeError, match="Compilation error:"):
        kiln_emcc.create_tvmjs_wasm(out, [str(bad)])


@pytest.mark.usefixtures("tvm_home")
def test_create_tvmjs_wasm_missing_compiler(tvm_emcc, tmp_path):
    out = str(tmp_path / "out.wasm")
    assert same_error(
        lambda: tvm_emcc.create_tvmjs_wasm(out, ["lib0.bc"], cc="no-such-emcc-kiln"),
        lambda: kiln_emcc.create_tvmjs_wasm(out, ["lib0.bc"], cc="no-such-emcc-kiln"),
    ) is FileNotFoundError
