"""Warm worker templates: new workers forked from a process that imported what tasks need.

The rest of the pool's tests run with templates on too (the default); these check what is the
template's own: a fork costs no import, forked workers are this process's children in groups of
their own and behave as started ones (timeouts, crashes, recycling, initializers, death with the
parent), a template learns what tasks import, one that died is rebuilt, and one that cannot fork
safely (a thread running) is never used. Forked workers keep the files the template's modules
opened, draw numpy numbers of their own, and are not held up by a template rebuilding for another
task's slow import.

They are about a process's own template, so they run with KILN_POOL_TEMPLATE_SERVICE=0
(test_popen_pool_service.py tests the services that outlive a process).
"""
# pylint: disable=redefined-outer-name

import ast
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import TESTS_DIR, process_is_dead

import template_tasks as tasks

os.environ["KILN_POOL_TEMPLATE_SERVICE"] = "0"  # read by kiln at each template start


@pytest.fixture(autouse=True)
def warm(kp, workers_import_tests):  # pylint: disable=unused-argument
    """A ready template that has imported slow_import_tasks (half a second to import)."""
    assert kp.warm(["template_tasks", "slow_import_tasks"], timeout=60), kp.template_stats()
    return kp


def test_a_new_pool_forks_its_workers_from_the_template(kp):
    forks = kp.template_stats()["forks"]
    with kp.PopenPoolExecutor(max_workers=2, timeout=30) as pool:
        facts = pool.submit(tasks.facts).result()
        assert pool.submit(__import__("slow_import_tasks").answer).result() == 42
    assert kp.template_stats()["forks"] >= forks + 1
    assert facts["ppid"] == os.getpid()  # this process's child, not the template's
    assert facts["pgid"] == facts["pid"]  # in a group of its own, as started workers are
    # Imported before any task asked for it: the worker paid no import (how long that saves is
    # bench/python_tvm_builder_bench.py's to show).
    assert facts["modules"] == ["slow_import_tasks"]


def test_a_forked_worker_gets_the_environment_of_its_start(kp):
    worker = kp.PopenWorker()
    try:
        worker.send(tasks.facts)
        env = worker.recv()["env"]
    finally:
        worker.kill()
    assert env.get("PYTEST_CURRENT_TEST") == os.environ.get("PYTEST_CURRENT_TEST")
    assert env["PYTHONPATH"] == os.environ["PYTHONPATH"]


def test_forked_workers_time_out_crash_recycle_and_initialize_as_started_ones(kp, tmp_path):
    marks = tmp_path / "initialized"
    forks = kp.template_stats()["forks"]
    with kp.PopenPoolExecutor(max_workers=1, timeout=1, maximum_process_uses=2,
                              initializer=tasks.mark_initialized, initargs=(str(marks),)) as pool:
        with pytest.raises(TimeoutError):
            pool.submit(tasks.sleep_for, 30).result()
        with pytest.raises(ChildProcessError, match="exited with code 7"):
            pool.submit(tasks.exit_now, 7).result()
        pids = [pool.submit(tasks.facts).result()["pid"] for _ in range(4)]
    assert len(set(pids)) == 2  # two uses each
    started = marks.read_text().split()
    assert set(pids) <= {int(pid) for pid in started}  # every start ran the initializer
    assert kp.template_stats()["forks"] >= forks + 4
    for pid in pids:
        assert process_is_dead(pid)


def test_the_template_learns_what_tasks_import(kp):
    with kp.PopenPoolExecutor(max_workers=1) as pool:
        pool.submit(tasks.import_late).result()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        kp.warm(timeout=1)
        with kp.PopenPoolExecutor(max_workers=1) as pool:
            if "late_import_tasks" in pool.submit(_loaded, "late_import_tasks").result():
                return
    pytest.fail(f"no forked worker had late_import_tasks: {kp.template_stats()}")


def _loaded(name):
    return [name] if name in sys.modules else []


