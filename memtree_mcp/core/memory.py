"""One namespace's memory in RAM: its leaves, the two trees over them, and the indexes that rank them.

Recall strategies (measured on the LoCoMo dev split with ``bench/locomo.py``; ``docs/benchmarks.md``):

- ``hybrid`` (default): every leaf gets a dense score (cosine to the query) and a lexical one
  (BM25, ``core/lexical.py``); each is standardised over all leaves (z-scores, so neither scale
  dominates) and they are summed with the lexical one weighted by ``LEXICAL_WEIGHT``. Relevance then
  propagates along time: each leaf adds ``NEIGHBOUR_DECAY``^r times the score of the leaves r places
  before and after it (r ≤ ``NEIGHBOUR_RADIUS``) in the same segment of the conversation (no session
  change nor long silence between them), because what answers a question is usually said next to
  what matches it. Summaries compete by their dense score on the same standardised scale. When no
  leaf shares a word with the query nor reaches ``RELEVANCE_FLOOR``, nothing is returned.
- ``collapsed``: MemTree's collapsed retrieval over both trees, dense only: a leaf scores its cosine,
  a summary the mean cosine of its leaves.
- ``propagate-down`` / ``propagate-up``: SegTreeMem's relevance propagation over the temporal tree
  (seed 001 §4.3): the nodes' cosines, clipped at 0 and normalised into a distribution s0, spread
  along the tree with a column-normalised transition matrix W (top-down: a branch hands its score
  to its children in equal parts; bottom-up: a node hands it to its parent) for H hops with decay
  α: s = s0 + Σ_{h=1..H} α^h W^h s0. Computed sparsely, one vectorised pass per hop.
- ``refine``: top-down refinement of the semantic tree: from the root, keep the ``BEAM_WIDTH`` best
  branches of each level (by mean cosine) and descend; only the nodes met on the way compete.

With ``expand``, a summary that makes the cut is replaced by its own best memories.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from memtree_mcp.core.embedding import Matrix, Vector
from memtree_mcp.core.hierarchy import Linkage
from memtree_mcp.core.index import VectorIndex
from memtree_mcp.core.lexical import LexicalIndex
from memtree_mcp.core.model import Branch, Leaf
from memtree_mcp.core.semantic import SemanticTree, VectorMode
from memtree_mcp.core.temporal import CompatibilityPolicy, CosinePolicy, TemporalTree, is_boundary

HitKind = Literal["leaf", "summary"]
KindFilter = Literal["any", "leaf", "summary"]
Strategy = Literal["hybrid", "collapsed", "propagate-down", "propagate-up", "refine"]
STRATEGIES: tuple[Strategy, ...] = ("hybrid", "collapsed", "propagate-down", "propagate-up", "refine")

# Collapsed retrieval drops nodes less similar than this (θ_retrieve of seed 000 §3.2). Unrelated
# texts score around 0 to 0.1 with all-MiniLM-L6-v2; anything on the subject scores well above.
MIN_SCORE = 0.1
# Hybrid recall answers nothing when no leaf shares a word with the query and the closest one is
# below this: unrelated queries reach 0.11–0.15 against a small memory, related ones 0.3 and more.
RELEVANCE_FLOOR = 0.2
LEXICAL_WEIGHT = 0.5
NEIGHBOUR_DECAY = 0.4
NEIGHBOUR_RADIUS = 2
# SegTreeMem's fixed setting (seed 001 Table 4): decay α = 0.1 over a horizon of H = 2 hops.
PROPAGATION_DECAY = 0.1
PROPAGATION_HORIZON = 2
# Top-down refinement keeps this many branches per level of the semantic tree.
BEAM_WIDTH = 8


def estimate_tokens(text: str) -> int:
    """A cheap, conservative token count for budgets: about four characters a token."""
    return max(1, math.ceil(len(text) / 4))


@dataclass(slots=True)
class Hit:
    """One recalled node, ready to show to a model."""

    id: str
    text: str
    kind: HitKind
    tree: str
    depth: int
    score: float
    first_ts: float
    last_ts: float
    breadcrumb: list[str] = field(default_factory=list)


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


class Memory:
    """The in-memory state of one namespace; the store persists it and rebuilds it on load."""

    def __init__(
        self,
        dimension: int,
        *,
        vector_mode: VectorMode = "centroid",
        linkage: Linkage = "average",
        embed: Callable[[Sequence[str]], Matrix] | None = None,
        temporal_policy: CompatibilityPolicy | None = None,
    ) -> None:
        self.dimension = dimension
        self.leaves: dict[str, Leaf] = {}
        self.semantic = SemanticTree(
            self.leaves, dimension, vector_mode=vector_mode, linkage=linkage, embed=embed
        )
        self.temporal = TemporalTree(self.leaves, dimension, policy=temporal_policy or CosinePolicy())
        self.leaf_index = VectorIndex(dimension)
        self.branch_index = VectorIndex(dimension)
        self.lexical = LexicalIndex()
        self._by_hash: dict[str, str] = {}
        self._timeline: _Timeline | None = None
        self._structure: _TreeStructure | None = None
        self.next_seq = 0

    # -- loading ---------------------------------------------------------------------------------

    def load(self, leaves: Iterable[Leaf], branches: Iterable[Branch]) -> None:
        """Replace the whole state with stored nodes."""
        self.leaves.clear()
        self._by_hash.clear()
        self.lexical = LexicalIndex()
        ordered = sorted(leaves, key=lambda leaf: leaf.seq)
        self.leaf_index = VectorIndex(self.dimension, capacity=len(ordered) + 16)
        for leaf in ordered:
            self.leaves[leaf.id] = leaf
            if leaf.content_hash:
                self._by_hash[leaf.content_hash] = leaf.id
            self.leaf_index.upsert(leaf.id, leaf.vector)
            self.lexical.add(leaf.id, leaf.text)
        self.next_seq = (ordered[-1].seq + 1) if ordered else 0
        stored = list(branches)
        self.semantic.adopt([b for b in stored if b.tree == "semantic"])
        self.temporal.adopt([b for b in stored if b.tree == "temporal"])
        self.branch_index = VectorIndex(self.dimension, capacity=len(stored) + 16)
        for tree in (self.semantic, self.temporal):
            for branch in tree.branches.values():
                self._index_branch(branch)
        self._timeline = None
        self._structure = None

    # -- writing ---------------------------------------------------------------------------------

    def duplicate_of(self, content_hash: str) -> str | None:
        """The id of a stored leaf with exactly this content, if there is one."""
        return self._by_hash.get(content_hash)

    def add_leaf(self, leaf: Leaf) -> set[str]:
        """Store ``leaf`` and insert it into both trees; return the ids of all nodes that changed.

        Raises ValueError for a leaf id already stored or a sequence number not after the last one.
        """
        if leaf.id in self.leaves:
            raise ValueError(f"leaf {leaf.id} is already stored")
        if leaf.seq < self.next_seq:
            raise ValueError(f"leaf {leaf.id} has seq {leaf.seq}; the next is {self.next_seq}")
        last = self.temporal.last_leaf
        previous = self.leaves[last] if last is not None else None
        self.leaves[leaf.id] = leaf
        if leaf.content_hash:
            self._by_hash[leaf.content_hash] = leaf.id
        self.next_seq = leaf.seq + 1
        changed = self.semantic.insert(leaf) | self.temporal.insert(leaf)
        self.leaf_index.upsert(leaf.id, leaf.vector)
        self.lexical.add(leaf.id, leaf.text)
        for node_id in changed:
            branch = self.branch(node_id)
            if branch is not None:
                self._index_branch(branch)
        if self._timeline is not None:
            # Leaves arrive in time order: the timeline grows at its end instead of being rebuilt.
            boundary = is_boundary(previous, leaf, self.temporal.gap_seconds)
            self._timeline.append(self.leaf_index.row(leaf.id), boundary)
        self._structure = None
        return changed

    def remove_leaf(self, leaf_id: str) -> tuple[set[str], set[str]]:
        """Forget a leaf everywhere: both trees, the indexes, the duplicate check.

        Returns ``(changed, removed)``: ids of nodes whose stored rows must be rewritten, and ids of
        nodes that no longer exist (the leaf and every branch dissolved). Raises KeyError for an
        unknown leaf.
        """
        if leaf_id not in self.leaves:
            raise KeyError(leaf_id)
        changed: set[str] = set()
        removed: set[str] = {leaf_id}
        for tree in (self.semantic, self.temporal):
            tree_changed, tree_removed = tree.remove(leaf_id)
            changed |= tree_changed
            removed |= tree_removed
        leaf = self.leaves.pop(leaf_id)
        if self._by_hash.get(leaf.content_hash) == leaf_id:
            del self._by_hash[leaf.content_hash]
        self.leaf_index.remove(leaf_id)
        self.lexical.remove(leaf_id)
        for node_id in removed:
            self.branch_index.remove(node_id)
        changed -= removed
        for node_id in changed:
            branch = self.branch(node_id)
            if branch is not None:
                self._index_branch(branch)
        self._timeline = None
        self._structure = None
        return changed, removed

    def _index_branch(self, branch: Branch) -> None:
        # A root stands for everything at once and would answer every query; it is not a hit.
        if branch.kind == "internal" and branch.vector is not None:
            self.branch_index.upsert(branch.id, self._tree(branch).match_vector_of(branch.id))
        else:
            self.branch_index.remove(branch.id)

    # -- reading ---------------------------------------------------------------------------------

    def branch(self, node_id: str) -> Branch | None:
        """The branch of either tree with this id, or None."""
        return self.semantic.branches.get(node_id) or self.temporal.branches.get(node_id)

    def node(self, node_id: str) -> Leaf | Branch:
        """The leaf or branch with this id; raises KeyError."""
        found = self.leaves.get(node_id) or self.branch(node_id)
        if found is None:
            raise KeyError(node_id)
        return found

    def _tree(self, branch: Branch) -> SemanticTree | TemporalTree:
        return self.semantic if branch.tree == "semantic" else self.temporal

    def breadcrumb(self, node_id: str, tree: str = "semantic") -> list[str]:
        """Short labels of the ancestors of ``node_id`` in ``tree``, the root left out."""
        chosen = self.semantic if tree == "semantic" else self.temporal
        return [b.label for b in chosen.ancestors(node_id) if b.kind != "root"]

    def recall(
        self,
        query: Vector,
        k: int,
        *,
        query_text: str = "",
        strategy: Strategy = "hybrid",
        where: RecallFilter | None = None,
        max_tokens: int | None = None,
        min_score: float = MIN_SCORE,
        expand: bool = False,
    ) -> list[Hit]:
        """The best ``k`` nodes for a query (its vector and text) that pass ``where`` and fit the budget.

        Hits are taken in score order; one that does not fit in what is left of ``max_tokens`` is
        skipped, so a long summary never crowds out the short memories that follow it. With
        ``expand``, only memories are returned: a summary in the ranking stands for its memories,
        which take its place, best first, those already taken or filtered out left aside.
        """
        where = where or RecallFilter()
        # Ask for more than k when a budget may make some hits be skipped.
        want = k if max_tokens is None else 4 * k
        final_where = where
        if expand:
            # Summaries must make the ranking to be expanded; the memories they bring are filtered.
            where = RecallFilter(time_from=where.time_from, time_to=where.time_to)
        if strategy == "hybrid":
            ids, scores = self._hybrid(query, query_text, where)
            ranked = self._ranked(ids, scores, where, want, -math.inf)
        elif strategy in ("propagate-down", "propagate-up"):
            ids, scores = self._propagated(query, strategy == "propagate-down")
            ranked = self._ranked(ids, scores, where, want, 1e-12)
        elif strategy == "refine":
            ids, scores = self._refined(query)
            ranked = self._ranked(ids, scores, where, want, -math.inf)
        else:
            ids, scores = self._collapsed(query, where)
            ranked = self._ranked(ids, scores, where, want, min_score)
        if expand:
            ranked = self._expanded(ranked, ids, scores, query, final_where)
        hits: list[Hit] = []
        budget = max_tokens
        for node_id, score in ranked:
            node = self.node(node_id)
            if budget is not None:
                cost = estimate_tokens(node.text)
                if cost > budget:
                    continue
                budget -= cost
            hits.append(self._hit(node, score))
            if len(hits) == k:
                break
        return hits

    def _collapsed(self, query: Vector, where: RecallFilter) -> tuple[list[str], np.ndarray]:
        leaf_ids, leaf_scores = self.leaf_index.scores(query)
        branch_ids, branch_scores = self.branch_index.scores(query)
        return leaf_ids + branch_ids, np.concatenate([leaf_scores, branch_scores])

    def _hybrid(self, query: Vector, query_text: str, where: RecallFilter) -> tuple[list[str], np.ndarray]:
        ids, dense = self.leaf_index.scores(query)
        lexical = self.lexical.scores(query_text) if query_text else {}
        if not ids or (not lexical and float(dense.max()) < RELEVANCE_FLOOR):
            # Nothing is about the query at all: answer nothing rather than the least unrelated.
            return [], dense[:0]
        mean, spread = float(dense.mean()), float(dense.std()) + 1e-6
        fused = (dense - mean) / spread
        if lexical:
            rows = np.fromiter((self.leaf_index.row(i) for i in lexical), dtype=np.int64, count=len(lexical))
            bm25 = np.zeros(len(ids), dtype=np.float32)
            bm25[rows] = np.fromiter(lexical.values(), dtype=np.float32, count=len(lexical))
            fused += LEXICAL_WEIGHT * (bm25 - bm25.mean()) / (float(bm25.std()) + 1e-6)
        fused = self.timeline().propagate(fused)
        # Summaries have no lexical score: they compete by their dense score on the leaves' scale.
        branch_ids, branch_dense = self.branch_index.scores(query)
        return ids + branch_ids, np.concatenate([fused, (branch_dense - mean) / spread])

    def _propagated(self, query: Vector, top_down: bool) -> tuple[list[str], np.ndarray]:
        structure = self.temporal_structure()
        leaf_ids, leaf_scores = self.leaf_index.scores(query)
        local = np.zeros(len(structure.ids), dtype=np.float64)
        local[structure.leaf_rows] = leaf_scores
        for position, branch_id in enumerate(structure.ids[len(leaf_ids) :], start=len(leaf_ids)):
            branch = self.temporal.branches[branch_id]
            if branch.vector is not None:
                local[position] = float(self.temporal.match_vector_of(branch_id) @ query)
        local = np.clip(local, 0.0, None)
        total = float(local.sum())
        if total == 0.0:
            return [], local[:0]
        return structure.ids, structure.propagate(
            local / total, top_down, PROPAGATION_DECAY, PROPAGATION_HORIZON
        )

    def _refined(self, query: Vector) -> tuple[list[str], np.ndarray]:
        tree = self.semantic
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
            beam = [c for _, c in sorted(internal, key=lambda p: (-p[0], p[1]))[:BEAM_WIDTH]]
        return ids, np.asarray(scores, dtype=np.float32)

    def _expanded(
        self,
        ranked: list[tuple[str, float]],
        ids: list[str],
        scores: np.ndarray,
        query: Vector,
        where: RecallFilter,
    ) -> list[tuple[str, float]]:
        score_of = dict(zip(ids, scores.tolist(), strict=True))
        taken: set[str] = set()
        out: list[tuple[str, float]] = []
        for node_id, score in ranked:
            branch = self.branch(node_id)
            if branch is None:
                if node_id not in taken and where.admits_leaf(self.leaves[node_id]):
                    taken.add(node_id)
                    out.append((node_id, score))
                continue
            tree = self._tree(branch)
            members = [n for n in tree.leaves_under(branch.id) if n not in taken]
            members = [n for n in members if where.admits_leaf(self.leaves[n])]
            members.sort(key=lambda n: (-score_of.get(n, float(self.leaves[n].vector @ query)), n))
            for member in members:
                taken.add(member)
                out.append((member, score_of.get(member, float(self.leaves[member].vector @ query))))
        return out

    def temporal_structure(self) -> _TreeStructure:
        """The temporal tree as parent arrays, for propagation; rebuilt after a change, on first use."""
        if self._structure is None:
            self._structure = _TreeStructure.build(self.temporal, self.leaf_index)
        return self._structure

    def _ranked(
        self, ids: list[str], scores: np.ndarray, where: RecallFilter, want: int, min_score: float
    ) -> list[tuple[str, float]]:
        """The admitted ids best first (ties by id), at least ``want`` of them when there are so many.

        Only the top of the ranking is sorted; it widens when filters turn too many of it away.
        """
        n = len(ids)
        size = min(n, max(4 * want, 64))
        while True:
            top = np.argpartition(-scores, size - 1)[:size] if size < n else np.arange(n)
            ordered = sorted(((float(scores[i]), ids[i]) for i in top), key=lambda p: (-p[0], p[1]))
            admitted = [(i, s) for s, i in ordered if s >= min_score and self._admits(i, where)]
            if len(admitted) >= want or size >= n:
                return admitted
            size = min(n, size * 4)

    def _admits(self, node_id: str, where: RecallFilter) -> bool:
        leaf = self.leaves.get(node_id)
        if leaf is not None:
            return where.admits_leaf(leaf)
        branch = self.branch(node_id)
        return branch is not None and where.admits_branch(branch)

    def timeline(self) -> _Timeline:
        """The leaves in time order with their segments; rebuilt after a change, on first use."""
        if self._timeline is None:
            self._timeline = _Timeline.build(self.leaves, self.temporal.gap_seconds, self.leaf_index)
        return self._timeline

    def _hit(self, node: Leaf | Branch, score: float) -> Hit:
        if isinstance(node, Leaf):
            return Hit(
                id=node.id,
                text=node.text,
                kind="leaf",
                tree="semantic",
                depth=self.semantic.depth_of(node.id),
                score=score,
                first_ts=node.timestamp,
                last_ts=node.timestamp,
                breadcrumb=self.breadcrumb(node.id),
            )
        return Hit(
            id=node.id,
            text=node.text,
            kind="summary",
            tree=node.tree,
            depth=node.depth,
            score=score,
            first_ts=node.first_ts,
            last_ts=node.last_ts,
            breadcrumb=self.breadcrumb(node.id, node.tree),
        )


@dataclass(slots=True)
class _Timeline:
    """Leaves in time order and their segments (runs without a session change or long silence)."""

    rows: np.ndarray  # index rows of the leaves, in time order
    segment: np.ndarray  # segment number of each, in the same order

    @classmethod
    def build(cls, leaves: dict[str, Leaf], gap_seconds: float, index: VectorIndex) -> _Timeline:
        ordered = sorted(leaves.values(), key=lambda leaf: leaf.seq)
        segment = np.zeros(len(ordered), dtype=np.int64)
        for i in range(1, len(ordered)):
            segment[i] = segment[i - 1] + int(is_boundary(ordered[i - 1], ordered[i], gap_seconds))
        rows = np.fromiter((index.row(leaf.id) for leaf in ordered), dtype=np.int64, count=len(ordered))
        return cls(rows=rows, segment=segment)

    def append(self, row: int, boundary: bool) -> None:
        """Add the newest leaf (index ``row``); ``boundary`` when it starts a new segment."""
        segment = (int(self.segment[-1]) + int(boundary)) if len(self.segment) else 0
        self.rows = np.append(self.rows, row)
        self.segment = np.append(self.segment, segment)

    def propagate(self, scores: np.ndarray) -> np.ndarray:
        """Add to each leaf's score the decayed scores of its neighbours in time within its segment."""
        rows = self.rows
        timed = scores[rows]
        spread = timed.copy()
        for r in range(1, NEIGHBOUR_RADIUS + 1):
            if r >= len(timed):
                break
            same = self.segment[r:] == self.segment[:-r]
            weight = NEIGHBOUR_DECAY**r
            spread[r:] += weight * np.where(same, timed[:-r], 0.0)
            spread[:-r] += weight * np.where(same, timed[r:], 0.0)
        out = np.empty_like(scores)
        out[rows] = spread
        return out


