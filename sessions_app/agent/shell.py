"""Run one shell command with live, tail-truncated output and bounded memory.

Output (stdout and stderr merged, as pi does) is read in large chunks from a pipe and
fed to the core's StreamingTail: memory stays at a few times 50 KB whatever the command
prints, and once the output passes the limits everything from the first byte on goes to
a full-output file. Snapshots for the browser are taken at most every
``snapshot_interval`` seconds. The command runs in its own session (process group), so
abort and timeout kill the whole group with os.killpg.

With a :class:`~sessions_app.agent.sandbox.SandboxConfig` the command runs inside
bubblewrap (see ``sandbox.py``): killing bwrap's group ends the sandbox's PID namespace,
so nothing the command started survives it, and the limits it hit are named in the
result.

A :class:`CommandGuard` (built by the service layer from settings: workspace quota, disk
reserve) may refuse the command before it starts (:class:`CommandRefused`) and stop it
while it runs, with the guard's words as its notice. Where the sandbox could not get a
memory cgroup, the worker itself watches the command's total resident memory and stops
it over ``total_memory_mb``.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

import psutil

from sessions_app.core.truncate import StreamingResult, StreamingTail, StreamSnapshot

from . import sandbox as sandboxing
from .signals import AbortSignal

F_SETPIPE_SZ = 1031  # Linux fcntl; larger pipe = fewer reads
READ_SIZE = 1 << 20
SAFE_ENV_KEYS = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TERM",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "TZ",
)


def shell_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A minimal environment: the worker's secrets (database URL, API keys) stay out."""
    env = {k: v for k, v in os.environ.items() if k in SAFE_ENV_KEYS or k.startswith("LC_")}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env["PAGER"] = "cat"
    env["GIT_PAGER"] = "cat"
    if extra:
        env.update(extra)
    return env


class CommandRefused(sandboxing.SandboxUnavailable):
    """A guard refused to start the command (quota, disk reserve); the message says why
    and what to do."""


@dataclass
class CommandGuard:
    """Checks around one command. ``before(command)`` returns a refusal (or None);
    ``during()``, called every ``interval`` seconds while the command runs, returns a
    reason to stop it (or None)."""

    before: Callable[[str], str | None] | None = None
    during: Callable[[], str | None] | None = None
    interval: float = 1.0


def write_refusal(guard: CommandGuard | None, what: str) -> str | None:
    """Why a file tool's write (``what``: "write <path>") is refused now: the checks a
    command gets (quota, disk reserve), or None."""
    return guard.before(what) if guard is not None and guard.before is not None else None


MEMORY_WATCH_SECONDS = 0.25


