"""Write docs/configuration.md's table of environment values from piweb/env.py's
declarations, or with --check say whether it is current."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from piweb import env
from sessions_app.management import admin_paths


class Command(BaseCommand):
    help = "Write the configuration table of docs/configuration.md from piweb/env.py."

    def add_arguments(self, parser):
        parser.add_argument(
            "--file", type=Path, default=settings.BASE_DIR / "docs" / "configuration.md"
        )
        parser.add_argument(
            "--check", action="store_true", help="only check that the table is current"
        )

    def handle(self, *args, file: Path, check: bool, **options):
        document = admin_paths.read_document(file)
        try:
            current = env.with_current_table(document)
        except ValueError as exc:
            raise CommandError(f"{file}: {exc}.") from None
        if current == document:
            self.stdout.write(f"{file}: the configuration table is current.")
        elif check:
            raise CommandError(
                f"{file}: the configuration table is out of date; "
                "run `manage.py configuration_table`."
            )
        else:
            admin_paths.write_document(file, current)
            self.stdout.write(f"{file}: configuration table written.")
