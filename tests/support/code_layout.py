"""Where the test module of each app module lives (no Django needed).

Tests mirror the code: every module of `sessions_app/` with logic has a test module named
after it, in the folder of its layer. A module has logic when the bodies of its functions
hold at least `LOGIC_STATEMENTS` statements; `__init__.py`, migrations and the wiring
modules in `WIRING` never count. Smaller modules (a view that renders one template, a
selector of two queries) are exercised through the modules that call them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "sessions_app"
TESTS = ROOT / "tests"

LOGIC_STATEMENTS = 20

# Modules that only declare: the admin registrations, the app config, the route tables.
WIRING = {"admin.py", "apps.py", "urls.py", "routing.py"}

# Package (relative to sessions_app/) -> the test folders and the test module's name.
# The core, the agent and the services own the plain name in their layer; the other
# packages of a layer add what they are, so `selectors/usage.py` and `services/usage.py`
# get a test module each.
LAYOUT: dict[str, tuple[tuple[str, ...], str]] = {
    # Pure code tests without the database, unless what it promises needs sessions (the
    # sandbox's escape suite, what a share link shows).
    "core": (("unit", "service"), "test_{}.py"),
    "agent": (("unit", "service"), "test_{}.py"),
    "agent/providers": (("unit",), "test_{}.py"),
    # One module per tool (agent/tools/read.py -> test_tool_read.py); the registry, the
    # package's __init__, is test_tools.py.
    "agent/tools": (("unit", "service"), "test_tool_{}.py"),
    "services": (("service",), "test_{}.py"),
    "services/jobs": (("service",), "test_job_{}.py"),
    "selectors": (("service",), "test_{}_selectors.py"),
    "selectors/panels": (("service",), "test_{}_panel.py"),
    # The model selectors (selectors/llm/keys.py -> test_llm_keys_selectors.py).
    "selectors/llm": (("service",), "test_llm_{}_selectors.py"),
    "presentation": (("service",), "test_{}_presentation.py"),
    "templatetags": (("service",), "test_{}.py"),
    "management/commands": (("service",), "test_{}_command.py"),
    "management": (("unit", "service"), "test_{}.py"),
    "views": (("service/views",), "test_{}_views.py"),
    # The top-level modules: pure ones (rendering, diff_rendering) test without the database.
    "": (("unit", "service"), "test_{}.py"),
}


@dataclass(frozen=True)
class Expected:
    module: str  # path relative to sessions_app/, e.g. "core/truncate.py"
    tests: tuple[str, ...]  # the accepted test modules, relative to tests/

    def found(self) -> bool:
        return any((TESTS / t).is_file() for t in self.tests)


def logic_statements(path: Path) -> int:
    """Statements inside the module's function bodies (nested ones included)."""
    tree = ast.parse(path.read_text())
    functions = [
        n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    inner = sum(1 for f in functions for n in ast.walk(f) if isinstance(n, ast.stmt))
    return inner - len(functions)


def modules_with_logic() -> list[str]:
    found = []
    for path in sorted(APP.rglob("*.py")):
        rel = path.relative_to(APP)
        if "migrations" in rel.parts or rel.name == "__init__.py":
            continue
        if len(rel.parts) == 1 and rel.name in WIRING:
            continue
        if logic_statements(path) >= LOGIC_STATEMENTS:
            found.append(rel.as_posix())
    return found


def expected_test(module: str) -> Expected:
    package, _, name = module.rpartition("/")
    folders, pattern = LAYOUT[package]
    stem = name.removesuffix(".py")
    return Expected(module, tuple(f"{folder}/{pattern.format(stem)}" for folder in folders))


def expected_tests() -> list[Expected]:
    return [expected_test(m) for m in modules_with_logic()]


def accepted_names() -> set[str]:
    """The test module names a module of the app (any size), a package of it, or a module
    of piweb/ gives."""
    names = set()
    for path in APP.rglob("*.py"):
        rel = path.relative_to(APP)
        if "migrations" in rel.parts:
            continue
        if rel.name == "__init__.py":  # a package: named in its parent's layout
            if len(rel.parts) == 1:
                continue
            rel = rel.parent.with_suffix(".py")
            if rel.parent.as_posix().replace(".", "") not in LAYOUT:
                continue
        names.update(expected_test(rel.as_posix()).tests)
    for path in (ROOT / "piweb").glob("*.py"):
        names.update(f"{layer}/test_{path.stem}.py" for layer in ("unit", "service"))
    return names


def test_modules() -> list[str]:
    """Every test module of the unit and service layers, relative to tests/."""
    return sorted(
        p.relative_to(TESTS).as_posix()
        for folder in ("unit", "service")
        for p in (TESTS / folder).rglob("test_*.py")
    )
