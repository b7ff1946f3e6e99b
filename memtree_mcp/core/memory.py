"""One namespace's memory in RAM: its leaves, the two trees over them, and the indexes that rank them.

Recall strategies (measured on the LoCoMo dev split with ``bench/locomo.py``; ``docs/benchmarks.md``):

- ``gather`` (default): ``hybrid`` that matches the authors a query names (the ``role`` of
  stored memories, "What did Caroline paint?") as authors, not as words: their memories get
  ``AUTHOR_WEIGHT`` standard deviations more, the names leave the BM25 query, and the dense score
  mixes in (``CONTENT_SHARE``) the query embedded with the names replaced by "they"; after the
  propagation along time each leaf gets ``SEGMENT_WEIGHT`` times the standardised BM25 score of
  its segment of the timeline scored as one document, and memories dated within a day or month
  the query names get ``DATE_WEIGHT`` more (``core/gathering.py``). Without a name or a date in
  the query it is ``hybrid`` plus the segment score.
- ``hybrid``: every leaf gets a dense score (cosine to the query) and a lexical one
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

import collections
import heapq
import itertools
import math
import operator
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from memtree_mcp.core.embedding import Matrix, Vector
from memtree_mcp.core.extractive import PART_SEPARATOR, gist
from memtree_mcp.core.gathering import dated_spans, named_authors, standardised, without_names
from memtree_mcp.core.hierarchy import Linkage, Shape
from memtree_mcp.core.index import VectorIndex
from memtree_mcp.core.lexical import LexicalIndex
from memtree_mcp.core.model import Branch, Leaf
from memtree_mcp.core.relevance import CONFIDENT, UPDATE_MEANING, UpdateJudge, relevance
from memtree_mcp.core.representative import derive_vector, derive_vectors
from memtree_mcp.core.semantic import SemanticTree, VectorMode
from memtree_mcp.core.temporal import CompatibilityPolicy, CosinePolicy, TemporalTree, is_boundary

HitKind = Literal["leaf", "summary"]
KindFilter = Literal["any", "leaf", "summary"]
Strategy = Literal["gather", "hybrid", "collapsed", "propagate-down", "propagate-up", "refine"]
STRATEGIES: tuple[Strategy, ...] = (
    "gather",
    "hybrid",
    "collapsed",
    "propagate-down",
    "propagate-up",
    "refine",
)
DEFAULT_STRATEGY: Strategy = "gather"

# Collapsed retrieval drops nodes less similar than this (θ_retrieve of seed 000 §3.2). Unrelated
# texts score around 0 to 0.1 with all-MiniLM-L6-v2; anything on the subject scores well above.
MIN_SCORE = 0.1
# Hybrid recall answers nothing when no leaf shares a word with the query and the closest one is
# below this: unrelated queries reach 0.11–0.15 against a small memory, related ones 0.3 and more.
RELEVANCE_FLOOR = 0.2
LEXICAL_WEIGHT = 0.5
NEIGHBOUR_DECAY = 0.4
NEIGHBOUR_RADIUS = 2
# Gather recall (core/gathering.py), in standard deviations of the standardised scores: the lift
# of a memory whose author the query names, and the weight of its segment's BM25 score; and the
# share of the query-without-names vector in the dense score.
AUTHOR_WEIGHT = 0.5
SEGMENT_WEIGHT = 0.5
CONTENT_SHARE = 0.5
# The lift of a memory dated within a day or month the query names ("on 16 November, 2023").
DATE_WEIGHT = 2.0
# SegTreeMem's fixed setting (seed 001 Table 4): decay α = 0.1 over a horizon of H = 2 hops.
PROPAGATION_DECAY = 0.1
PROPAGATION_HORIZON = 2
# Top-down refinement keeps this many branches per level of the semantic tree.
BEAM_WIDTH = 8
# Updates of a recalled memory are looked for among this many of its semantic siblings, and
# among this many memories ranked first for the query.
SIBLINGS_CHECKED = 64
UPDATES_RANKED = 64
# Of those close in meaning, the latest this many are judged word by word.
UPDATES_JUDGED = 16
# A summary is a hit only when it gathers at least this many memories (2 when only summaries are
# asked for): below that it repeats memories that recall ranks on their own anyway.
SUMMARY_MIN_COVERS = 3


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
    relevance: float = 0.0
    covers: int = 1
    superseded_by: str | None = None


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
    """The in-memory state of one namespace; the store persists it and rebuilds it on load.

    Every index follows each change in time proportional to the change, never to the memory's
    size: the leaf and branch vector matrices (``core/index.py``), BM25 (``core/lexical.py``), the
    timeline and each tree's arrays (:class:`_TreeArrays`). With average linkage (the default) a
    branch's similarity to a query is the mean of its leaves' (``core/hierarchy.py``), so recall
    averages the leaves' scores up each tree instead of multiplying the query with every branch
    vector: one matrix-vector product over the leaves is the only pass over 384-dimensional data.
    """

    def __init__(
        self,
        dimension: int,
        *,
        vector_mode: VectorMode = "centroid",
        linkage: Linkage = "average",
        embed: Callable[[Sequence[str]], Matrix] | None = None,
        temporal_policy: CompatibilityPolicy | None = None,
        aggregate: bool | None = None,
    ) -> None:
        """``aggregate``: score branches by averaging leaf scores (None: whenever that is exact).

        Raises ValueError for ``aggregate=True`` with a semantic tree whose branches are not
        compared by the mean of their leaves (summary vectors or centroid linkage).
        """
        self.dimension = dimension
        self.leaves: dict[str, Leaf] = {}
        self.semantic = SemanticTree(
            self.leaves, dimension, vector_mode=vector_mode, linkage=linkage, embed=embed
        )
        self.temporal = TemporalTree(self.leaves, dimension, policy=temporal_policy or CosinePolicy())
        averaged = all(
            tree.linkage == "average" and getattr(tree, "vector_mode", "centroid") == "centroid"
            for tree in (self.semantic, self.temporal)
        )
        if aggregate and not averaged:
            raise ValueError("aggregate=True needs average linkage and centroid vectors in both trees")
        self.aggregate = averaged if aggregate is None else aggregate
        self.leaf_index = VectorIndex(dimension)
        # Built when first asked for after a load, when recall does not need it (aggregate).
        self._branch_index: VectorIndex | None = VectorIndex(dimension)
        self.lexical = LexicalIndex()
        self._slot_row = np.zeros(0, dtype=np.int64)  # lexical slot -> leaf-index row
        self._slot_author = np.zeros(0, dtype=np.int64)  # lexical slot -> code of its author
        self._slot_stamp = np.zeros(0, dtype=np.float64)  # lexical slot -> the leaf's timestamp
        self._author_code: dict[str, int] = {}  # casefolded role -> code
        self._arrays = {"semantic": _TreeArrays(), "temporal": _TreeArrays()}
        self._by_hash: dict[str, str] = {}
        self._authors: Counter[str] = Counter()  # memories by role, for names in a query
        self._last_named: tuple[str, tuple[str, ...], tuple[str, ...]] | None = None
        self._timeline: _Timeline | None = None
        self._structure: _TreeStructure | None = None
        self.next_seq = 0

    # -- loading ---------------------------------------------------------------------------------

    def load(
        self,
        leaves: Iterable[Leaf],
        branches: Iterable[Branch],
        lexical: LexicalIndex | None = None,
        vectors: Matrix | None = None,
        shapes: Mapping[str, Shape] | None = None,
    ) -> None:
        """Replace the whole state with stored nodes.

        ``lexical``: the BM25 index of exactly these leaves' texts, kept from an earlier load
        (``store/snapshot.py``), instead of tokenizing every text again. Branches that come with
        their vectors keep them (derived earlier from the same leaves). ``vectors``: the leaves'
        vectors as one matrix, row i being the i-th leaf's, the leaves given in seq order (what
        a store's ``Snapshot`` holds), taken in one copy instead of gathering each leaf's.
        ``shapes``: each tree's :class:`Shape` as the store's columns give it, for its branches in
        the order given, instead of working it out node by node.

        Raises ValueError when ``lexical`` or ``vectors`` does not fit the leaves.
        """
        given = list(leaves)
        ordered = sorted(given, key=lambda leaf: leaf.seq)
        if vectors is not None and (
            len(vectors) != len(ordered) or any(a is not b for a, b in zip(ordered, given, strict=True))
        ):
            raise ValueError("the vectors given are not one per leaf, the leaves in seq order")
        self.leaves.clear()
        self._by_hash.clear()
        self._authors = Counter(leaf.role for leaf in ordered)
        ids = [leaf.id for leaf in ordered]
        self.leaf_index = VectorIndex(self.dimension, capacity=_headroom(len(ordered)))
        if ordered:
            if vectors is None:
                vectors = np.stack([leaf.vector for leaf in ordered])
            self.leaf_index.extend(ids, vectors)
            # Each leaf reads its vector from the index's matrix rather than keeping a copy (1.5 KB
            # a memory: 150 MB at 100k). The index writes a row only for a new leaf (past every
            # held row) or when a removal fills a hole, and _unindex_leaf then gives the leaves
            # involved their own copies; after the matrix grows, the views keep the old one.
            held = self.leaf_index.vectors()
            for row, leaf in enumerate(ordered):
                leaf.vector = held[row]
        if lexical is not None and (len(lexical) != len(ordered) or not all(i in lexical for i in ids)):
            raise ValueError("the lexical index given does not index exactly these leaves")
        if lexical is None:
            lexical = LexicalIndex()
            lexical.add_many((leaf.id, leaf.text) for leaf in ordered)
        self.lexical = lexical
        slots = max(len(ordered), lexical.capacity) + 16
        self._slot_row = np.full(slots, -1, dtype=np.int64)
        self._slot_author = np.full(slots, -1, dtype=np.int64)
        self._slot_stamp = np.full(slots, -1, dtype=np.float64)
        # What _map_slot does leaf by leaf, one numpy assignment per array.
        n = len(ordered)
        slot_of = self.lexical.slot
        at = np.fromiter((slot_of(leaf_id) for leaf_id in ids), np.int64, n)
        code = {role: self._code_of(role) for role in self._authors}  # in first-seen order
        self._slot_row[at] = np.arange(n, dtype=np.int64)
        self._slot_author[at] = np.fromiter((code[leaf.role] for leaf in ordered), np.int64, n)
        self._slot_stamp[at] = np.fromiter((leaf.timestamp for leaf in ordered), np.float64, n)
        self.leaves.update(zip(ids, ordered, strict=True))
        self._by_hash.update((leaf.content_hash, leaf.id) for leaf in ordered if leaf.content_hash)
        self.next_seq = (ordered[-1].seq + 1) if ordered else 0
        stored = list(branches)
        fitting: dict[str, Shape | None] = {}
        for tree in (self.semantic, self.temporal):
            mine = [b for b in stored if b.tree == tree.tree_name]
            if any(b.vector is None and b.children for b in mine):
                # Stores keep no branch vector: each is the mean of its leaves'.
                derive_vectors(mine, self.leaf_index.row_of, self.leaf_index.vectors())
            shape = (shapes or {}).get(tree.tree_name)
            fitting[tree.tree_name] = shape if shape is not None and shape.fits(mine) else None
            tree.adopt(mine, fitting[tree.tree_name])
        self._branch_index = None if self.aggregate else self._build_branch_index()
        self._arrays = {
            tree.tree_name: _TreeArrays.build(tree, self.leaf_index, fitting[tree.tree_name])
            for tree in (self.semantic, self.temporal)
        }
        # Built now rather than by the first recall: a server loads in the background, before it.
        # The leaf index was filled in seq order: leaf i is in row i.
        self._timeline = _Timeline.of(
            ordered, self.temporal.gap_seconds, self.leaf_index, np.arange(len(ordered), dtype=np.int64)
        )
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
        self._authors[leaf.role] += 1
        self.next_seq = leaf.seq + 1
        changed = self.semantic.insert(leaf) | self.temporal.insert(leaf)
        self.leaf_index.upsert(leaf.id, leaf.vector)
        self.lexical.add(leaf.id, leaf.text)
        self._map_slot(leaf.id)
        self._follow(changed)
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
        self._unindex_leaf(leaf_id)
        self._drop_branches(removed)
        changed -= removed
        self._follow(changed)
        self._structure = None
        return changed, removed

    def apply(self, leaves: Sequence[Leaf], branches: Sequence[Branch], removed: Collection[str]) -> None:
        """Take in what other processes committed since this memory was loaded or last brought up to
        date: ``leaves`` and ``branches`` are the latest stored revisions of the nodes written since
        (new or changed; a leaf already held only changed its parents), ``removed`` the ids deleted.

        Afterwards the memory equals a fresh :meth:`load` of the same store (the same leaves, both
        trees node for node, the same recall), in time proportional to the change: each index,
        the tree arrays and the timeline follow node by node, as they do for :meth:`add_leaf`. The
        timeline is rebuilt on next use only when leaves came back before the last one (a restore).
        """
        gone = [leaf_id for leaf_id in removed if leaf_id in self.leaves]
        for leaf_id in gone:
            self._unindex_leaf(leaf_id)
        fresh = sorted((leaf for leaf in leaves if leaf.id not in self.leaves), key=lambda leaf: leaf.seq)
        timeline = self._timeline
        previous = None  # the latest leaf still held, which the fresh ones must all follow
        if timeline is not None and timeline.size:
            previous = self.leaves[self.leaf_index.id_at(int(timeline.rows[-1]))]
        in_order = previous is None or all(leaf.seq > previous.seq for leaf in fresh)
        for leaf in fresh:
            self.leaves[leaf.id] = leaf
            if leaf.content_hash:
                self._by_hash[leaf.content_hash] = leaf.id
            self._authors[leaf.role] += 1
            self.leaf_index.upsert(leaf.id, leaf.vector)
            self.lexical.add(leaf.id, leaf.text)
            self._map_slot(leaf.id)
        self._drop_branches(removed)
        for tree in (self.semantic, self.temporal):
            mine = [branch for branch in branches if branch.tree == tree.tree_name]
            _derive_missing_vectors(mine, self.leaves, tree.branches)
            tree.apply(mine, removed)
            arrays = self._arrays[tree.tree_name]
            for branch in mine:
                arrays.set_branch(branch)
                for child in branch.children:
                    if child in self.leaves:
                        arrays.set_leaf(self.leaf_index.row(child), branch.id)
                self._index_branch(branch)
        last = self.temporal.last_leaf
        self.next_seq = self.leaves[last].seq + 1 if last is not None else 0
        if timeline is not None and in_order:
            for leaf in fresh:
                timeline.append(
                    self.leaf_index.row(leaf.id), is_boundary(previous, leaf, self.temporal.gap_seconds)
                )
                previous = leaf
        else:
            self._timeline = None
        self._structure = None

    def _unindex_leaf(self, leaf_id: str) -> None:
        """Take a leaf out of ``leaves``, the duplicate check, both indexes, the tree arrays' rows and
        the timeline."""
        row = self.leaf_index.row(leaf_id)
        if self._timeline is not None:
            self._timeline.remove(row, self._boundary_between_rows)
        leaf = self.leaves.pop(leaf_id)
        if self._by_hash.get(leaf.content_hash) == leaf_id:
            del self._by_hash[leaf.content_hash]
        self._authors[leaf.role] -= 1
        if self._authors[leaf.role] <= 0:
            del self._authors[leaf.role]
        self._slot_row[self.lexical.slot(leaf_id)] = -1
        last_id = self.leaf_index.id_at(len(self.leaf_index) - 1)
        for node_id in {leaf_id, last_id}:
            # Their vectors may be views of the rows the removal rewrites (see load).
            kept = self.leaves.get(node_id, leaf)
            if kept.vector.base is not None:
                kept.vector = np.array(kept.vector, dtype=np.float32)
        moved = self.leaf_index.remove(leaf_id)
        self.lexical.remove(leaf_id)
        last = len(self.leaf_index)
        for arrays in self._arrays.values():
            # The last row moved into the freed one (or the freed row was the last).
            arrays.move_leaf(last, row)
        if moved is not None:
            self._slot_row[self.lexical.slot(moved)] = row
            if self._timeline is not None:
                self._timeline.renumber(last, row)

    def _boundary_between_rows(self, before: int, after: int) -> bool:
        """Whether the leaves in leaf-index rows ``before`` and ``after``, in time order, are in
        different segments of the conversation (see :func:`is_boundary`)."""
        earlier = self.leaves[self.leaf_index.id_at(before)]
        later = self.leaves[self.leaf_index.id_at(after)]
        return is_boundary(earlier, later, self.temporal.gap_seconds)

    def _drop_branches(self, removed: Iterable[str]) -> None:
        """Forget deleted branches in the branch index and the tree arrays; other ids are ignored."""
        for node_id in removed:
            if self._branch_index is not None:
                self._branch_index.remove(node_id)
            for arrays in self._arrays.values():
                arrays.drop_branch(node_id)

    def _follow(self, changed: Iterable[str]) -> None:
        """Bring the branch index and the tree arrays up to date with the changed nodes."""
        for node_id in changed:
            if node_id in self.leaves:
                row = self.leaf_index.row(node_id)
                for tree in (self.semantic, self.temporal):
                    self._arrays[tree.tree_name].set_leaf(row, tree.parent_of[node_id])
                continue
            for tree in (self.semantic, self.temporal):
                branch = tree.branches.get(node_id)
                if branch is not None:
                    self._arrays[tree.tree_name].set_branch(branch)
            branch = self.branch(node_id)
            if branch is not None:
                self._index_branch(branch)

    def _map_slot(self, leaf_id: str) -> None:
        slot = self.lexical.slot(leaf_id)
        if slot >= len(self._slot_row):
            size = max(2 * len(self._slot_row), slot + 1, 16)
            self._slot_row = _grown(self._slot_row, size)
            self._slot_author = _grown(self._slot_author, size)
            self._slot_stamp = _grown(self._slot_stamp, size)
        leaf = self.leaves[leaf_id]
        self._slot_row[slot] = self.leaf_index.row(leaf_id)
        self._slot_author[slot] = self._code_of(leaf.role)
        self._slot_stamp[slot] = leaf.timestamp

    def _code_of(self, role: str) -> int:
        return self._author_code.setdefault(role.casefold(), len(self._author_code))

    def _index_branch(self, branch: Branch) -> None:
        index = self._branch_index
        if index is None:
            return  # not built since the load; it will be built from the trees as they are then
        # A root stands for everything at once and would answer every query; it is not a hit.
        if branch.kind == "internal" and branch.vector is not None:
            index.upsert(branch.id, self.tree(branch.tree).match_vector_of(branch.id))
        else:
            index.remove(branch.id)

    @property
    def branch_index(self) -> VectorIndex:
        """The match vector of every internal branch (what collapsed recall ranks without averaging).

        Kept up to date with each change once built; after a load with ``aggregate`` it is built
        on first use, as recall averages leaf scores instead (it costs 1.5 KB a branch).
        """
        if self._branch_index is None:
            self._branch_index = self._build_branch_index()
        return self._branch_index

    def _build_branch_index(self) -> VectorIndex:
        return _branch_index(self.dimension, (self.semantic, self.temporal))

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

    def tree(self, name: str) -> SemanticTree | TemporalTree:
        """The tree called ``name`` ('semantic' or 'temporal'); raises ValueError for another name."""
        if name == "semantic":
            return self.semantic
        if name == "temporal":
            return self.temporal
        raise ValueError(f"unknown tree {name!r}; use 'semantic' (by subject) or 'temporal' (by time)")

    def breadcrumb(self, node_id: str, tree: str = "semantic") -> list[str]:
        """Short labels of the ancestors of ``node_id`` in ``tree``, top down, the root left out;
        a label shared by several ancestors (a deep chain of similar branches) is given once."""
        labels = [b.label for b in self.tree(tree).ancestors(node_id) if b.kind != "root" and b.label]
        return list(dict.fromkeys(labels))

    def recall(
        self,
        query: Vector,
        k: int,
        *,
        query_text: str = "",
        strategy: Strategy = DEFAULT_STRATEGY,
        where: RecallFilter | None = None,
        max_tokens: int | None = None,
        min_score: float = MIN_SCORE,
        expand: bool = False,
        min_relevance: float = 0.0,
        supersede: bool = False,
        cost: Callable[[Hit], float] | None = None,
        content_query: Vector | None = None,
    ) -> list[Hit]:
        """The best ``k`` nodes for a query (its vector and text) that pass ``where`` and fit the budget.

        Hits are taken in score order. A hit below ``min_relevance`` (see ``core/relevance.py``)
        is left out, and so is one that would repeat what an earlier hit shows: a summary of a
        single memory, a memory an earlier summary already quotes whole, the parts of a summary
        already shown (the rest of it stays). With ``supersede``, a memory that a later one
        updates (an earlier hit, or a sibling in the semantic tree) is marked ``superseded_by``
        that memory, which is shown just before it (with a cut-off; ``min_relevance`` 0 keeps
        the ranking's order and only marks). Then one that does not fit in what is left of
        ``max_tokens`` (``cost`` of each hit, by default its text's tokens) is skipped, so a long
        summary never crowds out the short memories that follow it. With ``expand``, only
        memories are returned: a summary in the ranking stands for its memories, which take its
        place, best first, those already taken or filtered out left aside. ``content_query`` is
        for ``gather``: the embedding of the query with the authors it names replaced
        (:meth:`content_text`); without it the query's own vector stands in.
        """
        where = where or RecallFilter()
        # Ask for more than k when a budget may make some hits be skipped.
        want = k if max_tokens is None else 4 * k
        final_where = where
        if expand:
            # Summaries must make the ranking to be expanded; the memories they bring are filtered.
            where = RecallFilter(time_from=where.time_from, time_to=where.time_to)
        ids: _Names | list[str]
        if strategy == "gather":
            ids, scores = self._gathered(query, query_text, content_query)
            ranked = self._ranked(ids, scores, where, want, -math.inf)
        elif strategy == "hybrid":
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
        judge = _Relevance(self, query, query_text, lend=strategy in ("gather", "hybrid"))
        shown = _Shown(min_covers=2 if final_where.kind == "summary" else SUMMARY_MIN_COVERS)
        chosen: list[Hit] = []
        first: Hit | None = None  # the best-ranked hit, whatever its relevance
        for node_id, score in ranked:
            node = self.node(node_id)
            relevance = judge.of(node)
            if relevance < min_relevance and first is not None:
                continue
            text = shown.fresh_text(node)
            if text is None:
                continue
            hit = self._hit(node, score, relevance, text)
            first = first or hit
            if relevance >= min_relevance:
                chosen.append(hit)
            if len(chosen) == want:
                break
        weak = min_relevance > 0 and first is not None and all(h.relevance < CONFIDENT for h in chosen)
        if weak:
            chosen = [first]  # type: ignore[list-item]
        if supersede:
            related = [node_id for node_id, _ in ranked[:UPDATES_RANKED] if node_id in self.leaves]
            # Without a cut-off the caller wants the ranking itself: updates are marked, not moved
            # (moving them cost 0.4 points of R@10 on LoCoMo, where questions about the past are
            # often answered by the earlier statement).
            chosen = self._superseded(
                chosen, judge, shown, related, room=k - len(chosen), move=min_relevance > 0
            )
        if weak:
            # Only weak matches, the signature of a question about something never stored (or
            # asked in other words than the memory's): the best-ranked hit alone, or its update.
            chosen = chosen[:1]
        hits: list[Hit] = []
        budget: float | None = max_tokens
        for hit in chosen:
            if budget is not None:
                price = cost(hit) if cost is not None else estimate_tokens(hit.text)
                if price > budget:
                    continue
                budget -= price
            hits.append(hit)
            if len(hits) == k:
                break
        return hits

    def newest_update(self, older: Leaf, candidates: Iterable[str] = ()) -> Leaf | None:
        """The latest memory that updates ``older`` (``core/relevance.py``), or None.

        Looked for among ``candidates`` and ``older``'s siblings in the semantic tree, where
        MemTree files what is said about the same subject. Only later memories close enough in
        meaning (one matrix product) are judged word by word, the latest ``UPDATES_JUDGED``.
        """
        return _Updates(self, candidates).newest(older)

    def _superseded(
        self,
        chosen: list[Hit],
        judge: _Relevance,
        shown: _Shown,
        related: Sequence[str],
        *,
        room: int,
        move: bool,
    ) -> list[Hit]:
        """``chosen`` with each memory a later one updates marked, and the update just before it.

        Updates are looked for among the other hits, the memories ranked first for the query
        (``related``) and each hit's semantic siblings (:meth:`newest_update`). An update found
        outside the hits joins them while there is ``room`` (fewer hits than asked for): it is the
        current version of something relevant, but it never pushes a ranked hit out. Without
        ``move`` the hits keep their order and only the marks are set.
        """
        order = list(chosen)
        by_id = {hit.id: hit for hit in order}
        olders = [leaf for leaf in (self.leaves.get(hit.id) for hit in chosen) if leaf is not None]
        updates = _Updates(self, [*(h.id for h in chosen), *related])
        newest_of = dict(zip((leaf.id for leaf in olders), updates.newest_of(olders), strict=True))
        for hit in chosen:
            newest = newest_of.get(hit.id)
            if newest is None:
                continue
            hit.superseded_by = newest.id
            if not move:
                continue
            update = by_id.get(newest.id)
            if update is None:
                text = shown.fresh_text(newest) if room > 0 else None
                if text is None:
                    continue
                room -= 1
                update = by_id[newest.id] = self._hit(newest, hit.score, judge.of(newest), text)
            elif order.index(update) < order.index(hit):
                continue
            else:
                order.remove(update)
            order.insert(order.index(hit), update)
        return order

    def _branch_scores(
        self, query: Vector, leaf_scores: np.ndarray
    ) -> tuple[list[list[str | None]], np.ndarray]:
        """Every internal branch's similarity to ``query``, as parts of positions and their scores.

        Aggregated: each tree's branch positions (holes and roots score -inf), the mean of the
        leaves' scores. Otherwise the branch index, one product with every match vector.
        """
        if not self.aggregate:
            ids, dense = self.branch_index.scores(query)
            return [list(ids)], dense
        parts: list[list[str | None]] = []
        means: list[np.ndarray] = []
        for arrays in self._arrays.values():
            parts.append(arrays.ids)
            means.append(np.where(arrays.eligible[: len(arrays.ids)], arrays.means(leaf_scores), -np.inf))
        return parts, np.concatenate(means)

    def _collapsed(self, query: Vector, where: RecallFilter) -> tuple[_Names, np.ndarray]:
        leaf_scores = self.leaf_index.score_array(query)
        parts, branch_scores = self._branch_scores(query, leaf_scores)
        return _Names(self.leaf_index, parts), np.concatenate([leaf_scores, branch_scores])

    def _hybrid(self, query: Vector, query_text: str, where: RecallFilter) -> tuple[_Names, np.ndarray]:
        dense = self.leaf_index.score_array(query)
        lexical = self._lexical_rows(query_text) if query_text else None
        if not len(dense) or (lexical is None and float(dense.max()) < RELEVANCE_FLOOR):
            # Nothing is about the query at all: answer nothing rather than the least unrelated.
            return _Names(self.leaf_index, []), dense[:0]
        mean, spread = float(dense.mean()), float(dense.std()) + 1e-6
        fused = (dense - mean) / spread
        if lexical is not None:
            rows, values = lexical
            bm25 = np.zeros(len(dense), dtype=np.float32)
            bm25[rows] = values
            fused += LEXICAL_WEIGHT * (bm25 - bm25.mean()) / (float(bm25.std()) + 1e-6)
        fused = self.timeline().propagate(fused)
        # Summaries have no lexical score: they compete by their dense score on the leaves' scale.
        parts, branch_dense = self._branch_scores(query, dense)
        return _Names(self.leaf_index, parts), np.concatenate([fused, (branch_dense - mean) / spread])

    def authors_named(self, query_text: str) -> list[str]:
        """The authors (roles) of stored memories that ``query_text`` names, longest first."""
        # A copy taken in one step (no lock needed): the service asks before it embeds, outside
        # the namespace's lock, while a writer may be adding memories. The service asks, then
        # recall asks again for the same query: the last answer is kept while the authors stay.
        authors = tuple(self._authors)
        last = self._last_named
        if last is not None and last[0] == query_text and last[1] == authors:
            return list(last[2])
        names = named_authors(query_text, authors)
        self._last_named = (query_text, authors, tuple(names))
        return names

    def content_text(self, query_text: str) -> str | None:
        """``query_text`` with the authors it names replaced by a pronoun (what ``gather`` embeds
        as ``content_query``), or None when it names none."""
        names = self.authors_named(query_text)
        return without_names(query_text, names) if names else None

    def _gathered(
        self, query: Vector, query_text: str, content_query: Vector | None
    ) -> tuple[_Names, np.ndarray]:
        """Gather scoring (``core/gathering.py``): hybrid's fusion with the authors the query names
        matched as authors, and each memory lifted by its segment's BM25 score."""
        names = self.authors_named(query_text) if query_text else []
        if content_query is None:
            dense = self.leaf_index.score_array(query)
        else:
            # The blend of the two cosines is the cosine with the blend of the two vectors: one
            # matrix-vector product. The query's own cosines are computed only if the floor below
            # needs them (a query that names an author never does).
            blend = (1.0 - CONTENT_SHARE) * np.asarray(query) + CONTENT_SHARE * np.asarray(content_query)
            dense = self.leaf_index.vectors() @ blend.astype(np.float32)
        words = without_names(query_text, names, stand_in=" ") if names else query_text
        lexical = self._lexical_rows(words) if words else None
        if not len(dense):
            return _Names(self.leaf_index, []), dense[:0]
        if lexical is None and not names:
            cosines = dense if content_query is None else self.leaf_index.score_array(query)
            if float(cosines.max()) < RELEVANCE_FLOOR:
                return _Names(self.leaf_index, []), dense[:0]
        mean, spread = float(dense.mean()), float(dense.std()) + 1e-6
        fused = standardised(dense)
        if lexical is not None:
            rows, values = lexical
            bm25 = np.zeros(len(dense), dtype=np.float64)
            bm25[rows] = values
            fused = fused + LEXICAL_WEIGHT * standardised(bm25)
        if names:
            fused = fused + AUTHOR_WEIGHT * self._by_authors(names)
        spans = dated_spans(query_text) if query_text else []
        if spans:
            fused = fused + DATE_WEIGHT * self._dated_within(spans)
        timeline = self.timeline()
        fused = timeline.propagate(fused)
        if lexical is not None:
            fused = fused + SEGMENT_WEIGHT * self._segment_lift(words, timeline)
        parts, branch_dense = self._branch_scores(query, dense)
        return _Names(self.leaf_index, parts), np.concatenate([fused, (branch_dense - mean) / spread])

    def _by_authors(self, names: Collection[str]) -> np.ndarray:
        """1 for each leaf-index row whose memory's author is one of ``names`` (any case), else 0."""
        codes = [self._author_code[key] for name in names if (key := name.casefold()) in self._author_code]
        slots = np.flatnonzero((self._slot_row >= 0) & np.isin(self._slot_author, codes))
        out = np.zeros(len(self.leaf_index))
        out[self._slot_row[slots]] = 1.0
        return out

    def _dated_within(self, spans: Sequence[tuple[float, float]]) -> np.ndarray:
        """1 for each leaf-index row whose memory is dated within one of ``spans`` ([start, end)),
        else 0; all zeros when every memory is, as the date then tells them nothing apart."""
        live = self._slot_row >= 0
        inside = np.zeros(len(self._slot_row), dtype=bool)
        for start, end in spans:
            inside |= (self._slot_stamp >= start) & (self._slot_stamp < end)
        out = np.zeros(len(self.leaf_index))
        out[self._slot_row[live & inside]] = 1.0
        if out.all():
            out[:] = 0.0
        return out

    def _segment_lift(self, words: str, timeline: _Timeline) -> np.ndarray:
        """By leaf-index row, the standardised BM25 score of the memory's segment of the timeline,
        the segment scored as one document (segments count as the documents of the standardising)."""
        n = len(self.leaf_index)
        segment_of_row = timeline.segment_of_rows(n)
        groups = int(segment_of_row.max()) + 1 if n else 0
        slot_rows = self._slot_row
        group_of_slot = np.where(slot_rows >= 0, segment_of_row[np.maximum(slot_rows, 0)], -1)
        scores = self.lexical.group_score_array(words, group_of_slot, groups)
        lift = np.zeros(groups)
        if scores is not None and groups:
            held = np.bincount(segment_of_row, minlength=groups) > 0  # numbers a removal left empty
            lift[held] = standardised(scores[held])
        return lift[segment_of_row]

    def _lexical_rows(self, query_text: str) -> tuple[np.ndarray, np.ndarray] | None:
        """Leaf-index rows of the leaves sharing a word with the query, and their BM25 scores."""
        array = self.lexical.score_array(query_text)
        if array is None:
            return None
        slots = np.flatnonzero(array > 0.0)
        if not len(slots):
            return None
        return self._slot_row[slots], array[slots]

    def _propagated(self, query: Vector, top_down: bool) -> tuple[_Names, np.ndarray]:
        structure = self.temporal_structure()
        leaf_scores = self.leaf_index.score_array(query)
        n = len(leaf_scores)
        local = np.zeros(len(structure.ids), dtype=np.float64)
        local[structure.leaf_rows] = leaf_scores
        if self.aggregate:
            arrays = self._arrays["temporal"]
            means = np.where(arrays.has_vector[: len(arrays.ids)], arrays.means(leaf_scores), 0.0)
            local[n:] = means[structure.branch_positions]
        else:
            for position, branch_id in enumerate(structure.ids[n:], start=n):
                assert branch_id is not None
                if self.temporal.branches[branch_id].vector is not None:
                    local[position] = float(self.temporal.match_vector_of(branch_id) @ query)
        local = np.clip(local, 0.0, None)
        total = float(local.sum())
        if total == 0.0:
            return _Names(self.leaf_index, []), local[:0]
        scores = structure.propagate(local / total, top_down, PROPAGATION_DECAY, PROPAGATION_HORIZON)
        return _Names(self.leaf_index, [structure.ids[n:]]), scores

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
        ids: _Names | list[str],
        scores: np.ndarray,
        query: Vector,
        where: RecallFilter,
    ) -> list[tuple[str, float]]:
        if isinstance(ids, _Names):
            # Every leaf is ranked, at its leaf-index row.
            def score_of(leaf_id: str) -> float:
                return float(scores[self.leaf_index.row(leaf_id)])
        else:
            known = dict(zip(ids, scores.tolist(), strict=True))

            def score_of(leaf_id: str) -> float:
                found = known.get(leaf_id)
                return float(self.leaves[leaf_id].vector @ query) if found is None else found

        taken: set[str] = set()
        out: list[tuple[str, float]] = []
        for node_id, score in ranked:
            branch = self.branch(node_id)
            if branch is None:
                if node_id not in taken and where.admits_leaf(self.leaves[node_id]):
                    taken.add(node_id)
                    out.append((node_id, score))
                continue
            tree = self.tree(branch.tree)
            members = [n for n in tree.leaves_under(branch.id) if n not in taken]
            members = [n for n in members if where.admits_leaf(self.leaves[n])]
            member_scores = {n: score_of(n) for n in members}
            members.sort(key=lambda n: (-member_scores[n], n))
            for member in members:
                taken.add(member)
                out.append((member, member_scores[member]))
        return out

    def temporal_structure(self) -> _TreeStructure:
        """The temporal tree as parent arrays, for propagation: from the tree's arrays, after a change."""
        if self._structure is None:
            self._structure = self._arrays["temporal"].structure(self.leaf_index)
        return self._structure

    def _ranked(
        self,
        ids: _Names | list[str],
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
        leaf = self.leaves.get(node_id)
        if leaf is not None:
            return where.admits_leaf(leaf)
        branch = self.branch(node_id)
        return branch is not None and where.admits_branch(branch)

    def timeline(self) -> _Timeline:
        """The leaves in time order with their segments; rebuilt after a removal, on first use."""
        if self._timeline is None:
            self._timeline = _Timeline.build(self.leaves, self.temporal.gap_seconds, self.leaf_index)
        return self._timeline

    def _hit(self, node: Leaf | Branch, score: float, relevance: float, text: str | None = None) -> Hit:
        if isinstance(node, Leaf):
            return Hit(
                id=node.id,
                text=node.text if text is None else text,
                kind="leaf",
                tree="semantic",
                depth=self.semantic.depth_of(node.id),
                score=score,
                first_ts=node.timestamp,
                last_ts=node.timestamp,
                breadcrumb=self.breadcrumb(node.id),
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
            breadcrumb=self.breadcrumb(node.id, node.tree),
            relevance=relevance,
            covers=node.leaf_count,
        )


class _Relevance:
    """The relevance of recalled nodes to one query (``core/relevance.py``), computed on demand."""

    def __init__(self, memory: Memory, query: Vector, query_text: str, *, lend: bool) -> None:
        self._memory = memory
        self._query = query
        self._text = query_text
        self._lend = lend
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
            for row, distance in timeline.neighbours(index.row(node.id), self._places):
                neighbour = self._memory.leaves[index.id_at(row)]
                if neighbour.role != node.role:  # a reply, or what it replies to
                    found = max(found, NEIGHBOUR_DECAY**distance * self.own(neighbour))
        return found

    def own(self, leaf: Leaf) -> float:
        """What ``leaf`` itself shares with the query: meaning and words."""
        known = self._own.get(leaf.id)
        if known is None:
            words = self._memory.lexical.coverage(self._text, leaf.id) if self._text else 0.0
            known = self._own[leaf.id] = relevance(float(leaf.vector @ self._query), words)
        return known


class _Updates:
    """Which memories update which (:meth:`Memory.newest_update`) for the hits of one recall, all
    hits at once: the candidates they share and their semantic siblings are gathered once, ordered
    latest first once, compared in meaning with every hit in one matrix product, and what the judge
    reads of each memory is read once. Done hit by hit, with each pair's words read afresh, this
    took about 2 ms of the 6 to 9 ms of CPU of a recall at 10k memories (``bench/recall_ab.py``)."""

    def __init__(self, memory: Memory, candidates: Iterable[str]) -> None:
        self._memory = memory
        self._candidates = list(dict.fromkeys(candidates))
        self._judge = UpdateJudge(memory.lexical)

    def newest(self, older: Leaf) -> Leaf | None:
        """The latest memory among the candidates and ``older``'s semantic siblings that updates it."""
        return self.newest_of([older])[0]

    def newest_of(self, olders: Sequence[Leaf]) -> list[Leaf | None]:
        """:meth:`newest` of each of ``olders``."""
        memory = self._memory
        parents = [memory.semantic.parent_of.get(older.id) for older in olders]
        siblings = {
            parent: memory.semantic.branches[parent].children[:SIBLINGS_CHECKED]
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
            judged = np.flatnonzero(among[parents[j]] & later & close[:, j])[:UPDATES_JUDGED]
            out.append(next((pool[i] for i in judged if self._judge.supersedes(pool[i], older)), None))
        return out


class _Shown:
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


def _branch_index(dimension: int, trees: Sequence[SemanticTree | TemporalTree]) -> VectorIndex:
    """A branch index of every internal branch with a vector, by its match vector, built at once."""
    chosen = [
        (tree, branch)
        for tree in trees
        for branch in tree.branches.values()
        if branch.kind == "internal" and branch.vector is not None
    ]
    index = VectorIndex(dimension, capacity=_headroom(len(chosen)))
    if not chosen:
        return index
    vectors = np.stack([branch.vector for _, branch in chosen])  # type: ignore[misc]
    # As match_vector_of: average linkage scales the centroid by its cohesion, in float32.
    scale = np.asarray(
        [branch.cohesion if tree.linkage == "average" else 1.0 for tree, branch in chosen], dtype=np.float32
    )
    index.extend([branch.id for _, branch in chosen], (vectors * scale[:, None]).astype(np.float32))
    return index


class _Names:
    """Which node stands at each position of a score array: leaf-index rows first, then the parts.

    A part is a list of ids (branch positions of a tree's arrays, where None marks a free one).
    Only the few positions at the top of a ranking are ever looked up.
    """

    __slots__ = ("_leaf_index", "_leaves", "_parts")

    def __init__(self, leaf_index: VectorIndex, parts: Sequence[Sequence[str | None]]) -> None:
        self._leaf_index = leaf_index
        self._leaves = len(leaf_index)
        self._parts = parts

    def __len__(self) -> int:
        return self._leaves + sum(len(part) for part in self._parts)

    def __getitem__(self, position: int) -> str | None:
        if position < self._leaves:
            return self._leaf_index.id_at(position)
        position -= self._leaves
        for part in self._parts:
            if position < len(part):
                return part[position]
            position -= len(part)
        raise IndexError(position)


class _Members:
    """A set of small integers in an array, O(1) add and discard (the last entry fills a hole)."""

    __slots__ = ("_values", "_where", "size")

    def __init__(self) -> None:
        self._values = np.zeros(4, dtype=np.int64)
        self._where: dict[int, int] = {}
        self.size = 0

    @classmethod
    def of(cls, values: np.ndarray) -> _Members:
        """The set of ``values`` (distinct), in that order, as ``add`` one by one would hold them."""
        members = cls()
        members._values = np.array(values, dtype=np.int64) if len(values) else members._values
        members._where = {int(value): i for i, value in enumerate(values.tolist())}
        members.size = len(values)
        return members

    def add(self, value: int) -> None:
        if self.size == len(self._values):
            self._values = np.concatenate([self._values, np.zeros_like(self._values)])
        self._values[self.size] = value
        self._where[value] = self.size
        self.size += 1

    def discard(self, value: int) -> None:
        hole = self._where.pop(value, None)
        if hole is None:
            return
        self.size -= 1
        if hole != self.size:
            last = int(self._values[self.size])
            self._values[hole] = last
            self._where[last] = hole

    def values(self) -> np.ndarray:
        return self._values[: self.size]


_ID = operator.attrgetter("id")
_PARENT = operator.attrgetter("parent")
_DEPTH = operator.attrgetter("depth")
_LEAF_COUNT = operator.attrgetter("leaf_count")
_CHILDREN = operator.attrgetter("children")
_VECTOR = operator.attrgetter("vector")
_KIND = operator.attrgetter("kind")


class _TreeArrays:
    """One tree's shape as arrays, kept up to date node by node: what recall needs from a tree.

    Each branch has a position (``position``; a freed position is reused, lowest first, and its id
    is None meanwhile). By position: ``parent`` (the parent's position, -1 for the root), ``count``
    (leaves under it), ``fan_out`` (children), ``has_vector`` and ``eligible`` (an internal branch
    with a vector: a possible hit). ``leaf_parent`` holds the parent's position of the leaf in each
    leaf-index row, and ``levels`` the positions at each depth, so that leaf scores are summed up the
    tree one level at a time (:meth:`means`), deepest first.
    """

    def __init__(self) -> None:
        self.ids: list[str | None] = []
        self.position: dict[str, int] = {}
        self._free: list[int] = []  # a min-heap
        self.parent = np.full(16, -1, dtype=np.int64)
        self.depth = np.full(16, -1, dtype=np.int64)
        self.count = np.zeros(16, dtype=np.float64)
        self.fan_out = np.zeros(16, dtype=np.float64)
        self.has_vector = np.zeros(16, dtype=bool)
        self.eligible = np.zeros(16, dtype=bool)
        self.leaf_parent = np.full(16, -1, dtype=np.int64)
        self.levels: list[_Members] = []

    @classmethod
    def build(
        cls, tree: SemanticTree | TemporalTree, leaf_index: VectorIndex, shape: Shape | None = None
    ) -> _TreeArrays:
        """The arrays of ``tree`` from scratch (its leaves must all be in ``leaf_index``), taking
        what ``shape`` holds of it (its branches' in the order of ``tree.branches``) when given."""
        # What set_branch and set_leaf do node by node (positions in the order of the tree's
        # branches), with one numpy assignment per array: at 100k memories 2.7 s of a load took 0.3 s.
        arrays = cls()
        branches = list(tree.branches.values())
        count = len(branches)
        position = arrays.position
        position.update(zip(map(_ID, branches), itertools.count()))
        at = np.arange(count)  # each branch's position: their order
        parent_of = tree.parent_of
        given = shape if shape is not None and len(shape.depth) == count else None
        if given is None:
            # Every parent is one of the branches; one that is not still gets a position (what
            # set_branch and set_leaf would give it).
            lost = set(map(_PARENT, branches)).union(parent_of.values()).difference(position)
            lost.discard(None)
            position.update(zip(sorted(lost), itertools.count(len(position))))
        arrays.ids = list(position)
        arrays._grow(max(16, len(position)))
        # Iterated with C-level callables (map, attrgetter), not generator expressions: a frame
        # per node made this 0.45 s at 100k memories; from a shape, no step per node at all.
        if given is not None:
            parents, depth = given.parent, given.depth
            arrays.count[:count] = given.leaf_count
            arrays.fan_out[:count] = given.fan_out
            internal = given.internal
        else:
            parents = np.array(
                [position[parent] if parent is not None else -1 for parent in map(_PARENT, branches)],
                dtype=np.int64,
            )
            depth = np.fromiter(map(_DEPTH, branches), np.int64, count)
            arrays.count[:count] = np.fromiter(map(_LEAF_COUNT, branches), np.float64, count)
            arrays.fan_out[:count] = np.fromiter(map(len, map(_CHILDREN, branches)), np.float64, count)
            internal = np.fromiter(map("internal".__eq__, map(_KIND, branches)), bool, count)
        arrays.parent[:count] = parents
        arrays.depth[:count] = depth
        has_vector = np.fromiter((vector is not None for vector in map(_VECTOR, branches)), bool, count)
        arrays.has_vector[:count] = has_vector
        arrays.eligible[:count] = has_vector & internal
        arrays.levels = [_Members.of(at[depth == level]) for level in range(int(depth.max(initial=-1)) + 1)]
        if given is not None and len(leaf_index) == given.leaves:
            rows, under = given.leaf_rows, given.leaf_parent
        elif parent_of:
            rows = np.fromiter(map(leaf_index.row_of.__getitem__, parent_of.keys()), np.int64, len(parent_of))
            under = np.fromiter(map(position.__getitem__, parent_of.values()), np.int64, len(parent_of))
        else:
            rows = under = np.zeros(0, dtype=np.int64)
        if len(rows):
            arrays.leaf_parent = np.full(max(16, int(rows.max()) + 1), -1, dtype=np.int64)
            arrays.leaf_parent[rows] = under
        return arrays

    def _slot(self, node_id: str) -> int:
        found = self.position.get(node_id)
        if found is not None:
            return found
        if self._free:
            found = heapq.heappop(self._free)
            self.ids[found] = node_id
        else:
            found = len(self.ids)
            self.ids.append(node_id)
            if found == len(self.parent):
                self._grow(2 * found)
        self.position[node_id] = found
        return found

    def _grow(self, capacity: int) -> None:
        for name, fill in (
            ("parent", -1),
            ("depth", -1),
            ("count", 0),
            ("fan_out", 0),
            ("has_vector", False),
            ("eligible", False),
        ):
            old = getattr(self, name)
            grown = np.full(capacity, fill, dtype=old.dtype)
            grown[: len(old)] = old
            setattr(self, name, grown)

    def set_branch(self, branch: Branch) -> None:
        """Record ``branch`` as it is now (a new one gets a position)."""
        p = self._slot(branch.id)
        self.parent[p] = -1 if branch.parent is None else self._slot(branch.parent)
        if self.depth[p] != branch.depth:
            if self.depth[p] >= 0:
                self.levels[int(self.depth[p])].discard(p)
            while len(self.levels) <= branch.depth:
                self.levels.append(_Members())
            self.levels[branch.depth].add(p)
            self.depth[p] = branch.depth
        self.count[p] = branch.leaf_count
        self.fan_out[p] = len(branch.children)
        self.has_vector[p] = branch.vector is not None
        self.eligible[p] = branch.kind == "internal" and branch.vector is not None

    def drop_branch(self, node_id: str) -> None:
        """Forget a deleted branch; unknown ids are ignored."""
        p = self.position.pop(node_id, None)
        if p is None:
            return
        if self.depth[p] >= 0:
            self.levels[int(self.depth[p])].discard(p)
        self.parent[p], self.depth[p], self.count[p], self.fan_out[p] = -1, -1, 0, 0
        self.has_vector[p] = self.eligible[p] = False
        self.ids[p] = None
        heapq.heappush(self._free, p)

    def set_leaf(self, row: int, parent: str) -> None:
        """Record that the leaf in leaf-index ``row`` hangs under ``parent``."""
        if row >= len(self.leaf_parent):
            grown = np.full(max(2 * len(self.leaf_parent), row + 1), -1, dtype=np.int64)
            grown[: len(self.leaf_parent)] = self.leaf_parent
            self.leaf_parent = grown
        self.leaf_parent[row] = self._slot(parent)

    def move_leaf(self, old_row: int, new_row: int) -> None:
        """The leaf in ``old_row`` moved to ``new_row`` (the leaf index filled a hole); free ``old_row``."""
        self.leaf_parent[new_row] = self.leaf_parent[old_row]
        self.leaf_parent[old_row] = -1

    def means(self, leaf_scores: np.ndarray) -> np.ndarray:
        """By position, the mean of ``leaf_scores`` (by leaf-index row) over each branch's leaves."""
        size = len(self.ids)
        sums = np.bincount(self.leaf_parent[: len(leaf_scores)], weights=leaf_scores, minlength=size)
        for level in reversed(self.levels[1:]):
            members = level.values()
            if len(members):
                np.add.at(sums, self.parent[members], sums[members])
        return sums[:size] / np.maximum(self.count[:size], 1.0)

    def structure(self, leaf_index: VectorIndex) -> _TreeStructure:
        """The tree as a :class:`_TreeStructure`, leaves in leaf-index row order, then the branches."""
        n = len(leaf_index)
        size = len(self.ids)
        branches = np.flatnonzero(self.depth[:size] >= 0)
        renumber = np.full(size + 1, -1, dtype=np.int64)  # the last entry maps -1 (no parent) to -1
        renumber[branches] = n + np.arange(len(branches))
        parent = np.concatenate([renumber[self.leaf_parent[:n]], renumber[self.parent[branches]]])
        fan_out = np.concatenate([np.zeros(n), self.fan_out[branches]])
        ids: list[str | None] = [*leaf_index.ids(), *(self.ids[p] for p in branches)]
        return _TreeStructure(
            ids=ids, leaf_rows=np.arange(n), parent=parent, fan_out=fan_out, branch_positions=branches
        )

    def picture(self, leaf_index: VectorIndex) -> dict[str, tuple[object, ...]]:
        """What the arrays say about each node, by id (for comparing with a fresh build)."""
        out: dict[str, tuple[object, ...]] = {}
        for p, node_id in enumerate(self.ids):
            if node_id is None:
                continue
            parent = int(self.parent[p])
            out[node_id] = (
                None if parent < 0 else self.ids[parent],
                int(self.depth[p]),
                float(self.count[p]),
                float(self.fan_out[p]),
                bool(self.has_vector[p]),
                bool(self.eligible[p]),
            )
        for row, leaf_id in enumerate(leaf_index.ids()):
            out[leaf_id] = (self.ids[int(self.leaf_parent[row])],)
        levels = {d: sorted(int(p) for p in level.values()) for d, level in enumerate(self.levels)}
        expected: dict[int, list[int]] = {}
        for position in np.flatnonzero(self.depth[: len(self.ids)] >= 0).tolist():
            expected.setdefault(int(self.depth[position]), []).append(position)
        out["__levels_consistent__"] = ({d: v for d, v in levels.items() if v} == expected,)
        return out


@dataclass(slots=True)
class _Timeline:
    """Leaves in time order and their segments (runs without a session change or long silence)."""

    _rows: np.ndarray  # index rows of the leaves, in time order (capacity; the first ``size`` used)
    _segment: np.ndarray  # segment number of each, in the same order
    size: int

    @property
    def rows(self) -> np.ndarray:
        return self._rows[: self.size]

    @property
    def segment(self) -> np.ndarray:
        return self._segment[: self.size]

    @classmethod
    def build(cls, leaves: dict[str, Leaf], gap_seconds: float, index: VectorIndex) -> _Timeline:
        return cls.of(sorted(leaves.values(), key=lambda leaf: leaf.seq), gap_seconds, index)

    @classmethod
    def of(
        cls, ordered: Sequence[Leaf], gap_seconds: float, index: VectorIndex, rows: np.ndarray | None = None
    ) -> _Timeline:
        """The timeline of ``ordered``, every leaf held, in ``seq`` order; ``rows``: their rows in
        ``index`` when the caller knows them (after a load, 0 to n - 1), instead of looking each up."""
        n = len(ordered)
        stamps = np.fromiter((leaf.timestamp for leaf in ordered), dtype=np.float64, count=n)
        sessions = np.empty(n, dtype=object)
        sessions[:] = [leaf.session for leaf in ordered]
        known = np.fromiter((session is not None for session in sessions), dtype=bool, count=n)
        # As is_boundary between each leaf and the previous one: a new session or a long silence.
        # Compared column-wise (object arrays compare element by element with ``!=``): a Python
        # loop over the pairs was 40 ms of the first recall after loading 10k memories.
        changed = known[1:] & known[:-1] & (sessions[1:] != sessions[:-1]).astype(bool)
        boundary = changed | (np.diff(stamps) > gap_seconds)
        segment = np.concatenate([np.zeros(min(n, 1), dtype=np.int64), np.cumsum(boundary, dtype=np.int64)])
        if rows is None:
            row_of = index.row_of
            rows = np.fromiter((row_of[leaf.id] for leaf in ordered), dtype=np.int64, count=n)
        return cls(_rows=rows, _segment=segment, size=n)

    def append(self, row: int, boundary: bool) -> None:
        """Add the newest leaf (index ``row``); ``boundary`` when it starts a new segment."""
        segment = (int(self._segment[self.size - 1]) + int(boundary)) if self.size else 0
        if self.size == len(self._rows):
            capacity = max(16, 2 * self.size)
            self._rows = np.concatenate([self._rows, np.zeros(capacity - self.size, dtype=np.int64)])
            self._segment = np.concatenate([self._segment, np.zeros(capacity - self.size, dtype=np.int64)])
        self._rows[self.size] = row
        self._segment[self.size] = segment
        self.size += 1

    def positions(self) -> np.ndarray:
        """The place in time order of each leaf-index row (-1 for a row not in the timeline)."""
        rows = self.rows
        places = np.full(int(rows.max()) + 1 if len(rows) else 0, -1, dtype=np.int64)
        places[rows] = np.arange(len(rows))
        return places

    def segment_of_rows(self, n: int) -> np.ndarray:
        """The segment number of each of the ``n`` leaf-index rows (all in the timeline)."""
        out = np.zeros(n, dtype=np.int64)
        out[self.rows] = self.segment
        return out

    def neighbours(self, row: int, places: np.ndarray) -> list[tuple[int, int]]:
        """The leaf-index rows within ``NEIGHBOUR_RADIUS`` of leaf ``row`` in time and in its
        segment, with their distance: the leaves :meth:`propagate` lends score to it.
        ``places`` is :meth:`positions`, computed once for many calls."""
        rows, segment = self.rows, self.segment
        at = int(places[row]) if row < len(places) else -1
        if at < 0:
            return []
        found: list[tuple[int, int]] = []
        for distance in range(1, NEIGHBOUR_RADIUS + 1):
            for other in (at - distance, at + distance):
                if 0 <= other < len(rows) and segment[other] == segment[at]:
                    found.append((int(rows[other]), distance))
        return found

    def remove(self, row: int, boundary: Callable[[int, int], bool]) -> None:
        """Take out the leaf in index ``row``; the leaves before and after it become neighbours.

        ``boundary(a, b)`` says whether the leaves in index rows ``a`` and ``b`` fall in different
        segments. Segment numbers after the gap move so that they count boundaries from the first
        leaf, as :meth:`build` numbers them: a few numpy passes, where a rebuild after each forget
        took 80 ms at 10k leaves (on a loaded machine), most of a follower's time after a forget.
        """
        size = self.size
        (found,) = np.flatnonzero(self._rows[:size] == row)[:1]
        p = int(found)
        if p + 1 < size:
            crossed = int(self._segment[p + 1] - self._segment[max(p - 1, 0)])
            joined = int(boundary(int(self._rows[p - 1]), int(self._rows[p + 1]))) if p > 0 else 0
            self._segment[p + 1 : size] += joined - crossed
        self._rows[p : size - 1] = self._rows[p + 1 : size]
        self._segment[p : size - 1] = self._segment[p + 1 : size]
        self.size -= 1

    def renumber(self, old_row: int, new_row: int) -> None:
        """The leaf in index row ``old_row`` moved to ``new_row``."""
        rows = self._rows[: self.size]
        rows[rows == old_row] = new_row

    def propagate(self, scores: np.ndarray) -> np.ndarray:
        """Add to each leaf's score the decayed scores of its neighbours in time within its segment."""
        rows = self.rows
        segment = self.segment
        timed = scores[rows]
        spread = timed.copy()
        for r in range(1, NEIGHBOUR_RADIUS + 1):
            if r >= len(timed):
                break
            same = segment[r:] == segment[:-r]
            weight = NEIGHBOUR_DECAY**r
            spread[r:] += weight * np.where(same, timed[:-r], 0.0)
            spread[:-r] += weight * np.where(same, timed[r:], 0.0)
        out = np.empty_like(scores)
        out[rows] = spread
        return out


@dataclass(slots=True)
class _TreeStructure:
    """A tree as arrays: leaves first (in leaf-index row order), then branches; each node's parent."""

    ids: list[str | None]
    leaf_rows: np.ndarray  # position of each leaf-index row among ids
    parent: np.ndarray  # position of each node's parent, -1 for the root
    fan_out: np.ndarray  # number of children of each node
    branch_positions: np.ndarray | None = None  # the tree arrays' position of each branch, in order

    @classmethod
    def build(cls, tree: TemporalTree, leaf_index: VectorIndex) -> _TreeStructure:
        """The structure straight from the tree's nodes (the reference the arrays are checked against)."""
        leaf_ids = leaf_index.ids()
        ids: list[str | None] = [*leaf_ids, *tree.branches]
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


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` extended to ``size`` entries with -1."""
    grown = np.full(size, -1, dtype=array.dtype)
    grown[: len(array)] = array
    return grown


def _derive_missing_vectors(
    branches: Sequence[Branch], leaves: Mapping[str, Leaf], held: Mapping[str, Branch]
) -> None:
    """Give the stored ``branches`` of one tree that come without a vector theirs, from their
    children (deepest first, so a changed child's comes before its parent reads it): the changed
    ones among ``branches``, the others as ``held`` (the tree before the change)."""
    missing = sorted((b for b in branches if b.vector is None and b.children), key=lambda b: -b.depth)
    if not missing:
        return
    incoming = {b.id: b for b in branches}
    lookup = collections.ChainMap(incoming, held)  # type: ignore[arg-type]
    for branch in missing:
        derive_vector(branch, leaves, lookup)


def _headroom(size: int) -> int:
    """Capacity for an index loaded with ``size`` rows: room to grow before its first doubling.

    Doubling copies the whole matrix (150 MB at 100k leaves); without headroom the first
    ``remember`` after every start would pay it.
    """
    return size + size // 8 + 16
