"""Forgetting a leaf (DESIGN §1): both trees stay whole and no summary keeps a trace of it."""

from __future__ import annotations

import copy
import itertools
import zlib
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree_mcp.core.embedding import Matrix
from memtree_mcp.core.trees.hierarchy import Hierarchy
from memtree_mcp.core.trees.model import Leaf
from memtree_mcp.core.trees.segmenting import CompatibilityPolicy, CosinePolicy, FanOutPolicy
from memtree_mcp.core.trees.semantic import ROOT_ID, SemanticTree
from memtree_mcp.core.trees.temporal import TEMPORAL_ROOT_ID, TemporalTree
from tests.tree_checks import (
    assert_semantic_invariants,
    assert_temporal_invariants,
    branch_state,
    subtree_leaves,
    temporal_subtree_leaves,
    unit,
)

DIM = 8
HOUR = 3600.0
DAY = 24 * HOUR


def axis(i: int, tilt: float = 0.0, towards: int | None = None) -> np.ndarray:
    eye = np.eye(DIM, dtype=np.float32)
    return unit(list(eye[i] + tilt * eye[(i + 1) % DIM if towards is None else towards]))


def make_leaf(
    i: int,
    vector: np.ndarray,
    *,
    text: str | None = None,
    session: str | None = None,
    timestamp: float | None = None,
) -> Leaf:
    return Leaf(
        id=f"m{i:05d}",
        text=text or f"memory {i} about things",
        vector=vector,
        seq=i,
        timestamp=1000.0 + i if timestamp is None else timestamp,
        session=session,
    )


def fake_embed(texts: Sequence[str]) -> Matrix:
    """A deterministic stand-in embedder: a unit vector seeded by the text."""
    rows = [np.random.default_rng(zlib.crc32(t.encode())).normal(size=DIM) for t in texts]
    return np.stack([unit(list(r)) for r in rows]).astype(np.float32)


class Forest:
    """Both trees over one leaves mapping, as the memory holds them, with deterministic branch ids."""

    def __init__(
        self,
        policy: CompatibilityPolicy | None = None,
        *,
        vector_mode: str = "centroid",
        linkage: str = "average",
        theta0: float = 0.4,
        semantic_fan_out: int | None = None,
    ) -> None:
        self.leaves: dict[str, Leaf] = {}
        ids = itertools.count()
        self.semantic = SemanticTree(
            self.leaves,
            DIM,
            theta0=theta0,
            vector_mode=vector_mode,  # type: ignore[arg-type]
            linkage=linkage,  # type: ignore[arg-type]
            embed=fake_embed if vector_mode == "summary" else None,
            new_id=lambda: f"s{next(ids)}",
            max_fan_out=semantic_fan_out,
        )
        # Segments as the policy alone cuts them (HAT's fan-out: M memories a segment).
        self.temporal = TemporalTree(
            self.leaves, DIM, policy=policy or FanOutPolicy(3), min_segment=1, new_id=lambda: f"t{next(ids)}"
        )

    def add(self, leaf: Leaf) -> None:
        self.leaves[leaf.id] = leaf
        self.semantic.insert(leaf)
        self.temporal.insert(leaf)

    def forget(self, leaf_id: str) -> tuple[set[str], set[str]]:
        """Remove from both trees, checking each tree's reported rows, then drop the leaf.

        Returns the temporal tree's ``(changed, removed)``.
        """
        remove_and_replay(self.semantic, leaf_id)
        reported = remove_and_replay(self.temporal, leaf_id)
        del self.leaves[leaf_id]
        return reported

    def check(self, max_fan_out: int | None = None) -> None:
        assert_semantic_invariants(self.semantic)
        assert_temporal_invariants(self.temporal, max_fan_out=max_fan_out)


