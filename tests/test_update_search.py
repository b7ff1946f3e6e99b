"""Which memory updates which, as recall looks for it, against a brute-force search on small memories.

Recall gathers, once per call, the candidates its hits share, each parent's semantic siblings and
what the judge reads of each memory (``updates.Updates``, ``updates.UpdateJudge``). Here the
same answer is recomputed with plain loops: every later candidate or sibling, those close enough
in meaning, the latest ``Weights.updates_judged`` of them judged with each memory read afresh.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree_mcp.core.lexical import LexicalIndex, tokenize
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.model import Leaf
from memtree_mcp.core.recall import DEFAULT_WEIGHTS, RecallFilter, RecallRequest, newest_update, recall
from memtree_mcp.core.updates import (
    IDF_MIN_MEMORIES,
    UPDATE_MEANING,
    UPDATE_SHARED_WORDS,
    UPDATE_SUBJECT,
    UpdateJudge,
    changes_value,
    read,
)
from tests import tree_checks

DIM = 8
SUBJECTS = ["standup is at", "staging db listens on port", "the cello lesson costs", "deploy window opens at"]


def update_leaf(rng: np.random.Generator, i: int, centres: np.ndarray) -> Leaf:
    """Memories about a few subjects whose values change, some saying so ("now"), on close vectors."""
    topic = int(rng.integers(len(centres)))
    vector = centres[topic] + rng.normal(0, 0.15, size=DIM)
    cue = "now " if rng.random() < 0.3 else ""
    return Leaf(
        id=f"m{i:04d}",
        text=f"The {SUBJECTS[topic]} {cue}{int(rng.integers(1, 6))} (entry {i})",
        vector=(vector / np.linalg.norm(vector)).astype(np.float32),
        seq=i,
        timestamp=1_000.0 + 60.0 * i + (0.0 if rng.random() < 0.2 else 7.0),
        role="user",
        content_hash=f"h{i}",
    )


def brute_supersedes(newer: Leaf, older: Leaf, texts: dict[str, str]) -> bool:
    """``updates.supersedes`` from the texts alone: each memory read afresh for each pair.

    ``texts`` are all the memories: from :data:`IDF_MIN_MEMORIES` of them on, the share of shared
    words may be weighted by idf, computed here by counting the memories that have each word.
    The same subject is checked with plain sets, and the aligned comparison of the two fresh
    readings is the rule's own (``changes_value``)."""
    assert older.id in texts and newer.id in texts
    if (newer.timestamp, newer.seq) <= (older.timestamp, older.seq) or newer.text == older.text:
        return False
    cosine = float(newer.vector @ older.vector)
    if cosine < UPDATE_MEANING:
        return False
    old, new = read(older.text), read(newer.text)
    if any(t.kind == "addition" for t in new.tokens) and not any(t.kind == "addition" for t in old.tokens):
        return False
    old_content = {t.key for t in old.tokens if t.kind in {"word", "name", "state", "value", "unit"}}
    ids = {t.key for t in old.tokens[:3]} & {t.key for t in new.tokens[:3]}
    if any(re.fullmatch(r"[a-z][a-z0-9]*-\d+|#\d+", key) for key in ids) and new.terminal - old_content:
        return True
    subject = {t.key for t in old.tokens if t.kind in {"word", "name", "state", "unit"}}
    content = {t.key for t in new.tokens if t.kind in {"word", "name", "state", "value", "unit"}}
    shared = len(subject & content) / len(subject) if subject else 0.0
    if len(texts) >= IDF_MIN_MEMORIES and subject:
        n = len(texts)
        documents = [set(tokenize(text)) for text in texts.values()]
        idf = {
            key: math.log(
                1.0 + (n - sum(key in d for d in documents) + 0.5) / (sum(key in d for d in documents) + 0.5)
            )
            for key in subject
        }
        shared = max(shared, sum(idf[key] for key in subject & content) / sum(idf.values()))
    if shared < UPDATE_SHARED_WORDS or cosine + shared < UPDATE_SUBJECT:
        named = {t.key for t in old.tokens if t.kind in {"value", "name"}}
        own = {t.key for t in new.tokens if t.kind in {"value", "name"}} - old_content
        if not (named & content and own and new.cues - old.cues):
            return False
    return changes_value(old, new)


