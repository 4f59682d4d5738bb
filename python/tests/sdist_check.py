"""The sdist: complete, and on a machine without kiln's build libraries its build says which
Debian packages to install, every one at once, and makes nothing.

    sdist_check.py --sdist kiln-0.1.0.tar.gz --tools-python .deps/wheel-tools/bin/python --work DIR

1. Its members: what the build needs (CMake files, sources, headers, the CLI, the package with
   its stub and py.typed, the bundled examples), none of the tests, benchmarks or fuzz targets.
2. Unpacked, it configures as `pip install` of it would (scikit-build-core's defines).
3. In a private mount namespace where the development files of libfmt-dev, libcli11-dev,
   nlohmann-json3-dev, libarchive-dev, libxxhash-dev and libcurl4-openssl-dev are
   hidden (their directories covered by
   empty ones, /usr/include replaced by a hard-linked copy without their headers),
   `pip wheel --no-build-isolation` of the sdist fails, names each package and the apt-get line,
   and leaves no wheel. Needs root (exit 77, skipped, otherwise; 1 with KILN_REQUIRE_WHEELS=1).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile

PACKAGES = ["libfmt-dev", "libcli11-dev", "nlohmann-json3-dev", "libarchive-dev", "libxxhash-dev",
            "libcurl4-openssl-dev"]
REQUIRED = ["pyproject.toml", "CMakeLists.txt", "cmake/KilnDependencies.cmake",
            "cmake/KilnPortable.cmake", "src/CMakeLists.txt", "src/base/cache.cc",
            "include/kiln/cache.h", "tools/kiln/main.cc", "python/CMakeLists.txt",
            "python/kiln/__init__.py", "python/kiln/__main__.py", "python/kiln/_kiln.pyi",
            "python/kiln/py.typed", "python/src/module.cc", "examples/kiln.json",
            "scripts/install-deps.sh", "README.md"]
EXCLUDED = ["tests/", "bench/", "fuzz/", "src/testing/", "python/tests/"]


def check_members(sdist):
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    top = names[0].split("/")[0]
    members = {name[len(top) + 1:] for name in names if name.startswith(top + "/")}
    missing = [name for name in REQUIRED if name not in members]
    unwanted = sorted(name for name in members
                      if any(name.startswith(prefix) for prefix in EXCLUDED)
                      or name.endswith("_test.cc"))
    assert not missing, f"the sdist lacks {missing}"
    assert not unwanted, f"the sdist holds test files: {unwanted[:10]}"
    print(f"ok members: {len(members)} files, none of the tests")


def configure(source, build):
    argv = ["cmake", "-S", source, "-B", build, "-G", "Ninja", "-DSKBUILD=2",
            "-DKILN_PYTHON=ON", "-DKILN_BUILD_TESTS=OFF", "-DKILN_BUILD_BENCH=OFF",
            "-DKILN_PORTABLE=OFF", f"-DPython3_EXECUTABLE={sys.executable}"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"the unpacked sdist does not configure:\n{done.stdout}{done.stderr}"
    print("ok configures")


def hidden_paths():
    """Directories the packages own outright, and the headers they put in /usr/include itself."""
    directories, headers = set(), set()
    for package in PACKAGES:
        files = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True,
                               check=True).stdout.split()
        for path in files:
            parent = os.path.dirname(path)
            if parent == "/usr/include" and os.path.isfile(path):
                headers.add(os.path.basename(path))
            elif os.path.basename(parent) == "cmake" or parent == "/usr/include":
                if os.path.isdir(path) and not path.endswith("-linux-gnu"):  # shared by all
                    directories.add(path)
            elif parent.startswith("/usr/include/") and parent.endswith("-linux-gnu"):
                if os.path.isdir(path):
                    directories.add(path)  # a multiarch header directory: <triplet>/curl
    return sorted(directories), sorted(headers)


def inner(plan):
    """In the new mount namespace: hide, then try the build."""
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    include = os.path.join(plan["work"], "include")
    subprocess.run(["cp", "-al", "/usr/include", include], check=True)
    for header in plan["headers"]:
        os.remove(os.path.join(include, header))
    empty = os.path.join(plan["work"], "empty")
    os.makedirs(empty, exist_ok=True)
    for directory in plan["directories"]:
        if directory.startswith("/usr/include/"):  # gone from the copy
            shutil.rmtree(os.path.join(include, os.path.relpath(directory, "/usr/include")))
        else:
            subprocess.run(["mount", "--bind", empty, directory], check=True)
    subprocess.run(["mount", "--bind", include, "/usr/include"], check=True)
    wheels = os.path.join(plan["work"], "wheels")
    done = subprocess.run([plan["python"], "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                           "--disable-pip-version-check", "-w", wheels, plan["sdist"]],
                          capture_output=True, text=True, check=False,
                          env=dict(os.environ, TMPDIR=plan["work"]))
    output = done.stdout + done.stderr
    with open(os.path.join(plan["work"], "pip-output.txt"), "w", encoding="utf-8") as file:
        file.write(output)
    assert done.returncode != 0, f"the sdist built without its libraries:\n{output[-3000:]}"
    assert not os.path.isdir(wheels) or not os.listdir(wheels), os.listdir(wheels)
    missing = [package for package in PACKAGES if package not in output]
    assert not missing, f"the failed build does not name {missing}:\n{output[-3000:]}"
    words = " ".join(output.split())  # CMake folds its messages' lines
    start = words.find("apt-get install ")
    line = words[start:words.find("(", start)] if start >= 0 else ""
    assert all(package in line.split() for package in PACKAGES), f"no apt-get line: {line!r}"
    print(f"ok without the libraries: {line.strip()}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--sdist")
    parser.add_argument("--tools-python")
    parser.add_argument("--work")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        with open(args.inner, encoding="utf-8") as file:
            return inner(json.load(file))
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    check_members(args.sdist)
    with tarfile.open(args.sdist) as archive:
        archive.extractall(work, filter="data")
    source = os.path.join(work, os.listdir(work)[0])
    configure(source, os.path.join(work, "configured"))
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("SKIP: hiding the libraries needs root and unshare (util-linux)")
        return 1 if os.environ.get("KILN_REQUIRE_WHEELS") == "1" else 77
    directories, headers = hidden_paths()
    plan = {"work": os.path.join(work, "hidden"), "python": os.path.abspath(args.tools_python),
            "sdist": os.path.abspath(args.sdist), "directories": directories, "headers": headers}
    os.makedirs(plan["work"])
    plan_file = os.path.join(work, "plan.json")
    with open(plan_file, "w", encoding="utf-8") as file:
        json.dump(plan, file)
    return subprocess.run(["unshare", "--mount", "--", sys.executable, os.path.abspath(__file__),
                           "--inner", plan_file], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
