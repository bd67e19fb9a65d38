"""The ORM queries a service module writes itself, read from its source (no Django needed).

Services write; their reads come from selectors (docs/ARCHITECTURE.md). A query chain that
starts at a model's manager (`Model.objects…`, `get_user_model().objects…`) is sorted by
what it does:

- a lock: the chain takes `select_for_update()` (the row lock that precedes a write is
  the write's own business, so it stays in the service);
- a write: the chain ends in a method that writes (`create`, `update`, `delete`,
  `bulk_create`, `bulk_update`, `update_or_create`, `get_or_create`);
- a read: anything else (`filter(...).first()`, `.get`, `.exists()`, `.count()`,
  `.values_list`, a queryset returned or iterated).

`service_reads()` lists the reads, each as `"<module>:<function>: <chain>"`, e.g.
`"services/users.py:create_user: User.objects.filter.exists"`.
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "sessions_app"
SERVICES = APP / "services"

WRITES = {
    "create",
    "update",
    "delete",
    "bulk_create",
    "bulk_update",
    "update_or_create",
    "get_or_create",
}
LOCK = "select_for_update"


def _chain(node: ast.expr, inner: set[int]) -> tuple[str, list[str]]:
    """The root and the attribute names of a call chain, outermost last; the nodes inside
    it are added to `inner` so that they are not read again as chains of their own."""
    names: list[str] = []
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            inner.add(id(node.func))
            node = node.func
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
            inner.add(id(node.value))
            node = node.value
        else:
            return ast.unparse(node), names[::-1]


class _Reader(ast.NodeVisitor):
    def __init__(self, module: str) -> None:
        self.module = module
        self.scope: list[str] = []
        self.inner: set[int] = set()
        self.reads: list[str] = []

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def _expr(self, node: ast.Call | ast.Attribute) -> None:
        if id(node) not in self.inner:
            root, names = _chain(node, self.inner)
            if "objects" in names:
                methods = names[names.index("objects") + 1 :]
                if LOCK not in methods and not (methods and methods[-1] in WRITES):
                    where = ".".join(self.scope) or "<module>"
                    chain = ".".join([root, "objects", *methods])
                    self.reads.append(f"{self.module}:{where}: {chain}")
        self.generic_visit(node)

    visit_Call = visit_Attribute = _expr


def reads_in(source: str, module: str) -> list[str]:
    reader = _Reader(module)
    reader.visit(ast.parse(source))
    return reader.reads


def service_reads() -> list[str]:
    found: list[str] = []
    for path in sorted(SERVICES.rglob("*.py")):
        module = path.relative_to(APP).as_posix()
        found.extend(reads_in(path.read_text(), module))
    return found
