"""Invariant checks of a whole memory, for ``memtree-mcp doctor`` and the tests: what is wrong,
never a raise.

:func:`memory_problems` checks both trees (:mod:`memtree_mcp.core.checks.trees`), then the leaves
and the indexes: leaf vectors (dimension, finite, unit norm), the leaf, branch and lexical indexes
hold exactly what they should, content hashes and sequence numbers are unique, and no update links
close a circle (:func:`~memtree_mcp.core.trees.links.circles`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from memtree_mcp.core.checks.trees import Problem, ProblemArea, semantic_problems, temporal_problems
from memtree_mcp.core.indexes.arrays import summary_hit
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.links import circles
from memtree_mcp.core.trees.model import Leaf
from memtree_mcp.core.trees.semantic import SemanticTree
from memtree_mcp.core.trees.temporal import TemporalTree

__all__ = ["Problem", "ProblemArea", "memory_problems", "semantic_problems", "temporal_problems"]

# A leaf vector's norm may differ from 1 by this much.
NORM_TOLERANCE = 1e-3


# -- the whole memory --------------------------------------------------------------------------------


def memory_problems(memory: Memory, dimension: int | None = None) -> list[Problem]:
    """Everything wrong with a :class:`~memtree_mcp.core.memory.Memory`: both trees, leaves, indexes.

    ``dimension`` is the embedder's; by default the memory's own.
    """
    dim = memory.dimension if dimension is None else dimension
    problems: list[Problem] = []
    leaves: Mapping[str, Leaf] = memory.leaves
    semantic, temporal = memory.semantic, memory.temporal
    for name, tree in (("semantic", semantic), ("temporal", temporal)):
        if tree.leaves is not leaves:
            problems.append(Problem("leaves", None, f"the {name} tree does not read the memory's leaves"))
    problems += semantic_problems(semantic)
    problems += temporal_problems(temporal)
    problems += _leaf_problems(memory, leaves, dim)
    problems += _link_problems(leaves)
    problems += _index_problems(memory, leaves, semantic, temporal, dim)
    return problems


def _leaf_problems(memory: Memory, leaves: Mapping[str, Leaf], dim: int) -> list[Problem]:
    problems: list[Problem] = []
    by_seq: dict[int, str] = {}
    by_hash: dict[str, str] = {}
    for key, leaf in leaves.items():
        if leaf.id != key:
            problems.append(Problem("leaves", key, f"leaf stored under {key} has the id {leaf.id}"))
        vector = np.asarray(leaf.vector)
        if vector.shape != (dim,):
            problems.append(
                Problem("leaves", key, f"leaf {key}'s vector has shape {vector.shape}, not ({dim},)")
            )
        elif not np.all(np.isfinite(vector)):
            problems.append(Problem("leaves", key, f"leaf {key}'s vector is not finite"))
        else:
            norm = float(np.linalg.norm(vector.astype(np.float64)))
            if abs(norm - 1.0) > NORM_TOLERANCE:
                problems.append(Problem("leaves", key, f"leaf {key}'s vector has norm {norm:.6g}, not 1"))
        other = by_seq.setdefault(leaf.seq, key)
        if other != key:
            problems.append(Problem("leaves", key, f"leaves {other} and {key} share seq {leaf.seq}"))
        if leaf.content_hash:
            first = by_hash.setdefault(leaf.content_hash, key)
            if first != key:
                problems.append(
                    Problem("leaves", key, f"leaves {first} and {key} have the same content hash")
                )
            found = memory.duplicate_of(leaf.content_hash)
            if found is None or found not in leaves or leaves[found].content_hash != leaf.content_hash:
                problems.append(
                    Problem("index", key, f"the duplicate check does not find leaf {key} by its content hash")
                )
    if by_seq and memory.next_seq <= max(by_seq):
        problems.append(
            Problem("leaves", None, f"next_seq is {memory.next_seq}, not after the last seq {max(by_seq)}")
        )
    return problems


def _link_problems(leaves: Mapping[str, Leaf]) -> list[Problem]:
    """A circle of update links marks every memory in it superseded and none current (the hook's
    brief then shows none of them)."""
    return [
        Problem(
            "leaves",
            circle[0],
            f"update links in a circle ({' updates '.join([*circle, circle[0]])}): none of them is "
            f"current; --repair undoes the link from the oldest, {circle[0]}, to {circle[1]}",
        )
        for circle in circles(leaves)
    ]


def _index_problems(
    memory: Memory, leaves: Mapping[str, Leaf], semantic: SemanticTree, temporal: TemporalTree, dim: int
) -> list[Problem]:
    problems: list[Problem] = []
    leaf_index = memory.leaf_index
    indexed = set(leaf_index.ids())
    for leaf_id, leaf in leaves.items():
        if leaf_id not in indexed:
            problems.append(Problem("index", leaf_id, f"leaf {leaf_id} is missing from the leaf index"))
            continue
        stored = _stored_vector(leaf_index, leaf_id)
        vector = np.asarray(leaf.vector)
        if stored is not None and vector.shape == stored.shape and not np.allclose(stored, vector, atol=1e-6):
            problems.append(
                Problem("index", leaf_id, f"the leaf index holds a stale vector for leaf {leaf_id}")
            )
    for node_id in sorted(indexed - set(leaves)):
        problems.append(Problem("index", node_id, f"the leaf index holds {node_id}, which is not a leaf"))
    lexical = set(_lexical_ids(memory.lexical))
    for leaf_id in leaves:
        if leaf_id not in lexical:
            problems.append(Problem("index", leaf_id, f"leaf {leaf_id} is missing from the lexical index"))
    for node_id in sorted(lexical - set(leaves)):
        problems.append(Problem("index", node_id, f"the lexical index holds {node_id}, which is not a leaf"))
    # Branches: every branch recall may answer (summary_hit), by its match vector; others not at all.
    expected: dict[str, np.ndarray] = {}
    for tree in (semantic, temporal):
        for branch in tree.branches.values():
            if branch.id in leaves:
                problems.append(Problem("index", branch.id, f"{branch.id} is both a leaf and a branch"))
            if summary_hit(branch):
                if branch.id in expected:
                    problems.append(
                        Problem("index", branch.id, f"branch id {branch.id} is used in both trees")
                    )
                expected[branch.id] = np.asarray(tree.match_vector_of(branch.id))
    branch_index = memory.branch_index
    in_branch_index = set(branch_index.ids())
    for branch_id, vector in expected.items():
        if branch_id not in in_branch_index:
            problems.append(
                Problem("index", branch_id, f"branch {branch_id} is missing from the branch index")
            )
            continue
        stored = _stored_vector(branch_index, branch_id)
        if stored is None or vector.shape != (dim,) or stored.shape != vector.shape:
            problems.append(
                Problem("index", branch_id, f"branch {branch_id}'s vector does not have dimension {dim}")
            )
        elif not np.allclose(stored, vector, atol=1e-5):
            problems.append(
                Problem("index", branch_id, f"the branch index holds a wrong vector for branch {branch_id}")
            )
    for node_id in sorted(in_branch_index - set(expected)):
        problems.append(
            Problem("index", node_id, f"the branch index holds {node_id}, which is not an internal branch")
        )
    return problems


def _stored_vector(index: Any, node_id: str) -> np.ndarray | None:
    """The vector an index holds for ``node_id`` (VectorIndex has no public reader), or None."""
    matrix = getattr(index, "_matrix", None)
    if matrix is None:
        return None
    try:
        row = index.row(node_id)
    except KeyError:
        return None
    return np.asarray(matrix[row])


def _lexical_ids(lexical: Any) -> Iterable[str]:
    """The documents in a lexical index (its public ``ids()`` when it has one)."""
    ids = getattr(lexical, "ids", None)
    if callable(ids):
        return list(ids())
    return list(getattr(lexical, "_slot_of", {}))
