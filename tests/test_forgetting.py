"""Forget cannot surprise: a query only lists, deletion takes back ids, the roots and large subtrees
are out of an agent's reach, booleans are booleans; through the service, an MCP client and the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memtree_mcp.config import Settings
from memtree_mcp.core.ranking.relevance import DEFAULT_MIN_RELEVANCE
from memtree_mcp.errors import InvalidInput, NotFound
from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.service.requests import RecallRequest
from tests.mcp_text import text_of

pytestmark = pytest.mark.anyio

COMMAND = str(Path(sys.executable).with_name("memtree-mcp"))
PASSWORD = "The staging database password was rotated to zebra-quartz-77 last week."
# Forty memories, one of them the password: the store where a forget by query used to take ten.
FACTS = [
    PASSWORD,
    "The user's cat is called Miso.",
    "Miso is afraid of the vacuum cleaner.",
    "The team ships a release every second Thursday.",
    "The user prefers dark mode in every editor.",
    "Lunch on Friday is at the Thai place.",
    "The CI runs on GitHub Actions since March.",
    "The production cluster runs Kubernetes 1.29 on three nodes.",
    "Standup is at 9:30 every morning.",
    "The user's favourite editor is Helix.",
    "The office closes on December 24.",
    "Backups run every night at two o'clock.",
    "The API rate limit is 100 requests a minute.",
    "The user is allergic to peanuts.",
    "The design review is on Tuesdays.",
    "The VPN uses WireGuard.",
    "The user's sister lives in Lyon.",
    "The mobile app is written in Kotlin.",
    "The user runs 10k on Saturdays.",
    "Invoices are due at the end of the month.",
    "The user's laptop is a ThinkPad X1.",
    "Meeting notes go into the wiki.",
    "The user likes jazz while coding.",
    "The main branch is protected.",
    "Docker images are pushed to GHCR.",
    "The user learns Japanese.",
    "Sprint planning is every other Monday.",
    "The logo is blue and orange.",
    "The user drinks oat milk.",
    "The database schema has 42 tables.",
    "Error budgets are reviewed monthly.",
    "The user's dog is called Pixel.",
    "The support rota changes weekly.",
    "The user reads before bed.",
    "Feature flags live in LaunchDarkly.",
    "The user dislikes meetings before 10am.",
    "The frontend uses React 18.",
    "The user moved to Berlin in 2021.",
    "Tests must pass before merging.",
    "The user's bike is a green road bike.",
]


@pytest.fixture
def forty(service: MemoryService) -> MemoryService:
    service.upkeep.import_memories({"content": fact} for fact in FACTS)
    return service


@pytest.fixture
async def client(forty: MemoryService) -> AsyncIterator[Client]:
    async with Client(build_server(forty)) as connected:
        yield connected


def count(service: MemoryService) -> int:
    memory = service.memory()
    assert memory is not None
    return len(memory.leaves)


async def listing(client: Client, query: str) -> tuple[list[str], list[dict[str, Any]]]:
    """A forget query's lines as the model reads them, and its candidates as a program gets them."""
    result = await client.call_tool("forget", {"query": query})
    assert not result.is_error and result.structured_content is not None
    assert result.structured_content["deleted"] == []
    lines = text_of(result).splitlines()
    assert lines[0].startswith("Nothing") and "deleted" in lines[0]
    return lines[1:], result.structured_content["candidates"]


