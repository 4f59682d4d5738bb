"""Parity of kiln.support.rocm with apache-tvm 0.27's tvm.support.rocm, on this machine's clang-15,
ld.lld and Debian's ROCm device libraries (rocm-device-libs).

No ROCm runtime or GPU is here: rocminfo and hipcc are small stand-ins (the test names say so)
that print what the real tools print, for both sides alike.

TVM's three callbacks (callback_rocm_link, callback_rocm_bitcode_path, get_rocm_arch) are
tvm_ffi.Function objects in 0.27 (its register_global_func decorator returns the registered
function), so calling them converts through TVM's FFI: bytes come back as tvm_ffi.Bytes, any
exception as RuntimeError. kiln's are plain Python functions (importing kiln registers nothing),
returning what 0.27's source returns (bytearray); kiln.tvm.install() registers them, and through
TVM's registry both sides then give the same types (test_callbacks_through_tvm_globals).
"""

import os
import shutil
import subprocess
import textwrap

import pytest
from conftest import require_tool, same_error, tvm_module

import kiln.support.rocm as kiln_rocm

DEBIAN_BITCODE = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"
KERNEL = "__kernel void add_one(__global int* a) { a[0] += 1; }\n"
UNDEFINED = "void missing_fn(void);\n__kernel void k(__global int* a) { missing_fn(); }\n"


@pytest.fixture(name="tvm_rocm")
def fixture_tvm_rocm():
    return tvm_module("rocm")


def _amdgpu_object(tmp_path, source, name="kernel"):
    """A relocatable AMDGPU object (gfx900) compiled by clang-15 from OpenCL C."""
    clang = require_tool("clang-15")
    require_tool("ld.lld")
    cl_file = tmp_path / f"{name}.cl"
    cl_file.write_text(source)
    obj = tmp_path / f"{name}.o"
    subprocess.run(
        [clang, "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx900", "-nogpulib", "-x", "cl", "-c",
         str(cl_file), "-o", str(obj)],
        check=True,
    )  # fmt: skip
    return obj


def _executable(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_find_lld_same_list(tvm_rocm):
    require_tool("ld.lld")
    assert kiln_rocm.find_lld() == tvm_rocm.find_lld()
    assert kiln_rocm.find_lld(required=False) == tvm_rocm.find_lld(required=False)


def test_find_lld_prefers_tvm_llvm_major(tvm_rocm, tmp_path, monkeypatch):
    """An ld.lld-<TVM's LLVM major> (a real ld.lld under that name) comes first on both sides."""
    real = require_tool("ld.lld-15")
    import tvm.target  # pylint: disable=import-outside-toplevel

    major = tvm.target.codegen.llvm_version_major(allow_none=True)
    if major is None:
        pytest.skip("this TVM reports no LLVM version")
    (tmp_path / f"ld.lld-{major}").symlink_to(real)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    found = kiln_rocm.find_lld()
    assert found == tvm_rocm.find_lld()
    assert found[0] == str(tmp_path / f"ld.lld-{major}")


def test_rocm_link_is_byte_equal(tvm_rocm, tmp_path):
    obj = _amdgpu_object(tmp_path, KERNEL)
    tvm_rocm.rocm_link(str(obj), str(tmp_path / "tvm.co"))
    kiln_rocm.rocm_link(str(obj), str(tmp_path / "kiln.co"))
    code_object = (tmp_path / "kiln.co").read_bytes()
    assert code_object == (tmp_path / "tvm.co").read_bytes()
    assert code_object[:4] == b"\x7fELF" and b"add_one" in code_object


def test_rocm_link_with_given_lld(tvm_rocm, tmp_path):
    lld = require_tool("ld.lld-15")
    obj = _amdgpu_object(tmp_path, KERNEL)
    tvm_rocm.rocm_link(str(obj), str(tmp_path / "tvm.co"), lld=lld)
    kiln_rocm.rocm_link(str(obj), str(tmp_path / "kiln.co"), lld=lld)
    assert (tmp_path / "kiln.co").read_bytes() == (tmp_path / "tvm.co").read_bytes()


def test_rocm_link_undefined_symbol(tvm_rocm, tmp_path):
    obj = _amdgpu_object(tmp_path, UNDEFINED, name="undefined")
    error = same_error(
        lambda: tvm_rocm.rocm_link(str(obj), str(tmp_path / "tvm.co")),
        lambda: kiln_rocm.rocm_link(str(obj), str(tmp_path / "kiln.co")),
    )
    assert error is RuntimeError
    with pytest.raises(RuntimeError, match="Linking error using ld.lld:(.|\n)*missing_fn"):
        kiln_rocm.rocm_link(str(obj), str(tmp_path / "kiln.co"))


def test_callback_rocm_link_returns_the_same_bytes(tvm_rocm, tmp_path):
    obj_bin = bytearray(_amdgpu_object(tmp_path, KERNEL).read_bytes())
    expected = tvm_rocm.callback_rocm_link(obj_bin)  # through TVM's FFI: tvm_ffi.Bytes
    result = kiln_rocm.callback_rocm_link(obj_bin)
    assert isinstance(result, bytearray)  # 0.27's source returns a bytearray
    assert result == expected


def _require_debian_bitcode():
    if not os.path.isfile(os.path.join(DEBIAN_BITCODE, "ocml.bc")):
        pytest.skip(f"no ROCm device libraries in {DEBIAN_BITCODE} (rocm-device-libs)")


def test_callback_rocm_bitcode_path_given_dir(tvm_rocm):
    _require_debian_bitcode()
    for rocdl_dir in (DEBIAN_BITCODE, DEBIAN_BITCODE + "/"):
        expected = tvm_rocm.callback_rocm_bitcode_path(rocdl_dir)
        result = kiln_rocm.callback_rocm_bitcode_path(rocdl_dir)
        assert type(result) is type(expected)  # TVM's Array: TVM is loaded
        assert list(result) == list(expected)
        assert any(path.endswith("/ocml.bc") for path in result)


def test_callback_rocm_bitcode_path_from_rocm_path(tvm_rocm, tmp_path, monkeypatch):
    """ROCM_PATH/amdgcn/bitcode (ROCm >= 3.9's layout), here linked to Debian's files."""
    _require_debian_bitcode()
    (tmp_path / "amdgcn").mkdir()
    (tmp_path / "amdgcn" / "bitcode").symlink_to(DEBIAN_BITCODE)
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))
    expected = list(tvm_rocm.callback_rocm_bitcode_path())
    assert list(kiln_rocm.callback_rocm_bitcode_path()) == expected
    assert expected[0].startswith(str(tmp_path / "amdgcn" / "bitcode"))


