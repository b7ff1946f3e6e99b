"""Serve the MCP server over HTTP (streamable HTTP or SSE) without opening a hole in the machine.

A memory server holds everything a user ever told their assistant, so the HTTP transports are
locked down by default rather than by configuration:

* **Loopback unless authenticated.** Binding to anything but ``127.0.0.0/8``, ``::1`` or
  ``localhost`` requires a bearer token; otherwise :func:`http_app` refuses to build the app.
* **Bearer token.** With a token every HTTP request must carry ``Authorization: Bearer <token>``,
  compared in constant time. The check is a pure-ASGI middleware around the SDK's app, so the
  SSE and streamable-HTTP response streams pass through untouched.
* **DNS-rebinding protection.** The SDK's :class:`TransportSecuritySettings` only accepts ``Host``
  (and ``Origin``) headers naming the bound address or a loopback name, so a web page on a
  foreign domain that resolves to 127.0.0.1 cannot talk to the server (the SDK answers 421/403).
* **Bounded bodies.** The SDK's ``max_request_body_size`` answers oversized POSTs with 413 before
  they are parsed.

Shutdown: uvicorn's graceful shutdown (SIGINT/SIGTERM) stops accepting connections, lets
in-flight requests finish (open SSE streams get :data:`GRACEFUL_SHUTDOWN_SECONDS`), then runs
the app's lifespan exit, which closes the :class:`~memtree_mcp.service.MemoryService` through the
lifespan :func:`memtree_mcp.server.build_server` installs.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from memtree_mcp.errors import InvalidInput

if TYPE_CHECKING:
    from memtree_mcp.service import MemoryService

__all__ = [
    "GRACEFUL_SHUTDOWN_SECONDS",
    "BearerTokenMiddleware",
    "HostGuardMiddleware",
    "HttpTransport",
    "UiMount",
    "http_app",
    "is_loopback",
    "serve_http",
]

HttpTransport = Literal["sse", "streamable-http"]

GRACEFUL_SHUTDOWN_SECONDS = 5
"""How long shutdown waits for open connections; SSE streams never end on their own."""

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine (127.0.0.0/8, ::1, localhost)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


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
        raise InvalidInput(f"unknown HTTP transport {transport!r}; use 'sse' or 'streamable-http'")
    if token is not None and not token.strip():
        raise InvalidInput("the auth token is empty; set MEMTREE_AUTH_TOKEN to a secret or leave it unset")
    if token is None and not is_loopback(host):
        raise InvalidInput(
            f"refusing to serve on {host!r} without authentication: set MEMTREE_AUTH_TOKEN "
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
    ui_service: MemoryService | None = None,
    ui_allow_edit: bool = False,
) -> ASGIApp:
    """The ASGI app serving ``server``: the SDK's app behind the checks described in the module doc.

    Endpoints: streamable HTTP at ``/mcp``; SSE at ``/sse`` (stream) and ``/messages/`` (POST).
    With ``ui_service``, the memory explorer at ``/ui/`` (read-only unless ``ui_allow_edit``; its
    JSON API requires the token when there is one, its page does not).
    ``allowed_hosts`` adds ``Host`` names clients may use besides the bound address and loopback
    (needed when binding a wildcard address). Build one app per ``MCPServer``: the SDK's
    streamable-HTTP session manager can run only once.

    Raises:
        InvalidInput: non-loopback ``host`` without ``token``, an empty token, or a bad limit.
    """
    _check(host, token, max_body_bytes, transport)
    security = security_settings(host, port, allowed_hosts)
    app: ASGIApp
    if transport == "streamable-http":
        app = server.streamable_http_app(
            max_request_body_size=max_body_bytes, transport_security=security, host=host
        )
    else:
        app = server.sse_app(max_request_body_size=max_body_bytes, transport_security=security, host=host)
    app = HostGuardMiddleware(app, security)
    if token is not None:
        app = BearerTokenMiddleware(app, token)
    if ui_service is not None:
        from memtree_mcp.ui.api import ui_app

        app = UiMount(app, ui_app(ui_service, allow_edit=ui_allow_edit, token=token), security)
    return app


def serve_http(server: MCPServer, *, host: str = "127.0.0.1", port: int = 8765, **options: Any) -> None:
    """Serve ``server`` over HTTP with uvicorn until SIGINT/SIGTERM (blocking).

    ``options`` are :func:`http_app`'s (``transport`` is required). Validation happens before
    anything binds, so a refused configuration never opens a port.
    """
    import uvicorn

    app = http_app(server, host=host, port=port, **options)
    config = uvicorn.Config(
        app,
        host=host.strip("[]"),
        port=port,
        log_level=server.settings.log_level.lower(),
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        # The SDK's lifespan starts the streamable-HTTP session manager; it must run.
        lifespan="on",
        server_header=False,
        proxy_headers=False,
    )
    uvicorn.Server(config).run()
