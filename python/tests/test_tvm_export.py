"""Inside TVM: modules that apache-tvm 0.27 compiles, exported with kiln.support's compile
functions, load with tvm.runtime.load_module and compute what TVM's own export computes."""

import os

import pytest

from conftest import require_tool

tvm = pytest.importorskip("tvm", reason="apache-tvm not importable (scripts/install-deps.sh)")
np = pytest.importorskip("numpy")
te = pytest.importorskip("tvm.te")

from kiln.support import cc as kcc  # noqa: E402
from kiln.support import tar as ktar  # noqa: E402

N = 257  # not a multiple of any vector width


def saxpy_module(target):
    x = te.placeholder((N,), name="x", dtype="float32")
    y = te.placeholder((N,), name="y", dtype="float32")
    out = te.compute((N,), lambda i: x[i] * 2.5 + y[i] - 1.0, name="out")
    return tvm.compile(te.create_prim_func([x, y, out]), target=target)


def run(path):
    module = tvm.runtime.load_module(path)
    rng = np.random.default_rng(16)
    x = rng.standard_normal(N).astype("float32")
    y = rng.standard_normal(N).astype("float32")
    out = tvm.runtime.tensor(np.zeros(N, dtype="float32"))
    module["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(y), out)
    return x, y, out.numpy()


def test_cpu_module_exported_by_kiln_runs_like_tvms_own_export(workdir):
    require_tool("g++")
    module = saxpy_module("llvm")
    paths = {"tvm": str(workdir / "tvm.so"), "kiln": str(workdir / "kiln.so"),
             "kiln-tar": str(workdir / "kiln.tar")}
    module.export_library(paths["tvm"])
    module.export_library(paths["kiln"], fcompile=kcc.create_shared)
    module.export_library(paths["kiln-tar"], fcompile=ktar.tar)
    x, y, expected = run(paths["tvm"])
    np.testing.assert_allclose(expected, x * 2.5 + y - 1.0, rtol=1e-6)
    for name in ("kiln", "kiln-tar"):
        _, _, got = run(paths[name])
        np.testing.assert_array_equal(got, expected, err_msg=name)
    assert kcc.get_global_symbol_section_map(paths["kiln"]).get("__tvm_ffi_main") == "T"


def test_export_with_kiln_cross_compiler_makes_an_aarch64_library(workdir):
    require_tool("aarch64-linux-gnu-gcc")
    target = tvm.target.Target({"kind": "llvm", "mtriple": "aarch64-linux-gnu"})
    path = str(workdir / "libsaxpy-arm.so")
    saxpy_module(target).export_library(
        path, fcompile=kcc.cross_compiler("aarch64-linux-gnu-gcc", options=["-O2"]))
    with open(path, "rb") as file:
        header = file.read(20)
    assert header[:4] == b"\x7fELF" and header[4] == 2  # ELF64
    assert int.from_bytes(header[18:20], "little") == 183  # EM_AARCH64
    assert os.path.getsize(path) > 1000
