"""Recall: how the nodes of one namespace's memory are ranked for a query, and which make the answer.

The vocabulary of a recall is here: :class:`RankRequest` (what the ranking is asked: the part of
a recall core reads, checked and embedded), :class:`Weights` (the tuning constants, which a
benchmark may vary per request), :class:`RecallFilter` and :class:`Hit`. :class:`Ranker` does the work over a
:class:`~memtree_mcp.core.memory.Memory`; :func:`rank` is the way in.

Strategies (measured on the LoCoMo dev split with ``bench/locomo.py``; ``docs/findings/recall-quality.md``):

- ``gather`` (default): ``hybrid`` that matches the authors a query names (the ``role`` of
  stored memories, "What did Caroline paint?") as authors, not as words: their memories get
  ``author_weight`` standard deviations more, the names leave the BM25 query, and the dense score
  mixes in (``content_share``) the query embedded with the names replaced by "they"; after the
  propagation along time each leaf gets ``segment_weight`` times the standardised BM25 score of
  its segment of the timeline scored as one document, and memories dated within a day or month
  the query names get ``date_weight`` more (``core/indexes/gathering.py``). Without a name or a date in
  the query it is ``hybrid`` plus the segment score.
- ``hybrid``: every leaf gets a dense score (cosine to the query) and a lexical one
  (BM25, ``core/indexes/lexical.py``); each is standardised over all leaves (z-scores, so neither scale
  dominates) and they are summed with the lexical one weighted by ``lexical_weight``. Relevance then
  propagates along time: each leaf adds ``neighbour_decay``^r times the score of the leaves r places
  before and after it (r ≤ ``neighbour_radius``) in the same segment of the conversation (no session
  change nor long silence between them), because what answers a question is usually said next to
  what matches it. Summaries compete by their dense score on the same standardised scale. When no
  leaf shares a word with the query nor reaches ``relevance_floor``, nothing is returned.
- ``collapsed``: MemTree's collapsed retrieval over both trees, dense only: a leaf scores its cosine,
  a summary the mean cosine of its leaves.
- ``propagate-down`` / ``propagate-up``: SegTreeMem's relevance propagation over the temporal tree
  (seed 001 §4.3): the nodes' cosines, clipped at 0 and normalised into a distribution s0, spread
  along the tree with a column-normalised transition matrix W (top-down: a branch hands its score
  to its children in equal parts; bottom-up: a node hands it to its parent) for H hops with decay
  α: s = s0 + Σ_{h=1..H} α^h W^h s0. Computed sparsely, one vectorised pass per hop.
- ``refine``: top-down refinement of the semantic tree: from the root, keep the ``beam_width`` best
  branches of each level (by mean cosine) and descend; only the nodes met on the way compete.

With ``expand``, a summary that makes the cut is replaced by its own best memories.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.indexes.arrays import Positions, Timeline
from memtree_mcp.core.indexes.gathering import dated_spans, standardised, without_names
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.names import DEFAULT_STRATEGY, KindFilter, Strategy
from memtree_mcp.core.ranking.current import Current
from memtree_mcp.core.ranking.hits import Hit, Shown, hit_of
from memtree_mcp.core.ranking.hits import estimate_tokens as estimate_tokens  # where callers find it
from memtree_mcp.core.ranking.relevance import CONFIDENT, QueryRelevance
from memtree_mcp.core.ranking.shortlist import (
    DenseScores,
    Shortlist,
    dense_query,
    shortlist_dense,
    shortlist_rows,
)
from memtree_mcp.core.trees.model import Branch, Leaf


@dataclass(frozen=True, slots=True)
class Weights:
    """The tuning constants of recall, their defaults the settings measured best (or SegTreeMem's).

    A request carries them, so an experiment passes ``Weights(lexical_weight=0.7)`` instead of
    changing module state.
    """

    # Collapsed retrieval drops nodes less similar than this (θ_retrieve of seed 000 §3.2). Unrelated
    # texts score around 0 to 0.1 with all-MiniLM-L6-v2; anything on the subject scores well above.
    min_score: float = 0.1
    # Hybrid recall answers nothing when no leaf shares a word with the query and the closest one
    # is below this: unrelated queries reach 0.11–0.15 against a small memory, related ones 0.3 and
    # more.
    relevance_floor: float = 0.2
    lexical_weight: float = 0.5
    neighbour_decay: float = 0.4
    neighbour_radius: int = 2
    # Gather recall (core/indexes/gathering.py), in standard deviations of the standardised scores: the lift
    # of a memory whose author the query names, and the weight of its segment's BM25 score; and the
    # share of the query-without-names vector in the dense score.
    author_weight: float = 0.5
    segment_weight: float = 0.5
    content_share: float = 0.5
    # The lift of a memory dated within a day or month the query names ("on 16 November, 2023").
    date_weight: float = 2.0
    # SegTreeMem's fixed setting (seed 001 Table 4): decay α = 0.1 over a horizon of H = 2 hops.
    propagation_decay: float = 0.1
    propagation_horizon: int = 2
    # Top-down refinement keeps this many branches per level of the semantic tree.
    beam_width: int = 8
    # A summary is a hit only when it gathers at least this many memories (2 when only summaries
    # are asked for): below that it repeats memories that recall ranks on their own anyway.
    summary_min_covers: int = 3


DEFAULT_WEIGHTS = Weights()


@dataclass(frozen=True, slots=True)
class RecallFilter:
    """Which nodes may be recalled. Tags and sessions belong to leaves, so they rule out summaries."""

    kind: KindFilter = "any"
    time_from: float | None = None
    time_to: float | None = None
    tags: tuple[str, ...] = ()
    session: str | None = None

    def admits_leaf(self, leaf: Leaf) -> bool:
        if self.kind == "summary":
            return False
        if self.time_from is not None and leaf.timestamp < self.time_from:
            return False
        if self.time_to is not None and leaf.timestamp > self.time_to:
            return False
        if self.tags and not set(self.tags) & set(leaf.tags):
            return False
        return self.session is None or leaf.session == self.session

    def admits_branch(self, branch: Branch) -> bool:
        if self.kind == "leaf" or self.tags or self.session is not None or branch.kind == "root":
            return False
        if self.time_from is not None and branch.last_ts < self.time_from:
            return False
        return self.time_to is None or branch.first_ts <= self.time_to


@dataclass(frozen=True, slots=True, kw_only=True)
class RankRequest:
    """What the ranking of one recall reads: built once (by the service from the caller's checked
    request, by a benchmark, by a test) and carried down to :meth:`Ranker.rank`.

    ``query`` is the query's embedding (None until it is embedded: the service checks a request
    before it embeds), ``query_text`` its text (BM25, names, dates and relevance read it).
    ``k`` hits at most, passing ``where``, within ``max_tokens`` (``cost`` of each hit, by default
    :func:`estimate_tokens` of its text); ``min_relevance``, ``expand`` and ``supersede`` as
    :meth:`Ranker.rank` says. ``content_query`` is for ``gather``: the embedding of the query
    with the authors it names replaced (:meth:`Memory.content_text`); without it the query's own
    vector stands in. ``every``: ``gather`` and ``hybrid`` rank every memory even for a query
    nothing is about (which they otherwise answer with nothing): the tools' ``min_relevance: 0``.
    ``shortlist``: for ``gather`` and ``hybrid``, the leaves whose cosine is computed, every other
    leaf taking the namespace's mean (``core/ranking/shortlist.py``); None computes every cosine.
    """

    k: int
    query: Vector | None = None
    query_text: str = ""
    strategy: Strategy = DEFAULT_STRATEGY
    where: RecallFilter = RecallFilter()
    max_tokens: int | None = None
    min_relevance: float = 0.0
    expand: bool = False
    supersede: bool = False
    cost: Callable[[Hit], float] | None = None
    content_query: Vector | None = None
    weights: Weights = DEFAULT_WEIGHTS
    every: bool = False
    shortlist: Shortlist | None = None

    def vector(self) -> Vector:
        """``query``; raises ValueError when the request was never embedded."""
        if self.query is None:
            raise ValueError("the recall request has no query vector: embed the query first")
        return self.query


def rank(memory: Memory, request: RankRequest) -> list[Hit]:
    """The hits of ``request`` in ``memory`` (:meth:`Ranker.rank`, with the request's weights)."""
    return Ranker(memory, request.weights).rank(request)


class Ranker:
    """Recall over one memory with one set of :class:`Weights`: each strategy's scores of every
    node, the ranking, and the hits drawn from it. :func:`rank` makes one per request, with the
    request's weights; it holds no state of its own beyond them."""

    def __init__(self, memory: Memory, weights: Weights = DEFAULT_WEIGHTS) -> None:
        self.memory = memory
        self.weights = weights

    def rank(self, request: RankRequest) -> list[Hit]:
        """The best ``request.k`` nodes for a query that pass ``request.where`` and fit the budget.

        Hits are taken in score order. A hit below ``min_relevance`` (see ``core/ranking/relevance.py``)
        is left out, and so is one that would repeat what an earlier hit shows: a summary of a
        single memory, a memory an earlier summary already quotes whole, the parts of a summary
        already shown (the rest of it stays); when no hit reaches ``CONFIDENT``, only the
        best-ranked one is kept (below the cut-off, only its latest update when it has one). With
        ``supersede``, a memory that a later one says it updates (a stored link, ``supersedes``)
        is marked ``superseded_by`` it, and that memory is always a hit of the result
        (``core/ranking/current.py``): just before it with a cut-off, where of two memories on one subject
        the newer comes first too, linked or not; with ``min_relevance`` 0 the ranking keeps its
        order and the updates that were no hits come after it. Then hits are taken in order up to ``k``
        ranked ones (updates that joined are more), each only with its update, within
        ``max_tokens`` (``cost`` of each hit, by default its text's tokens): one that does not fit
        in what is left is skipped, so a long summary never crowds out the short memories that
        follow it. With ``expand``, only memories are returned: a summary in the ranking stands
        for its memories, which take its place, best first, those already taken or filtered out
        left aside. Raises ValueError for a request without a query vector.
        """
        query, query_text, strategy = request.vector(), request.query_text, request.strategy
        k, max_tokens, min_relevance = request.k, request.max_tokens, request.min_relevance
        where = final_where = request.where
        # Ask for more than k when a budget may make some hits be skipped.
        want = k if max_tokens is None else 4 * k
        if request.expand:
            # Summaries must make the ranking to be expanded; the memories they bring are filtered.
            where = RecallFilter(time_from=where.time_from, time_to=where.time_to)
        ids: Positions | list[str]
        if strategy == "gather":
            ids, scores = self.gathered(
                query, query_text, request.content_query, every=request.every, shortlist=request.shortlist
            )
            ranked = self._ranked(ids, scores, where, want, -math.inf)
        elif strategy == "hybrid":
            ids, scores = self.hybrid(query, query_text, every=request.every, shortlist=request.shortlist)
            ranked = self._ranked(ids, scores, where, want, -math.inf)
        elif strategy in ("propagate-down", "propagate-up"):
            ids, scores = self.propagated(query, strategy == "propagate-down")
            ranked = self._ranked(ids, scores, where, want, 1e-12)
        elif strategy == "refine":
            ids, scores = self.refined(query)
            ranked = self._ranked(ids, scores, where, want, -math.inf)
        else:
            ids, scores = self.collapsed(query)
            ranked = self._ranked(ids, scores, where, want, self.weights.min_score)
        if request.expand:
            ranked = self._expanded(ranked, ids, scores, query, final_where)
        judge = QueryRelevance(
            self.memory,
            query,
            query_text,
            lend=strategy in ("gather", "hybrid"),
            decay=self.weights.neighbour_decay,
            radius=self.weights.neighbour_radius,
        )
        min_covers = 2 if final_where.kind == "summary" else self.weights.summary_min_covers
        shown = Shown(min_covers)
        chosen: list[Hit] = []
        first: Hit | None = None  # the best-ranked hit, whatever its relevance
        for node_id, score in ranked:
            node = self.memory.node(node_id)
            relevance = judge.of(node)
            if relevance < min_relevance and first is not None:
                continue
            text = shown.fresh_text(node)
            if text is None:
                continue
            hit = hit_of(self.memory, node, score, relevance, text)
            first = first or hit
            if relevance >= min_relevance:
                chosen.append(hit)
            if len(chosen) == want:
                break
        hint = False  # the one hit is shown although it misses the cut-off
        if min_relevance > 0 and first is not None and all(h.relevance < CONFIDENT for h in chosen):
            # Only weak matches, the signature of a question about something never stored (or
            # asked in other words than the memory's): the best-ranked hit alone, with its update.
            chosen, hint = [first], first.relevance < min_relevance
        current = Current(
            self.memory, shown, lambda leaf, score: hit_of(self.memory, leaf, score, judge.of(leaf))
        )
        if request.supersede:
            # Without a cut-off the caller wants the ranking itself: the hits keep their order and
            # updates join after them (moving them cost 0.4 points of R@10 on LoCoMo, where
            # questions about the past are often answered by the earlier statement).
            chosen = current.with_updates(chosen, move=min_relevance > 0)
            if hint:
                # A hint below the cut-off is one line: the current version of what ranked first.
                chosen = [hit for hit in chosen if hit.superseded_by is None]
        return current.within_budget(chosen, k, max_tokens, request.cost)

    def _branch_scores(
        self, query: Vector, leaf_scores: np.ndarray
    ) -> tuple[list[list[str | None]], np.ndarray]:
        """Every internal branch's similarity to ``query``, as parts of positions and their scores.

        Aggregated: each tree's branch positions (holes and roots score -inf), the mean of the
        leaves' scores. Otherwise the branch index, one product with every match vector.
        """
        memory = self.memory
        if not memory.aggregate:
            ids, dense = memory.branch_index.scores(query)
            return [list(ids)], dense
        parts: list[list[str | None]] = []
        means: list[np.ndarray] = []
        for arrays in memory.arrays.values():
            parts.append(arrays.ids)
            means.append(np.where(arrays.eligible[: len(arrays.ids)], arrays.means(leaf_scores), -np.inf))
        return parts, np.concatenate(means)

    def collapsed(self, query: Vector) -> tuple[Positions, np.ndarray]:
        """Collapsed scores: each leaf's cosine to ``query``, each branch's (:meth:`_branch_scores`)."""
        leaf_scores = self.memory.leaf_index.score_array(query)
        parts, branch_scores = self._branch_scores(query, leaf_scores)
        return Positions(self.memory.leaf_index, parts), np.concatenate([leaf_scores, branch_scores])

    def hybrid(
        self, query: Vector, query_text: str, *, every: bool = False, shortlist: Shortlist | None = None
    ) -> tuple[Positions, np.ndarray]:
        """Hybrid scores: dense and BM25 standardised and summed, propagated along time; summaries by
        their dense score on the leaves' scale. A query nothing is about gets none, unless ``every``;
        ``shortlist`` as :class:`RankRequest` says."""
        memory, weights = self.memory, self.weights
        lexical = self.lexical_rows(query_text) if query_text else None
        listed = self._listed(query, shortlist, lexical)
        dense = memory.leaf_index.score_array(query) if listed is None else listed.scores
        exact = dense if listed is None else dense[listed.exact]
        unrelated = not len(exact) or float(exact.max()) < weights.relevance_floor
        if not len(dense) or (not every and lexical is None and unrelated):
            # Nothing is about the query at all: answer nothing rather than the least unrelated.
            return Positions(memory.leaf_index, []), dense[:0]
        if listed is None:
            mean, spread = float(dense.mean()), float(dense.std()) + 1e-6
        else:
            mean, spread = listed.mean, listed.spread + 1e-6
        fused = (dense - mean) / spread
        if lexical is not None:
            rows, values = lexical
            bm25 = np.zeros(len(dense), dtype=np.float32)
            bm25[rows] = values
            fused += weights.lexical_weight * (bm25 - bm25.mean()) / (float(bm25.std()) + 1e-6)
        fused = memory.timeline().propagate(fused, weights.neighbour_decay, weights.neighbour_radius)
        # Summaries have no lexical score: they compete by their dense score on the leaves' scale.
        parts, branch_dense = self._branch_scores(query, dense)
        return Positions(memory.leaf_index, parts), np.concatenate([fused, (branch_dense - mean) / spread])

    def gathered(
        self,
        query: Vector,
        query_text: str,
        content_query: Vector | None,
        *,
        every: bool = False,
        shortlist: Shortlist | None = None,
    ) -> tuple[Positions, np.ndarray]:
        """Gather scoring (``core/indexes/gathering.py``): hybrid's fusion with the authors the query names
        matched as authors, and each memory lifted by its segment's BM25 score; ``every`` and
        ``shortlist`` as for :meth:`hybrid`."""
        memory, weights = self.memory, self.weights
        names = memory.authors_named(query_text) if query_text else []
        words = without_names(query_text, names, stand_in=" ") if names else query_text
        lexical = self.lexical_rows(words) if words else None
        # The blend of the two cosines is the cosine with the blend of the two vectors: one
        # matrix-vector product. The query's own cosines are computed only if the floor below
        # needs them (a query that names an author never does).
        blend = dense_query(query, content_query, weights.content_share)
        listed = self._listed(blend, shortlist, lexical)
        if listed is not None:
            dense = listed.scores
        elif content_query is None:
            dense = memory.leaf_index.score_array(query)
        else:
            dense = memory.leaf_index.vectors() @ blend
        if not len(dense):
            return Positions(memory.leaf_index, []), dense[:0]
        if lexical is None and not names and not every:
            if listed is not None:
                rows = listed.exact
                cosines = memory.leaf_index.vectors()[rows] @ np.asarray(query, dtype=np.float32)
            else:
                cosines = dense if content_query is None else memory.leaf_index.score_array(query)
            if not len(cosines) or float(cosines.max()) < weights.relevance_floor:
                return Positions(memory.leaf_index, []), dense[:0]
        if listed is None:
            mean, spread = float(dense.mean()), float(dense.std()) + 1e-6
            fused = standardised(dense)
        else:
            mean, spread = listed.mean, listed.spread + 1e-6
            fused = listed.standardised()
        if lexical is not None:
            rows, values = lexical
            bm25 = np.zeros(len(dense), dtype=np.float64)
            bm25[rows] = values
            fused = fused + weights.lexical_weight * standardised(bm25)
        if names:
            fused = fused + weights.author_weight * self._by_authors(names)
        spans = dated_spans(query_text, memory.calendar) if query_text else []
        if spans:
            fused = fused + weights.date_weight * self._dated_within(spans)
        timeline = memory.timeline()
        fused = timeline.propagate(fused, weights.neighbour_decay, weights.neighbour_radius)
        if lexical is not None:
            fused = fused + weights.segment_weight * self._segment_lift(words, timeline)
        parts, branch_dense = self._branch_scores(query, dense)
        return Positions(memory.leaf_index, parts), np.concatenate([fused, (branch_dense - mean) / spread])

    def _listed(
        self, query: Vector, shortlist: Shortlist | None, lexical: tuple[np.ndarray, np.ndarray] | None
    ) -> DenseScores | None:
        """The dense scores of ``shortlist`` (None: compute every leaf's, the caller's way): the
        listed leaves, the best BM25 matches and their neighbours in time (``core/ranking/shortlist.py``)."""
        if shortlist is None:
            return None
        lexical_rows = None
        if lexical is not None:
            rows, values = lexical
            lexical_rows = rows[np.argsort(-values, kind="stable")]
        rows = shortlist_rows(self.memory, shortlist, lexical_rows, self.weights.neighbour_radius)
        return shortlist_dense(self.memory, query, rows)

    def _by_authors(self, names: Collection[str]) -> np.ndarray:
        """1 for each leaf-index row whose memory's author is one of ``names`` (any case), else 0."""
        memory = self.memory
        codes = [memory.author_code[key] for name in names if (key := name.casefold()) in memory.author_code]
        slots = np.flatnonzero((memory.slot_row >= 0) & np.isin(memory.slot_author, codes))
        out = np.zeros(len(memory.leaf_index))
        out[memory.slot_row[slots]] = 1.0
        return out

    def _dated_within(self, spans: Sequence[tuple[float, float]]) -> np.ndarray:
        """1 for each leaf-index row whose memory is dated within one of ``spans`` ([start, end)),
        else 0; all zeros when every memory is, as the date then tells them nothing apart."""
        memory = self.memory
        live = memory.slot_row >= 0
        inside = np.zeros(len(memory.slot_row), dtype=bool)
        for start, end in spans:
            inside |= (memory.slot_stamp >= start) & (memory.slot_stamp < end)
        out = np.zeros(len(memory.leaf_index))
        out[memory.slot_row[live & inside]] = 1.0
        if out.all():
            out[:] = 0.0
        return out

    def _segment_lift(self, words: str, timeline: Timeline) -> np.ndarray:
        """By leaf-index row, the standardised BM25 score of the memory's segment of the timeline,
        the segment scored as one document (segments count as the documents of the standardising)."""
        memory = self.memory
        n = len(memory.leaf_index)
        segment_of_row = timeline.segment_of_rows(n)
        groups = int(segment_of_row.max()) + 1 if n else 0
        slot_rows = memory.slot_row
        group_of_slot = np.where(slot_rows >= 0, segment_of_row[np.maximum(slot_rows, 0)], -1)
        scores = memory.lexical.group_score_array(words, group_of_slot, groups)
        lift = np.zeros(groups)
        if scores is not None and groups:
            held = np.bincount(segment_of_row, minlength=groups) > 0  # numbers a removal left empty
            lift[held] = standardised(scores[held])
        return lift[segment_of_row]

    def lexical_rows(self, query_text: str) -> tuple[np.ndarray, np.ndarray] | None:
        """Leaf-index rows of the leaves sharing a word with the query, and their BM25 scores."""
        array = self.memory.lexical.score_array(query_text)
        if array is None:
            return None
        slots = np.flatnonzero(array > 0.0)
        if not len(slots):
            return None
        return self.memory.slot_row[slots], array[slots]

    def propagated(self, query: Vector, top_down: bool) -> tuple[Positions, np.ndarray]:
        """Propagation scores (SegTreeMem) of the temporal tree's nodes, top-down or bottom-up."""
        memory, weights = self.memory, self.weights
        structure = memory.temporal_structure()
        leaf_scores = memory.leaf_index.score_array(query)
        n = len(leaf_scores)
        local = np.zeros(len(structure.ids), dtype=np.float64)
        local[structure.leaf_rows] = leaf_scores
        if memory.aggregate:
            arrays = memory.arrays["temporal"]
            means = np.where(arrays.has_vector[: len(arrays.ids)], arrays.means(leaf_scores), 0.0)
            local[n:] = means[structure.branch_positions]
        else:
            for position, branch_id in enumerate(structure.ids[n:], start=n):
                assert branch_id is not None
                if memory.temporal.branches[branch_id].vector is not None:
                    local[position] = float(memory.temporal.match_vector_of(branch_id) @ query)
        local = np.clip(local, 0.0, None)
        total = float(local.sum())
        if total == 0.0:
            return Positions(memory.leaf_index, []), local[:0]
        scores = structure.propagate(
            local / total, top_down, weights.propagation_decay, weights.propagation_horizon
        )
        return Positions(memory.leaf_index, [structure.ids[n:]]), scores

    def refined(self, query: Vector) -> tuple[list[str], np.ndarray]:
        """Refine scores: the semantic tree's nodes a beam meets on its way down, by match cosine."""
        tree = self.memory.semantic
        ids: list[str] = []
        scores: list[float] = []
        beam = [tree.root.id]
        while beam:
            children = [child for node in beam for child in tree.branches[node].children]
            if not children:
                break
            similarity = np.stack([tree.match_vector_of(c) for c in children]) @ query
            ids += children
            scores += similarity.tolist()
            internal = [
                (float(s), c) for c, s in zip(children, similarity, strict=True) if c in tree.branches
            ]
            beam = [c for _, c in sorted(internal, key=lambda p: (-p[0], p[1]))[: self.weights.beam_width]]
        return ids, np.asarray(scores, dtype=np.float32)

    def _expanded(
        self,
        ranked: list[tuple[str, float]],
        ids: Positions | list[str],
        scores: np.ndarray,
        query: Vector,
        where: RecallFilter,
    ) -> list[tuple[str, float]]:
        """``ranked`` with each summary replaced by its memories that ``where`` admits and that are
        not taken yet, best first by their own score."""
        memory = self.memory
        if isinstance(ids, Positions):
            # Every leaf is ranked, at its leaf-index row.
            def score_of(leaf_id: str) -> float:
                return float(scores[memory.leaf_index.row(leaf_id)])
        else:
            known = dict(zip(ids, scores.tolist(), strict=True))

            def score_of(leaf_id: str) -> float:
                found = known.get(leaf_id)
                return float(memory.leaves[leaf_id].vector @ query) if found is None else found

        taken: set[str] = set()
        out: list[tuple[str, float]] = []
        for node_id, score in ranked:
            branch = memory.branch(node_id)
            if branch is None:
                if node_id not in taken and where.admits_leaf(memory.leaves[node_id]):
                    taken.add(node_id)
                    out.append((node_id, score))
                continue
            tree = memory.tree(branch.tree)
            members = [n for n in tree.leaves_under(branch.id) if n not in taken]
            members = [n for n in members if where.admits_leaf(memory.leaves[n])]
            member_scores = {n: score_of(n) for n in members}
            members.sort(key=lambda n: (-member_scores[n], n))
            for member in members:
                taken.add(member)
                out.append((member, member_scores[member]))
        return out

    def _ranked(
        self,
        ids: Positions | list[str],
        scores: np.ndarray,
        where: RecallFilter,
        want: int,
        min_score: float,
    ) -> list[tuple[str, float]]:
        """The admitted ids best first (ties by id), at least ``want`` of them when there are so many.

        Only the top of the ranking is sorted; it widens when filters turn too many of it away.
        Positions without a node (freed branch positions) and scores of -inf are never admitted.
        """
        n = len(scores)
        size = min(n, max(4 * want, 64))
        while True:
            top = np.argpartition(-scores, size - 1)[:size] if size < n else np.arange(n)
            candidates = [(float(scores[i]), ids[i]) for i in top]
            ordered = sorted(
                ((s, i) for s, i in candidates if i is not None and s > -math.inf),
                key=lambda p: (-p[0], p[1]),
            )
            admitted = [(i, s) for s, i in ordered if s >= min_score and self._admits(i, where)]
            if len(admitted) >= want or size >= n:
                return admitted
            size = min(n, size * 4)

    def _admits(self, node_id: str, where: RecallFilter) -> bool:
        leaf = self.memory.leaves.get(node_id)
        if leaf is not None:
            return where.admits_leaf(leaf)
        branch = self.memory.branch(node_id)
        return branch is not None and where.admits_branch(branch)
