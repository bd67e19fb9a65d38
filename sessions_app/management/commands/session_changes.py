"""session_changes SESSION_ID [--leaf ENTRY_ID] [--json] [--diff]: the files each entry on
a path changed, with added and removed line counts (snapshots, or reconstructed)."""

import json

from django.core.management.base import BaseCommand, CommandError

from sessions_app.models import Session
from sessions_app.selectors.changes import path_changes
from sessions_app.selectors.entries import entry_exists


class Command(BaseCommand):
    help = (
        "List the changed files of every entry on the path root → leaf (the session's leaf "
        "unless --leaf), with added/removed lines; --diff prints the unified diffs too. "
        "Sessions piweb ran use its workspace snapshots; imported ones their edit/write "
        "calls, marked 'reconstructed'."
    )

    def add_arguments(self, parser):
        parser.add_argument("session_id", help="the session's header id (Session.pi_id)")
        parser.add_argument("--leaf", help="the entry the path ends at (default: the leaf)")
        parser.add_argument("--json", action="store_true", help="print a JSON list")
        parser.add_argument("--diff", action="store_true", help="include the diffs")

    def handle(self, *args, session_id, leaf=None, **options):
        session = Session.objects.filter(pi_id=session_id).first()
        if session is None:
            raise CommandError(f"No session with id {session_id!r}.")
        if leaf and not entry_exists(session, leaf):
            raise CommandError(f"No entry {leaf!r} in session {session_id}.")
        leaf = leaf or session.leaf_pi_id
        # No page to fill: the whole path's diffs (each still cut per file).
        found = path_changes(session, leaf, budget=1 << 62)
        if options["json"]:
            out = [
                {
                    "entry": payload.get("id"),
                    "type": payload.get("type"),
                    "timestamp": payload.get("timestamp"),
                    **changes.as_dict(diffs=options["diff"]),
                }
                for payload, changes in found
            ]
            self.stdout.write(json.dumps(out, ensure_ascii=False, indent=1))
            return
        if not found:
            self.stdout.write("No file changes on this path.")
            return
        for payload, changes in found:
            totals = changes.totals
            mark = " (reconstructed)" if changes.source == "reconstructed" else ""
            self.stdout.write(
                f"{payload.get('id')}  {payload.get('timestamp', '')}  {totals['files']} file(s)"
                f"  +{totals['added']} -{totals['removed']}{mark}"
            )
            for f in changes.files:
                counts = "binary" if f.binary else f"+{f.added} -{f.removed}"
                name = f"{f.old_path} -> {f.path}" if f.old_path else f.path
                self.stdout.write(f"    {f.status:<10} {counts:<14} {name}")
            if options["diff"]:
                for f in changes.files:
                    if f.diff:
                        self.stdout.write(f.diff.rstrip("\n"))
