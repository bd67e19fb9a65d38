"""Alternatives benchmark (issue 36): the overhead of making the workspaces of 4 variants
from a 1,000-file workspace, the two ways `services/alternatives.py` makes one.

- restore: the node's snapshot checked out into each new folder (``ShadowRepo.export_to``:
  ``git read-tree -u --reset`` on a scratch index, in the sandbox, the repository
  read-only), what a node with a snapshot gets;
- copy: ``cp -a`` of the current folder into each new folder, in the sandbox with the
  source read-only, what a node without one gets (an imported session).

- start: the whole of ``services.alternatives.start`` for 4 variants from a node with a
  snapshot (the restores, plus each variant's entries and its run job), on a throwaway
  database (``bench/browser_support.test_database``) with a session in a 1,000-file
  workspace; the jobs are queued (and stopped between repetitions), not run.

Each repetition makes 4 new folders one after the other and times the whole (the
folders are removed between repetitions). Prints p50/p95/max per way (target: p50 < 1 s
for the 4).

Run: .venv/bin/python bench/alternatives_bench.py [--files N] [--kilobytes K] [--reps R]
[--no-start]. The folders go under /tmp (start: under piweb's var folder) and are
deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")  # PIWEB_GIT

import django  # noqa: E402

django.setup()

from sessions_app.agent.sandbox import Bind, SandboxConfig, launch_in, run_in  # noqa: E402
from sessions_app.agent.snapshots import ShadowRepo  # noqa: E402

VARIANTS = 4
SANDBOX = SandboxConfig(host_uid=64100 if os.geteuid() == 0 else None)


def make_workspace(root: Path, files: int, kilobytes: int) -> None:
    line = b"print('the session tree: append, branch, compare')  # filler\n"
    body = line * max(1, kilobytes * 1024 // len(line))
    for i in range(files):
        folder = root / f"pkg{i % 20:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"module_{i:04d}.py").write_bytes(body + f"# {i}\n".encode())


def restore_four(repo: ShadowRepo, commit: str, out: Path) -> None:
    for n in range(VARIANTS):
        folder = out / f"v{n}"
        folder.mkdir()
        repo.export_to(commit, str(folder))


def copy_four(source: Path, out: Path) -> None:
    for n in range(VARIANTS):
        folder = out / f"v{n}"
        folder.mkdir()
        argv = ["cp", "-a", "--", os.path.join(source, "."), str(folder)]
        binds = [Bind(str(source), str(source), writable=False, hand_over=False)]
        binds.append(Bind(str(folder), str(folder), True))
        done = run_in(launch_in(SANDBOX, argv, binds, {"LANG": "C.UTF-8"}, str(folder)))
        assert done.returncode == 0, done.stderr


def timed(reps: int, make, out: Path, files: int) -> list[float]:
    times = []
    for _ in range(reps):
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        os.chmod(out, 0o777)
        started = time.perf_counter()
        make(out)
        times.append(time.perf_counter() - started)
        made = sum(len(names) for _b, _d, names in os.walk(out / "v0"))
        assert made == files, (made, files)
    return sorted(times)


def report(name: str, times: list[float]) -> float:
    p50 = statistics.median(times)
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    print(
        f"{name}: {VARIANTS} variant workspaces, {len(times)} repetitions: p50 {p50:.3f} s, "
        f"p95 {p95:.3f} s, max {times[-1]:.3f} s (target p50 < 1 s)"
    )
    return p50


def time_start(files: int, kilobytes: int, reps: int) -> float:
    """p50 of `alternatives.start` for 4 variants (see the module docstring)."""
    import json

    from bench.browser_support import test_database
    from bench.screenshots import demo_folders

    with test_database(), demo_folders():
        from django.conf import settings
        from django.contrib.auth import get_user_model

        from sessions_app.models import Job
        from sessions_app.services import alternatives, chat, jobs, sandboxing, sessions
        from sessions_app.services.workspaces import protect_user_area, user_workspace

        profile = {"base_url": "http://127.0.0.1:9/v1", "api_key": "unused", "model": "m"}
        settings.PIWEB_MODEL_PROFILES_JSON = json.dumps({"bench": profile})
        owner = get_user_model().objects.create_user("bench", password="bench-only")
        work = user_workspace(owner) / "project"
        protect_user_area(owner, sandboxing.make_var_reachable())  # (the sandbox passes)
        work.mkdir()
        make_workspace(work, files, kilobytes)
        session = sessions.create_session(owner=owner, cwd=str(work), model_profile="bench")
        assert (
            jobs.run_job(str(chat.send_message(session, owner, "!echo node > node.txt").pk))
            == "done"
        )
        session.refresh_from_db()
        node = session.leaf_pi_id
        variants = [alternatives.Variant(f"try {n}") for n in range(VARIANTS)]
        times = []
        for _ in range(reps):
            session.refresh_from_db()
            started_at = time.perf_counter()
            started = alternatives.start(session, owner, node, variants)
            times.append(time.perf_counter() - started_at)
            assert all(s.workspace.source == "snapshot" for s in started)
            Job.objects.filter(pk__in=[s.job.pk for s in started]).update(
                status=Job.Status.CANCELLED
            )
            session.refresh_from_db()
            alternatives.remove_copies(session)
        return report("start", sorted(times))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--kilobytes", type=int, default=4, help="size of each file")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--no-start", action="store_true", help="skip the whole start")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="piweb-alternatives-bench-"))
    os.chmod(tmp, 0o755)  # the sandbox account passes through it
    try:
        work = tmp / "workspace"
        work.mkdir()
        make_workspace(work, args.files, args.kilobytes)
        print(f"workspace: {args.files:,} files of {args.kilobytes} KB")
        repo = ShadowRepo(
            str(tmp / "shadow.git"), os.path.realpath(work), max_file_bytes=1 << 20, sandbox=SANDBOX
        )
        commit = repo.snapshot("the node")
        restored = tmp / "restored"
        copied = tmp / "copied"
        r = report(
            "restore",
            timed(args.reps, lambda o: restore_four(repo, commit, o), restored, args.files),
        )
        c = report("copy", timed(args.reps, lambda o: copy_four(work, o), copied, args.files))
        print("met" if max(r, c) < 1.0 else "NOT met", "(both ways, p50 < 1 s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not args.no_start:
        s = time_start(args.files, args.kilobytes, args.reps)
        print("met" if s < 1.0 else "NOT met", "(start, p50 < 1 s)")


if __name__ == "__main__":
    main()
