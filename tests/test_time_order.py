"""Time in order: the temporal tree places each memory by its own time, whatever order it arrives in.

Whole sessions remembered out of order, memories backdated by days, months and a year, Markdown
notes imported in an order that is not their dates', any arrival order of the same memories, and a
store an older memtree-mcp built out of order: siblings come in time order, no two name the same
period, no node cuts a session, ``left`` / ``right`` walk the sessions in time order, and ``doctor``
tells a tree that breaks this and mends it.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtree_mcp.cli import main
from memtree_mcp.config import Settings
from memtree_mcp.core.checks.memory import memory_problems
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.calendar import SESSION, UTC_CALENDAR, period_name
from memtree_mcp.core.trees.model import Leaf
from memtree_mcp.core.walking.navigation import NavigationError, move
from memtree_mcp.service import MemoryService
from tests.hashing_embedder import HashingEmbedder


@pytest.fixture
def embedder() -> HashingEmbedder:
    """Time order in the temporal tree, whatever the vectors:
    the hashing embedder stands in for the model (conftest.py)."""
    return HashingEmbedder()


FIXTURES = Path(__file__).parent / "fixtures"
MONDAY = datetime(2026, 3, 9, 9, tzinfo=UTC)
TOPICS = [
    "the billing service's invoices and their database",
    "hiring a designer for the onboarding screens",
    "the office move and the new desks",
    "the flaky integration tests in CI",
    "the quarterly budget for cloud costs",
]
# (days after MONDAY) of each of the five sessions.
SESSION_DAYS = [0, 9, 16, 29, 37]
# Memories backdated by a day, by months and by a year, with no session id.
BACKDATED = [
    (MONDAY + timedelta(days=15, hours=2), "A call about the contract renewal."),
    (MONDAY - timedelta(days=70), "Winter planning put billing first."),
    (MONDAY - timedelta(days=400), "Last year's audit asked for gapless invoice numbers."),
]


def session_turns(s: int) -> list[tuple[str, str, str]]:
    """Eight turns of session ``s``: (timestamp, session id, text), five minutes apart."""
    start = MONDAY + timedelta(days=SESSION_DAYS[s])
    return [
        ((start + timedelta(minutes=5 * t)).isoformat(), f"work-{s}", f"Turn {t} on {TOPICS[s]}, point {t}.")
        for t in range(8)
    ]


def spans(memory: Memory, node_id: str) -> tuple[float, float]:
    node = memory.node(node_id)
    if isinstance(node, Leaf):
        return node.timestamp, node.timestamp
    return node.first_ts, node.last_ts


def assert_in_time_order(memory: Memory) -> None:
    """Siblings in time order everywhere, no two naming the same period, each session in one node
    that holds it alone with at most two segments, and no problem ``doctor`` would report."""
    tree = memory.temporal
    for branch in tree.branches.values():
        ends = [spans(memory, child) for child in branch.children]
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(ends)), f"{branch.label}: {ends}"
        level = tree.level_of(branch.id)
        if level - 1 > SESSION:
            named = [
                memory.calendar.period_key(level - 1, spans(memory, child)[0]) for child in branch.children
            ]
            assert len(set(named)) == len(named), (
                f"two children of {branch.label} name one {period_name(level - 1)}"
            )
    by_session: dict[str, set[str]] = {}
    for leaf in memory.leaves.values():
        if leaf.session is not None:
            segment = tree.parent_of[leaf.id]
            by_session.setdefault(leaf.session, set()).add(tree.branches[segment].parent or "")
    for session, nodes in by_session.items():
        assert len(nodes) == 1, f"session {session} is cut across {nodes}"
        (node,) = nodes
        held = {memory.leaves[i].session for i in tree.walk(node) if i in memory.leaves}
        assert held == {session} and len(tree.branches[node].children) <= 2
    assert memory_problems(memory) == []


def sessions_left_to_right(memory: Memory) -> list[float]:
    """The start of each session node met walking ``right`` from the earliest one."""
    tree = memory.temporal
    first = min(
        (b for b in tree.branches.values() if tree.level_of(b.id) == SESSION), key=lambda b: b.first_ts
    )
    starts, here = [first.first_ts], first.id
    while True:
        try:
            here = move(memory, here, "right", "temporal").id
        except NavigationError:
            return starts
        starts.append(spans(memory, here)[0])


def test_sessions_out_of_order_and_backdated_memories_sit_in_time_order(service: MemoryService) -> None:
    arrivals = [*session_turns(3), *session_turns(0)]
    arrivals.append((BACKDATED[0][0].isoformat(), "", BACKDATED[0][1]))
    arrivals += [*session_turns(4), *session_turns(1)]
    arrivals += [(when.isoformat(), "", text) for when, text in BACKDATED[1:]]
    arrivals += session_turns(2)
    for when, session, text in arrivals:
        service.remember(text, timestamp=when, session=session or None)

    memory = service.memory()
    assert_in_time_order(memory)
    tree = memory.temporal
    years = [c for c in tree.root.children]
    assert [tree.branches[y].label.split(" · ")[0] for y in years] == ["2025", "2026"]
    starts = sessions_left_to_right(memory)
    assert starts == sorted(starts) and len(starts) == 5 + len(BACKDATED)
    session_nodes = [b for b in tree.branches.values() if tree.level_of(b.id) == SESSION]
    assert sorted(b.label.split(" · ")[0] for b in session_nodes if "work-" in b.label)[0] == (
        "session work-0 2026-03-09 09:00"
    )
    assert service.upkeep.doctor() == []


def test_a_remember_out_of_order_changes_a_path_not_the_whole_tree(service: MemoryService) -> None:
    for s in (0, 1, 2, 3, 4):
        for when, session, text in session_turns(s):
            service.remember(text, timestamp=when, session=session)
    before = set(service.memory().temporal.branches)
    early = datetime.fromisoformat(session_turns(1)[0][0]) - timedelta(hours=3)
    service.remember("A note backdated to the morning of the second session.", timestamp=early.isoformat())
    after = set(service.memory().temporal.branches)
    assert len(after - before) <= 6 and len(before - after) <= 6
    assert_in_time_order(service.memory())


def write_note(folder: Path, name: str, date: str, text: str) -> None:
    (folder / name).write_text(f"---\ndate: {date}\n---\n{text}\n", encoding="utf-8")


def test_markdown_notes_named_out_of_date_order_come_in_by_their_dates(
    empty_home: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    write_note(notes, "a-release.md", "2026-04-02T15:00:00Z", "Release 1.0 of billing went out.")
    write_note(notes, "b-audit.md", "2025-06-01T12:00:00Z", "The audit asked for gapless invoice numbers.")
    write_note(notes, "c-kickoff.md", "2026-03-09T09:00:00Z", "Kickoff of the billing rewrite.")
    write_note(notes, "d-planning.md", "2026-01-15T08:30:00Z", "January planning put billing first.")
    assert main(["import", "--from", "markdown", str(notes)]) == 0

    service = MemoryService(Settings(home=str(empty_home)))
    try:
        memory = service.memory()
        by_seq = sorted(memory.leaves.values(), key=lambda leaf: leaf.seq)
        assert [leaf.text.split(" ")[0] for leaf in by_seq] == ["The", "January", "Kickoff", "Release"]
        assert_in_time_order(memory)
        assert sessions_left_to_right(memory) == sorted(leaf.timestamp for leaf in by_seq)
    finally:
        service.close()


def test_an_import_stores_dated_records_oldest_first_and_undated_after_them_in_file_order(
    empty_home: Path, tmp_path: Path
) -> None:
    records = [
        {"content": "Undated first line."},
        {"content": "Dated in April.", "timestamp": "2026-04-01T10:00:00Z"},
        {"content": "Undated second line."},
        {"content": "Dated in January.", "timestamp": "2026-01-01T10:00:00Z"},
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    assert main(["import", str(path)]) == 0
    service = MemoryService(Settings(home=str(empty_home)))
    try:
        texts = [leaf.text for leaf in sorted(service.memory().leaves.values(), key=lambda leaf: leaf.seq)]
        assert texts == [
            "Dated in January.",
            "Dated in April.",
            "Undated first line.",
            "Undated second line.",
        ]
    finally:
        service.close()


def test_a_bad_record_anywhere_in_an_import_stores_nothing(empty_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    good = "".join(json.dumps({"content": f"Good record {i}."}) + "\n" for i in range(300))
    path.write_text(
        good + json.dumps({"content": "Bad time.", "timestamp": "last Tuesday"}) + "\n", encoding="utf-8"
    )
    assert main(["remember", "Kept from before."]) == 0
    assert main(["import", str(path)]) == 2
    service = MemoryService(Settings(home=str(empty_home)))
    try:
        assert [leaf.text for leaf in service.memory().leaves.values()] == ["Kept from before."]
    finally:
        service.close()


# -- any arrival order -----------------------------------------------------------------------------

DAY = 86_400.0
START = MONDAY.timestamp()
# Three sessions with ids (one going past midnight), memories without ids a few hours or days
# apart, and memories months and a year away: (offset in seconds, session id).
MOMENTS: list[tuple[float, str | None]] = [
    *[(i * 300.0, "alpha") for i in range(5)],
    *[(DAY + 23 * 3600 + i * 900.0, "beta") for i in range(4)],
    *[(9 * DAY + i * 600.0, "gamma") for i in range(3)],
    (2 * DAY, None),
    (2 * DAY + 120, None),
    (2 * DAY + 5 * 3600, None),
    (-75 * DAY, None),
    (-400 * DAY, None),
    (40 * DAY, None),
]
VECTORS = np.random.default_rng(7).normal(size=(len(MOMENTS), 8)).astype(np.float32)


def shape_of(memory: Memory) -> set[tuple[str, tuple[int, ...] | float, frozenset[str]]]:
    """The periods and sessions of the temporal tree with their members (segments left out)."""
    tree = memory.temporal
    shape = set()
    for branch in tree.branches.values():
        level = tree.level_of(branch.id)
        if level >= SESSION and branch.parent is not None:
            members = frozenset(i for i in tree.walk(branch.id) if i in memory.leaves)
            key = branch.first_ts if level == SESSION else UTC_CALENDAR.period_key(level, branch.first_ts)
            shape.add((period_name(level), key, members))
    return shape


def built_in(order: list[int]) -> Memory:
    memory = Memory(8)
    for seq, i in enumerate(order):
        offset, session = MOMENTS[i]
        vector = VECTORS[i] / np.linalg.norm(VECTORS[i])
        leaf = Leaf(
            id=f"m{i:03d}",
            text=f"memory {i}",
            vector=vector,
            seq=seq,
            timestamp=START + offset,
            session=session,
        )
        memory.add_leaf(leaf)
    return memory


IN_ORDER = sorted(range(len(MOMENTS)), key=lambda i: MOMENTS[i][0])


@settings(max_examples=60, deadline=None)
@given(st.permutations(range(len(MOMENTS))))
def test_any_arrival_order_gives_the_same_periods_sessions_and_members(order: list[int]) -> None:
    memory = built_in(list(order))
    assert shape_of(memory) == shape_of(built_in(IN_ORDER))
    assert_in_time_order(memory)


# -- a store built out of order by an older memtree-mcp --------------------------------------------


@pytest.fixture
def old_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of a store 4a36e47 wrote with memories out of time order (fixtures/store-4a36e47)."""
    for name in list(os.environ):
        if name.startswith("MEMTREE_"):
            monkeypatch.delenv(name)
    home = tmp_path / "old"
    shutil.copytree(FIXTURES / "store-4a36e47", home, ignore=shutil.ignore_patterns("*.py"))
    monkeypatch.setenv("MEMTREE_HOME", str(home))
    return home


