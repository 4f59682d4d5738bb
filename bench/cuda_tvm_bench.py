"""kiln's CUDA compiles against TVM's own, side by side in one run, on kernels TVM generates.

Run by the bench venv's python (the `cuda_tvm_bench` CMake target does it all):

    python cuda_tvm_bench.py --kiln PATH/kiln --corpus DIR [--reps 5] [--json OUT.json]

DIR is what cuda_tvm_corpus.py wrote. Kernel by kernel, with the order of the tools rotated
each repetition, it measures
  (a) TVM's `tvm.support.nvcc.compile_cuda(code, target_format="cubin", arch=A, compiler="nvrtc")`
      in this process (TVM imported, NVRTC loaded by a warm-up compile; only the call is timed)
      against `kiln cuda compile FILE --arch A --format cubin -o OUT` as a fresh process (wall time
      of the whole process) with KILN_NO_CACHE=1, so nothing comes from kiln's kernel cache;
  (b) the same with nvcc (TVM's call inside `with Target(...)`, which it needs without a GPU;
      kiln's with `--backend nvcc`);
  (c) kiln's kernel-cache hit: `kiln cuda compile` again, the cache on, after a first compile.
Every kiln process of the run shares one KILN_CACHE_DIR (a fresh temporary directory), so state
kiln keeps there across processes (a compile server) is warm: a warm-up kiln compile of a kernel
outside the measured corpus runs first. Prints a table per kernel and a summary: medians, the
kiln/TVM ratios for (a) and (b) with the goals (a) <= 0.5 and (b) <= 1.0, and (c) in ms.

Then checks that every kernel's kiln cubin, from both backends, lists the same kernel names
(cuobjdump -sass "Function :" lines) as plain `nvcc -cubin -arch=A FILE`. Exits 1 on any mismatch
or failed compile.
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOALS = {"nvrtc": 0.5, "nvcc": 1.0}
CUDA_BIN = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin"
# (column, what is timed): the order within one kernel and repetition is rotated.
TOOLS = ["tvm_nvrtc", "kiln_nvrtc", "tvm_nvcc", "kiln_nvcc", "kiln_hit"]


class Failure(Exception):
    """A compile that failed; the bench goes on with the other kernels and exits 1."""


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kiln", required=True, help="the kiln CLI to measure")
    p.add_argument("--corpus", required=True, type=Path, help="cuda_tvm_corpus.py's output")
    p.add_argument("--reps", type=int, default=5, help="repetitions per kernel and tool")
    p.add_argument("--json", type=Path, help="also write every sample here")
    p.add_argument("--cuobjdump", help="default: the toolkit's, else the bench venv's, else PATH's")
    p.add_argument("--only", help="measure only the kernels whose name contains this")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    return p.parse_args(argv)


class Kiln:
    """Runs `kiln cuda compile` as a fresh process with one cache directory for the whole run."""

    def __init__(self, binary, cache_dir):
        self.binary = binary
        self.env = dict(os.environ, KILN_CACHE_DIR=str(cache_dir))
        self.env.pop("KILN_NO_CACHE", None)

    def compile(self, source, arch, backend, output, cache):
        argv = [self.binary, "cuda", "compile", str(source), "--arch", arch, "--format", "cubin"]
        argv += ["--backend", backend, "-o", str(output)]
        env = dict(self.env) if cache else dict(self.env, KILN_NO_CACHE="1")
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise Failure(f"kiln exit {done.returncode}: {' '.join(argv)}\n{done.stderr[-2000:]}")
        return elapsed


class Tvm:
    """TVM's compile_cuda in this process, the way TVM's own build calls it."""

    def __init__(self):
        import tvm  # noqa: PLC0415 - imported here so --help works without TVM
        import tvm.support.nvcc  # noqa: PLC0415

        self.tvm = tvm
        self.nvcc = tvm.support.nvcc

    def compile(self, code, arch, backend):
        target = self.tvm.target.Target({"kind": "cuda", "arch": arch})
        with target:  # TVM's nvcc path needs it when there is no GPU; NVRTC does not mind
            start = time.perf_counter()
            try:
                binary = self.nvcc.compile_cuda(
                    code, target_format="cubin", arch=arch, compiler=backend
                )
            except Exception as e:  # noqa: BLE001 - TVM raises RuntimeError/ValueError/...
                raise Failure(f"TVM compile_cuda({backend}) failed: {str(e)[-2000:]}") from e
            elapsed = time.perf_counter() - start
        if not binary:
            raise Failure(f"TVM compile_cuda({backend}) returned nothing")
        return elapsed


def measure_one(tool, kernel, tvm, kiln, out_dir):
    """Seconds for one compile of `kernel` by `tool`."""
    source, arch, name = kernel["path"], kernel["arch"], kernel["name"]
    if tool.startswith("tvm_"):
        return tvm.compile(kernel["code"], arch, tool[len("tvm_") :])
    if tool == "kiln_hit":
        return kiln.compile(source, arch, "nvrtc", out_dir / f"{name}.hit.cubin", cache=True)
    backend = tool[len("kiln_") :]
    return kiln.compile(source, arch, backend, out_dir / f"{name}.{backend}.cubin", cache=False)


def measure(kernels, tvm, kiln, out_dir, reps):
    """samples[name][tool] -> seconds; failures[name] -> messages. Interleaved, rotated order."""
    samples = {k["name"]: {t: [] for t in TOOLS} for k in kernels}
    failures = {}
    for rep in range(reps):
        for index, kernel in enumerate(kernels):
            shift = (rep + index) % len(TOOLS)
            for tool in TOOLS[shift:] + TOOLS[:shift]:
                if kernel["name"] in failures and tool in failures[kernel["name"]]:
                    continue
                try:
                    samples[kernel["name"]][tool].append(
                        measure_one(tool, kernel, tvm, kiln, out_dir)
                    )
                except Failure as e:
                    failures.setdefault(kernel["name"], {})[tool] = str(e)
                    print(f"bench: {kernel['name']} {tool}: {e}", file=sys.stderr)
        print(f"bench: repetition {rep + 1}/{reps} done", flush=True)
    return samples, failures


def load_corpus(corpus_dir):
    index = json.loads((corpus_dir / "corpus.json").read_text())
    kernels = []
    for k in index["kernels"]:
        path = corpus_dir / k["file"]
        kernels.append(dict(k, path=path, code=path.read_text()))
    warmup = [k for k in kernels if k.get("warmup")]
    measured = [k for k in kernels if not k.get("warmup")]
    if not warmup:
        raise SystemExit("bench: the corpus has no warm-up kernel")
    return index.get("tvm", "?"), warmup[0], measured


def warm_up(warmup, tvm, kiln, out_dir):
    """NVRTC loaded in this process, nvcc's files in the page cache, kiln's cache dir made (and
    its compile server started, where kiln has one), all with a kernel that is not measured."""
    for backend in ("nvrtc", "nvcc"):
        tvm.compile(warmup["code"], warmup["arch"], backend)
        kiln.compile(
            warmup["path"],
            warmup["arch"],
            backend,
            out_dir / f"warmup.{backend}.cubin",
            cache=False,
        )


def fill_cache(kernels, kiln, out_dir):
    """The first compile that (c) then hits."""
    for k in kernels:
        kiln.compile(
            k["path"], k["arch"], "nvrtc", out_dir / f"{k['name']}.first.cubin", cache=True
        )


def median_ms(values):
    return statistics.median(values) * 1000 if values else math.nan


def fmt_ms(value):
    return "   failed" if math.isnan(value) else f"{value:9.1f}"


def fmt_ratio(num, den):
    return "   -  " if math.isnan(num) or math.isnan(den) else f"{num / den:6.2f}"


def print_table(kernels, samples):
    print(
        f"\n{'kernel':<26} {'arch':<5} {'TVM nvrtc':>9} {'kiln nvrtc':>10} {'ratio':>6}"
        f" {'TVM nvcc':>9} {'kiln nvcc':>9} {'ratio':>6} {'kiln hit':>9}   (ms, medians)"
    )
    for k in kernels:
        m = {t: median_ms(samples[k["name"]][t]) for t in TOOLS}
        print(
            f"{k['name']:<26} {k['arch'][3:]:<5} {fmt_ms(m['tvm_nvrtc'])} "
            f"{fmt_ms(m['kiln_nvrtc']):>10} {fmt_ratio(m['kiln_nvrtc'], m['tvm_nvrtc'])} "
            f"{fmt_ms(m['tvm_nvcc'])} {fmt_ms(m['kiln_nvcc'])} "
            f"{fmt_ratio(m['kiln_nvcc'], m['tvm_nvcc'])} {fmt_ms(m['kiln_hit'])}"
        )


def summary(kernels, samples, reps):
    """The summary lines, and {backend: ratio of summed medians} for the verdicts."""
    lines, ratios = [], {}
    medians = {k["name"]: {t: median_ms(samples[k["name"]][t]) for t in TOOLS} for k in kernels}
    complete = [n for n, m in medians.items() if not any(math.isnan(v) for v in m.values())]
    lines.append(
        f"\nsummary over {len(complete)} of {len(kernels)} kernels, {reps} repetitions each"
        " (median of each kernel's medians; total = sum of medians)"
    )
    for backend in ("nvrtc", "nvcc"):
        tvm_ms = [medians[n][f"tvm_{backend}"] for n in complete]
        kiln_ms = [medians[n][f"kiln_{backend}"] for n in complete]
        if not complete:
            continue
        per_kernel = [k / t for k, t in zip(kiln_ms, tvm_ms, strict=True)]
        ratios[backend] = sum(kiln_ms) / sum(tvm_ms)
        goal = GOALS[backend]
        verdict = "met" if ratios[backend] <= goal else "NOT met"
        label = "(a) NVRTC" if backend == "nvrtc" else "(b) nvcc "
        lines.append(
            f"{label}: TVM in-process median {statistics.median(tvm_ms):7.1f} ms,"
            f" kiln fresh process median {statistics.median(kiln_ms):7.1f} ms;"
            f" kiln/TVM total {ratios[backend]:.2f}"
            f" (per kernel: median {statistics.median(per_kernel):.2f}, geomean"
            f" {statistics.geometric_mean(per_kernel):.2f}, max {max(per_kernel):.2f});"
            f" goal <= {goal}: {verdict}"
        )
    hits = [medians[n]["kiln_hit"] for n in complete]
    if hits:
        lines.append(
            f"(c) kiln cache hit, fresh process: median {statistics.median(hits):.1f} ms,"
            f" max {max(hits):.1f} ms"
        )
    return lines, ratios


def find_cuobjdump(explicit):
    candidates = [explicit] if explicit else []
    candidates.append(str(CUDA_BIN / "cuobjdump"))
    venv_bin = Path(sys.prefix) / "lib"
    candidates += [str(p) for p in venv_bin.glob("python3*/site-packages/nvidia/cu*/bin/cuobjdump")]
    candidates.append(shutil.which("cuobjdump") or "")
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise SystemExit("bench: no cuobjdump (toolkit, bench venv's nvidia-cuda-cuobjdump, PATH)")


def kernel_names(cuobjdump, cubin):
    # -sass runs nvdisasm, which NVIDIA's wheels put beside cuobjdump.
    path = f"{Path(cuobjdump).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    argv = [cuobjdump, "-sass", str(cubin)]
    env = dict(os.environ, PATH=path)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise Failure(f"cuobjdump -sass {cubin}: {done.stderr.strip()}")
    names = {
        line.split(":", 1)[1].strip()
        for line in done.stdout.splitlines()
        if line.strip().startswith("Function :")
    }
    if not names:
        raise Failure(f"cuobjdump -sass {cubin}: no functions")
    return names


def check_names(kernels, cuobjdump, out_dir):
    """Mismatch messages: kiln's cubins (both backends) against plain nvcc's kernel names."""
    problems = []
    for k in kernels:
        plain = out_dir / f"{k['name']}.plain.cubin"
        argv = [
            str(CUDA_BIN / "nvcc"),
            "-cubin",
            f"-arch={k['arch']}",
            "-o",
            str(plain),
            str(k["path"]),
        ]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            problems.append(f"{k['name']}: plain nvcc failed: {done.stderr[-1000:]}")
            continue
        try:
            expected = kernel_names(cuobjdump, plain)
            for backend in ("nvrtc", "nvcc"):
                got = kernel_names(cuobjdump, out_dir / f"{k['name']}.{backend}.cubin")
                if got != expected:
                    problems.append(
                        f"{k['name']} ({backend}): kiln {sorted(got)}, nvcc {sorted(expected)}"
                    )
        except (Failure, FileNotFoundError) as e:
            problems.append(f"{k['name']}: {e}")
    return problems


def main(argv):
    args = parse_args(argv)
    version, warmup, kernels = load_corpus(args.corpus)
    kernels = [k for k in kernels if not args.only or args.only in k["name"]]
    if not os.access(args.kiln, os.X_OK):
        raise SystemExit(f"bench: {args.kiln} is not an executable")
    cuobjdump = find_cuobjdump(args.cuobjdump)
    work = Path(tempfile.mkdtemp(prefix="kiln-cuda-tvm-bench-"))
    out_dir = work / "out"
    out_dir.mkdir()
    try:
        tvm = Tvm()
        kiln = Kiln(args.kiln, work / "cache")
        print(
            f"bench: {len(kernels)} kernels from TVM {version}, {args.reps} repetitions,"
            f" KILN_CACHE_DIR={work / 'cache'}",
            flush=True,
        )
        warm_up(warmup, tvm, kiln, out_dir)
        fill_cache(kernels, kiln, out_dir)
        samples, failures = measure(kernels, tvm, kiln, out_dir, args.reps)
        print_table(kernels, samples)
        lines, _ = summary(kernels, samples, args.reps)
        print("\n".join(lines))
        problems = check_names(kernels, cuobjdump, out_dir)
        verdict = f"all {len(kernels)} kernels match, both backends" if not problems else ""
        print(f"\nkernel names ({Path(cuobjdump).name} -sass) against plain nvcc -cubin: {verdict}")
        for p in problems:
            print(f"  MISMATCH {p}")
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "tvm": version,
                        "reps": args.reps,
                        "samples": samples,
                        "failures": failures,
                        "name_problems": problems,
                    },
                    indent=1,
                )
            )
        return 1 if problems or failures else 0
    finally:
        if args.keep:
            print(f"bench: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
