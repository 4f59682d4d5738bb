"""A new process's first pool and first LocalBuilder batch, kiln against TVM, in one run.

    python python_first_pool_bench.py [--rounds 2] [--loaded] [--json OUT.json]

Each figure is one fresh interpreter's (a tuning run, a notebook, a CI job each start one):
  pool:    PopenPoolExecutor(max_workers=2, initializer=import tvm + tvm.s_tir.tensor_intrin),
           from its creation to the answer of its first task;
  builder: MetaSchedule's LocalBuilder(max_workers=2) building 16 real candidates
           (python/tests/tvm_builder_cases.py), the process's first batch, every artifact checked.
TVM's side is apache-tvm 0.27's tvm.support.popen_pool; kiln's is kiln.support.popen_pool /
kiln.tvm.install() with its template services (KILN_POOL_TEMPLATE_SERVICE): one earlier kiln
process on the machine (not timed) leaves the service that later processes join. The caller's
own `import tvm` is outside the time on both sides.

Targets (issue 46): pool <= TVM / 20; builder <= TVM / 5 with every artifact built. Exits 1 when
one is missed.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
TESTS_DIR = os.path.join(os.path.dirname(BENCH_DIR), "python", "tests")
GOALS = {"pool": 1 / 20, "builder": 1 / 5}


def first_pool(side):
    """(seconds to the first answer, the template stats or None)."""
    import popen_bench_tasks  # pylint: disable=import-outside-toplevel

    if side == "kiln":
        from kiln.support import popen_pool  # pylint: disable=import-outside-toplevel
    else:
        from tvm.support import popen_pool  # pylint: disable=import-outside-toplevel
    start = time.perf_counter()
    pool = popen_pool.PopenPoolExecutor(
        max_workers=2, timeout=300, initializer=popen_bench_tasks.import_tvm_and_intrinsics)
    answer = pool.submit(popen_bench_tasks.identity, 7).result()
    seconds = time.perf_counter() - start
    pool.shutdown()
    assert answer == 7
    stats = popen_pool.template_stats() if side == "kiln" else None
    return seconds, stats


def first_batch(side):
    """(seconds of the first LocalBuilder batch, candidates built, the first error)."""
    import tvm_builder_cases  # pylint: disable=import-outside-toplevel
    from tvm.s_tir.meta_schedule.builder import LocalBuilder  # noqa: E501  pylint: disable=import-outside-toplevel

    if side == "kiln":
        import kiln.tvm  # pylint: disable=import-outside-toplevel

        kiln.tvm.install()
    inputs = tvm_builder_cases.builder_inputs(16)
    seconds, built, errors = tvm_builder_cases.timed_build(LocalBuilder(max_workers=2), inputs)
    return seconds, built, errors


def in_fresh_process(case, side):
    """`case` (first_pool or first_batch) in a new interpreter: its result."""
    code = (f"import json, sys; sys.path.insert(0, {BENCH_DIR!r}); "
            f"import python_first_pool_bench as b; print(json.dumps(b.{case}({side!r})))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (BENCH_DIR, TESTS_DIR, os.environ.get("PYTHONPATH")) if p))
    env.pop("KILN_TVM", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=False, cwd=BENCH_DIR)
    if done.returncode != 0:
        sys.exit(f"{case} on {side} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def busy_loops(count):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def wait_for_services(limit=300.0):
    """Until every template service the earlier processes left has what their workers imported
    (a successor takes over the socket once it has): "after one earlier kiln process"."""
    from kiln.support import popen_pool  # pylint: disable=import-outside-toplevel

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        names = [int(s["status"].rsplit("names ", 1)[-1]) for s in popen_pool.template_services()
                 if "names " in s["status"]]
        if names and min(names) > 1:
            return
        time.sleep(1)


def measure(rounds):
    figures = {"pool": {"tvm": [], "kiln": []}, "builder": {"tvm": [], "kiln": []}}
    # The earlier kiln process: it prepares the template services later processes join.
    warm = in_fresh_process("first_pool", "kiln")
    print(f"earlier kiln process (prepares the service): pool {warm[0]:.2f} s", flush=True)
    warm = in_fresh_process("first_batch", "kiln")
    print(f"earlier kiln process (prepares the service): builder {warm[0]:.2f} s", flush=True)
    wait_for_services()
    for r in range(rounds):
        for side in (("tvm", "kiln") if r % 2 == 0 else ("kiln", "tvm")):
            seconds, stats = in_fresh_process("first_pool", side)
            figures["pool"][side].append(seconds)
            extra = f"  template {stats}" if stats else ""
            print(f"pool    {side:4s} {seconds:7.3f} s{extra}", flush=True)
            seconds, built, errors = in_fresh_process("first_batch", side)
            if built != 16 and side == "kiln":
                sys.exit(f"builder on {side}: {built}/16 built: {errors}")
            figures["builder"][side].append(seconds)
            print(f"builder {side:4s} {seconds:7.3f} s  built {built}/16 {errors or ''}", flush=True)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--loaded", action="store_true", help="with two busy loops running")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    loops = busy_loops(2) if args.loaded else []
    try:
        figures = measure(args.rounds)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    missed = False
    summary = {}
    for case, sides in figures.items():
        tvm, kiln = statistics.median(sides["tvm"]), statistics.median(sides["kiln"])
        ratio = kiln / tvm
        ok = ratio <= GOALS[case]
        missed |= not ok
        summary[case] = {"tvm_s": tvm, "kiln_s": kiln, "ratio": ratio, "goal": GOALS[case]}
        print(f"{case:8s} median tvm {tvm:7.3f} s  kiln {kiln:7.3f} s  ratio {ratio:.4f} "
              f"(goal <= {GOALS[case]:.2f}) {'ok' if ok else 'MISSED'}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"figures": figures, "summary": summary, "loaded": args.loaded}, out)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
