"""Real HTTP servers on loopback for tests: an ASGI app served by uvicorn in a thread."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from starlette.types import ASGIApp

from tests.waiting import wait_until

# The first request of an MCP session over HTTP, and the headers streamable HTTP asks of a client.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@contextmanager
def running(app_for_port: Any, config: Any = None) -> Iterator[str]:
    """Serve ``app_for_port(port)`` on a pre-bound loopback socket in a thread; yield the base URL.

    ``config(app)`` gives the uvicorn.Config to serve with (a plain one by default). The socket is
    listening before uvicorn starts, so clients never race the startup; the wait on ``started`` is
    a bounded join, not a sleep, and ends early if the server thread dies.
    """
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    app: ASGIApp = app_for_port(port)
    plain = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(plain if config is None else config(app))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), 10, what="uvicorn to start")
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not shut down"
