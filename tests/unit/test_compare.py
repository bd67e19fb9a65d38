"""Pure compare helpers (sessions_app.core.compare): branch stats, the offline summary."""

from sessions_app.core.compare import branch_stats, compare_branches, offline_difference_summary
from tests.support.context_entries import two_branches


def test_compare_and_stats():
    entries = two_branches()
    entries.append(
        {
            "type": "message",
            "id": "f",
            "parentId": "e",
            "timestamp": "2026-01-01T00:00:05.000Z",
            "message": {
                "role": "bashExecution",
                "command": "make",
                "output": "boom",
                "exitCode": 2,
            },
        }
    )
    result = compare_branches(entries, "c", "f")
    assert result["ancestorId"] == "a"
    assert [e["id"] for e in result["b"]["segment"]] == ["d", "e", "f"]
    assert result["b"]["stats"]["errors"] == [{"id": "f", "kind": "exit 2", "text": "make"}]
    assert result["a"]["stats"]["lastAssistantText"] == "one"
    text = offline_difference_summary(result)
    assert "Branch A" in text and "Last error: exit 2: make" in text
    assert branch_stats([])["entries"] == 0
