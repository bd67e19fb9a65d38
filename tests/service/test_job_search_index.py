"""Search indexing is explicit, never a Django signal (an appended entry through the
entry-written event, the bulk writers through `jobs.search_index.index_new_entries`, an
import through its post-import work): each path that writes entries leaves them
searchable, a few at once and many through the `search_index` job
(services/jobs/search_index.py), which is idempotent and is run again when its worker
dies. Jobs run here through the lifecycle's `run_job` (what the worker's task calls); their
messages go to a queue no worker consumes."""

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import Entry, FollowedFile, Job, SearchDocument
from sessions_app.selectors import search as search_selectors
from sessions_app.services import following, fork, sessions
from sessions_app.services.importer import append_lines, import_jsonl_stream
from sessions_app.services.jobs import lifecycle, search_index
from sessions_app.services.jobs.search_index import request_index
from sessions_app.services.manage import delete_session
from tests.support.branchy_session import build_branchy_session, user
from tests.support.pi_files import (
    FOLLOWED_SID,
    as_file,
    chain_lines,
    header,
    jsonl_text,
    message,
    session_file,
)

pytestmark = [
    pytest.mark.embedded,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("redis_ready", "tasks_stay_in_process"),
]
Status = Job.Status


@pytest.fixture
def owner(make_user):
    return make_user("indexer")


def found(owner, words) -> list[tuple[str, str]]:
    """(session pi id, entry pi id) of every hit."""
    return sorted(
        (h.session_pi_id, h.entry_pi_id) for h in search_selectors.search(owner, words).hits
    )


def index_jobs() -> list[Job]:
    return list(Job.objects.filter(kind=Job.Kind.SEARCH_INDEX).order_by("created_at"))


def run_index_jobs() -> list[Job]:
    jobs = index_jobs()
    for job in jobs:
        assert lifecycle.run_job(job.pk) == Status.DONE
        job.refresh_from_db()
    return jobs


def entries_file(sid: str, words: str, count: int = 3) -> str:
    entries = [message("e0000", None, "user", "first question")]
    for n in range(1, count):
        entries.append(message(f"e{n:04d}", f"e{n - 1:04d}", "assistant", f"{words} {n}", ts=n))
    return jsonl_text(header(sid), entries)


# --- one by one: sessions.append_entry (chat, labels, summaries, workspace choices) -------


def test_an_appended_entry_is_searchable_in_its_own_transaction(owner):
    session = sessions.create_session(owner=owner, cwd="/p")
    entry = sessions.append_entry(session, user("a marmosetquux question"))
    assert found(owner, "marmosetquux") == [(session.pi_id, entry.pi_id)]
    assert SearchDocument.objects.filter(entry=entry).count() == 1
    assert index_jobs() == []


def test_entry_rows_written_without_the_explicit_call_are_not_indexed(owner):
    """No signal indexes behind a writer's back: the call in each writer is what counts."""
    session = sessions.create_session(owner=owner, cwd="/p")
    first = sessions.append_entry(session, user("one"))
    Entry.objects.create(
        session=session,
        pi_id="rawrow01",
        parent=first,
        parent_pi_id=first.pi_id,
        seq=99,
        type="message",
        role="user",
        payload={"type": "message", "id": "rawrow01", "message": {"role": "user", "content": "x"}},
    )
    assert not SearchDocument.objects.filter(entry__pi_id="rawrow01").exists()


# --- a fork ---------------------------------------------------------------------------------


def test_a_small_fork_is_searchable_at_once(owner):
    data = build_branchy_session(owner)
    copy = fork.fork_session(data.session, data.ids["q2"], actor=owner)
    assert {s for s, _ in found(owner, "zebrafish")} == {data.session.pi_id, copy.pi_id}
    assert index_jobs() == []


def test_a_big_path_fork_copies_the_source_s_search_rows_in_a_job(owner, monkeypatch):
    """Above the inline limit, a path fork's search rows are copied from the source's
    (not parsed again) by a job after the commit."""
    monkeypatch.setattr(search_index, "INLINE_INDEX_LIMIT", 3)
    data = build_branchy_session(owner)
    copy = fork.fork_session(data.session, data.ids["q2"], actor=owner)
    assert {s for s, _ in found(owner, "zebrafish")} == {data.session.pi_id}
    (job,) = index_jobs()
    assert job.params == {"work": [], "tidy": False, "copies": [[data.session.pk, copy.pk]]}
    run_index_jobs()
    assert {s for s, _ in found(owner, "zebrafish")} == {data.session.pi_id, copy.pi_id}
    copied = SearchDocument.objects.filter(session=copy)
    assert (
        sorted(copied.values_list("entry__pi_id", "text"))
        == sorted(
            SearchDocument.objects.filter(
                session=data.session, entry__pi_id__in=copy.entries.values("pi_id")
            ).values_list("entry__pi_id", "text")
        )
        and copied.exists()
    )


