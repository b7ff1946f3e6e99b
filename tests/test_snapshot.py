"""Opening a namespace from its snapshot: a process that opens it so holds exactly what a whole
read of the table gives, whatever other processes wrote since; a snapshot that is missing, stale,
corrupt or does not fit the table is ignored, the table read whole, and a good snapshot saved.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from memtree_mcp.config import Settings
from memtree_mcp.core.indexes import lexical
from memtree_mcp.core.indexes.vectors import VectorIndex
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.names import STRATEGIES
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.store import opening
from memtree_mcp.store import snapshot as snapshots
from memtree_mcp.store import table as tables
from memtree_mcp.store.lance import LanceStore
from memtree_mcp.store.table import NamespaceTable, Position
from tests.hashing_embedder import HashingEmbedder
from tests.test_fast_paths import assert_arrays_match_a_fresh_build, same_hits
from tests.test_follow import NOTES, timeline_by_id
from tests.test_follow import fresh_memory as reopened
from tests.tree_checks import memory_state
from tests.waiting import wait_until


@pytest.fixture
def embedder() -> HashingEmbedder:
    """A snapshot opens as a whole read does whatever the vectors:
    the hashing embedder stands in for the model (conftest.py)."""
    return HashingEmbedder()


MORE = [
    "The quarterly review is booked for the first Monday of March.",
    "Marta's flight lands at 18:40 at gate B12.",
    "The office plants are watered on Wednesdays.",
    "Our API rate limit is 600 requests per minute per key.",
    "The wifi password for the guest network changed last week.",
    "Tomas is allergic to peanuts and shellfish.",
]


@pytest.fixture(autouse=True)
def every_table_keeps_a_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshots, "SMALLEST", 0)


class WholeReads:
    """Counts the whole reads of a table (by any process of the test)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = NamespaceTable.read_latest

        def counted(table: NamespaceTable) -> object:
            self.count += 1
            return original(table)

        monkeypatch.setattr(NamespaceTable, "read_latest", counted)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> WholeReads:
    return WholeReads(monkeypatch)


@pytest.fixture
def writer(settings: Settings, embedder: object) -> Iterator[MemoryService]:
    service = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    yield service
    service.close()


QUESTIONS = ["When is the cello recital?", "What port does Postgres use?", "Who hates the vacuum?"]


def assert_same_memory(opened: Memory, whole: Memory, embedder: object) -> None:
    """``opened`` holds what ``whole`` (a whole read) holds: nodes, indexes, timeline and recall."""
    assert memory_state(opened) == memory_state(whole)
    assert opened.next_seq == whole.next_seq
    for leaf in whole.leaves.values():
        assert opened.duplicate_of(leaf.content_hash) == whole.duplicate_of(leaf.content_hash) == leaf.id
    assert timeline_by_id(opened) == timeline_by_id(whole)
    assert_arrays_match_a_fresh_build(opened)
    vectors = embedder.embed_batch(QUESTIONS)  # type: ignore[attr-defined]
    for vector, text in zip(vectors, QUESTIONS, strict=True):
        for strategy in STRATEGIES:
            same_hits(opened, whole, vector, text, strategy=strategy)
        assert opened.lexical.scores(text) == pytest.approx(whole.lexical.scores(text), rel=1e-12)


def snapshot_path(settings: Settings) -> Path:
    path = snapshots.path_of(settings.home, "default")
    assert path is not None
    return path


def whole_read(settings: Settings, embedder: object) -> Memory:
    """What reading the table whole gives, without any snapshot."""
    store = LanceStore(settings.home, embedder.identity, embedder.dimension)  # type: ignore[attr-defined]
    table = store.open("default", create=False)
    assert table is not None
    read = table.read()
    memory = Memory(embedder.dimension)  # type: ignore[attr-defined]
    memory.load(read.leaves, read.branches)
    return memory


def saved_anew(settings: Settings, embedder: object) -> None:
    """A snapshot of the table as it is now (a process that finds none reads whole and saves one)."""
    snapshot_path(settings).unlink()
    reopened(settings, embedder)
    assert snapshot_path(settings).exists()


def assert_reopened_by_a_whole_read(settings: Settings, embedder: object, reads: WholeReads) -> None:
    """A new process reads the table whole, once, and holds what a whole read gives."""
    before = reads.count
    memory = reopened(settings, embedder)
    assert reads.count == before + 1
    assert_same_memory(memory, whole_read(settings, embedder), embedder)


