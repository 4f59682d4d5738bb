"""Writes the CUDA kernels that Apache TVM 0.27 generates, one .cu file each, for cuda_tvm_bench.py.

Run by the bench venv's python (made by the `cuda_tvm_bench` CMake target), never at test time:

    python cuda_tvm_corpus.py OUT_DIR

Each kernel is a TE computation scheduled by TVM's dlight GPU rules (the schedules TVM's own
Relax pipeline applies) and built by `tvm.compile` for `{"kind": "cuda", "arch": ...}`; the file
holds exactly the source TVM hands to `tvm.support.nvcc.compile_cuda`. Two tensor-core kernels
are TensorIR written with TVM's wmma and PTX mma intrinsics, because dlight's MatmulTensorization
crashes TVM 0.27 from PyPI (segfault inside `Schedule.tensorize`, tried for NN/NT layouts and
fp16/fp32 accumulators); TVM's codegen still writes their CUDA. Also left out because 0.27 fails
on them: max reductions (dlight Reduction/GeneralReduction: "Index out of range") and dlight's
RMSNorm rule (rms_norm goes through GeneralReduction). OUT_DIR/corpus.json lists name, file, arch
and the rule that scheduled each kernel, and marks the warm-up kernel. Exits non-zero when fewer
than 12 kernels could be made.
"""

import json
import sys
import time
from pathlib import Path

import tvm
import tvm.s_tir.dlight as dl
from tvm import te, topi
from tvm.script import tirx as T

MIN_KERNELS = 12


def te_func(tensors, no_tensorize=False):
    func = te.create_prim_func(tensors)
    if no_tensorize:
        func = func.with_attr("dlight.do_not_tensorize", True)
    return func


def elementwise_add_fp16():
    a = te.placeholder((1 << 20,), "float16", name="A")
    b = te.placeholder((1 << 20,), "float16", name="B")
    c = te.compute(a.shape, lambda i: a[i] + b[i], name="C")
    return te_func([a, b, c]), [dl.gpu.Fallback()]


def elementwise_gelu_bf16():
    x = te.placeholder((4096, 1024), "bfloat16", name="X")

    def gelu(i, j):
        v = x[i, j].astype("float32")
        inner = 0.7978845608 * (v + 0.044715 * v * v * v)
        return (0.5 * v * (1.0 + te.tanh(inner))).astype("bfloat16")

    y = te.compute(x.shape, gelu, name="Y")
    return te_func([x, y]), [dl.gpu.Fallback()]


def elementwise_mul_bf16():
    a = te.placeholder((1 << 20,), "bfloat16", name="A")
    b = te.placeholder((1 << 20,), "bfloat16", name="B")
    c = te.compute(a.shape, lambda i: a[i] * b[i], name="C")
    return te_func([a, b, c]), [dl.gpu.Fallback()]


def bias_relu_fp16():
    x = te.placeholder((2048, 4096), "float16", name="X")
    bias = te.placeholder((4096,), "float16", name="bias")
    y = te.compute(
        x.shape, lambda i, j: te.max(x[i, j] + bias[j], tvm.tirx.const(0, "float16")), name="Y"
    )
    return te_func([x, bias, y]), [dl.gpu.Fallback()]


def sigmoid_cast_fp32_fp16():
    x = te.placeholder((1 << 20,), "float32", name="X")
    y = te.compute(x.shape, lambda i: te.sigmoid(x[i]).astype("float16"), name="Y")
    return te_func([x, y]), [dl.gpu.Fallback()]


def row_sum_fp32():
    x = te.placeholder((1024, 4096), "float32", name="X")
    k = te.reduce_axis((0, 4096), name="k")
    y = te.compute((1024,), lambda i: te.sum(x[i, k], axis=k), name="Y")
    return te_func([x, y]), [dl.gpu.Reduction(), dl.gpu.GeneralReduction()]


def row_sum_squares_fp16():
    x = te.placeholder((1024, 8192), "float16", name="X")
    k = te.reduce_axis((0, 8192), name="k")

    def squares(i):
        return x[i, k].astype("float32") * x[i, k].astype("float32")

    y = te.compute((1024,), lambda i: te.sum(squares(i), axis=k), name="Y")
    return te_func([x, y]), [dl.gpu.Reduction()]


def column_sum_fp32():
    x = te.placeholder((8192, 1024), "float32", name="X")
    k = te.reduce_axis((0, 8192), name="k")
    y = te.compute((1024,), lambda j: te.sum(x[k, j], axis=k), name="Y")
    return te_func([x, y]), [dl.gpu.Reduction()]


def softmax_fp16():
    x = te.placeholder((256, 4096), "float16", name="X")
    return te_func([x, topi.nn.softmax(x, axis=-1)]), [dl.gpu.GeneralReduction()]


def layer_norm_fp16():
    x = te.placeholder((512, 4096), "float16", name="X")
    gamma = te.placeholder((4096,), "float16", name="gamma")
    beta = te.placeholder((4096,), "float16", name="beta")
    y = topi.nn.layer_norm(x, gamma, beta, axis=[1], epsilon=1e-5)
    return te_func([x, gamma, beta, y]), [dl.gpu.GeneralReduction()]


