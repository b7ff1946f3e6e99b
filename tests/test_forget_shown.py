"""A yes deletes the memories it showed, once (issue 47).

The user's answer to "Forget these memories?" is good for the ids in that question and for one
deletion: a memory stored by another client while the user reads the question is kept (and named),
one deleted meanwhile is reported, and the final round of 2026-07-28 sent again (a client's retry)
deletes nothing more. Driven through the SDK's client in both revisions, as
``tests/test_confirmations.py`` drives them; the 2026-07-28 rounds are also driven by hand, to
send one again.
"""

from __future__ import annotations

import re
from typing import Any

import anyio.to_thread
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, ElicitResult, InputRequiredResult, ListRootsResult, Root

from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.transports.http import http_app
from tests.loopback import running
from tests.mcp_text import text_of
from tests.test_confirmations import MODES, OTHER, STAGING, User, remembered, texts

pytestmark = pytest.mark.anyio

ARRIVING = "The staging database backups run every night at two."
# Thirty memories that read the same in the question's lines (their first hundred characters).
LOOK_ALIKE = (
    "Deploy checklist for the staging cluster, written after the incident review, kept word for "
    "word for the team wiki: step {n} of the rollout."
)


class Meanwhile(User):
    """Says yes, and while the first question is open lets ``act`` change the store (another
    client's call, made in a thread as a server would)."""

    def __init__(self, act: Any, action: str = "accept") -> None:
        super().__init__(action)
        self.act = act

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        if not self.asked:
            await anyio.to_thread.run_sync(self.act)
        return await super().__call__(context, params)


