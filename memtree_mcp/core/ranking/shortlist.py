"""Dense scores from a shortlist: what recall computes instead of one product with every leaf when
a namespace is large enough to be searched through an index first.

``gather`` and ``hybrid`` standardise each leaf's cosine to the query over all leaves, then fuse it
with BM25, the authors and dates a query names, and the scores of neighbours in time
(``core/ranking/recall.py``). Every step but the cosines is a few passes of scalar arithmetic per
leaf; the cosines are one product of the query with every leaf's 384 numbers, the part that grows
with the store. A :class:`Shortlist` names the leaves whose cosine is worth computing: those an
approximate nearest-neighbour index found (LanceDB's, ``store/leaf_table.py``) and those it does
not hold yet. :func:`shortlist_dense` computes their cosines exactly, and those of the leaves BM25
finds and of every shortlisted leaf's neighbours in time (whose scores it borrows); every other
leaf gets the namespace's mean cosine, a standardised score of 0, so it neither lends to its
neighbours nor takes from them, and ranks by its words, authors and dates alone.

The mean and the standard deviation that standardise the cosines are estimated from an evenly
spaced sample of :data:`SAMPLE` leaves rather than computed over all of them: with 4,096 leaves
the estimates are within about 2 % of a standard deviation, which moves every leaf's score by the
same small amount and their order not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.model import Leaf

SAMPLE = 4_096
"""How many leaves, evenly spaced over the index, estimate the mean and spread of the cosines."""
LEXICAL_ROWS = 1_000
"""The leaves with the best BM25 scores whose cosines are computed too."""


@dataclass(frozen=True, slots=True)
class Shortlist:
    """The leaves whose dense score recall computes: ``ids``, an index's nearest neighbours of the
    query and the leaves it lacks (ids no longer in the memory are ignored), and every leaf of
    ``seq`` ``since_seq`` or later, remembered after the index was last brought up to date."""

    ids: Sequence[str]
    since_seq: int | None = None


@dataclass(frozen=True, slots=True)
class DenseScores:
    """Each leaf-index row's cosine to the query (exact for ``exact`` rows, ``mean`` for the rest),
    and the mean and standard deviation (``spread``) that standardise them."""

    scores: np.ndarray
    exact: np.ndarray
    mean: float
    spread: float

    def standardised(self) -> np.ndarray:
        """The scores as z-scores over the namespace (float64); zeros when the cosines do not vary."""
        if self.spread <= 1e-6 * max(1.0, abs(self.mean)):
            return np.zeros(len(self.scores))
        return (self.scores.astype(np.float64) - self.mean) / self.spread


def leaves_since(leaves: dict[str, Leaf], seq: int) -> list[Leaf]:
    """The leaves of ``seq`` or later. Leaves join a memory in seq order, the newest last, so they
    are read from the end back to the first older one."""
    found: list[Leaf] = []
    for leaf in reversed(leaves.values()):
        if leaf.seq < seq:
            break
        found.append(leaf)
    return found


def dense_query(query: Vector, content_query: Vector | None, share: float) -> Vector:
    """The vector whose dot product with each leaf is the dense score ``gather`` ranks by: the
    query's, blended with the query without the authors it names (``content_share``)."""
    if content_query is None:
        return np.asarray(query, dtype=np.float32)
    return ((1.0 - share) * np.asarray(query) + share * np.asarray(content_query)).astype(np.float32)


def shortlist_rows(
    memory: Memory, shortlist: Shortlist, lexical_rows: np.ndarray | None, radius: int
) -> np.ndarray:
    """The leaf-index rows whose cosine is computed: the shortlist's (its ids and the leaves from
    its ``since_seq`` on), the best ``LEXICAL_ROWS`` of
    ``lexical_rows`` (already in BM25 order or not: all are kept when fewer), and the neighbours in
    time of each, ``radius`` places either way (sorted, distinct)."""
    row_of = memory.leaf_index.row_of
    rows = [row_of[leaf_id] for leaf_id in shortlist.ids if leaf_id in row_of]
    if shortlist.since_seq is not None:
        rows += [row_of[leaf.id] for leaf in leaves_since(memory.leaves, shortlist.since_seq)]
    picked = np.asarray(rows, dtype=np.int64)
    if lexical_rows is not None and len(lexical_rows):
        picked = np.concatenate([picked, lexical_rows[:LEXICAL_ROWS].astype(np.int64)])
    picked = np.unique(picked)
    if radius <= 0 or not len(picked):
        return picked
    timeline = memory.timeline()
    order = timeline.rows
    position = np.empty(len(memory.leaf_index), dtype=np.int64)
    position[order] = np.arange(len(order))
    places = position[picked]
    around = (places[:, None] + np.arange(-radius, radius + 1)[None, :]).ravel()
    around = around[(around >= 0) & (around < len(order))]
    return np.unique(np.concatenate([picked, order[around]]))


def shortlist_dense(memory: Memory, query: Vector, rows: np.ndarray) -> DenseScores:
    """Cosines of ``rows`` to ``query``, the sampled mean for every other leaf (see the module)."""
    vectors = memory.leaf_index.vectors()
    n = len(vectors)
    q = np.asarray(query, dtype=np.float32)
    step = max(1, n // SAMPLE)
    sample = vectors[::step] @ q if n else np.zeros(0, dtype=np.float32)
    mean = float(sample.mean()) if len(sample) else 0.0
    spread = float(sample.std()) if len(sample) else 0.0
    scores = np.full(n, mean, dtype=np.float32)
    if len(rows):
        scores[rows] = vectors[rows] @ q
    return DenseScores(scores=scores, exact=rows, mean=mean, spread=spread)
