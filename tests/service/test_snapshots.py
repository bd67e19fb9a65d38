"""agent/snapshots.py against the races of issue #33 (C and D), with the real sandbox.

A command of the workspace swaps names in a tight loop (``renameat2(RENAME_EXCHANGE)``
through ctypes, in the sandbox, as a session's command would) while snapshots and
restores run: git checks a path with ``lstat`` and then opens it by path, so a swap in
between leads it through a link. Since git runs in the sandbox too, with only this
workspace and its own shadow repository mounted, the link leads nowhere: nothing is
written outside the workspace and nothing outside reaches a snapshot. Each test counts
the swaps the loop made, so it shows the race really ran.
"""

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from sessions_app.agent.sandbox import SANDBOX_UID, launch
from sessions_app.agent.snapshots import ShadowRepo, SnapshotError
from sessions_app.selectors.workspaces import sandbox_config
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("bwrap_required")

SECRET = "SECRET-7c1f0e9a-not-for-snapshots"
CRON = "* * * * * root touch /tmp/pwned\n"

SWAP_LOOP = textwrap.dedent(
    """
    import ctypes, os, platform, sys
    SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276}[platform.machine()]
    libc = ctypes.CDLL(None, use_errno=True)
    # name:link:target:kind — swap the real ``name`` (a dir or a file) with ``link``
    pairs = [p.split(":") for p in sys.argv[1:]]
    swaps = relinks = rounds = 0
    os.makedirs("old", exist_ok=True)

    def report():
        with open("swaps.tmp", "w") as fh:
            fh.write(f"{swaps} {relinks}")
        os.replace("swaps.tmp", "swaps")

    def repair(name, link, target, kind):
        # A restore removes either name, or puts a real one where the link was: put the
        # missing name back and keep a link in the pair, so the race goes on all along.
        global relinks
        if not os.path.lexists(name):
            os.mkdir(name) if kind == "dir" else open(name, "w").close()
        if not os.path.islink(name) and not os.path.islink(link):
            if os.path.lexists(link):
                os.rename(link, f"old/{relinks}")
            os.symlink(target, link)
            relinks += 1
        elif not os.path.lexists(link):
            os.symlink(target, link)
            relinks += 1

    report()
    open("swapping", "w").close()
    while not os.path.exists("stop"):
        rounds += 1
        for name, link, target, kind in pairs:
            if libc.syscall(SYS_RENAMEAT2, -100, name.encode(), -100, link.encode(), 2) == 0:
                swaps += 1
            if rounds % 64 == 0 or not os.path.lexists(link):
                try:
                    repair(name, link, target, kind)
                except OSError:
                    pass  # raced a restore: next round
        if rounds % 4096 == 0:
            report()
    report()
    """
)
# The loop's own files stay out of the snapshots (the links are what the race swaps in).
LOOP_IGNORE = "/swap.py\n/swapping\n/swaps\n/swaps.tmp\n/stop\n/old/\n/lnk\n/key\n/their\n"


@pytest.fixture
def config(settings):
    return sandbox_config()


