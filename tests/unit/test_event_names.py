"""One list of event names (`sessions_app/core/event_names.py`) for the Python, the
templates and the JS: every name used anywhere is in the list, and every name in the list
is used. Read from the source, so a name added on one side only fails here."""

import ast
import json
import re
from pathlib import Path

import pytest

from sessions_app.core import event_names
from sessions_app.templatetags.event_tags import event_names as event_names_tag

pytestmark = pytest.mark.embedded  # needs no database: it runs in both passes

ROOT = Path(__file__).resolve().parents[2]
DOM_NAME = re.compile(r"piweb:([a-z][a-z_-]*)")
DISPATCHED = re.compile(r"""dispatch\(\s*["']([a-z][a-z_-]*)["']""")
SENDERS = {"publish", "publish_now", "emit"}  # f(session_pk, "name", data) / emit("name", data)


def page_sources() -> dict[str, str]:
    files = [*(ROOT / "static" / "piweb").glob("*.js"), *(ROOT / "templates").rglob("*.html")]
    return {str(path.relative_to(ROOT)): path.read_text() for path in files}


def names_on_the_page() -> dict[str, set[str]]:
    """Every event name the JS and the templates listen for or dispatch, with where."""
    found: dict[str, set[str]] = {}
    for where, text in page_sources().items():
        for name in {*DOM_NAME.findall(text), *DISPATCHED.findall(text)}:
            found.setdefault(name, set()).add(where)
    return found


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def names_the_server_sends() -> tuple[set[str], set[str]]:
    """(names sent on a websocket, names sent with an htmx response), from the app's AST."""
    socket, response = set(), set()
    for path in (ROOT / "sessions_app").rglob("*.py"):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and _callee(node) in SENDERS:
                first = next((a.value for a in node.args[:2] if isinstance(a, ast.Constant)), None)
                if isinstance(first, str):
                    socket.add(first)
            elif isinstance(node, ast.Dict):  # send_json({"event": "hello", ...})
                for key, value in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == "event"
                        and isinstance(value, ast.Constant)
                    ):
                        socket.add(value.value)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                match = re.fullmatch(r"piweb:([a-z][a-z_-]*)", node.value)
                if match:  # an HX-Trigger name (views, responses)
                    response.add(match.group(1))
    return socket, response


def test_every_name_the_page_uses_is_in_the_list():
    unknown = {
        name: sorted(where)
        for name, where in names_on_the_page().items()
        if name not in event_names.ALL_EVENTS
    }
    assert not unknown, f"add these to core/event_names.py, or fix the typo: {unknown}"


def test_every_name_the_server_sends_is_in_its_list():
    socket, response = names_the_server_sends()
    assert socket == set(event_names.SOCKET_EVENTS)
    assert response == set(event_names.RESPONSE_EVENTS)


def test_every_name_in_the_list_is_used():
    socket, response = names_the_server_sends()
    page = set(names_on_the_page())
    unused = set(event_names.ALL_EVENTS) - page - socket - response
    assert not unused, f"names nobody sends nor listens for: {sorted(unused)}"
    # What the server triggers on an htmx response and what the page raises itself has a
    # listener on the page.
    assert set(event_names.RESPONSE_EVENTS) <= page
    assert set(event_names.PAGE_EVENTS) <= page


def test_the_check_finds_a_name_missing_from_the_list():
    text = '<div hx-trigger="piweb:entry_apended from:body"></div>'
    assert set(DOM_NAME.findall(text)) - set(event_names.ALL_EVENTS) == {"entry_apended"}


def test_the_page_gets_the_list_from_python():
    html = str(event_names_tag())
    data = json.loads(
        re.search(r'<script id="piweb-events" type="application/json">(.*)</script>', html).group(1)
    )
    assert data == {
        "socket": list(event_names.SOCKET_EVENTS),
        "all": list(event_names.ALL_EVENTS),
    }
    base = (ROOT / "templates" / "base.html").read_text()
    assert "{% event_names %}" in base
    # The client dispatches the names of that list only (one way to raise a page event).
    client = (ROOT / "static" / "piweb" / "piweb.js").read_text()
    assert 'getElementById("piweb-events")' in client
    assert "new CustomEvent" in client
    others = [p for p in page_sources() if p.endswith(".js") and not p.endswith("piweb.js")]
    assert not [p for p in others if "new CustomEvent(" in page_sources()[p]]


def test_panels_refresh_declaratively():
    """No JS asks htmx to refresh a panel by a made-up event; panels name the shared
    events in their own `hx-trigger`."""
    for where, text in page_sources().items():
        if where.endswith(".js"):
            assert "htmx.trigger(" not in text, where
    triggers = "".join(text for where, text in page_sources().items() if where.endswith(".html"))
    for name in ("job_progress", "entry_appended", "provenance_changed", "leaf_moved"):
        assert f"piweb:{name} from:body" in triggers, name
    assert "from:document" not in triggers
