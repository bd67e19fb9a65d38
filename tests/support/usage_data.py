"""Sessions with usage for the usage tests: every usage source, with costs and days."""

from __future__ import annotations

from sessions_app.services.importer import import_jsonl_stream
from tests.support.pi_files import as_file, jsonl_text


def usage(i=0, o=0, cr=0, cw=0, cost=0.0, total=None):
    """A usage object; its totalTokens is the sum unless `total` says otherwise."""
    return {
        "input": i,
        "output": o,
        "cacheRead": cr,
        "cacheWrite": cw,
        "totalTokens": total if total is not None else i + o + cr + cw,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost},
    }


def assistant(eid, provider, model, usage, **extra):
    """An assistant message entry of `provider`/`model`, with `usage` unless it is None."""
    message = {"role": "assistant", "content": [], "provider": provider, "model": model}
    if usage is not None:
        message["usage"] = usage
    message.update(extra)
    return {
        "type": "message",
        "id": eid,
        "timestamp": "2026-01-02T10:00:00.000Z",
        "message": message,
    }


def costly_entries() -> list[dict]:
    """A chain over two days: a user turn, two assistant models, a tool result with
    usage, a usage entry, a compaction and a branch summary with usage, a model change."""

    def entry(eid, parent, ts, etype="message", **fields):
        return {"type": etype, "id": eid, "parentId": parent, "timestamp": ts, **fields}

    def assistant(eid, parent, ts, model, u, **extra):
        body = {
            "role": "assistant",
            "content": [{"type": "text", "text": f"answer {eid}"}],
            "provider": "anthropic",
            "model": model,
            "usage": u,
            "stopReason": "stop",
            "timestamp": 1,
        }
        body.update(extra)
        return entry(eid, parent, ts, message=body)

    day1, day2 = "2026-01-10T10:00:0{}.000Z", "2026-01-11T09:00:0{}.000Z"
    return [
        entry(
            "e0000001",
            None,
            day1.format(0),
            message={"role": "user", "content": "first question", "timestamp": 1},
        ),
        assistant(
            "e0000002",
            "e0000001",
            day1.format(1),
            "claude-sonnet-4-5",
            usage(1000, 200, 3000, 500, cost=0.25),
        ),
        entry(
            "e0000003",
            "e0000002",
            day1.format(2),
            message={
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "read",
                "content": [{"type": "text", "text": "ok"}],
                "isError": False,
                "usage": usage(40, 10, cost=0.01),
                "timestamp": 1,
            },
        ),
        entry(
            "e0000004",
            "e0000003",
            day1.format(3),
            "usage",
            kind="tool_model",
            provider="openai",
            model="gpt-5.1-codex",
            usage=usage(300, 30, cost=0.05),
        ),
        entry(
            "e0000005",
            "e0000004",
            day1.format(4),
            "compaction",
            summary="sum",
            firstKeptEntryId="e0000004",
            tokensBefore=4700,
            usage=usage(2000, 300, cost=0.02),
        ),
        entry(
            "e0000006",
            "e0000005",
            day2.format(0),
            "model_change",
            provider="anthropic",
            modelId="claude-opus-4-5",
        ),
        assistant(
            "e0000007",
            "e0000006",
            day2.format(1),
            "claude-opus-4-5",
            usage(500, 100, 4000, 0, cost=1.5),
        ),
        entry(
            "e0000008",
            "e0000007",
            day2.format(2),
            "branch_summary",
            fromId="e0000002",
            summary="branch",
            usage=usage(100, 50, cost=0.005),
        ),
        assistant(
            "e0000009",
            "e0000008",
            day2.format(3),
            "router-auto",
            usage(10, 5, cost=0.125),
            responseModel="claude-haiku-4-5",
        ),
    ]


def import_costly(owner, session_id="aaaaaaaa-0000-4000-8000-000000000001", cwd="/work/costly"):
    header = {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": "2026-01-10T09:59:00.000Z",
        "cwd": cwd,
    }
    text = jsonl_text(header, costly_entries())
    return import_jsonl_stream(as_file(text), owner, filename="costly.jsonl").session
