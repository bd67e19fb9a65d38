"""The tree panel and the entry pane: their view state, layout and context."""

from __future__ import annotations

import threading
from collections import OrderedDict

from django.db import connection
from django.urls import reverse
from django.utils.http import urlencode

from sessions_app.core.tree_layout import FILTER_MODES, Layout, TreeIndex
from sessions_app.models import Entry, Session
from sessions_app.rendering import (
    full_output_path,
    name_results,
    page_limit,
    render_entry,
    render_llm_message,
)
from sessions_app.selectors import workspaces
from sessions_app.selectors.changes import change_counts, reconstructed_counts, snapshots_exist
from sessions_app.selectors.comments import open_comment_counts_by_pi_id
from sessions_app.selectors.entries import (
    entry_headline,
    line_lengths,
    session_entries,
)
from sessions_app.selectors.inspector import inspect_context
from sessions_app.selectors.navigation import archived_heads, blocking_job, resolve_target
from sessions_app.selectors.scores import badges_by_entry

TREE_COLUMNS = (
    "pk",
    "pi_id",
    "parent_id",
    "type",
    "role",
    "tool_name",
    "preview",
    "label",
    "token_count",
    "seq",
)
FORK_SCOPES = {
    "path": "Path to here",
    "path_and_siblings": "Path plus sibling branches",
    "up_to_depth": "Everything up to this depth",
}


def tree_state(params) -> dict:
    """The view parameters (a QueryDict) shared by the page and the tree partials."""
    mode = params.get("filter", "default")
    return {
        "leaf": params.get("leaf") or None,
        "target": params.get("target") or None,
        "filter": mode if mode in FILTER_MODES else "default",
        "q": params.get("q", "").strip()[:200],
        "open": [i for i in params.get("open", "").split(",") if i][:500],
    }


# The tree index of recently shown sessions, per process. Nothing in it depends on the
# viewer (it holds the rows' light columns; what a viewer may see is decided when rows
# are drawn), and it changes only when the session's rows do: entries are append-only,
# and the one column ever updated (an entry's label) is updated by appending the label
# entry. Every append moves the session's next_seq, so the key below is the session's
# version. Readers share an index and never change it. At most TREE_INDEX_CACHE_NODES
# nodes are kept in all (a 100,000-entry index is tens of MB).
_INDEX_CACHE: OrderedDict[tuple, TreeIndex] = OrderedDict()
TREE_INDEX_CACHE_NODES = 250_000
_index_cache_lock = threading.Lock()


def forget_tree_indexes() -> None:
    """Empty this process's cache of tree indexes (bench/ui_bench.py's first-view time)."""
    with _index_cache_lock:
        _INDEX_CACHE.clear()


def _index_key(session: Session) -> tuple:
    return (session.pk, session.pi_id, session.created_at, session.next_seq, session.entry_count)


def tree_index(session: Session) -> TreeIndex:
    """The whole tree from one `values_list()` query of light columns (never payloads),
    or the same index built for this version of the session before."""
    key = _index_key(session)
    with _index_cache_lock:
        cached = _INDEX_CACHE.get(key)
        if cached is not None:
            _INDEX_CACHE.move_to_end(key)
            return cached
    index = TreeIndex(session_entries(session).values_list(*TREE_COLUMNS))
    if connection.in_atomic_block:
        return index  # may hold uncommitted rows: not for other transactions' eyes
    with _index_cache_lock:
        for old in [k for k in _INDEX_CACHE if k[0] == session.pk]:
            del _INDEX_CACHE[old]  # an older version of the same session
        _INDEX_CACHE[key] = index
        total = sum(len(cached) for cached in _INDEX_CACHE.values())
        while total > TREE_INDEX_CACHE_NODES and len(_INDEX_CACHE) > 1:
            total -= len(_INDEX_CACHE.popitem(last=False)[1])
        if total > TREE_INDEX_CACHE_NODES:
            _INDEX_CACHE.clear()
    return index


def build_layout(session: Session, state: dict) -> Layout:
    index = tree_index(session)
    session_leaf = session.leaf_pi_id
    view_leaf = state["leaf"] if state["leaf"] in index.by_id else session_leaf
    target = state["target"] if state["target"] in index.by_id else None
    return Layout(
        index,
        view_leaf=view_leaf,
        session_leaf=session_leaf,
        target=target,
        mode=state["filter"],
        query=state["q"],
        expand=state["open"],
        archived=archived_heads(session),
    )


def page_url(session: Session) -> str:
    return reverse("sessions_app:session_detail", args=[session.pi_id])


