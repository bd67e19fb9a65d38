"""The import graph of the app's modules, read from the source (no Django needed), for the
cycle check (`tests/unit/test_import_cycles.py`).

A module's edges are every module of the app it imports, anywhere in it: at the top, and
inside functions too (an import in a function is the same dependency, only later). Python
imports a package before any module in it, so importing `a.b.c` from outside `a.b` also
runs `a/b/__init__.py`: that is an edge to the package as well. A cycle is a strongly
connected group of two or more modules.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from tests.support import layers


@dataclass(frozen=True)
class FunctionImport:
    """An import of a module of the app inside a function's body."""

    module: str  # the importing module
    imported: str  # the module of the app it imports
    line: int

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.imported} inside a function"


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if not any(part in layers.SKIPPED for part in path.relative_to(root).parts):
                found[layers.module_of(path, root)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of a dotted name that is a module of the app (None: not ours)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _targets(name: str, importer: str, modules: dict[str, Path]) -> set[str]:
    """The modules of the app importing `name` from `importer` runs: the module itself and
    the packages above it that `importer` is not inside (those are being imported already)."""
    target = _resolve(name, modules)
    if target is None:
        return set()
    found = {target}
    parts = target.split(".")
    for end in range(1, len(parts)):
        package = ".".join(parts[:end])
        if package in modules and not _within(importer, package):
            found.add(package)
    found.discard(importer)
    return found


def _function_import_nodes(tree: ast.AST) -> set[int]:
    """The ids of the import nodes inside a function's body (nested ones included)."""
    inner = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    inner.add(id(sub))
    return inner


@dataclass
class ImportGraph:
    edges: dict[str, set[str]]
    function_imports: list[FunctionImport]


def import_graph(root: Path = layers.ROOT, packages: tuple[str, ...] = layers.PACKAGES):
    """Every module of `packages` under `root` with the modules of the app it imports."""
    modules = _modules(root, packages)
    edges: dict[str, set[str]] = {name: set() for name in modules}
    function_imports = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        inner = _function_import_nodes(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            source = ast.Module(body=[node], type_ignores=[])
            imported = layers.imports_of(ast.unparse(source), name, path.name == "__init__.py")
            for dotted in imported:
                targets = _targets(dotted, name, modules)
                edges[name] |= targets
                if id(node) in inner:
                    function_imports += [
                        FunctionImport(name, t, node.lineno) for t in sorted(targets)
                    ]
    return ImportGraph(edges, sorted(set(function_imports), key=str))


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of two or more modules (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(frozenset(group))
    return found


def reaches(edges: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(edges.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return seen
