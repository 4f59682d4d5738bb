"""tvm.compile for CUDA with kiln against TVM's own, without a GPU, side by side in one run.

    python python_tvm_cuda_bench.py [--reps N] [--models mlp8,mlp16,cnn,transformer,attention]
                                    [--batch N]
                                    [--rounds N] [--json OUT.json]

It runs itself again in a child whose library path finds CUDA's stub driver, which makes TVM 0.27
call tvm_callback_cuda_compile inside tvm.compile as on a GPU machine (python/tests/
tvm_cuda_models.py). For each Relax model (MLPs of 8 and 16 kernels, a CNN of 8, a transformer
block of 14 and a causal attention of 12: sources of 430, 870, 380, 670 and 80 KB) TVM's Relax
pipeline runs once, untimed here (the same for both sides, and none of it CUDA compiling: ~30 s
for the CNN and the attention); then, the order rotated each repetition,
tvm.compile(scheduled, target, relax_pipeline=None) inside `with target:` with
  tvm          TVM 0.27's own callback (NVRTC through cuda-bindings, in this process);
  kiln         kiln.tvm.install()'s, KILN_NO_CACHE=1 (kiln's compile server: precompiled headers,
               and a module of many kernels compiled in parts at once);
  kiln-cached  the same with kiln's kernel cache holding the module.
Each figure is the whole tvm.compile; the time spent inside the callback is reported beside it.
One untimed compile per side and model warms what a user's second compile finds warm (TVM's
NVRTC loaded; kiln's server and its precompiled headers).

Then MetaSchedule's LocalBuilder on `--batch` CUDA candidates (tvm_cuda_models.cuda_candidates;
f_build inside `with target:`), a fresh pool per batch as MetaSchedule makes one, in alternating
rounds: TVM's pool and callback against kiln's; kiln's first batch (which prepares its worker
template) is reported apart. Builds get 300 s each, so that TVM's workers finish their imports.

Targets (issue 28): tvm.compile kiln <= 0.6 x TVM for every model; the builder batch kiln <= 0.2
x TVM. Exits 1 when one is missed or a compile fails.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
TESTS_DIR = os.path.join(os.path.dirname(BENCH_DIR), "python", "tests")
sys.path.insert(0, TESTS_DIR)
import tvm_builder_cases  # noqa: E402  (needs TESTS_DIR on sys.path)
import tvm_cuda_models  # noqa: E402

GOALS = {"compile": 0.6, "builder": 0.2}
SIDES = ["tvm", "kiln", "kiln-cached"]


class Timed:
    """Wraps TVM's global tvm_callback_cuda_compile (whoever's it is) to add up its time."""

    def __init__(self):
        import tvm_ffi  # pylint: disable=import-outside-toplevel

        self.seconds = 0.0
        self._callback = tvm_ffi.get_global_func("tvm_callback_cuda_compile")
        tvm_ffi.register_global_func("tvm_callback_cuda_compile", self._timed, override=True)

    def _timed(self, code):
        start = time.perf_counter()
        try:
            return self._callback(code)
        finally:
            self.seconds += time.perf_counter() - start

    def stop(self):
        import tvm_ffi  # pylint: disable=import-outside-toplevel

        tvm_ffi.register_global_func("tvm_callback_cuda_compile", self._callback, override=True)


def use(side):
    """Makes TVM compile with `side`'s callback and pool."""
    import kiln.tvm  # pylint: disable=import-outside-toplevel

    if side == "tvm":
        kiln.tvm.uninstall()
        return
    kiln.tvm.install()
    if side == "kiln":
        os.environ["KILN_NO_CACHE"] = "1"
    else:
        os.environ.pop("KILN_NO_CACHE", None)


def compile_once(module, side):
    """(whole tvm.compile seconds, seconds inside the callback) with `side`'s callback."""
    import tvm  # pylint: disable=import-outside-toplevel

    use(side)
    target = tvm_cuda_models.cuda_target()
    timed = Timed()
    try:
        start = time.perf_counter()
        with target:
            tvm.compile(module, target=target, relax_pipeline=None)
        return time.perf_counter() - start, timed.seconds
    finally:
        timed.stop()


def measure_models(models, reps):
    figures = {}
    for model in models:
        target = tvm_cuda_models.cuda_target()
        start = time.perf_counter()
        module = tvm_cuda_models.scheduled(tvm_cuda_models.relax_model(model), target)
        pipeline = time.perf_counter() - start
        for side in SIDES:  # warm-ups, untimed; kiln-cached's fills the cache
            compile_once(module, side)
        samples = {side: [] for side in SIDES}
        for rep in range(reps):
            order = SIDES[rep % 3:] + SIDES[:rep % 3]
            for side in order:
                samples[side].append(compile_once(module, side))
        figures[model] = {"relax_pipeline_s": pipeline, "samples": samples}
        print_model(model, figures[model])
    return figures


