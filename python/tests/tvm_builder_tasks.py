"""Build functions for MetaSchedule's LocalBuilder in test_tvm_popen_pool.py; its workers import
this module (the test puts this directory on their PYTHONPATH).

The candidates are real TE matmuls (IRModules of te.create_prim_func, as a tuning run sends
them); their attribute "kiln_case" makes the build fail ("raise") or hang ("hang") instead.
"""

import time


def build_or_misbehave(mod, target, params):
    """f_build: MetaSchedule's own default build, unless the module asks to raise or hang."""
    from tvm.s_tir.meta_schedule.builder import local_builder  # noqa: E501  pylint: disable=import-outside-toplevel

    case = str(mod.attrs["kiln_case"]) if mod.attrs is not None and "kiln_case" in mod.attrs else ""
    if case == "raise":
        raise ValueError("kiln_case says raise")
    if case == "hang":
        time.sleep(60)  # past the builder's timeout
    return local_builder.default_build(mod, target, params)
