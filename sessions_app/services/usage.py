"""Keeps the stored usage current: per-entry columns, `UsageDaily` rows, session totals.

Every path that writes entries (append, import, fork) hands each entry's usage (from the
pure core, `core.usage.entry_usage`) to a `UsageRecorder`, then calls `apply()` in the
same transaction, under the session's row lock (an appended entry through the
entry-written event: `record_written`). The pages then read sums, never entries.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from django.db.models import Exists, F, OuterRef
from django.db.models.functions import Least

from sessions_app.core.usage import (
    TOOLS_BUCKET,
    EntryUsage,
    UsageTotals,
    entry_day,
    order_buckets,
    parse_timestamp,
    usage_with_day,
)
from sessions_app.models import Entry, Session, UsageDaily
from sessions_app.selectors.usage import (
    session_breakdown,
    totals_by_key_per_session,
    usage_rows,
)
from sessions_app.services import entry_written

MODELS_SEPARATOR = "\n"
# The Entry columns that hold an entry's usage (see usage_columns), in this order.
USAGE_COLUMNS = (
    "usage_key",
    "usage_input",
    "usage_output",
    "usage_cache_read",
    "usage_cache_write",
    "usage_cost",
    "copied",
)


def usage_columns(usage: EntryUsage | None, copied: bool = False) -> dict:
    """The Entry usage columns for an entry's usage (None: counts nothing)."""
    if usage is None:
        return {"copied": copied}
    return {
        "usage_key": usage.key,
        "usage_input": usage.input,
        "usage_output": usage.output,
        "usage_cache_read": usage.cache_read,
        "usage_cache_write": usage.cache_write,
        "usage_cost": usage.cost,
        "copied": copied,
    }


class UsageRecorder:
    """Collects what a batch of new entries adds, then writes it in one go."""

    def __init__(self) -> None:
        self._deltas: dict[tuple[str | None, str, bool], list] = {}
        self._last_stamp = ""
        self._pending = False  # entries added since the last apply()

    def add(
        self, seq: int, stamp: str, prepared: tuple[EntryUsage, str | None] | None, copied: bool
    ) -> None:
        self._pending = True
        # pi writes UTC ISO stamps, which sort as text; parsed once, in apply().
        if stamp > self._last_stamp and stamp[:1].isdigit():
            self._last_stamp = stamp
        if prepared is None:
            return
        usage, day = prepared
        slot = self._deltas.get((day, usage.key, copied))
        if slot is None:
            self._deltas[(day, usage.key, copied)] = [UsageTotals(), 0, seq]
            slot = self._deltas[(day, usage.key, copied)]
        slot[0].add(usage)
        slot[1] += 1

    def apply(self, session: Session) -> None:
        """Write the collected usage and refresh the session's own columns (on the object
        too, so a later `session.save()` keeps them). With no entry added since the last
        call (a writer closed before its first row, or twice), there is nothing to write."""
        if not self._pending and session.started_at is not None:
            return
        fields = self._set_times(session)
        assert session.started_at is not None  # _set_times fills it in
        fallback_day = session.started_at.date()
        for (day, key, copied), (totals, count, first_seq) in self._deltas.items():
            _add_daily(session, _day(day, fallback_day), key, copied, totals, count, first_seq)
        if self._deltas:
            fields.update(_set_totals(session, session_breakdown(session)))
        Session.objects.filter(pk=session.pk).update(**fields)
        self._deltas.clear()
        self._pending = False

    def _set_times(self, session: Session) -> dict:
        """The session's start (once) and last activity, on the object; returns them."""
        if session.started_at is None:
            session.started_at = parse_timestamp(session.header_timestamp) or datetime.now(UTC)
        # The newest entry, never before the start (a fork's copies are older than it).
        moments = [session.started_at, session.last_activity_at, parse_timestamp(self._last_stamp)]
        session.last_activity_at = max(m for m in moments if m is not None)
        return {"started_at": session.started_at, "last_activity_at": session.last_activity_at}


def record_written(written: entry_written.EntryWritten) -> None:
    """The usage of one appended entry, in its writer's transaction."""
    entry = written.entry
    recorder = UsageRecorder()
    recorder.add(entry.seq, entry.timestamp, usage_with_day(entry.payload), copied=False)
    recorder.apply(written.session)


entry_written.subscribe(entry_written.Subscriber("usage", in_transaction=record_written))