def remove_and_replay(tree: Hierarchy, leaf_id: str) -> tuple[set[str], set[str]]:
    """``tree.remove(leaf_id)``, checking that persisting only the reported rows reproduces the tree.

    A copy of the rows before (branches, and each leaf's parent) gets the rows in ``changed``
    rewritten, those in ``removed`` and the leaf's own row deleted; it must then equal the tree, and a
    tree adopting those branches must have the same height (and the same last leaf).
    """
    rows = copy.deepcopy(tree.branches)
    parents = dict(tree.parent_of)
    changed, removed = tree.remove(leaf_id)
    assert leaf_id not in changed and leaf_id not in removed
    assert not changed & removed
    assert removed <= set(rows), "only existing branches are removed"
    assert not removed & set(tree.branches), "removed branches are gone"
    assert leaf_id not in tree.parent_of and leaf_id not in set(tree.walk())
    for node_id in removed:
        del rows[node_id]
    del parents[leaf_id]
    for node_id in changed:
        if node_id in tree.branches:
            rows[node_id] = copy.deepcopy(tree.branches[node_id])
        else:
            parents[node_id] = tree.parent_of[node_id]
    assert {k: branch_state(v) for k, v in rows.items()} == {
        k: branch_state(v) for k, v in tree.branches.items()
    }
    assert parents == tree.parent_of
    leaves = {k: v for k, v in tree.leaves.items() if k != leaf_id}
    loaded: Hierarchy
    if isinstance(tree, TemporalTree):
        loaded = TemporalTree(leaves, DIM, policy=tree.policy)
        loaded.adopt(list(rows.values()))
        assert loaded.last_leaf == tree.last_leaf
    else:
        loaded = SemanticTree(leaves, DIM)
        loaded.adopt(list(rows.values()))
    assert loaded.height == tree.height
    assert loaded.parent_of == tree.parent_of
    return changed, removed


def assert_representatives_are_fresh(tree: Hierarchy) -> None:
    """Every branch's count, span, text and label are what its current children give, recomputed.

    So are its vector and cohesion. In summary mode only the count and span are checked: a branch's
    vector is an embedding of its text, and a parent is recomputed (its children ranked by their
    vectors, its centroid taken) before its children are embedded again, on insert as on removal.
    """
    summary = isinstance(tree, SemanticTree) and tree.vector_mode == "summary"
    for branch in tree.branches.values():
        fresh = copy.deepcopy(branch)
        tree.refresh(fresh)
        expected, actual = branch_state(fresh), branch_state(branch)
        if summary:
            expected, actual = expected[:5] + expected[9:], actual[:5] + actual[9:]
        assert expected == actual, f"{branch.id} is stale"


def assert_no_trace(forest: Forest, marker: str) -> None:
    for tree in (forest.semantic, forest.temporal):
        for branch in tree.branches.values():
            assert marker not in branch.text.lower(), f"{branch.id}'s text still mentions {marker}"
            assert marker not in branch.label.lower(), f"{branch.id}'s label still mentions {marker}"


def assert_vectors_are_means_of_remaining_leaves(forest: Forest) -> None:
    for tree, under in ((forest.semantic, subtree_leaves), (forest.temporal, temporal_subtree_leaves)):
        for branch in tree.branches.values():
            members = under(tree, branch.id)  # type: ignore[arg-type]
            assert set(members) <= set(forest.leaves)
            if not members:
                assert branch.vector is None and branch.leaf_count == 0
                continue
            mean = np.mean([forest.leaves[n].vector for n in members], axis=0)
            assert branch.vector is not None
            np.testing.assert_allclose(branch.vector * branch.cohesion, mean, atol=1e-5)


# -- properties ----------------------------------------------------------------------------------

vectors = st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=DIM, max_size=DIM).map(unit)
# An operation: insert (a vector, a session, the gap since the previous leaf) or remove (an index
# into the leaves still present).
inserts = st.tuples(
    st.just("insert"),
    vectors,
    st.one_of(st.none(), st.sampled_from(["s1", "s2", "s3"])),
    st.sampled_from([1.0, 60.0, 2 * HOUR, 7 * HOUR, 3 * DAY, 40 * DAY]),
)
removals = st.tuples(st.just("remove"), st.integers(0, 10_000))
operations = st.lists(st.one_of(inserts, inserts, removals), min_size=1, max_size=60)
policies = st.one_of(
    st.builds(CosinePolicy, st.sampled_from([-1.0, 0.2, 0.4, 0.7, 1.1])),
    st.integers(2, 5).map(FanOutPolicy),
)
modes = st.sampled_from([("centroid", "average"), ("centroid", "centroid"), ("summary", "centroid")])


