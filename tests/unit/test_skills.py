"""Skill loading: discovery rules and every diagnostic."""

from __future__ import annotations

import os
from functools import partial

import pytest

from sessions_app.core import skills as core
from sessions_app.core.skills import (
    SKILLS_INTRO,
    FrontMatterError,
    Skill,
    format_skills_for_prompt,
    parse_front_matter,
)
from tests.support.plain_files import PLAIN_FILES

# The loaders read through a file source; these tests give them the whole disk.
load_skill_file = partial(core.load_skill_file, files=PLAIN_FILES)
load_skills = partial(core.load_skills, files=PLAIN_FILES)
load_skills_from_dir = partial(core.load_skills_from_dir, files=PLAIN_FILES)
default_skill_roots = partial(core.default_skill_roots, files=PLAIN_FILES)


def write_skill(root, dirname, front, body="Body text.\n", filename="SKILL.md"):
    directory = root / dirname if dirname else root
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / filename
    path.write_text(f"---\n{front}\n---\n{body}" if front is not None else body, encoding="utf-8")
    return path


def codes(diagnostics):
    return [d.code for d in diagnostics]


# --------------------------------------------------------------------------
# single files
# --------------------------------------------------------------------------


def test_valid_skill(tmp_path):
    path = write_skill(
        tmp_path, "pdf-tools", "name: pdf-tools\ndescription: Extract text from PDFs"
    )
    skill, diagnostics = load_skill_file(str(path), "project")
    assert diagnostics == []
    assert skill == Skill(
        name="pdf-tools",
        description="Extract text from PDFs",
        file_path=str(path),
        base_dir=str(tmp_path / "pdf-tools"),
        source="project",
        disable_model_invocation=False,
    )


def test_name_defaults_to_directory(tmp_path):
    path = write_skill(tmp_path, "web-search", "description: Search the web")
    skill, diagnostics = load_skill_file(str(path))
    assert skill.name == "web-search"
    assert diagnostics == []


def test_invalid_yaml_is_a_diagnostic_not_a_crash(tmp_path):
    path = write_skill(tmp_path, "broken", "name: broken\ndescription: [unclosed")
    skill, diagnostics = load_skill_file(str(path))
    assert skill is None
    assert codes(diagnostics) == ["invalid_yaml"]
    assert diagnostics[0].severity == "error"
    assert diagnostics[0].path == str(path)
    assert "\n" not in diagnostics[0].message


def test_front_matter_that_is_not_a_mapping(tmp_path):
    path = write_skill(tmp_path, "listy", "- a\n- b")
    skill, diagnostics = load_skill_file(str(path))
    assert skill is None
    assert codes(diagnostics) == ["invalid_yaml"]


@pytest.mark.parametrize(
    "front",
    ["name: nodesc", "name: nodesc\ndescription: ''", "name: nodesc\ndescription: '   '", None],
)
def test_missing_description_means_not_loaded(tmp_path, front):
    path = write_skill(tmp_path, "nodesc", front)
    skill, diagnostics = load_skill_file(str(path))
    assert skill is None
    assert codes(diagnostics) == ["missing_description"]
    assert diagnostics[0].severity == "error"


def test_non_string_description(tmp_path):
    path = write_skill(tmp_path, "numeric", "description: 42")
    skill, diagnostics = load_skill_file(str(path))
    assert skill is None
    assert codes(diagnostics) == ["invalid_description"]


def test_description_too_long_still_loads(tmp_path):
    path = write_skill(tmp_path, "long", "description: " + "x" * 1025)
    skill, diagnostics = load_skill_file(str(path))
    assert skill is not None
    assert codes(diagnostics) == ["description_too_long"]
    assert diagnostics[0].severity == "warning"
    ok = write_skill(tmp_path, "exact", "description: " + "x" * 1024)
    assert load_skill_file(str(ok))[1] == []


def test_description_length_counts_utf16_units(tmp_path):
    # 513 emoji = 1026 UTF-16 code units (JS .length), only 513 Python chars.
    path = write_skill(tmp_path, "emoji", "description: " + "\U0001f680" * 513)
    assert codes(load_skill_file(str(path))[1]) == ["description_too_long"]