NEW_SESSION_FIELDS = (
    "started_at",
    "last_activity_at",
    "usage_tokens",
    "usage_cost",
    "usage_models",
)


def apply_to_new_sessions(recorded: list[tuple[Session, UsageRecorder]]) -> None:
    """`apply()` for sessions created in this transaction (none has usage rows yet):
    their usage rows in one INSERT and their totals from one query. The columns
    (`NEW_SESSION_FIELDS`) are set on the session objects: the caller saves them."""
    rows = []
    for session, recorder in recorded:
        recorder._set_times(session)
        assert session.started_at is not None  # _set_times fills it in
        fallback_day = session.started_at.date()
        for (day, key, copied), (totals, count, first_seq) in recorder._deltas.items():
            rows.append(
                UsageDaily(
                    session=session,
                    day=_day(day, fallback_day),
                    key=key,
                    copied=copied,
                    **_daily_values(totals, count),
                    first_seq=first_seq,
                )
            )
    UsageDaily.objects.bulk_create(rows, batch_size=1000)
    counted = [session.pk for session, recorder in recorded if recorder._deltas]
    by_session = totals_by_key_per_session(counted) if counted else {}
    for session, recorder in recorded:
        if recorder._deltas:
            _set_totals(session, order_buckets(by_session.get(session.pk, {})))
        recorder._deltas.clear()
        recorder._pending = False


def _set_totals(session: Session, breakdown: list[dict]) -> dict:
    """The session's usage columns from pi's breakdown, on the object; returns them."""
    session.usage_tokens = sum(row["tokens"] for row in breakdown)
    session.usage_cost = sum(row["cost"] for row in breakdown)
    session.usage_models = MODELS_SEPARATOR.join(
        row["key"] for row in breakdown if row["key"] != TOOLS_BUCKET
    )
    return {
        "usage_tokens": session.usage_tokens,
        "usage_cost": session.usage_cost,
        "usage_models": session.usage_models,
    }


def _daily_values(totals: UsageTotals, count: int) -> dict:
    return {
        "input": totals.input,
        "output": totals.output,
        "cache_read": totals.cache_read,
        "cache_write": totals.cache_write,
        "cost": totals.cost,
        "entries": count,
    }


def _day(day: str | None, fallback: date) -> date:
    return date.fromisoformat(day) if day else fallback


def _add_daily(session, day, key, copied, totals: UsageTotals, count: int, first_seq: int):
    updated = UsageDaily.objects.filter(session=session, day=day, key=key, copied=copied).update(
        input=F("input") + totals.input,
        output=F("output") + totals.output,
        cache_read=F("cache_read") + totals.cache_read,
        cache_write=F("cache_write") + totals.cache_write,
        cost=F("cost") + totals.cost,
        entries=F("entries") + count,
        first_seq=Least(F("first_seq"), first_seq),
    )
    if not updated:
        UsageDaily.objects.create(
            session=session,
            day=day,
            key=key,
            copied=copied,
            **_daily_values(totals, count),
            first_seq=first_seq,
        )


def mark_fork_copies(session: Session) -> int:
    """For an imported pi fork (its header names a parent session stored here): mark the
    entries the parent also holds, same id and same line, as copies, and recount. pi's
    /fork writes the copied path into the new file as it was, so this finds exactly the
    copied history. Returns how many entries were marked."""
    if session.parent_id is None:
        return 0
    in_parent = Entry.objects.filter(
        session_id=session.parent_id, pi_id=OuterRef("pi_id"), line=OuterRef("line")
    )
    marked = (
        Entry.objects.filter(session=session, copied=False)
        .filter(Exists(in_parent))
        .update(copied=True)
    )
    if marked:
        recount(session)
    return marked


def recount(session: Session) -> None:
    """Rebuild the session's UsageDaily rows and totals from its entries' usage columns."""
    UsageDaily.objects.filter(session=session).delete()
    recorder = UsageRecorder()
    for seq, stamp, key, i, o, cr, cw, cost, copied in usage_rows(session, USAGE_COLUMNS):
        usage = EntryUsage(key, i, o, cr, cw, cost)
        recorder.add(seq, stamp, (usage, entry_day({"timestamp": stamp})), copied)
    session.usage_tokens, session.usage_cost, session.usage_models = 0, 0.0, ""
    Session.objects.filter(pk=session.pk).update(usage_tokens=0, usage_cost=0.0, usage_models="")
    recorder.apply(session)
