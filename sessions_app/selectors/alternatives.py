"""The comparison of alternatives (issue 36): one row per variant's branch, from its run
job and the entries below its head (the variant's workspace choice)."""

from __future__ import annotations

from django.utils import timezone

from sessions_app.models import Entry, FileSnapshot, Job, Session
from sessions_app.selectors import paths, runs

CHECK_TYPE = "piweb.check"


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    )


def branch_entries(session: Session, head_pi_id: str) -> list[Entry]:
    """The head and every entry below it, oldest first (a variant's branch is a chain)."""
    head = Entry.objects.filter(session=session, pi_id=head_pi_id).first()
    if head is None:
        return []
    below, out = {head.pk}, [head]
    for entry in Entry.objects.filter(session=session, seq__gt=head.seq).order_by("seq"):
        if entry.parent_id in below:
            below.add(entry.pk)
            out.append(entry)
    return out


def column(session: Session, job: Job) -> dict:
    """One variant's column: its final answer, turns, tokens, cost, duration, files
    changed and check, and its run's state."""
    alt = (job.params or {}).get("alternative") or {}
    entries = branch_entries(session, alt.get("head", ""))
    answer, turns, tokens, cost, thinking, check = "", 0, 0, 0.0, "", None
    asked = ""  # the variant's message (the first user message of its branch)
    for entry in entries:
        payload = entry.payload
        said = payload.get("message") or {}
        if payload.get("type") == "message" and said.get("role") == "user" and not asked:
            asked = _text(said)
        if payload.get("type") == "thinking_level_change":
            thinking = payload.get("thinkingLevel", "")
        elif payload.get("type") == "custom" and payload.get("customType") == CHECK_TYPE:
            check = payload.get("data") or {}
        message = payload.get("message") or {}
        if payload.get("type") != "message" or message.get("role") != "assistant":
            continue
        turns += 1
        usage = message.get("usage") or {}
        tokens += int(usage.get("totalTokens") or 0)
        cost += float((usage.get("cost") or {}).get("total") or 0)
        if message.get("stopReason") == "error":
            answer = message.get("errorMessage") or answer
        elif _text(message):
            answer = _text(message)
    files: set[str] = set()
    snaps = FileSnapshot.objects.filter(
        session=session, entry_id__in=[e.pk for e in entries], skipped=""
    )
    for snap in snaps:
        files.update(f.get("path") for f in snap.files or [])
    command = (job.params or {}).get("check") or ""
    if check or not command:
        check_note = ""
    elif job.status == Job.Status.CANCELLED:
        check_note = "stopped, no check"  # a stop runs nothing more
    elif job.status in Job.ACTIVE:
        check_note = "runs after the run"
    else:
        check_note = "no check"
    end = job.finished_at or timezone.now()
    seconds = (end - job.started_at).total_seconds() if job.started_at else 0.0
    return {
        "run_id": str(job.pk),
        "entry": entries[-1].pi_id if entries else None,
        "model": job.model,
        "thinking": thinking,
        "tools": list(alt.get("tools") or []),  # the variant's tool set; []: the node's
        "status": job.status,
        "held": job.status == Job.Status.QUEUED and bool((job.progress or {}).get("held")),
        "error": job.error,
        "message": asked,
        "answer": answer,
        "turns": turns,
        "tokens": tokens,
        "cost": round(cost, 6),
        "seconds": round(seconds, 3),
        "files_changed": sorted(f for f in files if f),
        "check_exit": check.get("exitCode") if check else None,
        "check": check,
        "check_command": command,
        "check_note": check_note,
        "workspace": alt.get("cwd"),
        "source": alt.get("source"),
    }


def comparison(session: Session, jobs) -> list[dict]:
    return [column(session, Job.objects.get(pk=job.pk)) for job in jobs]


COMPARED = ("message", "answer", "turns", "files_changed", "check_exit", "status", "tools")


def jobs_at(session: Session, at_pi_id: str) -> list[Job]:
    """The variants tried at a node (their run jobs), oldest first."""
    jobs = Job.objects.filter(session=session, kind=Job.Kind.AGENT_RUN).order_by("created_at")
    return [j for j in jobs if ((j.params or {}).get("alternative") or {}).get("at") == at_pi_id]


def page_columns(session: Session, at_pi_id: str, archived: set[str]) -> dict:
    """The comparison at a node: its columns (archived branches apart), which of the
    compared values differ between the shown columns, and whether any still runs."""
    columns = []
    for job in jobs_at(session, at_pi_id):
        col = column(session, job)
        col["head"] = ((job.params or {}).get("alternative") or {}).get("head")
        col["index"] = ((job.params or {}).get("alternative") or {}).get("index")
        col["archived"] = col["head"] in archived
        columns.append(col)
    shown = [c for c in columns if not c["archived"]]
    differs = {key: len({json_key(c[key]) for c in shown}) > 1 for key in COMPARED}
    return {
        "columns": shown,
        "archived_columns": [c for c in columns if c["archived"]],
        "differs": differs,
        "running": any(c["status"] in Job.ACTIVE for c in columns),
        "copied": any(c["source"] == "copy" for c in columns),
    }


def json_key(value) -> str:
    return repr(value)


def branch_end(session: Session, head_pi_id: str) -> str:
    """The session's leaf if it is on the branch below `head_pi_id`, else the branch's
    newest entry."""
    head = Entry.objects.get(session=session, pi_id=head_pi_id)
    leaf = session.leaf_pi_id
    if leaf and session.leaf_id is not None and head.pk in paths.path_entry_pks(session.leaf_id):
        return leaf
    below, newest = {head.pk}, head.pi_id
    rows = Entry.objects.filter(session=session, seq__gt=head.seq).order_by("seq")
    for pk, parent, pi_id in rows.values_list("pk", "parent_id", "pi_id"):
        if parent in below:
            below.add(pk)
            newest = pi_id
    return newest


def heads_running(session: Session) -> set[str]:
    """The pi ids of every entry on the paths of the session's active runs."""
    starts = [job.prepared_leaf_pi_id for job in runs.active_runs(session)]
    pks = Entry.objects.filter(session=session, pi_id__in=[s for s in starts if s])
    on_paths: set[int] = set()
    for pk in pks.values_list("pk", flat=True):
        on_paths.update(paths.path_entry_pks(pk))
    return set(Entry.objects.filter(pk__in=on_paths).values_list("pi_id", flat=True))
