"""Chunking, the vector index, extractive representatives and collapsed recall in core."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree_mcp.core.indexes.arrays import Timeline
from memtree_mcp.core.indexes.vectors import VectorIndex
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.recall import DEFAULT_WEIGHTS, RankRequest, estimate_tokens, rank
from memtree_mcp.core.trees.calendar import UTC_CALENDAR
from memtree_mcp.core.trees.chunking import split_into_chunks
from memtree_mcp.core.trees.extractive import gist, label_for, summarize_children
from memtree_mcp.core.trees.model import Leaf


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=5000), st.integers(20, 1200))
def test_chunks_fit_the_limit_and_keep_every_word_in_order(text: str, limit: int) -> None:
    chunks = split_into_chunks(text, limit)
    assert all(0 < len(c) <= limit for c in chunks)
    assert "".join("".join(c.split()) for c in chunks) == "".join(text.split())


def test_short_content_is_one_chunk_and_paragraphs_are_packed() -> None:
    assert split_into_chunks("  one fact.  ") == ["one fact."]
    text = "\n\n".join(f"Paragraph {i}. " + "word " * 60 for i in range(10))
    chunks = split_into_chunks(text, 1000)
    assert len(chunks) == 4
    assert chunks[0].startswith("Paragraph 0.") and chunks[-1].rstrip().endswith("word")


def test_index_search_matches_brute_force() -> None:
    rng = np.random.default_rng(7)
    matrix = rng.normal(size=(500, 16)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    index = VectorIndex(16, capacity=4)
    for i, row in enumerate(matrix):
        index.upsert(f"n{i}", row)
    for i in range(0, 500, 3):
        index.remove(f"n{i}")
    kept = [i for i in range(500) if i % 3]
    query = matrix[1]
    expected = sorted(kept, key=lambda i: -float(matrix[i] @ query))[:10]
    assert [node for node, _ in index.search(query, 10)] == [f"n{i}" for i in expected]
    assert len(index) == len(kept) and "n0" not in index and "n1" in index


def test_gists_labels_and_summaries_are_short_and_central_first() -> None:
    assert gist("First sentence here. Second one.") == "First sentence here."
    assert len(gist("word " * 100)) <= 161
    texts = ["Biscuit the dog loves the lake.", "The dog Biscuit had a vet visit.", "Lunch was pasta."]
    assert label_for(texts).startswith("biscuit, dog")
    summary = summarize_children(texts, limit=70)
    assert summary.startswith("Biscuit the dog loves the lake.") and "pasta" not in summary


def test_recall_respects_k_the_token_budget_and_the_minimum_score() -> None:
    memory = Memory(4)
    vectors = np.eye(4, dtype=np.float32)
    memory.add_leaf(Leaf(id="a", text="x" * 400, vector=vectors[0], seq=0, timestamp=0.0))
    memory.add_leaf(Leaf(id="b", text="short", vector=vectors[1], seq=1, timestamp=0.0))
    query = (vectors[0] * 0.8 + vectors[1] * 0.6).astype(np.float32)
    assert [h.id for h in rank(memory, RankRequest(query=query, k=2))] == ["a", "b"]
    assert [h.id for h in rank(memory, RankRequest(query=query, k=2, max_tokens=50))] == ["b"]
    assert rank(memory, RankRequest(query=vectors[2], k=5)) == []
    assert estimate_tokens("abcd" * 10) == 10


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.floats(-3, 3, allow_nan=False, width=32)), min_size=1, max_size=30
    )
)
def test_propagation_along_time_matches_a_brute_force_sum(rows: list[tuple[int, float]]) -> None:
    decay, radius = DEFAULT_WEIGHTS.neighbour_decay, DEFAULT_WEIGHTS.neighbour_radius
    memory = Memory(4)
    memory.timeline()  # built empty, then grown leaf by leaf as they arrive
    sessions = []
    session = 0
    for i, (change, _) in enumerate(rows):
        session += change == 0 and i > 0  # a new session now and then
        sessions.append(session)
        vector = np.eye(4, dtype=np.float32)[i % 4]
        memory.add_leaf(
            Leaf(
                id=f"m{i:03d}",
                text=f"turn {i}",
                vector=vector,
                seq=i,
                timestamp=float(i),
                session=f"s{session}",
            )
        )
    ids, _ = memory.leaf_index.scores(np.ones(4, dtype=np.float32))
    scores = np.asarray([rows[int(i[1:])][1] for i in ids], dtype=np.float32)
    got = dict(zip(ids, memory.timeline().propagate(scores, decay, radius), strict=True))
    rebuilt = Memory(4)
    rebuilt.load(
        memory.leaves.values(), [*memory.semantic.branches.values(), *memory.temporal.branches.values()]
    )
    again = dict(
        zip(rebuilt.leaf_index.ids(), rebuilt.timeline().propagate(scores, decay, radius), strict=True)
    )
    assert again == pytest.approx(got)
    for i in range(len(rows)):
        expected = rows[i][1]
        for j in range(len(rows)):
            distance = abs(i - j)
            if 0 < distance <= radius and sessions[i] == sessions[j]:
                expected += decay**distance * rows[j][1]
        assert got[f"m{i:03d}"] == pytest.approx(expected, abs=1e-4)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(2, 40),
    st.integers(0, 2**32 - 1),
    st.booleans(),
    st.sampled_from([0.1, 0.5]),
    st.integers(0, 3),
)
def test_tree_propagation_matches_the_dense_transition_matrix(
    n: int, seed: int, top_down: bool, decay: float, horizon: int
) -> None:
    rng = np.random.default_rng(seed)
    memory = Memory(8)
    for i in range(n):
        vector = rng.normal(size=8).astype(np.float32)
        vector /= np.linalg.norm(vector)
        memory.add_leaf(
            Leaf(id=f"m{i:03d}", text=f"t{i}", vector=vector, seq=i, timestamp=float(i), session=f"s{i // 7}")
        )
    structure = memory.temporal_structure()
    size = len(structure.ids)
    position = {node_id: i for i, node_id in enumerate(structure.ids)}
    transition = np.zeros((size, size))
    for branch in memory.temporal.branches.values():
        for child in branch.children:
            if top_down:
                transition[position[child], position[branch.id]] = 1.0 / len(branch.children)
            else:
                transition[position[branch.id], position[child]] = 1.0
    initial = rng.random(size)
    initial /= initial.sum()
    expected = sum(decay**h * np.linalg.matrix_power(transition, h) @ initial for h in range(horizon + 1))
    got = structure.propagate(initial, top_down, decay, horizon)
    np.testing.assert_allclose(got, expected, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([None, "a", "b", "c"]), st.floats(0, 10_000, allow_nan=False)),
        min_size=0,
        max_size=40,
    )
)
def test_the_timeline_s_segments_break_exactly_where_session_break_says(
    turns: list[tuple[str | None, float]],
) -> None:
    # A new segment where a new session starts, as session_break judges each leaf against the one
    # before it in arrival order (pauses up to 10,000 s, so silences and changes of day both come).
    leaves = []
    stamp = 0.0
    for i, (session, pause) in enumerate(turns):
        stamp += pause
        vector = np.zeros(4, dtype=np.float32)
        vector[i % 4] = 1.0
        leaves.append(
            Leaf(id=f"m{i}", text=f"turn {i}", vector=vector, seq=i, timestamp=stamp, session=session)
        )
    index = VectorIndex(4)
    if leaves:  # indexed in another order than arrival, so rows and places differ
        index.extend(
            [leaf.id for leaf in reversed(leaves)], np.stack([leaf.vector for leaf in reversed(leaves)])
        )
    timeline = Timeline.of(leaves, GAP, index, UTC_CALENDAR)
    expected, segment = [], 0
    for previous, leaf in zip([None, *leaves], leaves, strict=False):
        segment += int(UTC_CALENDAR.session_break(previous, leaf, GAP))
        expected.append(segment)
    assert timeline.segment.tolist() == expected
    assert timeline.rows.tolist() == [index.row(leaf.id) for leaf in leaves]


GAP = 3_000.0
