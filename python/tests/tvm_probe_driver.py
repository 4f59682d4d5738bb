"""A TVM user's program for test_tvm_every_process.py: ``python tvm_probe_driver.py MODE``.

MODE says how kiln is set up here: "parent" (kiln.tvm.install() in this process only), "env"
(nothing here but KILN_TVM=1 in the environment), "uninstalled" (install() then uninstall()),
"none" (kiln untouched). Then it starts every kind of process a TVM workflow starts, each of
which writes its report (tvm_probe_tasks) to $KILN_PROBE_DIR: a MetaSchedule LocalBuilder worker,
a LocalRunner worker, an RPC server, TVM's own PopenWorker, and a plain subprocess.
"""

import os
import subprocess
import sys

import tvm_probe_tasks


def main(mode):
    if mode in ("parent", "uninstalled"):
        import kiln.tvm  # pylint: disable=import-outside-toplevel

        kiln.tvm.install()
        if mode == "uninstalled":
            kiln.tvm.uninstall()
    import tvm  # pylint: disable=import-outside-toplevel
    import tvm.support.popen_pool  # pylint: disable=import-outside-toplevel
    from tvm import rpc  # pylint: disable=import-outside-toplevel
    from tvm.s_tir.meta_schedule.builder import BuilderInput, LocalBuilder  # noqa: E501  pylint: disable=import-outside-toplevel
    from tvm.s_tir.meta_schedule.runner import LocalRunner, RunnerInput  # noqa: E501  pylint: disable=import-outside-toplevel

    tvm_probe_tasks.write("parent")
    builder = LocalBuilder(max_workers=1, timeout_sec=120, f_build=tvm_probe_tasks.builder_build,
                           f_export=tvm_probe_tasks.builder_export)
    builder.build([BuilderInput(tvm.IRModule({}), tvm.target.Target("llvm"))])
    runner = LocalRunner(timeout_sec=120, f_cleanup=tvm_probe_tasks.runner_cleanup)
    for future in runner.run([RunnerInput("/nonexistent/kiln-probe.tar", "cpu", [])]):
        future.result()
    server = rpc.Server(host="127.0.0.1", port=9391, port_end=9491,
                        server_init_callback=tvm_probe_tasks.rpc_server_init)
    server.terminate()
    kiln_tvm = sys.modules.get("kiln.tvm")
    tvms_worker = (kiln_tvm.original("popen_pool", "PopenWorker") if kiln_tvm is not None
                   else tvm.support.popen_pool.PopenWorker)
    worker = tvms_worker()
    worker.send(tvm_probe_tasks.tvm_popen_worker)
    worker.recv()
    worker.kill()
    subprocess.run([sys.executable, tvm_probe_tasks.__file__, "subprocess"], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
