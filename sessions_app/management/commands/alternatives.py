"""`manage.py alternatives SESSION_ID --at ENTRY --message TEXT --model P/ID --model P/ID
[--thinking L] [--tools SET ...] [--check CMD] [--json]`: try the step at ENTRY another
way, as the session's owner: one variant per --model, or per --tools (each a sibling
branch in its own workspace copy, run by the workers), wait for them, print the
comparison.

``--tools`` is a tool set (``read-only``: read, grep, find, ls; ``all``; or tool names
separated by commas, as pi's ``--tools``). Given once, it applies to every variant;
given several times, once per variant: with one --model, one variant per --tools; else
as many as --model, paired in order."""

import json
import time

from django.core.management.base import BaseCommand, CommandError

from sessions_app.core.errors import ServiceError
from sessions_app.models import Job, Session
from sessions_app.selectors.alternatives import comparison
from sessions_app.services import alternatives

FIELDS = (
    "entry", "model", "thinking", "tools", "tokens", "cost", "seconds", "files_changed",
    "check_exit",
)  # fmt: skip


class Command(BaseCommand):
    help = "Run up to 4 variants of the step at a node side by side and compare them."

    def add_arguments(self, parser):
        parser.add_argument("session_id")
        parser.add_argument("--at", required=True, help="The node (entry id) to branch from.")
        parser.add_argument("--message", required=True)
        parser.add_argument("--model", action="append", required=True, help="provider/id")
        parser.add_argument("--thinking", default="")
        parser.add_argument(
            "--tools",
            action="append",
            default=[],
            help="read-only, all, or names like read,grep (once: every variant; else one each)",
        )
        parser.add_argument("--check", default="", help="A command run after each variant.")
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--timeout", type=float, default=3600)

    def handle(self, *args, session_id, at, message, model, thinking, tools, check, **options):
        session = Session.objects.filter(pi_id=session_id).first()
        if session is None:
            raise CommandError(f"No session with id {session_id!r}.")
        count = max(len(model), len(tools))
        if len(model) not in (1, count) or len(tools) not in (0, 1, count):
            raise CommandError("Give --tools once, or once per --model (or one --model).")
        try:
            tool_sets = [alternatives.parse_tools(t) for t in tools] or [()]
            variants = [
                alternatives.Variant(
                    message, model[i % len(model)], thinking, tool_sets[i % len(tool_sets)]
                )
                for i in range(count)
            ]
            started = alternatives.start(session, session.owner, at, variants, check)
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        jobs = [s.job for s in started]
        deadline = time.monotonic() + options["timeout"]
        while Job.objects.filter(pk__in=[j.pk for j in jobs], status__in=Job.ACTIVE).exists():
            if time.monotonic() > deadline:
                raise CommandError("The variants did not finish in time.")
            time.sleep(0.2)
        columns = comparison(session, jobs)
        if options["json"]:
            for column in columns:
                self.stdout.write(json.dumps({k: column[k] for k in FIELDS}))
            return
        for column in columns:
            check_text = "-" if column["check_exit"] is None else f"exit {column['check_exit']}"
            tool_text = ",".join(column["tools"]) or "the node's tools"
            self.stdout.write(
                f"{column['entry']}  {column['model']}  {tool_text}  {column['status']}  "
                f"turns {column['turns']}  tokens {column['tokens']}  ${column['cost']:.4f}  "
                f"{column['seconds']:.1f} s  files {len(column['files_changed'])}  "
                f"check {check_text}"
            )
            if column["answer"]:
                self.stdout.write("    " + column["answer"].splitlines()[0][:200])
