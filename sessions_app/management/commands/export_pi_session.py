"""export_pi_session SESSION_ID -o FILE: write a session as a pi JSONL file."""

import sys

from django.core.management.base import BaseCommand, CommandError

from sessions_app.management import admin_paths
from sessions_app.models import Session
from sessions_app.selectors.exporter import export_to_file


class Command(BaseCommand):
    help = "Export a session (by its header id) as a pi session file that pi can load."

    def add_arguments(self, parser):
        parser.add_argument("session_id", help="the session's header id (Session.pi_id)")
        parser.add_argument("-o", "--output", required=True, help="file to write, or - for stdout")

    def handle(self, *args, session_id, output, **options):
        session = Session.objects.filter(pi_id=session_id).first()
        if session is None:
            raise CommandError(f"No session with id {session_id!r}.")
        if output == "-":
            export_to_file(session, sys.stdout.buffer)
            return
        try:
            size = admin_paths.write_whole(output, lambda fh: export_to_file(session, fh))
        except OSError as exc:
            raise CommandError(f"Cannot write {output}: {exc}") from exc
        self.stdout.write(
            f"Exported session {session.pi_id} ({session.entry_count} entries, {size} bytes) to {output}"
        )
