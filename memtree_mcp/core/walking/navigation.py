"""A cursor over the two trees (HAT, seed 003 §3.2; DESIGN §2 navigate).

The cursor is stateless: a position is a node id and a tree, and ``move`` turns one position into
the next, so a client (or the server) only has to remember the id it was shown. Moves:

- ``stay``: the node itself; ``reset``: the root of the tree;
- ``up``: the parent; ``down``: a child by its 0-based ``index`` among the node's children (the
  order of ``CursorView.children``), or without an index the child that best matches the query vector
  (average linkage, ``Hierarchy.match_vector_of``), or the first child when there is no query;
- ``left`` / ``right``: in the semantic tree the previous / next sibling; in the temporal tree the
  previous / next node of the same depth in time order, across parents (the neighbouring segment at
  the same time scale, or the previous / next memory for a leaf);
- ``switch``: the same place in the other tree: a leaf stays that leaf; a branch goes to the smallest
  branch of the other tree that holds all its leaves (their lowest common ancestor there).

A leaf id is valid in both trees; a branch id only in its own. Every refusal is a
``NavigationError`` that says what was wrong and what to do instead.

The memory agent that walks this cursor is :mod:`memtree_mcp.core.walking.agent`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import numpy as np

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.names import MOVES, NodeKind, as_given
from memtree_mcp.core.ranking.currency import (
    current_text,
    first_quoted,
    newest_updates,
    period_text,
    quoted_leaves,
    stale_note,
)
from memtree_mcp.core.trees.extractive import gist
from memtree_mcp.core.trees.hierarchy import Hierarchy
from memtree_mcp.core.trees.model import Leaf

PREVIEW_CHARS = 100
LEAF_LABEL_CHARS = 60


class NavigationError(ValueError):
    """A move or a node the cursor cannot take; the message says why and what to do instead."""


class ChildPreview(NamedTuple):
    """One line about a node next to the cursor: a child (its position is its ``down`` index) or a
    neighbour."""

    id: str
    line: str
    kind: NodeKind
    leaf_count: int


@dataclass(slots=True)
class CursorView:
    """What the cursor shows of one node of one tree.

    ``breadcrumb`` holds the labels of the node's ancestors from the top down, the root left out.
    ``children`` previews the children in order (``down`` takes the position in this list);
    ``parent``, ``left`` and ``right`` preview where ``up``, ``left`` and ``right`` would go.
    ``score`` is the node's match to the query vector (average cosine to its leaves) when a query
    was given and the node has a vector, else None. ``period``: the time scale of a temporal
    branch ("session", "day", …; ``core/trees/calendar.py``), else None.
    """

    id: str
    tree: str
    kind: NodeKind
    depth: int
    text: str
    label: str
    leaf_count: int
    first_seq: int
    last_seq: int
    first_ts: float
    last_ts: float
    breadcrumb: list[str] = field(default_factory=list)
    period: str | None = None
    children: list[ChildPreview] = field(default_factory=list)
    has_up: bool = False
    has_left: bool = False
    has_right: bool = False
    has_down: bool = False
    parent: ChildPreview | None = None
    left: ChildPreview | None = None
    right: ChildPreview | None = None
    score: float | None = None

    def as_dict(self) -> dict[str, object]:
        """A plain, JSON-ready dict; previews become dicts with their field names."""
        out = asdict(self)
        out["children"] = [c._asdict() for c in self.children]
        for name in ("parent", "left", "right"):
            preview = getattr(self, name)
            out[name] = preview._asdict() if preview is not None else None
        return out


# -- reading the trees ---------------------------------------------------------------------------


def hierarchy_of(memory: Memory, tree: str) -> Hierarchy:
    try:
        return memory.tree(tree)
    except ValueError as exc:
        raise NavigationError(str(exc)) from None


def _other(tree: str) -> str:
    return "temporal" if tree == "semantic" else "semantic"


def _check_node(memory: Memory, node_id: str, tree: str) -> Hierarchy:
    """The hierarchy of ``tree`` after checking that ``node_id`` is a node of it."""
    hierarchy = hierarchy_of(memory, tree)
    if node_id in hierarchy.branches:
        return hierarchy
    if node_id in memory.leaves:
        if node_id not in hierarchy.parent_of:
            raise NavigationError(
                f"leaf {node_id} is not placed in the {tree} tree; view it in the {_other(tree)} tree"
            )
        return hierarchy
    other = _other(tree)
    if node_id in hierarchy_of(memory, other).branches:
        raise NavigationError(
            f"{node_id} is a branch of the {other} tree, not of the {tree} tree; view it with "
            f"tree='{other}', or move 'switch' from it to reach its place in the {tree} tree"
        )
    raise NavigationError(
        f"no node {as_given(node_id)} in this memory; omit the node id to start at the root, or use an id "
        "from a recall or navigate result"
    )


def parent_of(hierarchy: Hierarchy, node_id: str) -> str | None:
    branch = hierarchy.branches.get(node_id)
    return branch.parent if branch is not None else hierarchy.parent_of.get(node_id)


def _children(hierarchy: Hierarchy, node_id: str) -> list[str]:
    branch = hierarchy.branches.get(node_id)
    return branch.children if branch is not None else []


def _kind(hierarchy: Hierarchy, node_id: str) -> NodeKind:
    branch = hierarchy.branches.get(node_id)
    if branch is None:
        return "leaf"
    return branch.kind


def _leaf_count(hierarchy: Hierarchy, node_id: str) -> int:
    branch = hierarchy.branches.get(node_id)
    return branch.leaf_count if branch is not None else 1


def _sibling(hierarchy: Hierarchy, node_id: str, step: int) -> str | None:
    parent = parent_of(hierarchy, node_id)
    if parent is None:
        return None
    siblings = hierarchy.branches[parent].children
    position = siblings.index(node_id) + step
    return siblings[position] if 0 <= position < len(siblings) else None


def _edge_at_depth(hierarchy: Hierarchy, start: str, depth: int, first: bool) -> str | None:
    """The first (or last) node at ``depth`` in the subtree under ``start``, in the tree's order."""
    stack = [start]
    while stack:
        node_id = stack.pop()
        node_depth = hierarchy.depth_of(node_id)
        if node_depth == depth:
            return node_id
        if node_depth < depth:
            children = _children(hierarchy, node_id)
            stack.extend(reversed(children) if first else children)
    return None


