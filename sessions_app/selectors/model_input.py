"""What the model sees at a leaf: one answer for the agent run, the inspector and compaction.

`model_input(session, leaf)` is the only place that decides what goes to the model:

- the system prompt: the core's `build_system_prompt` for the session's working
  directory (its real path, as the run's tools see it), with the agent's tools, the
  project context files (the agent directory's, then every directory from the user's
  own area down to the cwd; none above it: those are the server's) and the skills of pi's default roots in pi's order
  (`core.skills.default_skill_roots`: the project's before the user's) that the
  agent's read tool can open; its named sections concatenate to the prompt;
- the tools, whose OpenAI specs the run sends: pi's default set (read, bash, edit,
  write) unless the session's settings (``settings["tools"]``) or its model profile
  (``"tools"`` in its spec) name others, as pi's ``--tools`` does (`session_tools`), or
  a workspace choice on the path names a tool set of its own (an alternative's);
- the messages: the core's `build_session_context` over the stored path
  (`selectors.paths.load_context_path` + `context_from_path`) and `convert_to_llm`;
- the model and its context window: the window of the model the path records, from the
  model catalog (`selectors.llm.windows.session_window`); the model a run uses, with the key of
  the user who sends (`resolved(user)`);
- token counts: `context_tokens`, pi's estimate that the compaction threshold check
  uses (the last reply's usage plus chars/4 of what follows), and `count()`, tiktoken
  counts of the prompt and of each message for the inspector's meter.

Every part is computed when first asked for, so the run's per-turn message reload and
the compaction check do not walk the filesystem and only the inspector counts tokens.

A working directory longer than MAX_CWD_CHARS is not walked (walking its ancestors costs
the square of its length; no real directory has such a path) and one the agent could not
run in (outside the owner's workspace area, imported from elsewhere) is used as stored,
and nothing is read from it nor from its ancestors; both are reported as prompt
warnings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

from django.conf import settings

from sessions_app.agent.paths import WorkspaceError, is_within
from sessions_app.agent.providers.base import ResolvedModel
from sessions_app.agent.safefs import BeneathFiles
from sessions_app.agent.tools import Tool, select_tools
from sessions_app.core.input_limits import MAX_CWD_CHARS
from sessions_app.core.messages import context_from_path, convert_to_llm
from sessions_app.core.pi_config import THINKING_LEVELS
from sessions_app.core.skills import default_skill_roots, load_skills
from sessions_app.core.system_prompt import (
    ContextFilesResult,
    PromptWarning,
    SystemPromptResult,
    ToolInfo,
    build_system_prompt,
    load_context_files,
)
from sessions_app.core.tokenizer import count_message_tokens, count_tokens
from sessions_app.core.tokens import (
    estimate_context_tokens,
    estimate_text_tokens,
    estimate_tokens,
)
from sessions_app.models import Session
from sessions_app.selectors import paths, workspaces
from sessions_app.selectors.llm.catalog import (
    ModelProfile,
    catalog,
    default_thinking_level,
    resolve_profile,
)
from sessions_app.selectors.llm.keys import ModelUnavailable
from sessions_app.selectors.llm.project_settings import project_settings
from sessions_app.selectors.llm.resolution import resolve_for_session
from sessions_app.selectors.llm.windows import session_window


@dataclass(frozen=True)
class TokenCounts:
    """tiktoken counts of one model input; `*_estimated`: pi's chars/4 estimate instead."""

    system: int
    system_estimated: bool
    messages: tuple[tuple[int, bool], ...]  # (tokens, estimated) per message


class _TokenBudget:
    """tiktoken for the first `chars` characters, pi's estimate after that."""

    def __init__(self, chars: int, model: str | None):
        self.left, self.model = chars, model

    def text(self, text: str) -> tuple[int, bool]:
        if len(text) <= self.left:
            self.left -= len(text)
            return count_tokens(text, self.model, settings.PIWEB_TIKTOKEN_CACHE or None), False
        return estimate_text_tokens(text), True

    def message(self, message: dict) -> tuple[int, bool]:
        estimate = estimate_tokens(message)
        size = estimate * 4  # (about the characters tiktoken would read)
        if size <= self.left:
            self.left -= size
            return (
                count_message_tokens(message, self.model, settings.PIWEB_TIKTOKEN_CACHE or None),
                False,
            )
        return estimate, True


@dataclass(frozen=True)
class _WorkingDirectory:
    """The cwd the prompt names; the user's area it lies in (None: the agent could not
    run there, so nothing is read from it); the warning that says why."""

    cwd: str
    area: str | None = None
    warning: PromptWarning | None = None


