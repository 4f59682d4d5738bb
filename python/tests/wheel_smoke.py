"""Smoke test of an installed kiln wheel in a bare machine, compared with Apache TVM 0.27.

Meant to run inside a minimal Debian root (debootstrap minbase + python3: no compilers, no CUDA,
no ROCm, no NDK, no emscripten, no binutils, no libfmt/libarchive/libxxhash) by the interpreter of
a venv into which the repaired kiln wheel was installed. Standard library only; Python 3.10-3.13.

    wheel_smoke.py reference OUT.json
        Run by an interpreter that can import apache-tvm (tvm.support 0.27). Calls tvm.support's
        finders and other machine-dependent queries (the FINDERS table below) with nothing
        installed and writes, for each, the returned value (as JSON) or the exception raised
        ({"raises": "RuntimeError", "message": ...}) to OUT.json, with tvm.support's libinfo keys.
        Exits 2 when tvm.support cannot be imported, or when kiln is loaded into it (KILN_TVM=1 is
        dropped from the environment first).

    wheel_smoke.py check [--reference REF.json] [--allow-source-tree]
        The smoke suite against the installed kiln: imports (and the time of a fresh
        `import kiln.support.cc`), tar/untar, popen_pool (value, timeout, worker crash, raised
        exception), libinfo/describe, `kiln --version` three ways, `kiln doctor --json`, and the
        FINDERS table: with --reference, each result is compared with tvm's (equal value, or the
        same exception type); without, the finders only must not crash the interpreter.
        Prints one line per check, `ok NAME[: detail]` or `FAIL NAME: why`, runs every check
        whatever fails, and exits 1 when any failed, else 0. The venv's bin/ should be on PATH
        (the console script `kiln` found there must be the venv's).
        --allow-source-tree (development only) accepts a kiln imported from a checkout
        (PYTHONPATH=python:build/release/python) and skips the console-script check.

The popen_pool and finder checks run in child processes of this script (internal subcommands
`_popen` and `_collect`), so that a hang or a crash of the interpreter there is reported as a
FAIL instead of ending the suite.
"""

import argparse
import contextlib
import functools
import hashlib
import importlib
import importlib.util
import io
import json
import os
import platform
import re
import shutil
import site
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import traceback
import warnings

SCHEMA = 1

# The modules of tvm.support 0.27, which kiln.support mirrors.
MODULES = (
    "cc", "nvcc", "rocm", "ndk", "xcode", "emcc", "clang", "tar", "utils", "libinfo", "popen_pool",
)

# tvm.support.libinfo.libinfo()'s keys in 0.27 (used when no reference file gives them).
TVM_LIBINFO_KEYS = (
    "USE_CUDA", "USE_LLVM", "USE_NCCL", "USE_NVTX", "USE_NVSHMEM", "USE_HEXAGON", "USE_CUDNN",
    "USE_CUTLASS", "USE_VULKAN", "USE_OPENCL", "USE_METAL", "USE_ROCM", "USE_CLML",
    "USE_NNAPI_RUNTIME", "USE_NNAPI_CODEGEN",
)

# What tvm.support's attributes of those names are in 0.27 (used when no reference file gives them):
# tvm/support/__init__.py does `from .libinfo import libinfo`, so tvm.support.libinfo is callable.
TVM_SUPPORT_ATTRIBUTES = {name: "function" if name == "libinfo" else "module" for name in MODULES}

# Tools looked up with utils.which: none of them may live in a venv's bin/ (the reference and the
# check run in different venvs), so no python3 or kiln here.
WHICH_TOOLS = (
    "sh", "tar", "gzip", "which", "gcc", "g++", "cc", "c++", "clang", "clang++", "ar", "nm",
    "ld.lld", "nvcc", "hipcc", "rocminfo", "emcc", "xcrun", "ccache",
)

# Paths that exist on no machine: what a finder does when pointed at nothing.
MISSING_DIR = "/nonexistent/kiln-wheel-smoke"
MISSING_FILE = MISSING_DIR + "/libmissing.so"

# Environment variables the finders read: recorded with the reference, so that a mismatch can say
# when the two runs did not see the same environment.
FINDER_ENVIRONMENT = (
    "PATH", "CC", "CXX", "CUDA_PATH", "ROCM_PATH", "NVSHMEM_HOME", "TVM_HOME", "TVM_NDK_CC",
)

CHILD_TIMEOUT_S = 300


# --- the finder table, shared by `reference` and `check` -----------------------------------------


def _text_file(scratch):
    """A file that is not an object file (what nm refuses)."""
    path = os.path.join(scratch, "not-an-object.txt")
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as file:
            file.write("not an object file\n")
    return path


def _stripped(value):
    """A target triple without its trailing newline (kiln strips it, on purpose; TVM does too
    where it reads it)."""
    return value.strip() if isinstance(value, str) else value


def _triple_attribute(function):
    """create_shared.get_target_triple: None, or what calling it returns (stripped)."""
    get_triple = function.get_target_triple
    return None if get_triple is None else _stripped(get_triple())


def _symbols_summary(symbols):
    """A symbol map in a few words: its size, a digest, and its first entries."""
    items = sorted((str(k), str(v)) for k, v in dict(symbols).items())
    digest = hashlib.sha256(json.dumps(items).encode()).hexdigest()[:16]
    return {"count": len(items), "sha256": digest, "first": items[:5]}


