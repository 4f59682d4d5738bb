"""kiln in TVM's CUDA flow: after kiln.tvm.install(), TVM's registry hands out kiln's nvcc code.

TVM 0.27's CUDA runtime compiles a module's source when the module is loaded, by calling the global
function "tvm_callback_cuda_compile" with the source alone, inside the current target's scope.
These tests call that global the same way with the source TVM generated for a small TE kernel and
check that kiln compiled it (kiln's native compile_cuda ran) into a cubin whose kernels
`cuobjdump -sass` lists; that every nvcc entry of kiln.tvm.GLOBALS resolves to kiln's function;
and that kiln.tvm.uninstall() gives TVM its own callback back. On a machine with a GPU, the
module also runs. Each check watches kiln's extension functions (kiln._kiln), through which every
kiln.support.nvcc function goes.
"""

import sys

import pytest
from _cuda_helpers import require_cuda, sass, tvm_cuda_source
from conftest import tvm_module

import kiln.tvm
from kiln._native import native
from kiln.support import nvcc as kiln_nvcc


@pytest.fixture(scope="module", autouse=True)
def kiln_cache(tmp_path_factory):
    """A kernel cache of this module's own, and compile servers that leave soon after."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KILN_CACHE_DIR", str(tmp_path_factory.mktemp("kiln-cache")))
        patch.setenv("KILN_SERVER_IDLE", "10")
        for name in ("TVM_CUDA_COMPILE_MODE", "TVM_KERNEL_DUMP", "KILN_NO_CACHE"):
            patch.delenv(name, raising=False)
        yield


@pytest.fixture(name="tvm", scope="module")
def fixture_tvm():
    tvm_module("nvcc")  # registers TVM's own callbacks; skips without apache-tvm
    return sys.modules["tvm"]


@pytest.fixture(name="kernel", scope="module")
def fixture_kernel(tvm):
    """(executable, CUDA source) of the TE kernel Y = 2 X that TVM builds for sm_80."""
    return tvm_cuda_source(tvm, "sm_80")


@pytest.fixture(name="installed")
def fixture_installed(tvm):
    """kiln.tvm.install() for one test, undone after it."""
    del tvm
    kiln.tvm.install()
    yield
    kiln.tvm.uninstall()


def watch(monkeypatch, name):
    """The calls of kiln's extension function `name` from now on (a list of argument tuples)."""
    calls = []
    real = getattr(native, name)

    def watched(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(native, name, watched)
    return calls


def cuda_target(tvm, arch="sm_80"):
    return tvm.target.Target({"kind": "cuda", "arch": arch})


@pytest.mark.parametrize("mode", ["nvrtc", "nvcc"])
def test_cuda_compile_callback_is_kilns(tvm, kernel, installed, monkeypatch, mode):
    """TVM's CUDA runtime's call, f(source) in a target scope, compiles with kiln: a cubin from
    NVRTC (the default mode), a fatbin from nvcc, each holding TVM's kernel for sm_80."""
    del installed
    require_cuda()
    monkeypatch.setenv("TVM_CUDA_COMPILE_MODE", mode)
    compiles = watch(monkeypatch, "compile_cuda")
    _, source = kernel
    callback = tvm.get_global_func("tvm_callback_cuda_compile")
    with cuda_target(tvm):
        binary = callback(source)
    assert [call[5] for call in compiles] == [mode], "kiln's compile_cuda did not run"
    assert isinstance(binary, bytes) and len(binary) > 0
    assert sass(binary) == (["main_kernel"], ["sm_80"])
    if mode == "nvrtc":
        assert binary[:4] == b"\x7fELF"  # a cubin


def test_uninstall_restores_tvms_callback(tvm, kernel, monkeypatch):
    """After uninstall(), the global is TVM's own callback again: it calls tvm.support.nvcc's
    compile_cuda (replaced here by a recorder), and kiln's compile_cuda does not run."""
    require_cuda()
    _, source = kernel
    tvm_nvcc = sys.modules["tvm.support.nvcc"]
    tvm_compile_cuda = tvm_nvcc.compile_cuda
    kiln.tvm.install()
    assert tvm_nvcc.compile_cuda is kiln_nvcc.compile_cuda
    kiln.tvm.uninstall()
    assert not kiln.tvm.installed()
    assert tvm_nvcc.compile_cuda is tvm_compile_cuda
    recorded = []

    def recorder(code, target_format=None, arch=None, options=None, path_target=None, compiler=""):
        recorded.append((code, target_format, compiler))
        return bytearray(b"from tvm")

    monkeypatch.setattr(tvm_nvcc, "compile_cuda", recorder)
    compiles = watch(monkeypatch, "compile_cuda")
    with cuda_target(tvm):
        assert tvm.get_global_func("tvm_callback_cuda_compile")(source) == b"from tvm"
    assert recorded == [(source, "cubin", "nvrtc")]
    assert not compiles


# Each nvcc global of kiln.tvm.GLOBALS: the arguments TVM's C++ side gives it, and the extension
# function of kiln's that must run for it.
NVCC_GLOBAL_CALLS = {
    "tvm_callback_cuda_compile": (lambda tvm, source: (source,), "compile_cuda"),
    "tvm_callback_libdevice_path": (lambda tvm, source: (80,), "find_libdevice_path"),
    "tvm.support.nvcc.get_compute_version": (
        lambda tvm, source: (cuda_target(tvm, "sm_90a"),),
        "compute_version_of_arch",
    ),
    "tvm.support.nvcc.supports_bf16": (lambda tvm, source: ("8.0",), "have_bf16"),
    "tvm.support.nvcc.supports_fp8": (lambda tvm, source: ("8.9",), "have_fp8"),
    "tvm.support.nvcc.supports_fp4": (lambda tvm, source: ("10.0",), "have_fp4"),
}


def test_globals_cover_nvcc():
    nvcc_globals = {name for name, (module, _) in kiln.tvm.GLOBALS.items() if module == "nvcc"}
    assert nvcc_globals == set(NVCC_GLOBAL_CALLS)


@pytest.mark.parametrize("name", NVCC_GLOBAL_CALLS)
def test_nvcc_global_is_kilns(tvm, kernel, installed, monkeypatch, name):
    """The global runs kiln's function (its extension function is called) and answers what
    TVM's own function answers for the same arguments."""
    del installed
    require_cuda()
    make_args, native_name = NVCC_GLOBAL_CALLS[name]
    args = make_args(tvm, kernel[1])
    kiln_function = kiln.tvm.GLOBALS[name][1]
    tvm_function = kiln.tvm.original("nvcc", kiln_function)
    calls = watch(monkeypatch, native_name)
    with cuda_target(tvm):
        answer = tvm.get_global_func(name)(*args)
        expected = tvm_function(*args)
    assert calls, f"{name} did not run kiln.support.nvcc.{kiln_function}"
    if name == "tvm_callback_cuda_compile":
        assert sass(answer) == sass(expected)
    else:
        assert answer == expected


def test_tvm_runs_the_module_kiln_compiled(tvm, kernel, installed, monkeypatch):
    """With a GPU: TVM loads the CUDA module (compiling it through the callback, with kiln) and
    runs it; the result is 2 X."""
    del installed
    if not tvm.cuda(0).exist:
        pytest.skip("no CUDA GPU: TVM compiles CUDA modules when it loads them on a device")
    import numpy  # pylint: disable=import-outside-toplevel

    del kernel  # built for sm_80; this one is for the GPU at hand
    compiles = watch(monkeypatch, "compile_cuda")
    arch = "sm_" + kiln_nvcc.get_target_compute_version().replace(".", "")  # GPU 0's
    executable, _ = tvm_cuda_source(tvm, arch)
    device = tvm.cuda(0)
    x = numpy.arange(4096, dtype="float32")
    x_gpu = tvm.runtime.tensor(x, device)
    y_gpu = tvm.runtime.empty((4096,), "float32", device)
    executable["main"](x_gpu, y_gpu)
    numpy.testing.assert_allclose(y_gpu.numpy(), 2 * x)
    assert compiles, "TVM did not compile the module through kiln"
