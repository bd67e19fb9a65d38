"""Chat services in-process: input parsing, the run guard, stale runs, the run's branch,
and one agent turn executed here (real scripted server, real Redis, no worker)."""

import base64
import io
import json
import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from sessions_app.agent.tools.bash import BASH
from sessions_app.agent.tools.grep import GREP
from sessions_app.core.system_prompt import EXPLORE_WITH_BASH
from sessions_app.models import Job
from sessions_app.selectors import paths
from sessions_app.selectors.model_input import model_input
from sessions_app.selectors.runs import run_state
from sessions_app.services import chat, jobs, sessions
from sessions_app.services.jobs import agent_run
from tests.support.images import png
from tests.support.scripted_llm import text, tool_call
from tests.support.web import client_for
from tests.support.workspaces import area_of, write_project_context

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tasks_stay_in_process"),
]


@pytest.fixture
def owner(make_user):
    return make_user()


@pytest.fixture
def session(owner, workspace, redis_ready):
    return sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted")


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("hello", chat.Parsed("agent", "hello")),
        ("  !ls -la ", chat.Parsed("bash", "ls -la")),
        ("!!make secret", chat.Parsed("bash", "make secret", exclude=True)),
    ],
)
def test_parse_input(raw, expected):
    assert chat.parse_input(raw) == expected


@pytest.mark.parametrize("raw", ["", "   ", "!", "!!  "])
def test_parse_input_refuses_empty(raw):
    with pytest.raises(chat.ChatError):
        chat.parse_input(raw)


def test_one_turn_in_process(session, owner, llm, workspace):
    (workspace / "hello.txt").write_text("hi there\n")
    llm.push(tool_call("read", {"path": "hello.txt"}, call_id="c1"), text("It says hi."))
    job = chat.send_message(session, owner, "read hello.txt")
    assert job.status == "queued" and job.params["mode"] == "agent"
    assert jobs.run_job(str(job.pk)) == "done"
    job.refresh_from_db()
    assert job.status == "done" and job.finished_at and job.result_entry is not None
    session.refresh_from_db()
    path = paths.load_path(session)
    assert [e["message"]["role"] for e in path] == ["user", "assistant", "toolResult", "assistant"]
    assert path[2]["message"]["content"] == [{"type": "text", "text": "hi there\n"}]
    assert session.leaf.pi_id == path[-1]["id"] == job.result_entry.pi_id
    # Running it again (a redelivered task) does nothing.
    assert jobs.run_job(str(job.pk)) is None
    assert len(paths.load_path(session)) == 4


def test_stale_running_job_is_failed_so_the_session_is_usable(session, owner, settings):
    stale = Job.objects.create(
        session=session, kind="agent_run", status="running",
        heartbeat_at=timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS + 5),
    )  # fmt: skip
    job = chat.send_message(session, owner, "!echo ok")
    stale.refresh_from_db()
    assert stale.status == "failed" and "stopped reporting" in stale.error
    assert job.status == "queued"


def test_redelivered_running_job_is_marked_failed(session):
    job = Job.objects.create(
        session=session,
        kind="agent_run",
        status="running",
        params={"mode": "bash", "command": "true"},
    )
    assert jobs.run_job(str(job.pk)) is None
    job.refresh_from_db()
    assert job.status == "failed"


def test_the_run_stays_on_its_branch_when_the_viewer_navigates(session, owner, llm):
    first = sessions.append_entry(session, {"type": "session_info", "name": "x"})
    llm.push(text("answer"))
    job = chat.send_message(session, owner, "question")
    user_entry = job.params["parent"]
    sessions.set_leaf(session, first.pi_id)  # someone navigates elsewhere mid-run
    assert jobs.run_job(str(job.pk)) == "done"
    session.refresh_from_db()
    assert session.leaf.pi_id == first.pi_id  # not pulled back
    answer = session.entries.order_by("-seq").first()
    assert answer.parent.pi_id == user_entry


