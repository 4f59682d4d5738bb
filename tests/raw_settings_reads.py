"""lint.settings_reads: no code of kiln reads a KILN_* variable from the environment except the
settings code (kiln/settings.h: src/base/settings*.cc; python/kiln/_settings.py).

    python raw_settings_reads.py SOURCE_DIR

Looks at kiln's library, CLI and Python package (src/ without tests and test support, tools/,
python/src/, python/kiln/). C++: getenv/secure_getenv/internal::env called with a "KILN_..."
literal, or `environ` on a line naming KILN_. Python (its syntax tree): os.environ.get, os.getenv,
os.environ[...] read, `... in os.environ` and os.environ.setdefault of a "KILN_..." string, given
as a literal or as a module's constant bound to one. Writing a variable for child processes
(os.environ[name] = ..., os.environ.pop) is no read. Prints each read as FILE:LINE and exits 1;
exits 0 with the number of files looked at.
"""

import ast
import os
import re
import sys

C_READ = re.compile(r'\b(?:secure_getenv|getenv|env)\s*\(\s*"KILN_')
C_ENVIRON = re.compile(r"\benviron\b.*KILN_|KILN_.*\benviron\b")
ALLOWED = {"src/base/settings.cc", "src/base/settings_table.cc", "python/kiln/_settings.py"}


def kiln_files(root):
    for top in ("src", "tools", os.path.join("python", "src"), os.path.join("python", "kiln")):
        for directory, _, names in os.walk(os.path.join(root, top)):
            rel_dir = os.path.relpath(directory, root)
            if rel_dir.startswith(os.path.join("src", "testing")):
                continue
            for name in sorted(names):
                if name.endswith(("_test.cc", "_test.py")):
                    continue
                if name.endswith((".cc", ".h", ".c", ".py")):
                    yield os.path.join(rel_dir, name)


def cpp_reads(text):
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("//", 1)[0]
        if C_READ.search(code) or C_ENVIRON.search(code):
            yield number


def is_environ(node):
    """os.environ (or a bare `environ` imported from os, or `os.environ if ... else ...`)."""
    if isinstance(node, ast.IfExp):
        return is_environ(node.body) or is_environ(node.orelse)
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ")


def string_constants(tree):
    """The module's names bound to a string (VARIABLE = "KILN_TVM")."""
    constants = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    constants[target.id] = node.value.value
    return constants


class PythonReads(ast.NodeVisitor):
    """The reads of one module; `constants`: the string constants of every module of the
    package, since one may import another's (from ._tvm_state import VARIABLE)."""

    def __init__(self, constants):
        self.lines = []
        self.constants = constants

    def kiln_name(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value.startswith("KILN_")
        if isinstance(node, ast.Name):
            return self.constants.get(node.id, "").startswith("KILN_")
        return False

    def visit_Call(self, node):
        function = node.func
        reads = isinstance(function, ast.Attribute) and (
            (function.attr in ("get", "setdefault") and is_environ(function.value))
            or function.attr == "getenv")
        if reads and node.args and self.kiln_name(node.args[0]):
            self.lines.append(node.lineno)
        self.generic_visit(node)

    def visit_Subscript(self, node):
        if isinstance(node.ctx, ast.Load) and is_environ(node.value) and self.kiln_name(node.slice):
            self.lines.append(node.lineno)
        self.generic_visit(node)

    def visit_Compare(self, node):
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)) and is_environ(right) and self.kiln_name(node.left):
                self.lines.append(node.lineno)
        self.generic_visit(node)


def main():
    root = sys.argv[1]
    found = []
    count = 0
    constants = {}
    for rel in kiln_files(root):
        if rel.endswith(".py"):
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                constants.update(string_constants(ast.parse(f.read(), rel)))
    for rel in kiln_files(root):
        if rel in ALLOWED:
            continue
        count += 1
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        if rel.endswith(".py"):
            reader = PythonReads(constants)
            reader.visit(ast.parse(text, rel))
            lines = reader.lines
        else:
            lines = list(cpp_reads(text))
        found += [f"{rel}:{line}" for line in lines]
    if found:
        print("KILN_* read from the environment outside kiln's settings (read it with "
              "kiln::settings / kiln._settings, and add it to src/base/settings_table.cc):")
        for where in found:
            print("  " + where)
        return 1
    print(f"no raw KILN_* reads in {count} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
