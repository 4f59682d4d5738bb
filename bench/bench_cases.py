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


def tvm_cuda_kernel(arch):
    """The CUDA source TVM generates for a small TE kernel (Y = 2 X, dlight's fallback schedule)."""
    import tvm as tvm_package
    from tvm import te
    from tvm.s_tir import dlight

    x = te.placeholder((4096,), "float32", name="X")
    y = te.compute(x.shape, lambda i: x[i] * 2.0, name="Y")
    mod = tvm_package.IRModule({"main": te.create_prim_func([x, y])})
    target = tvm_package.target.Target({"kind": "cuda", "arch": arch})
    with target:
        mod = dlight.ApplyDefaultSchedule(dlight.gpu.Fallback())(mod)
    return tvm_package.compile(mod, target=target).mod.imports[0].inspect_source(), target


def without_kiln_cache(call):
    def uncached():
        os.environ["KILN_NO_CACHE"] = "1"
        try:
            return call()
        finally:
            del os.environ["KILN_NO_CACHE"]
    return uncached


def in_target(target, call):
    def scoped():
        with target:
            return call()
    return scoped


def nvcc_cases(work):
    try:
        tvm.support.nvcc.find_cuda_path()
    except RuntimeError as error:
        yield Case("nvcc.*", skip=f"no CUDA toolkit: {error}")
        return
    code, target = tvm_cuda_kernel("sm_80")
    nvrtc = pair("nvcc", "compile_cuda", code, target_format="cubin", arch="sm_80",
                 compiler="nvrtc")
    yield Case("nvcc.compile_cuda[nvrtc]", nvrtc[0], without_kiln_cache(nvrtc[1]))
    with_nvcc = pair("nvcc", "compile_cuda", code, target_format="ptx", arch="sm_80",
                     compiler="nvcc")
    yield Case("nvcc.compile_cuda[nvcc]", in_target(target, with_nvcc[0]),
               in_target(target, without_kiln_cache(with_nvcc[1])))
    yield Case("nvcc.find_cuda_path", *pair("nvcc", "find_cuda_path"))
    yield Case("nvcc.get_cuda_version", *pair("nvcc", "get_cuda_version"))
    yield Case("nvcc.find_libdevice_path", *pair("nvcc", "find_libdevice_path", 80))
    yield Case("nvcc.get_target_compute_version",
               *pair("nvcc", "get_target_compute_version", target))
    yield Case("nvcc.parse_compute_version", *pair("nvcc", "parse_compute_version", "8.0"))
    for name in ("have_fp16", "have_int8", "have_bf16", "have_fp8", "have_fp4"):
        yield Case(f"nvcc.{name}", *pair("nvcc", name, "9.0"))
    yield Case("nvcc.have_tensorcore", *pair("nvcc", "have_tensorcore", "8.0"))
    yield Case("nvcc.have_cudagraph", *pair("nvcc", "have_cudagraph"))


def llvm_cases(work):
    source = write(work, "k.c", ADD_C)
    obj = os.path.join(work, "k.o")
    yield Case("clang.find_clang", *pair("clang", "find_clang", required=False))
    yield tool_case("clang.create_llvm", "clang", lambda: pair(
        "clang", "create_llvm", [source], output=os.path.join(work, "k.ll")))
    yield Case("rocm.find_lld", *pair("rocm", "find_lld", required=False))
    lld = shutil.which("ld.lld")
    if lld is None or shutil.which("clang-15") is None:
        yield Case("rocm.rocm_link", skip="ld.lld or clang-15 not found")
    else:
        subprocess.run(["clang-15", "--target=amdgcn-amd-amdhsa", "-mcpu=gfx900", "-nogpulib", "-c", "-o",
                        obj, source], check=True)
        yield Case("rocm.rocm_link", *pair("rocm", "rocm_link", obj, obj + ".co", lld=lld))
    yield Case("rocm.parse_compute_version", *pair("rocm", "parse_compute_version", "9.0"))
    yield Case("rocm.have_matrixcore", *pair("rocm", "have_matrixcore", "9.0"))


def ndk_cases(work):
    if shutil.which("gcc") is None:
        yield Case("ndk.*", skip="gcc not found")
        return
    source = write(work, "n.c", ADD_C)
    obj = os.path.join(work, "n.o")
    subprocess.run(["gcc", "-fPIC", "-c", "-o", obj, source], check=True)
    os.environ.setdefault("TVM_NDK_CC", shutil.which("gcc"))  # no NDK here: the host compiler
    yield Case("ndk.create_shared", *pair("ndk", "create_shared", os.path.join(work, "n.so"),
                                          [obj]))


def all_cases(work):
    yield from cc_cases(work)
    yield from tar_cases(work)
    yield from utils_cases(work)
    yield from nvcc_cases(work)
    yield from llvm_cases(work)
    yield from ndk_cases(work)
    yield Case("xcode.*", skip="no Xcode on Linux (the tests use a recording stand-in xcrun)")
    yield Case("emcc.create_tvmjs_wasm", skip="emcc's own seconds dominate; see test_emcc.py")
