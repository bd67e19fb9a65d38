"""pi's tools, run for real on a temporary workspace (no Django)."""

import base64
import hashlib
import json
import os
import threading
import time

import psutil
import pytest

from sessions_app.agent.paths import Workspace, WorkspaceError, check_cwd
from sessions_app.agent.shell import run_shell
from sessions_app.agent.signals import AbortSignal
from sessions_app.agent.tools import ToolContext, execute_tool

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "outside-sibling").mkdir()
    return root


@pytest.fixture
def ctx(ws, tmp_path):
    return ToolContext(Workspace(str(ws)), str(tmp_path / "artifacts"), bash_timeout=30)


def run(ctx, name, args):
    return execute_tool(name, args if isinstance(args, str) else dict(args), ctx)


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


# --- read ----------------------------------------------------------------------------------


def test_read_offset_limit_and_continuation(ctx, ws):
    (ws / "f.txt").write_text("\n".join(f"line {i}" for i in range(1, 11)))
    assert run(ctx, "read", {"path": "f.txt", "offset": 3, "limit": 2}).text == (
        "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"
    )
    result = run(ctx, "read", {"path": "f.txt", "offset": 50})
    assert result.is_error and result.text == "Offset 50 is beyond end of file (10 lines total)"


def test_read_head_truncation_notice(ctx, ws):
    (ws / "big.txt").write_text("\n".join(f"row {i}" for i in range(1, 3001)))
    result = run(ctx, "read", {"path": "big.txt"})
    assert result.text.endswith("\n\n[Showing lines 1-2000 of 3000. Use offset=2001 to continue.]")
    assert result.details["truncation"]["truncatedBy"] == "lines"
    (ws / "wide.txt").write_text(("x" * 100 + "\n") * 1000)
    result = run(ctx, "read", {"path": "wide.txt"})
    assert result.text.endswith(
        "[Showing lines 1-506 of 1001 (50.0KB limit). Use offset=507 to continue.]"
    )


def test_read_first_line_too_long(ctx, ws):
    (ws / "one.txt").write_text("y" * 60_000 + "\nshort\n")
    result = run(ctx, "read", {"path": "one.txt"})
    assert result.text == (
        "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' one.txt | head -c 51200]"
    )
    assert result.details["truncation"]["firstLineExceedsLimit"] is True


def test_read_image_returns_an_image_block(ctx, ws):
    (ws / "dot.png").write_bytes(PNG)
    result = run(ctx, "read", {"path": "dot.png"})
    assert result.content[0] == {"type": "text", "text": "Read image file [image/png]"}
    assert result.content[1]["type"] == "image" and result.content[1]["mimeType"] == "image/png"
    assert base64.b64decode(result.content[1]["data"]) == PNG


def test_read_invalid_utf8_and_missing(ctx, ws):
    (ws / "bad.txt").write_bytes(b"ok \xff\xfe end")
    assert run(ctx, "read", {"path": "bad.txt"}).text == "ok \ufffd\ufffd end"
    result = run(ctx, "read", {"path": "nope.txt"})
    assert result.is_error and result.text == "File not found: nope.txt"


# --- edit / write --------------------------------------------------------------------------------


def test_write_creates_parent_directories(ctx, ws):
    result = run(ctx, "write", {"path": "deep/er/file.txt", "content": "héllo"})
    assert result.text == "Successfully wrote 5 bytes to deep/er/file.txt"
    assert (ws / "deep/er/file.txt").read_text() == "héllo"


# --- grep / find / ls ------------------------------------------------------------------------------


def test_grep_regex_glob_gitignore_context(ctx, ws):
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.txt").write_text("needle\n")
    (ws / "x.log").write_text("needle\n")
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("one\nneedle = 1\nthree\n")
    (ws / "src" / "b.txt").write_text("Needle\n")
    (ws / "bin.dat").write_bytes(b"\x00needle")
    assert run(ctx, "grep", {"pattern": "needle"}).text == "src/a.py:2: needle = 1"
    assert run(ctx, "grep", {"pattern": "needle", "ignoreCase": True}).text == (
        "src/a.py:2: needle = 1\nsrc/b.txt:1: Needle"
    )
    assert run(ctx, "grep", {"pattern": "needle", "glob": "*.txt", "ignoreCase": True}).text == (
        "src/b.txt:1: Needle"
    )
    assert run(ctx, "grep", {"pattern": "needle", "context": 1}).text == (
        "src/a.py-1- one\nsrc/a.py:2: needle = 1\nsrc/a.py-3- three"
    )
    assert run(ctx, "grep", {"pattern": "needle", "path": "src/a.py"}).text == "a.py:2: needle = 1"
    assert run(ctx, "grep", {"pattern": "nothing"}).text == "No matches found"
    assert run(ctx, "grep", {"pattern": "(", "literal": True}).text == "No matches found"
    bad = run(ctx, "grep", {"pattern": "("})
    assert bad.is_error and "Invalid regex" in bad.text


