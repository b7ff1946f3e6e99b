"""Every fast path answers exactly as the straightforward one it replaces, on small stores.

The fast paths (docs/findings/speed-at-scale.md): branch scores averaged up each tree's
arrays instead of a product with every branch vector, tree arrays and the timeline kept up to date
node by node instead of rebuilt, BM25 built in bulk and mapped to leaf rows with numpy, a word cache
in the tokenizer, a vector index that grows by doubling and fills holes with its last row.
"""

from __future__ import annotations

import copy
import math
import re
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree_mcp.core.indexes.arrays import Timeline, TreeArrays, TreeStructure
from memtree_mcp.core.indexes.lexical import STOPWORDS, LexicalIndex, stem, tokenize
from memtree_mcp.core.indexes.vectors import VectorIndex
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.names import STRATEGIES
from memtree_mcp.core.ranking.recall import Ranker, RankRequest, RecallFilter, rank
from memtree_mcp.core.trees.model import Leaf
from tests import tree_checks

DIM = 16
WORDS = "coffee espresso beans alps hiking trail python typing jazz record vinyl garden tomato cello".split()


def random_leaf(rng: np.random.Generator, i: int, centres: np.ndarray) -> Leaf:
    topic = int(rng.integers(len(centres)))
    vector = centres[topic] + rng.normal(0, 0.35, size=DIM)
    vector = (vector / np.linalg.norm(vector)).astype(np.float32)
    words = " ".join(rng.choice(WORDS, size=int(rng.integers(2, 7))))
    return Leaf(
        id=f"m{i:04d}",
        text=f"note {i}: {words}",
        vector=vector,
        seq=i,
        timestamp=1000.0 + 60.0 * i + (40_000.0 if rng.random() < 0.05 else 0.0) * i,
        session=None if rng.random() < 0.2 else f"s{i // 9}",
        tags=("t",) if i % 3 == 0 else (),
        content_hash=f"h{i}",
    )


def grown_memory(seed: int, inserts: int, removals: int, *, check_every_step: bool = False) -> Memory:
    """A memory after ``inserts`` random leaves and ``removals`` random removals, interleaved."""
    return tree_checks.grown_memory(
        seed,
        inserts,
        removals,
        random_leaf,
        centres=5,
        dimension=DIM,
        after_each=assert_arrays_match_a_fresh_build if check_every_step else None,
    )


def assert_arrays_match_a_fresh_build(memory: Memory) -> None:
    for tree in (memory.semantic, memory.temporal):
        kept = memory.arrays[tree.tree_name]
        fresh = TreeArrays.build(tree, memory.leaf_index)
        assert kept.picture(memory.leaf_index) == fresh.picture(memory.leaf_index)
        assert kept.picture(memory.leaf_index)["__levels_consistent__"] == (True,)


def structure_by_id(ids: list[str | None], parent: np.ndarray, fan_out: np.ndarray) -> dict[str, object]:
    return {
        node_id: (None if parent[i] < 0 else ids[int(parent[i])], float(fan_out[i]))
        for i, node_id in enumerate(ids)
        if node_id is not None
    }


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 60), st.integers(0, 30))
def test_tree_arrays_kept_node_by_node_equal_a_fresh_build(seed: int, inserts: int, removals: int) -> None:
    memory = grown_memory(seed, inserts, removals, check_every_step=True)
    kept = memory.temporal_structure()
    fresh = TreeStructure.build(memory.temporal, memory.leaf_index)
    assert structure_by_id(kept.ids, kept.parent, kept.fan_out) == structure_by_id(
        fresh.ids, fresh.parent, fresh.fan_out
    )
    assert kept.ids[: len(memory.leaves)] == memory.leaf_index.ids()


def twin_memories(memory: Memory) -> tuple[Memory, Memory]:
    """The same nodes loaded twice: branch scores by averaging, and by the branch vector matrix."""
    leaves = list(memory.leaves.values())
    branches = [*memory.semantic.branches.values(), *memory.temporal.branches.values()]
    fast, slow = Memory(DIM, aggregate=True), Memory(DIM, aggregate=False)
    fast.load(copy.deepcopy(leaves), copy.deepcopy(branches))
    slow.load(copy.deepcopy(leaves), copy.deepcopy(branches))
    return fast, slow