def test_name_mismatch_with_directory(tmp_path):
    path = write_skill(tmp_path, "actual-dir", "name: other-name\ndescription: d")
    skill, diagnostics = load_skill_file(str(path))
    assert skill is not None and skill.name == "other-name"
    assert codes(diagnostics) == ["name_mismatch"]
    assert "actual-dir" in diagnostics[0].message


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("PDF-Tools", ["name_invalid_chars"]),
        ("pdf_tools", ["name_invalid_chars"]),
        ("-pdf", ["name_hyphen_edge"]),
        ("pdf-", ["name_hyphen_edge"]),
        ("pdf--tools", ["name_double_hyphen"]),
        ("a" * 65, ["name_too_long"]),
    ],
)
def test_bad_names_warn_but_load(tmp_path, name, expected):
    # directory named like the skill, so only the name rule itself fires
    path = write_skill(tmp_path, name, f"name: '{name}'\ndescription: d")
    skill, diagnostics = load_skill_file(str(path))
    assert skill is not None and skill.name == name
    assert codes(diagnostics) == expected
    assert all(d.severity == "warning" for d in diagnostics)


def test_non_string_name_falls_back_to_directory(tmp_path):
    path = write_skill(tmp_path, "dir-name", "name: 12\ndescription: d")
    skill, diagnostics = load_skill_file(str(path))
    assert skill.name == "dir-name"
    assert codes(diagnostics) == ["invalid_name"]


def test_disable_model_invocation_must_be_true(tmp_path):
    hidden = write_skill(tmp_path, "hidden", "description: d\ndisable-model-invocation: true")
    assert load_skill_file(str(hidden))[0].disable_model_invocation is True
    stringy = write_skill(tmp_path, "stringy", "description: d\ndisable-model-invocation: 'true'")
    assert load_skill_file(str(stringy))[0].disable_model_invocation is False
    # YAML 1.2 semantics as in pi: "yes" is a string, not a boolean
    yes = write_skill(tmp_path, "yes-skill", "description: d\ndisable-model-invocation: yes")
    assert load_skill_file(str(yes))[0].disable_model_invocation is False
    word = write_skill(tmp_path, "no", "name: no\ndescription: yes")
    skill, diagnostics = load_skill_file(str(word))
    assert (skill.name, skill.description, diagnostics) == ("no", "yes", [])


def test_unknown_fields_are_ignored(tmp_path):
    path = write_skill(
        tmp_path, "extra", "description: d\nlicense: MIT\nmetadata: {a: 1}\nfoo: bar"
    )
    skill, diagnostics = load_skill_file(str(path))
    assert skill is not None and diagnostics == []


def test_unreadable_file(tmp_path):
    skill, diagnostics = load_skill_file(str(tmp_path / "missing" / "SKILL.md"))
    assert skill is None
    assert codes(diagnostics) == ["unreadable"]


def test_crlf_bom_and_multiline_description(tmp_path):
    directory = tmp_path / "crlf"
    directory.mkdir()
    path = directory / "SKILL.md"
    path.write_bytes(
        b"\xef\xbb\xbf---\r\ndescription: |\r\n  Line one\r\n  Line two\r\n---\r\nBody\r\n"
    )
    skill, diagnostics = load_skill_file(str(path))
    assert diagnostics == []
    assert skill.description == "Line one\nLine two"


def test_parse_front_matter():
    assert parse_front_matter("no front matter") == ({}, "no front matter")
    assert parse_front_matter("---\nname: x\nno end") == ({}, "---\nname: x\nno end")
    assert parse_front_matter("---\nname: x\n---\n\nBody\n") == ({"name": "x"}, "Body")
    assert parse_front_matter("---\n\n---\nBody") == ({}, "Body")
    # like pi, the closing marker is searched after the opening line
    assert parse_front_matter("---\n---\nBody") == ({}, "---\n---\nBody")
    with pytest.raises(FrontMatterError):
        parse_front_matter("---\n: : :\n  - [\n---\n")


# --------------------------------------------------------------------------
# directories
# --------------------------------------------------------------------------


def test_discovery_rules(tmp_path):
    root = tmp_path / "skills"
    write_skill(root, "alpha", "description: a")
    write_skill(root, "group/beta", "description: b")  # nested SKILL.md
    write_skill(root, "alpha/nested", "description: not scanned")  # inside a skill: ignored
    write_skill(root, None, "name: skills\ndescription: root md", filename="gamma.md")  # root .md
    write_skill(
        root, "group", "description: not a skill", filename="notes.md"
    )  # non-root .md ignored
    write_skill(root, ".hidden", "description: hidden")
    write_skill(root, "node_modules/pkg", "description: dependency")
    os.symlink(str(root / "does-not-exist"), str(root / "dangling"))
    result = load_skills_from_dir(str(root), "user")
    found = sorted((s.name, s.description, s.source) for s in result.skills)
    assert found == [("alpha", "a", "user"), ("beta", "b", "user"), ("skills", "root md", "user")]
    assert result.diagnostics == []


