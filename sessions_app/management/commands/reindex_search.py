"""Rebuild the full-text search rows: `manage.py reindex_search [--session ID]`."""

from django.core.management.base import BaseCommand, CommandError

from sessions_app.models import Session
from sessions_app.services import search


class Command(BaseCommand):
    help = "Rebuild the search index of every session (or of one)."

    def add_arguments(self, parser):
        parser.add_argument("--session", default=None, help="Only this session (pi id).")

    def handle(self, *args, session=None, **options):
        sessions = Session.objects.order_by("pk")
        if session:
            sessions = sessions.filter(pi_id=session)
            if not sessions.exists():
                raise CommandError(f"No session with id {session!r}.")
        total = 0
        for item in sessions.iterator():
            total += search.index_session(item)
        self.stdout.write(f"indexed {total:,} entries")
