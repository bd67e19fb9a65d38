"""Branch compare: two nodes, their common ancestor, and both branches below it.

The optional "summarize the difference" is a Job of kind compare_summary run by a
Celery worker (tasks.run_compare_summary_job). It writes no entry: comparisons are not
part of the session. Without a model it uses the offline, extractive description.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from sessions_app import rendering
from sessions_app.context.input_limits import display_value
from sessions_app.context.messages import convert_to_llm, message_from_entry
from sessions_app.context.review import compare_branches, offline_difference_summary
from sessions_app.context.summaries import serialize_conversation
from sessions_app.models import Entry, Job, Session
from sessions_app.services import summarizer, tree
from sessions_app.services.jobs import Heartbeat, enqueue_job, publish_progress
from sessions_app.services.llm import resolve_profile

log = logging.getLogger(__name__)
Status = Job.Status
MAX_PROMPT_CHARS = 60_000


class CompareError(ValueError):
    """Bad compare input, with a message fit for the user."""


def compare(session: Session, a_pi_id: str, b_pi_id: str, *, render: bool = False) -> dict:
    """The comparison of the branches ending at two nodes (two path queries, no full load)."""
    if not a_pi_id or not b_pi_id:
        raise CompareError("Pick two nodes to compare.")
    found = set(
        Entry.objects.filter(session=session, pi_id__in=[a_pi_id, b_pi_id]).values_list(
            "pi_id", flat=True
        )
    )
    for pi_id in (a_pi_id, b_pi_id):
        if pi_id not in found:
            raise CompareError(f"No entry {pi_id!r} in this session.")
    seen: dict[str, dict] = {}
    for entry in [*tree.load_path(session, a_pi_id), *tree.load_path(session, b_pi_id)]:
        seen[entry["id"]] = display_value(entry)  # (lone surrogates: see input_limits)
    result = compare_branches(list(seen.values()), a_pi_id, b_pi_id)
    if render:  # (a page: each side gets half of the page's budget, newest entries first)
        for side in ("a", "b"):
            segment = result[side]["segment"]
            rendered = rendering.render_entries_within(segment, rendering.page_budget() // 2)
            result[side]["rendered"] = [
                {"id": e.get("id"), "type": e.get("type"), "parts": parts or []}
                for e, parts in zip(segment, rendered, strict=True)
                if parts is not None
            ]
            result[side]["not_shown"] = len(segment) - len(result[side]["rendered"])
    return result


# --- the summarize-the-difference job ---------------------------------------------------


def request_compare_summary(session: Session, a_pi_id: str, b_pi_id: str, *, actor) -> Job:
    """Queue a summary of the difference (an identical active request returns that job)."""
    compare(session, a_pi_id, b_pi_id)  # validates both nodes
    with transaction.atomic():
        locked = tree.lock_session(session.pk)
        existing = (
            Job.objects.filter(
                session=locked,
                kind=Job.Kind.COMPARE_SUMMARY,
                status__in=Job.ACTIVE,
                prepared_leaf_pi_id=a_pi_id,
                target_pi_id=b_pi_id,
            )
            .order_by("created_at")
            .first()
        )
        if existing is not None:
            return existing
        job = Job.objects.create(
            session=locked,
            kind=Job.Kind.COMPARE_SUMMARY,
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
            prepared_leaf_pi_id=a_pi_id,
            target_pi_id=b_pi_id,
            params={"a": a_pi_id, "b": b_pi_id},
            progress={"phase": "queued"},
        )
        tree.record_activity(
            locked, actor, "compare_requested", job=str(job.id), a=a_pi_id, b=b_pi_id
        )
        publish_progress(job)
        enqueue_job(job)
    return job


def _claim(job_id) -> Job | None:
    """queued → running (or take over a running job whose heartbeat is stale)."""
    stale = timezone.now() - timedelta(seconds=settings.PIWEB_JOB_STALE_SECONDS)
    with transaction.atomic():
        job = (
            Job.objects.select_for_update()
            .filter(pk=job_id, kind=Job.Kind.COMPARE_SUMMARY)
            .filter(Q(status=Status.QUEUED) | Q(status=Status.RUNNING, heartbeat_at__lt=stale))
            .first()
        )
        if job is None:
            return None
        job.status = Status.RUNNING
        job.attempts += 1
        now = timezone.now()
        job.started_at = job.started_at or now
        job.heartbeat_at = now
        job.progress = {"phase": "running"}
        job.save(update_fields=["status", "attempts", "started_at", "heartbeat_at", "progress"])
        publish_progress(job)
        return job


def _request(comparison: dict) -> dict:
    def side_text(side: dict) -> str:
        messages = [m for m in (message_from_entry(e) for e in side["segment"]) if m]
        try:
            text = serialize_conversation(convert_to_llm(messages))
        except Exception:  # the serializer is the core's; fall back to previews
            text = "\n".join(str(e.get("id")) for e in side["segment"])
        return text[-MAX_PROMPT_CHARS // 2 :]

    prompt = (
        "Two branches of one coding-agent session start from the same point. Compare them: "
        "what each branch tried, what it changed (files), how each ended (result, errors), "
        "and which one got further. Answer in a few short bullet points per branch, then one "
        "line of verdict. Do not continue the conversation.\n\n"
        f"<branch-a>\n{side_text(comparison['a'])}\n</branch-a>\n\n"
        f"<branch-b>\n{side_text(comparison['b'])}\n</branch-b>\n\n"
        f"<stats>\n{offline_difference_summary(comparison)}</stats>"
    )
    return {
        "system": "You compare two branches of a coding-agent session for a reviewer. "
        "You summarize; you never continue the conversation.",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 1024,
    }


def run_compare_summary(job_id) -> str | None:
    """Body of the Celery task. Idempotent: a finished job is left alone."""
    job = _claim(job_id)
    if job is None:
        return None
    attempt = job.attempts
    try:
        comparison = compare(job.session, job.params["a"], job.params["b"])
        profile = resolve_profile(job.session.model_profile)
        if profile is None:
            text, offline, model = offline_difference_summary(comparison), True, "offline"
        else:
            # A model call can outlast PIWEB_JOB_STALE_SECONDS: the heartbeat says we live.
            with Heartbeat(job.pk, attempt):
                text = summarizer.complete(profile, _request(comparison)).text
            offline, model = False, profile.label
        status, error, progress = (
            Status.DONE,
            "",
            {"phase": "done", "summary": text, "offline": offline},
        )
    except summarizer.SummaryError as exc:
        status, error, progress, model = Status.FAILED, str(exc), {"phase": "failed"}, ""
    except CompareError as exc:
        status, error, progress, model = Status.FAILED, str(exc), {"phase": "failed"}, ""
    except Exception as exc:
        log.exception("compare summary %s crashed", job_id)
        status, error = Status.FAILED, f"Internal error: {exc.__class__.__name__}"
        progress, model = {"phase": "failed"}, ""
    with transaction.atomic():
        locked = Job.objects.select_for_update().get(pk=job.pk)
        if locked.status != Status.RUNNING or locked.attempts != attempt:
            return None
        locked.status, locked.error, locked.progress = status, error, progress
        locked.model = model[:200]
        locked.finished_at = timezone.now()
        locked.save(update_fields=["status", "error", "progress", "model", "finished_at"])
        publish_progress(locked)
    return status
