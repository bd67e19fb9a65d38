"""session_usage SESSION_ID [--json]: a session's token and cost breakdown, as pi counts it."""

import json

from django.core.management.base import BaseCommand, CommandError

from sessions_app.models import Session
from sessions_app.selectors.usage import session_summary


def _ratio(value) -> str:
    return "-" if value is None else f"{value:.1%}"


class Command(BaseCommand):
    help = (
        "Print a session's usage breakdown (pi 1.6.0's buckets and order: provider/model, "
        "Tools/summaries), with totals by model and by day. The whole tree counts."
    )

    def add_arguments(self, parser):
        parser.add_argument("session_id", help="the session's header id (Session.pi_id)")
        parser.add_argument(
            "--json",
            action="store_true",
            help='print {"breakdown": [{"key", "cost", "tokens"}, ...], "totals": {...}}',
        )

    def handle(self, *args, session_id, **options):
        session = Session.objects.filter(pi_id=session_id).first()
        if session is None:
            raise CommandError(f"No session with id {session_id!r}.")
        summary = session_summary(session)
        if options["json"]:
            self.stdout.write(_dumps(summary))
            return
        totals = summary["totals"]
        self.stdout.write(f"Session {session.pi_id}: usage by bucket (pi's order)")
        width = max([len(row["key"]) for row in summary["breakdown"]] + [6])
        for row in summary["breakdown"]:
            self.stdout.write(
                f"  {row['key']:<{width}}  {row['tokens']:>14,} tokens  ${row['cost']:.6f}"
            )
        self.stdout.write(
            f"  {'total':<{width}}  {totals['tokens']:>14,} tokens  ${totals['cost']:.6f}"
            f"  (input {totals['input']:,}, output {totals['output']:,}, cache read "
            f"{totals['cacheRead']:,}, cache write {totals['cacheWrite']:,}; cache hits "
            f"{_ratio(totals['cacheHitRatio'])})"
        )
        if totals["byDay"]:
            self.stdout.write("By day (UTC):")
            for day in totals["byDay"]:
                self.stdout.write(
                    f"  {day['day']}  {day['tokens']:>14,} tokens  ${day['cost']:.6f}"
                )


def _dumps(value) -> str:
    return json.dumps(value, indent=2)
