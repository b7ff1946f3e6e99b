"""One namespace's memory in RAM: its leaves, the trees over them and a vector index of every node."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from memtree_mcp.core.embedding import Matrix, Vector
from memtree_mcp.core.index import VectorIndex
from memtree_mcp.core.model import Branch, Leaf
from memtree_mcp.core.semantic import Linkage, SemanticTree, VectorMode

HitKind = Literal["leaf", "summary"]

# Collapsed retrieval drops nodes less similar than this (θ_retrieve of seed 000 §3.2). Unrelated
# texts score around 0 to 0.1 with all-MiniLM-L6-v2; anything on the subject scores well above.
MIN_SCORE = 0.1


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


class Memory:
    """The in-memory state of one namespace; the store persists it and rebuilds it on load."""

    def __init__(
        self,
        dimension: int,
        *,
        vector_mode: VectorMode = "centroid",
        linkage: Linkage = "average",
        embed: Callable[[Sequence[str]], Matrix] | None = None,
    ) -> None:
        self.dimension = dimension
        self.leaves: dict[str, Leaf] = {}
        self.semantic = SemanticTree(
            self.leaves, dimension, vector_mode=vector_mode, linkage=linkage, embed=embed
        )
        self.index = VectorIndex(dimension)
        self._by_hash: dict[str, str] = {}
        self.next_seq = 0

    # -- loading ---------------------------------------------------------------------------------

    def load(self, leaves: Iterable[Leaf], branches: Iterable[Branch]) -> None:
        """Replace the whole state with stored nodes."""
        self.leaves.clear()
        self._by_hash.clear()
        for leaf in leaves:
            self.leaves[leaf.id] = leaf
            if leaf.content_hash:
                self._by_hash[leaf.content_hash] = leaf.id
        self.next_seq = max((leaf.seq for leaf in self.leaves.values()), default=-1) + 1
        self.semantic.adopt([b for b in branches if b.tree == "semantic"])
        self.index = VectorIndex(self.dimension, capacity=len(self.leaves) * 2 + 16)
        for leaf in self.leaves.values():
            self.index.upsert(leaf.id, leaf.vector)
        for branch in self.semantic.branches.values():
            self._index_branch(branch)

    # -- writing ---------------------------------------------------------------------------------

    def duplicate_of(self, content_hash: str) -> str | None:
        """The id of a stored leaf with exactly this content, if there is one."""
        return self._by_hash.get(content_hash)

    def add_leaf(self, leaf: Leaf) -> set[str]:
        """Store ``leaf`` and insert it into every tree; return the ids of all nodes that changed."""
        if leaf.id in self.leaves:
            raise ValueError(f"leaf {leaf.id} is already stored")
        self.leaves[leaf.id] = leaf
        if leaf.content_hash:
            self._by_hash[leaf.content_hash] = leaf.id
        self.next_seq = max(self.next_seq, leaf.seq + 1)
        changed = self.semantic.insert(leaf)
        self.index.upsert(leaf.id, leaf.vector)
        for node_id in changed:
            branch = self.semantic.branches.get(node_id)
            if branch is not None:
                self._index_branch(branch)
        return changed

    def _index_branch(self, branch: Branch) -> None:
        # The root stands for everything at once and would answer every query; it is not a hit.
        if branch.kind == "internal" and branch.vector is not None:
            self.index.upsert(branch.id, self.semantic.match_vector_of(branch.id))

    # -- reading ---------------------------------------------------------------------------------

    def node(self, node_id: str) -> Leaf | Branch:
        """The leaf or branch with this id; raises KeyError."""
        leaf = self.leaves.get(node_id)
        if leaf is not None:
            return leaf
        return self.semantic.branches[node_id]

    def breadcrumb(self, node_id: str) -> list[str]:
        """Short labels of the ancestors of ``node_id`` in the semantic tree, the root left out."""
        return [b.label for b in self.semantic.ancestors(node_id) if b.kind != "root"]

    def recall(
        self,
        query: Vector,
        k: int,
        *,
        max_tokens: int | None = None,
        min_score: float = MIN_SCORE,
    ) -> list[Hit]:
        """Collapsed retrieval: every node competes; the best ``k`` above ``min_score`` that fit the budget.

        A leaf scores its cosine to the query, a summary the average cosine of its leaves, so a
        summary ranks high only when many of its memories are relevant, never above its best one.
        Hits are taken in score order; one that does not fit in what is left of ``max_tokens`` is
        skipped, so a long summary never crowds out the short memories that follow it.
        """
        hits: list[Hit] = []
        budget = max_tokens
        # Ask the index for more than k so that skipped (over-budget) hits can be replaced.
        wanted = k if budget is None else k * 4
        for node_id, score in self.index.search(query, wanted, min_score):
            node = self.node(node_id)
            cost = estimate_tokens(node.text)
            if budget is not None:
                if cost > budget:
                    continue
                budget -= cost
            hits.append(self._hit(node, score))
            if len(hits) == k:
                break
        return hits

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
            breadcrumb=self.breadcrumb(node.id),
        )
