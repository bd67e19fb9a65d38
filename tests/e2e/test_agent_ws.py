"""Agent runs end to end: a real Celery worker runs the turn against the scripted
OpenAI-compatible server, daphne serves the websocket, and the tree in the database must
hold exactly what pi would have stored."""

import json
import os
import threading
import time
from pathlib import Path

import psutil
import pytest
from django.test import Client

from sessions_app.models import Job
from sessions_app.selectors import paths
from sessions_app.selectors.runs import run_state
from sessions_app.services import sessions
from tests.support.agent_runs import (
    EventLog,
    host_processes_with,
    messages,
    new_session,
    send,
    stop,
    wait_run,
)
from tests.support.scripted_llm import (
    context_overflow,
    error,
    hang,
    text,
    tool_call,
    tool_calls,
)
from tests.support.waiting import wait_until
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


# --- helpers ------------------------------------------------------------------------------


# --- a full turn --------------------------------------------------------------------------


@pytest.mark.embedded
def test_full_turn_over_websocket_is_stored_as_pi_would(
    worker, asgi_server, llm, make_user, workspace
):
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    user = make_user()
    session = new_session(user, workspace)
    llm.push(
        tool_call(
            "bash", {"command": "cat notes.txt; echo done"}, text="Let me look.", call_id="call_1"
        ),
        text("The file lists alpha and beta.", delay_between_chunks=0.01),
    )
    with EventLog(asgi_server, session, user) as log:
        response = send(client_for(user), session, "What is in notes.txt?")
        assert response.status_code == 200, response.content
        end = log.wait_for("run_end", timeout=60)
        assert end and end["status"] == "done"
        assert log.wait_for("message_end", lambda d: d["role"] == "assistant" and d["entry_id"])
    job = wait_run(session)
    assert job.status == "done"

    msgs = messages(session)
    assert [m["role"] for m in msgs] == ["user", "assistant", "toolResult", "assistant"]
    user_msg, call_msg, result, final = msgs
    assert user_msg["content"] == [{"type": "text", "text": "What is in notes.txt?"}]
    assert isinstance(user_msg["timestamp"], int)
    assert call_msg["content"] == [
        {"type": "text", "text": "Let me look."},
        {
            "type": "toolCall",
            "id": "call_1",
            "name": "bash",
            "arguments": {"command": "cat notes.txt; echo done"},
        },
    ]
    assert call_msg["stopReason"] == "toolUse"
    assert call_msg["api"] == "openai-completions"
    assert call_msg["model"] == "scripted-model"
    assert set(call_msg["usage"]) == {
        "input",
        "output",
        "cacheRead",
        "cacheWrite",
        "totalTokens",
        "cost",
    }
    assert call_msg["usage"]["totalTokens"] > 0
    assert result == {
        "role": "toolResult",
        "toolCallId": "call_1",
        "toolName": "bash",
        "content": [{"type": "text", "text": "alpha\nbeta\ndone\n"}],
        "isError": False,
        "timestamp": result["timestamp"],
    }
    assert final["content"] == [{"type": "text", "text": "The file lists alpha and beta."}]
    assert final["stopReason"] == "stop"

    # The second request carried the tool call and its result the OpenAI way.
    second = llm.requests[1]
    assert second["stream"] is True
    assert second["messages"][0]["role"] == "system"
    assert (
        "Current working directory: " + str(Path(workspace).resolve())
        in second["messages"][0]["content"]
    )
    assistant = second["messages"][2]
    assert assistant["tool_calls"][0]["id"] == "call_1"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {
        "command": "cat notes.txt; echo done"
    }
    assert second["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "alpha\nbeta\ndone\n",
    }
    # pi's default tool set, in pi's order
    assert [t["function"]["name"] for t in second["tools"]] == ["read", "bash", "edit", "write"]

    # The stream reached the websocket: text deltas, the tool's life, a snapshot.
    streamed = "".join(d["delta"] for d in log.of("text_delta") if d["kind"] == "text")
    assert streamed == "Let me look.The file lists alpha and beta."
    assert log.of("tool_start")[0]["name"] == "bash"
    snapshots = log.of("bash_snapshot")
    assert snapshots and snapshots[-1]["text"] == "alpha\nbeta\ndone\n"
    # pi 0.80.2 line rule: the final newline ends line 3, it starts no 4th line.
    assert snapshots[-1]["total_lines"] == 3 and snapshots[-1]["total_bytes"] == 16
    assert log.of("tool_end")[0] == {
        "run_id": str(job.pk),
        "tool_call_id": "call_1",
        "is_error": False,
    }
    assert len(log.of("entry_appended")) >= 4
    # Nothing left behind in Redis.
    assert run_state(session, job) is None