def queries(seed: int, count: int) -> list[tuple[np.ndarray, str]]:
    rng = np.random.default_rng(seed + 1)
    out = []
    for _ in range(count):
        vector = rng.normal(size=DIM)
        out.append(((vector / np.linalg.norm(vector)).astype(np.float32), " ".join(rng.choice(WORDS, 2))))
    return out


def same_hits(a: Memory, b: Memory, vector: np.ndarray, text: str, **options: object) -> None:
    left = rank(a, RankRequest(query=vector, k=12, query_text=text, **options))  # type: ignore[arg-type]
    right = rank(b, RankRequest(query=vector, k=12, query_text=text, **options))  # type: ignore[arg-type]
    assert [(h.id, h.kind, h.tree, h.depth) for h in left] == [(h.id, h.kind, h.tree, h.depth) for h in right]
    assert [h.score for h in left] == pytest.approx([h.score for h in right], abs=1e-5)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_averaged_branch_scores_rank_exactly_as_the_branch_vector_matrix(seed: int) -> None:
    grown = grown_memory(seed, inserts=120, removals=25)
    fast, slow = twin_memories(grown)
    for vector, text in queries(seed, 12):
        for strategy in STRATEGIES:
            same_hits(fast, slow, vector, text, strategy=strategy)
            same_hits(fast, slow, vector, text, strategy=strategy, expand=True)
        same_hits(fast, slow, vector, text, where=RecallFilter(kind="summary"))
        same_hits(fast, slow, vector, text, strategy="collapsed", where=RecallFilter(kind="summary"))
        same_hits(fast, slow, vector, text, where=RecallFilter(time_from=1000.0 + 60 * 50), max_tokens=60)
    # Grown further, node by node, they still agree (the arrays follow inserts after a load).
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(5, DIM))
    for i in range(200, 230):
        leaf = random_leaf(rng, i, centres)
        fast.add_leaf(copy.deepcopy(leaf))
        slow.add_leaf(copy.deepcopy(leaf))
    # Branch ids are random: compare through a reload of the fast memory's own nodes.
    again_fast, again_slow = twin_memories(fast)
    for vector, text in queries(seed + 7, 6):
        for strategy in STRATEGIES:
            same_hits(fast, again_slow, vector, text, strategy=strategy)
            same_hits(again_fast, again_slow, vector, text, strategy=strategy)


def test_a_memory_grown_node_by_node_recalls_as_the_same_memory_reloaded() -> None:
    grown = grown_memory(11, inserts=150, removals=40)
    reloaded = Memory(DIM)
    reloaded.load(
        copy.deepcopy(list(grown.leaves.values())),
        copy.deepcopy([*grown.semantic.branches.values(), *grown.temporal.branches.values()]),
    )
    for vector, text in queries(11, 10):
        for strategy in STRATEGIES:
            same_hits(grown, reloaded, vector, text, strategy=strategy)


def test_a_load_given_the_leaves_vectors_as_one_matrix_equals_one_from_each_leaf_s_vector() -> None:
    grown = grown_memory(12, inserts=150, removals=40)
    leaves = sorted(grown.leaves.values(), key=lambda leaf: leaf.seq)
    branches = [*grown.semantic.branches.values(), *grown.temporal.branches.values()]
    matrix = np.stack([leaf.vector for leaf in leaves])
    each, whole = Memory(DIM), Memory(DIM)
    each.load(copy.deepcopy(leaves), copy.deepcopy(branches))
    taken = copy.deepcopy(leaves)
    whole.load(taken, copy.deepcopy(branches), vectors=matrix)
    assert np.array_equal(whole.leaf_index.vectors(), each.leaf_index.vectors())
    assert all(np.array_equal(leaf.vector, row) for leaf, row in zip(taken, matrix, strict=True))
    for vector, text in queries(12, 8):
        for strategy in STRATEGIES:
            same_hits(each, whole, vector, text, strategy=strategy)
    # A matrix that does not follow the leaves in seq order is refused, the memory left as it was.
    shuffled = [taken[1], taken[0], *taken[2:]]
    with pytest.raises(ValueError, match="seq order"):
        whole.load(shuffled, copy.deepcopy(branches), vectors=matrix)
    with pytest.raises(ValueError, match="one per leaf"):
        whole.load(taken, copy.deepcopy(branches), vectors=matrix[:-1])
    assert len(whole.leaves) == len(leaves)
    same_hits(each, whole, *queries(13, 1)[0])


