"""libinfo() and describe(): kiln's facts without TVM, TVM's build options once TVM is loaded; and
importing kiln loads neither TVM nor the extension."""

import os
import subprocess
import sys

from conftest import tvm_module


def python(code, **env):
    environment = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environment, check=True).stdout


def test_importing_kiln_support_imports_neither_tvm_nor_the_extension():
    out = python("import sys, kiln, kiln.support, kiln.tvm; "
                 "print(sorted(m for m in ('tvm', 'tvm_ffi', 'kiln._kiln') if m in sys.modules))")
    assert out.strip() == "[]"


def test_without_tvm_libinfo_is_kilns_and_honours_tvm_use_overrides():
    out = python("import json, kiln.support.libinfo as l; print(json.dumps(l.libinfo()))",
                 TVM_USE_ROCM="FORCED")
    import json

    info = json.loads(out)
    assert info["KILN_VERSION"] and info["GIT_COMMIT_HASH"]
    assert info["USE_ROCM"] == "FORCED"
    assert {"USE_CUDA", "USE_LLVM"} <= set(info)


def test_with_tvm_loaded_libinfo_is_tvms():
    tvm_libinfo = tvm_module("libinfo")
    import kiln.support.libinfo as kiln_libinfo

    assert kiln_libinfo.libinfo() == tvm_libinfo.libinfo()


def test_describe_prints_the_options(capsys):
    import kiln.support

    kiln.support.describe()
    out = capsys.readouterr().out
    assert out.startswith("Python Environment\n") and "CMake Options:" in out
    assert '"USE_CUDA"' in out and "Python version" in out