def test_read_only_tools_run_and_the_turn_continues(worker, llm, make_user, workspace):
    (workspace / "a.py").write_text("print('hi')\n")
    (workspace / "b.txt").write_text("hello\n")
    user = make_user()
    session = new_session(user, workspace)
    # grep and ls are not in pi's default set: this session asks for them (pi's --tools)
    session.settings = {"tools": ["read", "bash", "edit", "write", "grep", "find", "ls"]}
    session.save(update_fields=["settings"])
    llm.push(
        tool_calls([("read", {"path": "a.py"}), ("grep", {"pattern": "hello"}), ("ls", {})]),
        text("ok"),
    )
    assert send(client_for(user), session, "look around").status_code == 200
    assert wait_run(session).status == "done"
    msgs = messages(session)
    assert [m["role"] for m in msgs] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "toolResult",
        "assistant",
    ]
    results = {m["toolName"]: m for m in msgs if m["role"] == "toolResult"}
    assert results["read"]["content"][0]["text"] == "print('hi')\n"
    assert results["grep"]["content"][0]["text"] == "b.txt:1: hello"
    assert results["ls"]["content"][0]["text"] == "a.py\nb.txt"
    # Results come back in call order.
    calls = [b["id"] for b in msgs[1]["content"] if b["type"] == "toolCall"]
    assert [m["toolCallId"] for m in msgs[2:5]] == calls


# --- tool errors reach the model, never crash the run ------------------------------------------


def test_path_escape_and_invalid_arguments_come_back_as_tool_errors(
    worker, llm, make_user, workspace
):
    os.symlink("/etc/hostname", workspace / "sneaky")
    user = make_user()
    session = new_session(user, workspace)
    llm.push(
        tool_calls(
            [
                ("read", {"path": "../../../../etc/passwd"}),
                ("read", {"path": "/etc/passwd"}),
                ("read", {"path": "sneaky"}),
                ("write", {"path": "../outside.txt", "content": "x"}),
                ("read", {"path": 42}),
                ("nosuchtool", {}),
            ]
        ),
        tool_call("edit", "{not json", call_id="call_badjson"),
        text("I could not read those."),
    )
    assert send(client_for(user), session, "read secrets").status_code == 200
    assert wait_run(session).status == "done"
    msgs = messages(session)
    results = [m for m in msgs if m["role"] == "toolResult"]
    assert len(results) == 7
    assert all(r["isError"] for r in results)
    texts = [r["content"][0]["text"] for r in results]
    assert "outside the workspace" in texts[0]
    assert "outside the workspace" in texts[1]
    assert "outside the workspace" in texts[2]
    assert "outside the workspace" in texts[3]
    assert texts[4].startswith('Validation failed for tool "read"') and "path" in texts[4]
    assert texts[5] == "Tool nosuchtool not found"
    assert texts[6].startswith("Invalid JSON in tool arguments")
    assert not (workspace.resolve().parent / "outside.txt").exists()
    assert msgs[-1]["content"] == [{"type": "text", "text": "I could not read those."}]


# --- provider errors ---------------------------------------------------------------------------


