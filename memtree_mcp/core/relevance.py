"""How relevant a recalled memory is, on a scale that means the same in every call, and which
memories a later one updates.

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
two answers (``docs/benchmarks.md``).

**Updates.** A later memory supersedes an earlier one when they speak of the same subject and the
later one changes it, judged without an LLM from what the memories themselves show
(:func:`supersedes`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.lexical import LexicalIndex
from memtree_mcp.core.model import Branch, Leaf

if TYPE_CHECKING:
    from memtree_mcp.core.memory import Memory

DENSE_UNRELATED = 0.25
DENSE_SAME = 0.85
WORD_WEIGHT = 0.6
# Below this a hit is not returned unless the caller lowers the cut-off (``min_relevance``).
DEFAULT_MIN_RELEVANCE = 0.3
# When the best hit is below this, it is returned alone.
CONFIDENT = 0.55

# An update speaks of the same subject (similar meaning, and a good share of the earlier memory's
# distinctive words: each above its floor, and together above UPDATE_SUBJECT) and changes it: it
# says so ("now", "moved", "fixed"…), or only values differ ("Standup is at 9:30" → "… at 10:00").
UPDATE_MEANING = 0.45
UPDATE_SHARED_WORDS = 0.2
UPDATE_SUBJECT = 0.8
VALUE_CHANGE_MEANING = 0.6
VALUE_CHANGE_SHARED_WORDS = 0.5
# Words that say a state changed or still holds: English change verbs and adverbs of time.
UPDATE_CUES = frozenset(
    """
    now still anymore longer instead since currently moved moves changed changes switched replaced
    fixed resolved closed reopened updated renamed became becomes promoted left joined cancelled
    canceled reverted dropped migrated deprecated retired stopped started resumed postponed
    rescheduled raised lowered increased decreased bumped cut reduced extended shortened upgraded
    downgraded rewrote rewriting rewritten
    """.split()
)
_RAW_WORD = re.compile(r"[a-z]+")


def meaning(cosine: float) -> float:
    """The cosine of two embeddings as evidence of shared meaning, in [0, 1]."""
    return min(max((cosine - DENSE_UNRELATED) / (DENSE_SAME - DENSE_UNRELATED), 0.0), 1.0)


def relevance(cosine: float, words: float = 0.0) -> float:
    """Relevance from a cosine and the idf-weighted share of the query's words present, in [0, 1]."""
    return 1.0 - (1.0 - meaning(cosine)) * (1.0 - WORD_WEIGHT * min(max(words, 0.0), 1.0))


def supersedes(newer: Leaf, older: Leaf, lexical: LexicalIndex) -> bool:
    """Whether ``newer`` updates what ``older`` said: later, on the same subject, and changing it.

    Same subject: cosine at least :data:`UPDATE_MEANING`, at least :data:`UPDATE_SHARED_WORDS`
    of ``older``'s terms (idf-weighted) in ``newer``, and the two adding up to
    :data:`UPDATE_SUBJECT`. Changing it: ``newer`` carries a word of
    :data:`UPDATE_CUES`, or every term that differs between them holds a digit (a value changed)
    with a closer match (:data:`VALUE_CHANGE_MEANING`, :data:`VALUE_CHANGE_SHARED_WORDS`).
    Both memories must be in ``lexical``.
    """
    return UpdateJudge(lexical).supersedes(newer, older)


