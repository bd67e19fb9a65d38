"""pi 0.80.2's own words, read from pi at test time and never stored in this repository.

piweb ships its own prose; its builders take the words as parameters. To show that the
structure is pi's, the conformance tests rebuild pi's exact outputs by passing pi's
words in, and these helpers read them:

- from pi's golden vectors (``../shared/golden-0.80.2``): the system prompt's fixed
  words (:func:`pi_prompt_wording`) and the skills block's intro
  (:func:`pi_skills_intro`), cut out of pi's outputs by their structure;
- from the pinned package (``bench/pi_reference/node_modules/pi-0.80.2``): the tools'
  schemas, prompt lines and guideline bullets (:func:`pi_tool_definitions`, through
  Node), and the summary prompts (:func:`pi_summary_prompts`, from pi's source text).
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path

from sessions_app.core.system_prompt import PromptWording
from tests.conformance.golden import load_golden
from tests.support.pi_reference import PACKAGES, pi_or_skip

PI = PACKAGES / "pi-0.80.2"
TOOLS_SCRIPT = Path(__file__).with_name("pi_tools.mjs")
TOOL_NAMES = ("read", "bash", "edit", "write", "grep", "find", "ls")
# Headings of pi's prompt layout, the same in ours: the cut points between its parts.
TOOLS_HEADING = "\n\nAvailable tools:\n"
GUIDELINES_HEADING = "\n\nGuidelines:\n"
DATE_LINE = "\nCurrent date: "


def _case(doc: dict, function: str, predicate) -> dict:
    for case in doc["cases"]:
        if case.get("function", doc.get("function")) == function and predicate(case):
            return case
    raise AssertionError(f"no golden {function} case of the wanted shape")


@functools.cache
def _prompt_parts() -> dict:
    """pi's fixed words, from the golden case with pi's defaults (no options but cwd):
    default tools, none listed, so the guidelines are the bash bullet and the two that
    are always there, and the docs pointer runs up to the date line."""
    doc = load_golden("system_prompt.json")
    case = _case(doc, "buildSystemPrompt", lambda c: set(c["input"]["options"]) == {"cwd"})
    out = case["output"]
    role, rest = out.split(TOOLS_HEADING, 1)
    tools_list, rest = rest.split("\n\n", 1)
    assert tools_list == "(none)", tools_list
    note, rest = rest.split(GUIDELINES_HEADING, 1)
    bullets, rest = rest.split("\n\n", 1)
    docs = rest.split(DATE_LINE, 1)[0]
    lines = [b[2:] for b in bullets.split("\n")]
    assert len(lines) == 3, lines
    return {
        "role": role,
        "note": note,
        "explore": lines[0],
        "always": tuple(lines[1:]),
        "docs": docs,
    }


@functools.cache
def pi_skills_intro() -> str:
    """The lines pi puts above its ``<available_skills>`` list (from a golden output)."""
    doc = load_golden("prompt.json")
    case = _case(doc, "formatSkillsForPrompt", lambda c: bool(c["output"]))
    head = case["output"].split("\n\n<available_skills>", 1)[0]
    assert head.startswith("\n\n")
    return head[2:]


def pi_prompt_wording() -> PromptWording:
    """pi 0.80.2's fixed prompt words (its docs pointer with the golden placeholders
    ``{README_PATH}``, ``{DOCS_PATH}``, ``{EXAMPLES_PATH}``)."""
    parts = _prompt_parts()
    return PromptWording(
        role_line=parts["role"],
        docs_pointer=parts["docs"],
        tools_note=parts["note"],
        explore_with_bash=parts["explore"],
        always=parts["always"],
        skills_intro=pi_skills_intro(),
    )


def pi_docs_pointer(readme: str, docs: str, examples: str) -> str:
    """pi's docs pointer for an installed package's paths."""
    return (
        _prompt_parts()["docs"]
        .replace("{README_PATH}", readme)
        .replace("{DOCS_PATH}", docs)
        .replace("{EXAMPLES_PATH}", examples)
    )


@functools.cache
def pi_tool_definitions() -> dict[str, dict]:
    """{name: {"description", "parameters", "snippet", "guidelines"}} of pi's seven
    tools, as pi's own tool factories build them (run under Node)."""
    node = pi_or_skip()
    proc = subprocess.run(
        [node, str(TOOLS_SCRIPT), str(PI)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _template_literal(source: str, name: str) -> str:
    match = re.search(r"const " + name + r" = `(.*?)`;", source, re.S)
    assert match, f"{name} not found in pi's source"
    return match.group(1)


@functools.cache
def pi_summary_prompts() -> dict[str, str]:
    """pi's summary prompts, read from its compiled source."""
    core = PI / "dist" / "core" / "compaction"
    compaction = (core / "compaction.js").read_text()
    branch = (core / "branch-summarization.js").read_text()
    utils = (core / "utils.js").read_text()
    return {
        "system": _template_literal(utils, "SUMMARIZATION_SYSTEM_PROMPT").strip(),
        "compaction": _template_literal(compaction, "SUMMARIZATION_PROMPT"),
        "update": _template_literal(compaction, "UPDATE_SUMMARIZATION_PROMPT"),
        "turn_prefix": _template_literal(compaction, "TURN_PREFIX_SUMMARIZATION_PROMPT"),
        "branch": _template_literal(branch, "BRANCH_SUMMARY_PROMPT"),
    }


def headings(prompt: str) -> list[str]:
    """The markdown headings of a summary prompt, in order."""
    return [line for line in prompt.split("\n") if line.startswith("#")]
