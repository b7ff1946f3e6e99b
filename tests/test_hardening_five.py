"""Left from the fourth red-team round (issue 47): slow uploads and floods of half-sent heads on
the HTTP servers, the explorer and the server out of file descriptors, and every tool's answer
bounded on stores of 10,000 memories spread over centuries or days."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import zlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import Client
from mcp.types import CallToolResult

from memtree_mcp.config import Settings
from memtree_mcp.core.walking import summary
from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.transports.http import MAX_CONNECTIONS, http_app, server_config
from tests.loopback import INITIALIZE, running
from tests.mcp_text import text_of
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


# -- every answer within its budget on stores of 10,000 memories -----------------------------------

VERBS = ["played", "cooked", "repaired", "painted", "studied", "sold", "planted", "photographed"]
THINGS = [
    "the violin",
    "a risotto",
    "the bicycle",
    "the fence",
    "Portuguese",
    "the old car",
    "tulips",
    "owls",
]
PLACES = ["in Lisbon", "at the cabin", "in the garden", "at work", "in Oslo", "by the river", "at school"]


class WordsEmbedder:
    """A deterministic stand-in for the model: each word a fixed random direction, a text the
    normalised sum of its words, so texts that share words are near (the trees and the tools'
    answers are what is tested here, not the model)."""

    identity = "test:words-64"
    dimension = 64

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in zip(rows, texts, strict=True):
            for word in text.lower().split():
                row += np.random.default_rng(zlib.crc32(word.strip(".,").encode())).normal(
                    size=self.dimension
                )
            row /= np.linalg.norm(row) or 1.0
        return rows


def memories(spread: str, count: int = 10_000) -> Iterator[dict[str, str]]:
    """``count`` memories one after another: over the 300 years timestamps may name ("centuries"),
    or one a day from 1999 ("days", 27 years)."""
    first = (
        datetime(1900, 1, 1, 12, tzinfo=UTC)
        if spread == "centuries"
        else datetime(1999, 1, 1, 12, tzinfo=UTC)
    )
    step = timedelta(days=300 * 365.2425 / count) if spread == "centuries" else timedelta(days=1)
    for i in range(count):
        what = f"{VERBS[i % 8]} {THINGS[i // 8 % 8]} {PLACES[i // 64 % 7]}"
        yield {"content": f"Note {i}: the user {what}.", "timestamp": (first + i * step).isoformat()}


@pytest.fixture(scope="module", params=["centuries", "days"])
def big_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MemoryService]:
    home = tmp_path_factory.mktemp(request.param)
    service = MemoryService(Settings(home=str(home), namespace="default"), embedder=WordsEmbedder())
    assert service.upkeep.import_memories(memories(request.param)) == (10_000, 0)
    yield service
    service.close()


@pytest.mark.slow
@pytest.mark.anyio
async def test_every_answer_stays_within_its_budget_on_ten_thousand_memories(
    big_store: MemoryService,
) -> None:
    # Issue 47: on 10,000 memories one a year, navigate at the temporal root answered 1.5 million
    # characters (the outline resource 1.9 million at 300 years).
    # In characters, from service/rendering.py: CHILDREN_CHARS 4,000, LISTING_CHARS 4,000,
    # OUTLINE_CHARS 16,000; summarize's default max_tokens 400 (4 characters a token).
    budgets = {
        "navigate": 6_000,  # its children, and the node, its text and neighbours beside them
        "agent": 6_000 + 7 * 1_100,  # and the agent's moves and findings (up to 6 of a chunk each)
        "recall": 8 * 1_100,  # k lines of at most one chunk each
        "summarize": 1_600,
        "forget": 4_200,
        "remember": 5 * 1_100,
        "outline": 16_200,
        "node": 12_000,
        "structured": 2_000,
    }
    answers: dict[str, list[int]] = {name: [] for name in budgets}
    async with Client(build_server(big_store)) as client:

        async def call(name: str, args: dict[str, object], budget: str | None = None) -> CallToolResult:
            result = await client.call_tool(name, args)
            assert not result.is_error, text_of(result)
            answers[budget or name].append(len(text_of(result)))
            answers["structured"].append(len(json.dumps(result.structured_content)))
            return result

        for tree in ("temporal", "semantic"):
            here = await call("navigate", {"tree": tree})
            # Down to a memory, the child that best matches a query at each level.
            while here.structured_content and here.structured_content["kind"] != "leaf":
                node = here.structured_content["node_id"]
                here = await call(
                    "navigate", {"tree": tree, "node_id": node, "move": "down", "query": "owls"}
                )
            await call("navigate", {"tree": tree, "agent": True, "query": "the violin in Oslo"}, "agent")
        await call("recall", {"query": "who repaired the bicycle?"})
        await call("summarize", {})
        await call("summarize", {"time_from": "1900-01-01", "time_to": "2199-12-31"})
        await call("forget", {"query": "the user cooked a risotto"})
        await call(
            "remember", {"content": "The user painted the fence in Oslo again.", "timestamp": "2001-05-05"}
        )
        for tree in ("temporal", "semantic"):
            outline = await client.read_resource(f"memtree://default/outline/{tree}")
            answers["outline"].append(len(outline.contents[0].text))  # type: ignore[union-attr]
        node = await client.read_resource("memtree://default/node/temporal-root")
        answers["node"].append(len(node.contents[0].text))  # type: ignore[union-attr]
    over = {
        name: max(lengths) for name, lengths in answers.items() if lengths and max(lengths) > budgets[name]
    }
    assert not over, f"over budget: {over}"


@pytest.mark.slow
def test_a_summary_of_a_day_of_a_thousand_sessions_prices_few_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A period whose fewest covering nodes are the 1,000 sessions of one day: summarize priced the
    # lines of all of them again for each one it dropped to fit max_tokens, which took 48 s for
    # 2,000 sessions and 96 s for 3,000 here. Lines priced stand for the time, which tests leave to
    # benchmarks: now only those of the sessions that can fit are priced.
    day = datetime(2020, 5, 5, tzinfo=UTC)
    sessions = (
        {"content": f"Note {i}: the user {VERBS[i % 8]} {THINGS[i // 8 % 8]}.", "session": f"s{i}"}
        | {"timestamp": (day + timedelta(seconds=8 * i)).isoformat()}
        for i in range(1_000)
    )
    service = MemoryService(
        Settings(home=str(tmp_path / "store"), namespace="default"), embedder=WordsEmbedder()
    )
    try:
        assert service.upkeep.import_memories(sessions) == (1_000, 0)
        priced = 0
        line = summary._line

        def counted_line(*args: Any, **kwargs: Any) -> str:
            nonlocal priced
            priced += 1
            return line(*args, **kwargs)

        monkeypatch.setattr(summary, "_line", counted_line)
        found = service.summarize(time_from="2020-05-05", time_to="2020-05-06")
        assert len(found.summary) <= 1_600 and found.summary.count("\n") >= 2
        assert priced < 20_000, f"{priced:,} lines priced"
    finally:
        service.close()


@pytest.mark.anyio
async def test_forget_lists_long_matches_within_its_budget(service: MemoryService) -> None:
    # Ten matches of a chunk (1,000 characters) each made forget's list over 10,000 characters.
    for i in range(10):
        words = " ".join(f"{THINGS[(i + j) % 8].split()[-1]}{j}" for j in range(120))
        service.remember(f"Garage inventory list number {i} for the user's workshop: {words}"[:990])
    async with Client(build_server(service)) as client:
        listed = text_of(await client.call_tool("forget", {"query": "the garage inventory of the workshop"}))
    assert listed.startswith("Nothing deleted.") and listed.count("{m") >= 5
    assert len(listed) <= 4_200