def brute_newest_update(memory: Memory, older: Leaf, candidates: list[str]) -> Leaf | None:
    parent = memory.semantic.parent_of.get(older.id)
    siblings = memory.semantic.branches[parent].children[: DEFAULT_WEIGHTS.siblings_checked] if parent else []
    pool = {c for c in [*candidates, *siblings] if c in memory.leaves}
    later = [
        memory.leaves[c]
        for c in pool
        if (memory.leaves[c].timestamp, memory.leaves[c].seq) > (older.timestamp, older.seq)
    ]
    close = [leaf for leaf in later if float(leaf.vector @ older.vector) >= UPDATE_MEANING]
    close.sort(key=lambda leaf: (leaf.timestamp, leaf.seq), reverse=True)
    texts = {leaf_id: leaf.text for leaf_id, leaf in memory.leaves.items()}
    for newer in close[: DEFAULT_WEIGHTS.updates_judged]:
        if brute_supersedes(newer, older, texts):
            return newer
    return None


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), inserts=st.integers(2, 40), removals=st.integers(0, 8))
def test_the_newest_update_of_every_memory_is_the_brute_force_one(
    seed: int, inserts: int, removals: int
) -> None:
    memory = tree_checks.grown_memory(
        seed, inserts, removals, update_leaf, centres=len(SUBJECTS), dimension=DIM
    )
    rng = np.random.default_rng(seed)
    ids = sorted(memory.leaves)
    candidates = [str(c) for c in rng.choice(ids, size=min(len(ids), 6), replace=False)] if ids else []
    found = 0
    for older in memory.leaves.values():
        expected = brute_newest_update(memory, older, candidates)
        got = newest_update(memory, older, candidates)
        assert (got.id if got else None) == (expected.id if expected else None)
        found += expected is not None
    if inserts >= 30 and not removals:
        assert found  # the memories do update each other: the comparison is not all None


def test_one_judge_asked_many_pairs_answers_as_a_fresh_judge_for_each() -> None:
    memory = tree_checks.grown_memory(7, 40, 0, update_leaf, centres=len(SUBJECTS), dimension=DIM)
    leaves = list(memory.leaves.values())
    shared = UpdateJudge(memory.lexical)
    answers = [
        (shared.supersedes(newer, older), UpdateJudge(memory.lexical).supersedes(newer, older))
        for older in leaves
        for newer in leaves
    ]
    assert all(a == b for a, b in answers)
    assert any(a for a, _ in answers)


def test_recall_marks_the_same_updates_as_a_brute_force_search_over_its_hits() -> None:
    memory = tree_checks.grown_memory(11, 40, 3, update_leaf, centres=len(SUBJECTS), dimension=DIM)
    query = memory.leaves[sorted(memory.leaves)[5]]
    hits = recall(
        memory,
        RecallRequest(
            query=query.vector, k=10, query_text="standup", where=RecallFilter(kind="leaf"), supersede=True
        ),
    )
    candidates = [h.id for h in hits]  # every text differs: the hits are the ranking's first ten
    for hit in hits:
        expected = brute_newest_update(memory, memory.leaves[hit.id], candidates)
        assert hit.superseded_by == (expected.id if expected else None)
    assert any(hit.superseded_by for hit in hits)


def test_word_coverage_of_alternating_queries_is_each_querys_own() -> None:
    index = LexicalIndex()
    for doc_id, text in {"a": "espresso beans from the alps", "b": "hiking trail in the alps"}.items():
        index.add(doc_id, text)
    first = index.coverage("alps espresso", "a")
    assert index.coverage("hiking trail", "a") == 0.0
    assert (
        index.coverage("alps espresso", "a") == first == pytest.approx(index.coverage("espresso alps", "a"))
    )
