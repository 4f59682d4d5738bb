"""TVM's own users of tvm.support.popen_pool, run on kiln's after kiln.tvm.install().

MetaSchedule's LocalBuilder (imported before install(), so it holds TVM's PopenPoolExecutor by
name until install() replaces that copy) builds real kernels in kiln's workers: a completed
build, an exception and a timeout come back as LocalBuilder reports them.
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


def candidate(n):
    import tvm
    from tvm.s_tir.meta_schedule.builder import BuilderInput

    mod = tvm.IRModule({}).with_attr("kiln_n", n)
    return BuilderInput(mod, tvm.target.Target("llvm"))


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
    import tvm_builder_tasks

    from tvm.s_tir.meta_schedule.builder import local_builder
    from kiln.support import popen_pool

    assert local_builder.PopenPoolExecutor is popen_pool.PopenPoolExecutor
    builder = LocalBuilder(
        max_workers=2, timeout_sec=10, f_build=tvm_builder_tasks.build_doubling_kernel
    )
    results = builder.build([candidate(n) for n in (16, 64, -1, 0)])
    assert len(results) == 4
    for result in results[:2]:
        assert result.error_msg is None, result.error_msg
        assert os.path.getsize(result.artifact_path) > 0
        shutil.rmtree(os.path.dirname(result.artifact_path))  # default_export's mkdtemp()
    assert results[2].artifact_path is None
    assert "LocalBuilder: An exception occurred" in results[2].error_msg
    assert "ValueError: kiln_n is negative: -1" in results[2].error_msg
    assert results[3].error_msg == "LocalBuilder: Timeout, killed after 10 seconds"
