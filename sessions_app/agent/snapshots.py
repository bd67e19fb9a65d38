"""Workspace snapshots in a shadow git repository that piweb keeps for each workspace.

The repository lives outside the workspace (its GIT_DIR is under piweb's var directory,
its work tree is the workspace), so the user's own ``.git`` is never touched: git never
adds a directory named ``.git``, and a nested repository is skipped, not recorded.

A snapshot is one commit of the workspace as it is: files that ``.gitignore`` ignores are
not read (git does not descend into an ignored directory), files above a size limit are
left out, and symlinks are stored as links (git never follows them, so a link to ``/etc``
is recorded as the text ``/etc``). Only what ``git status`` reports as changed since the
previous snapshot is looked at again, which keeps a snapshot of a large, mostly unchanged
workspace cheap.

git runs outside the sandbox, so it runs with a minimal environment: no system or global
configuration, no hooks, no fsmonitor, and ``$GIT_DIR/info/attributes`` turning off every
content filter a workspace's ``.gitattributes`` could ask for (line-ending conversion,
``ident``, filter drivers), so what is stored and restored is the bytes as they are. Its
working directory is the workspace's descriptor opened the way the file tools open it
(``safefs.open_root`` on the real path, checked to be it). A restore (``git read-tree -u``)
writes through git's own checks, which refuse to write beyond a symlink.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings

from . import safefs

_IDENTITY = {
    "GIT_AUTHOR_NAME": "piweb",
    "GIT_AUTHOR_EMAIL": "piweb@localhost",
    "GIT_COMMITTER_NAME": "piweb",
    "GIT_COMMITTER_EMAIL": "piweb@localhost",
}
_CONFIG = [
    "-c", "core.hooksPath=/dev/null",
    "-c", "safe.directory=*",
    "-c", "core.fsmonitor=false",
    "-c", "core.autocrlf=false",
    "-c", "core.safecrlf=false",
    "-c", "core.symlinks=true",
    "-c", "core.quotePath=false",
    "-c", "core.untrackedCache=true",
    "-c", "core.splitIndex=false",
    "-c", "gc.auto=0",
    "-c", "diff.renames=false",
    "-c", "submodule.recurse=false",
    "-c", "protocol.allow=never",
]  # fmt: skip
_ATTRIBUTES = "* -text -eol -ident -filter -working-tree-encoding\n"
REF = "refs/heads/piweb"


class SnapshotError(RuntimeError):
    """git failed, or the workspace cannot be opened safely."""


@dataclass
class FileStat:
    path: str
    status: str  # added | modified | deleted | renamed | typechange
    added: int
    removed: int
    binary: bool
    old_path: str = ""


class ShadowRepo:
    """The shadow repository of one workspace (``work_tree`` is its real path)."""

    def __init__(self, git_dir: str, work_tree: str, *, max_file_bytes: int):
        self.git_dir = os.fspath(git_dir)
        self.work_tree = os.fspath(work_tree)
        self.max_file_bytes = max_file_bytes

    # ----------------------------------------------------------------- plumbing

    def _env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.git_dir,
            "LC_ALL": "C",
            "GIT_DIR": self.git_dir,
            "GIT_WORK_TREE": ".",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            **_IDENTITY,
        }

    def git(
        self, *args: str, input: bytes | None = None, root_fd: int | None = None, check=True
    ) -> bytes:
        """Run git; with ``root_fd`` its working directory is that descriptor's directory."""
        cwd = f"/proc/{os.getpid()}/fd/{root_fd}" if root_fd is not None else self.git_dir
        proc = subprocess.run(
            [settings.PIWEB_GIT, *_CONFIG, *args],
            input=input,
            cwd=cwd,
            env=self._env(),
            capture_output=True,
            timeout=300,
        )
        if check and proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise SnapshotError(f"git {args[0]} failed ({proc.returncode}): {err[:500]}")
        return proc.stdout

    def ensure(self) -> None:
        if os.path.exists(os.path.join(self.git_dir, "HEAD")):
            return
        os.makedirs(self.git_dir, mode=0o700, exist_ok=True)
        env = {k: v for k, v in self._env().items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
        proc = subprocess.run(
            [settings.PIWEB_GIT, *_CONFIG, "init", "--bare", "-q", self.git_dir],
            env=env,
            cwd=self.git_dir,
            capture_output=True,
        )
        if proc.returncode != 0:
            raise SnapshotError(f"git init failed: {proc.stderr.decode('utf-8', 'replace')[:500]}")
        os.makedirs(os.path.join(self.git_dir, "info"), exist_ok=True)
        with open(os.path.join(self.git_dir, "info", "attributes"), "w") as fh:
            fh.write(_ATTRIBUTES)
        # The work tree is given by GIT_WORK_TREE; the repository itself is not bare.
        self.git("config", "core.bare", "false")
        self.git("config", "core.logAllRefUpdates", "false")
        self.git("symbolic-ref", "HEAD", REF)

    @contextmanager
    def locked(self) -> Iterator[int]:
        """The repository's lock, and an O_PATH descriptor of the workspace."""
        self.ensure()
        with open(os.path.join(self.git_dir, "piweb.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                root_fd = safefs.open_root(self.work_tree)
            except OSError as exc:
                raise SnapshotError(f"cannot open the workspace: {exc}") from exc
            try:
                yield root_fd
            finally:
                os.close(root_fd)
                fcntl.flock(lock, fcntl.LOCK_UN)

    def head(self) -> str | None:
        out = self.git("rev-parse", "--verify", "-q", REF, check=False).strip()
        return out.decode() or None

    # ----------------------------------------------------------------- snapshot

    def snapshot(self, message: str = "snapshot") -> str:
        """Commit the workspace as it is now; the current head if nothing changed."""
        with self.locked() as root_fd:
            return self._snapshot(root_fd, message)

    def _changed_paths(self, root_fd: int) -> list[str]:
        out = self.git(
            "status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all",
            "--ignore-submodules=all", root_fd=root_fd,
        )  # fmt: skip
        paths = []
        for record in out.split(b"\0"):
            if len(record) < 4:
                continue
            xy, path = record[:2], record[3:]
            if xy == b"??" or xy[1:2] != b" ":
                paths.append(os.fsdecode(path))
        return paths

    def _snapshot(self, root_fd: int, message: str) -> str:
        update, drop = [], []
        for path in self._changed_paths(root_fd):
            if path.endswith("/"):
                continue  # a nested repository: not ours to record
            try:
                st = os.lstat(path, dir_fd=root_fd)
            except FileNotFoundError:
                update.append(path)  # deleted: --remove takes it out
                continue
            except OSError:
                drop.append(path)
                continue
            if os.path.stat.S_ISLNK(st.st_mode):
                update.append(path)
            elif os.path.stat.S_ISREG(st.st_mode) and st.st_size <= self.max_file_bytes:
                update.append(path)
            else:
                drop.append(path)  # too large, or no longer a file
        if update:
            self.git(
                "update-index", "--add", "--remove", "-z", "--stdin",
                input=b"\0".join(os.fsencode(p) for p in update) + b"\0", root_fd=root_fd,
            )  # fmt: skip
        if drop:
            self.git(
                "update-index", "--force-remove", "-z", "--stdin",
                input=b"\0".join(os.fsencode(p) for p in drop) + b"\0", root_fd=root_fd,
            )  # fmt: skip
        tree = self.git("write-tree", root_fd=root_fd).strip().decode()
        head = self.head()
        if head:
            head_tree = self.git("rev-parse", f"{head}^{{tree}}").strip().decode()
            if head_tree == tree:
                return head
        return self._commit(tree, [head] if head else [], message)

    def _commit(self, tree: str, parents: list[str], message: str) -> str:
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        commit = self.git(*args, "-m", message).strip().decode()
        self.git("update-ref", REF, commit)
        return commit

    # ----------------------------------------------------------------- restore

    def restore(self, target: str, message: str = "restore") -> tuple[str, str]:
        """Put the workspace back to ``target``'s files. Returns (before, after): the
        snapshot of the state just before, and the new head (``target``'s tree, with the
        state before as its parent, so that both stay reachable)."""
        with self.locked() as root_fd:
            before = self._snapshot(root_fd, "before restore")
            target = self.git("rev-parse", "--verify", f"{target}^{{commit}}").strip().decode()
            self.git("read-tree", "-u", "--reset", target, root_fd=root_fd)
            tree = self.git("rev-parse", f"{target}^{{tree}}").strip().decode()
            parents = [before] if before else []
            after = self._commit(tree, parents + ([target] if target != before else []), message)
            return before, after

    # ----------------------------------------------------------------- reading

    def diff_stats(self, base: str | None, commit: str) -> list[FileStat]:
        """The files changed from ``base`` (None: nothing) to ``commit``, renames found."""
        base = base or self.empty_tree()
        if base == commit:
            return []
        status = self.git("diff-tree", "-r", "-M", "--name-status", "-z", base, commit)
        numstat = self.git("diff-tree", "-r", "-M", "--numstat", "-z", base, commit)
        return _parse_stats(status, numstat)

    def diff_text(
        self, base: str | None, commit: str, paths: list[str] | None = None, *, context: int = 3
    ) -> str:
        base = base or self.empty_tree()
        args = ["diff-tree", "-r", "-M", "-p", f"-U{context}", "--no-color", base, commit]
        if paths:
            args += ["--", *[f":(literal){p}" for p in paths]]
        return self.git(*args).decode("utf-8", "replace")

    def empty_tree(self) -> str:
        return self.git("hash-object", "-t", "tree", "--stdin", input=b"").strip().decode()

    def has(self, commit: str) -> bool:
        out = self.git("cat-file", "-t", commit, check=False).strip()
        return out == b"commit"

    def files(self, commit: str) -> list[str]:
        out = self.git("ls-tree", "-r", "-z", "--name-only", commit)
        return [os.fsdecode(p) for p in out.split(b"\0") if p]

    def size_bytes(self) -> int:
        total = 0
        for dirpath, _dirs, names in os.walk(self.git_dir):
            for name in names:
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
                except OSError:
                    pass
        return total


def _parse_stats(status: bytes, numstat: bytes) -> list[FileStat]:
    names = [os.fsdecode(p) for p in status.split(b"\0")]
    kinds = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "T": "typechange"}
    order: list[tuple[str, str, str]] = []
    i = 0
    while i < len(names) and names[i]:
        code = names[i]
        if code[:1] in ("R", "C"):
            order.append((kinds.get(code[0], "modified"), names[i + 2], names[i + 1]))
            i += 3
        else:
            order.append((kinds.get(code[0], "modified"), names[i + 1], ""))
            i += 2
    counts: dict[str, tuple[int, int, bool]] = {}
    parts = numstat.split(b"\0")
    i = 0
    while i < len(parts) and parts[i]:
        head = parts[i].split(b"\t")
        added, removed = head[0], head[1]
        if len(head) >= 3 and head[2]:
            path = os.fsdecode(head[2])
            i += 1
        else:  # a rename: the two paths follow
            path = os.fsdecode(parts[i + 2])
            i += 3
        binary = added == b"-"
        counts[path] = (0 if binary else int(added), 0 if binary else int(removed), binary)
    out = []
    for kind, path, old in order:
        added, removed, binary = counts.get(path, (0, 0, False))
        out.append(FileStat(path, kind, added, removed, binary, old))
    return out
