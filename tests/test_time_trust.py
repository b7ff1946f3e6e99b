"""Time a namespace can trust (issue 47): its zone is stored with it, any stored time reads, and a
backdated memory keeps to its own session.

- The zone a namespace counts its days in is stored with its temporal tree: two processes with
  different MEMTREE_TIMEZONE (an MCP server and the hook worker), or one worker serving two
  projects of two zones, read one tree and rebuild neither; another setting is told, not obeyed,
  and ``doctor --repair --timezone`` moves a namespace on purpose.
- A namespace written before zones were stored keeps the zone its tree agrees with.
- A memory's time is refused outside the years 1900 to 2199, and a memory an older memtree-mcp
  stored as year 1 or 9999 reads in every zone.
- A memory backdated before a session does not take over that session's node or its summary.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memtree_mcp.cli import main
from memtree_mcp.config import Settings
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.calendar import SESSION
from memtree_mcp.core.trees.model import Leaf
from memtree_mcp.core.trees.temporal import TEMPORAL_ROOT_ID
from memtree_mcp.errors import InvalidInput
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest

# Evenings in UTC: the next morning in Tokyo, the afternoon before in New York. Days, weeks and
# months fall differently in the two zones, so a tree of one is not a tree of the other.
EVENINGS = [datetime(2026, 3, 27, 20, tzinfo=UTC) + timedelta(days=2 * s) for s in range(5)]


def opened(home: Path, zone: str, embedder: MiniLMEmbedder, namespace: str = "default") -> MemoryService:
    return MemoryService(Settings(home=str(home), namespace=namespace, timezone=zone), embedder=embedder)


def remember_sessions(service: MemoryService, namespace: str | None = None) -> None:
    for s, start in enumerate(EVENINGS):
        for t in range(2):
            when = (start + timedelta(minutes=10 * t)).isoformat()
            text = f"Session {s}, turn {t}: the invoices of week {s} and their ledger entries."
            service.remember(text, timestamp=when, session=f"work-{s}", namespace=namespace)


def session_ids(memory: Memory) -> set[str]:
    tree = memory.temporal
    return {b.id for b in tree.branches.values() if tree.level_of(b.id) == SESSION}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "store"


# -- the zone is stored with the namespace -----------------------------------------------------------


def test_two_processes_with_different_zones_read_one_tree_and_rebuild_neither(
    home: Path, embedder: MiniLMEmbedder
) -> None:
    server = opened(home, "Asia/Tokyo", embedder)
    remember_sessions(server)
    before = set(server.memory().temporal.branches)
    sessions = session_ids(server.memory())
    worker = opened(home, "America/New_York", embedder)
    try:
        memory = worker.memory()
        assert memory.calendar.name == "Asia/Tokyo" and not memory.temporal_rebuilt
        assert set(memory.temporal.branches) == before
        worker.remember("One more turn.", timestamp=(EVENINGS[-1] + timedelta(days=2)).isoformat())
        after = set(worker.memory().temporal.branches)
        assert sessions <= after
        # The server follows the worker's write, and a fresh server reads the same tree.
        assert set(server.memory().temporal.branches) == after
    finally:
        worker.close()
        server.close()
    again = opened(home, "Asia/Tokyo", embedder)
    try:
        assert set(again.memory().temporal.branches) == after
        assert not again.memory().temporal_rebuilt
    finally:
        again.close()


def test_one_worker_serves_two_projects_of_two_zones_and_rebuilds_neither_tree(
    home: Path, embedder: MiniLMEmbedder
) -> None:
    worker = opened(home, "UTC", embedder)
    try:
        assert worker.upkeep.set_zone_for("tokyo-project", "Asia/Tokyo") == "Asia/Tokyo"
        assert worker.upkeep.set_zone_for("ny-project", "America/New_York") == "America/New_York"
        for name in ("tokyo-project", "ny-project"):
            for when in ("2026-03-14T10:00:00Z", "2026-03-14T23:30:00Z"):
                worker.remember(f"A note of {name} written at {when}.", timestamp=when, namespace=name)
        shown = {
            name: {
                hit.time_from[:10]
                for hit in worker.look_up(RecallRequest("note written", namespace=name)).hits
            }
            for name in ("tokyo-project", "ny-project")
        }
        assert shown == {"tokyo-project": {"2026-03-14", "2026-03-15"}, "ny-project": {"2026-03-14"}}
        trees = {name: set(worker.memory(name).temporal.branches) for name in shown}
    finally:
        worker.close()
    # Each project's own server, with its own setting, reads its tree as the worker left it.
    for name, zone in (("tokyo-project", "Asia/Tokyo"), ("ny-project", "America/New_York")):
        server = opened(home, zone, embedder, namespace=name)
        try:
            memory = server.memory()
            assert memory.calendar.name == zone and not memory.temporal_rebuilt
            assert set(memory.temporal.branches) == trees[name]
        finally:
            server.close()


def test_another_zone_set_is_told_once_and_the_stored_one_used(
    home: Path, embedder: MiniLMEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    first = opened(home, "Asia/Tokyo", embedder)
    first.remember("Written at midnight in Tokyo.", timestamp="2026-03-14T15:30:00Z")
    first.close()
    other = opened(home, "Europe/Berlin", embedder)
    try:
        with caplog.at_level(logging.WARNING, logger="memtree_mcp"):
            for _ in range(3):
                (hit,) = other.look_up(RecallRequest("midnight in Tokyo")).hits
        assert hit.time_from == "2026-03-15T00:30:00+09:00"
        told = [r.getMessage() for r in caplog.records if "MEMTREE_TIMEZONE=Europe/Berlin" in r.getMessage()]
        assert len(told) == 1 and "Asia/Tokyo" in told[0]
        assert other.upkeep.zones() == ("Asia/Tokyo", "Europe/Berlin")
    finally:
        other.close()


def test_doctor_says_when_the_zone_set_is_not_the_namespace_s(
    empty_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMTREE_TIMEZONE", "Asia/Tokyo")
    assert main(["remember", "A note.", "--timestamp", "2026-03-14T10:00:00Z"]) == 0
    monkeypatch.setenv("MEMTREE_TIMEZONE", "UTC")
    capsys.readouterr()
    assert main(["doctor"]) == 0
    said = capsys.readouterr().out
    assert "days in Asia/Tokyo" in said and "MEMTREE_TIMEZONE=UTC is not used" in said
    assert main(["doctor", "--timezone", "UTC"]) == 2
    assert "--repair" in capsys.readouterr().err


def test_an_old_namespace_without_a_stored_zone_keeps_the_zone_its_tree_agrees_with(
    home: Path, embedder: MiniLMEmbedder
) -> None:
    # As a memtree-mcp before zones were stored left it: a tree built in UTC (the default), with
    # no zone on its root.
    old = opened(home, "UTC", embedder)
    remember_sessions(old)
    with old.spaces.writing("default") as space:
        assert space is not None
        space.memory.temporal.root.zone = ""
        with old.spaces.change(space) as change:
            change.changed = {TEMPORAL_ROOT_ID}
    before = set(old.memory().temporal.branches)
    old.close()
    tokyo = opened(home, "Asia/Tokyo", embedder)
    try:
        memory = tokyo.memory()
        assert memory.calendar.name == "UTC" and not memory.temporal_rebuilt
        assert set(memory.temporal.branches) == before and not memory.zone_recorded
        tokyo.remember("A later note.", timestamp=(EVENINGS[-1] + timedelta(days=1)).isoformat())
    finally:
        tokyo.close()
    # The write recorded it: now it is trusted as stored, whatever the zone set.
    berlin = opened(home, "Europe/Berlin", embedder)
    try:
        memory = berlin.memory()
        assert memory.calendar.name == "UTC" and memory.zone_recorded and memory.temporal.root.zone == "UTC"
        assert berlin.upkeep.doctor() == []
    finally:
        berlin.close()


# -- the years a time may fall in --------------------------------------------------------------------


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00Z", "9999-12-31T23:00:00Z", "1899-12-31", "2200-01-01"])
def test_a_memory_dated_outside_1900_to_2199_is_refused_in_one_line_and_nothing_is_stored(
    service: MemoryService, when: str
) -> None:
    service.remember("Kept from before.", timestamp="2026-03-14T10:00:00Z")
    with pytest.raises(InvalidInput) as refused:
        service.remember("A sentinel date.", timestamp=when)
    said = str(refused.value)
    assert "\n" not in said and "1900 to 2199" in said and when in said
    assert [leaf.text for leaf in service.memory().leaves.values()] == ["Kept from before."]


def store_unchecked(service: MemoryService, text: str, moment: datetime) -> None:
    """Store a memory at ``moment`` as an older memtree-mcp let through, past today's checks."""
    name = service.resolve_namespace()
    with service.spaces.writing(name) as space:
        assert space is not None
        memory = space.memory
        vector = service.embedder.embed_batch([text])[0]
        leaf = Leaf(
            id=f"old-{moment.year}",
            text=text,
            vector=vector,
            seq=memory.next_seq,
            timestamp=moment.timestamp(),
        )
        with service.spaces.change(space) as change:
            change.changed = memory.add_leaf(leaf)


