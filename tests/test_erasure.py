"""Forgotten means gone: nothing forgotten comes back through MCP (as_of included), and a purge, by
hand or after MEMTREE_RETENTION, leaves no byte of it in any file under the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import CallToolResult

from memtree_mcp.config import Settings
from memtree_mcp.core.memory import Memory
from memtree_mcp.errors import InvalidInput
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from tests.mcp_text import text_of
from tests.tree_checks import assert_semantic_invariants, assert_temporal_invariants
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio

COMMAND = str(Path(sys.executable).with_name("memtree-mcp"))
MARKER = "xylophonic-marmoset-4417"
SECRET = f"The vault code for the staging bastion is {MARKER}, keep it secret."
OTHERS = [
    "The staging bastion is reached over the WireGuard VPN.",
    "The vault itself is in the Frankfurt region.",
    "The user's cat is called Miso.",
    "Backups of the vault run every night at two o'clock.",
]


def files_holding(home: Path, text: str) -> list[Path]:
    """Every file under ``home`` whose raw bytes contain ``text``."""
    needle = text.encode()
    return [path for path in home.rglob("*") if path.is_file() and needle in path.read_bytes()]


def everything_said(memory: Memory) -> str:
    parts = [leaf.text for leaf in memory.leaves.values()]
    for tree in (memory.semantic, memory.temporal):
        parts += [f"{b.text} {b.label} {b.summary}" for b in tree.branches.values()]
    return "\n".join(parts)


def remember_then_forget_the_secret(service: MemoryService) -> tuple[int, int]:
    """(the version with the secret, the version before it); the secret is forgotten after."""
    first = service.remember(OTHERS[0], timestamp="2024-05-08T10:00:00Z")
    assert first.ids
    before = service.upkeep.history()[-1][0]
    secret = service.remember(SECRET, timestamp="2024-05-08T10:01:00Z").ids[0]
    for i, text in enumerate(OTHERS[1:]):
        service.remember(text, timestamp=f"2024-05-08T10:0{i + 2}:00Z")
    with_secret = service.upkeep.history()[-1][0]
    service.forget(ids=[secret])
    service.remember("The bastion's SSH port is 2222.", timestamp="2024-05-08T10:09:00Z")
    return with_secret, before


def hit_texts(result: CallToolResult) -> list[str]:
    """The memories' texts of recall's lines ("1. [0.71 · 2024-05-08] text {id}"), as the model reads them."""
    return [line.split("] ", 1)[1].rsplit(" {", 1)[0] for line in text_of(result).splitlines()]


@pytest.fixture
async def client(service: MemoryService) -> AsyncIterator[Client]:
    async with Client(build_server(service)) as connected:
        yield connected


async def test_nothing_forgotten_comes_back_through_mcp_not_even_as_of(
    client: Client, service: MemoryService
) -> None:
    with_secret, before = remember_then_forget_the_secret(service)
    shown: list[str] = []
    for when in (str(with_secret), "2999-01-01"):
        for strategy in ("hybrid", "collapsed"):
            for kind in ("any", "summary"):
                arguments = {"query": "vault code", "k": 20, "as_of": when, "strategy": strategy}
                arguments["kind"] = kind
                result = await client.call_tool("recall", arguments)
                assert not result.is_error and result.structured_content is not None
                shown += [text_of(result), json.dumps(result.structured_content)]
    assert shown and all(MARKER not in text for text in shown)
    arguments = {"query": "vault bastion", "k": 20, "as_of": str(with_secret), "min_relevance": 0}
    then = await client.call_tool("recall", arguments)
    texts = set(hit_texts(then))
    assert set(OTHERS) <= texts and "The bastion's SSH port is 2222." not in texts  # the memory as it was
    earliest = await client.call_tool("recall", {"query": "bastion", "as_of": str(before)})
    assert hit_texts(earliest) == [OTHERS[0]]

    for tool, arguments in (
        ("summarize", {"max_tokens": 4000}),
        ("summarize", {"query": "vault code", "max_tokens": 4000}),
        ("navigate", {"query": "vault code", "agent": True}),
        ("navigate", {"tree": "temporal"}),
    ):
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, tool
        assert MARKER not in text_of(result) + json.dumps(result.structured_content), tool
    for tree in ("semantic", "temporal"):
        outline = await client.read_resource(f"memtree://default/outline/{tree}")
        assert MARKER not in json.dumps([c.model_dump() for c in outline.contents])


def test_an_earlier_version_is_rebuilt_from_the_memories_that_still_exist(service: MemoryService) -> None:
    with_secret, _ = remember_then_forget_the_secret(service)
    space = service.spaces["default"]
    from memtree_mcp.service.versions import memory_as_of

    present = frozenset(space.memory.leaves)
    then = memory_as_of(space.table, str(with_secret), space.memory.dimension, present, space.memory.calendar)
    assert MARKER not in everything_said(then)
    assert sorted(leaf.text for leaf in then.leaves.values()) == sorted(OTHERS)
    assert_semantic_invariants(then.semantic)
    assert_temporal_invariants(then.temporal)


def test_a_purge_leaves_no_byte_of_a_forgotten_memory_and_a_valid_store(
    service: MemoryService, settings: Settings, embedder: MiniLMEmbedder
) -> None:
    home = Path(settings.home)
    with_secret, _ = remember_then_forget_the_secret(service)
    assert files_holding(home, MARKER), "the check must see the text in the store's files before the purge"
    assert service.upkeep.restore(str(with_secret))  # restore can undo the forget until the purge
    assert any(MARKER in leaf.text for leaf in service.memory().leaves.values())  # type: ignore[union-attr]
    secret = next(
        h.id for h in service.look_up(RecallRequest("vault code", k=5, kind="leaf")).hits if MARKER in h.text
    )
    service.forget(ids=[secret])

    version = service.upkeep.purge()
    assert files_holding(home, MARKER) == []
    assert service.upkeep.history() == [(version, service.upkeep.history()[0][1])]
    with pytest.raises(InvalidInput, match="versions kept"):
        service.look_up(RecallRequest("vault", as_of=str(with_secret)))
    assert service.upkeep.doctor() == []
    fresh = MemoryService(settings, embedder=embedder)
    memory = fresh.memory()
    assert memory is not None and MARKER not in everything_said(memory)
    assert sorted(leaf.text for leaf in memory.leaves.values()) == sorted(OTHERS)  # as restored
    assert fresh.remember("The vault is audited every quarter.").ids
    assert fresh.upkeep.doctor() == []
    fresh.close()


def test_the_deletion_rows_outlive_a_squash_so_retention_still_purges(
    service: MemoryService, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtree_mcp.store import table as tables

    home = Path(settings.home)
    remember_then_forget_the_secret(service)
    table = service.spaces["default"].table
    forgotten_at = table.oldest_forget
    assert forgotten_at is not None
    monkeypatch.setattr(tables, "SQUASH_SLACK", -10_000)  # every commit squashes the table
    table.history = 0.0  # keeping no earlier commit
    for i in range(12):
        service.remember(f"Filler note {i} about the weather in Lyon.")
    assert table.row_count() < 60  # squashed
    assert table.oldest_forget == forgotten_at
    # Keeping no history, the squash already dropped the forgotten revision and compaction its files.
    assert files_holding(home, MARKER) == []
    monkeypatch.setattr(service.settings, "retention", 0.0)
    service.remember("One more note, after the retention ran out.")  # a commit purges when due
    assert table.oldest_forget is None and files_holding(home, MARKER) == []


def test_a_read_purges_once_the_retention_has_passed(settings: Settings, embedder: MiniLMEmbedder) -> None:
    home = Path(settings.home)
    service = MemoryService(settings.model_copy(update={"retention": 1.0}), embedder=embedder)
    remember_then_forget_the_secret(service)
    # Each read purges once the forget is a second old: the retention is measured on the clock.
    wait_until(
        lambda: service.look_up(RecallRequest("bastion")) and not files_holding(home, MARKER),
        20,
        every=0.1,
        what="a read to purge the forgotten text",
    )
    assert service.upkeep.doctor() == []
    service.close()


def cli(home: Path, *args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMTREE_HOME": str(home), **variables}
    return subprocess.run([COMMAND, *args], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_the_cli_purges_by_hand_at_once_with_no_retention_and_on_open_when_due(tmp_path: Path) -> None:
    home = tmp_path / "store"
    for text in [SECRET, *OTHERS]:
        assert cli(home, "remember", text).returncode == 0
    secret = json.loads(cli(home, "recall", "vault code", "--kind", "leaf", "--json").stdout)["hits"][0]
    assert MARKER in secret["text"]
    done = cli(home, "forget", secret["id"])
    assert done.returncode == 0 and "memtree-mcp purge" in done.stdout
    assert files_holding(home, MARKER)
    purged = cli(home, "purge")
    assert purged.returncode == 0 and "default: purged" in purged.stdout
    assert files_holding(home, MARKER) == []
    assert cli(home, "doctor").returncode == 0

    # MEMTREE_RETENTION=0: the forget itself purges
    assert cli(home, "remember", SECRET).returncode == 0
    again = json.loads(cli(home, "recall", "vault code", "--kind", "leaf", "--json").stdout)["hits"][0]
    assert cli(home, "forget", again["id"], MEMTREE_RETENTION="0").returncode == 0
    assert files_holding(home, MARKER) == []

    # forgotten under a week's retention, then opened by a process whose retention has run out
    assert cli(home, "remember", SECRET).returncode == 0
    third = json.loads(cli(home, "recall", "vault code", "--kind", "leaf", "--json").stdout)["hits"][0]
    assert cli(home, "forget", third["id"]).returncode == 0
    assert files_holding(home, MARKER)
    assert cli(home, "recall", "bastion", MEMTREE_RETENTION="0").returncode == 0
    assert files_holding(home, MARKER) == []
    assert cli(home, "doctor").returncode == 0


def test_a_reindex_keeps_the_date_of_what_was_forgotten_so_the_purge_still_comes(
    service: MemoryService, settings: Settings, embedder: MiniLMEmbedder
) -> None:
    home = Path(settings.home)
    remember_then_forget_the_secret(service)
    forgotten_at = service.spaces["default"].table.oldest_forget
    service.upkeep.reindex()
    fresh = MemoryService(settings.model_copy(update={"retention": 3_600.0}), embedder=embedder)
    texts = {hit.text for hit in fresh.look_up(RecallRequest("bastion", kind="leaf", min_relevance=0)).hits}
    assert "The bastion's SSH port is 2222." in texts and not any(MARKER in text for text in texts)
    assert fresh.spaces["default"].table.oldest_forget == forgotten_at
    # The re-index starts the history again: the versions before it, the forgotten text with them, went.
    assert files_holding(home, MARKER) == []
    fresh.close()
    due = MemoryService(settings.model_copy(update={"retention": 0.0}), embedder=embedder)
    reachable = {hit.text for hit in due.look_up(RecallRequest("bastion", kind="leaf", min_relevance=0)).hits}
    assert set(OTHERS[:2]) <= reachable  # opening it purges, and every memory kept is still there
    assert due.spaces["default"].table.oldest_forget is None
    assert files_holding(home, MARKER) == [] and due.upkeep.doctor() == []
    due.close()


# Run in a child: opens the store whole (no snapshot yet), so it saves one, and stops for good
# once the snapshot's temporary file holds argv[2] on disk, saying so on stdout.
SAVE_THEN_HANG = """
import sys, threading
from memtree_mcp.config import Settings
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from memtree_mcp.store import snapshot as snapshots

