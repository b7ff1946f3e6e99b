"""The LanceDB store: what is written comes back identical, and a failed write changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from memtree_mcp.config import Settings
from memtree_mcp.errors import EmbedderMismatch, InvalidInput, StoreError
from memtree_mcp.service import MemoryService
from memtree_mcp.store import lance
from memtree_mcp.store.lance import LanceStore
from tests.tree_checks import assert_semantic_invariants, assert_temporal_invariants, memory_state

FACTS = [
    "Biscuit is my golden retriever; I adopted him last spring.",
    "Biscuit loves swimming in the lake behind our house.",
    "I work as a backend engineer, mostly Rust and Postgres.",
    "Our API is deployed with Kubernetes on AWS in eu-west-1.",
    "Biscuit had his vaccinations at the vet on Tuesday.",
    "My sister Ana lives in Lisbon and teaches physics.",
    "The staging database is Postgres 16 on port 5433.",
    "I am learning to play the cello; lessons are on Thursdays.",
    "Ana visited us in March and we hiked in the Alps.",
    "We switched the CI from Jenkins to GitHub Actions last year.",
]


def test_a_store_reopened_rebuilds_exactly_the_same_tree(settings: Settings, embedder) -> None:  # type: ignore[no-untyped-def]
    first = MemoryService(settings, embedder=embedder)
    for i, fact in enumerate(FACTS):
        first.remember(
            fact,
            role="user",
            tags=["t"] if i % 2 else [],
            session=f"s{i % 3}",
            timestamp=f"2024-05-{i + 1:02d}T10:00:00Z",
        )
    before = first.memory()
    assert before is not None
    assert_semantic_invariants(before.semantic)
    expected = memory_state(before)
    first.close()

    reopened = MemoryService(settings, embedder=embedder).memory()
    assert reopened is not None
    assert memory_state(reopened) == expected
    assert reopened.next_seq == len(FACTS)


def test_a_failed_commit_leaves_the_previous_state(
    settings: Settings,
    embedder,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    service = MemoryService(settings, embedder=embedder)
    for fact in FACTS[:5]:
        service.remember(fact)
    memory = service.memory()
    assert memory is not None
    expected = memory_state(memory)
    space = service.spaces["default"]
    assert space.table is not None
    version = space.table.latest_version()

    def broken_add(*_args: object, **_kwargs: object) -> object:
        raise OSError("disk full")

    monkeypatch.setattr(space.table._table, "add", broken_add)
    with pytest.raises(StoreError, match="disk full"):
        service.remember("This fact never reaches the disk.")
    monkeypatch.undo()

    assert space.table.latest_version() == version
    after = service.memory()
    assert after is not None and memory_state(after) == expected
    assert all(h.text != "This fact never reaches the disk." for h in service.recall("fact disk", k=20).hits)
    # and the memory keeps working
    assert not service.remember("This fact does reach the disk.").deduplicated


def test_a_store_refuses_another_embedder(settings: Settings, embedder) -> None:  # type: ignore[no-untyped-def]
    MemoryService(settings, embedder=embedder).remember("A fact.")
    store = LanceStore(settings.home, "local:some-other-model", 384)
    with pytest.raises(EmbedderMismatch, match="some-other-model") as caught:
        store.open("default", create=False)
    assert "MEMTREE_EMBEDDER" in str(caught.value)
    with pytest.raises(EmbedderMismatch):
        LanceStore(settings.home, embedder.identity, 512).open("default", create=False)


def test_a_second_process_sees_what_the_first_wrote(settings: Settings, embedder) -> None:  # type: ignore[no-untyped-def]
    reader = MemoryService(settings, embedder=embedder)
    writer = MemoryService(settings, embedder=embedder)
    writer.remember("The office wifi password rotates every Monday.")
    assert [h.text for h in reader.recall("office wifi", k=1).hits] == [
        "The office wifi password rotates every Monday."
    ]
    writer.remember("The office moved to the fifth floor.")
    texts = [h.text for h in reader.recall("office floor", k=5).hits if h.kind == "leaf"]
    assert "The office moved to the fifth floor." in texts


def test_rows_hold_the_vectors_bit_for_bit(settings: Settings, embedder) -> None:  # type: ignore[no-untyped-def]
    service = MemoryService(settings, embedder=embedder)
    stored = service.remember("Exact float32 round trip.")
    table = service.spaces["default"].table
    assert table is not None
    snapshot = table.read()
    (leaf,) = [leaf for leaf in snapshot.leaves if leaf.id == stored.ids[0]]
    expected = embedder.embed_batch(["Exact float32 round trip."])[0]
    assert leaf.vector.dtype == np.float32
    np.testing.assert_array_equal(leaf.vector, expected)


def test_compaction_and_squashing_keep_every_memory_identical(
    settings: Settings,
    embedder,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setattr(lance, "COMPACT_EVERY", 3)
    monkeypatch.setattr(lance, "SQUASH_SLACK", 5)
    service = MemoryService(settings, embedder=embedder)
    for fact in FACTS + [f"Extra note number {i} about the garden." for i in range(10)]:
        service.remember(fact)
    memory = service.memory()
    assert memory is not None
    expected = memory_state(memory)
    table = service.spaces["default"].table
    assert table is not None
    live = len(memory.leaves) + len(memory.semantic.branches) + len(memory.temporal.branches)
    # Every remember appended a revision of each row it changed; squashing dropped the superseded ones.
    assert table._table.count_rows() <= 2 * live + 5
    service.close()

    reopened = MemoryService(settings, embedder=embedder).memory()
    assert reopened is not None and memory_state(reopened) == expected


WRITER = """
import sys
from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService
service = MemoryService(Settings(home=sys.argv[1]))
for i in range(15):
    service.remember(f"Writer {sys.argv[2]} note number {i} about topic {i % 5}.")
