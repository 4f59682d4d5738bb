"""Worker template services (KILN_POOL_TEMPLATE_SERVICE): a template that outlives its process
serves later processes of the same key, user and scope, and never a stale one.

Each test gets a private XDG_RUNTIME_DIR, so its services are its own, and stops them at the end.
Every process here is a fresh interpreter: what is tested is what a later process gets.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

from kiln.support import popen_pool

from _service_helpers import alive, service_pids, services, stop_services

CALLER = textwrap.dedent("""
    import json, os, sys
    from kiln.support import popen_pool
    import servicemod
    with popen_pool.PopenPoolExecutor(max_workers=1, timeout=60) as pool:
        answer = pool.submit(servicemod.task).result()
    print(json.dumps({"answer": answer, "stats": popen_pool.template_stats(),
                      "pid": os.getpid()}))
""")

MODULE = textwrap.dedent("""
    import os
    VALUE = {value!r}
    FROM_ENV = os.environ.get("SERVICE_TEST_VALUE")
    def task():
        import sys
        return {{"value": VALUE, "from_env": FROM_ENV, "pid": os.getpid(),
                 "ppid": os.getppid(), "file": __file__}}
""")


@pytest.fixture(name="place")
def fixture_place(tmp_path):
    """A private runtime directory, a module directory on PYTHONPATH, and the caller script."""
    # Short: a socket's path must fit sockaddr_un (108 bytes), pytest's tmp_path may not.
    runtime = tempfile.mkdtemp(prefix="kt", dir="/tmp")
    modules = tmp_path / "mods"
    modules.mkdir()
    (modules / "servicemod.py").write_text(MODULE.format(value=1))
    (tmp_path / "caller.py").write_text(CALLER)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), KILN_POOL_TEMPLATE_SERVICE="1",
               KILN_POOL_TEMPLATE_IDLE="60",
               PYTHONPATH=os.pathsep.join([str(modules), os.environ.get("PYTHONPATH", "")]))
    env.pop("KILN_POOL_DEBUG", None)
    place = {"tmp": tmp_path, "env": env, "modules": modules, "python": sys.executable}
    yield place
    stop_services(env)
    shutil.rmtree(runtime, ignore_errors=True)


def call(place, python=None, env=None, cwd=None):
    done = subprocess.run([python or place["python"], str(place["tmp"] / "caller.py")],
                          env=env or place["env"], capture_output=True, text=True, timeout=120,
                          cwd=cwd or place["tmp"], check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_later_process_joins(place):
    first = call(place)
    assert first["stats"]["started"] >= 1 and first["stats"]["joined"] == 0
    assert first["answer"]["value"] == 1
    second = call(place)
    assert second["stats"]["joined"] == 1, second["stats"]
    assert second["stats"]["forks"] >= 1 and second["stats"]["fallbacks"] == 0, second["stats"]
    pids = service_pids(place["env"])
    # The worker is the service's child, not the caller's, and not the first caller's either.
    assert second["answer"]["ppid"] in pids
    assert second["answer"]["ppid"] != second["pid"]
    assert second["answer"]["value"] == 1


def test_an_edited_module_gets_a_fresh_template_never_the_stale_one(place):
    call(place)
    # Same size, so that only the content (and the times) differ.
    (place["modules"] / "servicemod.py").write_text(MODULE.format(value=2))
    second = call(place)
    assert second["answer"]["value"] == 2
    assert second["stats"]["joined"] == 0 and second["stats"]["stale"] == 1, second["stats"]
    assert "servicemod.py changed" in second["stats"]["last_stale"]
    third = call(place)  # the fresh one serves from now on
    assert third["stats"]["joined"] == 1 and third["answer"]["value"] == 2


def test_a_module_that_would_now_shadow_the_imported_one_gets_a_fresh_template(place):
    call(place)
    front = place["tmp"] / "front"
    front.mkdir()
    env = dict(place["env"], PYTHONPATH=os.pathsep.join([str(front), place["env"]["PYTHONPATH"]]))
    call(place, env=env)  # another sys.path: another key, a service of its own
    (front / "servicemod.py").write_text(MODULE.format(value=3))
    shadowed = call(place, env=env)
    assert shadowed["answer"]["value"] == 3, shadowed
    assert shadowed["stats"]["joined"] == 0 and shadowed["stats"]["stale"] == 1
    assert str(front) in shadowed["stats"]["last_stale"]


def test_another_environment_or_interpreter_never_joins(place, tmp_path):
    call(place)
    env = dict(place["env"], SERVICE_TEST_VALUE="other")
    other = call(place, env=env)
    assert other["answer"]["from_env"] == "other" and other["stats"]["joined"] == 0
    link = tmp_path / "python-link"
    os.symlink(sys.executable, link)
    by_link = call(place, python=str(link))
    assert by_link["stats"]["joined"] == 0, by_link["stats"]


def test_a_killed_caller_leaves_no_worker(place):
    call(place)  # the service is there
    script = place["tmp"] / "sleeper.py"
    script.write_text(textwrap.dedent("""
        import os, sys, time
        from kiln.support import popen_pool
        import servicemod
        pool = popen_pool.PopenPoolExecutor(max_workers=1, timeout=600)
        worker = pool.submit(servicemod.task).result()
        future = pool.submit(time.sleep, 600)
        print(worker["pid"], flush=True)
        time.sleep(600)
    """))
    caller = subprocess.Popen([sys.executable, str(script)], env=place["env"],
                              stdout=subprocess.PIPE, text=True)
    worker = int(caller.stdout.readline())
    assert alive(worker)
    caller.kill()
    caller.wait()
    deadline = time.monotonic() + 10
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(worker), "the worker outlived its killed caller"


def _hello(path, digest="0" * 64):
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(5)
        s.connect(path)
        s.send(b"hello\n" + digest.encode())
        return s.recv(4096)


def _socket_of(env):
    found = services(env)
    assert found, "no service"
    return found[0]["socket"]


def test_another_user_never_reaches_the_service(place):
    if os.geteuid() != 0:
        pytest.skip("needs root to run a process as another user")
    call(place)
    path = _socket_of(place["env"])
    code = ("import socket, sys\ns = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
            "s.settimeout(5)\ntry:\n    s.connect(sys.argv[1])\n    s.send(b'status')\n"
            "    print(repr(s.recv(4096)))\nexcept OSError as e:\n    print('refused', e)\n")
    run_as = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is missing")
    done = subprocess.run([*run_as, sys.executable, "-c", code, path], capture_output=True,
                          text=True, check=True, timeout=30)
    assert done.stdout.startswith("refused"), done.stdout  # the directory is 0700
    # Even with the directory open to it, the service answers nobody of another user.
    directory = os.path.dirname(path)
    os.chmod(directory, 0o755)
    os.chmod(path, 0o777)
    try:
        done = subprocess.run([*run_as, sys.executable, "-c", code, path], capture_output=True,
                              text=True, check=True, timeout=30)
    finally:
        os.chmod(directory, 0o700)
    assert "status" not in done.stdout and "pid" not in done.stdout, done.stdout


def test_another_namespace_never_reaches_the_service(place):
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is missing")
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a network namespace here: {probe.stderr.decode().strip()}")
    call(place)
    path = _socket_of(place["env"])
    code = ("import socket, sys\ns = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
            "s.settimeout(5)\ns.connect(sys.argv[1])\ntry:\n"
            "    s.send(b'hello\\n' + b'0' * 64)\n    print(s.recv(4096).decode() or 'closed')\n"
            "except OSError as e:\n    print('closed', type(e).__name__)\n")
    done = subprocess.run(["unshare", "--net", sys.executable, "-c", code, path],
                          capture_output=True, text=True, check=True, timeout=30)
    # The service says why and hangs up at once: the words may be lost to the reset.
    assert done.stdout.startswith(("refused\nthe caller runs in another cgroup or namespace",
                                   "closed")), done.stdout
    # And its own services live elsewhere: its scope's directory is another.
    where = ("from kiln import _native; import kiln.support.popen_pool as p; "
             "print(p.template_services())")
    inside = subprocess.run(["unshare", "--net", sys.executable, "-c", where], env=place["env"],
                            capture_output=True, text=True, check=True, timeout=30)
    assert inside.stdout.strip() == "[]", inside.stdout


def test_stop_ends_the_service_and_removes_its_socket(place):
    call(place)
    pids = service_pids(place["env"])
    assert pids
    cli = shutil.which("kiln")
    if cli:  # the program, where it is installed; the listing itself is the same function
        listing = subprocess.run([cli, "templates"], env=place["env"], capture_output=True,
                                 text=True, check=True)
        assert f"pid {pids[0]}" in listing.stdout
    stop_services(place["env"])
    assert not any(alive(p) for p in pids)
    assert services(place["env"]) == []


def test_without_the_service_a_process_keeps_a_template_of_its_own(place):
    env = dict(place["env"], KILN_POOL_TEMPLATE_SERVICE="0")
    call(place, env=env)
    second = call(place, env=env)
    assert second["stats"]["joined"] == 0 and second["answer"]["ppid"] == second["pid"]
    assert services(place["env"]) == []


def test_stats_name_the_service_fields():
    stats = popen_pool.template_stats()
    assert {"joined", "stale", "last_stale"} <= set(stats)
