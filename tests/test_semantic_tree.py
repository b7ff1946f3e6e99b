"""The semantic tree keeps its invariants whatever is inserted (MemTree, seed 000 §3.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.model import Leaf
from memtree_mcp.core.trees.semantic import ROOT_ID, SemanticTree
from tests.tree_checks import assert_semantic_invariants, unit

DIM = 8


def leaf(i: int, vector: np.ndarray, text: str | None = None) -> Leaf:
    return Leaf(
        id=f"m{i:05d}", text=text or f"memory {i} about things", vector=vector, seq=i, timestamp=1000.0 + i
    )


vectors = st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=DIM, max_size=DIM).map(unit)


@settings(max_examples=60, deadline=None)
@given(st.lists(vectors, min_size=1, max_size=60), st.sampled_from([0.2, 0.4, 0.7]))
def test_every_insertion_keeps_the_tree_whole(batch: list[np.ndarray], theta0: float) -> None:
    memory = Memory(DIM)
    memory.semantic.theta0 = theta0
    for i, vector in enumerate(batch):
        changed = memory.add_leaf(leaf(i, vector))
        assert f"m{i:05d}" in changed
        assert_semantic_invariants(memory.semantic)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=80), st.integers(0, 2**32 - 1))
def test_clustered_memories_keep_the_tree_whole(clusters: list[int], seed: int) -> None:
    # Near-duplicates in few clusters drive the deep descents and repeated expansions.
    rng = np.random.default_rng(seed)
    centres = np.eye(DIM, dtype=np.float32)[:4]
    memory = Memory(DIM)
    for i, c in enumerate(clusters):
        noise = rng.normal(0, 0.3, size=DIM).astype(np.float32)
        memory.add_leaf(leaf(i, unit(list(centres[c] + noise))))
    assert_semantic_invariants(memory.semantic)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(vectors, min_size=1, max_size=80),
    st.sampled_from([2, 3, 4, 8]),
    st.sampled_from([0.2, 0.4, 0.7, 1.5]),
)
def test_no_branch_grows_past_the_fan_out_bound(batch: list[np.ndarray], bound: int, theta0: float) -> None:
    # θ0 = 1.5 is never reached: every leaf would become a child of the root, were it not full.
    memory = Memory(DIM)
    memory.semantic.theta0 = theta0
    memory.semantic.max_fan_out = bound
    for i, vector in enumerate(batch):
        memory.add_leaf(leaf(i, vector))
        assert_semantic_invariants(memory.semantic)
        assert all(len(b.children) <= bound for b in memory.semantic.branches.values())
        # The children matrices kept for the descents are those of the tree as it is now.
        for branch_id, matrix in memory.semantic.children_matrices.items():
            children = memory.semantic.branches[branch_id].children
            expected = np.stack([memory.semantic.match_vector_of(c) for c in children])
            np.testing.assert_allclose(matrix, expected, atol=1e-6)


def test_a_full_root_sends_a_new_subject_to_the_child_holding_its_like() -> None:
    memory = Memory(DIM)
    memory.semantic.max_fan_out = 3
    axes = np.eye(DIM, dtype=np.float32)
    memory.add_leaf(leaf(0, axes[0]))
    memory.add_leaf(leaf(1, axes[2]))
    memory.add_leaf(leaf(2, unit([0, 0, 1, 0.9, 0, 0, 0, 0])))  # joins leaf 1 under a new branch
    memory.add_leaf(leaf(3, axes[4]))
    root = memory.semantic.root
    holder = memory.semantic.parent_of["m00002"]
    assert root.children == ["m00000", holder, "m00003"]  # full
    # Closer to leaf 3 (0.36) than to the holder's mean (0.22), both below θ; closest of all to leaf
    # 2 (0.43), inside the holder: it joins leaf 2's subject, not the nearest mean.
    new = leaf(4, unit([0, 0, 0, 0.65, 0.36, 0.67, 0, 0]))
    memory.add_leaf(new)
    assert memory.semantic.parent_of["m00004"] == holder
    assert len(root.children) == 3
    assert_semantic_invariants(memory.semantic)


def test_a_fan_out_bound_below_two_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        SemanticTree({}, DIM, max_fan_out=1)


def test_every_branch_on_the_path_is_recomputed_and_reported_changed() -> None:
    memory = Memory(DIM)
    base = unit([1, 0.1, 0, 0, 0, 0, 0, 0])
    for i in range(6):
        memory.add_leaf(leaf(i, unit(list(base + 0.05 * i * np.eye(DIM, dtype=np.float32)[1]))))
    before = {b.id: (b.leaf_count, b.text, b.vector.copy()) for b in memory.semantic.branches.values()}  # type: ignore[union-attr]
    new = leaf(99, unit([1, 0.3, 0.2, 0, 0, 0, 0, 0]), text="A brand new fact.")
    changed = memory.add_leaf(new)
    ancestors = memory.semantic.ancestors(new.id)
    assert {b.id for b in ancestors} <= changed
    for branch in ancestors:
        if branch.id in before:
            assert branch.leaf_count == before[branch.id][0] + 1
        assert branch.last_seq == 99
    assert_semantic_invariants(memory.semantic)


def test_threshold_starts_at_theta0_and_grows_with_depth() -> None:
    tree = SemanticTree({}, DIM)
    tree.height = 4
    assert tree.threshold(0) == pytest.approx(0.4)
    assert tree.threshold(4) == pytest.approx(0.4 * math.exp(0.5))
    assert tree.threshold(1) < tree.threshold(2) < tree.threshold(3)


def test_an_unrelated_memory_becomes_a_new_child_of_the_root() -> None:
    memory = Memory(DIM)
    memory.add_leaf(leaf(0, unit([1, 0, 0, 0, 0, 0, 0, 0])))
    memory.add_leaf(leaf(1, unit([0, 1, 0, 0, 0, 0, 0, 0])))
    assert memory.semantic.root.children == ["m00000", "m00001"]
    assert memory.semantic.height == 1


def test_a_similar_memory_expands_the_leaf_it_reaches() -> None:
    memory = Memory(DIM)
    memory.add_leaf(leaf(0, unit([1, 0, 0, 0, 0, 0, 0, 0]), text="Biscuit is my golden retriever."))
    memory.add_leaf(leaf(1, unit([1, 0.2, 0, 0, 0, 0, 0, 0]), text="Biscuit loves swimming."))
    (branch_id,) = memory.semantic.root.children
    branch = memory.semantic.branches[branch_id]
    assert branch.kind == "internal" and branch.children == ["m00000", "m00001"]
    assert branch.depth == 1 and memory.semantic.depth_of("m00001") == 2
    assert "biscuit" in branch.label
    assert "Biscuit is my golden retriever." in branch.text


def test_a_leaf_must_be_stored_before_it_is_inserted() -> None:
    tree = SemanticTree({}, DIM)
    with pytest.raises(KeyError):
        tree.insert(leaf(0, unit([1, 0, 0, 0, 0, 0, 0, 0])))


def test_summary_vectors_come_from_the_embed_function() -> None:
    calls: list[list[str]] = []

    def embed(texts):  # type: ignore[no-untyped-def]
        calls.append(list(texts))
        return np.tile(unit([0, 0, 1, 0, 0, 0, 0, 0]), (len(texts), 1))

    memory = Memory(DIM, vector_mode="summary", linkage="centroid", embed=embed)
    memory.add_leaf(leaf(0, unit([1, 0, 0, 0, 0, 0, 0, 0])))
    memory.add_leaf(leaf(1, unit([1, 0.1, 0, 0, 0, 0, 0, 0])))
    (branch_id,) = memory.semantic.root.children
    assert calls and calls[-1] == [memory.semantic.branches[branch_id].text]
    np.testing.assert_allclose(memory.semantic.branches[branch_id].vector, unit([0, 0, 1, 0, 0, 0, 0, 0]))
    assert ROOT_ID not in [b for call in calls for b in call]
