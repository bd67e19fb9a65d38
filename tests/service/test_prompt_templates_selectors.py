"""Which prompt templates and skills a message may call (selectors/prompt_templates.py):
pi's order and rules, read through safefs beneath the checked workspace only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessions_app.core.prompt_templates import SKILL_REFERENCES
from sessions_app.models import PromptTemplate, Session
from sessions_app.selectors import prompt_templates
from sessions_app.services import sessions

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(make_user):
    return make_user()


@pytest.fixture
def agent_dir(settings, tmp_path):
    agent = tmp_path / "pi-agent"
    (agent / "prompts").mkdir(parents=True)
    settings.PIWEB_PI_AGENT_DIR = str(agent)
    return agent


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


def prompts(workspace: Path) -> Path:
    return workspace / ".pi" / "prompts"


def names(choices) -> list[tuple[str, str]]:
    return [(t.name, t.source) for t in choices.templates]


def test_project_first_then_the_users_own_then_the_shared_the_first_of_a_name_winning(
    owner, workspace, agent_dir
):
    write(prompts(workspace), "review.md", "---\nargument-hint: <file>\n---\nProject $1\n")
    write(prompts(workspace), "only-project.md", "P\n")
    PromptTemplate.objects.create(user=owner, name="review", text="Mine $1")
    PromptTemplate.objects.create(user=owner, name="mine", text="Mine")
    write(agent_dir / "prompts", "review.md", "Shared $1")
    write(agent_dir / "prompts", "mine.md", "Shared mine")
    write(agent_dir / "prompts", "shared.md", "Shared")
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    choices = prompt_templates.slash_choices(session, owner)
    assert names(choices) == [
        ("only-project", "project"),
        ("review", "project"),
        ("mine", "yours"),
        ("shared", "shared"),
    ]
    review = choices.templates[1]
    assert review.argument_hint == "<file>" and review.description == "Project $1"
    assert prompt_templates.expanded_text(session, owner, '/review "a b"') == "Project a b"
    assert prompt_templates.expanded_text(session, owner, "/mine") == "Mine"
    assert prompt_templates.expanded_text(session, owner, "/nope x") == "/nope x"


def test_dot_files_other_files_ignored_and_node_modules_are_skipped(owner, workspace, agent_dir):
    folder = prompts(workspace)
    write(folder, ".hidden.md", "no")
    write(folder, "notes.txt", "no")
    write(folder, "skipped.md", "no")
    write(folder, ".gitignore", "skipped.md\n")
    (folder / "node_modules").mkdir()
    (folder / "sub.md").mkdir()  # a folder named like a template
    write(folder, "kept.md", "yes")
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    assert names(prompt_templates.slash_choices(session, owner)) == [("kept", "project")]


def test_a_symlinked_template_leading_outside_the_workspace_is_not_read(
    owner, workspace, agent_dir, tmp_path
):
    secret = tmp_path / "outside" / "secret.md"
    write(secret.parent, "secret.md", "SECRET CONTENT $1")
    folder = prompts(workspace)
    folder.mkdir(parents=True)
    (folder / "leak.md").symlink_to(secret)  # absolute, outside
    (folder / "leak-relative.md").symlink_to(os.path.relpath(secret, folder))
    write(workspace, "inside.md", "Inside $1")
    (folder / "inside-link.md").symlink_to(workspace / "inside.md")  # stays inside: followed
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    choices = prompt_templates.slash_choices(session, owner)
    assert names(choices) == [("inside-link", "project")]
    for text in ("/leak x", "/leak-relative x"):
        assert prompt_templates.expanded_text(session, owner, text) == text
    assert prompt_templates.expanded_text(session, owner, "/inside-link x") == "Inside x"


def test_a_prompts_folder_that_is_a_symlink_out_of_the_workspace_is_not_read(
    owner, workspace, agent_dir, tmp_path
):
    outside = tmp_path / "elsewhere"
    write(outside, "leak.md", "SECRET")
    (workspace / ".pi").mkdir()
    (workspace / ".pi" / "prompts").symlink_to(outside)
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    assert prompt_templates.slash_choices(session, owner).templates == []


def test_no_project_templates_from_a_refused_folder_or_for_another_user(
    owner, make_user, workspace, agent_dir, tmp_path, settings
):
    write(prompts(workspace), "review.md", "Project")
    write(agent_dir / "prompts", "shared.md", "Shared")
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    editor = make_user()
    # Another user (a team editor, say) gets no templates from the owner's folder.
    assert names(prompt_templates.slash_choices(session, editor)) == [("shared", "shared")]
    # A session whose folder is outside the owner's area (imported from elsewhere).
    elsewhere = tmp_path / "imported"
    write(prompts(elsewhere), "review.md", "Elsewhere")
    Session.objects.filter(pk=session.pk).update(cwd=str(elsewhere))
    session.refresh_from_db()
    assert prompt_templates.project_dir(session, owner) is None
    assert names(prompt_templates.slash_choices(session, owner)) == [("shared", "shared")]
    assert prompt_templates.expanded_text(session, owner, "/review") == "/review"


def test_piweb_commands_keep_their_names(owner, workspace, agent_dir):
    write(prompts(workspace), "model.md", "Not a model switch")
    write(prompts(workspace), "models.md", "Fine")
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    choices = prompt_templates.slash_choices(session, owner)
    assert names(choices) == [("models", "project")]
    assert choices.shadowed == ["model"]
    assert prompt_templates.expanded_text(session, owner, "/model x") == "/model x"


def test_a_skill_command_reads_the_skill_beneath_the_workspace(owner, workspace, settings):
    skill = workspace / ".pi" / "skills" / "deploy"
    write(skill, "SKILL.md", "---\nname: deploy\ndescription: Deploy it.\n---\nRun go.sh\n")
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    choices = prompt_templates.slash_choices(session, owner)
    assert [s.name for s in choices.skills] == ["deploy"]
    real = os.path.realpath(skill)
    expected = (
        f'<skill name="deploy" location="{real}/SKILL.md">\n'
        f"{SKILL_REFERENCES.format(base_dir=real)}\n\nRun go.sh\n</skill>\n\nnow please"
    )
    assert prompt_templates.expanded_text(session, owner, "/skill:deploy now please") == expected
    assert prompt_templates.expanded_text(session, owner, "/skill:other x") == "/skill:other x"


def test_a_skill_file_swapped_for_a_link_outside_is_not_read(owner, workspace, tmp_path):
    skill = workspace / ".pi" / "skills" / "deploy"
    write(skill, "SKILL.md", "---\nname: deploy\ndescription: Deploy it.\n---\nRun go.sh\n")
    session = sessions.create_session(owner=owner, cwd=str(workspace))
    [found] = prompt_templates.slash_choices(session, owner).skills
    secret = write(tmp_path / "outside", "s.md", "---\nname: deploy\n---\nSECRET\n")
    os.unlink(skill / "SKILL.md")
    (skill / "SKILL.md").symlink_to(secret)
    assert prompt_templates.read_skill(found, os.path.realpath(workspace)) is None


def test_the_agent_folders_skills_are_read_even_where_the_project_is_refused(
    owner, settings, tmp_path
):
    agent = tmp_path / "piweb-agent"
    skill = agent / "skills" / "lint"
    write(skill, "SKILL.md", "---\nname: lint\ndescription: Lint.\n---\nRun ruff.\n")
    settings.PIWEB_AGENT_DIR = agent
    session = sessions.create_session(owner=owner, cwd=str(tmp_path / "imported"))
    choices = prompt_templates.slash_choices(session, owner)
    assert choices.project_dir is None and [s.name for s in choices.skills] == ["lint"]
    expanded = prompt_templates.expanded_text(session, owner, "/skill:lint")
    assert expanded.startswith('<skill name="lint"') and "\n\nRun ruff.\n</skill>" in expanded
