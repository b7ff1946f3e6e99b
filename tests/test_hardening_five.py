"""Left from the fourth red-team round (issue 47): slow uploads and floods of half-sent heads on
the HTTP servers, the explorer and the server out of file descriptors, and every tool's answer
bounded on stores of 10,000 memories spread over centuries or days."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
from pathlib import Path

import pytest

from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.transports.http import MAX_CONNECTIONS, http_app, server_config
from tests.loopback import INITIALIZE, running
from tests.test_http_limits import (
    COMMAND,
    PARTIAL_HEAD,
    closed_by_the_server_yet,
    free_port,
    listening,
    listening_server,
)
from tests.waiting import wait_until

TOKEN = "right-token"


def port_of(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


def post_head(port: int, length: int) -> bytes:
    """The head of an MCP POST with the token, announcing a body of ``length`` bytes."""
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def slow_uploads(port: int, count: int) -> list[socket.socket]:
    """``count`` POSTs from 127.0.0.1 whose head came whole and whose body never ends."""
    opened = []
    for _ in range(count):
        conn = socket.create_connection(("127.0.0.1", port), timeout=30)
        conn.sendall(post_head(port, 2_000) + b'{"jsonrpc": "2.0", ')
        opened.append(conn)
    return opened


def status_of_initialize(port: int, source: str = "127.0.0.1") -> int:
    """The status of a whole MCP ``initialize`` with the token, sent from ``source``."""
    body = json.dumps(INITIALIZE).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0)) as conn:
        conn.sendall(post_head(port, len(body)).replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n") + body)
        return int(conn.recv(1024).split(b" ", 2)[1])


def answer_then_close(conn: socket.socket) -> bytes:
    """Everything the server sends on ``conn`` until it closes it (at most the socket's timeout)."""
    received = b""
    try:
        while chunk := conn.recv(4096):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def test_slow_uploads_from_one_client_leave_the_server_answering_the_others(service: MemoryService) -> None:
    # Issue 47: 80 slow uploads from a client with the token made /mcp answer 503 to everyone.
    # A request whose body is still coming takes no request slot; past the cap the longest waiting
    # is answered 408. On loopback every client is 127.0.0.1: a call from the same address and
    # one from another loopback address are both answered.
    mcp = build_server(service)
    app = lambda port: http_app(mcp, transport="streamable-http", port=port, token=TOKEN)  # noqa: E731
    with running(app, lambda asgi: server_config(asgi)) as base:
        port = port_of(base)
        uploads = slow_uploads(port, MAX_CONNECTIONS + 16)
        try:
            assert [status_of_initialize(port) for _ in range(3)] == [200] * 3
            assert status_of_initialize(port, source="127.0.0.2") == 200
            # Those the cap made room against were answered 408 and closed.
            uploads[0].settimeout(10)
            assert answer_then_close(uploads[0]).startswith(b"HTTP/1.1 408")
        finally:
            for conn in uploads:
                conn.close()


def test_an_upload_whose_body_does_not_arrive_in_time_is_answered_408_and_closed(
    service: MemoryService,
) -> None:
    mcp = build_server(service)
    app = lambda port: http_app(mcp, transport="streamable-http", port=port, token=TOKEN)  # noqa: E731
    with running(app, lambda asgi: server_config(asgi, body_timeout=1.0)) as base:
        (upload,) = slow_uploads(port_of(base), 1)
        with upload:
            upload.settimeout(20)
            answer = answer_then_close(upload)  # returns once the server has closed it
        assert answer.startswith(b"HTTP/1.1 408")
        assert b"send it whole" in answer
        assert status_of_initialize(port_of(base)) == 200


def namespaces_request(port: int) -> bytes:
    """A whole GET of the explorer's namespaces with the token, on a connection it closes."""
    return (
        f"GET /ui/api/namespaces HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    ).encode()


def half_head(port: int) -> socket.socket | None:
    """A connection to ``port`` that sent half a request head; None when the server closed it first."""
    try:
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        conn.sendall(PARTIAL_HEAD)
    except OSError:
        return None
    return conn


def half_heads(port: int, count: int) -> list[socket.socket]:
    return [conn for conn in (half_head(port) for _ in range(count)) if conn is not None]


def flood_round(port: int, before: int, after: int) -> tuple[socket.socket, list[socket.socket]]:
    """A flood of half-sent heads with one whole request in the middle of it: ``before`` half heads,
    the request, ``after`` half heads. Returns the request's connection and the flood's."""
    flood = half_heads(port, before)
    fresh = socket.create_connection(("127.0.0.1", port), timeout=30)
    fresh.sendall(namespaces_request(port))
    return fresh, flood + half_heads(port, after)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["serve", "--transport", "streamable-http"], id="serve"),
        pytest.param(["ui", "--no-browser"], id="ui"),
    ],
)
def test_fresh_requests_are_answered_during_a_flood_of_half_sent_heads(
    tmp_path: Path, args: list[str]
) -> None:
    # Issue 47: none of 6 fresh requests was answered during a flood. The flood is accepted in
    # batches before any connection of it is read, and the fresh request in the middle of one was
    # closed as the oldest before its head was read.
    port = free_port()
    server = listening_server(args, tmp_path / "store", port)
    flood: list[socket.socket] = []
    try:
        statuses = []
        for _ in range(6):
            fresh, more = flood_round(port, before=2 * MAX_CONNECTIONS, after=4 * MAX_CONNECTIONS)
            flood += more
            with fresh:
                answer = answer_then_close(fresh)
            statuses.append(int(answer.split(b" ", 2)[1]) if answer else None)
        assert statuses == [200] * 6
    finally:
        for conn in flood:
            conn.close()
        server.terminate()
        server.wait(timeout=30)