"""


@pytest.mark.slow
def test_three_processes_writing_one_store_lose_nothing(settings: Settings, embedder) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, settings.home, name], stderr=subprocess.PIPE)
        for name in ("a", "b", "c")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err.decode()
    memory = MemoryService(settings, embedder=embedder).memory()
    assert memory is not None
    texts = sorted(leaf.text for leaf in memory.leaves.values())
    expected = sorted(f"Writer {n} note number {i} about topic {i % 5}." for n in "abc" for i in range(15))
    assert texts == expected
    assert sorted(leaf.seq for leaf in memory.leaves.values()) == list(range(45))
    assert_semantic_invariants(memory.semantic)
    assert_temporal_invariants(memory.temporal)


def test_history_and_as_of_show_earlier_versions_and_restore_brings_back_a_forgotten_memory(
    settings: Settings,
    embedder,  # type: ignore[no-untyped-def]
) -> None:
    service = MemoryService(settings, embedder=embedder)
    service.remember("The deploy freeze starts on December 20.")
    service.remember("The office closes on December 24.")
    before_forget = service.history()[-1][0]
    fact = service.recall("deploy freeze", k=1, kind="leaf").hits[0]
    service.forget(node_id=fact.id)
    service.remember("Nothing else is scheduled.")
    assert all("freeze" not in h.text for h in service.recall("deploy freeze", k=5).hits)

    # as_of shows the memory as it was, less what was forgotten since
    then = service.recall("December", k=5, kind="leaf", as_of=str(before_forget)).hits
    assert [h.text for h in then] == ["The office closes on December 24."]
    # a time picks the last version written by then (times have one-second resolution)
    assert service.recall("deploy freeze", k=3, as_of="2999-01-01") == service.recall("deploy freeze", k=3)

    versions_before = len(service.history())
    restored, latest = service.restore(str(before_forget))
    assert restored == before_forget and latest > before_forget
    assert len(service.history()) == versions_before + 1  # a new version; none destroyed
    texts = {h.text for h in service.recall("deploy freeze", k=5, kind="leaf").hits}
    assert "The deploy freeze starts on December 20." in texts
    assert "Nothing else is scheduled." not in {leaf.text for leaf in service.memory().leaves.values()}  # type: ignore[union-attr]
    # the restored store keeps working, and reloads identically
    service.remember("The freeze ends on January 3.")
    again = MemoryService(settings, embedder=embedder).memory()
    assert again is not None and memory_state(again) == memory_state(service.memory())  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="no version 9999"):
        service.restore("9999")
    with pytest.raises(InvalidInput, match="no version as old"):
        service.recall("x", as_of="1999-01-01")


def test_a_namespace_quota_refuses_more_memories(settings: Settings, embedder) -> None:  # type: ignore[no-untyped-def]
    small = MemoryService(settings.model_copy(update={"max_memories": 2}), embedder=embedder)
    small.remember("One.")
    small.remember("Two.")
    with pytest.raises(InvalidInput, match="quota is 2"):
        small.remember("Three.")
    assert small.remember("Two.").deduplicated  # a duplicate adds nothing, so it still passes
    assert len(small.memory().leaves) == 2  # type: ignore[union-attr]