def run_script(code, timeout=120):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([TESTS_DIR, os.environ["PYTHONPATH"]]))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def last_stats(done):
    """The template_stats() a script printed on its last line."""
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


def test_a_template_that_died_is_rebuilt():
    done = run_script("""
import os, signal, time, psutil
from kiln.support import popen_pool as kp
import template_tasks as tasks
assert kp.warm(["template_tasks"], timeout=60)
def templates():
    return [p for p in psutil.Process().children() if "--kiln-pool-template" in p.cmdline()]
(template,) = templates()
os.kill(template.pid, signal.SIGKILL)
with kp.PopenPoolExecutor(max_workers=1) as pool:
    assert pool.submit(tasks.facts).result()["ppid"] == os.getpid()
stats = kp.template_stats()
assert stats["lost"] == 1 and "killed by signal 9" in stats["last_reason"], stats
assert kp.warm(timeout=60), kp.template_stats()
assert [t.pid for t in templates()] != [template.pid]
with kp.PopenPoolExecutor(max_workers=1) as pool:
    pool.submit(tasks.facts).result()
print(kp.template_stats())
""")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "'forks': 1" in done.stdout


def test_a_template_with_a_thread_running_is_never_used():
    done = run_script("""
from kiln.support import popen_pool as kp
import template_tasks as tasks
assert not kp.warm(["threaded_import_tasks"], timeout=60)
with kp.PopenPoolExecutor(max_workers=1) as pool:
    assert pool.submit(tasks.thread_count).result() == 1
print(kp.template_stats())
""")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "'forks': 0" in done.stdout
    assert "cannot fork safely: 2 threads run in it" in done.stdout


def test_forked_workers_and_the_template_die_with_their_parent(tmp_path):
    pids = tmp_path / "pids"
    parent = subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, "-c", f"""
import os, time, psutil
from kiln.support import popen_pool as kp
import template_tasks as tasks
assert kp.warm(["template_tasks"], timeout=60)
pool = kp.PopenPoolExecutor(max_workers=2)
workers = {{pool.submit(tasks.facts).result()["pid"] for _ in range(8)}}
template = [p.pid for p in psutil.Process().children() if "--kiln-pool-template" in p.cmdline()]
assert kp.template_stats()["forks"] >= 1
open({str(pids)!r}, "w").write(" ".join(map(str, sorted(workers) + template)))
time.sleep(600)
"""], env=dict(os.environ, PYTHONPATH=os.pathsep.join([TESTS_DIR, os.environ["PYTHONPATH"]])))
    try:
        deadline = time.monotonic() + 120
        while not pids.exists() and time.monotonic() < deadline and parent.poll() is None:
            time.sleep(0.05)
        assert pids.exists(), "the parent never wrote its workers' pids"
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    children = [int(pid) for pid in pids.read_text().split()]
    assert len(children) >= 2
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(process_is_dead(p) for p in children):
        time.sleep(0.05)
    assert all(process_is_dead(p) for p in children)


def test_what_is_asked_for_while_a_template_prepares_is_in_the_next_one():
    # MetaSchedule's LocalBuilder.build asks for tvm.s_tir.tensor_intrin while the template that
    # learned from the sanity check's answer prepares; the build's workers must have it.
    done = run_script("""
from kiln.support import popen_pool as kp
import template_tasks as tasks
kp.warm(["template_tasks", "slow_import_tasks"])  # slow_import_tasks: still preparing below
assert kp.warm(["late_import_tasks"], timeout=60), kp.template_stats()
with kp.PopenPoolExecutor(max_workers=1) as pool:
    print(pool.submit(tasks.facts).result()["modules"])
""")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "['late_import_tasks', 'slow_import_tasks']" in done.stdout, done.stdout


