"""A prompt template on the wire: pi 0.80.2 and piweb send the same user message.

Real pi (its own AgentSession through tests/support/pi_wire.mjs) and piweb's chat each
get ``/review "src/app.py" fast`` in the same project, whose ``.pi/prompts/review.md``
uses a positional argument, a default, a slice and ``$@``; both talk to the scripted
OpenAI-compatible server. The messages after the system prompt are compared: identical,
and the user's is the expansion, not the typed command. A ``/skill:`` command is sent the
same way: the block is pi's once its one sentence (ours) is set aside.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sessions_app.core.prompt_templates import SKILL_REFERENCES
from sessions_app.services import chat, jobs, sessions
from tests.support.pi_reference import PI_WIRE_PACKAGE, ROOT, pi_wire_or_skip
from tests.support.scripted_llm import text
from tests.support.workspaces import area_of

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("no_worker_for_these_jobs", "tasks_stay_in_process"),
]

PI_PACKAGE = PI_WIRE_PACKAGE
DRIVER = ROOT / "tests" / "support" / "pi_wire.mjs"
MODEL = "scripted-model"
TEMPLATE = (
    "---\ndescription: Review one file\nargument-hint: <file> [speed]\n---\n"
    "Review $1 ${2:-slowly}; then ${3:-nothing else}.\nAll of it: $@ (${@:2})\n"
)
TYPED = '/review "src/app.py" fast'
EXPANDED = "Review src/app.py fast; then nothing else.\nAll of it: src/app.py fast (fast)"
SKILL = "---\nname: deploy\ndescription: Deploy the app.\n---\n\nRun ./scripts/go.sh\n"


def write_agent_dir(agent: Path, base_url: str) -> None:
    agent.mkdir(parents=True)
    model = {"id": MODEL, "name": "Scripted", "reasoning": False, "input": ["text"]}
    model |= {"contextWindow": 128_000, "maxTokens": 10_000}
    providers = {
        "scripted": {
            "baseUrl": base_url,
            "api": "openai-completions",
            "apiKey": "test-key",
            "models": [model],
        }
    }
    (agent / "models.json").write_text(json.dumps({"providers": providers}))
    (agent / "settings.json").write_text(
        json.dumps({"defaultProvider": "scripted", "defaultModel": MODEL})
    )


def run_pi(node: str, cwd: Path, agent: Path, home: Path, prompts: list[str], scratch: Path):
    job = {
        "cwd": str(cwd),
        "agentDir": str(agent),
        "sessionDir": str(scratch / "sessions"),
        "steps": [{"op": "prompt", "text": p} for p in prompts],
    }
    job_file = scratch / "job.json"
    job_file.write_text(json.dumps(job))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(agent),
        "TZ": "UTC",
    }
    proc = subprocess.run(
        [node, str(DRIVER), str(PI_PACKAGE), str(job_file)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=str(cwd),
    )
    assert proc.returncode == 0, f"pi failed: {proc.stderr[-4000:]}"


def user_texts(request: dict) -> list[str]:
    out = []
    for message in request["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        out.append(content if isinstance(content, str) else content[0]["text"])
    return out


def test_pi_and_piweb_send_the_same_expansion(
    llm, settings, fresh_workspace_root, make_user, tmp_path
):
    node = pi_wire_or_skip()
    owner = make_user()
    scratch, home, agent = tmp_path / "pi", tmp_path / "home", tmp_path / "agent"
    scratch.mkdir()
    home.mkdir()
    write_agent_dir(agent, llm.base_url)
    cwd = area_of(settings, owner) / "project"
    (cwd / ".pi" / "prompts").mkdir(parents=True)
    (cwd / ".pi" / "prompts" / "review.md").write_text(TEMPLATE)
    skill_dir = cwd / ".pi" / "skills" / "deploy"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(SKILL)
    settings.PIWEB_AGENT_DIR = agent
    settings.PIWEB_PI_AGENT_DIR = str(agent)
    profiles = json.loads(settings.PIWEB_MODEL_PROFILES_JSON)
    profiles["wire"] = {"base_url": llm.base_url, "model": MODEL, "api_key": "test-key"}
    settings.PIWEB_MODEL_PROFILES_JSON = json.dumps(profiles)

    llm.push(text("Reviewed."), text("Deployed."))
    run_pi(node, cwd, agent, home, [TYPED, "/skill:deploy to staging"], scratch)
    pi_requests = list(llm.requests)
    assert len(pi_requests) == 2 and llm.pending() == 0

    llm.reset()
    llm.push(text("Reviewed."), text("Deployed."))
    session = sessions.create_session(owner=owner, cwd=str(cwd), model_profile="wire")
    for typed in (TYPED, "/skill:deploy to staging"):
        job = chat.send_message(session, owner, typed)
        assert jobs.run_job(str(job.pk)) == "done"
        session.refresh_from_db()
    web_requests = list(llm.requests)
    assert len(web_requests) == 2

    # The template: the same messages after the system prompt, and the expansion.
    assert pi_requests[0]["messages"][1:] == web_requests[0]["messages"][1:]
    assert user_texts(pi_requests[0]) == user_texts(web_requests[0]) == [EXPANDED]

    # The skill command: pi's block, once the one sentence about relative paths is aside.
    theirs, ours = user_texts(pi_requests[1])[-1], user_texts(web_requests[1])[-1]
    assert theirs.startswith('<skill name="deploy"') and theirs.endswith("to staging")
    base_dir = os.path.realpath(skill_dir)
    their_lines, our_lines = theirs.split("\n"), ours.split("\n")
    assert our_lines[1] == SKILL_REFERENCES.format(base_dir=base_dir) != their_lines[1]
    del their_lines[1], our_lines[1]
    assert our_lines == their_lines
