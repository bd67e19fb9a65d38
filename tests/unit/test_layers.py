"""The import rules of docs/ARCHITECTURE.md for views, template tags, panels and the pure core, read from
the source (no Django needed)."""

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "sessions_app"


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports (absolute names; `from x import y` gives x and x.y)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def modules(folder: str) -> list[Path]:
    return sorted((APP / folder).glob("*.py"))


@pytest.mark.parametrize("path", modules("views"), ids=lambda p: p.name)
def test_a_view_module_imports_no_other_view_nor_a_template_tag(path):
    bad = {
        name
        for name in imported_modules(path)
        if name.startswith(("sessions_app.views.", "sessions_app.templatetags"))
    }
    assert not bad, f"{path.name} imports {sorted(bad)}: share through selectors/ instead"


@pytest.mark.parametrize("path", modules("templatetags"), ids=lambda p: p.name)
def test_a_template_tag_only_formats(path):
    """No view, model, service, selector or database access: tags get their data from
    the context the panel builders made."""
    forbidden = (
        "sessions_app.views",
        "sessions_app.models",
        "sessions_app.services",
        "sessions_app.selectors",
        "django.db",
    )
    bad = {name for name in imported_modules(path) if name.startswith(forbidden)}
    assert not bad, f"{path.name} imports {sorted(bad)}"
    assert ".objects." not in path.read_text()


def test_panel_builders_never_import_views():
    for path in sorted((APP / "selectors").rglob("*.py")):
        bad = {n for n in imported_modules(path) if n.startswith("sessions_app.views")}
        assert not bad, f"{path.relative_to(APP)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", [*modules("views"), APP / "consumers.py"], ids=lambda p: p.name)
def test_views_and_consumers_read_through_selectors(path):
    """No ORM query written in a view or the consumer (`Model.objects…`)."""
    source = path.read_text()
    assert ".objects." not in source, f"{path.name} queries the ORM itself"
    assert "leaf.pi_id if" not in source, "use Session.leaf_pi_id"


@pytest.mark.parametrize("path", modules("core"), ids=lambda p: p.name)
def test_the_pure_core_imports_no_django_and_nothing_outside_the_core(path):
    """The core runs without Django: in tests, and as the follower's read-ahead helper
    processes (`python -m sessions_app.core.read_ahead`)."""
    bad = {
        name
        for name in imported_modules(path)
        if name.split(".")[0] == "django"
        or (name.startswith("sessions_app.") and not name.startswith("sessions_app.core"))
    }
    assert not bad, f"{path.name} imports {sorted(bad)}"
