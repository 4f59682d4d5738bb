"""Parity of kiln.support.nvcc with apache-tvm 0.27's tvm.support.nvcc, on the real CUDA toolkit.

Each test calls TVM's function and kiln's with the same arguments: results equal (nvcc's outputs
byte-equal; NVRTC's cubins equal in the kernels `cuobjdump -sass` lists, since kiln's NVRTC
preamble is not TVM's), exceptions of the same type. Where kiln differs from 0.27 on purpose,
the test asserts kiln's behaviour and says why. No GPU is needed; where one is present, the
GPU-dependent answers are compared instead of the no-GPU errors.
"""

import os
import subprocess
import sys
import warnings

import pytest
from _cuda_helpers import AXPY, require_cuda, sass, tvm_cuda_source
from conftest import same_error, tvm_module

from kiln._native import native, program
from kiln.support import nvcc as kiln_nvcc

# Variables that change what the compile functions do: unset for every test unless it sets one.
CUDA_VARIABLES = (
    "TVM_KERNEL_DUMP",
    "TVM_KERNEL_DEBUG",
    "TVM_CUDA_COMPILE_MODE",
    "TVM_CUDA_PTXAS_REG_LEVEL",
    "TVM_CUDA_PTXAS_EXTRA_OPTS",
    "TVM_CUDA_NVRTC_EXTRA_OPTS",
    "TVM_CUDA_NVCC_NO_FAST_MATH",
    "NVSHMEM_HOME",
)


@pytest.fixture(scope="module", autouse=True)
def kiln_cache(tmp_path_factory):
    """A kernel cache of this module's own (kiln's KILN_CACHE_DIR), and compile servers that
    leave soon after the tests (KILN_SERVER_IDLE)."""
    directory = tmp_path_factory.mktemp("kiln-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KILN_CACHE_DIR", str(directory))
        patch.setenv("KILN_SERVER_IDLE", "10")
        patch.delenv("KILN_NO_CACHE", raising=False)
        yield directory


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in CUDA_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(name="tvm_nvcc")
def fixture_tvm_nvcc():
    return tvm_module("nvcc")


@pytest.fixture(name="tvm")
def fixture_tvm(tvm_nvcc):
    del tvm_nvcc  # imported TVM
    return sys.modules["tvm"]


@pytest.fixture(name="cuda")
def fixture_cuda():
    return require_cuda()


def has_gpu():
    return native.device_compute_version() is not None


def cuda_target(tvm, arch):
    return tvm.target.Target({"kind": "cuda", "arch": arch})


# --- the toolkit --------------------------------------------------------------------------------


def test_find_cuda_path(tvm_nvcc, cuda):
    assert kiln_nvcc.find_cuda_path() == tvm_nvcc.find_cuda_path() == cuda


def test_find_cuda_path_from_cuda_path(tvm_nvcc, monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_PATH", str(tmp_path))
    assert kiln_nvcc.find_cuda_path() == tvm_nvcc.find_cuda_path() == str(tmp_path)


def test_get_cuda_version(tvm_nvcc, cuda):
    version = kiln_nvcc.get_cuda_version()
    assert version == tvm_nvcc.get_cuda_version() == tvm_nvcc.get_cuda_version(cuda)
    assert isinstance(version, tuple) and all(isinstance(field, int) for field in version)
    assert kiln_nvcc.get_cuda_version(cuda) == version


@pytest.mark.parametrize("where", ["version.txt", "lib/cuda/version.txt"])
def test_get_cuda_version_from_version_file(tvm_nvcc, tmp_path, where):
    (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / where).write_text("CUDA Version 11.8.89\n")
    assert kiln_nvcc.get_cuda_version(tmp_path) == tvm_nvcc.get_cuda_version(str(tmp_path))
    assert kiln_nvcc.get_cuda_version(str(tmp_path)) == (11, 8, 89)


def test_get_cuda_version_from_version_json(tvm_nvcc, tmp_path):
    """kiln also reads version.json (CUDA 11.1 and later ship no version.txt); 0.27 then runs
    bin/nvcc, which this toolkit root lacks."""
    (tmp_path / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}')
    assert kiln_nvcc.get_cuda_version(str(tmp_path)) == (12, 4, 1)
    with pytest.raises(FileNotFoundError):
        tvm_nvcc.get_cuda_version(str(tmp_path))


def test_get_cuda_version_of_no_toolkit(tvm_nvcc, tmp_path):
    missing = str(tmp_path / "missing")
    assert same_error(
        lambda: tvm_nvcc.get_cuda_version(missing), lambda: kiln_nvcc.get_cuda_version(missing)
    )


def test_find_nvshmem_paths(tvm_nvcc, monkeypatch, tmp_path):
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "nvshmem.h").write_text("")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libnvshmem.a").write_bytes(b"!<arch>\n")
    monkeypatch.setenv("NVSHMEM_HOME", str(tmp_path))
    found = kiln_nvcc.find_nvshmem_paths()
    assert found == tvm_nvcc.find_nvshmem_paths()
    assert found == (str(tmp_path / "include"), str(tmp_path / "lib"))


