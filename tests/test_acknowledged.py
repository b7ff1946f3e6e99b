"""Acknowledged means kept: a write is acknowledged only once its commit counts for every reader,
whatever the lock or the bucket's lease did (store/fences.py, NamespaceTable._append_commit).

Two writers that both believe they may write (processes with different lock folders on one home,
two servers that both believe they hold a bucket's lease) build on the same rows and claim the
same revision; the one whose commit comes second finds out before acknowledging, and writes again
on what the first one wrote.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

from memtree_mcp.config import Settings
from memtree_mcp.errors import WriteConflict
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.store.fences import FENCE, unfenced
from tests.test_bucket_writers import BUCKET, HOME, assert_whole, bucket, outcomes, start_writer

__all__ = ["bucket"]  # the fixture, shared with tests/test_bucket_writers.py


def service_on(home: Path, locks: Path, embedder: MiniLMEmbedder) -> MemoryService:
    """A service on ``home`` whose write lock lives in ``locks``: two with different folders do not
    exclude each other, as two servers on a bucket that both believe they hold its lease."""
    return MemoryService(Settings(home=str(home), lock_dir=str(locks)), embedder=embedder)


@pytest.fixture
def two_writers(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[tuple[MemoryService, MemoryService]]:
    first = service_on(tmp_path / "home", tmp_path / "locks-a", embedder)
    second = service_on(tmp_path / "home", tmp_path / "locks-b", embedder)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


def counted_pairs(home: Path) -> list[str]:
    """Each (id, rev) that counts in namespace default's table, as 'id@rev'."""
    import lancedb

    rows = unfenced(lancedb.connect(str(home)).open_table("default").to_arrow().select(["id", "rev"]))
    return pc.binary_join_element_wise(
        rows.column("id"), pc.cast(rows.column("rev"), "string"), "@"
    ).to_pylist()


def fresh_reader(home: Path, embedder: MiniLMEmbedder, tmp_path: Path) -> MemoryService:
    return service_on(home, tmp_path / "locks-reader", embedder)


