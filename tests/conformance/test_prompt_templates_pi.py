"""Prompt templates and skill commands against pi 0.80.2's own functions.

pi's ``parseCommandArgs``, ``substituteArgs`` and ``expandPromptTemplate`` (from the pinned
package, through tests/support/pi_templates.mjs) and ours run on 200 generated templates
and command lines: quotes (closed, unclosed, mixed), defaults, slices, missing
arguments, ``$`` and placeholders inside the arguments, JavaScript's whitespace. Every
result must be equal. pi's loader reads a folder of template files and ours parses the
same files: names, descriptions, hints and bodies equal. pi's ``_expandSkillCommand`` and
ours give the same block, once the one sentence about relative paths is set aside.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from sessions_app.core.prompt_templates import (
    SKILL_REFERENCES,
    PromptTemplate,
    command_parts,
    expand_prompt_template,
    expand_skill_command,
    parse_command_args,
    parse_template,
    substitute_args,
)
from sessions_app.core.skills import Skill
from tests.support.pi_reference import pi_or_skip
from tests.support.pi_wording import PI

SCRIPT = Path(__file__).resolve().parents[1] / "support" / "pi_templates.mjs"
CASES = 200

TEMPLATE_PIECES = [
    "Review ", "the file ", "$1", "$2", "$3", "$10", "$0", "$@", "$ARGUMENTS", "$ARGS",
    "${1:-main}", "${2:-}", "${3:-a default with $1 inside}", "${0:-zero}", "${12:-far}",
    "${@:2}", "${@:1}", "${@:0}", "${@:3:1}", "${@:2:5}", "${@:1:0}", "${@:9}",
    "$", "$$1", "${", "${1", "${1:-", "${@:}", "${@:x}", "$x", "\n", " ", ", then ",
    "caf\u00e9 ", "\u00a0", "\t", "{$1}", "${1:-x}}", "${99999999999999999999:-big}",
    "$99999999999999999999", "${@:99999999999999999999}",
]  # fmt: skip
ARGUMENT_PIECES = [
    "src/app.py", "fast", '"two words"', "'single quoted'", '"unclosed', "'unclosed too",
    '"mixed \'inner\' quotes"', "it's", "$1", "$@", "${2:-x}", "$ARGUMENTS", "a$b",
    '""', "''", "--flag=1", "\u00e9t\u00e9", "x\u00a0y", "tab\there", "new\nline",
    "wide\u3000space", "\ufeffbom", "\u2003em", "a\"b'c", "$", "${@:1}", "100%",
]  # fmt: skip
SEPARATORS = [" ", "  ", "\t", " \n ", "\u00a0", "\u2028"]


def generated_cases(count: int, seed: int = 40) -> list[dict]:
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        template = "".join(rng.choice(TEMPLATE_PIECES) for _ in range(rng.randint(0, 9)))
        words = [rng.choice(ARGUMENT_PIECES) for _ in range(rng.randint(0, 6))]
        args = ""
        for word in words:
            args += rng.choice(SEPARATORS) + word
        shape = i % 10
        if shape == 0:
            command = "/t"  # no arguments at all
        elif shape == 1:
            command = "/other" + args  # not this template: unchanged
        elif shape == 2:
            command = " /t" + args  # does not start with "/"
        elif shape == 3:
            command = "/t" + rng.choice(SEPARATORS)  # only whitespace after the name
        else:
            command = "/t" + (args if args[:1] in SEPARATORS else " " + args)
        cases.append({"template": template, "command": command})
    return cases


def run_pi(job: dict) -> dict:
    node = pi_or_skip()
    proc = subprocess.run(
        [node, str(SCRIPT), str(PI)],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def command_arguments(command: str) -> str:
    """The argument string pi's expandPromptTemplate hands parseCommandArgs."""
    parts = command_parts(command)
    return parts[1] if parts else command


