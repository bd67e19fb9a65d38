"""Usage reads: a session's breakdown, the sessions list, the dashboard (all from the
stored rows that services/usage.py keeps current, never from entries)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import Min, Sum

from sessions_app.core.usage import (
    UsageTotals,
    breakdown_rows,
    order_buckets,
    summary_from_totals,
)
from sessions_app.models import Entry, Session, UsageDaily


def session_totals_by_key(session: Session) -> dict[str, UsageTotals]:
    """The session's whole-tree totals per bucket key, keys in pi's first-seen order."""
    return totals_by_key_per_session([session.pk]).get(session.pk, {})


def totals_by_key_per_session(session_pks: list[int]) -> dict[int, dict[str, UsageTotals]]:
    """`session_totals_by_key` of several sessions, in one query."""
    rows = (
        UsageDaily.objects.filter(session_id__in=session_pks)
        .values("session_id", "key")
        .annotate(
            i=Sum("input"),
            o=Sum("output"),
            cr=Sum("cache_read"),
            cw=Sum("cache_write"),
            c=Sum("cost"),
            first=Min("first_seq"),
        )
        .order_by("session_id", "first", "key")
    )
    out: dict[int, dict[str, UsageTotals]] = {}
    for r in rows:
        out.setdefault(r["session_id"], {})[r["key"]] = UsageTotals(
            r["i"], r["o"], r["cr"], r["cw"], r["c"]
        )
    return out


def session_breakdown(session: Session) -> list[dict]:
    """pi's breakdown for the session, from the stored rows."""
    return order_buckets(session_totals_by_key(session))


def session_summary(session: Session) -> dict:
    """`session_usage --json`: pi's breakdown plus totals, by model and by day."""
    by_day: dict[str, UsageTotals] = {}
    rows = (
        UsageDaily.objects.filter(session=session)
        .values("day")
        .annotate(i=Sum("input"), o=Sum("output"), cr=Sum("cache_read"), cw=Sum("cache_write"))
        .annotate(c=Sum("cost"))
    )
    for r in rows:
        by_day[r["day"].isoformat()] = UsageTotals(r["i"], r["o"], r["cr"], r["cw"], r["c"])
    return summary_from_totals(session_totals_by_key(session), by_day)


def counted_rows(sessions):
    """The usage rows of `sessions` (a queryset) that a total over all of them counts:
    a fork's copied entries only when its source session is not among them."""
    in_scope = sessions.values("pk")
    # Forks whose source is counted here too: their copies are already in the total.
    counted_twice = list(
        Session.objects.filter(
            parent__isnull=False, parent_id__in=in_scope, pk__in=in_scope
        ).values_list("pk", flat=True)
    )
    rows = UsageDaily.objects.filter(session_id__in=in_scope)
    if counted_twice:
        rows = rows.exclude(copied=True, session_id__in=counted_twice)
    return rows


_SUMS = {
    "i": Sum("input"),
    "o": Sum("output"),
    "cr": Sum("cache_read"),
    "cw": Sum("cache_write"),
    "c": Sum("cost"),
}


@dataclass
class Dashboard:
    totals: UsageTotals
    days: list[str]
    models: list[dict]  # {"key", totals...}, by cost
    per_day: dict[str, dict[str, UsageTotals]]  # day -> key -> totals
    top_sessions: list[dict]
    by_project: list[dict]
    by_person: list[dict]


def dashboard(sessions, start: date | None = None, end: date | None = None, top: int = 10):
    """Usage of `sessions` (forks counted once) between two days, both included.

    One grouped query (day, bucket, session) over the stored daily rows; the groupings by
    model, session, project and person are sums of its rows."""
    rows = counted_rows(sessions)
    if start:
        rows = rows.filter(day__gte=start)
    if end:
        rows = rows.filter(day__lte=end)
    per_day: dict[str, dict[str, UsageTotals]] = {}
    by_key: dict[str, UsageTotals] = {}
    by_session: dict[int, UsageTotals] = {}
    by_project: dict[str, UsageTotals] = {}
    by_person: dict[str, UsageTotals] = {}
    total = UsageTotals()
    grouped = (
        rows.values_list("day", "key", "session_id", "session__cwd", "session__owner__username")
        .annotate(**_SUMS)
        .order_by("day", "key")
    )
    for day, key, session_id, cwd, person, i, o, cr, cw, c in grouped:
        totals = UsageTotals(i, o, cr, cw, c)
        per_day.setdefault(day.isoformat(), {}).setdefault(key, UsageTotals()).add(totals)
        for groups, name in ((by_key, key), (by_session, session_id), (by_project, cwd)):
            groups.setdefault(name, UsageTotals()).add(totals)
        by_person.setdefault(person, UsageTotals()).add(totals)
        total.add(totals)

    def by_cost(items):
        return sorted(items, key=lambda item: (-item[1].cost, -item[1].tokens, str(item[0])))

    leaders = by_cost(by_session.items())[:top]
    info = {
        row["pk"]: row
        for row in Session.objects.filter(pk__in=[pk for pk, _ in leaders]).values(
            "pk", "pi_id", "name", "first_message"
        )
    }
    top_sessions = [
        {
            "session_id": session_id,
            "session__pi_id": info[session_id]["pi_id"],
            "session__name": info[session_id]["name"],
            "session__first_message": info[session_id]["first_message"],
            "totals": totals,
        }
        for session_id, totals in leaders
    ]
    return Dashboard(
        totals=total,
        days=sorted(per_day),
        models=[{"key": key, "totals": totals} for key, totals in by_cost(by_key.items())],
        per_day=per_day,
        top_sessions=top_sessions,
        by_project=[{"session__cwd": k, "totals": t} for k, t in by_cost(by_project.items())],
        by_person=[
            {"session__owner__username": k, "totals": t} for k, t in by_cost(by_person.items())
        ],
    )


def session_models(session: Session) -> list[dict]:
    """The session header's per-bucket rows, in pi's order: {"key", "totals"}."""
    return breakdown_rows(session_totals_by_key(session))


def usage_rows(session: Session, columns):
    """(seq, timestamp, *columns) of the session's entries that used a model, in seq
    order, as an iterator (a session may have too many to hold)."""
    return (
        Entry.objects.filter(session=session)
        .exclude(usage_key="")
        .order_by("seq")
        .values_list("seq", "timestamp", *columns)
        .iterator(chunk_size=2000)
    )
