"""Exports of a session: pi JSONL, a self-contained HTML file, Markdown of one branch, and
the branch view the share page and the HTML export draw.

The HTML file carries its CSS and JS inline and makes no request at all (no fonts, no
images from anywhere: images are data: URLs), so it can be mailed or attached and opened
offline. Entries are rendered by sessions_app.rendering (sanitized by nh3).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from django.template.loader import render_to_string
from django.utils import timezone

from sessions_app import rendering
from sessions_app.core.errors import ServiceError
from sessions_app.core.exports import branch_markdown, tree_rows
from sessions_app.core.input_limits import display_value
from sessions_app.core.shipped import read_shipped
from sessions_app.core.usage import UsageTotals, breakdown_rows, totals_by_key
from sessions_app.diff_rendering import render_changes
from sessions_app.models import Entry, Session
from sessions_app.selectors import paths
from sessions_app.selectors.changes import path_changes
from sessions_app.selectors.entries import entry_exists
from sessions_app.selectors.exporter import iter_session_chunks
from sessions_app.selectors.panels.context_chart import context_chart
from sessions_app.selectors.paths import UNSET
from sessions_app.selectors.provenance import pi_session_file_name

FORMATS = ("jsonl", "html", "md")
CONTENT_TYPES = {
    "jsonl": "application/x-ndjson; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
}


PAGE_TREE_ROWS = 2000  # tree rows a page lists (the share page); exports list every row
PAGE_CHILDREN = 100  # children of one node a page lists (the rest a page at a time)


class ExportError(ServiceError):
    """Bad export input, with a message fit for the user."""

    code = "export"


@dataclass
class Export:
    filename: str
    content_type: str
    content: str | Iterable[bytes]  # text, or byte chunks to stream (the pi JSONL)

    @property
    def streams(self) -> bool:
        return not isinstance(self.content, str)


def _slug(session: Session) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", session.name or "")[:40].strip("-")
    return f"{base + '-' if base else ''}{session.pi_id[:8]}"


def _leaf(session: Session, leaf_pi_id: str | None) -> str | None:
    if not leaf_pi_id:
        return session.leaf_pi_id
    if not entry_exists(session, leaf_pi_id):
        raise ExportError(f"No entry {leaf_pi_id!r} in this session.")
    return leaf_pi_id


def export_markdown(session: Session, leaf_pi_id: str | None = None) -> str:
    leaf = _leaf(session, leaf_pi_id)
    path = paths.load_path(session, leaf) if leaf else []
    return branch_markdown(session.header(), path, title=str(session))


def branch_view(
    session: Session,
    leaf_pi_id,
    target_pi_id: str | None = None,
    visible: set | None = None,
    budget: int | None = None,
    children_page: tuple[str, int] | None = None,
) -> dict:
    """What the static pages (share link, HTML export) show: tree rows and the branch.

    `leaf_pi_id` UNSET means the session's leaf. `visible` (a share link's entry ids,
    sharing.link_visible_entry_ids) limits the tree to those entries; the caller checks
    that the leaf is one of them. `budget`: characters of rendered entries (a page's,
    rendering.page_budget); the older entries past it are listed without their content.
    """
    # Light rows for the tree (no payloads): previews and labels are denormalized columns.
    entries, labels = [], {}
    for pi_id, parent, timestamp, kind, role, preview, label in (
        Entry.objects.filter(session=session)
        .order_by("seq")
        .values_list("pi_id", "parent_pi_id", "timestamp", "type", "role", "preview", "label")
        .iterator(chunk_size=5000)
    ):
        if visible is not None and pi_id not in visible:
            continue
        entries.append(
            {
                "id": pi_id,
                "parentId": parent,
                "timestamp": timestamp,
                "type": kind,
                "_role": role,
                "_preview": preview,
            }
        )
        if label:
            labels[pi_id] = label
    by_id = {e["id"]: e for e in entries}
    if leaf_pi_id is UNSET or (leaf_pi_id is not None and leaf_pi_id not in by_id):
        leaf_pi_id = session.leaf_pi_id
        if leaf_pi_id not in by_id:  # (only with `visible`: the session's leaf is elsewhere)
            leaf_pi_id = None
    path = [display_value(e) for e in paths.load_path(session, leaf_pi_id)] if leaf_pi_id else []
    branch_ids = [e.get("id") for e in path]
    if target_pi_id not in by_id:
        target_pi_id = leaf_pi_id
    rendered = rendering.render_entries_within(path, budget)
    rendering.name_results(rendered)  # a result says which call it answers
    # What each node changed in the files (diffs bounded by PIWEB_DIFF_MAX_TOTAL_BYTES).
    file_changes = {p.get("id"): c for p, c in path_changes(session, leaf_pi_id)}
    items = [
        {
            "id": e.get("id"),
            "type": e.get("type"),
            "role": (e.get("message") or {}).get("role", "") if e.get("type") == "message" else "",
            "timestamp": e.get("timestamp", ""),
            "parts": parts or [],
            "not_shown": parts is None,
            "is_target": e.get("id") == target_pi_id,
            "changes": file_changes.get(e.get("id")),
            "files": render_changes(file_changes[e.get("id")].files)
            if e.get("id") in file_changes
            else None,
        }
        for e, parts in zip(path, rendered, strict=True)
    ]
    if budget is not None:  # a page: a wide node lists a page of its children
        rows = tree_rows(
            entries, branch_ids, labels, max_children=PAGE_CHILDREN, children_page=children_page
        )
    else:
        rows = tree_rows(entries, branch_ids, labels)
    not_listed = 0
    if budget is not None and len(rows) > PAGE_TREE_ROWS:  # (a page; a download lists all)
        rows, not_listed = rows[:PAGE_TREE_ROWS], len(rows) - PAGE_TREE_ROWS
    return {
        "rows": rows,
        "rows_not_listed": not_listed,
        "entry_count": len(entries),
        "branch": items,
        "leaf": leaf_pi_id,
        "target": target_pi_id,
    }


def _inline_css() -> str:
    from pygments.formatters import HtmlFormatter

    ansi = rendering._ansi().produce_headers()
    ansi = re.sub(r"</?style[^>]*>", "", ansi)
    return HtmlFormatter().get_style_defs(".highlight") + "\n" + ansi


def _review_css() -> str:
    names = ("piweb/tokens.css", "piweb/review.css", "piweb/diff.css")
    return "\n".join(read_shipped(f"static/{name}").decode() for name in names)


def export_html(session: Session, leaf_pi_id: str | None = None, visible: set | None = None) -> str:
    leaf = _leaf(session, leaf_pi_id)
    with rendering.block_limit(rendering.EXPORT_BLOCK_CHARS):
        view = branch_view(session, leaf, leaf, visible)
    # Usage and the context chart of the exported branch, as tables (no chart library in
    # a file that runs no outside script).
    chart = context_chart(session, leaf) if leaf else None
    branch = paths.load_path(session, leaf) if leaf else []
    usage_rows = breakdown_rows(totals_by_key(branch))
    usage_total = UsageTotals()
    for row in usage_rows:
        usage_total.add(row["totals"])
    return render_to_string(
        "sessions_app/exports/export.html",
        {
            "session": session,
            "view": view,
            "chart": chart,
            "usage_rows": usage_rows,
            "usage_total": usage_total,
            "generated_at": timezone.now(),
            "review_css": _review_css().replace("</", "<\\/"),
            "extra_css": _inline_css().replace("</", "<\\/"),
        },
    )


def export_session(
    session: Session, fmt: str, leaf_pi_id: str | None = None, *, visible=None
) -> Export:
    """`visible`: a share link's entry ids; the HTML tree then shows only those (the
    caller refuses JSONL and checks the leaf for links). Only a read: the web caller
    records the activity (`responses.export_response`)."""
    if fmt not in FORMATS:
        raise ExportError(f"Unknown export format {fmt!r}: use one of {', '.join(FORMATS)}.")
    content: Iterable[bytes] | str
    if fmt == "jsonl":
        content = iter_session_chunks(session)
    elif fmt == "html":
        content = export_html(session, leaf_pi_id, visible)
    else:
        content = export_markdown(session, leaf_pi_id)
    filename = pi_session_file_name(session) if fmt == "jsonl" else f"{_slug(session)}.{fmt}"
    return Export(filename=filename, content_type=CONTENT_TYPES[fmt], content=content)