def rows_context(access, state: dict, layout: Layout, rows, **extra) -> dict:
    """What `tree_tags.tree_rows` needs to draw rows (the whole tree or a lazy piece)."""
    session = access.session
    return {
        "access": access,
        "session": session,
        "rows": rows,
        "layout": layout,
        "state": state,
        "view_leaf": layout.view_leaf.id if layout.view_leaf else None,
        "page_url": page_url(session),
        # The review markers: share-link visitors do not see team comments.
        "comment_counts": open_comment_counts_by_pi_id(session) if access.can_comment else {},
        # Scores: a share-link visitor sees them only when the link says so.
        "score_badges": badges_by_entry(session, key="entry__pi_id")
        if access.share_link is None or access.share_link.show_scores
        else {},
        "change_counts": change_counts(session) or reconstructed_counts(session, layout.index),
        **extra,
    }


def tree_context(access, state: dict) -> dict:
    """The tree panel (the session page and `tree_panel`)."""
    layout = build_layout(access.session, state)
    return rows_context(
        access,
        state,
        layout,
        layout.rows(),
        session_leaf=layout.session_leaf.id if layout.session_leaf else None,
        filter_modes=FILTER_MODES,
        match_count=len(layout.matches),
        entry_count=len(layout.index),
    )


def node_link(session: Session, node_id: str, view_leaf: str | None, on_path: bool) -> str:
    leaf = view_leaf if on_path and view_leaf else node_id
    return f"{page_url(session)}?{urlencode({'leaf': leaf, 'target': node_id})}"


def entry_parts(session: Session, payload: dict) -> list:
    """render_entry, with the full-output link dropped when we cannot serve the file."""
    parts = render_entry(payload)
    if any(p.extra.get("full_output") for p in parts):
        if workspaces.session_artifact_file(session, full_output_path(payload)) is None:
            for p in parts:
                if p.extra.get("full_output"):
                    p.extra["full_output"] = None
    return parts


def entry_context(access, entry: Entry, view_leaf: str | None) -> dict:
    """The entry pane (the session page's `?target=` and `entry_pane`; `view_leaf` None:
    the session's leaf). The path, the children and the target's leaf are read from the
    session's cached tree index (the tree panel built it for this version), not queried."""
    session = access.session
    index = tree_index(session)
    session_leaf = index.nodes.get(session.leaf_id) if session.leaf_id is not None else None
    if view_leaf is None:
        view_leaf = session_leaf.id if session_leaf else None
    leaf_node = index.by_id.get(view_leaf) if view_leaf else None
    on_path = leaf_node is not None and entry.pk in index.path_pks(leaf_node)
    target = resolve_target(session, entry, known=index.by_id)
    node = index.nodes.get(entry.pk)
    parts = entry_parts(session, entry.payload)
    headline = entry_headline(entry)  # what the entry's calls did, or the call it answers
    if entry.role == "toolResult" and headline:
        call_id = (entry.payload.get("message") or {}).get("toolCallId")
        name_results([parts], {str(call_id or ""): headline})
    return {
        "access": access,
        "session": session,
        "entry": entry,
        "headline": headline,
        "parts": parts,
        "children": index.child_previews(node) if node else [],
        "link": node_link(session, entry.pi_id, view_leaf, on_path),
        "view_leaf": view_leaf,
        "is_session_leaf": session.leaf_id == entry.pk,
        "session_leaf": session_leaf.id if session_leaf else "",
        "navigate_leaf": target.leaf,
        "prefills": target.editor_text is not None,
        "fork_scopes": FORK_SCOPES,
        "blocking_job": blocking_job(session) if access.can_edit else None,
        # Parts are cut to the page limit: a bigger entry offers the rest lazily.
        "entry_chars": len(entry.line),
        "is_large": len(entry.line) > page_limit(),
        "has_snapshots": snapshots_exist(session),
        # A branch's head (a child of a node with siblings, or any non-root) may be archived.
        "can_archive": entry.parent_id is not None,
        "archived": entry.pi_id in archived_heads(session),
    }


def inspector_context(access, leaf: str | None) -> dict:
    """The context inspector at `leaf`: what the model would receive there."""
    report = inspect_context(access.session, leaf)
    # Parts are cut to the page limit: a message from a bigger entry offers the rest lazily.
    sizes = line_lengths(access.session, (m.entry_id for m in report.messages))
    for message in report.messages:
        message.parts = render_llm_message(message.message)
        message.large = sizes.get(message.entry_id or "", 0) > page_limit()
    return {"access": access, "session": access.session, "report": report}