async def call(client: Client, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """(whether it was an error, the structured result or the error text)."""
    result = await client.call_tool("forget", arguments)
    if result.is_error:
        return True, getattr(result.content[0], "text", "")
    return False, result.structured_content


async def test_the_readme_example_lists_the_password_and_deletes_nothing(
    client: Client, forty: MemoryService
) -> None:
    lines, candidates = await listing(client, "the old staging password")
    assert PASSWORD in lines[0] and 1 <= len(lines) <= 3 and len(candidates) == len(lines)
    # Each line shows the relevance a recall shows and ends with the id to pass back.
    for line, candidate in zip(lines, candidates, strict=True):
        assert line.endswith(f"{{{candidate['id']}}}") and f"[{candidate['relevance']:.2f} · " in line
        assert DEFAULT_MIN_RELEVANCE <= candidate["relevance"] <= 1 and set(candidate) == {"id", "relevance"}
    recalled = {
        hit.id: hit.relevance for hit in forty.look_up(RecallRequest("the old staging password", k=20)).hits
    }
    assert recalled[candidates[0]["id"]] == candidates[0]["relevance"]
    assert count(forty) == 40
    error, done = await call(client, {"ids": [candidates[0]["id"]]})
    assert not error and done["deleted"] == [candidates[0]["id"]]
    assert count(forty) == 39
    assert all(hit.text != PASSWORD for hit in forty.look_up(RecallRequest("staging password", k=20)).hits)


async def test_a_query_that_matches_nothing_relevant_lists_nothing(
    client: Client, forty: MemoryService
) -> None:
    for query in ("quantum chromodynamics lecture", "what is the wifi password at home"):
        result = await client.call_tool("forget", {"query": query})
        assert not result.is_error
        assert result.structured_content == {"deleted": [], "candidates": [], "namespace": "default"}
        assert text_of(result) == "Nothing was deleted: no memory matches."
    assert count(forty) == 40


async def test_a_query_with_confirm_deletes_nothing_and_says_to_pass_ids(
    client: Client, forty: MemoryService
) -> None:
    error, text = await call(client, {"query": "the old staging password", "confirm": True})
    assert error and "ids" in text and "deletes nothing" in text
    assert count(forty) == 40


async def test_confirm_takes_true_or_false_only(client: Client, forty: MemoryService) -> None:
    memory = forty.memory()
    assert memory is not None
    branch = next(b for b in memory.temporal.branches.values() if b.kind == "internal" and b.leaf_count >= 2)
    for fake_true in ("yes", "true", 1, "1", [True]):
        error, _ = await call(client, {"ids": [branch.id], "confirm": fake_true})
        assert error, fake_true
    for flag, tool, arguments in (
        ("expand", "recall", {"query": "cat"}),
        ("agent", "navigate", {"query": "cat"}),
    ):
        result = await client.call_tool(tool, {**arguments, flag: "yes"})
        assert result.is_error, flag
    assert count(forty) == 40
    with pytest.raises(InvalidInput, match="confirm must be true or false"):
        forty.forget(node_id=branch.id, confirm="yes")  # type: ignore[arg-type]
    assert count(forty) == 40


async def test_the_roots_are_refused_without_inviting_a_retry(client: Client, forty: MemoryService) -> None:
    for root in ("semantic-root", "temporal-root"):
        for arguments in ({"ids": [root]}, {"ids": [root], "confirm": True}):
            error, text = await call(client, arguments)
            assert error and "not a call to repeat" in text
            assert f"memtree-mcp forget --all-under {root}" in text and "confirm=true" not in text
    assert count(forty) == 40


async def test_forgetting_by_ids_deletes_exactly_those_and_checks_them_all_first(
    client: Client, forty: MemoryService
) -> None:
    memory = forty.memory()
    assert memory is not None
    by_text = {leaf.text: leaf.id for leaf in memory.leaves.values()}
    cat, dog = by_text["The user's cat is called Miso."], by_text["The user's dog is called Pixel."]
    summary = next(b.id for b in memory.semantic.branches.values() if b.kind == "internal")
    for bad in ([cat, "m-no-such-memory"], [cat, summary], [], "not-a-list"):
        error, _ = await call(client, {"ids": bad})
        assert error, bad
    assert count(forty) == 40
    error, done = await call(client, {"ids": [cat, dog, cat]})
    assert not error and done["deleted"] == [cat, dog]
    after = forty.memory()
    assert after is not None and len(after.leaves) == 38 and not {cat, dog} & set(after.leaves)
    error, text = await call(client, {"ids": [f"m{i}" for i in range(51)]})
    assert error and "50" in text


async def test_a_summary_among_the_ids_goes_only_with_confirm(client: Client, forty: MemoryService) -> None:
    memory = forty.memory()
    assert memory is not None
    branch = next(
        b for b in memory.semantic.branches.values() if b.kind == "internal" and 2 <= b.leaf_count <= 50
    )
    error, text = await call(client, {"ids": [branch.id]})
    assert error and f"summary of {branch.leaf_count} memories" in text and "confirm=true" in text
    assert count(forty) == 40
    error, done = await call(client, {"ids": [branch.id], "confirm": True})
    assert not error and len(done["deleted"]) == branch.leaf_count
    assert count(forty) == 40 - branch.leaf_count


def test_a_subtree_above_the_limit_is_refused_and_the_cli_limit_lifts_it(forty: MemoryService) -> None:
    memory = forty.memory()
    assert memory is not None
    branch = max(
        (b for b in memory.semantic.branches.values() if b.kind == "internal"), key=lambda b: b.leaf_count
    )
    assert branch.leaf_count >= 2
    with pytest.raises(InvalidInput, match="not a call to repeat or to split") as refused:
        forty.forget(node_id=branch.id, confirm=True, limit=branch.leaf_count - 1)
    assert f"memtree-mcp forget --all-under {branch.id} --namespace default" in str(refused.value)
    with pytest.raises(InvalidInput, match="confirm=true"):
        forty.forget(node_id=branch.id)
    assert count(forty) == 40
    gone = forty.forget(node_id="semantic-root", confirm=True, limit=None)
    assert len(gone.deleted) == 40 and count(forty) == 0
    with pytest.raises(NotFound):
        forty.forget(ids=[gone.deleted[0]])


def run(home: Path, *args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMTREE_HOME": str(home), **variables}
    return subprocess.run([COMMAND, *args], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_the_cli_forgets_by_id_by_listed_query_and_a_whole_subtree_only_with_a_flag(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    home = tmp_path / "store"
    service = MemoryService(Settings(home=str(home)), embedder=embedder)
    service.upkeep.import_memories({"content": fact} for fact in FACTS)
    service.close()

    listed = run(home, "forget", "--query", "the old staging password")
    assert listed.returncode == 0 and PASSWORD in listed.stdout and "Nothing deleted" in listed.stdout
    nothing = run(home, "forget", "--query", "quantum chromodynamics lecture", "--yes")
    assert nothing.returncode == 0 and "no memory matches" in nothing.stdout
    assert "deleted 0 memories" in nothing.stdout
    done = run(home, "forget", "--query", "the old staging password", "--yes")
    assert done.returncode == 0 and "restore" in done.stdout
    forgotten = int(done.stdout.split("\ndeleted ")[1].split()[0])
    assert 1 <= forgotten <= 3

    survivors = MemoryService(Settings(home=str(home)), embedder=embedder)
    memory = survivors.memory()
    assert memory is not None and len(memory.leaves) == 40 - forgotten
    cat = next(leaf.id for leaf in memory.leaves.values() if leaf.text == "The user's cat is called Miso.")
    survivors.close()
    by_id = run(home, "forget", cat)
    assert by_id.returncode == 0 and "deleted 1 memory" in by_id.stdout

    asked = run(home, "forget", "--all-under", "semantic-root")
    assert asked.returncode == 0 and f"covers {39 - forgotten} memories; nothing deleted" in asked.stdout
    refused = run(home, "forget", "--query", "cat", "--all-under", "semantic-root")
    assert refused.returncode == 2 and "one of them" in refused.stderr and "Traceback" not in refused.stderr
    wiped = run(home, "forget", "--all-under", "semantic-root", "--yes", MEMTREE_RETENTION="0")
    assert wiped.returncode == 0 and f"deleted {39 - forgotten} memories" in wiped.stdout
    assert "restore" not in wiped.stdout  # with no retention, nothing can bring them back
    left = run(home, "namespaces")
    assert left.stdout.split() == ["default", "0"]
