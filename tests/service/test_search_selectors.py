"""The search query (sessions_app/selectors/search.py): full text (PostgreSQL tsvector /
SQLite FTS5), the search box's syntax, filters, visibility and paging. The index it reads
is tested in test_search.py."""

import pytest

from sessions_app.models import SessionShare, Team, TeamMembership
from sessions_app.selectors import search
from sessions_app.selectors.search import SearchError, SearchFilters
from sessions_app.services import sessions
from tests.support.branchy_session import assistant, build_branchy_session, user

pytestmark = pytest.mark.django_db


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
def test_hits_are_titled_by_the_session_name_else_its_first_message_never_its_id(people):
    owner, *_ = people
    named = build_branchy_session(owner)
    unnamed = build_branchy_session(owner, cwd="/work/beta", name="")
    empty = sessions.create_session(owner=owner, cwd="/work/gamma")
    sessions.append_entry(empty, assistant("zebrafish without a question"), actor=owner)
    titles = {h.session_pi_id: h.session_title for h in search.search(owner, "zebrafish").hits}
    assert titles == {
        named.session.pi_id: "Parser fix",
        unnamed.session.pi_id: "Please fix the parser bug in tokenizer.py",
        empty.pi_id: search.UNTITLED,
    }


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
def test_filters_on_scores(people):
    from sessions_app.services import scores

    owner, *_ = people
    team = Team.objects.create(name="graders")
    TeamMembership.objects.create(team=team, user=owner, role="admin")
    data = build_branchy_session(owner)
    config = scores.create_config(
        team, actor=owner, name="Quality", kind="number", min_value=1, max_value=5
    )
    scores.set_score(data.session, data.ids["a3"], config.pk, "2", actor=owner)
    scores.set_score(data.session, data.ids["b3"], config.pk, "4", actor=owner)
    low = search.search(owner, "", SearchFilters.from_params({"score": "quality<3"}))
    assert [h.entry_pi_id for h in low.hits] == [data.ids["a3"]]
    high = search.search(owner, "tests", SearchFilters(score="quality>=4"))
    assert [h.entry_pi_id for h in high.hits] == [data.ids["b3"]]
    with pytest.raises(SearchError):
        SearchFilters.from_params({"score": "quality<<3"})


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


@pytest.mark.embedded
def test_a_call_and_its_result_read_the_one_headline_not_the_call_id(people):
    """Issue 34: a hit on a tool call or on its result says what the call did, as the
    tree and the chat say it (core/tool_headline)."""
    owner, *_ = people
    data = build_branchy_session(owner)
    (call,) = search.search(owner, "pytest").hits
    assert (call.entry_pi_id, call.headline) == (data.ids["b2"], "$ pytest")
    (result,) = search.search(owner, "zebrafish").hits
    assert (result.entry_pi_id, result.headline) == (data.ids["q2"], "$ pytest")
    (question,) = search.search(owner, "parser bug").hits
    assert question.headline == ""
    assert "c3" not in f"{call.headline} {result.headline} {call.snippet} {result.snippet}"
