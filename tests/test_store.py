"""The LanceDB store: what is written comes back identical, and a failed write changes nothing."""

from __future__ import annotations

import lancedb
import numpy as np
import pytest

from memtree_mcp.config import Settings
from memtree_mcp.errors import EmbedderMismatch, InvalidInput, StoreError
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.store import arrow
from memtree_mcp.store import table as tables
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

    monkeypatch.setattr(space.table.lance, "add", broken_add)
    with pytest.raises(StoreError, match="disk full"):
        service.remember("This fact never reaches the disk.")
    monkeypatch.undo()

    assert space.table.latest_version() == version
    after = service.memory()
    assert after is not None and memory_state(after) == expected
    assert all(
        h.text != "This fact never reaches the disk."
        for h in service.look_up(RecallRequest("fact disk", k=20)).hits
    )
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
    assert [h.text for h in reader.look_up(RecallRequest("office wifi", k=1)).hits] == [
        "The office wifi password rotates every Monday."
    ]
    writer.remember("The office moved to the fifth floor.")
    texts = [h.text for h in reader.look_up(RecallRequest("office floor", k=5)).hits if h.kind == "leaf"]
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


def test_compaction_and_squashing_keep_every_memory_identical_and_the_history_kept(
    settings: Settings,
    embedder,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setattr(tables, "COMPACT_EVERY", 3)
    monkeypatch.setattr(tables, "SQUASH_SLACK", 5)
    service = MemoryService(settings, embedder=embedder)
    facts = FACTS + [f"Extra note number {i} about the garden." for i in range(10)]
    for fact in facts[:4]:
        service.remember(fact)
    early = service.upkeep.history()[-1][0]
    early_texts = sorted(leaf.text for leaf in service.memory().leaves.values())  # type: ignore[union-attr]
    for fact in facts[4:]:
        service.remember(fact)
    memory = service.memory()
    assert memory is not None
    expected = memory_state(memory)
    table = service.spaces["default"].table
    live = len(memory.leaves) + len(memory.semantic.branches) + len(memory.temporal.branches)
    # Within the history kept (a week by default) no commit is squashed away: every one can be read.
    assert table.row_count() > 2 * live + 5
    assert len(service.upkeep.history()) == len(facts)
    assert sorted(leaf.text for leaf in table.read(early).leaves) == early_texts
    then = service.look_up(RecallRequest("garden", k=20, kind="leaf", as_of=str(early))).hits
    assert then and {h.text for h in then} <= set(early_texts)

    service.close()

    # A process keeping no history squashes away what no commit it keeps needs.
    short = MemoryService(settings.model_copy(update={"retention": 0.0}), embedder=embedder)
    short.remember("A last note, written by a process that keeps no history.")
    memory = short.memory()
    assert memory is not None
    table = short.spaces["default"].table
    live = len(memory.leaves) + len(memory.semantic.branches) + len(memory.temporal.branches)
    assert table.row_count() <= 2 * live + 5
    assert [version for version, _ in short.upkeep.history()] == [table.rev]
    with pytest.raises(InvalidInput, match=f"no version {early}"):
        short.look_up(RecallRequest("garden", as_of=str(early)))
    expected = memory_state(memory)
    short.close()

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
    before_forget = service.upkeep.history()[-1][0]
    fact = service.look_up(RecallRequest("deploy freeze", k=1, kind="leaf")).hits[0]
    service.forget(node_id=fact.id)
    service.remember("Nothing else is scheduled.")
    assert all("freeze" not in h.text for h in service.look_up(RecallRequest("deploy freeze", k=5)).hits)

    # as_of shows the memory as it was, less what was forgotten since
    then = service.look_up(RecallRequest("December", k=5, kind="leaf", as_of=str(before_forget))).hits
    assert [h.text for h in then] == ["The office closes on December 24."]
    # a time picks the last version written by then (times have one-second resolution)
    assert service.look_up(RecallRequest("deploy freeze", k=3, as_of="2999-01-01")) == service.look_up(
        RecallRequest("deploy freeze", k=3)
    )

    versions_before = len(service.upkeep.history())
    restored, latest = service.upkeep.restore(str(before_forget))
    assert restored == before_forget and latest > before_forget
    assert len(service.upkeep.history()) == versions_before + 1  # a new version; none destroyed
    texts = {h.text for h in service.look_up(RecallRequest("deploy freeze", k=5, kind="leaf")).hits}
    assert "The deploy freeze starts on December 20." in texts
    assert "Nothing else is scheduled." not in {leaf.text for leaf in service.memory().leaves.values()}  # type: ignore[union-attr]
    # the restored store keeps working, and reloads identically
    service.remember("The freeze ends on January 3.")
    again = MemoryService(settings, embedder=embedder).memory()
    assert again is not None and memory_state(again) == memory_state(service.memory())  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="no version 9999"):
        service.upkeep.restore("9999")
    with pytest.raises(InvalidInput, match="no version as old"):
        service.look_up(RecallRequest("x", as_of="1999-01-01"))


