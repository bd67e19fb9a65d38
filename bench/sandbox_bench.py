"""The sandbox's cost: per-command overhead and streaming throughput inside bubblewrap.

1. overhead: ``true`` run N times (default 100) through run_shell, bare and in the
   sandbox exactly as a session runs it (same namespaces, mounts, limits and pids
   cgroup); median, p10 and p90 in ms, and the median difference (target: < 20 ms).
2. streaming: ``yes | head -c SIZE`` (default 500 MB) through run_shell and the tail
   truncator, bare and in the sandbox: MB/s (target: no loss; bench/stream_bench.py
   measures the same path end to end through the worker and the websocket).
3. snapshots: a run's snapshot of a 1,000-file workspace (one file changed) with its git
   in the sandbox and unsandboxed: p50 of each and the difference, the cost the sandbox
   adds to each snapshot a run takes (target: sandboxed p50 < 150 ms).
4. context reads: what a run reads before it asks the model (the context files from the
   filesystem root down to a workspace four folders deep, and 20 skills of the agent
   folder), through ``safefs.BeneathFiles`` (beneath checked roots, no link followed out)
   and through plain by-path reads: p50 of each and the difference per run.

The sandbox is built from its defaults (``SandboxConfig()``); Django's settings are
loaded (through bench/snapshot_bench.py) for the git binary, no database is opened.

    .venv/bin/python bench/sandbox_bench.py [--runs 100] [--size 500M] [--snapshots-only]
                                            [--context-only]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.snapshot_bench import SANDBOXES, make_workspace, turns  # noqa: E402
from bench.stream_bench import parse_size  # noqa: E402
from sessions_app.agent.safefs import BeneathFiles  # noqa: E402
from sessions_app.agent.sandbox import PidsCgroup, SandboxConfig, bwrap_binary  # noqa: E402
from sessions_app.agent.shell import run_shell  # noqa: E402
from sessions_app.agent.snapshots import ShadowRepo  # noqa: E402


def timings(command: str, workdir: str, sandbox: SandboxConfig | None, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        outcome = run_shell(command, workdir, sandbox=sandbox)
        out.append((time.perf_counter() - started) * 1000)
        assert outcome.exit_code == 0, outcome.result.truncation.content
    return out


def summary(values: list[float]) -> str:
    deciles = statistics.quantiles(values, n=10)
    return (
        f"median {statistics.median(values):6.1f} ms  p10 {deciles[0]:6.1f}  p90 {deciles[-1]:6.1f}"
    )


def streaming(size: int, workdir: str, sandbox: SandboxConfig | None) -> tuple[float, float]:
    full = os.path.join(workdir, "full.log")
    started = time.perf_counter()
    outcome = run_shell(f"yes | head -c {size}", workdir, output_path=full, sandbox=sandbox)
    seconds = time.perf_counter() - started
    assert outcome.exit_code == 0
    written = os.path.getsize(full)
    os.unlink(full)
    assert written == size, (written, size)
    return size / 1e6 / seconds, seconds


def snapshots(workdir: str, runs: int) -> None:
    """p50 of a turn's snapshot of a 1,000-file workspace, sandboxed and not."""
    work = Path(workdir) / "workspace"
    work.mkdir()
    make_workspace(work, 1000, 20)
    p50 = {}
    for name, sandbox in SANDBOXES.items():
        git_dir = Path(workdir) / name / "shadow.git"
        repo = ShadowRepo(str(git_dir), str(work), max_file_bytes=1 << 20, sandbox=sandbox)
        p50[name] = statistics.median(turns(repo, work, runs))
    print(
        f"snapshot of 1,000 files x{runs}: sandboxed p50 {p50['sandboxed']:.1f} ms "
        f"(target < 150 ms), unsandboxed p50 {p50['unsandboxed']:.1f} ms: the sandbox adds "
        f"{p50['sandboxed'] - p50['unsandboxed']:.1f} ms to each snapshot of a run"
    )


