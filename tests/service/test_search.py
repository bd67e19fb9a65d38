"""Search across sessions: full text (PostgreSQL tsvector / SQLite FTS5), filters,
visibility, and index maintenance on append, bulk import and reindex."""

import pytest
from django.core.management import call_command
from django.db import connection

from sessions_app.models import Entry, SearchDocument, SessionShare, Team, TeamMembership
from sessions_app.services import search, sessions
from sessions_app.services.search import SearchError, SearchFilters
from tests.support.branchy_session import assistant, build_branchy_session, user
from tests.support.pi1_session import import_pi1_session

pytestmark = pytest.mark.django_db


def ids(result):
    return [(h.session_pi_id, h.entry_pi_id) for h in result.hits]


@pytest.fixture
def people(make_user):
    owner, member, stranger = make_user("owner"), make_user("member"), make_user("stranger")
    team = Team.objects.create(name="reviewers")
    TeamMembership.objects.create(team=team, user=member)
    return owner, member, stranger, team


@pytest.mark.embedded
def test_finds_message_text_tool_calls_and_results_with_deep_links(people):
    owner, *_ = people
    data = build_branchy_session(owner)
    hits = search.search(owner, "zebrafish").hits
    assert [(h.entry_pi_id, h.role, h.tool_name) for h in hits] == [
        (data.ids["q2"], "toolResult", "bash")
    ]
    assert hits[0].url == (
        f"/s/{data.session.pi_id}/?leaf={data.ids['q2']}&target={data.ids['q2']}"
    )
    assert "<mark>zebrafish</mark>" in hits[0].snippet
    # tool call arguments are searchable ("pytest" only appears in the bash call)
    assert [h.entry_pi_id for h in search.search(owner, "pytest").hits] == [data.ids["b2"]]
    # words are ANDed; phrases and exclusions work
    assert [h.entry_pi_id for h in search.search(owner, "parser bug").hits] == [data.ids["u1"]]
    assert [h.entry_pi_id for h in search.search(owner, '"tests fail"').hits] == [data.ids["b3"]]
    got = {h.entry_pi_id for h in search.search(owner, "tests -fail").hits}
    assert data.ids["a3"] in got and data.ids["b3"] not in got


@pytest.mark.embedded
def test_never_returns_sessions_the_user_cannot_see(people):
    owner, member, stranger, team = people
    data = build_branchy_session(owner)
    other = build_branchy_session(stranger, cwd="/elsewhere", name="Stranger's")
    assert {h.session_pi_id for h in search.search(owner, "zebrafish").hits} == {data.session.pi_id}
    assert search.search(member, "zebrafish").hits == []
    SessionShare.objects.create(session=data.session, team=team, role="viewer")
    assert {h.session_pi_id for h in search.search(member, "zebrafish").hits} == {
        data.session.pi_id
    }
    assert {h.session_pi_id for h in search.search(stranger, "zebrafish").hits} == {
        other.session.pi_id
    }
    from django.contrib.auth.models import AnonymousUser

    assert search.search(AnonymousUser(), "zebrafish").hits == []


@pytest.mark.embedded
def test_filters_role_tool_cwd_label_and_date(people):
    owner, *_ = people
    data = build_branchy_session(owner)
    other = build_branchy_session(owner, cwd="/srv/other", name="Other")
    both = {data.session.pi_id, other.session.pi_id}
    assert {h.session_pi_id for h in search.search(owner, "tests").hits} == both
    by_cwd = search.search(owner, "tests", SearchFilters(cwd="/srv/"))
    assert {h.session_pi_id for h in by_cwd.hits} == {other.session.pi_id}
    by_role = search.search(owner, "tests", SearchFilters(role="user"))
    assert by_role.hits == []
    by_tool = search.search(owner, "", SearchFilters(tool="edit"))
    assert {h.role for h in by_tool.hits} == {"assistant", "toolResult"}
    assert len(by_tool.hits) == 4  # a2 + r2 in both sessions
    sessions.label_entry(data.session, data.ids["a3"], "the fix", actor=owner)
    labelled = search.search(owner, "parser", SearchFilters(label="fix"))
    assert [h.entry_pi_id for h in labelled.hits] == [data.ids["a3"]]
    assert labelled.hits[0].label == "the fix"
    import datetime as dt

    today = dt.datetime.now(dt.UTC).date()
    assert search.search(owner, "zebrafish", SearchFilters(date_from=today)).hits
    assert not search.search(
        owner, "zebrafish", SearchFilters(date_to=today - dt.timedelta(days=1))
    ).hits


