"""What the model reads of a tool result, for tests that read it as the model does, and a client
that filled the memory the way an agent does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from mcp import Client
from mcp.types import CallToolResult, TextContent

from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService


def text_of(result: CallToolResult) -> str:
    """The text blocks of ``result``, joined by line breaks."""
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


@asynccontextmanager
async def client_remembering(
    service: MemoryService, memories: Iterable[tuple[str, str, str]]
) -> AsyncIterator[Client]:
    """An MCP client of a server over ``service``, after one ``remember`` call for each
    ``(timestamp, session, text)`` of ``memories``, in order."""
    async with Client(build_server(service)) as connected:
        for timestamp, session, text in memories:
            await connected.call_tool(
                "remember", {"content": text, "timestamp": timestamp, "session": session}
            )
        yield connected