def test_find_nvshmem_paths_of_nothing(tvm_nvcc, monkeypatch, tmp_path):
    monkeypatch.setenv("NVSHMEM_HOME", str(tmp_path))
    try:
        tvm_nvcc.find_nvshmem_paths()
        pytest.skip("NVSHMEM is installed on this machine")
    except RuntimeError:
        pass
    assert same_error(tvm_nvcc.find_nvshmem_paths, kiln_nvcc.find_nvshmem_paths) is RuntimeError


def test_find_nvshmem_paths_of_the_wheel_layout(tvm_nvcc, monkeypatch, tmp_path):
    """NVIDIA's nvshmem wheel has no libnvshmem.a/.so, only libnvshmem_device.a and the host
    library: kiln finds it, 0.27 does not."""
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "nvshmem.h").write_text("")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libnvshmem_device.a").write_bytes(b"!<arch>\n")
    monkeypatch.setenv("NVSHMEM_HOME", str(tmp_path))
    assert kiln_nvcc.find_nvshmem_paths() == (str(tmp_path / "include"), str(tmp_path / "lib"))
    with pytest.raises(RuntimeError):
        tvm_nvcc.find_nvshmem_paths()


@pytest.mark.parametrize("arch", [35, 52, 80, 90, 120])
def test_find_libdevice_path(tvm_nvcc, cuda, arch):
    del cuda
    assert kiln_nvcc.find_libdevice_path(arch) == tvm_nvcc.find_libdevice_path(arch)


def fake_toolkit(root, version, libdevices):
    (root / "nvvm" / "libdevice").mkdir(parents=True)
    (root / "version.txt").write_text(f"CUDA Version {version}\n")
    for name in libdevices:
        (root / "nvvm" / "libdevice" / name).write_bytes(b"BC")
    return str(root)


@pytest.mark.parametrize("arch", [20, 35, 52, 61])
def test_find_libdevice_path_per_arch(tvm_nvcc, monkeypatch, tmp_path, arch):
    names = [f"libdevice.compute_{n}.10.bc" for n in (20, 30, 50)]
    monkeypatch.setenv("CUDA_PATH", fake_toolkit(tmp_path, "11.8.89", names))
    assert kiln_nvcc.find_libdevice_path(arch) == tvm_nvcc.find_libdevice_path(arch)


