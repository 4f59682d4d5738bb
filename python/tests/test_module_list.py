"""kiln.support's modules are listed once, kiln.support._MODULES: what lists them elsewhere (the
imports for type checkers, kiln.tvm's replacement table, the wheel check's reference list, the
typing check's user script, the files of python/kiln/support/, tvm.support itself) agrees with it.
"""

import ast
import pathlib
import pkgutil

import kiln.support
import kiln.tvm
from conftest import tvm_module

TESTS_DIR = pathlib.Path(__file__).resolve().parent
SUPPORT_DIR = pathlib.Path(kiln.support.__file__).resolve().parent
MODULES = kiln.support._MODULES  # pylint: disable=protected-access

# Public modules of kiln/support/ that tvm.support has not: the pool's worker program (TVM's
# is tvm.exec.popen_worker).
KILN_ONLY = {"popen_worker"}


def type_checking_imports():
    """The names kiln/support/__init__.py imports under `if TYPE_CHECKING:`."""
    tree = ast.parse((SUPPORT_DIR / "__init__.py").read_text(encoding="utf-8"))
    names = []
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.level == 1:
                    names += [statement.module or alias.name for alias in statement.names]
    return names


def test_the_package_exports_its_modules():
    assert kiln.support.__all__ == ["describe", *MODULES]
    assert len(set(MODULES)) == len(MODULES)


def test_type_checkers_see_the_same_modules():
    assert sorted(type_checking_imports()) == sorted(MODULES)


def test_every_module_has_its_file_and_every_public_file_is_listed():
    files = {path.stem for path in SUPPORT_DIR.glob("*.py") if not path.stem.startswith("_")}
    assert files == set(MODULES) | KILN_ONLY


def test_kiln_tvm_replaces_every_module():
    assert kiln.tvm.MODULES is MODULES
    assert {module for module, _ in kiln.tvm.GLOBALS.values()} <= set(MODULES)


def test_the_wheel_checks_reference_list_is_the_same():
    """wheel_smoke.py runs where kiln may be absent (against tvm.support): it keeps tvm.support's
    list of its own, which must be this one."""
    tree = ast.parse((TESTS_DIR / "wheel_smoke.py").read_text(encoding="utf-8"))
    lists = [ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == "MODULES" for t in node.targets)]
    assert len(lists) == 1 and sorted(lists[0]) == sorted(MODULES)


def test_the_typing_check_imports_every_module():
    """typing_user_script.py (test_typing.py) uses every module as a user would, by name."""
    tree = ast.parse((TESTS_DIR / "typing_user_script.py").read_text(encoding="utf-8"))
    names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and node.module == "kiln.support" for alias in node.names]
    assert set(MODULES) <= set(names)


def test_tvm_support_has_the_same_modules():
    tvm_module("cc")  # skips without apache-tvm
    import tvm.support  # pylint: disable=import-outside-toplevel

    found = {info.name for info in pkgutil.iter_modules(tvm.support.__path__)}
    assert found == set(MODULES)
