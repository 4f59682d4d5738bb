"""Whether the compile server's PCH making slows the compiles that run meanwhile (issue 46).

    .deps/venv/bin/python bench/nvrtc_pch_yield_bench.py --kiln NEW --before OLD \
        --kernel corpus/softmax_fp16.cu [--trials 8] [--parts 2]

One trial, each in a fresh KILN_CACHE_DIR (so a fresh compile server, no PCH) with
KILN_NO_CACHE=1: `kiln cuda compile` of the kernel once (its answer comes before its PCH, which
the server's child then makes), then at once --parts copies of it under other names started
together, as the parts of one module are: they share the header set, find its PCH being made,
and compile without it beside the maker. Measured: the wall time until every part has answered.
NEW and OLD (kiln CLIs, say before and after a change) alternate trial by trial; prints the
median of each and their ratio.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def compile_argv(kiln, source, output):
    return [kiln, "cuda", "compile", str(source), "--arch", "sm_80", "--format", "cubin"] + [
        "-o",
        str(output),
    ]


def trial(kiln, kernel, parts, scratch):
    env = dict(os.environ, KILN_CACHE_DIR=str(scratch / "cache"), KILN_NO_CACHE="1")
    env.pop("KILN_NO_SERVER", None)
    first = subprocess.run(compile_argv(kiln, kernel, scratch / "first.cubin"), env=env,
                           capture_output=True, check=False)
    if first.returncode != 0:
        raise RuntimeError(first.stderr.decode()[-2000:])
    copies = []
    for i in range(parts):
        copy = scratch / f"part{i}.cu"
        shutil.copyfile(kernel, copy)
        copies.append(copy)
    start = time.perf_counter()
    running = [
        subprocess.Popen(compile_argv(kiln, copy, copy.with_suffix(".cubin")), env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for copy in copies
    ]
    codes = [p.wait() for p in running]
    elapsed = time.perf_counter() - start
    if any(codes):
        raise RuntimeError(f"a part failed: {codes}")
    return elapsed


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("--kiln", required=True)
    p.add_argument("--before", required=True)
    p.add_argument("--kernel", required=True, type=Path)
    p.add_argument("--trials", type=int, default=8)
    p.add_argument("--parts", type=int, default=2)
    args = p.parse_args(argv)
    times = {"new": [], "before": []}
    for i in range(args.trials):
        order = [("new", args.kiln), ("before", args.before)]
        for name, kiln in order if i % 2 == 0 else order[::-1]:
            with tempfile.TemporaryDirectory(prefix="kiln-pch-yield-") as scratch:
                times[name].append(trial(kiln, args.kernel, args.parts, Path(scratch)))
            time.sleep(0.5)  # the server saw its socket go and ended, its PCH maker with it
    for name, values in times.items():
        print(f"{name:7} median {statistics.median(values) * 1000:7.1f} ms  "
              f"({', '.join(f'{v * 1000:.0f}' for v in values)})")
    ratio = statistics.median(times["new"]) / statistics.median(times["before"])
    print(f"new/before: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
