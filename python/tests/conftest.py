"""Shared fixtures of kiln's Python tests.

The parity tests call apache-tvm 0.27's tvm.support (the reference, installed into the project's
venv by scripts/install-deps.sh) and kiln.support side by side. A test that needs a tool or
package this machine lacks is skipped, saying which (pytest -rs prints the reasons).
"""

import importlib
import os
import shutil

import pytest


def require_tool(name):
    """The full path of `name` on PATH, or skip the test saying it is missing."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not found on PATH (scripts/install-deps.sh installs it)")
    return path


def tvm_module(name):
    """tvm.support.<name> (the reference), or skip when apache-tvm cannot be imported."""
    try:
        return importlib.import_module(f"tvm.support.{name}")
    except ImportError as error:
        pytest.skip(f"apache-tvm not importable ({error}); scripts/install-deps.sh installs it")


def same_error(call_tvm, call_kiln):
    """Run both calls; assert they raise the same exception type (or both succeed)."""
    outcomes = []
    for call in (call_tvm, call_kiln):
        try:
            call()
            outcomes.append(None)
        except Exception as error:  # pylint: disable=broad-except
            outcomes.append(type(error))
    assert outcomes[0] == outcomes[1], f"tvm raised {outcomes[0]}, kiln raised {outcomes[1]}"
    return outcomes[1]


@pytest.fixture(autouse=True, scope="session")
def kiln_is_the_installed_one():
    """With KILN_EXPECT_INSTALLED=1 (installed_wheel_tests.py), every test must be testing the
    kiln installed from a wheel into site-packages, never this checkout's sources."""
    if os.environ.get("KILN_EXPECT_INSTALLED") == "1":
        import kiln  # pylint: disable=import-outside-toplevel

        where = os.path.dirname(os.path.abspath(kiln.__file__))
        assert os.sep + "site-packages" + os.sep in where + os.sep, f"kiln imported from {where}"
        assert all("site-packages" in entry for entry in kiln.__path__), kiln.__path__


@pytest.fixture
def workdir(tmp_path):
    """A fresh directory for one test's files."""
    return tmp_path


TESTS_DIR = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def workers_import_tests():
    """Put this directory on the PYTHONPATH that pool workers and child processes inherit, so
    that they import the task modules next to the tests (popen_tasks, tvm_builder_tasks)."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (TESTS_DIR, saved) if p)
    yield
    if saved is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = saved


@pytest.fixture(scope="module")
def kp():
    """kiln.support.popen_pool, or skip saying why it is missing."""
    try:
        from kiln.support import popen_pool  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        pytest.skip(f"kiln.support.popen_pool not importable ({error}); it needs the extension "
                    "kiln._kiln (PYTHONPATH=python:<build>/python)")
    return popen_pool


def process_is_dead(pid):
    """Whether pid is not running: gone, or a zombie (this container's PID 1 may not reap the
    orphans of a killed parent, and a zombie runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")
