"""The temporal tree groups time by session and period, and keeps its invariants whatever arrives
(SegTreeMem seed 001 §4.2, HAT seed 003 §3.1)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree_mcp.core.trees.calendar import SESSION_GAP_SECONDS, UTC_CALENDAR
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.segmenting import Candidate, CompatibilityPolicy, CosinePolicy, FanOutPolicy
from memtree_mcp.core.trees.temporal import MAX_SESSION, MIN_SEGMENT, TEMPORAL_ROOT_ID, TemporalTree
from tests.tree_checks import assert_temporal_invariants, branch_state, temporal_subtree_leaves, unit

DIM = 8
HOUR = 3600.0
DAY = 24 * HOUR
# 2026-03-09 09:00 UTC, a Monday.
MONDAY = datetime(2026, 3, 9, 9, tzinfo=UTC).timestamp()


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
        timestamp=MONDAY + i if timestamp is None else timestamp,
        session=session,
    )


class Built:
    """A temporal tree with its own leaves mapping and deterministic branch ids."""

    def __init__(
        self,
        policy: CompatibilityPolicy,
        *,
        gap_seconds: float = SESSION_GAP_SECONDS,
        min_segment: int = MIN_SEGMENT,
    ) -> None:
        self.leaves: dict[str, Leaf] = {}
        ids = itertools.count()
        self.tree = TemporalTree(
            self.leaves,
            DIM,
            policy=policy,
            gap_seconds=gap_seconds,
            min_segment=min_segment,
            new_id=lambda: f"t{next(ids)}",
        )

    def add(self, leaf: Leaf) -> set[str]:
        self.leaves[leaf.id] = leaf
        return self.tree.insert(leaf)

    def nodes_of(self, period: str) -> list[Branch]:
        """The branches of one time scale, in time order."""
        tree = self.tree
        return [tree.branches[n] for n in tree.walk() if tree.period_of(n) == period]


def tree_state(tree: TemporalTree) -> dict[str, object]:
    state: dict[str, object] = {b.id: branch_state(b) for b in tree.branches.values()}
    state["__parents__"] = dict(tree.parent_of)
    state["__height__"] = tree.height
    state["__last__"] = tree.last_leaf
    return state


def sessions_of(leaves: Sequence[Leaf], gap_seconds: float = SESSION_GAP_SECONDS) -> list[list[str]]:
    """The memories' sessions, as the calendar's rule cuts them (what the tree must honour)."""
    runs: list[list[str]] = []
    previous: Leaf | None = None
    for leaf in leaves:
        if previous is None or UTC_CALENDAR.session_break(previous, leaf, gap_seconds):
            runs.append([])
        runs[-1].append(leaf.id)
        previous = leaf
    return runs


vectors = st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=DIM, max_size=DIM).map(unit)
# Each arrival: a vector, a session (None or one of three), and the gap since the previous leaf:
# within a session, past the session gap, past midnight, a week or more, a month or more.
arrivals = st.tuples(
    vectors,
    st.one_of(st.none(), st.sampled_from(["s1", "s2", "s3"])),
    st.sampled_from([1.0, 60.0, 2 * HOUR, 7 * HOUR, 3 * DAY, 40 * DAY, 400 * DAY]),
)
policies = st.one_of(
    st.builds(CosinePolicy, st.sampled_from([-1.0, 0.2, 0.4, 0.7, 1.1])),
    st.integers(2, 5).map(FanOutPolicy),
)


def assert_sessions_honoured(built: Built, leaves: Sequence[Leaf]) -> None:
    """Each session under one session node that holds it alone; periods hold whole sessions of
    their own period only."""
    tree = built.tree
    for run in sessions_of(leaves, tree.gap_seconds):
        parents = {tree.branches[tree.parent_of[leaf_id]].parent for leaf_id in run}
        assert len(parents) == 1, f"session {run} is cut across {parents}"
        (session,) = parents
        assert session is not None and tree.period_of(session) == "session"
        assert temporal_subtree_leaves(tree, session) == run, "a session node holds its session alone"
    for period in ("day", "week", "month", "year"):
        level = {"day": 2, "week": 3, "month": 4, "year": 5}[period]
        for node in built.nodes_of(period):
            starts = {
                UTC_CALENDAR.period_key(level, tree.branches[s].first_ts)
                for s in tree.walk(node.id)
                if tree.period_of(s) == "session"
            }
            assert len(starts) == 1, f"{period} {node.label} holds sessions of {starts}"


@settings(max_examples=80, deadline=None)
@given(st.lists(arrivals, min_size=1, max_size=50), policies)
def test_every_insertion_keeps_the_tree_whole_and_each_session_in_one_node(
    batch: list[tuple[np.ndarray, str | None, float]], policy: CompatibilityPolicy
) -> None:
    built = Built(policy, min_segment=2)
    clock = MONDAY
    inserted: list[Leaf] = []
    for i, (vector, session, gap) in enumerate(batch):
        clock += gap
        leaf = make_leaf(i, vector, session=session, timestamp=clock)
        before = {b.id: b.depth for b in built.tree.branches.values()}
        changed = built.add(leaf)
        inserted.append(leaf)
        tree = built.tree
        assert leaf.id in changed
        assert {b.id for b in tree.ancestors(leaf.id)} <= changed, "the whole path is reported"
        assert set(tree.branches) - set(before) <= changed, "new branches are reported"
        assert {b for b, depth in before.items() if tree.branches[b].depth != depth} <= changed
        assert_temporal_invariants(tree)
        assert_sessions_honoured(built, inserted)


@settings(max_examples=40, deadline=None)
@given(st.lists(arrivals, min_size=0, max_size=40), policies, st.lists(arrivals, min_size=1, max_size=10))
def test_adopting_the_branches_rebuilds_an_identical_tree(
    batch: list[tuple[np.ndarray, str | None, float]],
    policy: CompatibilityPolicy,
    more: list[tuple[np.ndarray, str | None, float]],
) -> None:
    built = Built(policy)
    clock = MONDAY
    for i, (vector, session, gap) in enumerate(batch):
        clock += gap
        built.add(make_leaf(i, vector, session=session, timestamp=clock))
    ids = itertools.count(10_000)
    loaded = TemporalTree(built.leaves, DIM, policy=policy, new_id=lambda: f"t{next(ids)}")
    loaded.adopt(copy.deepcopy(list(built.tree.branches.values())))
    assert tree_state(loaded) == tree_state(built.tree)
    assert_temporal_invariants(loaded)
    # Both go on growing the same way (up to the ids of new branches).
    ids_a = itertools.count(10_000)
    built.tree.new_id = lambda: f"t{next(ids_a)}"
    for j, (vector, session, gap) in enumerate(more, start=len(batch)):
        clock += gap
        leaf = make_leaf(j, vector, session=session, timestamp=clock)
        built.leaves[leaf.id] = leaf
        assert built.tree.insert(leaf) == loaded.insert(leaf)
    assert tree_state(loaded) == tree_state(built.tree)


# -- examples ------------------------------------------------------------------------------------


def five_working_sessions(built: Built, per_session: int = 8) -> list[Leaf]:
    """Five sessions of unrelated turns, each with its own id, 7 to 12 days apart."""
    leaves: list[Leaf] = []
    start = MONDAY
    for s, days_after in enumerate([0, 9, 7, 12, 8]):
        start += days_after * DAY
        for t in range(per_session):
            i = len(leaves)
            leaf = make_leaf(i, axis(i % DIM), session=f"work-{s}", timestamp=start + t * 300)
            built.add(leaf)
            leaves.append(leaf)
    return leaves


def test_five_sessions_of_unrelated_turns_give_five_session_nodes_of_at_most_two_segments() -> None:
    built = Built(CosinePolicy())
    leaves = five_working_sessions(built)
    sessions = built.nodes_of("session")
    assert [temporal_subtree_leaves(built.tree, s.id) for s in sessions] == sessions_of(leaves)
    assert all(1 <= len(s.children) <= 2 for s in sessions)
    assert_sessions_honoured(built, leaves)
    assert_temporal_invariants(built.tree)
    # 40 days from a Monday in March: days, weeks and months above the sessions.
    assert [b.label.split(" · ")[0] for b in built.nodes_of("month")] == ["March 2026", "April 2026"]
    assert sessions[0].label.startswith("session work-0 2026-03-09 09:00 · ")
    assert built.nodes_of("day")[1].label.startswith("2026-03-18 (Wednesday) · ")
    assert built.nodes_of("week")[0].label.startswith("week of 2026-03-09 · ")


def test_a_memory_of_one_session_has_no_period_above_it_and_levels_come_with_the_span() -> None:
    built = Built(CosinePolicy())
    for i in range(3):
        built.add(make_leaf(i, axis(0), timestamp=MONDAY + i * 60))
    tree = built.tree
    assert tree.height == 3 and [tree.period_of(c) for c in tree.root.children] == ["session"]
    built.add(make_leaf(3, axis(1), timestamp=MONDAY + 2 * HOUR))  # a silence: another session, same day
    assert tree.height == 3 and len(tree.root.children) == 2
    built.add(make_leaf(4, axis(2), timestamp=MONDAY + DAY))  # the next day: days appear
    assert tree.height == 4 and [tree.period_of(c) for c in tree.root.children] == ["day", "day"]
    assert len(tree.branches[tree.root.children[0]].children) == 2  # Monday's two sessions
    built.add(make_leaf(5, axis(3), timestamp=MONDAY + 7 * DAY))  # the next week
    assert tree.height == 5 and [tree.period_of(c) for c in tree.root.children] == ["week", "week"]
    built.add(make_leaf(6, axis(4), timestamp=MONDAY + 400 * DAY))  # next year: months and years
    assert tree.height == 7 and [tree.period_of(c) for c in tree.root.children] == ["year", "year"]
    assert tree.root.id == TEMPORAL_ROOT_ID
    assert_temporal_invariants(tree)


def test_without_session_ids_a_silence_or_a_new_day_starts_a_session() -> None:
    built = Built(CosinePolicy(), gap_seconds=30 * 60)
    stamps = [
        MONDAY,
        MONDAY + 20 * 60,  # 20 minutes: the same session
        MONDAY + 20 * 60 + 31 * 60,  # 31 minutes of silence: a new one
        datetime(2026, 3, 9, 23, 50, tzinfo=UTC).timestamp(),
        datetime(2026, 3, 10, 0, 5, tzinfo=UTC).timestamp(),  # 15 minutes later, but the next day
    ]
    leaves = [make_leaf(i, axis(0), timestamp=t) for i, t in enumerate(stamps)]
    for leaf in leaves:
        built.add(leaf)
    runs = [temporal_subtree_leaves(built.tree, s.id) for s in built.nodes_of("session")]
    assert runs == [["m00000", "m00001"], ["m00002"], ["m00003"], ["m00004"]]


def test_a_session_with_an_id_goes_on_through_pauses_and_past_midnight_and_belongs_to_its_first_day() -> None:
    built = Built(CosinePolicy(), gap_seconds=30 * 60)
    late = datetime(2026, 3, 9, 22, 0, tzinfo=UTC).timestamp()
    # A 90-minute pause within a session, midnight crossed talking, then the id taken up two days later.
    stamps = [late, late + 90 * 60, late + 115 * 60, late + 130 * 60, late + 38 * HOUR]
    leaves = [make_leaf(i, axis(0), session="chat", timestamp=t) for i, t in enumerate(stamps)]
    for leaf in leaves:
        built.add(leaf)
    sessions = built.nodes_of("session")
    assert [temporal_subtree_leaves(built.tree, s.id) for s in sessions] == [
        ["m00000", "m00001", "m00002", "m00003"],
        ["m00004"],
    ]
    days = built.nodes_of("day")
    assert [d.label.split(" · ")[0] for d in days] == ["2026-03-09 (Monday)", "2026-03-11 (Wednesday)"]
    assert temporal_subtree_leaves(built.tree, days[0].id) == ["m00000", "m00001", "m00002", "m00003"]


def test_a_long_session_splits_into_topical_segments_and_a_short_one_does_not() -> None:
    built = Built(CosinePolicy(), min_segment=4)
    for i in range(4):  # four turns on four subjects: the shortest segment keeps them together
        built.add(make_leaf(i, axis(i), session="s"))
    assert len(built.nodes_of("segment")) == 1
    for i in range(4, 10):  # then one subject for a while: the segment, mixed, does not take it
        built.add(make_leaf(i, axis(5, tilt=0.1), session="s"))
    segments = [temporal_subtree_leaves(built.tree, s.id) for s in built.nodes_of("segment")]
    assert segments == [[f"m{i:05d}" for i in range(4)], [f"m{i:05d}" for i in range(4, 10)]]
    assert len(built.nodes_of("session")) == 1


def test_a_policy_is_asked_about_the_current_segment_only_and_only_within_a_session() -> None:
    seen: list[list[Candidate]] = []

    class Recording:
        def choose(self, leaf: Leaf, candidates: Sequence[Candidate]) -> str | None:
            seen.append(list(candidates))
            return candidates[0].node_id

    built = Built(Recording(), min_segment=1)
    built.add(make_leaf(0, axis(0), session="a"))
    built.add(make_leaf(1, axis(1), session="a"))
    built.add(make_leaf(2, axis(2), session="b"))  # a new session: nobody is asked
    assert len(seen) == 1 and [c.level for c in seen[0]] == [0] and seen[0][0].leaf_count == 1
    assert built.tree.candidates(make_leaf(3, axis(3), session="c")) == []


def test_misuse_is_refused() -> None:
    built = Built(CosinePolicy())
    leaf = make_leaf(0, axis(0))
    with pytest.raises(KeyError):
        built.tree.insert(leaf)  # not in the leaves mapping
    built.add(leaf)
    with pytest.raises(ValueError, match="already"):
        built.tree.insert(leaf)
    built.leaves["m00009"] = make_leaf(9, axis(1), timestamp=MONDAY - 1)
    built.add(make_leaf(10, axis(1)))
    built.tree.insert(built.leaves["m00009"])  # earlier than both: it goes first
    assert temporal_subtree_leaves(built.tree, TEMPORAL_ROOT_ID) == ["m00009", "m00000", "m00010"]

    class Rogue:
        def choose(self, leaf: Leaf, candidates: Sequence[Candidate]) -> str | None:
            return "nowhere"

    rogue = Built(Rogue(), min_segment=1)
    rogue.add(make_leaf(0, axis(0)))
    with pytest.raises(ValueError, match="admissible"):
        rogue.add(make_leaf(1, axis(0)))
    with pytest.raises(ValueError, match="at least one"):
        TemporalTree({}, DIM, policy=CosinePolicy(), min_segment=0)


def test_a_session_past_its_largest_size_goes_on_in_a_new_node_of_the_same_day() -> None:
    # An import without times or session ids is one session by the silence rule: it must not make
    # one node of everything.
    built = Built(CosinePolicy())
    for i in range(2 * MAX_SESSION + 10):
        built.add(make_leaf(i, axis(i % DIM), timestamp=MONDAY + i * 0.01))
    sizes = [s.leaf_count for s in built.nodes_of("session")]
    assert sizes == [MAX_SESSION, MAX_SESSION, 10] and not built.nodes_of("day")
    assert_temporal_invariants(built.tree)
