"""Small template helpers for the tree area."""

import re
from html import escape as _esc
from urllib.parse import quote

from django import template
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from sessions_app.core.tool_headline import text_before_calls
from sessions_app.core.tree_layout import CHILDREN_PAGE, format_tokens
from sessions_app.templatetags.score_tags import score_badges_html

register = template.Library()

_FIRST, _LAST, _HEAD = "~first~", "~last~", "~head~"


def _seg(entry_id: str) -> str:
    """An entry id as one URL path segment (ids stored before validation may hold '/')."""
    return quote(entry_id, safe="")


KIND_ICONS = {
    "user": ("U", "User message"),
    "assistant": ("A", "Assistant message"),
    "toolResult": ("T", "Tool result"),
    "bash": ("$", "Bash command (!cmd)"),
    "compaction": ("≡", "Compaction summary"),
    "branch_summary": ("↩", "Branch summary"),
    "custom_message": ("✉", "Custom message"),
    "label": ("#", "Label"),
    "session_info": ("i", "Session name"),
    "model_change": ("M", "Model change"),
    "thinking_level_change": ("θ", "Thinking level change"),
    "custom": ("•", "Custom entry"),
    "usage": ("¢", "Usage: cost outside the context"),
    "context_edit": ("✎", "Context edit: replaces or drops an earlier message in the context"),
    "system": ("S", "System message: prompt and tool changes"),
}


@register.filter
def tokens(value) -> str:
    return format_tokens(value or 0)


@register.filter
def kind_icon(kind: str) -> str:
    return KIND_ICONS.get(kind, ("?", kind))[0]


@register.filter
def kind_name(kind: str) -> str:
    """A role's or entry type's name in words ("Tool result", not "toolResult")."""
    return KIND_ICONS.get(kind, ("?", kind))[1].split(":")[0]


@register.simple_tag
def state_query(state, **overrides) -> str:
    """The tree view parameters as a query string (leaf, filter, q, open), for hx-get."""
    params = {
        "leaf": state.get("leaf") or "",
        "filter": state.get("filter") or "",
        "q": state.get("q") or "",
    }
    params.update({k: v for k, v in overrides.items() if v is not None})
    return urlencode({k: v for k, v in params.items() if v not in ("", None)})


@register.simple_tag
def highlight_terms(text: str, query: str):
    """Escape `text` and wrap case-insensitive matches of the query's words in <mark>."""
    text = str(text or "")
    words = [w for w in str(query or "").split() if w]
    if not words:
        return escape(text)
    pattern = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.I)
    out: list[str] = []
    pos = 0
    for m in pattern.finditer(text):
        out.append(escape(text[pos : m.start()]))
        out.append(f"<mark>{escape(m.group(0))}</mark>")
        pos = m.end()
    out.append(escape(text[pos:]))
    return mark_safe("".join(out))  # noqa: S308 - every piece escaped above


# --- the tree rows ------------------------------------------------------------------------
# Rows are rendered here in Python, not with one `{% include "_node.html" %}` per row: a
# Django template costs 1-2 ms per row, which is seconds for the 1,000+ rows a 10,000-entry
# session draws.

_PREFIX = {
    "compaction": "compaction",
    "branch_summary": "branch summary",
    "model_change": "model",
    "thinking_level_change": "thinking",
    "label": "label",
    "custom": "custom",
    "usage": "usage",
    "context_edit": "context edit",
    "system": "system",
}


def comment_marker(count: int) -> str:
    """A small badge with the number of open comment threads on an entry ("" if none)."""
    if not count:
        return ""
    return format_html(
        '<span class="rv-marker" title="{} open comment thread{}" data-open-comments="{}">💬{}</span>',
        count,
        "" if count == 1 else "s",
        count,
        count,
    )


def change_marker(counts: dict | None) -> str:
    """The "+12 −3" of a tree row whose entry changed files ("" if none), or why no
    snapshot of the files was taken after it."""
    if counts and counts.get("skipped"):
        return format_html(
            '<span class="tree-chg tree-chg-skipped" title="{}">no snapshot</span>',
            counts["skipped"],
        )
    if not counts or not counts.get("files"):
        return ""
    files = counts["files"]
    return format_html(
        '<span class="tree-chg" title="{} file{} changed{}" data-files="{}">'
        '<span class="chg-add">+{}</span> <span class="chg-del">−{}</span></span>',
        files,
        "" if files == 1 else "s",
        " (reconstructed from the edit and write calls)" if counts.get("reconstructed") else "",
        files,
        counts.get("added", 0),
        counts.get("removed", 0),
    )