def test_a_namespace_reopened_after_another_process_remembered_forgot_and_restored_equals_a_whole_read(
    writer: MemoryService, settings: Settings, embedder: object, reads: WholeReads
) -> None:
    for note in NOTES:
        writer.remember(note, session="s1")
    assert reads.count == 1  # the writer's own first read, of the empty table
    saved_anew(settings, embedder)
    assert reads.count == 2
    memory = reopened(settings, embedder)
    assert reads.count == 2, "the reopen read the table whole"
    assert_same_memory(memory, whole_read(settings, embedder), embedder)

    version = writer.upkeep.history()[-1][0]
    for note in MORE:
        writer.remember(note, session="s2")
    target = writer.look_up(RecallRequest("cello recital", k=1, kind="leaf")).hits[0].id
    writer.forget(node_id=target)
    memory = reopened(settings, embedder)
    assert reads.count == 2
    assert target not in memory.leaves
    assert_same_memory(memory, whole_read(settings, embedder), embedder)

    writer.upkeep.restore(str(version))
    memory = reopened(settings, embedder)
    assert reads.count == 2
    assert target in memory.leaves
    assert_same_memory(memory, whole_read(settings, embedder), embedder)


def mapped_for_writing(path: Path) -> bool:
    """Whether this process maps the file at ``path`` copy-on-write (Linux: /proc/self/maps)."""
    maps = Path("/proc/self/maps").read_text().splitlines()
    return any(line.split()[1].startswith("rw") and line.endswith(str(path)) for line in maps)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_a_process_opened_from_a_snapshot_shares_its_vectors_and_never_writes_them_back(
    writer: MemoryService, settings: Settings, embedder: object, reads: WholeReads
) -> None:
    """The leaves' vectors of a process opened from a snapshot are the file's pages, mapped
    copy-on-write (shared with every process that opens it, never a private copy of them all);
    remembering and forgetting then write only the process's own pages: the file stays as it was,
    and the memory is what a whole read gives."""
    for note in NOTES:
        writer.remember(note, session="s1")
    saved_anew(settings, embedder)
    path = snapshot_path(settings)
    kept = path.with_name("kept.arrow")
    os.link(path, kept)  # the same file, whatever is saved under the name later
    before = kept.read_bytes()
    service = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    try:
        opened = service.memory()
        assert opened is not None and reads.count == 2, "not opened from the snapshot"
        assert mapped_for_writing(path), "the leaves' vectors were copied, not mapped"
        target = service.look_up(RecallRequest("cello recital", k=1, kind="leaf")).hits[0].id
        assert opened.leaf_index.row(target) < len(NOTES) - 1  # a mapped row, not the last one
        service.forget(node_id=target)  # the last row moves into the hole: a mapped row written
        for note in MORE:
            service.remember(note, session="s2")  # rows after the file's
        assert kept.read_bytes() == before, "a change reached the snapshot file"
        memory = service.memory()
        assert memory is not None and target not in memory.leaves
        assert_same_memory(memory, whole_read(settings, embedder), embedder)
    finally:
        service.close()
    assert_same_memory(reopened(settings, embedder), whole_read(settings, embedder), embedder)


