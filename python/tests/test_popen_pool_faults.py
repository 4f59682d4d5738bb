"""kiln.support.popen_pool against faults from outside the task's own result (issue 27).

- Forked children (os.fork, multiprocessing's "fork" pools) of a process that used a pool make
  and use pools of their own; one inherited from the parent is not the child's to use or kill.
- A task that closes or replaces the worker's answer pipe (fd 4), writes garbage on it, or leaves
  a grandchild holding it, fails alone, promptly, as a crash; a 1 s call beside it completes, and
  the pool shuts down.
- Ctrl-C (SIGINT) interrupts PopenWorker.recv() and join() at once; the worker can be killed
  and used after.
- A task that ends its process (sys.exit, os._exit, KeyboardInterrupt) is a crash the moment it
  happens, however long the process then takes to end, even under a 15 ms timeout.
- A result over the pool's message limit is a clear error raised as the call's exception; the
  worker stays.

Every wait here has a limit, so that a regression fails instead of hanging. Tasks live in
fault_tasks.py and slow_exit_tasks.py, which the workers import.
"""

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback

import pytest

import fault_tasks
import popen_tasks as tasks
import slow_exit_tasks

pytestmark = pytest.mark.usefixtures("workers_import_tests")

# Generous limits for what takes well under a second: the machine may be loaded.
LIMIT_S = 60


def call(worker, fn, *args, timeout=None):
    """send() then recv()."""
    worker.send(fn, args, timeout=timeout)
    return worker.recv()


def within(limit, fn, *args):
    """fn(*args), run on a daemon thread: fails the test when it has not returned within `limit`
    seconds (a hang must fail, not hang the suite)."""
    outcome = {}

    def run():
        try:
            outcome["value"] = fn(*args)
        except BaseException as error:  # pylint: disable=broad-except
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        pytest.fail(f"{getattr(fn, '__qualname__', fn)} was still running after {limit} s: it hung")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def wait_for_child(pid, limit=LIMIT_S):
    """The exit status of forked child `pid`; kills it and fails the test if it runs past
    `limit` seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child {pid} was still running after {limit} s (it hung)")
    return None


# --- fork (item 3) ---

def forked_child_body(kp, inherited_worker, parent_worker_pid, inherited_pool):
    """What the forked child checks; returns its exit status (0: all held)."""
    assert fault_tasks.use_a_pool_here(kp.__name__, -3) == (3, 3)
    # The parent's worker is not this process's child: the inherited PopenWorker starts its own.
    child_worker_pid = call(inherited_worker, tasks.getpid)
    assert child_worker_pid != parent_worker_pid, "the child used its parent's worker"
    inherited_worker.kill()
    # The parent's executor has no dispatcher thread here: a clear error, not a hang.
    with pytest.raises(RuntimeError, match="forked"):
        inherited_pool.submit(tasks.identity, 1)
    inherited_pool.shutdown(wait=True)  # does nothing to the parent's pool
    return 0


def test_a_forked_child_makes_and_uses_pools_of_its_own(kp):
    pool = kp.PopenPoolExecutor(max_workers=1)
    assert pool.submit(tasks.identity, 1).result(timeout=LIMIT_S) == 1
    worker = kp.PopenWorker()
    parent_worker_pid = call(worker, tasks.getpid)
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            status = forked_child_body(kp, worker, parent_worker_pid, pool)
        except BaseException:  # pylint: disable=broad-except
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)  # pylint: disable=protected-access
    assert wait_for_child(pid) == 0, "the forked child failed (its traceback is above)"
    # The child neither killed nor used the parent's worker and pool.
    assert call(worker, tasks.getpid) == parent_worker_pid
    assert pool.submit(tasks.identity, 2).result(timeout=LIMIT_S) == 2
    pool.shutdown(wait=True)
    worker.kill()


def test_a_multiprocessing_fork_pool_task_makes_a_kiln_pool(kp):
    with kp.PopenPoolExecutor(max_workers=1) as pool:  # the parent has used a pool
        assert pool.submit(tasks.identity, 1).result(timeout=LIMIT_S) == 1
    context = multiprocessing.get_context("fork")
    with context.Pool(2) as forked:
        results = [forked.apply_async(fault_tasks.use_a_pool_here, (kp.__name__, -n))
                   for n in (4, 5)]
        try:
            assert [r.get(timeout=LIMIT_S) for r in results] == [(4, 4), (5, 5)]
        except multiprocessing.TimeoutError:
            pytest.fail(f"a forked multiprocessing worker's kiln pool hung for {LIMIT_S} s")


# --- the answer pipe (item 4) ---

BREAKS_ITS_PIPE = {"close": (fault_tasks.close_answer_pipe, (60,)),
                   "dup2": (fault_tasks.dup2_over_answer_pipe, ())}


@pytest.mark.parametrize("fault", ["close", "dup2"])
def test_a_task_that_breaks_its_answer_pipe_fails_alone(kp, fault):
    fn, args = BREAKS_ITS_PIPE[fault]
    pool = kp.PopenPoolExecutor(max_workers=2, timeout=8)
    broken = pool.submit(fn, *args)
    beside = pool.submit(tasks.identity_after, "beside", 1)
    with pytest.raises(ChildProcessError, match="answer pipe"):
        broken.result(timeout=LIMIT_S)
    assert beside.result(timeout=LIMIT_S) == "beside"
    late = pool.submit(tasks.identity_after, "after", 0)  # timeouts still fire, work still runs
    hung = pool.submit(tasks.identity_after, "never", 600)
    assert late.result(timeout=LIMIT_S) == "after"
    with pytest.raises(TimeoutError, match="timed out"):
        hung.result(timeout=LIMIT_S)
    within(LIMIT_S, pool.shutdown, True)


@pytest.mark.parametrize("fault", ["close", "dup2"])
def test_a_popen_worker_whose_task_breaks_its_answer_pipe_raises(kp, fault):
    fn, args = BREAKS_ITS_PIPE[fault]
    worker = kp.PopenWorker()
    worker.send(fn, args, timeout=LIMIT_S * 2)
    with pytest.raises(ChildProcessError, match="answer pipe"):
        within(LIMIT_S, worker.recv)
    assert call(worker, tasks.identity, 6) == 6


def test_garbage_on_the_answer_pipe_is_a_crash(kp):
    worker = kp.PopenWorker()
    worker.send(fault_tasks.garble_answer_pipe)
    with pytest.raises(ChildProcessError, match="it was killed"):
        within(LIMIT_S, worker.recv)
    assert call(worker, tasks.identity, 9) == 9


def test_an_exit_is_seen_while_a_grandchild_holds_the_answer_pipe(kp, tmp_path):
    pid_file = tmp_path / "grandchild"
    pool = kp.PopenPoolExecutor(max_workers=2, timeout=LIMIT_S * 2)
    try:
        crashed = pool.submit(fault_tasks.exit_leaving_grandchild, str(pid_file), 7)
        beside = pool.submit(tasks.identity_after, "beside", 1)
        with pytest.raises(ChildProcessError, match="exited with code 7"):
            crashed.result(timeout=LIMIT_S)
        assert beside.result(timeout=LIMIT_S) == "beside"
    finally:
        pool.shutdown(wait=False)
        if pid_file.exists():  # the grandchild left the worker's group: the test ends it
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


# --- Ctrl-C (item 6) ---

INTERRUPTED = """
import sys, time
import popen_tasks
from kiln.support.popen_pool import PopenWorker
worker = PopenWorker()
worker.send(popen_tasks.sleep_for, (300,))
try:
    print("waiting", flush=True)
    started = time.monotonic()
    worker.{method}()
    print("returned", flush=True)
