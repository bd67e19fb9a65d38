"""agent/tools/: the registry's one entry point, run for real on a temporary workspace (no
Django): containment for every tool, arguments checked against the schema. Each tool's
own cases are in tests/unit/test_tool_<name>.py."""

import json
import os

import pytest

from sessions_app.agent.paths import Workspace, WorkspaceError, check_cwd
from sessions_app.agent.shell import run_shell
from sessions_app.agent.signals import AbortSignal
from tests.support.tool_runs import run, tool_context, tool_workspace


@pytest.fixture
def ws(tmp_path):
    return tool_workspace(tmp_path)


@pytest.fixture
def ctx(ws, tmp_path):
    return tool_context(ws, tmp_path)


# --- containment ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["../x", "../../etc/passwd", "/etc/passwd", "sub/../../x", "~/.bashrc"],
)
def test_paths_outside_the_workspace_are_refused(ctx, ws, path):
    result = run(ctx, "read", {"path": path})
    assert result.is_error
    assert "outside the workspace" in result.text


def test_symlinks_that_escape_are_refused(ctx, ws, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    os.symlink(secret, ws / "link.txt")
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    os.symlink(outside_dir, ws / "linkdir")
    assert "outside the workspace" in run(ctx, "read", {"path": "link.txt"}).text
    result = run(ctx, "write", {"path": "linkdir/new.txt", "content": "x"})
    assert result.is_error and "outside the workspace" in result.text
    assert not (outside_dir / "new.txt").exists()
    result = run(ctx, "edit", {"path": "link.txt", "oldText": "top", "newText": "no"})
    assert result.is_error and secret.read_text() == "top secret"
    assert run(ctx, "ls", {"path": "linkdir"}).is_error
    # grep and find never follow them either
    assert "secret" not in run(ctx, "grep", {"pattern": "secret"}).text
    assert "new.txt" not in run(ctx, "find", {"pattern": "*"}).text


def test_symlink_inside_the_workspace_is_fine(ctx, ws):
    (ws / "real.txt").write_text("inside\n")
    os.symlink(ws / "real.txt", ws / "alias.txt")
    assert run(ctx, "read", {"path": "alias.txt"}).text == "inside\n"


def test_check_cwd(tmp_path):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    assert check_cwd(str(root / "a"), [root]) == str((root / "a").resolve())
    with pytest.raises(WorkspaceError, match="outside the allowed workspace roots"):
        check_cwd("/etc", [root])
    with pytest.raises(WorkspaceError):
        check_cwd(str(root / "a" / ".." / ".."), [root])
    with pytest.raises(WorkspaceError, match="does not exist"):
        check_cwd(str(root / "missing"), [root])
    with pytest.raises(WorkspaceError):
        Workspace(str(root)).resolve("a\x00b")


# --- arguments --------------------------------------------------------------------------------------


def test_schema_invalid_and_unparsable_arguments_are_error_results(ctx):
    missing = run(ctx, "read", {})
    assert missing.is_error and "'path' is a required property" in missing.text
    wrong = run(ctx, "bash", {"command": ["ls"]})
    assert wrong.is_error and wrong.text.startswith('Validation failed for tool "bash"')
    negative = run(ctx, "bash", {"command": "true", "timeout": -1})
    assert negative.is_error
    broken = run(ctx, "read", '{"path": ')
    assert broken.is_error and broken.text.startswith("Invalid JSON in tool arguments")
    array = run(ctx, "read", "[1, 2]")
    assert array.is_error and "must be a JSON object" in array.text
    assert run(ctx, "teleport", {}).text == "Tool teleport not found"


# --- the shell under the bash tool ----------------------------------------------------------


def test_run_shell_snapshots_are_throttled_and_bounded(tmp_path):
    snaps = []
    outcome = run_shell(
        "yes 0123456789 | head -c 30000000",
        str(tmp_path),
        output_path=str(tmp_path / "full.log"),
        on_snapshot=snaps.append,
        snapshot_interval=0.1,
    )
    assert outcome.exit_code == 0
    assert os.path.getsize(tmp_path / "full.log") == 30_000_000
    assert len(snaps) <= outcome.duration * 10 + 3
    assert all(len(s.content.encode()) <= 51200 for s in snaps)
    assert snaps[-1].total_bytes == 30_000_000


def test_run_shell_env_has_no_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://user:pw@db/x")
    monkeypatch.setenv("PIWEB_LLM_API_KEY", "sk-secret")
    outcome = run_shell("env", str(tmp_path))
    assert "sk-secret" not in outcome.result.text and "DATABASE_URL" not in outcome.result.text


def test_abort_signal_callbacks():
    signal = AbortSignal()
    seen = []
    remove = signal.add_callback(lambda: seen.append(1))
    signal.add_callback(lambda: seen.append(2))
    remove()
    signal.trigger()
    signal.trigger()
    assert seen == [2]
    signal.add_callback(lambda: seen.append(3))  # already aborted: runs at once
    assert seen == [2, 3]


# --- OpenAI conversion (pi 0.80.2's, in agent/providers/openai_completions.py) ---------------

MODEL = {"id": "m", "api": "openai-completions", "provider": "p", "baseUrl": "http://x/v1",
         "reasoning": False, "input": ["text", "image"]}  # fmt: skip


def _convert(system, msgs):
    from sessions_app.agent.providers.openai_completions import convert_messages, get_compat

    return convert_messages(MODEL, system, msgs, get_compat(MODEL))


def test_openai_messages_from_pi_shapes():
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "QUJD", "mimeType": "image/png"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Reading."},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}},
            {"type": "toolCall", "id": "c2", "name": "read", "arguments": {"path": "b"}},
        ], "stopReason": "toolUse", "api": "openai-completions", "provider": "p", "model": "m"},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "A"}], "isError": False},
        {"role": "assistant", "content": [{"type": "toolCall", "id": "c9", "name": "bash", "arguments": {}}], "stopReason": "aborted"},
        {"role": "user", "content": "next"},
    ]  # fmt: skip
    out = _convert("SYS", msgs)
    assert out[0] == {"role": "system", "content": "SYS"}
    assert out[1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,QUJD"},
    }
    assert out[2]["content"] == "Reading."
    assert [c["id"] for c in out[2]["tool_calls"]] == ["c1", "c2"]
    assert json.loads(out[2]["tool_calls"][0]["function"]["arguments"]) == {"path": "a"}
    assert out[3] == {"role": "tool", "content": "A", "tool_call_id": "c1"}
    # c2 never got a result: a synthetic one keeps the request valid.
    assert out[4] == {"role": "tool", "content": "No result provided", "tool_call_id": "c2"}
    # The aborted message is left out.
    assert out[5] == {"role": "user", "content": "next"}
    assert len(out) == 6


