"""A share link shows exactly its branch: the path root → its node, and nothing below the
node unless the person sharing chose "this node and everything under it" (scope subtree).

Everything reachable from a link is checked for both scopes: the link page (tree rows,
entries, ?leaf= / ?target=), its exports (HTML, Markdown; pi JSONL refused) and the
websocket events a link visitor receives.

The session (tests/support/branchy_session.py):
u1 → a1 → r1 → a2 → r2 → a3            (branch A)
              r1 → b2 → q2 → b3         (branch B, the session leaf)
Links here are made at the inner node a2: r2 and a3 lie below it.
"""

import asyncio

import pytest

from sessions_app.core.share_scope import visible_ids
from sessions_app.models import ShareLink
from sessions_app.services import events, sessions, sharing
from sessions_app.services.sharing import SharingError
from tests.support.branchy_session import assistant, build_branchy_session

pytestmark = pytest.mark.django_db

PATH_KEYS = ("u1", "a1", "r1", "a2")
BELOW_KEYS = ("r2", "a3")
OTHER_KEYS = ("b2", "q2", "b3")
BELOW_TEXT = ("Edited src/tokenizer.py", "Fixed the parser")  # only r2 / a3 hold these
OTHER_TEXT = ("Running tests.", "zebrafish", "giving up")  # only branch B holds these


@pytest.fixture
def data(make_user):
    return build_branchy_session(make_user("owner"))


def link_at(data, key="a2", scope=ShareLink.Scope.PATH, target=None):
    return sharing.create_link(
        data.session,
        actor=data.session.owner,
        leaf_pi_id=data.ids[key],
        target_pi_id=data.ids[target] if target else None,
        scope=scope,
    )


def assert_shows(text: str, data, keys, hidden_keys, hidden_text=()):
    for key in keys:
        assert data.ids[key] in text, key
    for key in hidden_keys:
        assert data.ids[key] not in text, key  # no row, no link, no id at all
    for words in hidden_text:
        assert words not in text, words


# --- which entries -----------------------------------------------------------------------


def test_visible_ids_is_the_path_or_the_path_plus_the_subtree():
    pairs = [
        ("u", None),
        ("a", "u"),
        ("b", "u"),  # a sibling branch: hidden in both scopes
        ("a1", "a"),  # below the node
        ("a2", "a1"),
        ("a3", "a1"),
        ("b1", "b"),
        ("x", "nowhere"),  # dangling parent: a root of its own, hidden
    ]
    assert visible_ids(pairs, "a1") == {"u", "a", "a1"}
    assert visible_ids(pairs, "a") == {"u", "a"}
    assert visible_ids(pairs, "a", subtree=True) == {"u", "a", "a1", "a2", "a3"}
    assert visible_ids(pairs, "a2", subtree=True) == {"u", "a", "a1", "a2"}
    assert visible_ids(pairs, "missing") == set()
    assert visible_ids(pairs, "missing", subtree=True) == set()
    assert visible_ids(pairs, None) == set()  # a path to "before the first entry"
    assert visible_ids(pairs, None, subtree=True) == {p for p, _ in pairs}
    assert visible_ids([("c", "d"), ("d", "c")], "c") == {"c", "d"}  # cycles end
    assert visible_ids([("c", "d"), ("d", "c")], "c", subtree=True) == {"c", "d"}


def test_existing_links_and_links_made_without_a_choice_show_the_path_only(data):
    assert link_at(data).scope == ShareLink.Scope.PATH
    assert ShareLink._meta.get_field("scope").default == ShareLink.Scope.PATH


def test_link_target_must_be_on_what_the_link_shows(data):
    with pytest.raises(SharingError, match="on the shared branch"):
        link_at(data, target="a3")  # below the node: not shown by a path link
    with pytest.raises(SharingError, match="on the shared branch"):
        link_at(data, target="b3", scope=ShareLink.Scope.SUBTREE)
    assert link_at(data, target="u1").target_pi_id == data.ids["u1"]
    with pytest.raises(SharingError, match="Choose what the link shows"):
        link_at(data, scope="everything")


# --- the link page -----------------------------------------------------------------------


def test_path_link_page_shows_root_to_node_and_nothing_below(client, data):
    ids = data.ids
    url = f"/l/{link_at(data).token}/"
    response = client.get(url)
    assert response.status_code == 200
    body = response.content.decode()
    assert_shows(body, data, PATH_KEYS, BELOW_KEYS + OTHER_KEYS, BELOW_TEXT + OTHER_TEXT)
    assert "4 entries shared" in body and "the path from the root to one node" in body
    assert "nothing below the node" in body
    # nothing below the node or elsewhere opens through ?leaf= / ?target=
    for params in (
        {"leaf": ids["a3"]},
        {"leaf": ids["r2"]},
        {"target": ids["r2"]},
        {"leaf": ids["b3"]},
        {"leaf": "nope"},
    ):
        refused = client.get(url, params)
        assert refused.status_code == 404, params
        assert "Fixed the parser" not in refused.content.decode()
    # a shorter view of the same path is fine
    shorter = client.get(url, {"leaf": ids["a1"], "target": ids["u1"]})
    assert shorter.status_code == 200
    # what is appended below the node later does not show either
    later = sessions.append_entry(data.session, assistant("Grown below."), parent_pi_id=ids["a2"])
    body = client.get(url).content.decode()
    assert later.pi_id not in body and "Grown below." not in body
    assert client.get(url, {"leaf": later.pi_id}).status_code == 404


