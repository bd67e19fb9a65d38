"""`manage.py alternatives … --json` (management/commands/alternatives.py): it starts one
variant per --model, waits for the worker to run them and prints one object per branch."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import Entry
from sessions_app.services import chat
from tests.support.agent_runs import new_session, wait_run
from tests.support.scripted_llm import text

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

MODEL = "openai-compatible/scripted-model"


def test_json_prints_the_fields_of_each_branch(worker, llm, make_user, workspace):
    owner = make_user()
    session = new_session(owner, workspace)
    chat.send_message(session, owner, "!true")
    assert wait_run(session).status == "done"
    session.refresh_from_db()
    node = session.leaf_pi_id
    # manage.py alternatives … --json: one object per branch.
    llm.push_for("from the shell", text("First."), text("Second."))
    out = io.StringIO()
    call_command(
        "alternatives", session.pi_id, "--at", node, "--message", "from the shell",
        "--model", MODEL, "--model", MODEL, "--thinking", "off", "--check", "true", "--json",
        stdout=out,
    )  # fmt: skip
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert set(row) == {
            "entry", "model", "thinking", "tools", "tokens", "cost", "seconds",
            "files_changed", "check_exit",
        }  # fmt: skip
        assert row["model"] == MODEL and row["thinking"] == "off" and row["check_exit"] == 0
        assert row["files_changed"] == [] and row["tokens"] > 0 and row["seconds"] > 0
        assert Entry.objects.filter(session=session, pi_id=row["entry"]).exists()
    assert {r["entry"] for r in rows} and rows[0]["entry"] != rows[1]["entry"]
    assert [r["tools"] for r in rows] == [[], []]  # (the node's)


def test_tools_gives_each_variant_its_tool_set(worker, llm, make_user, workspace):
    """`--tools` once per variant (one --model): the tool set each run offers the model,
    in the JSON too."""
    owner = make_user()
    session = new_session(owner, workspace)
    chat.send_message(session, owner, "!true")
    assert wait_run(session).status == "done"
    session.refresh_from_db()
    llm.reset()
    llm.push_for("which tools", text("A."), text("B."))
    out = io.StringIO()
    call_command(
        "alternatives", session.pi_id, "--at", session.leaf_pi_id, "--message", "which tools",
        "--model", MODEL, "--tools", "read-only", "--tools", "read,bash", "--json", stdout=out,
    )  # fmt: skip
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["tools"] for r in rows] == [["read", "grep", "find", "ls"], ["read", "bash"]]
    offered = sorted(
        sorted(t["function"]["name"] for t in r.get("tools") or []) for r in llm.requests
    )
    assert offered == [["bash", "read"], ["find", "grep", "ls", "read"]]
    with pytest.raises(CommandError, match="once per --model"):
        call_command(
            "alternatives", session.pi_id, "--at", session.leaf_pi_id, "--message", "m",
            "--model", MODEL, "--model", MODEL, "--tools", "all", "--tools", "read", "--tools", "ls",
        )  # fmt: skip
    with pytest.raises(CommandError, match="Unknown tool set"):
        call_command(
            "alternatives", session.pi_id, "--at", session.leaf_pi_id, "--message", "m",
            "--model", MODEL, "--tools", "read,sudo",
        )  # fmt: skip


def test_it_refuses_an_unknown_session_or_model(make_user, workspace, redis_ready):
    owner = make_user()
    session = new_session(owner, workspace)
    with pytest.raises(CommandError, match="No session"):
        call_command("alternatives", "nope", "--at", "x", "--message", "m", "--model", MODEL)
    with pytest.raises(CommandError, match="Unknown model"):
        call_command(
            "alternatives", session.pi_id, "--at", "x", "--message", "m", "--model", "no/such"
        )