def test_find_libdevice_path_of_old_cuda(tvm_nvcc, monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_PATH", fake_toolkit(tmp_path, "10.2.89", []))
    assert kiln_nvcc.find_libdevice_path(70) == tvm_nvcc.find_libdevice_path(70)


def test_find_libdevice_path_of_none(tvm_nvcc, monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_PATH", fake_toolkit(tmp_path, "12.0.76", []))
    calls = [lambda m=module: m.find_libdevice_path(80) for module in (tvm_nvcc, kiln_nvcc)]
    assert same_error(*calls) is RuntimeError
    results = []
    for module in (tvm_nvcc, kiln_nvcc):
        with pytest.warns(UserWarning, match="Cannot find libdevice path"):
            results.append(module.callback_libdevice_path(80))
    assert results == ["", ""]


def test_callback_libdevice_path(tvm_nvcc, cuda):
    del cuda
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kiln_nvcc.callback_libdevice_path(80) == tvm_nvcc.callback_libdevice_path(80)


def test_have_cudagraph(tvm_nvcc, cuda):
    del cuda
    assert kiln_nvcc.have_cudagraph() is tvm_nvcc.have_cudagraph() is True


def test_have_cudagraph_without_cuda(tvm_nvcc, monkeypatch, tmp_path):
    """A CUDA_PATH without a toolkit: no CUDA graphs. 0.27 raises FileNotFoundError here (it runs
    the missing bin/nvcc); kiln answers False, as 0.27 does when it finds no toolkit at all."""
    monkeypatch.setenv("CUDA_PATH", str(tmp_path))
    assert kiln_nvcc.have_cudagraph() is False
    with pytest.raises(FileNotFoundError):
        tvm_nvcc.have_cudagraph()


@pytest.mark.parametrize(
    "machine,triples,expected",
    [
        ("x86_64", ["x86_64-linux"], "x86_64-linux"),
        ("aarch64", ["aarch64-linux", "sbsa-linux"], "sbsa-linux"),
        ("aarch64", ["aarch64-linux"], "aarch64-linux"),
        ("arm64", ["sbsa-linux"], "sbsa-linux"),
        ("x86_64", [], None),
    ],
)
def test_find_cuda_target_include(tvm_nvcc, monkeypatch, tmp_path, machine, triples, expected):
    """The private helper TVM's own tests call, with platform.machine() patched as they do."""
    for triple in triples:
        (tmp_path / "targets" / triple / "include").mkdir(parents=True)
    monkeypatch.setattr(kiln_nvcc.platform, "machine", lambda: machine)
    monkeypatch.setattr(kiln_nvcc.platform, "system", lambda: "Linux")
    found = kiln_nvcc._find_cuda_target_include(str(tmp_path))
    assert found == tvm_nvcc._find_cuda_target_include(str(tmp_path))
    assert found == (None if expected is None else str(tmp_path / "targets" / expected / "include"))


def test_ptxas_option_flags(tvm_nvcc, monkeypatch):
    assert kiln_nvcc._ptxas_option_flags() == tvm_nvcc._ptxas_option_flags()
    monkeypatch.setenv("TVM_CUDA_PTXAS_REG_LEVEL", "4")
    monkeypatch.setenv("TVM_CUDA_PTXAS_EXTRA_OPTS", "-O2 '--def-load-cache=ca'")
    assert kiln_nvcc._ptxas_option_flags() == tvm_nvcc._ptxas_option_flags()
    assert kiln_nvcc._ptxas_option_flags()[-2:] == ["-O2", "--def-load-cache=ca"]


# --- compute capabilities -----------------------------------------------------------------------

ARCHS = ["sm_52", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_103a",
         "sm_110a", "sm_120f"]  # fmt: skip


@pytest.mark.parametrize("arch", ARCHS)
def test_get_target_compute_version_of_a_target(tvm, tvm_nvcc, arch):
    target = cuda_target(tvm, arch)
    version = kiln_nvcc.get_target_compute_version(target)
    assert version == tvm_nvcc.get_target_compute_version(target)
    with target:
        assert kiln_nvcc.get_target_compute_version() == version
        assert tvm_nvcc.get_target_compute_version() == version


def test_get_target_compute_version_of_nothing(tvm_nvcc):
    """No target: GPU 0's compute version, or ValueError asking for an arch (both)."""
    if has_gpu():
        assert kiln_nvcc.get_target_compute_version() == tvm_nvcc.get_target_compute_version()
    else:
        assert (
            same_error(tvm_nvcc.get_target_compute_version, kiln_nvcc.get_target_compute_version)
            is ValueError
        )


def test_get_target_compute_version_of_a_bad_arch(tvm, tvm_nvcc):
    target = cuda_target(tvm, "sm_8")
    assert same_error(
        lambda: tvm_nvcc.get_target_compute_version(target),
        lambda: kiln_nvcc.get_target_compute_version(target),
    )


def test_get_target_compute_version_of_an_unreadable_arch(tvm, tvm_nvcc):
    """0.27 turns "sm_xx" into the version ".x.x"; kiln refuses it (ValueError)."""
    target = cuda_target(tvm, "sm_xx")
    assert tvm_nvcc.get_target_compute_version(target) == ".x.x"
    with pytest.raises(ValueError, match="sm_xx"):
        kiln_nvcc.get_target_compute_version(target)


VERSIONS = ["3.5", "5.2", "5.3", "6.0", "6.1", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "9.0.a",
            "10.0", "10.0.a", "10.3", "12.0", "12.1.f"]  # fmt: skip
BAD_VERSIONS = ["8", "", "x.y", "8.x", "sm_80"]
FEATURES = ["have_fp16", "have_int8", "have_tensorcore", "have_bf16", "have_fp8", "have_fp4"]


@pytest.mark.parametrize("version", VERSIONS)
def test_parse_compute_version(tvm_nvcc, version):
    assert kiln_nvcc.parse_compute_version(version) == tvm_nvcc.parse_compute_version(version)


@pytest.mark.parametrize("version", BAD_VERSIONS)
def test_parse_compute_version_of_a_bad_one(tvm_nvcc, version):
    assert (
        same_error(
            lambda: tvm_nvcc.parse_compute_version(version),
            lambda: kiln_nvcc.parse_compute_version(version),
        )
        is RuntimeError
    )


@pytest.mark.parametrize("feature", FEATURES)
def test_features(tvm_nvcc, feature):
    for version in VERSIONS:
        expected = getattr(tvm_nvcc, feature)(version)
        assert getattr(kiln_nvcc, feature)(version) is expected, (feature, version)
    for version in BAD_VERSIONS:
        assert same_error(
            lambda v=version: getattr(tvm_nvcc, feature)(v),
            lambda v=version: getattr(kiln_nvcc, feature)(v),
        ), (feature, version)


@pytest.mark.parametrize("arch", ["sm_61", "sm_70", "sm_80"])
def test_have_tensorcore_of_a_target(tvm, tvm_nvcc, arch):
    target = cuda_target(tvm, arch)
    assert kiln_nvcc.have_tensorcore(target=target) == tvm_nvcc.have_tensorcore(target=target)


def test_have_tensorcore_of_nothing(tvm_nvcc):
    if has_gpu():
        assert kiln_nvcc.have_tensorcore() == tvm_nvcc.have_tensorcore()
        return
    for module in (tvm_nvcc, kiln_nvcc):
        with pytest.warns(UserWarning, match="Tensorcore will be disabled"):
            assert module.have_tensorcore() is False


def test_have_tensorcore_of_a_suffixed_arch(tvm, tvm_nvcc):
    """0.27 cannot unpack "sm_90a" or "sm_100" (ValueError); kiln reads them as 9.0 and 10.0."""
    if has_gpu():
        pytest.skip("with a GPU the device's version is used, not the target's")
    for arch in ("sm_90a", "sm_100"):
        target = cuda_target(tvm, arch)
        assert kiln_nvcc.have_tensorcore(target=target) is True
        with pytest.raises(ValueError):
            tvm_nvcc.have_tensorcore(target=target)


# --- compile_cuda -------------------------------------------------------------------------------


def test_compile_cuda_nvrtc_cubin(tvm_nvcc, cuda):
    del cuda
    tvm_cubin = tvm_nvcc.compile_cuda(AXPY, target_format="cubin", arch="sm_80")
    kiln_cubin = kiln_nvcc.compile_cuda(AXPY, target_format="cubin", arch="sm_80")
    assert type(kiln_cubin) is type(tvm_cubin) is bytearray
    assert sass(kiln_cubin) == sass(tvm_cubin) == (["axpy"], ["sm_80"])
    assert kiln_nvcc.compile_cuda(AXPY, arch="compute_80") == kiln_cubin  # cubin by default


def test_compile_cuda_nvrtc_ptx(tvm_nvcc, cuda):
    del cuda
    tvm_ptx = tvm_nvcc.compile_cuda(AXPY, target_format="ptx", arch="sm_86")
    kiln_ptx = kiln_nvcc.compile_cuda(AXPY, target_format="ptx", arch="sm_86")
    assert type(kiln_ptx) is type(tvm_ptx) is bytearray
    for ptx in (tvm_ptx, kiln_ptx):
        assert b".target sm_86" in ptx and b".entry axpy(" in ptx


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_compile_cuda_nvrtc_arch_from_the_target(tvm, tvm_nvcc, cuda, arch):
    del cuda
    with cuda_target(tvm, arch):
        tvm_cubin = tvm_nvcc.compile_cuda(AXPY)
        kiln_cubin = kiln_nvcc.compile_cuda(AXPY)
    assert sass(kiln_cubin) == sass(tvm_cubin) == (["axpy"], [arch])


def test_compile_cuda_with_options(tvm, tvm_nvcc, cuda):
    """One option as a str, several as a list; NVRTC drops the nvcc-only ones (-O3, -std=...)."""
    del cuda
    for options in ("-DKERNEL=scaled", ["-DKERNEL=scaled", "-O3", "-std=c++17", "-lineinfo"]):
        tvm_ptx = tvm_nvcc.compile_cuda(AXPY, "ptx", "sm_80", options)
        kiln_ptx = kiln_nvcc.compile_cuda(AXPY, "ptx", "sm_80", options)
        for ptx in (tvm_ptx, kiln_ptx):
            assert b".entry scaled(" in ptx  # the option reached the compiler
        with cuda_target(tvm, "sm_80"):  # 0.27's nvcc path wants one (see below)
            tvm_ptx = tvm_nvcc.compile_cuda(AXPY, "ptx", "sm_80", options, compiler="nvcc")
        kiln_ptx = kiln_nvcc.compile_cuda(AXPY, "ptx", "sm_80", options, compiler="nvcc")
        assert without_file_names(kiln_ptx) == without_file_names(tvm_ptx)


def without_file_names(ptx):
    """PTX without its .file lines: with -lineinfo they name the temporary source file."""
    return [line for line in bytes(ptx).splitlines() if not line.lstrip().startswith(b".file")]


@pytest.mark.parametrize("target_format", ["cubin", "ptx", "fatbin"])
def test_compile_cuda_nvcc(tvm, tvm_nvcc, cuda, target_format):
    """nvcc is deterministic: kiln's output is TVM's, byte for byte, with an explicit arch and
    with the -gencode TVM derives from the current target."""
    del cuda
    with cuda_target(tvm, "sm_80"):
        tvm_out = tvm_nvcc.compile_cuda(AXPY, target_format, compiler="nvcc")
        kiln_out = kiln_nvcc.compile_cuda(AXPY, target_format, compiler="nvcc")
        assert type(kiln_out) is bytearray and kiln_out == tvm_out
        gencode = ["-gencode", "arch=compute_75,code=sm_75"]
        tvm_out = tvm_nvcc.compile_cuda(AXPY, target_format, gencode, compiler="nvcc")
        assert kiln_nvcc.compile_cuda(AXPY, target_format, gencode, compiler="nvcc") == tvm_out
        tvm_out = tvm_nvcc.compile_cuda(AXPY, target_format, "sm_86", compiler="nvcc")
        kiln_out = kiln_nvcc.compile_cuda(AXPY, target_format, "sm_86", compiler="nvcc")
        assert kiln_out == tvm_out
    if target_format != "ptx":
        assert sass(kiln_out) == (["axpy"], ["sm_86"])


def test_compile_cuda_nvcc_for_several_targets(tvm_nvcc, tvm, cuda):
    """A list arch is nvcc's arguments: one fatbin for sm_75 and sm_80, byte-equal to TVM's."""
    del cuda
    gencode = ["-gencode", "arch=compute_75,code=sm_75", "-gencode", "arch=compute_80,code=sm_80"]
    with cuda_target(tvm, "sm_80"):
        tvm_fatbin = tvm_nvcc.compile_cuda(AXPY, "fatbin", gencode, compiler="nvcc")
    kiln_fatbin = kiln_nvcc.compile_cuda(AXPY, "fatbin", gencode, compiler="nvcc")
    assert kiln_fatbin == tvm_fatbin
    assert sass(kiln_fatbin) == (["axpy"], ["sm_75", "sm_80"])


def test_compile_cuda_nvcc_kernel_dump(tvm, tvm_nvcc, cuda, monkeypatch, tmp_path):
    """TVM_KERNEL_DUMP: nvcc makes a fatbin with -lineinfo, and leaves the source and the fatbin
    (and nvcc's intermediate files) in the dump directory, as 0.27 does."""
    del cuda
    results = {}
    for name, module in (("tvm", tvm_nvcc), ("kiln", kiln_nvcc)):
        monkeypatch.setenv("TVM_KERNEL_DUMP", str(tmp_path / name))
        with cuda_target(tvm, "sm_80"):
            results[name] = module.compile_cuda(AXPY, "ptx", compiler="nvcc")
        assert (tmp_path / name / "tvm_kernels.cu").read_text() == AXPY
        assert (tmp_path / name / "tvm_kernels.fatbin").read_bytes() == results[name]
    assert sass(results["kiln"]) == sass(results["tvm"]) == (["axpy"], ["sm_80"])
    assert {p.suffix for p in (tmp_path / "kiln").iterdir()} >= {".cu", ".fatbin", ".ptx"}


def test_compile_cuda_nvcc_defaults_to_ptx(tvm, tvm_nvcc, cuda):
    del cuda
    with cuda_target(tvm, "sm_80"):
        assert kiln_nvcc.compile_cuda(AXPY, compiler="nvcc") == tvm_nvcc.compile_cuda(
            AXPY, compiler="nvcc"
        )


def test_compile_cuda_nvcc_with_an_arch_needs_no_target(tvm_nvcc, cuda):
    """0.27's nvcc path asks for the current target's compute version even when given an arch
    (and never uses it): without a target or a GPU it raises ValueError. kiln compiles."""
    del cuda
    if has_gpu():
        pytest.skip("with a GPU 0.27 takes the device's version")
    ptx = kiln_nvcc.compile_cuda(AXPY, "ptx", "sm_80", compiler="nvcc")
    assert b".entry axpy(" in ptx
    with pytest.raises(ValueError):
        tvm_nvcc.compile_cuda(AXPY, "ptx", "sm_80", compiler="nvcc")


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_compile_cuda_path_target(tvm, tvm_nvcc, cuda, tmp_path, compiler):
    del cuda
    with cuda_target(tvm, "sm_80"):
        tvm_out = tvm_nvcc.compile_cuda(AXPY, "cubin", "sm_80", None, str(tmp_path / "t"), compiler)
        kiln_out = kiln_nvcc.compile_cuda(AXPY, "cubin", "sm_80", None, tmp_path / "k", compiler)
    assert (tmp_path / "k").read_bytes() == kiln_out
    assert (tmp_path / "t").read_bytes() == tvm_out
    assert sass(kiln_out) == sass(tvm_out)


def test_compile_cuda_a_tvm_kernel(tvm, tvm_nvcc, cuda):
    """The source TVM itself generates for a CUDA TE kernel, through NVRTC."""
    del cuda
    _, source = tvm_cuda_source(tvm, "sm_80")
    with cuda_target(tvm, "sm_80"):
        tvm_cubin = tvm_nvcc.compile_cuda(source)
        kiln_cubin = kiln_nvcc.compile_cuda(source)
    assert sass(kiln_cubin) == sass(tvm_cubin)
    assert sass(kiln_cubin)[1] == ["sm_80"] and sass(kiln_cubin)[0]


BAD_CALLS = {
    "compiler": dict(arch="sm_80", compiler="clang"),
    "format": dict(target_format="cubin2", arch="sm_80"),
    "nvcc format": dict(target_format="elf", arch="sm_80", compiler="nvcc"),
    "nvrtc fatbin": dict(target_format="fatbin", arch="sm_80"),
    "options": dict(arch="sm_80", options=("-DKERNEL=scaled",)),
    "nvcc options": dict(arch="sm_80", options=("-DKERNEL=scaled",), compiler="nvcc"),
}


@pytest.mark.parametrize("call", BAD_CALLS.values(), ids=BAD_CALLS.keys())
def test_compile_cuda_bad_arguments(tvm, tvm_nvcc, cuda, call):
    del cuda
    with cuda_target(tvm, "sm_80"):
        assert (
            same_error(
                lambda: tvm_nvcc.compile_cuda(AXPY, **call),
                lambda: kiln_nvcc.compile_cuda(AXPY, **call),
            )
            is ValueError
        )


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_compile_cuda_error(tvm, tvm_nvcc, cuda, compiler):
    del cuda
    broken = AXPY + "\n__global__ void broken() { undeclared_name(); }\n"
    with cuda_target(tvm, "sm_80"):
        assert (
            same_error(
                lambda: tvm_nvcc.compile_cuda(broken, compiler=compiler),
                lambda: kiln_nvcc.compile_cuda(broken, compiler=compiler),
            )
            is RuntimeError
        )
    with pytest.raises(RuntimeError, match="undeclared_name"):
        kiln_nvcc.compile_cuda(broken, arch="sm_80", compiler=compiler)


def test_compile_cuda_without_toolkit_headers(tvm_nvcc, monkeypatch, tmp_path):
    """NVRTC with a CUDA_PATH that holds no headers: RuntimeError (both)."""
    monkeypatch.setenv("CUDA_PATH", str(tmp_path))
    assert (
        same_error(
            lambda: tvm_nvcc.compile_cuda(AXPY, arch="sm_80"),
            lambda: kiln_nvcc.compile_cuda(AXPY, arch="sm_80"),
        )
        is RuntimeError
    )


def test_compile_cuda_without_an_arch(tvm_nvcc, cuda):
    del cuda
    if has_gpu():
        pytest.skip("with a GPU the device's arch is used")
    for compiler in ("nvrtc", "nvcc"):
        assert (
            same_error(
                lambda c=compiler: tvm_nvcc.compile_cuda(AXPY, compiler=c),
                lambda c=compiler: kiln_nvcc.compile_cuda(AXPY, compiler=c),
            )
            is ValueError
        )


# --- tvm_callback_cuda_compile ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["nvrtc", "NVRTC", "nvcc"])
def test_tvm_callback_cuda_compile(tvm, tvm_nvcc, cuda, monkeypatch, mode):
    del cuda
    monkeypatch.setenv("TVM_CUDA_COMPILE_MODE", mode)
    with cuda_target(tvm, "sm_80"):
        tvm_out = tvm_nvcc.tvm_callback_cuda_compile(AXPY)
        kiln_out = kiln_nvcc.tvm_callback_cuda_compile(AXPY)
    assert sass(kiln_out) == sass(tvm_out) == (["axpy"], ["sm_80"])
    if mode == "nvcc":
        assert kiln_out == tvm_out  # a fatbin from nvcc: byte-equal


def test_tvm_callback_cuda_compile_bad_mode(tvm, tvm_nvcc, monkeypatch):
    monkeypatch.setenv("TVM_CUDA_COMPILE_MODE", "clang")
    with cuda_target(tvm, "sm_80"):
        assert (
            same_error(
                lambda: tvm_nvcc.tvm_callback_cuda_compile(AXPY),
                lambda: kiln_nvcc.tvm_callback_cuda_compile(AXPY),
            )
            is ValueError
        )


# --- kiln's own: the kernel cache and the compile server ----------------------------------------


def test_kernel_cache_is_kilns(cuda, kiln_cache, monkeypatch, tmp_path):
    """compile_cuda stores into kiln's cache (KILN_CACHE_DIR) and KILN_NO_CACHE keeps it out."""
    del cuda, kiln_cache
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    source = AXPY + "// cached\n"
    first = kiln_nvcc.compile_cuda(source, arch="sm_80")
    kept = ("servers", "CACHEDIR.TAG")  # the compile server's directory, the directory's tag
    stored = [p for p in (tmp_path / "cache").iterdir() if p.name not in kept]
    assert stored, "nothing stored in KILN_CACHE_DIR"
    assert kiln_nvcc.compile_cuda(source, arch="sm_80") == first
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "off"))
    monkeypatch.setenv("KILN_NO_CACHE", "1")
    assert kiln_nvcc.compile_cuda(source, arch="sm_80") == first
    assert not [p for p in (tmp_path / "off").glob("*") if p.name not in kept]