def test_doctor_tells_an_old_store_built_out_of_order_and_repair_mends_it(
    old_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor"]) == 1
    told = capsys.readouterr().out
    assert "4 problems" in told and "out of time order" in told
    assert main(["doctor", "--repair"]) == 0
    assert "default: repaired" in capsys.readouterr().out
    assert main(["doctor"]) == 0
    assert "default: ok" in capsys.readouterr().out
    service = MemoryService(Settings(home=str(old_store)))
    try:
        memory = service.memory()
        assert len(memory.leaves) == 8
        assert_in_time_order(memory)
    finally:
        service.close()


def test_the_first_write_to_an_old_store_built_out_of_order_mends_it(
    old_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["remember", "A new memory after the upgrade.", "--timestamp", "2026-03-10T10:00:00Z"]) == 0
    assert main(["doctor"]) == 0
    service = MemoryService(Settings(home=str(old_store)))
    try:
        memory = service.memory()
        assert len(memory.leaves) == 9
        assert_in_time_order(memory)
    finally:
        service.close()


# -- a time zone ------------------------------------------------------------------------------------


def test_the_time_zone_decides_where_a_day_starts_and_the_dates_shown(
    empty_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # 23:30 UTC on the 14th is the 15th in Tokyo: one day in UTC, two in Tokyo.
    for when in ("2026-03-14T10:00:00Z", "2026-03-14T23:30:00Z"):
        assert main(["remember", f"A note written at {when}.", "--timestamp", when]) == 0
    capsys.readouterr()
    assert main(["recall", "note written"]) == 0
    assert "2026-03-15" not in capsys.readouterr().out
    # The namespace keeps the zone it was made in; another setting says so, and moves it on purpose.
    monkeypatch.setenv("MEMTREE_TIMEZONE", "Asia/Tokyo")
    assert main(["recall", "note written"]) == 0
    assert "2026-03-15" not in capsys.readouterr().out
    assert main(["doctor"]) == 0
    assert "days in UTC" in capsys.readouterr().out
    assert main(["doctor", "--repair", "--timezone", "Asia/Tokyo"]) == 0
    assert "days in Asia/Tokyo" in capsys.readouterr().out
    assert main(["recall", "note written"]) == 0
    shown = capsys.readouterr().out
    assert "2026-03-14" in shown and "2026-03-15" in shown
    assert main(["tree", "--tree", "temporal", "--depth", "3"]) == 0
    tree = capsys.readouterr().out
    assert "2026-03-14 (Saturday)" in tree and "2026-03-15 (Sunday)" in tree
    assert main(["remember", "A time without a zone is Tokyo time.", "--timestamp", "2026-03-16T08:00"]) == 0
    assert main(["doctor"]) == 0
    monkeypatch.delenv("MEMTREE_TIMEZONE")
    service = MemoryService(Settings(home=str(empty_home)))
    try:
        (leaf,) = [leaf for leaf in service.memory().leaves.values() if "Tokyo" in leaf.text]
        assert leaf.timestamp == datetime(2026, 3, 15, 23, 0, tzinfo=UTC).timestamp()
        assert service.memory().calendar.name == "Asia/Tokyo"
    finally:
        service.close()


def test_an_unknown_time_zone_is_one_line_naming_it(
    empty_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMTREE_TIMEZONE", "Mars/Olympus")
    assert main(["recall", "anything"]) == 2
    err = capsys.readouterr().err
    assert "MEMTREE_TIMEZONE" in err and "'Mars/Olympus'" in err and "Europe/Berlin" in err
    assert not empty_home.exists()


def test_a_session_cut_at_its_size_where_a_long_memory_s_chunks_share_a_time_keeps_time_order(
    service: MemoryService,
) -> None:
    from memtree_mcp.core.trees.temporal import MAX_SESSION
    from tests.tree_checks import assert_temporal_invariants

    def iso(seconds: float) -> str:
        return datetime.fromtimestamp(seconds, UTC).isoformat()

    start = 1_795_000_000.0
    records = [
        {"content": f"Standup note {i}: ticket {1000 + i} moved to review.", "timestamp": iso(start + i)}
        for i in range(MAX_SESSION - 6)
    ]
    service.upkeep.import_memories(records)
    # Twelve chunks of one moment: the session fills up with its first ones, the rest go on in a
    # node of their own that starts at the same moment.
    long_note = "\n\n".join(
        f"Part {p} of the retro: "
        + " ".join(f"item {p}-{w} was about the deploy pipeline" for w in range(14))
        for p in range(12)
    )
    service.remember(long_note, timestamp=iso(start + 500))
    # A memory that arrives late, before the long one: its session is grouped again and overflows.
    service.remember("The retro moved to Thursday.", timestamp=iso(start + 400))
    memory = service.memory()
    assert memory is not None
    assert_temporal_invariants(memory.temporal)
    assert service.upkeep.doctor() == []


@pytest.mark.parametrize("seed", range(4))
def test_writers_taking_turns_with_late_memories_and_full_sessions_keep_time_order(
    tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    import random

    from memtree_mcp.core.trees import temporal
    from tests.tree_checks import assert_temporal_invariants

    monkeypatch.setattr(temporal, "MAX_SESSION", 6)  # sessions fill up within a few memories
    rnd = random.Random(seed)
    home = str(tmp_path / "home")
    writers = [MemoryService(Settings(home=home), embedder=embedder) for _ in range(3)]  # type: ignore[arg-type]
    start = 1_795_000_000.0
    for i in range(30):
        moment = datetime.fromtimestamp(start + i * 0.5 - rnd.uniform(0, 3), UTC).isoformat()
        if rnd.random() < 0.2:  # a memory of several chunks, all of one moment
            text = "\n\n".join(
                f"Note {i} part {p}: " + "the build cache moved to the new bucket " * 30 for p in range(3)
            )
        else:
            text = f"Note {i}: the on-call rota is owned by person {1000 + i}."
        rnd.choice(writers).remember(text, timestamp=moment)
    checker = MemoryService(Settings(home=home), embedder=embedder)  # type: ignore[arg-type]
    memory = checker.memory()
    assert memory is not None
    assert_temporal_invariants(memory.temporal)
    assert checker.upkeep.doctor() == []
