"""Our tools against pi 0.80.2's, read from the pinned package at test time.

- The argument schemas are pi's: the same property names, types, required fields and
  ``additionalProperties``, nested ones included (descriptions are ours and ignored).
- The default set is pi's; every tool gives the prompt a line, and the tools that add
  guideline bullets in pi add as many in ours (the words are ours).
- The edit rules are pi's: on the same files and ``edits[]``, pi's own functions and
  ours write the same bytes and show the same diff, or both refuse, for the same reason
  (the same edits[] indexes named).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from sessions_app.agent import edits as edit_text
from sessions_app.agent.tools import DEFAULT_TOOL_NAMES, TOOLS_BY_NAME, select_tools
from tests.support.pi_reference import pi_or_skip
from tests.support.pi_wording import PI, TOOL_NAMES, pi_tool_definitions

EDIT_SCRIPT = Path(__file__).resolve().parents[1] / "support" / "pi_edit.mjs"


def without_descriptions(schema):
    if isinstance(schema, dict):
        return {k: without_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [without_descriptions(v) for v in schema]
    return schema


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_argument_schemas_are_pis(name):
    pi = pi_tool_definitions()[name]
    ours = TOOLS_BY_NAME[name]
    assert without_descriptions(ours.parameters) == without_descriptions(pi["parameters"])
    # Every property is described, in our own words.
    for key, prop in ours.parameters["properties"].items():
        assert prop.get("description"), key
        assert prop["description"] != pi["parameters"]["properties"][key].get("description")
    assert ours.description and ours.description != pi["description"]


def test_default_set_prompt_lines_and_guideline_counts_follow_pi():
    pi = pi_tool_definitions()
    assert DEFAULT_TOOL_NAMES == ("read", "bash", "edit", "write")
    assert [t.name for t in select_tools(None)] == list(DEFAULT_TOOL_NAMES)
    assert [t.name for t in select_tools("read,grep, ls,nope")] == ["read", "grep", "ls"]
    for name in TOOL_NAMES:
        ours, theirs = TOOLS_BY_NAME[name], pi[name]
        assert bool(ours.snippet) == bool(theirs["snippet"]), name
        assert ours.snippet != theirs["snippet"], name
        assert len(ours.guidelines) == len(theirs["guidelines"]), name
        assert not set(ours.guidelines) & set(theirs["guidelines"]), name
    # The edits[] advice: pi's edit bullets are about edits[], and so are ours.
    assert all("edits[]" in g for g in pi["edit"]["guidelines"])
    assert all("edits[]" in g for g in TOOLS_BY_NAME["edit"].guidelines)


BASE = "def f():\n    return 1\n\n\ndef g():\n    return 2\n\nx = f() + g()\n"
CASES = [
    (BASE, [("return 1", "return 10")]),
    (BASE, [("return 1", "return 10"), ("return 2", "return 20")]),
    (BASE, [("def f():\n    return 1", "def f():\n    pass"), ("x = f()", "y = f()")]),
    (BASE, [("return", "yield")]),  # not unique
    (BASE, [("return 1", "a"), ("nothing", "b")]),  # not found
    (BASE, [("return 1\n\n", "a"), ("\n\ndef g", "b")]),  # overlap
    (BASE, [("", "a")]),
    (BASE, [("return 1", "return 1")]),  # no change
    ("\ufeffa\r\nb\r\nc\r\n", [("b", "B"), ("c\n", "C\n")]),
    ("a\nb\r\nc\n", [("c", "C")]),
    ("keep  \nsay \u201chi\u201d  \nx\u2014y\n", [('say "hi"', "say bye"), ("x-y", "x+y")]),
    ("one\ntwo\nthree", [("three", "3\nfour")]),
    ("\n".join(f"l{i}" for i in range(40)) + "\n", [("l3\n", "L3\n"), ("l30\n", "")]),
]


def _ours(content: str, edits: list[dict], path: str) -> dict:
    bom, text = edit_text.split_bom(content)
    ending = edit_text.line_ending(text)
    try:
        old, new = edit_text.apply_edits(edit_text.to_lf(text), edits, path)
    except edit_text.EditError as exc:
        return {"error": str(exc)}
    diff, first = edit_text.display_diff(old, new)
    return {
        "written": bom + edit_text.from_lf(new, ending),
        "diff": diff,
        "firstChangedLine": first,
    }


def test_edit_rules_give_what_pis_own_functions_give():
    node = pi_or_skip()
    cases = [
        {"content": c, "edits": [{"oldText": o, "newText": n} for o, n in e], "path": "f.py"}
        for c, e in CASES
    ]
    proc = subprocess.run(
        [node, str(EDIT_SCRIPT), str(PI)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout)
    for case, pi in zip(cases, theirs, strict=True):
        ours = _ours(case["content"], case["edits"], case["path"])
        if "error" in pi:
            assert "error" in ours, (case, pi)
            # the same edits named (our words, pi's facts)
            assert re.findall(r"edits\[\d+\]", ours["error"]) == re.findall(
                r"edits\[\d+\]", pi["error"]
            ), (ours["error"], pi["error"])
            counts = re.findall(r"\b(\d+) (?:occurrences|times)", pi["error"] + ours["error"])
            assert len(set(counts)) <= 1, (ours["error"], pi["error"])
        else:
            assert ours == pi, case
