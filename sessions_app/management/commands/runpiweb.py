"""Start everything piweb needs in one command: (embedded Redis), daphne, a Celery worker.

The processes run under piweb.supervisor: when one dies (killed, out of memory…) the
others keep serving and the dead one is restarted with a backoff, and both are logged.
A feature that needs another long-running process adds it to `children()`.
"""

import os
import sys

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from piweb import embedded
from piweb.supervisor import Supervisor


class Command(BaseCommand):
    help = (
        "Run the ASGI server and a Celery worker (and the embedded Redis when REDIS_URL is unset)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument(
            "--concurrency", type=int, default=int(os.environ.get("PIWEB_WORKER_CONCURRENCY", "4"))
        )

    def children(self, supervisor: Supervisor, *, host, port, concurrency) -> None:
        """Every process runpiweb keeps running, in start order."""
        if settings.USES_EMBEDDED_REDIS:
            supervisor.add("embedded redis", lambda: embedded.start(settings.EMBEDDED_REDIS_SOCKET))
            self.stdout.write(f"Embedded Redis on {settings.EMBEDDED_REDIS_SOCKET}")
        env = dict(os.environ)
        supervisor.add_command(
            "celery worker",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "piweb",
                "worker",
                "-l",
                "warning",
                "-c",
                str(concurrency),
                "-Q",
                settings.CELERY_TASK_DEFAULT_QUEUE,
            ],
            env,
        )
        supervisor.add_command(
            "daphne",
            [sys.executable, "-m", "daphne", "-b", host, "-p", str(port), "piweb.asgi:application"],
            env,
        )

    def handle(self, *args, host, port, concurrency, **options):
        supervisor = Supervisor(report=self._report)
        self.children(supervisor, host=host, port=port, concurrency=concurrency)
        supervisor.start_all()
        url = f"http://{host}:{port}/"
        self.stdout.write(self.style.SUCCESS(f"piweb is running: log in at {url}login/"))
        if not get_user_model().objects.exists():
            self.stdout.write(
                "No users yet: create one with `make createsuperuser` (in another terminal)."
            )
        if not settings.PIWEB_LLM_BASE_URL and not settings.PIWEB_MODEL_PROFILES_JSON:
            self.stdout.write(
                "No model configured: set PIWEB_LLM_BASE_URL / PIWEB_LLM_MODEL (see README)."
            )
        self.stdout.flush()
        supervisor.run()

    def _report(self, text: str) -> None:
        self.stderr.write(f"runpiweb: {text}")
        self.stderr.flush()
