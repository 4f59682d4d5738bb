"""A/B of NVRTC's --minimal on TVM-generated kernels, through kiln's NVRTC path (issue 46).

    PYTHONPATH=python:build/debug/python .deps/venv/bin/python bench/nvrtc_minimal_ab.py \
        --kiln build/debug/kiln --corpus DIR [--reps 5] [--json OUT.json]

DIR is what cuda_tvm_corpus.py wrote. For each kernel, with the order of the two variants
rotated each repetition, it measures
  (a) `kiln.support.nvcc.compile_cuda(code, "cubin", arch, compiler="nvrtc")` in this process
      with KILN_NO_SERVER=1 and KILN_NO_CACHE=1 (NVRTC loaded by a warm-up compile; only the call
      is timed, wall and CPU time: kiln's preamble and NVRTC, no precompiled header), options=[]
      against options=["--minimal"];
  (b) `kiln cuda compile FILE --arch A --format cubin -o OUT [-- --minimal]` as a fresh process
      with KILN_NO_CACHE=1 and one compile server for the run (its precompiled headers warm, one
      per variant: the options are part of a PCH's key); --no-server leaves (b) out.
Then compares the SASS of every function (cuobjdump -sass, addresses left out) of the two
variants' cubins. Prints medians per kernel and overall; exits 1 when a compile failed.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python" / "tests"))
import _cuda_helpers  # pylint: disable=wrong-import-position

VARIANTS = {"plain": [], "minimal": ["--minimal"]}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("--kiln", required=True, help="the kiln CLI")
    p.add_argument("--corpus", required=True, type=Path, help="cuda_tvm_corpus.py's output")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--json", type=Path, help="also write every sample here")
    p.add_argument("--no-server", action="store_true", help="measure (a) only")
    return p.parse_args(argv)


def in_process(nvcc, code, arch, options):
    """(wall seconds, CPU seconds, cubin) of one compile in this process."""
    start, cpu = time.perf_counter(), time.process_time()
    cubin = nvcc.compile_cuda(code, "cubin", arch, options=options or None, compiler="nvrtc")
    return time.perf_counter() - start, time.process_time() - cpu, bytes(cubin)


def fresh_process(kiln, env, source, arch, options, output):
    argv = [kiln, "cuda", "compile", str(source), "--arch", arch, "--format", "cubin"]
    argv += ["-o", str(output)] + (["--"] + options if options else [])
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return elapsed, output.read_bytes()


def measure(args, kernels, scratch):
    os.environ.update(KILN_NO_SERVER="1", KILN_NO_CACHE="1")
    from kiln.support import nvcc  # pylint: disable=import-outside-toplevel

    env = dict(os.environ, KILN_CACHE_DIR=str(scratch / "cache"), KILN_NO_CACHE="1")
    env.pop("KILN_NO_SERVER")
    samples = {}
    for index, kernel in enumerate(kernels):
        source = args.corpus / kernel["file"]
        code = source.read_text()
        arch = kernel["arch"]
        row = samples.setdefault(
            kernel["name"], {"process": {}, "cpu": {}, "server": {}, "cubin": {}}
        )
        order = list(VARIANTS)
        for name, options in VARIANTS.items():  # warm-ups: NVRTC loaded, each PCH made
            in_process(nvcc, code, arch, options)
            if not args.no_server:
                fresh_process(args.kiln, env, source, arch, options, scratch / "warm.cubin")
        for rep in range(args.reps):
            for name in order[(rep + index) % 2 :] + order[: (rep + index) % 2]:
                options = VARIANTS[name]
                seconds, cpu, cubin = in_process(nvcc, code, arch, options)
                row["process"].setdefault(name, []).append(seconds)
                row["cpu"].setdefault(name, []).append(cpu)
                row["cubin"][name] = cubin
                if args.no_server:
                    continue
                out = scratch / f"{name}.cubin"
                seconds, served = fresh_process(args.kiln, env, source, arch, options, out)
                row["server"].setdefault(name, []).append(seconds)
                if served != cubin:
                    row["cubin"][name + "_served"] = served
    return samples


def report(samples):
    print(f"{'kernel':28} {'in-process plain/minimal (ms)':>32} {'CPU plain/minimal (ms)':>24}"
          f" {'served plain/minimal (ms)':>28}  SASS")
    wheres = [w for w in ("process", "cpu", "server") if next(iter(samples.values()))[w]]
    ratios = {where: [] for where in wheres}
    all_equal = True
    for name, row in samples.items():
        med = {
            where: {v: statistics.median(row[where].get(v, [0])) * 1000 for v in VARIANTS}
            for where in ("process", "cpu", "server")
        }
        for where in ratios:
            ratios[where].append(med[where]["minimal"] / med[where]["plain"])
        equal = _cuda_helpers.sass_by_function(row["cubin"]["plain"]) == (
            _cuda_helpers.sass_by_function(row["cubin"]["minimal"])
        )
        all_equal = all_equal and equal
        print(f"{name:28} {med['process']['plain']:15.1f} /{med['process']['minimal']:8.1f}"
              f"   {med['cpu']['plain']:13.1f} /{med['cpu']['minimal']:8.1f}"
              f"      {med['server']['plain']:13.1f} /{med['server']['minimal']:8.1f}"
              f"   {'equal' if equal else 'DIFFERENT'}")
    for where, values in ratios.items():
        print(f"median minimal/plain, {where}: {statistics.median(values):.3f} "
              f"(min {min(values):.3f}, max {max(values):.3f})")
    print("SASS equal on every kernel" if all_equal else "SASS differs on some kernel")
    return all_equal


def main(argv):
    args = parse_args(argv)
    corpus = json.loads((args.corpus / "corpus.json").read_text())
    kernels = [k for k in corpus["kernels"] if not k.get("warmup")]
    with tempfile.TemporaryDirectory(prefix="kiln-minimal-ab-") as scratch:
        samples = measure(args, kernels, Path(scratch))
    report(samples)
    if args.json:
        for row in samples.values():
            row.pop("cubin")
        args.json.write_text(json.dumps(samples, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
