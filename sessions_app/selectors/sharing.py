"""Reads of sharing: team shares and links of a session."""

from __future__ import annotations

from sessions_app.models import Session, SessionShare, ShareLink


def session_shares(session: Session):
    return SessionShare.objects.filter(session=session).select_related("team")


def session_links(session: Session) -> list[ShareLink]:
    return list(ShareLink.objects.filter(session=session).order_by("-created_at"))


def session_link(session: Session, token: str) -> ShareLink | None:
    return ShareLink.objects.filter(token=token, session=session).first()