def test_bm25_mapped_to_leaf_rows_equals_the_lexical_scores_by_id() -> None:
    memory = grown_memory(5, inserts=80, removals=30)
    for text in ["coffee beans", "jazz", "hiking alps trail python", "nothing matches zzz"]:
        found = Ranker(memory).lexical_rows(text)
        expected = memory.lexical.scores(text)
        if found is None:
            assert expected == {}
            continue
        rows, values = found
        by_id = {memory.leaf_index.id_at(int(r)): float(v) for r, v in zip(rows, values, strict=True)}
        assert by_id == expected


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "remove"]), st.integers(0, 30), st.lists(st.sampled_from(WORDS))),
        max_size=80,
    )
)
def test_bm25_built_in_bulk_scores_exactly_as_built_one_by_one(
    ops: list[tuple[str, int, list[str]]],
) -> None:
    one_by_one = LexicalIndex()
    documents: dict[str, str] = {}
    for op, number, words in ops:
        doc_id = f"d{number}"
        if op == "add":
            one_by_one.add(doc_id, " ".join(words))
            documents.pop(doc_id, None)
            documents[doc_id] = " ".join(words)
        else:
            one_by_one.remove(doc_id)
            documents.pop(doc_id, None)
    bulk = LexicalIndex()
    bulk.add_many(documents.items())
    half = LexicalIndex()
    items = list(documents.items())
    for doc_id, text in items[: len(items) // 2]:
        half.add(doc_id, text)
    half.add_many(items[len(items) // 2 :])
    for query in [*WORDS, "coffee jazz tomato", "absent"]:
        assert bulk.scores(query) == pytest.approx(one_by_one.scores(query), rel=1e-12)
        assert half.scores(query) == bulk.scores(query)


TRICKY_WORDS = [
    *["Caroline's", "self-care", "don't", "RUNNING", "hikes", "the", "a-b-c", "2022", "ﬁne"],
    *["Straße", "naïve", "’s", "x-", "-y", "it's", "boxes", "stories"],
    *["看護師", "私", "PostgreSQLを使う", "上海-x", "カタカナ's", "한국어"],
]
CJK = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"


def reference_tokenize(text: str, stemming: bool = True) -> list[str]:
    """The tokenizer as it was before its word cache (memtree_mcp/core/indexes/lexical.py, git history),
    with the character pairs of CJK runs (issue 29) written out plainly."""
    normal = unicodedata.normalize("NFKC", text).translate(
        str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2010": "-", "\u2011": "-"})
    )
    terms: list[str] = []
    words: list[str] = []
    for match in re.finditer(r"[^\W_]+(?:['\-][^\W_]+)*", normal.casefold()):
        for piece in re.split(f"([{CJK}]+)", match.group()):
            if re.fullmatch(f"[{CJK}]+", piece):
                words.extend(["\x00" + piece[i : i + 2] for i in range(max(1, len(piece) - 1))])
            elif piece.strip("'-"):
                words.append(piece.strip("'-") if re.search(f"[{CJK}]", match.group()) else piece)
    for word in words:
        if word.startswith("\x00"):
            terms.append(word[1:])
            continue
        if word.endswith("'s"):
            word = word[:-2]
        if word in STOPWORDS:
            continue
        parts = word.split("-") if "-" in word else []
        for piece in [word, *parts]:
            if piece in STOPWORDS:
                continue
            terms.append(stem(piece) if stemming else piece)
    return terms


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=200),
        st.text(alphabet=st.characters(max_codepoint=127), max_size=200),
        st.lists(
            st.sampled_from(TRICKY_WORDS),
            max_size=12,
        ).map(" ".join),
    ),
    st.booleans(),
)
def test_the_cached_tokenizer_yields_exactly_what_the_plain_one_does(text: str, stemming: bool) -> None:
    assert tokenize(text, stemming=stemming) == reference_tokenize(text, stemming)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["upsert", "remove", "extend"]), st.integers(0, 40)), max_size=120),
    st.integers(1, 8),
)
def test_the_vector_index_equals_a_plain_dict_of_vectors(ops: list[tuple[str, int]], capacity: int) -> None:
    rng = np.random.default_rng(len(ops))
    index = VectorIndex(DIM, capacity=capacity)
    naive: dict[str, np.ndarray] = {}
    for op, number in ops:
        node_id = f"n{number}"
        vector = rng.normal(size=DIM).astype(np.float32)
        if op == "upsert":
            index.upsert(node_id, vector)
            naive[node_id] = vector
        elif op == "remove":
            moved = index.remove(node_id)
            naive.pop(node_id, None)
            assert moved is None or index.id_at(index.row(moved)) == moved
        else:
            fresh = [f"x{number}-{len(naive)}", f"y{number}-{len(naive)}"]
            if any(f in naive for f in fresh):
                continue
            block = rng.normal(size=(2, DIM)).astype(np.float32)
            index.extend(fresh, block)
            naive.update(zip(fresh, block, strict=True))
    assert sorted(index.ids()) == sorted(naive) and len(index) == len(naive)
    for node_id, vector in naive.items():
        np.testing.assert_array_equal(index.vectors()[index.row(node_id)], vector)
    query = rng.normal(size=DIM).astype(np.float32)
    ids, scores = index.scores(query)
    for node_id, score in zip(ids, scores, strict=True):
        assert score == pytest.approx(float(naive[node_id] @ query), rel=1e-5, abs=1e-5)
    expected = sorted(naive, key=lambda n: (-float(naive[n] @ query), n))[:5]
    assert [n for n, _ in index.search(query, 5, min_score=-np.inf)] == expected