class UpdateJudge:
    """:func:`supersedes` for many pairs of memories of one unchanging index: what it reads of
    each memory (its terms, their idf weights, its change words) is read once: a recall judges
    about fifty pairs among a few dozen memories. Valid while ``lexical`` does not change."""

    def __init__(self, lexical: LexicalIndex) -> None:
        self._lexical = lexical
        self._terms: dict[str, dict[str, int]] = {}
        self._weights: dict[str, tuple[dict[str, float], float]] = {}
        self._cued: dict[str, bool] = {}

    def supersedes(self, newer: Leaf, older: Leaf) -> bool:
        """See :func:`supersedes`."""
        if (newer.timestamp, newer.seq) <= (older.timestamp, older.seq) or newer.text == older.text:
            return False
        cosine = float(newer.vector @ older.vector)
        if cosine < UPDATE_MEANING:
            return False
        old_terms, new_terms = self.terms(older.id), self.terms(newer.id)
        weights, total = self._weighted(older.id, old_terms)
        found = sum(weight for term, weight in weights.items() if term in new_terms)
        shared = found / total if total else 0.0
        if shared < UPDATE_SHARED_WORDS or cosine + shared < UPDATE_SUBJECT:
            return False
        if self._says_change(newer):
            return True
        differing = set(old_terms).symmetric_difference(new_terms)
        return (
            bool(differing)
            and all(any(c.isdigit() for c in term) for term in differing)
            and cosine >= VALUE_CHANGE_MEANING
            and shared >= VALUE_CHANGE_SHARED_WORDS
        )

    def terms(self, leaf_id: str) -> dict[str, int]:
        """``LexicalIndex.terms``, read once per memory."""
        known = self._terms.get(leaf_id)
        if known is None:
            known = self._terms[leaf_id] = self._lexical.terms(leaf_id)
        return known

    def _weighted(self, leaf_id: str, terms: dict[str, int]) -> tuple[dict[str, float], float]:
        known = self._weights.get(leaf_id)
        if known is None:
            weights = {term: self._lexical.idf(term) for term in terms}
            known = self._weights[leaf_id] = (weights, sum(weights.values()))
        return known

    def _says_change(self, leaf: Leaf) -> bool:
        known = self._cued.get(leaf.id)
        if known is None:
            known = self._cued[leaf.id] = bool(UPDATE_CUES.intersection(_RAW_WORD.findall(leaf.text.lower())))
        return known


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


class Updates:
    """Which memories update which (:meth:`Memory.newest_update`) for the hits of one recall, all
    hits at once, among the ``candidates`` and the first ``siblings`` semantic siblings of each hit
    (the latest ``judged`` of those close in meaning are judged word by word): the candidates they
    share and their semantic siblings are gathered once, ordered latest first once, compared in
    meaning with every hit in one matrix product, and what the judge reads of each memory is read
    once. Done hit by hit, with each pair's words read afresh, this took about 2 ms of the 6 to
    9 ms of CPU of a recall at 10k memories (``bench/recall_ab.py``, retired; in git at 4868398)."""

    def __init__(self, memory: Memory, candidates: Iterable[str], siblings: int, judged: int) -> None:
        self._memory = memory
        self._candidates = list(dict.fromkeys(candidates))
        self._siblings = siblings
        self._judged = judged
        self._judge = UpdateJudge(memory.lexical)

    def newest(self, older: Leaf) -> Leaf | None:
        """The latest memory among the candidates and ``older``'s semantic siblings that updates it."""
        return self.newest_of([older])[0]

    def newest_of(self, olders: Sequence[Leaf]) -> list[Leaf | None]:
        """:meth:`newest` of each of ``olders``."""
        memory = self._memory
        parents = [memory.semantic.parent_of.get(older.id) for older in olders]
        siblings = {
            parent: memory.semantic.branches[parent].children[: self._siblings]
            for parent in dict.fromkeys(parents)
            if parent is not None
        }
        ids = dict.fromkeys(self._candidates)
        for children in siblings.values():
            ids.update(dict.fromkeys(children))
        found = [leaf for leaf in map(memory.leaves.get, ids) if leaf is not None]
        if not found or not olders:
            return [None] * len(olders)
        stamps = np.fromiter((leaf.timestamp for leaf in found), dtype=np.float64, count=len(found))
        seqs = np.fromiter((leaf.seq for leaf in found), dtype=np.int64, count=len(found))
        latest_first = np.lexsort((seqs, stamps))[::-1]
        pool = [found[i] for i in latest_first]
        stamps, seqs = stamps[latest_first], seqs[latest_first]
        place = {leaf.id: i for i, leaf in enumerate(pool)}
        shared = np.zeros(len(pool), dtype=bool)
        shared[[place[c] for c in self._candidates if c in place]] = True
        among: dict[str | None, np.ndarray] = {None: shared}
        for parent, children in siblings.items():
            among[parent] = shared.copy()
            among[parent][[place[c] for c in children if c in place]] = True
        row_of = memory.leaf_index.row_of
        rows = np.fromiter((row_of[leaf.id] for leaf in pool), dtype=np.int64, count=len(pool))
        cosines = memory.leaf_index.vectors()[rows] @ np.stack([older.vector for older in olders]).T
        close = cosines >= UPDATE_MEANING
        out: list[Leaf | None] = []
        for j, older in enumerate(olders):
            later = (stamps > older.timestamp) | ((stamps == older.timestamp) & (seqs > older.seq))
            judged = np.flatnonzero(among[parents[j]] & later & close[:, j])[: self._judged]
            out.append(next((pool[i] for i in judged if self._judge.supersedes(pool[i], older)), None))
        return out