def tree_rss(pid: int) -> int:
    """Resident memory of process ``pid`` and all its descendants (bytes; shared pages
    counted in each process, so it errs on the high side)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total


@dataclass
class ShellOutcome:
    result: StreamingResult
    exit_code: int | None
    aborted: bool
    timed_out: bool
    timeout: float | None
    duration: float
    snapshots: int
    limit_notices: tuple[str, ...] = ()
    stopped: str | None = None  # why a guard or the memory watch stopped it


class SnapshotEvent(TypedDict):
    """The data of a bash_snapshot event: the visible tail of a running command."""

    text: str
    start_line: int
    end_line: int
    total_lines: int
    total_bytes: int
    truncated: bool
    has_full_output: bool


def snapshot_event(snap: StreamSnapshot) -> SnapshotEvent:
    """The data of a bash_snapshot event (without run/tool ids)."""
    tr = snap.truncation
    total = tr.total_lines
    start = total - tr.output_lines + 1 if tr.output_lines else total
    return {
        "text": tr.content,
        "start_line": start,
        "end_line": total,
        "total_lines": total,
        "total_bytes": snap.total_bytes,
        "truncated": tr.truncated,
        # Never the server path itself: browsers only learn that a full file exists.
        "has_full_output": bool(snap.full_output_path),
    }


def _kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


NUL_IN_COMMAND = (
    "The command contains a NUL byte (\\0); no shell command can hold one. "
    "Remove it and run the command again."
)


def command_problem(command: str) -> str | None:
    """Why `command` cannot be run at all (None when it can): a NUL byte, which the
    operating system cannot pass in an argument."""
    return NUL_IN_COMMAND if "\x00" in command else None


def run_shell(
    command: str,
    cwd: str,
    *,
    output_path: str | Callable[[], str] | None = None,
    timeout: float | None = None,
    abort: AbortSignal | None = None,
    on_snapshot: Callable[[StreamSnapshot], None] | None = None,
    snapshot_interval: float = 0.1,
    env: dict[str, str] | None = None,
    shell: str = "/bin/bash",
    sandbox: sandboxing.SandboxConfig | None = None,
    workspace: str | None = None,
    guard: CommandGuard | None = None,
    full_output_max_bytes: int | None = None,
) -> ShellOutcome:
    """Run ``command`` with ``shell -c`` in ``cwd`` and return the outcome.

    ``timeout`` in seconds (None or 0: no timer). ``on_snapshot`` gets throttled
    snapshots (and always a final one). ``sandbox``: run inside bubblewrap with
    ``workspace`` (default ``cwd``) as the only writable directory and ``env`` added to
    the sandbox's minimal environment (raises SandboxUnavailable when bwrap is missing);
    None runs the bare shell (the truncator's own tests and benchmarks). ``guard``: see
    :class:`CommandGuard` (a refusal raises :class:`CommandRefused`).
    ``full_output_max_bytes`` caps the full-output file (it keeps the tail past it).
    """
    started = time.monotonic()
    if guard is not None and guard.before is not None:
        refusal = guard.before(command)
        if refusal:
            raise CommandRefused(refusal)
    tail = StreamingTail(output_path=output_path, max_file_bytes=full_output_max_bytes)
    if abort is not None and abort.is_set():
        return ShellOutcome(tail.finish(), None, True, False, timeout, 0.0, 0)
    if sandbox is not None:
        launch = sandboxing.launch(sandbox, command, cwd, workspace=workspace, env=env, shell=shell)
    else:
        env = env if env is not None else shell_env()
        launch = sandboxing.Launch([shell, "-c", command], env, (), cwd)
    try:
        with launch.spawning():
            proc = subprocess.Popen(
                launch.argv,
                cwd=launch.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=launch.env,
                bufsize=0,
                close_fds=True,
                pass_fds=launch.pass_fds,
            )
    except BaseException:
        launch.cleanup()
        raise
    launch.close_fds()
    try:
        return _follow(
            proc,
            tail,
            launch,
            started,
            timeout,
            abort,
            on_snapshot,
            snapshot_interval,
            sandbox,
            guard,
        )
    finally:
        launch.cleanup()


def _open_pipe(fd: int) -> None:
    """The output pipe at READ_SIZE where Linux allows it, and non-blocking."""
    try:
        import fcntl

        fcntl.fcntl(fd, F_SETPIPE_SZ, READ_SIZE)
    except (OSError, ImportError):
        pass
    os.set_blocking(fd, False)


def _drain(fd: int, tail: StreamingTail, until: float) -> tuple[bool, bool]:
    """Feeds what the pipe holds to `tail` until it is empty, at its end, or `until` (a
    monotonic time) has passed. Returns (end of file, anything fed)."""
    fed = False
    while True:
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            return False, fed
        if not data:
            return True, fed
        tail.feed(data)
        fed = True
        if time.monotonic() >= until:
            return False, fed


def _follow(
    proc: subprocess.Popen[bytes],
    tail: StreamingTail,
    launch: sandboxing.Launch,
    started: float,
    timeout: float | None,
    abort: AbortSignal | None,
    on_snapshot: Callable[[StreamSnapshot], None] | None,
    snapshot_interval: float,
    sandbox: sandboxing.SandboxConfig | None,
    guard: CommandGuard | None = None,
) -> ShellOutcome:
    assert proc.stdout is not None  # (started with stdout=PIPE)
    fd = proc.stdout.fileno()
    _open_pipe(fd)
    watch = _Watch(proc, started, timeout, abort, guard, launch, sandbox)
    last_snapshot = 0.0
    dirty = False
    snapshots = 0
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    try:
        while True:
            events = poller.poll(50)
            if events:
                # Drain what is there without going back to poll between chunks, but
                # come up for air often enough for snapshots, abort and timeout.
                eof, fed = _drain(fd, tail, time.monotonic() + snapshot_interval / 2)
                dirty = dirty or fed
                if eof:
                    break
            now = time.monotonic()
            if watch.check(now) or watch.shell_gone(now, bool(events)):
                break
            if dirty and on_snapshot is not None and now - last_snapshot >= snapshot_interval:
                on_snapshot(tail.snapshot())
                snapshots += 1
                last_snapshot = now
                dirty = False
    finally:
        watch.reap()
    result = tail.finish()
    if on_snapshot is not None:
        on_snapshot(tail.snapshot())
        snapshots += 1
    return watch.outcome(result, snapshots)


class _Watch:
    """What ``_follow`` keeps an eye on while a command runs: abort, the timeout, the
    guard and the memory cap; whether and when it killed the command, when the shell
    exited."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        started: float,
        timeout: float | None,
        abort: AbortSignal | None,
        guard: CommandGuard | None,
        launch: sandboxing.Launch,
        sandbox: sandboxing.SandboxConfig | None,
    ):
        self.proc = proc
        self.started = started
        self.timeout = timeout
        self.abort = abort
        self.guard = guard if guard is not None and guard.during is not None else None
        self.during = guard.during if guard is not None else None
        self.cgroup = launch.cgroup
        self.sandbox = sandbox
        self.deadline = started + timeout if timeout else None
        self.next_guard = started + (self.guard.interval if self.guard else 0)
        self.memory_cap = 0
        self.memory_notice = ""
        if sandbox is not None and sandbox.enabled and sandbox.total_memory_mb:
            if self.cgroup is None or not self.cgroup.has_memory:
                self.memory_cap = sandbox.total_memory_mb * 1024 * 1024
                self.memory_notice = sandboxing.total_memory_notice(sandbox)
        self.next_memory = started
        self.killed_at: float | None = None
        self.exited_at: float | None = None
        self.aborted = self.timed_out = False
        self.stopped: str | None = None  # the notice of a guard or of the memory cap

    def check(self, now: float) -> bool:
        """Kill the command when it must stop; True: stop reading (it was killed a
        while ago and something outside its group still holds the pipe)."""
        if self.killed_at is not None:
            return now - self.killed_at > 2.0
        if self.abort is not None and self.abort.is_set():
            self.aborted = True
        elif self.deadline is not None and now >= self.deadline:
            self.timed_out = True
        elif self.guard is not None and self.during is not None and now >= self.next_guard:
            self.next_guard = now + self.guard.interval
            self.stopped = self.during()
        if self.memory_cap and self.stopped is None and now >= self.next_memory:
            self.next_memory = now + MEMORY_WATCH_SECONDS
            if tree_rss(self.proc.pid) > self.memory_cap:
                self.stopped = self.memory_notice
        if self.stopped:
            self.aborted = True
        if self.aborted or self.timed_out:
            _kill_group(self.proc.pid)
            self.killed_at = now
        return False

    def shell_gone(self, now: float, had_events: bool) -> bool:
        """True when the shell exited a while ago and a detached descendant keeps the
        pipe open."""
        if self.exited_at is None and self.proc.poll() is not None:
            self.exited_at = now
        elif self.exited_at is not None and not had_events and now - self.exited_at > 1.0:
            return True
        return False

    def reap(self) -> None:
        proc = self.proc
        if proc.poll() is None and self.killed_at is None and (self.aborted or self.timed_out):
            _kill_group(proc.pid)
        if proc.stdout is not None:
            proc.stdout.close()
        try:
            proc.wait(10 if self.killed_at is not None else 30)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait(5)

    def outcome(self, result: StreamingResult, snapshots: int) -> ShellOutcome:
        pids_hits = self.cgroup.limit_hits() if self.cgroup is not None else 0
        oom_kills = self.cgroup.oom_kills() if self.cgroup is not None else 0
        code = self.proc.returncode
        stopped_early = self.aborted or self.timed_out
        exit_code = None if (stopped_early or code is None or code < 0) else code
        notices: tuple[str, ...] = ()
        if self.sandbox is not None:
            notices = tuple(
                sandboxing.limit_notices(
                    self.sandbox, exit_code, result.truncation.content, pids_hits, oom_kills
                )
            )
        if self.stopped and self.stopped not in notices:
            notices = (self.stopped, *notices)
        return ShellOutcome(
            result=result,
            exit_code=exit_code,
            aborted=self.aborted,
            timed_out=self.timed_out,
            timeout=self.timeout,
            duration=time.monotonic() - self.started,
            snapshots=snapshots,
            limit_notices=notices,
            stopped=self.stopped,
        )