def test_compaction_copies_leave_the_disk_but_every_commit_of_the_history_stays_restorable(
    settings: Settings,
    embedder,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tables, "COMPACT_EVERY", 3)
    service = MemoryService(settings, embedder=embedder)
    states = []
    for fact in FACTS:
        service.remember(fact)
        states.append(memory_state(service.memory()))  # type: ignore[arg-type]
    biscuit = service.look_up(RecallRequest("golden retriever Biscuit adopted", k=1, kind="leaf")).hits[0]
    service.forget(node_id=biscuit.id)
    # Three compactions, each a copy of the table; LanceDB keeps only the latest versions' files.
    assert len(lancedb.connect(settings.home).open_table("default").list_versions()) <= 3
    history = [version for version, _ in service.upkeep.history()]
    assert len(history) == len(FACTS) + 1  # every commit, the forget included
    for version, state in zip(history, states, strict=False):
        then = MemoryService(settings, embedder=embedder)
        then.upkeep.restore(str(version))
        assert memory_state(then.memory()) == state  # type: ignore[arg-type]
    # The forgotten memory comes back with the last commit that held it.
    service.upkeep.restore(str(history[-2]))
    assert biscuit.text in {leaf.text for leaf in service.memory().leaves.values()}  # type: ignore[union-attr]


def test_a_namespace_quota_refuses_more_memories(settings: Settings, embedder) -> None:  # type: ignore[no-untyped-def]
    small = MemoryService(settings.model_copy(update={"max_memories": 2}), embedder=embedder)
    small.remember("One.")
    small.remember("Two.")
    with pytest.raises(InvalidInput, match="quota is 2"):
        small.remember("Three.")
    assert small.remember("Two.").deduplicated  # a duplicate adds nothing, so it still passes
    assert len(small.memory().leaves) == 2  # type: ignore[union-attr]


# -- the row format: only what cannot be derived --------------------------------------------------


def test_a_leaf_row_is_written_once_and_branch_rows_hold_no_vector(settings: Settings, embedder) -> None:  # type: ignore[no-untyped-def]
    service = MemoryService(settings, embedder=embedder)
    for fact in FACTS:
        service.remember(fact)  # each insert moves earlier leaves under new branches
    table = service.spaces["default"].table
    rows = table.lance.to_arrow()
    kinds = rows.column("kind").to_pylist()
    leaf_ids = [i for i, k in zip(rows.column("id").to_pylist(), kinds, strict=True) if k == "leaf"]
    assert sorted(leaf_ids) == sorted(set(leaf_ids)) and len(leaf_ids) == len(FACTS)
    blobs = rows.column("embedding").to_pylist()
    assert all((blob is not None) == (kind == "leaf") for blob, kind in zip(blobs, kinds, strict=True))
    # What the writer holds is what a reader derives: branch vectors within float32 rounding.
    memory = service.memory()
    reopened = MemoryService(settings, embedder=embedder).memory()
    assert memory is not None and reopened is not None
    assert memory_state(reopened) == memory_state(memory)
    for branch in [*memory.semantic.branches.values(), *memory.temporal.branches.values()]:
        loaded = reopened.branch(branch.id)
        assert loaded is not None and loaded.vector is not None and branch.vector is not None
        np.testing.assert_allclose(loaded.vector, branch.vector, atol=1e-6)
        assert loaded.cohesion == pytest.approx(branch.cohesion, abs=1e-6)