def test_callback_rocm_bitcode_path_missing_library(tvm_rocm, tmp_path):
    (tmp_path / "ocml.bc").write_bytes(b"BC")  # the others are missing
    error = same_error(
        lambda: tvm_rocm.callback_rocm_bitcode_path(str(tmp_path)),
        lambda: kiln_rocm.callback_rocm_bitcode_path(str(tmp_path)),
    )
    assert error is RuntimeError


def test_callback_rocm_bitcode_path_without_rocm_uses_the_distribution_s(tvm_rocm, monkeypatch):
    """Deliberate difference: with no ROCm installed, 0.27 fails (find_rocm_path raises
    RuntimeError); kiln also looks in the distribution's directory, where Debian's
    rocm-device-libs puts the libraries, so TVM's ROCm codegen works with them."""
    _require_debian_bitcode()
    monkeypatch.delenv("ROCM_PATH", raising=False)
    try:
        tvm_rocm.find_rocm_path()
        pytest.skip("a ROCm installation is present: both sides use it")
    except RuntimeError:
        pass
    with pytest.raises(RuntimeError):
        tvm_rocm.callback_rocm_bitcode_path()
    result = list(kiln_rocm.callback_rocm_bitcode_path())
    assert result == list(tvm_rocm.callback_rocm_bitcode_path(DEBIAN_BITCODE))


ROCMINFO = textwrap.dedent(
    """\
    #!/bin/sh
    # Stand-in for ROCm's rocminfo (test fixture): an agent list as the real tool prints it.
    [ -n "$KILN_ROCMINFO_FAIL" ] && { echo "hsa api call failure" >&2; exit 1; }
    cat <<'END'
    *******
    Agent 1
    *******
      Name:                    AMD EPYC 7763 64-Core Processor
      Device Type:             CPU
    *******
    Agent 2
    *******
      Name:                    gfx90a
      Marketing Name:          AMD Instinct MI210
      Device Type:             GPU
    END
    """
)


@pytest.fixture(name="rocm_root")
def fixture_rocm_root(tmp_path):
    """A ROCm tree whose bin/ holds the stand-in rocminfo."""
    root = tmp_path / "rocm"
    (root / "bin").mkdir(parents=True)
    _executable(root / "bin" / "rocminfo", ROCMINFO)
    return root


def test_get_rocm_arch_from_standin_rocminfo(tvm_rocm, rocm_root, monkeypatch):
    assert kiln_rocm.get_rocm_arch(str(rocm_root)) == tvm_rocm.get_rocm_arch(str(rocm_root))
    assert kiln_rocm.get_rocm_arch(str(rocm_root)) == "gfx90a"
    monkeypatch.setenv("ROCM_PATH", str(rocm_root))
    assert kiln_rocm.get_rocm_arch() == tvm_rocm.get_rocm_arch() == "gfx90a"


def test_get_rocm_arch_failing_standin_rocminfo(tvm_rocm, rocm_root, monkeypatch, capsys):
    monkeypatch.setenv("KILN_ROCMINFO_FAIL", "1")
    assert kiln_rocm.get_rocm_arch(str(rocm_root)) == tvm_rocm.get_rocm_arch(str(rocm_root))
    assert kiln_rocm.get_rocm_arch(str(rocm_root)) == "gfx900"
    assert "gfx900" in capsys.readouterr().out  # both say why the default is used


