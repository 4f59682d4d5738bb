"""kiln.support.popen_pool against tvm.support.popen_pool (apache-tvm 0.27), side by side in one run.

    python python_popen_bench.py [--quick] [--json OUT.json]

Run by the project venv's python with kiln's package on the path (the `python_popen_bench` CMake
target does both, with a release build of the extension). Both pools get the same tasks
(popen_bench_tasks.py, sent by reference) in alternating rounds (tvm, kiln, kiln, tvm, ...), so
that drift on the machine hits both; every figure is the median over its rounds. The targets are
issue 17's acceptance criteria:
  cold start (new PopenWorker, send(identity) + recv())   kiln <= tvm / 20, and
                                                            kiln <= 1.5 x `python -c "import cloudpickle"`
  warm round trip, send(identity, timeout=10) + recv()     kiln <= tvm / 3
  PopenPoolExecutor(max_workers=2, timeout=10), submit     kiln >= 10 x tvm tasks/s
  TimeoutError: time from send() minus the timeout T      kiln <= 2 ms
  next answer after a timeout, after a crash (os._exit)    kiln <= 2 x kiln's cold start
  idle worker VmRSS after a task that imports nothing      kiln <= tvm / 5
map_with_error_catching throughput, kill(), and the warm round trip with parent and worker pinned
to one CPU (what is left once no idle CPU must be woken) are reported without a target. Without
kiln.support.popen_pool (or its extension), TVM's side runs alone and the targets are skipped.
Exits 1 when a target is missed.
"""

import argparse
import contextlib
import gc
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
import popen_bench_tasks as tasks  # noqa: E402  (needs BENCH_DIR on sys.path)

# Work sizes: (full run, --quick smoke run).
SIZES = {
    "cold_rounds": (15, 2),
    "warm_rounds": (10, 2),
    "warm_calls": (200, 20),
    "throughput_rounds": (7, 2),
    "throughput_tasks": (4000, 100),
    "timeout_rounds": (7, 2),
    "crash_rounds": (7, 2),
}
TIMEOUT_S = 0.1  # the deadline of the timeout-accuracy task
SLEEP_PAST_TIMEOUT_S = 30.0  # what that task would sleep if nobody stopped it
POOL_TIMEOUT_S = 10  # the timeout set on round trips and executors

# metric: (label, scale to the printed unit, unit, higher is better)
METRICS = {
    "cold_start_s": ("cold start: new worker, first answer", 1e3, "ms", False),
    "kill_s": ("kill() of an idle worker", 1e3, "ms", False),
    "idle_rss_kib": ("idle worker VmRSS", 1 / 1024, "MiB", False),
    "warm_rt_s": ("warm round trip, timeout=10", 1e6, "us", False),
    "warm_rt_one_cpu_s": ("  the same, parent and worker on one CPU", 1e6, "us", False),
    "submit_tasks_per_s": ("2 workers, timeout=10: submit", 1, "tasks/s", True),
    "map_tasks_per_s": ("2 workers, timeout=10: map_with_error_catching", 1, "tasks/s", True),
    "timeout_overshoot_s": (f"TimeoutError past a {TIMEOUT_S:g} s deadline", 1e3, "ms", False),
    "after_timeout_s": ("next answer after a timeout", 1e3, "ms", False),
    "after_crash_s": ("next answer after a crash", 1e3, "ms", False),
}


class BenchError(Exception):
    """A pool answered something other than what the task must produce."""


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: few, small rounds")
    parser.add_argument("--json", help="write the samples, figures and targets here")
    return parser.parse_args(argv)


def sizes(quick):
    return {name: pair[1 if quick else 0] for name, pair in SIZES.items()}


def give_workers_the_tasks():
    """Puts this directory on the workers' PYTHONPATH, so that they import popen_bench_tasks."""
    inherited = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = BENCH_DIR + (os.pathsep + inherited if inherited else "")


def load_pools():
    """Returns ({side: popen_pool module}, why kiln is skipped or None)."""
    import tvm.support.popen_pool as tvm_pool  # pylint: disable=import-outside-toplevel

    try:
        import kiln.support.popen_pool as kiln_pool  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        return {"tvm": tvm_pool}, f"kiln.support.popen_pool does not import ({error})"
    return {"tvm": tvm_pool, "kiln": kiln_pool}, None


