"""tests/python_imports.py (ctest lint.python_imports) finds a cycle however its imports are
written, and none where a package only loads its own submodules: run on small packages made here."""

import pathlib
import subprocess
import sys
import textwrap

import pytest

LINT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "python_imports.py"


def lint(tmp_path, files):
    """Run the lint on a package `pkg` of `files` ({relative path: source}); (status, output)."""
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    for directory in [tmp_path / "pkg", *(p for p in (tmp_path / "pkg").rglob("*") if p.is_dir())]:
        (directory / "__init__.py").touch()
    done = subprocess.run([sys.executable, str(LINT), str(tmp_path / "pkg")], capture_output=True,
                          text=True, check=False)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("a_imports_b", [
    "from . import b",
    "from .b import name",
    "import pkg.b",
    "from pkg import b as other",
    "def later():\n    from . import b",
    "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from .b import name",
    "import importlib\nimportlib.import_module('pkg.b')",
    "import importlib\ndef later():\n    return importlib.import_module('.b', 'pkg')",
])
def test_every_form_of_import_makes_an_edge(tmp_path, a_imports_b):
    status, output = lint(tmp_path, {"a.py": a_imports_b, "b.py": "name = 1\nimport pkg.a\n"})
    assert status == 1, output
    assert "import cycle: pkg.a -> pkg.b -> pkg.a" in output, output
    assert "pkg.b imports pkg.a at pkg/b.py:2" in output, output


def test_a_tree_passes(tmp_path):
    status, output = lint(tmp_path, {
        "a.py": "from . import b\nfrom .sub import c\n",
        "b.py": "from .sub.c import name\n",
        "sub/c.py": "from .. import d\nname = 1\n",
        "d.py": "import os\n",
    })
    assert status == 0, output
    assert "no import cycle among the 6 modules" in output, output


def test_the_cycle_is_named_through_parents_and_packages(tmp_path):
    status, output = lint(tmp_path, {
        "a.py": "from .sub import c\n",
        "sub/__init__.py": "def f():\n    from .. import a\n",
        "sub/c.py": "from . import d\n",
        "sub/d.py": "import pkg.sub\n",
    })
    assert status == 1, output
    assert "import cycle: pkg.a -> pkg.sub.c -> pkg.sub.d -> pkg.sub -> pkg.a" in output, output


def test_a_package_loading_its_listed_submodules_is_no_cycle(tmp_path):
    lazy = """\
        import importlib
        _MODULES = ("a",)
        def __getattr__(name):
            if name in _MODULES:
                return importlib.import_module(f"{__name__}.{name}")
            raise AttributeError(name)
        """
    # worker.py imports the package but is not in its list: no cycle.
    status, output = lint(tmp_path, {"__init__.py": lazy, "a.py": "x = 1\n",
                                     "worker.py": "import pkg\n"})
    assert status == 0, output
    # a.py is: pkg -> pkg.a -> pkg.
    status, output = lint(tmp_path, {"a.py": "from . import worker\n"})
    assert status == 1 and "pkg -> pkg.a -> pkg.worker -> pkg" in output, output


def test_an_unbounded_computed_import_counts_as_every_module_it_can_name(tmp_path):
    status, output = lint(tmp_path, {
        "a.py": "import importlib\n"
                "def load(name):\n    return importlib.import_module(f'pkg.{name}')\n",
        "b.py": "from . import a\n",
    })
    assert status == 1 and "pkg.a -> pkg.b -> pkg.a" in output, output
    # Bounded by a loop over a list imported from another module: only those.
    status, output = lint(tmp_path, {
        "a.py": "import importlib\nfrom .names import NAMES\nfor name in NAMES:\n"
                "    importlib.import_module(f'pkg.{name}')\n",
        "names.py": "NAMES = ['c']\n",
        "c.py": "x = 1\n",
    })
    assert status == 0, output


def test_the_package_of_this_checkout_has_no_cycle():
    done = subprocess.run([sys.executable, str(LINT)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
