"""One kernel cache from Python: a kernel kiln.support.nvcc.compile_cuda compiled (as TVM's
tvm_callback_cuda_compile does, inline code naming no file) is a kiln-cache hit for a
`kiln build` job of the same code, arch, format and options, and the other way round, with NVRTC
and with nvcc; another option is a miss both ways.

Each side runs as a process of its own against one KILN_CACHE_DIR, as a user's TVM run and a
later `kiln build` do, in one directory (the working directory is part of a key: relative include
directories are found from it); the cache's own counters (`kiln cache stats`) say whether it
was a hit.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from _cuda_helpers import require_cuda

import kiln.__main__

KERNEL = """
#ifndef SCALE
#define SCALE 2.0f
#endif
extern "C" __global__ void kiln_py_shared(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = SCALE * x[i] + y[i];
}
"""

COMPILE = """
import sys
from kiln.support import nvcc
code, out, compiler, options = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
cubin = nvcc.compile_cuda(code, target_format="cubin", arch="sm_80", options=options or None,
                          compiler=compiler)
open(out, "wb").write(bytes(cubin))
"""


@pytest.fixture(name="place")
def fixture_place(tmp_path):
    require_cuda()
    program = kiln.__main__.program()
    if program is None:
        pytest.skip("no kiln program beside the package (build the kiln_python target)")
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache"), KILN_BASE_DIR=str(tmp_path))
    env.pop("KILN_NO_CACHE", None)
    return {"tmp": tmp_path, "env": env, "kiln": program}


def compile_cuda(place, compiler, out, options=()):
    subprocess.run([sys.executable, "-c", COMPILE, KERNEL, str(out), compiler, *options],
                   env=place["env"], check=True, timeout=300, cwd=place["tmp"])
    return out.read_bytes()


def build(place, backend, options=()):
    """`kiln build` of one inline CUDA job; its report."""
    job = {"name": "k", "kind": "cuda", "arch": "sm_80", "format": "cubin", "backend": backend,
           "options": list(options), "code": KERNEL}
    manifest = place["tmp"] / "kiln.json"
    manifest.write_text(json.dumps({"jobs": [job]}))
    report = place["tmp"] / "report.json"
    done = subprocess.run([place["kiln"], "build", str(manifest), "--out",
                           str(place["tmp"] / "out"), "--json", str(report)],
                          env=place["env"], capture_output=True, text=True, timeout=300,
                          cwd=place["tmp"], check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = json.loads(report.read_text())["jobs"]
    return next(j for j in jobs if j["name"] == "k")


def local_hits(place):
    done = subprocess.run([place["kiln"], "cache", "stats"], env=place["env"], check=True,
                          capture_output=True, text=True, timeout=60)
    return int(re.search(r"local hits\s+(\d+)", done.stdout).group(1))


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_what_compile_cuda_compiled_is_a_hit_for_kiln_build(place, compiler):
    cubin = compile_cuda(place, compiler, place["tmp"] / "py.cubin")
    job = build(place, compiler)
    assert job["status"] == "cached" and job["cached"] is True, job
    with open(job["output"], "rb") as output:
        assert output.read() == cubin
    changed = build(place, compiler, ["-DSCALE=3.0f"])
    assert changed["status"] == "done" and changed["cached"] is False, changed


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_what_kiln_build_compiled_is_a_hit_for_compile_cuda(place, compiler):
    job = build(place, compiler)
    assert job["status"] == "done", job
    hits = local_hits(place)
    cubin = compile_cuda(place, compiler, place["tmp"] / "py.cubin")
    assert local_hits(place) == hits + 1, "compile_cuda compiled what kiln build had stored"
    with open(job["output"], "rb") as output:
        assert output.read() == cubin
    compile_cuda(place, compiler, place["tmp"] / "other.cubin", ["-DSCALE=3.0f"])
    assert local_hits(place) == hits + 1, "another option, the same key"
