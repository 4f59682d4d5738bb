"""Runs kiln's parity and TVM tests against a repaired wheel installed into a fresh venv, not
against the build tree: what a user who ran `pip install kiln-...whl` gets.

    installed_wheel_tests.py --wheels DIST --venv DIR --reference-venv .deps/venv [pytest args...]

The venv is made with the reference venv's interpreter; the wheel for that interpreter's CPython
is installed into it (no index, no dependencies), and a .pth file appends the reference venv's
site-packages (apache-tvm 0.27, pytest, cloudpickle...) after the venv's own, so that `kiln` can
only come from the wheel. The tests run from outside the checkout with KILN_EXPECT_INSTALLED=1,
with which conftest.py fails any test whose kiln is not the installed one.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))

# The parity tests of every kiln.support module, and the TVM tests that reach TVM's own calls and
# every process a TVM workflow starts (the entry point only an installed wheel declares).
DEFAULT_TESTS = [
    "test_cc.py", "test_clang.py", "test_emcc.py", "test_libinfo.py", "test_ndk.py",
    "test_nvcc.py", "test_rocm.py", "test_tar.py", "test_utils.py", "test_xcode.py",
    "test_popen_pool.py", "test_tvm_install.py", "test_tvm_export.py",
    "test_tvm_every_process.py",
]


def run(argv, **kwargs):
    print("+ " + " ".join(argv), flush=True)
    return subprocess.run(argv, check=False, **kwargs).returncode


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--wheels", required=True)
    parser.add_argument("--venv", required=True)
    parser.add_argument("--reference-venv", required=True)
    args, pytest_args = parser.parse_known_args()
    reference_python = os.path.join(args.reference_venv, "bin", "python")
    query = "import sys, sysconfig; print(f'cp{sys.version_info[0]}{sys.version_info[1]}'); " \
            "print(sysconfig.get_paths()['purelib'])"
    tag, reference_site = subprocess.run([reference_python, "-c", query], check=True,
                                         capture_output=True, text=True).stdout.split()
    wheels = glob.glob(os.path.join(args.wheels, f"kiln-*-{tag}-{tag}-*.whl"))
    if len(wheels) != 1:
        print(f"installed_wheel_tests: expected one {tag} wheel in {args.wheels}, found {wheels}")
        return 1
    shutil.rmtree(args.venv, ignore_errors=True)
    base = subprocess.run([reference_python, "-c", "import sys; print(sys._base_executable)"],
                          check=True, capture_output=True, text=True).stdout.strip()
    if run([base, "-m", "venv", args.venv]) != 0:
        return 1
    python = os.path.join(args.venv, "bin", "python")
    if run([python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
            "--disable-pip-version-check", wheels[0]]) != 0:
        return 1
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "zz_kiln_reference_venv.pth"), "w", encoding="utf-8") as file:
        file.write(reference_site + "\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "KILN_SERVICE_PROGRAM", "KILN_TVM")}
    env.update(KILN_EXPECT_INSTALLED="1", PYTHONDONTWRITEBYTECODE="1",
               PATH=os.pathsep.join([os.path.join(args.venv, "bin"), env.get("PATH", "")]))
    tests = [os.path.join(HERE, name) for name in DEFAULT_TESTS]
    return run([python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                "--rootdir", HERE, *pytest_args, *tests], env=env, cwd=args.venv)


if __name__ == "__main__":
    sys.exit(main())
