"""The comparison page's branches, rendered: each side gets half of the page's budget,
newest entries first."""

from __future__ import annotations

from sessions_app import rendering
from sessions_app.models import Session
from sessions_app.selectors.compare import compare


def rendered_comparison(session: Session, a_pi_id: str, b_pi_id: str) -> dict:
    """`selectors.compare.compare` (CompareError on bad input), each side's segment also
    rendered (`rendered`) within half the page's budget, with the count `not_shown`."""
    result = compare(session, a_pi_id, b_pi_id)
    for side in ("a", "b"):
        segment = result[side]["segment"]
        rendered = rendering.render_entries_within(segment, rendering.page_budget() // 2)
        result[side]["rendered"] = [
            {"id": e.get("id"), "type": e.get("type"), "parts": parts or []}
            for e, parts in zip(segment, rendered, strict=True)
            if parts is not None
        ]
        result[side]["not_shown"] = len(segment) - len(result[side]["rendered"])
    return result