@pytest.fixture
def ws(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def repo(tmp_path, ws, config):
    return ShadowRepo(
        str(tmp_path / "shadow" / "ws.git"), str(ws), max_file_bytes=1 << 20, sandbox=config
    )


def account_folder(path: Path, config) -> Path:
    """A folder the commands' account owns, as another user's workspace is: only the
    sandbox's mounts, not file permissions, keep the loop's links from reaching it."""
    path.mkdir()
    owner = config.command_owner
    if owner is not None:
        os.chown(path, *owner)
    return path


class SwapLoop:
    """The attacker's loop, started as a command of the workspace in the sandbox.
    ``pairs``: (name, link, link's target, "dir" or "file")."""

    def __init__(self, config, ws: Path, pairs: list[tuple[str, str, str, str]]):
        self.ws = ws
        script = ws / "swap.py"
        script.write_text(SWAP_LOOP)
        args = " ".join(":".join(pair) for pair in pairs)
        self.launch = launch(config, f"exec python3 swap.py {args}", str(ws))
        self.proc = subprocess.Popen(
            self.launch.argv, env=self.launch.env, cwd=self.launch.cwd,
            pass_fds=self.launch.pass_fds, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.launch.close_fds()
        wait_until(lambda: (ws / "swapping").exists() or self.proc.poll() is not None, 30)
        assert self.proc.poll() is None, self.proc.communicate()

    def swaps(self) -> int:
        """The swaps made so far (the loop reports every few thousand rounds)."""
        return int((self.ws / "swaps").read_text().split()[0])

    def stop(self) -> int:
        (self.ws / "stop").touch()
        out, err = self.proc.communicate(timeout=60)
        self.launch.cleanup()
        assert self.proc.returncode == 0, err
        return self.swaps()


def links_recorded(repo, name: str) -> int:
    """How many of the repository's snapshots hold ``name`` as a symlink: the swaps that
    git itself saw, in the middle of its work."""
    commits = repo.git("rev-list", "--all").decode().split()
    return sum(repo.git("ls-tree", commit, "--", name).startswith(b"120000 ") for commit in commits)


def test_restores_never_write_through_a_directory_swapped_for_a_link(repo, ws, tmp_path, config):
    outside = account_folder(tmp_path / "other-users-workspace", config)
    (ws / ".gitignore").write_text(LOOP_IGNORE)
    (ws / "d").mkdir()
    for i in range(20):
        (ws / "d" / f"cron{i}").write_text(CRON)
    with_files = repo.snapshot("d holds files")
    for i in range(20):
        (ws / "d" / f"cron{i}").unlink()
    without = repo.snapshot("d is empty")
    (ws / "lnk").symlink_to(outside)

    loop = SwapLoop(config, ws, [("d", "lnk", str(outside), "dir")])
    failed, progress = 0, []
    try:
        for i in range(200):
            if i % 50 == 0:
                progress.append(loop.swaps())
            try:
                repo.restore(with_files if i % 2 == 0 else without)
            except SnapshotError:
                failed += 1  # git saw the swap and stopped: fine, as long as it wrote nothing
        progress.append(loop.swaps())
        for _ in range(200):
            try:
                repo.snapshot("while swapping")
            except SnapshotError:
                pass
    finally:
        swaps = loop.stop()

    # The loop really raced the restores: it swapped all along (every quarter of them),
    # and git itself found d turned into the link in the middle of its work.
    assert all(b - a > 1000 for a, b in zip(progress, progress[1:], strict=False)), progress
    assert swaps > progress[-1]
    assert links_recorded(repo, "d") >= 1
    assert failed < 200  # and restores really ran
    assert list(outside.iterdir()) == []
    written_by_root = [p for p in tmp_path.rglob("cron*") if not p.is_relative_to(ws)]
    assert written_by_root == []


def test_snapshots_never_read_a_file_swapped_for_a_link_to_a_secret(repo, ws, tmp_path, config):
    root_only = tmp_path / "secret_key"
    root_only.write_text(SECRET + "-root\n")
    root_only.chmod(0o600)
    theirs = account_folder(tmp_path / "other-users-workspace", config) / "notes.txt"
    theirs.write_text(SECRET + "-theirs\n")
    if config.command_owner is not None:
        os.chown(theirs, *config.command_owner)
    theirs.chmod(0o600)
    (ws / ".gitignore").write_text(LOOP_IGNORE)
    # Shorter than the secrets: git reads as many bytes as lstat said the file held, so
    # through a swapped link it stores the secret's first bytes (from a longer file it
    # would get a short read and fail instead).
    (ws / "a.txt").write_text("plain text a\n")
    (ws / "b.txt").write_text("plain text b\n")
    (ws / "key").symlink_to(root_only)
    (ws / "their").symlink_to(theirs)

    loop = SwapLoop(
        config,
        ws,
        [("a.txt", "key", str(root_only), "file"), ("b.txt", "their", str(theirs), "file")],
    )
    commits, progress = [], []
    try:
        for i in range(200):
            if i % 50 == 0:
                progress.append(loop.swaps())
            try:
                commits.append(repo.snapshot("while swapping"))
            except SnapshotError:
                pass  # git saw the swap and stopped
        progress.append(loop.swaps())
        for i in range(200):
            try:
                repo.restore(commits[i % len(commits)])
            except SnapshotError:
                pass
    finally:
        swaps = loop.stop()

    assert all(b - a > 1000 for a, b in zip(progress, progress[1:], strict=False)), progress
    assert swaps > progress[-1]
    assert len(set(commits)) > 2  # snapshots really recorded the changing names
    assert links_recorded(repo, "a.txt") >= 10  # git found the names turned into links
    assert links_recorded(repo, "b.txt") >= 10
    blobs = repo.git("cat-file", "--batch-all-objects", "--batch")
    assert b"SECRET-" not in blobs  # not even the secrets' first bytes
    for before, after in zip(commits, commits[1:], strict=False):
        assert "SECRET-" not in repo.diff_text(before, after)
    assert root_only.read_text() == SECRET + "-root\n"  # and nothing wrote through a link
    assert theirs.read_text() == SECRET + "-theirs\n"


def test_git_runs_as_the_commands_account_with_nothing_but_its_mounts(repo, ws, config):
    (ws / "f.txt").write_text("x\n")
    repo.snapshot()
    seen = repo.sandboxed(
        ["/bin/sh", "-c", "id -u; ls -a /; ls -a /.piweb-shadow | head -3"], workspace=True
    ).decode()
    uid, *rest = seen.split("\n")
    assert int(uid) == SANDBOX_UID
    top = set(rest)
    assert ws.parts[1] in top and ".piweb-shadow" in top
    assert not {"root", "home", "var", "srv"} & top  # nothing else of the host
    owner = config.command_owner
    if owner is not None:  # a root worker: files the sandboxed git made are the account's
        assert os.stat(repo.git_dir).st_uid == owner[0]
        assert os.stat(os.path.join(repo.git_dir, "index")).st_uid == owner[0]
