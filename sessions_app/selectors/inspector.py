"""The context inspector: exactly what the model would receive with the leaf at a node.

Read-only. What the model receives (system prompt, tools, messages, window, token
counts) is `selectors.model_input.model_input`, the same object the agent run sends from
and the compaction threshold check reads; this module adds what the page explains: each
LLM message paired with the entry it came from, the entries hidden behind the last
compaction summary, the context edits and the system messages on the path.

tiktoken counts at most settings.PIWEB_EXACT_TOKEN_CHARS characters per report; larger
texts get pi's chars/4 estimate and are marked as estimates.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from sessions_app.core.compaction import CompactionSettings
from sessions_app.core.messages import convert_message_to_llm, message_from_entry
from sessions_app.core.pi1_entries import (
    content_text,
    edit_action,
    edit_replacement_content,
    path_edits,
    system_message_view,
)
from sessions_app.core.preview import entry_preview
from sessions_app.selectors import paths
from sessions_app.selectors.llm.windows import compaction_settings
from sessions_app.selectors.model_input import ModelInput, TokenCounts, model_input

log = logging.getLogger(__name__)


@dataclass
class InspectedMessage:
    index: int
    role: str
    tokens: int
    message: dict
    entry_id: str | None = None
    entry_type: str = ""
    source_role: str = ""  # the agent-message role before conversion (bashExecution, …)
    edit_id: str | None = None  # the context_edit that replaced this message's content
    estimated: bool = False  # too large to count exactly: pi's chars/4 estimate
    large: bool = False  # its entry is over the page limit (set by the view)
    parts: list = field(default_factory=list)  # filled by the view (rendering)


@dataclass
class InspectorReport:
    input: ModelInput  # what the model receives (prompt, tools, messages, window)
    counts: TokenCounts
    compaction: CompactionSettings
    messages: list[InspectedMessage]
    path_length: int = 0
    hidden: list[dict] = field(default_factory=list)  # entries behind the compaction summary
    compaction_id: str | None = None
    edits: list[dict] = field(default_factory=list)  # context_edit entries and their targets
    system_changes: list[dict] = field(default_factory=list)  # system messages in the context

    # What the model receives, as the template reads it.
    leaf = property(lambda self: self.input.leaf)
    system_prompt = property(lambda self: self.input.system_prompt)
    prompt_sections = property(lambda self: self.input.prompt.sections)
    context_files = property(lambda self: self.input.prompt.context_files)
    skills = property(lambda self: self.input.prompt.skills)
    prompt_warnings = property(lambda self: self.input.prompt.warnings)
    tools = property(lambda self: self.input.tools)
    thinking_level = property(lambda self: str(self.input.context.get("thinkingLevel", "off")))
    model = property(lambda self: self.input.context.get("model"))
    model_name = property(lambda self: self.input.model_name)
    window = property(lambda self: self.input.window)
    context_tokens = property(lambda self: self.input.context_tokens)
    system_tokens = property(lambda self: self.counts.system)
    system_estimated = property(lambda self: self.counts.system_estimated)
    reserve_tokens = property(lambda self: self.compaction.reserve_tokens)
    compaction_enabled = property(lambda self: self.compaction.enabled)

    @property
    def any_estimated(self) -> bool:
        return self.system_estimated or any(m.estimated for m in self.messages)

    @property
    def message_tokens(self) -> int:
        return sum(m.tokens for m in self.messages)

    @property
    def total_tokens(self) -> int:
        return self.system_tokens + self.message_tokens

    @property
    def threshold(self) -> int:
        return max(0, self.window - self.reserve_tokens)

    @property
    def used_percent(self) -> float:
        return min(100.0, 100.0 * self.total_tokens / self.window) if self.window else 0.0

    @property
    def threshold_percent(self) -> float:
        return 100.0 * self.threshold / self.window if self.window else 0.0

    @property
    def over_threshold(self) -> bool:
        """What the compaction check compares (it compacts when this holds and compaction
        is on): pi's context estimate at the leaf against window - reserve."""
        return self.context_tokens > self.threshold


def _emitted_entries(path: list[dict]) -> tuple[list[dict], list[dict], str | None]:
    """(entries whose messages the context holds, in order; hidden entries; compaction id)."""
    compaction_idx = -1
    for i in range(len(path) - 1, -1, -1):
        if path[i].get("type") == "compaction":
            compaction_idx = i
            break
    if compaction_idx < 0:
        return path, [], None
    compaction = path[compaction_idx]
    first_kept = compaction.get("firstKeptEntryId")
    ids = [e.get("id") for e in path[:compaction_idx]]
    start = ids.index(first_kept) if first_kept in ids else compaction_idx
    # pi 1.x leaves system messages of the kept range out: the compaction re-states them.
    kept = [
        e
        for e in path[start:compaction_idx]
        if not (e.get("type") == "message" and (e.get("message") or {}).get("role") == "system")
    ]
    emitted = [compaction, *kept, *path[compaction_idx + 1 :]]
    return emitted, path[:start], compaction.get("id")