class _RowContext:
    def __init__(self, context):
        self.context = context
        self.session = context.get("session")
        sid = self.session.pi_id
        self.state = context.get("state") or {}
        self.q = self.state.get("q") or ""
        self.view_leaf = context.get("view_leaf")
        self.page_url = context.get("page_url") or reverse(
            "sessions_app:session_detail", args=[sid]
        )
        # Placeholders with "~", which no valid id contains (ids are [A-Za-z0-9._:-]).
        self.run_url = reverse("sessions_app:tree_run", args=[sid, _FIRST, _LAST])
        self.branch_url = reverse("sessions_app:tree_branch", args=[sid, _HEAD])
        self.children_url = reverse("sessions_app:tree_children", args=[sid, _HEAD])
        self.query = escape(state_query(self.state))
        # Open comment threads by entry (selectors/panels/tree.rows_context; empty for
        # share-link visitors, who do not see team comments).
        self.comment_counts = context.get("comment_counts") or {}
        # Score badges by entry (empty for a share link that does not show scores).
        self.score_badges = context.get("score_badges") or {}
        # Files changed by an entry (selectors/changes.change_counts).
        self.change_counts = context.get("change_counts") or {}

    def marker(self, node_id: str) -> str:
        return comment_marker(self.comment_counts.get(node_id, 0)) + score_badges_html(
            self.score_badges.get(node_id)
        )

    def changes(self, node_id: str) -> str:
        return change_marker(self.change_counts.get(node_id))


def _preview_html(row, rc: _RowContext) -> str:
    """A row's text: a tool row's headline (and a result's output), else the kind's word
    and the entry's first words."""
    n = row.node
    kind = n.kind
    out: list[str] = []
    prefix = (
        _PREFIX.get(n.type)
        or _PREFIX.get(kind)
        or (n.tool_name or "tool" if kind == "toolResult" else "")
    )
    if not prefix and kind not in KIND_ICONS:
        prefix = kind  # an entry type (or message role) newer than piweb: show its name
    if row.headline and kind == "assistant":  # its words, then what its calls did
        words = text_before_calls(n.preview)
        if words:
            out.append((highlight_terms(words, rc.q) if rc.q else _esc(words)) + " ")
        out.append(f'<code class="headline">{_esc(row.headline)}</code>')
    else:
        if row.headline:  # a tool result: the call it answers, then its output
            out.append(f'<b class="headline">{_esc(row.headline)}</b> ')
        elif prefix:
            out.append(f"<b>{_esc(prefix)}</b> ")
        if n.preview:
            out.append(highlight_terms(n.preview, rc.q) if rc.q else _esc(n.preview))
        else:
            out.append('<i class="hint">(empty)</i>')
    return "".join(out)


def _node_html(row, rc: _RowContext) -> str:
    n = row.node
    kind = n.kind
    classes = ["tn", "node", f"k-{kind}"]
    for flag, name in (
        (row.on_path, "on-path"),
        (row.is_view_leaf, "view-leaf"),
        (row.is_session_leaf, "session-leaf"),
        (row.is_target, "selected"),
        (row.is_match, "match"),
        (row.dimmed, "dimmed"),
        (row.archived, "archived"),
        (n.is_branch_point, "branch-point"),
        (n.is_leaf, "leaf"),
    ):
        if flag:
            classes.append(name)
    if row.connector:
        classes.append(f"c-{row.connector}")
    nid = _esc(n.id)
    out = [
        f'<div class="{_esc(" ".join(classes))}" id="n-{nid}" role="treeitem" tabindex="-1" '
        f'aria-selected="{"true" if row.is_target else "false"}" data-id="{nid}" '
        f'data-parent="{_esc(n.parent_id or "")}" data-depth="{row.depth}" '
        f'style="--d:{row.depth}"><span class="guides"></span>'
    ]
    if row.connector and n.children:
        out.append(
            '<button type="button" class="chev" tabindex="-1" aria-label="Fold or unfold this '
            'branch" title="Fold or unfold this branch">▾</button>'
        )
    if row.connector == "side":
        out.append('<span class="conn" aria-hidden="true">├─</span>')
    elif row.connector == "root":
        out.append('<span class="conn" aria-hidden="true">◇</span>')
    icon, title = KIND_ICONS.get(kind, ("?", kind))
    out.append(
        f'<span class="dot" aria-hidden="true"></span><span class="icon" title="{_esc(title)}">'
        f"{_esc(icon)}</span>"
    )
    if n.label:
        out.append(f'<span class="label-chip">{_esc(n.label)}</span>')
    if row.archived:
        out.append(
            '<span class="badge archived-chip" title="An archived branch: folded away, '
            'still in the session and its exports">archived</span>'
        )
    out.append(rc.marker(n.id))
    out.append('<span class="preview">')
    out.append(_preview_html(row, rc))
    out.append("</span>")
    if row.count:  # the head of a foldable branch: what folding it hides
        noun = "entry" if row.count == 1 else "entries"
        out.append(f'<span class="fold-count">{row.count:,} {noun} folded</span>')
    out.append(rc.changes(n.id))
    if n.is_branch_point:
        count = len(n.children)
        out.append(
            f'<span class="badge fork" title="Branch point: {count} branches leave this entry">'
            f"{count} branches</span>"
        )
    if row.is_session_leaf:
        out.append(
            '<span class="badge head" title="The session\'s current leaf: new messages go here">'
            "leaf</span>"
        )
    elif n.is_leaf:
        out.append('<span class="badge end" title="End of a branch">end</span>')
    tok = format_tokens(n.tokens)
    link_leaf = rc.view_leaf if (row.on_path and rc.view_leaf) else n.id
    href = f"{rc.page_url}?{urlencode({'leaf': link_leaf, 'target': n.id})}"
    out.append(
        f'<span class="tok" title="{tok} tokens (estimate)">{tok}</span>'
        f'<a class="copy-link" href="{_esc(href)}" title="Link to this node (click to copy)" '
        f'aria-label="Copy link to this node">link</a></div>'
    )
    return "".join(out)


