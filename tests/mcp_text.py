"""What the model reads of a tool result, for tests that read it as the model does."""

from __future__ import annotations

from mcp.types import CallToolResult, TextContent


def text_of(result: CallToolResult) -> str:
    """The text blocks of ``result``, joined by line breaks."""
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))