def _edits(path: list[dict], emitted: list[dict]) -> tuple[list[dict], dict[str, dict]]:
    """(what each context_edit in the context does, {target id: winning edit}).

    As in pi 1.6.0, only edits among the entries the context is built from count, and
    the latest edit of a target wins; an edit whose target is not in the context (behind
    the compaction summary, say) changes nothing."""
    winning, overridden = path_edits(emitted)
    by_id = {e.get("id"): e for e in path}
    in_context = {e.get("id") for e in emitted}
    rows = []
    for edit in [*winning.values(), *overridden]:
        target_id = edit.get("targetId") or ""
        target = by_id.get(target_id) or {}
        if winning.get(target_id) is not edit:
            status = "overridden by a later edit"
        elif target_id in in_context:
            status = "applied"
        elif target:
            status = "no effect: the target is not in the context"
        else:
            status = "no effect: the target is not on this path"
        replacement = edit_replacement_content(edit)
        rows.append(
            {
                "id": edit.get("id"),
                "target": target_id,
                "target_type": target.get("type", ""),
                "target_role": (target.get("message") or {}).get("role", "")
                if target.get("type") == "message"
                else "",
                "target_preview": entry_preview(target)[:160] if target else "",
                "action": edit_action(edit),
                "replacement": content_text(replacement)[:400] if replacement is not None else "",
                "status": status,
            }
        )
    return rows, winning


def _system_changes(emitted: list[dict]) -> list[dict]:
    """The system messages the context carries (pi 1.x), with their sections and tools."""
    out = []
    for entry in emitted:
        message = None
        if entry.get("type") == "message":
            message = entry.get("message")
            if not (isinstance(message, dict) and message.get("role") == "system"):
                message = None
        elif entry.get("type") == "compaction" and isinstance(entry.get("systemMessage"), dict):
            message = entry["systemMessage"]
        if message is None:
            continue
        view = system_message_view(message)
        out.append({"id": entry.get("id"), "entry_type": entry.get("type"), **view})
    return out


def inspect_context(session, leaf_pi_id: str | None) -> InspectorReport:
    path = paths.load_path(session, leaf_pi_id) if leaf_pi_id else []
    seen = model_input(session, leaf_pi_id, path=path)
    llm_messages = seen.messages

    emitted, hidden_entries, compaction_id = _emitted_entries(path)
    edits, winning_edits = _edits(path, emitted)
    pairs: list[tuple[dict, dict, str]] = []
    for entry in emitted:
        if entry.get("type") == "branch_summary" and not entry.get("summary"):
            continue
        edit = winning_edits.get(entry.get("id") or "")
        if edit is not None and edit.get("replacement") is None:
            continue  # dropped from the context by a context_edit
        agent = message_from_entry(entry, include_compaction=entry.get("type") == "compaction")
        if agent is None:
            continue
        converted = convert_message_to_llm(agent)
        if converted is not None:
            pairs.append((entry, converted, str(agent.get("role", ""))))
    paired = len(pairs) == len(llm_messages)
    if not paired:
        log.warning("inspector: could not pair %s messages with entries", len(llm_messages))

    counts = seen.count()
    messages = []
    for i, (message, (tokens, estimated)) in enumerate(
        zip(llm_messages, counts.messages, strict=True)
    ):
        entry, _, source_role = pairs[i] if paired else ({}, None, "")
        messages.append(
            InspectedMessage(
                index=i,
                role=str(message.get("role", "")),
                tokens=tokens,
                estimated=estimated,
                message=message,
                entry_id=entry.get("id"),
                entry_type=entry.get("type", ""),
                source_role=source_role,
                edit_id=(winning_edits.get(entry.get("id") or "") or {}).get("id"),
            )
        )

    hidden = [
        {"id": e.get("id"), "type": e.get("type"), "preview": entry_preview(e)[:160]}
        for e in hidden_entries
    ]
    return InspectorReport(
        input=seen,
        counts=counts,
        compaction=compaction_settings(session),
        messages=messages,
        path_length=len(path),
        hidden=hidden,
        compaction_id=compaction_id,
        edits=edits,
        system_changes=_system_changes(emitted),
    )