def test_stop_sets_the_abort_key_for_a_running_job(session, owner):
    job = Job.objects.create(session=session, kind="agent_run", status="running")
    assert chat.stop_run(session, owner).job == job
    assert chat.redis_client().exists(chat.redis_key("abort", job.pk))
    chat.redis_client().delete(chat.redis_key("abort", job.pk))
    assert chat.stop_run(sessions.create_session(owner=owner, cwd=session.cwd), owner) is None


def test_run_state_round_trip(session):
    job = Job.objects.create(session=session, kind="agent_run", status="running")
    state = agent_run.RunState(session.pk, str(job.pk), "agent")
    state.apply("text_delta", {"run_id": "run-1", "delta": "Hel", "kind": "text"})
    state.apply("text_delta", {"run_id": "run-1", "delta": "lo", "kind": "text"})
    state.apply(
        "tool_start",
        {"run_id": "run-1", "tool_call_id": "t1", "name": "bash", "args": {"command": "ls"}},
    )
    state.apply(
        "bash_snapshot", {"run_id": "run-1", "tool_call_id": "t1", "text": "a\n", "total_lines": 2}
    )
    state.flush(force=True)
    saved = run_state(session)  # (the run on the leaf)
    assert saved == run_state(session, job) and saved["text"] == "Hello"
    assert saved["tools"]["t1"]["snapshot"] == {"text": "a\n", "total_lines": 2}
    state.clear()
    assert run_state(session, job) is None


def test_thinking_deltas_become_a_thinking_block(session, owner, llm):
    from tests.support.scripted_llm import Reply

    llm.push(Reply(thinking="Let me think.", text="Answer."))
    job = chat.send_message(session, owner, "think")
    assert jobs.run_job(str(job.pk)) == "done"
    session.refresh_from_db()
    message = paths.load_path(session)[-1]["message"]
    # pi keeps the name of the field the thinking came in as its signature...
    assert message["content"] == [
        {"type": "thinking", "thinking": "Let me think.", "thinkingSignature": "reasoning_content"},
        {"type": "text", "text": "Answer."},
    ]
    # ...and sends it back in that field to the same model on the next turn, as pi does.
    llm.push(text("ok"))
    job = chat.send_message(session, owner, "again")
    jobs.run_job(str(job.pk))
    replayed = [m for m in llm.requests[-1]["messages"] if m["role"] == "assistant"][-1]
    assert replayed == {
        "role": "assistant",
        "content": "Answer.",
        "reasoning_content": "Let me think.",
    }


def test_system_prompt_has_project_context_skills_date_and_cwd(
    session, workspace, settings, tmp_path
):
    write_project_context(workspace, "How to deploy this app")
    settings.PIWEB_AGENT_DIR = tmp_path / "agent"
    (tmp_path / "agent" / "skills" / "global-one").mkdir(parents=True)
    (tmp_path / "agent" / "skills" / "global-one" / "SKILL.md").write_text(
        "---\nname: global-one\ndescription: A global skill\n---\nBody."
    )
    prompt = model_input(session, None).system_prompt
    assert f'<project_instructions path="{workspace}/AGENTS.md">' in prompt
    assert "Always run the tests." in prompt
    assert "<name>deploy</name>" in prompt and "<name>global-one</name>" in prompt
    assert f"- bash: {BASH.snippet}" in prompt
    assert prompt.rstrip().endswith(f"Current working directory: {workspace}")
    assert "Current date: " in prompt


