"""Relevance (core/ranking/relevance.py): the scale and the word share."""

from __future__ import annotations

import math

import pytest

from memtree_mcp.core.indexes.lexical import LexicalIndex, tokenize
from memtree_mcp.core.ranking.relevance import DENSE_SAME, DENSE_UNRELATED, meaning, relevance
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest

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


@pytest.mark.parametrize("strategy", ["gather", "hybrid"])
@pytest.mark.parametrize("query", ["anything", "xyzzy", "tell me everything"])
def test_min_relevance_zero_returns_every_hit_ranked_even_for_a_query_nothing_is_about(
    service: MemoryService, strategy: str, query: str
) -> None:
    # The README: "min_relevance: 0 returns every hit ranked"; these returned nothing (issue 31).
    notes = [
        "The staging database is on port 5433.",
        "Marta's flight lands at 18:40.",
        "The plants are watered on Wednesdays.",
        "Tomas is allergic to peanuts.",
    ]
    for note in notes:
        service.remember(note)
    every = service.look_up(RecallRequest(query, min_relevance=0, strategy=strategy, kind="leaf", k=10)).hits
    assert sorted(hit.text for hit in every) == sorted(notes)
    assert (
        len(service.look_up(RecallRequest(query, strategy=strategy)).hits) <= 1
    )  # the default cut-off still holds


def test_word_coverage_of_alternating_queries_is_each_querys_own() -> None:
    index = LexicalIndex()
    for doc_id, text in {"a": "espresso beans from the alps", "b": "hiking trail in the alps"}.items():
        index.add(doc_id, text)
    first = index.coverage("alps espresso", "a")
    assert index.coverage("hiking trail", "a") == 0.0
    assert (
        index.coverage("alps espresso", "a") == first == pytest.approx(index.coverage("espresso alps", "a"))
    )
