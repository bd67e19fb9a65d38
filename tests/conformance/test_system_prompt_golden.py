"""Replays pi 0.80.2's golden system_prompt.json (buildSystemPrompt) with pi's own wording."""

from __future__ import annotations

import pytest

from sessions_app.core.skills import Skill
from sessions_app.core.system_prompt import (
    ContextFile,
    ToolInfo,
    build_system_prompt,
    pi_wording,
)

from ._cases import golden_params, require_case

NAME = "system_prompt.json"
PI_DEFAULT_TOOLS = ["read", "bash", "edit", "write"]
# The golden outputs carry these placeholders where pi printed its install paths.
PI_WORDING = pi_wording("{README_PATH}", "{DOCS_PATH}", "{EXAMPLES_PATH}")


def build_like_pi(options: dict, now: str) -> str:
    """pi's ``buildSystemPrompt(options)`` expressed through our core (UTC clock at ``now``)."""
    snippets = options.get("toolSnippets") or {}
    names = options.get("selectedTools")
    if names is None:
        names = PI_DEFAULT_TOOLS
    return build_system_prompt(
        options["cwd"],
        [ToolInfo(name, snippets.get(name) or "") for name in names],
        date=now[:10],
        custom_prompt=options.get("customPrompt"),
        append=options.get("appendSystemPrompt"),
        context_files=[
            ContextFile(f["path"], f["content"]) for f in options.get("contextFiles", [])
        ],
        skills=[Skill.from_dict(s) for s in options.get("skills", [])],
        extra_guidelines=options.get("promptGuidelines") or (),
        wording=PI_WORDING,
    ).prompt


@pytest.mark.parametrize("case", golden_params(NAME, functions={"buildSystemPrompt"}))
def test_build_system_prompt(case):
    case = require_case(NAME, case)
    assert build_like_pi(case["input"]["options"], case["input"]["now"]) == case["output"]
