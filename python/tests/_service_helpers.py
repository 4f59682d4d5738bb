"""What the template service tests share (test_popen_pool_service.py, test_tvm_template_ahead.py):
the services of an environment's runtime directory, listed or stopped by a fresh interpreter,
and whether a process is alive."""

import json
import os
import signal
import subprocess
import sys
import time


def services(env, stop=False):
    code = (f"import json; from kiln.support import popen_pool; "
            f"print(json.dumps(popen_pool.template_services({stop})))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True, timeout=60)
    return json.loads(done.stdout)


def service_pids(env):
    return [int(s["status"].split("pid ", 1)[1].split()[0]) for s in services(env)
            if s["status"].startswith("pid ")]


def stop_services(env):
    pids = service_pids(env)
    services(env, stop=True)
    deadline = time.monotonic() + 20
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if alive(p)]
        time.sleep(0.05)
    for pid in pids:  # pragma: no cover - a service that did not stop fails the test below
        os.kill(pid, signal.SIGKILL)
    assert not pids, f"template services {pids} did not stop when told to"


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
