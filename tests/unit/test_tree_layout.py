"""core/tree_layout.py: the drawn shape of a session tree (pure, no database)."""

from sessions_app.core import tree_layout
from sessions_app.core.tree_layout import (
    CHILDREN_PAGE,
    FANOUT_SHOWN,
    MAX_ROWS,
    Layout,
    TreeIndex,
    format_tokens,
)


def rows_for(spec):
    """spec: list of (id, parent_id, type, role, tool, preview, label)."""
    pks = {eid: i + 1 for i, (eid, *_rest) in enumerate(spec)}
    out = []
    for i, (eid, parent, etype, role, tool, preview, label) in enumerate(spec):
        out.append((pks[eid], eid, pks.get(parent), etype, role, tool, preview, label, 3, i))
    return out


def msg(eid, parent, role, preview="", tool="", label=""):
    return (eid, parent, "message", role, tool, preview or eid, label)


SPEC = [
    msg("u1", None, "user"),
    msg("a1", "u1", "assistant"),
    msg("u2", "a1", "user"),  # branch 1 (oldest)
    msg("a2", "u2", "assistant"),
    msg("u3", "a1", "user"),  # branch 2
    msg("a3", "u3", "assistant", "bash({})", tool="bash"),  # tool-only
    msg("t3", "a3", "toolResult", "ok", tool="bash"),
    msg("a4", "t3", "assistant", "done"),
    ("l1", "a4", "label", "", "", "", ""),
    ("c1", "a1", "compaction", "", "", "summary", ""),
]


def ids(rows, kind="node"):
    return [r.node.id for r in rows if r.kind == kind]


def test_mainline_follows_the_view_leaf_and_side_branches_indent():
    index = TreeIndex(rows_for(SPEC))
    layout = Layout(index, view_leaf="a4", session_leaf="a4")
    rows = layout.rows()
    drawn = ids(rows)
    # u3 (leads to the leaf) continues at depth 0; u2 and c1 are indented side branches
    depth = {r.node.id: r.depth for r in rows if r.kind == "node"}
    assert depth["u1"] == depth["a1"] == depth["u3"] == depth["a4"] == 0
    assert depth["u2"] == depth["c1"] == 1 and depth["a2"] == 1
    assert drawn.index("u2") < drawn.index("u3")  # side branches right under the fork
    on_path = {r.node.id for r in rows if r.kind == "node" and r.on_path}
    assert on_path == {"u1", "a1", "u3", "t3", "a4"}
    # default filter: label entry and tool-only assistant hidden
    assert "l1" not in drawn and "a3" not in drawn
    # groups are balanced
    assert sum(r.kind == "gopen" for r in rows) == sum(r.kind == "gclose" for r in rows)


def test_filter_modes():
    index = TreeIndex(rows_for(SPEC))

    def drawn(mode):
        return set(ids(Layout(index, view_leaf="a4", session_leaf="a4", mode=mode).rows()))

    assert {"l1", "a3"} <= drawn("all")
    no_tools = drawn("no-tools")
    assert "t3" not in no_tools and "a4" in no_tools
    user_only = drawn("user-only")
    assert {"u2", "u3"} <= user_only and "a2" not in user_only
    assert "a1" in user_only  # a branch point stays (dimmed) to keep the shape
    labeled = Layout(
        TreeIndex(rows_for([*SPEC[:-1], msg("x1", "a1", "user", label="keep")])),
        view_leaf="a4",
        session_leaf="a4",
        mode="labeled-only",
    ).rows()
    assert "x1" in ids(labeled)


def test_search_marks_matches_and_opens_their_branch(monkeypatch):
    monkeypatch.setattr(tree_layout, "SMALL_SESSION", 0)  # behave like a big session
    index = TreeIndex(rows_for(SPEC))
    rows = Layout(index, view_leaf="a4", session_leaf="a4", query="A2").rows()
    assert [r.node.id for r in rows if r.kind == "node" and r.is_match] == ["a2"]
    assert "a2" in ids(rows)  # its side branch is expanded
    rows = Layout(index, view_leaf="a4", session_leaf="a4").rows()
    assert "a2" not in ids(rows) and any(r.kind == "more" and r.node.id == "u2" for r in rows)


