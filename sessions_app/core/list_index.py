"""One pass over a session's entry list: the columns that reach a leaf's path and its context.

pi reaches a leaf through an id map (``byId``) and a walk of the parent links. In CPython,
on 100,000 entries, every pass over the entry dicts is bound by memory latency (each entry's
dict, its key table and its id string are cache misses), so what costs is how many times
each entry is touched, not the work done per touch. ``ListIndex.build`` touches each entry
once and keeps, in compact lists:

- ``ids``: the id of every entry (positions are found by scanning this list at C speed);
- ``breaks``: the positions whose ``parentId`` is not the previous entry's id. Between two
  breaks the entries form a *run*: each one's parent is the entry just before it. A path
  is a few runs joined where the session branched;
- ``specials``: the positions whose ``type`` is not ``"message"`` (settings, compactions,
  custom messages, labels...);
- ``messages``: the ``message`` of each message entry (None for the others).

A path and the messages of its context are then slices of these lists (C-speed copies of
pointers), and only the few branch points and special entries are looked at again.

The runs stand for pi's walk only when no two entries share an id (pi's map keeps the last
entry with an id, so a duplicate could send the walk elsewhere) and no id is falsy (pi's
walk stops at a falsy ``parentId``): ``build`` proves both with the set of ids, or returns
None and the caller walks an id map (``tree.index_by_id``, ``tree.path_to_root``).

The index is kept where the entries are loaded (``SessionTree.list_index``), and
``messages.build_session_context`` builds one for its call on a branched list when it is
given none (a list that is the leaf's path takes one loop without an index); either way its
cost counts in the caller's time, as pi's map counts in pi's.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

__all__ = ["ListIndex"]

Entry = dict[str, Any]

_NO_ID = object()  # the "previous id" of the first entry: equal to no parentId
_FIRST_WINDOW = 256  # first window of the backward id scans (doubles each step)
_SCANNED_RUNS = 4  # branch points found by scanning ids; past that, a position map


class ListIndex:
    """The columns of an entry list (see the module docstring); ``build`` makes one."""

    __slots__ = (
        "entries",
        "ids",
        "known",
        "breaks",
        "specials",
        "messages",
        "_positions",
        "_found",
    )

    def __init__(
        self,
        entries: list[Entry],
        ids: list[Any],
        known: set[Any],
        breaks: list[int],
        specials: list[int],
        messages: list[Any],
    ) -> None:
        self.entries = entries
        self.ids = ids
        self.known = known
        self.breaks = breaks
        self.specials = specials
        self.messages = messages
        self._positions: dict[Any, int] | None = None
        self._found: dict[Any, int] = {}  # the positions looked up so far

    @classmethod
    def build(cls, entries: list[Entry]) -> ListIndex | None:
        """The index of ``entries``, or None when the runs cannot stand for pi's walk
        (an empty list, duplicate, falsy or unhashable ids, or a missing key)."""
        if not entries:
            return None
        known: set[Any] = set()
        add = known.add
        ids: list[Any] = []
        add_id = ids.append
        messages: list[Any] = []
        add_message = messages.append
        breaks: list[int] = []
        specials: list[int] = []
        previous: Any = _NO_ID
        try:
            # The one pass: each entry's dict is read once, for all four columns.
            for entry in entries:
                entry_id = entry["id"]
                if entry["parentId"] != previous:
                    breaks.append(len(ids))
                if entry["type"] == "message":
                    add_message(entry["message"])
                else:
                    specials.append(len(ids))
                    add_message(None)
                add(entry_id)
                add_id(entry_id)
                previous = entry_id
        except (KeyError, TypeError):
            return None
        # JSON's falsy ids are None, "", 0, 0.0 and false (the last three equal 0).
        if len(known) != len(ids) or None in known or "" in known or 0 in known:
            return None
        return cls(entries, ids, known, breaks, specials, messages)

    def position(self, entry_id: Any, before: int | None = None) -> int:
        """Position of the entry with ``entry_id`` (-1 if none).

        Scans the ids backwards from ``before`` (default: the end) in growing windows,
        then after it: leaves are usually recent entries, and a branch point usually
        comes shortly before the branch.  Positions found are kept (a path, then its
        context, look up the same ids); past a few branch points a position map is built.
        """
        try:
            if entry_id not in self.known:
                return -1
        except TypeError:  # unhashable
            return -1
        if self._positions is not None:
            return self._positions[entry_id]
        found = self._found.get(entry_id)
        if found is None:
            found = self._found[entry_id] = self._scan(entry_id, before)
        return found

    def _scan(self, entry_id: Any, before: int | None) -> int:
        ids = self.ids
        hi = len(ids) if before is None else before
        width = _FIRST_WINDOW
        while hi > 0:
            lo = max(hi - width, 0)
            try:
                return ids.index(entry_id, lo, hi)
            except ValueError:
                hi = lo
                width *= 2
        return ids.index(entry_id, 0 if before is None else before)

    def runs(self, leaf: int) -> list[tuple[int, int]] | None:
        """The root-first path to the entry at ``leaf`` as ``(start, stop)`` slices.

        None when the parent links loop (the caller's walk then reports the loop).
        """
        breaks = self.breaks
        entries = self.entries
        known = self.known
        count = 0
        limit = len(entries)
        runs: list[tuple[int, int]] = []
        i = leaf
        while True:
            start = breaks[bisect_right(breaks, i) - 1]
            runs.append((start, i + 1))
            count += i + 1 - start
            if count > limit:
                return None  # more entries than the list holds: a loop
            parent = entries[start]["parentId"]
            if not parent or parent not in known:
                break
            if len(runs) > _SCANNED_RUNS and self._positions is None:
                self._positions = dict(zip(self.ids, range(limit), strict=True))
            i = self.position(parent, start)
        runs.reverse()
        return runs

    def branch(self, runs: list[tuple[int, int]]) -> list[Entry]:
        """The entries of ``runs`` (the path)."""
        entries = self.entries
        if len(runs) == 1:
            start, stop = runs[0]
            return entries[start:stop]
        path: list[Entry] = []
        for start, stop in runs:
            path += entries[start:stop]
        return path

    def columns(self, runs: list[tuple[int, int]]) -> tuple[list[Entry], list[Any], list[int]]:
        """``(path, its messages column, its special positions)`` for ``runs``."""
        entries = self.entries
        messages = self.messages
        specials = self.specials
        if len(runs) == 1:
            start, stop = runs[0]
            lo = bisect_left(specials, start)
            hi = bisect_left(specials, stop, lo)
            if start == 0 and stop == len(entries):
                return entries, messages, specials
            shifted = [i - start for i in specials[lo:hi]] if start else specials[lo:hi]
            return entries[start:stop], messages[start:stop], shifted
        path: list[Entry] = []
        column: list[Any] = []
        positions: list[int] = []
        for start, stop in runs:
            offset = len(path) - start
            lo = bisect_left(specials, start)
            hi = bisect_left(specials, stop, lo)
            positions += [i + offset for i in specials[lo:hi]]
            path += entries[start:stop]
            column += messages[start:stop]
        return path, column, positions
