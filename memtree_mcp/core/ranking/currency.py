"""What is current: which memories a later one updates, for the tools that state things.

A memory is superseded only by a stored link (``Leaf.supersedes``: the agent's, the user's or an
LLM judge's; :meth:`~memtree_mcp.core.trees.links.Links.current_of` follows them); nothing is judged
when it is read. This module turns the links into what the tools state:

- :func:`newest_updates` gives, for each memory, the latest memory its links lead to;
- :func:`restate` keeps ``memory.semantic.stale`` (older id -> newer id) after a change and
  recomputes the semantic branches above each memory whose state changed: a semantic branch's
  text and label are computed without its stale members (``refresh_branch``), so a label never
  keeps "8080" once "8080" was replaced. The temporal tree keeps them: a period tells what
  happened then.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from memtree_mcp.core.trees.calendar import Calendar
from memtree_mcp.core.trees.extractive import PART_SEPARATOR, gist
from memtree_mcp.core.trees.model import Leaf

if TYPE_CHECKING:
    from memtree_mcp.core.memory import Memory
    from memtree_mcp.core.trees.hierarchy import Hierarchy

# How many of the memories closest in meaning to a memory the explorer shows beside it.
NEIGHBOURS = 8
# How many memories under a branch are looked at for updates of what its extractive text quotes.
CURRENT_SCAN = 256
# How much of an update a mark quotes.
NOTE_CHARS = 90
# What marks, in a period's text, a memory that a later one updates.
CHANGED_LATER = "(changed later)"
# Memories compared in one batch (one matrix product of the store by the batch).
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


def newest_updates(memory: Memory, olders: Iterable[Leaf]) -> dict[str, Leaf]:
    """Each of ``olders`` that a later memory says it updates -> the latest memory its links
    lead to."""
    found: dict[str, Leaf] = {}
    for leaf in olders:
        newest = memory.links.current_of(leaf.id)
        if newest is not None:
            found[leaf.id] = memory.leaves[newest]
    return found


def restate(memory: Memory) -> set[str]:
    """Bring ``memory.semantic.stale`` up to date with the links after a change (a link added or
    undone, a memory remembered or forgotten), and recompute the semantic branches above every
    memory whose state changed; returns the ids of the branches recomputed (to be written too).
    Links are few: every memory a link names is looked at again."""
    stale = memory.semantic.stale
    newest_of = memory.links.current_of
    now = {
        older: newest for older in memory.links.linked_olders() if (newest := newest_of(older)) is not None
    }
    moved = [
        older for older in {**stale, **now} if stale.get(older) != now.get(older) and older in memory.leaves
    ]
    stale.clear()
    stale.update(now)
    return memory.semantic.refresh_above(moved) if moved else set()


def stale_note(update: Leaf, calendar: Calendar) -> str:
    """What a memory that ``update`` updates is marked with where it is shown: which memory updates
    it, when (a day of the namespace's ``calendar``), and what it says now."""
    day = calendar.shown_date(update.timestamp)
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
