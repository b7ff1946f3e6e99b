"""Relevance and updates (core/relevance.py): the scale, the word share, and which memory updates which."""

from __future__ import annotations

import math

import pytest

from memtree_mcp.core.lexical import LexicalIndex, tokenize
from memtree_mcp.core.model import Leaf
from memtree_mcp.core.relevance import DENSE_SAME, DENSE_UNRELATED, meaning, relevance, supersedes
from memtree_mcp.providers.local import MiniLMEmbedder

DOCS = {
    "a": "The staging database is Postgres 16 on port 5432.",
    "b": "The production database is Postgres 16 on port 5432.",
    "c": "Staging Postgres now listens on 5433 after the migration.",
    "d": "The daily standup is at 9:30 CET.",
    "e": "The daily standup is at 10:15 CET.",
    "f": "The user prefers tabs over spaces.",
}


def test_meaning_maps_cosines_linearly_onto_zero_to_one() -> None:
    assert meaning(DENSE_UNRELATED) == 0.0 and meaning(-1.0) == 0.0
    assert meaning(DENSE_SAME) == 1.0 and meaning(1.0) == 1.0
    assert meaning((DENSE_UNRELATED + DENSE_SAME) / 2) == pytest.approx(0.5)


def test_either_signal_alone_counts_and_both_count_more() -> None:
    middle = (DENSE_UNRELATED + DENSE_SAME) / 2
    assert relevance(middle, 0.0) == pytest.approx(0.5)
    assert relevance(DENSE_UNRELATED, 1.0) == pytest.approx(0.6)
    assert relevance(middle, 1.0) > max(relevance(middle, 0.0), relevance(DENSE_UNRELATED, 1.0))
    assert 0.0 <= relevance(-1.0, 0.0) <= relevance(1.0, 1.0) == 1.0


def test_word_coverage_is_the_idf_weighted_share_of_the_query_terms() -> None:
    index = LexicalIndex()
    for doc_id, text in DOCS.items():
        index.add(doc_id, text)
    query = "Which port does staging Postgres use?"
    n = len(DOCS)

    def idf(term: str) -> float:
        df = sum(term in tokenize(text) for text in DOCS.values())
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    terms = set(tokenize(query))
    for doc_id, text in DOCS.items():
        present = set(tokenize(text))
        expected = sum(idf(t) for t in terms if t in present) / sum(idf(t) for t in terms)
        assert index.coverage(query, doc_id) == pytest.approx(expected)
    assert index.coverage("zebra crossing", "a") == 0.0


@pytest.fixture(scope="module")
def leaves(embedder: MiniLMEmbedder) -> dict[str, Leaf]:
    vectors = embedder.embed_batch(list(DOCS.values()))
    return {
        doc_id: Leaf(id=doc_id, text=text, vector=vector, seq=seq, timestamp=1_000.0 + 60 * seq)
        for seq, ((doc_id, text), vector) in enumerate(zip(DOCS.items(), vectors, strict=True))
    }


@pytest.fixture(scope="module")
def lexical() -> LexicalIndex:
    index = LexicalIndex()
    for doc_id, text in DOCS.items():
        index.add(doc_id, text)
    return index


def test_a_later_memory_that_says_the_value_changed_supersedes_the_earlier(
    leaves: dict[str, Leaf], lexical: LexicalIndex
) -> None:
    assert supersedes(leaves["c"], leaves["a"], lexical)  # "now listens on 5433"
    assert supersedes(leaves["e"], leaves["d"], lexical)  # only the time differs


def test_a_parallel_fact_or_an_earlier_memory_supersedes_nothing(
    leaves: dict[str, Leaf], lexical: LexicalIndex
) -> None:
    assert not supersedes(leaves["b"], leaves["a"], lexical)  # production is not staging
    assert not supersedes(leaves["a"], leaves["c"], lexical)  # older never supersedes newer
    assert not supersedes(leaves["f"], leaves["d"], lexical)  # another subject


def updates(embedder: MiniLMEmbedder, older: str, newer: str) -> bool:
    """Whether ``newer``, said a day after ``older``, supersedes it in a store of those two memories."""
    old_vector, new_vector = embedder.embed_batch([older, newer])
    old = Leaf(id="old", text=older, vector=old_vector, seq=0, timestamp=1_000.0)
    new = Leaf(id="new", text=newer, vector=new_vector, seq=1, timestamp=1_000.0 + 86_400)
    index = LexicalIndex()
    index.add("old", older)
    index.add("new", newer)
    return supersedes(new, old, index)


def test_a_fact_about_another_environment_is_not_an_update_even_when_it_says_now(
    embedder: MiniLMEmbedder,
) -> None:
    assert not updates(
        embedder, "The staging Redis runs on port 6379.", "The production Redis now runs on port 6380."
    )
    assert not updates(
        embedder, "The iOS app requires iOS 16 or later.", "The Android app now requires Android 12 or later."
    )
    assert not updates(embedder, "Alice's laptop is a MacBook Pro.", "Bob's laptop is a ThinkPad.")
    # the same update does supersede the fact about its own environment
    assert updates(
        embedder, "The production Redis runs on port 6379.", "The production Redis now runs on port 6380."
    )


def test_the_readme_example_is_an_update_in_a_store_of_two_memories(embedder: MiniLMEmbedder) -> None:
    assert updates(
        embedder,
        "The staging database is Postgres 16 on port 5432.",
        "Staging Postgres now listens on 5433 after the migration.",
    )


def test_a_changed_status_or_person_is_an_update(embedder: MiniLMEmbedder) -> None:
    assert updates(
        embedder, "ORION-160, the JPY rounding bug, is open.", "ORION-160, the JPY rounding bug, is resolved."
    )
    assert updates(
        embedder, "The on-call engineer this week is Priya.", "The on-call engineer this week is now Tom."
    )
    assert updates(
        embedder, "Maya Okafor leads the backend team.", "Tomasz Wrobel now leads the backend team."
    )


def test_a_change_of_mechanism_does_not_retire_an_unrelated_value(embedder: MiniLMEmbedder) -> None:
    assert not updates(
        embedder,
        "The API rate limit was raised to 300 requests per minute.",
        "Rate limiting moves to the API gateway.",
    )
    # while a new value for the limit does retire it
    assert updates(
        embedder,
        "The API rate limit was raised to 300 requests per minute.",
        "The API rate limit is now 500 requests per minute.",
    )


def test_no_longer_is_an_update_and_also_is_not(embedder: MiniLMEmbedder) -> None:
    assert updates(
        embedder, "GraphQL is used for the public API.", "GraphQL is no longer used for the public API."
    )
    assert updates(embedder, "I am vegetarian.", "I'm not vegetarian anymore.")
    assert not updates(embedder, "The team chat runs on Slack.", "The team also uses Zoom for calls.")
