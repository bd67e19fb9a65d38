"""Full-text search across the sessions a user can see: the query side (the index is kept
by `services/search.py`).

One interface, two engines:
- PostgreSQL: `SearchDocument.tsv` (a stored tsvector, 'simple' configuration) with a GIN
  index, queried with websearch_to_tsquery (words, "phrases", -exclusions, OR);
- SQLite: the FTS5 table `sessions_app_searchfts` (external content, synced by triggers),
  queried with an FTS5 expression built from the same syntax.
Both are created by migration 0002_search_indexes. Any other database falls back to a
substring match (slow, but correct).

The visibility filter (`selectors.sessions.visible_sessions`) is part of the same SQL statement, so a
result can never come from a session the user may not read.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time

from django.db import connection
from django.db.models import F
from django.utils.safestring import SafeString, mark_safe

from sessions_app.core.errors import ServiceError
from sessions_app.core.scores import parse_score_filter
from sessions_app.core.text import clean_text
from sessions_app.core.tool_headline import answered_headline, headlines_from_preview
from sessions_app.models import Entry, Score, ScoreConfig, SearchDocument, Session
from sessions_app.selectors.sessions import visible_sessions

PAGE_SIZE = 50
MAX_QUERY_CHARS = 500

DOC = SearchDocument._meta.db_table
FTS = "sessions_app_searchfts"
ENTRY = Entry._meta.db_table
SESSION = Session._meta.db_table
SCORE = Score._meta.db_table
SCORE_CONFIG = ScoreConfig._meta.db_table
SQL_OPERATORS = {"lt": "<", "lte": "<=", "gt": ">", "gte": ">=", "exact": "="}


LIKE_ESCAPE = " ESCAPE '\\'"  # our LIKE patterns escape %, _ and \ with a backslash


class SearchError(ServiceError):
    """Bad search input, with a message fit for the user."""

    code = "search"


@dataclass
class SearchFilters:
    role: str = ""
    tool: str = ""
    cwd: str = ""
    label: str = ""
    date_from: date | None = None
    date_to: date | None = None
    score: str = ""  # entries scored so: "quality<3" (core/scores.py)

    @classmethod
    def from_params(cls, params) -> SearchFilters:
        def day(name):
            raw = (params.get(name) or "").strip()
            if not raw:
                return None
            try:
                return date.fromisoformat(raw)
            except ValueError as exc:
                raise SearchError(f"{name}: expected a date like 2026-01-31, got {raw!r}") from exc

        def text(name, limit):
            return clean_text((params.get(name) or "").strip()[:limit])

        def score(raw):
            try:
                parse_score_filter(raw)
            except ServiceError as exc:
                raise SearchError(f"score: {exc}") from exc
            return raw

        return cls(
            role=text("role", 32),
            tool=text("tool", 100),
            cwd=text("cwd", 1000),
            label=text("label", 200),
            date_from=day("from"),
            date_to=day("to"),
            score=score(text("score", 80)),
        )

    def any(self) -> bool:
        return any(
            [self.role, self.tool, self.cwd, self.label, self.date_from, self.date_to, self.score]
        )


# The title of a hit in a session with neither a name nor a user message yet.
UNTITLED = "Untitled session"


@dataclass
class SearchHit:
    session_pi_id: str
    session_title: str  # its name, else its first user message (never its id)
    session_cwd: str
    entry_pi_id: str
    role: str
    tool_name: str
    date: datetime | None
    label: str
    snippet: SafeString
    headline: str = ""  # a tool entry's (core/tool_headline), as the tree's row reads it

    @property
    def url(self) -> str:
        return f"/s/{self.session_pi_id}/?leaf={self.entry_pi_id}&target={self.entry_pi_id}"


@dataclass
class SearchResult:
    hits: list[SearchHit]
    page: int
    has_next: bool


_TOKEN_RE = re.compile(r'(-?)"([^"]*)"|(\S+)')


def parse_query(query: str) -> list[tuple[str, str]]:
    """Split the search box into (op, text) terms: op is "and", "not" or "or"."""
    terms: list[tuple[str, str]] = []
    pending_or = False
    for match in _TOKEN_RE.finditer(query):
        neg, phrase, word = match.group(1), match.group(2), match.group(3)
        if word is not None:
            if word == "OR":
                pending_or = bool(terms)
                continue
            neg, text = ("-", word[1:]) if word.startswith("-") and len(word) > 1 else ("", word)
        else:
            text = phrase
        text = text.strip()
        if not text:
            continue
        op = "not" if neg else ("or" if pending_or else "and")
        pending_or = False
        terms.append((op, text))
    return terms


def _fts5_quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def fts5_expression(query: str) -> str:
    """The FTS5 MATCH expression for the search box syntax (every term quoted: no injection)."""
    terms = parse_query(query)
    if not any(op != "not" for op, _ in terms):
        raise SearchError("Search needs at least one word that is not excluded.")
    parts: list[str] = []
    for op, text in terms:
        if op == "not":
            continue
        if parts:
            parts.append("OR" if op == "or" else "AND")
        parts.append(_fts5_quote(text))
    expression = " ".join(parts)
    for op, text in terms:
        if op == "not":
            expression = f"({expression}) NOT {_fts5_quote(text)}"
    return expression


def _visible_subquery(user) -> tuple[str, tuple]:
    sql, params = visible_sessions(user).values("pk").query.sql_with_params()
    return sql, tuple(params)


def search(user, query: str, filters: SearchFilters | None = None, page: int = 1) -> SearchResult:
    """Entries matching `query` in sessions `user` can see, newest first."""
    # NUL and lone surrogates become U+FFFD, as in the indexed text (services.search.document_for):
    # neither database takes them, and a query can still find text that held them.
    query = clean_text((query or "").strip())
    filters = filters or SearchFilters()
    if len(query) > MAX_QUERY_CHARS:
        raise SearchError(f"The search text is too long (at most {MAX_QUERY_CHARS} characters).")
    if not query and not filters.any():
        return SearchResult(hits=[], page=1, has_next=False)
    if not user.is_authenticated:
        return SearchResult(hits=[], page=1, has_next=False)
    page = max(1, min(int(page or 1), 200))
    vendor = connection.vendor

    visible_sql, visible_params = _visible_subquery(user)
    where = [f"d.session_id IN ({visible_sql})"]
    params: list = list(visible_params)
    if vendor == "postgresql":
        # The planner cannot estimate the subquery above (owner OR team share), and a bad
        # guess makes it scan the whole table under LIMIT. The same ids as a literal array
        # give it exact statistics; the subquery stays, so visibility is still enforced by
        # this statement itself.
        visible_ids = list(visible_sessions(user).values_list("pk", flat=True))
        if not visible_ids:
            return SearchResult(hits=[], page=page, has_next=False)
        where.append("d.session_id = ANY(%s)")
        params.append(visible_ids)
    joins: list[str] = []
    source, order = f"{DOC} d", "d.entry_id DESC"
    if query:
        source, order = _text_condition(query, vendor, where, params, source, order)
    _filter_conditions(filters, where, params, joins)

    where_sql = " AND ".join(where)
    select = f"SELECT d.entry_id FROM {source} {' '.join(joins)} WHERE {where_sql}"
    need, offset = PAGE_SIZE + 1, (page - 1) * PAGE_SIZE
    with connection.cursor() as cursor:
        ids = None
        if query and vendor == "postgresql":
            ids = _postgres_windowed(cursor, select, params, need, offset)
        if ids is None:
            cursor.execute(f"{select} ORDER BY {order} LIMIT %s OFFSET %s", [*params, need, offset])
            ids = [row[0] for row in cursor.fetchall()]
    has_next = len(ids) > PAGE_SIZE
    ids = ids[:PAGE_SIZE]
    return SearchResult(hits=_hits(ids, query), page=page, has_next=has_next)


def _text_condition(query: str, vendor: str, where: list, params: list, source: str, order: str):
    """Adds the text match of `query` to `where`/`params`; the FROM clause and ORDER BY
    it needs (SQLite's FTS5 table is joined and ordered by its rowid)."""
    if vendor == "postgresql":
        if not any(op != "not" for op, _ in parse_query(query)):
            raise SearchError("Search needs at least one word that is not excluded.")
        where.append("d.tsv @@ websearch_to_tsquery('simple'::regconfig, %s)")
        params.append(query)
    elif vendor == "sqlite":
        source = f"{FTS} f JOIN {DOC} d ON d.entry_id = f.rowid"
        where.append(f"{FTS} MATCH %s")
        params.append(fts5_expression(query))
        order = "f.rowid DESC"
    else:
        for op, text in parse_query(query):
            if op != "or":
                where.append(("NOT " if op == "not" else "") + f"d.text LIKE %s{LIKE_ESCAPE}")
                params.append(f"%{_escape_like(text)}%")
    return source, order


def _filter_conditions(filters: SearchFilters, where: list, params: list, joins: list) -> None:
    """Adds the filters' conditions (and the label filter's join)."""
    if filters.role:
        where.append("d.role = %s")
        params.append(filters.role)
    if filters.tool:
        where.append("d.tool_name = %s")
        params.append(filters.tool)
    if filters.cwd:
        where.append(f"d.session_id IN (SELECT id FROM {SESSION} WHERE cwd LIKE %s{LIKE_ESCAPE})")
        params.append(_like_prefix(filters.cwd))
    if filters.date_from:
        where.append("d.date >= %s")
        params.append(datetime.combine(filters.date_from, time.min, tzinfo=UTC))
    if filters.date_to:
        where.append("d.date <= %s")
        params.append(datetime.combine(filters.date_to, time.max, tzinfo=UTC))
    scored = parse_score_filter(filters.score)  # None for a blank filter
    if scored is not None:
        name, lookup, number = scored
        where.append(
            f"d.entry_id IN (SELECT s.entry_id FROM {SCORE} s JOIN {SCORE_CONFIG} c "
            f"ON c.id = s.config_id WHERE LOWER(c.name) = %s AND s.target = 'entry' "
            f"AND s.value {SQL_OPERATORS[lookup]} %s)"
        )
        params.extend([name.lower(), number])
    if filters.label:
        joins.append(f"JOIN {ENTRY} le ON le.id = d.entry_id")
        where.append(f"LOWER(le.label) LIKE %s{LIKE_ESCAPE}")
        params.append("%" + _escape_like(filters.label.lower()) + "%")


RECENT_WINDOW = 50_000


def _postgres_windowed(cursor, select: str, params: list, need: int, offset: int):
    """Newest-first text search on PostgreSQL in two bounded steps.

    A text query has two good plans and the planner cannot tell which applies (its
    estimates for phrases and for the visibility filter are poor): walking the newest
    rows until enough match (great for common terms, a full scan for rare ones), or
    reading the GIN matches and sorting them (great for rare terms, slow for common
    ones). So: first look only at the newest RECENT_WINDOW documents; enough matches
    there are the answer, as everything outside is older. Otherwise the term is rare
    among recent rows, and the GIN plan ("+ 0" hides the key order from the planner)
    finishes the job. Returns the ids, never None.
    """
    cursor.execute(f"SELECT max(entry_id) FROM {DOC}")
    newest = cursor.fetchone()[0] or 0
    cursor.execute(
        f"{select} AND d.entry_id > %s ORDER BY d.entry_id DESC LIMIT %s OFFSET %s",
        [*params, newest - RECENT_WINDOW, need, offset],
    )
    ids = [row[0] for row in cursor.fetchall()]
    if len(ids) >= need or newest <= RECENT_WINDOW:
        return ids
    cursor.execute(
        f"{select} ORDER BY d.entry_id + 0 DESC LIMIT %s OFFSET %s", [*params, need, offset]
    )
    return [row[0] for row in cursor.fetchall()]


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _like_prefix(text: str) -> str:
    return _escape_like(text) + "%"


def _hits(ids: list[int], query: str) -> list[SearchHit]:
    rows = SearchDocument.objects.filter(entry_id__in=ids).values(
        "entry_id",
        "role",
        "tool_name",
        "date",
        "text",
        entry_pi_id=F("entry__pi_id"),
        label=F("entry__label"),
        session_pi_id=F("session__pi_id"),
        session_name=F("session__name"),
        session_first_message=F("session__first_message"),
        session_cwd=F("session__cwd"),
        parent_id=F("entry__parent_id"),
    )
    by_pk = {row["entry_id"]: row for row in rows}
    words = [text for op, text in parse_query(query) if op != "not"]
    return [
        SearchHit(
            session_pi_id=row["session_pi_id"],
            session_title=row["session_name"] or row["session_first_message"] or UNTITLED,
            session_cwd=row["session_cwd"],
            entry_pi_id=row["entry_pi_id"],
            role=row["role"],
            tool_name=row["tool_name"],
            date=row["date"],
            label=row["label"],
            snippet=snippet(row["text"], words),
            headline=_headline(row["role"], row["text"], row["parent_id"]),
        )
        for row in (by_pk[pk] for pk in ids if pk in by_pk)
    ]


def _headline(role: str, text: str, parent_pk: int | None) -> str:
    """A hit's tool headline, as the session page's tree reads it: what an assistant
    message's calls did (from its indexed text, which holds them as `name({json})`), or
    the call a tool result answers (from the stored previews of the entries above it)."""
    if role == "assistant":
        return " · ".join(headlines_from_preview(text))
    if role != "toolResult":
        return ""

    def ancestors() -> Iterator[tuple[str, str]]:
        parent = parent_pk
        for _ in range(MAX_RESULT_RUN):
            if parent is None:
                return
            found = Entry.objects.filter(pk=parent).values("parent_id", "role", "preview").first()
            if found is None:
                return
            yield found["role"], found["preview"]
            parent = found["parent_id"]

    return answered_headline(ancestors())


MAX_RESULT_RUN = 65  # entries read above a tool result to find its call (answered_headline)


def snippet(text: str, words: list[str], width: int = 220) -> SafeString:
    """An escaped excerpt around the first matching word, matches wrapped in <mark>."""
    lowered = text.lower()
    positions = [lowered.find(w.lower()) for w in words if w]
    positions = [p for p in positions if p >= 0]
    start = max(0, min(positions) - width // 3) if positions else 0
    piece = " ".join(text[start : start + width].split())
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + width < len(text) else ""
    alternatives = sorted({w for w in words if w}, key=len, reverse=True)
    if not alternatives:
        return mark_safe(prefix + html.escape(piece) + suffix)  # noqa: S308
    pattern = re.compile("|".join(re.escape(w) for w in alternatives), re.IGNORECASE)
    out, last = [], 0
    for match in pattern.finditer(piece):
        out.append(html.escape(piece[last : match.start()]))
        out.append("<mark>" + html.escape(match.group(0)) + "</mark>")
        last = match.end()
    out.append(html.escape(piece[last:]))
    return mark_safe(prefix + "".join(out) + suffix)  # noqa: S308 - every piece is escaped


ROLE_CHOICES = [
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "compaction",
    "branch_summary",
    "custom_message",
]


def entries_to_index(session_pk: int, after_seq: int, limit: int) -> list[tuple]:
    """(pk, session pk, seq, type, timestamp, role, tool name, line) of at most `limit` of
    the session's entries past `after_seq`, in seq order: what `services/search.py`
    indexes, read in raw SQL (the ORM cost more than the database for an import's rows)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, session_id, seq, type, timestamp, role, tool_name, line "
            f"FROM {ENTRY} WHERE session_id = %s AND seq > %s ORDER BY seq LIMIT %s",
            [session_pk, after_seq, limit],
        )
        return cursor.fetchall()
