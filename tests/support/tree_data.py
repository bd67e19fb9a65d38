"""A branched pi session (v3 JSONL) for the tree tests, with hostile content on purpose.

Shape (ids are pi-style 8 hex chars; `*` = the leaf, the last line of the file):

    e0000001 user "Set up the project"
    e0000002 assistant text + read(README.md)
    e0000003 toolResult read  (README with <script>)
    e0000004 assistant (javascript: link, <script>)        <- branch point, label "checkpoint"
    ├─ e000000a user "Try approach A"
    │  e000000b assistant (python code block)
    │  e000000c bashExecution (ANSI colours, full output file)
    │  e000000d user "A looks wrong"
    │  e000000e assistant "Approach A failed"
    │  e00000f1 label(e0000004 = "checkpoint")
    ├─ e0000b51 branch_summary (fromId e000000e, file lists)
    │  e0000015 user "Try approach C"
    │  e0000016 assistant "Approach C is fine"
    └─ e0000010 user "Try approach B"
       e0000011 assistant thinking + "B works"
       e00000c1 compaction (firstKept e0000010, file lists)
       e0000012 assistant tool-only bash call
       e0000013 toolResult bash (HTML in output, truncation + fullOutputPath)
       e0000014 assistant "Done with B" *
"""

import json

SESSION_ID = "7a1e0000-0000-4000-8000-00000000tree"
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _ts(n: int) -> str:
    return f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z"


def _msg(eid, parent, n, message):
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": _ts(n),
        "message": message,
    }


def _user(eid, parent, n, text, images=False):
    content = [{"type": "text", "text": text}]
    if images:
        content.append({"type": "image", "data": PNG_1PX, "mimeType": "image/png"})
        content.append({"type": "image", "data": PNG_1PX, "mimeType": "image/svg+xml"})
    return _msg(eid, parent, n, {"role": "user", "content": content, "timestamp": n})


def _assistant(eid, parent, n, blocks, stop="stop"):
    return _msg(
        eid,
        parent,
        n,
        {
            "role": "assistant",
            "content": blocks,
            "provider": "scripted",
            "model": "scripted-model",
            "usage": {
                "input": 100,
                "output": 20,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 120,
            },
            "stopReason": stop,
            "timestamp": n,
        },
    )


def branched_entries(full_output_path: str = "/nonexistent/full-output.log") -> list[dict]:
    e = []
    e.append(_user("e0000001", None, 1, "Set up the project", images=True))
    e.append(
        _assistant(
            "e0000002",
            "e0000001",
            2,
            [
                {"type": "text", "text": "I'll look around first."},
                {
                    "type": "toolCall",
                    "id": "call_r1",
                    "name": "read",
                    "arguments": {"path": "README.md"},
                },
            ],
            stop="toolUse",
        )
    )
    e.append(
        _msg(
            "e0000003",
            "e0000002",
            3,
            {
                "role": "toolResult",
                "toolCallId": "call_r1",
                "toolName": "read",
                "content": [
                    {"type": "text", "text": "# Readme\n<script>window.__pwned = 1</script>"}
                ],
                "isError": False,
                "timestamp": 3,
            },
        )
    )
    e.append(
        _assistant(
            "e0000004",
            "e0000003",
            4,
            [
                {
                    "type": "text",
                    "text": "The readme is short. [click me](javascript:window.__pwned=2) "
                    '<script>window.__pwned = 3</script> <img src=x onerror="window.__pwned=4">',
                }
            ],
        )
    )
    # branch A
    e.append(_user("e000000a", "e0000004", 5, "Try approach A"))
    e.append(
        _assistant(
            "e000000b",
            "e000000a",
            6,
            [{"type": "text", "text": "Approach A:\n\n```python\nprint('approach a')\n```"}],
        )
    )
    e.append(
        _msg(
            "e000000c",
            "e000000b",
            7,
            {
                "role": "bashExecution",
                "command": "ls --color",
                "output": "\u001b[34msrc\u001b[0m  \u001b[1;32mrun.sh\u001b[0m <b>not bold</b>\n",
                "exitCode": 0,
                "cancelled": False,
                "truncated": True,
                "fullOutputPath": full_output_path,
                "timestamp": 7,
            },
        )
    )
    e.append(_user("e000000d", "e000000c", 8, "A looks wrong"))
    e.append(
        _assistant("e000000e", "e000000d", 9, [{"type": "text", "text": "Approach A failed."}])
    )
    e.append(
        {
            "type": "label",
            "id": "e00000f1",
            "parentId": "e000000e",
            "timestamp": _ts(10),
            "targetId": "e0000004",
            "label": "checkpoint",
        }
    )
    # branch C (after a branch summary)
    e.append(
        {
            "type": "branch_summary",
            "id": "e0000b51",
            "parentId": "e0000004",
            "timestamp": _ts(11),
            "fromId": "e000000e",
            "summary": "## Goal\nTry approach A.\n\n## Progress\n- [x] Approach A failed",
            "details": {"readFiles": ["README.md"], "modifiedFiles": ["src/a.py"]},
        }
    )
    e.append(_user("e0000015", "e0000b51", 12, "Try approach C"))
    e.append(
        _assistant("e0000016", "e0000015", 13, [{"type": "text", "text": "Approach C is fine."}])
    )
    # branch B, with a compaction
    e.append(_user("e0000010", "e0000004", 14, "Try approach B"))
    e.append(
        _assistant(
            "e0000011",
            "e0000010",
            15,
            [
                {"type": "thinking", "thinking": "Let me think about B carefully."},
                {"type": "text", "text": "B works."},
            ],
        )
    )
    e.append(
        {
            "type": "compaction",
            "id": "e00000c1",
            "parentId": "e0000011",
            "timestamp": _ts(16),
            "summary": "## Goal\nSet up the project with approach B.\n\n## Progress\n### Done\n- [x] B works",
            "firstKeptEntryId": "e0000010",
            "tokensBefore": 5400,
            "details": {"readFiles": ["README.md"], "modifiedFiles": ["src/b.py"]},
        }
    )
    e.append(
        _assistant(
            "e0000012",
            "e00000c1",
            17,
            [
                {
                    "type": "toolCall",
                    "id": "call_b1",
                    "name": "bash",
                    "arguments": {"command": "make test"},
                }
            ],
            stop="toolUse",
        )
    )
    e.append(
        _msg(
            "e0000013",
            "e0000012",
            18,
            {
                "role": "toolResult",
                "toolCallId": "call_b1",
                "toolName": "bash",
                "content": [
                    {
                        "type": "text",
                        "text": 'ok <img src=x onerror="window.__pwned=5">\nall passed',
                    }
                ],
                "details": {
                    "truncation": {
                        "truncated": True,
                        "truncatedBy": "lines",
                        "outputLines": 2,
                        "totalLines": 5000,
                    },
                    "fullOutputPath": full_output_path,
                },
                "isError": False,
                "timestamp": 18,
            },
        )
    )
    e.append(_assistant("e0000014", "e0000013", 19, [{"type": "text", "text": "Done with B."}]))
    return e


