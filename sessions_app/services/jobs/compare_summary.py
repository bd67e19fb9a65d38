"""The compare-summary job: "summarize the difference" of two branches (review area).

It writes no entry (comparisons are not part of the session): the text is kept in the
job's progress. Without a model it uses the offline, extractive description.
"""

from __future__ import annotations

from django.db import transaction

from sessions_app.core.compare import offline_difference_summary
from sessions_app.core.messages import convert_to_llm, message_from_entry
from sessions_app.core.summaries import serialize_conversation
from sessions_app.models import Job, Session
from sessions_app.selectors import compare
from sessions_app.selectors.jobs import active_compare_summary
from sessions_app.selectors.model_input import summary_profile
from sessions_app.services import sessions, summarizer
from sessions_app.services.jobs import lifecycle

Status = Job.Status
MAX_PROMPT_CHARS = 60_000


def request_compare_summary(session: Session, a_pi_id: str, b_pi_id: str, *, actor) -> Job:
    """Queue a summary of the difference (an identical active request returns that job)."""
    compare.compare(session, a_pi_id, b_pi_id)  # validates both nodes
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)
        existing = active_compare_summary(locked, a_pi_id, b_pi_id)
        if existing is not None:
            return existing
        pair = {"a": a_pi_id, "b": b_pi_id}
        return lifecycle.create(
            locked,
            Job.Kind.COMPARE_SUMMARY,
            actor,
            ("compare_requested", pair),
            params=pair,
            prepared_leaf_pi_id=a_pi_id,
            target_pi_id=b_pi_id,
        )


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


def run(job: Job, attempt: int) -> str | None:
    """Compare the two branches, describe the difference, keep the text on the job."""
    assert job.session is not None  # a comparison is always queued on a session
    try:
        comparison = compare.compare(job.session, job.params["a"], job.params["b"])
        profile = summary_profile(job.session, job.created_by)
        if profile is None:
            text, offline, job.model = offline_difference_summary(comparison), True, "offline"
        else:
            text = summarizer.complete(profile, _request(comparison)).text
            offline, job.model = False, profile.label
    except (summarizer.SummaryError, compare.CompareError) as exc:
        raise lifecycle.RunFailed(str(exc)) from exc
    return lifecycle.finish_own(
        job, attempt, Status.DONE, phase="done", summary=text, offline=offline
    )


def _on_claim(job: Job) -> None:
    job.model = ""
    job.progress = {"phase": "running"}


KIND = lifecycle.register(
    lifecycle.JobKind(kind=Job.Kind.COMPARE_SUMMARY, on_claim=_on_claim, run=run)
)
