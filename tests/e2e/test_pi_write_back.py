"""One session, whichever window you type in: pi (0.80.2 and 1.6.0, the real CLI against
the scripted model) writes two turns into a followed folder; piweb continues with a tool
turn, navigates back with a summary and sends again; everything is written back to pi's
file; pi resumes the file, and its next request holds piweb's turns and summary in pi's
own context order, at piweb's leaf."""

from __future__ import annotations

import json

import pytest

from sessions_app.models import Entry, Session
from sessions_app.selectors.pi_file import write_back_enabled
from sessions_app.services import chat, following, jobs, write_back
from sessions_app.services.jobs import lifecycle
from tests.support.pi_reference import VERSIONS, pi_cli_or_skip, run_pi, write_models_json
from tests.support.scripted_llm import text, tool_call

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tasks_stay_in_process", "redis_ready"),
]


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def conversation(request: dict) -> list[tuple]:
    """The messages of a chat-completions request as (role, text, tool calls), without
    the system prompt (pi's and piweb's differ by design)."""
    out = []
    for m in request["messages"]:
        if m["role"] in ("system", "developer"):
            continue
        calls = tuple(
            (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
            for c in m.get("tool_calls") or []
        )
        out.append((m["role"], _text(m.get("content")), calls))
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_pi_and_piweb_continue_one_session_in_turn(version, tmp_path, make_user, llm, settings):
    node = pi_cli_or_skip(version)
    home = tmp_path / "home"
    project = home / "proj"
    project.mkdir(parents=True)
    folder = tmp_path / "sessions"  # the followed folder
    agent = tmp_path / "agent"
    write_models_json(agent, llm.base_url)
    settings.PIWEB_WORKSPACE_MODE = "single-user"
    settings.PIWEB_WORKSPACE_ROOTS = [home.resolve()]
    settings.PIWEB_WRITE_BACK_DEFAULT = True
    settings.PIWEB_PI_QUIET_SECONDS = 0.0
    owner = make_user()

    def pi(*args):
        return run_pi(node, version, [*args], cwd=project, agent_dir=agent, home=home)

    # 1. pi writes two turns.
    llm.push(text("pi answer one"), text("pi answer two"))
    pi("--session-dir", str(folder), "one")
    pi("--session-dir", str(folder), "-c", "two")
    (path,) = folder.glob("*.jsonl")
    following.scan([str(folder)], owner)
    session = Session.objects.get(source_path=str(path))
    Session.objects.filter(pk=session.pk).update(model_profile="scripted")
    session.refresh_from_db()
    assert write_back_enabled(session)

    # 2. piweb continues in the session's own folder: a tool turn, another turn, then back
    # to the tool turn's answer with a summary of the branch left, and a new turn.
    def send(message: str):
        session.refresh_from_db()
        job = chat.send_message(session, owner, message)
        assert jobs.run_job(str(job.pk)) == "done"
        session.refresh_from_db()

    llm.push(
        tool_call("bash", {"command": "echo piweb-tool-ran"}, call_id="call_piweb1"),
        text("piweb answer three"),
    )
    send("three")
    tool_answer = session.leaf_pi_id
    llm.push(text("piweb answer three-b"))
    send("three-b")
    llm.push(text("## Goal\nSUMMARY OF THE BRANCH LEFT"))
    job = jobs.request_branch_summary(
        session, old_leaf_pi_id=session.leaf_pi_id, target_pi_id=tool_answer, actor=owner
    )
    assert lifecycle.run_job(job.pk) == "done"
    llm.push(text("piweb answer four"))
    send("four")
    piweb_request = llm.requests[-1]

    # 3. Everything is in pi's file, as pi writes it, the leaf last.
    write_back.write_back(session)
    lines = path.read_text().splitlines()
    file_ids = [json.loads(raw)["id"] for raw in lines[1:]]
    stored = dict(Entry.objects.filter(session=session).values_list("pi_id", "line"))
    assert sorted(file_ids) == sorted(stored)
    assert {raw for raw in lines[1:]} == set(stored.values())
    session.refresh_from_db()
    assert file_ids[-1] == session.leaf_pi_id
    assert following.sync_file(str(path), owner).action == "unchanged"

    # 4. pi resumes the file: by its path, or (1.6.0) as the folder's latest session.
    llm.push(text("pi answer five"))
    if version == "1.6.0":
        pi("--session-dir", str(folder), "-c", "five")
    else:
        pi("--session", str(path), "five")
    assert list(folder.glob("*.jsonl")) == [path]  # the same file, continued
    pi_request = llm.requests[-1]
    seen = conversation(pi_request)
    assert seen[-1] == ("user", "five", ())
    assert seen[-2] == ("assistant", "piweb answer four", ())
    assert seen[:-2] == conversation(piweb_request)
    texts = [t for _, t, _ in seen]
    assert "three-b" not in texts and "piweb answer three-b" not in texts
    roles = [(r, t) for r, t, _ in seen]
    at = roles.index(("user", "three"))
    assert seen[at + 1][2] == (("bash", {"command": "echo piweb-tool-ran"}),)
    assert seen[at + 2][0] == "tool" and "piweb-tool-ran" in seen[at + 2][1]
    assert roles[at + 3] == ("assistant", "piweb answer three")
    assert "SUMMARY OF THE BRANCH LEFT" in seen[at + 4][1] and seen[at + 4][0] == "user"
    assert roles[at + 5] == ("user", "four")
    assert roles[:4] == [
        ("user", "one"), ("assistant", "pi answer one"), ("user", "two"), ("assistant", "pi answer two"),
    ]  # fmt: skip

    # pi's new turn comes back to piweb through the follower, as a child of piweb's leaf.
    following.sync_file(str(path), owner)
    session.refresh_from_db()
    assert session.leaf.payload["message"]["content"][0]["text"] == "pi answer five"
