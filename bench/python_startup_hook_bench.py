"""What kiln's hook costs an interpreter that never imports tvm (KILN_TVM unset and set).

    python python_startup_hook_bench.py [--runs N]

Two throwaway venvs of this interpreter, alike but for kiln installed as the wheel installs it
(python/tests/kiln_site.py: its dist-info with the tvm.backends entry point that `import tvm`
calls) in one of them, each run `python -c pass` N times (200 by default), interleaved; prints
both medians, their difference and its 95% bootstrap interval (issue 28: no measurable
difference, i.e. an interval that holds 0). Both have this checkout's python/ on their path.
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
import kiln_site  # noqa: E402  (needs python/tests on sys.path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--kiln-tvm", action="store_true", help="with KILN_TVM=1 set")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "KILN_TVM"}
    if args.kiln_tvm:
        env["KILN_TVM"] = "1"
    with tempfile.TemporaryDirectory() as work:
        paths = [os.path.join(ROOT, "python")]
        pythons = {"without": kiln_site.make_venv(os.path.join(work, "a"), paths, False),
                   "with": kiln_site.make_venv(os.path.join(work, "b"), paths, True)}
        times = {name: [] for name in pythons}
        for i in range(args.runs):
            for name in (("without", "with") if i % 2 else ("with", "without")):
                start = time.perf_counter()
                subprocess.run([pythons[name], "-c", "pass"], env=env, check=True)
                times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    low, high = difference_interval(times["without"], times["with"])
    variable = "set" if args.kiln_tvm else "unset"
    print(f"python -c pass, median of {args.runs}: without kiln {medians['without']:.2f} ms, "
          f"with kiln installed and KILN_TVM {variable} {medians['with']:.2f} ms, "
          f"difference {medians['with'] - medians['without']:+.2f} ms "
          f"(95% bootstrap interval {low * 1e3:+.2f} .. {high * 1e3:+.2f} ms: "
          f"{'no measurable difference' if low <= 0 <= high else 'measurable'})")
    return 0


def difference_interval(without, with_hook, resamples=2000):
    """The 2.5th and 97.5th percentiles of median(with) - median(without) over resamples."""
    rng = random.Random(28)
    differences = sorted(
        statistics.median(rng.choices(with_hook, k=len(with_hook))) -
        statistics.median(rng.choices(without, k=len(without))) for _ in range(resamples))
    return differences[int(0.025 * resamples)], differences[int(0.975 * resamples)]


if __name__ == "__main__":
    sys.exit(main())