def _calls(function, *args, **kwargs):
    """A builder: module.function(*args, **kwargs)."""

    def build(module, scratch):  # pylint: disable=unused-argument
        return functools.partial(getattr(module, function), *args, **kwargs)

    return build


def _on_text_file(function):
    """A builder: module.function(<a file that is not an object file>)."""
    return lambda module, scratch: functools.partial(getattr(module, function), _text_file(scratch))


# (name, module of tvm.support / kiln.support, builder): builder(module, scratch directory)
# returns the zero-argument callable whose result (or exception) is recorded. Names have no spaces.
FINDERS = (
    ("cc.get_cc()", "cc", _calls("get_cc")),
    (
        "cc.get_target_by_dump_machine(get_cc())()",
        "cc",
        lambda m, s: lambda: _stripped(m.get_target_by_dump_machine(m.get_cc())()),
    ),
    (
        "cc.create_shared.get_target_triple()",
        "cc",
        lambda m, s: lambda: _triple_attribute(m.create_shared),
    ),
    (
        "cc.get_global_symbol_section_map(<missing-file>)",
        "cc",
        _calls("get_global_symbol_section_map", MISSING_FILE),
    ),
    (
        "cc.get_global_symbol_section_map(<text-file>)",
        "cc",
        _on_text_file("get_global_symbol_section_map"),
    ),
    (
        "cc.get_global_symbol_section_map(/bin/sh)",
        "cc",
        lambda m, s: lambda: _symbols_summary(
            m.get_global_symbol_section_map(os.path.realpath("/bin/sh"))
        ),
    ),
    ("nvcc.find_cuda_path()", "nvcc", _calls("find_cuda_path")),
    ("nvcc.get_cuda_version()", "nvcc", _calls("get_cuda_version")),
    ("nvcc.get_cuda_version(<missing-dir>)", "nvcc", _calls("get_cuda_version", MISSING_DIR)),
    ("nvcc.have_cudagraph()", "nvcc", _calls("have_cudagraph")),
    ("nvcc.find_libdevice_path(80)", "nvcc", _calls("find_libdevice_path", 80)),
    ("nvcc.callback_libdevice_path(80)", "nvcc", _calls("callback_libdevice_path", 80)),
    ("nvcc.find_nvshmem_paths()", "nvcc", _calls("find_nvshmem_paths")),
    ("nvcc.get_target_compute_version()", "nvcc", _calls("get_target_compute_version")),
    ("nvcc.have_tensorcore()", "nvcc", _calls("have_tensorcore")),
    ("rocm.find_rocm_path()", "rocm", _calls("find_rocm_path")),
    ("rocm.find_lld(required=False)", "rocm", _calls("find_lld", required=False)),
    ("rocm.find_lld(required=True)", "rocm", _calls("find_lld", required=True)),
    ("rocm.get_rocm_arch()", "rocm", _calls("get_rocm_arch")),
    ("rocm.get_rocm_arch(<missing-dir>)", "rocm", _calls("get_rocm_arch", MISSING_DIR)),
    ("rocm.callback_rocm_bitcode_path()", "rocm", _calls("callback_rocm_bitcode_path")),
    (
        "rocm.callback_rocm_bitcode_path(<missing-dir>)",
        "rocm",
        _calls("callback_rocm_bitcode_path", MISSING_DIR),
    ),
    ("rocm.have_matrixcore()", "rocm", _calls("have_matrixcore")),
    ("clang.find_clang(required=False)", "clang", _calls("find_clang", required=False)),
    ("clang.find_clang(required=True)", "clang", _calls("find_clang", required=True)),
    (
        "emcc.find_wasm_lib(wasm_runtime.bc,optional=True)",
        "emcc",
        _calls("find_wasm_lib", "wasm_runtime.bc", optional=True),
    ),
    ("emcc.find_wasm_lib(wasm_runtime.bc)", "emcc", _calls("find_wasm_lib", "wasm_runtime.bc")),
    (
        "ndk.create_shared.get_target_triple()",
        "ndk",
        lambda m, s: lambda: _triple_attribute(m.create_shared),
    ),
    (
        "ndk.get_global_symbol_section_map(<text-file>)",
        "ndk",
        _on_text_file("get_global_symbol_section_map"),
    ),
    ("xcode.xcrun([--version])", "xcode", _calls("xcrun", ["--version"])),
    *((f"utils.which({tool})", "utils", _calls("which", tool)) for tool in WHICH_TOOLS),
    ("utils.which(/bin/sh)", "utils", _calls("which", "/bin/sh")),
    ("utils.which(<empty>)", "utils", _calls("which", "")),
)


