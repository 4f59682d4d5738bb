"""Build functions for MetaSchedule's LocalBuilder in test_tvm_popen_pool.py; its workers import
this module (the test puts this directory on their PYTHONPATH).

apache-tvm 0.27's wheel crashes (SIGSEGV in tvm::ffi::ToJSONGraph) when it pickles an IRModule
that holds a TE PrimFunc, which LocalBuilder does to every candidate: the candidates here are
empty IRModules whose attribute "kiln_n" says which kernel the worker builds.
"""

import time


def build_doubling_kernel(mod, target, _params):
    """f_build: B[i] = A[i] * 2 over kiln_n elements, compiled for `target`."""
    import tvm  # pylint: disable=import-outside-toplevel
    from tvm import te  # pylint: disable=import-outside-toplevel
    from tvm.driver import build  # pylint: disable=import-outside-toplevel

    n = int(mod.attrs["kiln_n"])
    if n < 0:
        raise ValueError(f"kiln_n is negative: {n}")
    if n == 0:
        time.sleep(60)  # past the builder's timeout
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] * 2.0, name="B")
    return build(tvm.IRModule({"main": te.create_prim_func([a, b])}), target=target)
