"""Gather recall's scoring pieces against brute-force computations on small memories.

Each piece (``core/indexes/gathering.py``): authors named in a query, the query without them, BM25 of
segments scored as whole documents, and the whole gather score of every memory, recomputed here
with plain loops over the leaves, a fresh BM25 index of each segment's joined text and the
timeline rebuilt from the leaves' order.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree_mcp.core.indexes.gathering import (
    STAND_IN,
    dated_spans,
    named_authors,
    standardised,
    without_names,
)
from memtree_mcp.core.indexes.lexical import LexicalIndex
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.recall import DEFAULT_WEIGHTS as WEIGHTS
from memtree_mcp.core.ranking.recall import RankRequest, RecallFilter, rank
from memtree_mcp.core.trees.calendar import UTC_CALENDAR
from memtree_mcp.core.trees.model import Leaf
from tests import tree_checks

DIM = 16
WORDS = "coffee espresso beans alps hiking trail python typing jazz record vinyl garden tomato cello".split()
AUTHORS = ("Ana", "Bo", "Annabel", "user")
DAY0 = datetime(2024, 1, 1, tzinfo=UTC).timestamp()


def random_leaf(rng: np.random.Generator, i: int, centres: np.ndarray) -> Leaf:
    topic = int(rng.integers(len(centres)))
    vector = centres[topic] + rng.normal(0, 0.35, size=DIM)
    vector = (vector / np.linalg.norm(vector)).astype(np.float32)
    words = " ".join(rng.choice(WORDS, size=int(rng.integers(1, 6))))
    author = str(rng.choice(AUTHORS))
    return Leaf(
        id=f"m{i:04d}",
        text=f"{author} said: note {i}, {words}",
        vector=vector,
        seq=i,
        # About five memories a day, from 1 January 2024.
        timestamp=DAY0 + 17_000.0 * i + (30_000.0 if rng.random() < 0.05 else 0.0) * i,
        role=author,
        session=None if rng.random() < 0.2 else f"s{i // 7}",
        content_hash=f"h{i}",
    )


def grown_memory(seed: int, inserts: int, removals: int) -> Memory:
    return tree_checks.grown_memory(seed, inserts, removals, random_leaf, centres=4, dimension=DIM)


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=DIM)
    return (v / np.linalg.norm(v)).astype(np.float32)


def segments_by_loop(leaves: list[Leaf], gap: float) -> list[int]:
    """The segment number of each leaf in time order: a new one at each boundary."""
    out: list[int] = []
    for i, leaf in enumerate(leaves):
        previous = leaves[i - 1] if i else None
        out.append((out[-1] + int(UTC_CALENDAR.session_break(previous, leaf, gap))) if out else 0)
    return out


def z(values: list[float]) -> list[float]:
    mean = sum(values) / len(values)
    spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5 + 1e-6
    return [(v - mean) / spread for v in values]


def gather_by_brute_force(
    memory: Memory, query: np.ndarray, text: str, content: np.ndarray | None
) -> dict[str, float]:
    """Every memory's gather score, from the leaves alone, with loops."""
    leaves = sorted(memory.leaves.values(), key=lambda leaf: (leaf.timestamp, leaf.seq))
    names = named_authors(text, {leaf.role for leaf in leaves})
    words = without_names(text, names, stand_in=" ") if names else text
    share = WEIGHTS.content_share if content is not None else 0.0
    second = content if content is not None else query
    dense = [float((1 - share) * (leaf.vector @ query) + share * (leaf.vector @ second)) for leaf in leaves]
    fused = z(dense)
    plain = LexicalIndex()
    for leaf in leaves:
        plain.add(leaf.id, leaf.text)
    bm25 = plain.scores(words)
    if bm25:
        lexical = z([bm25.get(leaf.id, 0.0) for leaf in leaves])
        fused = [f + WEIGHTS.lexical_weight * b for f, b in zip(fused, lexical, strict=True)]
    spans = dated_spans(text, UTC_CALENDAR)
    dated = [any(start <= leaf.timestamp < end for start, end in spans) for leaf in leaves]
    if any(dated) and not all(dated):
        fused = [f + WEIGHTS.date_weight * d for f, d in zip(fused, dated, strict=True)]
    lowered = {name.lower() for name in names}
    fused = [
        f + WEIGHTS.author_weight * (leaf.role.lower() in lowered)
        for f, leaf in zip(fused, leaves, strict=True)
    ]
    segment = segments_by_loop(leaves, memory.temporal.gap_seconds)
    spread = list(fused)
    for i in range(len(leaves)):
        for r in range(1, WEIGHTS.neighbour_radius + 1):
            for j in (i - r, i + r):
                if 0 <= j < len(leaves) and segment[j] == segment[i]:
                    spread[i] += WEIGHTS.neighbour_decay**r * fused[j]
    if bm25:
        joined = LexicalIndex()
        for s in sorted(set(segment)):
            joined.add(
                f"g{s}", " ".join(leaf.text for leaf, t in zip(leaves, segment, strict=True) if t == s)
            )
        by_segment = joined.scores(words)
        numbers = sorted(set(segment))
        lift = dict(zip(numbers, z([by_segment.get(f"g{s}", 0.0) for s in numbers]), strict=True))
        spread = [v + WEIGHTS.segment_weight * lift[t] for v, t in zip(spread, segment, strict=True)]
    return {leaf.id: value for leaf, value in zip(leaves, spread, strict=True)}


