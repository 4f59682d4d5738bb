"""Shared fixtures of kiln's Python tests.

The parity tests call apache-tvm 0.27's tvm.support (the reference, installed into the project's
venv by scripts/install-deps.sh) and kiln.support side by side. A test that needs a tool or
package this machine lacks is skipped, saying which (pytest -rs prints the reasons).
"""

import importlib
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


@pytest.fixture
def workdir(tmp_path):
    """A fresh directory for one test's files."""
    return tmp_path
