"""pi 0.80.2 and piweb on the wire: the same session, one scripted model, request by request.

Real pi (its own AgentSession, driven by tests/support/pi_wire.mjs, the SDK its CLI is
built on; installed with its own pinned dependencies in bench/pi_wire) talks to the
scripted OpenAI-compatible server through a models.json in its agent directory. It runs a
session with a two-place edit, an edit in the older single-pair form and a bash call, then, after a resume: an agent turn, a
compaction, an agent turn, a second compaction (an update: the first summary goes in
<previous-summary>), a navigation with a branch summary, an agent turn, a turn with a
bash call (each side runs its own tool: the results are compared too), a compaction that
splits that turn (a history and a turn-prefix request) and a last agent turn.
piweb imports pi's file as it was before the resume and does the same, on the same
scripted replies. The requests the server recorded are compared:

- the messages (every one after the system prompt);
- the tools: names in order and parameter schemas (descriptions aside: ours are our own);
- the system prompt: the same sections in the same order (role, tools, custom-tools
  note, as many guideline bullets, docs pointer), the same tool lines by name, and the
  data blocks (project context, skills, date, working directory) byte for byte;
- the summary requests: the <conversation> block, the headings of the instructions and
  their order, the max-tokens value, the <previous-summary> block;
- the request fields.

The request fields that depend on how requests go on the wire (stream for summaries,
store, the max-tokens field's name, the tools' strict flag, the messages' exact JSON) are
asserted in :func:`transport_fields_like_pi`, which lists every difference at once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sessions_app.models import Job, Session
from sessions_app.services import chat, jobs
from sessions_app.services.importer import import_jsonl_stream
from tests.support.pi_reference import PI_WIRE_PACKAGE, ROOT, pi_wire_or_skip
from tests.support.pi_wording import headings
from tests.support.scripted_llm import Reply, text, tool_call, user_text
from tests.support.workspaces import area_of

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("no_worker_for_these_jobs", "tasks_stay_in_process"),
]

PI_PACKAGE = PI_WIRE_PACKAGE
DRIVER = ROOT / "tests" / "support" / "pi_wire.mjs"
MODEL = "scripted-model"
WINDOW = 128_000
# The model's max output tokens: it caps a compaction's 0.8 x 16384 = 13107, not a turn
# prefix's 0.5 x 16384 = 8192.
MAX_OUTPUT = 10_000
KEEP_RECENT = 50  # the compaction keeps the last turn (its long user message) only
LONG = "Now explain, in one word, why the change is right. " * 8  # ~400 chars: ~100 tokens
LONGER = "Tell me what we did so far, and in which files, in a few words. " * 7
PROMPTS = {
    "p1": "Set a to 10 and b to 20 in app.py, then show the file.",
    "p2": "Thanks. Keep the style.",
    "p3": LONG.strip(),
    "p4": LONGER.strip(),  # long too: the second compaction keeps it, summarizes p3
    "p5": "Back here: what is next?",
    "p6": "Print four hundred zeros.",
    "p7": "And now?",
}
ZEROS = "printf '%0400d\\n' 0"  # a tool result of ~100 tokens: the next compaction splits the turn
SPLIT_SUMMARY = "## Goal\nPrint zeros.\n\n## Next Steps\n1. none"
EDITED = "Edited both places."


# --------------------------------------------------------------------------- the scenario


def first_run_replies() -> list[Reply]:
    edit_args = {
        "path": "app.py",
        "edits": [
            {"oldText": "a = 1", "newText": "a = 10"},
            {"oldText": "b = 2", "newText": "b = 20"},
        ],
    }
    # the older single-edit form, as sessions made before edits[] hold it
    legacy_args = {"path": "app.py", "oldText": "b = 20", "newText": "b = 21"}
    return [
        tool_call("edit", edit_args, call_id="call_edit_1"),
        tool_call("edit", legacy_args, call_id="call_edit_2"),
        tool_call("bash", {"command": "cat app.py"}, call_id="call_bash_1"),
        text(EDITED),
        text("Noted."),
    ]


SECOND_RUN = [  # (what is done, the scripted reply)
    ("turn after resume", text("Sure.")),
    ("compaction", text("## Goal\nEdit app.py.\n\n## Progress\n### Done\n- [x] a and b")),
    ("turn after compaction", text("We edited app.py.")),
    ("second compaction", text("## Goal\nEdit app.py and explain it.\n\n## Next Steps\n1. none")),
    ("branch summary", text("## Goal\nExplain the change.\n\n## Next Steps\n1. none")),
    ("turn after branch summary", text("Nothing is left.")),
    ("turn with a tool call", tool_call("bash", {"command": ZEROS}, call_id="call_bash_2")),
    ("turn after the tool result", text("Done.")),
    # A split turn: the history and the turn's prefix are summarized (pi: at the same
    # time, in either order; the replies are the same so the order does not matter).
    ("split compaction", text(SPLIT_SUMMARY)),
    ("split compaction, second request", text(SPLIT_SUMMARY)),
    ("turn after split compaction", text("All done.")),
]


def write_agent_dir(agent: Path, base_url: str) -> None:
    agent.mkdir(parents=True)
    (agent / "AGENTS.md").write_text("Global rule: answer briefly.\n")
    model = {
        "id": MODEL,
        "name": "Scripted",
        "reasoning": False,
        "input": ["text"],
        "contextWindow": WINDOW,
        "maxTokens": MAX_OUTPUT,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }
    models = {
        "providers": {
            "scripted": {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": "test-key",
                "models": [model],
            }
        }
    }
    (agent / "models.json").write_text(json.dumps(models))
    settings = {
        "defaultProvider": "scripted",
        "defaultModel": MODEL,
        "compaction": {"keepRecentTokens": KEEP_RECENT},
    }
    (agent / "settings.json").write_text(json.dumps(settings))


def write_project(cwd: Path) -> None:
    cwd.mkdir(parents=True)
    (cwd / "app.py").write_text("a = 1\nb = 2\n")
    (cwd / "AGENTS.md").write_text("Project rule: run the tests.\n")
    skill = cwd / ".pi" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: Deploy the app.\n---\nGo.\n")


def run_pi(node: str, job: dict, scratch: Path, agent: Path, home: Path) -> dict:
    job_file = scratch / f"job-{len(list(scratch.glob('job-*')))}.json"
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
        cwd=job["cwd"],
    )
    assert proc.returncode == 0, f"pi failed: {proc.stderr[-4000:]}"
    return json.loads(proc.stdout)


def entry_id_of_text(jsonl: Path, wanted: str) -> str:
    for line in jsonl.read_text().splitlines():
        entry = json.loads(line)
        message = entry.get("message") or {}
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("text") == wanted:
                return entry["id"]
    raise AssertionError(f"no entry with {wanted!r}")


# --------------------------------------------------------------------------- comparisons

TOOLS_HEADING = "\n\nAvailable tools:\n"
GUIDELINES_HEADING = "\n\nGuidelines:\n"


def prompt_structure(prompt: str) -> dict:
    """A default system prompt cut along its structure: the parts whose words are each
    side's own (sizes only) and the data blocks (verbatim)."""
    role, rest = prompt.split(TOOLS_HEADING, 1)
    tool_lines, rest = rest.split("\n\n", 1)
    note, rest = rest.split(GUIDELINES_HEADING, 1)
    bullets, rest = rest.split("\n\n", 1)
    project_at = rest.index("\n\n<project_context>")
    docs, data = rest[:project_at], rest[project_at:]
    project, after = data.split("</project_context>\n", 1)
    skills_at = after.index("<available_skills>")
    date_at = after.index("\nCurrent date: ")
    return {
        "role": bool(role.strip()),
        "tools": [line.split(":", 1)[0].removeprefix("- ") for line in tool_lines.split("\n")],
        "note": bool(note.strip()) and "\n" not in note,
        "guidelines": len(bullets.split("\n")),
        "docs": bool(docs.strip()),
        "project_context": project + "</project_context>\n",
        "skills_intro": after[:skills_at].startswith("\n\n") and bool(after[:skills_at].strip()),
        "skills": after[skills_at:date_at],
        "tail": after[date_at:],
    }


