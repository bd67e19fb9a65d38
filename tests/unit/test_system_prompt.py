"""System prompt assembly and context-file discovery (SPEC section 6)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from sessions_app.core.skills import LoadSkillsResult, Skill, SkillDiagnostic
from sessions_app.core.system_prompt import (
    ALWAYS,
    EXPLORE_WITH_BASH,
    ROLE_LINE,
    TOOLS_NOTE,
    ContextFile,
    ContextFilesResult,
    PromptWording,
    ToolInfo,
    build_guidelines,
    build_system_prompt,
    format_project_context,
    project_directories,
)
from sessions_app.core.system_prompt import load_context_files as load_with
from tests.support.plain_files import PLAIN_FILES

# The loader reads through a file source; these tests give it the whole disk.
load_context_files = partial(load_with, files=PLAIN_FILES)
REPO = Path(__file__).resolve().parents[2]

DEFAULT_TOOLS = [
    ToolInfo("read", "Read a file"),
    ToolInfo("bash", "Run a shell command"),
    ToolInfo("edit", "Replace exact text in a file"),
    ToolInfo("write", "Create or overwrite a file"),
]
SKILL = Skill(
    name="pdf-tools",
    description="Work with PDFs & forms",
    file_path="/skills/pdf-tools/SKILL.md",
    base_dir="/skills/pdf-tools",
)
HIDDEN_SKILL = Skill(
    name="secret",
    description="Hidden",
    file_path="/skills/secret/SKILL.md",
    base_dir="/skills/secret",
    disable_model_invocation=True,
)
FILES = [
    ContextFile("/org/AGENTS.md", "Org rules."),
    ContextFile("/org/app/CLAUDE.md", "App rules."),
]


def _build(**kwargs):
    params = {
        "cwd": "/org/app",
        "tools": DEFAULT_TOOLS,
        "date": dt.date(2026, 3, 7),
        "context_files": FILES,
        "skills": [SKILL, HIDDEN_SKILL],
    }
    params.update(kwargs)
    return build_system_prompt(**params)


def _under(files, root):
    root = str(root)
    return [f for f in files if f.path.startswith(root + os.sep)]


# --------------------------------------------------------------------------
# assembly
# --------------------------------------------------------------------------


def test_assembly_order_and_sections_concatenate_to_prompt():
    result = _build(append="APPENDED TEXT")
    names = [s.name for s in result.sections]
    assert names == [
        "role",
        "tools",
        "guidelines",
        "docs",
        "append",
        "project_context",
        "skills",
        "date",
        "cwd",
    ]
    assert "".join(s.text for s in result.sections) == result.prompt
    prompt = result.prompt
    markers = [
        ROLE_LINE,
        "Available tools:\n- read: Read a file\n- bash: Run a shell command",
        "Guidelines:\n- ",
        "piweb documentation",
        "APPENDED TEXT",
        "<project_context>",
        "<available_skills>",
        "Current date: 2026-03-07",
        "Current working directory: /org/app",
    ]
    positions = [prompt.index(m) for m in markers]
    assert positions == sorted(positions)
    assert prompt.startswith(ROLE_LINE)
    assert prompt.endswith("\nCurrent date: 2026-03-07\nCurrent working directory: /org/app")


def test_exact_tail_layout():
    result = _build(skills=[], context_files=[FILES[0]], docs_pointer="DOCS")
    expected_tail = (
        "\n\nDOCS"
        "\n\n<project_context>\n\n"
        "Project-specific instructions and guidelines:\n\n"
        '<project_instructions path="/org/AGENTS.md">\nOrg rules.\n</project_instructions>\n\n'
        "</project_context>\n"
        "\nCurrent date: 2026-03-07"
        "\nCurrent working directory: /org/app"
    )
    assert result.prompt.endswith(expected_tail)


def test_project_context_format_exact():
    assert format_project_context([]) == ""
    assert format_project_context(FILES) == (
        "\n\n<project_context>\n\n"
        "Project-specific instructions and guidelines:\n\n"
        '<project_instructions path="/org/AGENTS.md">\nOrg rules.\n</project_instructions>\n\n'
        '<project_instructions path="/org/app/CLAUDE.md">\nApp rules.\n</project_instructions>\n\n'
        "</project_context>\n"
    )


def test_custom_prompt_replaces_only_the_head():
    result = _build(custom_prompt="You are a custom bot.", append="MORE")
    names = [s.name for s in result.sections]
    assert names == ["custom_prompt", "append", "project_context", "skills", "date", "cwd"]
    assert result.prompt.startswith("You are a custom bot.\n\nMORE\n\n<project_context>")
    assert ROLE_LINE not in result.prompt
    assert "Available tools:" not in result.prompt
    assert "Guidelines:" not in result.prompt
    assert "piweb documentation" not in result.prompt
    assert "<available_skills>" in result.prompt
    assert result.custom_prompt_used is True
    assert result.prompt.endswith("Current working directory: /org/app")


def test_append_is_optional():
    without = _build()
    assert without.section("append") is None
    with_append = _build(append="Extra rule.")
    assert with_append.section("append").text == "\n\nExtra rule."
    assert with_append.prompt.replace("\n\nExtra rule.", "", 1) == without.prompt


def test_no_project_context_section_without_files():
    result = _build(context_files=[])
    assert result.section("project_context") is None
    assert "<project_context>" not in result.prompt


def test_skills_only_with_read_tool_and_hidden_skills_left_out():
    result = _build()
    assert "<name>pdf-tools</name>" in result.prompt
    assert "Work with PDFs &amp; forms" in result.prompt
    assert "secret" not in result.prompt
    assert [s.name for s in result.skills] == ["pdf-tools"]
    assert result.section("skills").files == ("/skills/pdf-tools/SKILL.md",)

    no_read = _build(tools=[t for t in DEFAULT_TOOLS if t.name != "read"])
    assert "<available_skills>" not in no_read.prompt
    assert no_read.skills_included is False
    assert no_read.skills == []

    only_hidden = _build(skills=[HIDDEN_SKILL])
    assert only_hidden.section("skills") is None


def test_tools_listing():
    result = _build(tools=[ToolInfo("read", "Read a file"), ToolInfo("secret_tool", "")])
    assert (
        f"\n\nAvailable tools:\n- read: Read a file\n\n{TOOLS_NOTE}\n\nGuidelines:" in result.prompt
    )
    assert "secret_tool" not in result.prompt
    none = _build(tools=[])
    assert "Available tools:\n(none)" in none.prompt
    as_tuples = _build(tools=[("read", "Read a file"), {"name": "bash", "description": "Shell"}])
    assert "- read: Read a file\n- bash: Shell" in as_tuples.prompt


def test_guidelines_depend_on_tools():
    always = list(ALWAYS)
    assert build_guidelines([]) == always
    bash_only = build_guidelines(["bash"])
    assert bash_only == [EXPLORE_WITH_BASH, *always]
    # grep, find or ls: no exploration bullet (pi's rule)
    for explorer in ("grep", "find", "ls"):
        assert build_guidelines(["bash", explorer]) == always
    assert build_guidelines(["read", "bash", "edit", "write"]) == [EXPLORE_WITH_BASH, *always]
    # extra guidelines (the tools' own, then the caller's) come once, trimmed, before the
    # always-present ones; one of those given as an extra keeps the extra's place
    extra = build_guidelines(["read"], ["Run tests", " Run tests ", "  ", always[1]])
    assert extra == ["Run tests", always[1], always[0]]
    result = _build(tools=[ToolInfo("read", "Read a file")])
    assert f"Guidelines:\n- {always[0]}\n- {always[1]}" in result.prompt


def test_tools_bring_their_own_guideline_bullets_in_tool_order():
    tools = [
        ToolInfo("read", "Read a file", ("R1",)),
        ToolInfo("bash", "Run a command"),
        ToolInfo("edit", "Edit a file", ("E1", "E2")),
    ]
    result = _build(tools=tools, extra_guidelines=["X"])
    bullets = result.section("guidelines").text.split("Guidelines:\n", 1)[1].split("\n")
    assert bullets == [f"- {g}" for g in (EXPLORE_WITH_BASH, "R1", "E1", "E2", "X", *ALWAYS)]
    # the note after the tool list, always there (pi's custom-tools note, our words)
    assert result.section("tools").text.endswith(f"\n\n{TOOLS_NOTE}")


def test_the_wording_is_a_parameter():
    wording = PromptWording(
        role_line="ROLE",
        docs_pointer="DOCS",
        tools_note="NOTE",
        explore_with_bash="EXPLORE",
        always=("A1", "A2"),
        skills_intro="INTRO",
    )
    result = _build(tools=[ToolInfo("read", "r"), ToolInfo("bash", "b")], wording=wording)
    assert result.prompt.startswith(
        "ROLE\n\nAvailable tools:\n- read: r\n- bash: b\n\nNOTE\n\n"
        "Guidelines:\n- EXPLORE\n- A1\n- A2\n\nDOCS"
    )
    assert "\n\nINTRO\n\n<available_skills>" in result.prompt


def test_docs_pointer_default_custom_and_omitted():
    assert "piweb documentation" in _build().prompt
    custom = _build(docs_pointer="See /docs.")
    assert "\n\nSee /docs." in custom.prompt
    assert "piweb documentation" not in custom.prompt
    omitted = _build(docs_pointer="")
    assert omitted.section("docs") is None


def test_date_formats():
    assert "Current date: 2026-03-07\n" in _build(date=dt.datetime(2026, 3, 7, 23, 59)).prompt
    assert "Current date: 2024-01-02\n" in _build(date="2024-01-02").prompt
    today = dt.date.today().isoformat()
    assert f"Current date: {today}\n" in _build(date=None).prompt


def test_skill_diagnostics_become_warnings():
    loaded = LoadSkillsResult(
        skills=[SKILL],
        diagnostics=[
            SkillDiagnostic(code="name_mismatch", message="bad", path="/skills/x/SKILL.md")
        ],
    )
    result = _build(skills=loaded)
    assert [w.code for w in result.warnings] == ["name_mismatch"]
    assert result.warnings[0].source == "skills"
    assert "<name>pdf-tools</name>" in result.prompt
    data = result.to_dict()
    assert data["warnings"][0]["path"] == "/skills/x/SKILL.md"
    assert [f["path"] for f in data["contextFiles"]] == ["/org/AGENTS.md", "/org/app/CLAUDE.md"]


# --------------------------------------------------------------------------
# discovery
# --------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path):
    """tmp/agent (global) and tmp/org/team/app/src (cwd)."""
    agent = tmp_path / "agent"
    agent.mkdir()
    cwd = tmp_path / "org" / "team" / "app" / "src"
    cwd.mkdir(parents=True)
    return tmp_path, agent, cwd


def test_nested_discovery_order(tree):
    root, agent, cwd = tree
    (agent / "AGENTS.md").write_text("global")
    (root / "org" / "CLAUDE.md").write_text("org")
    (root / "org" / "team" / "app" / "AGENTS.md").write_text("app")
    (cwd / "AGENTS.md").write_text("src")
    result = load_context_files(str(cwd), agent_dir=str(agent))
    assert result.files[0] == ContextFile(str(agent / "AGENTS.md"), "global")
    local = _under(result.files[1:], root)
    assert [f.path for f in local] == [
        str(root / "org" / "CLAUDE.md"),
        str(root / "org" / "team" / "app" / "AGENTS.md"),
        str(cwd / "AGENTS.md"),
    ]
    assert [f.content for f in local] == ["org", "app", "src"]
    assert result.files[-1].path == str(cwd / "AGENTS.md")  # cwd last
    assert result.warnings == []


def test_candidate_order_in_one_directory(tree):
    root, agent, cwd = tree
    (cwd / "CLAUDE.md").write_text("claude")
    if (cwd / "claude.md").exists():
        pytest.skip("case-insensitive file system")
    (cwd / "AGENTS.MD").write_text("upper")
    files = _under(load_context_files(str(cwd), agent_dir=str(agent)).files, root)
    assert [(os.path.basename(f.path), f.content) for f in files] == [("AGENTS.MD", "upper")]
    (cwd / "AGENTS.md").write_text("agents")
    files = _under(load_context_files(str(cwd), agent_dir=str(agent)).files, root)
    assert [(os.path.basename(f.path), f.content) for f in files] == [("AGENTS.md", "agents")]


def test_directory_candidate_is_unreadable_and_next_is_tried(tree):
    root, agent, cwd = tree
    (cwd / "AGENTS.md").mkdir()
    (cwd / "CLAUDE.md").write_text("fallback")
    result = load_context_files(str(cwd), agent_dir=str(agent))
    local = _under(result.files, root)
    assert [(f.path, f.content) for f in local] == [(str(cwd / "CLAUDE.md"), "fallback")]
    assert [(w.path, w.code) for w in result.warnings] == [(str(cwd / "AGENTS.md"), "is_directory")]
    assert result.warnings[0].source == "context_files"


def test_broken_symlink_candidate_warns_and_next_is_tried(tree):
    root, agent, cwd = tree
    os.symlink(str(root / "does-not-exist.md"), str(cwd / "AGENTS.md"))
    (cwd / "AGENTS.MD").write_text("second")
    result = load_context_files(str(cwd), agent_dir=str(agent))
    local = _under(result.files, root)
    assert [os.path.basename(f.path) for f in local] == ["AGENTS.MD"]
    assert [w.code for w in result.warnings] == ["broken_symlink"]


LOAD_AND_PRINT = """
import json, sys
from sessions_app.core.system_prompt import load_context_files
from tests.support.plain_files import PLAIN_FILES
result = load_context_files(sys.argv[1], agent_dir=sys.argv[2], files=PLAIN_FILES)
print(json.dumps([[[f.path, f.content] for f in result.files], [w.code for w in result.warnings]]))
"""


def _load_without_file_permission_override(cwd, agent) -> tuple[list, list]:
    """load_context_files as a process that file permissions apply to. CI runs as root,
    which reads every file: there the load runs through setpriv without the capabilities
    that override permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH)."""
    if os.geteuid() != 0:
        result = load_context_files(str(cwd), agent_dir=str(agent))
        return [[f.path, f.content] for f in result.files], [w.code for w in result.warnings]
    drop = "-dac_override,-dac_read_search"
    run = subprocess.run(
        ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}", "--",
         sys.executable, "-c", LOAD_AND_PRINT, str(cwd), str(agent)],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=True,
    )  # fmt: skip
    files, codes = json.loads(run.stdout)
    return files, codes


def test_permission_denied_candidate_warns_and_next_is_tried(tree):
    root, agent, cwd = tree
    blocked = cwd / "AGENTS.md"
    blocked.write_text("secret")
    blocked.chmod(0)
    (cwd / "CLAUDE.md").write_text("open")
    try:
        files, codes = _load_without_file_permission_override(cwd, agent)
    finally:
        blocked.chmod(0o644)
    assert [content for path, content in files if path.startswith(str(root))] == ["open"]
    assert codes == ["unreadable"]


def test_invalid_utf8_is_readable_with_replacement_and_warning(tree):
    root, agent, cwd = tree
    (cwd / "AGENTS.md").write_bytes(b"ok \xff\xfe end")
    (cwd / "CLAUDE.md").write_text("not used")
    result = load_context_files(str(cwd), agent_dir=str(agent))
    local = _under(result.files, root)
    assert [(os.path.basename(f.path), f.content) for f in local] == [
        ("AGENTS.md", "ok \ufffd\ufffd end")
    ]
    assert [w.code for w in result.warnings] == ["invalid_utf8"]


def test_all_candidates_unreadable_gives_no_file(tree):
    root, agent, cwd = tree
    for name in ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"):
        (cwd / name).mkdir()
    result = load_context_files(str(cwd), agent_dir=str(agent))
    assert _under(result.files, root) == []
    assert [w.path for w in result.warnings] == [
        str(cwd / n) for n in ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")
    ]


def test_global_dir_first_and_not_duplicated_when_cwd_is_global_dir(tree):
    root, agent, _cwd = tree
    (agent / "AGENTS.md").write_text("global")
    result = load_context_files(str(agent), agent_dir=str(agent))
    paths = [f.path for f in result.files]
    assert paths.count(str(agent / "AGENTS.md")) == 1
    assert paths[0] == str(agent / "AGENTS.md")
    # cwd inside the global dir: the global file is an ancestor too, still once
    inner = agent / "inner"
    inner.mkdir()
    (inner / "CLAUDE.md").write_text("inner")
    paths = [f.path for f in load_context_files(str(inner), agent_dir=str(agent)).files]
    assert paths.count(str(agent / "AGENTS.md")) == 1
    assert paths[0] == str(agent / "AGENTS.md")
    assert paths[-1] == str(inner / "CLAUDE.md")


def test_symlinked_global_dir_not_duplicated(tree):
    root, agent, cwd = tree
    (cwd / "AGENTS.md").write_text("project")
    link = root / "agent-link"
    os.symlink(str(cwd), str(link))
    result = load_context_files(str(cwd), agent_dir=str(link))
    matches = [
        f for f in result.files if os.path.realpath(f.path) == os.path.realpath(cwd / "AGENTS.md")
    ]
    assert len(matches) == 1


def test_missing_global_dir_is_fine(tree):
    root, _agent, cwd = tree
    (cwd / "AGENTS.md").write_text("project")
    result = load_context_files(str(cwd), agent_dir=str(root / "nope"))
    assert _under(result.files, root)[-1].content == "project"


def test_build_discovers_context_files_when_not_given(tree):
    root, agent, cwd = tree
    (agent / "AGENTS.md").write_text("global rules")
    (cwd.parent / "AGENTS.md").mkdir()  # unreadable candidate -> warning
    (cwd.parent / "CLAUDE.md").write_text("app rules")
    result = build_system_prompt(
        str(cwd), DEFAULT_TOOLS, "2026-01-01", agent_dir=str(agent), source=PLAIN_FILES
    )
    section = result.section("project_context")
    assert section is not None
    assert section.files[0] == str(agent / "AGENTS.md")
    assert str(cwd.parent / "CLAUDE.md") in section.files
    assert (
        f'<project_instructions path="{agent / "AGENTS.md"}">\nglobal rules\n</project_instructions>'
        in result.prompt
    )
    assert [w.code for w in result.warnings] == ["is_directory"]
    assert result.to_dict()["warnings"][0]["source"] == "context_files"


def test_context_files_result_passes_warnings_through():
    pre = ContextFilesResult(files=[FILES[0]])
    result = _build(context_files=pre)
    assert result.context_files == [FILES[0]]
    assert result.warnings == []


class MemoryFiles:
    """A file source with no disk behind it: what the core reads comes only from here."""

    def __init__(self, files: dict[str, bytes], links: dict[str, str] | None = None):
        self.files, self.links = files, links or {}
        self.read_paths: list[str] = []

    def kind(self, path):
        if path in self.links:
            return self.links[path]
        if path in self.files:
            return "file"
        return "dir" if any(p.startswith(path + "/") for p in self.files) else None

    def read(self, path):
        self.read_paths.append(path)
        return self.files[path]

    def list_dir(self, path):
        return sorted(
            {p[len(path) + 1 :].split("/")[0] for p in self.files if p.startswith(path + "/")}
        )

    def identity(self, path):
        return path


def test_the_core_reads_context_files_only_through_its_source():
    """Paths that exist nowhere on disk: the core opens nothing itself, and a candidate
    the source reports as leading outside is never read."""
    source = MemoryFiles(
        {"/nowhere/agent/AGENTS.md": b"global", "/nowhere/area/p/CLAUDE.md": b"project"},
        links={"/nowhere/area/p/AGENTS.md": "outside"},
    )
    result = load_with("/nowhere/area/p", "/nowhere/agent", files=source, top="/nowhere/area")
    assert [(f.path, f.content) for f in result.files] == [
        ("/nowhere/agent/AGENTS.md", "global"),
        ("/nowhere/area/p/CLAUDE.md", "project"),
    ]
    assert [(w.path, w.code) for w in result.warnings] == [("/nowhere/area/p/AGENTS.md", "outside")]
    assert "/nowhere/area/p/AGENTS.md" not in source.read_paths
    # No cwd (a refused one): the agent directory only, nothing walked.
    result = load_with(None, "/nowhere/agent", files=source)
    assert [f.content for f in result.files] == ["global"]


def test_project_directories_stop_at_the_top():
    assert project_directories("/a/b/c", "/a") == ["/a", "/a/b", "/a/b/c"]
    assert project_directories("/a/b/c") == ["/", "/a", "/a/b", "/a/b/c"]
    assert project_directories("/a/b/c", "/x") == ["/a/b/c"]  # not an ancestor: cwd alone
