"""No import cycles among the app's modules (sessions_app/ and piweb/), read from the source
(`tests/support/import_cycles.py`; no Django needed).

The layer table (`test_layers.py`) allows imports within a layer, so it cannot see a cycle
inside one (services/ had a seven-module one). An import inside a function counts: it is
the same dependency, only later, and was how the cycles were hidden. A module of the app
may import another inside a function only when it is listed below with its reason.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.support import import_cycles

pytestmark = pytest.mark.embedded

# Importing modules of the app inside a function is allowed only here, each with its reason.
FUNCTION_IMPORTS_ALLOWED = {
    "sessions_app.apps": (
        "AppConfig.ready: Django imports apps.py while it fills the app registry, before "
        "models can be imported; ready() runs once they can, and imports the job kinds, the "
        "entry-written subscribers and the signal receivers so that every process has them"
    ),
}

# The chat send path: the view, the service, the entry write.
CHAT_SEND_PATH = (
    "sessions_app.views.chat",
    "sessions_app.services.chat",
    "sessions_app.services.sessions",
)


@pytest.fixture(scope="module")
def graph():
    return import_cycles.import_graph()


def test_no_module_of_the_app_takes_part_in_an_import_cycle(graph):
    found = [sorted(group) for group in import_cycles.cycles(graph.edges)]
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_modules_import_inside_functions_only_where_the_list_says_why(graph):
    unlisted = [str(f) for f in graph.function_imports if f.module not in FUNCTION_IMPORTS_ALLOWED]
    assert not unlisted, "imports inside functions (move them up, or list why):\n" + "\n".join(
        unlisted
    )
    importing = {f.module for f in graph.function_imports}
    assert set(FUNCTION_IMPORTS_ALLOWED) <= importing, "a listed module no longer needs it"


def test_the_chat_send_path_imports_nothing_that_imports_it_back(graph):
    for module in CHAT_SEND_PATH:
        assert module in graph.edges, module
        back = {m for m in import_cycles.reaches(graph.edges, module) if module in
                import_cycles.reaches(graph.edges, m)}  # fmt: skip
        assert not back, f"{module} is imported back by {sorted(back)}"
    # The entry write imports none of the features that react to a new entry.
    written = import_cycles.reaches(graph.edges, "sessions_app.services.sessions")
    for feature in ("search", "write_back", "jobs.write_back", "importer", "following"):
        assert f"sessions_app.services.{feature}" not in written, feature


# --- the check itself, on modules made for it ---------------------------------------------


def _package(root, files: dict[str, str]) -> None:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path):
    _package(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/a.py": "from app import b\n",
            "app/b.py": "def later():\n    from app.a import thing\n    return thing\n",
            "app/c.py": "import app.a\n",
        },
    )
    graph = import_cycles.import_graph(tmp_path, ("app",))
    assert import_cycles.cycles(graph.edges) == [frozenset({"app.a", "app.b"})]
    assert [str(f) for f in graph.function_imports] == ["app.b:2 imports app.a inside a function"]


def test_a_cycle_through_a_package_that_imports_its_modules_is_found(tmp_path):
    """Importing app.jobs.x runs app/jobs/__init__.py first, which imports app.jobs.y."""
    _package(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/jobs/__init__.py": "from app.jobs import y\n",
            "app/jobs/x.py": "X = 1\n",
            "app/jobs/y.py": "from app import feature\n",
            "app/feature.py": "from app.jobs.x import X\n",
        },
    )
    graph = import_cycles.import_graph(tmp_path, ("app",))
    assert import_cycles.cycles(graph.edges) == [
        frozenset({"app.jobs", "app.jobs.y", "app.feature"})
    ]


def test_modules_that_import_each_other_in_one_direction_make_no_cycle(tmp_path):
    _package(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/jobs/__init__.py": "from app.jobs import x\n",
            "app/jobs/x.py": "from app import base\n",
            "app/base.py": "import json\n",
            "app/top.py": "from app.jobs.x import X\nfrom . import base\n",
        },
    )
    graph = import_cycles.import_graph(tmp_path, ("app",))
    assert import_cycles.cycles(graph.edges) == []
    assert graph.edges["app.top"] == {"app.jobs", "app.jobs.x", "app.base"}
