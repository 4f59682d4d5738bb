"""kiln.support.cc through ccache (ccache_env), as TVM's tests/python/support/test_ccache.py checks
tvm.support: the same compile from two different temporary directories, run with cwd there and
relative paths, is a ccache hit the second time."""

import os
import tempfile

import pytest

from conftest import require_tool
from kiln.support.cc import create_executable, create_shared

PROGRAM = '#include <cstdio>\nint main() { std::puts("%s"); return 0; }\n'


def compile_in_fresh_directory(create, text, output):
    with tempfile.TemporaryDirectory() as directory:
        with open(os.path.join(directory, "prog.cpp"), "w", encoding="utf-8") as file:
            file.write(PROGRAM % text)
        log = os.path.join(directory, "ccache.log")
        env = {"CCACHE_COMPILERCHECK": "content", "CCACHE_LOGFILE": log}
        create(output, ["prog.cpp"], ["-c"], cwd=directory, ccache_env=env)
        assert os.path.isfile(os.path.join(directory, output))
        with open(log, encoding="utf-8") as file:
            return file.read()


@pytest.mark.parametrize("create,text,output", [
    (create_shared, "kiln shared", "prog.o"),
    (create_executable, "kiln executable", "prog"),
])
def test_second_compile_is_a_ccache_hit(create, text, output):
    require_tool("ccache")
    compile_in_fresh_directory(create, text, output)
    log = compile_in_fresh_directory(create, text, output)
    assert "Succeeded getting cached result" in log