def _level_neighbour(hierarchy: Hierarchy, node_id: str, step: int) -> str | None:
    """The previous (step -1) or next (+1) node of the same depth in the tree's order, across parents."""
    depth = hierarchy.depth_of(node_id)
    current = node_id
    while True:
        parent = parent_of(hierarchy, current)
        if parent is None:
            return None
        siblings = hierarchy.branches[parent].children
        position = siblings.index(current)
        others = range(position + 1, len(siblings)) if step > 0 else range(position - 1, -1, -1)
        for other in others:
            found = _edge_at_depth(hierarchy, siblings[other], depth, first=step > 0)
            if found is not None:
                return found
        current = parent


def _neighbour(hierarchy: Hierarchy, tree: str, node_id: str, step: int) -> str | None:
    if tree == "temporal":
        return _level_neighbour(hierarchy, node_id, step)
    return _sibling(hierarchy, node_id, step)


def one_line(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters at a word boundary ("…" marks the cut)."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    clipped = line[: limit - 1].rsplit(" ", 1)[0] or line[: limit - 1]
    return clipped + "…"


def _preview_line(hierarchy: Hierarchy, node_id: str) -> str:
    branch = hierarchy.branches.get(node_id)
    if branch is None:
        return one_line(hierarchy.text_of(node_id))
    if branch.label:
        return one_line(f"{branch.label} — {gist(branch.text)}")
    return one_line(branch.text)


def _preview(
    hierarchy: Hierarchy, node_id: str | None, newest: Mapping[str, Leaf] | None = None
) -> ChildPreview | None:
    if node_id is None:
        return None
    line = _preview_line(hierarchy, node_id)
    opening = first_quoted(hierarchy, node_id) if node_id in hierarchy.branches else node_id
    update = newest.get(opening) if newest is not None and opening is not None else None
    if update is not None:
        line += f" ({'changed later' if hierarchy.tree_name == 'temporal' else f'superseded by {update.id}'})"
    return ChildPreview(
        id=node_id,
        line=line,
        kind=_kind(hierarchy, node_id),
        leaf_count=_leaf_count(hierarchy, node_id),
    )


def score_of(memory: Memory, hierarchy: Hierarchy, node_id: str, query: Vector) -> float | None:
    """How well a node matches a unit ``query``: a subject by its average cosine (``match_vector_of``),
    a period by its closest memory (a day of unrelated sessions holds the one sought however little
    the rest is about it, which an average would hide). None for a branch without memories."""
    if hierarchy is memory.temporal:
        first, last = memory.temporal.ends(node_id)
        return memory.best_between(first, last, query)
    try:
        return float(hierarchy.match_vector_of(node_id) @ query)
    except KeyError:
        return None


def view(memory: Memory, node_id: str, tree: str, query_vector: Vector | None = None) -> CursorView:
    """The cursor's view of ``node_id`` in ``tree`` ('semantic' or 'temporal').

    Raises ``NavigationError`` for an unknown tree or node, or a branch of the other tree.
    """
    hierarchy = _check_node(memory, node_id, tree)
    branch = hierarchy.branches.get(node_id)
    left = _neighbour(hierarchy, tree, node_id, -1)
    right = _neighbour(hierarchy, tree, node_id, +1)
    parent = parent_of(hierarchy, node_id)
    # Memories a later one updates are marked, and a summary's text quotes the current value (in
    # the temporal tree, a period's text marks what changed later instead).
    shown = [node_id, left, right, parent, *_children(hierarchy, node_id)]
    shown = [n if n is None or n in memory.leaves else first_quoted(hierarchy, n) for n in shown]
    quoted = quoted_leaves(memory, hierarchy, node_id) if branch is not None else []
    newest = newest_updates(memory, [*(memory.leaves[n] for n in shown if n in memory.leaves), *quoted])
    children = [p for c in _children(hierarchy, node_id) if (p := _preview(hierarchy, c, newest)) is not None]
    score = score_of(memory, hierarchy, node_id, query_vector) if query_vector is not None else None
    leaf = memory.leaves.get(node_id)
    if branch is not None:
        kind: NodeKind = branch.kind
        restated = (period_text if tree == "temporal" else current_text)(memory, node_id, quoted, newest)
        text, label, count = restated or branch.text, branch.label, branch.leaf_count
        first_seq, last_seq, first_ts, last_ts = (
            branch.first_seq,
            branch.last_seq,
            branch.first_ts,
            branch.last_ts,
        )
    else:
        assert leaf is not None
        kind, text, label, count = "leaf", leaf.text, gist(leaf.text, LEAF_LABEL_CHARS), 1
        if leaf.id in newest:
            text = f"{text} ({stale_note(newest[leaf.id], memory.calendar)})"
        first_seq = last_seq = leaf.seq
        first_ts = last_ts = leaf.timestamp
    return CursorView(
        id=node_id,
        tree=tree,
        kind=kind,
        depth=hierarchy.depth_of(node_id),
        text=text,
        label=label,
        leaf_count=count,
        first_seq=first_seq,
        last_seq=last_seq,
        first_ts=first_ts,
        last_ts=last_ts,
        breadcrumb=memory.breadcrumb(node_id, tree),
        period=memory.temporal.period_of(node_id) if tree == "temporal" else None,
        children=children,
        has_up=parent is not None,
        has_left=left is not None,
        has_right=right is not None,
        has_down=bool(children),
        parent=_preview(hierarchy, parent, newest),
        left=_preview(hierarchy, left, newest),
        right=_preview(hierarchy, right, newest),
        score=score,
    )


# -- moving --------------------------------------------------------------------------------------


def _best_child(memory: Memory, hierarchy: Hierarchy, children: Sequence[str], query: Vector | None) -> int:
    if query is None:
        return 0
    scores = [score_of(memory, hierarchy, c, query) for c in children]
    values = [s if s is not None else -math.inf for s in scores]
    return int(np.argmax(values))


def _lowest_common_branch(hierarchy: Hierarchy, leaf_ids: Sequence[str]) -> str:
    """The smallest branch of ``hierarchy`` holding all of ``leaf_ids`` (the root when none)."""
    common: list[str] | None = None
    for leaf_id in leaf_ids:
        chain = [b.id for b in hierarchy.ancestors(leaf_id)]
        if common is None:
            common = chain
        else:
            shared = 0
            while shared < min(len(common), len(chain)) and common[shared] == chain[shared]:
                shared += 1
            common = common[:shared]
        if len(common) <= 1:
            break
    return common[-1] if common else hierarchy.root.id


def move(
    memory: Memory,
    node_id: str | None,
    move: str,
    tree: str,
    index: int | None = None,
    query_vector: Vector | None = None,
) -> CursorView:
    """Apply ``move`` to the cursor at ``node_id`` in ``tree`` (None: the root) and view where it lands.

    Moves: ``stay``, ``reset``, ``up``, ``down`` (child ``index``, 0-based; default the child best
    matching ``query_vector``, else an only child; refused between several), ``left``, ``right``,
    ``switch`` (to the other tree; the returned view's ``tree`` is then the other one). With
    ``query_vector`` the view carries the landing node's score. Raises ``NavigationError`` for an
    unknown move, tree or node, and for a move that leads nowhere (up from the root, down from a
    leaf or to a missing child, left of the first or right of the last node).
    """
    hierarchy = hierarchy_of(memory, tree)
    here = hierarchy.root.id if node_id is None else node_id
    _check_node(memory, here, tree)
    name = move.strip().lower()
    if name == "stay":
        target, target_tree = here, tree
    elif name == "reset":
        target, target_tree = hierarchy.root.id, tree
    elif name == "up":
        parent = parent_of(hierarchy, here)
        if parent is None:
            raise NavigationError(
                f"already at the root of the {tree} tree; move 'down' into a child or 'switch' trees"
            )
        target, target_tree = parent, tree
    elif name == "down":
        children = _children(hierarchy, here)
        if not children:
            what = "a leaf (one memory)" if here in memory.leaves else "an empty branch"
            raise NavigationError(f"{here} is {what} and has no children; move 'up', 'left' or 'right'")
        if index is None and query_vector is None and len(children) > 1:
            # Taking child 0 silently would look like a choice; an only child is no choice.
            raise NavigationError(
                f"{here} has {len(children)} children: give index (0 to {len(children) - 1}) "
                "or a query to move 'down'"
            )
        if index is None:
            index = _best_child(memory, hierarchy, children, query_vector)
        elif not 0 <= index < len(children):
            raise NavigationError(
                f"no child {index}: {here} has {len(children)} children, numbered 0 to {len(children) - 1}"
            )
        target, target_tree = children[index], tree
    elif name in ("left", "right"):
        step = -1 if name == "left" else +1
        found = _neighbour(hierarchy, tree, here, step)
        if found is None:
            if parent_of(hierarchy, here) is None:
                raise NavigationError(f"the root has no {name} neighbour; move 'down' into a child")
            edge = "first" if name == "left" else "last"
            scope = "at its depth" if tree == "temporal" else "among its siblings"
            back = "right" if name == "left" else "left"
            raise NavigationError(
                f"{here} is the {edge} node {scope} in the {tree} tree; move '{back}', 'up' or 'down'"
            )
        target, target_tree = found, tree
    elif name == "switch":
        target_tree = _other(tree)
        other = hierarchy_of(memory, target_tree)
        if here in memory.leaves:
            target = here
        elif here == hierarchy.root.id:
            target = other.root.id
        else:
            target = _lowest_common_branch(other, hierarchy.leaves_under(here))
    else:
        raise NavigationError(f"unknown move {as_given(move)}; use one of: {', '.join(MOVES)}")
    return view(memory, target, target_tree, query_vector)


# -- the memory agent ----------------------------------------------------------------------------
