#!/usr/bin/env python3
"""Runs apache/tvm's own test files twice, as TVM ships them and with kiln in every process, and
prints the per-file table (issue 28: no test that passes without kiln fails with it).

    .deps/venv/bin/python scripts/tvm-own-tests.py --tests TVM/tests/python [--unskip] [FILE ...]

TVM/tests/python is a checkout of apache/tvm's tests (they are never copied here). The same
interpreter runs both sides: the project's venv (apache-tvm from PyPI) as is, and an overlay venv
made under --work that sees the venv's packages and this checkout's kiln (python/ and
build/release/python) as the wheel installs it, with KILN_TVM=1: every Python process the tests
start installs kiln when it imports tvm (kiln's tvm.backends entry point). CUDA's stub driver is
on the library path, so that tvm.compile for CUDA reaches tvm_callback_cuda_compile without a
GPU. --unskip also runs the tests that TVM's
markers skip for reasons that do not hold here (tvm_unskip.py says which).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import sysconfig
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The tests' helpers (kiln_site, tvm_cuda_models) and this checkout's kiln, which they use.
sys.path[:0] = [os.path.join(ROOT, "python", "tests"), os.path.join(ROOT, "python"),
                os.path.join(ROOT, "build", "release", "python")]
import kiln_site  # noqa: E402  pylint: disable=wrong-import-position
import tvm_cuda_models  # noqa: E402  pylint: disable=wrong-import-position
FILES = """
support/test_popen_pool.py support/test_util.py support/test_ccache.py
runtime/test_runtime_module_export.py runtime/test_runtime_module_load.py
runtime/test_runtime_rpc.py runtime/test_executable.py runtime/test_runtime_measure.py
s_tir/meta_schedule/test_meta_schedule_builder.py s_tir/meta_schedule/test_meta_schedule_runner.py
codegen/test_target_codegen_c_host.py codegen/test_target_codegen_blob.py
codegen/test_target_codegen_cross_llvm.py codegen/test_target_codegen_cuda.py
codegen/test_target_codegen_cuda_fastmath.py codegen/test_inject_ptx_ldg32.py
codegen/test_gpu_codegen_allreduce.py all-platform-minimal-test/test_minimal_target_codegen_llvm.py
relax/test_vm_build.py relax/test_vm_codegen_only.py relax/test_runtime_builtin.py
s_tir/transform/test_s_tir_transform_inject_ptx_async_copy.py tirx/codegen/test_codegen_cuda.py
tirx/codegen/test_codegen_nvshmem.py tirx/iket/test_iket_profiler.py disco/test_session.py
codegen/test_target_codegen_llvm.py
""".split()
COUNTED = r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)"


def kiln_overlay(work):
    """The overlay venv's python: the project's packages, and this checkout's kiln as the wheel
    installs it (python/tests/kiln_site.py)."""
    python = os.path.join(work, "kiln-venv", "bin", "python")
    if not os.path.exists(python):
        paths = [os.path.join(ROOT, "python"), os.path.join(ROOT, "build", "release", "python"),
                 sysconfig.get_paths()["purelib"]]
        kiln_site.make_venv(os.path.join(work, "kiln-venv"), paths)
    return python


def run(args, file, side):
    """pytest of one file on one side: ({outcome: count}, seconds), its output in --work/logs."""
    env = dict(os.environ)
    env.pop("KILN_TVM", None)
    stub = tvm_cuda_models.stub_driver(os.path.join(args.work, "stub"))
    if stub:
        env = tvm_cuda_models.stub_environment(stub, env)
    env["KILN_CACHE_DIR"] = os.path.join(args.work, f"cache-{side}")
    python = sys.executable
    if side == "kiln":
        python = kiln_overlay(args.work)
        env["KILN_TVM"] = "1"
    command = [python, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider"]
    if args.unskip:
        env["PYTHONPATH"] = os.path.dirname(os.path.abspath(__file__))
        command += ["-p", "tvm_unskip"]
    start = time.monotonic()
    try:
        done = subprocess.run(command + [os.path.join(args.tests, file)], cwd=args.tests,
                              env=env, capture_output=True, text=True, timeout=args.timeout,
                              check=False)
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        output = f"timed out after {args.timeout} s"
    seconds = time.monotonic() - start
    log = os.path.join(args.work, "logs", f"{file.replace('/', '_')}.{side}.log")
    with open(log, "w", encoding="utf-8") as out:
        out.write(output)
    summaries = [line for line in output.splitlines() if re.search(COUNTED, line)]
    counts = {what: int(n) for n, what in re.findall(COUNTED, summaries[-1])} if summaries else {}
    return counts, seconds, log


def failed_tests(log):
    """The node ids pytest's summary lists as FAILED or ERROR in a log."""
    with open(log, encoding="utf-8") as out:
        return {m.group(2) for m in re.finditer(r"^(FAILED|ERROR) (\S+)", out.read(), re.M)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--tests", required=True, help="apache/tvm's tests/python")
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "tvm-own-tests"))
    parser.add_argument("--unskip", action="store_true")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per file and side")
    parser.add_argument("files", nargs="*", default=FILES)
    args = parser.parse_args()
    args.tests = os.path.abspath(args.tests)
    os.makedirs(os.path.join(args.work, "logs"), exist_ok=True)
    table, regressions = {}, {}
    print("| file | TVM | TVM s | kiln | kiln s |\n|---|---|---|---|---|")
    for file in args.files:
        row = {}
        for side in ("tvm", "kiln"):
            counts, seconds, log = run(args, file, side)
            row[side] = {"counts": counts, "seconds": round(seconds, 1), "log": log}
        only_kiln = failed_tests(row["kiln"]["log"]) - failed_tests(row["tvm"]["log"])
        if only_kiln:
            regressions[file] = sorted(only_kiln)
        table[file] = row
        print(f"| {file} | {row['tvm']['counts']} | {row['tvm']['seconds']:.0f} | "
              f"{row['kiln']['counts']} | {row['kiln']['seconds']:.0f} |", flush=True)
    with open(os.path.join(args.work, "results.json"), "w", encoding="utf-8") as out:
        json.dump({"table": table, "fail_only_with_kiln": regressions}, out, indent=1)
    for file, tests in regressions.items():
        print(f"fails only with kiln: {file}: {', '.join(tests)}")
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
