"""Usage reads: a session's breakdown, the sessions list, the dashboard (all from the
stored rows that services/usage.py keeps current, never from entries)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import Min, Sum

from sessions_app.context.usage import (
    UsageTotals,
    breakdown_rows,
    order_buckets,
    summary_from_totals,
)
from sessions_app.models import Session, UsageDaily


def session_totals_by_key(session: Session) -> dict[str, UsageTotals]:
    """The session's whole-tree totals per bucket key, keys in pi's first-seen order."""
    rows = (
        UsageDaily.objects.filter(session=session)
        .values("key")
        .annotate(
            i=Sum("input"),
            o=Sum("output"),
            cr=Sum("cache_read"),
            cw=Sum("cache_write"),
            c=Sum("cost"),
            first=Min("first_seq"),
        )
        .order_by("first", "key")
    )
    return {r["key"]: UsageTotals(r["i"], r["o"], r["cr"], r["cw"], r["c"]) for r in rows}


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
    scope = dict(sessions.values_list("pk", "parent_id"))
    # Forks whose source is counted here too: their copies are already in the total.
    counted_twice = [pk for pk, parent in scope.items() if parent is not None and parent in scope]
    rows = UsageDaily.objects.filter(session_id__in=sessions.values("pk"))
    if counted_twice:
        rows = rows.exclude(copied=True, session_id__in=counted_twice)
    return rows


def _totals(row) -> UsageTotals:
    return UsageTotals(row["i"], row["o"], row["cr"], row["cw"], row["c"])


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
    """Usage of `sessions` (forks counted once) between two days, both included."""
    rows = counted_rows(sessions)
    if start:
        rows = rows.filter(day__gte=start)
    if end:
        rows = rows.filter(day__lte=end)
    per_day: dict[str, dict[str, UsageTotals]] = {}
    by_key: dict[str, UsageTotals] = {}
    total = UsageTotals()
    for r in rows.values("day", "key").annotate(**_SUMS).order_by("day", "key"):
        totals = _totals(r)
        per_day.setdefault(r["day"].isoformat(), {})[r["key"]] = totals
        by_key.setdefault(r["key"], UsageTotals()).add(totals)
        total.add(totals)
    models = sorted(by_key.items(), key=lambda item: (-item[1].cost, -item[1].tokens, item[0]))
    grouped = {
        "top_sessions": ("session_id", "session__pi_id", "session__name", "session__first_message"),
        "by_project": ("session__cwd",),
        "by_person": ("session__owner__username",),
    }
    lists = {}
    for name, fields in grouped.items():
        query = rows.values(*fields).annotate(**_SUMS).order_by("-c", *fields)
        if name == "top_sessions":
            query = query[:top]
        lists[name] = [{**{f: r[f] for f in fields}, "totals": _totals(r)} for r in query]
    return Dashboard(
        totals=total,
        days=sorted(per_day),
        models=[{"key": key, "totals": totals} for key, totals in models],
        per_day=per_day,
        **lists,
    )


def session_models(session: Session) -> list[dict]:
    """The session header's per-bucket rows, in pi's order: {"key", "totals"}."""
    return breakdown_rows(session_totals_by_key(session))