def schema_1_rows(memory, now: float) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    """The rows schema 1 wrote for every node of ``memory``: a vector on each, parents in both trees."""
    rows: list[dict[str, object]] = []
    for leaf in memory.leaves.values():
        rows.append(
            {
                "id": leaf.id, "rev": 0, "kind": "leaf", "tree": "shared",
                "semantic_parent": memory.semantic.parent_of[leaf.id],
                "temporal_parent": memory.temporal.parent_of[leaf.id],
                "children": [], "depth": memory.semantic.depth_of(leaf.id), "text": leaf.text, "label": "",
                "vector": leaf.vector, "cohesion": 1.0, "leaf_count": 1, "first_seq": leaf.seq,
                "last_seq": leaf.seq, "first_ts": leaf.timestamp, "last_ts": leaf.timestamp,
                "role": leaf.role, "tags": list(leaf.tags), "session": leaf.session, "metadata": "{}",
                "content_hash": leaf.content_hash, "created": leaf.created, "updated": now,
            }
        )  # fmt: skip
    for branch in [*memory.semantic.branches.values(), *memory.temporal.branches.values()]:
        rows.append(
            {
                "id": branch.id, "rev": 0, "kind": branch.kind, "tree": branch.tree,
                "semantic_parent": branch.parent if branch.tree == "semantic" else None,
                "temporal_parent": branch.parent if branch.tree == "temporal" else None,
                "children": list(branch.children), "depth": branch.depth, "text": branch.text,
                "label": branch.label, "vector": branch.vector, "cohesion": branch.cohesion,
                "leaf_count": branch.leaf_count, "first_seq": branch.first_seq, "last_seq": branch.last_seq,
                "first_ts": branch.first_ts, "last_ts": branch.last_ts, "role": None, "tags": [],
                "session": None, "metadata": "{}", "content_hash": None, "created": None, "updated": now,
            }
        )  # fmt: skip
    return rows


def schema_1(embedder: str, dimension: int):  # type: ignore[no-untyped-def]
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("rev", pa.int64(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("tree", pa.string(), nullable=False),
            pa.field("semantic_parent", pa.string()),
            pa.field("temporal_parent", pa.string()),
            pa.field("children", pa.list_(pa.string())),
            pa.field("depth", pa.int32()),
            pa.field("text", pa.string()),
            pa.field("label", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dimension)),
            pa.field("cohesion", pa.float64()),
            *[pa.field(n, pa.int64()) for n in ("leaf_count", "first_seq", "last_seq")],
            *[pa.field(n, pa.float64()) for n in ("first_ts", "last_ts")],
            pa.field("role", pa.string()),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("session", pa.string()),
            pa.field("metadata", pa.string()),
            pa.field("content_hash", pa.string()),
            pa.field("created", pa.float64()),
            pa.field("updated", pa.float64()),
        ],
        metadata={
            b"memtree.schema_version": b"1",
            b"memtree.embedder": embedder.encode(),
            b"memtree.dimension": str(dimension).encode(),
        },
    )


def test_a_schema_1_store_is_read_upgraded_on_first_write_and_its_history_starts_there(
    settings: Settings,
    embedder,  # type: ignore[no-untyped-def]
) -> None:
    import pyarrow as pa

    source = MemoryService(settings.model_copy(update={"home": settings.home + "-source"}), embedder=embedder)
    for fact in FACTS[:6]:
        source.remember(fact)
    memory = source.memory()
    assert memory is not None
    schema = schema_1(embedder.identity, embedder.dimension)
    db = lancedb.connect(settings.home)
    rows = pa.Table.from_pylist(schema_1_rows(memory, 1.0), schema=schema)
    db.create_table("default", data=rows, schema=schema)

    service = MemoryService(settings, embedder=embedder)
    read = service.memory()
    # Read as it is, the temporal tree built anew from the leaves (schema 5 groups by session).
    assert read is not None and memory_state(read, temporal_ids=False) == memory_state(
        memory, temporal_ids=False
    )
    assert service.spaces["default"].table.outdated
    service.remember(FACTS[6])  # upgraded first, then written
    table = service.spaces["default"].table
    on_disk = lancedb.connect(settings.home).open_table("default")
    assert not table.outdated and "embedding" in on_disk.schema.names
    assert len(on_disk.list_versions()) <= 2  # the old layout's versions went: the upgrade, the write
    again = MemoryService(settings, embedder=embedder).memory()
    assert again is not None and memory_state(again) == memory_state(service.memory())  # type: ignore[arg-type]
    assert FACTS[6] in {leaf.text for leaf in again.leaves.values()}

    # The history starts with the memory as the old layout held it; that version comes back.
    history = service.upkeep.history()
    assert len(history) == 2 and history[-1][0] == table.rev
    service.upkeep.restore(str(history[0][0]))
    restored = MemoryService(settings, embedder=embedder).memory()
    assert restored is not None and memory_state(restored, temporal_ids=False) == memory_state(
        read, temporal_ids=False
    )


def test_each_schema_version_after_the_first_has_one_numbered_migration_step_up_to_the_one_written() -> None:
    from memtree_mcp.store import migrations
    from memtree_mcp.store.rows import SCHEMA_VERSION

    assert list(migrations.MIGRATIONS) == list(range(2, int(SCHEMA_VERSION) + 1))
    assert tuple(str(v) for v in range(1, int(SCHEMA_VERSION) + 1)) == migrations.READABLE_VERSIONS
    for version, step in migrations.MIGRATIONS.items():
        assert step.__name__.startswith(f"m{version:03d}_") and step.__doc__, step
    with pytest.raises(ValueError, match="version 9"):
        migrations.migration(9)(lambda rows: rows)  # out of order: not registered
    assert 9 not in migrations.MIGRATIONS