def _jsonable(value):
    """`value` as JSON data that compares the same for tvm's and kiln's types (tuples and TVM
    Arrays are lists, bytes are text)."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return {"bytes": bytes(value).decode("utf-8", errors="replace")}
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict) or (hasattr(value, "items") and hasattr(value, "keys")):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    sequence = hasattr(value, "__iter__") and hasattr(value, "__len__")  # e.g. a TVM Array
    if isinstance(value, list | tuple) or sequence:
        return [_jsonable(v) for v in value]
    return {"repr": repr(value), "type": type(value).__name__}


def _one_line(text, limit=240):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _record_call(function):
    """Call `function`; its value or its exception, with what it printed and warned."""
    printed = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(printed):
        warnings.simplefilter("always")
        try:
            record = {"value": _jsonable(function())}
        except Exception as error:  # pylint: disable=broad-except
            record = {"raises": type(error).__name__, "message": str(error)}
    if printed.getvalue():
        record["stdout"] = printed.getvalue()
    if caught:
        record["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return record


def collect_finders(package, progress=False):
    """Run every FINDERS row against `package` ("tvm" or "kiln"): {name: record}, in order.

    Runs in an empty scratch directory as the working directory (utils.which looks there first).
    progress: say on stderr which row is being called, so that a crash or a hang can be pinned
    on one.
    """
    results = {}
    modules = {}
    old_cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="kiln-wheel-smoke-") as scratch:
        work = os.path.join(scratch, "cwd")
        os.mkdir(work)
        os.chdir(work)
        try:
            for name, module_name, builder in FINDERS:
                if progress:
                    print(f"# calling {package}.support.{name}", file=sys.stderr, flush=True)
                if module_name not in modules:
                    try:
                        module = importlib.import_module(f"{package}.support.{module_name}")
                        modules[module_name] = (module, None)
                    except Exception as error:  # pylint: disable=broad-except
                        modules[module_name] = (None, error)
                module, import_error = modules[module_name]
                if import_error is not None:
                    results[name] = {
                        "raises": type(import_error).__name__,
                        "message": f"import {package}.support.{module_name}: {import_error}",
                    }
                    continue
                try:
                    function = builder(module, scratch)
                except Exception as error:  # pylint: disable=broad-except  (a missing name)
                    results[name] = {"raises": type(error).__name__, "message": str(error)}
                    continue
                results[name] = _record_call(function)
        finally:
            os.chdir(old_cwd)
    return results


def _support_attributes(package):
    """What each module name is as an attribute of the package: "module", "function", ... (in
    tvm.support 0.27, `libinfo` is the function libinfo, not the submodule)."""
    kinds = {}
    for name in MODULES:
        try:
            value = getattr(package, name)
        except Exception as error:  # pylint: disable=broad-except
            kinds[name] = f"missing ({type(error).__name__})"
            continue
        # What a user can do with it: call it (tvm.support.libinfo()), or use it as a module.
        if callable(value):
            kinds[name] = "function"
        elif isinstance(value, type(os)):
            kinds[name] = "module"
        else:
            kinds[name] = type(value).__name__
    return kinds


def _environment():
    return {name: os.environ.get(name) for name in FINDER_ENVIRONMENT}


def _describe_record(record):
    if record is None:
        return "nothing (no such row)"
    if "raises" in record:
        return f"raised {record['raises']}: {_one_line(record.get('message', ''), 160)!r}"
    return f"returned {_one_line(json.dumps(record.get('value')), 200)}"


# --- reference ---------------------------------------------------------------------------------


def cmd_reference(args):
    # Make sure the reference is TVM's own tvm.support, not kiln installed into it.
    os.environ.pop("KILN_TVM", None)
    try:
        import tvm  # pylint: disable=import-outside-toplevel
        import tvm.support  # pylint: disable=import-outside-toplevel
        import tvm.support.libinfo  # pylint: disable=import-outside-toplevel
    except Exception as error:  # pylint: disable=broad-except
        print(
            f"reference: cannot import tvm.support: {type(error).__name__}: {error}",
            file=sys.stderr,
        )
        return 2
    finders = collect_finders("tvm")
    loaded = sorted(n for n in sys.modules if n == "kiln" or n.startswith("kiln."))
    get_cc_module = getattr(sys.modules["tvm.support.cc"].get_cc, "__module__", None)
    if loaded or get_cc_module != "tvm.support.cc":
        print(
            f"reference: kiln is loaded into this process ({loaded}; tvm.support.cc.get_cc is "
            f"{get_cc_module}'s): this would not be TVM's own tvm.support",
            file=sys.stderr,
        )
        return 2
    try:
        # tvm.support's __init__ binds the name libinfo to the function, over the submodule.
        libinfo_keys = sorted(sys.modules["tvm.support.libinfo"].libinfo())
    except Exception as error:  # pylint: disable=broad-except
        libinfo_keys = None
        print(f"reference: tvm.support.libinfo.libinfo() raised {error!r}", file=sys.stderr)
    data = {
        "schema": SCHEMA,
        "tvm_version": getattr(tvm, "__version__", None),
        "python": sys.version,
        "executable": sys.executable,
        "platform": platform.platform(),
        "environment": _environment(),
        "libinfo_keys": libinfo_keys,
        "support_attributes": _support_attributes(tvm.support),
        "finders": finders,
    }
    with open(args.out, "w", encoding="utf-8") as file:
        json.dump(data, file, indent=2, sort_keys=False)
        file.write("\n")
    raised = sum(1 for r in finders.values() if "raises" in r)
    print(f"reference: tvm {data['tvm_version']}: {len(finders)} finder calls "
          f"({raised} raised) written to {args.out}")
    return 0


# --- check: the machinery ----------------------------------------------------------------------


class CheckFailed(Exception):
    """A check's finding, printed as its FAIL line."""


