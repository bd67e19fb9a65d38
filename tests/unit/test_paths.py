"""Workspace containment (sessions_app/agent/paths.py): a working directory from an
imported file is checked without resolving a path no folder can have."""

import pytest

from sessions_app.agent.paths import PATH_MAX, WorkspaceError, check_cwd


def test_a_cwd_longer_than_any_path_is_refused_at_once(tmp_path):
    huge = "/a" * 5_000_000  # a 10 MB header cwd: resolving it took minutes
    with pytest.raises(WorkspaceError, match="no folder has such a path"):
        check_cwd(huge, [tmp_path])


def test_a_real_cwd_inside_a_root_is_accepted(tmp_path):
    inside = tmp_path / "proj"
    inside.mkdir()
    assert check_cwd(str(inside), [tmp_path]) == str(inside.resolve())
    assert len(str(inside)) <= PATH_MAX