@pytest.mark.embedded
def test_hostile_queries_are_quoted_not_executed(people):
    owner, *_ = people
    build_branchy_session(owner)
    for query in [
        '"',
        "NEAR(a b)",
        "a AND OR",
        "col:zebrafish",
        "*",
        "'; DROP TABLE x; --",
        "((((",
    ]:
        search.search(owner, query)  # no database error
    with pytest.raises(SearchError):
        search.search(owner, "-only -negative")
    with pytest.raises(SearchError):
        search.search(owner, "x" * 600)
    with pytest.raises(SearchError):
        SearchFilters.from_params({"from": "yesterday"})


def test_fts5_expression_quotes_every_term():
    assert search.fts5_expression('a "b c" -d OR e') == '("a" AND "b c" OR "e") NOT "d"'
    assert search.fts5_expression('say "hi"x') == '"say" AND "hi" AND "x"'


@pytest.mark.embedded
def test_index_follows_appends_bulk_indexing_and_reindex(people):
    owner, *_ = people
    session = sessions.create_session(owner=owner, cwd="/p")
    entry = sessions.append_entry(session, user("an ocelot appears"))
    assert [h.entry_pi_id for h in search.search(owner, "ocelot").hits] == [entry.pi_id]
    # settings entries are not indexed
    sessions.append_entry(session, {"type": "thinking_level_change", "thinkingLevel": "high"})
    assert SearchDocument.objects.filter(session=session).count() == 1
    # bulk path (what the importer calls): idempotent
    SearchDocument.objects.all().delete()
    assert search.search(owner, "ocelot").hits == []
    entries = list(Entry.objects.filter(session=session))
    search.index_entries(entries)
    search.index_entries(entries)
    assert [h.entry_pi_id for h in search.search(owner, "ocelot").hits] == [entry.pi_id]
    SearchDocument.objects.all().delete()
    call_command("reindex_search")
    assert [h.entry_pi_id for h in search.search(owner, "ocelot").hits] == [entry.pi_id]
    # deleting the session removes its rows (and the FTS5 rows through the triggers)
    session.delete()
    assert search.search(owner, "ocelot").hits == []
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM sessions_app_searchfts WHERE sessions_app_searchfts MATCH 'ocelot'"
            )
            assert cursor.fetchone()[0] == 0


@pytest.mark.parametrize("window", [50_000, 3, 70])
def test_pagination_newest_first(people, monkeypatch, window):
    """Also with a tiny recent window, so PostgreSQL's fallback (GIN) step runs too."""
    monkeypatch.setattr(search, "RECENT_WINDOW", window)
    owner, *_ = people
    sessions.append_entry(sessions.create_session(owner=owner, cwd="/q"), user("no match here"))
    session = sessions.create_session(owner=owner, cwd="/p")
    made = [sessions.append_entry(session, assistant(f"kiwi number {i}")).pi_id for i in range(60)]
    first = search.search(owner, "kiwi")
    assert first.has_next and len(first.hits) == search.PAGE_SIZE
    assert first.hits[0].entry_pi_id == made[-1]
    second = search.search(owner, "kiwi", page=2)
    assert not second.has_next
    assert [h.entry_pi_id for h in first.hits + second.hits] == made[::-1]


def test_search_page_view(client, people):
    owner, member, *_ = people
    data = build_branchy_session(owner)
    client.force_login(owner)
    response = client.get("/search/", {"q": "zebrafish"})
    assert response.status_code == 200
    body = response.content.decode()
    assert (
        f'href="/s/{data.session.pi_id}/?leaf={data.ids["q2"]}&amp;target={data.ids["q2"]}"' in body
    )
    client.force_login(member)
    body = client.get("/search/", {"q": "zebrafish"}).content.decode()
    assert data.session.pi_id not in body and "No matches" in body
    assert client.get("/search/", {"q": "x", "from": "nope"}).status_code == 400


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
        return {h.entry_pi_id for h in search.search(pi1_owner, query).hits}

    assert "b00000e3" in hit_ids("zebra")  # a context edit's replacement text
    assert "b00000s1" in hit_ids("quokka")  # a system message's section
    assert "b00000s1" in hit_ids("lint")  # … and the tools it adds
    assert "b00000u1" in hit_ids("summarizing")  # a usage entry's note
    assert "b00000x1" in hit_ids("octopus")  # an unknown entry type's strings
