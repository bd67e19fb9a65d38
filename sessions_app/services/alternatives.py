"""Alternatives (issue 36): the workspace copy each variant of a step runs in.

`start` makes a copy per variant and starts each as a sibling branch at the node (see
its docstring); the check command runs after each run (``jobs/agent_run.py``); the
comparison is ``selectors/alternatives.py`` (docs/alternatives.md).

A variant's folder is a new folder in its user's area (``alternatives/<session>-<node>-
v<n>-<random>``), made and removed through safefs, so the quota counts it like any
workspace of theirs; archiving its branch removes it (`remove_copies`), showing the
branch again restores it from the branch's snapshots (`restore_copy`). It holds the
files as the node left them: the node's snapshot (the newest on its path, ``selectors.changes.
state_at``) checked out from the session's shadow repository into the new folder, by
``git read-tree -u`` in the sandbox on a scratch index (the repository is mounted
read-only: its own index and work tree are not touched). A node with no snapshot (an
imported session, snapshots off) gets a copy of the session's current folder instead,
made by ``cp -a`` in the sandbox with that folder mounted read-only; the result says
which (`source`), so that the comparison can say so.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass

from django.db import transaction

from sessions_app.agent import safefs
from sessions_app.agent.sandbox import Bind, SandboxUnavailable, launch_in, run_in
from sessions_app.agent.shell import command_problem
from sessions_app.agent.snapshots import ShadowRepo, SnapshotError
from sessions_app.agent.tools import ALL_TOOLS, TOOLS_BY_NAME
from sessions_app.core.errors import ServiceError
from sessions_app.core.pi_config import THINKING_LEVELS
from sessions_app.models import Job, Session
from sessions_app.selectors import alternatives as alternatives_selectors
from sessions_app.selectors import changes as changes_selectors
from sessions_app.selectors import users, workspaces
from sessions_app.selectors.entries import get_entry
from sessions_app.selectors.llm.catalog import HOW_TO_CONFIGURE, find_model
from sessions_app.selectors.llm.keys import ModelUnavailable
from sessions_app.selectors.model_input import model_input
from sessions_app.services import chat, resources, sandboxing, sessions
from sessions_app.services.jobs import agent_run
from sessions_app.services.workspaces import protect_user_area, user_workspace

FOLDER = "alternatives"
COPY_TIMEOUT = 300


class AlternativeError(ServiceError):
    """A variant workspace that cannot be made, with the message to show."""

    code = "alternatives"


@dataclass(frozen=True)
class VariantWorkspace:
    path: str
    source: str  # "snapshot" (the node's files) | "copy" (the current folder's)
    commit: str = ""  # the snapshot checked out


def variant_name(session: Session, at_pi_id: str, index: int) -> str:
    """The name of a new folder for variant `index` of a try at `at_pi_id` (each try at
    the node gets folders of its own)."""
    return f"{session.pi_id[:8]}-{at_pi_id[:16]}-v{index}-{uuid.uuid4().hex[:6]}"


def make_variant_workspace(session: Session, user, at_pi_id: str, index: int) -> VariantWorkspace:
    """A new folder holding the files as the node `at_pi_id` left them (see the module
    docstring). Raises AlternativeError."""
    folder = _new_folder(user, variant_name(session, at_pi_id, index))
    try:
        made = _fill(session, user, at_pi_id, folder)
    except BaseException:
        remove_variant_workspace(user, folder)
        raise
    workspaces.check_session_cwd(folder, user.pk)
    return made


def _new_folder(user, name: str) -> str:
    """Make ``<area>/alternatives/<name>`` through safefs (no link followed on the way)."""
    if problem := resources.reserve_problem() or resources.quota_problem(user.pk):
        raise AlternativeError(f"No workspace copy can be made now. {problem}", 507)
    area = os.fspath(user_workspace(user))
    try:
        return safefs.mkdir_beneath(area, f"{FOLDER}/{name}")
    except FileExistsError:
        raise AlternativeError(f"{os.path.join(area, FOLDER, name)} exists already.", 409) from None
    except OSError as exc:
        raise AlternativeError(f"The variant's folder could not be made: {exc}") from None


def _fill(session: Session, user, leaf_pi_id: str, folder: str) -> VariantWorkspace:
    """Put the files as the entry `leaf_pi_id` left them into the new `folder`: its
    snapshot (the newest on its path) if the shadow repository has it, else a copy of the
    session's current folder."""
    snapshot = changes_selectors.state_at(session, leaf_pi_id)
    repo = None
    if snapshot is not None:  # the repository of the folder the snapshot was taken in
        repo = changes_selectors.repo_for(session, snapshot.entry.pi_id)
    if snapshot is not None and repo is not None and repo.has(snapshot.commit):
        _check_out(repo, snapshot.commit, folder)
        return VariantWorkspace(folder, "snapshot", snapshot.commit)
    _copy_current(session, user, folder)
    return VariantWorkspace(folder, "copy")


