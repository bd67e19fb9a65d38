"""The session tree: an index over a list of entries (pi session format v3).

Everything here is linear in the number of entries (or in the path length) and
never recurses, so 100,000-entry paths are fine.  Parent chains that loop raise
``TreeCycleError`` instead of hanging.

Public API
----------
- ``UNSET`` sentinel (JS ``undefined`` for optional arguments)
- ``index_by_id(entries)``, ``path_to_root(by_id, leaf)``
- ``validate_entries(entries)`` -> list of ``TreeProblem`` (duplicates, dangling
  parents, cycles, multiple roots, missing ids)
- ``SessionTree(entries)`` with ``leaf_id``, ``get_entry``, ``get_children``,
  ``get_label``, ``get_label_timestamp``, ``labels``, ``session_name``, ``list_index``,
  ``get_branch(from_id=UNSET)``, ``get_tree()``, ``common_ancestor(a, b)``,
  ``collect_entries_for_branch_summary(old_leaf_id, target_id)``,
  ``navigate_target(target_id)``, ``create_branched_session(leaf_id, ...)``
- ``compact_tree(nodes)`` (the golden ``{id, label?, labelTimestamp?, children}`` shape)
- ``iter_tree(nodes)`` flat pre-order walk ``(node, depth)`` for rendering
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property, cmp_to_key
from operator import itemgetter
from typing import Any

from .jsutil import iso_to_ms
from .list_index import ListIndex

__all__ = [
    "UNSET",
    "SessionTree",
    "TreeCycleError",
    "TreeError",
    "TreeProblem",
    "compact_tree",
    "generate_entry_id",
    "index_by_id",
    "iter_tree",
    "path_to_root",
    "user_message_text",
    "validate_entries",
]

CURRENT_SESSION_VERSION = 3


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()

Entry = dict[str, Any]


class TreeError(ValueError):
    """A session tree is malformed in a way that prevents the operation."""


class TreeCycleError(TreeError):
    """Walking parentId links from an entry never reaches a root."""

    def __init__(self, start_id: Any, cycle_ids: list[Any] | None = None):
        self.start_id = start_id
        self.cycle_ids = cycle_ids or []
        shown = " -> ".join(str(i) for i in self.cycle_ids[:10])
        more = " ..." if len(self.cycle_ids) > 10 else ""
        super().__init__(f"parentId chain from entry {start_id!r} loops ({shown}{more})")


# ---------------------------------------------------------------------------
# Indexing and path walking
# ---------------------------------------------------------------------------


def index_by_id(entries: list[Entry]) -> dict[str, Entry]:
    """``id -> entry``; like pi's ``Map.set`` the last entry with an id wins."""
    try:
        return dict(zip(map(_get_id, entries), entries, strict=True))
    except (KeyError, TypeError):
        keyed: dict[Any, Entry] = {e.get("id"): e for e in entries}  # (a missing id: None)
        return keyed


def path_to_root(by_id: dict[str, Entry], leaf: Entry | None) -> list[Entry]:
    """Entries from the root down to ``leaf`` (inclusive), pi's ``getBranch`` walk.

    Stops at an entry whose ``parentId`` is falsy or unknown (dangling).  Raises
    ``TreeCycleError`` if the chain loops (pi would hang).  Linear time.
    """
    if leaf is None:
        return []
    path = [leaf]
    append = path.append
    get = by_id.get
    current = leaf
    # A loop-free chain of distinct entries from by_id makes at most len(by_id)
    # parent steps (the leaf itself may be an overwritten duplicate: +1).
    try:
        for _ in range(len(by_id) + 1):
            parent_id = current["parentId"]
            if not parent_id:
                break
            parent = get(parent_id)
            if parent is None:
                break
            current = parent
            append(current)
        else:
            raise TreeCycleError(leaf.get("id"), _find_cycle(by_id, leaf))
    except KeyError:
        return _path_to_root_slow(by_id, leaf)
    except TypeError:  # unhashable parentId
        return _path_to_root_slow(by_id, leaf)
    path.reverse()
    return path


def _path_to_root_slow(by_id: dict[str, Entry], leaf: Entry) -> list[Entry]:
    path = [leaf]
    current: Entry | None = leaf
    for _ in range(len(by_id) + 1):
        parent_id = current.get("parentId") if isinstance(current, dict) else None
        if not parent_id:
            break
        try:
            current = by_id.get(parent_id)
        except TypeError:
            current = None
        if current is None:
            break
        path.append(current)
    else:
        raise TreeCycleError(leaf.get("id"), _find_cycle(by_id, leaf))
    path.reverse()
    return path


