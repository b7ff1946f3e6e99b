"""The checks every HTTP request meets before it reaches the memory: bearer token, Host/Origin,
and the connection limits.

They sit in front of both HTTP faces of the store, the MCP transports (:mod:`memtree_mcp.transports.http`)
and the explorer (:mod:`memtree_mcp.ui`), which is why they live apart from either: both import
them, neither imports the other for them.

* **Bearer token.** With a token every HTTP request must carry ``Authorization: Bearer <token>``,
  compared in constant time. The check is a pure-ASGI middleware, so the SSE and streamable-HTTP
  response streams pass through untouched.
* **DNS-rebinding protection.** The SDK's :class:`TransportSecuritySettings` only accepts ``Host``
  (and ``Origin``) headers naming the bound address or a loopback name, so a web page on a
  foreign domain that resolves to 127.0.0.1 cannot talk to the server (the SDK answers 421/403).
* **Connection limits** (:func:`server_config`): a connection must send a whole request head within
  :data:`HEADER_TIMEOUT_SECONDS`; at most :data:`MAX_CONNECTIONS` requests run at once (more are
  answered 503); and a connection still waiting for its head takes no request's slot: at most
  :data:`MAX_CONNECTIONS` wait at once, a new one closing the one that has waited longest. Any
  local process can open connections without the token; counted with the requests (uvicorn's
  ``limit_concurrency`` alone), 64 half-sent heads re-opened as the deadline closed them kept a
  server answering 503 to the token's holder (2 of 72 requests got through in 40 s, issue 31),
  and uncounted, 1,100 of them exhausted the explorer's file descriptors.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    import uvicorn

__all__ = [
    "HEADER_TIMEOUT_SECONDS",
    "MAX_CONNECTIONS",
    "BearerTokenMiddleware",
    "HostGuardMiddleware",
    "security_settings",
    "server_config",
]

MAX_CONNECTIONS = 64
"""Requests served at once (more are answered 503), and connections waiting for a request head."""

HEADER_TIMEOUT_SECONDS = 10.0
"""How long a connection may take to send a complete request head."""

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def _host_header(host: str, port: int) -> str:
    """The ``Host`` header a client sends for ``host:port`` (IPv6 literals in brackets)."""
    name = host.strip().strip("[]")
    if ":" in name:
        name = f"[{name}]"
    return f"{name}:{port}"


def security_settings(host: str, port: int, allowed_hosts: Sequence[str]) -> TransportSecuritySettings:
    """Accept only Host/Origin headers that name the bound address, a loopback name or an extra name.

    Wildcard addresses (0.0.0.0, ::) are never a legitimate ``Host``; callers serving a LAN name
    pass it in ``allowed_hosts`` (``name`` or ``name:port``; a bare name gets the bound port).
    """
    hosts = [_host_header(name, port) for name in _LOOPBACK_NAMES]
    hosts.append(_host_header(host, port))
    for extra in allowed_hosts:
        extra = extra.strip()
        if not extra:
            continue
        has_port = "]:" in extra if extra.startswith("[") else extra.count(":") == 1
        hosts.append(extra if has_port else _host_header(extra, port))
    hosts = list(dict.fromkeys(hosts))
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class BearerTokenMiddleware:
    """Pure-ASGI gate requiring ``Authorization: Bearer <token>`` on every HTTP request.

    Pure ASGI (not Starlette's ``BaseHTTPMiddleware``) so streaming responses are not buffered;
    lifespan events pass through so the service is still opened and closed.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token.strip().encode("utf-8")

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name.lower() == b"authorization":
                scheme, _, credentials = bytes(value).strip().partition(b" ")
                if scheme.lower() == b"bearer":
                    return hmac.compare_digest(credentials.strip(), self._expected)
                return False
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"error": "unauthorized", "detail": "missing or invalid bearer token"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="memtree-mcp"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class HostGuardMiddleware:
    """Answer foreign ``Host``/``Origin`` headers with the SDK's 421/403 before the SDK app runs.

    The SDK checks the same settings itself, but on the SSE stream endpoint it raises after
    sending the refusal, so the client sees a dropped connection instead of a status; checking
    here first gives every transport a clean answer (the SDK's check stays as a second layer).
    """

    def __init__(self, app: ASGIApp, settings: TransportSecuritySettings) -> None:
        self.app = app
        self._security = TransportSecurityMiddleware(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = await self._security.validate_request(Request(scope), is_post=False)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def server_config(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    log_level: str = "WARNING",
    header_timeout: float = HEADER_TIMEOUT_SECONDS,
    max_connections: int = MAX_CONNECTIONS,
    lifespan: str = "on",
    graceful_shutdown: int = 5,
) -> uvicorn.Config:
    """uvicorn's configuration for ``app``: the connection limits of the module doc, graceful
    shutdown within ``graceful_shutdown`` seconds. ``lifespan`` "on" for the MCP transports (the
    SDK's lifespan starts the streamable-HTTP session manager), "off" for the explorer alone."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=host.strip("[]"),
        port=port,
        log_level=log_level.lower(),
        timeout_graceful_shutdown=graceful_shutdown,
        lifespan=lifespan,  # type: ignore[arg-type]
        server_header=False,
        proxy_headers=False,
        limit_concurrency=max_connections,
        http=_with_header_deadline(header_timeout, max_connections),
    )


class _Requests:
    """What uvicorn's protocol counts as its connections for ``limit_concurrency``: every
    connection (added and discarded as uvicorn does), but counting only those not waiting for a
    request head."""

    def __init__(self, connections: set[Any], waiting: dict[Any, None]) -> None:
        self.connections = connections
        self.waiting = waiting

    def add(self, connection: Any) -> None:
        self.connections.add(connection)

    def discard(self, connection: Any) -> None:
        self.connections.discard(connection)

    def __len__(self) -> int:
        return sum(1 for connection in self.connections if connection not in self.waiting)


def _with_header_deadline(seconds: float, max_waiting: int) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, closing a connection that has not sent a complete request head
    ``seconds`` after it opened or after its last response, keeping at most ``max_waiting``
    connections waiting for one (the longest waiting is closed first), and leaving those out of
    the count of connections that ``limit_concurrency`` answers 503 by."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    # Per server: the connections waiting for a request head, the longest waiting first.
    waiting: dict[H11Protocol, None] = {}

    class HeaderDeadline(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.connections = _Requests(self.server_state.connections, waiting)  # type: ignore[assignment]

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._await_request_head()

        def connection_lost(self, exc: Exception | None) -> None:
            waiting.pop(self, None)
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self in waiting and self.cycle is not self._waited:
                del waiting[self]  # its head came: a request now

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # Unless it closes, or a request sent along with the last one has already started.
            if not self.transport.is_closing() and self.cycle.response_complete:
                self._await_request_head()

        def _await_request_head(self) -> None:
            # A new request head replaces ``self.cycle``; if it has not by the deadline, give up.
            self._waited = waited = self.cycle
            waiting.pop(self, None)
            waiting[self] = None
            while len(waiting) > max_waiting:
                oldest = next(iter(waiting))
                del waiting[oldest]
                oldest.transport.close()

            def expire() -> None:
                if self.cycle is waited and not self.transport.is_closing():
                    waiting.pop(self, None)
                    self.transport.close()

            self.loop.call_later(seconds, expire)

    return HeaderDeadline
