"""The session page: every panel's context builder, composed."""

from __future__ import annotations

from sessions_app.core.usage import UsageTotals
from sessions_app.selectors.entries import find_entry
from sessions_app.selectors.panels.chat import chat_context
from sessions_app.selectors.panels.comments import review_context
from sessions_app.selectors.panels.jobs import jobs_context
from sessions_app.selectors.panels.pi_file import pi_file_context
from sessions_app.selectors.panels.tree import tree_context
from sessions_app.selectors.panels.workspace import workspace_context
from sessions_app.selectors.provenance import session_provenance
from sessions_app.selectors.usage import session_models


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