def test_tool_result_images_follow_as_a_user_message():
    msgs = [
        {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "p.png"}}], "stopReason": "toolUse"},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [
            {"type": "text", "text": "Read image file [image/png]"},
            {"type": "image", "data": "QUJD", "mimeType": "image/png"},
        ], "isError": False},
    ]  # fmt: skip
    out = _convert("", msgs)
    assert out[1] == {
        "role": "tool",
        "content": "Read image file [image/png]",
        "tool_call_id": "c1",
    }
    assert out[2]["role"] == "user"
    assert out[2]["content"][1]["image_url"]["url"] == "data:image/png;base64,QUJD"


def test_bash_snapshots_carry_no_server_path(tmp_path):
    from sessions_app.agent.paths import output_file_factory
    from sessions_app.agent.shell import run_shell, snapshot_event

    events = []
    outcome = run_shell(
        "seq 1 30000",
        str(tmp_path),
        output_path=output_file_factory(str(tmp_path / "art"), "bash"),
        on_snapshot=lambda snap: events.append(snapshot_event(snap)),
    )
    assert outcome.result.full_output_path  # the output was long enough to spill to a file
    assert events
    for event in events:
        assert "full_output_path" not in event
        assert str(tmp_path) not in json.dumps(event)
    assert any(event["has_full_output"] for event in events)
