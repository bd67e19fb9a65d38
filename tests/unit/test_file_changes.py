"""Reconstructed file changes of imported sessions: the diffs equal applying the calls."""

import difflib

from sessions_app.core.file_changes import apply_edits, count_lines, edits_of, reconstruct


def assistant(entry_id, parent, *calls):
    content = [
        {"type": "toolCall", "id": f"{entry_id}-{i}", "name": name, "arguments": args}
        for i, (name, args) in enumerate(calls)
    ]
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "message": {"role": "assistant", "content": content},
    }


def result(entry_id, parent, call_id, is_error=False):
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "message": {"role": "toolResult", "toolCallId": call_id, "isError": is_error},
    }


def apply_patch(before: str, diff: str) -> str:
    """Apply a unified diff the plain way (a reference independent of the module)."""
    src = before.splitlines(keepends=True)
    out, pos = [], 0
    lines = diff.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("@@"):
            start = int(line.split()[1].split(",")[0][1:])
            start = max(start - 1, 0) if "," in line.split()[1] or start else 0
            out.extend(src[pos:start])
            pos = start
            i += 1
            while i < len(lines) and not lines[i].startswith("@@"):
                body = lines[i]
                if body.startswith("\\"):
                    out[-1] = out[-1].rstrip("\n")
                elif body.startswith(" "):
                    out.append(src[pos])
                    pos += 1
                elif body.startswith("-"):
                    pos += 1
                elif body.startswith("+"):
                    out.append(body[1:])
                i += 1
            continue
        i += 1
    out.extend(src[pos:])
    return "".join(out)


BEFORE = "".join(f"line {n}\n" for n in range(1, 40))


def test_both_edit_shapes_are_read():
    assert edits_of({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]}) == [("x", "y")]
    assert edits_of({"path": "a", "oldText": "x", "newText": "y"}) == [("x", "y")]
    assert edits_of({"path": "a"}) == []


def test_write_then_edits_give_diffs_that_equal_applying_the_calls():
    edit1 = {"path": "/w/src/a.py", "edits": [{"oldText": "line 3\n", "newText": "three\n"}]}
    edit2 = {"path": "src/a.py", "oldText": "line 30\nline 31\n", "newText": "x\n"}
    payloads = [
        assistant("a1", None, ("write", {"path": "src/a.py", "content": BEFORE})),
        result("r1", "a1", "a1-0"),
        assistant("a2", "r1", ("edit", edit1)),
        result("r2", "a2", "a2-0"),
        assistant("a3", "r2", ("edit", edit2)),
        result("r3", "a3", "a3-0"),
    ]
    changes = reconstruct(payloads, cwd="/w")
    assert set(changes) == {"a1", "a2", "a3"}
    after2 = apply_edits(BEFORE, edits_of(edit1))
    after3 = apply_edits(after2, edits_of(edit2))
    (c2,) = changes["a2"]
    (c3,) = changes["a3"]
    assert c2.path == c3.path == "src/a.py"
    assert c2.reconstructed and not c2.partial
    assert apply_patch(BEFORE, c2.diff) == after2
    assert apply_patch(after2, c3.diff) == after3
    assert (c3.added, c3.removed) == (1, 2)
    expected = "".join(
        difflib.unified_diff(
            after2.splitlines(True), after3.splitlines(True), "a/src/a.py", "b/src/a.py"
        )
    )
    assert c3.diff == expected


def test_an_edit_of_an_unknown_file_shows_its_replacements_as_partial_hunks():
    payloads = [
        assistant(
            "a1",
            None,
            (
                "edit",
                {
                    "path": "b.txt",
                    "edits": [
                        {"oldText": "old one\nold two", "newText": "new"},
                        {"oldText": "z", "newText": "zz"},
                    ],
                },
            ),
        ),  # fmt: skip
        result("r1", "a1", "a1-0"),
    ]
    (change,) = reconstruct(payloads)["a1"]
    assert change.partial and change.reconstructed
    assert (change.added, change.removed) == (2, 3)
    body = [
        line
        for line in change.diff.splitlines()
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert body == ["-old one", "-old two", "+new", "-z", "+zz"]


def test_failed_calls_change_nothing_and_several_calls_on_one_file_merge():
    payloads = [
        assistant("a1", None, ("write", {"path": "c.txt", "content": "a\nb\n"})),
        result("r1", "a1", "a1-0"),
        assistant(
            "a2",
            "r1",
            ("edit", {"path": "c.txt", "oldText": "a\n", "newText": "A\n"}),
            ("edit", {"path": "c.txt", "oldText": "nope", "newText": "x"}),
            ("edit", {"path": "c.txt", "oldText": "b\n", "newText": "B\n"}),
        ),
        result("r2", "a2", "a2-0"),
        result("r3", "r2", "a2-1", is_error=True),
        result("r4", "r3", "a2-2"),
    ]
    (change,) = reconstruct(payloads)["a2"]
    assert apply_patch("a\nb\n", change.diff) == "A\nB\n"
    assert count_lines(change.diff) == (2, 2)


def test_a_first_write_is_a_partial_written_file():
    payloads = [assistant("a1", None, ("write", {"path": "n.txt", "content": "x\ny"}))]
    (change,) = reconstruct(payloads)["a1"]
    assert change.status == "written" and change.partial
    assert apply_patch("", change.diff) == "x\ny"


def test_each_branch_of_a_tree_replays_its_own_path():
    from sessions_app.core.file_changes import reconstruct_tree

    write = assistant("w", None, ("write", {"path": "f", "content": "a\nb\n"}))
    left = assistant("l", "w", ("edit", {"path": "f", "oldText": "a\n", "newText": "L\n"}))
    right = assistant("r", "w", ("edit", {"path": "f", "oldText": "b\n", "newText": "R\n"}))
    # On the right branch the left edit never happened: its diff starts from the write.
    under = assistant("u", "r", ("edit", {"path": "f", "oldText": "a\n", "newText": "U\n"}))
    found = reconstruct_tree(
        [("w", None, write), ("l", "w", left), ("r", "w", right), ("u", "r", under)], {}
    )
    assert apply_patch("a\nb\n", found["l"][0].diff) == "L\nb\n"
    assert apply_patch("a\nb\n", found["r"][0].diff) == "a\nR\n"
    assert apply_patch("a\nR\n", found["u"][0].diff) == "U\nR\n"
    assert not any(c.partial for c in found["u"])
