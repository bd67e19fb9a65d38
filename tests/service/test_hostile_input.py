"""Hostile session files at the import door: every value a page shows stays bounded and
safe, odd JSON (deep nesting, 1e999, lone surrogates) never turns into a 500, and the
import's answers leak nothing about other users.

Every page is fetched through Django's test client (tests/support/page_walk.py); the
exports are compared byte for byte with what was imported.
"""

from __future__ import annotations

import io
import json

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app.core.exports import branch_markdown
from sessions_app.core.input_limits import MAX_CWD_CHARS, MAX_JSON_DEPTH
from sessions_app.models import Entry, Session
from sessions_app.selectors.exporter import export_bytes
from sessions_app.selectors.search import search
from sessions_app.services.importer import SessionImportError, import_jsonl_stream
from tests.support import page_walk
from tests.support.hostile_markdown import HOSTILE_MARKDOWN, rendered_tags
from tests.support.pi_files import header, jsonl_text, message
from tests.support.web import client_for, post_import

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]

HEADER_ID = "11111111-2222-3333-4444-555555555555"


@pytest.fixture
def owner(make_user):
    return make_user("hostile-owner")


def upload(data: str | bytes, owner) -> object:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return import_jsonl_stream(
        io.BytesIO(raw), owner, filename="hostile.jsonl", after_commit="inline"
    )


def assert_pages_fine(session, owner) -> list[page_walk.Fetched]:
    pages = page_walk.walk(session, owner)
    assert page_walk.problems(pages) == []
    assert all(page.status < 400 for page in pages), [(p.url, p.status) for p in pages]
    return pages


def assert_export_is_the_file(session, data: str, skipped=()) -> None:
    """The JSONL export is the file, byte for byte, less the lines the import skipped."""
    dropped = {number for number, _ in skipped}
    kept = [line for n, line in enumerate(data.splitlines(True), 1) if n not in dropped]
    assert export_bytes(session) == "".join(kept).encode("utf-8")


# --- limits on short fields -----------------------------------------------------------------


def test_a_huge_cwd_is_cut_for_pages_and_kept_whole_in_the_export(owner):
    cwd = "/w/" + "d" * 2_000_000
    data = jsonl_text(header(cwd=cwd), [message("a1", None, text="hello")])
    report = upload(data, owner)
    session = report.session
    assert len(session.cwd) == MAX_CWD_CHARS
    assert any("cwd is 2,000,003 characters long" in w for w in report.warnings)
    assert_export_is_the_file(session, data)
    pages = assert_pages_fine(session, owner)
    inspector = next(p for p in pages if "/inspect/" in p.url)
    assert inspector.size < 200_000


def test_overlong_names_labels_and_ids_are_reported_and_shown_cut(owner):
    big = "x" * 100_000
    assistant = message("a2", "a1", "assistant", "ok")
    assistant["message"].update(provider=big, model=big)
    entries = [
        message("a1", None, text="hello"),
        assistant,
        {"type": "custom", "id": "c1", "parentId": "a2", "timestamp": "t", "customType": big},
        {"type": "session_info", "id": "n1", "parentId": "c1", "timestamp": "t", "name": big},
        {"type": "label", "id": "l1", "parentId": "n1", "timestamp": "t", "targetId": "a1"}
        | {"label": big},
        {"type": "model_change", "id": "m1", "parentId": "l1", "timestamp": "t"}
        | {"provider": big, "modelId": big},
    ]
    data = jsonl_text(header(), entries)
    report = upload(data, owner)
    warned = " ".join(report.warnings)
    for field in (
        "message.provider",
        "message.model",
        "customType",
        "name",
        "label",
        "modelId",
    ):
        assert f"{field} is 100,000 characters long" in warned
    session = Session.objects.get(pk=report.session.pk)
    assert len(session.name) <= 500
    assert len(Entry.objects.get(session=session, pi_id="a1").label) <= 200
    assert_export_is_the_file(session, data)
    for page in assert_pages_fine(session, owner):
        if "/e/" in page.url:  # an entry pane shows each field at most cut to its limit
            assert page.size < 20_000, page.url


# --- JSON nesting ------------------------------------------------------------------------------


def nested(depth: int) -> dict:
    value: object = "bottom"
    for _ in range(depth - 1):  # the entry object is one of the levels
        value = [value]
    return {"type": "custom", "id": "d1", "parentId": "a1", "timestamp": "t", "data": value}


