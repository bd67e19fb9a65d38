"""The import rules of docs/ARCHITECTURE.md, read from the source (no Django needed).

The generated check (`tests/support/layers.py`) reads the document's layer table and
checks every module of the app against it; the tests below it show that it fails on each
break the table forbids. The rules the table cannot say (no view imports another, no ORM
query in a view, tags only format) keep their own tests.
"""

import ast
from pathlib import Path

import pytest

from tests.support import layers, service_reads

pytestmark = pytest.mark.embedded  # needs no database: it runs in both passes

APP = Path(__file__).resolve().parents[2] / "sessions_app"
TABLE = layers.DOC.read_text()


def test_every_module_imports_only_what_the_architecture_table_allows():
    breaks = layers.check_tree()
    assert not breaks, "imports the table forbids:\n" + "\n".join(map(str, breaks))


def _breaks(path: str, source: str, markdown: str = TABLE) -> list[str]:
    """The breaks the check finds in `source`, as if it were the module at `path`."""
    module = path.removesuffix(".py").replace("/", ".")
    return [str(b) for b in layers.check_module(module, source, layers.parse_layers(markdown))]


# The nine breaks issue 29 found (before the rename: context/ -> core/, services/tree.py ->
# services/sessions.py), each as its module once held it.
KNOWN_BREAKS = [
    (
        "sessions_app/selectors/context_chart.py",
        "from sessions_app.services.jobs import compaction_settings",
        "sessions_app.services.jobs.compaction_settings",
    ),
    (
        "sessions_app/selectors/context_chart.py",
        "from sessions_app.services.llm import context_window, resolve_profile",
        "sessions_app.services.llm.context_window",
    ),
    (
        "sessions_app/selectors/context_chart.py",
        "from sessions_app.services.sessions import load_path",
        "sessions_app.services.sessions.load_path",
    ),
    (
        "sessions_app/selectors/provenance.py",
        "from sessions_app.services.exports import pi_session_file_name",
        "sessions_app.services.exports.pi_session_file_name",
    ),
    (
        "sessions_app/services/exports.py",
        "from django.template.loader import render_to_string",
        "django.template.loader.render_to_string",
    ),
    ("sessions_app/services/exports.py", "from sessions_app import rendering", "rendering"),
    ("sessions_app/services/compare.py", "from sessions_app import rendering", "rendering"),
    (
        "sessions_app/views/pages.py",
        "from sessions_app.agent.paths import WorkspaceError, user_areas",
        "sessions_app.agent.paths.user_areas",
    ),
    (
        "sessions_app/views/tree.py",
        "from sessions_app.core.preview import entry_text as plain_entry_text",
        "sessions_app.core.preview.entry_text",
    ),
]


@pytest.mark.parametrize(("path", "line", "named"), KNOWN_BREAKS, ids=lambda v: str(v)[-40:])
def test_the_check_fails_on_each_break_the_issue_found(path, line, named):
    source = f"from __future__ import annotations\n\n{line}\n"
    found = _breaks(path, source)
    assert any(named in b for b in found), found
    assert all(b.startswith(path.removesuffix(".py").replace("/", ".")) for b in found)