def test_the_tool_set_is_pis_default_unless_the_session_or_its_profile_names_one(
    session, settings, llm
):
    seen = model_input(session, None)
    assert [t.name for t in seen.tools] == ["read", "bash", "edit", "write"]
    assert "- grep:" not in seen.system_prompt

    # The model profile names its tools (pi's --tools: a list or "a,b,c").
    profiles = json.loads(settings.PIWEB_MODEL_PROFILES_JSON)
    profiles["scripted"]["tools"] = "read,bash,grep,find,ls"
    settings.PIWEB_MODEL_PROFILES_JSON = json.dumps(profiles)
    seen = model_input(session, None)
    assert [t.name for t in seen.tools] == ["read", "bash", "grep", "find", "ls"]
    prompt = seen.system_prompt
    assert f"- grep: {GREP.snippet}" in prompt and "- edit:" not in prompt
    assert EXPLORE_WITH_BASH not in prompt  # grep/find/ls are there: no bash advice

    # The session's own choice wins; it is what the run offers the model.
    session.settings = {**(session.settings or {}), "tools": ["read", "ls"]}
    session.save(update_fields=["settings"])
    assert [t.name for t in model_input(session, None).tools] == ["read", "ls"]
    llm.push(text("Listed."))
    job = chat.send_message(session, session.owner, "what is here?")
    assert jobs.run_job(str(job.pk)) == "done"
    assert [t["function"]["name"] for t in llm.requests[-1]["tools"]] == ["read", "ls"]


def test_redelivered_job_with_a_live_heartbeat_is_left_alone(session):
    live = Job.objects.create(
        session=session,
        kind="agent_run",
        status="running",
        heartbeat_at=timezone.now(),
        params={"mode": "bash", "command": "true"},
    )
    assert jobs.run_job(str(live.pk)) is None
    live.refresh_from_db()
    assert live.status == "running"  # e.g. redelivered after the visibility timeout


@pytest.mark.usefixtures("fresh_workspace_root")
def test_agent_and_user_bash_share_one_artifact_dir_by_session_pk(make_user, settings):
    from sessions_app.agent.paths import Workspace
    from sessions_app.agent.tools import ToolContext
    from sessions_app.selectors import workspaces

    owner = make_user()
    session = sessions.create_session(owner=owner, cwd=str(area_of(settings, owner)))
    expected = os.path.join(str(settings.PIWEB_ARTIFACT_DIR), "sessions", str(session.pk))
    assert workspaces.artifact_dir(session) == expected
    # The agent's tools write there (the run's tool context).
    from sessions_app.agent.signals import AbortSignal
    from sessions_app.services import sandboxing

    assert sandboxing.tool_context(session, AbortSignal()).artifact_dir == expected
    ctx = ToolContext(workspace=Workspace(str(area_of(settings, owner))), artifact_dir=expected)
    made = ctx.output_file("bash")()
    assert os.path.dirname(made) == expected and re.fullmatch(
        r"bash-[0-9a-f]{16}\.log", os.path.basename(made)
    )
    # A file our run wrote there is served for this session.
    Path(made).write_text("full output\n")
    assert workspaces.session_artifact_file(session, made) == Path(os.path.realpath(made))
    assert workspaces.session_artifact_file(session, made + "/../../x") is None


@pytest.mark.usefixtures("fresh_workspace_root")
def test_chat_refuses_a_cwd_outside_the_owners_area(make_user, settings):
    alice, bob = make_user(), make_user()
    alice_proj = area_of(settings, alice) / "proj"
    alice_proj.mkdir(parents=True, exist_ok=True)
    # e.g. an imported session whose recorded cwd is alice's project: kept for display...
    session = sessions.create_session(owner=bob, cwd=str(alice_proj), model_profile="scripted")
    page = client_for(bob).get(reverse("sessions_app:session_detail", args=[session.pi_id]))
    assert page.status_code == 200
    # ...but bob's chat never runs there.
    with pytest.raises(chat.ChatError) as exc:
        chat.send_message(session, bob, "!cat .env")
    assert exc.value.code == "workspace" and "cannot be used here" in str(exc.value)
    assert not Job.objects.filter(session=session).exists()
    # the root itself is not a workspace either
    root_session = sessions.create_session(
        owner=bob, cwd=str(settings.PIWEB_WORKSPACE_ROOTS[0]), model_profile="scripted"
    )
    with pytest.raises(chat.ChatError):
        chat.send_message(root_session, bob, "!ls")


