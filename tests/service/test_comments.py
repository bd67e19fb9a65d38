"""Comments: threaded, authored, resolvable, counted per node — and never in the context."""

import pytest

from sessions_app.core.messages import build_session_context
from sessions_app.models import Activity, Comment
from sessions_app.selectors import comments as comment_reads
from sessions_app.selectors import paths
from sessions_app.services import comments
from sessions_app.services.comments import CommentError
from tests.support.branchy_session import build_branchy_session

pytestmark = pytest.mark.django_db


@pytest.mark.embedded
def test_threads_resolve_counts_and_context_is_untouched(make_user):
    owner, reviewer = make_user("owner"), make_user("reviewer")
    data = build_branchy_session(owner)
    session, ids = data.session, data.ids
    path_before = paths.load_path(session)
    context_before = build_session_context(path_before)
    entries_before = session.entries.count()

    root = comments.add_comment(session, ids["q2"], reviewer, "Why did this fail?")
    reply = comments.add_comment(session, ids["q2"], owner, "Missing fixture.", reply_to=root.pk)
    other = comments.add_comment(session, ids["a3"], reviewer, "Nice fix <script>x</script>")
    assert reply.reply_to_id == root.pk
    # a reply to a reply attaches to the thread root
    nested = comments.add_comment(session, ids["q2"], reviewer, "ok", reply_to=reply.pk)
    assert nested.reply_to_id == root.pk

    threads = comment_reads.threads_for_entry(session, ids["q2"])
    assert [t.pk for t in threads] == [root.pk]
    assert [r.body for r in threads[0].thread_replies] == ["Missing fixture.", "ok"]
    assert comment_reads.open_comment_counts(session) == {
        root.entry_id: 1,
        other.entry_id: 1,
    }
    assert comment_reads.open_comment_counts_by_pi_id(session) == {ids["q2"]: 1, ids["a3"]: 1}

    comments.set_resolved(session, nested.pk, owner)  # resolving a reply resolves its thread
    root.refresh_from_db()
    assert root.resolved and root.resolved_by == owner and root.resolved_at
    assert comment_reads.open_comment_counts_by_pi_id(session) == {ids["a3"]: 1}
    comments.add_comment(session, ids["q2"], reviewer, "Still broken", reply_to=root.pk)
    root.refresh_from_db()
    assert not root.resolved  # a new reply reopens the thread

    # comments are not entries and never reach the model's context
    assert session.entries.count() == entries_before
    path_after = paths.load_path(session)
    assert path_after == path_before
    assert build_session_context(path_after) == context_before
    assert "Why did this fail" not in repr(build_session_context(path_after))
    assert Activity.objects.filter(session=session, verb="commented").count() == 5


@pytest.mark.embedded
def test_bad_comment_input(make_user):
    owner = make_user()
    data = build_branchy_session(owner)
    with pytest.raises(CommentError, match="empty"):
        comments.add_comment(data.session, data.ids["u1"], owner, "   ")
    with pytest.raises(CommentError, match="No entry"):
        comments.add_comment(data.session, "nope", owner, "hi")
    with pytest.raises(CommentError, match="limited"):
        comments.add_comment(data.session, data.ids["u1"], owner, "x" * 10_001)
    other = build_branchy_session(owner)
    foreign = comments.add_comment(other.session, other.ids["u1"], owner, "elsewhere")
    with pytest.raises(CommentError):
        comments.add_comment(data.session, data.ids["u1"], owner, "hi", reply_to=foreign.pk)
    with pytest.raises(CommentError):
        comments.set_resolved(data.session, foreign.pk, owner)
    assert Comment.objects.filter(session=data.session).count() == 0


def test_comment_views_escape_and_review_list_deep_links(client, make_user):
    owner = make_user("owner")
    data = build_branchy_session(owner)
    client.force_login(owner)
    base = f"/s/{data.session.pi_id}/review/comments/"
    response = client.post(
        base + "add/",
        {"entry": data.ids["q2"], "body": "<img src=x onerror=alert(1)>"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;" in body and "<img src=x" not in body
    assert client.post(base + "add/", {"entry": data.ids["q2"], "body": ""}).status_code == 400
    assert client.post(base + "add/", {"entry": "zzz", "body": "x"}).status_code == 404
    listing = client.get(f"/s/{data.session.pi_id}/review/").content.decode()
    assert f"/s/{data.session.pi_id}/?leaf={data.ids['q2']}&amp;target={data.ids['q2']}" in listing
    comment = Comment.objects.get()
    resolved = client.post(f"{base}{comment.pk}/resolve/", HTTP_HX_REQUEST="true")
    assert resolved.status_code == 200 and "Reopen" in resolved.content.decode()
    assert "No open comments" in client.get(f"/s/{data.session.pi_id}/review/").content.decode()
    counts = client.get(f"/s/{data.session.pi_id}/review/counts.json").json()
    assert counts == {"open": {}}
