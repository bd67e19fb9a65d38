"""Export scored answers as a dataset: `manage.py export_dataset (--queue ID | --team T
--filter "tag=bug&model=openai/gpt-4o") [--min-score NAME=X …] [--format chat|finetune]
[-o FILE]` (docs/scores.md, "Datasets")."""

from urllib.parse import parse_qs

from django.core.management.base import BaseCommand, CommandError
from django.http import QueryDict

from sessions_app.management import admin_paths
from sessions_app.models import ReviewQueue, Team
from sessions_app.selectors import datasets
from sessions_app.selectors.sessions import ListFilters


class Command(BaseCommand):
    help = "Export a queue's or a filter's scored answers as JSONL (OpenAI chat or fine-tuning)."

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--queue", type=int, help="A review queue's id.")
        source.add_argument("--team", help="A team's name (with --filter).")
        parser.add_argument("--filter", default="", help="Sessions filter, as a query string.")
        parser.add_argument("--min-score", action="append", default=[], metavar="NAME=X")
        parser.add_argument("--format", choices=datasets.FORMATS, default="chat")
        parser.add_argument("-o", "--output", default="-", help="Output file ('-' = stdout).")

    def _answers(self, queue_id, team_name, filter_text):
        if queue_id is not None:
            queue = ReviewQueue.objects.filter(pk=queue_id).first()
            if queue is None:
                raise CommandError(f"No review queue {queue_id}.")
            return datasets.queue_answers(queue), queue.team_id
        team = Team.objects.filter(name=team_name).first()
        if team is None:
            raise CommandError(f"No team called {team_name!r}.")
        viewer = team.members.filter(teammembership__role="admin").first()
        params = QueryDict(mutable=True)
        for key, values in parse_qs(filter_text).items():
            params.setlist(key, values)
        filters = ListFilters.from_params(params)
        if filters.problems:
            raise CommandError(" ".join(filters.problems))
        return datasets.filter_answers(viewer, team, filters), team.pk

    def handle(self, *args, queue, team, filter, min_score, format, output, **options):
        answers, team_id = self._answers(queue, team, filter)
        try:
            minimums = datasets.parse_minimums(min_score)
        except datasets.DatasetError as exc:
            raise CommandError(str(exc)) from exc
        rows = datasets.dataset_rows(answers, team_id, minimums)
        stream = self.stdout if output == "-" else admin_paths.open_output(output, text=True)
        count = 0
        try:
            for line in datasets.dataset_lines(rows, format):
                stream.write(line)
                count += 1
        finally:
            if stream is not self.stdout:
                stream.close()
        self.stderr.write(f"{count} rows.")