def forgotten_and_purged(service: MemoryService, query: str) -> str:
    """The id of the memory that best answers ``query``, which ``service`` forgets and purges."""
    target = service.look_up(RecallRequest(query, k=1, kind="leaf")).hits[0].id
    service.forget(node_id=target)
    service.upkeep.purge()
    return target


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_after_a_purge_no_process_keeps_the_deleted_snapshot_mapped(
    writer: MemoryService, settings: Settings, embedder: object
) -> None:
    """A purge deletes the snapshot (it may hold forgotten text); a mapped file stays on disk,
    deleted, for as long as it is mapped. So neither the process that purges nor one that only
    learns of the purge keeps it mapped."""
    for note in NOTES:
        writer.remember(note, session="s1")
    saved_anew(settings, embedder)
    path = snapshot_path(settings)

    def mapped() -> list[str]:
        return [line for line in Path("/proc/self/maps").read_text().splitlines() if str(path) in line]

    other = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    try:
        assert other.memory() is not None and mapped_for_writing(path)
        target = forgotten_and_purged(writer, "cello recital")
        found = other.look_up(RecallRequest("cello recital", k=3)).hits  # learns of the purge
        assert target not in {hit.id for hit in found}
        assert not any(line.endswith("(deleted)") for line in mapped()), "it maps the deleted snapshot"
        # It read the table whole and saved a new snapshot, whose vectors it reads from the file.
        assert mapped_for_writing(path), "the process that read whole holds its own copies"
        assert_same_memory(other.memory(), whole_read(settings, embedder), embedder)  # type: ignore[arg-type]
    finally:
        other.close()

    saved_anew(settings, embedder)
    purging = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    try:
        assert purging.memory() is not None and mapped_for_writing(path)
        target = forgotten_and_purged(purging, "Postgres port")
        assert mapped() == [], "the process that purged still maps the deleted snapshot"
        assert target not in purging.memory().leaves  # type: ignore[union-attr]
        assert_same_memory(purging.memory(), whole_read(settings, embedder), embedder)  # type: ignore[arg-type]
    finally:
        purging.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_a_server_maps_the_snapshot_another_server_saved_over_its_file_and_lets_the_old_one_go(
    writer: MemoryService, settings: Settings, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that stops saves the snapshot anew, over the file the servers still running map:
    a replaced file stays on disk (at 100k memories, 450 MB) for as long as a process maps it.
    The others map the new file once they have followed to where it stands."""
    monkeypatch.setattr(opening, "REFRESH_BEHIND", 1)
    for note in NOTES:
        writer.remember(note, session="s1")
    saved_anew(settings, embedder)
    path = snapshot_path(settings)

    def replaced() -> list[str]:
        maps = Path("/proc/self/maps").read_text().splitlines()
        return [line for line in maps if line.endswith("(deleted)")]

    running = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    try:
        assert running.memory() is not None and mapped_for_writing(path)
        stopping = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
        stopping.memory()
        stopping.spaces.watch()  # a server
        for note in MORE:
            stopping.remember(note, session="s2")
        stopping.close()  # far behind: it saves the snapshot anew
        assert any(str(path) in line for line in replaced()), "the snapshot was not saved anew"
        running.spaces.watch(every=0.05)
        wait_until(lambda: not replaced(), within=30, what="the replaced snapshot to be let go of")
        assert mapped_for_writing(path), "it holds its own copies instead of mapping the new file"
        memory = running.memory()
        assert memory is not None and len(memory.leaves) == len(NOTES) + len(MORE)
        assert_same_memory(memory, whole_read(settings, embedder), embedder)
    finally:
        running.close()


def test_a_write_cut_short_in_a_process_opened_from_a_snapshot_raises_its_own_error_and_keeps_nothing(
    writer: MemoryService, settings: Settings, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in the middle of a write (the new memory held, not yet indexed): the memory is read
    again from the table, the interrupt is what the caller gets, and nothing of the write stays."""
    for note in NOTES:
        writer.remember(note, session="s1")
    saved_anew(settings, embedder)
    service = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    try:
        assert service.memory() is not None

        def interrupted(self: VectorIndex, node_id: str, vector: object) -> None:
            raise KeyboardInterrupt

        with monkeypatch.context() as patch:
            patch.setattr(VectorIndex, "upsert", interrupted)
            with pytest.raises(KeyboardInterrupt):
                service.remember("The boiler is serviced every October.", session="s2")
        memory = service.memory()
        assert memory is not None
        assert not any("boiler" in leaf.text for leaf in memory.leaves.values())
        assert_same_memory(memory, whole_read(settings, embedder), embedder)
        service.remember("The boiler is serviced every October.", session="s2")
        assert (
            service.look_up(RecallRequest("when is the boiler serviced", k=1))
            .hits[0]
            .text.startswith("The boiler")
        )
    finally:
        service.close()


def snapshot_rows(settings: Settings, embedder: object) -> int:
    """The rows of the table the snapshot on disk stands at."""
    saved = snapshots.read(snapshot_path(settings), embedder.identity, embedder.dimension, rows_only=True)  # type: ignore[attr-defined]
    assert saved is not None
    return saved.position.rows


def test_a_snapshot_saved_anew_by_a_live_process_opens_the_next_one_where_the_table_stands(
    writer: MemoryService, settings: Settings, embedder: object, reads: WholeReads
) -> None:
    # A long-lived server saves its snapshot again from what it holds (the snapshot's rows plus the
    # rows appended since, remember, forget and restore among them), so the next process starts
    # from where the table stands instead of following everything written since the first read.
    for note in NOTES:
        writer.remember(note, session="s1")
    saved_anew(settings, embedder)
    first = snapshot_rows(settings, embedder)
    version = writer.upkeep.history()[-1][0]
    for note in MORE:
        writer.remember(note, session="s2")
    target = writer.look_up(RecallRequest("cello recital", k=1, kind="leaf")).hits[0].id
    writer.forget(node_id=target)
    writer.upkeep.restore(str(version))
    writer.forget(node_id=writer.look_up(RecallRequest("retriever vacuum", k=1, kind="leaf")).hits[0].id)
    space = writer.spaces["default"]
    with space.lock:
        writer.spaces.follow(space)
        assert writer.spaces.snapshots.refresh(space)
        rows = space.table.row_count()
    assert first < rows
    assert snapshot_rows(settings, embedder) == rows
    before = reads.count
    memory = reopened(settings, embedder)
    assert reads.count == before, "the reopen read the table whole"
    assert target in memory.leaves
    assert all("vacuum" not in leaf.text for leaf in memory.leaves.values())
    assert_same_memory(memory, whole_read(settings, embedder), embedder)


def test_a_big_namespace_s_snapshot_is_saved_anew_before_following_it_costs_every_start() -> None:
    # At 100k memories (330k rows) the snapshot fell 20,819 rows behind (1,200 remembers) without
    # being due, and each server's first recall paid 0.7 s to follow them.
    opener = opening.Opener("/nowhere", 8)
    assert opener.snapshot_due(330_000, 330_000 - 7_000)
    assert not opener.snapshot_due(330_000, 330_000 - 6_000)
    assert not opener.snapshot_due(20_000, 20_000 - 1_999)  # a small one: 2,000 rows


def test_a_server_that_stops_saves_its_snapshot_anew_when_it_is_far_behind(
    settings: Settings, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(opening, "REFRESH_BEHIND", 1)
    command = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    for note in NOTES:
        command.remember(note, session="s1")
    command.close()  # a one-shot command: its close saves nothing
    saved_anew(settings, embedder)
    first = snapshot_rows(settings, embedder)
    server = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    server.memory()
    server.spaces.watch()
    for note in MORE:
        server.remember(note, session="s2")
    rows = server.spaces["default"].table.row_count_seen
    assert snapshot_rows(settings, embedder) == first
    server.close()
    assert first < snapshot_rows(settings, embedder) == rows
    assert_same_memory(reopened(settings, embedder), whole_read(settings, embedder), embedder)
    after = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    after.remember("One more line, by a one-shot command.")
    after.close()
    assert snapshot_rows(settings, embedder) == rows


def test_after_an_import_the_next_process_opens_from_a_snapshot_not_the_whole_table(
    settings: Settings, embedder: object, reads: WholeReads, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The namespace is too small for a snapshot when the import opens it (as a new one is), big
    # enough once imported: a one-shot command saves none at its close, and before, the first
    # server after an import read the whole table (at 100k memories ~8 s before its first answer;
    # saving the snapshot at the end of the import took 6 s there).
    monkeypatch.setattr(snapshots, "SMALLEST", 10)
    monkeypatch.setattr(opening, "REFRESH_BEHIND", 1)
    command = MemoryService(settings, embedder=embedder, background=False)  # type: ignore[arg-type]
    added, _ = command.upkeep.import_memories({"content": note, "session": "s1"} for note in NOTES + MORE)
    command.close()
    assert added == len(NOTES + MORE)
    assert snapshot_path(settings).exists(), "the import left no snapshot"
    before = reads.count
    memory = reopened(settings, embedder)
    assert reads.count == before, "the first process after the import read the table whole"
    assert_same_memory(memory, whole_read(settings, embedder), embedder)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: data[:200] + bytes([data[200] ^ 0xFF]) + data[201:], id="a flipped byte"),
        pytest.param(
            lambda data: data[:-40] + bytes([data[-40] ^ 0x01]) + data[-39:], id="a late flipped bit"
        ),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: b"not a snapshot at all" * 10, id="another file"),
    ],
)
def test_a_damaged_snapshot_is_ignored_the_table_read_whole_and_a_good_one_saved(
    writer: MemoryService,
    settings: Settings,
    embedder: object,
    reads: WholeReads,
    damage: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(snapshots, "SPLIT_ABOVE", 64)  # checked on two cores, as a large one is
    for note in NOTES:
        writer.remember(note)
    saved_anew(settings, embedder)
    path = snapshot_path(settings)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    assert_reopened_by_a_whole_read(settings, embedder, reads)
    assert snapshots.read(path, writer.spaces.store.embedder, writer.spaces.store.dimension) is not None
    before = reads.count
    reopened(settings, embedder)
    assert reads.count == before


@examples(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.binary(max_size=300))
def test_crc32_combine_gives_the_crc32_of_the_two_joined(first: bytes, second: bytes) -> None:
    joined = snapshots.crc32_combine(zlib.crc32(first), zlib.crc32(second), len(second))
    assert joined == zlib.crc32(first + second)
    assert snapshots.checksum(memoryview(first + second)) == zlib.crc32(first + second)


def test_a_snapshot_of_a_table_since_rewritten_is_ignored(
    writer: MemoryService,
    settings: Settings,
    embedder: object,
    reads: WholeReads,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer.remember(NOTES[0])
    stale = snapshot_path(settings).read_bytes()
    monkeypatch.setattr(tables, "SQUASH_SLACK", -10_000)  # every commit rewrites the table
    writer.remember(NOTES[1])
    writer.remember(NOTES[2])
    snapshot_path(settings).write_bytes(stale)
    assert_reopened_by_a_whole_read(settings, embedder, reads)


def test_a_snapshot_that_does_not_continue_the_table_is_ignored(
    writer: MemoryService, settings: Settings, embedder: object, reads: WholeReads
) -> None:
    """A whole, well-formed snapshot whose last row is not the table's at its offset (written by
    hand, or by a writer that did not take the lock) is not trusted."""
    for note in NOTES:
        writer.remember(note)
    table = writer.spaces["default"].table
    _, rows, position = table.read_latest()
    memory = writer.memory()
    assert memory is not None and position.last is not None
    moved = Position(
        position.generation, position.version, position.rows, position.rev, ("x", position.last[1])
    )
    snapshots.write(snapshot_path(settings), rows, moved, memory, table.embedder)
    assert_reopened_by_a_whole_read(settings, embedder, reads)


def test_a_snapshot_tokenized_by_other_code_keeps_its_rows_tokenizes_again_and_is_saved_anew(
    writer: MemoryService,
    settings: Settings,
    embedder: object,
    reads: WholeReads,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for note in NOTES:
        writer.remember(note)
    saved_anew(settings, embedder)
    monkeypatch.setattr(snapshots, "lexical_fingerprint", lambda: "another tokenizer")
    store = writer.spaces.store
    saved = snapshots.read(snapshot_path(settings), store.embedder, store.dimension)
    assert saved is not None and saved.lexical is None
    before = reads.count
    memory = reopened(settings, embedder)
    assert reads.count == before
    assert_same_memory(memory, whole_read(settings, embedder), embedder)
    resaved = snapshots.read(snapshot_path(settings), store.embedder, store.dimension)
    assert resaved is not None and resaved.lexical is not None  # saved again, tokenized anew


def test_a_purge_deletes_the_snapshot_that_may_hold_forgotten_text(
    writer: MemoryService, settings: Settings, embedder: object
) -> None:
    for note in NOTES:
        writer.remember(note)
    saved_anew(settings, embedder)
    target = writer.look_up(RecallRequest("cello recital", k=1, kind="leaf")).hits[0].id
    writer.forget(node_id=target)
    assert b"cello" in snapshot_path(settings).read_bytes()  # saved before the forget
    space = writer.spaces["default"]
    with writer.spaces.writing("default"):
        writer.spaces.purge(space)
    assert not snapshot_path(settings).exists()
    memory = reopened(settings, embedder)  # reads the purged table whole and saves anew
    assert target not in memory.leaves
    assert b"cello" not in snapshot_path(settings).read_bytes()


def test_a_namespace_whose_snapshot_cannot_be_saved_still_opens(
    writer: MemoryService, settings: Settings, embedder: object, reads: WholeReads
) -> None:
    for note in NOTES:
        writer.remember(note)
    folder = snapshot_path(settings).parent
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    folder.write_text("a file where the snapshots' folder should be")
    assert_reopened_by_a_whole_read(settings, embedder, reads)
    assert folder.is_file()


def test_a_write_killed_midway_leaves_no_file_behind_for_long(settings: Settings, embedder: object) -> None:
    # A client may kill a server while it saves its snapshot at stop: the half-written temporary
    # file stays. The next save removes it once no write can still be under way, and leaves a
    # write that may be (a recent file) alone.
    for note in NOTES:
        service = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
        service.remember(note)
        service.close()
    saved_anew(settings, embedder)
    folder = snapshot_path(settings).parent
    killed = folder / ".default.arrow.killed1.tmp"
    killed.write_bytes(b"half a snapshot")
    old = time.time() - snapshots.ABANDONED_AFTER - 60
    os.utime(killed, (old, old))
    under_way = folder / ".default.arrow.running.tmp"
    under_way.write_bytes(b"being written")
    saved_anew(settings, embedder)
    assert not killed.exists()
    assert under_way.exists()
    assert sorted(p.name for p in folder.iterdir()) == [".default.arrow.running.tmp", "default.arrow"]


def forged(path: Path, keep: object) -> None:
    """Rewrite the snapshot at ``path`` with only the rows ``keep(table)`` selects, whole and with a
    valid checksum: a file a checksum cannot tell from a good one."""
    whole = path.read_bytes()
    table = pa.ipc.open_file(pa.py_buffer(whole[: -snapshots.TRAILER.size])).read_all()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table.filter(keep(table)))  # type: ignore[operator]
    payload = sink.getvalue().to_pybytes()
    path.write_bytes(payload + snapshots.TRAILER.pack(snapshots.MAGIC, len(payload), zlib.crc32(payload)))


LEAVES_DROPPED = lambda table: pc.not_equal(table.column("kind"), "leaf")  # noqa: E731


@pytest.mark.parametrize(
    "keep",
    [
        pytest.param(LEAVES_DROPPED, id="leaves dropped"),
        pytest.param(lambda table: pc.less(pc.utf8_length(table.column("id")), 0), id="every row dropped"),
    ],
)
def test_a_snapshot_whose_rows_were_dropped_is_not_trusted(
    writer: MemoryService, settings: Settings, embedder: object, reads: WholeReads, keep: object
) -> None:
    # Issue 31: such a snapshot made the namespace read as empty, and the next remember built
    # its trees on nothing (4,783 doctor problems).
    for note in NOTES:
        writer.remember(note)
    saved_anew(settings, embedder)
    forged(snapshot_path(settings), keep)
    assert_reopened_by_a_whole_read(settings, embedder, reads)
    service = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    service.remember(MORE[0])
    assert service.upkeep.doctor() == []
    assert len(service.memory().leaves) == len(NOTES) + 1  # type: ignore[union-attr]
    service.close()


def server_on_a_forged_snapshot(writer: MemoryService, settings: Settings, embedder: object) -> MemoryService:
    """A long-lived process (one that warmed up: its snapshots are compared with the table after
    the open) on a namespace of :data:`NOTES` whose snapshot lost its leaves, a file a checksum
    cannot tell from a good one; it has opened the namespace."""
    for note in NOTES:
        writer.remember(note)
    saved_anew(settings, embedder)
    forged(snapshot_path(settings), LEAVES_DROPPED)
    service = MemoryService(settings, embedder=embedder)  # type: ignore[arg-type]
    service.spaces.snapshots.check_later = True
    assert service.memory() is not None
    return service


def test_a_server_compares_its_snapshot_after_opening_and_reads_whole_when_it_disagrees(
    writer: MemoryService, settings: Settings, embedder: object, caplog: pytest.LogCaptureFixture
) -> None:
    # A server no longer compares every row of its snapshot with the table before its first
    # answer (0.4 s at 100k memories): its watcher does, and a disagreeing snapshot is replaced.
    service = server_on_a_forged_snapshot(writer, settings, embedder)
    forged_file = snapshot_path(settings).stat().st_ino
    try:
        with caplog.at_level(logging.WARNING, logger="memtree_mcp"):
            service.spaces.watch(every=0.05)
            space = service.spaces["default"]
            wait_until(lambda: len(space.memory.leaves) == len(NOTES), what="the namespace read whole")
        assert space.unchecked is None
        assert_same_memory(space.memory, whole_read(settings, embedder), embedder)
        assert snapshot_path(settings).stat().st_ino != forged_file  # a snapshot that fits, saved
        assert any("ignoring the snapshot" in record.getMessage() for record in caplog.records)
        hits = service.look_up(RecallRequest("cello recital", k=1, kind="leaf")).hits
        assert hits and "cello" in hits[0].text
    finally:
        service.close()


def test_a_write_in_a_server_that_has_not_yet_compared_its_snapshot_compares_it_first(
    writer: MemoryService, settings: Settings, embedder: object
) -> None:
    # Issue 31 again: built on a snapshot that lost its leaves, a remember made its trees on
    # nothing. No watcher here: the write alone must compare.
    service = server_on_a_forged_snapshot(writer, settings, embedder)
    try:
        service.remember(MORE[0])
        assert service.upkeep.doctor() == []
        assert len(service.memory().leaves) == len(NOTES) + 1  # type: ignore[union-attr]
        assert_same_memory(service.memory(), whole_read(settings, embedder), embedder)  # type: ignore[arg-type]
    finally:
        service.close()


def reopened_within(settings: Settings, embedder: object, seconds: float) -> Memory:
    """A new process's memory (see ``reopened``), failing the test if opening takes ``seconds``."""
    opened: list[Memory] = []
    worker = threading.Thread(target=lambda: opened.append(reopened(settings, embedder)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert opened, f"opening the namespace took more than {seconds} s"
    return opened[0]


def test_a_fifo_or_a_sparse_file_in_place_of_the_snapshot_is_ignored_at_once(
    writer: MemoryService, settings: Settings, embedder: object
) -> None:
    # Issue 31: a FIFO made opening the namespace hang; a sparse 8 GiB file with a plausible
    # trailer was checksummed whole first (45 s).
    for note in NOTES:
        writer.remember(note)
    whole = whole_read(settings, embedder)
    path = snapshot_path(settings)
    path.unlink()
    os.mkfifo(path)
    assert_same_memory(reopened_within(settings, embedder, 30), whole, embedder)
    assert path.is_file()  # saved anew over it
    size = 8 << 30
    with path.open("r+b") as sparse:
        sparse.truncate(size)
        sparse.seek(size - snapshots.TRAILER.size)
        sparse.write(snapshots.TRAILER.pack(snapshots.MAGIC, size - snapshots.TRAILER.size, 0))
    assert_same_memory(reopened_within(settings, embedder, 10), whole, embedder)


def test_a_snapshot_with_bad_metadata_is_ignored_in_one_line_without_a_traceback(
    writer: MemoryService, settings: Settings, embedder: object, caplog: pytest.LogCaptureFixture
) -> None:
    for note in NOTES:
        writer.remember(note)
    saved_anew(settings, embedder)
    path = snapshot_path(settings)
    whole = path.read_bytes()
    table = pa.ipc.open_file(pa.py_buffer(whole[: -snapshots.TRAILER.size])).read_all()
    meta = {**(table.schema.metadata or {}), b"memtree.lexical_capacity": b"1000000000000"}
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema.with_metadata(meta)) as out:
        out.write_table(table.replace_schema_metadata(meta))
    payload = sink.getvalue().to_pybytes()
    path.write_bytes(payload + snapshots.TRAILER.pack(snapshots.MAGIC, len(payload), zlib.crc32(payload)))
    with caplog.at_level(logging.WARNING, logger="memtree_mcp"):
        memory = reopened(settings, embedder)
    assert_same_memory(memory, whole_read(settings, embedder), embedder)
    warnings = [record for record in caplog.records if "snapshot" in record.getMessage()]
    assert warnings and not any(record.exc_info for record in caplog.records)


def test_terms_saved_stay_usable_after_a_change_to_the_index_but_not_to_the_tokenizer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A snapshot's BM25 terms are tokenized again (seconds at 100k memories) only when the
    # tokenizer changed, not when the code that holds the postings did.
    source = Path(lexical.__file__).read_text()
    head, marker, rest = source.partition("\nclass LexicalIndex")
    assert marker and "def tokenize(" in head and "def restored(" in rest
    today = snapshots.lexical_fingerprint()
    edited = tmp_path / "lexical.py"
    monkeypatch.setattr(lexical, "__file__", str(edited))

    def fingerprint_of(text: str) -> str:
        edited.write_text(text)
        snapshots.lexical_fingerprint.cache_clear()  # read once a process
        return snapshots.lexical_fingerprint()

    try:
        assert fingerprint_of(head + marker + rest.replace("def restored(", "def restored_again(")) == today
        unstemmed = head.replace("STEM_BY_DEFAULT = True", "STEM_BY_DEFAULT = False")
        assert fingerprint_of(unstemmed + marker + rest) != today
    finally:
        monkeypatch.undo()
        snapshots.lexical_fingerprint.cache_clear()
    assert snapshots.lexical_fingerprint() == today
