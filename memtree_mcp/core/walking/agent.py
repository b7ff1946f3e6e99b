"""The memory agent: a policy walks the navigation cursor for a query (HAT, seed 003 §3.2).

``run_agent`` is HAT's MDP: from the root, a policy picks one of Up, Down i,
Left, Right, Reset, Sufficient, Insufficient at each step, seeing the current node, its children
and its neighbours with their texts and their scores against the query. ``EmbeddingPolicy`` plays
it with the vectors alone; an LLM policy implements the same ``Policy`` protocol elsewhere (it is
built per query and keeps the query text itself). Whatever a policy answers, the run stays valid:
an answer that is not an action, or a move that is impossible where the cursor stands, is replaced
by a safe one (Sufficient at a leaf, else Down to the best child) and noted in ``AgentRun.notes``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

import numpy as np

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.names import NodeKind
from memtree_mcp.core.ranking.currency import (
    newest_updates,
)
from memtree_mcp.core.trees.hierarchy import Hierarchy
from memtree_mcp.core.walking.navigation import (
    ChildPreview,
    CursorView,
    hierarchy_of,
    move,
    parent_of,
    score_of,
    view,
)

Outcome = Literal["sufficient", "insufficient", "max_steps"]
CONTEXT_LEAVES = 5
SUFFICIENT_THRESHOLD = 0.3


class ScoredNode(NamedTuple):
    """A node the agent could move to, with its text and its match to the query (-1 without a vector)."""

    id: str
    kind: NodeKind
    leaf_count: int
    score: float
    line: str
    text: str


class Policy(Protocol):
    """Chooses the agent's next action (HAT seed 003 §3.2).

    ``current`` is the cursor's view (text, breadcrumb, child previews, score). ``children_scores``
    are the current node's children in order: action ``down i`` takes ``children_scores[i]``.
    ``neighbour_scores`` has an entry for each of ``up``, ``left``, ``right`` that is possible from
    here. ``history`` holds the moves made so far ("down 2", "left", …). Return one of
    ``up``, ``down <i>`` (0-based; bare ``down`` takes the best child), ``left``, ``right``,
    ``reset``, ``sufficient``, ``insufficient``; case and a trailing period do not matter, and
    anything else is replaced by a safe action. A policy working on texts (an LLM) is built for one
    query and keeps the query's text itself.
    """

    def decide(
        self,
        query_vector: Vector,
        current: CursorView,
        children_scores: Sequence[ScoredNode],
        neighbour_scores: Mapping[str, ScoredNode],
        history: Sequence[str],
    ) -> str: ...


class EmbeddingPolicy:
    """Walk by vectors: descend while a child matches the query at least as well as the current
    node (a period scores its best memory, so the path down to that memory ties exactly), or is its
    only child.

    When no child improves, try the left and then the right neighbour, each at most once since the
    last vertical move, and only if it scores better. When nothing improves, the context is
    ``sufficient`` if the current score reaches ``threshold`` and ``insufficient`` otherwise (so a
    leaf that matches well ends the walk).
    """

    def __init__(self, threshold: float = SUFFICIENT_THRESHOLD) -> None:
        self.threshold = threshold

    def decide(
        self,
        query_vector: Vector,
        current: CursorView,
        children_scores: Sequence[ScoredNode],
        neighbour_scores: Mapping[str, ScoredNode],
        history: Sequence[str],
    ) -> str:
        here = current.score if current.score is not None else -1.0
        if len(children_scores) == 1 and current.kind != "leaf":
            return "down 0"  # a lone child holds the same memories, seen closer (a day's one session)
        if children_scores:
            best = max(range(len(children_scores)), key=lambda i: children_scores[i].score)
            if children_scores[best].score >= here:
                return f"down {best}"
        tried: set[str] = set()
        for previous in reversed(history):
            if previous not in ("left", "right"):
                break
            tried.add(previous)
        for side in ("left", "right"):
            neighbour = neighbour_scores.get(side)
            if side not in tried and neighbour is not None and neighbour.score > here:
                return side
        return "sufficient" if here >= self.threshold else "insufficient"


class ContextItem(NamedTuple):
    """One text the agent hands back: the settled node or one of its best leaves."""

    id: str
    text: str
    score: float


@dataclass(slots=True)
class AgentRun:
    """Where the memory agent settled and how it got there.

    ``moves`` are the moves made ("down 2", "left", …), the final verdict left out; ``path`` the
    node ids visited, starting at the root; ``outcome`` is ``sufficient``, ``insufficient`` or
    ``max_steps`` (the policy never concluded); ``context`` the settled node's text, then its best
    leaves by cosine to the query (for a leaf: itself, then the best other leaves of its parent);
    ``notes`` the policy answers that were replaced by a safe action.
    """

    node: CursorView
    moves: list[str]
    sufficient: bool
    outcome: Outcome
    context: list[ContextItem]
    path: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def context_texts(self) -> list[str]:
        return [item.text for item in self.context]


_ACTION = re.compile(r"(up|down|left|right|reset|sufficient|insufficient)(?:\s*[\s(:#=]\s*(-?\d+)\s*\)?)?")


def parse_action(answer: str) -> tuple[str, int | None] | None:
    """``(action, index)`` from a policy's answer such as "Down 2" or "sufficient."; None if unparseable."""
    text = answer.strip().lower().rstrip(".!")
    match = _ACTION.fullmatch(text.strip())
    if match is None:
        return None
    action, index = match.group(1), match.group(2)
    if index is not None and action != "down":
        return None
    return action, int(index) if index is not None else None


