"""What a recall returns: :class:`Hit`, one recalled node ready to show to a model, made by
:func:`hit_of`, and :class:`Shown`, what a result already shows so that no text appears in it twice.

Recall (``core/ranking/recall.py``) ranks and picks the hits; the step that brings each stale hit's update
into the result (``core/ranking/current.py``) makes hits of its own. Both build them here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.names import HitKind
from memtree_mcp.core.trees.extractive import PART_SEPARATOR, gist
from memtree_mcp.core.trees.model import Branch, Leaf


def estimate_tokens(text: str) -> int:
    """A cheap, conservative token count for budgets: about four characters a token."""
    return max(1, math.ceil(len(text) / 4))


@dataclass(slots=True)
class Hit:
    """One recalled node, ready to show to a model. ``superseded_by`` is the id of the later
    memory that updates this one, always a hit of the same result (``core/ranking/current.py``)."""

    id: str
    text: str
    kind: HitKind
    tree: str
    depth: int
    score: float
    first_ts: float
    last_ts: float
    breadcrumb: list[str] = field(default_factory=list)
    relevance: float = 0.0
    covers: int = 1
    superseded_by: str | None = None


def hit_of(
    memory: Memory, node: Leaf | Branch, score: float, relevance: float, text: str | None = None
) -> Hit:
    """``node`` of ``memory`` as a hit, showing ``text`` (by default the node's own)."""
    if isinstance(node, Leaf):
        return Hit(
            id=node.id,
            text=node.text if text is None else text,
            kind="leaf",
            tree="semantic",
            depth=memory.semantic.depth_of(node.id),
            score=score,
            first_ts=node.timestamp,
            last_ts=node.timestamp,
            breadcrumb=memory.breadcrumb(node.id),
            relevance=relevance,
        )
    return Hit(
        id=node.id,
        text=node.text if text is None else text,
        kind="summary",
        tree=node.tree,
        depth=node.depth,
        score=score,
        first_ts=node.first_ts,
        last_ts=node.last_ts,
        breadcrumb=memory.breadcrumb(node.id, node.tree),
        relevance=relevance,
        covers=node.leaf_count,
    )


class Shown:
    """What a recall result already shows, so that no text appears in it twice."""

    def __init__(self, min_covers: int) -> None:
        self._min_covers = min_covers
        self._whole: set[str] = set()  # memories' texts and summaries' parts, as shown
        self._gists: set[str] = set()  # what a summary quotes of each memory shown

    def fresh_text(self, node: Leaf | Branch) -> str | None:
        """The text ``node`` adds to what is shown (and now shown too), or None when it adds nothing.

        A summary of fewer than ``min_covers`` memories only repeats what recall ranks on its own
        (every memory is ranked); a summary's parts (the gists of its children, joined by
        ``PART_SEPARATOR``) already shown are left out of it; a memory a summary already quoted
        whole is not shown again.
        """
        if isinstance(node, Leaf):
            text = node.text.strip()
            if text in self._whole:
                return None
            self._whole.add(text)
            self._gists.add(gist(text))
            return node.text
        if node.leaf_count < self._min_covers:
            return None
        parts = [
            part
            for part in node.text.split(PART_SEPARATOR)
            if part.strip() not in self._whole and part.strip() not in self._gists
        ]
        if not parts:
            return None
        self._whole.update(part.strip() for part in parts)
        return PART_SEPARATOR.join(parts)

    def memory_itself(self, leaf: Leaf) -> str:
        """``leaf``'s text, shown as its own line even when a summary shown already quotes it (an
        update must be a hit the mark can name: :func:`without_quote` takes it out of the summary)."""
        text = leaf.text.strip()
        self._whole.add(text)
        self._gists.add(gist(text))
        return leaf.text


def without_quote(summary_text: str, leaf: Leaf) -> str:
    """``summary_text`` (a summary hit's parts) without the part that quotes ``leaf`` (its whole
    text or its gist); '' when nothing else is left."""
    quoted = {leaf.text.strip(), gist(leaf.text.strip())}
    parts = summary_text.split(PART_SEPARATOR)
    return PART_SEPARATOR.join(part for part in parts if part.strip() not in quoted)
