"""Several real `memtree-mcp serve` processes on one store, each remembering at the same time.

Writers serialise through the per-namespace file lock and follow the table's latest version, so
afterwards a fresh service must find every memory exactly once, with unique seqs and valid trees.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from memtree_mcp.config import Settings
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.service import MemoryService
from tests.test_stdio import server_env
from tests.tree_checks import assert_semantic_invariants, assert_temporal_invariants

COMMAND = str(Path(sys.executable).with_name("memtree-mcp"))
PER_PROCESS = 8
TIMEOUT = 90.0


def memory_text(process: int, i: int) -> str:
    return (
        f"Process {process} stored fact number {i}: the code word is {process * 100 + i}-{'abcdefgh'[i % 8]}."
    )


async def remember_all(home: Path, process: int, stored: dict[int, list[str]]) -> None:
    params = StdioServerParameters(command=COMMAND, args=["serve"], env=server_env(home))
    async with Client(params) as client:
        for i in range(PER_PROCESS):
            result = await client.call_tool(
                "remember", {"content": memory_text(process, i), "tags": [f"p{process}"]}
            )
            assert not result.is_error, result.content
            assert result.structured_content is not None
            assert result.structured_content["deduplicated"] is False
            stored[process].extend(result.structured_content["ids"])


async def run_servers(home: Path, processes: int) -> dict[int, list[str]]:
    stored: dict[int, list[str]] = {p: [] for p in range(processes)}
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as group:
            for process in range(processes):
                group.start_soon(remember_all, home, process, stored)
    return stored


@pytest.mark.parametrize("processes", [2, 4])
def test_concurrent_servers_keep_every_memory_exactly_once(
    tmp_path: Path, embedder: MiniLMEmbedder, processes: int
) -> None:
    home = tmp_path / "store"
    stored = anyio.run(run_servers, home, processes)

    memory = MemoryService(Settings(home=str(home), namespace="default"), embedder=embedder).memory()
    assert memory is not None
    expected = {memory_text(p, i) for p in range(processes) for i in range(PER_PROCESS)}
    texts = [leaf.text for leaf in memory.leaves.values()]
    assert len(texts) == len(expected) and set(texts) == expected
    all_ids = [leaf_id for ids in stored.values() for leaf_id in ids]
    assert len(all_ids) == len(set(all_ids)) == len(expected)
    assert set(all_ids) == set(memory.leaves)
    seqs = [leaf.seq for leaf in memory.leaves.values()]
    assert len(seqs) == len(set(seqs))
    assert_semantic_invariants(memory.semantic)
    assert_temporal_invariants(memory.temporal)
