"""The search index (sessions_app/services/search.py): what it holds of each entry, kept
on append, bulk indexing and reindex. What a query finds in it is tested in
test_search_selectors.py; which writer indexes when, in test_job_search_index.py."""

import pytest
from django.core.management import call_command
from django.db import connection

from sessions_app.models import Entry, SearchDocument
from sessions_app.selectors import search as search_selectors
from sessions_app.services import search, sessions
from tests.support.branchy_session import user
from tests.support.pi1_session import import_pi1_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(make_user):
    return make_user("owner")


@pytest.mark.embedded
def test_index_follows_appends_bulk_indexing_and_reindex(owner):
    session = sessions.create_session(owner=owner, cwd="/p")
    entry = sessions.append_entry(session, user("an ocelot appears"))
    assert [h.entry_pi_id for h in search_selectors.search(owner, "ocelot").hits] == [entry.pi_id]
    # settings entries are not indexed
    sessions.append_entry(session, {"type": "thinking_level_change", "thinkingLevel": "high"})
    assert SearchDocument.objects.filter(session=session).count() == 1
    # bulk path (what the importer calls): idempotent
    SearchDocument.objects.all().delete()
    assert search_selectors.search(owner, "ocelot").hits == []
    entries = list(Entry.objects.filter(session=session))
    search.index_entries(entries)
    search.index_entries(entries)
    assert [h.entry_pi_id for h in search_selectors.search(owner, "ocelot").hits] == [entry.pi_id]
    SearchDocument.objects.all().delete()
    call_command("reindex_search")
    assert [h.entry_pi_id for h in search_selectors.search(owner, "ocelot").hits] == [entry.pi_id]
    # deleting the session removes its rows (and the FTS5 rows through the triggers)
    session.delete()
    assert search_selectors.search(owner, "ocelot").hits == []
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM sessions_app_searchfts WHERE sessions_app_searchfts MATCH 'ocelot'"
            )
            assert cursor.fetchone()[0] == 0


# --- pi 1.x entries -----------------------------------------------------------------------


@pytest.fixture
def pi1_owner(make_user):
    return make_user("pi1-owner")


@pytest.fixture
def pi1_session(pi1_owner):
    return import_pi1_session(pi1_owner)


@pytest.mark.embedded
def test_search_finds_the_text_of_new_entry_types(pi1_session, pi1_owner):
    def hit_ids(query):
        return {h.entry_pi_id for h in search_selectors.search(pi1_owner, query).hits}

    assert "b00000e3" in hit_ids("zebra")  # a context edit's replacement text
    assert "b00000s1" in hit_ids("quokka")  # a system message's section
    assert "b00000s1" in hit_ids("lint")  # … and the tools it adds
    assert "b00000u1" in hit_ids("summarizing")  # a usage entry's note
    assert "b00000x1" in hit_ids("octopus")  # an unknown entry type's strings
