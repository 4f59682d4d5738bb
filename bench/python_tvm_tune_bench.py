"""A MetaSchedule tuning run on kiln's pool against TVM's own, side by side in one run.

    python python_tvm_tune_bench.py [--trials 64] [--rounds 1] [--loaded] [--json OUT.json]

tune_tir of a 128^3 float32 matmul on llvm (python/tests/tvm_builder_cases.py: 16 trials per
iteration, a random cost model, LocalBuilder with 2 workers and LocalRunner, MetaSchedule's
defaults otherwise) with TVM 0.27's tvm.support.popen_pool and with kiln.tvm.install()'s, in
alternating rounds (tvm, kiln, then kiln, tvm, ...), each in a fresh process so that neither
finds the other's imports or worker template. Reported: each run's wall time and how many
trials the database holds with a measured time. The builder's 30 s timeout is MetaSchedule's
default, so a build that waits for its worker's imports past it fails and its trial is lost.

--loaded runs the same while two busy loops keep both cores busy (a machine tuning beside other
work), where TVM's workers, importing TVM inside the timed build, may build nothing.

Targets (issue 28): kiln's wall time <= 0.5 x TVM's with as many valid records, idle; loaded,
kiln records every trial. Exits 1 when one is missed.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
TESTS_DIR = os.path.join(os.path.dirname(BENCH_DIR), "python", "tests")
GOAL = 0.5


def tune(side, trials, work_dir):
    """One tuning run in this process: (seconds, valid records, records)."""
    sys.path.insert(0, TESTS_DIR)
    from tvm.s_tir import meta_schedule as ms  # pylint: disable=import-outside-toplevel
    from tvm_builder_cases import tune_matmul, valid_records  # noqa: E501  pylint: disable=import-outside-toplevel

    if side == "kiln":
        import kiln.tvm  # pylint: disable=import-outside-toplevel

        kiln.tvm.install()
    start = time.perf_counter()
    database = tune_matmul(work_dir, trials, ms.builder.LocalBuilder(max_workers=2),
                           ms.runner.LocalRunner())
    seconds = time.perf_counter() - start
    return seconds, len(valid_records(database)), len(database.get_all_tuning_records())


def run_side(side, trials):
    """tune() in a fresh interpreter; its figures."""
    with tempfile.TemporaryDirectory(prefix=f"kiln-tune-{side}-") as work_dir:
        code = (f"import json, sys; sys.path.insert(0, {BENCH_DIR!r}); "
                f"import python_tvm_tune_bench as b; "
                f"print(json.dumps(b.tune({side!r}, {trials}, {work_dir!r})))")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (TESTS_DIR, os.environ.get("PYTHONPATH")) if p))
        env.pop("KILN_TVM", None)
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, check=False)
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-4000:])
        return {"side": side, "failed": done.returncode}
    seconds, valid, records = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{side:4s} {seconds:7.1f} s  valid records {valid}/{trials} (records {records})",
          flush=True)
    return {"side": side, "seconds": seconds, "valid": valid, "records": records}


def busy_loops(count):
    """`count` processes that spin until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--loaded", action="store_true", help="also under two busy loops")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    runs = {"idle": []}
    for rnd in range(args.rounds):
        for side in (["tvm", "kiln"] if rnd % 2 == 0 else ["kiln", "tvm"]):
            runs["idle"].append(run_side(side, args.trials))
    if args.loaded:
        print("two busy loops keep both cores busy:", flush=True)
        loops = busy_loops(2)
        try:
            runs["loaded"] = [run_side(side, args.trials) for side in ("tvm", "kiln")]
        finally:
            for loop in loops:
                loop.kill()
                loop.wait()
    failed = summarize(runs, args.trials)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(runs, file, indent=1)
    return 1 if failed else 0


def summarize(runs, trials):
    failed = any("failed" in run for group in runs.values() for run in group)
    idle = {side: [r for r in runs["idle"] if r["side"] == side and "failed" not in r]
            for side in ("tvm", "kiln")}
    if idle["tvm"] and idle["kiln"]:
        tvm_s = min(r["seconds"] for r in idle["tvm"])
        kiln_s = min(r["seconds"] for r in idle["kiln"])
        same = min(r["valid"] for r in idle["kiln"]) >= max(r["valid"] for r in idle["tvm"])
        ok = kiln_s / tvm_s <= GOAL and same
        failed |= not ok
        print(f"\nidle: kiln / tvm wall time {kiln_s / tvm_s:.2f} (goal <= {GOAL}), valid records "
              f"kiln {[r['valid'] for r in idle['kiln']]} tvm {[r['valid'] for r in idle['tvm']]}"
              f" {'ok' if ok else 'MISSED'}")
    for run in runs.get("loaded", []):
        if run["side"] == "kiln" and "failed" not in run:
            ok = run["valid"] == trials
            failed |= not ok
            print(f"loaded: kiln recorded {run['valid']}/{trials} {'ok' if ok else 'MISSED'}")
        elif "failed" not in run:
            print(f"loaded: tvm recorded {run['valid']}/{trials}")
    return failed


if __name__ == "__main__":
    sys.exit(main())
