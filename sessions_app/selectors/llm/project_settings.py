"""A project's own ``.pi/settings.json``, merged over the agent folder's as pi 0.80.2's
settings manager merges them (`core.pi_config.merge_settings`).

Read only for a workspace that is the user's own (`workspaces.project_dir`: the checked
working directory in that user's area; pi reads a project's settings only for a project
its user trusts), and only through `safefs` beneath that directory: a settings file, or a
``.pi`` folder, that is a link leading out of it is not read. A file that is not a JSON
object counts as none, as pi then keeps the agent folder's settings alone.
"""

from __future__ import annotations

import json
import os

from sessions_app.agent.safefs import BeneathFiles
from sessions_app.core.pi_config import PiSettings, ProjectSettings, merge_settings
from sessions_app.selectors import paths
from sessions_app.selectors.workspaces import project_dir

from .catalog import agent_dir

PROJECT_SETTINGS = os.path.join(".pi", "settings.json")
MAX_SETTINGS_BYTES = 1 << 20


def read_project_settings(cwd: str) -> dict | None:
    """The object in ``<cwd>/.pi/settings.json`` (`cwd`: a checked real directory), read
    beneath `cwd`; None when there is none, it leads outside, or it is not an object."""
    try:
        raw = BeneathFiles([cwd], MAX_SETTINGS_BYTES).read(os.path.join(cwd, PROJECT_SETTINGS))
        data = json.loads(raw)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def project_settings(session, user, leaf=paths.UNSET) -> ProjectSettings | None:
    """The settings in effect where `session` works at the leaf, for `user`; None when
    the workspace is not the user's own or has no readable project settings."""
    if session is None or user is None:
        return None
    cwd = project_dir(session, user, leaf)
    project = read_project_settings(cwd) if cwd else None
    if not project:
        return None
    base, error = agent_dir().settings.read()
    merged = merge_settings(base if isinstance(base, dict) else {}, project)
    return ProjectSettings(PiSettings.parse(merged, error), frozenset(project))
