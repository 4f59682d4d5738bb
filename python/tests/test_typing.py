"""kiln's Python API is typed: mypy --strict sees kiln.support's signatures (kiln/py.typed, the
annotations of python/kiln/, and kiln/_kiln.pyi, the stub of the extension module).

- typing_user_script.py, a TVM user's script calling kiln.support with tvm.support 0.27's
  signatures, passes mypy --strict with kiln found as an installed package (on the interpreter's
  path, where mypy reads a package only when it has py.typed);
- that script calls every public name of every kiln.support module, so a new public function
  without a typed call fails here;
- calls with wrong types fail mypy, with errors naming kiln's signatures and the stub's: the types
  are real, not Any;
- mypy --strict over the package itself passes (``mypy --strict python/kiln`` from the
  repository's root).

Each check runs for the interpreter's Python version and for 3.10, the oldest kiln supports. The
extension need not be built (mypy reads its stub); without mypy the tests skip, saying so.
"""

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
PYTHON_DIR = TESTS_DIR.parent
PACKAGE_DIR = PYTHON_DIR / "kiln"
SUPPORT_DIR = PACKAGE_DIR / "support"
REPO_DIR = PYTHON_DIR.parent
USER_SCRIPT = TESTS_DIR / "typing_user_script.py"
OLDEST_PYTHON = "3.10"

# None: the interpreter's own version.
PYTHON_VERSIONS = pytest.mark.parametrize("python_version", [None, OLDEST_PYTHON])


def mypy(args, tmp_path, python_version, cwd, pythonpath=None):
    """`python -m mypy --strict --no-incremental ARGS` in `cwd`, with PYTHONPATH `pythonpath`
    (unset when None); skips when mypy is missing or does not support `python_version`."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed in this interpreter (python/requirements-dev.txt lists "
                    "it; scripts/install-deps.sh installs it)")
    command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
               "--cache-dir", str(tmp_path / "mypy-cache")]
    if python_version is not None:
        command += ["--python-version", python_version]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    done = subprocess.run(command + [str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False, timeout=600)
    output = done.stdout + done.stderr
    if done.returncode == 2 and f"Python {python_version} is not supported" in output:
        pytest.skip(f"this mypy does not check Python {python_version}: {output.strip()}")
    print(f"$ {' '.join(command + [str(a) for a in args])}\n{output}")
    return done.returncode, output


@PYTHON_VERSIONS
def test_the_user_script_passes_mypy_strict_against_kiln_as_installed(tmp_path, python_version):
    returncode, output = mypy([USER_SCRIPT], tmp_path, python_version, cwd=tmp_path,
                              pythonpath=PYTHON_DIR)
    assert returncode == 0, f"mypy --strict failed on {USER_SCRIPT.name}:\n{output}"


@PYTHON_VERSIONS
def test_wrong_types_fail_mypy_with_kilns_signatures_and_the_stubs(tmp_path, python_version):
    script = tmp_path / "wrong_types.py"
    script.write_text("import kiln.support.cc\n"
                      "from kiln._native import native\n"
                      "\n"
                      "kiln.support.cc.create_shared(1, 2)\n"
                      "native.which(1)\n"
                      "kiln.support.nvcc.have_fp16(80)\n", encoding="utf-8")
    returncode, output = mypy([script], tmp_path, python_version, cwd=tmp_path,
                              pythonpath=PYTHON_DIR)
    assert returncode == 1, output
    expected = [
        'wrong_types.py:4: error: Argument 1 to "create_shared" has incompatible type "int"',
        'wrong_types.py:4: error: Argument 2 to "create_shared" has incompatible type "int"',
        # kiln/_kiln.pyi, not Any:
        'wrong_types.py:5: error: Argument 1 to "which" has incompatible type "int"; expected "str"',
        # a module kiln.support loads on first use, as its attribute:
        'wrong_types.py:6: error: Argument 1 to "have_fp16" has incompatible type "int"',
    ]
    missing = [line for line in expected if line not in output]
    assert not missing, f"mypy did not report {missing}:\n{output}"
    assert "import-untyped" not in output and "import-not-found" not in output, output


@PYTHON_VERSIONS
def test_the_package_passes_mypy_strict(tmp_path, python_version):
    returncode, output = mypy([PACKAGE_DIR.relative_to(REPO_DIR)], tmp_path, python_version,
                              cwd=REPO_DIR)
    assert returncode == 0, f"mypy --strict python/kiln failed:\n{output}"


def strings(node, assignments):
    """The strings of a list or tuple literal of str constants, following `*NAME` to NAME's
    literal (kiln.support's ``__all__ = ["describe", *_MODULES]``)."""
    names = []
    for item in node.elts:
        if isinstance(item, ast.Starred) and isinstance(item.value, ast.Name):
            names += strings(assignments[item.value.id], assignments)
        else:
            assert isinstance(item, ast.Constant) and isinstance(item.value, str), ast.dump(item)
            names.append(item.value)
    return names


def public_names(path):
    """A module's public names, read from its source (importing kiln.support's modules would
    need the extension): its ``__all__``, else its functions and classes not named _private."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assignments = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            assignments[target.id] = value
    if "__all__" in assignments:
        return strings(assignments["__all__"], assignments)
    return [node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")]


def public_api():
    """{module name: its public names} for kiln.support and each module in its ``__all__``."""
    package = public_names(SUPPORT_DIR / "__init__.py")
    api = {"kiln.support": package}
    for name in package:
        if (SUPPORT_DIR / f"{name}.py").is_file():
            api[f"kiln.support.{name}"] = public_names(SUPPORT_DIR / f"{name}.py")
    return api


def dotted(node):
    """"a.b.c" for the expression a.b.c (names and attributes only), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def used_names(tree):
    """{(module, name)} that a script uses: ``module.name`` through its imports (``import
    kiln.support``, ``from kiln.support import cc`` then ``cc.get_cc``), and names it imports
    from a module and then uses (``from kiln.support.popen_pool import StatusKind``)."""
    aliases = {}  # local name -> the dotted name it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                aliases[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load):
            name = dotted(node)
            if name is None:
                continue
            root, *rest = name.split(".")
            if root not in aliases:
                continue
            parts = aliases[root].split(".") + rest
            used.update((".".join(parts[:i]), parts[i]) for i in range(1, len(parts)))
    return used


def test_the_user_script_calls_every_public_name_of_kiln_support():
    api = public_api()
    assert len(api) > 10 and "describe" in api["kiln.support"], api
    used = used_names(ast.parse(USER_SCRIPT.read_text(encoding="utf-8")))
    missing = [f"{module}.{name}" for module, names in api.items() for name in names
               if (module, name) not in used]
    assert not missing, (f"{USER_SCRIPT.name} does not use {missing}: add a typed call of each, "
                         "as a TVM user would write it")


def test_used_names_follows_imports_and_aliases():
    tree = ast.parse("import kiln.support\n"
                     "import kiln.support.tar as t\n"
                     "from kiln.support import cc\n"
                     "from kiln.support.utils import which as find, tempdir\n"
                     "kiln.support.describe()\n"
                     "cc.get_cc()\n"
                     "t.tar('a', [])\n"
                     "find('gcc')\n")
    used = used_names(tree)
    assert {("kiln.support", "describe"), ("kiln.support", "cc"), ("kiln.support.cc", "get_cc"),
            ("kiln.support.tar", "tar"), ("kiln.support.utils", "which")} <= used, used
    assert ("kiln.support.utils", "tempdir") not in used  # imported, never used