def test_get_rocm_arch_no_rocm(tvm_rocm, tmp_path, capsys):
    missing = str(tmp_path / "no-rocm")
    assert kiln_rocm.get_rocm_arch(missing) == tvm_rocm.get_rocm_arch(missing) == "gfx900"
    assert "gfx900" in capsys.readouterr().out


def test_get_rocm_arch_without_rocminfo_falls_back(tvm_rocm, tmp_path):
    """Deliberate difference: a ROCm directory without bin/rocminfo makes 0.27 fail (subprocess's
    FileNotFoundError, which its FFI wrapper raises as RuntimeError; it only catches
    CalledProcessError), and with it TVM's tvm_callback_rocm_get_arch; kiln returns the default
    gfx900, as for any other rocminfo failure."""
    with pytest.raises(RuntimeError, match="rocminfo"):
        tvm_rocm.get_rocm_arch(str(tmp_path))
    assert kiln_rocm.get_rocm_arch(str(tmp_path)) == "gfx900"


def test_find_rocm_path_from_environment(tvm_rocm, tmp_path, monkeypatch):
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))
    assert kiln_rocm.find_rocm_path() == tvm_rocm.find_rocm_path() == str(tmp_path)


def test_find_rocm_path_from_standin_hipcc(tvm_rocm, tmp_path, monkeypatch):
    """hipcc on PATH is a link into a ROCm tree: two levels above its real path."""
    install = tmp_path / "opt" / "rocm-6.1"
    (install / "bin").mkdir(parents=True)
    _executable(install / "bin" / "hipcc", "#!/bin/sh\nexit 0\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "hipcc").symlink_to(install / "bin" / "hipcc")
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert kiln_rocm.find_rocm_path() == tvm_rocm.find_rocm_path() == str(install)


def test_find_rocm_path_none(tvm_rocm, monkeypatch):
    if shutil.which("hipcc") or os.path.exists("/opt/rocm/bin/hipcc"):
        pytest.skip("ROCm is installed here: its absence cannot be tested")
    monkeypatch.delenv("ROCM_PATH", raising=False)
    error = same_error(tvm_rocm.find_rocm_path, kiln_rocm.find_rocm_path)
    assert error is RuntimeError


@pytest.mark.parametrize("version", ["9.0", "9.0.a", "8.6", "7.5", "10.3"])
def test_parse_compute_version_and_have_matrixcore(tvm_rocm, version):
    assert kiln_rocm.parse_compute_version(version) == tvm_rocm.parse_compute_version(version)
    assert kiln_rocm.have_matrixcore(version) == tvm_rocm.have_matrixcore(version)


@pytest.mark.parametrize("version", ["9", "x.y", "", "9."])
def test_parse_compute_version_errors(tvm_rocm, version):
    assert same_error(
        lambda: tvm_rocm.parse_compute_version(version),
        lambda: kiln_rocm.parse_compute_version(version),
    ) is RuntimeError
    assert same_error(
        lambda: tvm_rocm.have_matrixcore(version), lambda: kiln_rocm.have_matrixcore(version)
    ) is RuntimeError


def test_have_matrixcore_without_rocm_device(tvm_rocm):
    import tvm  # pylint: disable=import-outside-toplevel

    if tvm.rocm(0).exist:
        pytest.skip("a ROCm device is present")
    assert same_error(tvm_rocm.have_matrixcore, kiln_rocm.have_matrixcore) is RuntimeError


def test_callbacks_through_tvm_globals(tvm_rocm, rocm_root, tmp_path):
    """After kiln.tvm.install(), TVM's registry hands out kiln's callbacks: same results, same
    types as TVM's own through the FFI; uninstall() gives TVM its own back."""
    import tvm_ffi  # pylint: disable=import-outside-toplevel

    import kiln.tvm  # pylint: disable=import-outside-toplevel

    _require_debian_bitcode()
    obj_bin = _amdgpu_object(tmp_path, KERNEL).read_bytes()
    expected = (
        tvm_rocm.callback_rocm_link(obj_bin),
        tvm_rocm.callback_rocm_bitcode_path(DEBIAN_BITCODE),
        tvm_rocm.get_rocm_arch(str(rocm_root)),
    )
    kiln.tvm.install()
    try:
        results = (
            tvm_ffi.get_global_func("tvm_callback_rocm_link")(obj_bin),
            tvm_ffi.get_global_func("tvm_callback_rocm_bitcode_path")(DEBIAN_BITCODE),
            tvm_ffi.get_global_func("tvm_callback_rocm_get_arch")(str(rocm_root)),
        )
        # kiln's, not TVM's: without rocminfo kiln falls back where 0.27 raises.
        kiln_arch = tvm_ffi.get_global_func("tvm_callback_rocm_get_arch")(str(tmp_path))
    finally:
        kiln.tvm.uninstall()
    assert [type(r) for r in results] == [type(e) for e in expected]
    assert results[0] == expected[0]
    assert list(results[1]) == list(expected[1])
    assert results[2] == expected[2] == "gfx90a"
    assert kiln_arch == "gfx900"
    with pytest.raises(RuntimeError):
        tvm_ffi.get_global_func("tvm_callback_rocm_get_arch")(str(tmp_path))
