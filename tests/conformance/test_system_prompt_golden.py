"""Replays pi 0.80.2's golden system_prompt.json (buildSystemPrompt) through our builder.

piweb's prompt has its own words; pi's are read from the golden outputs at test time
(tests/support/pi_wording.py) and passed in, so that every case is rebuilt exactly:
the structure (sections, order, tool lines, guideline order, data blocks) is pi's."""

from __future__ import annotations

import pytest

from sessions_app.core.skills import Skill
from sessions_app.core.system_prompt import ContextFile, ToolInfo, build_system_prompt
from tests.support.pi_wording import pi_prompt_wording

from ._cases import golden_params, require_case

NAME = "system_prompt.json"
PI_DEFAULT_TOOLS = ["read", "bash", "edit", "write"]


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
        wording=pi_prompt_wording(),
    ).prompt


@pytest.mark.parametrize("case", golden_params(NAME, functions={"buildSystemPrompt"}))
def test_build_system_prompt(case):
    case = require_case(NAME, case)
    assert build_like_pi(case["input"]["options"], case["input"]["now"]) == case["output"]
