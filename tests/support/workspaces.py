"""Per-user workspace areas: ``<first workspace root>/<user pk>``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def area_of(settings, user) -> Path:
    """``user``'s area of the first workspace root (made if missing). Use it with the
    ``fresh_workspace_root`` fixture so the area belongs to this test alone."""
    path = Path(os.path.realpath(settings.PIWEB_WORKSPACE_ROOTS[0])) / str(user.pk)
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_project_context(workspace: Path, skill_description: str) -> None:
    """A project's context files: ``AGENTS.md`` ("Always run the tests.") and a project
    skill ``deploy`` (in ``.pi/skills/``) described by ``skill_description``."""
    (workspace / "AGENTS.md").write_text("Always run the tests.\n")
    skill = workspace / ".pi" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: deploy\ndescription: {skill_description}\n---\nSteps.\n"
    )


def place_workspace(user, path: Path) -> Path:
    """Move a test workspace into ``user``'s folder of its root and return the new real
    path; a symlink is left at the old path so the test's ``workspace / "x"`` still works."""
    from django.conf import settings

    area = Path(os.path.realpath(settings.PIWEB_WORKSPACE_ROOTS[0])) / str(user.pk)
    real = Path(os.path.realpath(path))
    if area in real.parents:
        return real
    area.mkdir(parents=True, exist_ok=True)
    target = area / real.name
    shutil.move(str(real), str(target))
    os.symlink(target, path)
    return target
