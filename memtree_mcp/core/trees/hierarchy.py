"""What both trees share: reading a hierarchy of branches over a shared mapping of leaves."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.representative import refresh_branch

Linkage = Literal["average", "centroid"]


@dataclass(frozen=True, slots=True)
class Shape:
    """One tree's shape as a store's columns give it, for a load of that tree's branches in a
    given order: what :meth:`Hierarchy._adopt` and the recall arrays (``core/indexes/arrays.py``) would
    otherwise work out node by node (0.7 s of a 100k load).

    - ``parent_of``: each leaf's parent, in the order the branches list them; ``height``: the
      depth below the deepest leaves' parents;
    - by branch, in load order: ``parent`` (the parent's place in that order, -1 for none),
      ``depth``, ``leaf_count``, ``fan_out`` (children) and ``internal`` (of kind "internal");
    - by leaf in ``parent_of``: ``leaf_rows``, its place among all ``leaves`` leaves in seq order
      (the leaf index's rows after a load), and ``leaf_parent``, its parent's place.
    """

    parent_of: dict[str, str]
    height: int
    parent: np.ndarray
    depth: np.ndarray
    leaf_count: np.ndarray
    fan_out: np.ndarray
    internal: np.ndarray
    leaves: int
    leaf_rows: np.ndarray
    leaf_parent: np.ndarray

    def fits(self, branches: Sequence[Branch]) -> bool:
        """Whether this can stand for ``branches`` (the same count; the store made both)."""
        return len(self.depth) == len(branches)


class Hierarchy:
    """Branches over shared leaves: ``branches`` by id, each leaf's parent in ``parent_of``, a root.

    Subclasses set these in their constructor and say how leaves are inserted.
    """

    tree_name: str
    root: Branch
    leaves: Mapping[str, Leaf]
    branches: dict[str, Branch]
    parent_of: dict[str, str]
    height: int
    # How a branch is compared with a vector: by the mean cosine to its leaves ("average") or by
    # the cosine to its centroid ("centroid"); see core/trees/semantic.py for the measurements.
    linkage: Linkage = "average"

    def _adopt(self, by_id: dict[str, Branch], root: Branch, shape: Shape | None = None) -> None:
        """Take stored branches as the whole tree; leaves' parents and the height follow from them
        (or come with their ``shape``)."""
        by_id.setdefault(root.id, root)
        self.branches = by_id
        self.root = by_id[root.id]
        if shape is not None:
            self.parent_of, self.height = dict(shape.parent_of), shape.height
            return
        self.parent_of = {}
        height = 0
        for branch in by_id.values():
            for child in branch.children:
                if child in self.leaves:
                    self.parent_of[child] = branch.id
                    height = max(height, branch.depth + 1)
        self.height = height

    def vector_of(self, node_id: str) -> Vector:
        """A leaf's vector or a branch's unit vector; KeyError for a branch without leaves yet."""
        leaf = self.leaves.get(node_id)
        if leaf is not None:
            return leaf.vector
        vector = self.branches[node_id].vector
        if vector is None:
            raise KeyError(f"branch {node_id} has no vector yet")
        return vector

    def match_vector_of(self, node_id: str) -> Vector:
        """The vector whose dot product with a unit vector is that vector's similarity to the node.

        With average linkage a branch matches by the mean of its leaves' vectors (the average cosine
        to its leaves); with centroid linkage by its unit vector. KeyError as ``vector_of``.
        """
        vector = self.vector_of(node_id)
        if node_id in self.leaves or self.linkage == "centroid":
            return vector
        return (vector * self.branches[node_id].cohesion).astype(np.float32)

    def text_of(self, node_id: str) -> str:
        leaf = self.leaves.get(node_id)
        return leaf.text if leaf is not None else self.branches[node_id].text

    def depth_of(self, node_id: str) -> int:
        if node_id in self.branches:
            return self.branches[node_id].depth
        return self.branches[self.parent_of[node_id]].depth + 1

    def ancestors(self, node_id: str) -> list[Branch]:
        """The branches above ``node_id``, from the root down to its parent."""
        chain: list[Branch] = []
        parent = self.branches[node_id].parent if node_id in self.branches else self.parent_of.get(node_id)
        while parent is not None:
            branch = self.branches[parent]
            chain.append(branch)
            parent = branch.parent
        chain.reverse()
        return chain

    def walk(self, start: str | None = None) -> Iterator[str]:
        """Every node id under ``start`` (the root by default) and itself, depth first, children in order."""
        stack = [start if start is not None else self.root.id]
        while stack:
            node_id = stack.pop()
            yield node_id
            branch = self.branches.get(node_id)
            if branch is not None:
                stack.extend(reversed(branch.children))

    def leaves_under(self, node_id: str) -> list[str]:
        """The leaves of the subtree under ``node_id``, in the tree's order."""
        return [n for n in self.walk(node_id) if n in self.leaves]

    # -- following another writer ------------------------------------------------------------------

    def apply(self, branches: Sequence[Branch], removed: Collection[str]) -> None:
        """Take in a change committed by another process, as adopting the stored tree afresh would.

        ``branches`` are the stored revisions of this tree's branches that are new or changed (the
        root among them when it changed), ``removed`` the ids of deleted nodes (ids this tree does
        not hold are ignored, so one set can serve both trees). The caller, who owns ``leaves``,
        has already added every leaf these branches name and dropped the removed leaves.

        Leaves' parents are read from the changed branches' children: a leaf moves only when the
        branch it joins changes. The height (the deepest leaf's depth) grows with the changed
        branches alone; it is found by a scan of all branches, as :meth:`_adopt` does, only when a
        leaf at that depth went or rose, as ``remove`` does (the scan took 60 ms a tree at 10k leaves
        on a busy machine, where the rest of a follow takes a few milliseconds).
        """
        bottom = self.height

        def at_bottom(branch: Branch | None) -> bool:
            return branch is None or branch.depth + 1 == bottom

        emptied = False  # whether a leaf at the deepest level went or rose
        for node_id in removed:
            parent = self.parent_of.get(node_id)
            emptied |= parent is not None and at_bottom(self.branches.get(parent))
        for branch in branches:
            old = self.branches.get(branch.id)
            if old is not None and old.depth > branch.depth and at_bottom(old):
                emptied |= any(child in self.parent_of for child in old.children)
            if branch.depth + 1 < bottom:
                for child in branch.children:
                    parent = self.parent_of.get(child)
                    emptied |= (
                        parent is not None and parent != branch.id and at_bottom(self.branches.get(parent))
                    )
        for node_id in removed:
            self.parent_of.pop(node_id, None)
            if node_id in self.branches and node_id != self.root.id:
                del self.branches[node_id]
        deepest = bottom
        for branch in branches:
            self.branches[branch.id] = branch
            if branch.parent is None:
                self.root = branch
            for child in branch.children:
                if child in self.leaves:
                    self.parent_of[child] = branch.id
                    deepest = max(deepest, branch.depth + 1)
        self.height = self._deepest_leaf_depth() if emptied else deepest
        self._applied()

    def _applied(self) -> None:
        """What a tree must bring up to date after :meth:`apply` besides its branches and height."""

    # -- removing --------------------------------------------------------------------------------

    def remove(self, leaf_id: str) -> tuple[set[str], set[str]]:
        """Take a leaf out of the tree; return ``(changed, removed)`` row ids. Each tree defines it."""
        raise NotImplementedError

    def refresh(self, branch: Branch) -> None:
        """Recompute a branch's count, span and representative from its children."""
        refresh_branch(branch, self.leaves, self.branches, keep_vector=False)

    def _prune(self, leaf_id: str, *, dissolve: bool) -> tuple[set[str], set[str], list[Branch], int]:
        """Detach ``leaf_id`` and repair the branches above it, bottom-up; the removal both trees share.

        Walking up from the leaf's parent: a non-root branch left without children is deleted (and
        its parent loses a child in turn); with ``dissolve``, a non-root branch left with a single
        child is deleted too and that child takes its place, at the same position, in the
        grandparent, its subtree one level higher. Every surviving branch on the way up, the root
        included, is then recomputed from its children (``refresh``), so nothing above keeps a
        trace of the leaf.

        The leaf's record is never read (it is found through ``parent_of``), and ``leaves`` is not
        touched. Returns ``(changed, removed, refreshed, moved_depth)``: ids of rows to rewrite
        (refreshed branches, moved branches and leaves), ids of deleted branches, the refreshed
        branches lowest first, and the deepest depth a moved leaf had before moving (-1 if none).

        Raises ``KeyError`` when the leaf is not in this tree.
        """
        parent_id = self.parent_of.pop(leaf_id, None)
        if parent_id is None:
            raise KeyError(f"leaf {leaf_id} is not in the {self.tree_name} tree")
        node = self.branches[parent_id]
        node.children.remove(leaf_id)
        changed: set[str] = set()
        removed: set[str] = set()
        refreshed: list[Branch] = []
        moved_depth = -1
        while node.parent is not None:
            parent = self.branches[node.parent]
            if not node.children:
                parent.children.remove(node.id)
                del self.branches[node.id]
                removed.add(node.id)
            elif dissolve and len(node.children) == 1:
                (child,) = node.children
                parent.children[parent.children.index(node.id)] = child
                if child in self.branches:
                    self.branches[child].parent = parent.id
                    moved_depth = max(moved_depth, self._shift(child, -1, changed))
                else:
                    self.parent_of[child] = parent.id
                    moved_depth = max(moved_depth, node.depth + 1)
                changed.add(child)
                del self.branches[node.id]
                removed.add(node.id)
            else:
                refreshed.append(node)
            node = parent
        refreshed.append(node)
        for branch in refreshed:
            self.refresh(branch)
        changed.update(b.id for b in refreshed)
        changed -= removed
        return changed, removed, refreshed, moved_depth

    def _shift(self, start: str, delta: int, changed: set[str]) -> int:
        """Add ``delta`` to the depth of every branch under ``start`` (itself included), noting them in
        ``changed``; return the deepest depth a leaf under it had before the shift (-1 if none)."""
        deepest = -1
        for node_id in self.walk(start):
            branch = self.branches.get(node_id)
            if branch is None:
                continue
            if any(child in self.parent_of for child in branch.children):
                deepest = max(deepest, branch.depth + 1)
            branch.depth += delta
            changed.add(node_id)
        return deepest

    def _deepest_leaf_depth(self) -> int:
        """The depth of the deepest leaf, by a scan of the branches (0 for an empty tree)."""
        return max(
            (b.depth + 1 for b in self.branches.values() if any(c in self.parent_of for c in b.children)),
            default=0,
        )
