"""The edit tool's text work: several replacements matched against one original text.

The rules are pi 0.80.2's (``edits[]`` of its edit tool); the code is ours:

- the file's byte-order mark is set aside before matching and put back afterwards, and
  its line ending (the first one in the file: CRLF or LF) is kept: the text is matched
  with every line ending turned into LF, and LF turned back into CRLF on write when the
  file used CRLF;
- every ``oldText`` (its line endings turned into LF too) must be non-empty and found
  exactly once in the ORIGINAL text, never in the text left by another replacement of
  the same call;
- a text that is not found as it is may still match "loosely": trailing spaces of each
  line dropped, typographic quotes, dashes and special spaces read as their ASCII
  forms, and NFKC applied. When any replacement needs that, all of them are matched in
  the loose form, and only the lines they touch are rewritten from it, every other line
  keeps its exact bytes;
- no two matched regions may overlap; all replacements apply together, or none;
- a call that changes nothing is refused.

:func:`apply_edits` returns the old and new LF texts; :func:`display_diff` and
:func:`unified_patch` describe the change for the result's ``details``.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

BOM = "\ufeff"


class EditError(ValueError):
    """A refused edit; the message is what the model reads."""


def split_bom(text: str) -> tuple[str, str]:
    """(the byte-order mark or "", the text after it)."""
    return (BOM, text[1:]) if text.startswith(BOM) else ("", text)


def line_ending(text: str) -> str:
    """ "\\r\\n" when the first line break of ``text`` is CRLF, else "\\n"."""
    lf = text.find("\n")
    if lf == -1:
        return "\n"
    crlf = text.find("\r\n")
    return "\r\n" if crlf != -1 and crlf < lf else "\n"


def to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def from_lf(text: str, ending: str) -> str:
    return text.replace("\n", "\r\n") if ending == "\r\n" else text


_QUOTES_1 = re.compile("[\u2018\u2019\u201a\u201b]")
_QUOTES_2 = re.compile("[\u201c\u201d\u201e\u201f]")
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]")
_SPACES = re.compile("[\u00a0\u2002-\u200a\u202f\u205f\u3000]")


def loosen(text: str) -> str:
    """The loose form used when an exact match fails (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = _QUOTES_1.sub("'", text)
    text = _QUOTES_2.sub('"', text)
    text = _DASHES.sub("-", text)
    return _SPACES.sub(" ", text)


@dataclass(frozen=True)
class _Match:
    index: int  # which edit
    start: int
    length: int
    new_text: str


def _locate(haystack: str, needle: str) -> tuple[int, int, bool] | None:
    """(start, length, loose) of ``needle`` in ``haystack``: exact first, then loose."""
    start = haystack.find(needle)
    if start != -1:
        return start, len(needle), False
    loose_needle = loosen(needle)
    start = loosen(haystack).find(loose_needle)
    if start == -1:
        return None
    return start, len(loose_needle), True


def _count(haystack: str, needle: str) -> int:
    return loosen(haystack).count(loosen(needle))


def _where(index: int, total: int) -> str:
    return "oldText" if total == 1 else f"edits[{index}].oldText"


def _lines_with_ends(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+", text)


def _replace(text: str, matches: list[_Match], offset: int = 0) -> str:
    out = text
    for m in sorted(matches, key=lambda m: m.start, reverse=True):
        at = m.start - offset
        out = out[:at] + m.new_text + out[at + m.length :]
    return out


def _replace_keeping_lines(original: str, loose: str, matches: list[_Match]) -> str:
    """Apply ``matches`` (found in ``loose``, the loose form of ``original``) so that
    every line no match touches keeps its bytes from ``original``."""
    original_lines = _lines_with_ends(original)
    spans: list[tuple[int, int]] = []
    at = 0
    for line in _lines_with_ends(loose):
        spans.append((at, at + len(line)))
        at += len(line)
    if len(original_lines) != len(spans):
        raise EditError("The file's lines could not be lined up for a loose match.")
    groups: list[list[Any]] = []  # [first line, end line, matches]
    for m in sorted(matches, key=lambda m: m.start):
        first = next((i for i, (s, e) in enumerate(spans) if s <= m.start < e), None)
        if first is None:
            raise EditError("A replacement falls outside the file.")
        last = first
        while last < len(spans) and spans[last][1] < m.start + m.length:
            last += 1
        if last >= len(spans):
            raise EditError("A replacement falls outside the file.")
        if groups and first < groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], last + 1)
            groups[-1][2].append(m)
        else:
            groups.append([first, last + 1, [m]])
    pieces: list[str] = []
    kept_from = 0
    for first, end, group in groups:
        pieces.append("".join(original_lines[kept_from:first]))
        start, stop = spans[first][0], spans[end - 1][1]
        pieces.append(_replace(loose[start:stop], group, offset=start))
        kept_from = end
    pieces.append("".join(original_lines[kept_from:]))
    return "".join(pieces)