def test_429_and_500_are_retried_with_backoff(worker, llm, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    llm.push(error(429, "slow down"), error(500, "boom"), text("finally"))
    started = time.monotonic()
    assert send(client_for(user), session, "hi").status_code == 200
    assert wait_run(session).status == "done"
    assert time.monotonic() - started >= 3.0  # 1 s then 2 s of backoff
    assert len(llm.requests) == 3
    msgs = messages(session)
    assert [m["role"] for m in msgs] == ["user", "assistant"]
    assert msgs[1]["content"] == [{"type": "text", "text": "finally"}]


def test_timeout_becomes_a_visible_error_entry_keeping_partial_text(
    worker, llm, make_user, workspace
):
    user = make_user()
    session = new_session(user, workspace, profile="scripted-fast")
    llm.push(hang(6))
    assert send(client_for(user), session, "hi").status_code == 200
    job = wait_run(session)
    assert job.status == "failed"
    msgs = messages(session)
    assert [m["role"] for m in msgs] == ["user", "assistant"]
    assert msgs[1]["stopReason"] == "error"
    assert msgs[1]["errorMessage"] == "Request timed out."
    assert msgs[1]["model"] == "scripted-fast-model"

    # A stream that breaks mid-way keeps what was streamed.
    llm.push(text("partial answer that goes on", delay_between_chunks=0.5, chunk_size=4))
    assert send(client_for(user), session, "again").status_code == 200
    wait_run(session, timeout=90)
    last = messages(session)[-1]
    assert last["role"] == "assistant"
    # Each chunk arrives within the 2 s read timeout, so the whole text is kept.
    assert last["stopReason"] == "stop"
    assert last["content"][0]["text"] == "partial answer that goes on"


def test_non_retryable_error_is_shown(worker, llm, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    llm.push(error(401, "bad key", type_="invalid_request_error"))
    assert send(client_for(user), session, "hi").status_code == 200
    assert wait_run(session).status == "failed"
    last = messages(session)[-1]
    assert last["stopReason"] == "error"
    # an auth error names the provider and where to fix the key (never the key itself)
    assert "401 bad key" in last["errorMessage"]
    assert "openai-compatible" in last["errorMessage"]
    assert "test-key-not-secret" not in last["errorMessage"]
    assert len(llm.requests) == 1


def _fill_history(session, pairs=6, size=20000):
    for i in range(pairs):
        sessions.append_entry(
            session,
            {
                "type": "message",
                "message": {
                    "role": "user",
                    "content": [{"type": "text", "text": f"q{i} " + "x" * size}],
                    "timestamp": 1,
                },
            },
        )
        sessions.append_entry(
            session,
            {
                "type": "message",
                "message": {
                    "role": "assistant", "content": [{"type": "text", "text": f"a{i} " + "y" * size}],
                    "api": "openai-completions", "provider": "openai-compatible", "model": "scripted-model",
                    "usage": {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20},
                    "stopReason": "stop", "timestamp": 2,
                },
            },
        )  # fmt: skip


def test_context_overflow_compacts_then_retries_once(worker, llm, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    _fill_history(session)
    llm.push(
        context_overflow(),
        text("## Goal\nSummarized history."),
        text("answer after compaction"),
    )
    assert send(client_for(user), session, "continue").status_code == 200
    assert wait_run(session, timeout=90).status == "done"
    session.refresh_from_db()
    path = paths.load_path(session)
    types = [e["type"] for e in path]
    assert "compaction" in types
    compaction_index = types.index("compaction")
    assert llm.pending() == 0
    assert "Summarized history." in path[compaction_index]["summary"]
    assert path[-1]["message"]["content"] == [{"type": "text", "text": "answer after compaction"}]
    assert compaction_index == len(path) - 2
    # The retried request started with the compaction summary.
    retried = llm.requests[-1]
    assert "compacted into the following summary" in json.dumps(retried["messages"][1])


def test_second_overflow_is_a_visible_error(worker, llm, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    _fill_history(session)
    llm.push(
        context_overflow(),
        text("## Goal\nSummarized history."),
        context_overflow(),
    )
    assert send(client_for(user), session, "continue").status_code == 200
    assert wait_run(session, timeout=90).status == "failed"
    last = messages(session)[-1]
    assert last["stopReason"] == "error"
    assert "maximum context length" in last["errorMessage"]
    assert "still too long after compaction" in last["errorMessage"]


# --- stop -------------------------------------------------------------------------------------


@pytest.mark.embedded
def test_stop_mid_bash_kills_the_process_group(worker, asgi_server, llm, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    # Pids inside the sandbox are its own namespace's: find the processes on the host by
    # their unique command lines instead.
    command = "sleep 60.6061 & (setsid sleep 60.6062 &); echo started; wait; echo never"
    llm.push(tool_call("bash", {"command": command}, call_id="call_sleep"))
    client = client_for(user)
    with EventLog(asgi_server, session, user) as log:
        assert send(client, session, "sleep please").status_code == 200
        assert log.wait_for("bash_snapshot", lambda d: "started" in d["text"], timeout=30)
        assert wait_until(lambda: host_processes_with("60.6061") and host_processes_with("60.6062"))
        response = stop(client, session)
        assert response.status_code == 200 and b"Stopping" in response.content
        end = log.wait_for("run_end", timeout=30)
    assert end["status"] == "aborted"
    assert wait_run(session).status == "cancelled"
    assert wait_until(lambda: not host_processes_with("60.606"), 10)
    msgs = messages(session)
    assert [m["role"] for m in msgs] == ["user", "assistant", "toolResult", "assistant"]
    result = msgs[2]
    assert result["isError"] is True
    assert (
        result["content"][0]["text"] == "started\n\n\nCommand aborted"
    )  # as pi: output + blank line
    assert msgs[3]["stopReason"] == "aborted" and msgs[3]["content"] == []
    assert len(llm.requests) == 1  # no further model call after the abort


def test_stop_mid_stream_keeps_the_partial_text(worker, asgi_server, llm, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    llm.push(text("word " * 200, chunk_size=5, delay_between_chunks=0.1))
    client = client_for(user)
    with EventLog(asgi_server, session, user) as log:
        assert send(client, session, "talk").status_code == 200
        assert log.wait_for("text_delta", lambda d: d["kind"] == "text", timeout=30)
        time.sleep(0.5)
        assert stop(client, session).status_code == 200
        assert log.wait_for("run_end", timeout=30)["status"] == "aborted"
    last = messages(session)[-1]
    assert last["stopReason"] == "aborted"
    partial = last["content"][0]["text"]
    assert partial.startswith("word ") and len(partial) < len("word " * 200)


def test_stop_of_a_queued_run_cancels_it(llm, make_user, workspace):
    """Without a worker the job stays queued; stop cancels it in the database."""
    user = make_user()
    session = new_session(user, workspace)
    client = client_for(user)
    # No `worker` fixture: nothing consumes the queue in this test... unless a session
    # worker is already up from an earlier test, so race the stop against it.
    llm.push(text("x" * 50, delay_between_chunks=0.05, chunk_size=1))
    assert send(client, session, "hi").status_code == 200
    assert stop(client, session).status_code == 200
    job = wait_run(session, timeout=60)
    assert job.status in ("cancelled",)


# --- one run at a time --------------------------------------------------------------------------


def test_second_send_while_running_is_refused(worker, llm, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    llm.push(text("slow " * 40, chunk_size=5, delay_between_chunks=0.05))
    client = client_for(user)
    assert send(client, session, "first").status_code == 200
    second = send(client, session, "second")
    assert second.status_code == 409
    assert b"already in progress" in second.content
    third = send(client, session, "!echo hi")
    assert third.status_code == 409
    assert wait_run(session).status == "done"
    assert [m["role"] for m in messages(session)] == ["user", "assistant"]
    assert Job.objects.filter(session=session, kind="agent_run").count() == 1
    # After the run, sending works again.
    llm.push(text("ok"))
    assert send(client, session, "again").status_code == 200
    assert wait_run(session).status == "done"


def test_database_refuses_two_active_runs_on_one_branch(make_user, workspace):
    from django.db import IntegrityError, transaction

    user = make_user()
    session = new_session(user, workspace)
    start = dict(session=session, kind="agent_run", prepared_leaf_pi_id="aaaa0001")
    Job.objects.create(status="running", **start)
    with pytest.raises(IntegrityError), transaction.atomic():
        Job.objects.create(status="queued", **start)
    Job.objects.create(status="done", **start)  # finished ones are fine
    # Another branch (another starting entry) runs beside it.
    Job.objects.create(session=session, kind="agent_run", status="queued", prepared_leaf_pi_id="b2")


# --- user bash ----------------------------------------------------------------------------------


def test_user_bash_entries_and_context(worker, llm, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    client = client_for(user)
    assert send(client, session, "!echo visible; exit 3").status_code == 200
    wait_run(session)
    assert send(client, session, "!!echo secret-value").status_code == 200
    wait_run(session)
    msgs = messages(session)
    assert msgs[0] == {
        "role": "bashExecution",
        "command": "echo visible; exit 3",
        "output": "visible\n",
        "exitCode": 3,
        "cancelled": False,
        "truncated": False,
        "timestamp": msgs[0]["timestamp"],
    }
    assert msgs[1]["excludeFromContext"] is True and msgs[1]["output"] == "secret-value\n"
    llm.push(text("seen"))
    assert send(client, session, "what did I run?").status_code == 200
    wait_run(session)
    sent = json.dumps(llm.requests[-1]["messages"])
    assert "Ran `echo visible; exit 3`" in sent and "Command exited with code 3" in sent
    assert "secret-value" not in sent


def test_user_bash_invalid_utf8_never_crashes(worker, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    assert (
        send(client_for(user), session, r"!printf 'ok \xff\xfe bad \xe2\x82\n'").status_code == 200
    )
    assert wait_run(session).status == "done"
    msg = messages(session)[-1]
    assert msg["output"] == "ok \ufffd\ufffd bad \ufffd\n"


def test_no_model_configured_chat_says_so_and_bash_still_works(worker, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace, profile="no-such-profile")
    client = client_for(user)
    response = send(client, session, "hello")
    assert response.status_code == 400
    assert b"PIWEB_LLM_BASE_URL" in response.content
    sessions.rename_session(session, "no model")  # (the review panel needs a leaf to render)
    page = client.get(f"/s/{session.pi_id}/")
    assert b"No model configured" in page.content
    assert send(client, session, "!echo still works").status_code == 200
    wait_run(session)
    assert messages(session)[-1]["output"] == "still works\n"


def test_viewers_cannot_send_and_strangers_get_404(make_user, workspace):
    from sessions_app.models import SessionShare, Team

    owner, viewer, stranger = make_user(), make_user(), make_user()
    session = new_session(owner, workspace)
    team = Team.objects.create(name="t-chat")
    team.members.add(viewer)
    SessionShare.objects.create(session=session, team=team, role="viewer")
    assert send(client_for(viewer), session, "hi").status_code == 403
    assert send(client_for(stranger), session, "hi").status_code == 404
    assert stop(client_for(viewer), session).status_code == 403
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(owner)
    assert send(csrf_client, session, "hi").status_code == 403


def test_workspace_outside_roots_is_refused(make_user, tmp_path):
    user = make_user()
    session = sessions.create_session(owner=user, cwd="/etc", model_profile="scripted")
    response = send(client_for(user), session, "!ls")
    assert response.status_code == 400
    assert b"cannot be used here" in response.content and b"Continue in" in response.content


def test_switch_model_writes_model_change(worker, llm, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    client = client_for(user)
    response = client.post(f"/s/{session.pi_id}/chat/model/", {"profile": "scripted-fast"})
    assert response.status_code == 200
    session.refresh_from_db()
    assert session.model_profile == "scripted-fast"
    entry = paths.load_path(session)[-1]
    assert entry["type"] == "model_change"
    assert entry["modelId"] == "scripted-fast-model" and entry["provider"] == "openai-compatible"
    llm.push(text("fast"))
    assert send(client, session, "hi").status_code == 200
    wait_run(session)
    assert llm.requests[-1]["model"] == "scripted-fast-model"
    assert client.post(f"/s/{session.pi_id}/chat/model/", {"profile": "nope"}).status_code == 400


# --- reconnects and big output --------------------------------------------------------------------


def test_reconnect_mid_run_gets_the_current_state(worker, asgi_server, llm, make_user, workspace):
    user = make_user()
    session = new_session(user, workspace)
    command = "for i in $(seq 1 40); do echo line$i; sleep 0.1; done"
    llm.push(
        tool_call("bash", {"command": command}, text="Counting.", call_id="call_count"),
        text("done"),
    )
    client = client_for(user)
    with EventLog(asgi_server, session, user) as first:
        assert send(client, session, "count").status_code == 200
        assert first.wait_for("bash_snapshot", lambda d: "line5" in d["text"], timeout=30)
        # A second tab (or a reconnect) gets the run as it is now, then the live stream.
        with EventLog(asgi_server, session, user) as second:
            state = second.of("run_state")[0]
            assert state["active"]
            run = state["run"]
            assert run["tools"]["call_count"]["name"] == "bash"
            assert "line" in run["tools"]["call_count"]["snapshot"]["text"]
            assert second.wait_for("bash_snapshot", lambda d: "line30" in d["text"], timeout=30)
            page = client.get(f"/s/{session.pi_id}/")
            assert b'id="chat-run-state"' in page.content and b"call_count" in page.content
        assert first.wait_for("run_end", timeout=60)["status"] == "done"
    # Both viewers saw the same stream.
    assert any("line40" in d["text"] for d in first.of("bash_snapshot"))


def _worker_rss(worker) -> int:
    parent = psutil.Process(worker.process.pid)
    total = 0
    for proc in [parent, *parent.children(recursive=True)]:
        try:
            if "celery" in " ".join(proc.cmdline()):
                total = max(total, proc.memory_info().rss)
        except psutil.NoSuchProcess:
            pass
    return total


def test_200_mb_of_bash_output_streams_with_bounded_memory(
    worker, asgi_server, llm, make_user, workspace
):
    size = 200_000_000
    user = make_user()
    session = new_session(user, workspace)
    command = f"yes abcdefghij | head -c {size}"
    llm.push(
        text("warm-up"), tool_call("bash", {"command": command}, call_id="call_big"), text("big")
    )
    # Warm the worker up first: its first agent run imports the agent code.
    assert send(client_for(user), session, "warm up").status_code == 200
    wait_run(session)
    peak = {"rss": _worker_rss(worker)}
    baseline = peak["rss"]
    sampling = threading.Event()

    def sample():
        while not sampling.is_set():
            peak["rss"] = max(peak["rss"], _worker_rss(worker))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with EventLog(asgi_server, session, user) as log:
        started = time.monotonic()
        assert send(client_for(user), session, "make noise").status_code == 200
        assert log.wait_for("run_end", timeout=180)["status"] == "done"
        elapsed = time.monotonic() - started
    sampling.set()
    sampler.join()

    result = next(m for m in messages(session) if m["role"] == "toolResult")
    details = result["details"]
    path = details["fullOutputPath"]
    from django.conf import settings

    assert path.startswith(
        os.path.join(str(settings.PIWEB_ARTIFACT_DIR), "sessions", str(session.pk)) + os.sep
    )
    # The full-output file keeps the last part of the 200 MB: a header line saying how
    # much was dropped, then whole lines of the stream up to its end, under the 50 MB cap
    # (PIWEB_FULL_OUTPUT_MAX_MB).
    line = b"abcdefghij\n"
    chunk = line * 100_000
    cap = 50 * 1024 * 1024
    with open(path, "rb") as fh:
        header = fh.readline()
        kept = 0
        for block in iter(lambda: fh.read(len(chunk)), b""):
            assert block == chunk[: len(block)]
            kept += len(block)
    assert header.startswith(b"[piweb: this file keeps only the end of the output")
    assert (size - kept) % len(line) == 0 and cap // 2 - len(line) <= kept <= cap
    dropped_lines = (size - kept) // len(line)
    assert f"the first {size - kept} bytes ({dropped_lines} lines) were dropped".encode() in header
    # pi 0.80.2: a last newline starts no extra line, an unfinished last line counts.
    total_lines = -(-size // len(line))
    text_ = result["content"][0]["text"]
    assert text_.endswith(
        f"\n\n[Showing lines {total_lines - 2000 + 1}-{total_lines} of {total_lines}. Full "
        f"output: {path}; that file keeps only the last {kept / 1024 / 1024:.1f}MB (the "
        f"full-output cap is 50.0MB; the first {dropped_lines} lines were dropped)]"
    )
    assert details["truncation"]["totalBytes"] == size
    assert details["truncation"]["truncatedBy"] == "lines"

    snapshots = log.of("bash_snapshot")
    assert snapshots, "no live snapshots"
    rate = len(snapshots) / elapsed
    assert rate <= 12, f"{rate:.1f} snapshots/s"
    assert all(len(s["text"].encode()) <= 51_200 for s in snapshots)
    assert snapshots[-1]["total_bytes"] == size
    growth = peak["rss"] - baseline
    assert growth < 60 * 1024 * 1024, f"worker memory grew by {growth / 1e6:.1f} MB"
    os.unlink(path)


def test_a_run_queued_under_the_old_task_name_still_runs(worker, llm, make_user, workspace):
    """Runs queued by an earlier version were sent as `piweb.agent_run`: after the runner
    moved to the generic job task, that name still runs them."""
    from piweb import queues
    from piweb.celery import app

    user = make_user()
    session = new_session(user, workspace)
    job = Job.objects.create(
        session=session,
        kind="agent_run",
        created_by=user,
        params={"mode": "bash", "command": "echo from-the-old-name", "parent": None},
    )
    app.send_task("piweb.agent_run", args=[str(job.pk)], queue=queues.name(queues.COMMANDS))
    assert wait_run(session).status == "done"
    (bash,) = messages(session)
    assert bash["role"] == "bashExecution" and "from-the-old-name" in bash["output"]
