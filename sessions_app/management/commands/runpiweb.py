"""Start everything piweb needs in one command: (embedded Redis), daphne, the Celery
workers (one per queue group: agent runs, commands, summaries, imports and small tasks).

The processes run under piweb.supervisor: when one dies (killed, out of memory…) the
others keep serving and the dead one is restarted with a backoff, and both are logged.
A feature that needs another long-running process adds it to `children()`.
"""

import os
import socket
import sys
import threading
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import connection

from piweb import embedded, queues
from piweb.supervisor import Supervisor
from sessions_app.management import admin_paths
from sessions_app.services import resources, sandboxing


class Command(BaseCommand):
    help = (
        "Run the ASGI server and a Celery worker (and the embedded Redis when REDIS_URL is unset)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.PIWEB_HOST)
        parser.add_argument("--port", type=int, default=settings.PIWEB_PORT)
        parser.add_argument("--concurrency", type=int, default=settings.PIWEB_WORKER_CONCURRENCY)

    def children(self, supervisor: Supervisor, *, host, port, concurrency) -> list[str] | None:
        """Every process runpiweb keeps running, in start order; returns the follower's
        command line (None when no pi session folder is followed)."""
        if settings.USES_EMBEDDED_REDIS:
            supervisor.add("embedded redis", lambda: embedded.start(settings.EMBEDDED_REDIS_SOCKET))
            self.stdout.write(f"Embedded Redis on {settings.EMBEDDED_REDIS_SOCKET}")
        env = dict(os.environ)
        # One worker per queue group, each with its own slots (piweb/queues.py): one
        # user's long runs never hold the slots of anyone's `!cmd`, summary or import.
        groups = queues.worker_groups(settings.CELERY_TASK_DEFAULT_QUEUE, concurrency)
        for label, names, slots in groups:
            supervisor.add_command(
                label, queues.worker_argv(label, names, slots, str(os.getpid())), env
            )
        supervisor.add_command(
            "daphne",
            [
                sys.executable,
                "-m",
                "piweb.server",
                "-b",
                host,
                "-p",
                str(port),
                "piweb.asgi:application",
            ],
            env,
        )
        follower = self._follower()
        if follower:
            supervisor.add_command("pi session follower", follower, env)
        return follower

    def handle(self, *args, host, port, concurrency, **options):
        supervisor = Supervisor(report=self._report)
        self._concurrency = concurrency
        follower = self.children(supervisor, host=host, port=port, concurrency=concurrency)
        supervisor.start_all()
        # The banner waits until daphne answers, so its URL works when it appears; the
        # supervisor meanwhile restarts whatever dies.
        threading.Thread(
            target=self._banner_when_serving,
            args=(host, port, supervisor, follower),
            name="runpiweb-banner",
            daemon=True,
        ).start()
        supervisor.run()

    def _banner_when_serving(self, host, port, supervisor, follower) -> None:
        try:
            if _wait_until_serving(host, port, supervisor):
                self._banner(host, port, follower)
        finally:
            connection.close()  # (this thread's own)

    def _banner(self, host, port, follower: list[str] | None) -> None:
        url = f"http://{host}:{port}/"
        self.stdout.write(self.style.SUCCESS(f"piweb is running: log in at {url}login/"))
        self.stdout.write(sandboxing.status())
        self.stdout.write(resources.status(getattr(self, "_concurrency", None)))
        if not get_user_model().objects.exists():
            self.stdout.write(
                "No users yet: create one with `make createsuperuser` (in another terminal)."
            )
        if not settings.PIWEB_LLM_BASE_URL and not settings.PIWEB_MODEL_PROFILES_JSON:
            self.stdout.write(
                "No model configured: set PIWEB_LLM_BASE_URL / PIWEB_LLM_MODEL (see docs/models.md)."
            )
        self._follow_banner(follower)
        self.stdout.flush()

    def _report(self, text: str) -> None:
        self.stderr.write(f"runpiweb: {text}")
        self.stderr.flush()

    def _follower(self) -> list[str] | None:
        """The watch_pi_sessions command line when PIWEB_PI_SESSION_DIRS is set and an
        owner is known (PIWEB_PI_SESSION_OWNER, else the only superuser)."""
        dirs = settings.PIWEB_PI_SESSION_DIRS
        if not dirs:
            return None
        owner = settings.PIWEB_PI_SESSION_OWNER
        users = get_user_model().objects
        if owner and not users.filter(username=owner).exists():
            self.stderr.write(f"Not following {', '.join(dirs)}: no user named {owner!r}.")
            return None
        if not owner and users.filter(is_superuser=True, is_active=True).count() != 1:
            self.stderr.write(
                f"Not following {', '.join(dirs)}: set PIWEB_PI_SESSION_OWNER to the user "
                "who owns the sessions (there is not exactly one superuser)."
            )
            return None
        argv = [sys.executable, str(settings.BASE_DIR / "manage.py"), "watch_pi_sessions"]
        argv += [*dirs, "--search-in-worker"]
        return argv + (["--owner", owner] if owner else [])

    def _follow_banner(self, follower: list[str] | None) -> None:
        if follower:
            self.stdout.write(
                f"Following pi sessions in {', '.join(settings.PIWEB_PI_SESSION_DIRS)}"
            )
            return
        pi_dir = settings.PIWEB_PI_DEFAULT_SESSION_DIR
        single_user = get_user_model().objects.filter(is_active=True).count() <= 1
        if not settings.PIWEB_PI_SESSION_DIRS and single_user and admin_paths.is_folder(pi_dir):
            self.stdout.write(
                f"pi sessions found in {pi_dir}: to see them here as pi writes them, start "
                f"with PIWEB_PI_SESSION_DIRS={pi_dir} (see docs/follow.md)."
            )


def _wait_until_serving(host: str, port: int, supervisor: Supervisor) -> bool:
    """True once something accepts connections on host:port; False if runpiweb stops
    first. A wildcard address is reached on the loopback."""
    target = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    while not supervisor.stopping:
        try:
            with socket.create_connection((target, port), timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False
