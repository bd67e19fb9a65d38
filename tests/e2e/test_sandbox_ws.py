"""The escape attempts of issue 12, end to end: an ordinary (non-staff) user's session,
the chat's `!!cmd` and the agent's tools run by the real Celery worker, events watched
on the real websocket. Nothing of the server may reach the browser or the tree."""

import json
import os
from pathlib import Path

import pytest

from tests.support.agent_runs import EventLog, messages, new_session, send, wait_run
from tests.support.scripted_llm import text, tool_calls
from tests.support.web import client_for

ALL_TOOL_NAMES = ("read", "bash", "edit", "write", "grep", "find", "ls")

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker,
    pytest.mark.embedded,
    pytest.mark.usefixtures("bwrap_required"),
]


def test_escapes_through_the_chat_fail_and_leak_nothing(
    worker, asgi_server, llm, make_user, workspace, settings
):
    user = make_user()
    assert not user.is_staff and not user.is_superuser
    session = new_session(user, workspace)
    # Every tool, grep/find/ls included (pi's default set has only read, bash, edit, write).
    session.settings = {**(session.settings or {}), "tools": list(ALL_TOOL_NAMES)}
    session.save(update_fields=["settings"])
    var = os.fspath(settings.VAR_DIR)
    secret = Path(var, "secret_key").read_text().strip()
    port = asgi_server.url.rsplit(":", 1)[1].strip("/")
    probe = (
        'python3 -c "import socket\n'
        f"for port in (5432, 6379, {port}):\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', port), 2); print('OPEN', port)\n"
        "    except OSError: print('CLOSED', port)\""
    )
    llm.push(
        tool_calls(
            [
                ("bash", {"command": f"cat {var}/secret_key; ls {var}; id -u"}),
                ("bash", {"command": probe}),
                ("read", {"path": f"{var}/secret_key"}),
                ("bash", {"command": "ln -s /proc/1/environ env-link; ln -s / root-link"}),
            ]
        ),
        tool_calls([("read", {"path": "root-link/etc/hostname"}), ("ls", {"path": "root-link"})]),
        text("Nothing there."),
    )
    client = client_for(user)
    with EventLog(asgi_server, session, user) as log:
        command = f"!!cat {var}/secret_key; ls {var}; id -u; echo > {var}/pwned; echo done"
        assert send(client, session, command).status_code == 200
        assert log.wait_for("run_end", timeout=60)
        assert wait_run(session).status == "done"
        assert send(client, session, "look around").status_code == 200
        assert log.wait_for("run_end", lambda d: len(log.of("run_end")) >= 2, timeout=90)
        assert wait_run(session).status == "done"
        streamed = json.dumps(log.events)
    assert secret not in streamed
    assert not os.path.exists(os.path.join(var, "pwned"))

    stored = messages(session)
    everything = json.dumps(stored)
    assert secret not in everything
    bash = stored[0]
    assert bash["role"] == "bashExecution" and bash["excludeFromContext"] is True
    lines = bash["output"].splitlines()
    assert "1000" in lines and "done" in lines  # ran, unprivileged, and saw nothing
    assert f"cat: {var}/secret_key: No such file or directory" in bash["output"]
    results = [m for m in stored if m["role"] == "toolResult"]
    texts = [m["content"][0]["text"] for m in results]
    assert "No such file or directory" in texts[0] and "1000" in texts[0]
    assert texts[1].split() == ["CLOSED", "5432", "CLOSED", "6379", "CLOSED", port]
    assert results[2]["isError"] and "outside the workspace" in texts[2]
    assert results[4]["isError"] and "outside the workspace" in texts[4]
    assert results[5]["isError"] and "outside the workspace" in texts[5]
    assert stored[-1]["content"][0]["text"] == "Nothing there."
