"""pi's prompt-template rules in the core (core/prompt_templates.py); the same functions
against pi's own on generated cases: tests/conformance/test_prompt_templates_pi.py."""

import pytest

from sessions_app.core.prompt_templates import (
    PromptTemplate,
    expand_message,
    expand_skill_command,
    first_of_each_name,
    is_template_file_name,
    parse_command_args,
    parse_template,
    skill_block,
    split_front_matter,
    substitute_args,
)
from sessions_app.core.skills import Skill


@pytest.mark.parametrize(
    "line, args",
    [
        ("a b  c", ["a", "b", "c"]),
        ('"src/app.py" fast', ["src/app.py", "fast"]),
        ("'it is' \"x y\"z", ["it is", "x yz"]),
        ('"unclosed quote', ["unclosed quote"]),
        ('"" x', ["x"]),  # an empty quoted argument is dropped, as in pi
        ("a\u00a0b\u3000c", ["a", "b", "c"]),  # JavaScript's whitespace
        ("a\x1cb", ["a\x1cb"]),  # Python's isspace() but not JavaScript's \s
    ],
)
def test_arguments_split_as_pi_splits_them(line, args):
    assert parse_command_args(line) == args


@pytest.mark.parametrize(
    "template, expected",
    [
        ("$1 and $2 and $3", "a and b c and "),
        ("$@|$ARGUMENTS", "a b c|a b c"),
        ("${3:-none} ${1:-none}", "none a"),
        ("${@:2} / ${@:2:1} / ${@:0}", "b c / b c / a b c"),
        ("$0 ${0:-zero} $10", " zero "),
        ("${9999999999999999999999:-far} $" + "9" * 5000, "far "),
        ("$$1 ${ $x", "$a ${ $x"),
    ],
)
def test_placeholders_are_filled_as_pi_fills_them(template, expected):
    assert substitute_args(template, ["a", "b c"]) == expected


def test_arguments_are_not_substituted_again():
    assert substitute_args("$1 $2", ["$2", "${1:-x}"]) == "$2 ${1:-x}"


def test_a_message_expands_only_when_it_names_a_template():
    review = PromptTemplate("review", "", "Review $1.")
    assert expand_message('/review "a b"', [review]) == "Review a b."
    assert expand_message("/review", [review]) == "Review ."
    assert expand_message(" /review x", [review]) == " /review x"
    assert expand_message("/reviews x", [review]) == "/reviews x"


def test_description_hint_and_body_come_from_the_file():
    template = parse_template("r", "---\ndescription: Check\nargument-hint: <f>\n---\n\nBody\n")
    assert (template.description, template.argument_hint, template.content) == (
        "Check",
        "<f>",
        "Body",
    )
    long = parse_template("l", "\n  \n" + "x" * 61 + "\nmore")
    assert long.description == "x" * 60 + "..." and long.content.startswith("\n")
    assert parse_template("bad", "---\nkey: [\n---\nx") is None
    assert split_front_matter("no front matter\r\n") == ({}, "no front matter\n")


def test_file_names_and_first_of_each_name():
    assert [is_template_file_name(n) for n in ("a.md", ".a.md", "a.txt", "node_modules")] == [
        True,
        False,
        False,
        False,
    ]
    first, second = PromptTemplate("x", "", "1"), PromptTemplate("x", "", "2")
    assert first_of_each_name([first, second]) == [first]


def test_a_skill_command_becomes_its_block_and_an_unknown_one_passes_through():
    skill = Skill("deploy", "d", "/s/deploy/SKILL.md", "/s/deploy")
    read = {"deploy": "---\nname: deploy\n---\n\n Go \n"}.get
    expanded = expand_skill_command("/skill:deploy  now ", [skill], lambda s: read(s.name))
    assert expanded == skill_block("deploy", "/s/deploy/SKILL.md", "/s/deploy", "Go", "now")
    assert expanded.startswith('<skill name="deploy" location="/s/deploy/SKILL.md">\n')
    assert expanded.endswith("\n\nGo\n</skill>\n\nnow")
    assert expand_skill_command("/skill:other", [skill], lambda s: "x") == "/skill:other"
    assert expand_skill_command("/skill:deploy", [skill], lambda s: None) == "/skill:deploy"
