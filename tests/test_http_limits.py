"""The HTTP server's limits: a deadline for request heads, a cap on connections and on sessions,
and idle sessions closed; on uvicorn in a thread and on the real command."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.transport import HEADER_TIMEOUT_SECONDS, MAX_CONNECTIONS, http_app, server_config
from tests.loopback import INITIALIZE, MCP_HEADERS, running

pytestmark = pytest.mark.anyio

COMMAND = str(Path(sys.executable).with_name("memtree-mcp"))
PARTIAL_HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def seconds_until_closed(host: str, port: int, limit: float) -> float:
    """Send half a request head and wait (at most ``limit`` seconds) until the server hangs up."""
    started = time.monotonic()
    with socket.create_connection((host, port), timeout=limit) as conn:
        conn.sendall(PARTIAL_HEAD)
        try:
            while conn.recv(1024):
                pass
        except TimeoutError:
            return float("inf")
    return time.monotonic() - started


def port_of(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


async def test_a_connection_that_never_finishes_its_request_head_is_closed(service: MemoryService) -> None:
    mcp = build_server(service)
    app = lambda port: http_app(mcp, transport="streamable-http", port=port)  # noqa: E731
    with running(app, lambda asgi: server_config(asgi, header_timeout=0.5)) as base:
        assert seconds_until_closed("127.0.0.1", port_of(base), 10) < 5
        async with Client(f"{base}/mcp") as client:  # whole requests still go through
            assert (
                await client.call_tool("remember", {"content": "Heads must be complete."})
            ).structured_content


async def test_connections_beyond_the_limit_are_answered_503(service: MemoryService) -> None:
    mcp = build_server(service)
    app = lambda port: http_app(mcp, transport="streamable-http", port=port)  # noqa: E731
    with running(app, lambda asgi: server_config(asgi, max_connections=2)) as base:
        port = port_of(base)
        with (
            socket.create_connection(("127.0.0.1", port)),
            socket.create_connection(("127.0.0.1", port)),
            socket.create_connection(("127.0.0.1", port), timeout=10) as third,
        ):
            third.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            answer = third.recv(1024)
        assert answer.startswith(b"HTTP/1.1 503")
    assert server_config(lambda *_: None).limit_concurrency == MAX_CONNECTIONS  # type: ignore[arg-type]


async def test_sessions_are_capped_and_an_idle_one_is_closed(service: MemoryService) -> None:
    mcp = build_server(service)

    def app(port: int) -> Any:
        return http_app(mcp, transport="streamable-http", port=port, max_sessions=2, session_idle_seconds=1.0)

    with running(app) as base:
        async with httpx2.AsyncClient(timeout=10) as http:
            opened = [await http.post(f"{base}/mcp", json=INITIALIZE, headers=MCP_HEADERS) for _ in range(3)]
            assert [r.status_code for r in opened] == [200, 200, 503]
            session = opened[0].headers["mcp-session-id"]
            status, deadline = 503, time.monotonic() + 20
            while status == 503 and time.monotonic() < deadline:  # bounded polling on the idle clock
                await anyio.sleep(0.2)
                status = (await http.post(f"{base}/mcp", json=INITIALIZE, headers=MCP_HEADERS)).status_code
            assert status == 200  # the idle sessions were closed, which made room
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            headers = {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
            gone = await http.post(f"{base}/mcp", json=ping, headers=headers)
            assert gone.status_code == 404  # the client must start a new session


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
def test_the_real_server_closes_a_connection_whose_request_head_never_ends(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "MEMTREE_HOME": str(tmp_path / "store")}
    server = subprocess.Popen(
        [COMMAND, "serve", "--transport", "streamable-http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # bounded polling until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        closed_after = seconds_until_closed("127.0.0.1", port, HEADER_TIMEOUT_SECONDS + 20)
        assert HEADER_TIMEOUT_SECONDS - 1 < closed_after < HEADER_TIMEOUT_SECONDS + 10
    finally:
        server.terminate()
        server.wait(timeout=30)