def fan_out_of(policy: CompatibilityPolicy) -> int | None:
    """The bound on every temporal branch's children: none (a day holds any number of sessions)."""
    return None


def run(forest: Forest, ops: list[tuple[object, ...]], max_fan_out: int | None) -> None:
    clock = 0.0
    present: list[str] = []
    gone: set[str] = set()
    for i, op in enumerate(ops):
        if op[0] == "insert":
            _, vector, session, gap = op
            clock += gap  # type: ignore[operator]
            leaf = make_leaf(i, vector, session=session, timestamp=clock)  # type: ignore[arg-type]
            forest.add(leaf)
            present.append(leaf.id)
        elif present:
            leaf_id = present.pop(op[1] % len(present))  # type: ignore[operator]
            forest.forget(leaf_id)
            gone.add(leaf_id)
        forest.check(max_fan_out)
        for tree in (forest.semantic, forest.temporal):
            assert_representatives_are_fresh(tree)
            placed = [n for n in tree.walk() if n not in tree.branches]
            assert sorted(placed) == sorted(present), "every remaining leaf exactly once"
            assert not gone & set(tree.parent_of)
        if not present:
            assert forest.semantic.height == forest.temporal.height == 0
            assert not forest.semantic.root.children and not forest.temporal.root.children


@settings(max_examples=80, deadline=None)
@given(
    operations,
    policies,
    modes,
    st.sampled_from([0.2, 0.4, 0.7, 1.5]),
    st.sampled_from([None, 2, 3, 4]),
)
def test_inserts_and_removals_in_any_order_keep_both_trees_whole(
    ops: list[tuple[object, ...]],
    policy: CompatibilityPolicy,
    mode: tuple[str, str],
    theta0: float,
    semantic_fan_out: int | None,
) -> None:
    forest = Forest(
        policy, vector_mode=mode[0], linkage=mode[1], theta0=theta0, semantic_fan_out=semantic_fan_out
    )
    run(forest, ops, fan_out_of(policy))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=50), st.integers(0, 2**32 - 1), st.data())
def test_removing_from_clustered_deep_trees_keeps_them_whole(
    clusters: list[int], seed: int, data: st.DataObject
) -> None:
    # Near-duplicates make deep semantic chains, whose dissolution moves whole subtrees up.
    rng = np.random.default_rng(seed)
    centres = np.eye(DIM, dtype=np.float32)[:4]
    forest = Forest(FanOutPolicy(2))
    for i, c in enumerate(clusters):
        forest.add(make_leaf(i, unit(list(centres[c] + rng.normal(0, 0.3, size=DIM)))))
    order = data.draw(st.permutations(sorted(forest.leaves)))
    for leaf_id in order:
        forest.forget(leaf_id)
        forest.check()
        assert_representatives_are_fresh(forest.semantic)
        assert_representatives_are_fresh(forest.temporal)
    assert forest.semantic.height == forest.temporal.height == 0
    assert set(forest.semantic.branches) == {ROOT_ID}
    assert set(forest.temporal.branches) == {TEMPORAL_ROOT_ID}


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 30), st.integers(0, 10_000), st.sampled_from(["a", "b"]))
def test_a_forgotten_marker_leaves_no_trace_in_any_branch(count: int, pick: int, session: str) -> None:
    forest = Forest(FanOutPolicy(3))
    marked = pick % count
    for i in range(count):
        text = "zebracorn sightings are rare" if i == marked else f"memory {i} about things"
        forest.add(make_leaf(i, axis(i % 3, 0.1 * (i % 5)), text=text, session=session))
    assert any("zebracorn" in b.text.lower() for b in forest.semantic.branches.values())
    assert any("zebracorn" in b.text.lower() for b in forest.temporal.branches.values())
    forest.forget(f"m{marked:05d}")
    forest.check()
    assert_no_trace(forest, "zebracorn")
    assert_vectors_are_means_of_remaining_leaves(forest)


# -- examples: semantic --------------------------------------------------------------------------


