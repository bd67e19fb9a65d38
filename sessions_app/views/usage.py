"""Usage pages: the session page's context chart, the `/usage/` dashboard and its CSV.

Thin: read the filters, ask the selectors (which read stored sums), render.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import date

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.http import urlencode

from sessions_app.models import Entry, Team
from sessions_app.params import query
from sessions_app.responses import piweb_view, session_view
from sessions_app.selectors.panels.context_chart import context_chart
from sessions_app.selectors.scores import scores_by_model, scores_over_time
from sessions_app.selectors.sessions import visible_sessions
from sessions_app.selectors.teams import member_team, team_sessions
from sessions_app.selectors.usage import dashboard

PRESET_DAYS = (7, 30, 90)


@session_view()
def session_context_chart(request, access):
    """The context-over-time chart of one branch (default: the session's leaf)."""
    leaf = query(request).optional("leaf", limit=64)
    try:
        chart = context_chart(access.session, leaf)
    except Entry.DoesNotExist as exc:
        raise Http404("No such entry in this session.") from exc
    return render(request, "sessions_app/usage/_context_chart.html", {"chart": chart})


@dataclass
class DashboardScope:
    sessions: object  # a Session queryset
    team: Team | None
    start: date | None
    end: date | None
    problems: list[str]

    def params(self, **override) -> str:
        values = {
            "team": str(self.team.pk) if self.team else "",
            "from": self.start.isoformat() if self.start else "",
            "to": self.end.isoformat() if self.end else "",
            **override,
        }
        return urlencode({k: v for k, v in values.items() if v})


def _scope(request) -> DashboardScope:
    """What the dashboard counts: every session the user can see, or (team=ID, for a
    member) the sessions shared with that team; and the days, both included."""
    params = query(request)
    problems: list[str] = []
    team = None
    sessions = visible_sessions(request.user)
    team_id = params.text("team")
    if team_id:
        team = member_team(request.user, team_id)
        if team is None:
            raise Http404("No such team.")
        sessions = team_sessions(team)
    days = []
    for name in ("from", "to"):
        value = params.text(name)
        try:
            days.append(date.fromisoformat(value) if value else None)
        except ValueError:
            problems.append(f"“{value[:20]}” is not a date (YYYY-MM-DD); {name} ignored.")
            days.append(None)
    return DashboardScope(sessions, team, days[0], days[1], problems)


@piweb_view()
def usage_dashboard(request):
    scope = _scope(request)
    board = dashboard(scope.sessions, scope.start, scope.end)
    today = timezone.now().date()
    presets = [
        (
            f"last {n} days",
            scope.params(
                **{
                    "from": (today - timezone.timedelta(days=n - 1)).isoformat(),
                    "to": today.isoformat(),
                }
            ),
        )
        for n in PRESET_DAYS
    ]
    chart = {
        "days": board.days,
        "models": [m["key"] for m in board.models],
        "cost": [
            [
                board.per_day[d].get(m["key"]).cost if m["key"] in board.per_day[d] else 0
                for d in board.days
            ]
            for m in board.models
        ],
        "tokens": [
            [
                board.per_day[d][m["key"]].tokens if m["key"] in board.per_day[d] else 0
                for d in board.days
            ]
            for m in board.models
        ],
    }
    score_filter = query(request).text("score", limit=80).strip()
    context = {
        "scope": scope,
        "board": board,
        "score_filter": score_filter,
        "scores_by_model": scores_by_model(scope.sessions, score_filter),
        "scores_chart": scores_over_time(scope.sessions),
        "chart": chart,
        "teams": request.user.teams.order_by("name"),
        "presets": presets,
        "all_time": scope.params(**{"from": "", "to": ""}),
        "csv_query": scope.params(),
    }
    return render(request, "sessions_app/usage/dashboard.html", context)


CSV_COLUMNS = (
    "table",
    "day",
    "model",
    "session",
    "project",
    "person",
    "input",
    "output",
    "cache_read",
    "cache_write",
    "tokens",
    "cost",
)


def _cell(text: str) -> str:
    """A text cell a spreadsheet shows as text: one that starts like a formula (model
    names and paths come from imported files) gets a leading apostrophe."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


@piweb_view()
def usage_csv(request):
    """The dashboard's data as CSV: one row per day and model, then the top sessions, the
    projects, the people and the models (the `table` column says which)."""
    scope = _scope(request)
    board = dashboard(scope.sessions, scope.start, scope.end)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%d")
    response["Content-Disposition"] = f'attachment; filename="piweb-usage-{stamp}.csv"'
    writer = csv.writer(response)
    writer.writerow(CSV_COLUMNS)

    def row(table, totals, day="", model="", session="", project="", person=""):
        writer.writerow(
            [
                table,
                day,
                _cell(model),
                _cell(session),
                _cell(project),
                _cell(person),
                totals.input,
                totals.output,
                totals.cache_read,
                totals.cache_write,
                totals.tokens,
                repr(totals.cost),
            ]
        )

    for day in board.days:
        for key, totals in board.per_day[day].items():
            row("day", totals, day=day, model=key)
    for item in board.top_sessions:
        row("top_session", item["totals"], session=item["session__pi_id"])
    for item in board.by_project:
        row("project", item["totals"], project=item["session__cwd"])
    for item in board.by_person:
        row("person", item["totals"], person=item["session__owner__username"])
    for item in board.models:
        row("model", item["totals"], model=item["key"])
    row("total", board.totals)
    return response