def test_a_big_fork_whose_source_is_deleted_before_its_search_job_is_indexed_from_its_lines(
    owner, monkeypatch
):
    monkeypatch.setattr(search_index, "INLINE_INDEX_LIMIT", 3)
    data = build_branchy_session(owner)
    copy = fork.fork_session(data.session, data.ids["q2"], actor=owner)
    data.session.delete()
    run_index_jobs()
    assert {s for s, _ in found(owner, "zebrafish")} == {copy.pi_id}


def test_a_small_fork_of_a_fork_copies_its_search_rows_at_once_and_outlives_its_sources(owner):
    data = build_branchy_session(owner)
    first = fork.fork_session(data.session, data.ids["q2"], actor=owner)
    second = fork.fork_session(first, data.ids["q2"], actor=owner)
    assert {s for s, _ in found(owner, "zebrafish")} == {
        data.session.pi_id,
        first.pi_id,
        second.pi_id,
    }
    assert index_jobs() == []
    hits = sorted(found(owner, "zebrafish"))
    # Deleting the source, then the fork in the middle, leaves the last fork's hits.
    for doomed in (data.session, first):
        delete_session(doomed, actor=owner, confirm=doomed.pi_id)
    assert sorted(found(owner, "zebrafish")) == [h for h in hits if h[0] == second.pi_id] != []


@pytest.mark.parametrize("limit", [500, 1])
def test_a_fork_of_a_source_whose_search_job_has_not_run_is_indexed_itself(
    owner, monkeypatch, limit
):
    monkeypatch.setattr(search_index, "INLINE_INDEX_LIMIT", limit)
    report = import_jsonl_stream(
        as_file(entries_file(SID_B, "tapirquux")), owner, after_commit="worker"
    )
    assert found(owner, "tapirquux") == []
    copy = fork.fork_session(report.session, "e0002", actor=owner)
    if limit == 500:  # two entries, under the limit: indexed in the fork's transaction
        assert sorted(found(owner, "tapirquux")) == sorted(
            [(copy.pi_id, "e0001"), (copy.pi_id, "e0002")]
        )
        (job,) = index_jobs()
        assert job.params["work"] == [[report.session.pk, 0]]
    else:  # over it: by a job of its own
        assert found(owner, "tapirquux") == []
        assert [job.params["work"] for job in index_jobs()] == [
            [[report.session.pk, 0]],
            [[copy.pk, 0]],
        ]
    run_index_jobs()
    assert sorted(found(owner, "tapirquux")) == sorted(
        [(SID_B, "e0001"), (SID_B, "e0002"), (copy.pi_id, "e0001"), (copy.pi_id, "e0002")]
    )


# --- imports: an upload, the command, the follower's first scan ---------------------------


SID_A = "0199cccc-dddd-7eee-8fff-00000000000a"
SID_B = "0199cccc-dddd-7eee-8fff-00000000000b"


def test_an_import_indexes_after_its_commit_inline_or_through_a_job(owner):
    import_jsonl_stream(as_file(entries_file(SID_A, "okapiquux")), owner)
    assert found(owner, "okapiquux") == [(SID_A, "e0001"), (SID_A, "e0002")]
    assert index_jobs() == []

    report = import_jsonl_stream(
        as_file(entries_file(SID_B, "tapirquux")), owner, after_commit="worker"
    )
    assert report.after_commit_queued and found(owner, "tapirquux") == []
    (job,) = index_jobs()
    assert job.params == {"work": [[report.session.pk, 0]], "tidy": True}
    run_index_jobs()
    assert found(owner, "tapirquux") == [(SID_B, "e0001"), (SID_B, "e0002")]


@pytest.mark.parametrize("where", ["inline", "worker"])
def test_the_follower_s_first_scan_indexes_the_files_it_imports_together(tmp_path, owner, where):
    for sid in (SID_A, SID_B):
        path = tmp_path / "--work--" / f"2026-01-01T00-00-00-000Z_{sid}.jsonl"
        path.parent.mkdir(exist_ok=True)
        path.write_text(entries_file(sid, f"gnuquux{sid[-1]}"))
    totals = following.scan([str(tmp_path)], owner, search=where)
    assert totals.changed == 2
    if where == "worker":
        assert found(owner, "gnuquuxa") == []
        (job,) = index_jobs()  # one job for the imports committed together
        assert sorted(pk for pk, _ in job.params["work"]) == sorted(
            Entry.objects.values_list("session_id", flat=True).distinct()
        )
        run_index_jobs()
    else:
        assert index_jobs() == []
    assert found(owner, "gnuquuxa") == [(SID_A, "e0001"), (SID_A, "e0002")]
    assert found(owner, "gnuquuxb") == [(SID_B, "e0001"), (SID_B, "e0002")]


