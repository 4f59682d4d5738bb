"""KILN_TVM=1 with KILN_TVM_TEMPLATE: a process's first `import tvm` prepares, in the background,
a worker template service that imports tvm, so that the first pool of a later process (or of
this one) forks warm workers; a process that finds one being prepared leaves it to that one.

Each test gets a private XDG_RUNTIME_DIR, so its services are its own, and stops them at the end.
"""

import json
import os
import shutil
import site
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

import kiln_site
from _service_helpers import service_pids, services, stop_services

import kiln

pytest.importorskip("tvm")

CALLER = textwrap.dedent("""
    import json, os, sys
    import tvm
    from kiln.support import popen_pool
    import aheadmod
    with popen_pool.PopenPoolExecutor(max_workers=1, timeout=60) as pool:
        answer = pool.submit(aheadmod.task).result()
    print(json.dumps({"answer": answer, "stats": popen_pool.template_stats()}))
""")

MODULE = textwrap.dedent("""
    import os, sys
    def task():
        return {"tvm_loaded": "tvm" in sys.modules, "ppid": os.getppid()}
""")


@pytest.fixture(scope="module", name="kiln_python")
def fixture_kiln_python(tmp_path_factory):
    """An interpreter whose site-packages has kiln as the wheel puts it there: TVM's entry point
    is what installs kiln at `import tvm` in a process of its own."""
    if os.environ.get("KILN_EXPECT_INSTALLED") == "1":
        return sys.executable  # kiln installed from its wheel (installed_wheel_tests.py)
    root = tmp_path_factory.mktemp("kiln-site")
    paths = [os.path.dirname(p) for p in kiln.__path__] + site.getsitepackages()
    return kiln_site.make_venv(str(root / "venv"), paths)


@pytest.fixture(name="place")
def fixture_place(tmp_path, kiln_python):
    """A private runtime directory (short: a socket's path must fit sockaddr_un), the task's
    module on PYTHONPATH, and an environment asking for kiln in TVM and the template ahead."""
    runtime = tempfile.mkdtemp(prefix="ka", dir="/tmp")
    modules = tmp_path / "mods"
    modules.mkdir()
    (modules / "aheadmod.py").write_text(MODULE)
    env = dict(os.environ, XDG_RUNTIME_DIR=runtime, KILN_TVM="1", KILN_TVM_TEMPLATE="1",
               KILN_POOL_TEMPLATE_SERVICE="1", KILN_POOL_TEMPLATE_IDLE="60",
               PYTHONPATH=os.pathsep.join([str(modules), os.environ.get("PYTHONPATH", "")]))
    env.pop("KILN_POOL_DEBUG", None)
    yield {"tmp": tmp_path, "env": env, "runtime": runtime, "python": kiln_python}
    stop_services(env)
    shutil.rmtree(runtime, ignore_errors=True)


def run(place, code, env=None):
    done = subprocess.run([place["python"], "-c", code], env=env or place["env"], text=True,
                          capture_output=True, timeout=300, cwd=place["tmp"], check=False)
    assert done.returncode == 0, done.stderr
    return done


def template_processes(runtime):
    """Pids of the template processes whose socket is under `runtime` (their last argument is
    "service:<digest>:<socket>")."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                args = cmdline.read().split(b"\0")
        except OSError:
            continue
        if any(a.startswith(b"service:") and runtime.encode() in a for a in args):
            pids.append(int(entry))
    return pids


def preparing_lock_held(runtime):
    """Whether a `<digest>.preparing` lock under `runtime` is held (a service prepares)."""
    import fcntl  # pylint: disable=import-outside-toplevel

    for root, _, files in os.walk(runtime):
        for name in files:
            if not name.endswith(".preparing"):
                continue
            try:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            finally:
                os.close(fd)
    return False


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.01)


def service_names(env):
    return [int(s["status"].split("names ", 1)[1].split()[0]) for s in services(env)
            if "names " in s["status"]]


def test_first_import_prepares_a_service_that_a_later_pool_forks_from(place):
    first = run(place, "import tvm")
    assert "kiln" not in first.stderr, first.stderr
    wait_for(lambda: service_names(place["env"]) == [1], 240, "the service for tvm is ready")
    later = json.loads(run(place, CALLER).stdout.strip().splitlines()[-1])
    stats = later["stats"]
    assert stats["joined"] == 1 and stats["forks"] >= 1 and stats["fallbacks"] == 0, stats
    # Its worker had tvm imported before any task asked for it: it is the service's child.
    assert later["answer"]["tvm_loaded"], later
    assert later["answer"]["ppid"] in service_pids(place["env"]), later
    # Neither the joining process nor the worker (which has tvm) made another one.
    assert len(services(place["env"])) == 1


def test_a_process_leaves_a_service_being_prepared_to_the_one_preparing_it(place):
    runtime = place["runtime"]
    # The same environment for both (it is part of a template's key), debug output on.
    env = dict(place["env"], KILN_POOL_DEBUG="1")
    first = subprocess.Popen([place["python"], "-c", "import tvm"], env=env,
                             cwd=place["tmp"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    stopped = []
    try:
        wait_for(lambda: preparing_lock_held(runtime), 240, "a service takes its preparing lock")
        # Held where it is (importing tvm), so that the next process surely finds it preparing.
        stopped = template_processes(runtime)
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        assert first.wait(timeout=240) == 0
        assert preparing_lock_held(runtime) and not services(place["env"])
        second = run(place, "import tvm", env=env)
        assert "another process prepares this template service" in second.stderr, second.stderr
        assert sorted(template_processes(runtime)) == sorted(stopped), "a second one started"
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        if first.poll() is None:
            first.kill()
            first.wait()
    wait_for(lambda: service_names(env) == [1], 240, "the first service is ready")


def test_without_kiln_tvm_template_no_service_is_made_ahead(place):
    env = dict(place["env"], KILN_TVM_TEMPLATE="0")
    run(place, "import tvm", env=env)
    time.sleep(2)  # a template made ahead starts before `import tvm` returns
    assert not template_processes(place["runtime"])
    assert not services(env)
