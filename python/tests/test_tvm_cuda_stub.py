"""TVM's own CUDA build path without a GPU: tvm.compile for sm_80 with CUDA's stub driver on the
library path (tvm_cuda_models.py), which makes TVM call tvm_callback_cuda_compile as on a GPU
machine.

With kiln.tvm.install(), the callback that compiles is kiln's, in the calling process and in a
MetaSchedule LocalBuilder worker (installed there by the worker itself), and the cubin it returns,
which the built module holds, lists every kernel TVM generated. Without install(), TVM compiles
with its own callback and kiln runs nothing. A module of many kernels that kiln compiles in parts
has each kernel's machine code from one compile. Each case runs tvm_cuda_stub_driver.py in a child,
whose library path the stub needs from its start.
"""

import glob
import json
import os
import subprocess
import sys

import pytest

from _cuda_helpers import require_cuda, sass, sass_by_function
from conftest import TESTS_DIR, tvm_module
from tvm_cuda_models import kernel_names, stub_driver, stub_environment


def run_driver(mode, tmp_path, *models, debug=None):
    """Runs the driver in `mode` ("kiln", "tvm", "sources" or "both"); returns {report name:
    report} ({model: source} for "sources"). With `debug` (a list), KILN_SERVER_DEBUG=1 and the
    child's stderr is appended to it."""
    tvm_module("nvcc")
    require_cuda()
    stub = stub_driver(str(tmp_path / "stub"))
    if stub is None:
        pytest.skip("the CUDA toolkit has no lib64/stubs/libcuda.so")
    out = tmp_path / "out"
    out.mkdir()
    env = stub_environment(stub)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (TESTS_DIR, env.get("PYTHONPATH")) if p)
    env["KILN_CACHE_DIR"] = str(tmp_path / "cache")
    env["KILN_SERVER_IDLE"] = "10"
    for name in ("KILN_TVM", "TVM_CUDA_COMPILE_MODE", "KILN_NO_CACHE", "KILN_NVRTC_SPLIT"):
        env.pop(name, None)
    if debug is not None:
        env["KILN_SERVER_DEBUG"] = "1"
    done = subprocess.run([sys.executable, os.path.join(TESTS_DIR, "tvm_cuda_stub_driver.py"),
                           mode, str(out), *models], env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    if debug is not None:
        debug.append(done.stderr)
    if mode == "sources":
        return {model: (out / f"{model}.cu").read_text(encoding="utf-8") for model in models}
    reports = {}
    for path in glob.glob(str(out / "*.json")):
        with open(path, encoding="utf-8") as file:
            reports[os.path.basename(path)[:-5]] = json.load(file)
    return reports


def assert_cubin_lists_the_kernels(report):
    with open(report["cubin"], "rb") as file:
        binary = file.read()
    assert binary[:4] == b"\x7fELF", "not a cubin"
    names, archs = sass(binary)
    assert report["kernels"], "TVM generated no kernel?"
    assert sorted(names) == report["kernels"]
    assert set(archs) == {"sm_80"}


def test_kiln_compiles_tvms_cuda_in_the_parent_and_in_a_builder_worker(tmp_path):
    reports = run_driver("kiln", tmp_path)
    parent = reports.pop("parent")
    assert parent["callback_calls"] == 1
    assert parent["kiln_compiles"] == 1, "the callback TVM called was not kiln's"
    assert parent["in_module"], "the built module does not hold the cubin kiln returned"
    assert len(parent["kernels"]) == 4
    assert_cubin_lists_the_kernels(parent)
    workers = list(reports.values())
    assert len(workers) == 2, reports
    for worker in workers:
        assert worker["pid"] != parent["pid"]
        assert worker["callback_calls"] == 1
        assert worker["kiln_compiles"] == 1, "the worker's callback was not kiln's"
        assert worker["in_module"]
        assert_cubin_lists_the_kernels(worker)


def test_without_install_tvm_compiles_with_its_own_callback(tmp_path):
    parent = run_driver("tvm", tmp_path)["parent"]
    assert parent["callback_calls"] == 1
    assert parent["kiln_compiles"] == 0
    assert parent["in_module"]
    assert_cubin_lists_the_kernels(parent)


@pytest.mark.parametrize("model", ["mlp8", "cnn2"])
def test_a_tvm_module_compiled_in_parts_has_each_kernels_single_compile_sass(
        tmp_path, monkeypatch, capfd, model):
    """kiln compiles a module TVM generated (an MLP's matmuls and transposes, a CNN's
    convolutions and paddings) as two NVRTC programs at once (nvrtc_parallel.h), and every
    kernel's machine code is what one compile of the module makes."""
    code = run_driver("sources", tmp_path, model)[model]
    from kiln.support import nvcc  # pylint: disable=import-outside-toplevel

    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KILN_NO_CACHE", "1")
    monkeypatch.setenv("KILN_SERVER_DEBUG", "1")
    monkeypatch.setenv("KILN_SERVER_IDLE", "10")
    monkeypatch.delenv("KILN_NVRTC_SPLIT", raising=False)
    capfd.readouterr()
    parts = nvcc.compile_cuda(code, target_format="cubin", arch="sm_80")
    assert "compiled the module as 2 programs at once" in capfd.readouterr().err
    monkeypatch.setenv("KILN_NVRTC_SPLIT", "0")
    whole = nvcc.compile_cuda(code, target_format="cubin", arch="sm_80")
    split_sass, whole_sass = sass_by_function(bytes(parts)), sass_by_function(bytes(whole))
    assert sorted(split_sass) == kernel_names(code)
    for name, instructions in whole_sass.items():
        assert split_sass[name] == instructions, f"{name}'s SASS differs"


def test_tvm_compile_with_kiln_makes_each_kernel_as_tvms_own_callback_does(tmp_path):
    """tvm.compile of a transformer block (14 kernels, 670 KB of CUDA), an MLP (8 kernels) and a
    small CNN (4 kernels), scheduled once, built with TVM's own callback and with kiln's (which
    compiles each module as two NVRTC programs at once): every kernel's machine code
    (cuobjdump -sass) is TVM's, although kiln's NVRTC preamble and options are its own."""
    models = ("transformer", "mlp8", "cnn2")
    stderr = []
    reports = run_driver("both", tmp_path, *models, debug=stderr)
    assert stderr[0].count("compiled the module as 2 programs at once") == len(models), stderr
    for model in models:
        ours, theirs = reports[f"{model}-kiln"], reports[f"{model}-tvm"]
        assert (ours["kiln_compiles"], theirs["kiln_compiles"]) == (1, 0)
        assert ours["in_module"] and theirs["in_module"]
        with open(ours["cubin"], "rb") as kiln_file, open(theirs["cubin"], "rb") as tvm_file:
            kiln_sass, tvm_sass = sass_by_function(kiln_file.read()), sass_by_function(
                tvm_file.read())
        assert sorted(tvm_sass) == theirs["kernels"] == ours["kernels"], model
        assert sorted(kiln_sass) == sorted(tvm_sass), model
        for name, instructions in tvm_sass.items():
            assert kiln_sass[name] == instructions, f"{model}: {name}'s SASS differs from TVM's"