def test_extend_refuses_ids_already_indexed() -> None:
    index = VectorIndex(DIM)
    index.upsert("a", np.ones(DIM, dtype=np.float32))
    with pytest.raises(ValueError):
        index.extend(["a"], np.ones((1, DIM), dtype=np.float32))
    with pytest.raises(ValueError):
        index.extend(["b", "b"], np.ones((2, DIM), dtype=np.float32))
    assert index.ids() == ["a"]


@pytest.mark.parametrize("seed", [3, 8])
def test_the_timeline_grown_leaf_by_leaf_equals_one_built_at_once(seed: int) -> None:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(5, DIM))
    memory = Memory(DIM)
    memory.timeline()  # from now on it grows at its end
    for i in range(90):
        memory.add_leaf(random_leaf(rng, i, centres))
    grown = memory.timeline()
    built = Timeline.build(memory.leaves, memory.temporal.gap_seconds, memory.leaf_index, memory.calendar)
    np.testing.assert_array_equal(grown.rows, built.rows)
    np.testing.assert_array_equal(grown.segment, built.segment)
    assert built.segment[-1] > 0  # sessions and silences did cut it


def test_kept_children_matrices_grow_the_same_semantic_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    from memtree_mcp.core.trees import semantic

    def build(min_children: int) -> tuple[dict[str, object], dict[str, str], int]:
        monkeypatch.setattr(semantic, "MATRIX_MIN_CHILDREN", min_children)
        rng = np.random.default_rng(21)
        centres = rng.normal(size=(4, DIM))
        numbers = iter(range(10**6))
        leaves: dict[str, Leaf] = {}
        tree = semantic.SemanticTree(leaves, DIM, new_id=lambda: f"b{next(numbers)}")
        for i in range(260):
            leaf = random_leaf(rng, i, centres)
            leaves[leaf.id] = leaf
            tree.insert(leaf)
            if i % 40 == 39:  # a removal now and then drops the kept matrices
                gone = sorted(leaves)[int(rng.integers(len(leaves)))]
                tree.remove(gone)
                del leaves[gone]
        shape = {
            b.id: (b.parent, b.depth, list(b.children), b.text, b.label, b.leaf_count, b.vector.tobytes())
            for b in tree.branches.values()
            if b.vector is not None
        }
        return shape, dict(tree.parent_of), tree.height

    kept = build(2)  # every branch with two children or more keeps its matrix
    plain = build(10**9)  # none does: every descent stacks its children's vectors afresh
    assert kept == plain


Wording = str | tuple[str, str]


