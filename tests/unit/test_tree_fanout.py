"""context/tree_layout.py on wide trees: a branch point with huge fan-out draws a bounded
number of its children and lists the rest a page at a time; every drawing is capped."""

import time

from sessions_app.core.tree_layout import (
    CHILDREN_PAGE,
    FANOUT_SHOWN,
    MAX_ROWS,
    Layout,
    TreeIndex,
)


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
    index = wide(100_000)
    started = time.perf_counter()
    rows = Layout(index, view_leaf="c0", session_leaf="c0").rows()
    elapsed = time.perf_counter() - started
    assert len(rows) < 3 * FANOUT_SHOWN and elapsed < 2
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
