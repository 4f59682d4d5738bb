"""kiln.support against tvm.support (apache-tvm 0.27), side by side in one Python process.

    python python_support_bench.py [--reps 15] [--json OUT.json] [--only NAME]

Run by the project venv's python with kiln's package on the path (the `python_support_bench`
CMake target does both, with a release build of the extension). For every case, the two
implementations are called with the same inputs, alternately (tvm, kiln, kiln, tvm, ...), after
one warm-up call each; the table gives each side's median and kiln/tvm. Goals (issue 16): every
function <= 1.0x, tar >= 2x faster (<= 0.5), compile_cuda through NVRTC with kiln's kernel cache
off <= 0.5x. A case whose tool is missing is reported as skipped. Exits 1 when a goal is missed.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import bench_cases

GOALS = {"tar.tar": 0.5, "tar.untar": 0.5, "nvcc.compile_cuda[nvrtc]": 0.5}
DEFAULT_GOAL = 1.0
# Cases faster than this in both implementations are measured in batches of calls.
BATCH_BELOW_S = 0.002


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=15, help="timed calls per side and case")
    parser.add_argument("--json", help="write the samples and ratios here")
    parser.add_argument("--only", help="run only the cases whose name contains this")
    return parser.parse_args(argv)


def batch_size(case):
    start = time.perf_counter()
    case.tvm()
    case.kiln()
    once = time.perf_counter() - start
    return 1 if once > 2 * BATCH_BELOW_S else max(1, int(BATCH_BELOW_S * 2 / max(once, 1e-7)))


def timed(call, batch):
    start = time.perf_counter()
    for _ in range(batch):
        call()
    return (time.perf_counter() - start) / batch


def measure(case, reps):
    batch = batch_size(case)
    samples = {"tvm": [], "kiln": []}
    for rep in range(reps):
        order = ("tvm", "kiln") if rep % 2 == 0 else ("kiln", "tvm")
        for side in order:
            samples[side].append(timed(getattr(case, side), batch))
    return samples


def main(argv):
    args = parse_args(argv)
    work = tempfile.mkdtemp(prefix="kiln-python-bench-")
    rows, failed = [], False
    try:
        for case in bench_cases.all_cases(work):
            if args.only and args.only not in case.name:
                continue
            if case.skip:
                rows.append({"case": case.name, "skipped": case.skip})
                print(f"{case.name:44s} skipped: {case.skip}", flush=True)
                continue
            samples = measure(case, args.reps)
            tvm_s, kiln_s = (statistics.median(samples[s]) for s in ("tvm", "kiln"))
            goal = GOALS.get(case.name, DEFAULT_GOAL)
            ratio = kiln_s / tvm_s
            met = ratio <= goal
            failed |= not met
            rows.append({"case": case.name, "tvm_ms": tvm_s * 1e3, "kiln_ms": kiln_s * 1e3,
                         "ratio": ratio, "goal": goal, "met": met, "samples": samples})
            print(f"{case.name:44s} tvm {tvm_s * 1e3:9.3f} ms  kiln {kiln_s * 1e3:9.3f} ms  "
                  f"kiln/tvm {ratio:5.2f}  goal <= {goal:.1f} {'ok' if met else 'MISSED'}",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    measured = [r for r in rows if "ratio" in r]
    print(f"\n{len(measured)} cases measured, {len(rows) - len(measured)} skipped, "
          f"{sum(not r['met'] for r in measured)} goals missed")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(rows, file, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main(sys.argv[1:]))
