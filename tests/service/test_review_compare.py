"""Branch compare: common ancestor, per-branch stats, and the summary job (real worker)."""

import time

import pytest

from sessions_app.models import Job
from sessions_app.services import compare
from sessions_app.services.compare import CompareError
from tests.support.review_data import build_branchy_session


def wait_for(predicate, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.django_db
@pytest.mark.embedded
def test_compare_two_branches(make_user):
    data = build_branchy_session(make_user())
    ids = data.ids
    result = compare.compare(data.session, ids["a3"], ids["b3"])
    assert result["ancestorId"] == ids["r1"]
    assert [e["id"] for e in result["a"]["segment"]] == [ids["a2"], ids["r2"], ids["a3"]]
    a, b = result["a"]["stats"], result["b"]["stats"]
    assert a["usage"]["totalTokens"] == 1900 and b["usage"]["totalTokens"] == 1100
    assert a["modifiedFiles"] == ["src/tokenizer.py"] and b["modifiedFiles"] == []
    assert a["errors"] == [] and [e["kind"] for e in b["errors"]] == ["bash failed"]
    assert "zebrafish" in b["errors"][0]["text"]
    assert a["lastAssistantText"] == "Fixed the parser. All tests pass."
    assert b["lastAssistantText"] == "The tests fail; giving up."
    # a node against its own ancestor: one side is empty
    same = compare.compare(data.session, ids["a1"], ids["a3"])
    assert same["ancestorId"] == ids["a1"] and same["a"]["segment"] == []
    with pytest.raises(CompareError):
        compare.compare(data.session, ids["a3"], "nope")


@pytest.mark.django_db
def test_compare_page(client, make_user):
    owner = make_user()
    data = build_branchy_session(owner)
    client.force_login(owner)
    page = client.get(
        f"/s/{data.session.pi_id}/compare/", {"a": data.ids["a3"], "b": data.ids["b3"]}
    )
    assert page.status_code == 200
    body = page.content.decode()
    assert f"<code>{data.ids['r1']}</code>" in body
    assert 'id="rv-side-a"' in body and 'id="rv-side-b"' in body
    assert "src/tokenizer.py" in body and "zebrafish" in body
    bad = client.get(f"/s/{data.session.pi_id}/compare/", {"a": "x", "b": "y"})
    assert bad.status_code == 400


@pytest.mark.django_db(transaction=True)
@pytest.mark.embedded
def test_summary_job_offline_and_with_model(worker, make_user, llm, client):
    owner = make_user()
    data = build_branchy_session(owner)
    job = compare.request_compare_summary(data.session, data.ids["a3"], data.ids["b3"], actor=owner)
    again = compare.request_compare_summary(
        data.session, data.ids["a3"], data.ids["b3"], actor=owner
    )
    assert again.pk == job.pk or Job.objects.get(pk=job.pk).status == "done"
    assert wait_for(lambda: Job.objects.get(pk=job.pk).status == "done")
    job.refresh_from_db()
    assert job.kind == Job.Kind.COMPARE_SUMMARY and job.progress["offline"] is True
    assert "Offline comparison" in job.progress["summary"]
    assert "src/tokenizer.py" in job.progress["summary"]
    assert compare.run_compare_summary(job.pk) is None  # idempotent: finished stays finished

    # with the scripted model
    from tests.support.scripted_llm import text

    data.session.model_profile = "scripted"
    data.session.save(update_fields=["model_profile"])
    llm.push(text("Branch A fixed the bug; branch B gave up after a failing test."))
    job2 = compare.request_compare_summary(
        data.session, data.ids["a3"], data.ids["b3"], actor=owner
    )
    assert job2.pk != job.pk
    assert wait_for(lambda: Job.objects.get(pk=job2.pk).status in ("done", "failed"))
    job2.refresh_from_db()
    assert job2.status == "done", job2.error
    assert job2.progress == {
        "phase": "done",
        "summary": "Branch A fixed the bug; branch B gave up after a failing test.",
        "offline": False,
    }
    sent = llm.requests[-1]
    assert "zebrafish" in str(sent) and "<branch-a>" in str(sent)
    client.force_login(owner)
    partial = client.get(f"/s/{data.session.pi_id}/compare/summary/{job2.pk}/")
    assert "branch B gave up" in partial.content.decode()