def test_the_check_fails_on_a_deliberate_break_and_names_it():
    """A service that imports a view, inside a function (those count too), with a relative
    import that resolves to the view."""
    source = "def f():\n    from ..views.chat import send\n    return send\n"
    found = _breaks("sessions_app/services/chat.py", source)
    assert found == [
        "sessions_app.services.chat (services) imports sessions_app.views.chat.send: services may"
        " import agent, core, models, piweb.celery, piweb.queues, selectors; not views"
    ]


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("sessions_app/core/tree.py", "import django.db"),
        ("sessions_app/core/tree.py", "from sessions_app.models import Entry"),
        ("sessions_app/models.py", "from sessions_app.services import sessions"),
        ("sessions_app/selectors/entries.py", "from sessions_app.rendering import x"),
        ("sessions_app/services/fork.py", "from sessions_app.tasks import run_job"),
        ("sessions_app/services/fork.py", "from django.shortcuts import render"),
        ("sessions_app/services/fork.py", "from sessions_app.presentation import exports"),
        ("sessions_app/agent/tools/read.py", "from sessions_app.models import Session"),
        ("sessions_app/tasks.py", "from sessions_app.models import Job"),
        ("sessions_app/rendering.py", "from sessions_app.selectors import entries"),
        ("sessions_app/templatetags/tree_tags.py", "from sessions_app.models import Entry"),
        ("sessions_app/selectors/panels/tree.py", "from sessions_app.views import tree"),
        ("sessions_app/selectors/sessions.py", "from sessions_app.services.sessions import x"),
        ("sessions_app/selectors/changes.py", "from sessions_app.services.changes import x"),
        ("sessions_app/selectors/panels/chat.py", "from sessions_app.services import chat"),
        ("sessions_app/presentation/models_page.py", "from sessions_app.services import llm"),
        ("sessions_app/presentation/exports.py", "from sessions_app.responses import notice"),
        ("sessions_app/responses.py", "from sessions_app.views import errors"),
        ("sessions_app/views/chat.py", "from sessions_app.agent.loop import AgentRun"),
        ("sessions_app/consumers.py", "from sessions_app.tasks import run_job"),
        ("sessions_app/management/commands/x.py", "from sessions_app.views import pages"),
        ("sessions_app/apps.py", "from sessions_app.tasks import run_job"),
        ("piweb/settings.py", "from sessions_app.services import sessions"),
    ],
)
def test_the_check_covers_every_layer(path, line):
    assert _breaks(path, line + "\n"), f"{path} may not: {line}"


def test_a_module_no_row_claims_fails():
    assert _breaks("sessions_app/elsewhere.py", "import os\n") == [
        "sessions_app.elsewhere (none) imports -: no row of the table claims this module"
    ]


def test_a_table_the_check_cannot_read_fails():
    wrong = TABLE.replace("| core (and Django) |", "| the kernel |", 1)
    with pytest.raises(layers.TableError, match="cannot read 'the kernel'"):
        layers.parse_layers(wrong)
    moved = TABLE.replace("`sessions_app/selectors/panels/`", "`sessions_app/selectors/boards/`")
    with pytest.raises(layers.TableError, match="does not exist"):
        layers.parse_layers(moved)


def test_the_table_is_read_as_written():
    by_name = {layer.name: layer for layer in layers.parse_layers(TABLE)}
    assert by_name["core"].never == {"django"}
    assert by_name["core"].allowed == set()
    assert "sessions_app.tasks" in by_name["services"].never
    # Every read lives in selectors: no exception lets a read layer import a service.
    assert by_name["selectors"].allowed == {"models", "core", "agent"}
    for name in ("selectors", "panels", "presentation"):
        assert by_name[name].allowed_modules == set(), name
        assert "services" not in by_name[name].allowed, name
    assert by_name["views"].allowed >= {"services", "selectors", "panels", "presentation"}


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


@pytest.mark.parametrize("path", [*modules("views"), APP / "consumers.py"], ids=lambda p: p.name)
def test_views_and_consumers_read_through_selectors(path):
    """No ORM query written in a view or the consumer (`Model.objects…`)."""
    source = path.read_text()
    assert ".objects." not in source, f"{path.name} queries the ORM itself"
    assert "leaf.pi_id if" not in source, "use Session.leaf_pi_id"


def _caught_names(handler: ast.ExceptHandler) -> set[str]:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return {ast.unparse(kind) for kind in kinds if kind is not None}


