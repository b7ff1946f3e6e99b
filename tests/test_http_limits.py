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
from memtree_mcp.transports.http import HEADER_TIMEOUT_SECONDS, MAX_CONNECTIONS, http_app, server_config
from tests.loopback import INITIALIZE, MCP_HEADERS, running
from tests.waiting import wait_until, wait_until_async

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


def closed_by_the_server(conn: socket.socket) -> bool:
    """Whether the server closed ``conn`` (waits at most the socket's timeout for it to)."""
    try:
        return conn.recv(1024) == b""
    except ConnectionResetError:  # closed with our half-sent head unread
        return True


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


class HeldRequests:
    """An ASGI app whose requests wait until :meth:`release`; counts those that arrived."""

    def __init__(self) -> None:
        self.arrived = 0
        self.released = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.arrived += 1
        while not self.released:  # bounded: the test releases them before it ends
            await anyio.sleep(0.01)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})

    def release(self) -> None:
        self.released = True


WHOLE_HEAD = b"GET /held HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


async def test_requests_beyond_the_limit_are_answered_503() -> None:
    app = HeldRequests()
    with running(lambda port: app, lambda asgi: server_config(asgi, max_connections=2)) as base:
        port = port_of(base)
        held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2)]
        try:
            for conn in held:
                conn.sendall(WHOLE_HEAD)
            wait_until(lambda: app.arrived == 2)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as third:
                third.sendall(WHOLE_HEAD)
                assert third.recv(1024).startswith(b"HTTP/1.1 503")
            app.release()
            assert all(conn.recv(1024).startswith(b"HTTP/1.1 200") for conn in held)
        finally:
            app.release()
            for conn in held:
                conn.close()
    assert server_config(lambda *_: None).limit_concurrency == MAX_CONNECTIONS  # type: ignore[arg-type]


async def test_connections_without_a_request_head_take_no_request_slot() -> None:
    # Any local process can open connections without the token: while they wait for their heads
    # they do not count against the requests' limit, and past it the oldest of them is closed.
    app = HeldRequests()
    app.release()
    with running(lambda port: app, lambda asgi: server_config(asgi, max_connections=2)) as base:
        port = port_of(base)
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(5)]
        try:
            for conn in idle:
                conn.sendall(PARTIAL_HEAD)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as whole:
                whole.sendall(WHOLE_HEAD)
                assert whole.recv(1024).startswith(b"HTTP/1.1 200")
            assert closed_by_the_server(idle[0])  # it waited longest
        finally:
            for conn in idle:
                conn.close()


async def test_sessions_are_capped_and_an_idle_one_is_closed(service: MemoryService) -> None:
    mcp = build_server(service)

    def app(port: int) -> Any:
        return http_app(mcp, transport="streamable-http", port=port, max_sessions=2, session_idle_seconds=1.0)

    with running(app) as base:
        async with httpx2.AsyncClient(timeout=10) as http:
            opened = [await http.post(f"{base}/mcp", json=INITIALIZE, headers=MCP_HEADERS) for _ in range(3)]
            assert [r.status_code for r in opened] == [200, 200, 503]
            session = opened[0].headers["mcp-session-id"]

            async def room() -> bool:
                posted = await http.post(f"{base}/mcp", json=INITIALIZE, headers=MCP_HEADERS)
                return posted.status_code == 200

            # The idle sessions are closed on the idle clock, which makes room.
            await wait_until_async(room, 20, what="an idle session to be closed")
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
        wait_until(lambda: listening(port), 60, every=0.1, what="the server to listen")
        closed_after = seconds_until_closed("127.0.0.1", port, HEADER_TIMEOUT_SECONDS + 20)
        assert HEADER_TIMEOUT_SECONDS - 1 < closed_after < HEADER_TIMEOUT_SECONDS + 10
    finally:
        server.terminate()
        server.wait(timeout=30)


def half_sent_heads(port: int, count: int) -> list[socket.socket]:
    """``count`` connections to ``port`` that each sent half a request head (none is closed here)."""
    opened = []
    for _ in range(count):
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=10)
            conn.sendall(PARTIAL_HEAD)
        except OSError:  # closed by the server already: it keeps few of them
            continue
        opened.append(conn)
    return opened


def with_token(port: int, path: str) -> int:
    """The status of a GET of ``path`` sent with the token (and a fresh connection)."""
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer right-token\r\n"
    request = head + "Connection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(request.encode())
        return int(conn.recv(1024).split(b" ", 2)[1])


def listening_server(args: list[str], home: Path, port: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [COMMAND, *args, "--port", str(port)],
        env={**os.environ, "MEMTREE_HOME": str(home), "MEMTREE_AUTH_TOKEN": "right-token"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until(lambda: listening(port) or server.poll() is not None, 60, every=0.1, what="the server")
    assert server.poll() is None, "the server did not start"
    return server


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "path"),
    [
        pytest.param(["serve", "--transport", "streamable-http"], "/ui/api/namespaces", id="serve"),
        pytest.param(["ui", "--no-browser"], "/ui/api/namespaces", id="ui"),
    ],
)
def test_half_sent_request_heads_neither_starve_the_token_holder_nor_pile_up(
    tmp_path: Path, args: list[str], path: str
) -> None:
    # Issue 31: re-opening 64 half-sent heads kept `serve` answering 503 to the token's holder,
    # and `memtree-mcp ui` had no cap at all (1,100 of them exhausted its file descriptors).
    port = free_port()
    server = listening_server(args, tmp_path / "store", port)
    try:
        idle = half_sent_heads(port, 3 * MAX_CONNECTIONS)
        statuses = [with_token(port, path) for _ in range(10)]
        idle += half_sent_heads(port, 3 * MAX_CONNECTIONS)
        statuses += [with_token(port, path) for _ in range(10)]
        assert statuses == [200] * 20
        descriptors = len(os.listdir(f"/proc/{server.pid}/fd"))
        assert descriptors < 2 * MAX_CONNECTIONS + 50, f"{descriptors} descriptors open"
        kept = [conn for conn in idle if not closed_by_the_server_yet(conn)]
        assert kept and len(kept) <= MAX_CONNECTIONS
        # And those kept are closed at the head deadline.
        assert all(closed_by_the_server(conn) for conn in kept)
        for conn in idle:
            conn.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


def closed_by_the_server_yet(conn: socket.socket) -> bool:
    """Whether the server has closed ``conn`` by now (without waiting)."""
    conn.setblocking(False)
    try:
        return conn.recv(1024) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        conn.settimeout(HEADER_TIMEOUT_SECONDS + 10)
