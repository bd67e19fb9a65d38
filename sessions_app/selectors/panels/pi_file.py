"""The pi-file box of the chat panel: the followed file, write-back, and whether pi is
writing the session right now (live takeover: the chat waits, a fork is offered)."""

from __future__ import annotations

from django.conf import settings

from sessions_app.selectors.pi_file import followed_file, pi_writing_since, write_back_enabled


def pi_file_context(access) -> dict:
    session = access.session
    row = followed_file(session)
    if row is None:
        return {"followed": False}
    state = (session.settings or {}).get("pi_file") or {}
    writing = pi_writing_since(session, row)
    return {
        "followed": True,
        "path": row.path,
        "can_edit": access.can_edit,
        "is_owner": access.is_owner,
        "write_back": write_back_enabled(session),
        "due": bool(state.get("due")),
        "message": state.get("message", ""),
        "written_at": state.get("written_at", ""),
        "writing": writing is not None,
        "quiet_seconds": settings.PIWEB_PI_QUIET_SECONDS,
        "leaf": session.leaf_pi_id,
    }
