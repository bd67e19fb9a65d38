"""Only the Celery workers of `runpiweb`, one per queue group (piweb/queues.py), supervised:
for a worker machine or container of a scale-out layout (docker-compose.yml)."""

import os

from django.conf import settings
from django.core.management.base import BaseCommand

from piweb import queues
from piweb.supervisor import Supervisor


class Command(BaseCommand):
    help = "Run one Celery worker per queue group (agent runs, commands, summaries, imports)."

    def add_arguments(self, parser):
        parser.add_argument("--concurrency", type=int, default=settings.PIWEB_WORKER_CONCURRENCY)

    def handle(self, *args, concurrency, **options):
        supervisor = Supervisor(report=lambda text: self.stderr.write(f"runworkers: {text}"))
        groups = queues.worker_groups(settings.CELERY_TASK_DEFAULT_QUEUE, concurrency)
        for label, names, slots in groups:
            argv = queues.worker_argv(label, names, slots, str(os.getpid()))
            supervisor.add_command(label, argv, dict(os.environ))
            self.stdout.write(f"{label}: queues {', '.join(names)}, {max(1, slots)} slot(s)")
        supervisor.start_all()
        supervisor.run()