NO_TVM_PROBE = """
import sys
from kiln.support import nvcc
print(nvcc.compile_cuda(sys.argv[1], arch="sm_80")[:4] == b"\\x7fELF")
try:
    nvcc.compile_cuda(sys.argv[1])
    print("compiled")
except ValueError:
    print("ValueError")
print("tvm" in sys.modules)
"""


def test_compile_cuda_without_tvm(cuda):
    """kiln.support.nvcc never imports TVM: without it an arch is given or read from GPU 0
    (none here: ValueError, as 0.27 without a target)."""
    del cuda
    env = dict(os.environ, KILN_NO_CACHE="1")
    done = subprocess.run(
        [sys.executable, "-c", NO_TVM_PROBE, AXPY], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    without_arch = "compiled" if has_gpu() else "ValueError"
    assert done.stdout.split() == ["True", without_arch, "False"]


SERVER_PROBE = """
import sys
from kiln.support import nvcc
cubin = nvcc.compile_cuda(sys.argv[1], arch="sm_80")
print(len(cubin))
"""


def run_probe(tmp_path, program):
    """Compile AXPY with NVRTC in a fresh Python (kernel cache off, KILN_SERVER_DEBUG=1)."""
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path), KILN_NO_CACHE="1", KILN_SERVER_DEBUG="1")
    env.pop("KILN_SERVICE_PROGRAM", None)
    if program is not None:
        env["KILN_SERVICE_PROGRAM"] = program
    return subprocess.run(
        [sys.executable, "-c", SERVER_PROBE, AXPY], env=env, capture_output=True, text=True
    )


def test_nvrtc_compiles_in_kilns_compile_server(cuda, tmp_path):
    """From Python, NVRTC compiles in kiln's compile server: the package points
    KILN_SERVICE_PROGRAM at its kiln program, the server's socket appears in the cache
    directory, and KILN_SERVER_DEBUG=1 reports no fallback. With a program that cannot start
    (KILN_SERVICE_PROGRAM naming no file; an empty one is no value, so the package's program),
    the same probe reports the fallback: the check can fail."""
    del cuda
    assert os.environ.get("KILN_SERVICE_PROGRAM") == program() is not None
    served = run_probe(tmp_path / "served", None)
    assert served.returncode == 0, served.stderr
    assert "no NVRTC compile server" not in served.stderr
    assert list((tmp_path / "served" / "servers").glob("nvrtc-*.sock"))
    alone = run_probe(tmp_path / "alone", str(tmp_path / "no-such-kiln"))
    assert alone.returncode == 0, alone.stderr
    assert "no NVRTC compile server" in alone.stderr
    assert alone.stdout == served.stdout
