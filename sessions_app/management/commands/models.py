"""models [--json] [--user USERNAME] [--all]: the models a user can use, never a key."""

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from sessions_app.selectors.llm.catalog import HOW_TO_CONFIGURE, catalog
from sessions_app.selectors.llm.resolution import all_models, available_models


def _price(value: float) -> str:
    return f"{value:g}"


class Command(BaseCommand):
    help = (
        "List the models a user can use (pi's catalog, pi's models.json, environment "
        "profiles): provider, id, api, context window, max tokens, reasoning, input and "
        "output price per million tokens, and where the key comes from. Never prints a key."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="one JSON array")
        parser.add_argument(
            "--user", help="whose keys count (default: the server's keys only)", default=None
        )
        parser.add_argument(
            "--all", action="store_true", help="also the models without a key or API"
        )

    def handle(self, *args, **options):
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"No user named {options['user']!r}.")
        choices = all_models(user) if options["all"] else available_models(user)
        error = catalog().error
        if error:
            self.stderr.write(f"pi models.json ignored: {error}")
        if options["json"]:
            self.stdout.write(json.dumps([c.as_json() for c in choices], indent=2))
            return
        if not choices:
            self.stdout.write("No model has a key. " + HOW_TO_CONFIGURE)
            return
        header = (
            "PROVIDER/ID",
            "API",
            "WINDOW",
            "MAX OUT",
            "REASONING",
            "IN $/M",
            "OUT $/M",
            "KEY",
        )
        rows = [
            (
                c.ref,
                c.api,
                f"{c.window:,}",
                f"{c.max_tokens:,}",
                "yes" if c.reasoning else "no",
                _price(c.prices[0]),
                _price(c.prices[1]),
                c.key.label if c.key.available else f"none {c.key.detail}".strip(),
            )
            for c in choices
        ]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            self.stdout.write(
                "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            )
