"""Real MetaSchedule candidates for the builder benchmark and tests: TE matmuls as IRModules, the
BuilderInputs that MetaSchedule's LocalBuilder receives from a tuning run."""

import os
import time


def matmul_module(n, tile=None):
    """An IRModule with a PrimFunc C = A @ B of n x n float32, its inner loop split by `tile`
    (a different candidate per tile, as a schedule space gives)."""
    import tvm  # pylint: disable=import-outside-toplevel
    from tvm import te  # pylint: disable=import-outside-toplevel

    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    if tile:
        from tvm import s_tir  # pylint: disable=import-outside-toplevel

        sch = s_tir.Schedule(mod)
        block = sch.get_sblock("C")
        _, j, _ = sch.get_loops(block)
        sch.split(j, factors=[None, tile])
        mod = sch.mod
    return mod


def builder_inputs(count, n=128):
    """`count` distinct candidates for llvm."""
    import tvm  # pylint: disable=import-outside-toplevel
    from tvm.s_tir.meta_schedule.builder import BuilderInput  # noqa: E501  pylint: disable=import-outside-toplevel

    tiles = [1, 2, 4, 8, 16, 32, 64, 128]
    target = tvm.target.Target({"kind": "llvm", "num-cores": 1})
    return [BuilderInput(matmul_module(n, tiles[i % len(tiles)] if i else None), target)
            for i in range(count)]


def tune_matmul(work_dir, trials, builder, runner, n=128):
    """MetaSchedule's tune_tir of matmul_module(n) on llvm (2 cores) for `trials` trials, 16 per
    iteration, with `builder` and `runner` and a random cost model (no xgboost here); its
    database."""
    import tvm  # pylint: disable=import-outside-toplevel
    from tvm.s_tir import meta_schedule as ms  # pylint: disable=import-outside-toplevel

    target = tvm.target.Target({"kind": "llvm", "num-cores": 2})
    return ms.tune_tir(matmul_module(n), target, work_dir, max_trials_global=trials,
                       num_trials_per_iter=16, builder=builder, runner=runner,
                       cost_model="random", seed=7, num_tuning_cores=2)


def valid_records(database):
    """The database's tuning records with a measured run time (failed builds and runs record
    1e10 seconds, or none)."""
    records = database.get_all_tuning_records()
    return [r for r in records if r.run_secs and all(0 < float(s) < 1e9 for s in r.run_secs)]


def timed_build(builder, inputs):
    """builder.build(inputs) timed: (seconds, how many built, the first error or none), with the
    artifacts removed."""
    start = time.perf_counter()
    results = builder.build(inputs)
    seconds = time.perf_counter() - start
    errors = [r.error_msg for r in results if r.error_msg is not None]
    for result in results:
        if result.artifact_path:
            os.remove(result.artifact_path)
            os.rmdir(os.path.dirname(result.artifact_path))
    return seconds, len(results) - len(errors), errors[:1]
