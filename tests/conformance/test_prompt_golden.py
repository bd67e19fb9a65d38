"""prompt.json (all functions except formatSkillsForPrompt, tested with skills.py):
computeFileLists, formatFileOperations, estimateTokens, estimateContextTokens,
calculateContextTokens, shouldCompact."""

from __future__ import annotations

import pytest

from sessions_app.core.compaction import (
    CompactionSettings,
    FileOps,
    compute_file_lists,
    format_file_operations,
)
from sessions_app.core.tokens import (
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens,
    should_compact,
)

from ._cases import golden_params, require_case

NAME = "prompt.json"


def _run(fn, inp):
    if fn == "computeFileLists":
        ops = FileOps()
        for bucket in ("read", "written", "edited"):
            for p in inp["fileOps"][bucket]:
                getattr(ops, bucket)[p] = None
        return compute_file_lists(ops)
    if fn == "formatFileOperations":
        return format_file_operations(inp["readFiles"], inp["modifiedFiles"])
    if fn == "estimateTokens":
        return estimate_tokens(inp["message"])
    if fn == "estimateContextTokens":
        return estimate_context_tokens(inp["messages"])
    if fn == "calculateContextTokens":
        return calculate_context_tokens(inp["usage"])
    if fn == "shouldCompact":
        settings = CompactionSettings.from_dict(inp["settings"])
        got = should_compact(inp["contextTokens"], inp["contextWindow"], settings)
        assert got == should_compact(inp["contextTokens"], inp["contextWindow"], inp["settings"])
        return got
    raise AssertionError(f"unexpected function {fn}")


@pytest.mark.parametrize("case", golden_params(NAME, exclude={"formatSkillsForPrompt"}))
def test_prompt_case(case):
    case = require_case(NAME, case)
    assert _run(case["function"], case["input"]) == case["output"]
