"""The HTTP transports on real uvicorn servers bound to 127.0.0.1: tools work, and the guards hold."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from memtree_mcp.errors import InvalidInput
from memtree_mcp.host.addresses import is_loopback
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.transports.http import http_app
from tests.loopback import INITIALIZE, MCP_HEADERS, running

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token-for-tests"


async def _remember_then_recall(client: Client) -> None:
    stored = await client.call_tool("remember", {"content": "The user's favourite editor is Helix."})
    assert not stored.is_error and stored.structured_content is not None
    (leaf_id,) = stored.structured_content["ids"]
    found = await client.call_tool("recall", {"query": "which text editor does the user like?", "k": 3})
    assert not found.is_error and found.structured_content is not None
    assert found.structured_content["hits"][0]["id"] == leaf_id


async def test_streamable_http_remember_then_recall(service: MemoryService) -> None:
    mcp = build_server(service)
    with running(lambda port: http_app(mcp, transport="streamable-http", port=port)) as base:
        async with Client(f"{base}/mcp") as client:
            await _remember_then_recall(client)


async def test_sse_remember_then_recall(service: MemoryService) -> None:
    mcp = build_server(service)
    with running(lambda port: http_app(mcp, transport="sse", port=port)) as base:
        async with Client(sse_client(f"{base}/sse")) as client:
            await _remember_then_recall(client)


async def test_a_token_is_required_when_set(service: MemoryService) -> None:
    mcp = build_server(service)
    app = lambda port: http_app(mcp, transport="streamable-http", port=port, token=TOKEN)  # noqa: E731
    with running(app) as base:
        async with httpx2.AsyncClient(timeout=10) as http:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
                response = await http.post(f"{base}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers})
                assert response.status_code == 401
                assert response.headers["www-authenticate"].startswith("Bearer")
                assert response.json()["error"] == "unauthorized"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=auth, timeout=30) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
        ):
            await _remember_then_recall(client)


async def test_sse_honours_the_token(service: MemoryService) -> None:
    mcp = build_server(service)
    with running(lambda port: http_app(mcp, transport="sse", port=port, token=TOKEN)) as base:
        async with httpx2.AsyncClient(timeout=10) as http:
            assert (await http.get(f"{base}/sse")).status_code == 401
            assert (await http.post(f"{base}/messages/?session_id=x", json={})).status_code == 401
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with Client(sse_client(f"{base}/sse", headers=headers)) as client:
            await _remember_then_recall(client)


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_foreign_host_header_is_refused(service: MemoryService, transport: Any) -> None:
    mcp = build_server(service)
    with running(lambda port: http_app(mcp, transport=transport, port=port)) as base:
        async with httpx2.AsyncClient(timeout=10) as http:
            if transport == "streamable-http":
                send = http.post(
                    f"{base}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": "evil.example"}
                )
            else:
                send = http.get(f"{base}/sse", headers={"Host": "evil.example"})
            response = await send
            assert response.status_code == 421
            evil_origin = {**MCP_HEADERS, "Origin": "http://evil.example"}
            response = await http.post(
                f"{base}/mcp" if transport != "sse" else f"{base}/messages/?session_id=x",
                json=INITIALIZE,
                headers=evil_origin,
            )
            assert response.status_code == 403


async def test_an_oversized_body_is_refused(service: MemoryService) -> None:
    mcp = build_server(service)
    app = lambda port: http_app(mcp, transport="streamable-http", port=port, max_body_bytes=10_000)  # noqa: E731
    with running(app) as base:
        async with httpx2.AsyncClient(timeout=10) as http:
            big = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"x" * 20_000 + b'"}'
            response = await http.post(f"{base}/mcp", content=big, headers=MCP_HEADERS)
            assert response.status_code == 413


def test_a_public_bind_without_a_token_is_refused(service: MemoryService) -> None:
    mcp = build_server(service)
    for host in ("0.0.0.0", "::", "192.168.1.10", "example.com"):
        with pytest.raises(InvalidInput, match="MEMTREE_AUTH_TOKEN"):
            http_app(mcp, transport="streamable-http", host=host)
    with pytest.raises(InvalidInput, match="empty"):
        http_app(mcp, transport="sse", host="127.0.0.1", token="  ")
    http_app(mcp, transport="sse", host="0.0.0.0", token=TOKEN, allowed_hosts=["box.lan"])


def test_loopback_detection() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.5.6.7", "::1", "[::1]", "localhost", "LOCALHOST"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "", "10.0.0.1", "localhost.evil.example"))