_get_id = itemgetter("id")
_get_parent = itemgetter("parentId")


def is_root_first_chain(
    entries: list[Entry], by_id: dict[str, Entry] | None = None, ids: list[Any] | None = None
) -> bool:
    """True when ``entries`` already is the root-first path to its last entry.

    (Unique truthy ids, each entry's parent is the previous entry, the first has no
    known parent.)  Checked at C speed; lets callers skip the pointer walk.
    """
    if not entries:
        return True
    try:
        if ids is None:
            ids = list(map(_get_id, entries))
        parents = list(map(_get_parent, entries))
    except (KeyError, TypeError):
        return False
    if parents[1:] != ids[:-1] or not all(ids):
        return False
    known = by_id if by_id is not None else set(ids)
    if len(known) != len(entries):
        return False  # duplicate ids: the walk could go elsewhere (or loop)
    first_parent = parents[0]
    return not first_parent or first_parent not in known


def chain_ids(entries: list[Entry]) -> list[Any] | None:
    """The ids of ``entries`` if the list is a root-first chain (see above), else None.

    Needs no index: uniqueness is checked with a set.
    """
    try:
        ids = list(map(_get_id, entries))
    except (KeyError, TypeError):
        return None
    if not ids:
        return None
    try:
        parents = list(map(_get_parent, entries))
    except (KeyError, TypeError):
        return None
    if parents[1:] != ids[:-1] or not all(ids):
        return None
    try:
        known = set(ids)
    except TypeError:
        return None
    if len(known) != len(ids):
        return None
    first_parent = parents[0]
    if first_parent and first_parent in known:
        return None
    return ids


def index_with_ids(entries: list[Entry]) -> tuple[dict[str, Entry], list[Any] | None]:
    """``(index_by_id(entries), ids-in-order or None)`` in one pass over the entries."""
    try:
        ids = list(map(_get_id, entries))
    except (KeyError, TypeError):
        keyed: dict[Any, Entry] = {e.get("id"): e for e in entries}  # (a missing id: None)
        return keyed, None
    return dict(zip(ids, entries, strict=True)), ids


def _find_cycle(by_id: dict[str, Entry], leaf: Entry) -> list[Any]:
    seen: dict[Any, int] = {}
    order: list[Any] = []
    current: Entry | None = leaf
    while current is not None:
        cid = id(current)
        if cid in seen:
            return order[seen[cid] :]
        seen[cid] = len(order)
        order.append(current.get("id"))
        parent_id = current.get("parentId")
        current = by_id.get(parent_id) if parent_id else None
    return order


