"""TVM compiling CUDA without a GPU, for test_tvm_cuda_stub.py: run in a process whose library
path finds CUDA's stub driver (tvm_cuda_models.py says why).

    python tvm_cuda_stub_driver.py kiln|tvm OUT_DIR
    python tvm_cuda_stub_driver.py sources OUT_DIR MODEL...
    python tvm_cuda_stub_driver.py both OUT_DIR MODEL...

Builds a Relax MLP of 4 kernels with tvm.compile for sm_80 inside `with target:`, kiln.tvm.install()
first with "kiln", and writes OUT_DIR/parent.json: how many compiles kiln's extension ran, the
kernels the CUDA source TVM generated defines, the file holding the bytes the callback returned
(OUT_DIR/parent.cubin), and whether the built module holds those bytes. With "kiln" it then builds
two MetaSchedule CUDA candidates with LocalBuilder, whose worker's f_build (probe_build) writes
the same for itself to OUT_DIR/worker-<n>.json. "sources" writes the CUDA source TVM generates
for each model of tvm_cuda_models.relax_model to OUT_DIR/<model>.cu. "both" runs each model's
Relax pipeline once (tvm_cuda_models.scheduled) and builds it with tvm.compile(...,
relax_pipeline=None) twice, with TVM's own callback and then, after kiln.tvm.install(), with
kiln's, reporting each as OUT_DIR/<model>-tvm.json and OUT_DIR/<model>-kiln.json (with .cubin).
"""

import json
import os
import sys
import uuid


class Recorder:
    """Counts the compiles kiln's extension runs, and records what TVM's global
    tvm_callback_cuda_compile (whoever's it is) gets and returns, until stop()."""

    def __init__(self):
        import tvm_ffi  # pylint: disable=import-outside-toplevel

        self.kiln_compiles = 0
        self.calls = []  # (code, bytes)
        try:
            from kiln._native import native  # pylint: disable=import-outside-toplevel
        except ImportError:
            native = None
        self._native = native
        if native is not None:
            self._compile = native.compile_cuda
            native.compile_cuda = self._counting
        self._callback = tvm_ffi.get_global_func("tvm_callback_cuda_compile")
        tvm_ffi.register_global_func("tvm_callback_cuda_compile", self._recording, override=True)

    def _counting(self, *args):
        self.kiln_compiles += 1
        return self._compile(*args)

    def _recording(self, code):
        result = self._callback(code)
        self.calls.append((str(code), bytes(result)))
        return result

    def stop(self):
        import tvm_ffi  # pylint: disable=import-outside-toplevel

        tvm_ffi.register_global_func("tvm_callback_cuda_compile", self._callback, override=True)
        if self._native is not None:
            self._native.compile_cuda = self._compile

    def report(self, out_dir, name, module=None):
        """Writes <name>.json and <name>.cubin (the last compile's) into out_dir."""
        from tvm_cuda_models import kernel_names  # pylint: disable=import-outside-toplevel

        code, binary = self.calls[-1] if self.calls else ("", b"")
        cubin = os.path.join(out_dir, name + ".cubin")
        with open(cubin, "wb") as file:
            file.write(binary)
        report = {"kiln_compiles": self.kiln_compiles, "callback_calls": len(self.calls),
                  "kernels": kernel_names(code), "cubin": cubin, "pid": os.getpid()}
        if module is not None:
            report["in_module"] = bool(binary) and binary in packed_imports(module)
        with open(os.path.join(out_dir, name + ".json"), "w", encoding="utf-8") as file:
            json.dump(report, file)


def packed_imports(module):
    """The bytes export_library embeds for `module`'s imported modules (the CUDA module's cubin
    among them)."""
    import tvm  # pylint: disable=import-outside-toplevel

    pack = tvm.get_global_func("runtime.ModulePackImportsToTensor")
    return pack(module).numpy().tobytes()


def probe_build(mod, target, params):
    """LocalBuilder's f_build in the worker: builds as tvm_cuda_models.build_in_target_scope does,
    recording as Recorder does, into <KILN_PROBE_DIR>/worker-<random>.json."""
    from tvm_cuda_models import build_in_target_scope  # pylint: disable=import-outside-toplevel

    recorder = Recorder()
    try:
        built = build_in_target_scope(mod, target, params)
    finally:
        recorder.stop()
    recorder.report(os.environ["KILN_PROBE_DIR"], f"worker-{uuid.uuid4().hex}", built)
    return built


def build_both(out_dir, models):
    """Each model built by TVM's callback, then by kiln's, from one run of its Relax pipeline."""
    import kiln.tvm  # pylint: disable=import-outside-toplevel
    import tvm  # pylint: disable=import-outside-toplevel
    from tvm_cuda_models import cuda_target, relax_model, scheduled  # noqa: E501  pylint: disable=import-outside-toplevel

    target = cuda_target()
    for model in models:
        module = scheduled(relax_model(model), target)
        for side in ("tvm", "kiln"):
            if side == "kiln":
                kiln.tvm.install()
            recorder = Recorder()
            try:
                with target:
                    executable = tvm.compile(module, target=target, relax_pipeline=None)
            finally:
                recorder.stop()
            recorder.report(out_dir, f"{model}-{side}", executable.mod.imports[0])
        kiln.tvm.uninstall()


def main(mode, out_dir, *models):
    import tvm  # pylint: disable=import-outside-toplevel
    from tvm_cuda_models import cuda_candidates, cuda_source, cuda_target, relax_model  # noqa: E501  pylint: disable=import-outside-toplevel

    if mode == "sources":
        for model in models:
            with open(os.path.join(out_dir, model + ".cu"), "w", encoding="utf-8") as file:
                file.write(cuda_source(model))
        return
    if mode == "both":
        build_both(out_dir, models)
        return
    if mode == "kiln":
        import kiln.tvm  # pylint: disable=import-outside-toplevel

        kiln.tvm.install()
    target = cuda_target()
    recorder = Recorder()
    with target:
        executable = tvm.compile(relax_model("mlp4"), target=target)
    recorder.stop()
    recorder.report(out_dir, "parent", executable.mod.imports[0])
    if mode != "kiln":
        return
    from tvm.s_tir.meta_schedule.builder import LocalBuilder  # noqa: E501  pylint: disable=import-outside-toplevel

    import tvm_cuda_stub_driver  # pylint: disable=import-outside-toplevel

    os.environ["KILN_PROBE_DIR"] = out_dir
    # By reference (this file as a module, not __main__): the worker imports it.
    builder = LocalBuilder(max_workers=1, timeout_sec=300,
                           f_build=tvm_cuda_stub_driver.probe_build)
    results = builder.build(cuda_candidates(2))
    errors = [result.error_msg for result in results if result.error_msg]
    if errors:
        sys.exit("LocalBuilder failed: " + errors[0])


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(*sys.argv[1:])
