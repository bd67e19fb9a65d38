"""sync_token USERNAME --name NAME [--days N]: print a new sync token for a user, once."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from sessions_app.services import sync_tokens


class Command(BaseCommand):
    help = "Create a personal access token (scope sync) for a user and print it once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", required=True, help="what the token is for")
        parser.add_argument(
            "--days", type=int, default=90, help="days until it expires (default 90)"
        )

    def handle(self, *args, username, name, days, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        try:
            _row, token = sync_tokens.create_token(user, name, days=days)
        except sync_tokens.TokenRequestError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(token)
