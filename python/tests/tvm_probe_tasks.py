"""Probes for test_tvm_every_process.py: run in each kind of process a TVM workflow starts, each
writes what that process's TVM uses, kiln's or TVM's own, to <KILN_PROBE_DIR>/<kind>.json.

What it reports is what TVM itself would call there: tvm.support.cc.create_shared,
tvm.support.tar.tar, tvm.support.nvcc.compile_cuda, and the global tvm_callback_cuda_compile
(identified by calling it on a source no compiler accepts: kiln's error says kiln).
"""

import json
import os
import sys


def _owner(function):
    return "kiln" if getattr(function, "__module__", "").startswith("kiln.") else "tvm"


def _callback_owner():
    import tvm_ffi  # pylint: disable=import-outside-toplevel

    callback = tvm_ffi.get_global_func("tvm_callback_cuda_compile", allow_missing=True)
    if callback is None:
        return "none"
    state = sys.modules.get("kiln._tvm_state")  # what kiln.tvm.install() replaced
    if state is None or not state.installed():
        return "tvm"  # kiln never registered it here
    return "kiln" if "tvm_callback_cuda_compile" in state.functions else "tvm"


def report():
    """What this process's TVM calls: {name: "kiln" | "tvm"}."""
    import tvm  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    import tvm.support.cc  # pylint: disable=import-outside-toplevel
    import tvm.support.nvcc  # pylint: disable=import-outside-toplevel
    import tvm.support.tar  # pylint: disable=import-outside-toplevel

    return {
        "create_shared": _owner(tvm.support.cc.create_shared),
        "tar": _owner(tvm.support.tar.tar),
        "compile_cuda": _owner(tvm.support.nvcc.compile_cuda),
        "tvm_callback_cuda_compile": _callback_owner(),
        "pid": os.getpid(),
    }


def write(kind):
    """Write report() to <KILN_PROBE_DIR>/<kind>.json."""
    path = os.path.join(os.environ["KILN_PROBE_DIR"], f"{kind}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as file:
        json.dump(report(), file)
    os.replace(path + ".tmp", path)


# The hooks TVM calls in each process kind.
def builder_build(_mod, _target, _params):
    """LocalBuilder's f_build: reports, builds nothing."""
    write("local_builder_worker")


def builder_export(_module):
    """LocalBuilder's f_export: an artifact path that is never used."""
    return "/nonexistent/kiln-probe"


def runner_cleanup():
    """LocalRunner's f_cleanup: runs in the runner's worker whatever the run did."""
    write("local_runner_worker")


def rpc_server_init():
    """rpc.Server's server_init_callback: runs in the RPC server's process."""
    write("rpc_server")


def tvm_popen_worker():
    """Sent to TVM's own PopenWorker (python -m tvm.exec.popen_worker)."""
    write("tvm_popen_worker")


def tuning_builder_worker():
    """LocalBuilder's initializer in a tuning run: one report per worker."""
    write(f"tuning_builder_worker-{os.getpid()}")


def tuning_runner_worker():
    """LocalRunner's initializer in a tuning run: one report per worker."""
    write(f"tuning_runner_worker-{os.getpid()}")


if __name__ == "__main__":  # a subprocess: python tvm_probe_tasks.py <kind>
    write(sys.argv[1])
