"""The BM25 lexical index: exact scores under change, and the behaviour a user of recall notices."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree_mcp.core.indexes.lexical import LexicalIndex, stem, tokenize

# A small vocabulary so random documents share words and document frequencies vary; with the real
# tokenizer "the" disappears and "apples"/"apple" merge.
WORDS = ["apple", "apples", "pear", "plum", "kiwi", "fig", "lime", "the", "Yuzu"]


def split(text: str) -> list[str]:
    """A trivial tokenizer, so the brute force checks BM25 itself whatever the tokenizer does."""
    return text.split()


def brute_force_bm25(
    docs: dict[str, str], query: str, k1: float, b: float, tok: Callable[[str], list[str]]
) -> dict[str, float]:
    """BM25 straight from its definition, recomputing every statistic from scratch."""
    tokens = {doc_id: tok(text) for doc_id, text in docs.items()}
    n = len(tokens)
    if n == 0:
        return {}
    avgdl = sum(len(t) for t in tokens.values()) / n
    scores: dict[str, float] = {}
    for doc_id, terms in tokens.items():
        tf = Counter(terms)
        total = 0.0
        for term in tok(query):
            df = sum(1 for t in tokens.values() if term in t)
            if tf[term] == 0:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            total += idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * len(terms) / avgdl))
        if total > 0:
            scores[doc_id] = total
    return scores


documents = st.lists(st.sampled_from(WORDS), min_size=0, max_size=12).map(" ".join)
operations = st.lists(
    st.tuples(st.sampled_from(["add", "remove"]), st.integers(0, 9), documents), min_size=1, max_size=40
)
queries = st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=4).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(
    operations,
    st.lists(queries, min_size=1, max_size=4),
    st.sampled_from([(1.5, 0.75), (1.2, 0.0), (2.0, 1.0), (0.0, 0.5)]),
    st.sampled_from([split, tokenize]),
)
def test_scores_equal_brute_force_bm25_after_any_adds_removals_and_re_adds(
    ops: list[tuple[str, int, str]],
    query_texts: list[str],
    params: tuple[float, float],
    tok: Callable[[str], list[str]],
) -> None:
    k1, b = params
    index = LexicalIndex(k1=k1, b=b, tokenizer=tok)
    truth: dict[str, str] = {}
    for op, number, text in ops:
        doc_id = f"doc{number}"
        if op == "add":
            index.add(doc_id, text)
            truth[doc_id] = text
        else:
            index.remove(doc_id)
            truth.pop(doc_id, None)
        assert len(index) == len(truth)
        for query in query_texts:
            expected = brute_force_bm25(truth, query, k1, b, tok)
            got = index.scores(query)
            assert got.keys() == expected.keys()
            for doc_id, score in expected.items():
                assert got[doc_id] == pytest.approx(score, rel=1e-9, abs=1e-12)
            # search is exactly the top of scores, best first, equal scores by id.
            ranked = sorted(got.items(), key=lambda item: (-item[1], item[0]))
            assert index.search(query, 3) == ranked[:3]
    assert all((f"doc{n}" in index) == (f"doc{n}" in truth) for n in range(10))


def test_a_rare_exact_word_outranks_a_common_one() -> None:
    index = LexicalIndex()
    for i in range(20):
        index.add(f"common{i}", f"Melanie said, we went to the beach again, day {i}")
    index.add("rare", "Caroline said, the beach trip ended at the pottery workshop")
    hits = index.search("beach pottery", k=3)
    assert hits[0][0] == "rare"
    assert hits[0][1] > hits[1][1]


def test_search_is_best_first_with_ties_broken_by_id_and_k_respected() -> None:
    index = LexicalIndex()
    for doc_id in ["c", "a", "b", "d"]:
        index.add(doc_id, "hiking in the mountains")
    index.add("z", "unrelated words entirely")
    assert [d for d, _ in index.search("mountains", k=3)] == ["a", "b", "c"]
    assert index.search("mountains", k=0) == []
    assert len(index.search("mountains", k=10)) == 4


def test_removal_really_forgets_a_document() -> None:
    index = LexicalIndex()
    index.add("keep", "a painting of a sunset over the lake")
    index.add("gone", "Melanie adopted a puppy named Oscar")
    before = index.scores("lake")["keep"]
    index.remove("gone")
    index.remove("never-added")  # unknown ids are ignored
    assert "gone" not in index and len(index) == 1
    assert index.search("puppy Oscar", k=5) == []
    # Its words no longer count: the survivor scores as if it had always been alone.
    alone = LexicalIndex()
    alone.add("keep", "a painting of a sunset over the lake")
    assert index.scores("lake")["keep"] == pytest.approx(alone.scores("lake")["keep"])
    assert index.scores("lake")["keep"] != pytest.approx(before)


def test_adding_an_existing_id_replaces_its_text() -> None:
    index = LexicalIndex()
    index.add("note", "the meeting is on Monday")
    index.add("note", "the meeting moved to Friday")
    assert len(index) == 1
    assert index.search("Monday") == []
    assert [d for d, _ in index.search("Friday")] == ["note"]


def test_an_empty_query_or_only_stopwords_finds_nothing() -> None:
    index = LexicalIndex()
    index.add("one", "What did you do with them when it was over?")
    index.add("two", "Caroline went to a support group")
    assert index.search("") == [] and index.scores("") == {}
    assert index.search("what was it that they did") == []
    assert index.scores("   ?! ") == {}
    assert LexicalIndex().search("anything") == []


def test_unicode_text_is_searchable() -> None:
    index = LexicalIndex()
    index.add("de", "Wir wohnen in der Straße am Fluss")
    index.add("fr", "Le café près de l’église")
    index.add("jp", "東京 に 行きました")
    index.add("el", "Η Αθήνα είναι όμορφη")
    assert [d for d, _ in index.search("STRASSE")] == ["de"]
    assert [d for d, _ in index.search("Café")] == ["fr"]
    assert [d for d, _ in index.search("東京")] == ["jp"]
    assert [d for d, _ in index.search("αθήνα")] == ["el"]


def test_the_tokenizer_keeps_content_words_names_and_years() -> None:
    tokens = tokenize('Caroline said, "In 2022 I took up self-care and painting."', stemming=False)
    assert tokens == ["caroline", "said", "2022", "took", "self-care", "self", "care", "painting"]
    assert tokenize("Melanie's kids don't like the beach", stemming=False) == [
        "melanie",
        "kids",
        "like",
        "beach",
    ]
    assert tokenize("snake_case x_y", stemming=False) == ["snake", "case", "x", "y"]


def test_stemming_brings_inflections_together_conservatively() -> None:
    assert {stem(w) for w in ["hike", "hikes"]} == {"hike"}
    assert stem("painting") == stem("painted") == stem("paints") == "paint"
    assert stem("running") == "run" and stem("stopped") == "stop" and stem("falling") == "fall"
    assert stem("stories") == "story" and stem("boxes") == "box" and stem("classes") == "class"
    # Short words, "-ss"/"-us"/"-is" endings, "-eed" and numbers are left alone.
    for word in ["sing", "red", "bed", "glass", "bus", "this", "need", "speed", "1990s", "was"]:
        assert stem(word) == word
    assert tokenize("She paints; she painted a painting") == ["paint", "paint", "paint"]


def test_a_question_finds_the_turn_with_an_inflected_form_of_its_word() -> None:
    index = LexicalIndex()
    index.add("D1:3", 'Caroline said, "I went to a LGBTQ support group yesterday"')
    index.add("D1:4", 'Melanie said, "The kids loved the museum"')
    index.add("D1:5", 'Caroline said, "Going to the park tomorrow"')
    assert index.search("When did Caroline go to the LGBTQ support groups?", k=1)[0][0] == "D1:3"
    assert index.search("What did the kids love?", k=1)[0][0] == "D1:4"


def _apply(index: LexicalIndex, op: str, number: int, text: str) -> None:
    if op == "add":
        index.add(f"doc{number}", text)
    else:
        index.remove(f"doc{number}")


def _restored_copy(index: LexicalIndex, tok: Callable[[str], list[str]]) -> LexicalIndex:
    """``index`` taken apart into arrays (as a snapshot stores it) and restored from them."""
    ids: list[str] = []
    slots: list[int] = []
    offsets = [0]
    codes: list[int] = []
    tfs: list[int] = []
    code_of: dict[str, int] = {}
    for slot, doc_id, terms, frequencies in index.documents():
        ids.append(doc_id)
        slots.append(slot)
        codes.extend(code_of.setdefault(term, len(code_of)) for term in terms)
        tfs.extend(frequencies)
        offsets.append(len(codes))
    return LexicalIndex.restored(
        ids,
        np.array(slots),
        np.array(offsets),
        np.array(codes),
        np.array(tfs),
        list(code_of),
        index.capacity,
        k1=index.k1,
        b=index.b,
        tokenizer=tok,
    )


@settings(max_examples=100, deadline=None)
@given(operations, operations, st.lists(queries, min_size=1, max_size=3), st.sampled_from([split, tokenize]))
def test_an_index_restored_from_its_arrays_goes_on_exactly_as_the_one_it_was_taken_from(
    before: list[tuple[str, int, str]],
    after: list[tuple[str, int, str]],
    query_texts: list[str],
    tok: Callable[[str], list[str]],
) -> None:
    # A reopened namespace's BM25 index is restored, not rebuilt; every later remember and forget
    # must leave it scoring as the index a process that never closed would hold.
    original = LexicalIndex(tokenizer=tok)
    for step in before:
        _apply(original, *step)
    restored = _restored_copy(original, tok)
    for op, number, text in after:
        _apply(original, op, number, text)
        _apply(restored, op, number, text)
        assert len(restored) == len(original)
        for query in query_texts:
            assert restored.scores(query) == pytest.approx(original.scores(query), rel=1e-12)
            for doc_id in (f"doc{n}" for n in range(10)):
                assert (doc_id in restored) == (doc_id in original)
                if doc_id in original:
                    assert restored.terms(doc_id) == original.terms(doc_id)
                    assert restored.coverage(query, doc_id) == pytest.approx(original.coverage(query, doc_id))
    assert sorted(restored.documents()) == sorted(original.documents())


def test_arrays_that_do_not_hold_together_are_refused_by_name() -> None:
    # A snapshot whose index arrays were damaged is read whole instead: restored must refuse them.
    vocabulary = ["alpha", "beta", "gamma"]
    offsets, codes, tfs = np.array([0, 2, 3]), np.array([0, 1, 2]), np.array([1, 2, 1])
    good = LexicalIndex.restored(["a", "b"], np.array([0, 3]), offsets, codes, tfs, vocabulary, 4)
    assert good.terms("b") == {"gamma": 1} and good.capacity == 4
    with pytest.raises(ValueError, match="one slot"):
        LexicalIndex.restored(["a", "b"], np.array([3, 3]), offsets, codes, tfs, vocabulary, 4)
    with pytest.raises(ValueError, match="twice"):
        LexicalIndex.restored(["a", "a"], np.array([0, 1]), offsets, codes, tfs, vocabulary, 4)
    with pytest.raises(ValueError, match="hold together"):
        LexicalIndex.restored(["a", "b"], np.array([0, 1]), offsets, np.array([0, 1, 3]), tfs, vocabulary, 4)
    with pytest.raises(ValueError, match="hold together"):
        LexicalIndex.restored(["a", "b"], np.array([0, 4]), offsets, codes, tfs, vocabulary, 4)