def test_long_runs_fold_and_expand_lazily(monkeypatch):
    spec = [msg("r0", None, "user")]
    for i in range(1, 60):
        spec.append(msg(f"r{i}", f"r{i - 1}", "assistant" if i % 2 else "user"))
    index = TreeIndex(rows_for(spec))
    layout = Layout(index, view_leaf="r59", session_leaf="r59")
    rows = layout.rows()
    folds = [r for r in rows if r.kind == "fold"]
    assert len(folds) == 1 and folds[0].count == 60 - 1 - tree_layout.TAIL_KEEP
    assert len(ids(rows)) == 1 + tree_layout.TAIL_KEEP
    expanded = layout.run_rows(folds[0].node.id, folds[0].last.id, 0)
    assert [r.node.id for r in expanded] == [f"r{i}" for i in range(1, 60 - tree_layout.TAIL_KEEP)]
    # asked to keep it open (live refresh): not folded again
    again = Layout(index, view_leaf="r59", session_leaf="r59", expand=[folds[0].node.id]).rows()
    assert not [r for r in again if r.kind == "fold"]


def test_deep_chain_and_many_branches_do_not_recurse():
    spec = [msg("n0", None, "user")]
    for i in range(1, 20000):
        spec.append(msg(f"n{i}", f"n{i - 1}", "user"))
    for b in range(300):  # nested side branches: each hangs off the previous one
        parent = "n100" if b == 0 else f"s{b - 1}"
        spec.append(msg(f"s{b}", parent, "user"))
        spec.append(msg(f"s{b}x", f"s{b}", "assistant"))
    layout = Layout(
        TreeIndex(rows_for(spec)), view_leaf="n19999", session_leaf="n19999", target="s299x"
    )
    rows = layout.rows()
    assert "s299x" in ids(rows)
    # the way to the target continues each fork at the same depth: no drift to the right
    assert max(r.depth for r in rows) <= 2


def test_cycle_in_parents_does_not_hang():
    rows = [
        (1, "a", 2, "message", "user", "", "a", "", 1, 0),
        (2, "b", 1, "message", "user", "", "b", "", 1, 1),
    ]
    index = TreeIndex(rows)
    assert index.path_pks(index.by_id["a"]) in ([2, 1], [1, 2])


def test_format_tokens():
    assert format_tokens(999) == "999"
    assert format_tokens(1234) == "1.2k"
    assert format_tokens(250000) == "250k"


# Wide trees: a branch point with huge fan-out draws a bounded
# number of its children and lists the rest a page at a time; every drawing is capped.
def wide(children: int, grandchildren_of=()):
    """A root `r` with `children` user-message children c0..; some with one child."""
    rows = [(1, "r", None, "message", "user", "", "root", "", 1, 0)]
    pk = 2
    for i in range(children):
        rows.append((pk, f"c{i}", 1, "message", "assistant", "", f"child {i}", "", 1, pk))
        pk += 1
    for i in grandchildren_of:
        rows.append((pk, f"g{i}", i + 2, "message", "user", "", f"grandchild {i}", "", 1, pk))
        pk += 1
    return TreeIndex(rows)


def drawn(rows, kind="node"):
    return [r.node.id for r in rows if r.kind == kind]


def balanced(rows) -> bool:
    return sum(r.kind == "gopen" for r in rows) == sum(r.kind == "gclose" for r in rows)


def test_a_root_with_100000_children_draws_a_bounded_number_of_rows_quickly():
    """Bounded by the rows drawn (bench/core_bench.py tree prints how long it takes)."""
    index = wide(100_000)
    rows = Layout(index, view_leaf="c0", session_leaf="c0").rows()
    assert len(rows) < 3 * FANOUT_SHOWN
    [more] = [r for r in rows if r.kind == "children"]
    shown = set(drawn(rows)) - {"r"}
    assert len(shown) == FANOUT_SHOWN and more.count == 100_000 - FANOUT_SHOWN
    assert more.node.id == "r" and more.start == 0 and balanced(rows)