def test_expansion_equals_pis_on_200_generated_cases():
    cases = generated_cases(CASES)
    theirs = run_pi({"cases": cases})["cases"]
    assert len(theirs) == CASES
    differences = []
    for case, pi in zip(cases, theirs, strict=True):
        args = parse_command_args(command_arguments(case["command"]))
        template = PromptTemplate("t", "", case["template"])
        ours = {
            "args": args,
            "substituted": substitute_args(case["template"], args),
            "expanded": expand_prompt_template(case["command"], [template]),
        }
        if ours != pi:
            differences.append((case, ours, pi))
    assert not differences, differences[:5]
    # The cases cover what they claim to.
    commands = " ".join(c["command"] for c in cases)
    templates = " ".join(c["template"] for c in cases)
    for piece in ('"two words"', '"unclosed', "$1", "${2:-x}"):
        assert piece in commands
    for piece in ("${1:-main}", "${@:2}", "${@:3:1}", "$ARGUMENTS", "$@", "$10"):
        assert piece in templates
    assert sum(1 for c, p in zip(cases, theirs, strict=True) if p["expanded"] != c["command"]) > 100


TEMPLATE_FILES = {
    "review.md": "---\ndescription: Review a file\nargument-hint: <file> [speed]\n---\n"
    "Review $1 ${2:-slowly}.\n",
    "plain.md": "\n\n   \nFirst line of a template without front matter\nsecond line\n",
    "long.md": "A first line that runs on and on well beyond the sixty characters pi keeps\n",
    "sixty.md": "x" * 60 + "\n",
    "wide.md": "\U0001f600" * 40 + "\n",
    "crlf.md": "---\r\ndescription: From Windows\r\n---\r\nBody $@\r\n",
    "empty-desc.md": "---\ndescription: ''\n---\nUses the body line\n",
    "yes.md": "---\ndescription: yes\nargument-hint: no\n---\nbody\n",
    "no-end.md": "---\ndescription: never closed\nbody\n",
    "bad-yaml.md": "---\ndescription: [unclosed\n---\nbody\n",
    "blank.md": "",
}


def test_template_files_read_as_pi_reads_them(tmp_path):
    folder = tmp_path / "prompts"
    folder.mkdir()
    for name, text in TEMPLATE_FILES.items():
        (folder / name).write_bytes(text.encode())
    theirs = run_pi(
        {
            "load": {
                "cwd": str(tmp_path),
                "agentDir": str(tmp_path / "agent"),
                "paths": [str(folder)],
            }
        }
    )["loaded"]
    ours = []
    for name, text in TEMPLATE_FILES.items():
        template = parse_template(name[:-3], text)
        if template is not None:
            ours.append(
                {
                    "name": template.name,
                    "description": template.description,
                    "argumentHint": template.argument_hint,
                    "content": template.content,
                }
            )
    key = lambda t: t["name"]  # noqa: E731  (pi lists them in the folder's order)
    assert sorted(ours, key=key) == sorted(theirs, key=key)
    assert {t["name"] for t in theirs} >= {"review", "plain", "crlf"}
    assert "bad-yaml" not in {t["name"] for t in theirs}  # pi skips it, and so do we


SKILL_COMMANDS = [
    "/skill:deploy",
    "/skill:deploy to staging, carefully ",
    "/skill:deploy\tno space before the tab",
    "/skill:nope some args",  # unknown: passes through
    "/skill:",
    "/skills:deploy",
    "/skill:raw",
]


@pytest.mark.parametrize("command", SKILL_COMMANDS)
def test_skill_command_gives_pis_block(tmp_path, command):
    base = tmp_path / "skills" / "deploy"
    base.mkdir(parents=True)
    (base / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Deploy the app.\n---\n\n  Run ./scripts/go.sh\n\n"
    )
    raw = tmp_path / "skills" / "raw.md"
    raw.write_text("No front matter here.\r\nSecond line.\n")
    skills = [
        Skill("deploy", "Deploy the app.", str(base / "SKILL.md"), str(base)),
        Skill("raw", "Raw.", str(raw), str(raw.parent)),
    ]
    pi_skills = [{"name": s.name, "filePath": s.file_path, "baseDir": s.base_dir} for s in skills]
    [theirs] = run_pi({"skills": pi_skills, "skillCommands": [command]})["skillBlocks"]
    ours = expand_skill_command(command, skills, lambda s: Path(s.file_path).read_text())
    if theirs == command:
        assert ours == command
        return
    skill = next(s for s in skills if theirs.startswith(f'<skill name="{s.name}"'))
    our_sentence = SKILL_REFERENCES.format(base_dir=skill.base_dir)
    their_lines, our_lines = theirs.split("\n"), ours.split("\n")
    assert our_lines[1] == our_sentence and their_lines[1] != our_sentence
    assert skill.base_dir in their_lines[1]
    del their_lines[1], our_lines[1]
    assert our_lines == their_lines