def rms_norm_fp16():
    x = te.placeholder((512, 4096), "float16", name="X")
    w = te.placeholder((4096,), "float16", name="W")
    y = topi.nn.rms_norm(x, w, axis=[1], epsilon=1e-5)
    return te_func([x, w, y]), [dl.gpu.GeneralReduction()]  # dl.gpu.RMSNorm() fails in 0.27


def matmul(dtype, acc, m, n, k):
    a = te.placeholder((m, k), dtype, name="A")
    b = te.placeholder((k, n), dtype, name="B")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute(
        (m, n), lambda i, j: te.sum(a[i, r].astype(acc) * b[r, j].astype(acc), axis=r), name="C"
    )
    return te_func([a, b, c], no_tensorize=True), [dl.gpu.Matmul()]


def batch_matmul_nt_fp16():
    a = te.placeholder((8, 512, 128), "float16", name="Q")
    b = te.placeholder((8, 512, 128), "float16", name="K")
    r = te.reduce_axis((0, 128), name="d")
    c = te.compute(
        (8, 512, 512),
        lambda h, i, j: te.sum(a[h, i, r].astype("float32") * b[h, j, r].astype("float32"), axis=r),
        name="S",
    )
    return te_func([a, b, c], no_tensorize=True), [dl.gpu.Matmul()]


def gemv_fp16():
    # K = 1024: for K = 4096 dlight's GEMV asks for 128 KiB of static shared memory (ptxas refuses).
    w = te.placeholder((4096, 1024), "float16", name="W")
    x = te.placeholder((1024,), "float16", name="x")
    k = te.reduce_axis((0, 1024), name="k")
    y = te.compute((4096,), lambda i: te.sum(w[i, k] * x[k], axis=k), name="y")
    return te_func([w, x, y]), [dl.gpu.GEMV()]


def transpose_fp16():
    x = te.placeholder((2048, 1024), "float16", name="X")
    y = te.compute((1024, 2048), lambda i, j: x[j, i], name="Y")
    return te_func([x, y]), [dl.gpu.Transpose(), dl.gpu.Fallback()]


