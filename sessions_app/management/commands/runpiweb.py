"""Start everything piweb needs in one command: (embedded Redis), daphne, a Celery worker."""

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from piweb import embedded
from sessions_app.services import sandboxing


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

    def handle(self, *args, host, port, concurrency, **options):
        children: list[subprocess.Popen] = []
        if settings.USES_EMBEDDED_REDIS:
            redis_process = embedded.start(settings.EMBEDDED_REDIS_SOCKET)
            if redis_process:
                children.append(redis_process)
            self.stdout.write(f"Embedded Redis on {settings.EMBEDDED_REDIS_SOCKET}")
        env = dict(os.environ)
        children.append(
            subprocess.Popen(
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
                env=env,
            )
        )
        children.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "daphne",
                    "-b",
                    host,
                    "-p",
                    str(port),
                    "piweb.asgi:application",
                ],
                env=env,
            )
        )
        url = f"http://{host}:{port}/"
        self.stdout.write(self.style.SUCCESS(f"piweb is running: log in at {url}login/"))
        self.stdout.write(sandboxing.status())
        if not get_user_model().objects.exists():
            self.stdout.write(
                "No users yet: create one with `make createsuperuser` (in another terminal)."
            )
        if not settings.PIWEB_LLM_BASE_URL and not settings.PIWEB_MODEL_PROFILES_JSON:
            self.stdout.write(
                "No model configured: set PIWEB_LLM_BASE_URL / PIWEB_LLM_MODEL (see README)."
            )

        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping:
                for child in children:
                    if child.poll() is not None:
                        self.stderr.write(
                            f"{child.args[0]} exited with {child.returncode}; stopping."
                        )
                        stopping = True
                time.sleep(0.5)
        finally:
            for child in reversed(children):
                if child.poll() is None:
                    child.terminate()
            for child in reversed(children):
                try:
                    child.wait(15)
                except subprocess.TimeoutExpired:
                    child.kill()
