"""What a share link shows of a session's tree (pure: from (id, parentId) pairs)."""

from collections import defaultdict
from collections.abc import Iterable


def visible_ids(
    pairs: Iterable[tuple[str, str | None]], leaf_pi_id: str | None, *, subtree: bool = False
) -> set[str]:
    """The ids a link to `leaf_pi_id` shows, from (id, parentId) pairs: the path root → leaf,
    and with `subtree` every entry below the leaf too. A link made on an empty session (no
    leaf) shows nothing, or with `subtree` everything (all of it grew below "before the
    first entry")."""
    parent_of = dict(pairs)
    if leaf_pi_id is None:
        return set(parent_of) if subtree else set()
    if leaf_pi_id not in parent_of:
        return set()
    seen: set[str] = set()
    node: str | None = leaf_pi_id
    while node is not None and node in parent_of and node not in seen:
        seen.add(node)
        node = parent_of[node]
    if not subtree:
        return seen
    children = defaultdict(list)
    for pi_id, parent in parent_of.items():
        children[parent].append(pi_id)
    stack = list(children.get(leaf_pi_id, ()))
    while stack:
        node = stack.pop()
        if node not in seen:  # (a cycle in bad data must not loop forever)
            seen.add(node)
            stack.extend(children.get(node, ()))
    return seen
