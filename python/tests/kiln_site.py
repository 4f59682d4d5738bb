"""A Python environment that has this checkout's kiln as the wheel installs it, for the tests,
benchmarks and scripts that need one: a venv of this interpreter whose site-packages puts this
checkout's kiln (python/ and its build), and whatever else is asked, on the path, and holds kiln's
dist-info with the entry points pyproject.toml declares (TVM's ``tvm.backends``: kiln._tvm_hook),
as pip writes them.
"""

import os
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def entry_points_text():
    """kiln's entry_points.txt, from pyproject.toml."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as file:
        groups = tomllib.load(file)["project"].get("entry-points", {})
    lines = []
    for group, names in groups.items():
        lines += [f"[{group}]"] + [f"{name} = {target}" for name, target in names.items()]
    return "".join(line + "\n" for line in lines)


def make_venv(root, paths, entry_points=True):
    """A venv at `root` whose site-packages puts `paths` (directories) on sys.path and, with
    `entry_points`, declares kiln's entry points; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root], check=True)
    python = os.path.join(root, "bin", "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(purelib, "00-kiln-checkout.pth"), "w", encoding="utf-8") as pth:
        pth.write("".join(f"{path}\n" for path in paths))
    if entry_points:
        info = os.path.join(purelib, "kiln-0.0.0.dist-info")
        os.makedirs(info)
        with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as metadata:
            metadata.write("Metadata-Version: 2.1\nName: kiln\nVersion: 0.0.0\n")
        with open(os.path.join(info, "entry_points.txt"), "w", encoding="utf-8") as points:
            points.write(entry_points_text())
    return python
