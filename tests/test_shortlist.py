"""Recall in two stages (issue 50): a large namespace's memories in LanceDB's vector index, a shortlist
from it, and the tree-aware ranking over the shortlist.

MEMTREE_INDEX_FROM is set low here so that a few dozen memories count as large; the index is
synced by calling what the background thread calls (``service.indexes.sync``), so no test waits on
a timer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from filelock import FileLock

from memtree_mcp.config import Settings
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.recall import RankRequest, rank
from memtree_mcp.core.ranking.shortlist import Shortlist
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.store.leaf_table import INDEX_DIR, LeafTable

SUBJECTS = [
    "the nightly backup job copies the billing database to cold storage at 02:00",
    "our staging cluster runs three nodes behind a single load balancer",
    "Priya prefers code reviews in the morning before stand-up",
    "the mobile app's crash reports go to the on-call channel",
    "we pin numpy below 3 until the wheels for arm64 land",
    "the design system uses an 8 pixel spacing grid",
    "customer exports are limited to 50,000 rows per request",
    "the search service caches queries for ten minutes",
]
FILLER = [
    f"note {i}: the {colour} {thing} was discussed in meeting {i} about {topic}"
    for i, (colour, thing, topic) in enumerate(
        (c, t, p)
        for c in ("red", "blue", "green", "amber", "grey")
        for t in ("ticket", "chart", "widget", "report")
        for p in ("hiring", "budgets", "the offsite")
    )
]


def many(service: MemoryService, namespace: str = "default") -> None:
    for i, text in enumerate(FILLER + SUBJECTS):
        service.remember(text, timestamp=f"2026-03-{1 + i % 28:02d}T09:{i % 60:02d}:00Z", namespace=namespace)


@pytest.fixture
def large(tmp_path: Path, embedder) -> Iterator[MemoryService]:  # type: ignore[no-untyped-def]
    """A service on which 40 memories make a namespace large (recalled through its index)."""
    service = MemoryService(Settings(home=str(tmp_path / "home"), index_from=40), embedder=embedder)
    many(service)
    yield service
    service.close()


def first_ids(service: MemoryService, query: str, k: int = 5) -> list[str]:
    return [hit.id for hit in service.look_up(RecallRequest(query, k=k, min_relevance=0.0)).hits]


def test_a_large_namespace_is_recalled_through_its_index_with_the_exact_answers(
    large: MemoryService, tmp_path: Path, embedder
) -> None:  # type: ignore[no-untyped-def]
    large.indexes.sync("default")
    table = LeafTable(str(tmp_path / "home"), "default", 384)
    assert table.indexed()
    assert len(table.ids()) == len(FILLER) + len(SUBJECTS)
    # The index is a table of its own, never a namespace.
    assert [name for name, _ in large.namespaces()] == ["default"]
    shortlist = large.indexes.shortlist("default", [np.ones(384, dtype=np.float32) / np.sqrt(384)])
    assert shortlist is not None and len(shortlist.ids) > 0

    exact = MemoryService(Settings(home=str(tmp_path / "home")), embedder=embedder)
    try:
        for query in ("when does the backup run", "how many rows can a customer export", "Priya reviews"):
            assert first_ids(large, query, 3) == first_ids(exact, query, 3), query
    finally:
        exact.close()


def test_a_memory_remembered_after_the_sync_is_found_at_once_then_indexed(
    large: MemoryService, tmp_path: Path
) -> None:
    large.indexes.sync("default")
    stored = large.remember("the release train leaves every second Thursday at noon")
    hits = large.look_up(RecallRequest("when does the release train leave", k=3)).hits
    assert hits and hits[0].id == stored.ids[0]
    large.indexes.sync("default")  # only what was remembered since: no comparison of every id
    assert stored.ids[0] in LeafTable(str(tmp_path / "home"), "default", 384).ids()
    hits = large.look_up(RecallRequest("when does the release train leave", k=3)).hits
    assert hits and hits[0].id == stored.ids[0]


def test_a_forgotten_memory_is_never_recalled_and_leaves_the_index(
    large: MemoryService, tmp_path: Path
) -> None:
    large.indexes.sync("default")
    target = first_ids(large, "nightly backup of the billing database", 1)[0]
    large.forget(ids=[target])
    assert target not in first_ids(large, "nightly backup of the billing database", 10)
    large.indexes.sync("default")
    assert target not in LeafTable(str(tmp_path / "home"), "default", 384).ids()


def test_a_purge_leaves_no_file_of_the_index_holding_forgotten_text(
    large: MemoryService, tmp_path: Path
) -> None:
    large.indexes.sync("default")
    words = b"pin numpy below 3 until the wheels"
    target = first_ids(large, "which numpy version do we pin", 1)[0]
    large.forget(ids=[target])
    large.upkeep.purge("default")
    held = [path for path in (tmp_path / "home").rglob("*") if path.is_file() and words in path.read_bytes()]
    assert held == []
    # The next sync builds the index again from the trees, without it.
    large.indexes.sync("default")
    assert target not in LeafTable(str(tmp_path / "home"), "default", 384).ids()
    assert (tmp_path / "home" / INDEX_DIR).is_dir()


def test_while_another_process_writes_the_index_what_it_lacks_is_scored_exactly(
    large: MemoryService, tmp_path: Path
) -> None:
    large.indexes.sync("default")
    table = LeafTable(str(tmp_path / "home"), "default", 384)
    with FileLock(str(table.lock_path)):  # another process syncing
        stored = large.remember("the on-call rotation changes hands on Mondays at nine")
        large.indexes.sync("default")
        assert stored.ids[0] not in table.ids()
        hits = large.look_up(RecallRequest("when does the on-call rotation change hands", k=3)).hits
        assert hits and hits[0].id == stored.ids[0]


def test_a_small_namespace_is_ranked_exactly_and_builds_no_index(
    service: MemoryService, settings: Settings
) -> None:
    many(service)
    assert service.indexes.shortlist("default", [np.zeros(384, dtype=np.float32)]) is None
    assert not (Path(settings.home) / INDEX_DIR).exists()


def test_the_threshold_must_be_a_positive_count() -> None:
    with pytest.raises(ValueError, match="index_from"):
        Settings(index_from=0)


@pytest.mark.parametrize("strategy", ["gather", "hybrid"])
def test_a_shortlist_of_every_memory_ranks_as_the_exact_path(strategy: str, embedder) -> None:  # type: ignore[no-untyped-def]
    memory = Memory(384)
    texts = FILLER + SUBJECTS
    vectors = embedder.embed_batch(texts)
    from memtree_mcp.core.trees.model import Leaf

    for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        memory.add_leaf(
            Leaf(id=f"m{i:04d}", text=text, vector=vector, seq=i, timestamp=1_700_000_000.0 + 60 * i)
        )
    query = embedder.embed_batch(["which numpy version is pinned"])[0]
    asked = RankRequest(k=10, query=query, query_text="which numpy version is pinned", strategy=strategy)
    exact = rank(memory, asked)
    listed = rank(memory, RankRequest(**{**_fields(asked), "shortlist": Shortlist(ids=tuple(memory.leaves))}))
    assert [h.id for h in listed] == [h.id for h in exact]
    assert [h.score for h in listed] == pytest.approx([h.score for h in exact], abs=1e-4)


def _fields(request: RankRequest) -> dict[str, object]:
    return {name: getattr(request, name) for name in request.__dataclass_fields__}
