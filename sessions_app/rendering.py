"""Turning pi entries into safe HTML for the entry pane and the context inspector.

Everything a model (or an imported file) wrote is untrusted. The rules:

- Markdown goes through markdown-it-py with raw HTML *disabled*, code blocks are
  highlighted server-side by Pygments, and the result is cleaned by nh3 with a short
  allow-list (no scripts, no event handlers, no style, links only http/https/mailto).
- Terminal output is escaped and converted from ANSI colour codes by ansi2html (which
  only emits `<span class="ansiNN">`), then cleaned by nh3 as well.
- Images come only from base64 image blocks, as `data:` URLs with a whitelisted mime
  type and a base64 body that is checked character by character.
- Anything else is escaped by `django.utils.html` before it is marked safe.
- Lone surrogates (`"\ud800"` in an imported line) become U+FFFD here, at the HTML
  boundary (`input_limits.display_value`); short fields (ids, names, custom types) are
  shown cut to their limits (`input_limits.bounded`).

`render_entry(payload)` returns a list of `Part`s (kind + safe HTML) that the
template lays out; the helpers are public for the unit tests.

Bounded whatever an entry holds: every text block is cut to `limit` characters
(settings.PIWEB_PREVIEW_CHARS on pages) before markdown, highlighting or ANSI conversion
runs, JSON is pretty-printed only up to the limit, and at most MAX_BLOCKS content blocks
of one entry are rendered. Exports raise the limit with `block_limit(...)`. Pages offer
the rest of a large entry lazily (views/tree.entry_text, entry_raw). Markdown can cost
more than linear time on hostile text (20,000 characters of `![` take seconds), so a
request spends at most `render_time_budget` seconds in Markdown (settings.PIWEB_RENDER_SECONDS,
set per request by piweb.middleware.markdown_time_budget); once spent, later blocks are
shown as escaped plain text, which is linear.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache

import nh3
from ansi2html import Ansi2HTMLConverter
from django.conf import settings
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import JsonLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from sessions_app.core.input_limits import (
    MAX_LABEL_CHARS,
    MAX_NAME_CHARS,
    bounded,
    display_text,
    display_value,
)
from sessions_app.core.pi1_entries import (
    content_text,
    edit_action,
    edit_replacement_content,
    json_view,
    system_message_view,
    usage_figures,
)
from sessions_app.core.text import clean_text
from sessions_app.core.tool_headline import tool_headline

IMAGE_MIME_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BASE64_RE = re.compile(r"^[A-Za-z0-9+/\r\n]*={0,2}\s*$")
EXPORT_BLOCK_CHARS = 200_000  # per text block in the HTML export (pages: PIWEB_PREVIEW_CHARS)
MAX_BLOCKS = 100  # content blocks rendered per entry; the rest is a notice
MAX_IMAGE_CHARS = 8_000_000  # base64 characters of one inline image (about 6 MB)
TITLE_CHARS = 300  # a tool name, a command line, a custom type… in a part's title

_ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "details", "div", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "kbd", "li", "ol", "p", "pre",
    "s", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th",
    "thead", "tr", "ul",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "span": {"class"},
    "div": {"class"},
    "code": {"class"},
    "pre": {"class"},
    "ol": {"start"},
    "th": {"align"},
    "td": {"align"},
}
_URL_SCHEMES = {"http", "https", "mailto"}


def sanitize(html: str) -> SafeString:
    """Clean HTML with our allow-list (links get rel="noopener noreferrer nofollow")."""
    cleaned = nh3.clean(
        display_text(html),
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    return mark_safe(cleaned)  # noqa: S308 - nh3 output


_FORMATTER = HtmlFormatter(nowrap=True)


def _pygments(code: str, lexer) -> str:
    return f'<pre class="highlight"><code>{highlight(code, lexer, _FORMATTER)}</code></pre>'


def highlight_code(code: str, language: str | None = None) -> str:
    """Pygments HTML for a code block (unsanitized: callers pass it through nh3)."""
    lexer = None
    if language:
        try:
            lexer = get_lexer_by_name(language.strip().split()[0], stripnl=False)
        except ClassNotFound:
            lexer = None
    if lexer is None:
        return f'<pre class="code"><code>{escape(code)}</code></pre>'
    return _pygments(code, lexer)


def _fence_highlight(code: str, lang: str, _attrs) -> str:
    return highlight_code(code, lang) if lang else ""


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": _fence_highlight})
    md.enable("table")
    md.enable("strikethrough")
    return md


_LIMIT: ContextVar[int | None] = ContextVar("piweb_block_limit", default=None)


def page_limit() -> int:
    """Characters of one text block rendered (pages: settings.PIWEB_PREVIEW_CHARS)."""
    override = _LIMIT.get()
    return settings.PIWEB_PREVIEW_CHARS if override is None else override


_MARKDOWN_SECONDS: ContextVar[list[float] | None] = ContextVar("piweb_md_seconds", default=None)


@contextmanager
def render_time_budget(seconds: float):
    """Inside the block, Markdown rendering may take `seconds` in all; plain text after."""
    token = _MARKDOWN_SECONDS.set([seconds])
    try:
        yield
    finally:
        _MARKDOWN_SECONDS.reset(token)


@contextmanager
def block_limit(chars: int):
    """Render with another per-block limit inside the block (the HTML export's)."""
    token = _LIMIT.set(chars)
    try:
        yield
    finally:
        _LIMIT.reset(token)


def _cut(text: str, limit: int | None) -> tuple[str, str]:
    limit = page_limit() if limit is None else limit
    if len(text) <= limit:
        return text, ""
    return text[:limit], f"[{len(text) - limit:,} more characters not shown]"


def render_markdown(text: str, limit: int | None = None) -> SafeString:
    """Markdown → sanitized HTML. Raw HTML in the source is shown as text."""
    text, rest = _cut(str(text or ""), limit)
    left = _MARKDOWN_SECONDS.get()
    if left is not None and left[0] <= 0:  # (this request spent its Markdown time)
        html = f'<pre class="plain">{escape(text)}</pre>'
    else:
        started = time.monotonic()
        html = _markdown().render(text)
        if left is not None:
            left[0] -= time.monotonic() - started
    if rest:
        html += f'<p class="notice">{escape(rest)}</p>'
    return sanitize(html)


@lru_cache(maxsize=1)
def _ansi() -> Ansi2HTMLConverter:
    return Ansi2HTMLConverter(inline=False, dark_bg=False, escaped=True)


def render_ansi(text: str, limit: int | None = None) -> SafeString:
    """Terminal output (with ANSI colour codes) → sanitized `<pre>`."""
    text, rest = _cut(str(text or ""), limit)
    body = _ansi().convert(text, full=False, ensure_trailing_newline=False)
    html = f'<pre class="terminal">{body}</pre>'
    if rest:
        html += f'<p class="notice">{escape(rest)}</p>'
    return sanitize(html)


def json_pieces(value) -> Iterator[str]:
    """`value` as indented JSON, piece by piece (never the whole text at once)."""
    try:
        yield from json.JSONEncoder(indent=2, ensure_ascii=False).iterencode(value)
    except (TypeError, ValueError):
        yield str(value)


def json_head(value, limit: int) -> tuple[str, bool]:
    """The first `limit` characters of `value` as indented JSON, and whether it was cut."""
    out, size = [], 0
    for piece in json_pieces(value):
        out.append(piece)
        size += len(piece)
        if size > limit:
            return "".join(out)[:limit], True
    return "".join(out), False


def render_json(value, limit: int | None = None) -> SafeString:
    """Tool-call arguments as highlighted, indented JSON (only the first `limit` chars)."""
    limit = page_limit() if limit is None else limit
    text, cut = json_head(value, limit)
    html = _pygments(text, JsonLexer())
    if cut:
        html += '<p class="notice">[the rest of this JSON is not shown]</p>'
    return sanitize(html)


def render_image(block: dict) -> SafeString:
    """An image block as an <img> with a data: URL, or a plain notice if it is unsafe."""
    mime = str(block.get("mimeType") or block.get("mime_type") or "").lower()
    data = block.get("data")
    if mime not in IMAGE_MIME_TYPES:
        return format_html('<p class="notice">[image of type {} not shown]</p>', mime or "unknown")
    if isinstance(data, str) and len(data) > MAX_IMAGE_CHARS:
        return format_html(
            '<p class="notice">[image of {} MB not shown: too large for the page]</p>',
            len(data) * 3 // 4 // 1_000_000,
        )
    if not isinstance(data, str) or not data or not _BASE64_RE.match(data):
        return mark_safe('<p class="notice">[image with invalid data not shown]</p>')
    clean = re.sub(r"\s+", "", data)
    # (lazy: a transcript's images off screen hold up neither the page's load nor its paint)
    return format_html(
        '<img class="entry-image" alt="image" src="data:{};base64,{}" loading="lazy"'
        ' decoding="async">',
        mime,
        clean,
    )


@dataclass
class Part:
    """One displayable piece of an entry: `kind` picks the template's frame."""

    # text | markdown | thinking | tool_call | tool_result | terminal | image | notice | summary
    # | files | meta | usage | edit | system | json
    kind: str
    html: SafeString = field(default_factory=lambda: mark_safe(""))
    title: str = ""
    open: bool = True
    extra: dict = field(default_factory=dict)


def _content_parts(content, *, markdown: bool = True) -> list[Part]:
    """Parts for a user / assistant / custom content value (string or blocks)."""
    if isinstance(content, str):
        return [Part("markdown" if markdown else "text", render_markdown(content))]
    parts: list[Part] = []
    if not isinstance(content, list):
        return parts
    if len(content) > MAX_BLOCKS:
        rest = len(content) - MAX_BLOCKS
        content = content[:MAX_BLOCKS]
    else:
        rest = 0
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(Part("markdown", render_markdown(block.get("text", ""))))
        elif kind == "thinking":
            parts.append(
                Part("thinking", render_markdown(block.get("thinking", "")), "Thinking", open=False)
            )
        elif kind == "toolCall":
            parts.append(
                Part(
                    "tool_call",
                    render_json(block.get("arguments", {})),
                    bounded(tool_headline(block.get("name"), block.get("arguments"))),
                    extra={
                        "id": bounded(block.get("id", "")),
                        "tool": bounded(block.get("name", "tool")),
                    },
                )
            )
        elif kind == "image":
            parts.append(Part("image", render_image(block)))
    if rest:
        parts.append(Part("notice", escape(f"[{rest:,} more content blocks not shown]")))
    return parts


def full_output_path(payload: dict) -> str | None:
    """The full-output file an entry points at (bash execution or a tool result's details)."""
    message = payload.get("message") or {}
    if not isinstance(message, dict):
        return None
    path = message.get("fullOutputPath")
    if not path and isinstance(message.get("details"), dict):
        details = message["details"]
        path = details.get("fullOutputPath")
        if not path and isinstance(details.get("truncation"), dict):
            path = details["truncation"].get("fullOutputPath")
    return str(path) if isinstance(path, str) and path else None


def _truncation_notice(message: dict) -> str:
    details = message.get("details")
    if not isinstance(details, dict):
        details = {}
    trunc = details.get("truncation") if isinstance(details.get("truncation"), dict) else None
    if trunc and trunc.get("truncated"):
        shown = trunc.get("outputLines")
        total = trunc.get("totalLines")
        by = trunc.get("truncatedBy") or "limit"
        return f"Output truncated by {by}: showing {shown} of {total} lines."
    if message.get("truncated"):
        return "Output truncated."
    return ""


MAX_FILES = 200  # paths listed per list; the rest is counted


def _file_list(value) -> list[str]:
    paths = [p for p in value if isinstance(p, str)] if isinstance(value, list) else []
    shown = [bounded(p, TITLE_CHARS) for p in paths[:MAX_FILES]]
    if len(paths) > MAX_FILES:
        shown.append(f"… and {len(paths) - MAX_FILES:,} more")
    return shown


def _files_part(details) -> Part | None:
    if not isinstance(details, dict):
        return None
    read = _file_list(details.get("readFiles"))
    modified = _file_list(details.get("modifiedFiles"))
    if not read and not modified:
        return None
    return Part("files", title="Files", extra={"read": read, "modified": modified})


def render_plain(text: str, limit: int | None = None) -> SafeString:
    """Plain text (a system prompt, a JSON view) as an escaped `<pre>`; lone surrogates
    (which an imported file may hold and UTF-8 cannot encode) become U+FFFD."""
    text, rest = _cut(clean_text(str(text or "")), limit)
    html = format_html('<pre class="plain">{}</pre>', text)
    if rest:
        html += format_html('<p class="notice">{}</p>', rest)
    return html


def _without_ids(payload: dict) -> dict:
    return {k: v for k, v in payload.items() if k not in ("id", "parentId", "timestamp")}


def unknown_parts(name: str, value) -> list[Part]:
    """An entry type (or message role) piweb does not know: its name and its JSON."""
    return [
        Part("meta", escape(name), "Unknown type"),
        Part("json", render_plain(json_view(value)), name),
    ]


def system_part(message: dict, title: str = "System message") -> Part:
    """A pi 1.x system message: the prompt text, its sections, the tools it adds/removes."""
    view = system_message_view(message)
    return Part(
        "system",
        render_plain(view["content"]) if view["content"] else mark_safe(""),
        title,
        extra={
            "sections": [(name, render_plain(text)) for name, text in view["sections"]],
            "tools_added": view["tools_added"],
            "tools_removed": view["tools_removed"],
        },
    )


def _usage_part(payload: dict) -> Part:
    return Part("usage", title="Usage (not in the context)", extra=usage_figures(payload))


def _edit_part(payload: dict) -> Part:
    action = edit_action(payload)
    content = edit_replacement_content(payload)
    body = mark_safe("")
    if action == "replaced":
        blocks = _content_parts(content)
        body = mark_safe("".join(str(p.html) for p in blocks if p.kind in ("markdown", "text")))
    return Part(
        "edit",
        body,
        "Context edit",
        extra={"target": str(payload.get("targetId") or ""), "action": action},
    )


def _short_or_none(value) -> str | None:
    return None if value is None else bounded(value)


def render_entry(payload: dict) -> list[Part]:
    """The displayable parts of one pi entry, in order. Never raises on odd input: an
    entry type or message role piweb does not know shows its name and JSON."""
    payload = display_value(payload)
    try:
        return _render_entry(payload)
    except Exception:  # malformed fields of a known type: show the JSON, never a 500
        return unknown_parts(str(payload.get("type")), _without_ids(payload))


def _render_entry(payload: dict) -> list[Part]:
    kind = str(payload.get("type"))
    if kind == "message":
        message = payload.get("message")
        return _message_parts(payload, message if isinstance(message, dict) else {})
    if kind in ("compaction", "branch_summary"):
        return _summary_parts(payload, kind)
    if kind == "custom_message":
        parts = _content_parts(payload.get("content"))
        parts.insert(
            0, Part("meta", escape(bounded(payload.get("customType", ""))), "Custom message")
        )
        return parts
    if kind == "custom":
        data = payload.get("data")
        return [
            Part("meta", escape(bounded(payload.get("customType", ""))), "Custom entry"),
            Part("tool_call", render_json(data), "data", open=False),
        ]
    if kind == "usage":
        return [_usage_part(payload)]
    if kind == "context_edit":
        return [_edit_part(payload)]
    meta = _meta_part(payload, kind)
    if meta is not None:
        return [meta]
    return unknown_parts(bounded(kind), _without_ids(payload))


def _message_parts(payload: dict, message: dict) -> list[Part]:
    role = message.get("role")
    if role in ("user", "assistant", "custom"):
        parts = _content_parts(message.get("content"))
        if role == "assistant":
            parts.extend(_stop_notice(message))
        return parts
    if role == "toolResult":
        return _tool_result_parts(payload, message)
    if role == "bashExecution":
        return [_terminal_part(payload, message)]
    if role == "system":
        return [system_part(message)]
    return unknown_parts(f"{bounded(role)} message", message)


def _stop_notice(message: dict) -> list[Part]:
    """The error or the unusual stop reason that ended an assistant turn."""
    stop = message.get("stopReason")
    if message.get("errorMessage"):
        text = escape(bounded(message["errorMessage"], page_limit()))
        return [Part("notice", text, "Error")]
    if stop in ("error", "aborted", "length"):
        return [Part("notice", escape(f"Stopped: {stop}"), "Stop reason")]
    return []


def result_preview(text: str, limit: int = 160) -> str:
    """A tool's output in one line for its card: the first line that holds something."""
    for line in text[: limit * 40].splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def _tool_result_parts(payload: dict, message: dict) -> list[Part]:
    text = content_text(message.get("content"))
    body = render_ansi(text) if text else mark_safe('<p class="hint">(no output)</p>')
    blocks = message.get("content")
    if not isinstance(blocks, list):
        blocks = []
    images = [
        Part("image", render_image(b))
        for b in blocks[:MAX_BLOCKS]
        if isinstance(b, dict) and b.get("type") == "image"
    ]
    lines = text.count("\n") + 1 if text else 0
    usage = (
        [Part("usage", title="Usage", extra=usage_figures(message))]
        if isinstance(message.get("usage"), dict)
        else []
    )
    return [
        Part(
            "tool_result",
            body,
            bounded(message.get("toolName") or "tool"),
            open=lines <= 40,
            extra={
                "is_error": bool(message.get("isError")),
                "notice": _truncation_notice(message),
                "full_output": full_output_path(payload),
                "lines": lines,
                "tool_call_id": bounded(message.get("toolCallId", "")),
                "preview": result_preview(text),
            },
        ),
        *images,
        *usage,
    ]


def _terminal_part(payload: dict, message: dict) -> Part:
    """A user's ``!command`` run and its output."""
    output = str(message.get("output") or "")
    notes = []
    if message.get("cancelled"):
        notes.append("cancelled")
    if message.get("exitCode") not in (None, 0):
        notes.append(f"exit code {message.get('exitCode')}")
    if message.get("excludeFromContext"):
        notes.append("not in the model's context")
    return Part(
        "terminal",
        render_ansi(output) if output else mark_safe('<p class="hint">(no output)</p>'),
        f"$ {bounded(message.get('command', ''), TITLE_CHARS)}",
        extra={
            "notes": notes,
            "notice": _truncation_notice(message),
            "full_output": full_output_path(payload),
        },
    )


def _summary_parts(payload: dict, kind: str) -> list[Part]:
    parts = [
        Part(
            "summary",
            render_markdown(payload.get("summary", "")),
            "Compaction summary" if kind == "compaction" else "Branch summary",
            extra={
                "tokens_before": payload.get("tokensBefore"),
                "first_kept": _short_or_none(payload.get("firstKeptEntryId")),
                "keeps_nothing": kind == "compaction"
                and payload.get("firstKeptEntryId") == payload.get("id"),
                "from_id": _short_or_none(payload.get("fromId")),
                "from_hook": payload.get("fromHook"),
            },
        )
    ]
    files = _files_part(payload.get("details"))
    if files:
        parts.append(files)
    if isinstance(payload.get("systemMessage"), dict):
        parts.insert(0, system_part(payload["systemMessage"], "System message (re-stated)"))
    if isinstance(payload.get("usage"), dict):
        parts.append(Part("usage", title="Usage of the summary call", extra=usage_figures(payload)))
    return parts


def _meta_part(payload: dict, kind: str) -> Part | None:
    """The one-line entries: label, session name, model and thinking-level changes."""
    if kind == "label":
        label = payload.get("label")
        text = (
            f"Label on {bounded(payload.get('targetId'))}: {bounded(label, MAX_LABEL_CHARS)}"
            if label
            else "Label removed"
        )
        return Part("meta", escape(text), "Label")
    if kind == "session_info":
        return Part(
            "meta", escape(bounded(payload.get("name", ""), MAX_NAME_CHARS)), "Session name"
        )
    if kind == "model_change":
        text = f"{bounded(payload.get('provider', ''))}/{bounded(payload.get('modelId', ''))}"
        return Part("meta", escape(text), "Model change")
    if kind == "thinking_level_change":
        return Part("meta", escape(bounded(payload.get("thinkingLevel", ""))), "Thinking level")
    return None


def page_budget() -> int:
    """Characters of rendered entries one page holds (half the response cap)."""
    return settings.PIWEB_MAX_RESPONSE_BYTES // 2


# What a page wraps around one entry's parts (its article, header, id, time, badges):
# counted with the parts, so a branch of many short entries stays within the page too.
ENTRY_MARKUP_CHARS = 600


def render_entries_within(payloads: list[dict], budget: int | None) -> list[list[Part] | None]:
    """`render_entry` of each payload, newest first, until `budget` characters of HTML are
    spent (None: no budget), each entry's markup around its parts included; the older
    entries left over get None (not rendered)."""
    out: list[list[Part] | None] = [None] * len(payloads)
    spent = 0
    for i in range(len(payloads) - 1, -1, -1):
        if budget is not None and spent >= budget:
            break
        parts = out[i] = render_entry(payloads[i])
        spent += sum(len(p.html) for p in parts) + ENTRY_MARKUP_CHARS
    return out


def name_results(
    rendered: Iterable[list[Part] | None], calls: Mapping[str, str] | None = None
) -> None:
    """Give each tool-result part the headline of the call it answers
    (`extra["headline"]`, the tool call part's title: core/tool_headline), matched by call
    id with the calls rendered before it in `rendered` (a branch, root first) or `calls`
    (headlines found elsewhere, by call id)."""
    known = dict(calls or {})
    for parts in rendered:
        for part in parts or ():
            if part.kind == "tool_call" and part.extra.get("id"):
                known[part.extra["id"]] = part.title
            elif part.kind == "tool_result":
                headline = known.get(part.extra.get("tool_call_id") or "")
                if headline:
                    part.extra["headline"] = headline


def render_llm_message(message: dict) -> list[Part]:
    """Parts of one message as the LLM receives it (context inspector)."""
    message = display_value(message)
    role = message.get("role")
    if role == "toolResult":
        text = content_text(message.get("content"))
        return [
            Part(
                "tool_result",
                render_ansi(text),
                bounded(message.get("toolName") or "tool"),
                open=False,
                extra={"is_error": bool(message.get("isError"))},
            )
        ]
    content = message.get("content")
    if isinstance(content, str):
        # user messages built from summaries/bash are plain text for the model
        return [Part("text", render_ansi(content))]
    return _content_parts(content)


def encodable(html: str) -> str:
    """Rendered HTML any response can encode: a lone surrogate (imported JSON can hold one
    in any field) shows as U+FFFD instead of failing the whole page."""
    return clean_text(html)
