"""core/context_chart.py: the context chart's points, compactions, model changes and branch
summaries along a path (pure, no database)."""

from tests.support.usage_data import assistant, usage


def test_context_timeline_turns_estimates_and_markers():
    from sessions_app.core.context_chart import context_timeline
    from sessions_app.core.messages import build_session_context
    from sessions_app.core.tokens import estimate_tokens

    def user(eid, text):
        return {"type": "message", "id": eid, "message": {"role": "user", "content": text}}

    path = [
        user("u1", "x" * 400),  # 100 tokens
        assistant("a1", "p", "m", usage(1000, 100, 0, 0, total=1100)),
        user("u2", "y" * 80),  # 20 tokens
        assistant("a2", "p", "m", usage(5, 5), stopReason="error"),  # estimated
        {
            "type": "compaction",
            "id": "c1",
            "summary": "s" * 40,
            "firstKeptEntryId": "u2",
            "tokensBefore": 1234,
        },
        {"type": "model_change", "id": "mc", "provider": "q", "modelId": "n"},
        {"type": "branch_summary", "id": "b1", "fromId": "u1", "summary": "b" * 8},
        assistant("a3", "q", "n", None),
    ]
    for parent, child in zip(path, path[1:], strict=False):
        child["parentId"] = parent["id"]
    timeline = context_timeline(path)
    points = timeline["points"]
    assert [(p["id"], p["index"], p["estimated"]) for p in points] == [
        ("a1", 1, False),
        ("a2", 3, True),
        ("a3", 7, True),
    ]
    assert points[0]["tokens"] == 1100
    assert points[1]["tokens"] == 1100 + 20 + estimate_tokens(path[3]["message"])
    (compaction,) = timeline["compactions"]
    reference = build_session_context(path[:5])["messages"]
    assert compaction == {
        "id": "c1",
        "index": 4,
        "before": 1234,
        "after": sum(estimate_tokens(m) for m in reference),
    }
    assert timeline["modelChanges"] == [{"id": "mc", "index": 5, "model": "q/n", "from": "p/m"}]
    assert timeline["branchSummaries"][0]["id"] == "b1"
    assert points[2]["model"] == "q/n" and points[2]["tokens"] > compaction["after"]


def test_context_now_from_any_tail_matches_the_whole_timeline():
    """The gauge's figures from the end of a path equal the whole timeline's, for every
    tail length; a tail that does not reach back far enough says so (None)."""
    from sessions_app.core.context_chart import context_now, context_timeline

    def user(eid, text):
        return {"type": "message", "id": eid, "message": {"role": "user", "content": text}}

    shapes = {
        "usage near the end": [
            user("u1", "x" * 400),
            assistant("a1", "p", "m", usage(1000, 100, 0, 0, total=1100)),
            user("u2", "y" * 80),
            assistant("a2", "p", "m", usage(5, 5), stopReason="error"),
            user("u3", "z" * 12),
        ],
        "a compaction that keeps earlier entries": [
            user("u1", "x" * 400),
            assistant("a1", "p", "m", usage(700, 100, 0, 0, total=800)),
            user("u2", "y" * 80),
            assistant("a2", "p", "m", None),
            {
                "type": "compaction",
                "id": "c1",
                "summary": "s" * 40,
                "firstKeptEntryId": "u2",
                "tokensBefore": 1234,
            },
            {"type": "model_change", "id": "mc", "provider": "q", "modelId": "n"},
            user("u3", "w" * 20),
        ],
        "no usage anywhere": [
            user("u1", "x" * 40),
            assistant("a1", "p", "m", None),
            user("u2", "y" * 8),
        ],
        "empty": [],
    }
    for name, path in shapes.items():
        for parent, child in zip(path, path[1:], strict=False):
            child["parentId"] = parent["id"]
        whole = context_timeline(path)
        expected = {"current": whole["current"], "model": whole["model"]}
        assert context_now(path, complete=True) == expected, name
        answered = 0
        for cut in range(1, len(path)):
            now = context_now(path[cut:], complete=False)
            if now is not None:
                answered += 1
                assert now == expected, (name, cut)
        if name == "usage near the end":
            assert context_now(path[1:], complete=False) == expected  # from a1 on
        if name == "no usage anywhere":
            assert answered == 0  # every figure depends on the whole path