def describe_run(skip_reason):
    """What the figures depend on: interpreter, machine load, the kiln extension measured."""
    import tvm  # pylint: disable=import-outside-toplevel

    spec = None if skip_reason else importlib.util.find_spec("kiln._kiln")
    return {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "tvm_version": tvm.__version__,
        "kiln_extension": spec.origin if spec else None,
        "kiln_skipped": skip_reason,
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg(),
    }


def warn_if_busy(run):
    load, cpus = run["load_before"][0], run["cpus"] or 1
    if load > 0.5 * cpus:
        print(f"WARNING: load average {load:.2f} on {cpus} CPUs: the machine is not quiet, "
              "figures will be noisy (the ratios less so: rounds alternate)", flush=True)


def cpu_seconds():
    """(CPU seconds the whole machine spent busy, CPU seconds of this process and reaped children).

    The bench reaps every worker it starts (kill() and shutdown() wait for them), so the
    difference between two readings is what other processes took from the machine meanwhile.
    """
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(field) for field in stat.readline().split()[1:]]
    busy = sum(fields) - fields[3] - fields[4]  # all but idle and iowait
    own = os.times()
    return busy / os.sysconf("SC_CLK_TCK"), own.user + own.system + own.children_user + \
        own.children_system


def others_share(before, after, seconds, cpus):
    """The fraction of the machine's CPUs that other processes used between two cpu_seconds()."""
    return max(0.0, (after[0] - before[0]) - (after[1] - before[1])) / (seconds * (cpus or 1))


def expect(got, wanted, what):
    if got != wanted:
        raise BenchError(f"{what}: got {got!r}, expected {wanted!r}")


def vm_rss_kib(pid):
    """The resident set of a live process, from /proc/<pid>/status."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchError(f"no VmRSS for pid {pid}")


def interleave(measures, rounds):
    """Runs each side's measure once per round, alternating the order; {side: {metric: [..]}}."""
    samples = {side: {} for side in measures}
    sides = list(measures)
    for rep in range(rounds):
        for side in sides if rep % 2 == 0 else sides[::-1]:
            gc.collect()
            for metric, value in measures[side]().items():
                samples[side].setdefault(metric, []).extend(
                    value if isinstance(value, list) else [value])
    return samples


def merge(into, samples):
    for side, metrics in samples.items():
        into.setdefault(side, {}).update(metrics)


# --- the measures: each runs one round of one side and returns {metric: sample(s)} -------------


def cold_start(pool):
    """A new worker's first answer; then its VmRSS after os.getpid (imports nothing); then kill."""
    start = time.perf_counter()
    worker = pool.PopenWorker()
    worker.send(tasks.identity, (7,))
    answer = worker.recv()
    answered = time.perf_counter()
    expect(answer, 7, "cold identity")
    worker.send(os.getpid)
    rss = vm_rss_kib(worker.recv())
    killing = time.perf_counter()
    worker.kill()
    return {"cold_start_s": answered - start, "kill_s": time.perf_counter() - killing,
            "idle_rss_kib": rss}


def import_cloudpickle():
    """The floor a Python worker cannot beat: an interpreter that imports cloudpickle and exits."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import cloudpickle"], check=True)
    return {"import_cloudpickle_s": time.perf_counter() - start}


def warm_round_trips(worker, calls):
    samples = []
    for i in range(calls):
        start = time.perf_counter()
        worker.send(tasks.identity, (i,), timeout=POOL_TIMEOUT_S)
        answer = worker.recv()
        samples.append(time.perf_counter() - start)
        expect(answer, i, "warm identity")
    return {"warm_rt_s": samples}


def threads_of(pid):
    return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]


@contextlib.contextmanager
def on_one_cpu(pids):
    """Runs every thread of `pids` on one CPU (threads they start inherit it), then restores them.

    Diagnostic only: a round trip that must wake an idle CPU pays that CPU's wake-up latency
    twice, which on a virtual machine can outweigh the pool's own cost.
    """
    cpu = min(os.sched_getaffinity(0))
    saved = {tid: os.sched_getaffinity(tid) for pid in pids for tid in threads_of(pid)}
    for tid in saved:
        os.sched_setaffinity(tid, {cpu})
    try:
        yield
    finally:
        for tid, mask in saved.items():
            with contextlib.suppress(ProcessLookupError):
                os.sched_setaffinity(tid, mask)


def warm_round_trips_on_one_cpu(worker, calls):
    worker.send(os.getpid)
    with on_one_cpu([os.getpid(), worker.recv()]):
        return {"warm_rt_one_cpu_s": warm_round_trips(worker, calls)["warm_rt_s"]}


def submit_throughput(executor, count):
    start = time.perf_counter()
    futures = [executor.submit(tasks.identity, i) for i in range(count)]
    answers = [future.result() for future in futures]
    elapsed = time.perf_counter() - start
    expect(answers, list(range(count)), "submitted identities")
    return {"submit_tasks_per_s": count / elapsed}


def map_throughput(executor, count):
    start = time.perf_counter()
    results = list(executor.map_with_error_catching(tasks.identity, range(count)))
    elapsed = time.perf_counter() - start
    expect([(int(r.status), r.value) for r in results], [(1, i) for i in range(count)],
           "mapped identities (StatusKind.COMPLETE, value)")
    return {"map_tasks_per_s": count / elapsed}


def next_answer(worker):
    """The time of the send + recv that follows a failure: it includes the worker's restart."""
    start = time.perf_counter()
    worker.send(tasks.identity, (5,))
    answer = worker.recv()
    elapsed = time.perf_counter() - start
    expect(answer, 5, "identity after a failure")
    return elapsed


