"""Parity of kiln.support.clang with apache-tvm 0.27's tvm.support.clang, on this machine's clang.

Every test imports tvm.support.clang first, so TVM is loaded and both sides prefer the clang of
TVM's LLVM major (tvm.target.codegen.llvm_version_major()).
"""

import os
import re

import pytest
from conftest import require_tool, same_error, tvm_module

import kiln.support.clang as kiln_clang

SOURCE = "int add_one(int a) { return a + 1; }\n"


@pytest.fixture(name="tvm_clang")
def fixture_tvm_clang():
    require_tool("clang")
    return tvm_module("clang")


def _tvm_llvm_major():
    import tvm.target  # pylint: disable=import-outside-toplevel

    return tvm.target.codegen.llvm_version_major(allow_none=True)


def test_find_clang_same_list(tvm_clang):
    assert kiln_clang.find_clang() == tvm_clang.find_clang()
    assert kiln_clang.find_clang(required=False) == tvm_clang.find_clang(required=False)


def test_find_clang_prefers_tvm_llvm_major(tvm_clang, tmp_path, monkeypatch):
    """A clang-<TVM's LLVM major> on PATH (here a real clang under that name) comes first."""
    real = require_tool("clang-15")
    major = _tvm_llvm_major()
    if major is None:
        pytest.skip("this TVM reports no LLVM version")
    (tmp_path / f"clang-{major}").symlink_to(real)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    found = kiln_clang.find_clang()
    assert found == tvm_clang.find_clang()
    assert found[0] == str(tmp_path / f"clang-{major}")


def _ir_without_temp_names(ir):
    """The IR with the temporary input file's path (ModuleID, source_filename) blanked."""
    return re.sub(r"/[^\s\"']*/input(\d+)\.cc", r"<tmp>/input\1.cc", ir)


def test_create_llvm_from_a_file_is_byte_equal(tvm_clang, tmp_path):
    source = tmp_path / "add.c"
    source.write_text(SOURCE)
    expected = tvm_clang.create_llvm([str(source)])
    assert kiln_clang.create_llvm([str(source)]) == expected
    assert "define" in expected and "add_one" in expected


def test_create_llvm_writes_output(tvm_clang, tmp_path):
    source = tmp_path / "add.c"
    source.write_text(SOURCE)
    tvm_ir = tvm_clang.create_llvm(str(source), output=str(tmp_path / "tvm.ll"))
    kiln_ir = kiln_clang.create_llvm(str(source), output=str(tmp_path / "kiln.ll"))
    assert kiln_ir == tvm_ir
    assert (tmp_path / "kiln.ll").read_bytes() == (tmp_path / "tvm.ll").read_bytes()


def test_create_llvm_inline_source(tvm_clang):
    """Inline code is written to input0.cc in a temporary directory (different on each side)."""
    expected = _ir_without_temp_names(tvm_clang.create_llvm(SOURCE))
    assert _ir_without_temp_names(kiln_clang.create_llvm(SOURCE)) == expected
    assert "<tmp>/input0.cc" in expected


def test_create_llvm_options_and_cc(tvm_clang, tmp_path):
    cc = require_tool("clang-14")
    source = tmp_path / "add.c"
    source.write_text(SOURCE)
    options = ["-O2", "--target=aarch64-linux-gnu"]
    expected = tvm_clang.create_llvm([str(source)], options=options, cc=cc)
    assert kiln_clang.create_llvm([str(source)], options=options, cc=cc) == expected
    assert 'target triple = "aarch64' in expected


def test_create_llvm_compile_error(tvm_clang):
    error = same_error(
        lambda: tvm_clang.create_llvm("int broken("),
        lambda: kiln_clang.create_llvm("int broken("),
    )
    assert error is RuntimeError
    with pytest.raises(RuntimeError, match="Compilation error:"):
        kiln_clang.create_llvm("int broken(")


def test_create_llvm_two_inputs_one_output(tvm_clang):
    """clang refuses -o with two inputs: both raise the same RuntimeError."""
    sources = [SOURCE, "int other(void) { return 2; }\n"]
    error = same_error(
        lambda: tvm_clang.create_llvm(sources), lambda: kiln_clang.create_llvm(sources)
    )
    assert error is RuntimeError


def test_create_llvm_missing_compiler(tvm_clang):
    error = same_error(
        lambda: tvm_clang.create_llvm(SOURCE, cc="no-such-clang-kiln"),
        lambda: kiln_clang.create_llvm(SOURCE, cc="no-such-clang-kiln"),
    )
    assert error is FileNotFoundError
