"""Several servers writing one namespace of a bucket home, each with its own local lock folder (as on
machines of their own), against moto's S3 on loopback: the lease in the bucket makes one writer at
a time, a dead holder's lease is taken over, and a stalled holder is fenced off.

Each server is a process of its own (``tests/bucket_writer.py``) that says on stdout what was
acknowledged, so a test can kill or stop it and still know what must be kept.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memtree_mcp.config import Settings
from memtree_mcp.errors import LockTimeout
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.store.bucket import BucketLease, lease_key
from tests.tree_checks import assert_semantic_invariants, assert_temporal_invariants

moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")

BUCKET = "team-memory"
HOME = f"s3://{BUCKET}/memtree"
WRITER = str(Path(__file__).with_name("bucket_writer.py"))
LEASE = "1.5"  # seconds: short, so that takeovers happen within the test
OPENED: list[MemoryService] = []  # closed before moto stops, so that their leases are released
QUERIES = ["who owns the budget review?", "database migration owner", "on-call rota", "deploy window"]


@pytest.fixture
def bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """moto's S3 on 127.0.0.1 with one empty bucket; the environment of a server that uses it (and
    this process's, through monkeypatch): AWS_ENDPOINT_URL set, instance metadata off."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        env = {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": f"http://{host}:{port}",
            "AWS_EC2_METADATA_DISABLED": "true",
            "MEMTREE_LEASE_SECONDS": LEASE,
            "MEMTREE_LOCK_TIMEOUT": "30",
        }
        # One moto backend per process: what an earlier test stored would still be there.
        urllib.request.urlopen(
            urllib.request.Request(f"{env['AWS_ENDPOINT_URL']}/moto-api/reset", method="POST")
        )
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        for key in ("AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
            monkeypatch.delenv(key, raising=False)
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        yield {**os.environ, **env}
    finally:
        while OPENED:
            OPENED.pop().close()
        server.stop()


def start_writer(
    env: dict[str, str], locks: Path, writer: int, count: int, *extra: str
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, WRITER, HOME, str(locks), str(writer), str(count), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def outcomes(process: subprocess.Popen[str], timeout: float = 240) -> list[dict[str, Any]]:
    out, _ = process.communicate(timeout=timeout)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def read_line(process: subprocess.Popen[str]) -> dict[str, Any]:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, "the writer ended early"
    found: dict[str, Any] = json.loads(line)
    return found


def lease_state() -> dict[str, Any]:
    body = boto3.client("s3").get_object(Bucket=BUCKET, Key=lease_key(HOME, "default"))["Body"].read()
    state: dict[str, Any] = json.loads(body)
    return state


def raw_texts() -> list[str]:
    """The text of every row of the namespace's table, fenced off or not."""
    import lancedb

    from memtree_mcp.store.lance import object_store_options

    table = lancedb.connect(HOME, storage_options=object_store_options(HOME)).open_table("default")
    return [t for t in table.search().select(["text"]).limit(None).to_arrow().column("text").to_pylist() if t]


def fences() -> int:
    """How many fences the namespace's table holds that are commits of their own: every commit ends
    with a fence (its marker, store/fences.py), and a server that takes the lease over (or finds
    none in the bucket) appends one alone before it writes."""
    import lancedb
    import pyarrow.compute as pc

    from memtree_mcp.store.fences import FENCE
    from memtree_mcp.store.lance import object_store_options

    table = lancedb.connect(HOME, storage_options=object_store_options(HOME)).open_table("default")
    ids = table.search().select(["id"]).limit(None).to_arrow().column("id")
    fence = pc.starts_with(ids, FENCE).to_pylist()
    return sum(1 for i, is_fence in enumerate(fence) if is_fence and (i == 0 or fence[i - 1]))


def fresh(tmp_path: Path, name: str, embedder: Any) -> MemoryService:
    return MemoryService(
        Settings(home=HOME, namespace="default", lock_dir=str(tmp_path / name)), embedder=embedder
    )


def assert_whole(
    tmp_path: Path, embedder: Any, acked: set[str], forgotten: set[str], refused: set[str] = frozenset()
) -> MemoryService:
    """Every acknowledged memory is there once, nothing forgotten or refused came back, the trees and
    doctor are clean; returns the service that checked."""
    service = fresh(tmp_path, "checker", embedder)
    memory = service.memory()
    assert memory is not None
    held = set(memory.leaves)
    assert acked - forgotten <= held, f"acked memories lost: {sorted(acked - forgotten - held)}"
    assert not held & forgotten, "a forgotten memory came back"
    texts = [leaf.text for leaf in memory.leaves.values()]
    assert len(texts) == len(set(texts)), "a memory is stored twice"
    assert not {leaf.text for leaf in memory.leaves.values()} & refused, "a refused write counts"
    seqs = [leaf.seq for leaf in memory.leaves.values()]
    assert len(seqs) == len(set(seqs))
    assert_semantic_invariants(memory.semantic)
    assert_temporal_invariants(memory.temporal)
    assert service.upkeep.doctor() == []
    return service


def test_one_server_at_a_time_holds_the_lease_and_a_silent_one_is_taken_over(bucket: dict[str, str]) -> None:
    client = boto3.client("s3")
    key = lease_key(HOME, "default")
    first = BucketLease(client, BUCKET, key, "default", seconds=1.0)
    second = BucketLease(client, BUCKET, key, "default", seconds=1.0)
    # No lease in the bucket: never made, or deleted under a holder; taken as a takeover, so fenced.
    assert first.acquire(timeout=1) is True
    with pytest.raises(LockTimeout, match=r"is being written by .*pid"):
        second.acquire(timeout=0.2)  # while the first writes (a loaded machine cannot outlast it)
    first.done()  # kept for the next write (a burst pays once)
    first.close()  # released: taken at once, nothing to fence
    assert second.acquire(timeout=1) is False
    second.check()
    # A holder that dies keeps its lease in the bucket; the next server waits out a whole lease
    # period on its own clock, then takes it over and must fence.
    second.suspend()  # stops renewing, as if the process had died
    started = time.monotonic()
    third = BucketLease(client, BUCKET, key, "default", seconds=1.0)
    assert third.acquire(timeout=5) is True
    assert time.monotonic() - started >= 1.0
    assert lease_state()["generation"] == 3
    with pytest.raises(Exception, match="lost the write lease"):
        second.check()
    third.close()


@pytest.mark.parametrize("count", [24])
def test_three_servers_write_one_namespace_and_lose_nothing(
    bucket: dict[str, str], tmp_path: Path, embedder: Any, count: int
) -> None:
    servers = [
        start_writer(bucket, tmp_path / f"machine{w}", w, count, "--forget-every", "6", "--recall-every", "4")
        for w in range(3)
    ]
    results = [outcomes(server) for server in servers]
    acked = {r["acked"] for rs in results for r in rs if "acked" in r}
    forgotten = {r["forgot"] for rs in results for r in rs if "forgot" in r}
    errors = [r for rs in results for r in rs if "error" in r]
    recalls = [r["recall"] for rs in results for r in rs if "recall" in r]
    assert not errors, errors[:3]
    assert len(acked) == 3 * count and len(forgotten) == 3 * (count // 6)
    assert recalls and all(recalls), "recall failed during the writes"
    checker = assert_whole(tmp_path, embedder, acked, forgotten)
    # Every server answers the same recalls the same way afterwards.
    answers = [
        [[h.id for h in svc.look_up(RecallRequest(q, k=5)).hits] for q in QUERIES]
        for svc in [checker, *(fresh(tmp_path, f"machine{w}", embedder) for w in range(3))]
    ]
    assert all(answer == answers[0] for answer in answers)


def test_a_killed_lease_holder_is_taken_over_and_what_it_acked_stays(
    bucket: dict[str, str], tmp_path: Path, embedder: Any
) -> None:
    holder = start_writer(bucket, tmp_path / "machine0", 0, 200)
    assert "ready" in read_line(holder)
    acked = {read_line(holder)["acked"] for _ in range(3)}
    state = lease_state()
    assert f"pid {holder.pid}," in state["holder"] and not state["released"]  # held across the burst
    holder.kill()
    acked |= {r["acked"] for r in outcomes(holder) if "acked" in r}
    other = start_writer(bucket, tmp_path / "machine1", 1, 3)
    results = outcomes(other)
    assert not [r for r in results if "error" in r]
    acked |= {r["acked"] for r in results if "acked" in r}
    assert f"pid {other.pid}," in lease_state()["holder"]
    # The first server found no lease (fenced), the other took it over from the dead one (fenced).
    assert fences() == 2
    assert_whole(tmp_path, embedder, acked, set())


def test_a_holder_stopped_past_its_lease_does_not_commit_when_it_resumes(
    bucket: dict[str, str], tmp_path: Path, embedder: Any
) -> None:
    stalled = start_writer(bucket, tmp_path / "machine0", 0, 30)
    assert "ready" in read_line(stalled)
    before = [read_line(stalled) for _ in range(2)]
    os.kill(stalled.pid, signal.SIGSTOP)
    try:
        assert f"pid {stalled.pid}," in lease_state()["holder"]
        other = start_writer(bucket, tmp_path / "machine1", 1, 4)
        results = outcomes(other)  # waits out the lease, takes it over, fences, writes
        assert not [r for r in results if "error" in r]
    finally:
        os.kill(stalled.pid, signal.SIGCONT)
    after = outcomes(stalled)
    mine = before + after
    acked = {r["acked"] for r in [*mine, *results] if "acked" in r}
    refused = {r["text"] for r in mine if "error" in r}
    assert len(acked) + len(refused) == 30 + 4
    # Woken up, it finds its lease lost or its commit shut out, and writes again after the other.
    assert fences() == 2
    assert_whole(tmp_path, embedder, acked, set(), refused)


def test_a_commit_that_lands_after_a_takeover_is_ignored_by_readers_and_written_again(
    bucket: dict[str, str], tmp_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    stalled, other = fresh(tmp_path, "machine0", embedder), fresh(tmp_path, "machine1", embedder)
    stalled.remember("The staging cluster runs in eu-west-1.")
    lease = stalled.spaces.lease("default")
    assert lease is not None
    table = stalled.spaces["default"].table.lance
    append = table.add
    taken: dict[str, Any] = {}

    def stall_then_append(data: Any, *args: Any, **kwargs: Any) -> Any:
        # As a process stopped between its lease check and its append: its renewals stop too, the
        # other server waits the lease out, takes it over, fences and commits; then this lands.
        if taken:
            return append(data, *args, **kwargs)  # the second try: no stall this time
        lease.suspend()
        writer = threading.Thread(
            target=lambda: taken.update(done=other.remember("Deploys freeze on Fridays."))
        )
        writer.start()
        writer.join(timeout=60)
        lease.resume()  # wakes up and finishes its append
        return append(data, *args, **kwargs)

    monkeypatch.setattr(table, "add", stall_then_append)
    done = stalled.remember("The release train leaves every Tuesday.")
    assert taken["done"].ids
    rows = raw_texts()
    # Appended after the fence it does not count; written again after the other's commit, it does.
    assert rows.count("The release train leaves every Tuesday.") == 2
    checker = assert_whole(tmp_path, embedder, set(taken["done"].ids) | set(done.ids), set())
    texts = {leaf.text for leaf in (checker.memory() or stalled.memory()).leaves.values()}  # type: ignore[union-attr]
    assert texts == {
        "The staging cluster runs in eu-west-1.",
        "Deploys freeze on Fridays.",
        "The release train leaves every Tuesday.",
    }
    assert stalled.remember("The release train leaves every Tuesday.").deduplicated