def median(samples, index):
    return statistics.median(sample[index] for sample in samples)


def print_model(model, figure):
    samples = figure["samples"]
    tvm_s = median(samples["tvm"], 0)
    line = f"{model:6s} tvm.compile median: tvm {tvm_s:6.2f} s"
    for side in SIDES[1:]:
        line += f" | {side} {median(samples[side], 0):6.2f} s ({median(samples[side], 0) / tvm_s:.2f}x)"
    print(line, flush=True)
    callback = " | ".join(f"{side} {median(samples[side], 1):6.2f} s" for side in SIDES)
    print(f"{'':6s} inside the callback: {callback}; Relax pipeline (once, untimed above) "
          f"{figure['relax_pipeline_s']:.1f} s", flush=True)


def builder_batch(inputs):
    from tvm.s_tir.meta_schedule.builder import LocalBuilder  # noqa: E501  pylint: disable=import-outside-toplevel

    builder = LocalBuilder(max_workers=2, timeout_sec=300,
                           f_build=tvm_cuda_models.build_in_target_scope)
    return tvm_builder_cases.timed_build(builder, inputs)


def measure_builder(count, rounds):
    inputs = tvm_cuda_models.cuda_candidates(count)
    use("kiln")
    first = builder_batch(inputs)
    print(f"builder: kiln's first batch (prepares its template) {first[0]:.2f} s, built "
          f"{first[1]}/{count}", flush=True)
    samples = {"tvm": [], "kiln": []}
    for rnd in range(rounds):
        for side in (["tvm", "kiln"] if rnd % 2 == 0 else ["kiln", "tvm"]):
            use(side)
            samples[side].append(builder_batch(inputs))
    for side, runs in samples.items():
        for seconds, built, errors in runs:
            print(f"builder: {side} batch {seconds:.2f} s, built {built}/{count} {errors}")
    return {"first_kiln": first, "samples": samples}


def child(args):
    os.environ["KILN_CACHE_DIR"] = tempfile.mkdtemp(prefix="kiln-cuda-bench-")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (TESTS_DIR, os.environ.get("PYTHONPATH")) if p)  # the builder's workers
    os.environ.pop("TVM_CUDA_COMPILE_MODE", None)
    result = {"models": measure_models(args.models.split(","), args.reps)}
    if args.batch:
        result["builder"] = measure_builder(args.batch, args.rounds)
    failed = summarize(result)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(result, file, indent=1)
    return 1 if failed else 0


def summarize(result):
    failed = False
    print("\nsummary (kiln / tvm, medians; goals from issue 28)")
    for model, figure in result["models"].items():
        ratio = median(figure["samples"]["kiln"], 0) / median(figure["samples"]["tvm"], 0)
        cached = median(figure["samples"]["kiln-cached"], 0)
        ok = ratio <= GOALS["compile"]
        failed |= not ok
        print(f"  tvm.compile {model}: {ratio:.2f} (goal <= {GOALS['compile']}) "
              f"{'ok' if ok else 'MISSED'}; kiln-cached {cached:.2f} s")
    if "builder" in result:
        samples = result["builder"]["samples"]
        tvm_s = statistics.median(s[0] for s in samples["tvm"])
        kiln_s = statistics.median(s[0] for s in samples["kiln"])
        ok = kiln_s / tvm_s <= GOALS["builder"]
        failed |= not ok
        print(f"  LocalBuilder CUDA batch: tvm {tvm_s:.2f} s, kiln {kiln_s:.2f} s, "
              f"{kiln_s / tvm_s:.3f} (goal <= {GOALS['builder']}) {'ok' if ok else 'MISSED'}")
    return failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--models", default="mlp8,mlp16,cnn,transformer,attention")
    parser.add_argument("--batch", type=int, default=16, help="builder candidates (0: none)")
    parser.add_argument("--rounds", type=int, default=2, help="builder batches per side")
    parser.add_argument("--json", help="also write every sample here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    with tempfile.TemporaryDirectory(prefix="kiln-stub-") as stub:
        if tvm_cuda_models.stub_driver(stub) is None:
            print("no CUDA toolkit with lib64/stubs/libcuda.so: nothing to measure")
            return 1
        argv = [sys.executable, os.path.abspath(__file__), "--child", *sys.argv[1:]]
        return subprocess.run(argv, env=tvm_cuda_models.stub_environment(stub),
                              check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
