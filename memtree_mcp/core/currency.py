"""What is current: which memories a later one updates, for the tools that state things.

Whether a memory is superseded, and by which, is always asked of
:class:`~memtree_mcp.core.updates.Updates` (stored links first, then the rule); this module only
chooses where it looks and what follows from the answer:

- :func:`newest_updates` looks, for each memory, among given candidates, its semantic siblings
  and the memories closest to it in meaning anywhere in the store (an update is not always filed
  beside what it updates), so a whole-memory summary finds the update of a line it quotes;
- :func:`restate` keeps ``memory.semantic.stale`` (older id -> newer id) after a change and
  recomputes the semantic branches above each memory whose state changed: a semantic branch's
  text and label are computed without its stale members (``refresh_branch``), so a label never
  keeps "8080" once "8080" was replaced. The temporal tree keeps them: a period tells what
  happened then.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np

from memtree_mcp.core.extractive import PART_SEPARATOR, gist
from memtree_mcp.core.model import Leaf
from memtree_mcp.core.recall import DEFAULT_WEIGHTS
from memtree_mcp.core.updates import Updates

if TYPE_CHECKING:
    from memtree_mcp.core.hierarchy import Hierarchy
    from memtree_mcp.core.memory import Memory

# Recall's numbers: the siblings looked at for an update, and how many of them are judged.
SIBLINGS = DEFAULT_WEIGHTS.siblings_checked
JUDGED = DEFAULT_WEIGHTS.updates_judged
# How many of the memories closest in meaning to a memory are looked at for its update.
NEIGHBOURS = 8
# How many memories under a branch are looked at for updates of what its extractive text quotes.
CURRENT_SCAN = 256
# How much of an update a mark quotes.
NOTE_CHARS = 90
# What marks, in a period's text, a memory that a later one updates.
CHANGED_LATER = "(changed later)"
# Memories judged in one batch (one matrix product of the pool by the batch).
BATCH = 256


def neighbours(memory: Memory, leaves: Sequence[Leaf], count: int = NEIGHBOURS) -> list[list[str]]:
    """For each of ``leaves``, the ids of the ``count`` memories closest to it in meaning (itself
    left out), closest first: one matrix product over the store."""
    index = memory.leaf_index
    if not leaves or len(index) == 0:
        return [[] for _ in leaves]
    vectors = index.vectors()
    take = min(count + 1, len(vectors))
    out: list[list[str]] = []
    for start in range(0, len(leaves), BATCH):
        part = leaves[start : start + BATCH]
        scores = vectors @ np.stack([leaf.vector for leaf in part]).T
        for j, leaf in enumerate(part):
            column = scores[:, j]
            top = np.argpartition(-column, take - 1)[:take] if take < len(column) else np.arange(len(column))
            ranked = [index.id_at(int(row)) for row in top[np.argsort(-column[top], kind="stable")]]
            out.append([node_id for node_id in ranked if node_id != leaf.id][:count])
    return out


def newest_updates(
    memory: Memory, olders: Iterable[Leaf], candidates: Collection[str] = (), *, near: bool = True
) -> dict[str, Leaf]:
    """Each of ``olders`` that a later memory updates -> the latest memory that updates it.

    Looked for among ``candidates``, each memory's semantic siblings and (with ``near``) the
    memories closest to it in meaning; each memory is judged with its own neighbours, so the
    neighbours of another never crowd its update out of the few judged.
    """
    unique = list({leaf.id: leaf for leaf in olders}.values())
    found: dict[str, Leaf] = {}
    if not unique:
        return found
    if not near:
        for start in range(0, len(unique), BATCH):
            part = unique[start : start + BATCH]
            updates = Updates(memory, candidates, SIBLINGS, JUDGED)
            found.update(
                (o.id, n) for o, n in zip(part, updates.newest_of(part), strict=True) if n is not None
            )
        return found
    for leaf, close in zip(unique, neighbours(memory, unique), strict=True):
        newest = Updates(memory, [*candidates, *close], SIBLINGS, JUDGED).newest(leaf)
        if newest is not None:
            found[leaf.id] = newest
    return found


def restate(memory: Memory, changed: Collection[str]) -> set[str]:
    """Bring ``memory.semantic.stale`` up to date after the nodes ``changed`` were written (an
    insertion, or a forget: the nodes it repaired), and recompute the semantic branches above every
    memory whose state changed; returns the ids of the branches recomputed (to be written too).

    Judged again: the memories under the changed semantic branches, and for each memory that
    changed, the memories closest to it in meaning (those a new memory may update) and those its
    ``supersedes`` links name. A memory whose update was forgotten is judged again too (it may be
    current once more).
    """
    stale = memory.semantic.stale
    semantic = memory.semantic.branches
    olders: dict[str, Leaf] = {}
    for node_id in changed:
        branch = semantic.get(node_id)
        if branch is not None:
            olders.update((c, memory.leaves[c]) for c in branch.children if c in memory.leaves)
    arrived = [memory.leaves[n] for n in changed if n in memory.leaves]
    # A rebuild writes every node: every memory is judged among its siblings already.
    for close in neighbours(memory, arrived) if len(arrived) <= BATCH else []:
        olders.update((n, memory.leaves[n]) for n in close)
    for leaf in arrived:  # what it says it updates, however far in meaning
        olders.update((o, memory.leaves[o]) for o in leaf.supersedes if o in memory.leaves)
    for older, newer in list(stale.items()):
        if older not in memory.leaves:
            del stale[older]
        elif newer not in memory.leaves:
            olders[older] = memory.leaves[older]
    if not olders:
        return set()
    verdicts = newest_updates(memory, olders.values(), [leaf.id for leaf in arrived], near=False)
    moved: list[str] = []
    for older in olders:
        update = verdicts.get(older)
        now = update.id if update is not None else None
        if stale.get(older) == now:
            continue
        if now is None:
            del stale[older]
        else:
            stale[older] = now
        moved.append(older)
    return memory.semantic.refresh_above(moved) if moved else set()


def stale_note(update: Leaf) -> str:
    """What a memory that ``update`` updates is marked with where it is shown: which memory updates
    it, when, and what it says now."""
    day = datetime.fromtimestamp(update.timestamp, tz=UTC).strftime("%Y-%m-%d")
    return f"superseded by {update.id} ({day}): “{gist(update.text, NOTE_CHARS)}”"


def _parts(memory: Memory, node_id: str) -> list[str] | None:
    """The gists an extractive summary joins; None for a memory or an LLM summary."""
    branch = memory.branch(node_id)
    if branch is None or branch.summary or not branch.text:
        return None
    return branch.text.split(PART_SEPARATOR)


def quoted_leaves(memory: Memory, tree: Hierarchy, node_id: str) -> list[Leaf]:
    """The memories below ``node_id`` whose gists its extractive text quotes (a parent quotes its
    children's first sentences); the first ``CURRENT_SCAN`` memories below it, breadth first."""
    parts = _parts(memory, node_id)
    if parts is None:
        return []
    wanted = set(parts)
    return [leaf for leaf in _leaves_below(tree, node_id, CURRENT_SCAN) if gist(leaf.text) in wanted]


def current_text(
    memory: Memory, node_id: str, quoted: Sequence[Leaf], newest: Mapping[str, Leaf]
) -> str | None:
    """An extractive summary's text with the gist of each memory a later one updates replaced by
    the update's gist (or left out when the text quotes the update already); None for a memory or
    an LLM summary (its text is shown as it is)."""
    parts = _parts(memory, node_id)
    if parts is None:
        return None
    for leaf in quoted:
        update = newest.get(leaf.id)
        if update is None or gist(leaf.text) not in parts:
            continue
        at = parts.index(gist(leaf.text))
        if gist(update.text) in parts:
            del parts[at]
        else:
            parts[at] = gist(update.text)
    return PART_SEPARATOR.join(parts)


def period_text(
    memory: Memory, node_id: str, quoted: Sequence[Leaf], newest: Mapping[str, Leaf]
) -> str | None:
    """A period's extractive text as it was, each gist of a memory a later one updates marked
    "(changed later)": a period tells what happened in it, never what replaced it since."""
    parts = _parts(memory, node_id)
    if parts is None:
        return None
    for leaf in quoted:
        piece = gist(leaf.text)
        if leaf.id in newest and piece in parts:
            parts[parts.index(piece)] = f"{piece} {CHANGED_LATER}"
    return PART_SEPARATOR.join(parts)


def first_quoted(tree: Hierarchy, node_id: str) -> str | None:
    """The memory whose gist opens ``node_id``'s text (what a preview of the branch shows), found
    down the children whose texts open with it; None for a memory or when none does."""
    branch = tree.branches.get(node_id)
    opening = gist(branch.text) if branch is not None else None
    while branch is not None and opening:
        child = next((c for c in branch.children if gist(tree.text_of(c)) == opening), None)
        if child is None or child in tree.leaves:
            return child
        branch = tree.branches.get(child)
    return None


def _leaves_below(tree: Hierarchy, node_id: str, limit: int) -> list[Leaf]:
    """Up to ``limit`` memories under ``node_id``, breadth first."""
    found: list[Leaf] = []
    queue = deque([node_id])
    while queue and len(found) < limit:
        current = queue.popleft()
        leaf = tree.leaves.get(current)
        if leaf is not None:
            found.append(leaf)
        elif current in tree.branches:
            queue.extend(tree.branches[current].children)
    return found
