"""Datasets from scored answers (docs/scores.md, "Datasets"): one row per scored answer,
with the input exactly as the model saw it at that node, in OpenAI's chat format.

The input is what `selectors/model_input.py` says the model receives with the leaf at the
answer's parent (compactions and branch summaries applied), turned into the wire shape by
the openai-completions module that sent it. The system prompt and tools are those the run
recorded beside the answer (`AnswerInput`); an answer without that record (stored before
it existed, or imported) has them rebuilt for the session as it is now, and its row says
`"reconstructed": true`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator

from django.db.models import Exists, OuterRef

from sessions_app.agent.loop import request_tools
from sessions_app.agent.providers.openai_completions import _tools as wire_tools
from sessions_app.agent.providers.openai_completions import convert_messages, get_compat
from sessions_app.core.errors import ServiceError
from sessions_app.models import AnswerInput, Entry, ReviewItem, ReviewQueue, Score, Team
from sessions_app.selectors.llm.catalog import find_model
from sessions_app.selectors.model_input import model_input
from sessions_app.selectors.sessions import ListFilters, visible_list
from sessions_app.selectors.teams import team_sessions

FORMATS = ("chat", "finetune")


class DatasetError(ServiceError):
    code = "dataset"


def parse_minimums(pairs: list[str]) -> dict[str, float]:
    """`NAME=X` pairs (the page's `?min=`, the command's `--min-score`) as {name: X}."""
    found = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = None
        if not name.strip() or number is None:
            raise DatasetError(f"A minimum score is NAME=NUMBER, not {pair[:40]!r}.")
        found[name.strip()] = number
    return found


def queue_answers(queue: ReviewQueue):
    """The queue's answers that have a score with one of its team's configs."""
    scored = Score.objects.filter(entry_id=OuterRef("pk"), config__team_id=queue.team_id)
    in_queue = ReviewItem.objects.filter(queue=queue).values("entry_id")
    return Entry.objects.filter(pk__in=in_queue).filter(Exists(scored))


def filter_answers(user, team: Team, filters: ListFilters):
    """Scored answers (with the team's configs) of the team's sessions matching `filters`."""
    sessions = visible_list(user, filters).filter(pk__in=team_sessions(team).values("pk"))
    scored = Score.objects.filter(entry_id=OuterRef("pk"), config__team=team)
    return Entry.objects.filter(
        session__in=sessions.values("pk"), type="message", role="assistant"
    ).filter(Exists(scored))


def _scores_by_entry(entry_pks: list[int], team_id: int) -> dict[int, list[dict]]:
    found: dict[int, list[dict]] = defaultdict(list)
    rows = (
        Score.objects.filter(entry_id__in=entry_pks, config__team_id=team_id)
        .order_by("config__name", "created_at", "pk")
        .values_list(
            "entry_id", "config__name", "value", "label", "target", "comment", "author__username"
        )
    )
    for entry_pk, name, value, label, target, comment, author in rows:
        found[entry_pk].append(
            {
                "name": name,
                "value": value,
                "label": label or None,
                "target": target,
                "comment": comment,
                "author": author,
            }
        )
    return found


def _passes(scores: list[dict], minimums: dict[str, float]) -> bool:
    """Every named score's mean (entry scores) is at least its minimum."""
    for name, low in minimums.items():
        given = [s["value"] for s in scores if s["name"] == name and s["target"] == "entry"]
        if not given or sum(given) / len(given) < low:
            return False
    return True


class _RowBuilder:
    """Builds rows, reading what answers share once: the context at a parent (the
    answers of one question), the rebuilt system prompt and tools of a session, a model's
    catalog entry and wire settings."""

    def __init__(self):
        self.contexts: dict = {}
        self.prompts: dict = {}
        self.models: dict = {}

    def context(self, session, parent_pi_id):
        key = (session.pk, parent_pi_id)
        if key not in self.contexts:
            self.contexts = {key: model_input(session, parent_pi_id)}  # one parent at a time
        return self.contexts[key]

    def rebuilt(self, session, seen) -> tuple[str, list[dict]]:
        if session.pk not in self.prompts:
            self.prompts = {session.pk: (seen.system_prompt, request_tools(seen.tools))}
        return self.prompts[session.pk]

    def model(self, message: dict) -> tuple[dict, dict]:
        key = (message.get("provider"), message.get("model"))
        if key not in self.models:
            model = find_model(*key) or {"id": key[1] or "", "provider": key[0]}
            self.models[key] = (model, get_compat(model))
        return self.models[key]

    def row(self, entry: Entry, sent: AnswerInput | None, scores: list[dict]) -> dict:
        """One row: the input at the answer's parent, the answer, its scores, references."""
        session = entry.session
        message = entry.payload.get("message") or {}
        seen = self.context(session, entry.parent_pi_id if entry.parent_id else None)
        if sent is not None:
            system_prompt, tools = sent.system_prompt, sent.tools
        else:
            system_prompt, tools = self.rebuilt(session, seen)
        model, compat = self.model(message)
        answer = convert_messages(model, "", [message], compat)
        row_input = {"messages": convert_messages(model, system_prompt, seen.messages, compat)}
        if tools:
            row_input["tools"] = wire_tools(tools, compat)
        return {
            "input": row_input,
            "answer": answer[0] if answer else {"role": "assistant", "content": ""},
            "scores": scores,
            "session": session.pi_id,
            "entry": entry.pi_id,
            "model": f"{model.get('provider') or ''}/{model.get('id') or ''}",
            "reconstructed": sent is None,
        }


def dataset_rows(answers, team_id: int, minimums: dict[str, float] | None = None) -> Iterator[dict]:
    """The rows of these answers, in session then append order, a chunk at a time."""
    pks = list(answers.order_by("session_id", "seq").values_list("pk", flat=True))
    builder = _RowBuilder()
    for start in range(0, len(pks), 200):
        chunk = pks[start : start + 200]
        scores = _scores_by_entry(chunk, team_id)
        sent = {a.entry_id: a for a in AnswerInput.objects.filter(entry_id__in=chunk)}
        entries = Entry.objects.filter(pk__in=chunk).select_related("session")
        for entry in sorted(entries, key=lambda e: (e.session_id, e.seq)):
            if minimums and not _passes(scores[entry.pk], minimums):
                continue
            yield builder.row(entry, sent.get(entry.pk), scores[entry.pk])


FINETUNE_KEYS = {"role", "content", "tool_calls", "tool_call_id", "name"}


def _finetune_message(message: dict) -> dict:
    """A message as chat fine-tuning takes it: its roles (the developer role is the
    system's), its keys only, and text parts joined into one string."""
    out = {k: v for k, v in message.items() if k in FINETUNE_KEYS}
    if out.get("role") == "developer":
        out["role"] = "system"
    content = out.get("content")
    if isinstance(content, list) and all(p.get("type") == "text" for p in content):
        out["content"] = "".join(p.get("text", "") for p in content)
    return out


def finetune_row(row: dict) -> dict:
    """A row in the shape OpenAI's chat fine-tuning takes: the conversation ending with the
    answer, and the tools (without the request-only `strict` flag)."""
    out: dict = {
        "messages": [_finetune_message(m) for m in [*row["input"]["messages"], row["answer"]]]
    }
    tools = row["input"].get("tools")
    if tools:
        out["tools"] = [
            {
                "type": "function",
                "function": {k: v for k, v in t["function"].items() if k != "strict"},
            }
            for t in tools
        ]
    return out


def dataset_lines(rows: Iterable[dict], fmt: str = "chat") -> Iterator[str]:
    """JSONL: one line per row, in the chosen format."""
    for row in rows:
        shaped = finetune_row(row) if fmt == "finetune" else row
        yield json.dumps(shaped, ensure_ascii=False) + "\n"