def _summary(row) -> str:
    """A fold's "3 user messages · 5 tool results" (what it hides)."""
    return f'<span class="fold-what">{_esc(row.summary)}</span>' if row.summary else ""


def render_row(row, rc: _RowContext) -> str:
    kind = row.kind
    if kind == "node":
        return _node_html(row, rc)
    n = row.node
    if kind == "gopen":
        if row.group == "run":
            return (
                f'<div class="tgroup run" role="none" data-group="{_esc(n.id)}"><div class="tgroup-toggle" '
                f'style="--d:{row.depth}" role="treeitem" tabindex="-1" data-count="{row.count}" '
                f'title="Fold or unfold this run of {row.count} entries: {_esc(row.summary)}">'
                f'<span class="guides"></span><span class="tg-text"><span class="tg-verb">▾ fold'
                f"</span> {row.count} entries</span>{_summary(row)}</div>"
                '<div class="tgroup-rows" role="none">'
            )
        return f'<div class="tgroup branch" role="none" data-group="{_esc(n.id)}">'
    if kind == "grows":
        return '<div class="tgroup-rows" role="none">'
    if kind == "gclose":
        return "</div></div>"
    if kind == "fold":
        url = rc.run_url.replace(_FIRST, _seg(n.id)).replace(_LAST, _seg(row.last.id))
        noun = "entry" if row.count == 1 else "entries"
        return (
            f'<div class="tn fold" role="treeitem" tabindex="-1" style="--d:{row.depth}" '
            f'data-first="{_esc(n.id)}" data-last="{_esc(row.last.id)}" '
            f'hx-get="{_esc(url)}?depth={row.depth}&amp;{rc.query}" hx-swap="outerHTML">'
            f'<span class="guides"></span><span class="fold-text">⋯ {row.count} {noun} folded'
            f"</span>{_summary(row)}</div>"
        )
    if kind == "children":
        url = rc.children_url.replace(_HEAD, _seg(n.id))
        noun = "branch" if row.count == 1 else "branches"
        step = min(row.count, CHILDREN_PAGE)
        return (
            f'<div class="tn more children" role="treeitem" tabindex="-1" '
            f'style="--d:{row.depth}" data-parent-node="{_esc(n.id)}" '
            f'hx-get="{_esc(url)}?depth={row.depth}&amp;start={row.start}&amp;{rc.query}" '
            f'hx-swap="outerHTML"><span class="guides"></span><span class="fold-text">▸ '
            f"{row.count:,} more {noun} from here · show the next {step}</span></div>"
        )
    if kind == "cut":
        return (
            '<div class="tn cut" role="treeitem" aria-disabled="true"><span class="fold-text">The tree stops here: '
            f"{row.count:,} rows is as much as one page draws. Search or filter the tree, "
            "or open a branch from one of its nodes, to see the rest.</span></div>"
        )
    url = rc.branch_url.replace(_HEAD, _seg(n.id))
    noun = "entry" if row.count == 1 else "entries"
    ends = "end" if row.leaves == 1 else "ends"
    return (
        f'<div class="tn more" role="treeitem" tabindex="-1" style="--d:{row.depth}" '
        f'data-head="{_esc(n.id)}" hx-get="{_esc(url)}?depth={row.depth}&amp;{rc.query}" '
        f'hx-swap="outerHTML"><span class="guides"></span><span class="fold-text">▸ {row.count} '
        f"more {noun} in this branch · {row.leaves} {ends}</span></div>"
    )


@register.simple_tag(takes_context=True)
def tree_rows(context, rows):
    """Every row of the tree (or of a lazily loaded piece), as one HTML string."""
    rc = _RowContext(context)
    return mark_safe("".join(render_row(row, rc) for row in rows))  # noqa: S308 - escaped
