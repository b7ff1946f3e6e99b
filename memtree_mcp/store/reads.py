"""What a read of a namespace table gives (``store/table.py``): the live nodes of a version
(:class:`Snapshot`), where a whole read left its reader (:class:`Position`), and what was committed
since (:class:`Changes`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from memtree_mcp.core.trees.hierarchy import Shape
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.store.arrow import branches_at, leaf_vectors, leaves_at, tree_shapes


@dataclass(slots=True)
class Snapshot:
    """The live nodes of a namespace table and the table version they were read at."""

    version: int
    leaves: list[Leaf]
    branches: list[Branch]
    # The leaves' vectors as one matrix, row i being leaves[i]'s (leaves in seq order), for
    # Memory.load to take in one copy; each leaf's vector is a view of its row.
    vectors: np.ndarray | None = None
    # Each tree's shape, from the columns, for Memory.load (its branches in the order above).
    shapes: dict[str, Shape] | None = None


@dataclass(frozen=True, slots=True)
class Position:
    """Where a whole read of a table left its reader: what :meth:`NamespaceTable.changes` compares
    the table with to find the rows appended since (the generation, the row count, the highest
    revision and the (id, rev) of the last row), the version read, and the highest fence read
    (``store/fences.py``: rows appended since with a revision no newer do not count)."""

    generation: bytes
    version: int
    rows: int
    rev: int
    last: tuple[str, int] | None
    fenced: int = int(np.iinfo(np.int64).min)


@dataclass(slots=True)
class Changes:
    """What was committed to a table since a reader last saw it, at table version ``version``: the
    latest revision of each node written since (``leaves``, ``branches``) and the ids deleted."""

    version: int
    leaves: list[Leaf]
    branches: list[Branch]
    removed: set[str]


def snapshot_of(
    arrow: pa.Table, positions: np.ndarray, is_leaf: np.ndarray, version: int, dimension: int
) -> Snapshot:
    """The nodes in the rows at ``positions`` of ``arrow`` (``is_leaf`` says which are leaves)."""
    at = positions[is_leaf]
    # In seq order, so that the leaves' vectors are the rows of one matrix in their order.
    at = at[np.argsort(arrow.column("first_seq").take(pa.array(at)).to_numpy(), kind="stable")]
    vectors = leaf_vectors(arrow, at, dimension, copy=False)
    leaves = leaves_at(arrow, at, dimension, vectors)
    branches = branches_at(arrow, positions[~is_leaf], (leaf.id for leaf in leaves))
    shapes = tree_shapes(
        arrow, at, positions[~is_leaf], [leaf.id for leaf in leaves], [b.id for b in branches]
    )
    return Snapshot(version=version, leaves=leaves, branches=branches, vectors=vectors, shapes=shapes)


def node_ids(snapshot: Snapshot) -> set[str]:
    """The ids of ``snapshot``'s nodes, as the strings its nodes hold (no copies)."""
    ids = {leaf.id for leaf in snapshot.leaves}
    ids.update(branch.id for branch in snapshot.branches)
    return ids