@pytest.mark.parametrize("mode", MODES)
async def test_a_memory_stored_while_the_user_reads_the_question_is_kept_and_named(
    service: MemoryService, mode: str
) -> None:
    arrived: list[str] = []
    user = Meanwhile(lambda: arrived.extend(service.remember(ARRIVING).ids))
    async with Client(build_server(service), mode=mode, elicitation_callback=user) as client:
        ids = await remembered(client)
        done = await client.call_tool("forget", {"query": "staging database"})
    assert not done.is_error and done.structured_content is not None
    (question,) = user.asked  # asked once, about the two it showed
    assert question.startswith("Forget 2 memories from 'default' for good?")
    assert sorted(done.structured_content["deleted"]) == sorted(ids[:2])
    assert texts(service) == {OTHER, ARRIVING}
    said = text_of(done).splitlines()
    assert said[0] == f"Deleted 2 memories: {', '.join(done.structured_content['deleted'])}"
    assert said[1:] == [
        f"Kept 1 matching memory stored after the user was asked, so not shown to them: {arrived[0]}"
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_over_streamable_http_a_yes_deletes_what_it_showed(service: MemoryService, mode: str) -> None:
    arrived: list[str] = []
    user = Meanwhile(lambda: arrived.extend(service.remember(ARRIVING).ids))
    mcp = build_server(service)
    with running(lambda port: http_app(mcp, transport="streamable-http", port=port)) as base:
        async with Client(f"{base}/mcp", mode=mode, elicitation_callback=user) as client:
            ids = await remembered(client)
            done = await client.call_tool("forget", {"query": "staging database"})
    assert not done.is_error and done.structured_content is not None, text_of(done)
    assert len(user.asked) == 1
    assert sorted(done.structured_content["deleted"]) == sorted(ids[:2])
    assert texts(service) == {OTHER, ARRIVING} and arrived[0] in text_of(done)


@pytest.mark.parametrize("mode", MODES)
async def test_a_shown_memory_deleted_meanwhile_is_reported_not_an_error(
    service: MemoryService, mode: str
) -> None:
    ids: list[str] = []
    user = Meanwhile(lambda: service.forget(ids=[ids[0]]))
    async with Client(build_server(service), mode=mode, elicitation_callback=user) as client:
        ids += await remembered(client)
        done = await client.call_tool("forget", {"query": "staging database"})
    assert not done.is_error and done.structured_content is not None
    assert len(user.asked) == 1 and user.asked[0].startswith("Forget 2 memories")
    assert done.structured_content["deleted"] == [ids[1]]
    assert text_of(done) == (
        f"Deleted 1 memory: {ids[1]}\n1 memory shown to the user was already gone: {ids[0]}"
    )
    assert texts(service) == {OTHER}


async def first_round(client: Client, arguments: dict[str, Any]) -> InputRequiredResult:
    asked = await client.session.call_tool("forget", arguments, allow_input_required=True)
    assert isinstance(asked, InputRequiredResult) and asked.input_requests and asked.request_state
    return asked


def yes_to(asked: InputRequiredResult) -> dict[str, Any]:
    """The user's yes to every question of a round."""
    assert asked.input_requests is not None
    return {key: ElicitResult(action="accept", content={"delete": True}) for key in asked.input_requests}


async def test_the_final_round_sent_again_deletes_nothing_more(service: MemoryService) -> None:
    async with Client(
        build_server(service), mode="2026-07-28", elicitation_callback=User("accept")
    ) as client:
        for n in range(30):
            assert not (await client.call_tool("remember", {"content": LOOK_ALIKE.format(n=n)})).is_error
        arguments = {"query": "staging cluster deploy checklist"}
        asked = await first_round(client, arguments)
        (question,) = asked.input_requests.values()  # type: ignore[union-attr]
        assert question.params.message.startswith("Forget 10 memories")  # type: ignore[union-attr]
        answered = [
            await client.session.call_tool(
                "forget",
                arguments,
                allow_input_required=True,
                input_responses=yes_to(asked),
                request_state=asked.request_state,
            )
            for _ in range(3)  # the same yes, sent three times (a client's retry)
        ]
    assert all(isinstance(result, CallToolResult) for result in answered)
    first, *again = answered
    assert first.structured_content is not None and len(first.structured_content["deleted"]) == 10  # type: ignore[union-attr]
    for repeated in again:
        assert repeated.structured_content is not None and repeated.structured_content["deleted"] == []  # type: ignore[union-attr]
        assert text_of(repeated) == "Nothing was deleted: this call repeats an answer already used."  # type: ignore[arg-type]
    assert len(texts(service)) == 20


async def test_a_final_round_sent_to_another_server_on_the_same_store_is_refused(
    service: MemoryService,
) -> None:
    # Why the answers used are recorded in the server only: a request state is sealed under a key
    # the server makes when it starts, so no other server (nor this one restarted) accepts it.
    async with Client(
        build_server(service), mode="2026-07-28", elicitation_callback=User("accept")
    ) as client:
        await remembered(client)
        asked = await first_round(client, {"query": "staging database"})
    async with Client(build_server(service), mode="2026-07-28", elicitation_callback=User("accept")) as other:
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await other.session.call_tool(
                "forget",
                {"query": "staging database"},
                allow_input_required=True,
                input_responses=yes_to(asked),
                request_state=asked.request_state,
            )
    assert texts(service) == {*STAGING, OTHER}


@pytest.mark.parametrize("mode", MODES)
async def test_an_accept_without_content_deletes_nothing_and_says_so_in_words(
    service: MemoryService, mode: str
) -> None:
    async def empty(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content=None)

    async with Client(build_server(service), mode=mode, elicitation_callback=empty) as client:
        await remembered(client)
        done = await client.call_tool("forget", {"query": "staging database"})
    assert not done.is_error and done.structured_content is not None
    assert done.structured_content["deleted"] == []
    assert text_of(done) == "Nothing was deleted: the client sent the user's answer without a yes or no."
    assert texts(service) == {*STAGING, OTHER}


@pytest.mark.parametrize("mode", MODES)
async def test_with_namespace_auto_the_question_and_the_deletion_are_in_the_workspace_memory(
    service: MemoryService, mode: str
) -> None:
    async def workspace(_context: object) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///home/ana/projects/billing", name="billing")])

    auto = MemoryService(service.settings.model_copy(update={"namespace": "auto"}), embedder=service.embedder)
    user = User("accept")
    try:
        server = build_server(auto)
        async with Client(
            server, mode=mode, elicitation_callback=user, list_roots_callback=workspace
        ) as client:
            ids = await remembered(client)
            done = await client.call_tool("forget", {"query": "staging database"})
        assert done.structured_content is not None
        name = done.structured_content["namespace"]
        assert re.fullmatch(r"billing-[0-9a-f]{8}", name), name
        (question,) = user.asked
        assert question.startswith(f"Forget 2 memories from '{name}' for good?")
        assert sorted(done.structured_content["deleted"]) == sorted(ids[:2])
        assert texts_in(auto, name) == {OTHER}
    finally:
        auto.close()


def texts_in(service: MemoryService, namespace: str) -> set[str]:
    memory = service.memory(namespace)
    return {leaf.text for leaf in memory.leaves.values()} if memory else set()


async def test_the_query_argument_says_what_it_does_where_the_user_is_asked(service: MemoryService) -> None:
    async with Client(build_server(service)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    said = tools["forget"].input_schema["properties"]["query"]["description"]
    assert "deletes nothing" not in said and "user" in said, said
