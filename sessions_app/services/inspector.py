"""The context inspector: exactly what the model would receive with the leaf at a node.

Read-only. The system prompt comes from the core `build_system_prompt` for the
session's cwd (with the agent's tools, project context files and skills); the message
list is the core `build_session_context` + `convert_to_llm` on the root→leaf path;
token counts come from the core tiktoken counter. Each LLM message is paired with the
entry it came from, and entries hidden behind the last compaction summary are listed.

Bounded whatever the session holds: a working directory longer than MAX_CWD_CHARS is not
walked on the filesystem (no project context files or skills for it: walking its
ancestors costs the square of its length), and tiktoken counts at most
settings.PIWEB_EXACT_TOKEN_CHARS characters per report; larger texts get pi's chars/4
estimate and are marked as estimates.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings

from sessions_app.context.messages import (
    build_session_context,
    convert_message_to_llm,
    convert_to_llm,
    message_from_entry,
)
from sessions_app.context.pi1_entries import (
    content_text,
    edit_action,
    edit_replacement_content,
    path_edits,
    system_message_view,
)
from sessions_app.context.preview import entry_preview
from sessions_app.context.tokenizer import count_message_tokens, count_tokens
from sessions_app.context.tokens import estimate_text_tokens, estimate_tokens
from sessions_app.services import tree
from sessions_app.services.llm import resolve_profile

log = logging.getLogger(__name__)
DEFAULT_WINDOW = 128000
MAX_CWD_CHARS = 4096  # Linux PATH_MAX: no real directory has a longer path


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
    leaf: str | None
    system_prompt: str
    prompt_sections: list
    context_files: list
    skills: list
    prompt_warnings: list
    system_tokens: int
    messages: list[InspectedMessage]
    hidden: list[dict] = field(default_factory=list)  # entries behind the compaction summary
    compaction_id: str | None = None
    thinking_level: str = "off"
    model: dict | None = None
    model_name: str = ""
    window: int = DEFAULT_WINDOW
    reserve_tokens: int = 16384
    compaction_enabled: bool = True
    path_length: int = 0
    edits: list[dict] = field(default_factory=list)  # context_edit entries and their targets
    system_changes: list[dict] = field(default_factory=list)  # system messages in the context
    system_estimated: bool = False

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
        return self.total_tokens > self.threshold


def _compaction_settings(session):
    try:
        from sessions_app.services.jobs import compaction_settings

        return compaction_settings(session)
    except ImportError:  # pragma: no cover - jobs area absent
        from sessions_app.context.compaction import CompactionSettings

        return CompactionSettings()


class _TokenBudget:
    """tiktoken for the first `chars` characters of a report, pi's estimate after that."""

    def __init__(self, chars: int, model: str | None):
        self.left, self.model = chars, model

    def text(self, text: str) -> tuple[int, bool]:
        if len(text) <= self.left:
            self.left -= len(text)
            return count_tokens(text, self.model), False
        return estimate_text_tokens(text), True

    def message(self, message: dict) -> tuple[int, bool]:
        estimate = estimate_tokens(message)
        size = estimate * 4  # (about the characters tiktoken would read)
        if size <= self.left:
            self.left -= size
            return count_message_tokens(message, self.model), False
        return estimate, True


def _system_prompt(session):
    from sessions_app.context.skills import default_skill_roots, load_skills
    from sessions_app.context.system_prompt import (
        ContextFilesResult,
        PromptWarning,
        ToolInfo,
        build_system_prompt,
    )

    try:
        from sessions_app.agent.tools import ALL_TOOLS

        tools = [ToolInfo(t.name, t.snippet or t.description.split("\n")[0]) for t in ALL_TOOLS]
    except ImportError:  # pragma: no cover
        tools = []
    agent_dir = str(settings.PIWEB_AGENT_DIR)
    cwd = session.cwd or "/"
    if len(cwd) > MAX_CWD_CHARS:
        warning = PromptWarning(
            source="context_files",
            path="(working directory)",
            message=f"The working directory is {len(cwd):,} characters long: no directory "
            "has such a path, so no project context files or skills were looked up.",
            code="cwd_too_long",
        )
        found = ContextFilesResult()
        found.warnings.append(warning)
        return build_system_prompt(cwd, tools, context_files=found, skills=[])
    skills = load_skills(default_skill_roots(cwd, agent_dir))
    return build_system_prompt(cwd, tools, agent_dir=agent_dir, skills=skills)


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
        target_id = edit.get("targetId")
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
    path = tree.load_path(session, leaf_pi_id) if leaf_pi_id else []
    context = build_session_context(path, leaf_pi_id) if path else build_session_context([], None)
    llm_messages = convert_to_llm(context["messages"])

    profile = resolve_profile(session.model_profile)
    model_name = profile.model if profile else ""
    window = profile.context_window if profile else DEFAULT_WINDOW
    cfg = _compaction_settings(session)

    emitted, hidden_entries, compaction_id = _emitted_entries(path)
    edits, winning_edits = _edits(path, emitted)
    pairs: list[tuple[dict, dict, str]] = []
    for entry in emitted:
        if entry.get("type") == "branch_summary" and not entry.get("summary"):
            continue
        edit = winning_edits.get(entry.get("id"))
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

    budget = _TokenBudget(settings.PIWEB_EXACT_TOKEN_CHARS, model_name or None)
    prompt = _system_prompt(session)
    system_tokens, system_estimated = budget.text(prompt.prompt)
    messages = []
    for i, message in enumerate(llm_messages):
        entry, _, source_role = pairs[i] if paired else ({}, None, "")
        tokens, estimated = budget.message(message)
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
                edit_id=(winning_edits.get(entry.get("id")) or {}).get("id"),
            )
        )

    hidden = [
        {"id": e.get("id"), "type": e.get("type"), "preview": entry_preview(e)[:160]}
        for e in hidden_entries
    ]
    return InspectorReport(
        leaf=leaf_pi_id,
        system_prompt=prompt.prompt,
        prompt_sections=prompt.sections,
        context_files=prompt.context_files,
        skills=prompt.skills,
        prompt_warnings=prompt.warnings,
        system_tokens=system_tokens,
        system_estimated=system_estimated,
        messages=messages,
        hidden=hidden,
        compaction_id=compaction_id,
        thinking_level=str(context.get("thinkingLevel", "off")),
        model=context.get("model"),
        model_name=model_name,
        window=window,
        reserve_tokens=cfg.reserve_tokens,
        compaction_enabled=cfg.enabled,
        path_length=len(path),
        edits=edits,
        system_changes=_system_changes(emitted),
    )
