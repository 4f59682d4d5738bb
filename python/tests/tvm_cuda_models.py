"""CUDA work that TVM does without a GPU, for test_tvm_cuda_stub.py and the CUDA benchmark.

TVM 0.27 compiles a CUDA module's source inside tvm.compile (through the global
tvm_callback_cuda_compile) only when its CUDA runtime, libtvm_runtime_cuda.so, loads, and that
needs libcuda.so.1. The toolkit's stub driver (<toolkit>/lib64/stubs/libcuda.so) on the library
path as libcuda.so.1 makes it load with no GPU (every driver call then fails, so nothing runs on
a device). The library path is read when a process starts: the work runs in a child process
started with stub_environment(). Without a device the arch comes only from the target in scope
(TVM's callback and kiln's both read Target.current()), so builds run inside `with target:`.

Here: Relax models whose modules hold many kernels (MLPs of 8 and 16 kernels, a CNN), their
Relax pipeline run once (scheduled(): tens of seconds of TVM's own work for the CNN, none of it
CUDA compiling) so that tvm.compile(..., relax_pipeline=None) is the part a CUDA compiler
changes; MetaSchedule's CUDA candidates for LocalBuilder; and f_build for its workers.
"""

import os
import re

# A CUDA target TVM schedules for without asking a device.
CUDA_TARGET = {
    "kind": "cuda",
    "arch": "sm_80",
    "max_threads_per_block": 1024,
    "max_shared_memory_per_block": 49152,
    "thread_warp_size": 32,
}


def stub_driver(directory):
    """`directory` holding libcuda.so.1, a link to the CUDA toolkit's stub driver; None when the
    toolkit has none."""
    from kiln.support import nvcc  # pylint: disable=import-outside-toplevel

    try:
        stub = os.path.join(nvcc.find_cuda_path(), "lib64", "stubs", "libcuda.so")
    except RuntimeError:
        return None
    if not os.path.isfile(stub):
        return None
    os.makedirs(directory, exist_ok=True)
    link = os.path.join(directory, "libcuda.so.1")
    if not os.path.lexists(link):
        os.symlink(stub, link)
    return directory


def stub_environment(directory, base=None):
    """An environment (os.environ, or `base`) whose library path finds the stub driver first."""
    env = dict(os.environ if base is None else base)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        [directory] + ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []))
    return env


def cuda_target():
    import tvm  # pylint: disable=import-outside-toplevel

    return tvm.target.Target(CUDA_TARGET)


def relax_model(kind):
    """The Relax IRModule of a float16 model: "mlp8" (4 layers: 8 kernels), "mlp16" (8 layers: 16
    kernels), "mlp4" (2 layers: 4 kernels), "cnn" (4 convolutions up to 96 channels: 8 kernels,
    ~30 s of TVM's Relax pipeline), "cnn2" (2 convolutions: 4 kernels, fast), "transformer" or
    "attention" (transformer_model's)."""
    if kind in ("transformer", "attention"):
        return transformer_model(kind)
    from tvm.relax.frontend import nn  # pylint: disable=import-outside-toplevel

    class Mlp(nn.Module):  # pylint: disable=too-few-public-methods
        def __init__(self, widths):
            self.layers = nn.ModuleList([nn.Linear(a, b, dtype="float16")
                                         for a, b in zip(widths, widths[1:])])

        def forward(self, x):
            for layer in self.layers:
                x = nn.op.relu(layer(x))
            return x

    class Cnn(nn.Module):  # pylint: disable=too-few-public-methods
        def __init__(self, channels):
            self.convs = nn.ModuleList([nn.Conv2D(a, b, 3, padding=1, dtype="float16")
                                        for a, b in zip(channels, channels[1:])])

        def forward(self, x):
            for conv in self.convs:
                x = nn.op.relu(conv(x))
            return x

    if kind.startswith("mlp"):
        layers = int(kind[3:]) // 2  # each layer: a transpose and a fused matmul
        widths = [512 + 256 * i for i in range(layers + 1)]
        shape = {"x": nn.spec.Tensor((32, widths[0]), "float16")}
        return Mlp(widths).export_tvm({"forward": shape})[0]
    if kind in ("cnn", "cnn2"):
        channels = [16, 32, 48, 64, 96] if kind == "cnn" else [16, 32, 48]
        shape = {"x": nn.spec.Tensor((1, 16, 56, 56), "float16")}
        return Cnn(channels).export_tvm({"forward": shape})[0]
    raise ValueError(f"no model {kind}")