@pytest.mark.usefixtures("fresh_workspace_root")
def test_a_run_refuses_tools_outside_the_owners_area(make_user, settings, redis_ready):
    alice, bob = make_user(), make_user()
    alice_proj = area_of(settings, alice) / "proj"
    alice_proj.mkdir(parents=True, exist_ok=True)
    session = sessions.create_session(owner=bob, cwd=str(alice_proj), model_profile="scripted")
    job = Job.objects.create(
        session=session, kind=Job.Kind.AGENT_RUN, params={"mode": "bash", "command": "touch pwn"}
    )
    jobs.run_job(str(job.pk))
    job.refresh_from_db()
    assert job.status == "failed" and "outside your workspace area" in job.error
    assert not (alice_proj / "pwn").exists()


# --- images sent with a message (the chat box's attachments) ------------------------------


@pytest.fixture
def vision_session(owner, workspace, redis_ready):
    return sessions.create_session(owner=owner, cwd=str(workspace), model_profile="scripted-vision")


def test_images_are_stored_as_pi_stores_them_and_reach_the_model(vision_session, owner, llm):
    image = png(5, 2)
    llm.push(text("A red picture."))
    job = chat.send_message(vision_session, owner, "what is this?", images=[image])
    user_message = paths.load_path(vision_session)[-1]["message"]
    assert user_message["role"] == "user"
    assert user_message["content"] == [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "data": base64.b64encode(image).decode(), "mimeType": "image/png"},
    ]
    assert jobs.run_job(str(job.pk)) == "done"
    sent = llm.requests[-1]["messages"][-1]
    assert sent["role"] == "user"
    assert sent["content"][0] == {"type": "text", "text": "what is this?"}
    url = sent["content"][1]["image_url"]["url"]
    assert url == "data:image/png;base64," + base64.b64encode(image).decode()


def test_an_image_alone_is_a_message_with_an_empty_text_block(vision_session, owner):
    jpeg = b"\xff\xd8\xff\xe0" + b"\x00" * 60
    chat.send_message(vision_session, owner, "   ", images=[jpeg])
    content = paths.load_path(vision_session)[-1]["message"]["content"]
    assert content[0] == {"type": "text", "text": ""}
    assert content[1]["mimeType"] == "image/jpeg"


@pytest.mark.parametrize(
    "images, code, words",
    [
        ([b"GIF89a" + b"\x00" * 20, b"not an image at all"], "bad_image", "Image 2 is not a PNG"),
        ([b""], "bad_image", "Image 1 is empty"),
        ([png()] * 3, "bad_image", "at most 2"),
    ],
)
def test_bad_images_are_refused_and_nothing_is_stored(
    vision_session, owner, settings, images, code, words
):
    settings.PIWEB_CHAT_IMAGE_MAX_COUNT = 2
    with pytest.raises(chat.ChatError) as refused:
        chat.send_message(vision_session, owner, "look", images=images)
    assert refused.value.code == code and words in str(refused.value)
    assert paths.load_path(vision_session) == []
    assert not Job.objects.filter(session=vision_session).exists()


def test_an_image_over_the_size_limit_is_refused(vision_session, owner, settings):
    settings.PIWEB_CHAT_IMAGE_MAX_BYTES = 2048
    big = png(300, 300, rgb=(1, 2, 3)) + b"\x00" * 4096
    with pytest.raises(chat.ChatError, match="Image 1 is over 2048 bytes"):
        chat.send_message(vision_session, owner, "look", images=[big])
    assert paths.load_path(vision_session) == []


def test_a_text_only_model_refuses_images(session, owner):
    with pytest.raises(chat.ChatError) as refused:
        chat.send_message(session, owner, "look", images=[png()])
    assert refused.value.code == "images_unsupported"
    assert "openai-compatible/scripted-model does not take images" in str(refused.value)
    assert paths.load_path(session) == []


def test_images_do_not_go_with_a_bang_command(vision_session, owner):
    with pytest.raises(chat.ChatError, match="not with a !command"):
        chat.send_message(vision_session, owner, "!ls", images=[png()])


