"""What kiln-tvm.pth costs an interpreter that never asks for kiln (KILN_TVM unset).

    python python_startup_hook_bench.py [--runs N]

Two throwaway venvs of this interpreter, alike but for kiln-tvm.pth in one's site-packages,
each run `python -c pass` N times (200 by default), interleaved; prints both medians, their
difference and its 95% bootstrap interval (issue 28: no measurable difference, i.e. an interval
that holds 0).
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

PTH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python",
                   "kiln-tvm.pth")


def make_venv(root, with_hook):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root], check=True)
    python = os.path.join(root, "bin", "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(purelib, "00-kiln.pth"), "w", encoding="utf-8") as file:
        file.write(os.path.dirname(PTH) + "\n")  # kiln importable in both
    if with_hook:
        with open(PTH, encoding="utf-8") as source, \
                open(os.path.join(purelib, "kiln-tvm.pth"), "w", encoding="utf-8") as target:
            target.write(source.read())
    return python


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "KILN_TVM"}
    with tempfile.TemporaryDirectory() as work:
        pythons = {"without": make_venv(os.path.join(work, "a"), False),
                   "with": make_venv(os.path.join(work, "b"), True)}
        times = {name: [] for name in pythons}
        for i in range(args.runs):
            for name in (("without", "with") if i % 2 else ("with", "without")):
                start = time.perf_counter()
                subprocess.run([pythons[name], "-c", "pass"], env=env, check=True)
                times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    low, high = difference_interval(times["without"], times["with"])
    print(f"python -c pass, median of {args.runs}: without kiln-tvm.pth {medians['without']:.2f} ms, "
          f"with it and KILN_TVM unset {medians['with']:.2f} ms, "
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