def test_subtree_link_page_shows_the_node_and_everything_under_it_and_says_so(client, data):
    ids = data.ids
    url = f"/l/{link_at(data, scope=ShareLink.Scope.SUBTREE).token}/"
    body = client.get(url).content.decode()
    assert_shows(body, data, PATH_KEYS + BELOW_KEYS, OTHER_KEYS, OTHER_TEXT)
    assert "a node and everything under it" in body and "6 entries shared" in body
    opened = client.get(url, {"leaf": ids["a3"]})
    assert opened.status_code == 200 and "Fixed the parser" in opened.content.decode()
    later = sessions.append_entry(data.session, assistant("Grown below."), parent_pi_id=ids["a3"])
    assert later.pi_id in client.get(url).content.decode()
    assert "Grown below." in client.get(url, {"leaf": later.pi_id}).content.decode()
    assert client.get(url, {"leaf": ids["b3"]}).status_code == 404


# --- the link's exports -------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_path_link_exports_hold_the_path_only(client, data, fmt):
    ids = data.ids
    base = f"/l/{link_at(data).token}/export/{fmt}/"
    response = client.get(base)
    assert response.status_code == 200
    text = response.content.decode()
    assert "Please fix the parser bug" in text and "I will edit it." in text
    for words in BELOW_TEXT + OTHER_TEXT:
        assert words not in text, words
    for key in BELOW_KEYS + OTHER_KEYS:
        assert ids[key] not in text, key
    for key in ("a3", "r2", "b3"):
        assert client.get(base, {"leaf": ids[key]}).status_code == 404, key


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_subtree_link_exports_may_open_below_the_node_but_not_elsewhere(client, data, fmt):
    ids = data.ids
    base = f"/l/{link_at(data, scope=ShareLink.Scope.SUBTREE).token}/export/{fmt}/"
    below = client.get(base, {"leaf": ids["a3"]})
    assert below.status_code == 200 and "Fixed the parser" in below.content.decode()
    for words in OTHER_TEXT:
        assert words not in below.content.decode()
    assert client.get(base, {"leaf": ids["b3"]}).status_code == 404


@pytest.mark.parametrize("scope", [ShareLink.Scope.PATH, ShareLink.Scope.SUBTREE])
def test_link_jsonl_export_is_refused_in_both_scopes(client, data, scope):
    response = client.get(f"/l/{link_at(data, scope=scope).token}/export/jsonl/")
    assert response.status_code == 403
    assert response["Content-Type"].startswith("text/plain")
    assert "HTML or Markdown only" in response.content.decode()


# --- making a link from the sharing page ----------------------------------------------------


def test_sharing_page_offers_both_scopes_and_creates_the_chosen_one(client, data):
    client.force_login(data.session.owner)
    url = f"/s/{data.session.pi_id}/sharing/"
    page = client.get(url).content.decode()
    assert 'name="scope" value="path" checked' in page and 'value="subtree"' in page
    made = client.post(url + "link/", {"leaf": data.ids["a2"], "scope": "subtree"})
    assert made.status_code == 200
    assert ShareLink.objects.latest("created_at").scope == ShareLink.Scope.SUBTREE
    assert "The path to this node and everything under it" in made.content.decode()
    client.post(url + "link/", {"leaf": data.ids["a2"]})
    assert ShareLink.objects.latest("created_at").scope == ShareLink.Scope.PATH
    bad = client.post(url + "link/", {"leaf": data.ids["a2"], "scope": "<b>all</b>"})
    assert bad.status_code == 400 and "Choose what the link shows" in bad.content.decode()
    assert "<b>all</b>" not in bad.content.decode()


# --- the link's websocket ---------------------------------------------------------------------


@pytest.mark.embedded
@pytest.mark.django_db(transaction=True)
def test_link_socket_hears_only_about_entries_the_link_shows(data, redis_ready):
    """In-process through the real ASGI application and channel layer."""
    from channels.testing import WebsocketCommunicator

    from piweb.asgi import application

    ids, session = data.ids, data.session
    path_link, subtree_link = link_at(data), link_at(data, scope=ShareLink.Scope.SUBTREE)
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]

    async def connect(link):
        path = f"/ws/sessions/{session.pi_id}/?share={link.token}"
        communicator = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await communicator.connect(timeout=10)
        assert connected
        assert (await communicator.receive_json_from(timeout=10))["event"] == "hello"
        return communicator

    async def drain(communicator) -> list[dict]:
        """Everything queued for the socket, up to a pong (sent last)."""
        await communicator.send_json_to({"type": "ping"})
        seen = []
        while True:
            message = await communicator.receive_json_from(timeout=10)
            if message["event"] == "pong":
                return seen
            seen.append(message)

    async def scenario():
        path_ws, subtree_ws = await connect(path_link), await connect(subtree_link)
        append = sessions.append_entry
        below = await asyncio.to_thread(
            append, session, assistant("Below."), parent_pi_id=ids["a3"]
        )
        await asyncio.to_thread(append, session, assistant("On B."), parent_pi_id=ids["b3"])
        at_node = await asyncio.to_thread(
            append, session, assistant("Under the node."), parent_pi_id=ids["a2"]
        )
        await asyncio.to_thread(events.publish_now, session.pk, "leaf_moved", {"leaf": "x"})
        await asyncio.to_thread(
            events.publish_now, session.pk, "text_delta", {"run_id": "r", "delta": "SECRET"}
        )
        await asyncio.sleep(1)  # (the appends publish after their commit)
        heard = {"path": await drain(path_ws), "subtree": await drain(subtree_ws)}
        for communicator in (path_ws, subtree_ws):
            await communicator.disconnect()
        return heard, below.pi_id, at_node.pi_id

    heard, below, at_node = asyncio.run(scenario())
    assert heard["path"] == []  # nothing below the node shows, so no event concerns it
    assert [m["data"]["id"] for m in heard["subtree"]] == [below, at_node]
    assert all(m["event"] == "entry_appended" for m in heard["subtree"])
    assert "SECRET" not in repr(heard)