def timeout_then_answer(worker):
    start = time.perf_counter()
    worker.send(tasks.sleep, (SLEEP_PAST_TIMEOUT_S,), timeout=TIMEOUT_S)
    try:
        worker.recv()
    except TimeoutError:
        overshoot = time.perf_counter() - start - TIMEOUT_S
    else:
        raise BenchError("a task sleeping past its timeout returned")
    return {"timeout_overshoot_s": overshoot, "after_timeout_s": next_answer(worker)}


def crash_then_answer(worker):
    worker.send(tasks.crash)
    try:
        worker.recv()
    except ChildProcessError:
        pass
    else:
        raise BenchError("a task that ends its worker returned")
    return {"after_crash_s": next_answer(worker)}


# --- the sections: set up each side, interleave its rounds, tear down ------------------------


def started_workers(pools):
    workers = {side: pool.PopenWorker() for side, pool in pools.items()}
    for worker in workers.values():
        next_answer(worker)
    return workers


def kill_all(workers):
    for worker in workers.values():
        worker.kill()


def run_cold(pools, size, samples):
    print("cold starts ...", flush=True)
    for pool in pools.values():  # one untimed start each: the page cache holds both afterwards
        cold_start(pool)
    import_cloudpickle()
    measures = {side: (lambda pool=pool: cold_start(pool)) for side, pool in pools.items()}
    measures["baseline"] = import_cloudpickle
    merge(samples, interleave(measures, size["cold_rounds"]))


def run_warm(pools, size, samples):
    print("warm round trips ...", flush=True)
    workers = started_workers(pools)
    try:
        warm_round_trips_each = {  # one untimed round each, to warm caches
            side: (lambda w=w: warm_round_trips(w, size["warm_calls"])) for side, w in workers.items()}
        interleave(warm_round_trips_each, 1)
        merge(samples, interleave(warm_round_trips_each, size["warm_rounds"]))
        on_one_cpu_each = {side: (lambda w=w: warm_round_trips_on_one_cpu(w, size["warm_calls"]))
                           for side, w in workers.items()}
        merge(samples, interleave(on_one_cpu_each, size["warm_rounds"]))
    finally:
        kill_all(workers)


def run_throughput(pools, size, samples):
    print("2-worker throughput ...", flush=True)
    executors = {side: pool.PopenPoolExecutor(max_workers=2, timeout=POOL_TIMEOUT_S)
                 for side, pool in pools.items()}
    count = size["throughput_tasks"]
    try:
        for executor in executors.values():  # starts both workers of each pool
            submit_throughput(executor, 50)
        for measure in (submit_throughput, map_throughput):
            measures = {side: (lambda e=e, m=measure: m(e, count)) for side, e in executors.items()}
            merge(samples, interleave(measures, size["throughput_rounds"]))
    finally:
        for executor in executors.values():
            executor.shutdown(wait=True)


def run_failures(pools, size, samples):
    print("timeouts and crashes ...", flush=True)
    workers = started_workers(pools)
    try:
        for measure, rounds in ((timeout_then_answer, size["timeout_rounds"]),
                                (crash_then_answer, size["crash_rounds"])):
            measures = {side: (lambda w=w, m=measure: m(w)) for side, w in workers.items()}
            merge(samples, interleave(measures, rounds))
    finally:
        kill_all(workers)