class Report:
    """Counts and prints the check lines."""

    def __init__(self):
        self.failed = []
        self.passed = 0

    def ok(self, name, detail=None):
        self.passed += 1
        print(f"ok {name}" + (f": {_one_line(detail, 400)}" if detail else ""), flush=True)

    def fail(self, name, why):
        self.failed.append(name)
        print(f"FAIL {name}: {_one_line(why, 1200)}", flush=True)

    def run(self, name, check, *args):
        """Run check(*args): ok with the detail it returns, FAIL with what it raised."""
        try:
            detail = check(*args)
        except CheckFailed as error:
            self.fail(name, str(error))
            return False
        except Exception as error:  # pylint: disable=broad-except
            where = traceback.extract_tb(error.__traceback__)[-1]
            self.fail(name, f"{type(error).__name__}: {error} (at line {where.lineno})")
            return False
        self.ok(name, detail)
        return True

    def relay(self, lines):
        """Count the ok/FAIL lines a child process printed (and print them)."""
        for line in lines:
            if line.startswith("ok "):
                self.passed += 1
                print(line, flush=True)
            elif line.startswith("FAIL "):
                self.failed.append(line[5:].split(": ", 1)[0])
                print(line, flush=True)


def _require(condition, why):
    if not condition:
        raise CheckFailed(why)


def _run(argv, timeout=120, **kwargs):
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )


def _tail(text, lines=6):
    return " | ".join(text.strip().splitlines()[-lines:])


