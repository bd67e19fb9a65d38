"""A share link shows one branch: the path root → its leaf plus what grows below that leaf.

Other branches stay hidden on the link page (tree rows, previews, ?leaf= / ?target=) and in
its exports (HTML, Markdown); the pi JSONL of the session is refused to link visitors.
"""

import pytest

from sessions_app.services import sharing, tree
from sessions_app.services.sharing import SharingError
from tests.support.review_data import assistant, build_branchy_session

pytestmark = pytest.mark.django_db

# Text that only branch B (b2 → q2 → b3) holds.
BRANCH_B_TEXT = ("Running tests.", "zebrafish", "giving up")


@pytest.fixture
def shared(make_user):
    owner = make_user("owner")
    data = build_branchy_session(owner)
    ids = data.ids
    link = sharing.create_link(
        data.session, actor=owner, leaf_pi_id=ids["a3"], target_pi_id=ids["a2"]
    )
    return owner, data, link


def test_visible_ids_is_the_path_plus_everything_below_the_leaf():
    pairs = [
        ("u", None),
        ("a", "u"),
        ("b", "u"),  # a sibling branch: hidden
        ("a1", "a"),
        ("a2", "a1"),  # below the leaf
        ("a3", "a1"),  # a fork below the leaf: the branch grew two ways, both shown
        ("b1", "b"),
        ("x", "nowhere"),  # dangling parent: a root of its own, hidden
    ]
    assert sharing.visible_ids(pairs, "a") == {"u", "a", "a1", "a2", "a3"}
    assert sharing.visible_ids(pairs, "a2") == {"u", "a", "a1", "a2"}
    assert sharing.visible_ids(pairs, "missing") == set()
    assert sharing.visible_ids(pairs, None) == {p for p, _ in pairs}  # link on an empty session
    assert sharing.visible_ids([("c", "d"), ("d", "c")], "c") == {"c", "d"}  # cycles end


@pytest.mark.embedded  # (raw recursive SQL: PostgreSQL and SQLite)
def test_link_visible_entry_ids_and_new_entry_check(shared):
    owner, data, link = shared
    ids = data.ids
    on_branch = {ids[k] for k in ("u1", "a1", "r1", "a2", "r2", "a3")}
    assert sharing.link_visible_entry_ids(link) == on_branch
    below = tree.append_entry(data.session, assistant("Later."), parent_pi_id=ids["a3"]).pi_id
    deeper = tree.append_entry(data.session, assistant("Even later."), parent_pi_id=below).pi_id
    elsewhere = tree.append_entry(data.session, assistant("B again."), parent_pi_id=ids["b3"])
    fork = tree.append_entry(data.session, assistant("New fork."), parent_pi_id=ids["a2"])
    assert sharing.link_visible_entry_ids(link) == on_branch | {below, deeper}
    assert sharing.link_covers_new_entry(link, ids["a3"])
    assert sharing.link_covers_new_entry(link, below)
    assert sharing.link_covers_new_entry(link, deeper)
    assert not sharing.link_covers_new_entry(link, elsewhere.pi_id)
    assert not sharing.link_covers_new_entry(link, fork.pi_id)  # forked above the leaf
    assert not sharing.link_covers_new_entry(link, ids["a2"])  # on the path, not new
    assert not sharing.link_covers_new_entry(link, "no-such-entry")


def test_link_target_must_be_on_the_shared_branch(shared):
    owner, data, _ = shared
    with pytest.raises(SharingError, match="on the shared branch"):
        sharing.create_link(
            data.session, actor=owner, leaf_pi_id=data.ids["a3"], target_pi_id=data.ids["b3"]
        )
    ok = sharing.create_link(
        data.session, actor=owner, leaf_pi_id=data.ids["a3"], target_pi_id=data.ids["u1"]
    )
    assert ok.target_pi_id == data.ids["u1"]


def test_link_page_shows_only_its_branch(client, shared):
    _, data, link = shared
    ids = data.ids
    url = f"/l/{link.token}/"
    body = client.get(url).content.decode()
    assert "Fixed the parser" in body
    for key in ("u1", "a1", "r1", "a2", "r2", "a3"):
        assert f'data-entry-id="{ids[key]}"' in body, key
    for key in ("b2", "q2", "b3"):
        assert ids[key] not in body, key  # no tree row, no link, no id at all
    for text in BRANCH_B_TEXT:
        assert text not in body, text
    assert "6 entries shared" in body and "Live updates of this branch" in body
    assert "/export/jsonl/" not in body

    # ?leaf= / ?target= outside the branch: 404, without leaking anything
    for params in ({"leaf": ids["b3"]}, {"target": ids["q2"]}, {"leaf": "nope"}):
        response = client.get(url, params)
        assert response.status_code == 404, params
        assert "zebrafish" not in response.content.decode()
    # an ancestor of the leaf is fine (a shorter view of the same branch)
    assert client.get(url, {"leaf": ids["a1"], "target": ids["u1"]}).status_code == 200

    # the branch as it is now: what grows below the leaf is shown, a new fork elsewhere is not
    below = tree.append_entry(data.session, assistant("Grown below."), parent_pi_id=ids["a3"])
    fork = tree.append_entry(data.session, assistant("Forked off."), parent_pi_id=ids["r1"])
    body = client.get(url).content.decode()
    assert f'data-entry-id="{below.pi_id}"' in body and fork.pi_id not in body
    opened = client.get(url, {"leaf": below.pi_id})
    assert opened.status_code == 200 and "Grown below." in opened.content.decode()
    assert client.get(url, {"leaf": fork.pi_id}).status_code == 404


def test_link_exports_hold_only_the_branch_and_jsonl_is_refused(client, shared):
    _, data, link = shared
    ids = data.ids
    base = f"/l/{link.token}/export"
    md = client.get(f"{base}/md/")
    assert md.status_code == 200
    assert "Fixed the parser" in md.content.decode()
    html = client.get(f"{base}/html/")
    assert html.status_code == 200
    text = html.content.decode()
    assert "Fixed the parser" in text
    for key in ("b2", "q2", "b3"):
        assert ids[key] not in text, key  # the static tree lists the link's entries only
    for text_b in BRANCH_B_TEXT:
        assert text_b not in text and text_b not in md.content.decode(), text_b
    for fmt in ("md", "html"):
        assert client.get(f"{base}/{fmt}/", {"leaf": ids["b3"]}).status_code == 404, fmt
    jsonl = client.get(f"{base}/jsonl/")
    assert jsonl.status_code == 403
    assert "HTML or Markdown only" in jsonl.content.decode()
    assert "zebrafish" not in jsonl.content.decode()
    # members keep the whole session export
    client.force_login(data.session.owner)
    full = client.get(f"/s/{data.session.pi_id}/export/jsonl/")
    assert full.status_code == 200 and "zebrafish" in full.content.decode()
