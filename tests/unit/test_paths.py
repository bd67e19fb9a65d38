"""Workspace containment (sessions_app/agent/paths.py): a working directory from an
imported file is checked without resolving a path no folder can have."""

import pytest

from sessions_app.agent.paths import PATH_MAX, WorkspaceError, check_cwd, is_within


def test_a_cwd_longer_than_any_path_is_refused_at_once(tmp_path):
    huge = "/a" * 5_000_000  # a 10 MB header cwd: resolving it took minutes
    with pytest.raises(WorkspaceError, match="no folder has such a path"):
        check_cwd(huge, [tmp_path])


def test_a_real_cwd_inside_a_root_is_accepted(tmp_path):
    inside = tmp_path / "proj"
    inside.mkdir()
    assert check_cwd(str(inside), [tmp_path]) == str(inside.resolve())
    assert len(str(inside)) <= PATH_MAX


@pytest.mark.parametrize(
    ("path", "root", "inside"),
    [
        ("/r/1", "/r/1", True),
        ("/r/1/x", "/r/1", True),
        ("/r/1/", "/r/1", True),
        ("/r/12", "/r/1", False),  # a numeric prefix: a sibling, not a child
        ("/r/12/x", "/r/1", False),
        ("/r/1x", "/r/1", False),
        ("/r/1-old/x", "/r/1", False),
        ("/r/1.bak", "/r/1", False),
        ("/r", "/r/1", False),
        ("/r/1", "/r/12", False),
        ("/r/12/x", "/r/12/", True),
        ("/anything", "/", True),
    ],
)
def test_is_within_compares_whole_components(path, root, inside):
    assert is_within(path, root) is inside


def test_check_cwd_refuses_a_sibling_whose_name_starts_with_the_owners_key(tmp_path):
    """Areas are `<root>/<user pk>`: user 1's area is a prefix of user 12's."""
    for key in ("1", "12", "1-x"):
        (tmp_path / key / "proj").mkdir(parents=True)
    root = tmp_path.resolve()
    assert check_cwd(str(tmp_path / "1" / "proj"), [tmp_path], owner_key="1") == str(
        root / "1" / "proj"
    )
    for other in ("12", "1-x"):
        with pytest.raises(WorkspaceError, match="outside your workspace area"):
            check_cwd(str(tmp_path / other / "proj"), [tmp_path], owner_key="1")
    with pytest.raises(WorkspaceError, match="outside your workspace area"):
        check_cwd(str(tmp_path / "1" / "proj"), [tmp_path], owner_key="12")
    # A root that is itself a numeric prefix of a sibling folder.
    (tmp_path / "rootA").mkdir()
    (tmp_path / "rootAB" / "5" / "p").mkdir(parents=True)
    with pytest.raises(WorkspaceError, match="outside the allowed workspace roots"):
        check_cwd(str(tmp_path / "rootAB" / "5" / "p"), [tmp_path / "rootA"], owner_key="5")
