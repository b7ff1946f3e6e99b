"""Summaries read off the trees: the whole memory, a subtree, a period or a subject, within a budget.

Without an LLM a summary is composed from the representatives the trees already keep: it starts
from the nodes that cover what was asked and opens the largest of them into their children for as
long as the result stays within the token budget, so a larger budget reads the memory at a finer
level. Every line cites the node it comes from. A memory that a later one updates
(``core/updates.py``) gives way to the update, in the lines and in the summaries' texts, so a
summary states how things are now.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from memtree_mcp.core import recall as ranking
from memtree_mcp.core.extractive import PART_SEPARATOR, gist
from memtree_mcp.core.hierarchy import Hierarchy
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.model import Branch, Leaf
from memtree_mcp.core.recall import estimate_tokens
from memtree_mcp.core.wording import counted

# How many memories under a summarised branch are looked at for updates of what its text quotes.
CURRENT_SCAN = 256


@dataclass(slots=True)
class Summary:
    """A text and the ids of the nodes it was composed from, in the order they appear."""

    text: str
    node_ids: list[str]


def summarize_nodes(
    memory: Memory, tree: Hierarchy, start: Sequence[str], max_tokens: int, related: Sequence[str] = ()
) -> Summary:
    """Compose a summary of the subtrees under ``start`` (ids of ``tree``), as deep as ``max_tokens`` allows.

    The nodes are refined greedily: the branch covering the most memories is replaced by its
    children while the whole still fits. Past the budget, the least covering lines are dropped.
    Updates of the memories shown are looked for among the lines, each memory's semantic siblings
    and ``related`` (for a subject, the memories recall ranks first for it).
    """
    frontier = [node_id for node_id in start if _covers_something(memory, tree, node_id)]
    while True:
        opened = False
        for node_id in sorted(
            (n for n in frontier if n in tree.branches), key=lambda n: (-tree.branches[n].leaf_count, n)
        ):
            children = [c for c in tree.branches[node_id].children if _covers_something(memory, tree, c)]
            at = frontier.index(node_id)
            candidate = frontier[:at] + children + frontier[at + 1 :]
            if _cost(memory, candidate) <= max_tokens:
                frontier = candidate
                opened = True
                break
        if not opened:
            break
    while len(frontier) > 1 and _cost(memory, frontier) > max_tokens:
        smallest = min(frontier, key=lambda n: (_leaf_count(memory, n), n))
        frontier.remove(smallest)
    candidates = [*frontier, *related]
    frontier = _current(memory, frontier, candidates)
    lines = [_line(memory.node(n), _current_text(memory, tree, n, candidates)) for n in frontier]
    text = "\n".join(lines)
    if lines and estimate_tokens(text) > max_tokens:
        text = text[: max(1, max_tokens * 4 - 1)] + "…"
    return Summary(text=text, node_ids=list(frontier))


def period_nodes(memory: Memory, time_from: float | None, time_to: float | None) -> list[str]:
    """The fewest temporal nodes that cover exactly the memories of a period, in time order.

    A node is taken whole when all its memories fall in the period and its parent's do not, as a
    segment tree answers a range query.
    """
    tree = memory.temporal
    low = -float("inf") if time_from is None else time_from
    high = float("inf") if time_to is None else time_to
    found: list[str] = []

    def visit(node_id: str) -> None:
        node = memory.node(node_id)
        if isinstance(node, Leaf):
            first = last = node.timestamp
        elif node.leaf_count == 0:
            return
        else:
            first, last = node.first_ts, node.last_ts
        if last < low or first > high:
            return
        if low <= first and last <= high and node_id != tree.root.id:
            found.append(node_id)
            return
        if isinstance(node, Branch):
            for child in node.children:
                visit(child)

    visit(tree.root.id)
    return found


def _covers_something(memory: Memory, tree: Hierarchy, node_id: str) -> bool:
    return node_id in memory.leaves or tree.branches[node_id].leaf_count > 0


def _leaf_count(memory: Memory, node_id: str) -> int:
    node = memory.node(node_id)
    return 1 if isinstance(node, Leaf) else node.leaf_count


def _cost(memory: Memory, node_ids: Sequence[str]) -> int:
    return sum(estimate_tokens(_line(memory.node(n))) + 1 for n in node_ids)


def _current(memory: Memory, frontier: list[str], candidates: Sequence[str]) -> list[str]:
    """``frontier`` with each memory a later one updates replaced by that update (or left out
    when the update is shown already), so the summary states the current state."""
    out: list[str] = []
    for node_id in frontier:
        leaf = memory.leaves.get(node_id)
        newest = ranking.newest_update(memory, leaf, candidates) if leaf is not None else None
        chosen = node_id if newest is None else newest.id
        if chosen not in out:
            out.append(chosen)
    return out


def _current_text(memory: Memory, tree: Hierarchy, node_id: str, candidates: Sequence[str]) -> str | None:
    """An extractive summary's text with the gist of each memory a later one updates replaced by
    the update's gist; None for a memory or an LLM summary (its text is shown as it is).

    The gists come from memories anywhere below the branch (a parent quotes its children's first
    sentences); the first ``CURRENT_SCAN`` memories below it, breadth first, are looked at.
    """
    branch = tree.branches.get(node_id)
    if branch is None or branch.summary or PART_SEPARATOR not in branch.text:
        return None
    parts = branch.text.split(PART_SEPARATOR)
    quoted = set(parts)
    for leaf in _leaves_below(memory, tree, node_id, CURRENT_SCAN):
        if gist(leaf.text) not in quoted:
            continue
        newest = ranking.newest_update(memory, leaf, candidates)
        if newest is None or gist(leaf.text) not in parts:
            continue
        at = parts.index(gist(leaf.text))
        if gist(newest.text) in parts:
            del parts[at]
        else:
            parts[at] = gist(newest.text)
    return PART_SEPARATOR.join(parts)


def _leaves_below(memory: Memory, tree: Hierarchy, node_id: str, limit: int) -> list[Leaf]:
    """Up to ``limit`` memories under ``node_id``, breadth first."""
    found: list[Leaf] = []
    queue = deque([node_id])
    while queue and len(found) < limit:
        current = queue.popleft()
        leaf = memory.leaves.get(current)
        if leaf is not None:
            found.append(leaf)
        elif current in tree.branches:
            queue.extend(tree.branches[current].children)
    return found


def _line(node: Leaf | Branch, text: str | None = None) -> str:
    if isinstance(node, Leaf):
        return f"- {node.text} ({_day(node.timestamp)}) [{node.id}]"
    first, last = _day(node.first_ts), _day(node.last_ts)
    span = first if first == last else f"{first} to {last}"
    shown = node.text if text is None else text
    memories = counted(node.leaf_count, "memory", "memories")
    return f"- {node.label}: {shown} ({memories}, {span}) [{node.id}]"


def _day(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%d")
