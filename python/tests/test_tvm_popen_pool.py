"""TVM's own users of tvm.support.popen_pool, run on kiln's after kiln.tvm.install().

MetaSchedule's LocalBuilder (imported before install(), so it holds TVM's PopenPoolExecutor by
name until install() replaces that copy) builds real TE candidates in kiln's workers: completed
builds (tar files that load as modules), an exception and a timeout come back as LocalBuilder
reports them.
"""
# pylint: disable=import-outside-toplevel

import os
import shutil

import pytest

from conftest import tvm_module


@pytest.fixture
def installed(workers_import_tests):  # pylint: disable=unused-argument,redefined-outer-name
    """kiln.tvm.install() for one test, with this directory on the workers' PYTHONPATH."""
    tvm_module("popen_pool")
    import kiln.tvm

    kiln.tvm.install()
    yield
    kiln.tvm.uninstall()


def candidate(case=None, n=64):
    """A real MetaSchedule candidate: a TE matmul for llvm (tvm_builder_cases.py)."""
    import tvm
    from tvm.s_tir.meta_schedule.builder import BuilderInput
    from tvm_builder_cases import matmul_module

    mod = matmul_module(n)
    if case:
        mod = mod.with_attr("kiln_case", case)
    return BuilderInput(mod, tvm.target.Target({"kind": "llvm", "num-cores": 1}))


def test_install_points_tvms_copies_at_kilns_pool():
    tvm_module("popen_pool")
    from tvm.s_tir.meta_schedule.builder import local_builder
    import kiln.tvm
    from kiln.support import popen_pool

    tvms = local_builder.PopenPoolExecutor
    assert tvms is not popen_pool.PopenPoolExecutor
    kiln.tvm.install()
    try:
        assert local_builder.PopenPoolExecutor is popen_pool.PopenPoolExecutor
        assert local_builder.StatusKind is popen_pool.StatusKind
    finally:
        kiln.tvm.uninstall()
    assert local_builder.PopenPoolExecutor is tvms


def test_local_builder_builds_in_kilns_workers(installed):
    from tvm.s_tir.meta_schedule.builder import LocalBuilder
    import tvm
    import tvm_builder_tasks

    from tvm.s_tir.meta_schedule.builder import local_builder
    from kiln.support import _popen_template, popen_pool

    assert local_builder.PopenPoolExecutor is popen_pool.PopenPoolExecutor
    builder = LocalBuilder(
        max_workers=2,
        timeout_sec=45,
        f_build=tvm_builder_tasks.build_noting_imports,
        f_export=tvm_builder_tasks.export_noting_imports,
    )
    # The sanity check LocalBuilder() ran in a pool of its own did not make the worker template
    # import (and wait for) tvm.s_tir.tensor_intrin: only LocalBuilder.build's tasks need it.
    assert "tvm.s_tir.tensor_intrin" not in _popen_template.Template.wanted
    results = builder.build([candidate(), candidate(n=32), candidate("raise"), candidate("hang")])
    assert len(results) == 4
    for result in results[:2]:
        assert result.error_msg is None, result.error_msg
        assert os.path.getsize(result.artifact_path) > 0
        # ... and those found it imported (by the template) before their build began.
        with open(os.path.join(os.path.dirname(result.artifact_path), "imports.txt")) as noted:
            assert noted.read() == "tensor_intrin before the build: True"
        loaded = tvm.runtime.load_module(result.artifact_path)
        assert loaded["main"] is not None
        shutil.rmtree(os.path.dirname(result.artifact_path))  # default_export's mkdtemp()
    assert results[2].artifact_path is None
    assert "LocalBuilder: An exception occurred" in results[2].error_msg
    assert "ValueError: kiln_case says raise" in results[2].error_msg
    assert results[3].error_msg == "LocalBuilder: Timeout, killed after 45 seconds"

