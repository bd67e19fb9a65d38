"""Builders for session entries used by the context/tree unit tests, and the headings of
pi's structured summaries."""

from __future__ import annotations

import random
from datetime import UTC
from typing import Any

BASE_MS = 1_748_779_200_000  # 2025-06-01T12:00:00Z

# The headings of a compaction summary, in pi's order.
SUMMARY_HEADINGS = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
]


def iso(ms: int) -> str:
    from datetime import datetime

    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def entry(
    eid: str, parent: str | None, etype: str = "message", ms: int | None = None, **fields: Any
) -> dict:
    ms = BASE_MS + int(eid.strip("abcdefghijklmnopqrstuvwxyz_-") or 0) * 1000 if ms is None else ms
    e = {"type": etype, "id": eid, "parentId": parent, "timestamp": iso(ms)}
    e.update(fields)
    return e


def user(eid, parent, text="hi", **kw):
    return entry(eid, parent, message={"role": "user", "content": text, "timestamp": 1}, **kw)


def assistant(
    eid, parent, text="ok", tool_calls=(), model="m1", stop="stop", usage_total=100, **kw
):
    content = [{"type": "text", "text": text}] if text else []
    for i, (name, args) in enumerate(tool_calls):
        content.append({"type": "toolCall", "id": f"{eid}-t{i}", "name": name, "arguments": args})
    msg = {
        "role": "assistant",
        "content": content,
        "provider": "prov",
        "model": model,
        "usage": {
            "input": usage_total,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": usage_total,
        },
        "stopReason": stop,
        "timestamp": 2,
    }
    return entry(eid, parent, message=msg, **kw)


def tool_result(eid, parent, text="result", **kw):
    msg = {
        "role": "toolResult",
        "toolCallId": "x",
        "toolName": "read",
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "timestamp": 3,
    }
    return entry(eid, parent, message=msg, **kw)


def random_path(rng: random.Random, n: int, prefix: str = "e") -> list[dict]:
    """A root-first path with every entry type mixed in."""
    out: list[dict] = []
    parent = None
    ids: list[str] = []
    for i in range(n):
        eid = f"{prefix}{i}"
        r = rng.random()
        if r < 0.3:
            e = user(eid, parent, text="u" * rng.randint(0, 300))
        elif r < 0.55:
            calls = [("read", {"path": f"f{rng.randint(0, 5)}.py"})] if rng.random() < 0.5 else []
            e = assistant(eid, parent, text="a" * rng.randint(0, 300), tool_calls=calls)
        elif r < 0.7:
            e = tool_result(eid, parent, text="r" * rng.randint(0, 500))
        elif r < 0.75:
            e = entry(
                eid,
                parent,
                "custom_message",
                customType="x",
                content="cm" * rng.randint(0, 50),
                display=True,
            )
        elif r < 0.8:
            e = entry(eid, parent, "branch_summary", fromId="zz", summary="s" * rng.randint(0, 20))
        elif r < 0.85 and ids:
            e = entry(
                eid,
                parent,
                "compaction",
                summary="S",
                firstKeptEntryId=rng.choice(ids),
                tokensBefore=10,
            )
        elif r < 0.9:
            e = entry(eid, parent, "model_change", provider="p", modelId=f"m{i}")
        elif r < 0.93:
            e = entry(
                eid, parent, "thinking_level_change", thinkingLevel=rng.choice(["low", "high"])
            )
        elif r < 0.96:
            e = entry(
                eid,
                parent,
                "message",
                message={
                    "role": "bashExecution",
                    "command": "ls",
                    "output": "o" * rng.randint(0, 50),
                    "exitCode": rng.choice([0, 1, None]),
                    "cancelled": False,
                    "truncated": False,
                    "timestamp": 4,
                },
            )
        else:
            e = entry(eid, parent, "label", targetId=rng.choice(ids) if ids else eid, label="L")
        out.append(e)
        ids.append(eid)
        parent = eid
    return out


def turn(i, parent, role="user", text="hi", ts=None, **message):
    """A message entry of `role` saying `text` (a tool result with `toolName=`)."""
    content = text if role == "user" else [{"type": "text", "text": text}]
    return {
        "type": "message",
        "id": i,
        "parentId": parent,
        "timestamp": ts or f"2026-01-01T00:00:{len(i):02d}.000Z",
        "message": {"role": role, "content": content, **message},
    }


def two_branches():
    """a -> b -> c and a -> d -> e: two branches from the root, a second apart."""
    return [
        turn("a", None),
        turn("b", "a", "assistant", "one", ts="2026-01-01T00:00:01.000Z"),
        turn("c", "b", "user", "two", ts="2026-01-01T00:00:02.000Z"),
        turn("d", "a", "assistant", "other", ts="2026-01-01T00:00:03.000Z"),
        turn("e", "d", "user", "more", ts="2026-01-01T00:00:04.000Z"),
    ]
