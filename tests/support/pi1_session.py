"""A small session with the entry types pi 1.x writes, for the page/inspector/search tests.

b0000001 user "Find the flaky test"                 (dropped by b00000e2)
b0000002 assistant → read(tests/test_flaky.py)
b0000003 toolResult read (long file)                (replaced by b00000e1, then b00000e3)
b00000u1 usage (tool_model, note "summarizing the flaky log")
b00000s1 system message: prompt text, section "rules", +lint, -grep
b00000e1 context_edit: replace b0000003 ("first replacement")
b00000e2 context_edit: drop b0000001
b00000e3 context_edit: replace b0000003 ("the file, shortened by a zebra-striped edit")
b00000x1 "hologram" (an entry type newer than piweb)
b0000004 assistant "Fixed: the sleep was too short." *
"""

from __future__ import annotations

import io

from sessions_app.core.jsonl import serialize_entry
from sessions_app.services.importer import import_jsonl_stream

SESSION_ID = "b1b1b1b1-0000-4000-8000-000000000160"
REPLACEMENT = "the file, shortened by a zebra-striped edit"
USAGE_NOTE = "summarizing the flaky log"
SECTION_TEXT = "<rules>Always run the quokka linter</rules>"


def _ts(n: int) -> str:
    return f"2026-02-01T10:00:{n:02d}.000Z"


def entries() -> list[dict]:
    def entry(eid, parent, n, entry_type, **fields):
        return {"type": entry_type, "id": eid, "parentId": parent, "timestamp": _ts(n), **fields}

    def message(eid, parent, n, **message):
        return entry(eid, parent, n, "message", message={**message, "timestamp": n})

    usage = {"input": 1200, "output": 300, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1500}
    usage["cost"] = {"input": 0.0036, "output": 0.0045, "cacheRead": 0, "cacheWrite": 0,
                     "total": 0.0081}  # fmt: skip
    return [
        message("b0000001", None, 1, role="user", content="Find the flaky test"),
        message(
            "b0000002",
            "b0000001",
            2,
            role="assistant",
            content=[
                {
                    "type": "toolCall",
                    "id": "call_1",
                    "name": "read",
                    "arguments": {"path": "tests/test_flaky.py"},
                }
            ],
            api="anthropic-messages",
            provider="anthropic",
            model="claude-sonnet-4-5",
            usage=usage,
            stopReason="toolUse",
        ),
        message(
            "b0000003",
            "b0000002",
            3,
            role="toolResult",
            toolCallId="call_1",
            toolName="read",
            content=[{"type": "text", "text": "def test_flaky():\n    time.sleep(0.01)\n" * 40}],
            isError=False,
            usage=usage,
        ),
        entry(
            "b00000u1",
            "b0000003",
            4,
            "usage",
            kind="tool_model",
            provider="anthropic",
            model="claude-haiku-4-5",
            usage=usage,
            note=USAGE_NOTE,
        ),
        message(
            "b00000s1",
            "b00000u1",
            5,
            role="system",
            content="You may now lint files.",
            sections={"rules": SECTION_TEXT},
            toolsAdded=[
                {
                    "name": "lint",
                    "description": "Run the linter",
                    "parameters": {"type": "object", "properties": {}},
                }
            ],
            toolsRemoved=[{"name": "grep", "description": "Search file contents"}],
        ),
        entry(
            "b00000e1",
            "b00000s1",
            6,
            "context_edit",
            targetId="b0000003",
            replacement={"content": [{"type": "text", "text": "first replacement"}]},
        ),
        entry("b00000e2", "b00000e1", 7, "context_edit", targetId="b0000001", replacement=None),
        entry(
            "b00000e3",
            "b00000e2",
            8,
            "context_edit",
            targetId="b0000003",
            replacement={"content": [{"type": "text", "text": REPLACEMENT}]},
        ),
        entry("b00000x1", "b00000e3", 9, "hologram", payload={"beam": "violet-octopus"}),
        entry(
            "b00000c1",
            "b0000002",
            11,
            "compaction",
            summary="Looked for the flaky test.",
            firstKeptEntryId="b00000c1",
            tokensBefore=5400,
            usage=usage,
            systemMessage={
                "role": "system",
                "content": "Restated prompt",
                "sections": {"rules": "<rules>Restated rules</rules>"},
                "timestamp": 11,
            },
        ),
        message("b0000005", "b00000c1", 12, role="user", content="Carry on from the summary"),
        message(
            "b0000004",
            "b00000x1",
            10,
            role="assistant",
            content=[{"type": "text", "text": "Fixed: the sleep was too short."}],
            api="anthropic-messages",
            provider="anthropic",
            model="claude-sonnet-4-5",
            usage=usage,
            stopReason="stop",
        ),
    ]


def jsonl_bytes() -> bytes:
    header = {"type": "session", "version": 3, "id": SESSION_ID, "timestamp": _ts(0),
              "cwd": "/work/pi1"}  # fmt: skip
    return "".join(serialize_entry(e) + "\n" for e in [header, *entries()]).encode()


def import_pi1_session(owner, session_id: str = SESSION_ID):
    data = jsonl_bytes().replace(SESSION_ID.encode(), session_id.encode())
    return import_jsonl_stream(io.BytesIO(data), owner, filename="pi1.jsonl").session
