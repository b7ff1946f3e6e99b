"""The checks every HTTP request meets before it reaches the memory: bearer token and Host/Origin.

They sit in front of both HTTP faces of the store, the MCP transports (:mod:`memtree_mcp.transport`)
and the explorer (:mod:`memtree_mcp.ui`), which is why they live apart from either: both import
them, neither imports the other for them.

* **Bearer token.** With a token every HTTP request must carry ``Authorization: Bearer <token>``,
  compared in constant time. The check is a pure-ASGI middleware, so the SSE and streamable-HTTP
  response streams pass through untouched.
* **DNS-rebinding protection.** The SDK's :class:`TransportSecuritySettings` only accepts ``Host``
  (and ``Origin``) headers naming the bound address or a loopback name, so a web page on a
  foreign domain that resolves to 127.0.0.1 cannot talk to the server (the SDK answers 421/403).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Sequence

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["BearerTokenMiddleware", "HostGuardMiddleware", "security_settings"]

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