@pytest.mark.parametrize(("seed", "inserts", "removals"), [(1, 40, 0), (2, 60, 15), (3, 90, 40), (4, 25, 5)])
@pytest.mark.parametrize("with_content", [False, True])
def test_gather_scores_every_memory_as_the_brute_force_computation(
    seed: int, inserts: int, removals: int, with_content: bool
) -> None:
    memory = grown_memory(seed, inserts, removals)
    rng = np.random.default_rng(seed + 100)
    for text in (
        "what did Ana say about hiking trail",
        "Bo's jazz record on 3 January, 2024",
        "coffee beans",
        "annabel and ANA garden in January 2024",
        "typing on 2024-01-05 or January 9, 2024",
    ):
        query = unit(rng)
        content = unit(rng) if with_content else None
        hits = rank(
            memory,
            RankRequest(
                query=query,
                k=len(memory.leaves),
                query_text=text,
                strategy="gather",
                where=RecallFilter(kind="leaf"),
                content_query=content,
            ),
        )
        expected = gather_by_brute_force(memory, query, text, content)
        assert {h.id for h in hits} == set(expected)
        for hit in hits:
            assert hit.score == pytest.approx(expected[hit.id], abs=1e-4)
        assert all(a.score >= b.score for a, b in itertools.pairwise(hits))