def test_json_nested_deeper_than_the_limit_is_skipped_with_its_reason_not_a_500(owner):
    lines = [
        json.dumps(header()),
        json.dumps(message("a1", None)),
        json.dumps(nested(MAX_JSON_DEPTH)),  # at the limit: kept
        json.dumps(nested(MAX_JSON_DEPTH + 1)).replace('"d1"', '"d2"'),
        "[" * 5000 + "]" * 5000,  # deeper than Python's own parser goes
        '{"type":"custom","id":"d3","parentId":"a1","data":' + "[" * 990 + "]" * 990 + "}",
    ]
    data = "\n".join(lines) + "\n"
    response = post_import(
        client_for(owner),
        {"file": io.BytesIO(data.encode()) | _named("deep.jsonl")},
    )
    assert response.status_code == 200
    session = Session.objects.get(pi_id=HEADER_ID)
    stored = set(Entry.objects.filter(session=session).values_list("pi_id", flat=True))
    assert stored == {"a1", "d1"}
    body = response.content.decode()
    deeper = body.count(f"nested deeper than {MAX_JSON_DEPTH} levels")
    assert deeper + body.count("nested too deeply to read") == 3 and deeper >= 1
    assert "nested too deeply to read" in body
    assert_pages_fine(session, owner)


class _named:
    """`io.BytesIO(...) | _named("x.jsonl")`: a file object with a name, for the client."""

    def __init__(self, name: str):
        self.name = name

    def __ror__(self, fileobj):
        fileobj.name = self.name
        return fileobj


# --- numbers beyond the double range -------------------------------------------------------------


def test_numbers_beyond_the_double_range_render_as_pi_reads_them(owner):
    lines = [
        json.dumps(header()),
        json.dumps(message("a1", None, text="start")),
        '{"type":"compaction","id":"c1","parentId":"a1","timestamp":"t","summary":"s",'
        '"firstKeptEntryId":"a1","tokensBefore":1e999}',
    ]
    for eid, total in (("b1", "1e999"), ("b2", "-1e999"), ("b3", "1" + "0" * 400)):
        body = message(eid, "c1", "assistant", f"branch {eid}")
        line = json.dumps(body).replace(
            '"stopReason"', f'"usage":{{"totalTokens":{total}}},"stopReason"'
        )
        lines.append(line)
    data = "\n".join(lines) + "\n"
    session = upload(data, owner).session
    assert_export_is_the_file(session, data)
    assert_pages_fine(session, owner)
    client = client_for(owner)
    pane = client.get(reverse("sessions_app:entry_pane", args=[session.pi_id, "c1"]))
    assert "∞ tokens before" in pane.content.decode()
    compare = reverse("sessions_app:compare", args=[session.pi_id])
    for a, b in (("b1", "b2"), ("b1", "b3"), ("b2", "b3")):
        response = client.get(compare, {"a": a, "b": b})
        assert response.status_code == 200
        assert "Infinity" in response.content.decode()


# --- lone surrogates ------------------------------------------------------------------------------


SURROGATE_TEXT = "needle \ud800 <b>haystack</b> \udfff end"


def surrogate_file() -> str:
    """Lone surrogates in text, ids, tool names and custom types (serialize_entry writes
    them as JSON escapes, as JSON.stringify does)."""
    assistant = message("a2", "a1", "assistant", "why \ud800")
    assistant["message"]["content"].append(
        {"type": "toolCall", "id": "t\udc00", "name": "bash\ud800", "arguments": {"k\ud800": "v"}}
    )
    entries = [
        message("a1", None, text=SURROGATE_TEXT),
        assistant,
        {
            "type": "message",
            "id": "a3",
            "parentId": "a2",
            "timestamp": "t\ud800",
            "message": {
                "role": "toolResult",
                "toolCallId": "t\udc00",
                "toolName": "bash\ud801",
                "content": [{"type": "text", "text": "out \ud800"}],
                "isError": False,
            },
        },
        {"type": "custom", "id": "c\ud800", "parentId": "a3", "timestamp": "t"},
        {
            "type": "custom_message",
            "id": "c2",
            "parentId": "a3",
            "timestamp": "t",
            "customType": "k\ud800",
            "content": "m\udfff",
            "display": True,
        },
    ]
    return jsonl_text(header(cwd="/w/\ud800"), entries)


def test_lone_surrogates_render_as_replacement_characters_and_export_byte_exact(owner):
    data = surrogate_file()
    assert "\\ud800" in data and "\\udfff" in data
    report = upload(data, owner)
    session = report.session
    assert Entry.objects.filter(session=session).count() == 4  # "c\ud800" is not a valid id
    assert [n for n, _ in report.skipped] == [5]
    assert_export_is_the_file(session, data, report.skipped)
    pages = assert_pages_fine(session, owner)
    detail = next(p for p in pages if p.url.endswith("/e/a1/"))
    assert "needle \ufffd &lt;b&gt;haystack&lt;/b&gt; \ufffd end" in detail.body.decode()
    markdown = next(p for p in pages if p.url.endswith("/export/md/"))
    assert "needle \ufffd" in markdown.body.decode()


