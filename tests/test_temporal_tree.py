"""The temporal tree keeps its invariants whatever arrives (SegTreeMem seed 001 §4.2, HAT seed 003 §3.1)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree_mcp.core.model import Branch, Leaf
from memtree_mcp.core.temporal import (
    GAP_SECONDS,
    TEMPORAL_ROOT_ID,
    Candidate,
    CompatibilityPolicy,
    CosinePolicy,
    FanOutPolicy,
    TemporalTree,
    is_boundary,
)
from tests.tree_checks import assert_temporal_invariants, branch_state, temporal_subtree_leaves, unit

DIM = 8
HOUR = 3600.0


def axis(i: int, tilt: float = 0.0) -> np.ndarray:
    return unit(list(np.eye(DIM, dtype=np.float32)[i] + tilt * np.eye(DIM, dtype=np.float32)[(i + 1) % DIM]))


def make_leaf(
    i: int, vector: np.ndarray, *, session: str | None = None, timestamp: float | None = None
) -> Leaf:
    return Leaf(
        id=f"m{i:05d}",
        text=f"memory {i} about things",
        vector=vector,
        seq=i,
        timestamp=1000.0 + i if timestamp is None else timestamp,
        session=session,
    )


class Built:
    """A temporal tree with its own leaves mapping and deterministic branch ids."""

    def __init__(self, policy: CompatibilityPolicy, *, gap_seconds: float = GAP_SECONDS) -> None:
        self.leaves: dict[str, Leaf] = {}
        ids = itertools.count()
        self.tree = TemporalTree(
            self.leaves, DIM, policy=policy, gap_seconds=gap_seconds, new_id=lambda: f"t{next(ids)}"
        )

    def add(self, leaf: Leaf) -> set[str]:
        self.leaves[leaf.id] = leaf
        return self.tree.insert(leaf)


def tree_state(tree: TemporalTree) -> dict[str, object]:
    state: dict[str, object] = {b.id: branch_state(b) for b in tree.branches.values()}
    state["__parents__"] = dict(tree.parent_of)
    state["__height__"] = tree.height
    state["__last__"] = tree.last_leaf
    return state


vectors = st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=DIM, max_size=DIM).map(unit)
# Each arrival: a vector, a session (None or one of three), and the gap since the previous leaf.
arrivals = st.tuples(
    vectors,
    st.one_of(st.none(), st.sampled_from(["s1", "s2", "s3"])),
    st.sampled_from([1.0, 60.0, 2 * HOUR, 7 * HOUR]),
)
policies = st.one_of(
    st.builds(
        CosinePolicy,
        st.sampled_from([-1.0, 0.2, 0.4, 0.7, 1.1]),
        fan_out=st.one_of(st.none(), st.integers(2, 4)),
    ),
    st.integers(2, 5).map(FanOutPolicy),
)


def fan_out_of(policy: CompatibilityPolicy) -> int | None:
    return policy.m if isinstance(policy, FanOutPolicy) else None


@settings(max_examples=80, deadline=None)
@given(st.lists(arrivals, min_size=1, max_size=50), policies)
def test_every_insertion_keeps_the_tree_whole(
    batch: list[tuple[np.ndarray, str | None, float]], policy: CompatibilityPolicy
) -> None:
    built = Built(policy)
    clock = 0.0
    previous: Leaf | None = None
    for i, (vector, session, gap) in enumerate(batch):
        clock += gap
        leaf = make_leaf(i, vector, session=session, timestamp=clock)
        before = {b.id: b.depth for b in built.tree.branches.values()}
        changed = built.add(leaf)
        tree = built.tree
        assert leaf.id in changed
        assert {b.id for b in tree.ancestors(leaf.id)} <= changed, "the whole path is reported"
        assert set(tree.branches) - set(before) <= changed, "new branches are reported"
        assert {b for b, depth in before.items() if tree.branches[b].depth != depth} <= changed
        if previous is not None and len(tree.leaves) > 2 and is_boundary(previous, leaf):
            assert tree.parent_of[leaf.id] != tree.parent_of[previous.id], "a boundary starts a segment"
        assert_temporal_invariants(tree, max_fan_out=fan_out_of(policy))
        previous = leaf


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 120), st.integers(2, 5))
def test_without_boundaries_fan_out_fills_every_closed_branch(count: int, m: int) -> None:
    # HAT's layers: off the frontier every branch is full; the height is the fewest M-ary levels.
    built = Built(FanOutPolicy(m))
    for i in range(count):
        built.add(make_leaf(i, axis(i % DIM)))
    tree = built.tree
    assert_temporal_invariants(tree, max_fan_out=m)
    frontier = {b.id for b in tree.frontier()}
    for branch in tree.branches.values():
        if branch.id not in frontier:
            assert len(branch.children) == m
    height = 1
    while m**height < count:
        height += 1
    assert tree.height == height


@settings(max_examples=40, deadline=None)
@given(st.lists(arrivals, min_size=0, max_size=40), policies, st.lists(arrivals, min_size=1, max_size=10))
def test_adopting_the_branches_rebuilds_an_identical_tree(
    batch: list[tuple[np.ndarray, str | None, float]],
    policy: CompatibilityPolicy,
    more: list[tuple[np.ndarray, str | None, float]],
) -> None:
    built = Built(policy)
    clock = 0.0
    for i, (vector, session, gap) in enumerate(batch):
        clock += gap
        built.add(make_leaf(i, vector, session=session, timestamp=clock))
    ids = itertools.count(10_000)
    loaded = TemporalTree(built.leaves, DIM, policy=policy, new_id=lambda: f"t{next(ids)}")
    loaded.adopt(copy.deepcopy(list(built.tree.branches.values())))
    assert tree_state(loaded) == tree_state(built.tree)
    assert_temporal_invariants(loaded, max_fan_out=fan_out_of(policy))
    # Both go on growing the same way (up to the ids of new branches).
    ids_a = itertools.count(10_000)
    built.tree._new_id = lambda: f"t{next(ids_a)}"
    for j, (vector, session, gap) in enumerate(more, start=len(batch)):
        clock += gap
        leaf = make_leaf(j, vector, session=session, timestamp=clock)
        built.leaves[leaf.id] = leaf
        assert built.tree.insert(leaf) == loaded.insert(leaf)
    assert tree_state(loaded) == tree_state(built.tree)


# -- examples ------------------------------------------------------------------------------------


def test_fan_out_three_gives_a_three_ary_tree_of_height_two_over_nine_leaves() -> None:
    built = Built(FanOutPolicy(3))
    for i in range(9):
        built.add(make_leaf(i, axis(i % DIM)))
    tree = built.tree
    assert tree.height == 2
    assert len(tree.root.children) == 3
    groups = [temporal_subtree_leaves(tree, child) for child in tree.root.children]
    assert groups == [[f"m{i:05d}" for i in range(j, j + 3)] for j in (0, 3, 6)]
    assert_temporal_invariants(tree, max_fan_out=3)
    changed = built.add(make_leaf(9, axis(1)))
    assert tree.height == 3 and len(tree.root.children) == 2
    assert changed >= set(tree.branches), "a new level moves every branch down"
    assert_temporal_invariants(tree, max_fan_out=3)


def test_a_new_level_keeps_the_root_id_and_puts_the_old_root_beneath_it() -> None:
    built = Built(FanOutPolicy(2))
    built.add(make_leaf(0, axis(0)))
    built.add(make_leaf(1, axis(1)))
    changed = built.add(make_leaf(2, axis(2)))
    tree = built.tree
    old_root_id, chain_id = tree.root.children
    assert tree.root.id == TEMPORAL_ROOT_ID and tree.height == 2
    assert tree.branches[old_root_id].children == ["m00000", "m00001"]
    assert tree.branches[chain_id].children == ["m00002"]
    assert changed == {"m00000", "m00001", "m00002", old_root_id, chain_id, TEMPORAL_ROOT_ID}


def test_a_session_change_starts_a_new_segment() -> None:
    built = Built(CosinePolicy(-1.0))  # content never splits: only the session does
    for i in range(4):
        built.add(make_leaf(i, axis(0), session="monday"))
    assert built.tree.height == 1
    built.add(make_leaf(4, axis(0), session="tuesday"))
    built.add(make_leaf(5, axis(0), session="tuesday"))
    tree = built.tree
    segments = [temporal_subtree_leaves(tree, child) for child in tree.root.children]
    assert segments == [[f"m{i:05d}" for i in range(4)], ["m00004", "m00005"]]
    built.add(make_leaf(6, axis(0), session="monday"))
    segments = [temporal_subtree_leaves(tree, child) for child in tree.root.children]
    assert segments[-1] == ["m00006"], "a return to an old session is still a new segment"
    assert_temporal_invariants(tree)


def test_a_long_silence_starts_a_new_segment_and_a_short_one_does_not() -> None:
    built = Built(CosinePolicy(-1.0), gap_seconds=6 * HOUR)
    built.add(make_leaf(0, axis(0), timestamp=0.0))
    built.add(make_leaf(1, axis(0), timestamp=HOUR))
    built.add(make_leaf(2, axis(0), timestamp=5 * HOUR))
    assert built.tree.height == 1
    built.add(make_leaf(3, axis(0), timestamp=12 * HOUR))
    assert built.tree.height == 2
    assert built.tree.parent_of["m00003"] != built.tree.parent_of["m00002"]
    assert_temporal_invariants(built.tree)


def test_cosine_keeps_a_topic_in_one_segment_and_splits_when_it_changes() -> None:
    built = Built(CosinePolicy(0.5))
    for i in range(4):
        built.add(make_leaf(i, axis(0, 0.1 * i)))
    assert built.tree.height == 1 and len(built.tree.root.children) == 4
    for i in range(4, 8):
        built.add(make_leaf(i, axis(3, 0.1 * i)))
    tree = built.tree
    segments = [temporal_subtree_leaves(tree, child) for child in tree.root.children]
    assert segments == [[f"m{i:05d}" for i in range(4)], [f"m{i:05d}" for i in range(4, 8)]]
    assert_temporal_invariants(tree)


def test_an_incompatible_leaf_opens_a_segment_under_a_non_full_branch_before_a_new_root() -> None:
    # Topics 0, 1, 2, 3 in runs of two, orthogonal: each run is refused by every frontier branch.
    literal, grouped = Built(CosinePolicy(0.5, fan_out=None)), Built(CosinePolicy(0.5, fan_out=2))
    for built in (literal, grouped):
        for i in range(8):
            built.add(make_leaf(i, axis(i // 2)))
        assert_temporal_invariants(built.tree)
    # The literal rule adds a level at every change of topic (seed 001 App. C's cascade) ...
    assert literal.tree.height == 4
    # ... the fan-out fallback groups the four segments in twos: two levels above the segments.
    assert grouped.tree.height == 3
    segments = [b for b in grouped.tree.branches.values() if b.depth == grouped.tree.height - 1]
    assert sorted(b.children for b in segments) == [[f"m{i:05d}", f"m{i + 1:05d}"] for i in (0, 2, 4, 6)]


def test_policies_see_every_admissible_candidate_lowest_first() -> None:
    seen: list[tuple[list[Candidate], list[str]]] = []

    class Recorder:
        tree: TemporalTree

        def choose(self, leaf: Leaf, candidates: Sequence[Candidate]) -> str | None:
            seen.append((list(candidates), [b.id for b in self.tree.frontier()]))
            return FanOutPolicy(2).choose(leaf, candidates)

    recorder = Recorder()
    built = Built(recorder)
    recorder.tree = built.tree
    for i in range(5):
        built.add(make_leaf(i, axis(i % DIM), session="a"))
    candidates, frontier = seen[-1]
    assert [c.node_id for c in candidates] == frontier, "the whole frontier, lowest first"
    assert [c.depth for c in candidates] == list(range(len(candidates) - 1, -1, -1))
    assert candidates[-1].node_id == TEMPORAL_ROOT_ID and all(c.text for c in candidates)
    built.add(make_leaf(5, axis(5), session="b"))
    candidates, frontier = seen[-1]
    assert [c.node_id for c in candidates] == frontier[1:], "a boundary hides the current segment"


def test_misuse_is_refused() -> None:
    built = Built(FanOutPolicy(3))
    with pytest.raises(KeyError):
        built.tree.insert(make_leaf(0, axis(0)))
    built.add(make_leaf(5, axis(0)))
    with pytest.raises(ValueError, match="arrival order"):
        built.add(make_leaf(3, axis(0)))
    with pytest.raises(ValueError, match="already"):
        built.tree.insert(built.leaves["m00005"])
    with pytest.raises(ValueError):
        FanOutPolicy(1)

    class Rogue:
        def choose(self, leaf: Leaf, candidates: Sequence[Candidate]) -> str | None:
            return "nowhere"

    rogue = Built(Rogue())
    rogue.add(make_leaf(0, axis(0)))
    rogue.add(make_leaf(1, axis(0)))
    with pytest.raises(ValueError, match="admissible"):
        rogue.add(make_leaf(2, axis(0)))
    with pytest.raises(ValueError, match="not temporal"):
        built.tree.adopt([Branch(id="semantic-root", tree="semantic", kind="root", parent=None, depth=0)])
