"""selectors/panels/chat.tool_cards: each call of the transcript becomes one card with its
result, status and duration (issue 34)."""

from sessions_app.rendering import render_entry
from sessions_app.selectors.panels.chat import tool_cards


def entry(eid, second, message):
    payload = {
        "type": "message",
        "id": eid,
        "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
        "message": message,
    }
    return {"payload": payload, "id": eid, "role": message["role"], "parts": render_entry(payload)}


def call(eid, second, *calls):
    blocks = [
        {"type": "toolCall", "id": cid, "name": "bash", "arguments": {"command": cmd}}
        for cid, cmd in calls
    ]
    return entry(eid, second, {"role": "assistant", "content": blocks})


def result(eid, second, cid, text, error=False):
    content = [{"type": "text", "text": text}]
    message = {"role": "toolResult", "toolCallId": cid, "toolName": "bash", "content": content}
    return entry(eid, second, {**message, "isError": error})


def cards(entries):
    return [p for e in entries for p in e["parts"] if p.kind == "tool_call"]


def test_results_move_under_their_calls_with_status_and_duration():
    entries = [
        call("a1", 0, ("c1", "make"), ("c2", "make test")),
        result("r1", 3, "c1", "\n  built ok\nmore"),
        result("r2", 15, "c2", "1 failed", error=True),
        entry("a2", 16, {"role": "assistant", "content": [{"type": "text", "text": "Hm."}]}),
    ]
    out = tool_cards(entries)
    assert [e["id"] for e in out] == ["a1", "a2"]  # the result messages joined their calls
    first, second = cards(out)
    assert (first.title, first.extra["status"], first.extra["duration"]) == (
        "$ make",
        "ok",
        "3.0 s",
    )
    assert first.extra["result"].extra["preview"] == "built ok"
    assert (second.extra["status"], second.extra["duration"]) == ("error", "12 s")


def test_a_call_without_a_result_runs_only_while_a_run_is_going():
    entries = [call("a1", 0, ("c1", "sleep 100"))]
    (card,) = cards(tool_cards(entries, running=True))
    assert card.extra["status"] == "running"
    entries = [call("a1", 0, ("c1", "sleep 100"))]
    (card,) = cards(tool_cards(entries, running=False))
    assert card.extra["status"] == "missing"  # stopped: no result will come
    entries = [
        call("a1", 0, ("c1", "x")),
        entry("u1", 5, {"role": "user", "content": "stop that"}),
    ]
    (card,) = cards(tool_cards(entries, running=True))
    assert card.extra["status"] == "missing"  # a later message came without its result