def branched_jsonl(
    cwd: str,
    full_output_path: str = "/nonexistent/full-output.log",
    *,
    session_id=SESSION_ID,
    bad_line=True,
) -> bytes:
    header = {"type": "session", "version": 3, "id": session_id, "timestamp": _ts(0), "cwd": cwd}
    lines = [json.dumps(header)]
    entries = branched_entries(full_output_path)
    for i, entry in enumerate(entries):
        lines.append(json.dumps(entry))
        if bad_line and i == 3:
            lines.append("{this is not json")
    return ("\n".join(lines) + "\n").encode()


def import_branched(
    owner,
    cwd: str,
    full_output_path: str = "/nonexistent/full-output.log",
    *,
    session_id=SESSION_ID,
    model_profile="scripted",
):
    """Import the branched session through the store's importer; returns the Session."""
    import io

    from sessions_app.models import Session
    from sessions_app.services.importer import import_jsonl_stream

    data = branched_jsonl(cwd, full_output_path, session_id=session_id)
    report = import_jsonl_stream(io.BytesIO(data), owner, filename="branched.jsonl")
    session = report.session
    if model_profile:
        Session.objects.filter(pk=session.pk).update(model_profile=model_profile)
        session.refresh_from_db()
    return session


def bulk_session(owner, cwd: str, entries: int, branches: int, *, name: str = "bulk"):
    """A session of `entries` entries: a main chain with `branches` side branches spread
    along it (each of equal length), leaf at the end of the main chain. Written with two
    bulk statements (for tests and bench/ui_bench.py)."""
    from sessions_app.models import Entry, Session
    from sessions_app.services import sessions as sessions_service

    session = sessions_service.create_session(owner=owner, cwd=cwd, name=name)
    side_len = 0
    if branches:
        side_len = max(1, (entries // 2) // branches)
    main_len = entries - side_len * branches
    payloads: list[tuple[str, str | None, dict]] = []
    roles = ("user", "assistant", "toolResult", "assistant")

    def payload(i: int, role: str, text: str) -> dict:
        message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": i}
        if role == "toolResult":
            message.update(toolCallId=f"c{i}", toolName="bash", isError=False)
        return {"type": "message", "message": message}

    main_ids = [f"m{i:07x}" for i in range(main_len)]
    for i, pid in enumerate(main_ids):
        role = roles[i % 4]
        payloads.append(
            (
                pid,
                main_ids[i - 1] if i else None,
                payload(i, role, f"main message {i} about topic {i % 37}"),
            )
        )
    step = max(1, main_len // (branches + 1)) if branches else 0
    for b in range(branches):
        at = main_ids[min(main_len - 2, (b + 1) * step)]
        parent = at
        for j in range(side_len):
            pid = f"b{b:04x}{j:05x}"
            payloads.append((pid, parent, payload(j, roles[j % 4], f"branch {b} message {j}")))
            parent = pid
    objs = []
    for seq, (pid, parent, body) in enumerate(payloads):
        full = {
            "type": body["type"],
            "id": pid,
            "parentId": parent,
            "timestamp": _ts(seq % 3600),
            **{k: v for k, v in body.items() if k != "type"},
        }
        objs.append(
            Entry(
                session=session,
                pi_id=pid,
                parent_pi_id=parent,
                seq=seq,
                payload=full,
                **sessions_service.entry_columns(full),
            )
        )
    Entry.objects.bulk_create(objs, batch_size=2000)
    by_pi = dict(Entry.objects.filter(session=session).values_list("pi_id", "pk"))
    for obj in objs:
        obj.pk = by_pi[obj.pi_id]
        obj.parent_id = by_pi.get(obj.parent_pi_id)
    Entry.objects.bulk_update(objs, ["parent"], batch_size=2000)
    Session.objects.filter(pk=session.pk).update(
        leaf_id=by_pi[main_ids[-1]],
        next_seq=len(objs),
        entry_count=len(objs),
        first_message=objs[0].preview,
    )
    session.refresh_from_db()
    return session
