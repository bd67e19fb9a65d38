"""Start everything piweb needs in one command: (embedded Redis), the web server and the
Celery workers.

By default the workers are the light layout of one machine (piweb/queues.light_workers):
the agent runs on a pool of threads in one process, commands, summaries, imports and small
tasks in a second process whose pool keeps each queue's own threads. ``--separate-workers``
starts one process pool per queue group instead (as ``runworkers`` does). ``--web N``
starts N web processes on the same listening socket (a team server with the cores).

The processes run under piweb.supervisor, in the lean process of piweb/supervise.py
that this command becomes once it has checked the database: when one dies (killed, out of memory…) the
others keep serving and the dead one is restarted with a backoff, and both are logged.
A feature that needs another long-running process adds it to `children()`.
"""

import json
import os
import socket
import sys
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

from piweb import embedded, queues
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
        parser.add_argument(
            "--web",
            type=int,
            default=1,
            help="web processes sharing the port (default 1; README: how to size it)",
        )
        parser.add_argument(
            "--separate-workers",
            action="store_true",
            help="one process pool per queue group (runworkers' layout) instead of two "
            "light workers",
        )

    def children(
        self, *, host, port, concurrency, web=1, separate=False
    ) -> tuple[list[dict], list[str] | None]:
        """Every process runpiweb keeps running, in start order (the specs of
        piweb/supervise.py), and the follower's command line (None when no pi session
        folder is followed). What runs is noted in ``self.layout`` for the banner."""
        self.layout: list[str] = []
        specs: list[dict] = []
        if settings.USES_EMBEDDED_REDIS:
            specs.append(
                {
                    "name": "embedded redis",
                    "redis_socket": str(settings.EMBEDDED_REDIS_SOCKET),
                    "binary": embedded.redis_server_binary(),
                }
            )
            self.stdout.write(f"Embedded Redis on {settings.EMBEDDED_REDIS_SOCKET}")
            self.layout.append("embedded Redis")
        base = settings.CELERY_TASK_DEFAULT_QUEUE
        if separate:
            # One worker per queue group, each with its own slots (piweb/queues.py): one
            # user's long runs never hold the slots of anyone's `!cmd`, summary or import.
            for label, names, slots in queues.worker_groups(base, concurrency):
                argv = queues.worker_argv(label, names, slots, str(os.getpid()))
                specs.append({"name": label, "argv": argv})
                self.layout.append(f"{label} ({max(1, slots)} processes)")
        else:
            # Two processes, the same separation: runs on threads, every other queue on
            # threads of its own (piweb/worker_pool.py).
            for label, _names, argv, extra in queues.light_workers(
                base, concurrency, str(os.getpid())
            ):
                specs.append({"name": label, "argv": argv, "extra_env": extra})
            self.layout.append(f"runs worker ({max(1, concurrency)} threads)")
            self.layout.append("queues worker (commands, summaries, imports: threads of each)")
        specs += self._web(host, port, web)
        follower = self._follower()
        if follower:
            specs.append({"name": "pi session follower", "argv": follower})
            self.layout.append("pi session follower")
        return specs, follower

    def _web(self, host: str, port: int, web: int) -> list[dict]:
        server = [sys.executable, "-m", "piweb.server"]
        if web <= 1:
            argv = [*server, "-b", host, "-p", str(port), "piweb.asgi:application"]
            self.layout.append("web server (1 process)")
            return [{"name": "daphne", "argv": argv}]
        # N daphnes accept on one socket opened here (the kernel hands each connection to
        # one of them); it stays open across the exec, and a restarted daphne takes it too.
        if ":" in host:  # (twisted adopts an inherited socket as IPv4 only)
            raise CommandError("--web with more than 1 process needs an IPv4 --host.")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(1024)
        listener.set_inheritable(True)
        self._listener = listener
        fd = listener.fileno()
        argv = [*server, "-e", f"fd:fileno={fd}", "piweb.asgi:application"]
        self.layout.append(f"web server ({web} processes)")
        return [{"name": f"daphne {i + 1}", "argv": argv, "pass_fds": [fd]} for i in range(web)]

    def handle(self, *args, host, port, concurrency, web, separate_workers, **options):
        if web < 1:
            raise CommandError("--web takes 1 or more web processes.")
        _require_migrated()
        self._concurrency = concurrency
        specs, follower = self.children(
            host=host, port=port, concurrency=concurrency, web=web, separate=separate_workers
        )
        spec = {
            "children": specs,
            "serving": [host, port],
            "banner": self._banner(host, port, follower),
        }
        # The process that stays up is the lean supervisor (piweb/supervise.py): same pid,
        # none of Django's memory.
        connection.close()
        self.stdout.flush()
        self.stderr.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        script = str(Path(settings.BASE_DIR) / "piweb" / "supervise.py")
        os.execv(sys.executable, [sys.executable, script, json.dumps(spec)])

    def _banner(self, host, port, follower: list[str] | None) -> list[str]:
        """The lines printed once the web server answers."""
        url = f"http://{host}:{port}/"
        lines = [self.style.SUCCESS(f"piweb is running: log in at {url}login/")]
        layout = getattr(self, "layout", None)
        if layout:
            lines.append(f"Running: {', '.join(layout)}.")
        lines.append(sandboxing.status())
        lines.append(resources.status(getattr(self, "_concurrency", None)))
        if not get_user_model().objects.exists():
            lines.append(
                "No users yet: create one with `make createsuperuser` (in another terminal)."
            )
        if not settings.PIWEB_LLM_BASE_URL and not settings.PIWEB_MODEL_PROFILES_JSON:
            lines.append(
                "No model configured: set PIWEB_LLM_BASE_URL / PIWEB_LLM_MODEL (see docs/models.md)."
            )
        hint = self._follow_hint(follower)
        if hint:
            lines.append(hint)
        return lines

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
        hint = self._follow_hint(follower)
        if hint:
            self.stdout.write(hint)

    def _follow_hint(self, follower: list[str] | None) -> str:
        if follower:
            return f"Following pi sessions in {', '.join(settings.PIWEB_PI_SESSION_DIRS)}"
        pi_dir = settings.PIWEB_PI_DEFAULT_SESSION_DIR
        single_user = get_user_model().objects.filter(is_active=True).count() <= 1
        if not settings.PIWEB_PI_SESSION_DIRS and single_user and admin_paths.is_folder(pi_dir):
            return (
                f"pi sessions found in {pi_dir}: to see them here as pi writes them, start "
                f"with PIWEB_PI_SESSION_DIRS={pi_dir} (see docs/follow.md)."
            )
        return ""


def _require_migrated() -> None:
    """A clear message, not a traceback, when the database was never (fully) migrated."""
    where = settings.DATABASES["default"].get("NAME")
    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        raise CommandError(
            f"Cannot read the database ({where}): {exc}. Check DATABASE_URL, then run "
            "`make migrate`."
        ) from None
    finally:
        connection.close()
    if pending:
        never = not executor.recorder.has_table()
        state = "has never been migrated" if never else f"lacks {len(pending)} migration(s)"
        raise CommandError(
            f"The database ({where}) {state}: run `make migrate` (or `.venv/bin/python "
            "manage.py migrate`), then start piweb again. `make run` migrates first."
        )
