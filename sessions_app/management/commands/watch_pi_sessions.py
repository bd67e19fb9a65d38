"""watch_pi_sessions DIR... : follow pi's session folders live (see services/following.py)."""

import logging
import signal
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection

from sessions_app.management import admin_paths
from sessions_app.management.commands.import_pi_sessions import Command as ImportCommand
from sessions_app.services import following, write_back

log = logging.getLogger("piweb.follow")

# watchfiles groups the changes of this many milliseconds: short, so a line pi writes
# reaches open pages well within a second.
DEBOUNCE_MS = 150
STEP_MS = 20
# How often write-backs that waited for pi are tried again.
FLUSH_SECONDS = 2.0


class Command(BaseCommand):
    # Django's system checks import every view: a second of start-up for nothing the
    # follower uses, at every restart (runpiweb and migrate run them).
    requires_system_checks = []
    help = (
        "Follow pi session folders (like ~/.pi/agent/sessions): new files, appended lines, "
        "rewrites, renames and deletions appear in piweb as they happen. Runs until stopped."
    )

    def add_arguments(self, parser):
        parser.add_argument("dirs", nargs="+", metavar="DIR")
        parser.add_argument(
            "--owner", help="username that owns the sessions (default: the only superuser)"
        )
        parser.add_argument(
            "--rescan-seconds",
            type=float,
            default=settings.PIWEB_PI_SESSION_RESCAN_SECONDS,
            help="full rescan period, for filesystems without change events (0: never)",
        )
        parser.add_argument(
            "--once", action="store_true", help="scan once (a first scan or a catch-up), then exit"
        )
        parser.add_argument(
            "--search-in-worker",
            action="store_true",
            help="leave the search indexing of whole-file imports to a Celery worker",
        )
        parser.add_argument(
            "--poll", action="store_true", help="poll for changes instead of kernel events"
        )

    def handle(self, *args, dirs, owner=None, rescan_seconds, once, search_in_worker, poll, **opts):
        self.verbosity = opts.get("verbosity", 1)
        _log_to(self.stderr._out, self.verbosity)
        user = ImportCommand()._owner(owner)
        roots = []
        for raw in dirs:
            root = Path(raw).expanduser().resolve()
            if not admin_paths.is_folder(root):
                raise CommandError(f"{raw}: not a directory")
            roots.append(str(root))
        self.owner = user
        self.search = "worker" if search_in_worker else "inline"
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())

        # The first scan of a big folder shows a progress bar, not a line per session.
        log.setLevel(logging.INFO if self.verbosity > 1 else logging.WARNING)
        self._first_scan(roots)
        if once or stop.is_set():
            return
        log.setLevel(logging.INFO if self.verbosity > 0 else logging.WARNING)
        self._follow(roots, rescan_seconds, poll, stop)

    def _first_scan(self, roots):
        progress = None
        if self.verbosity > 0:
            from tqdm import tqdm

            files, size = following.folder_totals(roots)
            progress = tqdm(
                total=size,
                unit="B",
                unit_scale=True,
                desc=f"scan of {files} file(s)",
                file=self.stderr._out,
                mininterval=0.5,
            )
        started = time.monotonic()
        totals = following.scan(roots, self.owner, progress=progress, search=self.search)
        if progress is not None:
            progress.close()
        self.stdout.write(
            f"Scanned {totals.files} file(s), {totals.bytes / 1e6:.1f} MB in "
            f"{time.monotonic() - started:.1f} s: {totals.changed} read, {totals.unchanged} "
            f"unchanged, {totals.refused} not pi sessions, {totals.errors} errors, "
            f"{totals.gone} gone; {totals.entries_added} entries added."
        )
        self.stdout.flush()

    def _follow(self, roots, rescan_seconds, poll, stop):
        import watchfiles

        next_rescan = time.monotonic() + rescan_seconds if rescan_seconds > 0 else None
        watching = False
        next_flush = 0.0
        for changes in watchfiles.watch(
            *roots,
            watch_filter=None,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            rust_timeout=1000,
            yield_on_timeout=True,
            stop_event=stop,
            raise_interrupt=False,
            force_polling=poll or None,
        ):
            if not watching:
                # The watcher is in place from its first answer on: what changed between
                # the first scan and now is caught by one more (quick) scan.
                watching = True
                self._guarded("scan", lambda: following.scan(roots, self.owner, search=self.search))
                self.stdout.write(f"Following {', '.join(roots)} (owner {self.owner.username}).")
                self.stdout.flush()
            if changes:
                self._apply(changes)
            # Write-backs that waited for pi to be quiet (services/write_back.py).
            if time.monotonic() >= next_flush:
                self._guarded("write-back", write_back.flush_due)
                next_flush = time.monotonic() + FLUSH_SECONDS
            if next_rescan is not None and time.monotonic() >= next_rescan:
                self._guarded(
                    "rescan", lambda: following.scan(roots, self.owner, search=self.search)
                )
                next_rescan = time.monotonic() + rescan_seconds

    def _apply(self, changes):
        """One batch of watcher events: each path once, files first, then new folders.
        (One thread: the work is mostly Python, so threads only made it slower.)"""
        paths = sorted({path for _change, path in changes})
        folders = admin_paths.folders_among(paths)
        for path in paths:
            if path not in folders and (path.endswith(".jsonl") or not admin_paths.lexists(path)):
                self._guarded(path, lambda p=path: self._sync(p))
        for path in folders:
            # A folder that appeared (or was moved in): its files may predate the watch.
            self._guarded(path, lambda p=path: following.scan([p], self.owner, search=self.search))

    def _sync(self, path):
        result = following.sync_file(path, self.owner, search=self.search)
        if self.verbosity > 1 and result.action not in ("unchanged", "ignored"):
            log.info("%s: %s (%d entries)", path, result.action, result.entries_added)

    def _guarded(self, what, work):
        """Run one piece of work; log a failure with its path and keep following."""
        try:
            work()
        except DatabaseError:
            log.exception("%s: database error; will retry on the next change", what)
            connection.close()  # a fresh connection next time
        except Exception:
            log.exception("%s: could not be followed", what)


def _log_to(stream, verbosity):
    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # not "N changes detected"
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.propagate = False