snapshots.SMALLEST = 0
write = snapshots._Summed.write


def write_then_hang(self, data):
    written = write(self, data)
    if sys.argv[2].encode() in bytes(data):
        self.out.flush()
        print("saving", flush=True)
        threading.Event().wait()
    return written


snapshots._Summed.write = write_then_hang
MemoryService(Settings(home=sys.argv[1], namespace="default")).look_up(RecallRequest("bastion"))
"""


@pytest.mark.slow
def test_a_purge_removes_the_snapshot_a_process_killed_while_saving_left_behind(
    service: MemoryService, settings: Settings
) -> None:
    home = Path(settings.home)
    service.remember(SECRET)
    for text in OTHERS:
        service.remember(text)
    secret = service.look_up(RecallRequest("vault code", kind="leaf", k=1)).hits[0].id
    child = subprocess.Popen(
        [sys.executable, "-c", SAVE_THEN_HANG, str(home), MARKER],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "MEMTREE_LOG_LEVEL": "ERROR"},
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "saving\n"
    finally:
        child.kill()  # SIGKILL: no handler, no cleanup
        child.wait(timeout=30)
    assert [path.parent.name for path in files_holding(home, MARKER)].count(".snapshots") == 1
    service.forget(ids=[secret])
    service.upkeep.purge()
    assert files_holding(home, MARKER) == []