# --- the follower's appends (and what pi wrote to a written-back file) ---------------------


def test_appended_lines_are_indexed_in_the_append_s_transaction_or_by_a_job(
    tmp_path, owner, monkeypatch
):
    path = session_file(tmp_path, 2)
    following.sync_file(str(path), owner)
    state = FollowedFile.objects.get(path=str(path))
    report = append_lines(
        state.session_id, owner, as_file(b"".join(chain_lines(2, start=2))), lines_before=3
    )
    assert report.entries_added == 2 and index_jobs() == []
    assert found(owner, '"number 3"') == [(FOLLOWED_SID, f"{3:08x}")]

    monkeypatch.setattr(search_index, "INLINE_INDEX_LIMIT", 2)
    more = append_lines(
        state.session_id, owner, as_file(b"".join(chain_lines(3, start=4))), lines_before=5
    )
    assert more.entries_added == 3 and found(owner, '"number 6"') == []
    (job,) = index_jobs()
    assert job.params["work"] == [[state.session_id, 4]]
    run_index_jobs()
    assert found(owner, '"number 6"') == [(FOLLOWED_SID, f"{6:08x}")]


# --- the job itself ---------------------------------------------------------------------


def test_the_job_is_idempotent(owner):
    report = import_jsonl_stream(
        as_file(entries_file(SID_A, "ibexquux")), owner, after_commit="off"
    )
    work = [(report.session.pk, 0)]
    first = request_index(work, tidy=True)
    assert lifecycle.run_job(first.pk) == Status.DONE
    assert lifecycle.run_job(first.pk) is None  # a redelivered message: nothing to do
    rows = SearchDocument.objects.count()
    second = request_index(work, tidy=True)  # the same work again: the same index
    assert lifecycle.run_job(second.pk) == Status.DONE
    assert SearchDocument.objects.count() == rows == 3
    for job in (first, second):
        job.refresh_from_db()
        assert job.status == Status.DONE and job.progress["entries"] == 3
    assert found(owner, "ibexquux") == [(SID_A, "e0001"), (SID_A, "e0002")]


def test_a_dead_worker_s_job_is_swept_and_run_again(owner, settings):
    report = import_jsonl_stream(
        as_file(entries_file(SID_A, "yakquux")), owner, after_commit="worker"
    )
    (job,) = index_jobs()
    claimed, attempt = lifecycle.claim(job.pk)  # a worker took it, then died silently
    assert attempt == 1
    silent = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS + 5)
    Job.objects.filter(pk=job.pk).update(heartbeat_at=silent)
    assert lifecycle.sweep() == [str(job.pk)]
    job.refresh_from_db()
    assert job.status == Status.QUEUED and job.progress["phase"] == "requeued"
    assert lifecycle.run_job(job.pk) == Status.DONE
    job.refresh_from_db()
    assert job.attempts == 2
    assert found(owner, "yakquux") == [(SID_A, "e0001"), (SID_A, "e0002")]
    # The first worker wakes up: its attempt writes nothing.
    assert lifecycle.finish_own(claimed, attempt, Status.FAILED, error="late") is None
    assert report.session.pk == job.params["work"][0][0]


def test_a_session_deleted_before_its_job_runs_leaves_nothing_to_do(owner):
    report = import_jsonl_stream(
        as_file(entries_file(SID_A, "slothquux")), owner, after_commit="worker"
    )
    report.session.delete()
    (job,) = run_index_jobs()
    assert job.status == Status.DONE and job.progress["entries"] == 0
    assert not SearchDocument.objects.exists()


def test_with_no_broker_the_job_runs_at_once_where_it_was_asked_for(tmp_path, owner, monkeypatch):
    from piweb.celery import app

    path = session_file(tmp_path, 2)
    following.sync_file(str(path), owner)
    state = FollowedFile.objects.get(path=str(path))
    monkeypatch.setattr(search_index, "INLINE_INDEX_LIMIT", 2)
    monkeypatch.setitem(app.conf, "broker_url", "redis://127.0.0.1:9/0")
    monkeypatch.setitem(app.conf, "task_publish_retry", False)
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    append_lines(
        state.session_id, owner, as_file(b"".join(chain_lines(3, start=2))), lines_before=3
    )
    (job,) = index_jobs()
    assert job.status == Status.DONE and job.attempts == 1
    assert found(owner, '"number 4"') == [(FOLLOWED_SID, f"{4:08x}")]
