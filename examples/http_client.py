"""Talk to a memtree-mcp server over Streamable HTTP: remember a line, then recall it.

Start the server first, in another terminal:

    memtree-mcp serve --transport streamable-http --port 8765

then run:

    python examples/http_client.py "I prefer tea over coffee"

If the server requires a bearer token, export it as MEMTREE_AUTH_TOKEN for both; without it (or
with another one), or with no server running, this prints one line saying so and exits 1.
"""

from __future__ import annotations

import os
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

URL = os.environ.get("MEMTREE_URL", "http://127.0.0.1:8765/mcp")


async def main(line: str) -> int:
    token = os.environ.get("MEMTREE_AUTH_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    # The MCP client reports a refused request only as "Server returned an error response": the
    # status is noted here to say what to do.
    refused: list[int] = []

    async def note_refusal(response: httpx2.Response) -> None:
        if response.status_code in (401, 403):
            refused.append(response.status_code)

    try:
        # Client(URL) alone works without a token; to send headers, hand the transport an HTTP
        # client. The read timeout is long because the server may hold a response stream open.
        async with (
            httpx2.AsyncClient(
                headers=headers,
                timeout=httpx2.Timeout(30.0, read=300.0),
                event_hooks={"response": [note_refusal]},
            ) as http,
            Client(streamable_http_client(URL, http_client=http)) as memory,
        ):
            stored = await memory.call_tool("remember", {"content": line, "role": "user"})
            print("remember:", *(block.text for block in stored.content if block.type == "text"))
            recalled = await memory.call_tool("recall", {"query": line, "k": 3})
            # What the model reads: one line per hit (rank, relevance, date, text, id).
            print(*(block.text for block in recalled.content if block.type == "text"), sep="\n")
    except Exception as exc:
        if _unreachable(exc):
            print(
                f"no server answers at {URL}: start one with `memtree-mcp serve --transport "
                "streamable-http --port 8765`, or set MEMTREE_URL to where yours serves",
                file=sys.stderr,
            )
            return 1
        if not refused:
            raise
        given = "a token the server does not accept" if token else "no token"
        print(
            f"{URL} answered {refused[0]} Unauthorized to {given}: "
            "set MEMTREE_AUTH_TOKEN to the token the server was started with",
            file=sys.stderr,
        )
        return 1
    return 0


def _unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (the MCP client's task group wraps it in exception groups) is, or was
    caused by, a connection that could not be opened."""
    if isinstance(exc, httpx2.ConnectError):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return any(_unreachable(inner) for inner in exc.exceptions)
    return exc.__cause__ is not None and _unreachable(exc.__cause__)


if __name__ == "__main__":
    sys.exit(anyio.run(main, " ".join(sys.argv[1:]) or "The HTTP example ran at least once."))
