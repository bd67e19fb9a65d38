"""Branch compare: two nodes, their common ancestor, and both branches below it.

The optional "summarize the difference" is a job: ``services/jobs/compare_summary.py``.
"""

from __future__ import annotations

from sessions_app.core.compare import compare_branches
from sessions_app.core.errors import ServiceError
from sessions_app.core.input_limits import display_value
from sessions_app.models import Entry, Session
from sessions_app.selectors import paths


class CompareError(ServiceError):
    """Bad compare input, with a message fit for the user."""

    code = "compare"


def compare(session: Session, a_pi_id: str, b_pi_id: str) -> dict:
    """The comparison of the branches ending at two nodes (two path queries, no full load)."""
    if not a_pi_id or not b_pi_id:
        raise CompareError("Pick two nodes to compare.")
    found = set(
        Entry.objects.filter(session=session, pi_id__in=[a_pi_id, b_pi_id]).values_list(
            "pi_id", flat=True
        )
    )
    for pi_id in (a_pi_id, b_pi_id):
        if pi_id not in found:
            raise CompareError(f"No entry {pi_id!r} in this session.")
    seen: dict[str, dict] = {}
    for entry in [*paths.load_path(session, a_pi_id), *paths.load_path(session, b_pi_id)]:
        seen[entry["id"]] = display_value(entry)  # (lone surrogates: see input_limits)
    result = compare_branches(list(seen.values()), a_pi_id, b_pi_id)
    return result