def without_descriptions(value):
    if isinstance(value, dict):
        return {k: without_descriptions(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [without_descriptions(v) for v in value]
    return value


def tools_of(body: dict) -> list[tuple[str, dict]]:
    return [
        (t["function"]["name"], without_descriptions(t["function"]["parameters"]))
        for t in body.get("tools") or []
    ]


def conversation(messages: list[dict]) -> list[dict]:
    """The messages as the model reads them: a user message's text parts joined, tool-call
    arguments parsed. (Their exact JSON shape, a list of parts or a string, compact JSON
    or not, is the transport's: see transport_fields_like_pi.)"""
    out = []
    for message in messages:
        message = json.loads(json.dumps(message))
        if message["role"] == "user":
            message["content"] = user_text(message)
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        out.append(message)
    return out


def compare_agent_turn(what: str, pi: dict, web: dict) -> None:
    assert pi["model"] == web["model"] == MODEL, what
    assert pi["messages"][0]["role"] == web["messages"][0]["role"] == "system", what
    assert conversation(web["messages"][1:]) == conversation(pi["messages"][1:]), what
    assert tools_of(web) == tools_of(pi), f"{what}: tools"
    ours = prompt_structure(web["messages"][0]["content"])
    theirs = prompt_structure(pi["messages"][0]["content"])
    assert ours == theirs, f"{what}: system prompt structure"
    assert theirs["tools"] == ["read", "bash", "edit", "write"] and theirs["guidelines"] == 9
    assert "<name>deploy</name>" in theirs["skills"]
    assert "max_tokens" not in pi and "max_completion_tokens" not in pi  # pi: none on turns
    assert pi["stream"] is True and web["stream"] is True, what


def conversation_of(body: dict) -> tuple[str, str]:
    """(the <conversation> block's text, the instructions after it) of a summary request."""
    prompt = user_text(body["messages"][-1])
    assert prompt.startswith("<conversation>\n"), prompt[:80]
    conversation, instructions = prompt[len("<conversation>\n") :].split("\n</conversation>\n\n", 1)
    return conversation, instructions


def previous_summary(instructions: str) -> str | None:
    """The earlier summary a compaction update passes in <previous-summary> (None: none)."""
    if not instructions.startswith("<previous-summary>\n"):
        return None
    return instructions[len("<previous-summary>\n") :].split("\n</previous-summary>\n\n", 1)[0]


def is_turn_prefix(body: dict) -> bool:
    return "## Original Request" in headings(conversation_of(body)[1])


def max_tokens_value(body: dict):
    return body.get("max_completion_tokens", body.get("max_tokens"))


def compare_summary_request(what: str, pi: dict, web: dict, budget: int) -> None:
    assert (
        [m["role"] for m in web["messages"]]
        == [m["role"] for m in pi["messages"]]
        == [
            "system",
            "user",
        ]
    ), what
    assert web["messages"][0]["content"] != pi["messages"][0]["content"]  # our own words
    assert isinstance(pi["messages"][1]["content"], list)
    assert web["messages"][1]["content"][0].keys() == pi["messages"][1]["content"][0].keys()
    pi_conversation, pi_instructions = conversation_of(pi)
    web_conversation, web_instructions = conversation_of(web)
    assert web_conversation == pi_conversation, f"{what}: <conversation>"
    assert headings(web_instructions) == headings(pi_instructions), f"{what}: headings"
    assert previous_summary(web_instructions) == previous_summary(pi_instructions), what
    assert max_tokens_value(pi) == budget, what
    assert max_tokens_value(web) == budget, f"{what}: max tokens"
    assert not pi.get("tools") and not web.get("tools"), what


def _without_instructions(message: dict) -> dict:
    """A summary request's user message with the instructions after ``</conversation>``
    left out (our own words; their headings are compared on their own)."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    parts = []
    for part in content:
        text = part.get("text") if isinstance(part, dict) else None
        if isinstance(text, str) and text.startswith("<conversation>"):
            part = {**part, "text": text.split("</conversation>")[0]}
        parts.append(part)
    return {**message, "content": parts}


def transport_fields_like_pi(what: str, pi: dict, web: dict) -> None:
    """The request fields that the transport decides (``agent/providers/``):
    the set of top-level fields, ``stream``/``stream_options`` on summary requests,
    ``store: false``, ``max_completion_tokens`` rather than ``max_tokens``, and the
    tools' ``strict: false``, and the messages' exact JSON (a user message's content as
    a list of text parts, tool-call arguments as compact JSON)."""
    assert sorted(web) == sorted(pi), f"{what}: fields {sorted(web)} != pi's {sorted(pi)}"
    for index, (ours, theirs) in enumerate(zip(web["messages"], pi["messages"], strict=True)):
        if ours.get("role") == theirs.get("role") == "system":
            # The prompt's words are our own; its structure is compared on its own.
            ours, theirs = {**ours, "content": ""}, {**theirs, "content": ""}
        ours, theirs = _without_instructions(ours), _without_instructions(theirs)
        assert ours == theirs, f"{what}: message {index} as JSON: {ours!r} != {theirs!r}"[:400]
    for key in ("stream", "stream_options", "store", "max_completion_tokens", "max_tokens"):
        assert web.get(key) == pi.get(key), f"{what}: {key} {web.get(key)!r} != {pi.get(key)!r}"
    strict = [t["function"].get("strict") for t in web.get("tools") or []]
    assert strict == [t["function"].get("strict") for t in pi.get("tools") or []], what


def compare_requests(pi_requests: list[dict], web_requests: list[dict]) -> list[str]:
    """Every comparison of the module docstring; returns what
    :func:`transport_fields_like_pi` found (the only failures it does not raise)."""
    pairs = {
        what: (pi, web)
        for (what, _), pi, web in zip(SECOND_RUN, pi_requests, web_requests, strict=True)
    }
    # The split compaction's two requests, paired by what they are (the turn prefix's
    # instructions have their own headings), whatever order pi sent them in.
    split = ("split compaction", "split compaction, second request")
    pi_split = sorted((pairs[w][0] for w in split), key=is_turn_prefix)
    web_split = sorted((pairs[w][1] for w in split), key=is_turn_prefix)
    assert [is_turn_prefix(r) for r in web_split] == [False, True]
    pairs["split compaction: history"] = (pi_split[0], web_split[0])
    pairs["split compaction: turn prefix"] = (pi_split[1], web_split[1])
    for what in split:
        del pairs[what]
    for what in (
        "turn after resume",
        "turn after compaction",
        "turn after branch summary",
        "turn with a tool call",
        "turn after the tool result",  # piweb's bash result against pi's
        "turn after split compaction",
    ):
        compare_agent_turn(what, *pairs[what])
    compare_summary_request(
        "compaction", *pairs["compaction"], budget=min(int(0.8 * 16384), MAX_OUTPUT)
    )
    compare_summary_request(
        "second compaction", *pairs["second compaction"], budget=min(int(0.8 * 16384), MAX_OUTPUT)
    )
    compare_summary_request("branch summary", *pairs["branch summary"], budget=2048)
    compare_summary_request(
        "split compaction: history",
        *pairs["split compaction: history"],
        budget=min(int(0.8 * 16384), MAX_OUTPUT),
    )
    compare_summary_request(
        "split compaction: turn prefix",
        *pairs["split compaction: turn prefix"],
        budget=min(int(0.5 * 16384), MAX_OUTPUT),
    )
    # The split turn's summary went into the context under its heading, as pi's did.
    last = conversation(pairs["turn after split compaction"][1]["messages"])
    assert "**Turn Context (split turn):**" in last[1]["content"]
    # The update: the first summary (with its file lists) in <previous-summary>, as pi.
    assert "<previous-summary>" in user_text(pairs["second compaction"][0]["messages"][-1])
    assert "<previous-summary>" not in user_text(pairs["compaction"][0]["messages"][-1])

    # What the compaction and the branch summary left in the context reached the model
    # alike (the messages compared above hold them); check they are there at all.
    after_compaction = pairs["turn after compaction"][1]["messages"]
    assert "compacted into the following summary" in user_text(after_compaction[1])
    after_branch = pairs["turn after branch summary"][1]["messages"]
    assert any("<summary>" in user_text(m) for m in after_branch if m["role"] == "user")

    # Last: the fields the transport decides (see transport_fields_like_pi).
    failures = []
    for what, (pi, web) in pairs.items():
        try:
            transport_fields_like_pi(what, pi, web)
        except AssertionError as exc:
            failures.append(str(exc))
    return failures


# --------------------------------------------------------------------------- the test


def test_pi_and_piweb_send_the_same_requests(
    llm, settings, fresh_workspace_root, make_user, tmp_path
):
    node = pi_wire_or_skip()
    owner = make_user()
    scratch = tmp_path / "pi"
    scratch.mkdir()
    agent, home = tmp_path / "agent", tmp_path / "home"
    home.mkdir()
    write_agent_dir(agent, llm.base_url)
    cwd = area_of(settings, owner) / "project"
    write_project(cwd)
    settings.PIWEB_AGENT_DIR = agent
    profiles = json.loads(settings.PIWEB_MODEL_PROFILES_JSON)
    profiles["wire"] = {
        "base_url": llm.base_url,
        "model": MODEL,
        "api_key": "test-key",
        "context_window": WINDOW,
        "max_output": MAX_OUTPUT,
    }
    settings.PIWEB_MODEL_PROFILES_JSON = json.dumps(profiles)

    # pi: the first run (a two-place edit, a bash call, two prompts), then a resume.
    llm.push(*first_run_replies())
    sessions = scratch / "sessions"
    before_resume = scratch / "before-resume.jsonl"
    first = run_pi(
        node,
        {
            "cwd": str(cwd),
            "agentDir": str(agent),
            "sessionDir": str(sessions),
            "steps": [
                {"op": "prompt", "text": PROMPTS["p1"]},
                {"op": "prompt", "text": PROMPTS["p2"]},
                {"op": "copy", "to": str(before_resume)},
            ],
        },
        scratch,
        agent,
        home,
    )
    assert (cwd / "app.py").read_text() == "a = 10\nb = 21\n"  # pi's edits
    assert llm.pending() == 0 and len(llm.requests) == 5
    target = entry_id_of_text(before_resume, EDITED)
    llm.reset()
    llm.push(*(reply for _what, reply in SECOND_RUN))
    run_pi(
        node,
        {
            "cwd": str(cwd),
            "agentDir": str(agent),
            "sessionDir": str(sessions),
            "sessionFile": first["sessionFile"],
            "steps": [
                {"op": "prompt", "text": PROMPTS["p3"]},
                {"op": "compact"},
                {"op": "prompt", "text": PROMPTS["p4"]},
                {"op": "compact"},
                {"op": "navigate", "target": target},
                {"op": "prompt", "text": PROMPTS["p5"]},
                {"op": "prompt", "text": PROMPTS["p6"]},
                {"op": "compact"},
                {"op": "prompt", "text": PROMPTS["p7"]},
            ],
        },
        scratch,
        agent,
        home,
    )
    pi_requests = list(llm.requests)
    assert len(pi_requests) == len(SECOND_RUN) and llm.pending() == 0

    # piweb: pi's file as it was before the resume, then the same steps.
    (cwd / "app.py").write_text("a = 10\nb = 21\n")
    with before_resume.open("rb") as fh:
        session = import_jsonl_stream(fh, owner, filename="before-resume.jsonl").session
    Session.objects.filter(pk=session.pk).update(
        model_profile="wire",
        settings={"compaction": {"keepRecentTokens": KEEP_RECENT}},
    )
    session.refresh_from_db()
    llm.reset()
    llm.push(*(reply for _what, reply in SECOND_RUN))

    def turn(prompt: str) -> None:
        job = chat.send_message(session, owner, prompt)
        assert jobs.run_job(str(job.pk)) == "done"
        session.refresh_from_db()

    def run(job: Job) -> None:
        jobs.run_job(job.id)
        job.refresh_from_db()
        assert job.status == "done", job.error
        session.refresh_from_db()

    turn(PROMPTS["p3"])
    run(jobs.request_compaction(session, actor=owner))
    turn(PROMPTS["p4"])
    run(jobs.request_compaction(session, actor=owner))
    run(
        jobs.request_branch_summary(
            session, old_leaf_pi_id=session.leaf_pi_id, target_pi_id=target, actor=owner
        )
    )
    turn(PROMPTS["p5"])
    turn(PROMPTS["p6"])
    run(jobs.request_compaction(session, actor=owner))
    turn(PROMPTS["p7"])
    web_requests = list(llm.requests)
    assert len(web_requests) == len(SECOND_RUN) and llm.pending() == 0

    if os.environ.get("PIWEB_WIRE_DUMP"):  # both sides' requests, to look at a difference
        Path(os.environ["PIWEB_WIRE_DUMP"]).write_text(
            json.dumps({"pi": pi_requests, "piweb": web_requests}, indent=1)
        )
    failures = compare_requests(pi_requests, web_requests)
    assert not failures, "transport fields differ from pi's: " + "; ".join(failures)
    shutil.rmtree(scratch, ignore_errors=True)
