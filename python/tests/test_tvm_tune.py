"""A real MetaSchedule tuning run on kiln's pool: tune_tir of a 128^3 matmul on llvm, 32 trials,
LocalBuilder with 2 workers and LocalRunner, after kiln.tvm.install(). Every worker of both pools
(each a fresh pool per batch, forked from kiln's warm template) reports kiln's tvm.support
functions and CUDA callback, and every trial is in the database with its measured time, as TVM's
own pool records them (bench/python_tvm_tune_bench.py runs the two side by side).
"""
# pylint: disable=import-outside-toplevel

import glob
import json
import os

from conftest import tvm_module


def test_tuning_on_kilns_pool_records_every_trial_with_kiln_in_every_worker(
        tmp_path, workers_import_tests):  # pylint: disable=unused-argument
    tvm_module("popen_pool")
    from tvm.s_tir import meta_schedule as ms

    import kiln.tvm
    import tvm_probe_tasks
    from kiln.support import popen_pool
    from tvm_builder_cases import tune_matmul, valid_records

    probes = tmp_path / "probes"
    probes.mkdir()
    os.environ["KILN_PROBE_DIR"] = str(probes)
    kiln.tvm.install()
    try:
        assert ms.builder.local_builder.PopenPoolExecutor is popen_pool.PopenPoolExecutor
        assert ms.runner.local_runner.PopenPoolExecutor is popen_pool.PopenPoolExecutor
        builder = ms.builder.LocalBuilder(max_workers=2, timeout_sec=120,
                                          initializer=tvm_probe_tasks.tuning_builder_worker)
        runner = ms.runner.LocalRunner(timeout_sec=120,
                                       initializer=tvm_probe_tasks.tuning_runner_worker)
        database = tune_matmul(str(tmp_path / "work"), 32, builder, runner)
    finally:
        kiln.tvm.uninstall()
        os.environ.pop("KILN_PROBE_DIR", None)
    records = database.get_all_tuning_records()
    assert len(records) == 32
    assert len(valid_records(database)) == 32, [str(r.run_secs) for r in records]
    reports = {}
    for path in glob.glob(str(probes / "*.json")):
        with open(path, encoding="utf-8") as file:
            reports[os.path.basename(path)] = json.load(file)
    builders = [r for name, r in reports.items() if name.startswith("tuning_builder_worker")]
    runners = [r for name, r in reports.items() if name.startswith("tuning_runner_worker")]
    assert len(builders) >= 2 and runners, sorted(reports)
    for report in builders + runners:
        assert {k: v for k, v in report.items() if k != "pid"} == {
            "create_shared": "kiln", "tar": "kiln", "compile_cuda": "kiln",
            "tvm_callback_cuda_compile": "kiln"}
