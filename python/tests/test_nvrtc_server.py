"""kiln's NVRTC compile server from Python, where it cannot be used or is the wrong one.

Each compile runs in a fresh Python (the server and its fallbacks are decided once per process),
compiling one kernel with NVRTC: a cache directory that cannot be opened, a KILN_SERVICE_PROGRAM
that is missing, not executable or hangs, and two different kiln programs. Each must compile,
in the server or in the calling process, and promptly.
"""

import os
import shutil
import subprocess
import sys

import pytest
from _cuda_helpers import AXPY, require_cuda

from kiln._native import program

PROBE = """
import sys
from kiln.support import nvcc
for _ in range(2):
    cubin = nvcc.compile_cuda(sys.argv[1], arch="sm_80")
    assert cubin[:4] == b"\\x7fELF", cubin[:4]
print("compiled")
"""

# Ends a probe that would hang, or that waits as long as a process used to for a hanging server
# start (30 s): the compiles themselves take a few seconds.
LIMIT = 25


@pytest.fixture(autouse=True)
def cuda():
    return require_cuda()


def probe(tmp_path, limit=LIMIT, **env):
    """Runs PROBE (two compiles of AXPY) in a fresh Python, KILN_SERVER_DEBUG=1, the kernel cache
    off (so that each compile runs NVRTC), with `env` on top of this process's environment
    (None: unset)."""
    full = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache"), KILN_SERVER_DEBUG="1")
    full.update(KILN_SERVER_IDLE="10", KILN_NO_CACHE="1")
    for name, value in env.items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    return subprocess.run(
        [sys.executable, "-c", PROBE, AXPY],
        env=full,
        capture_output=True,
        text=True,
        timeout=limit,
        check=False,
    )


@pytest.mark.parametrize("home", [None, "/proc/nonexistent", "/proc"])
def test_no_usable_cache_directory_compiles_uncached_with_one_warning(tmp_path, home):
    """No HOME, one that does not exist and cannot be made (a service account's HOME=/nonexistent;
    under /proc so that root cannot make it either), or one where nothing can be made: NVRTC
    compiles all the same, uncached, and Python warns once."""
    done = probe(tmp_path, HOME=home, KILN_CACHE_DIR=None, XDG_CACHE_HOME=None, KILN_NO_CACHE=None)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["compiled"]
    assert done.stderr.count("RuntimeWarning: kiln's kernel cache is not used") == 1, done.stderr


def test_a_missing_or_unrunnable_service_program_compiles_in_process(tmp_path):
    """KILN_SERVICE_PROGRAM inherited from another venv, now gone, or naming a file that is not
    executable: the compiles run in the calling process, and KILN_SERVER_DEBUG says why."""
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\n")
    plain.chmod(0o644)
    for named, why in [("/nonexistent/kiln", "No such file"), (str(plain), "not an executable")]:
        done = probe(tmp_path, KILN_SERVICE_PROGRAM=named)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["compiled"]
        assert f"KILN_SERVICE_PROGRAM names {named}" in done.stderr, done.stderr
        assert why in done.stderr, done.stderr


def test_a_hanging_service_program_is_waited_for_once(tmp_path):
    """A KILN_SERVICE_PROGRAM that never starts a server costs the first process one wait (10 s;
    it used to cost every process 30 s); the next one compiles in process at once, since the
    failed start is remembered in the servers directory."""
    sleeper = tmp_path / "sleeper"
    sleeper.write_text("#!/bin/sh\nexec sleep 60\n")
    sleeper.chmod(0o755)
    first = probe(tmp_path, limit=120, KILN_SERVICE_PROGRAM=str(sleeper))
    assert first.returncode == 0, first.stderr
    assert "the server did not start (timed out" in first.stderr, first.stderr
    second = probe(tmp_path, KILN_SERVICE_PROGRAM=str(sleeper))
    assert second.returncode == 0, second.stderr
    assert "a start of the server failed less than 60 s ago" in second.stderr, second.stderr


def test_each_kiln_program_gets_a_server_of_its_own(tmp_path):
    """Two venvs' kiln programs (copies that differ in content), and a program upgraded in place,
    each get their own server: the server's id is the started program's, not Python's."""
    kiln = program()
    assert kiln is not None, "the package has no kiln program (kiln/bin/kiln)"
    copies = []
    for name in ("venv-a", "venv-b"):
        (tmp_path / name).mkdir()
        copies.append(tmp_path / name / "kiln")
        shutil.copyfile(os.path.realpath(kiln), copies[-1])
        copies[-1].chmod(0o755)
    with open(copies[1], "ab") as extra:
        extra.write(b"\0another build")

    def sockets():
        return sorted(p.name for p in (tmp_path / "cache" / "servers").glob("nvrtc-*.sock"))

    seen = []
    for copy in copies:
        done = probe(tmp_path, KILN_SERVICE_PROGRAM=str(copy))
        assert done.returncode == 0, done.stderr
        assert "no NVRTC compile server" not in done.stderr, done.stderr
        seen.append(sockets())
    assert len(seen[0]) == 1 and len(seen[1]) == 2, seen
    # pip install -U: another binary on the same path (written beside it, renamed over it).
    upgraded = tmp_path / "venv-a" / "kiln.new"
    shutil.copyfile(copies[0], upgraded)
    with open(upgraded, "ab") as upgrade:
        upgrade.write(b"\0upgraded")
    upgraded.chmod(0o755)
    os.replace(upgraded, copies[0])
    done = probe(tmp_path, KILN_SERVICE_PROGRAM=str(copies[0]))
    assert done.returncode == 0, done.stderr
    assert len(sockets()) == 3, sockets()