def test_a_commit_built_on_rows_another_writer_changed_first_is_refused_and_not_acknowledged(
    two_writers: tuple[MemoryService, MemoryService], tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    first, second = two_writers
    first.remember("The deploy window is Tuesday at 14:00.")
    second.remember("The on-call rota changes every Monday.")  # both have read the namespace
    space = second.spaces["default"]
    memory, table = space.memory, space.table
    first.remember("Billing runs on the 3rd of each month.")  # the second writer has not followed it
    from memtree_mcp.core.trees.model import Leaf

    vector = embedder.embed_batch(["The budget review is owned by Dana."])[0]
    leaf = Leaf(
        id="mstalewriter0001",
        text="The budget review is owned by Dana.",
        vector=vector,
        seq=memory.next_seq,
        timestamp=1_800_000_000.0,
        content_hash="stale",
    )
    changed = memory.add_leaf(leaf, set())
    with pytest.raises(WriteConflict):
        table.commit(memory, changed)
    reader = fresh_reader(tmp_path / "home", embedder, tmp_path)
    try:
        held = reader.memory()
        assert held is not None
        texts = {leaf.text for leaf in held.leaves.values()}
        assert "The budget review is owned by Dana." not in texts
        assert "Billing runs on the 3rd of each month." in texts
        assert reader.upkeep.doctor() == []
    finally:
        reader.close()
    pairs = counted_pairs(tmp_path / "home")
    assert len(pairs) == len(set(pairs)), "an (id, revision) pair counts twice"


def test_a_remember_that_loses_the_race_is_written_again_on_what_the_other_wrote(
    two_writers: tuple[MemoryService, MemoryService],
    tmp_path: Path,
    embedder: MiniLMEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = two_writers
    first.remember("The deploy window is Tuesday at 14:00.")
    second.remember("The on-call rota changes every Monday.")
    table = second.spaces["default"].table
    lance = table.lance
    real_add = lance.add
    raced: list[Any] = []

    def add_after_the_other_writer(data: Any, *args: Any, **kwargs: Any) -> Any:
        if not raced:  # the other server commits between this one's read and its commit
            raced.append(first.remember("Billing runs on the 3rd of each month."))
        return real_add(data, *args, **kwargs)

    monkeypatch.setattr(lance, "add", add_after_the_other_writer)
    done = second.remember("The budget review is owned by Dana.")
    assert raced and not done.deduplicated
    reader = fresh_reader(tmp_path / "home", embedder, tmp_path)
    try:
        held = reader.memory()
        assert held is not None
        texts = sorted(leaf.text for leaf in held.leaves.values())
        assert texts == sorted(
            [
                "The deploy window is Tuesday at 14:00.",
                "The on-call rota changes every Monday.",
                "Billing runs on the 3rd of each month.",
                "The budget review is owned by Dana.",
            ]
        )
        assert done.ids[0] in held.leaves
        assert reader.upkeep.doctor() == []
        assert [
            h.id for h in reader.look_up(RecallRequest("who owns the budget review?", k=1)).hits
        ] == done.ids[:1]
    finally:
        reader.close()


def test_two_writers_without_a_common_lock_lose_nothing_and_agree(
    two_writers: tuple[MemoryService, MemoryService], tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    acknowledged: list[list[str]] = [[], []]
    failures: list[BaseException] = []

    def write(who: int, service: MemoryService) -> None:
        try:
            for i in range(25):
                done = service.remember(
                    f"Writer {who} fact {i}: the {['deploy', 'budget', 'rota'][i % 3]} note {i}."
                )
                acknowledged[who] += done.ids
                if i % 8 == 7:
                    service.forget(ids=[acknowledged[who].pop(0)])
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(w, s)) for w, s in enumerate(two_writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    reader = fresh_reader(tmp_path / "home", embedder, tmp_path)
    try:
        held = reader.memory()
        assert held is not None
        assert set(acknowledged[0] + acknowledged[1]) == set(held.leaves)
        texts = [leaf.text for leaf in held.leaves.values()]
        assert len(texts) == len(set(texts))
        assert reader.upkeep.doctor() == []
        for service in two_writers:  # each writer, following, holds what the fresh reader reads
            mine = service.memory()
            assert mine is not None and set(mine.leaves) == set(held.leaves)
    finally:
        reader.close()
    pairs = counted_pairs(tmp_path / "home")
    assert len(pairs) == len(set(pairs))


def test_every_commit_ends_with_its_marker_and_readers_of_old_tables_read_them_as_before(
    service: MemoryService, settings: Settings
) -> None:
    import lancedb

    service.remember("The deploy window is Tuesday at 14:00.")
    service.remember("The on-call rota changes every Monday.")
    rows = lancedb.connect(settings.home).open_table("default").to_arrow().select(["id", "rev"])
    ids, revs = rows.column("id").to_pylist(), rows.column("rev").to_pylist()
    markers = [i for i, node in enumerate(ids) if node.startswith(FENCE)]
    assert len(markers) == 2
    assert markers[-1] == len(ids) - 1  # the last row of the table is the last commit's marker
    assert revs[markers[0]] < revs[markers[1]]
    assert FENCE not in " ".join(leaf for leaf in service.memory().leaves)  # type: ignore[union-attr]


# -- on a bucket: the lease only against contention ------------------------------------------------

moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")


def test_a_server_with_a_short_lease_waits_out_the_holder_s_longer_one(bucket: dict[str, str]) -> None:
    from memtree_mcp.errors import LockTimeout
    from memtree_mcp.store.bucket import BucketLease, lease_key

    client = boto3.client("s3")
    key = lease_key(HOME, "default")
    holder = BucketLease(client, BUCKET, key, "default", seconds=60.0)
    holder.acquire(timeout=1)  # healthy: renews every 32 s, so its ETag stays for the whole test
    contender = BucketLease(client, BUCKET, key, "default", seconds=0.5)
    try:
        with pytest.raises(LockTimeout, match="is being written by"):
            contender.acquire(timeout=2.0)  # four of its own lease lengths, far less than the holder's
        holder.check()  # still the holder's
    finally:
        holder.close()
        contender.close()


def test_a_fresh_server_takes_a_lease_that_vanished_with_a_fence(bucket: dict[str, str]) -> None:
    from memtree_mcp.store.bucket import BucketLease, lease_key

    client = boto3.client("s3")
    key = lease_key(HOME, "default")
    holder = BucketLease(client, BUCKET, key, "default", seconds=5.0)
    holder.acquire(timeout=1)
    client.delete_object(Bucket=BUCKET, Key=key)  # an operator, a lifecycle rule, a sync
    fresh_server = BucketLease(client, BUCKET, key, "default", seconds=5.0)  # never saw the lease
    try:
        assert fresh_server.acquire(timeout=1) is True  # a takeover: the namespace is fenced first
    finally:
        fresh_server.close()
        holder.close()


@pytest.mark.slow
def test_servers_whose_lease_is_deleted_under_them_lose_nothing(
    bucket: dict[str, str], tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    from memtree_mcp.store.bucket import lease_key

    client = boto3.client("s3")
    stop = threading.Event()

    def delete_the_lease() -> None:
        while not stop.wait(0.25):
            client.delete_object(Bucket=BUCKET, Key=lease_key(HOME, "default"))

    deleter = threading.Thread(target=delete_the_lease, daemon=True)
    deleter.start()
    try:
        servers = [
            start_writer(
                {**bucket, "MEMTREE_LEASE_SECONDS": seconds},
                tmp_path / f"machine{w}",
                w,
                12,
                "--forget-every",
                "5",
                "--large-every",
                "6",
            )
            for w, seconds in enumerate(["0.5", "5"])
        ]
        results = [outcomes(server) for server in servers]
    finally:
        stop.set()
        deleter.join()
    acked = {i for rs in results for r in rs if "acked" in r for i in r["ids"]}
    forgotten = {r["forgot"] for rs in results for r in rs if "forgot" in r}
    assert len([r for rs in results for r in rs if "acked" in r]) >= 20  # of 24
    assert_whole(tmp_path, embedder, acked, forgotten)
