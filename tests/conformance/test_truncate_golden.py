"""Replays every case of pi's golden truncate.json (SPEC sections 5 and 9)."""

from __future__ import annotations

import json

import pytest

from sessions_app.core.truncate import format_size, truncate_head, truncate_line, truncate_tail

from .golden import load_golden

GOLDEN_FILE = "truncate.json"


def _cases() -> list[tuple[int, dict]]:
    """(index, case) pairs; loaded at collection so each case is its own test."""
    try:
        document = load_golden(GOLDEN_FILE)
    except pytest.fail.Exception as exc:  # missing golden data: one failing test
        return [(-1, {"function": "missing", "error": str(exc)})]
    return list(enumerate(document["cases"]))


def _case_id(value: tuple[int, dict]) -> str:
    index, case = value
    if index < 0:
        return "golden-missing"
    function = case["function"]
    tags = "-".join(tag.split()[0] for tag in case.get("tags", [])) or "plain"
    options = case["input"].get("options") or {}
    extra = ",".join(f"{key}={options[key]}" for key in sorted(options))
    if "maxChars" in case["input"]:
        extra = f"maxChars={case['input']['maxChars']}"
    label = f"{index:03d}-{function}-{tags}"
    return f"{label}-{extra}" if extra else label


def _run(case: dict):
    function = case["function"]
    data = case["input"]
    if function in ("truncateHead", "truncateTail"):
        options = data.get("options") or {}
        kwargs = {}
        if "maxLines" in options:
            kwargs["max_lines"] = options["maxLines"]
        if "maxBytes" in options:
            kwargs["max_bytes"] = options["maxBytes"]
        truncate = truncate_head if function == "truncateHead" else truncate_tail
        return truncate(data["content"], **kwargs).to_pi_dict()
    if function == "truncateLine":
        if "maxChars" in data:
            return truncate_line(data["line"], data["maxChars"]).to_pi_dict()
        return truncate_line(data["line"]).to_pi_dict()
    if function == "formatSize":
        return format_size(data["bytes"])
    raise AssertionError(f"unknown golden function {function!r}")


def _describe_mismatch(actual, expected) -> str:
    if isinstance(expected, dict) and isinstance(actual, dict):
        lines = []
        for key in expected.keys() | actual.keys():
            if expected.get(key, "<absent>") != actual.get(key, "<absent>"):
                exp = json.dumps(expected.get(key, "<absent>"), ensure_ascii=True)[:300]
                got = json.dumps(actual.get(key, "<absent>"), ensure_ascii=True)[:300]
                lines.append(f"  {key}: expected {exp}, got {got}")
        return "\n".join(sorted(lines))
    return f"  expected {expected!r}, got {actual!r}"


@pytest.mark.parametrize("indexed_case", _cases(), ids=_case_id)
def test_truncate_golden_case(indexed_case):
    index, case = indexed_case
    if index < 0:
        pytest.fail(case["error"], pytrace=False)
    expected = case["output"]
    actual = _run(case)
    if actual != expected:
        pytest.fail(
            f"golden case {index} ({case['function']}) differs:\n"
            + _describe_mismatch(actual, expected),
            pytrace=False,
        )


def test_truncate_golden_covers_all_functions():
    """The file must exercise every function we claim to match."""
    document = load_golden(GOLDEN_FILE)
    functions = {case["function"] for case in document["cases"]}
    assert functions == {"truncateHead", "truncateTail", "truncateLine", "formatSize"}
    assert len(document["cases"]) > 800
