"""How relevant a recalled memory is, on a scale that means the same in every call.

**Relevance** is in [0, 1]: 0 means nothing ties the memory to the query, 1 that it says what
the query asks about in the query's own words. It combines two absolute signals, never the
ranking's own scores (those are standardised over each namespace, so a 0.8 would mean something
else in every store):

- meaning: the cosine of the two embeddings, mapped linearly from :data:`DENSE_UNRELATED` (0)
  to :data:`DENSE_SAME` (1). With all-MiniLM-L6-v2, a question and the memory that answers it
  reach 0.3 to 0.85 (median 0.6), a question and unrelated memories -0.15 to 0.6 (median 0.1);
- words: the idf-weighted share of the query's distinct terms the memory contains
  (:meth:`LexicalIndex.coverage`), worth at most :data:`WORD_WEIGHT`: exact names and numbers
  count even where the embedding blurs them.

``relevance = 1 - (1 - meaning) * (1 - WORD_WEIGHT * words)``: either signal alone can make a
memory relevant, both together make it more so. A summary has no words of its own to match, so
its relevance is its meaning (the mean cosine to its memories). A turn of a conversation that
hybrid recall ranks up for what was said next to it by another speaker (the answer after a
question) borrows that turn's relevance, decayed as the ranking decays it (``neighbour_decay``
per step); notes filed one after the other by the same role lend nothing to each other.

**The cut-off.** When no hit reaches :data:`CONFIDENT`, recall returns the best-ranked hit
alone: weak matches are what a question about something never stored looks like (and also a
question asked in other words than the memory's, whose answer is then that one hit). Otherwise
it returns the hits from :data:`DEFAULT_MIN_RELEVANCE` up. The constants were chosen on
``bench/updates.py`` (a project memory with questions that have an answer and questions about
things never stored) from the middle of the region where every unrelated question gets at most
one hit and the most answers are kept; neighbouring values give the same counts within one or
two answers (``docs/findings/what-the-model-reads.md``).

Which memories a later one updates is only ever a stored link (:mod:`memtree_mcp.core.ranking.currency`);
:mod:`memtree_mcp.core.ranking.candidates` proposes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.trees.model import Branch, Leaf

if TYPE_CHECKING:
    from memtree_mcp.core.memory import Memory

DENSE_UNRELATED = 0.25
DENSE_SAME = 0.85
WORD_WEIGHT = 0.6
# Below this a hit is not returned unless the caller lowers the cut-off (``min_relevance``).
DEFAULT_MIN_RELEVANCE = 0.3
# When the best hit is below this, it is returned alone.
CONFIDENT = 0.55


def meaning(cosine: float) -> float:
    """The cosine of two embeddings as evidence of shared meaning, in [0, 1]."""
    return min(max((cosine - DENSE_UNRELATED) / (DENSE_SAME - DENSE_UNRELATED), 0.0), 1.0)


def relevance(cosine: float, words: float = 0.0) -> float:
    """Relevance from a cosine and the idf-weighted share of the query's words present, in [0, 1]."""
    return 1.0 - (1.0 - meaning(cosine)) * (1.0 - WORD_WEIGHT * min(max(words, 0.0), 1.0))


class QueryRelevance:
    """The relevance of recalled nodes to one query, computed on demand. With ``lend``, a memory
    borrows what a neighbour in time by another author has (``decay``^r at r places, r ≤ ``radius``),
    as hybrid recall's propagation ranks it up for it."""

    def __init__(
        self, memory: Memory, query: Vector, query_text: str, *, lend: bool, decay: float, radius: int
    ) -> None:
        self._memory = memory
        self._query = query
        self._text = query_text
        self._lend = lend
        self._decay = decay
        self._radius = radius
        self._own: dict[str, float] = {}
        self._places: np.ndarray | None = None

    def of(self, node: Leaf | Branch) -> float:
        """``node``'s relevance: its own, or for a memory what its neighbours in time lend it."""
        if isinstance(node, Branch):
            tree = self._memory.tree(node.tree)
            return relevance(float(tree.match_vector_of(node.id) @ self._query))
        found = self.own(node)
        if self._lend:
            index = self._memory.leaf_index
            timeline = self._memory.timeline()
            if self._places is None:
                # One pass over the timeline per recall, not one per candidate.
                self._places = timeline.positions()
            for row, distance in timeline.neighbours(index.row(node.id), self._places, self._radius):
                neighbour = self._memory.leaves[index.id_at(row)]
                if neighbour.role != node.role:  # a reply, or what it replies to
                    found = max(found, self._decay**distance * self.own(neighbour))
        return found

    def own(self, leaf: Leaf) -> float:
        """What ``leaf`` itself shares with the query: meaning and words."""
        known = self._own.get(leaf.id)
        if known is None:
            words = self._memory.lexical.coverage(self._text, leaf.id) if self._text else 0.0
            known = self._own[leaf.id] = relevance(float(leaf.vector @ self._query), words)
        return known
