"""describe(): tvm.support.describe()'s report, with kiln's facts when TVM is not loaded."""

from __future__ import annotations

import json
import platform
import sys
import textwrap

from .libinfo import libinfo


def describe() -> None:
    info = dict(sorted(libinfo().items()))
    tvm = sys.modules.get("tvm")
    print("Python Environment")
    sys_version = sys.version.replace("\n", " ")
    machine = platform.uname()
    uname = f"{machine.system} {machine.release} {machine.version} {machine.machine}"
    if tvm is not None:
        version = f"TVM version    = {tvm.__version__}"
    else:
        from .. import __version__  # pylint: disable=import-outside-toplevel

        version = f"kiln version   = {__version__}"
    lines = [
        version,
        f"Python version = {sys_version} ({sys.maxsize.bit_length() + 1} bit)",
        f"uname          = {uname}",
    ]
    print(textwrap.indent("\n".join(lines), prefix="  "))
    print("CMake Options:")
    print(textwrap.indent(json.dumps(info, indent=2), prefix="  "))
