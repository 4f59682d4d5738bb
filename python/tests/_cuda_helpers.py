"""What test_nvcc.py and test_tvm_cuda.py share: the CUDA toolkit check, cuobjdump, TVM kernels.

Compiled kernels are compared by what `cuobjdump -sass` lists (the functions of each cubin, and
the arch they are for), from NVIDIA's nvidia-cuda-cuobjdump wheel in the project's venv: kiln's
NVRTC preamble is not TVM's, so their cubins are equal in kernels, not in bytes.
"""

import glob
import os
import re
import subprocess
import tempfile

import pytest

# A kernel both NVRTC and nvcc compile; -DKERNEL=name renames it (an option that shows).
AXPY = """
#ifndef KERNEL
#define KERNEL axpy
#endif
extern "C" __global__ void KERNEL(float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] += a * x[i];
}
"""


def require_cuda():
    """Skip unless kiln finds a CUDA toolkit with nvcc and NVRTC (the toolkit's version)."""
    from kiln.support import nvcc  # pylint: disable=import-outside-toplevel

    try:
        cuda = nvcc.find_cuda_path()
    except RuntimeError as error:
        pytest.skip(f"no CUDA toolkit ({error}); scripts/install-deps.sh installs it")
    if not os.path.isfile(os.path.join(cuda, "bin", "nvcc")):
        pytest.skip(f"no nvcc in {cuda}/bin")
    if not glob.glob(os.path.join(cuda, "lib64", "libnvrtc.so*")):
        pytest.skip(f"no NVRTC in {cuda}/lib64")
    return cuda


def cuobjdump():
    """The cuobjdump of the nvidia-cuda-cuobjdump wheel (else the toolkit's), or skip."""
    try:
        import nvidia  # pylint: disable=import-outside-toplevel

        roots = list(nvidia.__path__)
    except ImportError:
        roots = []
    for root in roots:
        for found in sorted(glob.glob(os.path.join(root, "*", "bin", "cuobjdump"))):
            if os.access(found, os.X_OK):
                return found
    from kiln.support import nvcc  # pylint: disable=import-outside-toplevel

    try:
        toolkit = os.path.join(nvcc.find_cuda_path(), "bin", "cuobjdump")
    except RuntimeError:
        toolkit = ""
    if toolkit and os.access(toolkit, os.X_OK):
        return toolkit
    pytest.skip("no cuobjdump (the nvidia-cuda-cuobjdump wheel: scripts/install-deps.sh)")
    return None


def sass_listing(binary):
    """What `cuobjdump -sass` prints for a cubin or fatbin."""
    with tempfile.NamedTemporaryFile(suffix=".bin") as file:
        file.write(bytes(binary))
        file.flush()
        done = subprocess.run(
            [cuobjdump(), "-sass", file.name], capture_output=True, text=True, check=False
        )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def sass_by_function(binary):
    """{kernel: its machine code} of a cubin: each instruction with its encoding, without the
    addresses (they move with a function's place) and with white space made single."""
    functions = {}
    lines = None
    for line in sass_listing(binary).splitlines():
        found = re.search(r"Function : (\S+)", line)
        if found:
            lines = functions.setdefault(found.group(1), [])
        elif lines is not None:
            words = [w for w in line.split() if not re.fullmatch(r"/\*[0-9a-f]{4}\*/", w)]
            if words:
                lines.append(" ".join(words))
    return functions


def sass(binary):
    """(sorted kernel names, sorted archs) that `cuobjdump -sass` lists for a cubin or fatbin."""
    listing = sass_listing(binary)
    functions = sorted(set(re.findall(r"Function : (\S+)", listing)))
    archs = sorted(set(re.findall(r"code for (sm_\w+)", listing)))
    return functions, archs


def tvm_cuda_source(tvm, arch="sm_80"):
    """The CUDA source TVM 0.27 generates for a small TE kernel (Y = 2 X, scheduled by dlight)."""
    from tvm import te  # pylint: disable=import-outside-toplevel
    from tvm.s_tir import dlight  # pylint: disable=import-outside-toplevel

    x = te.placeholder((4096,), "float32", name="X")
    y = te.compute(x.shape, lambda i: x[i] * 2.0, name="Y")
    mod = tvm.IRModule({"main": te.create_prim_func([x, y])})
    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    with target:
        mod = dlight.ApplyDefaultSchedule(dlight.gpu.Fallback())(mod)
    executable = tvm.compile(mod, target=target)
    return executable, executable.mod.imports[0].inspect_source()