def apply_edits(text: str, edits: list[dict[str, Any]], path: str) -> tuple[str, str]:
    """(old, new): ``text`` (LF line endings, no BOM) before and after every edit of
    ``edits`` (``[{oldText, newText}]``). Raises :class:`EditError` when one is refused."""
    total = len(edits)
    wanted = [(to_lf(e["oldText"]), to_lf(e["newText"])) for e in edits]
    for i, (old, _new) in enumerate(wanted):
        if not old:
            raise EditError(f"{_where(i, total)} is empty; it has to quote text of {path}.")
    loose = any((_locate(text, old) or (0, 0, False))[2] for old, _ in wanted)
    base = loosen(text) if loose else text
    matches: list[_Match] = []
    for i, (old, new) in enumerate(wanted):
        found = _locate(base, old)
        if found is None:
            raise EditError(
                f"{_where(i, total)} was not found in {path}. It has to match the file "
                "exactly, spaces, indentation and line breaks included."
            )
        count = _count(base, old)
        if count > 1:
            raise EditError(
                f"{_where(i, total)} occurs {count} times in {path}; it has to occur once. "
                "Quote more of the surrounding lines so that it is unique."
            )
        matches.append(_Match(i, found[0], found[1], new))
    ordered = sorted(matches, key=lambda m: m.start)
    for before, after in zip(ordered, ordered[1:], strict=False):
        if before.start + before.length > after.start:
            raise EditError(
                f"edits[{before.index}] and edits[{after.index}] overlap in {path}. "
                "Make them one edit, or choose regions that do not overlap."
            )
    new_text = _replace_keeping_lines(text, base, matches) if loose else _replace(base, matches)
    if new_text == text:
        raise EditError(
            f"{path} is unchanged: "
            + (
                "the replacement gives the same text."
                if total == 1
                else "the replacements give the same text."
            )
        )
    return text, new_text


# --------------------------------------------------------------------------- diffs


def _parts(old: str, new: str) -> list[tuple[str, list[str]]]:
    """The line diff as (kind, lines) parts, kind " " (same), "-" or "+"; removed lines
    come before the added ones that replace them."""
    a, b = _lines_with_ends(old), _lines_with_ends(new)
    parts: list[tuple[str, list[str]]] = []

    def add(kind: str, lines: list[str]) -> None:
        parts.append((kind, [line[:-1] if line.endswith("\n") else line for line in lines]))

    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            add(" ", a[i1:i2])
            continue
        if i2 > i1:
            add("-", a[i1:i2])
        if j2 > j1:
            add("+", b[j1:j2])
    return parts


def display_diff(old: str, new: str, context: int = 4) -> tuple[str, int | None]:
    """(the diff shown with the edit's result, the first changed line of the new text).

    One line per changed line, ``+N text`` or ``-N text`` with its line number, and up
    to ``context`` unchanged lines `` N text`` around each change; skipped unchanged
    lines are one `` ...`` line. Numbers are right-aligned to the longest."""
    width = len(str(max(len(old.split("\n")), len(new.split("\n")))))
    parts = _parts(old, new)
    out: list[str] = []
    old_no = new_no = 1
    first: int | None = None
    gap = " " + " " * width + " ..."

    def same(lines: list[str]) -> None:
        nonlocal old_no, new_no
        for line in lines:
            out.append(f" {str(old_no).rjust(width)} {line}")
            old_no += 1
            new_no += 1

    def skip(count: int) -> None:
        nonlocal old_no, new_no
        if count > 0:
            out.append(gap)
            old_no += count
            new_no += count

    for k, (kind, lines) in enumerate(parts):
        if kind != " ":
            if first is None:
                first = new_no
            for line in lines:
                if kind == "+":
                    out.append(f"+{str(new_no).rjust(width)} {line}")
                    new_no += 1
                else:
                    out.append(f"-{str(old_no).rjust(width)} {line}")
                    old_no += 1
            continue
        after_change = k > 0 and parts[k - 1][0] != " "
        before_change = k + 1 < len(parts) and parts[k + 1][0] != " "
        if after_change and before_change:
            if len(lines) <= 2 * context:
                same(lines)
            else:
                same(lines[:context])
                skip(len(lines) - 2 * context)
                same(lines[-context:])
        elif after_change:
            same(lines[:context])
            skip(len(lines) - min(context, len(lines)))
        elif before_change:
            hidden = max(0, len(lines) - context)
            skip(hidden)
            same(lines[hidden:])
        else:
            old_no += len(lines)
            new_no += len(lines)
    return "\n".join(out), first


def unified_patch(path: str, old: str, new: str, context: int = 4) -> str:
    """A standard unified diff of the change (``--- path`` / ``+++ path`` headers)."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        path,
        path,
        n=context,
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
