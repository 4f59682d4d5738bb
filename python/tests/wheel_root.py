"""Installs kiln's repaired wheels in a machine with none of kiln's build dependencies, and runs
the smoke suite (wheel_smoke.py) there, once per wheel.

The machine is .deps/wheel-root: Debian 12 made by debootstrap (minbase, python3, python3-venv;
scripts/install-deps.sh --tests), entered with chroot in a private mount namespace: no compiler,
no binutils, no CUDA, no libfmt, libarchive or libxxhash. The wheels' interpreters are the
root's own python3 for its version (3.11) and, for the others, the CPython installations the
wheels were built with (pyenv's), mounted read-only at their own paths; they need only what the
root's python3 needs. Nothing in the root is changed: each run works in a fresh directory
mounted at /work, /tmp is a tmpfs.

    wheel_root.py --root DIR --wheels DIST --work DIR [--tvm-site SITE] [--interpreter cp310=PREFIX]...

With --tvm-site (the site-packages of the project's venv: apache-tvm 0.27 for CPython 3.11),
wheel_smoke.py first records tvm.support's answers in the same root, and every wheel's finders
are compared with them. Needs root (mount namespaces, chroot). Exit 0 when every wheel passed;
77 (skipped, saying why) without the root or root privileges, 1 then with KILN_REQUIRE_WHEELS=1.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"


def wheel_tag(path):
    """cp311 of kiln-0.1.0-cp311-cp311-manylinux_2_34_x86_64.whl."""
    return os.path.basename(path).split("-")[2]


def pyenv_prefix(tag):
    """The installation prefix of CPython <tag> under pyenv, or None."""
    minor = tag[3:]
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for prefix in sorted(glob.glob(os.path.join(root, "versions", f"3.{minor}.*")), reverse=True):
        if os.access(os.path.join(prefix, "bin", f"python3.{minor}"), os.X_OK):
            return prefix
    return None


def root_python_tag(root):
    found = glob.glob(os.path.join(root, "usr", "bin", "python3.[0-9]*"))
    names = [os.path.basename(p) for p in found if os.path.basename(p)[7:].isdigit()]
    return "cp3" + names[0][len("python3."):] if names else None


def run(argv, **kwargs):
    print("+ " + " ".join(argv), flush=True)
    return subprocess.run(argv, check=False, **kwargs)


# ---- inside the namespace ----

def mount(*argv):
    subprocess.run(["mount", *argv], check=True)


def enter(plan):
    """Runs in a fresh mount namespace as root: mounts, chroot, then each step of the plan."""
    root = plan["root"]
    mount("--make-rprivate", "/")
    mount("-t", "proc", "proc", os.path.join(root, "proc"))
    mount("--rbind", "/dev", os.path.join(root, "dev"))
    mount("-t", "tmpfs", "tmpfs", os.path.join(root, "tmp"))
    os.makedirs(os.path.join(root, "work"), exist_ok=True)
    mount("--bind", plan["work"], os.path.join(root, "work"))
    for source, target in plan["read_only"]:
        inside = os.path.join(root, target.lstrip("/"))
        os.makedirs(inside, exist_ok=True)
        mount("--bind", source, inside)
        mount("-o", "remount,bind,ro", inside)
    os.chroot(root)
    os.chdir("/work")
    failures = 0
    for step in plan["steps"]:
        env = {"PATH": step.get("path", CLEAN_PATH), "HOME": "/work/home", "LANG": "C.UTF-8",
               "TMPDIR": "/tmp", **step.get("env", {})}
        os.makedirs("/work/home", exist_ok=True)
        started = time.monotonic()
        result = run(step["argv"], env=env)
        print(f"  [{step['name']}: exit {result.returncode}, {time.monotonic() - started:.1f} s]",
              flush=True)
        if result.returncode != 0:
            failures += 1
            if step.get("required"):
                break
    return 1 if failures else 0


# ---- outside ----

def plan_for(args):
    root = os.path.abspath(args.root)
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "wheels"))
    shutil.copy(os.path.join(HERE, "wheel_smoke.py"), work)
    wheels = sorted(glob.glob(os.path.join(args.wheels, "*.whl")))
    if not wheels:
        raise SystemExit(f"wheel_root: no wheels in {args.wheels}")
    own = root_python_tag(root)
    explicit = dict(spec.split("=", 1) for spec in args.interpreter)
    read_only, steps = [], []
    reference = []
    if args.tvm_site:
        read_only.append((os.path.abspath(args.tvm_site), "/tvm-site"))
        steps.append({"name": "tvm.support's answers in the root", "required": True,
                      "argv": ["/usr/bin/python3", "/work/wheel_smoke.py", "reference",
                               "/work/reference.json"],
                      "env": {"PYTHONPATH": "/tvm-site"}})
        reference = ["--reference", "/work/reference.json"]
    for wheel in wheels:
        tag = wheel_tag(wheel)
        shutil.copy(wheel, os.path.join(work, "wheels"))
        if tag == own:
            python = f"/usr/bin/python3.{tag[3:]}"
        else:
            prefix = explicit.get(tag) or pyenv_prefix(tag)
            if prefix is None:
                raise SystemExit(f"wheel_root: no CPython {tag} to install {wheel} with "
                                 f"(--interpreter {tag}=PREFIX, or pyenv)")
            read_only.append((prefix, prefix))
            python = os.path.join(prefix, "bin", f"python3.{tag[3:]}")
        venv = f"/work/venv-{tag}"
        steps += [
            {"name": f"{tag}: venv", "argv": [python, "-m", "venv", venv]},
            {"name": f"{tag}: pip install the wheel",
             "argv": [f"{venv}/bin/python", "-m", "pip", "install", "--quiet", "--no-index",
                      "--no-deps", "--disable-pip-version-check",
                      f"/work/wheels/{os.path.basename(wheel)}"]},
            {"name": f"{tag}: smoke suite",
             "argv": [f"{venv}/bin/python", "/work/wheel_smoke.py", "check", *reference],
             "path": f"{venv}/bin:{CLEAN_PATH}"},
        ]
    return {"root": root, "work": work, "read_only": read_only, "steps": steps}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--root", help="the Debian root (.deps/wheel-root)")
    parser.add_argument("--wheels", help="the directory of repaired wheels")
    parser.add_argument("--work", help="a scratch directory (emptied first)")
    parser.add_argument("--tvm-site", help="site-packages holding apache-tvm 0.27 for CPython 3.11")
    parser.add_argument("--interpreter", action="append", default=[], metavar="TAG=PREFIX")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        with open(args.inner, encoding="utf-8") as file:
            return enter(json.load(file))
    if not (args.root and args.wheels and args.work):
        parser.error("--root, --wheels and --work are required")
    if not os.path.exists(os.path.join(args.root, "usr", "bin", "python3")):
        print(f"SKIP: no Debian root at {args.root} (scripts/install-deps.sh --tests makes it)")
        return 1 if os.environ.get("KILN_REQUIRE_WHEELS") == "1" else 77
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("SKIP: entering the Debian root needs root and unshare (util-linux)")
        return 1 if os.environ.get("KILN_REQUIRE_WHEELS") == "1" else 77
    plan = plan_for(args)
    plan_file = os.path.join(plan["work"], "plan.json")
    with open(plan_file, "w", encoding="utf-8") as file:
        json.dump(plan, file, indent=1)
    result = run(["unshare", "--mount", "--", sys.executable, os.path.abspath(__file__),
                  "--inner", plan_file])
    print("wheel_root: " + ("every wheel passed" if result.returncode == 0 else "FAILED"))
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
