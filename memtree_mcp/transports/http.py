"""Serve the MCP server over HTTP (streamable HTTP or SSE) without opening a hole in the machine.

A memory server holds everything a user ever told their assistant, so the HTTP transports are
locked down by default rather than by configuration:

* **Loopback unless authenticated.** Binding to anything but ``127.0.0.0/8``, ``::1`` or
  ``localhost`` requires a bearer token; otherwise :func:`http_app` refuses to build the app.
* **Bearer token and DNS-rebinding protection**, from :mod:`memtree_mcp.transports.guards` (shared with
  the explorer): every request must carry the token when there is one, and ``Host``/``Origin``
  headers must name the bound address or a loopback name.
* **Bounded bodies.** The SDK's ``max_request_body_size`` answers oversized POSTs with 413 before
  they are parsed.
* **Bounded connections and sessions** (:func:`~memtree_mcp.transports.guards.server_config`, shared
  with ``memtree-mcp ui``). At most :data:`MAX_CONNECTIONS` requests at once (more are answered
  503); a connection must send a complete request head within :data:`HEADER_TIMEOUT_SECONDS`
  (uvicorn waits for ever, so one slow client could hold sockets open) and a request's body within
  :data:`~memtree_mcp.transports.guards.BODY_TIMEOUT_SECONDS` of its head (408); connections still
  waiting for their client take no request's slot, and past :data:`MAX_CONNECTIONS` of them the
  longest waiting is closed; at most :data:`MAX_SESSIONS` streamable-HTTP sessions, each closed after
  :data:`SESSION_IDLE_SECONDS` without a request (the client then starts a new one). A local
  memory server has a handful of clients: the SDK's defaults (10,000 sessions, kept 30 minutes)
  let one client exhaust it. Out of file descriptors it goes on serving
  (:func:`~memtree_mcp.transports.guards.guarded_socket`).

Start-up: :func:`serve_http` binds the port itself before uvicorn starts, so a busy port is one
line naming the port and the flag to change (not uvicorn's ``[Errno 98]`` and exit 3), and it
hands the URL to ``on_ready`` once uvicorn serves.

Shutdown: uvicorn's graceful shutdown (SIGINT/SIGTERM) stops accepting connections, lets
in-flight requests finish (open SSE streams get :data:`GRACEFUL_SHUTDOWN_SECONDS`), then raises
the signal again: SIGINT becomes KeyboardInterrupt (the CLI exits 130), SIGTERM, the way clients
and service managers ask a server to stop, ends :func:`serve_http` normally (exit 0) instead of
killing the process. The caller owns what it serves (the memory service) and closes it.
"""

from __future__ import annotations

import errno
import signal
import socket
from collections.abc import Callable, Sequence
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from memtree_mcp.errors import ConfigurationError, InvalidInput
from memtree_mcp.host.addresses import is_loopback
from memtree_mcp.secrets.detection import quoted
from memtree_mcp.transports.guards import (
    HEADER_TIMEOUT_SECONDS,
    MAX_CONNECTIONS,
    BearerTokenMiddleware,
    HostGuardMiddleware,
    guarded_socket,
    security_settings,
    server_config,
)

__all__ = [
    "GRACEFUL_SHUTDOWN_SECONDS",
    "HEADER_TIMEOUT_SECONDS",
    "MAX_CONNECTIONS",
    "MAX_SESSIONS",
    "SESSION_IDLE_SECONDS",
    "HttpTransport",
    "UiMount",
    "http_app",
    "listen",
    "serve_http",
    "server_config",
    "url_of",
]

HttpTransport = Literal["sse", "streamable-http"]

GRACEFUL_SHUTDOWN_SECONDS = 5
"""How long shutdown waits for open connections; SSE streams never end on their own."""

MAX_SESSIONS = 32
"""Streamable-HTTP sessions open at once; a client opening one more is answered 503."""

SESSION_IDLE_SECONDS = 15 * 60.0
"""A streamable-HTTP session without a request for this long is closed."""


