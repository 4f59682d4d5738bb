"""Run by ctest as lint.python_imports: the modules of the Python package (python/kiln) import one
another as a tree, never in a circle.

Every import counts, wherever it is written: at module level, inside a function (a lazy import
is still an edge: once both modules are loaded the circle is there, and which one runs first
depends on who imports first), under ``if TYPE_CHECKING:``, and ``importlib.import_module()`` /
``__import__()`` calls. A call's computed name is resolved when it can be: ``__name__``, and a
name that a ``for NAME in LIST`` loop or an ``if NAME in LIST`` test around the call bounds to
a literal list of strings (in this file or imported from another module of the package);
otherwise the call counts as importing every module its name can match.

Not counted: that a package's ``__init__`` runs before its submodules (implied by every import,
so that a package which loads its own submodules lazily is no circle).

Usage: python_imports.py [PACKAGE_DIR]   (default: python/kiln beside this tests/ folder)
Exit status 0 when the graph has no cycle; 1, naming each cycle (module chain, with the file and
line of every import in it), when it has.
"""

from __future__ import annotations

import ast
import pathlib
import re
import sys
from dataclasses import dataclass

IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    where: str  # path:line of the import


def module_names(package_dir: pathlib.Path) -> dict[str, pathlib.Path]:
    """{dotted module name: file} for every .py file of the package (and .pyi stubs of extension
    modules, which import nothing of the package but can be imported)."""
    root = package_dir.parent
    names: dict[str, pathlib.Path] = {}
    for path in sorted(package_dir.rglob("*.py*")):
        if path.suffix not in (".py", ".pyi") or "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        if path.suffix == ".py" or name not in names:
            names[name] = path
    return names


def is_package(path: pathlib.Path) -> bool:
    return path.stem == "__init__"


class Importer:
    """The edges of one module: every import it can make."""

    def __init__(self, name: str, path: pathlib.Path, modules: dict[str, pathlib.Path],
                 constants: ConstantLists) -> None:
        self.name = name
        self.path = path
        self.modules = modules
        self.constants = constants
        self.package = name if is_package(path) else name.rpartition(".")[0]
        self.edges: list[Edge] = []
        # path:line of an import names the file from the package's parent (kiln/tvm.py).
        self.where = path.relative_to(path.parents[name.count(".") + int(is_package(path))])

    def add(self, target: str | None, node: ast.AST) -> None:
        if target is None or target == self.name:
            return
        if target in self.modules:
            self.edges.append(Edge(self.name, target, f"{self.where}:{node.lineno}"))

    def absolute(self, module: str | None, level: int) -> str:
        """The module that `from <dots><module> import ...` names."""
        if level == 0:
            return module or ""
        base = self.package.split(".")
        if level > 1:
            base = base[: -(level - 1)]
        return ".".join([*base, module] if module else base)

    def visit(self, tree: ast.Module) -> list[Edge]:
        parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                parents[child] = parent
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.add(alias.name, node)
            elif isinstance(node, ast.ImportFrom):
                base = self.absolute(node.module, node.level)
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    # `from pkg import name`: the submodule pkg.name when there is one, else pkg.
                    self.add(submodule if submodule in self.modules else base, node)
            elif isinstance(node, ast.Call) and is_import_call(node) and node.args:
                for target in self.computed_targets(node.args[0], node, parents):
                    self.add(target, node)
        return self.edges

    def computed_targets(self, argument: ast.expr, call: ast.Call,
                         parents: dict[ast.AST, ast.AST]) -> list[str]:
        """The modules an import_module(argument) call can load."""
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            text = argument.value
            if text.startswith("."):
                dots = len(text) - len(text.lstrip("."))
                return [self.absolute(text[dots:] or None, dots)]
            return [text]
        if not isinstance(argument, ast.JoinedStr):
            return []  # a name from data (a task's module): not one the package's code names
        choices: list[list[str] | None] = []  # per part: its possible texts, None: any identifier
        for part in argument.values:
            if isinstance(part, ast.Constant):
                choices.append([str(part.value)])
            elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name):
                if part.value.id == "__name__":
                    choices.append([self.name])
                else:
                    choices.append(self.bound(part.value.id, call, parents))
            else:
                choices.append(None)
        pattern = "".join(
            f"(?:{IDENTIFIER}(?:\\.{IDENTIFIER})*)" if texts is None
            else "(?:" + "|".join(re.escape(text) for text in texts) + ")"
            for texts in choices)
        return [module for module in self.modules if re.fullmatch(pattern, module)]

    def bound(self, variable: str, node: ast.AST, parents: dict[ast.AST, ast.AST]
              ) -> list[str] | None:
        """The strings `variable` is bound to at `node` by an enclosing ``for variable in LIST``
        or ``if variable in LIST``; None when nothing bounds it."""
        child, parent = node, parents.get(node)
        while parent is not None:
            if (isinstance(parent, ast.For) and child in parent.body
                    and isinstance(parent.target, ast.Name) and parent.target.id == variable):
                return self.constants.strings(self.name, parent.iter)
            if isinstance(parent, ast.If) and child in parent.body:
                for test in ast.walk(parent.test):
                    if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
                            and test.left.id == variable and len(test.ops) == 1
                            and isinstance(test.ops[0], ast.In)):
                        found = self.constants.strings(self.name, test.comparators[0])
                        if found is not None:
                            return found
            child, parent = parent, parents.get(parent)
        return None