def test_removing_one_of_two_leaves_dissolves_their_branch_in_place() -> None:
    forest = Forest()
    forest.add(make_leaf(0, axis(0)))
    forest.add(make_leaf(1, axis(4)))
    forest.add(make_leaf(2, axis(0, 0.1)))
    tree = forest.semantic
    (branch_id, other) = tree.root.children
    assert other == "m00001" and tree.branches[branch_id].children == ["m00000", "m00002"]
    changed, removed = remove_and_replay(tree, "m00002")
    assert removed == {branch_id}
    assert changed == {ROOT_ID, "m00000"}
    assert tree.root.children == ["m00000", "m00001"], "the survivor takes the branch's place"
    assert tree.height == 1 and tree.parent_of["m00000"] == ROOT_ID


def test_dissolving_a_branch_moves_its_subtree_up_a_level() -> None:
    forest = Forest()
    forest.add(make_leaf(0, axis(0)))
    forest.add(make_leaf(1, axis(4)))
    forest.add(make_leaf(2, axis(0, 0.3, towards=2)))
    forest.add(make_leaf(3, axis(0, 0.35, towards=2)))
    tree = forest.semantic
    outer = tree.root.children[0]
    assert tree.branches[outer].children[0] == "m00000"
    inner = tree.branches[outer].children[1]
    assert tree.branches[inner].children == ["m00002", "m00003"] and tree.height == 3
    changed, removed = remove_and_replay(tree, "m00000")
    assert removed == {outer}
    assert changed == {ROOT_ID, inner}
    assert tree.root.children == [inner, "m00001"]
    assert tree.branches[inner].depth == 1 and tree.branches[inner].parent == ROOT_ID
    assert tree.height == 2
    del forest.leaves["m00000"]
    assert_semantic_invariants(tree)


def test_summary_vectors_of_recomputed_branches_are_embedded_again() -> None:
    calls: list[list[str]] = []

    def embed(texts: Sequence[str]) -> Matrix:
        calls.append(list(texts))
        return fake_embed(texts)

    leaves: dict[str, Leaf] = {}
    tree = SemanticTree(leaves, DIM, vector_mode="summary", linkage="centroid", embed=embed)
    rng = np.random.default_rng(7)
    for i in range(16):
        leaves[f"m{i:05d}"] = make_leaf(i, unit(list(np.eye(DIM)[i % 2] + rng.normal(0, 0.3, size=DIM))))
        tree.insert(leaves[f"m{i:05d}"])
    # A leaf with an internal grandparent: its ancestors outlive the removal and are recomputed.
    leaf_id = next(n for n in sorted(leaves) if len(tree.ancestors(n)) >= 3)
    ancestors = [b.id for b in reversed(tree.ancestors(leaf_id)) if b.kind == "internal"]
    calls.clear()
    remove_and_replay(tree, leaf_id)
    del leaves[leaf_id]
    survivors = [tree.branches[b] for b in ancestors if b in tree.branches]
    assert survivors and calls == [[b.text for b in survivors]], "one call, lowest branch first"
    for branch in survivors:
        np.testing.assert_allclose(branch.vector, fake_embed([branch.text])[0])  # type: ignore[arg-type]
    assert_semantic_invariants(tree)


# -- examples: both trees ------------------------------------------------------------------------


def test_removing_the_only_leaf_empties_both_trees_and_they_grow_again() -> None:
    forest = Forest()
    forest.add(make_leaf(0, axis(0)))
    forest.forget("m00000")
    for tree in (forest.semantic, forest.temporal):
        assert tree.root.children == [] and tree.height == 0
        assert set(tree.branches) == {tree.root.id} and tree.parent_of == {}
        assert tree.root.leaf_count == 0 and tree.root.vector is None and tree.root.text == ""
    assert forest.temporal.last_leaf is None
    forest.check()
    forest.add(make_leaf(1, axis(1)))
    forest.add(make_leaf(2, axis(2)))
    forest.check()
    assert forest.semantic.height == 1 and forest.temporal.height == 3  # a session and its segment


