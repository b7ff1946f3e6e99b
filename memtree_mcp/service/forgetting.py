"""What a forget would delete, shown to the user before it happens (``server/confirmations.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memtree_mcp.errors import NotFound
from memtree_mcp.service.inputs import MAX_FORGET, check_ids
from memtree_mcp.service.writing import forget_targets

if TYPE_CHECKING:
    from memtree_mcp.service.reading import Reader
    from memtree_mcp.service.spaces import Spaces


def forget_preview(
    reader: Reader, spaces: Spaces, name: str, query: str | None, ids: Sequence[str] | None, confirm: bool
) -> list[tuple[str, str]]:
    """(id, text) of each memory of namespace ``name`` that a forget by ``query``, or by the ids
    of summaries with ``confirm``, would delete; empty when there is nothing to ask the user about
    (memories named one by one, or a query that matches nothing). Raises what forget raises."""
    if query is not None:
        return [(hit.id, hit.text) for hit in reader.forget_candidates(name, query)]
    if not ids or not confirm:
        return []
    with spaces.reading(name) as space:
        if space is None:
            raise NotFound(f"namespace '{name}' holds no memories: nothing to forget.")
        memory = space.memory
        if all(node_id in memory.leaves for node_id in ids):
            return []
        targets = forget_targets(memory, name, check_ids(ids, MAX_FORGET), True, MAX_FORGET)
        return [(leaf_id, memory.leaves[leaf_id].text) for leaf_id in targets]