except KeyboardInterrupt:
    print(f"interrupted after {{time.monotonic() - started:.2f}} s", flush=True)
worker.kill()
worker.send(popen_tasks.identity, (5,))
print("then", worker.recv(), flush=True)
"""


@pytest.mark.parametrize("method", ["recv", "join"])
def test_ctrl_c_interrupts_recv_and_join(kp, method):  # pylint: disable=unused-argument
    child = subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, "-c", textwrap.dedent(INTERRUPTED.format(method=method))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "waiting\n"
        time.sleep(0.5)  # into the wait (a signal before it is raised there too)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        pytest.fail(f"{method}() was not interrupted within {LIMIT_S} s: {out!r} {err!r}")
    assert child.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("interrupted after"), out
    assert float(lines[0].split()[2]) < 20, out  # the task sleeps 300 s
    assert lines[1] == "then 5", out


# --- a task that ends its process (item 7) ---

@pytest.mark.parametrize("how", ["sys.exit", "os._exit", "KeyboardInterrupt"])
def test_a_task_ending_a_slow_to_end_process_is_a_crash_not_a_timeout(kp, how):
    # The worker imports slow_exit_tasks (256 MiB to free at exit) while it unpickles the call,
    # before the 15 ms start: the process takes 50-130 ms to end after the task ends it.
    fn, args = {"sys.exit": (slow_exit_tasks.exit_with, (3,)),
                "os._exit": (slow_exit_tasks.os_exit_with, (3,)),
                "KeyboardInterrupt": (slow_exit_tasks.interrupt, ())}[how]
    code = 1 if how == "KeyboardInterrupt" else 3
    worker = kp.PopenWorker()
    worker.send(fn, args, timeout=0.015)
    with pytest.raises(ChildProcessError, match=f"exited with code {code}"):
        within(LIMIT_S, worker.recv)
    assert call(worker, tasks.identity, 8) == 8
    pool = kp.PopenPoolExecutor(max_workers=1, timeout=0.015)
    with pytest.raises(ChildProcessError, match=f"exited with code {code}"):
        pool.submit(fn, *args).result(timeout=LIMIT_S)
    pool.shutdown(wait=True)


# --- the message limit (item 12) ---

def test_a_result_over_the_message_limit_is_a_clear_error(kp):
    worker = kp.PopenWorker()
    pid = call(worker, tasks.getpid)
    size = kp.MAX_MESSAGE_BYTES  # pickled, a few bytes more
    with pytest.raises(ValueError, match=rf"result .* \d+ bytes .* limit of {size} bytes"):
        call(worker, fault_tasks.big_result, size, timeout=LIMIT_S)
    assert call(worker, tasks.getpid) == pid  # the same worker, still serving
