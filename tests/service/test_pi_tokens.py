"""Each entry's stored cut-point estimate (`Entry.pi_tokens`): written by every path that
writes entries (import, append, agent turn, fork, follower), equal to the pure core's
`entry_token_estimate`, and what the compaction job's cut-point search sums."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection
from django.db.models import F

from sessions_app.core.compaction import CompactionSettings, prepare_compaction
from sessions_app.core.tokens import entry_token_estimate
from sessions_app.models import Entry
from sessions_app.selectors import paths
from sessions_app.services import chat, following, jobs, sessions
from sessions_app.services.fork import fork_session
from sessions_app.services.importer import import_jsonl_stream
from tests.support.job_sessions import SMALL, add_turn, make_session
from tests.support.pi16_sessions import session as pi16_session
from tests.support.pi16_sessions import session_names
from tests.support.pi_files import append, as_file, chain_lines, session_file
from tests.support.real_sessions import real_session_bytes
from tests.support.scripted_llm import text, tool_call


def _check_stored(session, *, at_least: int = 1) -> list[Entry]:
    """Every entry of the session has pi_tokens == the core's estimate of its payload."""
    rows = list(Entry.objects.filter(session=session).order_by("seq"))
    assert len(rows) >= at_least
    for row in rows:
        assert row.pi_tokens is not None, row.pi_id
        assert row.pi_tokens == entry_token_estimate(row.payload), row.pi_id
    return rows


@pytest.mark.embedded
@pytest.mark.django_db
def test_imported_entries_store_the_estimate(make_user):
    owner = make_user("importer")
    report = import_jsonl_stream(as_file(real_session_bytes(300_000)), owner, filename="r.jsonl")
    rows = _check_stored(report.session, at_least=20)
    assert any(r.type == "message" and r.pi_tokens > 0 for r in rows)
    assert any(r.type != "message" and r.pi_tokens == 0 for r in rows)
    # pi 1.x files: usage, context_edit and system messages are estimated too.
    for name in session_names()[:4]:
        data, entries, _ = pi16_session(name)
        imported = import_jsonl_stream(as_file(data), owner, filename=name).session
        _check_stored(imported, at_least=len(entries))


@pytest.mark.embedded
@pytest.mark.django_db
def test_appended_and_forked_entries_store_the_estimate(make_user):
    owner = make_user("appender")
    session = make_session(owner, turns=3)
    sessions.label_entry(session, session.leaf.pi_id, "here")
    sessions.rename_session(session, "named")
    rows = _check_stored(session, at_least=14)
    assert {r.type for r in rows} >= {"message", "label", "session_info"}
    middle = rows[5].pi_id
    for scope in ("path", "path_and_siblings", "up_to_depth"):
        fork = fork_session(session, middle, scope, owner)
        _check_stored(fork, at_least=6)


@pytest.fixture
def owner(make_user):
    return make_user("agent-owner")


@pytest.mark.django_db(transaction=True)
def test_agent_turn_entries_store_the_estimate(owner, workspace, redis_ready, llm, monkeypatch):
    from piweb.celery import app

    # The run executes here: its task goes to a queue no worker started elsewhere consumes.
    monkeypatch.setitem(app.conf, "task_default_queue", "piweb-pi-tokens-tests-unconsumed")
    session = sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")
    (workspace / "notes.txt").write_text("line one\n" * 40)
    llm.push(tool_call("read", {"path": "notes.txt"}, call_id="c1"), text("Read it: " + "z" * 90))
    job = chat.send_message(session, owner, "read notes.txt please")
    assert jobs.run_job(str(job.pk)) == "done"
    rows = _check_stored(session, at_least=4)
    roles = [r.role for r in rows]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    assert all(r.pi_tokens > 0 for r in rows)


@pytest.mark.embedded
@pytest.mark.django_db(transaction=True)
def test_followed_file_entries_store_the_estimate(tmp_path, make_user):
    owner = make_user("follower")
    path = session_file(tmp_path, count=3)
    following.sync_file(str(path), owner)
    append(path, b"".join(chain_lines(4, start=3)))
    following.sync_file(str(path), owner)
    state = following.FollowedFile.objects.get(path=str(path))
    rows = _check_stored(state.session, at_least=7)
    assert all(r.pi_tokens > 0 for r in rows)


def _compaction_session(owner):
    return make_session(owner, turns=6, compaction={**SMALL, "keepRecentTokens": 400})


@pytest.fixture
def _no_worker_for_jobs(settings):
    """Jobs run in this process: their tasks go to a queue no worker consumes."""
    settings.PIWEB_JOBS_QUEUE = "q-pi-tokens-tests-unconsumed"


def _run_compaction(session, owner, llm) -> str:
    llm.push(text("SUMMARY"), text("TURN PREFIX"))  # a split turn asks twice
    job = jobs.request_compaction(session, actor=owner)
    assert jobs.run_job(job.id) == "done"
    job.refresh_from_db()
    return job.result_entry.payload["firstKeptEntryId"]


@pytest.mark.django_db(transaction=True)
def test_compaction_job_sums_the_stored_estimates(make_user, llm, _no_worker_for_jobs):
    """Stored figures decide the cut: change them and the job's cut moves with them."""
    owner = make_user()
    session = _compaction_session(owner)
    path = paths.load_path(session)
    cfg = CompactionSettings.from_dict(session.settings["compaction"])
    plain = prepare_compaction(path, cfg)
    # Ten times the real figures: the budget is reached nearer the leaf.
    Entry.objects.filter(session=session).update(pi_tokens=F("pi_tokens") * 10)
    scaled = [10 * entry_token_estimate(e) for e in path]
    expected = prepare_compaction(path, cfg, estimates=scaled)
    assert expected.first_kept_entry_id != plain.first_kept_entry_id
    assert _run_compaction(session, owner, llm) == expected.first_kept_entry_id


@pytest.mark.django_db(transaction=True)
def test_compaction_job_estimates_rows_without_a_stored_figure(make_user, llm, _no_worker_for_jobs):
    """Rows written before the column existed (null) are estimated when read."""
    owner = make_user()
    session = _compaction_session(owner)
    path = paths.load_path(session)
    plain = prepare_compaction(path, CompactionSettings.from_dict(session.settings["compaction"]))
    Entry.objects.filter(session=session).update(pi_tokens=None)
    assert _run_compaction(session, owner, llm) == plain.first_kept_entry_id


@pytest.mark.django_db(transaction=True)
def test_migration_backfills_the_estimates(make_user):
    from django.apps import apps

    owner = make_user()
    session = make_session(owner, turns=3)
    add_turn(session, 4)
    Entry.objects.filter(session=session).update(pi_tokens=None)
    migration = importlib.import_module("sessions_app.migrations.0006_entry_pi_tokens")
    with connection.schema_editor() as editor:
        migration.backfill_pi_tokens(apps, editor)
    _check_stored(session, at_least=16)
