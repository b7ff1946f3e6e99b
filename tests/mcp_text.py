"""What the model reads of a tool result, for tests that read it as the model does, and a client
that filled the memory the way an agent does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager

from mcp import Client
from mcp.types import CallToolResult, TextContent

from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService


def text_of(result: CallToolResult) -> str:
    """The text blocks of ``result``, joined by line breaks."""
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def remember_as_an_agent(
    client: Client, timestamp: str, session: str | None, text: str, replaces: str | None = None
) -> str:
    """``remember`` a memory as an agent does, and when it knows the memory replaces an older one
    (the older's text, ``replaces``), confirm that candidate as remember's result offers it: the
    same content again, with ``supersedes``. Returns the memory's id. The older must be offered:
    an agent cannot link what it is not shown (without recalling it)."""
    args = {"content": text, "timestamp": timestamp, **({"session": session} if session else {})}
    stored = await client.call_tool("remember", args)
    assert not stored.is_error, text_of(stored)
    content = stored.structured_content or {}
    if replaces is not None:
        offered = {
            line.split("}", 1)[0].removeprefix("- {"): line for line in text_of(stored).splitlines()[1:]
        }
        chosen = [node_id for node_id, line in offered.items() if replaces in line]
        assert chosen, f"remember offered no candidate quoting {replaces!r} for {text!r}: {text_of(stored)}"
        linked = await client.call_tool("remember", {**args, "supersedes": chosen[:1]})
        assert not linked.is_error and (linked.structured_content or {}).get("deduplicated"), text_of(linked)
    return str(content["ids"][0])


@asynccontextmanager
async def client_remembering(
    service: MemoryService,
    memories: Iterable[tuple[str, str, str]],
    replaces: Mapping[str, str] | None = None,
) -> AsyncIterator[Client]:
    """An MCP client of a server over ``service``, after one ``remember`` call for each
    ``(timestamp, session, text)`` of ``memories``, in order; for a text in ``replaces`` (newer
    text -> the older text it replaces) the agent confirms the candidate remember offers."""
    async with Client(build_server(service)) as connected:
        for timestamp, session, text in memories:
            await remember_as_an_agent(connected, timestamp, session, text, (replaces or {}).get(text))
        yield connected
