"""Build functions for MetaSchedule's LocalBuilder in test_tvm_popen_pool.py; its workers import
this module (the test puts this directory on their PYTHONPATH).

The candidates are real TE matmuls (IRModules of te.create_prim_func, as a tuning run sends
them); their attribute "kiln_case" makes the build fail ("raise") or hang ("hang") instead.
"""

import os
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


_IMPORTED_BEFORE_BUILD = {}


def build_noting_imports(mod, target, params):
    """f_build: notes whether the worker had tvm.s_tir.tensor_intrin before the task's build
    began (default_build imports it), then builds as MetaSchedule does."""
    import sys  # pylint: disable=import-outside-toplevel

    _IMPORTED_BEFORE_BUILD["tensor_intrin"] = "tvm.s_tir.tensor_intrin" in sys.modules
    return build_or_misbehave(mod, target, params)


def export_noting_imports(rt_mod):
    """f_export: MetaSchedule's default export, with what build_noting_imports noted in this
    worker written beside the artifact (imports.txt)."""
    from tvm.s_tir.meta_schedule.builder import local_builder  # noqa: E501  pylint: disable=import-outside-toplevel

    path = local_builder.default_export(rt_mod)
    with open(os.path.join(os.path.dirname(path), "imports.txt"), "w") as noted:
        before = _IMPORTED_BEFORE_BUILD.get("tensor_intrin")
        noted.write(f"tensor_intrin before the build: {before}")
    return path
