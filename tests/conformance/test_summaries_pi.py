"""Our summary prompts have pi 0.80.2's format (read from the pinned package at test
time): the same headings in the same order for a compaction (six sections), its update
(with as many rules, and the earlier summary in <previous-summary>), the turn prefix
and a branch summary (five sections); the words are ours."""

from __future__ import annotations

import pytest

from sessions_app.core import summaries
from tests.support.pi_wording import headings, pi_summary_prompts

PAIRS = [
    ("compaction", summaries.COMPACTION_SUMMARY_PROMPT),
    ("update", summaries.COMPACTION_UPDATE_PROMPT),
    ("turn_prefix", summaries.TURN_PREFIX_PROMPT),
    ("branch", summaries.BRANCH_SUMMARY_PROMPT),
]


@pytest.mark.parametrize(("which", "ours"), PAIRS, ids=[p[0] for p in PAIRS])
def test_headings_and_order_are_pis(which, ours):
    pi = pi_summary_prompts()[which]
    assert headings(ours) == headings(pi)
    assert ours != pi


def test_section_counts_update_rules_and_previous_summary():
    pi = pi_summary_prompts()
    top = [h for h in headings(pi["compaction"]) if h.startswith("## ")]
    assert len(top) == 6
    assert len([h for h in headings(pi["branch"]) if h.startswith("## ")]) == 5
    assert "<previous-summary>" in pi["update"]
    assert "<previous-summary>" in summaries.COMPACTION_UPDATE_PROMPT

    def rules(text):
        block = text.split("\n\n")[1]
        return [line for line in block.split("\n") if line.startswith("- ")]

    assert len(rules(summaries.COMPACTION_UPDATE_PROMPT)) == len(rules(pi["update"])) == 6
    assert summaries.SUMMARIZATION_SYSTEM_PROMPT != pi["system"]
