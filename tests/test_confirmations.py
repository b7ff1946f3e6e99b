"""The user, not the agent, confirms a forget by query or by summaries, where the client can ask.

Driven through the SDK's client with an elicitation handler playing the user, in the stateless
revision (2026-07-28, an input-required round) and with the handshake (2025-11-25, a request
mid-call): a yes deletes exactly what was shown, a no or a cancel deletes nothing and says so, a
client without elicitation keeps the two steps, and memories named one by one are not asked about.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.types import ElicitResult

from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService

pytestmark = pytest.mark.anyio

MODES = ["2026-07-28", "legacy"]
STAGING = [
    "The staging database password rotates every Monday.",
    "The staging database runs Postgres 16 on port 5433.",
]
OTHER = "The billing service listens on port 8443."


class User:
    """Answers the elicitation as told, and keeps what it was asked."""

    def __init__(self, action: str, delete: bool = True) -> None:
        self.action, self.delete, self.asked = action, delete, []  # type: ignore[var-annotated]

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        self.asked.append(params.message)
        content = {"delete": self.delete} if self.action == "accept" else None
        return ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


async def remembered(client: Client) -> list[str]:
    ids = []
    for text in [*STAGING, OTHER]:
        stored = await client.call_tool("remember", {"content": text})
        assert not stored.is_error and stored.structured_content is not None
        ids += stored.structured_content["ids"]
    return ids


def texts(service: MemoryService) -> set[str]:
    memory = service.memory()
    return {leaf.text for leaf in memory.leaves.values()} if memory else set()


@pytest.mark.parametrize("mode", MODES)
async def test_a_yes_deletes_what_the_user_was_shown(service: MemoryService, mode: str) -> None:
    user = User("accept")
    async with Client(build_server(service), mode=mode, elicitation_callback=user) as client:
        ids = await remembered(client)
        done = await client.call_tool("forget", {"query": "staging database"})
    assert not done.is_error and done.structured_content is not None
    (question,) = user.asked
    assert question.startswith("Forget 2 memories from 'default' for good?")
    assert all(text in question for text in STAGING) and OTHER not in question
    assert sorted(done.structured_content["deleted"]) == sorted(ids[:2])
    assert texts(service) == {OTHER}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("action", "delete"), [("decline", True), ("cancel", True), ("accept", False)])
async def test_a_no_or_a_cancel_deletes_nothing_and_says_so(
    service: MemoryService, mode: str, action: str, delete: bool
) -> None:
    user = User(action, delete)
    async with Client(build_server(service), mode=mode, elicitation_callback=user) as client:
        await remembered(client)
        done = await client.call_tool("forget", {"query": "staging database"})
    assert not done.is_error and done.structured_content is not None
    assert done.structured_content["deleted"] == []
    assert done.content[0].text == "Nothing was deleted: the user did not confirm."  # type: ignore[union-attr]
    assert texts(service) == {*STAGING, OTHER}


@pytest.mark.parametrize("mode", MODES)
async def test_a_summary_s_memories_are_asked_about_and_single_memories_are_not(
    service: MemoryService, mode: str
) -> None:
    user = User("accept")
    async with Client(build_server(service), mode=mode, elicitation_callback=user) as client:
        ids = await remembered(client)
        single = await client.call_tool("forget", {"ids": [ids[2]]})
        assert single.structured_content is not None and single.structured_content["deleted"] == [ids[2]]
        assert user.asked == []  # a memory named by its id: the agent read it, nobody is asked
        for number in range(4):
            arguments = {"content": f"Sprint {number} retro: ship smaller changes.", "session": "retro"}
            assert not (await client.call_tool("remember", arguments)).is_error
        memory = service.memory()
        assert memory is not None
        session = next(
            b
            for b in memory.temporal.branches.values()
            if memory.temporal.period_of(b.id) == "session" and b.leaf_count == 4
        )
        done = await client.call_tool("forget", {"ids": [session.id], "confirm": True})
    assert done.structured_content is not None and len(done.structured_content["deleted"]) == 4
    (question,) = user.asked
    assert question.startswith("Forget 4 memories from 'default' for good?") and "Sprint 0 retro" in question
    assert texts(service) == set(STAGING)


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_elicitation_keeps_the_two_steps(service: MemoryService, mode: str) -> None:
    async with Client(build_server(service), mode=mode) as client:
        await remembered(client)
        listed = await client.call_tool("forget", {"query": "staging database"})
    assert listed.structured_content is not None
    assert listed.structured_content["deleted"] == [] and len(listed.structured_content["candidates"]) == 2
    assert texts(service) == {*STAGING, OTHER}
