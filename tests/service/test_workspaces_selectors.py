"""services/workspaces.py: each user's area of the workspace roots (the roots themselves on
a single-user setup), the folders a session may work in, and the files of its artifact
directory a page may hand out. (A session's choice of another folder is tested in
test_workspace_choice.py.)"""

import os

import pytest

from sessions_app.selectors import workspaces as workspace_reads
from sessions_app.selectors.workspaces import WorkspaceError
from sessions_app.services import sessions, workspaces

pytestmark = pytest.mark.django_db


def test_each_user_works_in_their_own_folder_of_each_root(fresh_workspace_root, make_user):
    me, other = make_user(), make_user()
    root = fresh_workspace_root.resolve()
    mine = workspaces.user_workspace(me)
    assert mine == root / str(me.pk) and mine.is_dir()
    project = mine / "project"
    project.mkdir()
    assert workspace_reads.check_session_cwd(str(project), me) == str(project)
    theirs = workspaces.user_workspace(other) / "theirs"
    theirs.mkdir()
    with pytest.raises(WorkspaceError):
        workspace_reads.check_session_cwd(str(theirs), me)
    with pytest.raises(WorkspaceError):
        workspace_reads.check_session_cwd("/etc", me)
    assert workspace_reads.owner_key(me) == workspace_reads.owner_key(me.pk) == str(me.pk)


def test_a_single_user_setup_works_in_the_roots_themselves(
    fresh_workspace_root, make_user, settings
):
    settings.PIWEB_WORKSPACE_MODE = "single-user"
    me = make_user()
    root = fresh_workspace_root.resolve()
    assert workspaces.single_user() and workspaces.user_areas_of(me) == [root]
    (root / "shared").mkdir()
    assert workspace_reads.check_session_cwd(str(root / "shared"), me) == str(root / "shared")


def test_a_session_works_in_its_header_folder_until_it_chooses_another(
    fresh_workspace_root, make_user
):
    owner = make_user()
    folder = workspaces.user_workspace(owner) / "w"
    folder.mkdir()
    session = sessions.create_session(owner=owner, cwd=str(folder))
    where = workspace_reads.session_workspace(session)
    assert (where.cwd, where.user_pk, where.choice_id) == (str(folder), owner.pk, None)
    assert workspace_reads.session_cwd(session) == str(folder)


def test_only_files_inside_the_sessions_artifact_folder_are_handed_out(
    make_user, settings, tmp_path
):
    settings.PIWEB_ARTIFACT_DIR = tmp_path / "artifacts"
    session = sessions.create_session(owner=make_user(), cwd="/w")
    folder = tmp_path / "artifacts" / "sessions" / str(session.pk)
    folder.mkdir(parents=True)
    output = folder / "bash-output.txt"
    output.write_text("full output")
    outside = tmp_path / "secret.txt"
    outside.write_text("no")
    (folder / "link").symlink_to(outside)
    assert workspace_reads.artifact_dir(session) == str(folder)
    assert workspace_reads.session_artifact_file(session, str(output)) == output.resolve()
    for raw in (None, "", "relative.txt", str(outside), str(folder), str(folder / "link"),
                str(output) + "\x00", str(folder / "missing.txt"), str(folder / ".." / "x")):  # fmt: skip
        assert workspace_reads.session_artifact_file(session, raw) is None, raw


def test_users_whose_ids_are_prefixes_of_each_other_never_share_an_area(
    fresh_workspace_root, make_user
):
    """The ids of users made one after another are never prefixes of each other; these
    are (`<root>/7001` and `<root>/70012`), and neither may work in the other's folder."""
    short, long = make_user(id=7001), make_user(id=70012)
    theirs = workspaces.user_workspace(long) / "proj"
    theirs.mkdir()
    mine = workspaces.user_workspace(short) / "proj"
    mine.mkdir()
    assert str(theirs).startswith(str(workspaces.user_workspace(short)))  # as text
    with pytest.raises(WorkspaceError, match="outside your workspace area"):
        workspace_reads.check_session_cwd(str(theirs), short)
    with pytest.raises(WorkspaceError, match="outside your workspace area"):
        workspace_reads.check_session_cwd(str(mine), long)
    assert workspace_reads.check_session_cwd(str(mine), short) == str(mine)
    # Nor can a session be made there, nor an imported one run there.
    with pytest.raises(WorkspaceError):
        workspace_reads.session_cwd(sessions.create_session(owner=short, cwd=str(theirs)))


def test_a_fresh_folder_is_named_after_the_session_and_never_one_in_use(
    fresh_workspace_root, make_user
):
    me, other = make_user(), make_user()
    mine = workspaces.user_workspace(me)
    assert workspace_reads.fresh_folder(me, "Fix the Parser!") == str(mine / "fix-the-parser")
    (mine / "fix-the-parser").mkdir()
    (mine / "fix-the-parser-2").mkdir()
    assert workspace_reads.fresh_folder(me, "Fix the Parser!") == str(mine / "fix-the-parser-3")
    # Another user's folders do not count; a name with no letters gives the time.
    (workspaces.user_workspace(other) / "notes").mkdir()
    assert workspace_reads.fresh_folder(me, "notes") == str(mine / "notes")
    assert workspace_reads.fresh_folder(me, "!!!").startswith(str(mine / "session-"))
    assert len(os.path.basename(workspace_reads.fresh_folder(me, "x" * 300))) == 40