def _signal_text(returncode):
    if returncode < 0:
        try:
            import signal  # pylint: disable=import-outside-toplevel

            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def _run_child(report, name, argv, timeout=CHILD_TIMEOUT_S):
    """Run this script's internal subcommand in a child; relay its lines. FAIL `name` when the
    child hangs, dies or exits with another status than 0 or 1. Returns the child's result or
    None."""
    command = [sys.executable, os.path.abspath(__file__), *argv]
    try:
        child = _run(command, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        stderr = error.stderr.decode() if isinstance(error.stderr, bytes) else (error.stderr or "")
        report.fail(name, f"did not finish in {timeout} s; last said: {_tail(stderr, 3)!r}")
        return None
    report.relay(child.stdout.splitlines())
    if child.returncode not in (0, 1):
        report.fail(
            name,
            f"the child interpreter ended with {_signal_text(child.returncode)}; "
            f"stderr: {_tail(child.stderr)!r}",
        )
        return None
    return child


# --- check 0: which kiln -----------------------------------------------------------------------


def _site_directories():
    directories = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    user = getattr(site, "getusersitepackages", lambda: None)()
    if user:
        directories.append(user)
    return [os.path.realpath(d) for d in directories]


def check_installed(allow_source_tree):
    import kiln  # pylint: disable=import-outside-toplevel

    package_dir = os.path.realpath(os.path.dirname(kiln.__file__))
    inside = [d for d in _site_directories() if package_dir.startswith(d + os.sep)]
    where = f"kiln {kiln.__version__} from {package_dir}"
    if allow_source_tree:
        return where + ("" if inside else " (a source tree: allowed by --allow-source-tree)")
    _require(inside, f"{where}: not under this interpreter's site-packages ({_site_directories()})")
    paths = [os.path.realpath(p) for p in kiln.__path__]
    _require(paths == [package_dir], f"kiln's package path mixes directories: {paths}")
    import kiln._native  # pylint: disable=import-outside-toplevel

    extension = os.path.realpath(kiln._native.native.__file__)
    _require(
        extension.startswith(package_dir + os.sep),
        f"kiln's extension {extension} is not the installed package's",
    )
    return f"{where}; extension {os.path.basename(extension)}"


# --- check 1: imports --------------------------------------------------------------------------


def check_import(module_name):
    module = importlib.import_module(module_name)
    return os.path.basename(getattr(module, "__file__", "") or "")


_IMPORT_TIME_CODE = textwrap.dedent(
    """
    import json, sys, time
    start = time.perf_counter()
    import kiln.support.cc
    ms = (time.perf_counter() - start) * 1e3
    import kiln
    print(json.dumps({"ms": ms, "file": kiln.__file__, "tvm": "tvm" in sys.modules}))
    """
)


def check_import_time():
    import kiln  # pylint: disable=import-outside-toplevel

    child = _run([sys.executable, "-c", _IMPORT_TIME_CODE], timeout=120)
    _require(
        child.returncode == 0,
        f"`import kiln.support.cc` in a fresh interpreter: {_signal_text(child.returncode)}: "
        f"{_tail(child.stderr)!r}",
    )
    data = json.loads(child.stdout.strip().splitlines()[-1])
    _require(
        os.path.realpath(data["file"]) == os.path.realpath(kiln.__file__),
        f"a fresh interpreter imports another kiln ({data['file']}) than this one "
        f"({kiln.__file__})",
    )
    _require(not data["tvm"], "importing kiln.support.cc imported tvm (kiln never imports TVM)")
    return f"import kiln.support.cc took {data['ms']:.1f} ms in a fresh interpreter"


# --- check 2: tar ------------------------------------------------------------------------------


def _tree(directory):
    """{relative path: bytes} of every file under `directory`."""
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as file:
                files[os.path.relpath(path, directory)] = file.read()
    return files


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as file:
        file.write(data)


def _compare_trees(expected, got, what):
    _require(
        sorted(expected) == sorted(got),
        f"{what}: files {sorted(got)}, expected {sorted(expected)}",
    )
    for name, data in expected.items():
        _require(got[name] == data, f"{what}: {name} differs ({len(got[name])} bytes, expected "
                                    f"{len(data)})")


def check_tar_round_trip():
    from kiln.support import tar  # pylint: disable=import-outside-toplevel

    with tempfile.TemporaryDirectory(prefix="kiln-smoke-tar-") as work:
        source = os.path.join(work, "source")
        contents = {
            "a.txt": b"hello from kiln's wheel smoke test\n",
            "all-bytes.bin": bytes(range(256)) * 64,
            "empty.o": b"",
            "with space.txt": b"a name with a space\n",
            os.path.join("sub", "nested.o"): os.urandom(70_000),
        }
        for name, data in contents.items():
            _write(os.path.join(source, name), data)
        archive = os.path.join(work, "out.tar")
        tar.tar(archive, [os.path.join(source, name) for name in contents])
        _require(os.path.isfile(archive), f"tar() wrote no {archive}")
        # tvm.support.tar.tar keeps base names only (a file of a subdirectory lands at the top).
        flat = {os.path.basename(name): data for name, data in contents.items()}
        with tarfile.open(archive) as opened:  # any compression: Python's tarfile must read it
            members = sorted(m.name.removeprefix("./") for m in opened.getmembers() if m.isfile())
        _require(
            members == sorted(flat), f"Python's tarfile lists {members}, expected {sorted(flat)}"
        )
        unpacked = os.path.join(work, "unpacked")
        os.mkdir(unpacked)
        tar.untar(archive, unpacked)
        _compare_trees(flat, _tree(unpacked), "untar(tar(files))")
        return f"{len(flat)} files ({sum(len(d) for d in flat.values())} bytes) round-tripped"


def check_untar_subdirectory():
    from kiln.support import tar  # pylint: disable=import-outside-toplevel

    with tempfile.TemporaryDirectory(prefix="kiln-smoke-untar-") as work:
        contents = {
            "top.o": b"top-level object\n",
            os.path.join("sub", "inner.o"): bytes(range(255, -1, -1)) * 8,
            os.path.join("sub", "deeper", "leaf.txt"): b"leaf\n",
        }
        source = os.path.join(work, "source")
        for name, data in contents.items():
            _write(os.path.join(source, name), data)
        archive = os.path.join(work, "made-by-python.tar")
        with tarfile.open(archive, "w") as made:  # plain tar, with directory entries
            for entry in ("top.o", "sub"):
                made.add(os.path.join(source, entry), arcname=entry)
        unpacked = os.path.join(work, "unpacked")
        os.mkdir(unpacked)
        tar.untar(archive, unpacked)
        _compare_trees(contents, _tree(unpacked), "untar of a tar with subdirectories")
        return f"{len(contents)} files, two directory levels"


def check_normalize_file_list():
    from kiln.support import tar, utils  # pylint: disable=import-outside-toplevel

    _require(
        hasattr(tar, "normalize_file_list_by_unpacking_tars"),
        "kiln.support.tar has no normalize_file_list_by_unpacking_tars (tvm.support.tar has)",
    )
    with tempfile.TemporaryDirectory(prefix="kiln-smoke-normalize-") as work:
        plain = os.path.join(work, "plain.o")
        _write(plain, b"plain object\n")
        members = {"one.o": b"first\n", os.path.join("sub", "two.o"): b"second\n" * 100}
        for name, data in members.items():
            _write(os.path.join(work, "members", name), data)
        archive = os.path.join(work, "objects.tar")
        with tarfile.open(archive, "w") as made:
            for name in members:
                made.add(os.path.join(work, "members", name), arcname=name)
        temp = utils.tempdir()
        try:
            listed = tar.normalize_file_list_by_unpacking_tars(temp, [plain, archive])
            listed = [os.fspath(p) for p in listed]
            _require(len(listed) == 3, f"got {listed}: expected plain.o and the tar's two files")
            _require(listed[0] == plain, f"the plain file should stay first, as is: {listed}")
            unpacked = {}
            for path in listed[1:]:
                _require(
                    os.path.realpath(path).startswith(os.path.realpath(temp.temp_dir) + os.sep),
                    f"{path} is not under the temp directory {temp.temp_dir}",
                )
                with open(path, "rb") as file:
                    unpacked[os.path.basename(path)] = file.read()
            expected = {os.path.basename(n): d for n, d in members.items()}
            _require(
                unpacked == expected, f"unpacked {sorted(unpacked)}, expected {sorted(expected)}"
            )
        finally:
            temp.remove()
        return f"{len(listed)} files listed"


def check_tar_duplicate_names():
    from kiln.support import tar  # pylint: disable=import-outside-toplevel

    with tempfile.TemporaryDirectory(prefix="kiln-smoke-dup-") as work:
        first, second = os.path.join(work, "x", "same.o"), os.path.join(work, "y", "same.o")
        _write(first, b"1")
        _write(second, b"2")
        try:
            tar.tar(os.path.join(work, "dup.tar"), [first, second])
        except ValueError as error:
            return f"ValueError: {error}"
        raise CheckFailed(
            "two files with the same base name: no ValueError (tvm.support raises one)"
        )


# --- check 3: popen_pool (in a child: `_popen`) --------------------------------------------------

_TASKS_MODULE = "kiln_wheel_smoke_tasks"
_TASKS_SOURCE = textwrap.dedent(
    '''
    """Tasks for kiln's wheel smoke test: imported by name in the pool's workers."""
    import os
    import signal
    import time


    def task(item):
        kind, argument = item
        if kind == "value":
            return argument * 2
        if kind == "pid":
            return os.getpid()
        if kind == "sleep":
            time.sleep(argument)
            return "woke up"
        if kind == "exit":
            os._exit(argument)
        if kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(60)
        if kind == "raise":
            raise ValueError(argument)
        raise AssertionError(f"unknown task {kind!r}")
    '''
)

POOL_TIMEOUT_S = 3.0


def _popen_checks(report):
    work = tempfile.mkdtemp(prefix="kiln-smoke-pool-")
    with open(os.path.join(work, _TASKS_MODULE + ".py"), "w", encoding="utf-8") as file:
        file.write(_TASKS_SOURCE)
    # The workers are other processes (python -m kiln.support.popen_worker): PYTHONPATH too.
    sys.path.insert(0, work)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (work, os.environ.get("PYTHONPATH")) if p
    )
    tasks = importlib.import_module(_TASKS_MODULE)
    from kiln.support import popen_pool  # pylint: disable=import-outside-toplevel

    status = popen_pool.StatusKind
    cloudpickle = "installed" if importlib.util.find_spec("cloudpickle") else "not installed"
    items = [
        ("value", 21),
        ("sleep", 60),
        ("exit", 3),
        ("kill", None),
        ("raise", "smoke-test-boom"),
        ("value", 5),
        ("pid", None),
    ]
    expectations = {
        0: ("popen-pool:complete", status.COMPLETE, int, lambda v: v == 42),
        1: ("popen-pool:timeout", status.TIMEOUT, TimeoutError, None),
        2: ("popen-pool:worker-os-exit", status.EXCEPTION, ChildProcessError, None),
        3: ("popen-pool:worker-sigkill", status.EXCEPTION, ChildProcessError, None),
        4: ("popen-pool:raises-value-error", status.EXCEPTION, ValueError,
            lambda v: "smoke-test-boom" in str(v)),
        5: ("popen-pool:complete-after-crashes", status.COMPLETE, int, lambda v: v == 10),
        6: ("popen-pool:runs-in-another-process", status.COMPLETE, int, lambda v: v != os.getpid()),
    }
    start = time.perf_counter()
    pool = popen_pool.PopenPoolExecutor(max_workers=2, timeout=POOL_TIMEOUT_S)
    try:
        results = list(pool.map_with_error_catching(tasks.task, items))
        elapsed = time.perf_counter() - start
        if len(results) != len(items):
            report.fail("popen-pool:map", f"{len(results)} results for {len(items)} items")
        for index, result in enumerate(results):
            name, want_status, want_type, predicate = expectations[index]
            why = []
            if not hasattr(result, "status") or not hasattr(result, "value"):
                report.fail(name, f"not a MapResult: {result!r}")
                continue
            if result.status != want_status:
                why.append(f"status {result.status!r}, expected {want_status!r}")
            if not isinstance(result.value, want_type):
                why.append(f"value {type(result.value).__name__} {result.value!r}, expected a "
                           f"{want_type.__name__}")
            elif predicate is not None and not predicate(result.value):
                why.append(f"unexpected value {result.value!r}")
            if why:
                report.fail(name, f"{items[index]}: " + "; ".join(why))
            else:
                report.ok(name, f"{items[index]} -> {result.status.name} "
                                f"{type(result.value).__name__}")
        submitted = pool.submit(tasks.task, ("value", 50)).result(timeout=120)
        if submitted == 100:
            report.ok("popen-pool:submit", f"after map: 100 (cloudpickle {cloudpickle}; "
                                            f"map took {elapsed:.1f} s)")
        else:
            report.fail("popen-pool:submit", f"submit(task, ('value', 50)) gave {submitted!r}")
    finally:
        pool.shutdown(wait=True)
        shutil.rmtree(work, ignore_errors=True)