class PlainFiles:
    """The core's file source read by path, following links (what the app did before
    safefs): the baseline the context-read figure compares with."""

    def kind(self, path: str) -> str | None:
        if not os.path.lexists(path):
            return None
        if not os.path.exists(path):
            return "broken_link"
        return "file" if os.path.isfile(path) else "dir" if os.path.isdir(path) else "other"

    def read(self, path: str) -> bytes:
        with open(path, "rb") as fh:
            return fh.read()

    def list_dir(self, path: str) -> list[str]:
        return os.listdir(path)

    def identity(self, path: str) -> tuple[int, int]:
        st = os.stat(path)
        return st.st_dev, st.st_ino


def context_reads(workdir: str, runs: int) -> None:
    """p50 of one run's context-file and skill reads, through safefs and by path."""
    from sessions_app.core.skills import load_skills
    from sessions_app.core.system_prompt import load_context_files

    root = Path(workdir) / "ctx"
    cwd = root / "app" / "src" / "pkg" / "mod"
    cwd.mkdir(parents=True)
    for folder in (root, root / "app", cwd):
        (folder / "AGENTS.md").write_text("# Rules\n" + "Keep it simple.\n" * 200)
    agent = root / "agent"
    for i in range(20):
        skill = agent / "skills" / f"skill-{i}"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            f"---\nname: skill-{i}\ndescription: Skill number {i}.\n---\n" + "Step.\n" * 100
        )
    roots = [str(agent / "skills")]

    def one_run(files) -> float:
        started = time.perf_counter()
        found = load_context_files(str(cwd), str(agent), files=files, top=str(root))
        skills = load_skills(roots, files=files)
        assert len(found.files) == 3 and len(skills.skills) == 20, (found, skills)
        return (time.perf_counter() - started) * 1000

    sources = {
        "safefs": BeneathFiles([str(root)]),
        "by path": PlainFiles(),
    }
    p50 = {}
    for name, files in sources.items():
        one_run(files)  # warm the page cache
        p50[name] = statistics.median(one_run(files) for _ in range(runs))
    print(
        f"context reads of one run (3 context files, 20 skills) x{runs}: safefs p50 "
        f"{p50['safefs']:.2f} ms, by path p50 {p50['by path']:.2f} ms: safefs adds "
        f"{p50['safefs'] - p50['by path']:.2f} ms to each run"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--size", default="500M")
    parser.add_argument("--snapshots-only", action="store_true", help="part 3 alone")
    parser.add_argument("--context-only", action="store_true", help="part 4 alone")
    args = parser.parse_args()
    if args.context_only:
        with tempfile.TemporaryDirectory() as workdir:
            context_reads(workdir, args.runs)
        return
    size = parse_size(args.size)
    config = SandboxConfig()
    if bwrap_binary(config) is None:
        sys.exit("bubblewrap (bwrap) is not installed: nothing to measure")
    print(
        f"bwrap: {bwrap_binary(config)}; pids cgroup: {PidsCgroup.available()}; "
        f"cpus: {os.cpu_count()}; load: {os.getloadavg()[0]:.1f}"
    )
    if not args.snapshots_only:
        commands(args.runs, args.size, size, config)
    with tempfile.TemporaryDirectory() as workdir:
        os.chmod(workdir, 0o755)  # a root run's sandbox account passes through it
        snapshots(workdir, min(args.runs, 100))
    if not args.snapshots_only:
        with tempfile.TemporaryDirectory() as workdir:
            context_reads(workdir, args.runs)


def commands(runs: int, label: str, size: int, config: SandboxConfig) -> None:
    """Parts 1 and 2: a command's overhead and streaming throughput."""
    with tempfile.TemporaryDirectory() as workdir:
        timings("true", workdir, config, 5)  # warm up: the staged /etc, page cache
        bare = timings("true", workdir, None, runs)
        boxed = timings("true", workdir, config, runs)
        print(f"`true` x{runs} bare:    {summary(bare)}")
        print(f"`true` x{runs} sandbox: {summary(boxed)}")
        overhead = statistics.median(boxed) - statistics.median(bare)
        print(
            f"sandbox overhead per command (median difference): {overhead:.1f} ms (target < 20 ms)"
        )
        bare_rate, _ = streaming(size, workdir, None)
        boxed_rate, _ = streaming(size, workdir, config)
        print(
            f"streaming {label} through the truncator: bare {bare_rate:.0f} MB/s, "
            f"sandbox {boxed_rate:.0f} MB/s ({(boxed_rate / bare_rate - 1) * 100:+.0f}%)"
        )


if __name__ == "__main__":
    main()
