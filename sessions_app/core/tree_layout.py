"""Layout of the session tree for the browser (pure; no Django).

Input: light rows (pk, pi_id, parent pk, type, role, tool_name, preview, label,
token_count, seq), never payloads. Output: a flat list of display rows in document
order, each with a depth, so the page can draw an indented tree with guides.

Shape rules (a "mainline" drawing, like a git graph):

- A linear chain stays at one depth. At a branch point, the child that leads to the
  highlighted leaf (else to the selected target / a search match, else the oldest)
  *continues* at the same depth; every other child starts an indented side branch,
  drawn right under the branch point (connector ├─). The active path therefore never
  drifts right, however many branches it passes.
- Side branches that hold nothing of interest are collapsed to their first entry plus a
  "▸ N more entries" row that the page expands lazily (HTMX).
- Linear runs of unremarkable entries are folded into one "… N entries" row. Never
  folded ("key" nodes): roots, branch points, leaves, labelled entries, compactions,
  branch summaries, the highlighted leaf, the session's leaf, the target, search
  matches, and the last few entries before the highlighted leaf.
- Filters follow pi's tree selector: default hides settings/bookkeeping entries (label,
  custom except skills_reload, model_change, thinking_level_change, and pi 1.x's
  context_edit and usage; pi 1.6.0 never lists usage, "all" shows it); no-tools also hides
  tool results; user-only keeps user messages; labeled-only keeps labelled entries;
  every mode except "all" hides assistant messages that are only tool calls (no text,
  not an error), unless it is the leaf. Branch points and side-branch heads stay
  visible (dimmed) whatever the filter, so the shape of the tree survives.

Everything is iterative and linear in the number of entries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .input_limits import js_number
from .tool_headline import headlines_from_preview

FILTER_MODES = ("default", "no-tools", "user-only", "labeled-only", "all")
SETTINGS_TYPES = frozenset(
    {"label", "model_change", "thinking_level_change", "context_edit", "usage"}
)

#: Sessions up to this many entries are drawn fully expanded (runs folded only if long).
SMALL_SESSION = 400
#: In small sessions, runs longer than this are still folded.
SMALL_RUN_FOLD = 40
#: Runs shorter than this are never folded.
MIN_FOLD = 3
#: Entries just before the highlighted leaf that are always shown.
TAIL_KEEP = 12
#: Unfolded runs at least this long get a fold toggle (folded on the client).
GROUP_RUN = 3
#: A lazily expanded run shows at most this many rows, then another fold row.
RUN_PAGE = 300
#: A branch point draws at most this many of its children in place (the continuation,
#: the branches that lead somewhere of interest, then the oldest); a "children" row lists
#: the others, CHILDREN_PAGE at a time. A root with 100,000 children drew 100,000 rows.
FANOUT_SHOWN = 50
CHILDREN_PAGE = 100
#: The most rows one drawing yields (the whole tree or a lazy piece); past it, a "cut"
#: row says so and the page stays usable.
MAX_ROWS = 5000


@dataclass(slots=True)
class Node:
    pk: int
    id: str
    parent: int | None
    type: str
    role: str
    tool_name: str
    preview: str
    label: str
    tokens: int
    seq: int
    children: list[Node] = field(default_factory=list)
    parent_id: str | None = None  # the parent's pi id (None for roots / orphans)

    @property
    def is_branch_point(self) -> bool:
        return len(self.children) > 1

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @property
    def kind(self) -> str:
        """One word for the icon and CSS: user, assistant, toolResult, bash, compaction…"""
        if self.type == "message":
            if self.role == "bashExecution":
                return "bash"
            if self.role == "custom":
                return "custom_message"
            return self.role or "message"
        return self.type

    @property
    def tool_only(self) -> bool:
        """An assistant message with tool calls and no text (pi hides these in the tree).

        Derived from the preview column (text first, then `name(args)` per call), so it
        never needs the payload.
        """
        return (
            self.kind == "assistant"
            and bool(self.tool_name)
            and self.preview.startswith(self.tool_name + "(")
        )

    def search_text(self) -> str:
        return " ".join((self.label, self.kind, self.tool_name, self.type, self.preview)).lower()


@dataclass(slots=True)
class Row:
    """One line of the drawn tree.

    kind: "node" (an entry), "fold" (a folded linear run: `node` = first, `last` = last,
    `count` entries), "more" (a collapsed side branch below `node`: `count` more
    entries, `leaves` leaves), "children" (`count` more children of `node` not drawn,
    listed from the `start`-th of them on demand), "cut" (the drawing stopped at
    MAX_ROWS rows), or a group marker the page turns into a foldable container: "gopen"
    (`group` = "run" | "branch"), "grows" (a branch's rows start after its head row) and
    "gclose".
    """

    kind: str
    node: Node
    depth: int
    connector: str = ""  # "" | "side" (├─ from the mainline) | "root" (another root)
    last: Node | None = None
    count: int = 0
    leaves: int = 0
    dimmed: bool = False
    on_path: bool = False
    is_view_leaf: bool = False
    is_session_leaf: bool = False
    is_target: bool = False
    is_match: bool = False
    sibling_index: int = 0
    sibling_count: int = 1
    group: str = ""
    start: int = 0
    headline: str = ""  # a tool row: what its call did (core/tool_headline)
    summary: str = ""  # a fold: what kinds of entries it hides ("3 user · 5 tool results")
    archived: bool = False  # the head of an archived branch


class TreeIndex:
    """Parent/children index over light rows, plus the highlighted path."""

    def __init__(self, rows: Iterable[tuple[Any, ...]]):
        self.nodes: dict[int, Node] = {}
        self.by_id: dict[str, Node] = {}
        ordered: list[Node] = []
        for pk, pi_id, parent, etype, role, tool, preview, label, tokens, seq in rows:
            node = Node(pk, pi_id, parent, etype, role, tool, preview, label, tokens or 0, seq)
            self.nodes[pk] = node
            self.by_id[pi_id] = node
            ordered.append(node)
        ordered.sort(key=lambda n: n.seq)
        self.ordered = ordered
        self.roots: list[Node] = []
        for node in ordered:
            parent = self.nodes.get(node.parent) if node.parent is not None else None
            if parent is None or parent is node:
                self.roots.append(node)
            else:
                parent.children.append(node)
                node.parent_id = parent.id

    def __len__(self) -> int:
        return len(self.nodes)

    def path_pks(self, node: Node | None) -> list[int]:
        """Root→node pks (stops on a loop instead of hanging)."""
        out: list[int] = []
        seen: set[int] = set()
        while node is not None and node.pk not in seen:
            seen.add(node.pk)
            out.append(node.pk)
            node = self.nodes.get(node.parent) if node.parent is not None else None
        out.reverse()
        return out

    def child_previews(self, node: Node, limit: int = 20) -> list[tuple[str, str]]:
        """(pi_id, preview) of a node's first children, in order (the entry pane)."""
        return [(child.id, child.preview) for child in node.children[:limit]]

    def subtree_stats(self, head: Node) -> tuple[int, int]:
        """(entries, leaves) in the subtree under `head`, head included."""
        count = leaves = 0
        stack = [head]
        while stack:
            node = stack.pop()
            count += 1
            if not node.children:
                leaves += 1
            stack.extend(node.children)
        return count, leaves


def _passes_filter(node: Node, mode: str, keep: bool) -> bool:
    if mode == "all":
        return True
    if node.tool_only and not keep:
        return False
    if mode == "user-only":
        return node.kind == "user"
    if mode == "labeled-only":
        return bool(node.label)
    settings = node.type in SETTINGS_TYPES or (
        node.type == "custom" and node.preview != "skills_reload"
    )
    if mode == "no-tools":
        return not settings and node.kind != "toolResult"
    return not settings


class Layout:
    """Computes display rows for the whole tree or for one lazily expanded piece."""

    def __init__(
        self,
        index: TreeIndex,
        *,
        view_leaf: str | None = None,
        session_leaf: str | None = None,
        target: str | None = None,
        mode: str = "default",
        query: str = "",
        expand: Iterable[str] = (),
        max_rows: int = MAX_ROWS,
        archived: Iterable[str] = (),
    ):
        self.index = index
        # Archived branch heads: drawn folded (unless they lead to what is shown), last
        # among their siblings.
        self.archived = {index.by_id[i].pk for i in archived if i in index.by_id}
        self.max_rows = max_rows
        self.mode = mode if mode in FILTER_MODES else "default"
        self.view_leaf = index.by_id.get(view_leaf) if view_leaf else None
        self.session_leaf = index.by_id.get(session_leaf) if session_leaf else None
        self.target = index.by_id.get(target) if target else None
        self.small = len(index) <= SMALL_SESSION
        self.expanded = {index.by_id[i].pk for i in expand if i in index.by_id}
        self.on_path = set(index.path_pks(self.view_leaf))
        tokens = [t for t in query.lower().split() if t]
        self.matches: set[int] = set()
        if tokens:
            for node in index.ordered:
                text = node.search_text()
                if all(t in text for t in tokens):
                    self.matches.add(node.pk)
        # Nodes that must be visible, and (rank of) what each subtree contains.
        self.tail: set[int] = set()
        if self.view_leaf is not None:
            for pk in reversed(index.path_pks(self.view_leaf)):
                if self._visible(index.nodes[pk], structural=False):
                    self.tail.add(pk)
                    if len(self.tail) >= TAIL_KEEP:
                        break
        self._calls: dict[int, list[str]] = {}  # an assistant's call headlines, by pk
        self._sizes: dict[int, int] = {}  # subtree sizes, filled as branches are drawn
        self.rank: dict[int, int] = {}  # 3 = leads to the view leaf, 2 = target, 1 = match
        self._mark(self.on_path, 3)
        if self.target is not None:
            self._mark(index.path_pks(self.target), 2)
        for pk in self.matches:  # up to the first ancestor already marked: linear in all
            up: Node | None = index.nodes[pk]
            while up is not None and self.rank.get(up.pk, 0) < 1:
                self.rank[up.pk] = 1
                up = index.nodes.get(up.parent) if up.parent is not None else None

    def _mark(self, pks: Iterable[int], rank: int) -> None:
        for pk in pks:
            if self.rank.get(pk, 0) < rank:
                self.rank[pk] = rank

    # -- classification -------------------------------------------------------------

    def _visible(self, node: Node, structural: bool) -> bool:
        keep = node is self.view_leaf or node is self.session_leaf or node is self.target
        return structural or keep or _passes_filter(node, self.mode, keep)

    def _is_key(self, node: Node) -> bool:
        return (
            node.is_branch_point
            or node.is_leaf
            or bool(node.label)
            or node.type in ("compaction", "branch_summary")
            or node is self.view_leaf
            or node is self.session_leaf
            or node is self.target
            or node.pk in self.matches
            or node.pk in self.tail
        )

    def _ordered_children(self, node: Node) -> list[Node]:
        kids = node.children
        if len(kids) < 2:
            return kids
        best = max(kids, key=lambda k: self.rank.get(k.pk, 0))
        if self.rank.get(best.pk, 0) == 0:
            best = next((k for k in kids if k.pk not in self.archived), kids[0])
        return [best, *[k for k in kids if k is not best]]

    def headline(self, node: Node) -> str:
        """What a tool row did, as the chat says it: the calls of a tool-only assistant
        message, or the call a tool result answers (its k-th result answers its k-th call).
        """
        kind = node.kind
        if kind == "assistant" and node.tool_name:
            return " · ".join(headlines_from_preview(node.preview))
        if kind != "toolResult":
            return ""
        nth = 0
        parent = self.index.nodes.get(node.parent) if node.parent is not None else None
        while parent is not None and parent.kind == "toolResult" and nth < 64:
            nth += 1
            parent = self.index.nodes.get(parent.parent) if parent.parent is not None else None
        if parent is None or parent.kind != "assistant":
            return ""
        calls = self._calls.get(parent.pk)
        if calls is None:
            calls = self._calls[parent.pk] = headlines_from_preview(parent.preview)
        return calls[nth] if nth < len(calls) else ""

    def _row(self, node: Node, depth: int, **kw: Any) -> Row:
        return Row(
            "node",
            node,
            depth,
            headline=self.headline(node),
            on_path=node.pk in self.on_path,
            is_view_leaf=node is self.view_leaf,
            is_session_leaf=node is self.session_leaf,
            is_target=node is self.target,
            is_match=node.pk in self.matches,
            archived=node.pk in self.archived,
            **kw,
        )

    # -- drawing --------------------------------------------------------------------

    def rows(self) -> list[Row]:
        """The whole tree as drawn on first load."""
        roots = sorted(self.index.roots, key=lambda r: -self.rank.get(r.pk, 0))
        connector = "root" if len(roots) > 1 else ""
        tasks = [
            (root, 0, connector, i == 0 or self._open(root), False, i, len(roots))
            for i, root in enumerate(roots)
        ]
        out: list[Row] = []
        self._draw(tasks, out)
        return out

    def branch_rows(self, head_id: str, depth: int) -> list[Row]:
        """A side branch expanded (its head row excluded: the page already shows it)."""
        head = self.index.by_id[head_id]
        out: list[Row] = []
        self._draw([(head, depth, "", True, True, 0, 1)], out)
        return out

    def run_rows(self, first_id: str, last_id: str, depth: int) -> list[Row]:
        """Every entry of a folded run (first..last on one chain), paged."""
        first = self.index.by_id[first_id]
        last = self.index.by_id[last_id]
        chain: list[Node] = []
        node: Node | None = last
        while node is not None:
            chain.append(node)
            if node is first:
                break
            node = self.index.nodes.get(node.parent) if node.parent is not None else None
        else:
            raise KeyError(f"{first_id} is not an ancestor of {last_id}")
        chain.reverse()
        visible = [n for n in chain if self._visible(n, structural=False)]
        out = [self._row(n, depth) for n in visible[:RUN_PAGE]]
        rest = visible[RUN_PAGE:]
        if rest:
            out.append(
                Row(
                    "fold",
                    rest[0],
                    depth,
                    last=rest[-1],
                    count=len(rest),
                    summary=fold_summary(rest),
                )
            )
        return out

    def subtree_size(self, head: Node) -> int:
        """Entries under `head`, head included, by an iterative post-order walk of that
        subtree only; every node it passes keeps its figure, so a branch nested in one
        already counted costs nothing (side branches, not the whole tree, are walked)."""
        sizes = self._sizes
        if head.pk in sizes:
            return sizes[head.pk]
        stack: list[tuple[Node, bool]] = [(head, False)]
        while stack:
            node, done = stack.pop()
            if done:
                sizes[node.pk] = 1 + sum(sizes[k.pk] for k in node.children)
            elif node.pk not in sizes:
                stack.append((node, True))
                stack.extend((k, False) for k in node.children if k.pk not in sizes)
        return sizes[head.pk]

    def _open(self, head: Node) -> bool:
        if self.rank.get(head.pk, 0) > 0 or head.pk in self.expanded:
            return True
        return self.small and head.pk not in self.archived

    def _draw(self, tasks: list[tuple[Any, ...]], out: list[Row]) -> None:
        """Draw blocks: a block is a chain from its head at one depth.

        At a branch point the block ends; the side branches (indented) and then the
        continuation (same depth) are pushed as new blocks. An explicit stack, so deep
        trees never recurse.
        """
        stack: list[Any] = list(reversed(tasks))
        while stack:
            task = stack.pop()
            if task is None:
                out.append(Row("gclose", out[-1].node, 0))
                continue
            if len(out) >= self.max_rows:
                self._cut(stack, out)
                return
            if task[0] == "children":
                _, parent, depth, count, start = task
                out.append(Row("children", parent, depth, count=count, start=start))
                continue
            head, depth, connector, expanded, skip_head, s_index, s_count = task
            grouped = bool(connector) and not skip_head and bool(head.children)
            if grouped:
                out.append(
                    Row("gopen", head, depth, group="branch", count=self.subtree_size(head) - 1)
                )
            if not skip_head:
                out.append(
                    self._row(
                        head,
                        depth,
                        connector=connector,
                        dimmed=not self._visible(head, structural=False),
                        sibling_index=s_index,
                        sibling_count=s_count,
                        count=out[-1].count if grouped else 0,
                    )
                )
            if not head.children:
                continue
            if grouped:
                out.append(Row("grows", head, depth, group="branch"))
                stack.append(None)  # closes the group once everything below is drawn
            if not expanded:
                count, leaves = self.index.subtree_stats(head)
                out.append(Row("more", head, depth, count=count - 1, leaves=leaves))
                continue
            self._draw_chain(head, depth, stack, out)

    def _draw_chain(self, head: Node, depth: int, stack: list[Any], out: list[Row]) -> None:
        """The chain below ``head`` down to its next branch point, whose continuation
        and side branches are pushed on ``stack`` as new blocks."""
        run: list[Node] = []
        node = head
        while True:
            kids = self._ordered_children(node)
            if not kids:
                break
            if len(kids) > 1:
                n = len(kids)
                stack.append((kids[0], depth, "", True, False, 0, n))
                sides, hidden = self._shown_sides(node, kids)
                if hidden:
                    stack.append(("children", node, depth + 1, len(hidden), 0))
                for side in reversed(sides):
                    i = kids.index(side) if n <= FANOUT_SHOWN else 0
                    stack.append((side, depth + 1, "side", self._open(side), False, i, n))
                break
            node = kids[0]
            if self._is_key(node):
                self._flush(run, depth, out)
                if self._visible(node, structural=node.is_branch_point):
                    out.append(self._row(node, depth, dimmed=not self._visible(node, False)))
            elif self._visible(node, structural=False):
                run.append(node)
        self._flush(run, depth, out)

    def _cut(self, stack: list[Any], out: list[Row]) -> None:
        """Stop drawing at MAX_ROWS: one "cut" row, then the groups still open closed."""
        out.append(Row("cut", out[-1].node, 0, count=len(out)))
        for task in reversed(stack):
            if task is None:
                out.append(Row("gclose", out[-1].node, 0))
        stack.clear()

    def _shown_sides(self, node: Node, kids: list[Node]) -> tuple[list[Node], list[Node]]:
        """The side branches drawn in place at branch point `node` (`kids` ordered, the
        continuation first), and those its "children" row lists: beyond FANOUT_SHOWN
        children, the branches that lead to the view leaf, the target, a match or an
        opened branch come first, then the oldest."""
        sides = kids[1:]
        room = FANOUT_SHOWN - 1
        if len(sides) <= room:
            return sides, []
        wanted = [k for k in sides if self.rank.get(k.pk, 0) > 0 or k.pk in self.expanded]
        chosen = {k.pk for k in wanted[:room]}
        for k in sides:
            if len(chosen) >= room:
                break
            chosen.add(k.pk)
        shown = [k for k in sides if k.pk in chosen]
        hidden = [k for k in sides if k.pk not in chosen]
        return shown, hidden

    def children_rows(self, node_id: str, depth: int, start: int) -> list[Row]:
        """The children of branch point `node_id` its "children" row stands for, from the
        `start`-th: CHILDREN_PAGE of them, each as a collapsed branch, then another
        "children" row for the rest."""
        node = self.index.by_id[node_id]
        kids = self._ordered_children(node)
        _, hidden = self._shown_sides(node, kids) if len(kids) > 1 else ([], [])
        start = max(0, start)
        page = hidden[start : start + CHILDREN_PAGE]
        n = len(kids)
        tasks = [(kid, depth, "side", False, False, 0, n) for kid in page]
        out: list[Row] = []
        self._draw(tasks, out)
        rest = len(hidden) - start - len(page)
        if rest > 0:
            out.append(Row("children", node, depth, count=rest, start=start + len(page)))
        return out

    def _flush(self, run: list[Node], depth: int, out: list[Row]) -> None:
        if not run:
            return
        limit = SMALL_RUN_FOLD if self.small else MIN_FOLD - 1
        if len(run) > limit and len(run) >= MIN_FOLD and run[0].pk not in self.expanded:
            out.append(
                Row("fold", run[0], depth, last=run[-1], count=len(run), summary=fold_summary(run))
            )
        elif len(run) >= GROUP_RUN:
            out.append(
                Row(
                    "gopen",
                    run[0],
                    depth,
                    last=run[-1],
                    count=len(run),
                    group="run",
                    summary=fold_summary(run),
                )
            )
            out.extend(self._row(n, depth) for n in run)
            out.append(Row("gclose", run[-1], depth))
        else:
            out.extend(self._row(n, depth) for n in run)
        run.clear()


#: How a fold names the entries it hides, by Node.kind (singular, plural).
_KIND_WORDS = {
    "user": ("user message", "user messages"),
    "assistant": ("assistant message", "assistant messages"),
    "toolResult": ("tool result", "tool results"),
    "bash": ("bash command", "bash commands"),
    "compaction": ("compaction", "compactions"),
    "branch_summary": ("branch summary", "branch summaries"),
    "custom_message": ("custom message", "custom messages"),
    "model_change": ("model change", "model changes"),
    "thinking_level_change": ("thinking change", "thinking changes"),
}


def fold_summary(nodes: Iterable[Node]) -> str:
    """What a folded run holds, most frequent kind first: "5 tool results · 4 assistant
    messages · 1 user message"."""
    counts: dict[str, int] = {}
    for node in nodes:
        kind = node.kind
        counts[kind] = counts.get(kind, 0) + 1
    parts = []
    for kind, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        one, many = _KIND_WORDS.get(kind, ("other entry", "other entries"))
        parts.append(f"{n} {one if n == 1 else many}")
    return " · ".join(parts)


def format_tokens(count: object) -> str:
    """1234 → "1.2k" (for the tree's token column). Any JSON number is accepted: one
    beyond the double range (`1e999`, Infinity once JSON.parse read it) shows as "∞"."""
    count = js_number(count)
    if count is None:
        return ""
    if isinstance(count, float):
        if math.isinf(count):
            return "∞" if count > 0 else "-∞"
        count = int(count)
    if count < 1000:
        return str(count)
    if count < 100_000:
        return f"{count / 1000:.1f}k"
    return f"{count // 1000}k"