def cmd_popen_child(_args):
    report = Report()
    report.run("popen-pool", lambda: _popen_checks(report) or "pool shut down")
    return 1 if report.failed else 0


# --- check 4: libinfo and describe -------------------------------------------------------------


def check_libinfo(reference):
    from kiln.support import libinfo  # pylint: disable=import-outside-toplevel

    info = libinfo.libinfo()
    _require(isinstance(info, dict), f"libinfo() returned a {type(info).__name__}, not a dict")
    wrong = {k: v for k, v in info.items() if not isinstance(k, str) or not isinstance(v, str)}
    _require(not wrong, f"entries that are not str -> str: {wrong!r}")
    keys = (reference or {}).get("libinfo_keys") or TVM_LIBINFO_KEYS
    missing = sorted(set(keys) - set(info))
    _require(not missing, f"missing keys that tvm.support.libinfo.libinfo() has: {missing} "
                          f"(kiln's keys: {sorted(info)})")
    return f"{len(info)} entries, all of tvm's {len(keys)} keys"


def check_support_attributes(reference):
    import kiln.support  # pylint: disable=import-outside-toplevel

    expected = (reference or {}).get("support_attributes") or TVM_SUPPORT_ATTRIBUTES
    got = _support_attributes(kiln.support)
    differing = {
        name: f"kiln.support.{name} is {got.get(name)}, tvm.support.{name} {kind}"
        for name, kind in expected.items()
        if got.get(name) != kind
    }
    _require(not differing, "; ".join(differing.values()))
    return ", ".join(f"{name}: {kind}" for name, kind in sorted(got.items()))


def check_describe():
    import kiln.support  # pylint: disable=import-outside-toplevel

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        kiln.support.describe()
    text = printed.getvalue()
    _require(text.startswith("Python Environment"), f"describe() printed {text[:120]!r}")
    _require("CMake Options:" in text, "describe() printed no 'CMake Options:' section")
    return f"{len(text.splitlines())} lines"


