"""doctor --repair makes whole a namespace that writers without a shared lock damaged (as servers on
several machines did on a bucket before the lease): a memory stored twice, branches that lost a
memory another writer added, a summary quoting a memory another writer forgot.

The damage is made the way it happened: writers from before commit markers (store/fences.py), one
of which does not follow the table before it writes, so it builds its change on trees that miss
the other's commits. (With markers, such a commit does not count and is done again:
tests/test_acknowledged.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memtree_mcp.config import Settings
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from tests.tree_checks import assert_semantic_invariants, assert_temporal_invariants

FACTS = [
    "The payments service is written in Go and deployed on Fridays.",
    "The staging database is Postgres 16 on port 5433.",
    "Biscuit the golden retriever sees the vet every spring.",
    "The payments service retries a failed charge three times.",
]


def test_doctor_repairs_what_unshared_locks_left_and_keeps_every_memory(
    tmp_path: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time
    import uuid

    from memtree_mcp.store import table as tables
    from memtree_mcp.store.rows import deletion_row

    # Commits end without a marker, as before markers: a deletion of an id no node has.
    monkeypatch.setattr(
        tables,
        "fence_row",
        lambda rev: {**deletion_row("m" + uuid.uuid4().hex[:15], time.time()), "rev": rev},
    )
    home = str(tmp_path / "store")
    first = MemoryService(
        Settings(home=home, namespace="default", lock_dir=str(tmp_path / "a")), embedder=embedder
    )
    blind = MemoryService(
        Settings(home=home, namespace="default", lock_dir=str(tmp_path / "b")), embedder=embedder
    )
    kept = [first.remember(fact).ids[0] for fact in FACTS[:2]]
    forgotten = first.remember("The payments service's old charge limit was 500 euros.").ids[0]
    assert blind.look_up(
        RecallRequest("payments", k=1)
    ).hits  # reads the table once, then never follows again
    monkeypatch.setattr(blind.spaces, "follow", lambda space: None)
    twice = first.remember(FACTS[2]).ids[0]
    first.forget(ids=[forgotten])
    kept.append(twice)
    # Built on trees that still hold neither the forget nor the fact remembered meanwhile: the same
    # fact stored again, the forgotten memory quoted in the branches it rewrites.
    again = blind.remember(FACTS[2]).ids[0]
    assert again != twice
    kept.append(blind.remember(FACTS[3]).ids[0])

    checker = MemoryService(
        Settings(home=home, namespace="default", lock_dir=str(tmp_path / "c")), embedder=embedder
    )
    problems = [str(p) for p in checker.upkeep.doctor()]
    assert any("stores the text of" in p for p in problems), problems
    assert any(f"quotes the forgotten memory {forgotten}" in p for p in problems), problems
    assert checker.upkeep.doctor(repair=True)
    leftover = checker.upkeep.doctor()
    assert leftover == []
    memory = checker.memory()
    assert memory is not None
    assert set(memory.leaves) == set(kept)  # every memory kept once, the forgotten one gone
    assert sorted(leaf.text for leaf in memory.leaves.values()) == sorted(
        [FACTS[0], FACTS[1], FACTS[2], FACTS[3]]
    )
    assert_semantic_invariants(memory.semantic)
    assert_temporal_invariants(memory.temporal)
    texts = [
        b.text + b.summary for tree in (memory.semantic, memory.temporal) for b in tree.branches.values()
    ]
    assert not any("old charge limit" in text for text in texts)
    for service in (first, blind, checker):
        service.close()
