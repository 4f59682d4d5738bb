"""kiln in every process a TVM workflow starts: install() in the parent, or KILN_TVM=1.

A TVM user's program (tvm_probe_driver.py) starts a MetaSchedule LocalBuilder worker, a
LocalRunner worker, an RPC server, TVM's own PopenWorker and a plain subprocess; each reports
whether its tvm.support functions and its CUDA callback are kiln's. The program runs in a Python
environment where kiln is installed as the wheel installs it (kiln_site.py: this checkout, its
build and the project's venv on the path, and kiln's dist-info declaring its ``tvm.backends``
entry point), so the hook that ``import tvm`` runs is the one users get.
"""

import json
import os
import site
import subprocess
import sys

import pytest

from conftest import TESTS_DIR, tvm_module

import kiln_site

import kiln

KINDS = ("parent", "local_builder_worker", "local_runner_worker", "rpc_server",
         "tvm_popen_worker", "subprocess")
FUNCTIONS = ("create_shared", "tar", "compile_cuda", "tvm_callback_cuda_compile")


@pytest.fixture(scope="module", name="kiln_python")
def fixture_kiln_python(tmp_path_factory):
    """An interpreter whose site-packages has kiln as the wheel puts it there."""
    tvm_module("cc")
    if os.environ.get("KILN_EXPECT_INSTALLED") == "1":
        return sys.executable  # kiln installed from its wheel (installed_wheel_tests.py)
    root = tmp_path_factory.mktemp("kiln-site")
    paths = [os.path.dirname(p) for p in kiln.__path__] + site.getsitepackages()
    return kiln_site.make_venv(str(root / "venv"), paths)


def run_driver(kiln_python, mode, tmp_path, kiln_tvm):
    """Run the driver in `mode`; returns {kind: report}."""
    env = dict(os.environ, KILN_PROBE_DIR=str(tmp_path), PYTHONPATH=TESTS_DIR)
    env.pop("KILN_TVM", None)
    if kiln_tvm:
        env["KILN_TVM"] = "1"
    done = subprocess.run([kiln_python, os.path.join(TESTS_DIR, "tvm_probe_driver.py"), mode],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    reports = {}
    for kind in KINDS:
        path = tmp_path / f"{kind}.json"
        assert path.exists(), f"no report from the {kind}: {done.stderr[-4000:]}"
        reports[kind] = json.loads(path.read_text())
    assert len({report["pid"] for report in reports.values()}) == len(KINDS)  # all distinct
    return reports


def owners(reports):
    return {kind: {name: reports[kind][name] for name in FUNCTIONS} for kind in KINDS}


@pytest.mark.parametrize("mode,kiln_tvm", [("parent", False), ("env", True)])
def test_every_process_runs_kiln(kiln_python, tmp_path, mode, kiln_tvm):
    reports = owners(run_driver(kiln_python, mode, tmp_path, kiln_tvm))
    assert reports == {kind: dict.fromkeys(FUNCTIONS, "kiln") for kind in KINDS}


@pytest.mark.parametrize("mode", ["uninstalled", "none"])
def test_without_kiln_every_process_runs_tvm(kiln_python, tmp_path, mode):
    reports = owners(run_driver(kiln_python, mode, tmp_path, False))
    assert reports == {kind: dict.fromkeys(FUNCTIONS, "tvm") for kind in KINDS}


def test_the_hook_costs_nothing_until_tvm_is_imported(kiln_python):
    """KILN_TVM set or not, an interpreter imports nothing of kiln (nor TVM) until it imports
    tvm; then TVM calls kiln's entry point, which installs kiln only with the variable."""
    started = ("import sys; print(sorted(m for m in sys.modules "
               "if m.split('.')[0] in ('kiln', 'tvm', 'tvm_ffi')))")
    after_tvm = ("import sys, tvm.support.cc as cc; print(cc.create_shared.__module__, "
                 "sorted(m for m in sys.modules if m.split('.')[0] == 'kiln'))")
    env = {k: v for k, v in os.environ.items() if k != "KILN_TVM"}
    for variable in ({}, {"KILN_TVM": "1"}):
        done = subprocess.run([kiln_python, "-c", started], env=dict(env, **variable),
                              check=True, capture_output=True, text=True)
        assert done.stdout.strip() == "[]", (variable, done.stdout)
    unset = subprocess.run([kiln_python, "-c", after_tvm], env=env, check=True,
                           capture_output=True, text=True)
    # The hook's small modules, none that loads kiln's extension (kiln._kiln).
    assert unset.stdout.strip() == ("tvm.support.cc ['kiln', 'kiln._settings', 'kiln._tvm_hook', "
                                    "'kiln._tvm_state']"), unset.stdout
    armed = subprocess.run([kiln_python, "-c", after_tvm], env=dict(env, KILN_TVM="1"),
                           check=True, capture_output=True, text=True)
    assert armed.stdout.startswith("kiln.support.cc ") and "'kiln.tvm'" in armed.stdout, \
        armed.stdout


def test_a_failing_install_does_not_break_import_tvm(kiln_python, tmp_path):
    """kiln that cannot install (its extension missing here) warns and leaves TVM working."""
    shadow = tmp_path / "kiln"
    shadow.mkdir()
    real = os.path.dirname(kiln.__file__)
    for name in ("__init__.py", "_tvm_hook.py", "_tvm_state.py", "tvm.py"):
        (shadow / name).write_text(open(os.path.join(real, name), encoding="utf-8").read())
    (shadow / "support").mkdir()
    (shadow / "support" / "__init__.py").write_text("raise ImportError('no kiln._kiln here')\n")
    env = dict(os.environ, KILN_TVM="1", PYTHONPATH=str(tmp_path))
    done = subprocess.run(
        [kiln_python, "-c", "import tvm.support.cc as cc; print(cc.create_shared.__module__)"],
        env=env, capture_output=True, text=True, check=False, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "tvm.support.cc"
    assert "kiln.tvm.install() failed" in done.stderr and "no kiln._kiln here" in done.stderr