def test_a_bulk_import_rewrites_the_table_once_at_its_end_not_after_every_hundred_commits(
    settings: Settings,
    embedder,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lancedb.table import LanceTable

    monkeypatch.setattr(tables, "COMPACT_EVERY", 2)
    compactions: list[int] = []
    optimize = LanceTable.optimize

    def counted(table: LanceTable, **options: object) -> object:
        compactions.append(table.count_rows())
        return optimize(table, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(LanceTable, "optimize", counted)
    service = MemoryService(settings, embedder=embedder)
    records = [{"content": fact} for fact in FACTS]
    service.writer.import_records("default", records, batch=2)  # 5 commits
    assert len(compactions) == 1  # not one every second commit: once, at the end
    memory = service.memory()
    reopened = MemoryService(settings, embedder=embedder).memory()
    assert memory is not None and reopened is not None and memory_state(reopened) == memory_state(memory)
    service.remember("A remember after the import compacts on its schedule again.")
    assert len(compactions) == 1  # one commit since the import's compaction: not due yet
    service.remember("The second one since the import is due.")
    assert len(compactions) == 2


def test_the_end_of_an_import_reads_each_nodes_latest_row_alone_and_rewrites_the_same_memory(
    settings: Settings,
    embedder,  # type: ignore[no-untyped-def]
) -> None:
    # The import's closing rewrite read every revision with its vector (at 30k memories, twice
    # the live rows): it reads each node's latest row alone, deletions and fences accounted for.
    service = MemoryService(settings, embedder=embedder)
    for fact in FACTS:
        service.remember(fact)
    forgotten = service.look_up(RecallRequest("cello lessons", k=1, kind="leaf")).hits[0].id
    service.forget(ids=[forgotten])
    table = service.spaces["default"].table
    whole, live, _ = table._scan()
    lean, lean_live, lean_leaves = table._scan_latest()
    assert lean.num_rows < whole.num_rows  # the superseded revisions were not read
    by_id = [("id", "ascending")]
    latest = whole.take(arrow.latest_positions(whole)[0])
    assert lean.sort_by(by_id).equals(latest.sort_by(by_id))  # every column, deletions included
    assert sorted(lean.column("id").take(lean_live).to_pylist()) == sorted(
        whole.column("id").take(live).to_pylist()
    )
    assert forgotten not in lean.column("id").take(lean_live).to_pylist()
    assert int(lean_leaves.sum()) == len(FACTS) - 1
    before = memory_state(service.memory())
    table.maintain(fresh=True)
    reopened = MemoryService(settings, embedder=embedder)
    assert memory_state(reopened.memory()) == before
    assert reopened.upkeep.doctor() == []
    reopened.close()
    service.close()


def test_a_long_running_writer_keeps_lances_caches_within_their_bound(
    settings: Settings,
    embedder,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    # Every remember is a commit, a new table version whose manifest and file metadata Lance
    # caches: unbounded (1 GiB), 4,000 remembers took a server from 339 to 1,522 MB (issue 31).
    from memtree_mcp.store import lance

    # A session of its own, at the bounds below.
    monkeypatch.setattr(lance, "METADATA_CACHE_BYTES", 1 << 20)
    monkeypatch.setattr(lance, "INDEX_CACHE_BYTES", 1 << 20)
    service = MemoryService(settings, embedder=embedder)
    for i in range(60):
        service.remember(f"Note {i}: the backup of cluster {i} runs at {i % 24} o'clock.")
    service.close()
    assert lance.lance_session().size_bytes <= 2 << 20


LANCE_DISK_FULL = (
    "LanceError(IO): Generic LocalFileSystem error: Unable to copy file from /tmp/x/_versions/.tmp "
    "to /tmp/x/_versions/3.manifest: No space left on device (os error 28), "
    "/root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/lance-io-0.38.2/src/local.rs:226:31"
)


def test_a_full_disk_is_named_in_words_not_in_rust_source_paths(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    service.remember("The first memory fits.")
    table = service.spaces["default"].table

    def disk_full(*args: object, **kwargs: object) -> None:
        raise RuntimeError(LANCE_DISK_FULL)

    monkeypatch.setattr(table.lance, "add", disk_full)
    with pytest.raises(StoreError) as refused:
        service.remember("The second one does not.")
    message = str(refused.value)
    assert "No space left on device" in message and "free some space" in message
    assert ".rs:" not in message and "cargo" not in message
    assert len(message.splitlines()) == 1
