"""One truth about what the model sees: the context inspector shows exactly what the agent
run sends to the model (system prompt, tools, messages) for the same session and leaf, and
it reads the same window and context size as the compaction threshold check.

The run is executed here (real scripted server through the openai SDK, real Redis, real
database); the scripted server records every request body, which is the ground truth."""

import json
import os
import time
import uuid
from pathlib import Path

import pytest
from django.urls import reverse

from sessions_app.agent.providers.base import ModelRequest
from sessions_app.agent.providers.openai_completions import build_params
from sessions_app.models import Job, Session
from sessions_app.selectors import paths
from sessions_app.selectors.inspector import inspect_context
from sessions_app.selectors.llm.catalog import resolve_profile
from sessions_app.selectors.model_input import model_input
from sessions_app.services import chat, jobs, sessions
from tests.support.pi_files import header, jsonl_text, message
from tests.support.scripted_llm import text, tool_call
from tests.support.tree_data import import_branched
from tests.support.web import upload

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # The run executes here; queued work (the threshold compaction) must stay queued.
    pytest.mark.usefixtures("tasks_stay_in_process"),
]

WINDOW = 40_000  # the session's model: threshold 40,000 - 16,384 = 23,616
FALLBACK_WINDOW = 64_000  # what reading the global setting instead would give


@pytest.fixture
def owner(make_user):
    return make_user()


@pytest.fixture
def windowed_profile(settings):
    profiles = json.loads(settings.PIWEB_MODEL_PROFILES_JSON)
    profiles["scripted-window"] = {**profiles["scripted"], "context_window": WINDOW}
    settings.PIWEB_MODEL_PROFILES_JSON = json.dumps(profiles)
    settings.PIWEB_LLM_CONTEXT_WINDOW = FALLBACK_WINDOW
    return "scripted-window"


def _skill(directory, name: str, description: str) -> None:
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\nSteps.\n"
    )


@pytest.fixture
def project(workspace, settings, tmp_path):
    """A service inside a monorepo inside the workspace: context files in the agent
    directory, the monorepo and the service; skills in the user root and two project
    roots, one name in two roots (the first root wins, so their order shows)."""
    monorepo = workspace / "monorepo"
    service = monorepo / "service"
    service.mkdir(parents=True)
    (monorepo / "CLAUDE.md").write_text("Monorepo rule: keep services independent.\n")
    (service / "AGENTS.md").write_text("Service rule: run make test before you stop.\n")
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "AGENTS.md").write_text("Global rule: be brief.\n")
    settings.PIWEB_AGENT_DIR = agent_dir
    _skill(agent_dir / "skills" / "deploy", "deploy", "The user's own deploy steps.")
    _skill(agent_dir / "skills" / "review", "review", "Review a change.")
    _skill(service / ".pi" / "skills" / "deploy", "deploy", "The project's deploy steps.")
    _skill(service / ".pi" / "skills" / "bench", "bench", "Run the benchmarks.")
    _skill(service / ".agents" / "skills" / "lint", "lint", "Lint the service.")
    # Above the cwd: pi would list it, but the agent's read tool could not open it.
    _skill(monorepo / ".agents" / "skills" / "outside", "outside", "Out of reach.")
    return service


def _big_usage(prompt_tokens: int) -> dict:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": 5,
        "total_tokens": prompt_tokens + 5,
    }


def _threshold_compactions(session) -> int:
    return Job.objects.filter(
        session=session, kind=Job.Kind.COMPACTION, params__trigger="threshold"
    ).count()


