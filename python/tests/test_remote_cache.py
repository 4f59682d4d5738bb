"""kiln.support.nvcc on a shared remote cache: a kernel `kiln build` compiled on one "machine" (its
own local cache, read-write remote) is a hit for compile_cuda in a Python process of another (an
empty local cache, read-only remote), on a real redis-server the test starts and stops itself."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest
from _cuda_helpers import AXPY, require_cuda
from conftest import require_tool

from kiln._native import program

ARCH = "sm_80"


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers_ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture(name="redis_url")
def fixture_redis_url(tmp_path):
    server = require_tool("redis-server")
    port = _free_port()
    argv = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    argv += ["--dir", str(tmp_path)]
    with open(tmp_path / "redis.log", "wb") as log:
        redis = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while not _answers_ping(port):
            if redis.poll() is not None or time.monotonic() > deadline:
                pytest.fail("redis-server did not start: " + (tmp_path / "redis.log").read_text())
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        redis.terminate()
        redis.wait(timeout=10)


def _stats(cache_dir):
    done = subprocess.run(
        [program(), "cache", "stats"],
        env=dict(os.environ, KILN_CACHE_DIR=str(cache_dir)),
        capture_output=True,
        text=True,
        check=True,
    )
    counters = {}
    for line in done.stdout.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0] in ("local", "remote") and words[2].isdigit():
            counters[f"{words[0]} {words[1]}"] = int(words[2])
    return counters


# The compile in another Python process, as a TVM user's would run: kiln.support.nvcc only.
COMPILE = """
import sys
from kiln.support import nvcc
code = open(sys.argv[1]).read()
sys.stdout.buffer.write(bytes(nvcc.compile_cuda(code, "cubin", arch=sys.argv[2],
                                                compiler=sys.argv[3])))
"""


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_compile_cuda_hits_what_kiln_build_stored(tmp_path, redis_url, compiler):
    require_cuda()
    machine_a, machine_b = tmp_path / "a", tmp_path / "b"
    project = machine_a / "project"
    project.mkdir(parents=True)
    (project / "kiln.json").write_text(
        json.dumps(
            {
                "jobs": [
                    {
                        "name": "axpy",
                        "kind": "cuda",
                        "code": AXPY,
                        "arch": ARCH,
                        "format": "cubin",
                        "backend": compiler,
                    }
                ]
            }
        )
    )
    base = dict(os.environ, KILN_REMOTE_CACHE=redis_url, KILN_SERVER_IDLE="5")
    base.pop("KILN_NO_CACHE", None)
    built = subprocess.run(
        [program(), "build", str(project / "kiln.json"), "--out", str(machine_a / "out")],
        env=dict(base, KILN_CACHE_DIR=str(machine_a / "cache"), KILN_REMOTE_CACHE_MODE="read-write"),
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    cubin = (machine_a / "out" / "axpy.cubin").read_bytes()

    (tmp_path / "kernel.cu").write_text(AXPY)
    machine_b.mkdir()
    got = subprocess.run(
        [sys.executable, "-c", COMPILE, str(tmp_path / "kernel.cu"), ARCH, compiler],
        env=dict(base, KILN_CACHE_DIR=str(machine_b / "cache")),
        cwd=machine_b,
        capture_output=True,
        check=False,
    )
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout == cubin
    counters = _stats(machine_b / "cache")
    assert counters.get("remote hits") == 1, counters
    assert counters.get("remote misses", 0) == 0, counters