def test_forked_workers_keep_the_files_the_template_s_modules_opened(tmp_path):
    # logging.basicConfig(filename=...) at import: the template's log file and a descriptor of
    # the module's own (os.open) stay what they were in every forked worker, also in workers of
    # a successor template; nothing the tasks log lands in their output or on the answer pipe.
    (tmp_path / "data").write_bytes(b"the data file")
    output = tmp_path / "output"
    done = run_script(f"""
import os
os.environ["KILN_TEST_OPEN_DIR"] = {str(tmp_path)!r}
from kiln.support import popen_pool as kp
import open_at_import_tasks as tasks
assert kp.warm(["open_at_import_tasks"], timeout=60), kp.template_stats()
def run(first, output):
    with kp.PopenPoolExecutor(max_workers=2, maximum_process_uses=2, stdout=output,
                              stderr=output) as pool:
        return [f.result() for f in [pool.submit(tasks.log_line, first + i) for i in range(6)]]
with open({str(output)!r}, "w") as output:
    results = run(0, output)
    assert kp.warm(["late_import_tasks"], timeout=60), kp.template_stats()  # a successor
    results += run(6, output)
for result in results:
    assert result["now"] == result["opened"], result
    assert result["data"] == b"the data file", result
print("workers", len({{result["pid"] for result in results}}))
print(kp.template_stats())
""")
    assert done.returncode == 0, done.stdout + done.stderr
    workers = int(done.stdout.split("workers ")[1].split()[0])
    stats = last_stats(done)
    assert stats["fallbacks"] == 0 and stats["forks"] >= workers >= 6, done.stdout
    assert "frame" not in done.stdout + done.stderr
    logged = (tmp_path / "log").read_text()
    assert sorted(int(line.split()[1]) for line in logged.splitlines()) == list(range(12)), logged
    assert output.read_text() == ""


def test_forked_workers_draw_numpy_numbers_of_their_own():
    # Python's random is reseeded at every fork (its own at-fork hook); numpy's global
    # RandomState must be too, or every worker forked from one template draws the same.
    pytest.importorskip("numpy")
    done = run_script("""
from kiln.support import popen_pool as kp
import template_tasks as tasks
assert kp.warm(["template_tasks", "numpy.random"], timeout=60), kp.template_stats()
with kp.PopenPoolExecutor(max_workers=1, maximum_process_uses=1) as pool:
    draws = dict(pool.submit(tasks.numpy_draw).result() for _ in range(4))
assert len(draws) == 4, draws
assert len(set(draws.values())) == 4, draws
print(kp.template_stats())
""")
    assert done.returncode == 0, done.stdout + done.stderr
    stats = last_stats(done)
    assert stats["fallbacks"] == 0 and stats["forks"] >= 4, done.stdout


def test_a_template_rebuilding_for_a_slow_import_still_serves_other_tasks():
    # A task imports rebuild_import_tasks (3 s): the template learns it and its successor spends
    # 3 s importing it. Meanwhile a worker for a task of a module the ready template has is
    # forked from that one at once; the next worker once the successor is ready comes from it.
    done = run_script("""
import time
from kiln.support import popen_pool as kp
import template_tasks as tasks
assert kp.warm(["template_tasks"], timeout=60), kp.template_stats()
with kp.PopenPoolExecutor(max_workers=1) as pool:
    pool.submit(tasks.import_slowly).result()
started = kp.template_stats()["started"]
begin = time.monotonic()
with kp.PopenPoolExecutor(max_workers=1) as pool:
    facts = pool.submit(tasks.facts).result()
quick = time.monotonic() - begin
stats = kp.template_stats()
assert stats["started"] == started and facts["modules"] == [], (stats, facts)
assert kp.warm(timeout=60), kp.template_stats()
with kp.PopenPoolExecutor(max_workers=1) as pool:
    assert "rebuild_import_tasks" in pool.submit(tasks.facts).result()["modules"]
print("quick task", quick)
print(kp.template_stats())
""")
    assert done.returncode == 0, done.stdout + done.stderr
    quick = float(done.stdout.split("quick task ")[1].split()[0])
    assert quick < 1.5, done.stdout  # the import takes 3 s
    stats = last_stats(done)
    assert stats["fallbacks"] == 0 and stats["forks"] == 3, done.stdout
