"""The cases of python_support_bench.py: one per kiln.support function, each calling tvm.support's
and kiln.support's with the same inputs. A case returns both calls; the bench times them."""

import os
import shutil
import subprocess

import kiln.support
import tvm.support

ADD_C = "int add(int a, int b) { return a + b; }\n"


class Case:
    """tvm and kiln: zero-argument calls doing the same work; skip: why the case cannot run."""

    def __init__(self, name, tvm=None, kiln=None, skip=None):
        self.name, self.tvm, self.kiln, self.skip = name, tvm, kiln, skip


def tool_case(name, tool, make):
    """A case needing `tool` on PATH: make() -> (tvm call, kiln call)."""
    if shutil.which(tool) is None:
        return Case(name, skip=f"{tool} not found")
    tvm_call, kiln_call = make()
    return Case(name, tvm_call, kiln_call)


def write(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
    return path


def pair(module, function, *args, **kwargs):
    """Calls of tvm.support.<module>.<function> and kiln.support.<module>.<function>."""
    import importlib

    theirs = getattr(importlib.import_module(f"tvm.support.{module}"), function)
    ours = getattr(importlib.import_module(f"kiln.support.{module}"), function)
    return (lambda: theirs(*args, **kwargs)), (lambda: ours(*args, **kwargs))


def cc_cases(work):
    source = write(work, "add.c", ADD_C)
    main = write(work, "main.c", "int main(void) { return 0; }\n")
    obj = os.path.join(work, "add.o")
    subprocess.run(["gcc", "-c", "-o", obj, source], check=True)
    lib = os.path.join(work, "libadd.so")
    subprocess.run(["gcc", "-shared", "-o", lib, obj], check=True)
    out = os.path.join(work, "out")
    nm = shutil.which("llvm-nm") or shutil.which("llvm-nm-14")  # tvm's `nm -gU` needs llvm-nm
    yield Case("cc.get_cc", *pair("cc", "get_cc"))
    yield tool_case("cc.create_shared", "gcc",
                    lambda: pair("cc", "create_shared", out + ".so", [obj], cc="gcc"))
    yield tool_case("cc.create_executable", "gcc",
                    lambda: pair("cc", "create_executable", out, [main], cc="gcc"))
    yield tool_case("cc.create_staticlib", "ar",
                    lambda: pair("cc", "create_staticlib", out + ".a", [obj]))
    yield (Case("cc.get_global_symbol_section_map", skip="no llvm-nm") if nm is None else
           Case("cc.get_global_symbol_section_map",
                *pair("cc", "get_global_symbol_section_map", lib, nm=nm)))
    yield tool_case("cc.get_target_by_dump_machine()", "gcc", lambda: (
        tvm.support.cc.get_target_by_dump_machine("gcc"),
        kiln.support.cc.get_target_by_dump_machine("gcc")))
    yield tool_case("cc.cross_compiler(...)(...)", "aarch64-linux-gnu-gcc", lambda: (
        lambda: tvm.support.cc.cross_compiler("aarch64-linux-gnu-gcc")(out + "-arm.so", [source]),
        lambda: kiln.support.cc.cross_compiler("aarch64-linux-gnu-gcc")(out + "-arm.so", [source])))


def tar_cases(work):
    files = []
    for index in range(16):
        path = os.path.join(work, f"member{index}.o")
        with open(path, "wb") as file:
            file.write(os.urandom(4096) + bytes(60000))  # object-like: part noise, part zeros
        files.append(path)
    archive = os.path.join(work, "bundle.tar")
    tvm.support.tar.tar(archive, files)
    unpacked = os.path.join(work, "unpacked")
    os.makedirs(unpacked)
    yield Case("tar.tar", *pair("tar", "tar", os.path.join(work, "out.tar"), files))
    yield Case("tar.untar", *pair("tar", "untar", archive, unpacked))

    def normalize(module):
        def call():
            with module.utils.tempdir() as temp:
                module.tar.normalize_file_list_by_unpacking_tars(temp, [files[0], archive])
        return call

    yield Case("tar.normalize_file_list_by_unpacking_tars", normalize(tvm.support),
               normalize(kiln.support))


def utils_cases(work):
    def tempdir(module):
        def call():
            temp = module.utils.tempdir()
            write(temp.temp_dir, "file", "x")
            temp.remove()
        return call

    def filelock(module):
        path = os.path.join(work, "lock")
        return lambda: module.utils.filelock(path).release()

    yield Case("utils.tempdir+remove", tempdir(tvm.support), tempdir(kiln.support))
    yield Case("utils.filelock+release", filelock(tvm.support), filelock(kiln.support))
    yield Case("utils.is_source_path", *pair("utils", "is_source_path", "kernel.cu"))
    yield Case("utils.which", *pair("utils", "which", "gcc"))
    yield Case("libinfo.libinfo", *pair("libinfo", "libinfo"))


def all_cases(work):
    yield from cc_cases(work)
    yield from tar_cases(work)
    yield from utils_cases(work)