def get_with_token(port: int) -> int | None:
    """The status of a GET of the explorer's namespaces with the token, or None when no answer came."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(namespaces_request(port))
            answer = conn.recv(1024)
    except OSError:
        return None
    return int(answer.split(b" ", 2)[1]) if answer else None


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["serve", "--transport", "streamable-http"], id="serve"),
        pytest.param(["ui", "--no-browser"], id="ui"),
    ],
)
def test_out_of_file_descriptors_the_server_answers_without_a_traceback_and_recovers(
    tmp_path: Path, args: list[str]
) -> None:
    # Issue 47: under a low RLIMIT_NOFILE the explorer logged asyncio's accept() traceback for each
    # connection of a batch (thousands), scheduled as many retries and served nobody again.
    port = free_port()
    stderr = tmp_path / "stderr"

    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    with stderr.open("wb") as err:
        server = subprocess.Popen(
            [COMMAND, *args, "--port", str(port)],
            env={**os.environ, "MEMTREE_HOME": str(tmp_path / "store"), "MEMTREE_AUTH_TOKEN": TOKEN},
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=few_descriptors,
        )
    flood: list[socket.socket] = []
    try:
        wait_until(lambda: listening(port) or server.poll() is not None, 60, every=0.1, what="the server")
        flood = half_heads(port, 5 * MAX_CONNECTIONS)
        assert [get_with_token(port) for _ in range(3)] == [200] * 3
        for conn in flood:
            conn.close()
        assert [get_with_token(port) for _ in range(3)] == [200] * 3
    finally:
        for conn in flood:
            conn.close()
        server.terminate()
        server.wait(timeout=30)
    log = stderr.read_text()
    assert "Traceback" not in log
    assert "out of file descriptors" in log
    assert len(log.splitlines()) < 10


def test_a_slow_client_keeps_its_connection_while_another_address_floods(service: MemoryService) -> None:
    # Past the cap the longest waiting connection of the address holding most is closed: a flood
    # from one address (127.0.0.2) closes its own, not the slow head another client is still sending.
    mcp = build_server(service)
    app = lambda port: http_app(mcp, transport="streamable-http", port=port, token=TOKEN)  # noqa: E731
    with running(app, lambda asgi: server_config(asgi, max_connections=4)) as base:
        port = port_of(base)
        body = json.dumps(INITIALIZE).encode()
        head = post_head(port, len(body))
        with socket.create_connection(("127.0.0.1", port), timeout=30) as slow:
            slow.sendall(head[:40])
            flood = [
                socket.create_connection(("127.0.0.1", port), source_address=("127.0.0.2", 0))
                for _ in range(12)
            ]
            try:
                for conn in flood:
                    conn.sendall(PARTIAL_HEAD)
                wait_until(
                    lambda: sum(closed_by_the_server_yet(conn) for conn in flood) >= 8,
                    10,
                    what="the flood closed",
                )
                slow.sendall(head[40:] + body)
                assert slow.recv(1024).startswith(b"HTTP/1.1 200")
            finally:
                for conn in flood:
                    conn.close()
