"""The session page: every panel's context builder, composed."""

from __future__ import annotations

import hashlib

from django.db import connection

from sessions_app.core.usage import UsageTotals
from sessions_app.models import FileSnapshot, Job, QueuedMessage, Session
from sessions_app.selectors.entries import find_entry
from sessions_app.selectors.panels.chat import chat_context
from sessions_app.selectors.panels.comments import review_context
from sessions_app.selectors.panels.jobs import jobs_context
from sessions_app.selectors.panels.pi_file import pi_file_context
from sessions_app.selectors.panels.tree import tree_context
from sessions_app.selectors.panels.workspace import workspace_context
from sessions_app.selectors.provenance import session_provenance
from sessions_app.selectors.usage import session_models


def page_stamp(session_pk: int) -> str | None:
    """What the session page's live panels (transcript, jobs, header figures, queue, model
    notice) show, in a few characters: the session row's version (entries, leaf, settings),
    its jobs, queued messages and file snapshots. The page carries the stamp it was drawn
    at and the socket's hello the current one; the same stamp means nothing changed in
    between, so the page need not ask for its panels again. None while a job is queued or
    running (its progress is not in the stamp): the page always catches up then."""
    job, queued, snapshot = (m._meta.db_table for m in (Job, QueuedMessage, FileSnapshot))
    sql = f"""
        SELECT s.next_seq, s.leaf_id, s.modified_at,
          (SELECT COUNT(*) FROM {job} WHERE session_id = s.id AND status IN (%s, %s)),
          (SELECT COUNT(*) FROM {job} WHERE session_id = s.id),
          (SELECT MAX(finished_at) FROM {job} WHERE session_id = s.id),
          (SELECT COUNT(*) FROM {queued} WHERE session_id = s.id),
          (SELECT MAX(id) FROM {queued} WHERE session_id = s.id),
          (SELECT COUNT(*) FROM {snapshot} WHERE session_id = s.id),
          (SELECT MAX(id) FROM {snapshot} WHERE session_id = s.id)
        FROM {Session._meta.db_table} s WHERE s.id = %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [*Job.ACTIVE, session_pk])
        row = cursor.fetchone()
    if row is None or row[3]:
        return None
    state = repr(tuple(row))
    return hashlib.sha256(state.encode()).hexdigest()[:16]


def usage_context(session) -> dict:
    rows = session_models(session)
    total = UsageTotals()
    for row in rows:
        total.add(row["totals"])
    return {"usage_rows": rows, "usage_total": total}


def session_page_context(access, state: dict, user=None) -> dict:
    """The tree panel's context plus `chat`, `jp`, `review`, usage and provenance; and
    `entry`, the entry `?target=` selects (when it is in the tree), for the entry pane."""
    session = access.session
    context = tree_context(access, state)
    target = state["target"]
    if target and target in context["layout"].index.by_id:
        context["entry"] = find_entry(session, target)
    context.update(usage_context(session))
    context.update(
        chat=chat_context(access, user),
        jp=jobs_context(access),
        review=review_context(session, state),
        provenance=session_provenance(session),
        ws=workspace_context(access, user),
        pf=pi_file_context(access),
    )
    return context
