"""kiln.support.cc against tvm.support.cc (apache-tvm 0.27), side by side on the real compilers."""

import os
import subprocess

import pytest

from conftest import require_tool, same_error, tvm_module
from kiln.support import cc as kcc

ADD_C = "int add(int a, int b) { return a + b; }\n"
MAIN_C = '#include <stdio.h>\nint main(void) { puts("hello from kiln"); return 0; }\n'


@pytest.fixture
def tcc():
    return tvm_module("cc")


def write(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
    return path


def read(path):
    with open(path, "rb") as file:
        return file.read()


def test_module_names_match_tvm(tcc):
    for name in ("get_cc", "create_shared", "create_staticlib", "create_executable",
                 "get_global_symbol_section_map", "get_target_by_dump_machine",
                 "cross_compiler", "_is_linux_like", "_is_windows_like"):
        assert callable(getattr(kcc, name)), name
    assert kcc._is_linux_like() == tcc._is_linux_like()
    assert kcc._is_windows_like() == tcc._is_windows_like()
    assert kcc.create_shared.output_format == tcc.create_shared.output_format == "so"


def test_get_cc_follows_cxx_and_path(tcc, monkeypatch):
    assert kcc.get_cc() == tcc.get_cc()
    monkeypatch.setenv("CXX", "clang++")
    assert kcc.get_cc() == tcc.get_cc() == "clang++"
    monkeypatch.delenv("CXX")
    monkeypatch.setenv("CC", "gcc")
    assert kcc.get_cc() == tcc.get_cc() == "gcc"


def test_create_shared_is_byte_equal_and_exports_the_same_symbols(tcc, workdir):
    require_tool("gcc")
    source = write(workdir, "add.c", ADD_C)
    ours, theirs = str(workdir / "libk.so"), str(workdir / "libt.so")
    kcc.create_shared(ours, [source], options=["-O2"], cc="gcc")
    tcc.create_shared(theirs, [source], options=["-O2"], cc="gcc")
    assert read(ours) == read(theirs)
    assert kcc.get_global_symbol_section_map(ours)["add"] == "T"


def test_symbol_map_works_with_gnu_nm(tcc, workdir):
    # tvm.support 0.27 runs `nm -gU`; GNU nm 2.39+ reads -U as --unicode and takes the library's
    # path as its argument, so TVM's call fails on this machine ("nm: 'a.out': No such file").
    # kiln spells it `nm -g --defined-only`, which GNU nm and llvm-nm both read.
    require_tool("nm")
    source = write(workdir, "add.c", ADD_C + "static int hidden(void) { return 1; }\nint x = 1;\n")
    lib = str(workdir / "libk.so")
    kcc.create_shared(lib, [source], cc="gcc")
    symbols = kcc.get_global_symbol_section_map(lib)
    assert symbols["add"] == "T" and symbols["x"] == "D"
    assert "hidden" not in symbols and "printf" not in symbols
    if b"--unicode" in subprocess.run(["nm", "--help"], capture_output=True).stdout:
        with pytest.raises(RuntimeError, match="a.out"):
            tcc.get_global_symbol_section_map(lib)


def test_options_come_before_the_inputs_as_in_tvm(tcc, workdir):
    # `-x c++` applies to the files after it: a .c file compiled as C++ gets a mangled name.
    require_tool("g++")
    source = write(workdir, "add.c", ADD_C)
    ours, theirs = str(workdir / "libk.so"), str(workdir / "libt.so")
    kcc.create_shared(ours, [source], options=["-x", "c++"], cc="gcc")
    tcc.create_shared(theirs, [source], options=["-x", "c++"], cc="gcc")
    assert read(ours) == read(theirs)
    assert "_Z3addii" in kcc.get_global_symbol_section_map(ours)


def test_create_executable_runs(tcc, workdir):
    require_tool("gcc")
    source = write(workdir, "main.c", MAIN_C)
    ours, theirs = str(workdir / "k"), str(workdir / "t")
    kcc.create_executable(ours, source, cc="gcc")  # one path as a str, as TVM accepts
    tcc.create_executable(theirs, source, cc="gcc")
    assert read(ours) == read(theirs)
    assert subprocess.run([ours], capture_output=True, check=True).stdout == b"hello from kiln\n"


def test_create_staticlib_unpacks_tars(tcc, workdir):
    require_tool("ar")
    from kiln.support import tar as ktar

    source = write(workdir, "add.c", ADD_C)
    obj = str(workdir / "add.o")
    subprocess.run(["gcc", "-c", "-o", obj, source], check=True)
    bundle = str(workdir / "objs.tar")
    ktar.tar(bundle, [obj])
    ours, theirs = str(workdir / "libk.a"), str(workdir / "libt.a")
    kcc.create_staticlib(ours, [bundle])
    tcc.create_staticlib(theirs, [bundle])
    assert kcc.get_global_symbol_section_map(ours) == {"add": "T"}
    listing = subprocess.run(["ar", "t", theirs], capture_output=True, check=True).stdout
    assert subprocess.run(["ar", "t", ours], capture_output=True, check=True).stdout == listing


def test_failures_raise_the_same_types(tcc, workdir):
    missing = str(workdir / "missing.c")
    out = str(workdir / "out.so")
    kind = same_error(lambda: tcc.create_shared(out, [missing], cc="gcc"),
                      lambda: kcc.create_shared(out, [missing], cc="gcc"))
    assert kind is RuntimeError
    with pytest.raises(RuntimeError, match="Compilation error:"):
        kcc.create_shared(out, [missing], cc="gcc")
    assert not os.path.exists(out)
    assert same_error(lambda: tcc.get_global_symbol_section_map(missing),
                      lambda: kcc.get_global_symbol_section_map(missing)) is FileNotFoundError
    assert same_error(lambda: tcc.create_shared(out, [missing], cc="no-such-compiler-kiln"),
                      lambda: kcc.create_shared(out, [missing], cc="no-such-compiler-kiln")
                      ) is FileNotFoundError
    with pytest.raises(RuntimeError, match="Runtime error:"):
        kcc.get_global_symbol_section_map(write(workdir, "bad.a", "not an archive"))


def test_target_triple(tcc):
    require_tool("gcc")
    ours = kcc.get_target_by_dump_machine("gcc")()
    theirs = tcc.get_target_by_dump_machine("gcc")()
    # tvm.support returns -dumpmachine's raw output; kiln strips the newline (TVM strips it
    # where it reads the triple, in export_library).
    assert ours == theirs.strip()
    assert kcc.get_target_by_dump_machine("no-such-compiler-kiln")() is None
    assert kcc.get_target_by_dump_machine(None)() is None
    assert kcc.create_shared.get_target_triple() == tcc.create_shared.get_target_triple().strip()


def test_cross_compiler_from_a_name_builds_for_its_target(workdir):
    require_tool("aarch64-linux-gnu-gcc")
    fcompile = kcc.cross_compiler("aarch64-linux-gnu-gcc", options=["-O2"])
    assert fcompile.output_format == "so"
    # kiln: the named compiler's triple (tvm.support 0.27 reports the host compiler's here).
    assert fcompile.get_target_triple() == "aarch64-linux-gnu"
    out = str(workdir / "libadd.so")
    fcompile(out, [write(workdir, "add.c", ADD_C)])
    assert read(out)[:4] == b"\x7fELF" and int.from_bytes(read(out)[18:20], "little") == 183


def test_cross_compiler_options_do_not_accumulate(workdir):
    # tvm.support 0.27 appends each call's options to the shared base list (it grows with every
    # call); kiln starts from the base options on every call.
    require_tool("gcc")
    calls = []

    def record(output, objects, options=None):
        calls.append(list(options))

    fcompile = kcc.cross_compiler(record, options=["-O2"])
    fcompile("a.so", [], ["-g"])
    fcompile("b.so", [], ["-g"])
    assert calls == [["-O2", "-g"], ["-O2", "-g"]]


def test_cross_compiler_wraps_a_python_function_like_tvm(tcc, workdir):
    seen = {}

    def fake_ndk(output, objects, options=None):
        seen["args"] = (output, list(objects), list(options or []))

    fake_ndk.output_format = "so"
    ours = kcc.cross_compiler(fake_ndk, options=["--sysroot=/x"], add_files=["extra.o"])
    theirs = tcc.cross_compiler(fake_ndk, options=["--sysroot=/x"], add_files=["extra.o"])
    assert ours.output_format == theirs.output_format == "so"
    assert ours.get_target_triple is None and theirs.get_target_triple is None
    ours("lib.so", ["a.o"], ["-lm"])
    kiln_args = seen["args"]
    theirs("lib.so", ["a.o"], ["-lm"])
    assert kiln_args == seen["args"] == ("lib.so", ["a.o", "extra.o"], ["--sysroot=/x", "-lm"])
    assert kcc.cross_compiler(fake_ndk, output_format="tar").output_format == "tar"


def test_cross_compiler_accepts_an_i386_object_for_gcc_m32(workdir):
    # `gcc -m32 -dumpmachine` still says x86_64: the ELF check must not refuse what gcc links.
    require_tool("gcc")
    source = write(workdir, "add.c", ADD_C)
    obj = str(workdir / "add.o")
    if subprocess.run(["gcc", "-m32", "-c", "-o", obj, source]).returncode != 0:
        pytest.skip("gcc -m32 cannot compile here (gcc-multilib missing)")
    fcompile = kcc.cross_compiler("gcc", options=["-m32", "-nostdlib"])
    out = str(workdir / "libadd32.so")
    fcompile(out, [obj])
    assert read(out)[4] == 1  # ELFCLASS32


def test_relative_output_with_cwd_lands_in_cwd(tcc, workdir):
    require_tool("gcc")
    write(workdir, "main.c", MAIN_C)
    kcc.create_executable("main.o", ["main.c"], ["-c"], cwd=str(workdir))
    assert os.path.isfile(workdir / "main.o")
