"""Workspace snapshot benchmark (agent/snapshots.py, the shadow git repository).

A generated workspace of 10,000 files / 200 MB (text-like, in 100 folders, plus an
ignored folder) is snapshotted once (the first snapshot of a workspace, reported
apart); then 100 turns each change one file and take the snapshot a turn ends with
(git status over the workspace, update-index of what changed, write-tree, commit-tree,
and the per-file counts that are stored with it: `services.changes.record` without the
database row). Prints p50/p95/max of the time a snapshot adds after a turn, and the
shadow repository's size after the first snapshot and after the 100 turns.

Run: .venv/bin/python bench/snapshot_bench.py [--files N] [--megabytes M] [--turns T]
Needs no database; everything goes under /tmp and is deleted at the end.
Target: p50 < 150 ms, sandboxed (its git runs in bubblewrap, as the commands' account);
the same snapshots unsandboxed are timed too, to print what the sandbox adds.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# The snapshots read piweb's settings (the git binary): no database is opened.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
import django  # noqa: E402

django.setup()

from sessions_app.agent.sandbox import SandboxConfig  # noqa: E402
from sessions_app.agent.snapshots import ShadowRepo  # noqa: E402

# The sandbox every snapshot's git runs in (a root run: as uid 64100, as piweb's default),
# and the same git unsandboxed, to show what the sandbox adds.
SANDBOXES = {
    "sandboxed": SandboxConfig(host_uid=64100 if os.geteuid() == 0 else None),
    "unsandboxed": SandboxConfig(mode="off"),
}


def make_workspace(root: Path, files: int, megabytes: int) -> None:
    per_file = megabytes * 1024 * 1024 // files
    for i in range(files):
        folder = root / f"pkg{i % 100:03d}"
        folder.mkdir(exist_ok=True)
        raw = os.urandom(per_file * 3 // 4)
        text = base64.encodebytes(raw)  # lines of 76 characters
        (folder / f"module_{i:05d}.py").write_bytes(text)
    (root / ".gitignore").write_text("node_modules/\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "big.bin").write_bytes(os.urandom(1 << 20))


def turns(repo: ShadowRepo, work: Path, count: int) -> list[float]:
    """Milliseconds of each turn's snapshot (one file changed), counts included."""
    base = repo.snapshot("first")
    times = []
    for turn in range(count):
        target = work / f"pkg{turn % 100:03d}" / f"module_{turn:05d}.py"
        with open(target, "a") as fh:
            fh.write(f"# turn {turn}: one more line\n")
        started = time.perf_counter()
        commit = repo.snapshot(f"turn {turn}")
        stats = repo.diff_stats(base, commit)
        times.append((time.perf_counter() - started) * 1000)
        assert [s.path for s in stats] == [str(target.relative_to(work))], stats
        base = commit
    return sorted(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="piweb-snapshot-bench-"))
    os.chmod(tmp, 0o755)  # the sandbox account passes through it
    try:
        work = tmp / "workspace"
        work.mkdir()
        started = time.perf_counter()
        make_workspace(work, args.files, args.megabytes)
        print(
            f"workspace: {args.files:,} files, {args.megabytes} MB "
            f"(made in {time.perf_counter() - started:.1f} s)"
        )
        p50 = {}
        for name, sandbox in SANDBOXES.items():
            git_dir = tmp / name / "shadow.git"
            repo = ShadowRepo(
                str(git_dir), os.path.realpath(work), max_file_bytes=1 << 20, sandbox=sandbox
            )
            started = time.perf_counter()
            repo.snapshot("first")
            print(f"{name}: first snapshot: {time.perf_counter() - started:.2f} s")
            first_size = repo.size_bytes()
            times = turns(repo, work, args.turns)
            p95 = times[int(len(times) * 0.95) - 1]
            p50[name] = statistics.median(times)
            print(
                f"{name}: snapshot after a turn (one file changed), {len(times)} turns: "
                f"p50 {p50[name]:.1f} ms, p95 {p95:.1f} ms, max {times[-1]:.1f} ms "
                f"(target p50 < 150 ms)"
            )
            size = repo.size_bytes()
            print(
                f"{name}: shadow repository: {first_size / 1e6:.1f} MB after the first "
                f"snapshot, {size / 1e6:.1f} MB after {args.turns} turns "
                f"(+{(size - first_size) / 1e3:.0f} KB, "
                f"{(size - first_size) / args.turns / 1e3:.1f} KB a turn)"
            )
        added = p50["sandboxed"] - p50["unsandboxed"]
        print(f"the sandbox adds {added:.1f} ms to a snapshot's p50")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