def _working_directory(session: Session, leaf) -> _WorkingDirectory:
    where = workspaces.session_workspace(session, leaf)
    cwd = where.cwd or "/"
    try:
        real = workspaces.check_session_cwd(cwd, where.user_pk)
    except WorkspaceError as exc:
        return _WorkingDirectory(
            cwd,
            warning=PromptWarning(
                source="context_files",
                path="(working directory)",
                message=f"{exc} No project context files or skills were read from it.",
                code="cwd",
            ),
        )
    areas = [os.fspath(a) for a in workspaces.user_areas_of(where.user_pk)]
    return _WorkingDirectory(real, next(a for a in areas if is_within(real, a)))


def _prompt_tools(tools) -> list[ToolInfo]:
    return [
        ToolInfo(t.name, t.snippet or t.description.split("\n")[0], t.guidelines) for t in tools
    ]


def session_tools(session: Session, profile=None) -> tuple[Tool, ...]:
    """The tools the session's agent gets: the session's own choice
    (``settings["tools"]``), else its model profile's, else pi's default set."""
    chosen = (session.settings or {}).get("tools")
    if not chosen:
        if profile is None:
            profile = resolve_profile(session.model_profile)
        chosen = getattr(profile, "tools", None) if profile is not None else None
    return select_tools(chosen)


def skill_roots(cwd: str | None, agent_dir: str, files: BeneathFiles) -> list[tuple[str, str]]:
    """pi's default skill roots, in pi's order, less those the agent's read tool cannot
    open: a listed skill is read on demand, so one under an ancestor of the cwd or in the
    server account's ~/.agents/skills would be listed to a model that cannot read it (and
    it is the server's, not the session owner's). ``cwd`` None (refused): only the
    agent directory's. Paths are compared as written: ``cwd`` is real already, and what
    lies beneath it is read through ``files``, which follows no link out of it."""
    agent_skills = os.path.join(agent_dir, "skills")
    if cwd is None:
        return [(agent_skills, "user")]
    return [
        (directory, source)
        for directory, source in default_skill_roots(cwd, agent_dir, files=files, top=cwd)
        if is_within(directory, cwd) or is_within(directory, agent_skills)
    ]


def system_prompt(session: Session, tools=None, leaf=paths.UNSET) -> SystemPromptResult:
    """The session's system prompt with its sections, context files, skills and warnings.

    Context files and skills are read through `safefs.BeneathFiles`, beneath the agent
    directory and the user's own area only (never by path, never following a link out):
    the working directory and its ancestors up to that area, nothing when the cwd was
    refused."""
    if tools is None:
        tools = session_tools(session)
    agent_dir = workspaces.agent_dir()
    if len(session.cwd or "") > MAX_CWD_CHARS:
        found = ContextFilesResult()
        found.warnings.append(
            PromptWarning(
                source="context_files",
                path="(working directory)",
                message=f"The working directory is {len(session.cwd):,} characters long: no "
                "directory has such a path, so no project context files or skills were "
                "looked up.",
                code="cwd_too_long",
            )
        )
        return build_system_prompt(
            session.cwd, _prompt_tools(tools), context_files=found, skills=[]
        )
    where = _working_directory(session, leaf)
    files = BeneathFiles([agent_dir, *([where.area] if where.area else [])])
    project = where.cwd if where.area else None
    context = load_context_files(project, agent_dir, files=files, top=where.area)
    skills = load_skills(skill_roots(project, agent_dir, files), files=files)
    result = build_system_prompt(
        where.cwd, _prompt_tools(tools), context_files=context, skills=skills
    )
    if where.warning is not None:
        result.warnings.insert(0, where.warning)
    return result


