"""A small process supervisor for `manage.py runpiweb`.

runpiweb starts several children (the embedded Redis, daphne, a Celery worker, and any
other process a feature adds with `Supervisor.add` / `add_command`). When one of them
dies, the others keep serving: the dead one is started again after a backoff that
doubles on each quick death (1 s, 2 s, 4 s … up to `backoff_max`) and falls back to the
start once the child has stayed up for `stable_after` seconds. Every death and restart
is logged with the child's name, pid and exit code.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("piweb.supervisor")

Starter = Callable[[], "subprocess.Popen | None"]


@dataclass
class Child:
    """One supervised process: `start` returns the new Popen (None: nothing to supervise,
    e.g. an embedded Redis that someone else already runs)."""

    name: str
    start: Starter
    restart: bool = True
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    quick_deaths: int = 0
    restart_at: float | None = None
    restarts: int = 0
    history: list[int] = field(default_factory=list)  # pids, oldest first


class Supervisor:
    def __init__(
        self,
        *,
        backoff_start: float = 1.0,
        backoff_max: float = 30.0,
        stable_after: float = 30.0,
        report: Callable[[str], None] | None = None,
    ):
        self.children: list[Child] = []
        self.backoff_start, self.backoff_max = backoff_start, backoff_max
        self.stable_after = stable_after
        self.report = report or log.warning
        self.stopping = False

    # --- building the list ---------------------------------------------------------

    def add(self, name: str, start: Starter, *, restart: bool = True) -> Child:
        child = Child(name=name, start=start, restart=restart)
        self.children.append(child)
        return child

    def add_command(self, name: str, argv: list[str], env: dict | None = None, **kw) -> Child:
        """A child that is a plain command line (the usual case)."""
        return self.add(name, lambda: subprocess.Popen(argv, env=env), **kw)

    # --- running -------------------------------------------------------------------

    def _launch(self, child: Child, now: float) -> None:
        child.started_at = now
        child.restart_at = None
        try:
            child.process = child.start()
        except Exception as exc:  # (a start that fails is retried like a quick death)
            child.process = None
            child.quick_deaths += 1
            child.restart_at = now + self.backoff(child)
            self.report(f"could not start {child.name}: {exc}; trying again later")
            return
        if child.process is not None:
            child.history.append(child.process.pid)
            self.report(f"started {child.name} (pid {child.process.pid})")

    def start_all(self) -> None:
        now = time.monotonic()
        for child in self.children:
            self._launch(child, now)

    def backoff(self, child: Child) -> float:
        return min(self.backoff_max, self.backoff_start * 2 ** max(0, child.quick_deaths - 1))

    def check(self, now: float | None = None) -> None:
        """Notice dead children and restart those whose backoff has passed."""
        now = time.monotonic() if now is None else now
        for child in self.children:
            process = child.process
            if process is not None and process.poll() is not None:
                lived = now - child.started_at
                child.quick_deaths = child.quick_deaths + 1 if lived < self.stable_after else 1
                child.process = None
                if not child.restart or self.stopping:
                    self.report(
                        f"{child.name} (pid {process.pid}) exited with {process.returncode}"
                    )
                    continue
                delay = self.backoff(child)
                child.restart_at = now + delay
                self.report(
                    f"{child.name} (pid {process.pid}) exited with {process.returncode} "
                    f"after {lived:.1f} s; the others keep running; restarting it in {delay:.1f} s"
                )
            elif child.restart_at is not None and now >= child.restart_at and not self.stopping:
                child.restarts += 1
                self._launch(child, now)

    def run(self, interval: float = 0.5) -> None:
        """Supervise until SIGINT / SIGTERM, then stop every child."""

        def stop(*_):
            self.stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not self.stopping:
                self.check()
                time.sleep(interval)
        finally:
            self.stop_all()

    def stop_all(self, timeout: float = 15.0) -> None:
        """Terminate the children (last started first), then kill what is left."""
        self.stopping = True
        running = [c.process for c in reversed(self.children) if c.process is not None]
        for process in running:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + timeout
        for process in running:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def pids(self) -> dict[str, int | None]:
        return {c.name: c.process.pid if c.process else None for c in self.children}
