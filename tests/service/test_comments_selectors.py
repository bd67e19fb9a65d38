"""selectors/comments.py: a node's threads with their replies, and the open-thread counts
per node the tree marks, as comments are added, resolved and reopened; comments never
reach the model's context."""

import pytest

from sessions_app.core.messages import build_session_context
from sessions_app.models import Activity
from sessions_app.selectors import comments as comment_reads
from sessions_app.selectors import paths
from sessions_app.services import comments
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