# --- check 5: versions -------------------------------------------------------------------------


def _version_of(argv):
    child = _run(argv, timeout=60)
    _require(
        child.returncode == 0,
        f"`{' '.join(argv)}`: {_signal_text(child.returncode)}: "
        f"{_tail(child.stderr or child.stdout)!r}",
    )
    lines = child.stdout.strip().splitlines()
    _require(lines, f"`{' '.join(argv)}` printed nothing on stdout")
    import kiln  # pylint: disable=import-outside-toplevel

    _require(
        lines[0].startswith(f"kiln {kiln.__version__}"),
        f"`{' '.join(argv)}` printed {lines[0]!r}, expected 'kiln {kiln.__version__} ...'",
    )
    return lines[0]


def check_version_program(versions):
    import kiln._native  # pylint: disable=import-outside-toplevel

    program = kiln._native.program()
    _require(program, "kiln._native.program() is None: no kiln/bin/kiln in the package")
    versions["kiln._native.program()"] = _version_of([program, "--version"])
    return f"{program}: {versions['kiln._native.program()']}"


def check_version_module(versions):
    versions["python -m kiln"] = _version_of([sys.executable, "-m", "kiln", "--version"])
    return versions["python -m kiln"]


def check_version_console_script(versions):
    expected = os.path.join(sys.prefix, "bin", "kiln")
    _require(
        os.path.isfile(expected) and os.access(expected, os.X_OK),
        f"no console script {expected} (the wheel declares no [project.scripts] kiln?)",
    )
    found = shutil.which("kiln")
    note = ""
    if found is None:
        note = f" (the venv's bin/ is not on PATH: ran {expected} directly)"
    else:
        _require(
            os.path.realpath(found) == os.path.realpath(expected)
            or os.path.samefile(found, expected),
            f"shutil.which('kiln') is {found}, not the venv's {expected}",
        )
    versions["console script"] = _version_of([found or expected, "--version"])
    return versions["console script"] + note


def check_versions_agree(versions):
    _require(len(versions) >= 2, f"fewer than two ways gave a version: {versions}")
    _require(len(set(versions.values())) == 1, f"the version lines differ: {versions}")
    return f"{len(versions)} ways: {next(iter(versions.values()))}"


# --- check 6: kiln doctor --json ---------------------------------------------------------------

# What would say that a check crashed instead of judging the machine.
_CRASH_MARKERS = re.compile(
    r"terminate called|what\(\):|uncaught|unhandled exception|internal error|"
    r"Segmentation fault|core dumped|kiln: error",
    re.IGNORECASE,
)


def check_doctor():
    import kiln._native  # pylint: disable=import-outside-toplevel
    from kiln.support import cc  # pylint: disable=import-outside-toplevel

    program = kiln._native.program()
    _require(program, "kiln._native.program() is None")
    child = _run([program, "doctor", "--json"], timeout=CHILD_TIMEOUT_S)
    _require(
        child.returncode in (0, 1),
        f"exit: {_signal_text(child.returncode)} (expected 0, or 1 with FAIL rows); "
        f"stderr: {_tail(child.stderr)!r}",
    )
    _require("kiln: error" not in child.stderr, f"kiln doctor stopped: {_tail(child.stderr)!r}")
    try:
        rows = json.loads(child.stdout)
    except ValueError as error:
        raise CheckFailed(f"stdout is not JSON ({error}): {child.stdout[:300]!r}; "
                          f"stderr: {_tail(child.stderr)!r}") from None
    _require(isinstance(rows, list) and rows, f"not a non-empty JSON array: {child.stdout[:200]!r}")
    for row in rows:
        _require(
            isinstance(row, dict) and all(isinstance(row.get(k), str)
                                          for k in ("check", "status", "finding", "fix")),
            f"a row is not {{check, status, finding, fix}} strings: {row!r}",
        )
        _require(row["status"] in ("PASS", "WARN", "FAIL"), f"unknown status in {row!r}")
        _require(row["finding"].strip(), f"row {row['check']!r} has an empty finding")
        crash = _CRASH_MARKERS.search(row["finding"] + "\n" + row["fix"])
        _require(not crash, f"row {row['check']!r} reads like a crashed check "
                            f"({crash.group(0) if crash else ''!r}): {row['finding']!r}")
    failing = [r["check"] for r in rows if r["status"] == "FAIL"]
    _require(
        (child.returncode == 1) == bool(failing),
        f"exit status {child.returncode} does not match the FAIL rows {failing}",
    )
    compiler = [r for r in rows if r["check"] == "C++ compiler"]
    _require(compiler, f"no 'C++ compiler' row among {[r['check'] for r in rows]}")
    compiler = compiler[0]
    if cc.get_cc() is None:
        _require(
            compiler["status"] == "FAIL" and "no C++ compiler" in compiler["finding"],
            f"no compiler on this machine, but the C++ compiler row says {compiler!r}",
        )
        _require(compiler["fix"].strip(), "the missing compiler's row suggests no fix")
    return (f"exit {child.returncode}; {len(rows)} rows, FAIL: {failing or 'none'}; "
            f"C++ compiler: {compiler['status']} {compiler['finding'][:80]!r}")


# --- check 7: finders (in a child: `_collect`) ---------------------------------------------------


def cmd_collect_child(args):
    """Record kiln.support's FINDERS results into args.out (a child of `check`)."""
    results = collect_finders(args.package, progress=True)
    with open(args.out, "w", encoding="utf-8") as file:
        json.dump({"environment": _environment(), "finders": results}, file, indent=2)
    return 0


