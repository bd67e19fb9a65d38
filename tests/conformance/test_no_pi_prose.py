"""pi's prose stays out of this repository: the words piweb ships are its own.

The phrases are read from pi at test time (its golden outputs and the pinned package:
the system prompt's fixed words, the skills intro, the tools' descriptions, prompt lines
and guideline bullets, the summary prompts) and cut into sentences; none of them may
occur in any file git tracks. The formats the seed and SPEC require verbatim (the
summary framing, the branch-summary preamble, headings such as "## Goal", the
project-context block) are not prose of those prompts and are not looked for.
"""

from __future__ import annotations

import re
import subprocess

from tests.conformance.golden import REPO_ROOT
from tests.support.pi_wording import (
    _prompt_parts,
    pi_skills_intro,
    pi_summary_prompts,
    pi_tool_definitions,
)

MIN_CHARS = 28  # shorter pieces are formats and common phrases, not pi's sentences


def _sentences(text: str) -> set[str]:
    out = set()
    for line in text.split("\n"):
        line = line.strip().lstrip("-*0123456789. ").strip()
        if not line or line.startswith(("#", "[", "<", "{")):
            continue
        for piece in re.split(r"(?<=[.:!?])\s+|\s+\(|\)\s*", line):
            piece = piece.strip()
            if len(piece) >= MIN_CHARS and "{" not in piece:
                out.add(piece)
    return out


def pi_phrases() -> set[str]:
    texts = []
    parts = _prompt_parts()
    texts += [parts["role"], parts["note"], parts["explore"], *parts["always"], parts["docs"]]
    texts.append(pi_skills_intro())
    for tool in pi_tool_definitions().values():
        texts += [tool["description"], tool["snippet"] or "", *tool["guidelines"]]
        stack = [tool["parameters"]]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if isinstance(node.get("description"), str):
                    texts.append(node["description"])
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
    texts += pi_summary_prompts().values()
    phrases = set()
    for text in texts:
        phrases |= _sentences(text)
    return phrases


def test_there_are_phrases_to_look_for():
    phrases = pi_phrases()
    assert len(phrases) > 40
    assert any("structured summary" in p for p in phrases)  # the summary prompts are in


def test_no_file_of_the_repository_holds_pis_prompt_sentences():
    phrases = pi_phrases()
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    hits = []
    for name in filter(None, files):
        path = REPO_ROOT / name.decode()
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        hits += [(name.decode(), p) for p in phrases if p in text]
    assert not hits, "pi's prose found:\n" + "\n".join(f"{f}: {p!r}" for f, p in hits[:50])