def test_the_inspector_shows_exactly_what_the_run_sends(
    owner, project, windowed_profile, llm, settings
):
    session = sessions.create_session(owner=owner, cwd=str(project), model_profile=windowed_profile)
    llm.push(tool_call("read", {"path": "AGENTS.md"}, call_id="c1"), text("Run make test."))
    assert jobs.run_job(str(chat.send_message(session, owner, "the rules?").pk)) == "done"

    # Small so far: the compaction check and the inspector agree that it is under.
    session.refresh_from_db()
    leaf = paths.load_path(session)[-1]["id"]
    report = inspect_context(session, leaf)
    assert report.window == WINDOW and report.threshold == WINDOW - 16384
    assert not report.over_threshold and _threshold_compactions(session) == 0

    llm.push(text("Deployed.", usage=_big_usage(30_000)))
    assert jobs.run_job(str(chat.send_message(session, owner, "deploy it").pk)) == "done"
    session.refresh_from_db()
    path = paths.load_path(session)
    roles = [e["message"]["role"] for e in path]
    assert roles == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]

    # Each request the model got equals the inspector at the leaf it was sent from.
    assert len(llm.requests) == 3
    for request, leaf in zip(
        llm.requests, [path[0]["id"], path[2]["id"], path[4]["id"]], strict=True
    ):
        report = inspect_context(session, leaf)
        sent = [m.message for m in report.messages]
        assert request["messages"][0] == {"role": "system", "content": report.system_prompt}
        expected = build_params(
            resolve_profile(windowed_profile).resolved(),
            ModelRequest(
                system_prompt=report.system_prompt,
                messages=sent,
                tools=[
                    {"name": t.name, "description": t.description, "parameters": t.parameters}
                    for t in report.tools
                ],
            ),
        )
        assert request["messages"] == expected["messages"]
        assert request["tools"] == expected["tools"]
        assert "".join(s.text for s in report.prompt_sections) == report.system_prompt

    # What the prompt is made of: three context files, outermost first; pi's skill
    # order (the project's root before the user's), so the project's "deploy" wins.
    agent_dir, service = os.path.realpath(settings.PIWEB_AGENT_DIR), os.path.realpath(project)
    monorepo = os.path.dirname(service)
    ours = [f.path for f in report.context_files if f.path.startswith((agent_dir, monorepo))]
    assert ours == [
        os.path.join(agent_dir, "AGENTS.md"),
        os.path.join(monorepo, "CLAUDE.md"),
        os.path.join(service, "AGENTS.md"),
    ]
    assert "Monorepo rule: keep services independent." in report.system_prompt
    assert [(s.name, s.description) for s in report.skills] == [
        ("bench", "Run the benchmarks."),
        ("deploy", "The project's deploy steps."),
        ("lint", "Lint the service."),
        ("review", "Review a change."),
    ]
    assert "Out of reach." not in report.system_prompt
    assert [w.code for w in report.prompt_warnings] == ["duplicate_name"]

    # The custom window: the run's compaction check queued a compaction because the
    # context (30,005 from the last reply's usage) is over 40,000 - 16,384; the inspector
    # reads the same numbers and says so.
    report = inspect_context(session, path[-1]["id"])
    assert report.context_tokens == model_input(session).context_tokens >= 30_005
    assert report.over_threshold and _threshold_compactions(session) == 1


def test_token_counts_unpack_the_tokenizer_where_the_setting_says(
    make_user, settings, tmp_path, fresh_workspace_root
):
    session = import_branched(make_user("tk-owner"), str(fresh_workspace_root))
    settings.PIWEB_TIKTOKEN_CACHE = str(tmp_path / "tiktoken")
    counts = model_input(session).count()
    assert counts.system > 0 and not counts.system_estimated
    assert os.listdir(tmp_path / "tiktoken")  # the encoding file, under tiktoken's name


# --- links and folders that are not the session's: nothing is read through them -----------

SECRET = "SERVER-SECRET-7f3a"
SECRET_SKILL = "SERVER-SKILL-9c1d"


@pytest.fixture
def server_files(tmp_path):
    """A root-only file of the server (the secret key's stand-in) and a skill folder of the
    server's, both outside every workspace."""
    secret = tmp_path / "server" / "secret_key"
    secret.parent.mkdir()
    secret.write_text(f"{SECRET}\n")
    secret.chmod(0o600)
    _skill(tmp_path / "server" / "skills" / "leak", "leak", SECRET_SKILL)
    return secret, tmp_path / "server" / "skills"


def _run_in_page(client, session, text_: str) -> None:
    """Send `text_` through the chat box as the page does and run the job it queued."""
    response = client.post(reverse("sessions_app:chat_send", args=[session.pi_id]), {"text": text_})
    assert response.status_code == 200, response.content
    job = Job.objects.filter(session=session, status=Job.Status.QUEUED).get()
    assert jobs.run_job(str(job.pk)) == "done"