def mma_m16n8k16_fp16():
    """A warp per 16x8 tile of C = A B^T with PTX mma.sync (TVM's ptx_legacy.mma intrinsic)."""
    m, n, k = 1024, 1024, 1024

    # fmt: off
    @T.prim_func
    def main(A: T.Buffer((m, k), "float16"), B: T.Buffer((n, k), "float16"),
             C: T.Buffer((m, n), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        bx = T.launch_thread("blockIdx.x", n // 8)
        by = T.launch_thread("blockIdx.y", m // 16)
        tx = T.launch_thread("threadIdx.x", 32)
        a_local = T.decl_buffer([8], "float16", scope="local")
        b_local = T.decl_buffer([4], "float16", scope="local")
        acc = T.decl_buffer([4], "float32", scope="local")
        for i in range(4):
            acc[i] = T.float32(0)
        for ko in range(k // 16):  # the m16n8k16 fragment layouts of PTX's ISA
            for i in range(8):
                a_local[i] = A[by * 16 + tx // 4 + (i // 2) % 2 * 8,
                               ko * 16 + tx % 4 * 2 + i % 2 + i // 4 * 8]
            for i in range(4):
                b_local[i] = B[bx * 8 + tx // 4, ko * 16 + tx % 4 * 2 + i % 2 + i // 2 * 8]
            T.evaluate(T.ptx_legacy.mma("m16n8k16", "row", "col", "fp16", "fp16", "fp32",
                                        a_local.data, 0, b_local.data, 0, acc.data, 0, False,
                                        dtype="float32"))
        for i in range(4):
            C[by * 16 + tx // 4 + i // 2 * 8, bx * 8 + tx % 4 * 2 + i % 2] = acc[i]
    # fmt: on

    return main, None


def wmma_16x16x16_fp16():
    """A warp per 16x16 tile of C = A B with nvcuda::wmma (TVM's tvm_*_matrix_sync intrinsics)."""
    m, n, k = 1024, 1024, 1024

    # fmt: off
    @T.prim_func
    def main(A: T.Buffer((m, k), "float16"), B: T.Buffer((k, n), "float16"),
             C: T.Buffer((m, n), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        bx = T.launch_thread("blockIdx.x", n // 16)
        by = T.launch_thread("blockIdx.y", m // 16)
        T.launch_thread("threadIdx.x", 32)
        a_frag = T.decl_buffer([16, 16], "float16", scope="wmma.matrix_a")
        b_frag = T.decl_buffer([16, 16], "float16", scope="wmma.matrix_b")
        c_frag = T.decl_buffer([16, 16], "float32", scope="wmma.accumulator")
        T.evaluate(T.tvm_fill_fragment(c_frag.data, 16, 16, 16, 0, T.float32(0)))
        for ko in range(k // 16):  # the pointers inline: TVM's fragment analysis needs the calls
            T.evaluate(T.tvm_load_matrix_sync(a_frag.data, 16, 16, 16, 0,
                A.access_ptr("r", offset=by * 16 * k + ko * 16), k, "row_major"))
            T.evaluate(T.tvm_load_matrix_sync(b_frag.data, 16, 16, 16, 0,
                B.access_ptr("r", offset=ko * 16 * n + bx * 16), n, "row_major"))
            T.evaluate(T.tvm_mma_sync(c_frag.data, 0, a_frag.data, 0, b_frag.data, 0,
                                      c_frag.data, 0))
        T.evaluate(T.tvm_store_matrix_sync(c_frag.data, 16, 16, 16, 0,
            C.access_ptr("w", offset=by * 16 * n + bx * 16), n, "row_major"))
    # fmt: on

    return main, None


def warmup_scale_fp32():
    x = te.placeholder((4096,), "float32", name="X")
    y = te.compute(x.shape, lambda i: x[i] * 2.0, name="Y")
    return te_func([x, y]), [dl.gpu.Fallback()]


# (name, builder, archs): every kernel for sm_80; a few also for sm_90 (cheap: no tuning).
# The bench compiles "warmup" first, untimed, to warm each tool up on a kernel it does not measure.
KERNELS = [
    ("warmup", warmup_scale_fp32, ["sm_80"]),
    ("add_fp16", elementwise_add_fp16, ["sm_80", "sm_90"]),
    ("mul_bf16", elementwise_mul_bf16, ["sm_80"]),
    ("gelu_bf16", elementwise_gelu_bf16, ["sm_80"]),
    ("bias_relu_fp16", bias_relu_fp16, ["sm_80"]),
    ("sigmoid_cast_fp32_fp16", sigmoid_cast_fp32_fp16, ["sm_80"]),
    ("row_sum_fp32", row_sum_fp32, ["sm_80"]),
    ("row_sum_squares_fp16", row_sum_squares_fp16, ["sm_80"]),
    ("column_sum_fp32", column_sum_fp32, ["sm_80"]),
    ("softmax_fp16", softmax_fp16, ["sm_80", "sm_90"]),
    ("layer_norm_fp16", layer_norm_fp16, ["sm_80"]),
    ("rms_norm_fp16", rms_norm_fp16, ["sm_80"]),
    ("matmul_fp32", lambda: matmul("float32", "float32", 1024, 1024, 1024), ["sm_80"]),
    (
        "matmul_fp16_acc32",
        lambda: matmul("float16", "float32", 1024, 1024, 1024),
        ["sm_80", "sm_90"],
    ),
    ("batch_matmul_nt_fp16", batch_matmul_nt_fp16, ["sm_80"]),
    ("gemv_fp16", gemv_fp16, ["sm_80"]),
    ("transpose_fp16", transpose_fp16, ["sm_80"]),
    ("mma_m16n8k16_fp16", mma_m16n8k16_fp16, ["sm_80"]),
    ("wmma_16x16x16_fp16", wmma_16x16x16_fp16, ["sm_80"]),
]


def generate(builder, arch):
    """TVM's CUDA source for one kernel, and the dlight rule that scheduled it."""
    func, rules = builder()
    mod = tvm.IRModule({"main": func})
    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    if rules is not None:
        with target:
            mod = dl.ApplyDefaultSchedule(*rules)(mod)
    lib = tvm.compile(mod, target=target)
    source = lib.mod.imports[0].inspect_source()
    rule = "TensorIR" if rules is None else "+".join(type(r).__name__ for r in rules)
    return source, rule


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    index = []
    for name, builder, archs in KERNELS:
        for arch in archs:
            stem = name if arch == "sm_80" else f"{name}_{arch}"
            start = time.perf_counter()
            try:
                source, rule = generate(builder, arch)
            except Exception as e:  # noqa: BLE001 - one kernel TVM cannot make is reported, not fatal
                print(f"corpus: {stem}: TVM could not generate it: {e}", file=sys.stderr)
                continue
            (out / f"{stem}.cu").write_text(source)
            tensor_core = "wmma::" in source or "mma.sync" in source
            entry = {"name": stem, "file": f"{stem}.cu", "arch": arch, "rule": rule}
            index.append(dict(entry, tensor_core=tensor_core, warmup=name == "warmup"))
            print(
                f"corpus: {stem:<28} {arch}  {rule:<32} {len(source):>6} chars"
                f"{'  tensor cores' if tensor_core else ''}  ({time.perf_counter() - start:.1f} s)"
            )
    (out / "corpus.json").write_text(
        json.dumps({"tvm": tvm.__version__, "kernels": index}, indent=1)
    )
    measured = sum(1 for k in index if not k["warmup"])
    print(f"corpus: {measured} kernels (and a warm-up one) from TVM {tvm.__version__} in {out}")
    if measured < MIN_KERNELS or measured == len(index):
        print(f"corpus: fewer than {MIN_KERNELS} kernels, or no warm-up", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
