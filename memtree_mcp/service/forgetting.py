"""What a forget deletes: the memories it targets, checked before anything is deleted (the
writer's ``forget``), and shown to the user before it happens (``server/confirmations.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memtree_mcp.core.memory import Memory
from memtree_mcp.errors import InvalidInput, NotFound
from memtree_mcp.service.inputs import MAX_FORGET, check_ids, check_node

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


def forget_targets(
    memory: Memory, name: str, ids: Sequence[str], confirm: bool, limit: int | None
) -> list[str]:
    """The memories forgetting ``ids`` deletes: each memory named and, with ``confirm``, every
    memory under each summary named; at most ``limit`` of them, none under a root (see
    :func:`forget_under`). NotFound or InvalidInput before anything is deleted otherwise."""
    targets: dict[str, None] = {}
    for node_id in ids:
        check_node(memory, node_id)
        if node_id in memory.leaves:
            targets[node_id] = None
            continue
        branch = memory.branch(node_id)
        assert branch is not None
        covered = len(leaves_under(memory, node_id))
        if limit is not None and (branch.kind == "root" or covered > limit):
            forget_under(memory, name, node_id, True, limit)  # refused, confirm or not, without a retry
        if not confirm:
            raise InvalidInput(
                f"{node_id} is a summary of {covered} memories, not a memory; nothing was deleted. Make "
                "sure the user wants every memory under it gone, then pass confirm=true with it (from a "
                f"shell: `memtree-mcp forget --all-under {node_id} --yes`)."
            )
        targets.update(dict.fromkeys(forget_under(memory, name, node_id, True, limit)))
    if limit is not None and len(targets) > limit:
        raise InvalidInput(
            f"these ids cover {len(targets)} memories; one call deletes at most {limit}. This is not a "
            "call to repeat or to split into smaller ones: tell the user, who can forget them from a "
            "shell (`memtree-mcp forget --all-under NODE --yes`)."
        )
    return list(targets)


def forget_under(memory: Memory, name: str, node_id: str, confirm: bool, limit: int | None) -> list[str]:
    """The memories forgetting ``node_id`` deletes: itself, or every memory under a summary."""
    check_node(memory, node_id)
    if node_id in memory.leaves:
        return [node_id]
    branch = memory.branch(node_id)
    assert branch is not None
    targets = leaves_under(memory, node_id)
    shell = f"`memtree-mcp forget --all-under {node_id} --namespace {name}`"
    if limit is not None and branch.kind == "root":
        raise InvalidInput(
            f"{node_id} is the root: it holds the whole memory ({len(targets)} memories). An agent "
            f"cannot delete it, and this is not a call to repeat; the user can, from a shell: {shell}."
        )
    if limit is not None and len(targets) > limit:
        raise InvalidInput(
            f"{node_id} covers {len(targets)} memories; one call deletes at most {limit}. This is not a "
            f"call to repeat or to split into smaller ones: tell the user, who can run {shell}."
        )
    if not confirm and len(targets) > 1:
        raise InvalidInput(
            f"{node_id} is a summary of {len(targets)} memories. Make sure the user wants them all gone, "
            "then call again with confirm=true; nothing was deleted."
        )
    return targets


def leaves_under(memory: Memory, node_id: str) -> list[str]:
    """The leaves under branch ``node_id``, in its tree's order."""
    branch = memory.branch(node_id)
    assert branch is not None
    return memory.tree(branch.tree).leaves_under(node_id)
