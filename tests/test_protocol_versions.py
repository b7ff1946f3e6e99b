"""Every protocol revision the SDK speaks, on every transport: the same tools, the same answers.

The SDK's client connects in the stateless revision of 2026-07-28 (``mode="2026-07-28"``: no
handshake, each call on its own) or with the handshake of 2025-11-25 (``mode="legacy"``); a client
of 2025-06-18 is played in raw JSON-RPC over stdio. Each runs the tour a client makes: remember,
recall, navigate, summarize, forget in two steps; nothing a tool does may depend on a session.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from memtree_mcp.server import build_server
from memtree_mcp.service import MemoryService
from memtree_mcp.transports.http import http_app
from tests.loopback import running
from tests.test_stdio import COMMAND, server_env

pytestmark = pytest.mark.anyio

MODES = {"2026-07-28": "2026-07-28", "2025-11-25": "legacy"}
FACTS = [
    "The billing service listens on port 8443.",
    "Maria owns the payment provider integration.",
    "The staging database is Postgres 16.",
]


async def tour(client: Client) -> None:
    ids = []
    for fact in FACTS:
        stored = await client.call_tool("remember", {"content": fact})
        assert not stored.is_error and stored.structured_content is not None
        ids += stored.structured_content["ids"]
    found = await client.call_tool("recall", {"query": "which port does billing use?", "k": 2})
    assert not found.is_error and found.structured_content is not None
    assert found.structured_content["hits"][0]["id"] == ids[0]
    walked = await client.call_tool("navigate", {"tree": "temporal", "move": "stay"})
    assert not walked.is_error
    summary = await client.call_tool("summarize", {})
    assert not summary.is_error and "8443" in summary.content[0].text  # type: ignore[union-attr]
    listed = await client.call_tool("forget", {"query": "staging database"})
    assert not listed.is_error and listed.structured_content is not None
    assert listed.structured_content["deleted"] == []
    gone = await client.call_tool("forget", {"ids": [ids[2]]})
    assert not gone.is_error and gone.structured_content is not None
    assert gone.structured_content["deleted"] == [ids[2]]


@pytest.mark.parametrize("version", list(MODES))
async def test_the_tour_in_process(service: MemoryService, version: str) -> None:
    async with Client(build_server(service), mode=MODES[version]) as client:
        assert client.protocol_version == version
        await tour(client)


@pytest.mark.parametrize("version", list(MODES))
async def test_the_tour_over_streamable_http(service: MemoryService, version: str) -> None:
    mcp = build_server(service)
    with running(lambda port: http_app(mcp, transport="streamable-http", port=port)) as base:
        async with Client(f"{base}/mcp", mode=MODES[version]) as client:
            assert client.protocol_version == version
            await tour(client)


@pytest.mark.slow
@pytest.mark.parametrize("version", list(MODES))
async def test_the_tour_over_stdio(tmp_path: Path, version: str) -> None:
    params = StdioServerParameters(command=COMMAND, args=["serve"], env=server_env(tmp_path / "store"))
    async with Client(params, mode=MODES[version]) as client:
        assert client.protocol_version == version
        await tour(client)


def _rpc(process: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any] | None:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()
    if "id" not in message:
        return None
    while True:
        ready, _, _ = select.select([process.stdout], [], [], 60)
        assert ready, f"no answer to {message['method']}"
        answer = json.loads(process.stdout.readline())
        if answer.get("id") == message["id"]:
            return dict(answer)


@pytest.mark.slow
def test_a_client_of_2025_06_18_over_stdio(tmp_path: Path) -> None:
    env = {**os.environ, **server_env(tmp_path / "store")}
    process = subprocess.Popen(
        [COMMAND, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "old", "version": "0"},
        }
        init = _rpc(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        assert init is not None and init["result"]["protocolVersion"] == "2025-06-18"
        _rpc(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "remember", "arguments": {"content": FACTS[0]}}
        stored = _rpc(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        assert stored is not None and stored["result"]["isError"] is False
        ask = {"name": "recall", "arguments": {"query": "billing port", "k": 1}}
        found = _rpc(process, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": ask})
        assert found is not None and "8443" in found["result"]["content"][0]["text"]
    finally:
        process.kill()
        process.wait(30)
