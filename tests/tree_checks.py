"""Invariants of the semantic tree, shared by the property tests and the store tests."""

from __future__ import annotations

import numpy as np
import pytest

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.semantic import ROOT_ID, SemanticTree


def assert_semantic_invariants(tree: SemanticTree) -> None:
    """Every leaf once, depths and parents consistent, ≥ 2 children, counts/spans/vectors from children."""
    seen: list[str] = list(tree.walk())
    leaves = [n for n in seen if n in tree.leaves]
    assert sorted(leaves) == sorted(tree.leaves), "every leaf is reachable exactly once"
    assert len(seen) == len(set(seen)), "no node is reachable twice"
    assert set(seen) - set(leaves) == set(tree.branches), "every branch is reachable"
    height = 0
    for branch in tree.branches.values():
        if branch.id == ROOT_ID:
            assert branch.parent is None and branch.depth == 0
        else:
            assert len(branch.children) >= 2, (
                f"internal node {branch.id} has {len(branch.children)} child(ren)"
            )
            parent = tree.branches[branch.parent or ""]
            assert branch.id in parent.children
            assert branch.depth == parent.depth + 1
        counts, firsts, lasts, vectors = [], [], [], []
        for child in branch.children:
            if child in tree.leaves:
                leaf = tree.leaves[child]
                assert tree.parent_of[child] == branch.id
                height = max(height, branch.depth + 1)
                counts.append(1)
                firsts.append(leaf.seq)
                lasts.append(leaf.seq)
                vectors.append(leaf.vector)
            else:
                sub = tree.branches[child]
                counts.append(sub.leaf_count)
                firsts.append(sub.first_seq)
                lasts.append(sub.last_seq)
                vectors.append(sub.vector)
        if not branch.children:
            continue
        assert branch.leaf_count == sum(counts)
        assert branch.first_seq == min(firsts) and branch.last_seq == max(lasts)
        if tree.vector_mode == "centroid":
            # The branch's vector and cohesion are the direction and norm of its leaves' mean vector.
            mean = np.mean([tree.leaves[n].vector for n in subtree_leaves(tree, branch.id)], axis=0)
            assert branch.vector is not None
            assert branch.cohesion == pytest.approx(float(np.linalg.norm(mean)), abs=1e-5)
            np.testing.assert_allclose(branch.vector * branch.cohesion, mean, atol=1e-5)
        assert branch.text, f"branch {branch.id} has a representative text"
    assert tree.height == height, "the tracked height is the deepest leaf's depth"


def subtree_leaves(tree: SemanticTree, node_id: str) -> list[str]:
    if node_id in tree.leaves:
        return [node_id]
    return [leaf for child in tree.branches[node_id].children for leaf in subtree_leaves(tree, child)]


def memory_state(memory: Memory) -> dict[str, object]:
    """A comparable picture of a memory: every node's fields, vectors as lists."""
    state: dict[str, object] = {}
    for leaf in memory.leaves.values():
        state[leaf.id] = (
            leaf.text,
            leaf.vector.tolist(),
            leaf.seq,
            leaf.timestamp,
            leaf.role,
            leaf.tags,
            leaf.session,
            leaf.content_hash,
            memory.semantic.parent_of[leaf.id],
        )
    for branch in memory.semantic.branches.values():
        state[branch.id] = (
            branch.kind,
            branch.parent,
            branch.depth,
            list(branch.children),
            branch.text,
            branch.label,
            None if branch.vector is None else branch.vector.tolist(),
            branch.leaf_count,
            branch.first_seq,
            branch.last_seq,
            branch.first_ts,
            branch.last_ts,
        )
    state["__height__"] = memory.semantic.height
    return state