@pytest.mark.parametrize(
    ("zone", "moment"),
    [
        ("America/New_York", datetime(1, 1, 1, 2, tzinfo=UTC)),  # the year before year 1 there
        ("Asia/Tokyo", datetime(9999, 12, 31, 22, tzinfo=UTC)),  # the year after 9999 there
    ],
)
def test_a_namespace_holding_a_memory_of_year_1_or_9999_reads_in_its_zone(
    home: Path,
    embedder: MiniLMEmbedder,
    zone: str,
    moment: datetime,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    service = opened(home, zone, embedder)
    try:
        service.remember("The ledger was reconciled.", timestamp="2026-03-14T10:00:00Z")
        store_unchecked(service, "A sentinel date from an old import of the ledger.", moment)
    finally:
        service.close()
    service = opened(home, zone, embedder)
    try:
        hits = service.look_up(RecallRequest("sentinel date ledger", min_relevance=0)).hits
        assert f"old-{moment.year}" in {hit.id for hit in hits}
        assert service.summarize(max_tokens=400).summary
        assert "ledger" in service.outline("temporal", 6)
        assert service.upkeep.doctor() == []
        assert f"old-{moment.year}" in {record["id"] for record in service.export_memories()}
        service.remember("The ledger was closed.", timestamp="2026-03-15T10:00:00Z")
        assert len(service.memory().leaves) == 3
    finally:
        service.close()
    monkeypatch.setenv("MEMTREE_HOME", str(home))
    monkeypatch.setenv("MEMTREE_TIMEZONE", zone)
    assert main(["tree", "--tree", "temporal", "--depth", "6"]) == 0
    assert "sentinel" in capsys.readouterr().out


# -- a backdated memory keeps to its own session -----------------------------------------------------

MORNING = datetime(2026, 3, 9, 10, tzinfo=UTC).timestamp()


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=8).astype(np.float32)
    return vector / np.linalg.norm(vector)