def user_message_text(content: Any) -> str:
    """Text of a user / custom message content (string, or text blocks joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "") or ""
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def generate_entry_id(taken: Any) -> str:
    """8 hex characters, not in ``taken`` (falls back to a full UUID)."""
    for _ in range(100):
        candidate = uuid.uuid4().hex[:8]
        if candidate not in taken:
            return candidate
    return str(uuid.uuid4())


def _iso_now() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


# ---------------------------------------------------------------------------
# Validation (for imports: never silently accept a broken tree)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TreeProblem:
    kind: str  # missing-id | duplicate-id | dangling-parent | self-parent | cycle | multiple-roots
    entry_id: Any
    index: int  # 0-based position in the entry list (-1 when not about one entry)
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


def validate_entries(entries: list[Entry]) -> list[TreeProblem]:
    """Structural problems of a v3 entry list, in a stable order. Linear time."""
    problems: list[TreeProblem] = []
    first_index: dict[Any, int] = {}
    for i, e in enumerate(entries):
        eid = e.get("id")
        if not isinstance(eid, str) or not eid:
            problems.append(TreeProblem("missing-id", eid, i, f"entry #{i + 1} has no id"))
            continue
        if eid in first_index:
            problems.append(
                TreeProblem(
                    "duplicate-id",
                    eid,
                    i,
                    f"entry #{i + 1} repeats id {eid!r} of entry #{first_index[eid] + 1}",
                )
            )
        else:
            first_index[eid] = i
    roots = []
    for i, e in enumerate(entries):
        eid = e.get("id")
        pid = e.get("parentId")
        if pid is None:
            roots.append(eid)
        elif pid == eid:
            problems.append(TreeProblem("self-parent", eid, i, f"entry {eid!r} is its own parent"))
        elif pid not in first_index:
            problems.append(
                TreeProblem(
                    "dangling-parent", eid, i, f"entry {eid!r} has unknown parentId {pid!r}"
                )
            )
    if len(roots) > 1:
        problems.append(
            TreeProblem("multiple-roots", None, -1, f"{len(roots)} root entries: {roots[:5]!r}")
        )
    # Cycle detection: colour walk, linear overall.
    by_id = {e.get("id"): e for e in entries if isinstance(e.get("id"), str)}
    state: dict[Any, int] = {}  # 1 = on current walk, 2 = done
    for start in by_id:
        if start in state:
            continue
        walk = []
        cur = start
        while cur is not None and cur in by_id and cur not in state:
            state[cur] = 1
            walk.append(cur)
            pid = by_id[cur].get("parentId")
            cur = pid if pid and pid != cur else None
        if cur is not None and state.get(cur) == 1:
            cycle = walk[walk.index(cur) :]
            problems.append(
                TreeProblem(
                    "cycle",
                    cur,
                    first_index.get(cur, -1),
                    "parentId cycle: " + " -> ".join(map(str, cycle[:10])),
                )
            )
        for node in walk:
            state[node] = 2
    return problems


# ---------------------------------------------------------------------------
# The tree index
# ---------------------------------------------------------------------------


def _ts_ms(entry: Entry) -> float:
    ms = iso_to_ms(entry.get("timestamp"))
    return float("nan") if ms is None else ms


def _sort_children(children: list[dict[str, Any]]) -> None:
    keys = [_ts_ms(n["entry"]) for n in children]
    if all(k == k for k in keys):
        order = sorted(range(len(children)), key=keys.__getitem__)
    else:
        # JS comparator returning NaN counts as "equal".
        def cmp(a: int, b: int) -> int:
            d = keys[a] - keys[b]
            return 0 if d != d else (d > 0) - (d < 0)

        order = sorted(range(len(children)), key=cmp_to_key(cmp))
    children[:] = [children[i] for i in order]


class SessionTree:
    """Read-only index over a session's entries (header excluded), like pi's SessionManager.

    ``leaf_id`` defaults to the last entry's id (what pi uses after loading a file).
    """

    def __init__(self, entries: list[Entry], leaf_id: Any = UNSET):
        self.entries = entries
        last_id = entries[-1].get("id") if entries else None
        self.leaf_id = last_id if leaf_id is UNSET else leaf_id
        self._children: dict[Any, list[Entry]] | None = None

    # The id index and the labels are built on first use: reaching a leaf's path
    # (get_branch) needs neither; it uses the list index (one pass, see list_index.py).

    @cached_property
    def list_index(self) -> ListIndex | None:
        """The entries' ``ListIndex`` (None when their ids do not allow one); pass it
        to ``messages.build_session_context`` to reach a context without another pass."""
        return ListIndex.build(self.entries)

    @cached_property
    def by_id(self) -> dict[Any, Entry]:
        """``id -> entry`` (the last entry with an id wins, like pi's map)."""
        return index_by_id(self.entries)

    @cached_property
    def _label_state(self) -> tuple[dict[Any, str], dict[Any, Any]]:
        labels: dict[Any, str] = {}
        stamps: dict[Any, Any] = {}
        for e in self.entries:
            if e.get("type") != "label":
                continue
            target = e.get("targetId")
            label = e.get("label")
            if label:
                labels[target] = label
                stamps[target] = e.get("timestamp")
            else:
                labels.pop(target, None)
                stamps.pop(target, None)
        return labels, stamps

    @property
    def labels(self) -> dict[Any, str]:
        """``target id -> label`` after every label entry (an empty label removes one)."""
        return self._label_state[0]

    @property
    def label_timestamps(self) -> dict[Any, Any]:
        return self._label_state[1]

    # -- simple lookups -----------------------------------------------------

    def get_entry(self, entry_id: Any) -> Entry | None:
        return self.by_id.get(entry_id)

    def get_label(self, entry_id: Any) -> str | None:
        return self.labels.get(entry_id)

    def get_label_timestamp(self, entry_id: Any) -> Any:
        return self.label_timestamps.get(entry_id)

    @property
    def session_name(self) -> str | None:
        """Name from the last ``session_info`` entry that has a (non-empty) name."""
        for e in reversed(self.entries):
            if e.get("type") == "session_info" and e.get("name"):
                name: str = e["name"]
                return name
        return None

    def children_index(self) -> dict[Any, list[Entry]]:
        """``parentId -> [child entries]`` in entry-list order (built once)."""
        if self._children is None:
            children: dict[Any, list[Entry]] = {}
            for e in self.by_id.values():
                children.setdefault(e.get("parentId"), []).append(e)
            self._children = children
        return self._children

    def get_children(self, parent_id: Any) -> list[Entry]:
        return list(self.children_index().get(parent_id, ()))

    # -- paths --------------------------------------------------------------

    def get_branch(self, from_id: Any = UNSET) -> list[Entry]:
        """Root-first path to ``from_id`` (default: the leaf); [] if unknown.

        No two entries of the path share an id: ``ListIndex.build`` proves the list's
        ids unique, and the index walk visits ``by_id`` values, one per id (a repeat
        would be a loop, which raises).  So a caller may pass ``unique_ids=True`` to
        ``messages.context_from_path``.
        """
        start = self.leaf_id if from_id is UNSET or from_id is None else from_id
        if not start:
            return []
        if "by_id" not in self.__dict__:
            # No id map yet: the path is slices of the list when the ids allow it.
            index = self.list_index
            if index is not None:
                leaf = index.position(start)
                if leaf < 0:
                    return []
                runs = index.runs(leaf)
                if runs is not None:
                    return index.branch(runs)
        return path_to_root(self.by_id, self.by_id.get(start))

    def common_ancestor(self, a_id: Any, b_id: Any) -> Any:
        """Deepest entry id on both root paths, or None."""
        a_ids = {e.get("id") for e in self.get_branch(a_id)} if a_id else set()
        for e in reversed(self.get_branch(b_id) if b_id else []):
            if e.get("id") in a_ids:
                return e.get("id")
        return None

    def collect_entries_for_branch_summary(
        self, old_leaf_id: Any, target_id: Any
    ) -> dict[str, Any]:
        """Entries left behind when moving from ``old_leaf_id`` to ``target_id``.

        Returns ``{"entries": [...chronological], "commonAncestorId": id | None}``:
        the entries from the old leaf back to (excluding) the deepest common
        ancestor of both positions.
        """
        if not old_leaf_id:
            return {"entries": [], "commonAncestorId": None}
        ancestor = self.common_ancestor(old_leaf_id, target_id)
        collected: list[Entry] = []
        current = old_leaf_id
        limit = len(self.by_id) + 1
        while current and current != ancestor:
            entry = self.by_id.get(current)
            if entry is None:
                break
            collected.append(entry)
            if len(collected) > limit:
                raise TreeCycleError(old_leaf_id)
            current = entry.get("parentId")
        collected.reverse()
        return {"entries": collected, "commonAncestorId": ancestor}

    def navigate_target(self, target_id: Any) -> dict[str, Any]:
        """Where the leaf goes when the user clicks ``target_id``.

        A user message or custom_message target puts the leaf on its parent and
        returns its text for the input box (edit and resend); anything else
        becomes the leaf itself.  Returns ``{"leafId", "editorText"}``
        (``editorText`` None when nothing goes back to the input box).
        """
        entry = self.by_id.get(target_id)
        if entry is None:
            raise TreeError(f"Entry {target_id!r} not found")
        etype = entry.get("type")
        if etype == "message" and (entry.get("message") or {}).get("role") == "user":
            return {
                "leafId": entry.get("parentId"),
                "editorText": user_message_text(entry["message"].get("content")),
            }
        if etype == "custom_message":
            return {
                "leafId": entry.get("parentId"),
                "editorText": user_message_text(entry.get("content")),
            }
        return {"leafId": target_id, "editorText": None}

    # -- tree ---------------------------------------------------------------

    def get_tree(self) -> list[dict[str, Any]]:
        """Nested nodes ``{entry, children, label?, labelTimestamp?}``; roots in entry order.

        Roots are entries with a null parent, a self-parent or an unknown parent
        (orphans).  Children are sorted by timestamp (stable).  Built iteratively.
        """
        nodes: dict[Any, dict[str, Any]] = {}
        for e in self.entries:
            eid = e.get("id")
            node: dict[str, Any] = {"entry": e, "children": []}
            if eid in self.labels:
                node["label"] = self.labels[eid]
                node["labelTimestamp"] = self.label_timestamps.get(eid)
            nodes[eid] = node
        roots = []
        for e in self.entries:
            eid = e.get("id")
            node = nodes[eid]
            pid = e.get("parentId")
            if pid is None or pid == eid:
                roots.append(node)
            else:
                parent = nodes.get(pid)
                if parent is not None:
                    parent["children"].append(node)
                else:
                    roots.append(node)
        stack = list(roots)
        seen: set[int] = set()
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if len(node["children"]) > 1:
                _sort_children(node["children"])
            stack.extend(node["children"])
        return roots

    # -- fork ---------------------------------------------------------------

    def create_branched_session(
        self,
        leaf_id: Any,
        *,
        cwd: str = "",
        parent_session: str | None = None,
        session_id: str | None = None,
        now: str | None = None,
        id_generator: Callable[[Any], str] = generate_entry_id,
    ) -> dict[str, Any]:
        """A new session holding the path root -> ``leaf_id`` (pi's createBranchedSession).

        Label entries on the path are dropped and the labels that target path
        entries are re-created as fresh label entries chained after the last path
        entry (keeping each label's original timestamp).  As in pi 0.80.2, the kept
        entries are re-chained: each one's ``parentId`` becomes the previous kept
        entry's id (the first one's None), so an entry that hung off a dropped label
        (or a root whose parentId pointed nowhere) gets a new parentId; the others
        are returned as they are.  Returns ``{"header", "entries", "leafId"}``; the
        header has ``parentSession`` when given.
        """
        path = self.get_branch(leaf_id) if leaf_id else []
        if not path:
            raise TreeError(f"Entry {leaf_id!r} not found")
        kept = rechain_path([e for e in path if e.get("type") != "label"])
        kept_ids = {e.get("id") for e in kept}
        header: dict[str, Any] = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": session_id or str(uuid.uuid4()),
            "timestamp": now or _iso_now(),
            "cwd": cwd,
        }
        if parent_session is not None:
            header["parentSession"] = parent_session
        taken = set(kept_ids)
        parent = kept[-1].get("id") if kept else None
        label_entries = []
        for target, label in self.labels.items():
            if target not in kept_ids:
                continue
            new_id = id_generator(taken)
            taken.add(new_id)
            ts = self.label_timestamps.get(target) or now or _iso_now()
            label_entries.append(
                {
                    "type": "label",
                    "id": new_id,
                    "parentId": parent,
                    "timestamp": ts,
                    "targetId": target,
                    "label": label,
                }
            )
            parent = new_id
        entries = kept + label_entries
        return {
            "header": header,
            "entries": entries,
            "leafId": entries[-1].get("id") if entries else None,
        }