def test_grep_caps_matches_and_cuts_long_lines(ctx, ws):
    (ws / "many.txt").write_text("hit\n" * 150 + "hit " + "z" * 600 + "\n")
    result = run(ctx, "grep", {"pattern": "hit"})
    assert result.text.count("\n") == 101  # 100 matches, a blank line, the notice
    assert result.text.endswith(
        "\n\n[100 matches limit reached. Use limit=200 for more, or refine pattern]"
    )
    assert result.details == {"matchLimitReached": 100}
    long = run(ctx, "grep", {"pattern": "z+", "limit": 5})
    assert long.text.startswith("many.txt:151: hit " + "z" * 496 + "... [truncated]")
    assert long.text.endswith(
        "[Some lines truncated to 500 chars. Use read tool to see full lines]"
    )


def test_find_glob_gitignore_and_cap(ctx, ws):
    (ws / ".gitignore").write_text("node_modules/\n")
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "x.js").write_text("")
    (ws / "src" / "deep").mkdir(parents=True)
    (ws / "src" / "deep" / "a.js").write_text("")
    (ws / "b.js").write_text("")
    assert run(ctx, "find", {"pattern": "*.js"}).text == "b.js\nsrc/deep/a.js"
    assert run(ctx, "find", {"pattern": "src/**/*.js"}).text == "src/deep/a.js"
    assert run(ctx, "find", {"pattern": "*.rs"}).text == "No files found matching pattern"
    for i in range(1005):
        (ws / f"f{i:04}.txt").write_text("")
    result = run(ctx, "find", {"pattern": "*.txt"})
    assert result.text.count("\n") == 1001
    assert result.text.endswith(
        "[1000 results limit reached. Use limit=2000 for more, or refine pattern]"
    )


def test_ls_sorted_dirs_marked_and_capped(ctx, ws):
    (ws / "Beta").mkdir()
    (ws / "alpha.txt").write_text("")
    (ws / ".hidden").write_text("")
    assert run(ctx, "ls", {}).text == ".hidden\nalpha.txt\nBeta/\noutside-sibling/"
    for i in range(510):
        (ws / "Beta" / f"e{i:03}").write_text("")
    result = run(ctx, "ls", {"path": "Beta"})
    assert result.text.endswith("\n\n[500 entries limit reached. Use limit=1000 for more]")
    assert run(ctx, "ls", {"path": "alpha.txt"}).text.startswith("Not a directory")
    (ws / "empty").mkdir()
    assert run(ctx, "ls", {"path": "empty"}).text == "(empty directory)"


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


# --- bash ----------------------------------------------------------------------------------------


def test_bash_exit_code_stderr_and_empty_output(ctx):
    assert run(ctx, "bash", {"command": "true"}).text == "(no output)"
    result = run(ctx, "bash", {"command": "echo out; echo err >&2; exit 4"})
    assert result.is_error and result.text == "out\nerr\n\n\nCommand exited with code 4"


def test_bash_timeout_kills_the_group(ctx, ws):
    started = time.monotonic()
    result = run(
        ctx, "bash", {"command": "echo before; sleep 30.101 & echo $! > kid; wait", "timeout": 1}
    )
    assert time.monotonic() - started < 10
    assert result.is_error and result.text == "before\n\n\nCommand timed out after 1 seconds"
    assert (ws / "kid").read_text().strip().isdigit()  # the background process had started
    assert wait_gone("30.101")


def wait_gone(marker, timeout=5.0):
    """No process on the host has ``marker`` in its command line (pids inside the
    sandbox are those of its own PID namespace, so they cannot be looked up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [
            p
            for p in psutil.process_iter(["cmdline", "status"])
            if marker in " ".join(p.info["cmdline"] or [])
            and p.info["status"] != psutil.STATUS_ZOMBIE
        ]
        if not alive:
            return True
        time.sleep(0.05)
    return False


def test_bash_abort_kills_the_whole_process_group(ctx, ws):
    snapshots = []
    ctx.on_bash_snapshot = snapshots.append
    timer = threading.Timer(1.0, ctx.abort.trigger)
    timer.start()
    result = run(
        ctx, "bash", {"command": "echo go; (sleep 40.202; echo late) & echo $! > kid; sleep 40"}
    )
    assert result.is_error and result.text == "go\n\n\nCommand aborted"
    assert (ws / "kid").read_text().strip().isdigit()
    assert wait_gone("40.202")
    assert snapshots and snapshots[-1].content == "go\n"


def test_bash_truncation_spill_file_is_byte_identical(ctx, tmp_path):
    command = "for i in $(seq 1 30000); do printf 'line %05d \\xff\\n' $i; done"
    result = run(ctx, "bash", {"command": command})
    path = result.details["fullOutputPath"]
    assert path.startswith(str(tmp_path / "artifacts"))
    expected = b"".join(b"line %05d \xff\n" % i for i in range(1, 30001))
    with open(path, "rb") as fh:
        assert hashlib.sha256(fh.read()).hexdigest() == hashlib.sha256(expected).hexdigest()
    # pi 0.80.2: the final newline starts no extra line (30000 lines).
    assert result.text.endswith(f"\n\n[Showing lines 28001-30000 of 30000. Full output: {path}]")
    assert "line 30000 \ufffd" in result.text


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