def transformer_model(kind):
    """A float16 transformer's Relax IRModule, built from TVM's Relax ops (nn.LayerNorm, matmul,
    softmax, gelu, reshapes and transposes), d_model 768, 8 heads, weights stored (in, out) so
    that no kernel transposes them:
      "transformer"  one pre-LN block of 32 tokens: layer norm, QKV matmul, the heads split,
                     attention scores, softmax, attention times values, output projection and
                     residual add, layer norm, MLP up + GELU, MLP down + residual add: 14 kernels,
                     ~670 KB of CUDA (at 32 rows dlight schedules each matmul as a ~105 KB kernel);
      "attention"    its attention half over 128 tokens, causally masked and scaled: 12 kernels,
                     ~80 KB (dlight's tensor-core matmuls, ~14 KB each; ~30 s of Relax pipeline).
    """
    from tvm.relax.frontend import nn  # pylint: disable=import-outside-toplevel
    from tvm.relax.frontend.nn import op  # pylint: disable=import-outside-toplevel

    class Dense(nn.Module):  # pylint: disable=too-few-public-methods
        def __init__(self, rows, cols):
            self.weight = nn.Parameter((rows, cols), "float16")
            self.bias = nn.Parameter((cols,), "float16")

        def forward(self, x):
            return op.matmul(x, self.weight) + self.bias

    class Attention(nn.Module):  # pylint: disable=too-few-public-methods
        def __init__(self, width, heads, causal):
            self.norm = nn.LayerNorm(width, dtype="float16")
            self.qkv = Dense(width, 3 * width)
            self.out = Dense(width, width)
            self.heads, self.causal = heads, causal

        def forward(self, x):
            tokens, width = x.shape
            heads, size = self.heads, width // self.heads
            qkv = op.permute_dims(op.reshape(self.qkv(self.norm(x)), (tokens, 3, heads, size)),
                                  [1, 2, 0, 3])
            q, k, v = (op.reshape(t, (heads, tokens, size)) for t in op.split(qkv, 3, axis=0))
            scores = op.matmul(q, op.permute_dims(k, [0, 2, 1]))
            if self.causal:
                scores = op.triu(op.full(scores.shape, -60000.0, "float16"), 1) + scores * (
                    1.0 / size ** 0.5)
            values = op.matmul(op.softmax(scores, axis=-1), v)
            return x + self.out(op.reshape(op.permute_dims(values, [1, 0, 2]), (tokens, width)))

    class Block(nn.Module):  # pylint: disable=too-few-public-methods
        def __init__(self, width, heads):
            self.attention = Attention(width, heads, causal=False)
            self.norm = nn.LayerNorm(width, dtype="float16")
            self.up = Dense(width, 4 * width)
            self.down = Dense(4 * width, width)

        def forward(self, x):
            x = self.attention(x)
            return x + self.down(op.gelu(self.up(self.norm(x))))

    model, tokens = (Block(768, 8), 32) if kind == "transformer" else (Attention(768, 8, True), 128)
    shape = {"x": nn.spec.Tensor((tokens, 768), "float16")}
    return model.export_tvm({"forward": shape})[0]


def scheduled(mod, target):
    """`mod` after TVM's default Relax pipeline for `target` (dlight's GPU schedules): what
    tvm.compile(scheduled, target, relax_pipeline=None) builds."""
    from tvm import relax  # pylint: disable=import-outside-toplevel

    with target:
        return relax.get_default_pipeline(target)(mod)


def cuda_source(kind):
    """The CUDA source TVM generates for relax_model(kind) (no compiler runs: the callback that
    receives it answers placeholder bytes)."""
    import tvm  # pylint: disable=import-outside-toplevel
    import tvm_ffi  # pylint: disable=import-outside-toplevel

    sources = []
    callback = tvm_ffi.get_global_func("tvm_callback_cuda_compile", allow_missing=True)
    tvm_ffi.register_global_func("tvm_callback_cuda_compile",
                                 lambda code: sources.append(str(code)) or bytearray(b"x"),
                                 override=True)
    try:
        target = cuda_target()
        with target:
            tvm.compile(relax_model(kind), target=target)
    finally:
        if callback is not None:
            tvm_ffi.register_global_func("tvm_callback_cuda_compile", callback, override=True)
    return sources[0]


def kernel_names(code):
    """The kernels a CUDA source defines (TVM's `extern "C" __global__ ... name(...) {`)."""
    names = set()
    for header in re.findall(r'^extern "C" __global__ ([^;{]*)\{', code, re.MULTILINE):
        names.add(re.findall(r"(\w+)\(", header)[-1])  # after __launch_bounds__(...)
    return sorted(names)


def cuda_candidates(count, n=128):
    """`count` distinct CUDA candidates of a n^3 float32 matmul (TE, scheduled as a tuning run's
    candidates are: rows over blocks and threads by a tile, columns split by another), as
    LocalBuilder's BuilderInputs."""
    from tvm import s_tir  # pylint: disable=import-outside-toplevel
    from tvm.s_tir.meta_schedule.builder import BuilderInput  # noqa: E501  pylint: disable=import-outside-toplevel
    from tvm_builder_cases import matmul_module  # pylint: disable=import-outside-toplevel

    target = cuda_target()
    inputs = []
    for index in range(count):
        threads, columns = (16, 32, 64, 128)[index % 4], (1, 2, 4, 8, 16)[index // 4 % 5]
        sch = s_tir.Schedule(matmul_module(n))
        block = sch.get_sblock("C")
        rows, cols, _ = sch.get_loops(block)
        outer, inner = sch.split(rows, factors=[None, threads])
        sch.bind(outer, "blockIdx.x")
        sch.bind(inner, "threadIdx.x")
        sch.split(cols, factors=[None, columns])
        inputs.append(BuilderInput(sch.mod, target))
    return inputs


def build_in_target_scope(mod, target, params):
    """LocalBuilder's f_build without a GPU: MetaSchedule's default build inside `with target:`
    (with a GPU, the callback would take the arch from device 0 instead)."""
    from tvm.s_tir.meta_schedule.builder import local_builder  # noqa: E501  pylint: disable=import-outside-toplevel

    with target:
        return local_builder.default_build(mod, target, params)