def test_an_unknown_leaf_is_refused_and_nothing_changes() -> None:
    forest = Forest()
    forest.add(make_leaf(0, axis(0)))
    forest.add(make_leaf(1, axis(0, 0.1)))
    for tree in (forest.semantic, forest.temporal):
        before = {k: branch_state(v) for k, v in tree.branches.items()}
        with pytest.raises(KeyError):
            tree.remove("nowhere")
        assert {k: branch_state(v) for k, v in tree.branches.items()} == before
    forest.forget("m00000")
    with pytest.raises(KeyError):
        forest.semantic.remove("m00000")
    with pytest.raises(KeyError):
        forest.temporal.remove("m00000")


# -- examples: temporal --------------------------------------------------------------------------


def segments_of(tree: TemporalTree) -> list[list[str]]:
    return [b.children for b in tree.branches.values() if b.depth == tree.height - 1]


def test_removing_the_last_leaf_then_inserting_keeps_spans_contiguous() -> None:
    forest = Forest(FanOutPolicy(3))
    for i in range(7):
        forest.add(make_leaf(i, axis(i % DIM)))
    tree = forest.temporal
    assert tree.last_leaf == "m00006" and tree.height == 3
    lonely = tree.parent_of["m00006"]
    session = tree.branches[lonely].parent
    changed, removed = forest.forget("m00006")
    assert removed == {lonely}, "the segment it alone filled goes"
    assert tree.last_leaf == "m00005" and changed == {TEMPORAL_ROOT_ID, session}
    forest.check()
    for i in range(7, 10):
        forest.add(make_leaf(i, axis(i % DIM)))
        forest.check()
    assert sorted(sorted(s) for s in segments_of(tree)) == [
        ["m00000", "m00001", "m00002"],
        ["m00003", "m00004", "m00005"],
        ["m00007", "m00008", "m00009"],
    ]


def test_a_segment_emptied_in_the_middle_goes_and_one_left_with_a_single_memory_stays() -> None:
    forest = Forest(FanOutPolicy(2))
    for i in range(8):
        forest.add(make_leaf(i, axis(i % DIM)))
    tree = forest.temporal
    assert tree.height == 3
    for leaf_id in ("m00002", "m00003", "m00000"):
        forest.forget(leaf_id)
    assert tree.height == 3, "uniform depth keeps the levels"
    forest.check()
    assert segments_of(tree) == [["m00001"], ["m00004", "m00005"], ["m00006", "m00007"]]


def test_a_root_left_with_one_child_period_collapses_that_level() -> None:
    forest = Forest(FanOutPolicy(2))
    forest.add(make_leaf(0, axis(0)))
    forest.add(make_leaf(1, axis(1)))
    forest.add(make_leaf(2, axis(2), timestamp=1000.0 + 2 * DAY))  # another day: a day level
    tree = forest.temporal
    first_day, _ = tree.root.children
    assert tree.height == 4 and tree.period_of(first_day) == "day"
    (session,) = tree.branches[first_day].children
    (segment,) = tree.branches[session].children
    changed, removed = forest.forget("m00002")
    assert first_day in removed and len(removed) == 4  # both days, the second's session and segment
    assert changed == {TEMPORAL_ROOT_ID, session, segment}
    assert tree.root.children == [session] and tree.height == 3
    assert_representatives_are_fresh(tree)
    assert tree.last_leaf == "m00001"
    forest.add(make_leaf(3, axis(3), timestamp=1000.0 + 3 * DAY))
    forest.check()
    assert tree.height == 4


def test_a_new_session_after_removing_the_last_leaf_compares_with_the_leaf_now_last() -> None:
    forest = Forest(CosinePolicy(-1.0))  # content never splits: only sessions do
    for i in range(3):
        forest.add(make_leaf(i, axis(0), session="monday"))
    forest.add(make_leaf(3, axis(0), session="tuesday"))
    tree = forest.temporal
    assert tree.height == 3 and len(tree.root.children) == 2
    forest.forget("m00003")
    assert tree.height == 3 and segments_of(tree) == [["m00000", "m00001", "m00002"]]
    forest.add(make_leaf(4, axis(0), session="monday"))
    assert segments_of(tree) == [["m00000", "m00001", "m00002", "m00004"]], "same session: same segment"
    forest.check()