def test_text_around_lone_surrogates_is_searchable(owner):
    session = upload(surrogate_file(), owner).session
    hits = search(owner, "haystack").hits
    assert [(h.session_pi_id, h.entry_pi_id) for h in hits] == [(session.pi_id, "a1")]
    page = client_for(owner).get(reverse("sessions_app:search"), {"q": "needle"})
    assert page.status_code == 200 and "a1" in page.content.decode()


# --- files with no valid entry ------------------------------------------------------------------


def test_a_file_whose_entry_lines_are_all_invalid_is_refused_and_creates_nothing(owner):
    bad_lines = ["{not json", '{"type":"message"}', "[1,2]", '{"type":"custom","id":"a/b"}']
    data = json.dumps(header()) + "\n" + "\n".join(bad_lines * 50) + "\n"
    with pytest.raises(SessionImportError, match="none of the 200 entry line"):
        upload(data, owner)
    assert not Session.objects.filter(pi_id=HEADER_ID).exists()
    response = post_import(client_for(owner), {"file": io.BytesIO(data.encode()) | _named("x")})
    assert response.status_code == 400
    assert not Session.objects.filter(pi_id=HEADER_ID).exists()


def test_a_header_only_file_is_still_a_valid_empty_session(owner):
    report = upload(json.dumps(header()) + "\n\n", owner)
    assert report.status == "created" and report.entries_added == 0
    assert report.session.leaf_id is None


def test_a_file_with_some_valid_entries_keeps_them_and_reports_the_rest(owner):
    data = json.dumps(header()) + "\n{broken\n" + json.dumps(message("a1", None)) + "\n"
    report = upload(data, owner)
    assert report.entries_added == 1 and report.skipped_count == 1


# --- whose session an id is -----------------------------------------------------------------------


def test_importing_another_users_session_id_says_no_more_than_cannot_import(owner, make_user):
    upload(jsonl_text(header(), [message("a1", None)]), owner)
    intruder = make_user("intruder")
    with pytest.raises(SessionImportError) as theirs:
        upload(jsonl_text(header(cwd="/elsewhere"), [message("a1", None)]), intruder)
    with pytest.raises(SessionImportError) as mine:
        upload(jsonl_text(header(cwd="/elsewhere"), [message("a1", None)]), owner)
    assert str(theirs.value) == str(mine.value)
    assert "another user" not in str(theirs.value) and owner.username not in str(theirs.value)
    response = post_import(
        client_for(intruder),
        {"file": io.BytesIO(jsonl_text(header(), []).encode()) | _named("x.jsonl")},
    )
    assert response.status_code == 400
    assert str(mine.value).split(": ", 1)[1] in response.content.decode().replace("&#x27;", "'")


# --- search input -------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["\x00", "a\x00b", '"\x00"', "-\x00 x"])
def test_search_and_the_sessions_list_answer_a_nul_byte_normally(owner, query):
    upload(jsonl_text(header(), [message("a1", None, text="a b x")]), owner)
    client = client_for(owner)
    for name, params in (
        ("sessions_app:search", {"q": query}),
        ("sessions_app:search", {"q": "x", "tool": query, "cwd": query, "label": query}),
        ("sessions_app:session_list", {"q": query}),
    ):
        response = client.get(reverse(name), params)
        assert response.status_code in (200, 400), (name, params)


# --- the Markdown export ------------------------------------------------------------------------


def test_the_markdown_export_escapes_raw_html_from_the_session(owner):
    entries = [message("a1", None, text=HOSTILE_MARKDOWN[0])]
    parent = "a1"
    for i, text in enumerate(HOSTILE_MARKDOWN[1:]):
        role = "assistant" if i % 2 == 0 else "user"
        entries.append(message(f"m{i}", parent, role, text))
        parent = f"m{i}"
    entries.append(
        {
            "type": "message",
            "id": "t1",
            "parentId": parent,
            "timestamp": "t",
            "message": {
                "role": "toolResult",
                "toolCallId": "c",
                "toolName": "bash`<script>alert(7)</script>",
                "content": [{"type": "text", "text": "<script>alert(8)</script>\n```"}],
            },
        }
    )
    session = upload(jsonl_text(header(), entries), owner).session
    for url in (
        reverse("sessions_app:export", args=[session.pi_id, "md"]),
        *[u for u in page_walk.link_urls(session, owner) if u.endswith("/md/")],
    ):
        client = client_for(owner) if url.startswith("/s/") else Client()
        markdown = client.get(url).content.decode()
        assert "alert(8)" in markdown  # the text is there, as text
        html = rendered_tags(markdown)
        assert "<script" not in html and "<img" not in html and "<iframe" not in html


def test_the_markdown_export_keeps_its_own_fold_around_tool_output():
    tool = {"role": "toolResult", "toolName": "read", "content": [{"type": "text", "text": "a<b"}]}
    path = [{"type": "message", "id": "t1", "parentId": None, "message": tool}]
    html = rendered_tags(branch_markdown({"id": "s"}, path))
    assert "<details><summary>output</summary>" in html and "a&lt;b" in html
