"""context.json: buildSessionContext + convertToLlm, every case compared exactly."""

from __future__ import annotations

import pytest

from sessions_app.core.messages import UNSET, build_session_context, convert_to_llm

from ._cases import golden_params, require_case


@pytest.mark.parametrize("case", golden_params("context.json"))
def test_build_session_context(case):
    case = require_case("context.json", case)
    inp = case["input"]
    leaf = inp["leafId"] if "leafId" in inp else UNSET
    context = build_session_context(inp["entries"], leaf)
    assert context == case["output"]["context"]
    assert convert_to_llm(context["messages"]) == case["output"]["llmMessages"]
