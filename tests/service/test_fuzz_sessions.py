"""Property-based fuzzing of the whole pipeline: upload → store → every page and export.

Hypothesis draws pi session files (tests/support/pi_fuzz.py: valid trees plus hostile
mutations). Each one is uploaded through the import page, then every page, partial and
export of the session is fetched through Django's test client, as its owner and through
a share link. The properties:

- no response is a 5xx (an exception in a view fails the test with its traceback);
- no response is larger than `page_walk.MAX_RESPONSE_BYTES`;
- a refused file creates nothing, an accepted one is a session;
- the JSONL export gives back every accepted line byte for byte (lines that were repaired
  on the way in, invalid UTF-8 or padding, give back the same JSON).

The default budget is small enough for every test run; set `PIWEB_FUZZ_EXAMPLES` for a
longer hunt (e.g. `PIWEB_FUZZ_EXAMPLES=2000`). Every example runs in a savepoint that is
rolled back, so examples do not see each other.
"""

from __future__ import annotations

import json
import os

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sessions_app.core.import_lines import LinePreparer, PreparedEntry, RawObject
from sessions_app.core.jsonl import serialize_entry
from sessions_app.models import Session
from sessions_app.selectors.exporter import export_bytes
from tests.support import page_walk
from tests.support.pi_fuzz import SESSION_ID, FuzzFile, session_files
from tests.support.web import upload

EXAMPLES = int(os.environ.get("PIWEB_FUZZ_EXAMPLES", "0") or 0)
# A bigger budget needs more than the suite's 300 s per test (a few seconds per example).
pytestmark = [pytest.mark.django_db, pytest.mark.timeout(max(300, 10 * EXAMPLES))]

FUZZ = settings(
    max_examples=EXAMPLES or 20,
    deadline=None,
    derandomize=not EXAMPLES,  # the CI budget always tries the same examples
    database=None,
    # No shrinking: a failing file is printed whole, and shrinking one through the pages
    # takes minutes.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    report_multiple_bugs=False,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)


def accepted_lines(data: bytes) -> list[int]:
    """The numbers of the header line and of every entry line the import keeps (for a
    current-version file, read with the importer's own line reader)."""
    preparer = LinePreparer()
    records = preparer.feed(data) + preparer.end()
    out: list[int] = []
    for record in records:
        if isinstance(record, RawObject) and not out:
            out.append(record.number)
        elif isinstance(record, PreparedEntry):
            out.append(record.number)
    return out


def assert_export_gives_back_the_file(session: Session, data: bytes) -> None:
    raw_lines = data.split(b"\n")
    exported = export_bytes(session).split(b"\n")
    assert exported[-1] == b""
    exported = exported[:-1]
    kept = accepted_lines(data)
    assert len(exported) == len(kept)
    for line, number in zip(exported, kept, strict=True):
        # Bytes that are not UTF-8 are read as U+FFFD (as pi reads them); a line that is
        # one JSON object with nothing around it is kept as it is, any other (padding,
        # a CR) is written back as JSON.stringify writes what JSON.parse read.
        text = raw_lines[number - 1].decode("utf-8", errors="replace")
        if text[:1] == "{" and text[-1:] == "}":
            assert line == text.encode("utf-8"), f"line {number} changed"
        else:
            expected = serialize_entry(json.loads(text))
            assert line.decode("utf-8") == expected, f"line {number} changed"


def check_file(owner, fuzz: FuzzFile) -> None:
    client = Client()
    client.force_login(owner)
    response = upload(client, fuzz.data)
    assert response.status_code in (200, 400), response.status_code
    assert len(response.content) <= page_walk.MAX_RESPONSE_BYTES
    session = Session.objects.filter(pi_id=SESSION_ID).first()
    if response.status_code == 400:
        assert session is None, "a refused file created a session"
        return
    assert session is not None and session.owner_id == owner.pk
    if fuzz.header_is_current:
        assert_export_gives_back_the_file(session, fuzz.data)
    pages = page_walk.walk(session, owner)
    assert page_walk.problems(pages) == []


@pytest.fixture
def owner(make_user):
    return make_user("fuzz-owner")


@FUZZ
@given(fuzz=session_files())
def test_any_session_file_imports_renders_and_exports_safely(owner, fuzz):
    with transaction.atomic():
        check_file(owner, fuzz)
        transaction.set_rollback(True)


@pytest.mark.embedded
@settings(FUZZ, max_examples=(EXAMPLES or 24) // 3)
@given(fuzz=session_files(), query=st.text(max_size=12))
def test_fuzzed_files_import_and_search_on_the_embedded_default(owner, fuzz, query):
    """The cheaper half on SQLite too: the upload, the export and search (FTS5)."""
    with transaction.atomic():
        client = Client()
        client.force_login(owner)
        response = upload(client, fuzz.data)
        assert response.status_code in (200, 400)
        session = Session.objects.filter(pi_id=SESSION_ID).first()
        assert (session is None) == (response.status_code == 400)
        if session is not None and fuzz.header_is_current:
            assert_export_gives_back_the_file(session, fuzz.data)
        found = client.get(reverse("sessions_app:search"), {"q": query})
        assert found.status_code in (200, 400)
        transaction.set_rollback(True)
