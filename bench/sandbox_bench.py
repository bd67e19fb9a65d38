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

The sandbox is built from its defaults (``SandboxConfig()``); Django's settings are
loaded (through bench/snapshot_bench.py) for the git binary, no database is opened.

    .venv/bin/python bench/sandbox_bench.py [--runs 100] [--size 500M] [--snapshots-only]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--size", default="500M")
    parser.add_argument("--snapshots-only", action="store_true", help="part 3 alone")
    args = parser.parse_args()
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