def test_the_children_row_pages_through_every_other_child_once():
    index = wide(1_000)
    layout = Layout(index, view_leaf="c500", session_leaf="c500")
    rows = layout.rows()
    seen = set(drawn(rows)) - {"r"}
    assert "c500" in seen  # the branch to the view leaf is drawn in place
    more = next(r for r in rows if r.kind == "children")
    pages = 0
    while more is not None:
        page = layout.children_rows("r", more.depth, more.start)
        nodes = drawn(page)
        assert len(nodes) <= CHILDREN_PAGE and balanced(page)
        assert not seen & set(nodes)
        seen |= set(nodes)
        more = next((r for r in page if r.kind == "children"), None)
        pages += 1
    assert seen == {f"c{i}" for i in range(1_000)}
    assert pages == -(-(1_000 - FANOUT_SHOWN) // CHILDREN_PAGE)


def test_listed_children_stay_collapsed_with_their_subtree_size():
    index = wide(200, grandchildren_of=[150])
    layout = Layout(index, view_leaf="c0", session_leaf="c0")
    more = next(r for r in layout.rows() if r.kind == "children")
    page = layout.children_rows("r", more.depth, 100)
    collapsed = [r for r in page if r.kind == "more"]
    assert [r.node.id for r in collapsed] == ["c150"] and collapsed[0].count == 1
    assert "g150" not in drawn(page)


def test_a_target_and_search_matches_among_many_children_are_drawn_in_place():
    index = wide(5_000)
    layout = Layout(index, view_leaf="c0", session_leaf="c0", target="c4000", query="child 4321")
    shown = set(drawn(layout.rows()))
    assert {"c0", "c4000", "c4321"} <= shown


def test_a_drawing_stops_at_max_rows_with_a_cut_row_and_balanced_groups():
    # 400 branch points of 40 children each: under FANOUT_SHOWN each, 16,000 rows in all.
    rows = [(1, "r", None, "message", "user", "", "root", "", 1, 0)]
    pk, parent = 2, 1
    for b in range(400):
        spine = pk
        rows.append((spine, f"s{b}", parent, "message", "user", "", f"spine {b}", "", 1, pk))
        pk += 1
        for k in range(40):
            rows.append((pk, f"b{b}-{k}", spine, "message", "user", "", "x", "", 1, pk))
            pk += 1
        parent = spine
    layout = Layout(TreeIndex(rows), mode="all", view_leaf="s399")
    out = layout.rows()
    assert [r.kind for r in out].count("cut") == 1
    assert len(out) <= MAX_ROWS + 50 and balanced(out)
    assert Layout(TreeIndex(rows), mode="all", view_leaf="s399", max_rows=100).rows()[-1].kind in (
        "cut",
        "gclose",
    )


def test_small_fan_out_is_drawn_as_before():
    index = wide(FANOUT_SHOWN)
    rows = Layout(index, view_leaf="c0", session_leaf="c0").rows()
    assert not [r for r in rows if r.kind == "children"]
    assert set(drawn(rows)) == {"r"} | {f"c{i}" for i in range(FANOUT_SHOWN)}


def test_tool_rows_carry_the_chat_headline_of_their_call():
    """A tool-only assistant row reads as its calls; each tool result as the call it
    answers (the k-th result after the message answers its k-th call)."""
    spec = [
        msg("u1", None, "user"),
        msg(
            "a1",
            "u1",
            "assistant",
            'bash({"command": "ls -la"}) read({"path": "src/app.py"})',
            tool="bash",
        ),
        msg("t1", "a1", "toolResult", "total 8", tool="bash"),
        msg("t2", "t1", "toolResult", "print(1)", tool="read"),
        msg("a2", "t2", "assistant", 'Now the tests. bash({"command": "make test"})', tool="bash"),
        msg("t3", "a2", "toolResult", "ok", tool="bash"),
    ]
    index = TreeIndex(rows_for(spec))
    rows = Layout(index, view_leaf="t3", mode="all").rows()
    heads = {r.node.id: r.headline for r in rows if r.kind == "node"}
    assert heads == {
        "u1": "",
        "a1": "$ ls -la · read src/app.py",
        "t1": "$ ls -la",
        "t2": "read src/app.py",
        "a2": "$ make test",  # with words before its call: the row shows both
        "t3": "$ make test",
    }


def test_folds_say_what_they_hide_and_a_folded_branch_counts_its_entries(monkeypatch):
    monkeypatch.setattr(tree_layout, "SMALL_SESSION", 0)
    spec = [msg("r", None, "user")]
    parent = "r"
    for i in range(40):  # a long mainline run (longer than the tail kept in view)
        eid = f"m{i}"
        spec.append(msg(eid, parent, "assistant" if i % 3 else "user"))
        parent = eid
    spec.append(msg("leaf", parent, "assistant", "end"))
    spec.append(msg("side", "r", "user", "a side question"))
    spec.append(msg("side2", "side", "assistant", "an answer"))
    index = TreeIndex(rows_for(spec))
    rows = Layout(index, view_leaf="leaf").rows()
    folds = [r for r in rows if r.kind == "fold"]
    assert folds
    for fold in folds:  # e.g. "12 assistant messages · 6 user messages"
        assert fold.summary
        counted = sum(int(part.split()[0]) for part in fold.summary.split(" · "))
        assert counted == fold.count
    assert "assistant messages" in folds[0].summary and "user messages" in folds[0].summary
    # The side branch's group and its head row know how many entries folding hides.
    (group,) = [r for r in rows if r.kind == "gopen" and r.group == "branch"]
    assert group.node.id == "side" and group.count == 1
    (head,) = [r for r in rows if r.kind == "node" and r.node.id == "side"]
    assert head.count == 1


def test_fold_summary_counts_kinds_most_frequent_first():
    index = TreeIndex(
        rows_for(
            [
                msg("u", None, "user"),
                msg("a", "u", "assistant"),
                msg("t1", "a", "toolResult", tool="bash"),
                msg("t2", "t1", "toolResult", tool="bash"),
            ]
        )
    )
    nodes = [index.by_id[i] for i in ("u", "a", "t1", "t2")]
    assert (
        tree_layout.fold_summary(nodes) == "2 tool results · 1 user message · 1 assistant message"
    )


def test_an_archived_branch_is_folded_and_drawn_last_until_it_leads_to_the_view():
    index = TreeIndex(rows_for(SPEC))
    # Small sessions are drawn fully expanded; an archived branch is not.
    shown = Layout(index, view_leaf="a4", session_leaf="a4").rows()
    assert "a2" in ids(shown)
    folded = Layout(index, view_leaf="a4", session_leaf="a4", archived=["u2"]).rows()
    assert "a2" not in ids(folded)  # below the archived head: folded
    head = next(r for r in folded if r.kind == "node" and r.node.id == "u2")
    assert head.archived and not any(r.archived for r in folded if r.node.id != "u2")
    assert [r.node.id for r in folded if r.kind == "more"] == ["u2"]
    # Opened (its "more" row), or leading to the shown leaf, it is drawn again.
    opened = Layout(index, view_leaf="a4", session_leaf="a4", archived=["u2"], expand=["u2"])
    assert "a2" in ids(opened.rows())
    viewing = Layout(index, view_leaf="a2", session_leaf="a4", archived=["u2"]).rows()
    assert "a2" in ids(viewing)
    # With no rank to choose by, the continuation is a branch that is not archived.
    plain = Layout(index, archived=["u2"])
    assert plain._ordered_children(index.by_id["a1"])[0].id != "u2"


class CountingNodes(dict):
    """The index's node table, counting every lookup the layout makes in it."""

    lookups = 0

    def get(self, key, default=None):
        self.lookups += 1
        return super().get(key, default)

    def __getitem__(self, key):
        self.lookups += 1
        return super().__getitem__(key)


def test_5000_drawn_tool_rows_cost_a_bounded_number_of_steps_per_row(monkeypatch):
    """Issue 34: the tree stays fast at 5,000 drawn rows. A chain of 2,500 tool calls and
    their results, every row a search match (so none is folded), each row with its call's
    headline: counted in steps, not seconds (bench/core_bench.py tree times the same
    drawing). Marking the matches' ancestors was once quadratic (about 12.5 million steps
    here: 5,000 matches, each walked up a chain of 2,500)."""
    rows = [(1, "r", None, "message", "user", "", "start", "", 1, 0)]
    for i in range(2500):
        call, result = 2 + 2 * i, 3 + 2 * i
        preview = f'bash({{"command": "make test {i}"}})'
        rows.append((call, f"a{i}", call - 1, "message", "assistant", "bash", preview, "", 5, call))
        rows.append((result, f"t{i}", call, "message", "toolResult", "bash", "ok", "", 5, result))
    index = TreeIndex(rows)
    index.nodes = CountingNodes(index.nodes)
    parsed: list[str] = []
    parse = tree_layout.headlines_from_preview
    monkeypatch.setattr(
        tree_layout, "headlines_from_preview", lambda text: parsed.append(text) or parse(text)
    )
    out = Layout(index, view_leaf="t2499", mode="all", query="bash").rows()
    nodes = [r for r in out if r.kind == "node"]
    assert len(nodes) == 5001 and not [r for r in out if r.kind in ("cut", "fold")]
    assert sum(r.is_match for r in nodes) == 5000
    assert [r.headline for r in nodes[-2:]] == ["$ make test 2499", "$ make test 2499"]
    # each call's preview is parsed once (twice: its own row, then its result's, cached)
    assert len(parsed) <= 2 * 2500
    assert index.nodes.lookups <= 6 * len(nodes), index.nodes.lookups  # 17,512 (3.5 a row)
