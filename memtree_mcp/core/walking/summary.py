"""Summaries read off the trees: the whole memory, a subtree, a period or a subject, within a budget.

Without an LLM a summary is composed from the representatives the trees already keep: it starts
from the nodes that cover what was asked and opens the largest of them into their children for as
long as the result stays within the token budget, so a larger budget reads the memory at a finer
level. Every line cites the node it comes from.

A summary of the whole memory, of a subject or of a semantic node states how things are now: a
memory that a later one says it updates (a stored link, ``core/ranking/currency.py``) gives way
to the update, in its own line and in the summaries' texts that quote it; the stale sentence is
not kept beside it ("earlier: …"), since a model reading a summary takes what it states as true
and the budget is better spent on what is current (recall shows both, with their dates). A
period (the temporal tree) tells what happened in it: its memories are never replaced by later
ones; one a later memory updates is marked "changed later, <day>: “<the update>”" in its own line,
and "(changed later)" in a summary's text that quotes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.candidates import newer_first
from memtree_mcp.core.ranking.currency import current_text, newest_updates, period_text, quoted_leaves
from memtree_mcp.core.ranking.recall import estimate_tokens
from memtree_mcp.core.trees.calendar import Calendar
from memtree_mcp.core.trees.extractive import gist
from memtree_mcp.core.trees.hierarchy import Hierarchy
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.wording import counted

# How much of a later update a period summary quotes beside a memory it updates.
NOTE_CHARS = 90


@dataclass(slots=True)
class Summary:
    """A text and the ids of the nodes it was composed from, in the order they appear."""

    text: str
    node_ids: list[str]


def summarize_nodes(memory: Memory, tree: Hierarchy, start: Sequence[str], max_tokens: int) -> Summary:
    """Compose a summary of the subtrees under ``start`` (ids of ``tree``), as deep as ``max_tokens`` allows.

    The nodes are refined greedily: the branch covering the most memories is replaced by its
    children while the whole still fits. Past the budget, the least covering lines are dropped.
    A memory that a later one says it updates gives way to it, and of two related memories the
    newer is said first (``core/ranking/candidates.py``); in ``tree`` temporal (a period) updates are only
    noted and the lines keep their time order (see the module).
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
    quoted = {n: quoted_leaves(memory, tree, n) for n in frontier}
    olders = [leaf for n in frontier for leaf in ([memory.leaves[n]] if n in memory.leaves else quoted[n])]
    newest = newest_updates(memory, olders)
    if tree is memory.temporal:
        lines = {
            n: _line(memory.node(n), memory.calendar, period_text(memory, n, quoted[n], newest), newest)
            for n in frontier
        }
    else:
        frontier = _newer_first(memory, _current(frontier, newest))
        lines = {
            n: _line(memory.node(n), memory.calendar, current_text(memory, n, quoted.get(n, []), newest))
            for n in frontier
        }
    # Notes of later changes make lines longer: past the budget, the least covering go first.
    while len(frontier) > 1 and sum(estimate_tokens(line) + 1 for line in lines.values()) > max_tokens:
        smallest = min(frontier, key=lambda n: (_leaf_count(memory, n), n))
        frontier.remove(smallest)
        del lines[smallest]
    text = "\n".join(lines[n] for n in frontier)
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
    return sum(estimate_tokens(_line(memory.node(n), memory.calendar)) + 1 for n in node_ids)


def _current(frontier: list[str], newest: Mapping[str, Leaf]) -> list[str]:
    """``frontier`` with each memory a later one updates replaced by that update (or left out
    when the update is shown already), so the summary states the current state."""
    out: list[str] = []
    for node_id in frontier:
        update = newest.get(node_id)
        chosen = node_id if update is None else update.id
        if chosen not in out:
            out.append(chosen)
    return out


def _newer_first(memory: Memory, frontier: list[str]) -> list[str]:
    """``frontier`` with its memories reordered among their own places so that of two related
    ones the newer comes first (branches keep their places)."""
    places = [at for at, node_id in enumerate(frontier) if node_id in memory.leaves]
    out = list(frontier)
    for at, leaf in zip(places, newer_first([memory.leaves[frontier[at]] for at in places]), strict=True):
        out[at] = leaf.id
    return out


def _line(
    node: Leaf | Branch,
    calendar: Calendar,
    text: str | None = None,
    newest: Mapping[str, Leaf] | None = None,
) -> str:
    if isinstance(node, Leaf):
        update = newest.get(node.id) if newest is not None else None
        when = calendar.shown_date(node.timestamp)
        if update is not None:
            when += (
                f"; changed later, {calendar.shown_date(update.timestamp)}: “{gist(update.text, NOTE_CHARS)}”"
            )
        return f"- {node.text} ({when}) [{node.id}]"
    first, last = calendar.shown_date(node.first_ts), calendar.shown_date(node.last_ts)
    span = first if first == last else f"{first} to {last}"
    shown = node.text if text is None else text
    memories = counted(node.leaf_count, "memory", "memories")
    return f"- {node.label}: {shown} ({memories}, {span}) [{node.id}]"