def _variant_rel(user, path: str) -> str | None:
    """``alternatives/<name>`` when `path` names a folder directly in the user's
    alternatives folder (as `_new_folder` wrote it), else None."""
    path = os.path.normpath(path or "/")
    if os.path.dirname(path) != os.path.join(os.fspath(user_workspace(user)), FOLDER):
        return None
    return f"{FOLDER}/{os.path.basename(path)}"


def remove_variant_workspace(user, path: str) -> bool:
    """Delete a variant's folder (its branch was archived or deleted) through safefs;
    only a folder directly in the user's ``alternatives`` folder. True when one was
    removed."""
    rel = _variant_rel(user, path)
    if rel is None:
        return False
    try:
        return safefs.remove_beneath(os.fspath(user_workspace(user)), rel)
    except OSError:
        return False


def _check_out(source: ShadowRepo, commit: str, folder: str) -> None:
    sandboxing.make_var_reachable()
    try:
        source.export_to(commit, folder)
    except SnapshotError as exc:
        raise AlternativeError(f"The node's files could not be restored: {exc}") from None


def _copy_current(session: Session, user, folder: str) -> None:
    """``cp -a`` of the session's current folder into `folder`, in the sandbox as the
    commands' account with the source read-only."""
    try:
        source = workspaces.session_cwd(session)
    except Exception as exc:  # WorkspaceError: nothing here to copy
        raise AlternativeError(f"This session's folder cannot be copied: {exc}") from None
    config = sandboxing.config()
    protect_user_area(user, sandboxing.make_var_reachable())
    argv = ["cp", "-a", "--", os.path.join(source, "."), folder]
    try:
        if config.enabled:
            binds = [Bind(source, source, writable=False, hand_over=False)]
            binds.append(Bind(folder, folder, True))
            env = {"LANG": "C.UTF-8"}
            done = run_in(launch_in(config, argv, binds, env, folder), timeout=COPY_TIMEOUT)
        else:  # single-user machines only: the copy runs as the server, like every command
            done = subprocess.run(argv, capture_output=True, timeout=COPY_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired, SandboxUnavailable) as exc:
        raise AlternativeError(f"The folder could not be copied: {exc}") from None
    if done.returncode != 0:
        why = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
        raise AlternativeError(f"The folder could not be copied:\n{why[:2000]}")


# ----------------------------------------------------------------------------- variants

MAX_VARIANTS = 4
CHECK_TYPE = "piweb.check"  # the customType of a check's entry (pi ignores it)


#: The tool sets the form offers by name (any subset of the tools can be given too).
TOOL_SETS = {
    "read-only": ("read", "grep", "find", "ls"),
    "all": tuple(t.name for t in ALL_TOOLS),
}


@dataclass(frozen=True)
class Variant:
    """One way to take the next step: the message, and what it changes (a model
    `provider/id`, a thinking level, a tool set; empty: the node's)."""

    message: str
    model: str = ""
    thinking: str = ""
    tools: tuple[str, ...] = ()


def parse_tools(value: str) -> tuple[str, ...]:
    """A tool set as given: a name of `TOOL_SETS` or tool names separated by commas (as
    pi's ``--tools``); empty: the node's. Raises AlternativeError for an unknown name."""
    value = (value or "").strip()
    if not value:
        return ()
    if value in TOOL_SETS:
        return TOOL_SETS[value]
    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    unknown = [n for n in names if n not in TOOLS_BY_NAME]
    if unknown or not names:
        known = ", ".join([*TOOL_SETS, *TOOLS_BY_NAME])
        raise AlternativeError(f"Unknown tool set {value!r} (known: {known}).", 400)
    return names


@dataclass(frozen=True)
class Started:
    job: Job
    variant: Variant
    workspace: VariantWorkspace
    head_pi_id: str  # the first entry of the variant's branch (its workspace choice)


def start(
    session: Session, user, at_pi_id: str, variants: list[Variant], check: str = ""
) -> list[Started]:
    """Start each variant as a sibling branch at `at_pi_id`, in its own workspace copy,
    run as its own job within the user's run limit (the rest held, visibly). Its branch:
    the workspace choice, then a model_change and a thinking_level_change where the
    variant changes them, then the user's message. `check` runs after each run, in its
    workspace (see agent_run). Raises AlternativeError or ChatError."""
    if not 1 <= len(variants) <= MAX_VARIANTS:
        raise AlternativeError(f"Give 1 to {MAX_VARIANTS} variants.", 400)
    check = (check or "").strip()
    if check and (problem := command_problem(check)):
        raise AlternativeError(problem, 400)
    for variant in variants:
        chat.parse_input(variant.message)  # ChatError when empty or too long
        if variant.model:
            provider, _, model_id = variant.model.partition("/")
            if not model_id or find_model(provider, model_id) is None:
                raise AlternativeError(f"Unknown model: {variant.model!r}.", 400)
        if variant.thinking and variant.thinking not in THINKING_LEVELS:
            raise AlternativeError(f"Unknown thinking level: {variant.thinking!r}.", 400)
        if variant.tools:
            parse_tools(",".join(variant.tools))  # AlternativeError for an unknown name
    get_entry(session, at_pi_id)  # NotFound
    try:
        sandboxing.check_available()
    except SandboxUnavailable as exc:
        raise AlternativeError(str(exc), 503) from None
    started = []
    try:
        for index, variant in enumerate(variants, 1):
            made = make_variant_workspace(session, user, at_pi_id, index)
            try:
                started.append(_start_one(session, user, at_pi_id, index, variant, made, check))
            except BaseException:
                remove_variant_workspace(user, made.path)
                raise
    finally:
        resources.request_measure(user.pk, force=True)  # the quota counts the copies
    return started


