"""Offline, extractive summaries of a conversation -- no language model involved.

Used when no model is configured: compactions and branch summaries still get a
structured summary, clearly labelled as machine-extracted.  The output uses
the same section layout as the model-written summaries (SPEC sections 7, 8):

compaction: Goal; Constraints & Preferences; Progress (Done / In Progress /
Blocked); Key Decisions; Next Steps; Critical Context.
branch: the same without Critical Context.

Where things come from:

* Goal -- the user's requests (short acknowledgements such as "ok" are skipped).
* Constraints & Preferences -- user sentences phrased as rules or preferences
  (must, don't, never, always, prefer, avoid, should, make sure...).
* Done -- tool calls whose results came back without error, and user-run bash
  commands that exited 0.
* In Progress -- tool calls still waiting for a result, an interrupted run.
* Blocked -- tool results flagged ``isError``, non-zero exit codes, cancelled
  commands, assistant turns that ended with ``stopReason: "error"``.  A failure
  that a later identical call got past is dropped.
* Key Decisions -- assistant sentences that read like a decision (heuristic).
* Next Steps -- the last user request that got no final answer, then open
  blockers and pending calls.
* Critical Context -- files read / modified (from tool arguments), extension
  notes, the latest assistant reply.

With a previous summary (or summary messages inside ``messages``) the result
keeps every earlier item and adds the new ones.  Output is deterministic and
bounded by ``max_chars``.

No Django imports: this is part of the pure context core.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "OFFLINE_LABEL",
    "SummaryData",
    "extract_summary_data",
    "merge_summary_data",
    "parse_summary",
    "render_summary",
    "summarize_offline",
]

OFFLINE_LABEL = (
    "(Offline summary: extracted from the conversation by rules, without a language model.)"
)

DEFAULT_MAX_CHARS = 6000
ITEM_MAX_CHARS = 220

# Framing that turns summary entries into user messages (SPEC section 4).
_COMPACTION_FRAME = (
    "The conversation history before this point was compacted into the following summary:"
)
_BRANCH_FRAME = "The following is a summary of a branch that this conversation came back from:"
_BRANCH_SUMMARY_PREAMBLE = (
    "The user explored a different conversation branch before returning here."
)

# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------

_KEYS = (
    "goal",
    "constraints",
    "done",
    "in_progress",
    "blocked",
    "decisions",
    "next_steps",
    "critical",
)


@dataclass
class SummaryData:
    goal: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    in_progress: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    critical: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    latest_reply: str = ""
    # subjects of calls that succeeded (not rendered; used to drop stale items on merge)
    resolved: list[str] = field(default_factory=list)
    # True when the messages end with every user request answered (not rendered)
    answered: bool = False


# --------------------------------------------------------------------------
# text helpers
# --------------------------------------------------------------------------


def _clean(text: str) -> str:
    return " ".join(str(text).split())


def _clip(text: str, limit: int = ITEM_MAX_CHARS) -> str:
    text = _clean(text)
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def _add(items: list[str], item: str) -> None:
    item = _clip(item)
    if item and item not in items:
        items.append(item)


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def _sentences(text: str) -> list[str]:
    return [s.strip(" -*•\t") for s in _SENTENCE_SPLIT.split(text) if s and s.strip(" -*•\t")]


def _first_line(text: str, last: bool = False) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    return lines[-1] if last else lines[0]


def _block_text(content: Any, kinds: tuple[str, ...] = ("text",)) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") in kinds:
            value = (
                block.get("text") if block.get("type") == "text" else block.get(block.get("type"))
            )
            if isinstance(value, str):
                parts.append(value)
    return "\n".join(parts)


def _compact_json(value: Any) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


_ACK = re.compile(
    r"^(ok(ay)?|yes|yep|no|nope|thanks?( you)?|thx|continue|go on|go ahead|proceed|sure|great|nice|"
    r"cool|lgtm|done|perfect|good)[\s.!]*$",
    re.IGNORECASE,
)
_CONSTRAINT = re.compile(
    r"\b(must|mustn'?t|must not|do ?n[o']t|never|always|prefer|preferably|avoid|should|shouldn'?t|"
    r"should not|make sure|ensure|only use|no need to|instead of|rather than|required?|requirement)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(i'?ll|i will|i'?m going to|i am going to|let'?s|we'?ll|decided?|deciding|chose|choose|opted|"
    r"going with|instead of|rather than|switch(ed|ing)? to|the fix is|the fix was|root cause|"
    r"the (problem|issue|bug) (is|was)|because|so that)\b",
    re.IGNORECASE,
)
_KNOWN_EXTENSIONS = (
    "py|js|mjs|cjs|ts|tsx|jsx|json|md|txt|toml|yaml|yml|html|css|go|rs|java|c|h|cpp|hpp|sh|sql|"
    "ini|cfg|lock|rb|php|kt|swift"
)
_PATH_IN_TEXT = re.compile(
    r"(?<![\w/.:-])("
    r"(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)*"  # /abs, ./rel, ../rel, ~/home
    r"|(?:[\w.-]+/)+[\w-]+\.[A-Za-z0-9]{1,8}"  # dir/file.ext
    rf"|[\w-]+\.(?:{_KNOWN_EXTENSIONS})"  # file.ext
    r")(?![\w/-])"
)


def _is_request(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and not _ACK.match(stripped)


# --------------------------------------------------------------------------
# parsing previous summaries
# --------------------------------------------------------------------------

_HEADING_KEYS = {
    "goal": "goal",
    "goals": "goal",
    "constraints & preferences": "constraints",
    "constraints and preferences": "constraints",
    "constraints": "constraints",
    "done": "done",
    "in progress": "in_progress",
    "blocked": "blocked",
    "key decisions": "decisions",
    "decisions": "decisions",
    "next steps": "next_steps",
    "critical context": "critical",
    "progress": "progress",
}
_ITEM_PREFIX = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*(?:\[[ xX]\]\s*)?")
_PLACEHOLDERS = {"(none)", "none", "(none yet)", "-", "n/a"}
_FILES_READ = "Files read: "
_FILES_MODIFIED = "Files modified: "
_LATEST_REPLY = "Latest assistant reply: "
_FOCUS = "Requested focus: "
_OMITTED_NOTE = re.compile(r"^\(\d+ more not shown\)$")
_OPEN_REQUEST = "Answer the open request: "
_WORKING_ON = "Working on: "
_CHECK_OUTCOME = "Check the outcome of the "
_NO_RESULT = " (no result yet)"
_ASSISTANT_FAILURE = "\0assistant-turn"  # key in the failures map, never rendered
# Items that describe an unfinished turn; stale once a later turn has ended.
_OPEN_TURN_PREFIXES = (_OPEN_REQUEST, _WORKING_ON, _CHECK_OUTCOME)


def _strip_frames(text: str) -> str:
    body = text.strip()
    for frame in (_COMPACTION_FRAME, _BRANCH_FRAME):
        if body.startswith(frame):
            body = body[len(frame) :]
    body = body.strip()
    if body.startswith(_BRANCH_SUMMARY_PREAMBLE):
        body = body.split("\n", 2)[-1] if body.count("\n") >= 2 else ""
    body = re.sub(r"^\s*<summary>\s*", "", body)
    body = re.sub(r"\s*</summary>\s*$", "", body)
    # File lists appended after the summary text are context, not prose.
    body = re.sub(r"<(read-files|modified-files)>.*?</\1>", "", body, flags=re.DOTALL)
    return body.strip()


def _split_file_list(value: str) -> list[str]:
    value = re.sub(r"\s*\(\+\d+ more\)\s*$", "", value)
    return [p.strip() for p in value.split(",") if p.strip()]


def parse_summary(text: str) -> SummaryData:
    """Read a structured summary (ours or a model-written one) back into items.

    Recognises ``## Goal`` / ``### Done`` style headings; list markers and
    checkboxes are stripped.  ``<read-files>`` / ``<modified-files>`` blocks
    feed the file lists.  Text without any known heading is kept as one
    Critical Context item.
    """
    data = SummaryData()
    if not text or not text.strip():
        return data
    _read_file_blocks(text, data)
    current: str | None = None
    recognised = False
    loose: list[str] = []
    for raw in _strip_frames(text).splitlines():
        line = raw.strip()
        if _skipped_line(line):
            continue
        key = _heading_key(line)
        if key is not None:
            recognised = True
            # loose lines right under "## Progress" count as in progress
            current = "in_progress" if key == "progress" else key
            continue
        item = _ITEM_PREFIX.sub("", line).strip()
        item = re.sub(r"^\*\*(.+?)\*\*\s*:?\s*", r"\1: ", item) if item.startswith("**") else item
        if not item or item.lower() in _PLACEHOLDERS:
            continue
        if current is None:
            loose.append(item)
        elif current != "critical" or not _critical_fact(data, item):
            _add(getattr(data, current), item)
    if not recognised and loose:
        _add(data.critical, "Earlier summary: " + " ".join(loose))
    elif loose:
        for item in loose:
            _add(data.critical, item)
    return data


def _read_file_blocks(text: str, data: SummaryData) -> None:
    """The ``<read-files>`` / ``<modified-files>`` blocks into the file lists."""
    for tag, target in (("read-files", data.files_read), ("modified-files", data.files_modified)):
        for block in re.findall(rf"<{tag}>(.*?)</{tag}>", text, flags=re.DOTALL):
            for line in block.splitlines():
                if line.strip() and line.strip() not in target:
                    target.append(line.strip())


def _skipped_line(line: str) -> bool:
    """Blank lines, our own label and notes, and the "… omitted" notes."""
    if not line or line == OFFLINE_LABEL or line.startswith(("(Offline summary", _FOCUS)):
        return True
    return bool(_OMITTED_NOTE.match(_ITEM_PREFIX.sub("", line)))


def _heading_key(line: str) -> str | None:
    """The section a known heading starts (``## Goal`` -> goal), else None."""
    heading = re.match(r"^#{1,6}\s*(.+?)\s*:?\s*$", line)
    if not heading:
        return None
    return _HEADING_KEYS.get(heading.group(1).strip().lower().rstrip(":"))


def _critical_fact(data: SummaryData, item: str) -> bool:
    """A Critical Context item that is a file list or the latest reply goes to its own
    field; True when it did."""
    for prefix, target in ((_FILES_READ, data.files_read), (_FILES_MODIFIED, data.files_modified)):
        if item.startswith(prefix):
            for p in _split_file_list(item[len(prefix) :]):
                if p not in target:
                    target.append(p)
            return True
    if item.startswith(_LATEST_REPLY):
        data.latest_reply = item[len(_LATEST_REPLY) :]
        return True
    return False


# --------------------------------------------------------------------------
# extraction
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _CallText:
    done: str  # "Edited a.py"
    active: str  # "Editing a.py"
    subject: str  # "edit of a.py" -- used for failures and to match retries


def _describe_call(name: str, args: Any) -> _CallText:
    args = args if isinstance(args, Mapping) else {}
    path = args.get("path") or args.get("file_path") or args.get("filePath")
    if name == "read" and path:
        return _CallText(f"Read {path}", f"Reading {path}", f"read of {path}")
    if name == "edit" and path:
        return _CallText(f"Edited {path}", f"Editing {path}", f"edit of {path}")
    if name == "write" and path:
        return _CallText(f"Wrote {path}", f"Writing {path}", f"write to {path}")
    if name == "ls":
        where = path or "."
        return _CallText(f"Listed {where}", f"Listing {where}", f"listing of {where}")
    if name == "bash" and isinstance(args.get("command"), str):
        cmd = f"`{_clip(args['command'], 120)}`"
        return _CallText(f"Ran {cmd}", f"Running {cmd}", cmd)
    if name in ("grep", "find") and args.get("pattern") is not None:
        pattern = f"`{_clip(str(args['pattern']), 60)}`" + (f" in {path}" if path else "")
        verb = "Searched for" if name == "grep" else "Looked for files matching"
        active = "Searching for" if name == "grep" else "Looking for files matching"
        return _CallText(f"{verb} {pattern}", f"{active} {pattern}", f"{name} {pattern}")
    rendered = _clip(_compact_json(args), 100) if args else ""
    call = f"{name}({rendered})"
    return _CallText(f"Called {call}", f"Calling {call}", call)


_EXIT_CODE = re.compile(
    r"(?:exit(?:ed)?(?: with)?(?: code)?|exit code)[:\s]+(-?\d+)", re.IGNORECASE
)


def _nonzero_exit(text: str) -> int | None:
    for match in _EXIT_CODE.finditer(text):
        code = int(match.group(1))
        if code != 0:
            return code
    return None


def _error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in lines:
        if re.search(r"error|exception|fail|denied|not found|no such", line, re.IGNORECASE):
            return line
    return lines[-1] if lines else ""


def _record_paths(data: SummaryData, name: str, args: Any) -> None:
    if not isinstance(args, Mapping):
        return
    path = args.get("path") or args.get("file_path") or args.get("filePath")
    if not isinstance(path, str) or not path:
        return
    if name in ("edit", "write"):
        if path not in data.files_modified:
            data.files_modified.append(path)
    elif name == "read":
        if path not in data.files_read:
            data.files_read.append(path)


@dataclass
class _Call:
    name: str
    args: Any
    text: _CallText
    index: int


def extract_summary_data(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[SummaryData, list[SummaryData]]:
    """Items extracted from ``messages`` plus the summaries embedded in them.

    Returns ``(new_data, embedded)`` where ``embedded`` are the parsed
    branch/compaction summaries found in the list (oldest first).
    """
    extraction = _Extraction()
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        read = _READERS.get(role) if isinstance(role, str) else None
        if read is not None:
            read(extraction, index, message)
    return extraction.finish(), extraction.embedded


class _Extraction:
    """What extract_summary_data gathers while it reads the messages in order."""

    def __init__(self) -> None:
        self.data = SummaryData()
        self.embedded: list[SummaryData] = []
        self.calls: dict[str, _Call] = {}
        self.answered_calls: set[str] = set()
        # subject -> blocked item; dropped again when the same call later succeeds
        self.failures: dict[str, str] = {}
        self.requests: list[tuple[int, str]] = []
        self.last_final_reply = -1
        self.interrupted: str | None = None

    def summary(self, index: int, message: Mapping[str, Any]) -> None:
        summary = message.get("summary")
        if isinstance(summary, str) and summary.strip():
            self.embedded.append(parse_summary(summary))

    def user(self, index: int, message: Mapping[str, Any]) -> None:
        data = self.data
        text = _block_text(message.get("content"))
        stripped = text.strip()
        if stripped.startswith((_COMPACTION_FRAME, _BRANCH_FRAME)):
            self.embedded.append(parse_summary(stripped))
            return
        if not _is_request(text):
            return
        self.requests.append((index, text))
        _add(data.goal, text)
        for sentence in _sentences(text):
            if _CONSTRAINT.search(sentence) and not sentence.endswith("?"):
                _add(data.constraints, sentence)
        for match in _PATH_IN_TEXT.finditer(text):
            mentioned = match.group(1).rstrip(".")
            if mentioned:
                _add(data.critical, f"Mentioned by the user: {mentioned}")

    def assistant(self, index: int, message: Mapping[str, Any]) -> None:
        data = self.data
        content = message.get("content")
        text = _block_text(content)
        for sentence in _sentences(text):
            if _DECISION.search(sentence) and not sentence.endswith("?") and len(sentence) > 15:
                _add(data.decisions, sentence)
        self._tool_calls(index, content)
        stop = message.get("stopReason")
        if stop == "error":
            reason = _first_line(str(message.get("errorMessage") or "")) or "no error message"
            self.failures[_ASSISTANT_FAILURE] = _clip(f"Assistant turn failed: {reason}")
            return
        # a later turn that did not fail means the model call works again
        self.failures.pop(_ASSISTANT_FAILURE, None)
        if stop == "aborted":
            self.interrupted = "The last assistant run was stopped before it finished"
        elif stop in ("stop", "length") or (
            stop is None and text.strip() and not _has_tool_calls(content)
        ):
            self.last_final_reply = index
            self.interrupted = None
            if text.strip():
                data.latest_reply = _clip(text, 300)

    def _tool_calls(self, index: int, content: Any) -> None:
        if not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "toolCall":
                name = str(block.get("name") or "tool")
                args = block.get("arguments")
                call_id = str(block.get("id") or f"call-{index}-{len(self.calls)}")
                self.calls[call_id] = _Call(name, args, _describe_call(name, args), index)
                _record_paths(self.data, name, args)

    def tool_result(self, index: int, message: Mapping[str, Any]) -> None:
        call_id = str(message.get("toolCallId") or "")
        call = self.calls.get(call_id)
        name = str(message.get("toolName") or (call.name if call else "tool"))
        described = (
            call.text
            if call
            else _CallText(
                f"Finished a {name} call started earlier", f"Running {name}", f"{name} call"
            )
        )
        self.answered_calls.add(call_id)
        text = _block_text(message.get("content"))
        code = _nonzero_exit(text) if name == "bash" else None
        if message.get("isError") or code is not None:
            reason = _error_line(text) or (f"exit code {code}" if code is not None else "error")
            self.failures[described.subject] = f"{described.subject} failed: {reason}"
            return
        self.failures.pop(described.subject, None)
        self.data.resolved.append(described.subject)
        item = described.done
        if name == "bash":
            tail = _first_line(text, last=True)
            if tail:
                item = f"{item} -> {_clip(tail, 80)}"
        _add(self.data.done, item)

    def bash(self, index: int, message: Mapping[str, Any]) -> None:
        if message.get("excludeFromContext"):
            return
        command = _clip(str(message.get("command") or ""), 120)
        subject = f"user command `{command}`"
        label = f"User ran `{command}`"
        output = str(message.get("output") or "")
        exit_code = message.get("exitCode")
        if message.get("cancelled"):
            self.failures[subject] = f"{subject} was cancelled"
        elif isinstance(exit_code, int) and exit_code != 0:
            reason = _error_line(output)
            self.failures[subject] = f"{subject} exited with code {exit_code}" + (
                f": {reason}" if reason else ""
            )
        else:
            self.failures.pop(subject, None)
            self.data.resolved.append(subject)
            tail = _first_line(output, last=True)
            _add(self.data.done, f"{label} -> {_clip(tail, 80)}" if tail else label)

    def custom(self, index: int, message: Mapping[str, Any]) -> None:
        text = _block_text(message.get("content"))
        if text.strip():
            kind = message.get("customType") or "extension"
            _add(self.data.critical, f"Note ({kind}): {_first_line(text)}")

    def finish(self) -> SummaryData:
        """Failures, calls without a result and open requests, once every message is read."""
        data = self.data
        for item in self.failures.values():
            _add(data.blocked, item)
        pending = [c for cid, c in self.calls.items() if cid not in self.answered_calls]
        for call in pending:
            _add(data.in_progress, call.text.active + _NO_RESULT)
        if self.interrupted:
            _add(data.in_progress, self.interrupted)
        requests = self.requests
        unanswered = [text for idx, text in requests if idx > self.last_final_reply]
        data.answered = self.last_final_reply >= 0 and not unanswered
        if unanswered:
            latest = unanswered[-1]
            if pending or any(c.index > requests[-1][0] for c in self.calls.values()):
                _add(data.in_progress, _WORKING_ON + latest)
            _add(data.next_steps, _OPEN_REQUEST + latest)
        for item in list(data.blocked)[:2]:
            _add(data.next_steps, f"Resolve: {item}")
        for call in pending[:2]:
            _add(data.next_steps, _CHECK_OUTCOME + call.text.subject)
        return data


_READERS = {
    "compactionSummary": _Extraction.summary,
    "branchSummary": _Extraction.summary,
    "user": _Extraction.user,
    "assistant": _Extraction.assistant,
    "toolResult": _Extraction.tool_result,
    "bashExecution": _Extraction.bash,
    "custom": _Extraction.custom,
}


def _has_tool_calls(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "toolCall" for b in content
    )


_STALE_KEYS = ("in_progress", "blocked", "next_steps")


def merge_summary_data(older: SummaryData, newer: SummaryData) -> SummaryData:
    """Keep every item of ``older`` and add the new ones from ``newer``.

    Next Steps and In Progress describe the present, so when ``newer`` has any
    they come first.  Older In Progress / Blocked / Next Steps items that name
    a call which has since succeeded are dropped (they are finished now).
    """
    merged = SummaryData()
    for key in _KEYS:
        old_items, new_items = getattr(older, key), getattr(newer, key)
        target = getattr(merged, key)
        if key in _STALE_KEYS and newer.resolved:
            old_items = [it for it in old_items if not any(subj in it for subj in newer.resolved)]
        if key in _STALE_KEYS and newer.answered:
            old_items = [
                it
                for it in old_items
                if not (it.startswith(_OPEN_TURN_PREFIXES) or it.endswith(_NO_RESULT))
            ]
        order = (
            (new_items, old_items)
            if key in ("next_steps", "in_progress") and new_items
            else (old_items, new_items)
        )
        for group in order:
            for item in group:
                _add(target, item)
    for key in ("files_read", "files_modified"):
        target = getattr(merged, key)
        for path in [*getattr(older, key), *getattr(newer, key)]:
            if path not in target:
                target.append(path)
    merged.latest_reply = newer.latest_reply or older.latest_reply
    merged.resolved = [*older.resolved, *[r for r in newer.resolved if r not in older.resolved]]
    merged.answered = newer.answered
    return merged


# --------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------

_SECTION_CAPS = {
    "goal": 6,
    "constraints": 8,
    "done": 15,
    "in_progress": 6,
    "blocked": 8,
    "decisions": 8,
    "next_steps": 5,
    "critical": 10,
}
# Which end of a long list to keep: goals and constraints are stated early,
# progress and decisions matter most when recent.
_KEEP_HEAD = {"goal", "constraints", "next_steps", "in_progress"}
_FILE_LIST_CAP = 15


def _select(
    items: list[str], cap: int, keep_head: bool, focus_words: set[str]
) -> tuple[list[str], int]:
    if len(items) <= cap:
        return list(items), 0
    if keep_head and items:
        # the first item (the original goal) always stays; then the most recent
        chosen_idx = {0} | set(range(len(items) - (cap - 1), len(items)))
    else:
        chosen_idx = set(range(len(items) - cap, len(items)))
    if focus_words:
        matching = [i for i, it in enumerate(items) if _mentions(it, focus_words)]
        for i in matching:
            if i in chosen_idx:
                continue
            # swap out the oldest non-matching pick
            victims = sorted(
                j for j in chosen_idx if j != 0 and not _mentions(items[j], focus_words)
            )
            if not victims:
                break
            chosen_idx.discard(victims[0])
            chosen_idx.add(i)
    chosen = [items[i] for i in sorted(chosen_idx)]
    return chosen, len(items) - len(chosen)


def _mentions(text: str, words: set[str]) -> bool:
    lowered = text.lower()
    return any(w in lowered for w in words)


def _file_line(prefix: str, paths: list[str]) -> str:
    shown = paths[-_FILE_LIST_CAP:]
    extra = len(paths) - len(shown)
    return prefix + ", ".join(shown) + (f" (+{extra} more)" if extra else "")


def render_summary(
    data: SummaryData,
    kind: str = "compaction",
    custom_focus: str | None = None,
    caps: Mapping[str, int] | None = None,
) -> str:
    caps = dict(_SECTION_CAPS if caps is None else caps)
    focus_words = {w for w in re.findall(r"[\w-]{4,}", (custom_focus or "").lower())}

    def block(
        key: str, marker: str = "- ", numbered: bool = False, lead: Sequence[str] = ()
    ) -> list[str]:
        chosen, omitted = _select(getattr(data, key), caps[key], key in _KEEP_HEAD, focus_words)
        values = [*lead, *chosen]
        if not values:
            return ["- (none)"]
        if numbered:
            lines = [f"{i}. {v}" for i, v in enumerate(values, 1)]
        else:
            lines = [f"{marker}{v}" for v in values]
        if omitted:
            lines.append(f"- ({omitted} more not shown)")
        return lines

    out = [OFFLINE_LABEL]
    if custom_focus and custom_focus.strip():
        out.append(_FOCUS + _clip(custom_focus, 300))
    out += ["", "## Goal", *block("goal")]
    out += ["", "## Constraints & Preferences", *block("constraints")]
    out += ["", "## Progress", "### Done", *block("done", "- [x] ")]
    out += ["### In Progress", *block("in_progress", "- [ ] ")]
    out += ["### Blocked", *block("blocked")]
    out += ["", "## Key Decisions", *block("decisions")]
    out += ["", "## Next Steps", *block("next_steps", numbered=True)]
    if kind == "compaction":
        lead = []
        if data.files_modified:
            lead.append(_file_line(_FILES_MODIFIED, data.files_modified))
        read_only = [p for p in data.files_read if p not in data.files_modified]
        if read_only:
            lead.append(_file_line(_FILES_READ, read_only))
        critical = block("critical", lead=lead)
        if data.latest_reply:
            reply = f"- {_LATEST_REPLY}{_clip(data.latest_reply, 300)}"
            critical = [reply] if critical == ["- (none)"] else [*critical, reply]
        out += ["", "## Critical Context", *critical]
    return "\n".join(out)


def summarize_offline(
    messages: Sequence[Mapping[str, Any]],
    previous_summary: str | None = None,
    custom_focus: str | None = None,
    kind: str = "compaction",
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str:
    """Extractive summary of ``messages`` (pi-shaped agent messages).

    ``kind`` is ``"compaction"`` (six sections) or ``"branch"`` (five).  The
    first line always says the summary was produced offline.  The result is
    at most ``max_chars`` characters (never less than the fixed skeleton).
    """
    if kind not in ("compaction", "branch"):
        raise ValueError(f"kind must be 'compaction' or 'branch', not {kind!r}")
    data, embedded = extract_summary_data(list(messages or []))
    base = parse_summary(previous_summary) if previous_summary else SummaryData()
    for earlier in embedded:
        base = merge_summary_data(base, earlier)
    merged = merge_summary_data(base, data)

    caps = dict(_SECTION_CAPS)
    text = render_summary(merged, kind, custom_focus, caps)
    # Shrink the longest lists until the text fits; deterministic order.
    while len(text) > max_chars:
        key = max(
            (k for k in _KEYS if caps[k] > 1),
            key=lambda k: (min(len(getattr(merged, k)), caps[k]), -_KEYS.index(k)),
            default=None,
        )
        if key is None or min(len(getattr(merged, key)), caps[key]) <= 1:
            break
        caps[key] = min(len(getattr(merged, key)), caps[key]) - 1
        text = render_summary(merged, kind, custom_focus, caps)
    if len(text) > max_chars:
        text = text[: max(0, max_chars - 1)].rstrip() + "…"
    return text