@dataclass(slots=True)
class _TreeStructure:
    """A tree as arrays: leaves first (in leaf-index row order), then branches; each node's parent."""

    ids: list[str]
    leaf_rows: np.ndarray  # position of each leaf-index row among ids
    parent: np.ndarray  # position of each node's parent, -1 for the root
    fan_out: np.ndarray  # number of children of each node

    @classmethod
    def build(cls, tree: TemporalTree, leaf_index: VectorIndex) -> _TreeStructure:
        leaf_ids = leaf_index.ids()
        ids = leaf_ids + list(tree.branches)
        position = {node_id: i for i, node_id in enumerate(ids)}
        parent = np.full(len(ids), -1, dtype=np.int64)
        fan_out = np.zeros(len(ids), dtype=np.float64)
        for branch in tree.branches.values():
            fan_out[position[branch.id]] = len(branch.children)
            for child in branch.children:
                parent[position[child]] = position[branch.id]
        return cls(ids=ids, leaf_rows=np.arange(len(leaf_ids)), parent=parent, fan_out=fan_out)

    def propagate(self, initial: np.ndarray, top_down: bool, decay: float, horizon: int) -> np.ndarray:
        """s0 + Σ_{h=1..horizon} decay^h W^h s0 with W top-down or bottom-up, column-normalised."""
        has_parent = self.parent >= 0
        children = np.flatnonzero(has_parent)
        parents = self.parent[has_parent]
        total = initial.copy()
        step = initial
        for hop in range(1, horizon + 1):
            moved = np.zeros_like(initial)
            if top_down:
                moved[children] = step[parents] / self.fan_out[parents]
            else:
                np.add.at(moved, parents, step[children])
            total += decay**hop * moved
            step = moved
        return total


def _best_first(item: tuple[str, float]) -> tuple[float, str]:
    return (-item[1], item[0])
