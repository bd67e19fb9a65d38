"""The workspace box of the chat panel: where the session works at its leaf, and what
"Continue in…" offers this user."""

from __future__ import annotations

from sessions_app.selectors.workspaces import options as workspace_options


def workspace_context(access, user) -> dict:
    can = user is not None and access.can_edit
    options = workspace_options(access.session, user) if can else None
    if options is None:
        return {"can_edit": False}
    return {
        "can_edit": True,
        "current": options.current,
        "error": options.current_error,
        "own": options.own,
        "existing": options.existing,
        "area": options.area,
        "single_user": options.single_user,
    }
