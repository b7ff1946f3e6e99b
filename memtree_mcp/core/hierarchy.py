"""What both trees share: reading a hierarchy of branches over a shared mapping of leaves."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Literal

import numpy as np

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.model import Branch, Leaf

Linkage = Literal["average", "centroid"]


class Hierarchy:
    """Branches over shared leaves: ``branches`` by id, each leaf's parent in ``parent_of``, a root.

    Subclasses set these in their constructor and say how leaves are inserted.
    """

    root: Branch
    leaves: Mapping[str, Leaf]
    branches: dict[str, Branch]
    parent_of: dict[str, str]
    height: int
    # How a branch is compared with a vector: by the mean cosine to its leaves ("average") or by
    # the cosine to its centroid ("centroid"); see core/semantic.py for the measurements.
    linkage: Linkage = "average"

    def _adopt(self, by_id: dict[str, Branch], root: Branch) -> None:
        """Take stored branches as the whole tree; leaves' parents and the height follow from them."""
        by_id.setdefault(root.id, root)
        self.branches = by_id
        self.root = by_id[root.id]
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