def rechain_path(kept: list[Entry]) -> list[Entry]:
    """pi's createBranchedSession re-chaining of a path without its label entries: each
    entry's parentId is the previous entry's id (the first one's None). An entry whose
    parentId already is that is kept as it is (the same object); the others are copies
    with the new parentId (in the key's place, or last when it had none, as JS's spread)."""
    out: list[Entry] = []
    parent: Any = None
    for entry in kept:
        if "parentId" in entry and entry.get("parentId") == parent:
            out.append(entry)
        else:
            out.append({**entry, "parentId": parent})
        parent = entry.get("id")
    return out


# ---------------------------------------------------------------------------
# Tree shapes
# ---------------------------------------------------------------------------


def compact_tree(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``{id, label?, labelTimestamp?, children}`` copy of ``get_tree()`` output (iterative)."""

    def shell(node: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"id": node["entry"].get("id")}
        if node.get("label") is not None:
            out["label"] = node["label"]
            if node.get("labelTimestamp") is not None:
                out["labelTimestamp"] = node["labelTimestamp"]
        out["children"] = []
        return out

    result = [shell(n) for n in nodes]
    stack = list(zip(nodes, result, strict=True))
    while stack:
        src, dst = stack.pop()
        for child in src["children"]:
            c = shell(child)
            dst["children"].append(c)
            stack.append((child, c))
    return result


def iter_tree(nodes: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], int]]:
    """Pre-order ``(node, depth)`` over ``get_tree()`` output, without recursion."""
    stack = [(n, 0) for n in reversed(nodes)]
    while stack:
        node, depth = stack.pop()
        yield node, depth
        for child in reversed(node["children"]):
            stack.append((child, depth + 1))