def test_a_memory_reloaded_gathers_as_the_one_grown_leaf_by_leaf() -> None:
    grown = grown_memory(7, 70, 20)
    fresh = Memory(DIM)
    fresh.load(
        list(grown.leaves.values()), [*grown.semantic.branches.values(), *grown.temporal.branches.values()]
    )
    rng = np.random.default_rng(8)
    for text in ("Ana hiking", "user typing python", "Annabel's cello"):
        query = unit(rng)
        a = rank(grown, RankRequest(query=query, k=20, query_text=text, where=RecallFilter(kind="leaf")))
        b = rank(fresh, RankRequest(query=query, k=20, query_text=text, where=RecallFilter(kind="leaf")))
        assert [(h.id, round(h.score, 4)) for h in a] == [(h.id, round(h.score, 4)) for h in b]


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=0, max_size=5).map(" ".join), min_size=1, max_size=12
    ),
    data=st.data(),
)
def test_segment_bm25_equals_bm25_over_each_segments_joined_text(
    texts: list[str], data: st.DataObject
) -> None:
    groups = data.draw(st.integers(1, 5))
    group_of = data.draw(st.lists(st.integers(-1, groups - 1), min_size=len(texts), max_size=len(texts)))
    dropped = data.draw(st.sets(st.integers(0, len(texts) - 1), max_size=len(texts) // 2))
    query = data.draw(st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=4).map(" ".join))
    index = LexicalIndex()
    for i, text in enumerate(texts):
        index.add(f"d{i}", text)
    for i in dropped:
        index.remove(f"d{i}")
    group_of_slot = np.full(len(texts) + 4, -1, dtype=np.int64)
    members: dict[int, list[str]] = {}
    for i, group in enumerate(group_of):
        if i in dropped or group < 0:
            continue
        group_of_slot[index.slot(f"d{i}")] = group
        members.setdefault(group, []).append(texts[i])
    scores = index.group_score_array(query, group_of_slot, groups)
    joined = LexicalIndex()
    for group, parts in members.items():
        joined.add(f"g{group}", " ".join(parts))
    expected = joined.scores(query)
    if scores is None:
        # No query term in the index at all.
        assert index.scores(query) == {}
        return
    for group in range(groups):
        assert scores[group] == pytest.approx(expected.get(f"g{group}", 0.0), rel=1e-9, abs=1e-12)


def test_authors_are_found_as_whole_capitalised_words_with_or_without_a_possessive() -> None:
    authors = ["Ana", "Annabel", "user", "Jo Ann"]
    assert named_authors("What did Ana's sister and ANNABEL say?", authors) == ["Annabel", "Ana"]
    assert named_authors("Banana bread and Anabelle", authors) == []
    assert named_authors("ask Jo ann", authors) == ["Jo Ann"]
    assert named_authors("the User\u2019s cat", authors) == ["user"]


def test_a_role_written_as_a_common_noun_is_not_taken_for_an_author() -> None:
    assert named_authors("which user table did ana migrate", ["user", "Ana"]) == []


def test_names_are_replaced_whole_with_their_possessive_longest_first() -> None:
    assert (
        without_names("Where did Ana's and Annabel go?", ["Ana", "Annabel"])
        == f"Where did {STAND_IN} and {STAND_IN} go?"
    )
    assert without_names("Banana with Ana", ["Ana"], stand_in=" ") == "Banana with"
    assert without_names("nothing here", []) == "nothing here"


def day(year: int, month: int, number: int) -> float:
    return datetime(year, month, number, tzinfo=UTC).timestamp()


def test_dates_with_a_year_name_a_day_or_a_month_and_a_bare_year_names_nothing() -> None:
    assert dated_spans("on 16 November, 2023?", UTC_CALENDAR) == [(day(2023, 11, 16), day(2023, 11, 17))]
    assert dated_spans("on 8th December, 2023", UTC_CALENDAR) == [(day(2023, 12, 8), day(2023, 12, 9))]
    assert dated_spans("on December 1,2023 taken", UTC_CALENDAR) == [(day(2023, 12, 1), day(2023, 12, 2))]
    assert dated_spans("Nov. 3, 2024", UTC_CALENDAR) == [(day(2024, 11, 3), day(2024, 11, 4))]
    assert dated_spans("in December 2023", UTC_CALENDAR) == [(day(2023, 12, 1), day(2024, 1, 1))]
    assert dated_spans("2023-11-21 and 2023-12", UTC_CALENDAR) == [
        (day(2023, 11, 21), day(2023, 11, 22)),
        (day(2023, 12, 1), day(2024, 1, 1)),
    ]
    assert dated_spans("the 2024 budget, due in May", UTC_CALENDAR) == []
    assert dated_spans("on 30 February, 2023", UTC_CALENDAR) == [
        (day(2023, 2, 1), day(2023, 3, 1))
    ]  # its month


def test_a_query_naming_a_day_ranks_what_was_said_that_day_first() -> None:
    memory = Memory(DIM)
    vector = unit(np.random.default_rng(3))
    for i, stamp in enumerate([day(2024, 3, 1), day(2024, 3, 2), day(2024, 3, 3)]):
        memory.add_leaf(
            Leaf(
                id=f"m{i}",
                text=f"we talked about the garden ({('red', 'tan', 'sky')[i]})",
                vector=vector,
                seq=i,
                timestamp=stamp,
            )
        )
    hits = rank(memory, RankRequest(query=vector, k=3, query_text="What about the garden on 2 March, 2024?"))
    assert hits[0].id == "m1"


def test_standardised_values_have_mean_zero_and_unit_spread() -> None:
    values = np.array([1.0, 2.0, 4.0, 9.0])
    out = standardised(values)
    assert out.mean() == pytest.approx(0.0, abs=1e-9)
    assert out.std() == pytest.approx(1.0, abs=1e-5)
    assert np.all(standardised(np.ones(3)) == 0.0)


def test_relevance_shown_does_not_depend_on_the_strategy_that_ranked() -> None:
    memory = grown_memory(11, 50, 5)
    rng = np.random.default_rng(12)
    query = unit(rng)
    text = "what did Bo say about coffee"
    by_strategy = {
        strategy: {
            h.id: h.relevance
            for h in rank(
                memory,
                RankRequest(
                    query=query, k=50, query_text=text, strategy=strategy, where=RecallFilter(kind="leaf")
                ),
            )
        }
        for strategy in ("gather", "hybrid")
    }
    shared = set(by_strategy["gather"]) & set(by_strategy["hybrid"])
    assert shared
    for node_id in shared:
        assert by_strategy["gather"][node_id] == by_strategy["hybrid"][node_id]


def test_a_query_naming_an_author_ranks_their_memories_higher_than_the_same_words_said_by_another() -> None:
    memory = Memory(DIM)
    rng = np.random.default_rng(5)
    shared = unit(rng)
    for i, author in enumerate(["Bo", "Ana"]):
        memory.add_leaf(
            Leaf(
                id=f"m{i}",
                text=f"{author}: I went hiking in the alps",
                vector=shared,
                seq=i,
                timestamp=1000.0 + i,
                role=author,
            )
        )
    hits = rank(
        memory, RankRequest(query=shared, k=2, query_text="Where did Ana go hiking?", strategy="gather")
    )
    assert [h.id for h in hits] == ["m1", "m0"]