def test_the_send_view_takes_image_files(vision_session, owner, llm):
    client = client_for(owner)
    upload = SimpleUploadedFile("dot.png", png(), content_type="application/octet-stream")
    url = reverse("sessions_app:chat_send", args=[vision_session.pi_id])
    response = client.post(url, {"text": "see", "images": [upload]})
    assert response.status_code == 200, response.content
    vision_session.refresh_from_db()
    content = paths.load_path(vision_session)[-1]["message"]["content"]
    assert [block["type"] for block in content] == ["text", "image"]
    # The type comes from the bytes, not from what the browser said.
    assert content[1]["mimeType"] == "image/png"
    text_only = sessions.create_session(
        owner=owner, cwd=vision_session.cwd, model_profile="scripted"
    )
    refused = client.post(
        reverse("sessions_app:chat_send", args=[text_only.pi_id]),
        {"text": "see", "images": [SimpleUploadedFile("dot.png", png())]},
    )
    assert refused.status_code == 400
    assert "does not take images" in refused.content.decode()


def test_too_many_image_files_are_refused_before_any_is_read(
    vision_session, owner, settings, monkeypatch
):
    from django.core.files.uploadedfile import InMemoryUploadedFile

    def never(*args, **kwargs):
        raise AssertionError("an image was read although there were too many")

    settings.PIWEB_CHAT_IMAGE_MAX_COUNT = 2
    monkeypatch.setattr(InMemoryUploadedFile, "read", never)
    uploads = []
    for number in range(3):  # plain files here: the test client reads them to send them
        upload = io.BytesIO(png())
        upload.name = f"{number}.png"
        uploads.append(upload)
    url = reverse("sessions_app:chat_send", args=[vision_session.pi_id])
    refused = client_for(owner).post(url, {"text": "see", "images": uploads})
    assert refused.status_code == 400
    assert "3 images attached: a message takes at most 2." in refused.content.decode()
    assert paths.load_path(vision_session) == []


def _project_template(workspace: Path, name: str, text: str) -> None:
    folder = workspace / ".pi" / "prompts"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(text)


def test_a_template_is_expanded_and_the_expansion_is_stored_and_sent(
    session, owner, llm, workspace
):
    _project_template(
        workspace, "review", "---\nargument-hint: <file>\n---\nReview $1 ${2:-slowly}."
    )
    llm.push(text("Reviewed."))
    job = chat.send_message(session, owner, '/review "src/app.py" fast')
    session.refresh_from_db()
    [user_entry] = [e for e in paths.load_path(session) if e["message"]["role"] == "user"]
    assert user_entry["message"]["content"] == [{"type": "text", "text": "Review src/app.py fast."}]
    assert jobs.run_job(str(job.pk)) == "done"
    [request] = llm.requests
    assert request["messages"][-1]["content"] in (
        "Review src/app.py fast.",
        [{"type": "text", "text": "Review src/app.py fast."}],
    )


def test_an_unknown_slash_word_is_sent_as_typed(session, owner):
    chat.send_message(session, owner, "/nothing-here at all")
    [entry] = paths.load_path(session)
    assert entry["message"]["content"][0]["text"] == "/nothing-here at all"


def test_an_empty_template_is_refused_and_nothing_is_stored(session, owner, workspace):
    _project_template(workspace, "blank", "---\ndescription: nothing\n---\n")
    with pytest.raises(chat.ChatError, match="expands to nothing"):
        chat.send_message(session, owner, "/blank")
    assert paths.load_path(session) == []


def test_steering_and_follow_up_messages_are_expanded_too(session, owner, workspace):
    _project_template(workspace, "again", "Once more, on $@.")
    job = chat.send_message(session, owner, "start")
    assert job.status == "queued"
    steer = chat.queue_message(session, owner, "/again a b", "steer")
    follow = chat.queue_message(session, owner, "/again 'c d'", "follow_up")
    assert (steer.text, follow.text) == ("Once more, on a b.", "Once more, on c d.")
