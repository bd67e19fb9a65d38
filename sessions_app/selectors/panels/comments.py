"""The review panel of the session page: comments on the selected entry, exports of the leaf."""

from __future__ import annotations


def review_context(session, state: dict) -> dict:
    """{"selected", "leaf"}: the page's target/leaf, else the session's leaf, else ""
    (a session with no entries has no leaf)."""
    leaf_id = session.leaf_pi_id or ""
    return {"selected": state.get("target") or leaf_id, "leaf": state.get("leaf") or leaf_id}
