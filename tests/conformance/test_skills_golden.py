"""prompt.json: every formatSkillsForPrompt case must match pi's output exactly, given
pi's intro lines (read from the golden outputs; the ones we ship are our own)."""

from __future__ import annotations

import pytest

from sessions_app.core.skills import Skill, format_skills_for_prompt
from tests.support.pi_wording import pi_skills_intro

from ._cases import golden_params, require_case
from .golden import load_golden

GOLDEN = "prompt.json"
FUNCTION = "formatSkillsForPrompt"


@pytest.mark.parametrize("case", golden_params(GOLDEN, functions={FUNCTION}))
def test_format_skills_for_prompt(case):
    case = require_case(GOLDEN, case)
    assert format_skills_for_prompt(case["input"]["skills"], pi_skills_intro()) == case["output"]


@pytest.mark.parametrize("case", golden_params(GOLDEN, functions={FUNCTION}))
def test_format_skills_for_prompt_from_dataclasses(case):
    case = require_case(GOLDEN, case)
    skills = [Skill.from_dict(s) for s in case["input"]["skills"]]
    assert format_skills_for_prompt(skills, pi_skills_intro()) == case["output"]


def test_golden_has_skills_cases():
    doc = load_golden(GOLDEN)
    cases = [c for c in doc["cases"] if c.get("function", doc.get("function")) == FUNCTION]
    # Guard against silently replaying nothing.
    assert len(cases) >= 10
    assert any(c["output"] == "" for c in cases)
    assert any("&amp;" in c["output"] for c in cases)