def session_of(memory: Memory, leaf_id: str) -> str:
    tree = memory.temporal
    return tree.branches[tree.parent_of[leaf_id]].parent or ""


def billing_session(memory: Memory, count: int) -> str:
    for i in range(count):
        memory.add_leaf(
            Leaf(
                id=f"billing-{i}",
                text=f"Billing v2 step {i}",
                vector=unit(i),
                seq=memory.next_seq,
                timestamp=MORNING + 300.0 * i,
                session="billing-v2",
            )
        )
    node = session_of(memory, "billing-0")
    branch = memory.temporal.branches[node]
    branch.summary, branch.summary_seq = "Billing v2: invoices move to the new ledger.", count - 1
    return node


def test_a_memory_backdated_before_a_session_does_not_take_its_node_or_its_summary() -> None:
    memory = Memory(8)
    billing = billing_session(memory, 4)
    kickoff = Leaf(
        id="kickoff", text="Kick-off", vector=unit(99), seq=memory.next_seq, timestamp=MORNING - 3600
    )
    memory.add_leaf(kickoff)
    assert session_of(memory, "kickoff") != billing
    assert all(session_of(memory, f"billing-{i}") == billing for i in range(4))
    assert memory.temporal.branches[billing].summary.startswith("Billing v2")
    assert memory.temporal.branches[session_of(memory, "kickoff")].summary == ""


def test_a_session_a_backdated_memory_cuts_forgets_the_summary_that_spoke_of_all_of_it() -> None:
    memory = Memory(8)
    billing = billing_session(memory, 6)
    hotfix = Leaf(
        id="hotfix",
        text="Hotfix",
        vector=unit(98),
        seq=memory.next_seq,
        timestamp=MORNING + 300.0 * 2 + 60,
        session="hotfix",
    )
    memory.add_leaf(hotfix)
    kept = {session_of(memory, f"billing-{i}") for i in range(6)}
    assert billing in kept and len(kept) == 2
    assert all(memory.temporal.branches[node].summary == "" for node in kept)