@pytest.mark.parametrize("path", [*modules("views"), APP / "responses.py"], ids=lambda p: p.name)
def test_views_catch_no_bare_value_error(path):
    """A ValueError in a service is a bug and must be a 500: refusals are ServiceErrors
    (a bare `except:` or `except Exception` would hide bugs the same way). Only a view's
    own parsing of a date it was sent (`date.fromisoformat`) may catch ValueError."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Try):
            continue
        body = "\n".join(ast.unparse(statement) for statement in node.body)
        for handler in node.handlers:
            caught = _caught_names(handler)
            if handler.type is None or caught & {"Exception", "BaseException"}:
                bad.append(f"line {handler.lineno}: except {caught or '(bare)'}")
            elif (
                "ValueError" in caught
                and body != "days.append(date.fromisoformat(value) if value else None)"
            ):
                bad.append(f"line {handler.lineno}: except ValueError around {body!r}")
    assert not bad, f"{path.name}: {bad}"


@pytest.mark.parametrize("path", modules("views"), ids=lambda p: p.name)
def test_views_read_request_values_through_params(path):
    """`params.query(request)` / `params.form(request)`, never `request.GET/POST.get`."""
    calls = [
        ast.unparse(node)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and ast.unparse(node.func) in ("request.GET.get", "request.POST.get")
    ]
    assert not calls, f"{path.name} reads {calls}"


# Reads a service still makes itself (see tests/support/service_reads.py for what counts),
# each with why: every one is part of its own write's statement. The list only shrinks: a
# new read goes into a selector. (Issue 39 began it with 77.)
SERVICE_READS = {
    "services/fork.py:hand_over_copies: Entry.objects.filter.values": (
        "the pi-id subqueries of the updates that hand a deleted session's rows to its"
        " forks: each is part of its write's statement"
    ),
    "services/following.py:mark_gone: FollowedFile.objects.filter.exclude": (
        "the queryset of the update that marks files gone also lists the sessions to tell:"
        " one filter, kept with its write"
    ),
    "services/usage.py:mark_fork_copies: Entry.objects.filter": (
        "the Exists() subquery of the update that marks copied entries: one statement, the"
        " write's own"
    ),
}


def test_services_read_only_through_selectors():
    """Services write; what they read comes from selectors (docs/ARCHITECTURE.md)."""
    found = set(service_reads.service_reads())
    new = sorted(found - set(SERVICE_READS))
    assert not new, "services read the ORM themselves; move these into selectors/:\n" + "\n".join(
        new
    )
    gone = sorted(set(SERVICE_READS) - found)
    assert not gone, "no longer in the code; take them off SERVICE_READS:\n" + "\n".join(gone)


@pytest.mark.parametrize(
    ("line", "read"),
    [
        ("User.objects.filter(username=name).exists()", "User.objects.filter.exists"),
        ("get_user_model().objects.filter(pk=1).first()", "get_user_model().objects.filter.first"),
        ("Job.objects.get(pk=1)", "Job.objects.get"),
        ("Entry.objects.filter(session=s).count()", "Entry.objects.filter.count"),
        (
            "for pk in Session.objects.values_list('pk', flat=True): pass",
            "Session.objects.values_list",
        ),
        (
            "Entry.objects.filter(pk__in=Score.objects.filter(a=1)).update(x=1)",
            "Score.objects.filter",
        ),
    ],
)
def test_the_service_read_check_finds_a_read(line, read):
    found = service_reads.reads_in(f"def f(s):\n    {line}\n", "services/x.py")
    assert found == [f"services/x.py:f: {read}"]


@pytest.mark.parametrize(
    "line",
    [
        "Session.objects.select_for_update().get(pk=1)",
        "Job.objects.select_for_update(skip_locked=True).filter(pk=1).first()",
        "Entry.objects.filter(session=s).update(copied=True)",
        "Entry.objects.filter(session=s).delete()",
        "Team.objects.create(name='a')",
        "UsageDaily.objects.bulk_create([])",
        "Pref.objects.update_or_create(user=u)",
        "s.entries.filter(pi_id='a').first()",
    ],
)
def test_the_service_read_check_lets_locks_and_writes_pass(line):
    assert service_reads.reads_in(f"def f(s):\n    {line}\n", "services/x.py") == []