# --- report -----------------------------------------------------------------------------------


def medians(samples):
    return {side: {metric: statistics.median(values) for metric, values in metrics.items()}
            for side, metrics in samples.items()}


def print_figures(figures):
    print(f"\n{'':48s} {'tvm':>14s} {'kiln':>14s}  kiln/tvm")
    for metric, (label, scale, unit, _) in METRICS.items():
        tvm, kiln = figures["tvm"][metric], figures.get("kiln", {}).get(metric)
        kiln_text = f"{kiln * scale:14.3f}" if kiln is not None else f"{'skipped':>14s}"
        ratio = f"{kiln / tvm:9.4f}" if kiln is not None and tvm else ""
        print(f"{label:48s} {tvm * scale:14.3f} {kiln_text}  {ratio}  {unit}")
    baseline = figures["baseline"]["import_cloudpickle_s"]
    label = 'python -c "import cloudpickle"'
    print(f"{label:48s} {baseline * 1e3:14.3f} ms  (same interpreter)")


def targets(figures):
    """[(description, measured ratio or value, limit, 'le' or 'ge')] for issue 17's acceptance."""
    tvm, kiln = figures["tvm"], figures["kiln"]
    cold = kiln["cold_start_s"]
    return [
        ("cold start kiln/tvm <= 1/20", cold / tvm["cold_start_s"], 1 / 20, "le"),
        ("cold start kiln / import cloudpickle <= 1.5",
         cold / figures["baseline"]["import_cloudpickle_s"], 1.5, "le"),
        ("warm round trip kiln/tvm <= 1/3", kiln["warm_rt_s"] / tvm["warm_rt_s"], 1 / 3, "le"),
        ("2-worker submit throughput kiln/tvm >= 10",
         kiln["submit_tasks_per_s"] / tvm["submit_tasks_per_s"], 10, "ge"),
        ("TimeoutError past the deadline, kiln <= 2 ms (ms)", kiln["timeout_overshoot_s"] * 1e3,
         2.0, "le"),
        ("next answer after a timeout / kiln cold start <= 2", kiln["after_timeout_s"] / cold, 2,
         "le"),
        ("next answer after a crash / kiln cold start <= 2", kiln["after_crash_s"] / cold, 2, "le"),
        ("idle worker RSS kiln/tvm <= 1/5", kiln["idle_rss_kib"] / tvm["idle_rss_kib"], 1 / 5,
         "le"),
    ]


def check_targets(figures):
    """Prints a PASS/FAIL line per target; returns [{target, value, limit, met}]."""
    print()
    checked = []
    for name, value, limit, sense in targets(figures):
        met = value <= limit if sense == "le" else value >= limit
        print(f"{'PASS' if met else 'FAIL'}  {name:54s} measured {value:.4g}")
        checked.append({"target": name, "value": value, "limit": limit, "met": met})
    return checked


def main(argv):
    args = parse_args(argv)
    give_workers_the_tasks()
    pools, skip_reason = load_pools()
    run = describe_run(skip_reason)
    print(f"python {run['python_version']} ({run['python']}), apache-tvm {run['tvm_version']}, "
          f"kiln extension {run['kiln_extension']}", flush=True)
    if skip_reason:
        print(f"kiln skipped: {skip_reason}; measuring TVM's side alone", flush=True)
    warn_if_busy(run)
    size = sizes(args.quick)
    samples = {}
    started, cpu_before = time.perf_counter(), cpu_seconds()
    for section in (run_cold, run_warm, run_throughput, run_failures):
        section(pools, size, samples)
    run["seconds"] = time.perf_counter() - started
    run["others_cpu_share"] = others_share(cpu_before, cpu_seconds(), run["seconds"], run["cpus"])
    figures = medians(samples)
    print_figures(figures)
    checked = [] if skip_reason else check_targets(figures)
    if skip_reason:
        print("\nSKIP  every target: kiln.support.popen_pool was not measured")
    missed = sum(not c["met"] for c in checked)
    print(f"\n{len(checked)} targets checked, {missed} missed; {run['seconds']:.0f} s; other "
          f"processes used {run['others_cpu_share']:.0%} of the machine's CPUs meanwhile")
    if run["others_cpu_share"] > 0.1:
        print("WARNING: the machine was not quiet during the run: figures are noisy")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump({"run": run, "sizes": size, "figures": figures, "targets": checked,
                       "samples": samples}, file, indent=1)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