@dataclass
class ModelInput:
    """Everything one model request at `leaf` is made of (see the module docstring)."""

    session: Session
    leaf: str | None
    path: list[dict] | None = None  # the root→leaf path, when the caller read it already

    @cached_property
    def tools(self) -> tuple[Tool, ...]:
        """The session's tools (`session_tools`), unless the path chose a tool set of its
        own (an alternative's tool-set variant, recorded with its workspace choice)."""
        if (self.session.settings or {}).get("workspaces") and self.leaf is not None:
            chosen = workspaces.session_workspace(self.session, self.leaf).tools
            if chosen:
                return select_tools(list(chosen))
        return session_tools(self.session, self.profile)

    @cached_property
    def prompt(self) -> SystemPromptResult:
        return system_prompt(self.session, self.tools, self.leaf)

    @property
    def system_prompt(self) -> str:
        return self.prompt.prompt

    @cached_property
    def context_path(self) -> list[dict]:
        """The entries the context at the leaf is built from (root first)."""
        if self.leaf is None:
            return []
        if self.path is not None:
            return self.path
        return paths.load_context_path(self.session, self.leaf)

    @cached_property
    def context(self) -> dict:
        """The core's session context at the leaf: agent messages, thinking level, model."""
        return context_from_path(self.context_path)

    @cached_property
    def messages(self) -> list[dict]:
        """The messages sent after the system prompt (pi's LLM shapes)."""
        return convert_to_llm(self.context["messages"])

    @cached_property
    def profile(self) -> ModelProfile | None:
        return resolve_profile(self.session.model_profile)

    @cached_property
    def settings_entries(self) -> list[dict]:
        """The path's entries that set the leaf's model and thinking level: the few that
        do (`paths.load_settings_path`) unless the context path is loaded already (a
        page needs these, not the whole path's payloads)."""
        if "context_path" in self.__dict__ or self.path is not None or self.leaf is None:
            return self.context_path
        return paths.load_settings_path(self.session, self.leaf)

    @cached_property
    def settings(self) -> dict:
        """The leaf's ``model`` and ``thinkingLevel`` as the context has them."""
        if "context" in self.__dict__:
            return self.context
        return context_from_path(self.settings_entries)

    @property
    def recorded_model(self) -> dict | None:
        """The model the path records at the leaf (``{"provider", "modelId"}``)."""
        return self.settings.get("model")

    @property
    def model_name(self) -> str:
        """The model at the leaf, for people: the recorded `provider/id`, else the
        session's environment profile's model ("" when neither)."""
        recorded = self.recorded_model
        if recorded and recorded.get("modelId"):
            return f"{recorded.get('provider')}/{recorded['modelId']}"
        return self.profile.model if self.profile else ""

    @cached_property
    def window(self) -> int:
        """The context window at the leaf: the recorded model's catalog window, else the
        window of the model a run would use (`selectors.llm.windows.session_window`)."""
        return session_window(self.session, self.recorded_model)

    def resolved(self, user=None):
        """The model a run at this leaf uses for `user` (default: the session's owner),
        with that user's key; None when no model is configured. Raises
        `ModelUnavailable`."""
        return resolve_for_session(
            self.session, user if user is not None else self.session.owner, self.recorded_model
        )

    def thinking_level(self, user=None) -> str:
        """The thinking level a run at this leaf asks for: the path's last
        thinking_level_change, else (as pi resumes a session that records none) the
        default of `user` (default: the owner), which a project's own settings may set."""
        if any(entry.get("type") == "thinking_level_change" for entry in self.settings_entries):
            level = self.settings.get("thinkingLevel")
            if isinstance(level, str) and level in THINKING_LEVELS:
                return level
        user = user if user is not None else self.session.owner
        return default_thinking_level(user, project_settings(self.session, user, self.leaf))

    @cached_property
    def context_tokens(self) -> int:
        """pi's context size at the leaf: what the compaction threshold is checked against."""
        return estimate_context_tokens(self.context["messages"])["tokens"]

    def count(self, exact_chars: int | None = None) -> TokenCounts:
        """tiktoken counts of the prompt and each message, exact for the first
        `exact_chars` characters (default PIWEB_EXACT_TOKEN_CHARS), estimated after."""
        chars = settings.PIWEB_EXACT_TOKEN_CHARS if exact_chars is None else exact_chars
        recorded = self.recorded_model or {}
        budget = _TokenBudget(
            chars, recorded.get("modelId") or (self.profile.model if self.profile else None)
        )
        system, system_estimated = budget.text(self.system_prompt)
        counted = tuple(budget.message(message) for message in self.messages)
        return TokenCounts(system, system_estimated, counted)


def model_input(
    session: Session, leaf: str | None | object = paths.UNSET, *, path: list[dict] | None = None
) -> ModelInput:
    """What the model receives with the leaf at `leaf` (a pi id; None: before the first
    entry; default: the session's leaf). `path`: the root→leaf payloads, when the caller
    holds them already (the context is then built from them, by the same core function)."""
    at = leaf if leaf is None or isinstance(leaf, str) else session.leaf_pi_id  # (UNSET)
    return ModelInput(session, at, path)


def summary_profile(session, user=None) -> ModelProfile | ResolvedModel | None:
    """The model a summary job of this session calls (compaction, branch summary,
    comparison): the model the session's leaf uses, with the key of `user` (default: the
    owner); the environment profile itself when that is the one. None: the offline
    summarizer (no model or no key)."""
    try:
        resolved = model_input(session).resolved(user)
    except ModelUnavailable:
        return None
    if resolved is None:
        return None
    cat = catalog()
    profile = cat.env_profiles.get((resolved.provider, resolved.model_id))
    if profile is not None and resolved.key_source == "env":
        return profile
    if resolved.api != "openai-completions":
        return resolved
    return ModelProfile(
        name=resolved.provider,
        base_url=resolved.model["baseUrl"],
        model=resolved.model_id,
        api_key=resolved.api_key,
        context_window=resolved.context_window,
        max_output=resolved.max_tokens or settings.PIWEB_LLM_MAX_OUTPUT,
        timeout=resolved.timeout,
        provider=resolved.provider,
    )