def _start_one(session, user, at_pi_id, index, variant: Variant, made, check) -> Started:
    with transaction.atomic():
        locked = sessions.lock_session(session.pk)

        def add(payload: dict, parent: str):
            return sessions.append_entry(
                locked, payload, parent_pi_id=parent, move_leaf=False, actor=user
            )

        data = {"cwd": made.path, "kind": "alternative", "by": user.pk, "source": made.source}
        choice = {"cwd": made.path, "by": user.pk, "alternative": True}
        if variant.tools:  # the branch's tool set (selectors.model_input: `tools`)
            data["tools"] = choice["tools"] = list(variant.tools)
        head = add({"type": "custom", "customType": workspaces.CHOICE_TYPE, "data": data}, at_pi_id)
        locked.refresh_from_db()
        chosen = dict((locked.settings or {}).get("workspaces") or {})
        chosen[head.pi_id] = choice
        locked.settings = {**(locked.settings or {}), "workspaces": chosen}
        locked.save(update_fields=["settings"])
        parent = head.pi_id
        if variant.model:
            provider, _, model_id = variant.model.partition("/")
            change = {"type": "model_change", "provider": provider, "modelId": model_id}
            parent = add(change, parent).pi_id
        if variant.thinking:
            level = {"type": "thinking_level_change", "thinkingLevel": variant.thinking}
            parent = add(level, parent).pi_id
        try:
            resolved = model_input(locked, parent).resolved(user)
        except ModelUnavailable as exc:
            raise AlternativeError(str(exc), 400) from None
        if resolved is None:
            raise AlternativeError(HOW_TO_CONFIGURE, 400)
        message = add(agent_run.user_message(variant.message), parent)
        params = {
            "mode": "agent",
            "parent": message.pi_id,
            "key_source": resolved.key_source,
            "check": check,
            "alternative": {"at": at_pi_id, "index": index, "head": head.pi_id,
                            "source": made.source, "cwd": made.path,
                            "tools": list(variant.tools)},
        }  # fmt: skip
        job = agent_run.create(
            locked,
            actor=user,
            params=params,
            model=f"{resolved.provider}/{resolved.model_id}"[:200],
        )
        sessions.record_activity(locked, user, "alternative_started", at=at_pi_id, index=index)
    return Started(job, variant, made, head.pi_id)


def remove_copies(session: Session, head_pi_id: str | None = None) -> list[str]:
    """Delete the workspace copies of the session's variants (of the branch whose head is
    `head_pi_id`, else all): its branch was archived, or the session is deleted. The
    branch stays; showing it again puts the folder back from its snapshots
    (`restore_copy`). The removed paths."""
    chosen = (session.settings or {}).get("workspaces") or {}
    busy = alternatives_selectors.heads_running(session)
    removed = []
    for head, choice in chosen.items():
        if not choice.get("alternative") or (head_pi_id is not None and head != head_pi_id):
            continue
        if head in busy:  # a run still works there: it keeps its folder
            continue
        owner = users.user_by_pk(choice.get("by"))
        if owner is not None and remove_variant_workspace(owner, choice["cwd"]):
            removed.append(choice["cwd"])
            resources.request_measure(owner.pk, force=True)
    return removed


def restore_copy(session: Session, head_pi_id: str) -> str | None:
    """Put back the workspace copy of the variant whose branch starts at `head_pi_id`
    (its branch is shown again after `remove_copies` took the folder away): the same
    folder, holding the files as the branch left them (its newest snapshot: the end of
    the session's leaf if that lies on the branch, else of the branch's newest entry).
    The restored path; None when nothing was missing. Raises AlternativeError."""
    choice = ((session.settings or {}).get("workspaces") or {}).get(head_pi_id) or {}
    if not choice.get("alternative") or choice.get("by") is None:
        return None
    owner = users.user_by_pk(choice["by"])
    if owner is None:
        return None
    rel = _variant_rel(owner, choice["cwd"])
    if rel is None:
        return None
    try:
        folder = safefs.mkdir_beneath(os.fspath(user_workspace(owner)), rel)
    except FileExistsError:
        return None  # never removed (a run worked there), or restored already
    except OSError as exc:
        raise AlternativeError(f"The variant's folder could not be made: {exc}") from None
    try:
        _fill(session, owner, alternatives_selectors.branch_end(session, head_pi_id), folder)
    except BaseException:
        remove_variant_workspace(owner, folder)
        raise
    return folder


def stop_all(session: Session, user, jobs) -> list[Job]:
    """Stop every variant still running; the finished ones stay as they are."""
    return chat.stop_runs(session, user, [str(job.pk) for job in jobs])
