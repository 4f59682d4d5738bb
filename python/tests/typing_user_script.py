"""A TVM user's script, written against tvm.support 0.27's signatures, run with kiln.support.

test_typing.py type-checks it with ``mypy --strict``: it calls every public function and class of
every kiln.support module (the names in each module's ``__all__``, or its public functions and
classes where it has none), in the positional and keyword forms TVM's users and TVM's own code
write, and annotates what they return. A new public name without a call here fails that test.

It is not meant to run: the calls need compilers, GPUs, an NDK or Xcode, so they are in
functions that nothing calls. TVM's own objects (a tvm.target.Target, a coremltools model) are
`Any` here: those packages have no type information.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any

import kiln.support
from kiln.support import cc, clang, emcc, libinfo, ndk, nvcc, popen_pool, rocm, tar, utils, xcode
from kiln.support.libinfo import libinfo as build_options
from kiln.support.popen_pool import MapResult, PopenPoolExecutor, PopenWorker, StatusKind

ADD_C = 'extern "C" int add(int a, int b) { return a + b; }'
KERNEL = 'extern "C" __global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }'


def use_support() -> None:
    kiln.support.describe()


def use_cc(workdir: pathlib.Path) -> None:
    compiler: str | None = cc.get_cc()
    lib = str(workdir / "libadd.so")
    cc.create_shared(lib, ["add.o"])
    cc.create_shared(lib, "add.o")
    cc.create_shared(lib, ["add.o"], ["-O2"], "gcc", None, None)
    cc.create_shared(
        workdir / "libadd.so",
        [workdir / "add.o", "sub.o"],
        options=["-O2", "-lm"],
        cc="g++",
        cwd=workdir,
        ccache_env={"CCACHE_DIR": str(workdir / "ccache")},
    )
    cc.create_executable(str(workdir / "main"), ["main.o"], options=["-lpthread"], cc=compiler)
    cc.create_executable("main", ["main.o"], ["-O2"], None, cwd=str(workdir), ccache_env=None)
    cc.create_staticlib("libadd.a", ["add.o", "objs.tar"])
    cc.create_staticlib(workdir / "libadd.a", ["add.o"], ar="llvm-ar")
    symbols: dict[str, str] = cc.get_global_symbol_section_map(lib)
    symbols = cc.get_global_symbol_section_map(pathlib.Path(lib), nm="llvm-nm")
    assert symbols["add"] == "T"

    get_triple: Callable[[], str | None] = cc.get_target_by_dump_machine("aarch64-linux-gnu-gcc")
    triple: str | None = get_triple()
    host = cc.get_target_by_dump_machine(os.environ.get("CXX", compiler))
    print(triple, host())

    # export_library(path, fcompile=...) with a cross compiler, as in tvm.support.cc's examples.
    arm = cc.cross_compiler("aarch64-linux-gnu-gcc")
    arm(lib, ["add.o"])
    arm(lib, ["add.o"], options=["-O3"])
    output_format: str = arm.output_format
    arm_triple: Callable[[], str | None] | None = arm.get_target_triple
    specialized_ndk = cc.cross_compiler(
        ndk.create_shared, ["--sysroot=/path/to/sysroot", "-shared", "-fPIC", "-lm"]
    )
    wrapped = cc.cross_compiler(
        cc.create_shared,
        options=["-O2"],
        output_format="so",
        get_target_triple=host,
        add_files=["extra.o", workdir / "more.o"],
    )
    cc.cross_compiler(wrapped)
    cc.cross_compiler(specialized_ndk, None, "so", None, None)

    def my_compile(output: str, objects: list[str], options: list[str] | None = None) -> None:
        cc.create_shared(output, objects, options)

    cc.cross_compiler(my_compile, add_files=["runtime.o"])
    print(output_format, arm_triple)


def use_clang(workdir: pathlib.Path) -> None:
    found: list[str] = clang.find_clang()
    found = clang.find_clang(required=False)
    ir: str = clang.create_llvm(ADD_C)
    ir = clang.create_llvm(
        ["a.cc", "int g() { return 1; }"],
        output=str(workdir / "out.ll"),
        options=["-O2", "--target=x86_64-linux-gnu"],
        cc=found[0],
    )
    ir = clang.create_llvm(["a.cc"], workdir / "out.ll", ["-O2"], "clang-17")
    print(ir)


def use_emcc(workdir: pathlib.Path) -> None:
    runtime: list[str] | None = emcc.find_wasm_lib("wasm_runtime.bc")
    emcc.find_wasm_lib("tvmjs_support.bc", optional=True)
    emcc.create_tvmjs_wasm(str(workdir / "model.wasm"), ["lib0.bc"])
    emcc.create_tvmjs_wasm(
        workdir / "model.wasm",
        [workdir / "lib0.bc"],
        options=["-O3"],
        cc="emcc",
        libs=runtime or [],
    )
    emcc.create_tvmjs_wasm("model.wasm", "lib0.bc", ["-O2"], "em++", ["extra.bc"])


def use_libinfo() -> None:
    info: dict[str, str] = libinfo()  # tvm.support.libinfo is the function
    assert build_options() == info  # and the submodule's function, as tvm.support.libinfo.libinfo
    print(info.get("USE_CUDA") == "ON")


def use_ndk(workdir: pathlib.Path) -> None:
    ndk.create_shared("libadd.so", ["add.o"])
    ndk.create_shared(workdir / "libadd.so", "add.o", ["-shared", "-fPIC", "-lm"])
    ndk.create_shared(output="libadd.so", objects=["add.o"], options=None)
    ndk.create_staticlib("libadd.a", ["add.o", "objs.tar"])
    ndk.create_staticlib(workdir / "libadd.a", inputs=[workdir / "add.o"])
    symbols: dict[str, str] = ndk.get_global_symbol_section_map("libadd.so")
    symbols = ndk.get_global_symbol_section_map(workdir / "libadd.so", nm="/ndk/bin/llvm-nm")
    print(symbols)


class SimpleTarget:
    """A stand-in with what kiln reads of a tvm.target.Target (its attrs)."""

    def __init__(self, arch: str) -> None:
        self.attrs = {"arch": arch}


def use_nvcc(target: Any, workdir: pathlib.Path) -> None:
    cubin: bytearray = nvcc.compile_cuda(KERNEL)
    ptx: bytearray = nvcc.compile_cuda(
        KERNEL,
        target_format="ptx",
        arch="sm_80",
        options=["-O3", "-std=c++17"],
        path_target=str(workdir / "scale.ptx"),
        compiler="nvcc",
    )
    fatbin = nvcc.compile_cuda(
        KERNEL, "fatbin", ["-gencode", "arch=compute_80,code=sm_80"], "-lineinfo", None, "nvcc"
    )
    nvcc.compile_cuda(KERNEL, arch="sm_90a", options=None, path_target=workdir / "scale.cubin")
    binary: bytearray = nvcc.tvm_callback_cuda_compile(KERNEL)
    print(len(cubin) + len(ptx) + len(fatbin) + len(binary))

    cuda_path: str = nvcc.find_cuda_path()
    version: tuple[int, ...] = nvcc.get_cuda_version()
    version = nvcc.get_cuda_version(cuda_path)
    version = nvcc.get_cuda_version(cuda_path=pathlib.Path(cuda_path))
    if version < (12, 0):
        return
    include_dir, lib_dir = nvcc.find_nvshmem_paths()
    libdevice: str = nvcc.find_libdevice_path(80)
    libdevice = nvcc.callback_libdevice_path(arch=90)
    print(include_dir + lib_dir + libdevice)

    compute_version: str = nvcc.get_target_compute_version()
    compute_version = nvcc.get_target_compute_version(target)
    compute_version = nvcc.get_target_compute_version(target=SimpleTarget("sm_86"))
    major, minor = nvcc.parse_compute_version(compute_version)
    print(major * 10 + minor)
    features: list[bool] = [
        nvcc.have_fp16(compute_version),
        nvcc.have_int8("6.1"),
        nvcc.have_tensorcore(),
        nvcc.have_tensorcore("7.0"),
        nvcc.have_tensorcore(target=target),
        nvcc.have_tensorcore(compute_version=None, target=SimpleTarget("sm_90a")),
        nvcc.have_cudagraph(),
        nvcc.have_bf16(compute_version="8.0"),
        nvcc.have_fp8("8.9"),
        nvcc.have_fp4("10.0"),
    ]
    print(features)


def square(x: int) -> int:
    return x * x


def initialize(seed: int, verbose: bool = False) -> None:
    print(seed, verbose)


def build(name: str, *, opt_level: int = 3) -> str:
    return f"{name}-O{opt_level}"


def use_popen_pool() -> None:
    limit: int = popen_pool.MAX_MESSAGE_BYTES
    print(limit)
    popen_pool.kill_child_processes(os.getpid())

    with PopenPoolExecutor(
        max_workers=4,
        timeout=10,
        initializer=initialize,
        initargs=(1,),
        maximum_process_uses=100,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    ) as pool:
        future: Future[int] = pool.submit(square, 3)
        value: int = future.result(timeout=60)
        built: str = pool.submit(build, "resnet", opt_level=2).result()
        results: Iterator[MapResult] = pool.map_with_error_catching(square, [1, 2, 3])
        for result in results:
            if result.status == StatusKind.COMPLETE:
                value += result.value
            elif result.status in (StatusKind.EXCEPTION, StatusKind.TIMEOUT):
                print(f"{built}: {result.value}")

    pool = PopenPoolExecutor(None, 10.0, None, (), None, sys.stdout, None)
    pool.shutdown()
    PopenPoolExecutor(timeout=None).shutdown(wait=False)

    worker = PopenWorker()
    worker = PopenWorker(initialize, (7,), 5, None, None)
    worker = PopenWorker(
        initializer=initialize, initargs=[7], maximum_uses=None, stdout=sys.stdout, stderr=2
    )
    worker.send(square, (3,))
    worker.send(build, args=["bert"], kwargs={"opt_level": 1}, timeout=5.0)
    received: Any = worker.recv()
    print(received)
    worker.join()
    worker.join(timeout=1)
    alive: bool = worker.is_alive()
    if alive:
        worker.kill()

    status: StatusKind = StatusKind.RUNNING
    status = StatusKind(1)
    done = MapResult(status=status, value=9)
    print(done.status, done.value)

    ready: bool = popen_pool.warm(["tvm", "tvm.s_tir.tensor_intrin"], timeout=300)
    ready = popen_pool.warm()
    stats = popen_pool.template_stats()
    forks: int = stats["forks"]
    reason: str = stats["last_reason"]
    print(ready, forks, reason)


def use_rocm(workdir: pathlib.Path) -> None:
    lld: list[str] = rocm.find_lld()
    lld = rocm.find_lld(required=False)
    rocm.rocm_link("kernel.o", "kernel.co")
    rocm.rocm_link(workdir / "kernel.o", workdir / "kernel.co", lld[0])
    rocm.rocm_link(in_file="kernel.o", out_file="kernel.co", lld=None)
    code_object: bytearray = rocm.callback_rocm_link(bytearray(b"\x7fELF"))
    code_object = rocm.callback_rocm_link(obj_bin=b"\x7fELF")
    bitcode: Sequence[str] = rocm.callback_rocm_bitcode_path()
    bitcode = rocm.callback_rocm_bitcode_path(rocdl_dir="/opt/rocm/amdgcn/bitcode/")
    print(len(code_object), list(bitcode))
    major, minor = rocm.parse_compute_version("9.0")
    matrix_core: bool = rocm.have_matrixcore("9.0") and rocm.have_matrixcore()
    arch: str = rocm.get_rocm_arch()
    arch = rocm.get_rocm_arch(rocm.find_rocm_path())
    arch = rocm.get_rocm_arch(rocm_path="/opt/rocm")
    root: str = rocm.find_rocm_path()
    print(major, minor, matrix_core, arch, root)


def use_tar(workdir: pathlib.Path) -> None:
    tar.tar("objs.tar", ["a.o", "b.o"])
    tar.tar(workdir / "objs.tar", files=[workdir / "a.o"])
    tar.untar("objs.tar", "unpacked")
    tar.untar(tar_file=workdir / "objs.tar", directory=workdir / "unpacked")
    temp = utils.tempdir()
    files: list[str] = tar.normalize_file_list_by_unpacking_tars(temp, ["a.o", "objs.tar"])
    files = tar.normalize_file_list_by_unpacking_tars(str(workdir), file_list=files)
    print(files)


def use_utils() -> None:
    temp = utils.tempdir()
    temp = utils.tempdir("/tmp/kiln-typing", True)
    temp = utils.tempdir(custom_path=None, keep_for_debug=None)
    lib_path: str = temp.relpath("lib.so")
    names: list[str] = temp.listdir()
    directory: pathlib.Path = temp.path
    lib: pathlib.Path = temp / "lib.so"
    where: str = temp.temp_dir
    print(lib_path, names, directory, lib, where)
    temp.remove()
    with utils.TempDirectory() as scratch:
        print(scratch.relpath("a.o"))
    with utils.TempDirectory.set_keep_for_debug():
        utils.TempDirectory(custom_path="/tmp/kiln-kept", keep_for_debug=True)
    with utils.TempDirectory.set_keep_for_debug(set_to=False):
        pass
    utils.TempDirectory.remove_tempdirs()
    try:
        utils.tempdir()
    except utils.DirectoryCreatedPastAtExit:
        pass

    lock: utils.FileLock = utils.filelock("/tmp/kiln-typing.lock")
    lock.release()
    utils.FileLock(pathlib.Path("/tmp/kiln-typing.lock")).release()
    source: bool = utils.is_source_path("add.cc")
    source = utils.is_source_path(path=pathlib.Path("add.cc"))
    gcc: str | None = utils.which("gcc")
    print(source, gcc)


def use_xcode(model: Any, workdir: pathlib.Path) -> None:
    sdk_path: bytes = xcode.xcrun(["-sdk", "macosx", "--show-sdk-path"])
    print(sdk_path.decode())
    xcode.create_dylib("libadd.dylib", ["add.o"], "arm64")
    xcode.create_dylib(
        workdir / "libadd.dylib", "add.o", arch="arm64", sdk="iphoneos", min_os_version="14.0"
    )
    metallib: bytearray | None = xcode.compile_metal("kernel void k() {}")
    metallib = xcode.compile_metal(
        "kernel void k() {}", path_target=workdir / "k.metallib", sdk="macosx", min_os_version=None
    )
    print(metallib)
    compiled: str = xcode.compile_coreml(model)
    compiled = xcode.compile_coreml(model, model_name="main", out_dir=str(workdir))
    compiled = xcode.compile_coreml(workdir / "main.mlmodel", "main", workdir)
    print(compiled)
