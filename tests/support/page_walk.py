"""Every page, partial and export of one session, fetched through Django's test client.

The hostile-input tests and the fuzz suite import a file and then walk what a viewer (and
a share link) can open, asserting no 5xx and a bounded response size.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.test import Client
from django.urls import reverse

from sessions_app.models import Entry, Session
from sessions_app.services import sharing

# No page of a fuzzed session may be larger than this (the sessions are small, so a
# bigger response means a page multiplied its input).
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
ENTRY_PANES = 12  # entry panes opened per session (first ones, by seq)


@dataclass
class Fetched:
    url: str
    status: int
    size: int
    body: bytes


def _body(response) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return response.content


def fetch(client: Client, url: str) -> Fetched:
    response = client.get(url)
    body = _body(response)
    return Fetched(url, response.status_code, len(body), body)


def session_urls(session: Session) -> list[str]:
    """The GET pages of a session a viewer can open, with leaf/target/compare variants."""
    sid = session.pi_id
    ids = list(
        Entry.objects.filter(session=session).order_by("seq").values_list("pi_id", flat=True)
    )
    first, last = (ids[0], ids[-1]) if ids else ("", "")
    urls = [
        reverse("sessions_app:session_list") + "?q=a",
        reverse("sessions_app:session_detail", args=[sid]),
        reverse("sessions_app:tree_panel", args=[sid]) + "?filter=all",
        reverse("sessions_app:chat_transcript", args=[sid]),
        reverse("sessions_app:chat_state", args=[sid]),
        reverse("sessions_app:inspector", args=[sid]),
        reverse("sessions_app:review_list", args=[sid]),
        reverse("sessions_app:activity", args=[sid]),
        reverse("sessions_app:jobs_panel", args=[sid]),
        reverse("sessions_app:search") + "?q=the",
    ]
    for fmt in ("jsonl", "html", "md"):
        urls.append(reverse("sessions_app:export", args=[sid, fmt]))
    if ids:
        urls += [
            reverse("sessions_app:session_detail", args=[sid]) + f"?leaf={first}&target={first}",
            reverse("sessions_app:inspector", args=[sid]) + f"?leaf={first}",
            reverse("sessions_app:export", args=[sid, "md"]) + f"?leaf={first}",
            reverse("sessions_app:export", args=[sid, "html"]) + f"?leaf={first}",
            reverse("sessions_app:compare", args=[sid]) + f"?a={first}&b={last}",
        ]
        for eid in ids[:ENTRY_PANES]:
            urls.append(reverse("sessions_app:entry_pane", args=[sid, eid]))
    return urls


def link_urls(session: Session, owner) -> list[str]:
    """A share link to the session's leaf: its page and its exports (logged out)."""
    if not session.leaf_id:
        return []
    link = sharing.create_link(session, actor=owner, leaf_pi_id=None)
    base = reverse("sessions_app:share_link", args=[link.token])
    return [base] + [
        reverse("sessions_app:share_link_export", args=[link.token, fmt]) for fmt in ("html", "md")
    ]


def walk(session: Session, owner) -> list[Fetched]:
    """Every page of `session` as its owner sees it, then its share link logged out."""
    client = Client()
    client.force_login(owner)
    pages = [fetch(client, url) for url in session_urls(session)]
    anonymous = Client()
    pages += [fetch(anonymous, url) for url in link_urls(session, owner)]
    return pages


def problems(pages: list[Fetched], limit: int = MAX_RESPONSE_BYTES) -> list[str]:
    """What is wrong with the walked pages: a 5xx or an oversized response."""
    out = []
    for page in pages:
        if page.status >= 500:
            out.append(f"{page.url}: HTTP {page.status}")
        elif page.size > limit:
            out.append(f"{page.url}: {page.size} bytes (limit {limit})")
    return out