def _scored(memory: Memory, hierarchy: Hierarchy, preview: ChildPreview, query: Vector) -> ScoredNode:
    """A node next to the cursor as a policy sees it: its preview's line (with its mark, for a
    memory a later one updates) and its text."""
    score = score_of(memory, hierarchy, preview.id, query)
    return ScoredNode(
        id=preview.id,
        kind=preview.kind,
        leaf_count=preview.leaf_count,
        score=score if score is not None else -1.0,
        line=preview.line,
        text=hierarchy.text_of(preview.id),
    )


def _context(
    memory: Memory, hierarchy: Hierarchy, node: CursorView, query: Vector, size: int
) -> list[ContextItem]:
    own = ContextItem(node.id, node.text, node.score if node.score is not None else -1.0)
    pool_root = node.id
    if node.kind == "leaf":
        pool_root = parent_of(hierarchy, node.id) or node.id
    candidates = [leaf for leaf in hierarchy.leaves_under(pool_root) if leaf != node.id]
    if not candidates:
        return [own]
    matrix = np.stack([memory.leaves[leaf].vector for leaf in candidates])
    scores = matrix @ query
    order = sorted(range(len(candidates)), key=lambda i: (-float(scores[i]), candidates[i]))
    room = size - 1 if node.kind == "leaf" else size
    best = [ContextItem(candidates[i], memory.leaves[candidates[i]].text, float(scores[i])) for i in order]
    return _current_context([own, *best[:room]], memory, query)


def _current_context(items: list[ContextItem], memory: Memory, query: Vector) -> list[ContextItem]:
    """``items`` with each memory a later one updates marked "superseded by <id>", and the update
    found just before it (unless it is found already), so the agent's findings never state a stale
    value unmarked, nor without the value that replaced it."""
    leaves = [memory.leaves[item.id] for item in items if item.id in memory.leaves]
    newest = newest_updates(memory, leaves)
    if not newest:
        return items
    out: list[ContextItem] = []
    found = {item.id for item in items}
    for item in items:
        update = newest.get(item.id)
        if update is None:
            out.append(item)
            continue
        if update.id not in found:
            found.add(update.id)
            out.append(ContextItem(update.id, update.text, float(update.vector @ query)))
        # The settled memory's own text carries its note already (view).
        marked = "superseded by" in item.text[len(memory.leaves[item.id].text) :]
        out.append(item if marked else item._replace(text=f"{item.text} (superseded by {update.id})"))
    return out


def run_agent(
    memory: Memory,
    query_vector: Vector,
    tree: str,
    policy: Policy,
    max_steps: int = 12,
    *,
    context_leaves: int = CONTEXT_LEAVES,
) -> AgentRun:
    """Let ``policy`` walk ``tree`` from its root for ``query_vector``, asking it at most ``max_steps`` times.

    Raises ``NavigationError`` for an unknown tree and ``ValueError`` for a negative ``max_steps``.
    """
    if max_steps < 0:
        raise ValueError(f"max_steps must be 0 or more, got {max_steps}")
    hierarchy = hierarchy_of(memory, tree)
    current = view(memory, hierarchy.root.id, tree, query_vector)
    moves: list[str] = []
    path = [current.id]
    notes: list[str] = []
    outcome: Outcome = "max_steps"
    for step in range(max_steps):
        children = [_scored(memory, hierarchy, c, query_vector) for c in current.children]
        neighbours = {
            side: _scored(memory, hierarchy, preview, query_vector)
            for side, preview in (("up", current.parent), ("left", current.left), ("right", current.right))
            if preview is not None
        }
        answer = policy.decide(query_vector, current, children, neighbours, list(moves))
        parsed = parse_action(answer) if isinstance(answer, str) else None
        problem = _impossible(parsed, current) if parsed is not None else "is not an action"
        if problem is not None:
            parsed = _safe_action(current)
            shown = "down (the best child)" if parsed[0] == "down" else parsed[0]
            notes.append(f"step {step + 1}: {answer!r} {problem}; took {shown!r} instead")
        assert parsed is not None
        action, index = parsed
        if action in ("sufficient", "insufficient"):
            outcome = "sufficient" if action == "sufficient" else "insufficient"
            break
        if action == "down" and index is None:
            index = int(np.argmax([c.score for c in children]))
        current = move(memory, current.id, action, tree, index=index, query_vector=query_vector)
        moves.append(f"down {index}" if action == "down" else action)
        path.append(current.id)
    return AgentRun(
        node=current,
        moves=moves,
        sufficient=outcome == "sufficient",
        outcome=outcome,
        context=_context(memory, hierarchy, current, query_vector, context_leaves),
        path=path,
        notes=notes,
    )


def _impossible(parsed: tuple[str, int | None], current: CursorView) -> str | None:
    """Why ``parsed`` cannot be taken from ``current``, or None when it can."""
    action, index = parsed
    if action == "up" and not current.has_up:
        return "is impossible at the root"
    if action == "down":
        if not current.has_down:
            return "is impossible at a node without children"
        if index is not None and not 0 <= index < len(current.children):
            return f"names a child that does not exist (there are {len(current.children)})"
    if action == "left" and not current.has_left:
        return "is impossible: there is nothing to the left"
    if action == "right" and not current.has_right:
        return "is impossible: there is nothing to the right"
    return None


def _safe_action(current: CursorView) -> tuple[str, int | None]:
    if current.kind == "leaf":
        return ("sufficient", None)
    if current.has_down:
        return ("down", None)
    return ("insufficient", None)
