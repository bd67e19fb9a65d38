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

Every git process that reads the workspace or writes the repository runs in the sandbox
(``sandbox.launch_git``), as the commands' account, with nothing mounted but the system,
this repository and, when it needs it, this workspace: a directory or file of the
workspace swapped for a link while git works (git checks with ``lstat``, then opens by
path) leads git only to what the workspace's own commands see. A restore sees the
repository read-only and works on a copy of its index, so even a write redirected that
way lands in the workspace, the sandbox's private ``/tmp`` or that copy. Reads of the
repository alone (diffs, file lists) run in the worker: the repository holds nothing git
did not write itself.

git runs with a minimal environment: no system or global configuration, no hooks, no
fsmonitor, and ``$GIT_DIR/info/attributes`` turning off every content filter a
workspace's ``.gitattributes`` could ask for (line-ending conversion, ``ident``, filter
drivers), so what is stored and restored is the bytes as they are.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from .paths import make_private_dir
from .sandbox import GitMounts, SandboxConfig, SandboxUnavailable, launch_git, run_in

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
WORK_TREE_FILE = "piweb-work-tree"  # the workspace's real path
_COUNTER = "piweb-snapshots"  # one byte per snapshot since the last gc
# git status, an empty record, then the lstat of each path it lists that is changed and
# not a nested repository ("<raw mode in hex> <size> <path>"), in one sandboxed process.
_STATUS_AND_STAT = (
    '"$@" status --porcelain=v1 -z --no-renames --untracked-files=all '
    "--ignore-submodules=all > /tmp/status || exit 1; cat /tmp/status; printf '\\0'; "
    "grep -z -E '^([?][?]|.[^ ]) ' /tmp/status | grep -z -v '/$' | cut -z -c4- "
    "| xargs -0 -r stat --printf='%f %s %n\\0' -- 2>/dev/null; exit 0"
)
# commit-tree, then the branch moved to the new commit, in one sandboxed process.
_COMMIT = 'c=$("$@") && "$1" update-ref ' + REF + ' "$c" && echo "$c"'
# A snapshot's end, in one sandboxed process: the changed paths (stdin) added when $1 is
# 1, the tree written and, unless it is the head's ($3), committed on top of it.
_UPDATE_AND_COMMIT = (
    'set -e; add=$1 msg=$2 head=$3; shift 3; if [ "$add" = 1 ]; then '
    '"$@" update-index --add --remove -z --stdin; fi; t=$("$@" write-tree); '
    'if [ -n "$head" ] && [ "$t" = "$("$@" rev-parse "$head^{tree}")" ]; then '
    'echo "$head"; exit 0; fi; c=$("$@" commit-tree "$t" ${head:+-p "$head"} -m "$msg"); '
    '"$@" update-ref ' + REF + ' "$c"; echo "$c"'
)


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
    """The shadow repository of one workspace (``work_tree`` is its real path); its git
    runs in the sandbox ``sandbox`` describes (the default: bubblewrap)."""

    def __init__(
        self,
        git_dir: str,
        work_tree: str,
        *,
        max_file_bytes: int,
        sandbox: SandboxConfig | None = None,
    ):
        self.git_dir = os.fspath(git_dir)
        self.work_tree = os.fspath(work_tree)
        self.max_file_bytes = max_file_bytes
        self.sandbox = sandbox or SandboxConfig()

    # ----------------------------------------------------------------- plumbing

    def _env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.git_dir,
            "LC_ALL": "C",
            "GIT_DIR": self.git_dir,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            **_IDENTITY,
        }

    def git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        """Run git on the repository alone, in the worker: for reads only."""
        proc = subprocess.run(
            [settings.PIWEB_GIT, *_CONFIG, *args],
            input=input,
            cwd=self.git_dir,
            env=self._env(),
            capture_output=True,
            timeout=300,
        )
        return _checked(proc.returncode, proc.stdout, proc.stderr, args[0], check)

    def sandboxed(
        self,
        argv: list[str],
        *,
        input: bytes | None = None,
        workspace: bool = False,
        restore_index: str | None = None,
        check: bool = True,
    ) -> bytes:
        """Run ``argv`` in the sandbox with this repository mounted (read-only for a
        restore, which works on the index in ``restore_index`` and writes the workspace)
        and, with ``workspace`` or a restore, the workspace."""
        restoring = restore_index is not None
        mounts = GitMounts(
            repo=self.git_dir,
            repo_writable=not restoring,
            workspace=self.work_tree if workspace or restoring else None,
            workspace_writable=restoring,
            index_dir=restore_index,
        )
        env = {k: v for k, v in self._env().items() if k != "GIT_DIR"}
        if mounts.workspace:
            env["GIT_WORK_TREE"] = "."
        try:
            launch = launch_git(self.sandbox, argv, mounts, env)
        except SandboxUnavailable as exc:
            raise SnapshotError(str(exc)) from exc
        except OSError as exc:
            raise SnapshotError(f"cannot open the workspace: {exc}") from exc
        proc = run_in(launch, input)
        out, err = proc.stdout, proc.stderr
        what = (
            argv[len(_CONFIG) + 1] if argv[0] == settings.PIWEB_GIT else os.path.basename(argv[0])
        )
        return _checked(proc.returncode, out, err, what, check)

    def _git_in_sandbox(self, *args: str, **kwargs: Any) -> bytes:
        return self.sandboxed([settings.PIWEB_GIT, *_CONFIG, *args], **kwargs)

    def ensure(self) -> None:
        if os.path.exists(os.path.join(self.git_dir, "HEAD")):
            return
        owner = self.sandbox.command_owner
        make_private_dir(os.path.dirname(self.git_dir), owner[1] if owner else None)
        os.makedirs(self.git_dir, mode=0o700, exist_ok=True)
        env = {k: v for k, v in self._env().items() if k != "GIT_DIR"}
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
        with open(os.path.join(self.git_dir, WORK_TREE_FILE), "w") as fh:
            fh.write(self.work_tree)  # whose quota the repository counts in
        # The work tree is given by GIT_WORK_TREE; the repository itself is not bare.
        self.git("config", "core.bare", "false")
        self.git("config", "core.logAllRefUpdates", "false")
        self.git("symbolic-ref", "HEAD", REF)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The repository's lock (one snapshot or restore of a workspace at a time)."""
        self.ensure()
        with open(os.path.join(self.git_dir, "piweb.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def head(self) -> str | None:
        out = self.git("rev-parse", "--verify", "-q", REF, check=False).strip()
        return out.decode() or None

    # ----------------------------------------------------------------- snapshot

    def snapshot(self, message: str = "snapshot") -> str:
        """Commit the workspace as it is now; the current head if nothing changed."""
        with self.locked():
            commit = self._snapshot(message)
            self._count_snapshot()
            return commit

    def _count_snapshot(self) -> None:
        with open(os.path.join(self.git_dir, _COUNTER), "a") as fh:
            fh.write(".")

    def snapshots_since_gc(self) -> int:
        """How many snapshots were taken since the last :meth:`gc` (one byte each)."""
        try:
            return os.path.getsize(os.path.join(self.git_dir, _COUNTER))
        except OSError:
            return 0

    def gc(self) -> None:
        """Pack the repository (``git gc``, in the sandbox, the repository alone mounted)."""
        with self.locked():
            self._git_in_sandbox("gc", "--quiet")
            with open(os.path.join(self.git_dir, _COUNTER), "w"):
                pass

    def _changes(self) -> tuple[list[bytes], dict[bytes, tuple[int, int]]]:
        """The paths ``git status`` finds changed, and (mode, size) of those that exist,
        read with lstat: one sandboxed process."""
        out = self.sandboxed(
            ["/bin/sh", "-c", _STATUS_AND_STAT, "sh", settings.PIWEB_GIT, *_CONFIG], workspace=True
        )
        records = iter(out.split(b"\0"))
        paths = []
        for record in records:
            if not record:
                break  # the end of git's output
            xy, path = record[:2], record[3:]
            if path.endswith(b"/"):
                continue  # a nested repository: not ours to record
            if xy == b"??" or xy[1:2] != b" ":
                paths.append(path)
        kinds = {}
        for record in records:
            mode, _, rest = record.partition(b" ")
            size, _, path = rest.partition(b" ")
            if path:
                kinds[path] = (int(mode, 16), int(size))
        return paths, kinds

    def _snapshot(self, message: str) -> str:
        changed, kinds = self._changes()
        head = self.head()
        if head and not changed:
            return head
        update, drop = [], []
        for path in changed:
            if path not in kinds:
                update.append(path)  # deleted: --remove takes it out
                continue
            mode, size = kinds[path]
            if stat.S_ISLNK(mode) or stat.S_ISREG(mode) and size <= self.max_file_bytes:
                update.append(path)
            else:
                drop.append(path)  # too large, or no longer a file
        if drop:
            self._git_in_sandbox(
                "update-index", "--force-remove", "-z", "--stdin",
                input=b"\0".join(drop) + b"\0",
            )  # fmt: skip
        # The files added, the tree written and committed: one sandboxed process.
        script = [str(int(bool(update))), message, head or "", settings.PIWEB_GIT, *_CONFIG]
        out = self.sandboxed(
            ["/bin/sh", "-c", _UPDATE_AND_COMMIT, "sh", *script],
            input=b"\0".join(update) + b"\0" if update else b"",
            workspace=bool(update),
        )
        return out.strip().decode()

    def _commit(self, tree: str, parents: list[str], message: str) -> str:
        args = [settings.PIWEB_GIT, *_CONFIG, "commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        return (
            self.sandboxed(["/bin/sh", "-c", _COMMIT, "sh", *args, "-m", message]).strip().decode()
        )

    # ----------------------------------------------------------------- restore

    def restore(self, target: str, message: str = "restore") -> tuple[str, str]:
        """Put the workspace back to ``target``'s files. Returns (before, after): the
        snapshot of the state just before, and the new head (``target``'s tree, with the
        state before as its parent, so that both stay reachable)."""
        with self.locked():
            before = self._snapshot("before restore")
            target = self.git("rev-parse", "--verify", f"{target}^{{commit}}").strip().decode()
            self._checkout(target)
            tree = self.git("rev-parse", f"{target}^{{tree}}").strip().decode()
            parents = [before] if before else []
            after = self._commit(tree, parents + ([target] if target != before else []), message)
            return before, after

    def export_to(self, commit: str, folder: str) -> None:
        """Write ``commit``'s files into ``folder`` (a new, empty work tree): ``git
        read-tree -u --reset`` on a scratch index, in the sandbox with this repository
        read-only; its own index and work tree are untouched."""
        other = ShadowRepo(
            self.git_dir, folder, max_file_bytes=self.max_file_bytes, sandbox=self.sandbox
        )
        scratch = tempfile.mkdtemp(prefix=".export-", dir=os.path.dirname(self.git_dir))
        try:
            other._git_in_sandbox("read-tree", "-u", "--reset", commit, restore_index=scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _checkout(self, target: str) -> None:
        """``git read-tree -u --reset target`` on a copy of the index, which then becomes
        the repository's index (only once git finished: nothing else is taken back)."""
        scratch = tempfile.mkdtemp(prefix=".restore-", dir=os.path.dirname(self.git_dir))
        try:
            index = os.path.join(self.git_dir, "index")
            if os.path.exists(index):
                shutil.copyfile(index, os.path.join(scratch, "index"))
            self._git_in_sandbox("read-tree", "-u", "--reset", target, restore_index=scratch)
            os.replace(os.path.join(scratch, "index"), index)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

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


def _checked(code: int, out: bytes, err: bytes, what: str, check: bool) -> bytes:
    """git's output, or SnapshotError with its whole error (up to 2,000 characters)."""
    if check and code != 0:
        text = err.decode("utf-8", "replace").strip()
        raise SnapshotError(f"git {what} failed ({code}): {text[:2000]}")
    return out


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
        lines_added, lines_removed, binary = counts.get(path, (0, 0, False))
        out.append(FileStat(path, kind, lines_added, lines_removed, binary, old))
    return out
