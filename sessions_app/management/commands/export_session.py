"""Export one session: `manage.py export_session SESSION_ID --format html|md|jsonl [--leaf ID] [-o FILE]`."""

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from sessions_app.management import admin_paths
from sessions_app.models import Session
from sessions_app.presentation import exports


class Command(BaseCommand):
    help = "Export a session as pi JSONL, a self-contained HTML file, or Markdown of one branch."

    def add_arguments(self, parser):
        parser.add_argument("session_id", help="The session's id (pi header id).")
        parser.add_argument("--format", choices=exports.FORMATS, default="html")
        parser.add_argument("--leaf", default=None, help="Branch to export (default: the leaf).")
        parser.add_argument("-o", "--output", default="-", help="Output file ('-' = stdout).")

    def handle(self, *args, session_id, format, leaf, output, **options):
        session = Session.objects.filter(pi_id=session_id).first()
        if session is None:
            raise CommandError(f"No session with id {session_id!r}.")
        try:
            result = exports.export_session(session, format, leaf)
        except exports.ExportError as exc:
            raise CommandError(str(exc)) from exc
        chunks = (
            result.content if result.streams else [result.content.encode("utf-8", "surrogatepass")]
        )
        if output == "-":
            sys.stdout.flush()
            for chunk in chunks:
                sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
            return
        target = Path(output)
        if admin_paths.is_folder(target):
            target = target / result.filename
        written = 0
        with admin_paths.open_output(target) as out:
            for chunk in chunks:
                out.write(chunk)
                written += len(chunk)
        self.stderr.write(f"wrote {target} ({written:,} bytes)")