def reference_label_for(texts: list[Wording], siblings: list[Wording], words: int = 3) -> str:
    """Labels computed plainly: every word re-read from every text, every sibling scanned per word."""
    from memtree_mcp.core.trees.extractive import STOPWORDS as LABEL_STOPWORDS

    def words_of(wording: Wording) -> list[str]:
        text = wording if isinstance(wording, str) else " . ".join(wording)  # a branch: label, text
        found: list[str] = []
        for raw in re.findall(r"\w+(?:['\u2019.\-]\w+)*", text):
            word = raw.replace("\u2019", "'").removesuffix("'s")
            if not re.fullmatch(r"[A-Z][A-Z0-9]{1,5}", word):
                word = word.lower()
                if len(word) < 3:
                    continue
            if word.lower() not in LABEL_STOPWORDS and word not in found:
                found.append(word)
        return found

    weights: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for place, text in enumerate(texts[:32]):
        for word in words_of(text):
            weights[word] = weights.get(word, 0.0) + 1.0 / (1 + place) ** 0.5
            first_seen.setdefault(word, len(first_seen))
    sibling_words = [set(words_of(text)) for text in siblings]

    def score(word: str) -> float:
        if not sibling_words:
            return weights[word]
        using = sum(word in seen for seen in sibling_words)
        return weights[word] * math.log((len(sibling_words) + 1) / (using + 1))

    ranked = sorted(weights, key=lambda w: (-score(w), -weights[w], first_seen[w]))
    return ", ".join(ranked[:words])


LABEL_TEXT = st.lists(
    st.sampled_from([*WORDS, "the", "Jazz", "don't", "x", "well-being", "CI", "orion-160", "Miso's"])
).map(" ".join)
LABEL_TEXTS = st.lists(st.one_of(LABEL_TEXT, st.tuples(LABEL_TEXT, LABEL_TEXT)), max_size=8)


@settings(max_examples=300, deadline=None)
@given(LABEL_TEXTS, LABEL_TEXTS)
def test_labels_from_the_word_cache_equal_the_plain_count(
    texts: list[Wording], siblings: list[Wording]
) -> None:
    from memtree_mcp.core.trees.extractive import label_for

    assert label_for(texts, siblings) == reference_label_for(texts, siblings)
    assert label_for(texts, siblings, 5) == reference_label_for(texts, siblings, 5)


def reference_read(arrow: object) -> tuple[dict[str, object], dict[str, object]]:
    """Live nodes straight from the rows: each id's highest rev, deletions dropped, row by row."""
    from memtree_mcp.store.rows import DELETED, branch_from_row, leaf_from_row

    latest: dict[str, dict[str, object]] = {}
    for row in arrow.to_pylist():  # type: ignore[attr-defined]
        seen = latest.get(row["id"])
        if seen is None or row["rev"] > seen["rev"]:  # type: ignore[operator]
            latest[row["id"]] = row
    leaves: dict[str, object] = {}
    branches: dict[str, object] = {}
    for node_id, row in latest.items():
        if row["kind"] == DELETED:
            continue
        if row["kind"] == "leaf":
            row["vector"] = np.frombuffer(row["embedding"], dtype=np.float32)  # type: ignore[arg-type]
            leaves[node_id] = leaf_from_row(row)
        else:
            branches[node_id] = branch_from_row(row)
    return leaves, branches


def node_picture(node: object) -> tuple[object, ...]:
    fields = sorted(f for f in type(node).__slots__ if f != "vector")  # type: ignore[attr-defined]
    vector = node.vector  # type: ignore[attr-defined]
    return (*[getattr(node, f) for f in fields], None if vector is None else vector.tobytes())


def test_the_column_wise_read_equals_the_rows_read_one_by_one(
    settings,
    embedder,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    from memtree_mcp.service import MemoryService
    from memtree_mcp.store import table as tables

    monkeypatch.setattr(tables, "COMPACT_EVERY", 4)
    monkeypatch.setattr(tables, "SQUASH_SLACK", 10)
    service = MemoryService(settings, embedder=embedder)
    notes = [f"Note {i} about {WORDS[i % len(WORDS)]} and {WORDS[(3 * i) % len(WORDS)]}." for i in range(24)]
    for i, note in enumerate(notes):
        service.remember(note, session=f"s{i // 6}", tags=["t"] if i % 4 == 0 else [])
        if i % 7 == 6:
            listed = service.forget(query=notes[i - 3]).candidates
            service.forget(ids=[c.id for c in listed])  # deletion rows, dissolved branches
        table = service.spaces["default"].table
        assert table is not None
        snapshot = table.read()
        leaves, branches = reference_read(table.lance.to_arrow())
        assert {leaf.id: node_picture(leaf) for leaf in snapshot.leaves} == {
            k: node_picture(v) for k, v in leaves.items()
        }
        assert {b.id: node_picture(b) for b in snapshot.branches} == {
            k: node_picture(v) for k, v in branches.items()
        }
        assert [leaf.seq for leaf in snapshot.leaves] == sorted(leaf.seq for leaf in snapshot.leaves)
    service.close()
