"""pi session files for the store tests: real pi sessions from the golden vectors."""

from __future__ import annotations

import io
import json
from pathlib import Path

from sessions_app.core.jsonl import serialize_entry
from sessions_app.core.messages import build_session_context
from sessions_app.selectors import paths
from tests.conformance.golden import load_golden

FIXTURES = ("before-compaction.jsonl", "large-session.jsonl")


def jsonl_text(header: dict, entries: list[dict]) -> str:
    return "".join(serialize_entry(item) + "\n" for item in [header, *entries])


def fixture(name: str) -> tuple[dict, list[dict]]:
    """(header, entries) of one of pi's own test sessions (migrated to v3 by pi)."""
    golden = load_golden("cutpoint")
    return golden["fixtureHeaders"][name]["header"], golden["entrySets"][name]


def fixture_bytes(name: str) -> bytes:
    header, entries = fixture(name)
    return jsonl_text(header, entries).encode("utf-8")


def write_fixture(directory: Path, name: str) -> Path:
    path = directory / name
    path.write_bytes(fixture_bytes(name))
    return path


def as_file(data: bytes | str) -> io.BytesIO:
    return io.BytesIO(data.encode("utf-8") if isinstance(data, str) else data)


def header(session_id: str = "11111111-2222-3333-4444-555555555555", **extra) -> dict:
    return {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/work/project",
        **extra,
    }


def message(eid: str, parent: str | None, role: str = "user", text: str = "hi", ts: int = 1):
    body: dict = {"role": role, "timestamp": ts}
    if role == "assistant":
        body.update(
            content=[{"type": "text", "text": text}],
            provider="p",
            model="m",
            stopReason="stop",
        )
    else:
        body["content"] = text
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": f"2026-01-01T00:00:{ts % 60:02d}.000Z",
        "message": body,
    }


def chain(n: int, prefix: str = "e") -> list[dict]:
    """`n` messages in one line, user and assistant in turn (ids `<prefix>0000`, …)."""
    out, parent = [], None
    for i in range(n):
        eid = f"{prefix}{i:04d}"
        out.append(message(eid, parent, "user" if i % 2 == 0 else "assistant", f"m{i}", i))
        parent = eid
    return out


def do_import(data, owner, **kwargs):
    """Import `data` (bytes or text) as one uploaded file named test.jsonl."""
    from sessions_app.services.importer import import_jsonl_stream

    return import_jsonl_stream(as_file(data), owner, filename="test.jsonl", **kwargs)


def an_earlier_session(owner):
    """One small imported session of `owner`, so their sessions list shows the list and
    its forms rather than the first-run state of someone with no session."""
    import uuid

    lines = [header(str(uuid.uuid4())), message("f1", None, text="an earlier session")]
    return do_import(jsonl_text(lines[0], lines[1:]), owner, after_commit="off")


def leaves(entries: list[dict]) -> list[str]:
    parents = {e.get("parentId") for e in entries}
    return [e["id"] for e in entries if e["id"] not in parents]


def assert_context_matches_core(session, entries: list[dict], leaf_ids) -> None:
    """The context built from the DB path equals the pure core's on the same entries."""
    for leaf_id in leaf_ids:
        path = paths.load_path(session, leaf_id)
        from_db = build_session_context(path, leaf_id)
        expected = build_session_context(entries, leaf_id)
        assert from_db == expected, f"context differs at leaf {leaf_id}"
        # and the compaction-aware loader that reads only what the context needs
        assert paths.load_context(session, leaf_id) == expected, f"load_context at {leaf_id}"


def line(entry: dict) -> bytes:
    return (serialize_entry(entry) + "\n").encode()


def chain_lines(count: int, start: int = 0) -> list[bytes]:
    out = []
    for n in range(start, start + count):
        parent = f"{n - 1:08x}" if n else None
        role = "user" if n % 2 == 0 else "assistant"
        out.append(line(message(f"{n:08x}", parent, role, f"text number {n}", ts=n)))
    return out


FOLLOWED_SID = "0199aaaa-bbbb-7ccc-8ddd-000000000001"


def session_file(folder, count: int = 2, sid: str = FOLLOWED_SID):
    """A pi session file of ``count`` chained messages in pi's ``--<cwd>--`` folder layout."""
    path = folder / "--work-project--" / f"2026-01-01T00-00-00-000Z_{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(line(header(sid)) + b"".join(chain_lines(count)))
    return path


def append(path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def import_lines(owner, lines: list[dict]):
    """Import `lines` (header first) as one uploaded file; the importer's report."""
    from sessions_app.services.importer import import_jsonl_stream

    data = "".join(json.dumps(item) + "\n" for item in lines).encode()
    return import_jsonl_stream(io.BytesIO(data), owner, filename="f.jsonl", after_commit="inline")


def usage_line(eid: str, parent: str, **usage) -> dict:
    """An assistant answer whose usage holds `usage` over 1 token in, 1 out."""
    entry = message(eid, parent, role="assistant", text="answer")
    entry["message"].update(
        provider="p",
        model="m",
        usage={"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, **usage},
        stopReason="stop",
    )
    return entry


def run_write_backs() -> int:
    """Run the queued write-back jobs in this process, as the worker would (the test asks
    for ``tasks_stay_in_process``, so no worker takes them first); how many ran."""
    from sessions_app.models import Job
    from sessions_app.services.jobs import lifecycle

    queued = Job.objects.filter(kind=Job.Kind.WRITE_BACK, status=Job.Status.QUEUED)
    return sum(lifecycle.run_job(pk) is not None for pk in queued.values_list("pk", flat=True))