def is_import_call(node: ast.Call) -> bool:
    function = node.func
    if isinstance(function, ast.Name):
        return function.id in ("__import__", "import_module")
    return (isinstance(function, ast.Attribute) and function.attr == "import_module"
            and isinstance(function.value, ast.Name) and function.value.id == "importlib")


class ConstantLists:
    """Module-level names bound to literal lists of strings, across the package's modules."""

    def __init__(self, modules: dict[str, pathlib.Path], trees: dict[str, ast.Module]) -> None:
        self.modules = modules
        self.trees = trees

    def strings(self, module: str, node: ast.expr, depth: int = 0) -> list[str] | None:
        if depth > 8:
            return None
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            found: list[str] = []
            for item in node.elts:
                if isinstance(item, ast.Starred):
                    inner = self.strings(module, item.value, depth + 1)
                elif isinstance(item, ast.Constant) and isinstance(item.value, str):
                    inner = [item.value]
                else:
                    inner = None
                if inner is None:
                    return None
                found += inner
            return found
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args \
                and node.func.id in ("tuple", "list", "set", "frozenset") and len(node.args) == 1:
            return self.strings(module, node.args[0], depth + 1)
        if isinstance(node, ast.Name):
            return self.name_in(module, node.id, depth + 1)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            other = self.imported_module(module, node.value.id)
            return None if other is None else self.name_in(other, node.attr, depth + 1)
        return None

    def name_in(self, module: str, name: str, depth: int) -> list[str] | None:
        """What `name` is bound to at the top of `module` (following `from m import name`)."""
        tree = self.trees.get(module)
        if tree is None:
            return None
        for statement in tree.body:
            if isinstance(statement, ast.Assign):
                if any(isinstance(t, ast.Name) and t.id == name for t in statement.targets):
                    return self.strings(module, statement.value, depth)
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                if isinstance(statement.target, ast.Name) and statement.target.id == name:
                    return self.strings(module, statement.value, depth)
            elif isinstance(statement, ast.ImportFrom):
                for alias in statement.names:
                    if (alias.asname or alias.name) == name:
                        source = self.from_module(module, statement)
                        return self.name_in(source, alias.name, depth + 1)
        return None

    def imported_module(self, module: str, name: str) -> str | None:
        """The package module that `name` is in `module` (``from . import support``)."""
        tree = self.trees.get(module)
        if tree is None:
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        candidate = f"{self.from_module(module, node)}.{alias.name}"
                        if candidate in self.modules:
                            return candidate
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname == name and alias.name in self.modules:
                        return alias.name
        return None

    def from_module(self, module: str, node: ast.ImportFrom) -> str:
        if node.level == 0:
            return node.module or ""
        package = module if is_package(self.modules[module]) else module.rpartition(".")[0]
        base = package.split(".")
        if node.level > 1:
            base = base[: -(node.level - 1)]
        return ".".join([*base, node.module] if node.module else base)


def cycles(edges: list[Edge]) -> list[tuple[list[str], list[Edge]]]:
    """Each strongly connected component that has a cycle: its modules, and its shortest cycle
    (as edges) through the first of them."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for edge in graph.get(node, []):
            if edge.target not in index:
                connect(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    found = []
    for component in components:
        members = set(component)
        start = min(component)
        if len(component) == 1 and not any(e.target == start for e in graph.get(start, [])):
            continue
        found.append((sorted(component), shortest_cycle(start, members, graph)))
    return found


def shortest_cycle(start: str, members: set[str], graph: dict[str, list[Edge]]) -> list[Edge]:
    """The shortest path from `start` back to itself inside one component (breadth first)."""
    came: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in graph.get(node, []):
                if edge.target not in members:
                    continue
                if edge.target == start:
                    path = [edge]
                    while path[0].source != start:
                        path.insert(0, came[path[0].source])
                    return path
                if edge.target not in came:
                    came[edge.target] = edge
                    following.append(edge.target)
        frontier = following
    return []


def main(argv: list[str]) -> int:
    default = pathlib.Path(__file__).resolve().parent.parent / "python" / "kiln"
    package_dir = pathlib.Path(argv[1]) if len(argv) > 1 else default
    modules = module_names(package_dir)
    trees = {name: ast.parse(path.read_text(encoding="utf-8"), str(path))
             for name, path in modules.items()}
    constants = ConstantLists(modules, trees)
    edges: list[Edge] = []
    for name, path in modules.items():
        edges += Importer(name, path, modules, constants).visit(trees[name])
    found = cycles(edges)
    if not found:
        print(f"no import cycle among the {len(modules)} modules of {package_dir} "
              f"({len(edges)} imports)")
        return 0
    for members, cycle in found:
        chain = " -> ".join([cycle[0].source, *(edge.target for edge in cycle)])
        print(f"import cycle: {chain}")
        for edge in cycle:
            print(f"  {edge.source} imports {edge.target} at {edge.where}")
        if len(members) > len(cycle):
            print(f"  in a circle of {len(members)} modules: {', '.join(members)}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