def check_finders(report, reference):
    with tempfile.TemporaryDirectory(prefix="kiln-smoke-finders-") as work:
        out = os.path.join(work, "kiln.json")
        child = _run_child(report, "finders:no-crash", ["_collect", "kiln", out])
        if child is None:
            return
        if child.returncode != 0 or not os.path.isfile(out):
            report.fail("finders:no-crash", f"no results: {_tail(child.stderr)!r}")
            return
        with open(out, encoding="utf-8") as file:
            collected = json.load(file)
    results = collected["finders"]
    report.ok("finders:no-crash", f"{len(results)} finder calls ran in a child interpreter")
    if reference is None:
        for name, record in results.items():
            report.ok(f"finder:{name}", _describe_record(record))
        return
    expected = reference.get("finders", {})
    differing = sorted(
        k for k, v in (reference.get("environment") or {}).items()
        if collected["environment"].get(k) != v
    )
    note = f" (note: environment differs from the reference's: {differing})" if differing else ""
    for name, _, _ in FINDERS:
        theirs, ours = expected.get(name), results.get(name)
        label = f"finder:{name}"
        if theirs is None:
            report.fail(label, f"not in the reference file (made by an older wheel_smoke.py?); "
                               f"kiln {_describe_record(ours)}")
        elif "raises" in theirs and ours is not None and "raises" in ours:
            if theirs["raises"] == ours["raises"]:
                report.ok(label, f"both raised {ours['raises']}")
            else:
                report.fail(label, f"tvm {_describe_record(theirs)}; kiln {_describe_record(ours)}"
                            + note)
        elif "value" in theirs and ours is not None and "value" in ours:
            if theirs["value"] == ours["value"]:
                report.ok(label, f"both {_describe_record(ours)}")
            else:
                report.fail(label, f"tvm {_describe_record(theirs)}; kiln {_describe_record(ours)}"
                            + note)
        else:
            report.fail(label, f"tvm {_describe_record(theirs)}; kiln {_describe_record(ours)}"
                        + note)


# --- check: the suite --------------------------------------------------------------------------


def cmd_check(args):
    reference = None
    report = Report()
    if args.reference:
        try:
            with open(args.reference, encoding="utf-8") as file:
                reference = json.load(file)
            if reference.get("schema") != SCHEMA:
                report.fail("reference", f"{args.reference}: schema {reference.get('schema')!r}, "
                                         f"expected {SCHEMA}")
        except (OSError, ValueError) as error:
            report.fail("reference", f"cannot read {args.reference}: {error}")
            reference = None
    if "tvm" in sys.modules:  # never: but kiln.support behaves as TVM's when TVM is loaded
        report.fail("no-tvm", "tvm is imported in the checking process")

    report.run("installed-location", check_installed, args.allow_source_tree)
    # 1. imports
    for module in MODULES:
        report.run(f"import:kiln.support.{module}", check_import, f"kiln.support.{module}")
    report.run("import:kiln.tvm", check_import, "kiln.tvm")
    report.run("import-time", check_import_time)
    # 2. tar
    report.run("tar:round-trip", check_tar_round_trip)
    report.run("tar:untar-subdirectories", check_untar_subdirectory)
    report.run("tar:normalize-file-list", check_normalize_file_list)
    report.run("tar:duplicate-base-names", check_tar_duplicate_names)
    # 3. popen_pool, in a child interpreter
    _run_child(report, "popen-pool:child", ["_popen"])
    # 4. libinfo, describe
    report.run("libinfo", check_libinfo, reference)
    report.run("libinfo:support-attributes", check_support_attributes, reference)
    report.run("describe", check_describe)
    # 5. versions
    versions = {}
    report.run("version:program", check_version_program, versions)
    report.run("version:python-m-kiln", check_version_module, versions)
    if args.allow_source_tree:
        report.ok("version:console-script", "skipped (--allow-source-tree)")
    else:
        report.run("version:console-script", check_version_console_script, versions)
    report.run("version:agree", check_versions_agree, versions)
    # 6. doctor
    report.run("doctor", check_doctor)
    # 7. finders, in a child interpreter
    try:
        check_finders(report, reference)
    except Exception as error:  # pylint: disable=broad-except
        report.fail("finders", f"{type(error).__name__}: {error}")

    total = report.passed + len(report.failed)
    print(f"# {total} checks: {report.passed} ok, {len(report.failed)} failed"
          + (f" ({', '.join(report.failed)})" if report.failed else ""), flush=True)
    return 1 if report.failed else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    reference = commands.add_parser("reference", help="record tvm.support's finder results")
    reference.add_argument("out", help="the JSON file to write")
    check = commands.add_parser("check", help="smoke-test the installed kiln")
    check.add_argument("--reference", help="a JSON file written by `reference`")
    check.add_argument(
        "--allow-source-tree",
        action="store_true",
        help="development: accept a kiln imported from a checkout; skip the console script",
    )
    collect = commands.add_parser("_collect", help=argparse.SUPPRESS)
    collect.add_argument("package", choices=("kiln", "tvm"))
    collect.add_argument("out")
    commands.add_parser("_popen", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    handler = {
        "reference": cmd_reference,
        "check": cmd_check,
        "_collect": cmd_collect_child,
        "_popen": cmd_popen_child,
    }[args.command]
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
