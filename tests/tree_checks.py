"""Invariants of the semantic and temporal trees, shared by the property tests and the store tests."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.semantic import ROOT_ID, SemanticTree
from memtree_mcp.core.temporal import TEMPORAL_ROOT_ID, TemporalTree


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
    """A comparable picture of a memory: every node of both trees, vectors as lists."""
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
            memory.temporal.parent_of[leaf.id],
        )
    for branch in [*memory.semantic.branches.values(), *memory.temporal.branches.values()]:
        state[branch.id] = (
            branch.tree,
            branch.kind,
            branch.parent,
            branch.depth,
            list(branch.children),
            branch.text,
            branch.label,
            None if branch.vector is None else branch.vector.tolist(),
            branch.cohesion,
            branch.leaf_count,
            branch.first_seq,
            branch.last_seq,
            branch.first_ts,
            branch.last_ts,
        )
    state["__heights__"] = (memory.semantic.height, memory.temporal.height)
    return state


def assert_temporal_invariants(tree: TemporalTree, *, max_fan_out: int | None = None) -> None:
    """Every leaf once and in arrival order, uniform leaf depth, contiguous spans, exact representatives.

    Contiguity is checked against arrival order (the rank of a leaf's seq among all leaves), so it
    holds whether or not seqs have gaps; with consecutive seqs it means a branch holds exactly the
    seqs first_seq..last_seq.
    """
    seen: list[str] = list(tree.walk())
    leaves = [n for n in seen if n in tree.leaves]
    assert sorted(leaves) == sorted(tree.leaves), "every leaf is reachable exactly once"
    assert len(seen) == len(set(seen)), "no node is reachable twice"
    assert set(seen) - set(leaves) == set(tree.branches), "every branch is reachable"
    seqs = [tree.leaves[n].seq for n in leaves]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "leaves in arrival order, left to right"
    rank = {n: i for i, n in enumerate(leaves)}
    assert tree.last_leaf == (leaves[-1] if leaves else None)
    frontier = {b.id for b in tree.frontier()}
    if len(leaves) >= 2:
        assert len(tree.root.children) >= 2, "the root of two or more leaves splits them"
    if len(tree.root.children) == 1:
        # Insertion treats a root with at most one child as the one-leaf tree and attaches at height 1.
        assert tree.root.children[0] in tree.leaves and tree.height == 1, "a lone leaf hangs from the root"
    if not leaves:
        assert tree.height == 0 and tree.last_leaf is None and set(tree.branches) == {TEMPORAL_ROOT_ID}
    for leaf_id in leaves:
        assert tree.depth_of(leaf_id) == tree.height, "every leaf sits at depth height"
    for branch in tree.branches.values():
        assert branch.tree == "temporal"
        if branch.id == TEMPORAL_ROOT_ID:
            assert branch.parent is None and branch.depth == 0 and branch.kind == "root"
        else:
            assert branch.kind == "internal"
            assert len(branch.children) >= 1, f"internal node {branch.id} has no child"
            parent = tree.branches[branch.parent or ""]
            assert branch.id in parent.children
            assert branch.depth == parent.depth + 1
        if max_fan_out is not None:
            assert len(branch.children) <= max_fan_out
        if not branch.children:
            assert not leaves, "only the root of an empty tree has no child"
            continue
        counts, firsts, lasts, first_ts, last_ts, spans = [], [], [], [], [], []
        for child in branch.children:
            if child in tree.leaves:
                assert branch.depth == tree.height - 1, "leaves hang only from the lowest level"
                leaf = tree.leaves[child]
                assert tree.parent_of[child] == branch.id
                counts.append(1)
                firsts.append(leaf.seq)
                lasts.append(leaf.seq)
                first_ts.append(leaf.timestamp)
                last_ts.append(leaf.timestamp)
                spans.append((rank[child], rank[child]))
            else:
                assert branch.depth < tree.height - 1, "branches hang only above the lowest level"
                sub = tree.branches[child]
                counts.append(sub.leaf_count)
                firsts.append(sub.first_seq)
                lasts.append(sub.last_seq)
                first_ts.append(sub.first_ts)
                last_ts.append(sub.last_ts)
                under = temporal_subtree_leaves(tree, child)
                spans.append((rank[under[0]], rank[under[-1]]))
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start == end + 1, f"the children of {branch.id} cover consecutive spans in order"
        under = temporal_subtree_leaves(tree, branch.id)
        assert [rank[n] for n in under] == list(range(spans[0][0], spans[-1][1] + 1))
        assert branch.leaf_count == sum(counts) == len(under)
        assert branch.first_seq == firsts[0] == tree.leaves[under[0]].seq
        assert branch.last_seq == lasts[-1] == tree.leaves[under[-1]].seq
        assert branch.first_ts == min(first_ts) and branch.last_ts == max(last_ts)
        mean = np.mean([tree.leaves[n].vector for n in under], axis=0)
        assert branch.vector is not None
        assert branch.cohesion == pytest.approx(float(np.linalg.norm(mean)), abs=1e-5)
        np.testing.assert_allclose(branch.vector * branch.cohesion, mean, atol=1e-5)
        assert branch.text, f"branch {branch.id} has a representative text"
        if branch.id not in frontier:
            assert branch.last_seq < tree.leaves[leaves[-1]].seq, "only the frontier ends at the last leaf"
    assert tree.height == (max((tree.depth_of(n) for n in leaves), default=0)), "height tracked"


def temporal_subtree_leaves(tree: TemporalTree, node_id: str) -> list[str]:
    """The leaves under ``node_id``, left to right."""
    if node_id in tree.leaves:
        return [node_id]
    return [
        leaf for child in tree.branches[node_id].children for leaf in temporal_subtree_leaves(tree, child)
    ]
