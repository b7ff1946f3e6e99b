"""MemTree's semantic tree (seed 000 §3.1, App. A.1): online top-down insertion by similarity.

A new leaf walks down from the root. At a node of depth d it is compared with that node's
children; it descends into the most similar child when the similarity reaches the depth-adaptive
threshold θ(d) = θ0 · exp(λ · d / d_max), with d_max the tree's current height. Otherwise it
becomes a new child of the node. Descending onto a leaf expands it: a new internal node takes the
leaf's place and holds the old leaf and the new one. Every internal node on the path then gets
its counts, span, text, label and vector recomputed from its children.

Bounded fan-out. A node with ``max_fan_out`` children takes no new child: the leaf descends anyway,
into the child holding the node most similar to it (the child itself or one of its children), as
HAT descends into its best child. MemTree's rule alone lets the root grow with every new subject
(a broad branch's mean cosine stays below θ for anything new): 160 children at 10k memories and
425 at 100k, every one of them visited to recompute the root on every insert. A full branch only
ever loses a child to a leaf's expansion (one for one) or a removal, so no split is needed: a
split of the root would move every node one level down and rewrite every row. The look-ahead
matters because a big child's mean says little about a subject it holds few of: by the nearest
mean alone, the leaves of a new subject would scatter over the root's children. Measured with
``bench/fanout.py``, since retired (``git show 4868398:bench/fanout.py``;
``docs/findings/speed-at-scale.md``).

Internal-node vectors and similarity, measured on the LoCoMo dev split (5 conversations, 2,760
turns, 997 questions; ``bench/routing.py``, since retired: ``git show 4868398:bench/routing.py``;
figures in ``docs/findings/recall-quality.md``). A branch's vector is the centroid of its leaves
(the direction of their mean vector), and a branch is compared by *average linkage*: the mean
cosine to its leaves, which is the dot product with the unnormalised mean (centroid × cohesion).
Against the two alternatives:

- cosine to the centroid (the literal reading): a centroid of many leaves sits close to everything
  in a conversation (cosine ≈ 0.7 > θ's ceiling 0.4·e^0.5 ≈ 0.66), so nearly every insert descends
  into the biggest child and the tree degenerates into a chain (height 41, mean leaf depth 15.5);
  in collapsed recall the denoised centroids outscore their own leaves (2.3 leaves in a top 10),
  leaf R@10 31.1 %;
- the embedding of the extractive summary: height 18, leaf R@10 45.4 %, but one embedder call per
  insert (216 s of embedding to build the split against 2–4 s for the tree itself);
- average linkage: height 18, mean leaf depth 9.1, 7.6 leaves in a top 10, leaf R@10 46.6 % and
  49.0 % when summaries are expanded to their best leaves; no embedder call; exact under deletion.

The other two remain available (``vector_mode``, ``linkage``) so the benchmark can compare them.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Literal

import numpy as np

from memtree_mcp.core.embedding import Matrix
from memtree_mcp.core.trees.hierarchy import Hierarchy, Linkage, Shape
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.representative import refresh_branch

VectorMode = Literal["centroid", "summary"]

THETA0 = 0.4
RATE = 0.5
ROOT_ID = "semantic-root"
# A branch with at least this many children keeps the matrix of their match vectors between inserts,
# so a descent through it costs one matrix-vector product, not a Python loop over its children (the
# root's fan-out grows with the memory: 160 children at 10k memories).
MATRIX_MIN_CHILDREN = 32
# No branch takes a new child past this many children: a full branch sends a new leaf down to the
# child holding what it is most like (HAT's bounded fan-out). Unbounded, the root had 160 children
# at 10k memories and 425 at 100k, all recomputed on every insert.
MAX_FAN_OUT = 32


def new_branch_id() -> str:
    """A fresh, unique id for a branch."""
    return "b" + uuid.uuid4().hex[:15]


class SemanticTree(Hierarchy):
    """The semantic hierarchy over a shared mapping of leaves.

    ``leaves`` is owned by the caller (the memory), which adds a leaf there before inserting it here.
    """

    tree_name = "semantic"

    def __init__(
        self,
        leaves: Mapping[str, Leaf],
        dimension: int,
        *,
        theta0: float = THETA0,
        rate: float = RATE,
        vector_mode: VectorMode = "centroid",
        linkage: Linkage = "average",
        embed: Callable[[Sequence[str]], Matrix] | None = None,
        new_id: Callable[[], str] = new_branch_id,
        max_fan_out: int | None = MAX_FAN_OUT,
    ) -> None:
        """Raises ValueError for summary vectors without ``embed``, average linkage with summary
        vectors, or a ``max_fan_out`` below 2."""
        if max_fan_out is not None and max_fan_out < 2:
            raise ValueError(f"a fan-out must be at least 2, got {max_fan_out}")
        if vector_mode == "summary" and embed is None:
            raise ValueError("vector_mode='summary' needs an embed function")
        if vector_mode == "summary" and linkage == "average":
            raise ValueError("linkage='average' needs vector_mode='centroid'")
        self.leaves = leaves
        self.dimension = dimension
        self.theta0 = theta0
        self.rate = rate
        self.vector_mode = vector_mode
        self.linkage = linkage
        self._embed = embed
        self.new_id = new_id
        self.max_fan_out = max_fan_out
        # Memories a later one updates (older id -> newer id), kept by Memory: branch texts and
        # labels are computed without them (refresh_branch's ``stale``).
        self.stale: dict[str, str] = {}
        self.root = Branch(id=ROOT_ID, tree="semantic", kind="root", parent=None, depth=0)
        self.branches: dict[str, Branch] = {ROOT_ID: self.root}
        self.parent_of: dict[str, str] = {}
        self.height = 0
        # Branch id -> match vectors of its children, in order (branches with many children only).
        self._matrices: dict[str, np.ndarray] = {}

    # -- reading ---------------------------------------------------------------------------------

    def threshold(self, depth: int) -> float:
        """θ(d): the similarity a child needs for a new leaf to descend into it from depth ``d``."""
        return self.theta0 * math.exp(self.rate * depth / max(self.height, 1))

    # -- writing ---------------------------------------------------------------------------------

    def insert(self, leaf: Leaf) -> set[str]:
        """Place ``leaf`` (already in ``leaves``) in the tree; return the ids of every node that changed.

        The changed set holds the leaf, each branch on its path (new ones included) and a leaf that
        moved under a new branch when it was expanded.
        """
        if leaf.id not in self.leaves:
            raise KeyError(f"leaf {leaf.id} must be added to the leaves before it is inserted")
        changed = {leaf.id}
        node = self.root
        path = [node]
        taken: list[tuple[Branch, int]] = []  # (branch, index of the child the path went through)
        while True:
            children = node.children
            if not children:
                self._attach(node, leaf.id)
                break
            similarities = self.children_matrix(node) @ leaf.vector
            best = int(np.argmax(similarities))
            if float(similarities[best]) < self.threshold(node.depth):
                if self.max_fan_out is None or len(children) < self.max_fan_out:
                    self._attach(node, leaf.id)
                    break
                # Full: the leaf goes down to the child holding what it is most like.
                best = self._closest_child(node, similarities, leaf.vector)
            best_id = children[best]
            taken.append((node, best))
            if best_id in self.branches:
                node = self.branches[best_id]
                path.append(node)
                continue
            # The most similar child is a leaf: expand it into a branch holding both leaves.
            expanded = Branch(
                id=self.new_id(), tree="semantic", kind="internal", parent=node.id, depth=node.depth + 1
            )
            self.branches[expanded.id] = expanded
            children[best] = expanded.id
            self._attach(expanded, best_id)
            self._attach(expanded, leaf.id)
            changed.add(best_id)
            path.append(expanded)
            break
        self.height = max(self.height, path[-1].depth + 1)
        for branch in reversed(path):
            self.refresh(branch)
        if self.vector_mode == "summary":
            self._embed_texts([b for b in path if b.kind == "internal"])
        # The child each kept matrix went through changed (refreshed, or a leaf expanded).
        for branch, index in taken:
            matrix = self._matrices.get(branch.id)
            if matrix is not None:
                matrix[index] = self.match_vector_of(branch.children[index])
        changed.update(b.id for b in path)
        return changed

    def remove(self, leaf_id: str) -> tuple[set[str], set[str]]:
        """Take ``leaf_id`` out of the tree (DESIGN §1's forget); return ``(changed, removed)``.

        The leaf leaves its parent. A branch left with one child is dissolved: the child takes its
        place, at the same position, in the grandparent, and the child's subtree moves one level up
        (so every internal node keeps at least two children); a branch left with none is deleted
        and its parent repaired the same way. The root stays, possibly with one child or none.
        Every surviving ancestor is then recomputed from its children, bottom-up (in summary mode
        its text is embedded again, as on insert), so no branch's text, label or vector depends on
        the leaf any more. ``height`` is recomputed only when the deepest level may have emptied:
        when the leaf, or a leaf of a subtree that moved up, sat at depth ``height``.

        ``changed`` holds every branch recomputed or moved (depth or parent) and every leaf whose
        parent changed; ``removed`` the dissolved or deleted branches. Neither holds ``leaf_id``;
        writing the rows in ``changed`` and deleting those in ``removed`` (and the leaf's own row)
        reproduces the tree.

        Contract with the caller, who owns ``leaves``: the leaf's record is not read here (it is
        found through ``parent_of``), so it may be dropped from ``leaves`` before or after this call;
        the memory drops it after removing it from both trees. Until it is dropped, ``leaves`` holds
        a leaf that this tree no longer places. Raises ``KeyError`` when the leaf is not in the tree
        (the tree is then unchanged).
        """
        deepest = leaf_id in self.parent_of and self.depth_of(leaf_id) == self.height
        self._matrices.clear()  # removal regroups children in many ways; forgetting is rare
        changed, removed, refreshed, moved_depth = self._prune(leaf_id, dissolve=True)
        if deepest or moved_depth >= self.height:
            self.height = self._deepest_leaf_depth()
        if self.vector_mode == "summary":
            self._embed_texts([b for b in refreshed if b.kind == "internal"])
        return changed, removed

    def adopt(self, branches: Sequence[Branch], shape: Shape | None = None) -> None:
        """Replace the whole tree with stored ``branches`` (one of them the root); used when loading.
        ``shape``: the leaves' parents and the height, as the store's columns give them."""
        empty_root = Branch(id=ROOT_ID, tree="semantic", kind="root", parent=None, depth=0)
        self._adopt({b.id: b for b in branches}, empty_root, shape)
        self._matrices.clear()

    def apply(self, branches: Sequence[Branch], removed: Collection[str]) -> None:
        """See :meth:`Hierarchy.apply`; the kept children matrices of every branch touched are dropped."""
        for node_id in removed:
            self._matrices.pop(node_id, None)
        for branch in branches:
            # Its children changed, or its match vector (a row of its parent's matrix).
            self._matrices.pop(branch.id, None)
            if branch.parent is not None:
                self._matrices.pop(branch.parent, None)
            old = self.branches.get(branch.id)
            if old is not None and old.parent is not None:
                self._matrices.pop(old.parent, None)
        super().apply(branches, removed)

    def _closest_child(self, branch: Branch, similarities: np.ndarray, vector: np.ndarray) -> int:
        """The index of ``branch``'s child that holds the node most similar to ``vector``: the child
        itself or one of its own children (one level of look-ahead).

        A child's mean over many leaves says little about a subject it holds few of, so a new
        subject would land in a nearly random child; its closest grandchild says where its like
        already is.
        """
        best, best_score = int(np.argmax(similarities)), -math.inf
        for index, child_id in enumerate(branch.children):
            score = float(similarities[index])
            child = self.branches.get(child_id)
            if child is not None and child.children:
                # Kept: the next forced descent through this branch reads the same matrices
                # (building them each time was 4 ms of a 10 ms insert at 10k memories).
                score = max(score, float(np.max(self.children_matrix(child, keep=True) @ vector)))
            if score > best_score:
                best, best_score = index, score
        return best

    @property
    def children_matrices(self) -> Mapping[str, np.ndarray]:
        """The children matrices kept between inserts, by branch id (read-only)."""
        return MappingProxyType(self._matrices)

    def children_matrix(self, branch: Branch, *, keep: bool = False) -> np.ndarray:
        """The match vectors of ``branch``'s children, one row each, in order; kept between inserts
        (and updated along each insertion path) for a wide branch, or when ``keep``."""
        matrix = self._matrices.get(branch.id)
        if matrix is None:
            matrix = np.stack([self.match_vector_of(c) for c in branch.children])
            if keep or len(branch.children) >= MATRIX_MIN_CHILDREN:
                self._matrices[branch.id] = matrix
        return matrix

    def _attach(self, branch: Branch, child_id: str) -> None:
        if child_id not in branch.children:
            branch.children.append(child_id)
            matrix = self._matrices.get(branch.id)
            if matrix is not None:
                self._matrices[branch.id] = np.vstack([matrix, self.match_vector_of(child_id)[None, :]])
        if child_id in self.branches:
            self.branches[child_id].parent = branch.id
        else:
            self.parent_of[child_id] = branch.id

    def refresh(self, branch: Branch) -> None:
        """Recompute a branch's count, span and representative from its children."""
        keep_vector = self.vector_mode != "centroid" and branch.vector is not None and branch.kind != "root"
        refresh_branch(branch, self.leaves, self.branches, keep_vector=keep_vector, stale=self.stale)

    def refresh_above(self, leaf_ids: Iterable[str]) -> set[str]:
        """Recompute every branch above ``leaf_ids``, deepest first, after ``stale`` changed for them
        (their texts and labels; their vectors stay as they are); returns the branches' ids."""
        above = {
            b.id: b for leaf_id in leaf_ids if leaf_id in self.parent_of for b in self.ancestors(leaf_id)
        }
        for branch in sorted(above.values(), key=lambda b: -b.depth):
            self.refresh(branch)
        return set(above)

    def _embed_texts(self, branches: list[Branch]) -> None:
        assert self._embed is not None
        if branches:
            for branch, vector in zip(branches, self._embed([b.text for b in branches]), strict=True):
                branch.vector = vector.astype(np.float32)
