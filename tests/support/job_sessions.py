"""Sessions for the jobs tests: realistic turns (tool calls with paths, usage), and the
check that the context built at the leaf is what the pure core says it must be."""

import itertools
import time

from sessions_app.core.compaction import prepare_compaction
from sessions_app.core.messages import build_session_context, message_from_entry
from sessions_app.core.summaries import assemble_compaction_summary
from sessions_app.models import Entry, Job
from sessions_app.selectors import paths
from sessions_app.services import sessions
from tests.support.branchy_session import tool_result as tool_result  # for the jobs tests
from tests.support.branchy_session import user as user

_ids = itertools.count(1)


def assistant_call(name, path, text="", usage_total=500):
    call_id = f"call_{next(_ids)}"
    content = [{"type": "text", "text": text}] if text else []
    content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": {"path": path}})
    msg = {
        "role": "assistant",
        "content": content,
        "provider": "scripted",
        "model": "scripted-model",
        "usage": {
            "input": usage_total - 20,
            "output": 20,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": usage_total,
        },
        "stopReason": "toolUse",
        "timestamp": 2,
    }
    return {"type": "message", "message": msg}, call_id


def assistant_text(text, usage_total=600):
    return {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "provider": "scripted",
            "model": "scripted-model",
            "usage": {
                "input": usage_total - 30,
                "output": 30,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": usage_total,
            },
            "stopReason": "stop",
            "timestamp": 4,
        },
    }


def add_turn(session, n, *, tool="read", path=None, filler=400, usage_total=None):
    """One user turn: request, tool call on a path, result, answer. Returns last entry."""
    path = path or f"src/module_{n}.py"
    sessions.append_entry(session, user(f"Turn {n}: please look at {path}. " + "x" * filler))
    call, call_id = assistant_call(tool, path, text=f"Looking at {path}")
    sessions.append_entry(session, call)
    sessions.append_entry(
        session, tool_result(call_id, tool, f"contents of {path}\n" + "y" * filler)
    )
    return sessions.append_entry(
        session, assistant_text(f"Done with turn {n}.", usage_total=usage_total or 600 + 100 * n)
    )


def make_session(owner, *, turns=4, model_profile="scripted", compaction=None, cwd="/tmp"):
    session = sessions.create_session(owner=owner, cwd=cwd, model_profile=model_profile)
    if compaction is not None:
        session.settings = {"compaction": compaction}
        session.save(update_fields=["settings"])
    for n in range(1, turns + 1):
        add_turn(session, n)
    session.refresh_from_db()
    return session


SMALL = {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 150}


def wait_for_job(job, timeout=60.0, statuses=("done", "failed", "superseded")):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in statuses:
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job.pk} still {job.status} after {timeout}s: {job.progress}")


def entries_of_type(session, type_):
    return list(Entry.objects.filter(session=session, type=type_).order_by("seq"))


def check_compacted_context(session, job: Job, prepared_path, model_texts, *, split=False):
    """The context at the leaf = summary + kept entries + everything after, as the core says.

    `prepared_path` is the path the job was prepared on (root-first payloads);
    `model_texts` the text(s) the model gave (history[, turn prefix]).
    """
    session.refresh_from_db()
    entry = job.result_entry
    assert entry is not None and entry.type == "compaction"
    payload = entry.payload
    prep = prepare_compaction(prepared_path, job.params["settings"])
    assert payload["firstKeptEntryId"] == prep.first_kept_entry_id
    assert payload["tokensBefore"] == prep.tokens_before
    files = prep.file_lists()
    assert payload["details"]["readFiles"] == files["readFiles"]
    assert payload["details"]["modifiedFiles"] == files["modifiedFiles"]
    if model_texts is not None:
        expected = assemble_compaction_summary(
            model_texts[0],
            model_texts[1] if split else None,
            files["readFiles"],
            files["modifiedFiles"],
        )
        assert payload["summary"] == expected
    path = paths.load_path(session)
    context = build_session_context(path)["messages"]
    # Independent derivation: the compaction's summary, then every message from the
    # first kept entry to the leaf (the compaction entry itself contributes none).
    ids = [e["id"] for e in path]
    comp_index = max(i for i, e in enumerate(path) if e["type"] == "compaction")
    assert path[comp_index]["id"] == entry.pi_id
    kept_from = ids.index(payload["firstKeptEntryId"])
    assert kept_from < comp_index
    expected_msgs = []
    for e in path[kept_from:]:
        if e["type"] == "compaction":
            continue
        if e["type"] == "branch_summary" and not e.get("summary"):
            continue
        m = message_from_entry(e)
        if m is not None:
            expected_msgs.append(m)
    assert context[0]["role"] == "compactionSummary"
    assert context[0]["summary"] == payload["summary"]
    assert context[1:] == expected_msgs
    return context
