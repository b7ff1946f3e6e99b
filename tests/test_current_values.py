"""Summaries and navigation state the current value once the agent has confirmed the updates that
``remember`` offered: a memory a later one updates is not stated
as current by ``summarize`` (whole, node, subject) nor by ``navigate`` (node texts, labels, the
agent's found lines), while a period summary still tells what happened in its period."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from memtree_mcp.providers.local import MiniLMEmbedder
from memtree_mcp.service import MemoryService
from tests.fake_openai import fake_openai, llm_settings
from tests.mcp_text import client_remembering, text_of
from tests.test_refinement import echo_summary

pytestmark = pytest.mark.anyio

# A small project memory: a first period of facts, then a later one in which six of them change.
FACTS = [
    ("2025-02-03T09:00:00Z", "a1", "The Heron ingest service listens on port 7070."),
    ("2025-02-03T09:02:00Z", "a1", "Ines Duarte owns the Heron billing module."),
    ("2025-02-03T09:04:00Z", "a1", "Heron's mobile app requires Android 10 or later."),
    ("2025-02-03T09:06:00Z", "a1", "HERON-88, the CSV export timeout, is still open."),
    ("2025-02-03T09:08:00Z", "a1", "The Heron web client is pinned to React 17."),
    ("2025-02-03T09:10:00Z", "a1", "Heron's nightly backups are kept for 7 days."),
    ("2025-02-04T10:00:00Z", "a2", "Heron's design reviews happen on Thursdays at 14:00."),
    ("2025-02-04T10:02:00Z", "a2", "Heron uses Sentry for error tracking."),
    ("2025-02-04T10:04:00Z", "a2", "The user prefers short pull requests with one change each."),
    ("2025-02-04T10:06:00Z", "a2", "Heron's staging cluster runs in the eu-west-1 region."),
    ("2025-02-04T10:08:00Z", "a2", "Invoices are rendered to PDF with WeasyPrint."),
    ("2025-04-14T09:00:00Z", "b1", "The Heron ingest service now listens on port 7443."),
    ("2025-04-14T09:02:00Z", "b1", "Karl Weber now owns the Heron billing module."),
    ("2025-04-14T09:04:00Z", "b1", "Heron's mobile app now requires Android 12 or later."),
    ("2025-04-15T10:00:00Z", "b2", "HERON-88 is resolved: CSV exports now stream in chunks."),
    ("2025-04-15T10:02:00Z", "b2", "The Heron web client was upgraded to React 18."),
    ("2025-04-15T10:04:00Z", "b2", "Heron's nightly backups are now kept for 30 days."),
    ("2025-04-15T10:06:00Z", "b2", "The Heron team moved its chat to Zulip."),
]
# Each changed fact: what the later memory says (fresh) and what only the earlier one said (stale).
CHANGES = {
    "ingest service port": ("7443", "port 7070"),
    "billing module owner": ("Karl Weber", "Ines Duarte"),
    "minimum Android version of the mobile app": ("Android 12", "Android 10"),
    "HERON-88 CSV export timeout": ("resolved", "still open"),
    "React version of the web client": ("React 18", "React 17"),
    "how long nightly backups are kept": ("30 days", "7 days"),
}
STABLE = ["Thursdays at 14:00", "Sentry", "eu-west-1", "WeasyPrint"]
# What the agent knows when it remembers each change: the memory it replaces (confirmed from the
# candidates remember offers; the chat's move to Zulip replaces nothing).
REPLACES = {FACTS[11 + i][2]: FACTS[i][2] for i in range(6)}
DAY = re.compile(r"\((\d{4}-\d\d-\d\d)")
# A node id (a letter and 15 hex digits): random, so it may hold a value such as "7443" by chance.
NODE_ID = re.compile(r"\b[a-z][0-9a-f]{15}\b")


def without_ids(text: str) -> str:
    return NODE_ID.sub("", text)


@pytest.fixture
async def client(service: MemoryService) -> AsyncIterator[Client]:
    async with client_remembering(service, FACTS, REPLACES) as connected:
        yield connected


async def test_the_whole_summary_states_every_current_value_and_no_stale_one(client: Client) -> None:
    summary = text_of(await client.call_tool("summarize", {}))
    for subject, (fresh, stale) in CHANGES.items():
        assert fresh in summary and stale not in summary, (subject, summary)
    assert all(fact in summary for fact in STABLE), summary


async def test_a_subject_summary_states_the_current_value(client: Client) -> None:
    for subject, (fresh, stale) in CHANGES.items():
        summary = text_of(await client.call_tool("summarize", {"query": subject}))
        assert fresh in summary and stale not in summary, (subject, summary)


async def test_a_node_summary_of_the_semantic_root_states_the_current_values(client: Client) -> None:
    summary = text_of(await client.call_tool("summarize", {"node_id": "semantic-root", "max_tokens": 120}))
    assert not any(stale in summary for _, stale in CHANGES.values()), summary


@pytest.mark.parametrize("budget", [80, 400, 1200])
async def test_a_period_summary_tells_what_happened_then_and_notes_what_changed_later(
    client: Client, budget: int
) -> None:
    summary = text_of(
        await client.call_tool(
            "summarize", {"time_from": "2025-02-01", "time_to": "2025-02-28", "max_tokens": budget}
        )
    )
    lines = without_ids(summary).splitlines()
    assert lines and len(summary) <= 4 * budget
    for line in lines:
        # Every line is of the period: its own date (or span) is in February, never April's.
        assert DAY.search(line) is None or DAY.search(line).group(1).startswith("2025-02"), line  # type: ignore[union-attr]
        for fresh, stale in CHANGES.values():
            if fresh in line:  # a later value only ever appears as a note beside the earlier one
                assert "changed later" in line and stale in line, line
    if budget >= 400:
        assert all(stale in summary for _, stale in CHANGES.values()), summary
        assert summary.count("changed later") >= len(CHANGES), summary


async def test_the_later_period_is_summarised_with_its_own_memories(client: Client) -> None:
    summary = text_of(
        await client.call_tool("summarize", {"time_from": "2025-04-01", "time_to": "2025-04-30"})
    )
    assert all(fresh in summary for fresh, _ in CHANGES.values()), summary
    assert not any(stale in summary for _, stale in CHANGES.values()), summary


async def test_navigate_texts_and_labels_of_the_semantic_tree_hold_no_stale_value(
    client: Client, service: MemoryService
) -> None:
    root = text_of(await client.call_tool("navigate", {"move": "stay"}))
    assert not any(stale in root for _, stale in CHANGES.values()), root
    memory = service.memory()
    assert memory is not None
    for branch in memory.semantic.branches.values():
        for _, stale in CHANGES.values():
            assert stale not in branch.text and stale.split()[-1] not in branch.label.split(", "), (
                branch.label,
                branch.text,
            )


async def test_forgetting_the_update_makes_the_earlier_value_current_again(
    client: Client, service: MemoryService
) -> None:
    found = await client.call_tool("recall", {"query": "Which port does the ingest service listen on?"})
    assert found.structured_content is not None
    newer = next(
        h["id"]
        for h in found.structured_content["hits"]
        if h["id"].startswith("m") and not h.get("superseded_by")
    )
    await client.call_tool("forget", {"ids": [newer]})
    summary = text_of(await client.call_tool("summarize", {}))
    assert "port 7070" in summary and "7443" not in without_ids(summary), summary
    memory = service.memory()
    assert memory is not None
    assert any("port 7070" in b.text for b in memory.semantic.branches.values())


async def test_a_stale_memory_in_view_is_marked_with_its_update(client: Client) -> None:
    temporal = text_of(await client.call_tool("navigate", {"tree": "temporal", "move": "down", "index": 0}))
    for line in temporal.splitlines():
        if "port 7070" in line:
            assert "changed later" in line, line
    path = text_of(
        await client.call_tool(
            "navigate", {"agent": True, "query": "Which port does the ingest service use?"}
        )
    )
    assert "7443" in path.split("found:")[1], path


@pytest.mark.parametrize("tree", ["semantic", "temporal"])
async def test_the_agents_found_lines_mark_every_stale_memory_and_show_its_update(
    client: Client, tree: str
) -> None:
    marked = 0
    for subject, (fresh, stale) in CHANGES.items():
        # Asked about the old value too, the agent walks into the period that holds it.
        query = f"{subject}: {stale}?"
        result = text_of(
            await client.call_tool("navigate", {"agent": True, "query": query, "tree": tree, "max_steps": 12})
        )
        found = result.split("found:\n", 1)[1].splitlines() if "found:\n" in result else []
        for line in found:
            if stale in line:
                assert "superseded by" in line or "(changed later)" in line, (subject, found)
                assert any(fresh in other for other in found), (subject, found)
                marked += 1
    assert marked >= 1


@pytest.mark.slow
def test_the_llm_writing_summaries_is_told_which_memories_were_superseded(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    with fake_openai() as server:
        server.reply_for = echo_summary
        service = MemoryService(llm_settings(tmp_path, server), embedder=embedder)
        try:
            ids: dict[str, str] = {}
            for timestamp, session, text in FACTS:
                older = [ids[REPLACES[text]]] if text in REPLACES else []
                ids[text] = service.remember(
                    text, timestamp=timestamp, session=session, supersedes=older
                ).ids[0]
            assert service.refiner.wait_idle(timeout=120)
            prompts = [body["messages"] for _, _, body in server.requests if body and "messages" in body]
            users = [messages[-1]["content"] for messages in prompts]
            systems = {messages[0]["content"] for messages in prompts}
        finally:
            service.close()
    note = "{superseded, 2025-04-14: The Heron ingest service now listens on port 7443.}"
    assert any(f"port 7070. {note}" in user for user in users), users
    assert any("{changed later, 2025-04-14: The Heron ingest service now listens" in u for u in users)
    assert any("State the current value" in system for system in systems)
    assert any("never the later value in its place" in " ".join(system.split()) for system in systems)