def test_root_md_name_rules_apply(tmp_path):
    # A root .md without a name takes the root directory's name, as in pi.
    root = tmp_path / "my-skills"
    write_skill(root, None, "description: loose file", filename="loose.md")
    result = load_skills_from_dir(str(root))
    assert [s.name for s in result.skills] == ["my-skills"]


def test_missing_root_is_silent(tmp_path):
    result = load_skills_from_dir(str(tmp_path / "nope"))
    assert result.skills == [] and result.diagnostics == []
    result = load_skills([str(tmp_path / "nope")])
    assert result.skills == [] and result.diagnostics == []


def test_duplicate_names_first_wins(tmp_path):
    first = write_skill(tmp_path / "user", "tool", "description: first")
    second = write_skill(tmp_path / "project", "tool", "description: second")
    result = load_skills([(str(tmp_path / "user"), "user"), (str(tmp_path / "project"), "project")])
    assert [(s.name, s.description, s.source) for s in result.skills] == [("tool", "first", "user")]
    assert codes(result.diagnostics) == ["duplicate_name"]
    diagnostic = result.diagnostics[0]
    assert diagnostic.severity == "collision"
    assert diagnostic.path == str(second)
    assert diagnostic.other_path == str(first)


def test_same_file_through_symlink_loaded_once(tmp_path):
    write_skill(tmp_path / "real", "tool", "description: d")
    os.symlink(str(tmp_path / "real"), str(tmp_path / "alias"))
    result = load_skills([str(tmp_path / "real"), str(tmp_path / "alias")])
    assert len(result.skills) == 1
    assert result.diagnostics == []


def test_diagnostics_collected_across_roots_and_invalid_skills_skipped(tmp_path):
    write_skill(tmp_path / "a", "good", "description: ok")
    write_skill(tmp_path / "a", "bad-yaml", "description: [")
    write_skill(tmp_path / "b", "no-desc", "name: no-desc")
    write_skill(tmp_path / "b", "Wrong", "description: d")
    result = load_skills([str(tmp_path / "a"), str(tmp_path / "b")])
    assert sorted(s.name for s in result.skills) == ["Wrong", "good"]
    assert sorted(codes(result.diagnostics)) == [
        "invalid_yaml",
        "missing_description",
        "name_invalid_chars",
    ]


def test_single_file_root(tmp_path):
    path = write_skill(tmp_path, "one", "description: d")
    result = load_skills([(str(path), "path")])
    assert [s.file_path for s in result.skills] == [str(path)]


def test_default_skill_roots(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    cwd = repo / "pkg"
    cwd.mkdir()
    roots = default_skill_roots(str(cwd), str(tmp_path / "agent"), home=str(tmp_path / "home"))
    assert roots == [
        (str(cwd / ".pi" / "skills"), "project"),
        (str(cwd / ".agents" / "skills"), "project"),
        (str(repo / ".agents" / "skills"), "project"),
        (str(tmp_path / "agent" / "skills"), "user"),
        (str(tmp_path / "home" / ".agents" / "skills"), "user"),
    ]


def test_default_skill_roots_leave_the_users_own_agents_dir_to_the_user(tmp_path):
    """Outside a repository the ancestors reach the home directory: its .agents/skills is
    the user's, listed once, last (as pi's resource loader does)."""
    home = tmp_path / "home"
    cwd = home / "project"
    cwd.mkdir(parents=True)
    roots = default_skill_roots(str(cwd), str(tmp_path / "agent"), home=str(home))
    user_agents = str(home / ".agents" / "skills")
    assert [r for r in roots if r[0] == user_agents] == [(user_agents, "user")]
    assert roots[-1] == (user_agents, "user")
    assert roots[1] == (str(cwd / ".agents" / "skills"), "project")


# --------------------------------------------------------------------------
# prompt listing
# --------------------------------------------------------------------------


def test_format_skills_escaping_and_hidden():
    skills = [
        Skill("a", "Uses <tags> & \"quotes\" 'here'", "/p/a&b/SKILL.md", "/p/a&b"),
        Skill("b", "hidden", "/p/b/SKILL.md", "/p/b", disable_model_invocation=True),
    ]
    text = format_skills_for_prompt(skills)
    assert text.startswith(f"\n\n{SKILLS_INTRO}\n\n<available_skills>\n  <skill>\n")
    assert (
        "<description>Uses &lt;tags&gt; &amp; &quot;quotes&quot; &apos;here&apos;</description>"
        in text
    )
    assert "<location>/p/a&amp;b/SKILL.md</location>" in text
    assert "<name>b</name>" not in text
    assert text.endswith("  </skill>\n</available_skills>")
    assert format_skills_for_prompt([skills[1]]) == ""
    assert format_skills_for_prompt([]) == ""
