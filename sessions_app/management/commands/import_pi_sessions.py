"""import_pi_sessions PATH...: import pi session files (or directories of them)."""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from sessions_app.management import admin_paths
from sessions_app.services.importer import SessionImportError, import_jsonl_stream


def session_files(paths: list[str]) -> list[Path]:
    """Files as given, and every *.jsonl under a directory (like ~/.pi/agent/sessions)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if admin_paths.is_folder(path):
            found.extend(admin_paths.jsonl_files_under(path))
        elif admin_paths.is_regular_file(path):
            found.append(path)
        else:
            raise CommandError(f"{raw}: no such file or directory")
    return found


class Command(BaseCommand):
    help = (
        "Import pi session files (JSONL). Directories are searched recursively for *.jsonl, "
        "as laid out in ~/.pi/agent/sessions/<encoded-cwd>/. Each file is imported in one "
        "transaction; re-importing is idempotent."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument(
            "--owner", help="username that owns the sessions (default: the only superuser)"
        )
        parser.add_argument("--quiet-details", action="store_true", help="no per-line details")

    def handle(self, *args, paths, owner=None, quiet_details=False, verbosity=1, **options):
        user = self._owner(owner)
        files = session_files(paths)
        if not files:
            raise CommandError("No .jsonl files found.")
        progress = None
        if len(files) > 1 and verbosity > 0:
            from tqdm import tqdm

            progress = tqdm(total=len(files), unit="file", file=self.stderr._out)
        failed = 0
        counts = {"created": 0, "updated": 0, "unchanged": 0}
        for path in files:
            try:
                with admin_paths.open_input(path) as fh:
                    report = import_jsonl_stream(
                        fh, user, filename=str(path), source_path=str(path.resolve())
                    )
            except SessionImportError as exc:
                failed += 1
                self._say(progress, self.style.ERROR(f"FAILED {exc}"))
            except OSError as exc:
                failed += 1
                self._say(progress, self.style.ERROR(f"FAILED {path}: {exc}"))
            else:
                counts[report.status] += 1
                if verbosity > 0:
                    self._say(progress, report.summary())
                    if not quiet_details:
                        for line_no, reason in report.skipped:
                            self._say(progress, f"  skipped line {line_no}: {reason}")
                        for warning in report.warnings:
                            self._say(progress, f"  warning: {warning}")
                        hidden = (report.skipped_count - len(report.skipped)) + (
                            report.warning_count - len(report.warnings)
                        )
                        if hidden:
                            self._say(progress, f"  … and {hidden} more not listed")
            if progress is not None:
                progress.update(1)
        if progress is not None:
            progress.close()
        self.stdout.write(
            f"{len(files)} file(s): {counts['created']} created, {counts['updated']} updated, "
            f"{counts['unchanged']} unchanged, {failed} failed"
        )
        if failed:
            raise CommandError(f"{failed} file(s) could not be imported (see above).")

    def _say(self, progress, text):
        if progress is not None:
            progress.write(text, file=self.stdout._out)
        else:
            self.stdout.write(text)

    def _owner(self, username):
        User = get_user_model()
        if username:
            try:
                return User.objects.get(username=username)
            except User.DoesNotExist as exc:
                raise CommandError(f"No user named {username!r}.") from exc
        supers = list(User.objects.filter(is_superuser=True, is_active=True)[:2])
        if len(supers) != 1:
            raise CommandError(
                "Say who owns the imported sessions with --owner USERNAME "
                f"({'no superuser exists' if not supers else 'there are several superusers'})."
            )
        return supers[0]