class UiMount:
    """Send ``/ui`` and ``/ui/…`` requests to the explorer, everything else (lifespan included) to MCP.

    The explorer gets the same Host/Origin checks as MCP; it guards its own API with the token,
    because its page holds no data and must load before the page can send the token.
    """

    def __init__(self, mcp_app: ASGIApp, ui: ASGIApp, settings: TransportSecuritySettings) -> None:
        self.mcp_app = mcp_app
        self.ui = HostGuardMiddleware(ui, settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == "/ui" or path.startswith("/ui/"):
            await self.ui(scope, receive, send)
        else:
            await self.mcp_app(scope, receive, send)


def _check(host: str, token: str | None, max_body_bytes: int, transport: str) -> None:
    """Refuse configurations that would expose the store or break the server later."""
    if transport not in ("sse", "streamable-http"):
        raise InvalidInput(f"unknown HTTP transport {quoted(transport)}; use 'sse' or 'streamable-http'")
    if token is not None and not token.strip():
        raise InvalidInput("the auth token is empty; set MEMTREE_AUTH_TOKEN to a secret or leave it unset")
    if token is None and not is_loopback(host):
        raise InvalidInput(
            f"refusing to serve on {quoted(host)} without authentication: set MEMTREE_AUTH_TOKEN "
            "(clients then send 'Authorization: Bearer <token>') or bind 127.0.0.1"
        )
    if max_body_bytes <= 0:
        raise InvalidInput(f"max_body_bytes must be a positive number of bytes, got {max_body_bytes}")


def http_app(
    server: MCPServer,
    *,
    transport: HttpTransport,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    max_body_bytes: int = 1_000_000,
    allowed_hosts: Sequence[str] = (),
    explorer: ASGIApp | None = None,
    max_sessions: int = MAX_SESSIONS,
    session_idle_seconds: float = SESSION_IDLE_SECONDS,
) -> ASGIApp:
    """The ASGI app serving ``server``: the SDK's app behind the checks described in the module doc.

    Endpoints: streamable HTTP at ``/mcp``; SSE at ``/sse`` (stream) and ``/messages/`` (POST).
    ``explorer`` (:func:`memtree_mcp.ui.api.ui_app`) is served at ``/ui/`` behind the same Host
    checks; it guards its own JSON API with the token, its page holds no data.
    ``allowed_hosts`` adds ``Host`` names clients may use besides the bound address and loopback
    (needed when binding a wildcard address). ``max_sessions`` and ``session_idle_seconds`` bound
    the streamable-HTTP sessions. Build one app per ``MCPServer``: the SDK's streamable-HTTP
    session manager can run only once.

    Raises:
        InvalidInput: non-loopback ``host`` without ``token``, an empty token, or a bad limit.
    """
    _check(host, token, max_body_bytes, transport)
    security = security_settings(host, port, allowed_hosts)
    app: ASGIApp
    if transport == "streamable-http":
        app = server.streamable_http_app(
            max_request_body_size=max_body_bytes,
            transport_security=security,
            host=host,
            max_sessions=max_sessions,
            session_idle_timeout=session_idle_seconds,
        )
    else:
        app = server.sse_app(max_request_body_size=max_body_bytes, transport_security=security, host=host)
    app = HostGuardMiddleware(app, security)
    if token is not None:
        app = BearerTokenMiddleware(app, token)
    if explorer is not None:
        app = UiMount(app, explorer, security)
    return app


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (``port`` 0: a free one).

    Raises ConfigurationError, in one line naming the flag to change, when the port is in use or
    the address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family, backlog=2048)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigurationError(f"port {port} is in use; pass --port N") from None
        raise ConfigurationError(
            f"cannot serve on {host}:{port} ({exc.strerror or exc}); pass another --host or --port"
        ) from None


def url_of(transport: HttpTransport, host: str, port: int) -> str:
    """Where a client reaches the MCP endpoint of ``transport`` served on ``host:port``."""
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{shown}:{port}" + ("/mcp" if transport == "streamable-http" else "/sse")


def serve_http(
    server: MCPServer,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    on_ready: Callable[[str], None] | None = None,
    **options: Any,
) -> None:
    """Serve ``server`` over HTTP with uvicorn until SIGINT/SIGTERM (blocking).

    ``options`` are :func:`http_app`'s (``transport`` is required). Validation happens before
    anything binds, so a refused configuration never opens a port. ``on_ready`` gets the MCP
    endpoint's URL once uvicorn serves. Raises InvalidInput for a refused configuration and
    ConfigurationError when the port cannot be bound (see :func:`listen`).
    """
    import uvicorn

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and on_ready is not None:
                on_ready(url_of(options["transport"], host, bound))

    _check(host, options.get("token"), options.get("max_body_bytes", 1_000_000), options["transport"])
    sock = listen(host, port)
    bound = int(sock.getsockname()[1])
    # Built for the port bound, which the Host checks name (port 0 binds a free one).
    app = http_app(server, host=host, port=bound, **options)
    config = server_config(app, host=host, port=bound, log_level=server.settings.log_level)
    # uvicorn restores this handler after its graceful shutdown and raises SIGTERM again: noted
    # here, the stop ends the call instead of killing the process.
    previous = signal.signal(signal.SIGTERM, lambda _number, _frame: None)
    try:
        Announcing(config).run(sockets=[guarded_socket(sock, config)])
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