@pytest.mark.usefixtures("fresh_workspace_root")
def test_links_a_command_makes_never_make_the_server_read_outside_the_workspace(
    owner, workspace, server_files, settings, tmp_path, llm, client_for
):
    """The attack of issue 33 (A1): `!!ln -s <server file> AGENTS.md`, then the inspector
    and the agent's next request. The links are made in the sandbox, as a user makes them;
    the server (root here) could read every target."""
    secret, server_skills = server_files
    settings.PIWEB_AGENT_DIR = tmp_path / "agent"
    real = os.path.realpath(workspace)
    _skill(workspace / ".pi" / "skills" / "mine", "mine", "My own skill.")
    (workspace / "notes").mkdir()
    (workspace / "notes" / "rules.md").write_text("Rules kept in notes.\n")
    session = sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")
    client = client_for(owner)
    links = " && ".join(
        [
            f"ln -s {secret} AGENTS.md",  # absolute
            f"ln -s {os.path.relpath(secret, real)} AGENTS.MD",  # relative, through ..
            f"ln -s {secret} CLAUDE.md",
            "ln -s notes/rules.md CLAUDE.MD",  # inside: followed
            f"ln -s {server_skills}/leak .pi/skills/dir-link",
            "mkdir .pi/skills/file-link",
            f"ln -s {server_skills}/leak/SKILL.md .pi/skills/file-link/SKILL.md",
            f"ln -s {server_skills}/leak/SKILL.md .pi/skills/root-link.md",
            f"mkdir .agents && ln -s {server_skills} .agents/skills",
            "echo linked",
        ]
    )
    _run_in_page(client, session, f"!!{links}")
    assert os.path.islink(os.path.join(real, "AGENTS.md"))  # the sandbox made them

    html = client.get(reverse("sessions_app:inspector", args=[session.pi_id])).content.decode()
    assert SECRET not in html and SECRET_SKILL not in html
    assert "Rules kept in notes." in html and "My own skill." in html
    session.refresh_from_db()
    report = model_input(session).prompt
    assert [os.path.basename(f.path) for f in report.context_files] == ["CLAUDE.MD"]
    outside = {os.path.basename(w.path) for w in report.warnings if w.code == "outside"}
    assert outside == {"AGENTS.md", "AGENTS.MD", "CLAUDE.md"}, report.warnings
    assert [s.name for s in report.skills] == ["mine"]

    llm.push(text("Done."))
    _run_in_page(client, session, "what are the rules?")
    system = llm.requests[-1]["messages"][0]["content"]
    assert SECRET not in system and SECRET_SKILL not in system
    assert "Rules kept in notes." in system


@pytest.mark.usefixtures("fresh_workspace_root")
def test_a_cwd_in_another_users_folder_loads_nothing_from_it(make_user, settings, client_for):
    """A2: bob imports a session whose header cwd is alice's workspace. The cwd is refused
    for him, and neither alice's context files nor her skills reach his inspector."""
    alice, bob = make_user("alice"), make_user("bob")
    area = Path(os.path.realpath(settings.PIWEB_WORKSPACE_ROOTS[0])) / str(alice.pk)
    project = area / f"project-{uuid.uuid4().hex[:8]}"
    (project / "sub").mkdir(parents=True, exist_ok=True)
    (area / "AGENTS.md").write_text("ALICE-AREA-RULES\n")
    (project / "AGENTS.md").write_text("ALICE-PROJECT-RULES\n")
    _skill(project / ".pi" / "skills" / "hers", "hers", "ALICE-SKILL")
    _skill(project / ".agents" / "skills" / "also", "also", "ALICE-AGENTS-SKILL")
    data = jsonl_text(header(cwd=str(project / "sub")), [message("a1", None, text="hi")])
    page = upload(client_for(bob), data.encode()).content.decode()
    assert "Import" in page
    session = Session.objects.get(owner=bob)

    html = client_for(bob).get(reverse("sessions_app:inspector", args=[session.pi_id]))
    body = html.content.decode()
    assert html.status_code == 200
    for hers in ("ALICE-AREA-RULES", "ALICE-PROJECT-RULES", "ALICE-SKILL", "ALICE-AGENTS-SKILL"):
        assert hers not in body
    report = model_input(session).prompt
    assert not any(f.path.startswith(str(area)) for f in report.context_files)
    assert not any(s.file_path.startswith(str(area)) for s in report.skills)
    assert report.warnings[0].code == "cwd"
    # The same folder, hers: all of it is read.
    own = sessions.create_session(owner=alice, cwd=str(project / "sub"))
    mine = model_input(own).prompt
    assert "ALICE-PROJECT-RULES" in mine.prompt and "ALICE-AREA-RULES" in mine.prompt


@pytest.mark.usefixtures("fresh_workspace_root")
def test_the_inspector_of_a_huge_imported_cwd_walks_nothing(owner, client_for):
    """Item 9: a 10 MB header cwd (kept cut to PATH_MAX) used to make the skill roots walk
    every ancestor through realpath (12-14 s); a refused cwd is not walked at all."""
    cwd = "/w" + "/d" * 5_000_000
    data = jsonl_text(header(cwd=cwd), [message("a1", None, text="hello")])
    upload(client_for(owner), data.encode())
    session = Session.objects.get(owner=owner)
    started = time.monotonic()
    response = client_for(owner).get(reverse("sessions_app:inspector", args=[session.pi_id]))
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert elapsed < 3, f"the inspector took {elapsed:.1f} s"
    assert [w.code for w in model_input(session).prompt.warnings][:1] == ["cwd"]
