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
  :data:`HEADER_TIMEOUT_SECONDS`, and a request's body must come whole within
  :data:`BODY_TIMEOUT_SECONDS` of its head (else 408 and the connection is closed); at most
  :data:`MAX_CONNECTIONS` requests run at once (more are answered 503); and a connection still
  waiting for its client (a head, or the rest of a body) takes no request's slot: at most
  :data:`MAX_CONNECTIONS` wait at once, and past that the one that has waited longest, of the
  address holding most of them, is closed once the server has read it (:class:`_WaitingRoom`).
  Any local process can open connections without the token; counted with the requests (uvicorn's
  ``limit_concurrency`` alone), 64 half-sent heads re-opened as the deadline closed them kept a
  server answering 503 to the token's holder (2 of 72 requests got through in 40 s, issue 31), and
  80 slow uploads with the token did the same (issue 47); uncounted and uncapped, 1,100 half-sent
  heads exhausted the explorer's file descriptors.
* **Clients told apart by peer address.** The token is one secret every client holds, so it tells
  no client from another; the address does for clients on other machines (a non-loopback bind
  needs the token) or on other loopback addresses. On 127.0.0.1, where every local client has the
  same address, no share can tell the attacker from the user: what keeps the user served there is
  that a connection waiting for its client takes no request's slot, that the longest waiting is
  closed first, and the deadlines.
* **Out of file descriptors** (:func:`guarded_socket`): the server closes the connections waiting
  longest, or answers 503, logs one line and goes on (:class:`_Listener`); under a low
  ``ulimit -n`` it serves and keeps waiting at most a quarter of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import json
import logging
import os
import socket
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    import uvicorn

__all__ = [
    "BODY_TIMEOUT_SECONDS",
    "HEADER_TIMEOUT_SECONDS",
    "MAX_CONNECTIONS",
    "BearerTokenMiddleware",
    "HostGuardMiddleware",
    "guarded_socket",
    "security_settings",
    "server_config",
]

MAX_CONNECTIONS = 64
"""Requests served at once (more are answered 503), and connections waiting for a request head."""

HEADER_TIMEOUT_SECONDS = 10.0
"""How long a connection may take to send a complete request head."""

BODY_TIMEOUT_SECONDS = 30.0
"""How long a request's body may take to arrive after its head (bodies are at most 1 MB)."""

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
    body_timeout: float = BODY_TIMEOUT_SECONDS,
    max_connections: int = MAX_CONNECTIONS,
    lifespan: str = "on",
    graceful_shutdown: int = 5,
) -> uvicorn.Config:
    """uvicorn's configuration for ``app``: the connection limits of the module doc, graceful
    shutdown within ``graceful_shutdown`` seconds. ``lifespan`` "on" for the MCP transports (the
    SDK's lifespan starts the streamable-HTTP session manager), "off" for the explorer alone."""
    import uvicorn

    _quiet_logs()
    # Each connection holds a descriptor: under a low limit (``ulimit -n``) fewer of them, so the
    # store's own files can still be opened.
    max_connections = min(max_connections, max(2, _descriptor_limit() // 4))
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
        http=_guarded_protocol(header_timeout, body_timeout, max_connections),
    )


# The loggers that report a client gone in the middle of its request body as an error, traceback and
# all: uvicorn's for an app that let it through (the explorer), the SDK's for its transports.
_CLIENT_GONE_LOGGERS = ("uvicorn.error", "mcp.server.streamable_http", "mcp.server.sse")


class _ClientGone(logging.Filter):
    """Drops the records of a client gone before its request body came whole (Starlette's
    ``ClientDisconnect``): a request answered 408 here, or one whose client went away, is no error
    of the server, and a traceback each would fill the log during a flood of slow uploads."""

    def filter(self, record: logging.LogRecord) -> bool:
        from starlette.requests import ClientDisconnect

        return not (record.exc_info and isinstance(record.exc_info[1], ClientDisconnect))


class _AcceptPaused(logging.Filter):
    """Drops asyncio's error, with its traceback, for an accept that met a full descriptor table:
    :class:`_Listener` has said it in one line already."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("socket.accept() out of system resource")


def _quiet_logs() -> None:
    """Install the two filters above (once), and :func:`_ignored_in_one_line` as the hook of
    errors Python ignores (unless another hook was set)."""
    for name, kind in [*((name, _ClientGone) for name in _CLIENT_GONE_LOGGERS), ("asyncio", _AcceptPaused)]:
        logger = logging.getLogger(name)
        if not any(isinstance(f, kind) for f in logger.filters):
            logger.addFilter(kind())
    if sys.unraisablehook is sys.__unraisablehook__:
        sys.unraisablehook = _ignored_in_one_line


def _ignored_in_one_line(unraisable: Any) -> None:
    """An error Python had to ignore (in a finalizer) as one line of the log, its traceback at
    debug level, rather than a traceback on standard error. Out of file descriptors, an event loop
    created meanwhile (LanceDB makes one when it is first imported) fails to open its self-pipe,
    and its finalizer then raises: seen once under a flood of connections."""
    what = f"{unraisable.err_msg or 'Exception ignored'} in {unraisable.object!r}"[:200]
    log.warning("%s: %s: %s", what, type(unraisable.exc_value).__name__, unraisable.exc_value)
    log.debug(what, exc_info=(unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback))


class _WaitingRoom:
    """The connections of one server waiting for their client: for a request head, or for the rest
    of a request's body; the longest waiting first.

    At most ``capacity`` of them stay: past it, the one that has waited longest among those of the
    client holding most of them is closed (:meth:`trim`). Only a connection that has had its
    chance is closed: the server has looked for its data once since it was accepted. A flood is
    accepted in batches of up to 2,048 connections before any of them is read, so closing the
    oldest at once closed a fresh request that came in the middle of the batch before its head
    was read (none of 6 was answered during a flood of half-sent heads, issue 47).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.members: dict[Any, None] = {}
        self.held: Counter[str] = Counter()  # members by client

    def __contains__(self, connection: object) -> bool:
        return connection in self.members

    def enter(self, connection: Any) -> None:
        """``connection`` waits for its client from now on (again, if it already did)."""
        self.leave(connection)
        self.members[connection] = None
        self.held[connection.client_key] += 1
        self.trim()

    def leave(self, connection: Any) -> None:
        if connection in self.members:
            del self.members[connection]
            self.held[connection.client_key] -= 1
            if not self.held[connection.client_key]:
                del self.held[connection.client_key]

    def trim(self) -> None:
        """Close the slowest connections that had their chance until at most ``capacity`` wait."""
        while len(self.members) > self.capacity and self.evict_slowest():
            pass  # the others are closed once they have had their chance (they call again)

    def evict_slowest(self) -> bool:
        """Close the connection that has waited longest among those of the client holding most
        of them, if one of those has had its chance; whether one was closed. (Not another
        client's meanwhile: the flood's own are closed once they have had theirs.)"""
        most = max(self.held, key=self.held.__getitem__, default=None)
        slowest = next((c for c in self.members if c.client_key == most and c.had_chance), None)
        if slowest is None:
            return False
        self.leave(slowest)
        slowest.evict()
        return True


class _Requests:
    """What uvicorn's protocol counts as its connections for ``limit_concurrency``: every
    connection (added and discarded as uvicorn does), but counting only those serving a request
    (:func:`_serving`)."""

    def __init__(self, connections: set[Any], room: _WaitingRoom) -> None:
        self.connections = connections
        self.room = room

    def add(self, connection: Any) -> None:
        self.connections.add(connection)

    def discard(self, connection: Any) -> None:
        self.connections.discard(connection)

    def __len__(self) -> int:
        return sum(1 for connection in self.connections if _serving(connection, self.room))


class _Tasks:
    """What uvicorn's protocol counts as its running requests for ``limit_concurrency``: every
    request's task (added and discarded as uvicorn does), but counting only those whose
    connection is not waiting for its client. uvicorn starts a request's task at its head, so a
    request whose body is still coming would take a slot for as long as its client takes."""

    def __init__(self, tasks: set[Any], owners: dict[Any, Any], owner: Any, room: _WaitingRoom) -> None:
        self.tasks = tasks
        self.owners = owners
        self.owner = owner
        self.room = room

    def add(self, task: Any) -> None:
        self.tasks.add(task)
        self.owners[task] = self.owner

    def discard(self, task: Any) -> None:
        self.tasks.discard(task)
        self.owners.pop(task, None)

    def __len__(self) -> int:
        # A task whose connection has closed still runs: it counts until it ends.
        return sum(1 for task in self.tasks if self.owners.get(task) not in self.room)


def _serving(connection: Any, room: _WaitingRoom) -> bool:
    """Whether ``connection`` takes a request's slot: it is neither waiting for its client nor
    closing (a batch of connections closed to make room would count until each is gone)."""
    if connection in room:
        return False
    transport = getattr(connection, "transport", None)
    return transport is None or not transport.is_closing()


SLOW_BODY = b"The request body did not arrive in time: send it whole, at once.\n"


def _guarded_protocol(header_timeout: float, body_timeout: float, max_waiting: int) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the limits of the module doc: a connection that has not sent a
    complete request head ``header_timeout`` seconds after it opened or after its last response is
    closed; a request whose body has not arrived ``body_timeout`` seconds after its head is
    answered 408 and closed; at most ``max_waiting`` connections wait for their client (a
    :class:`_WaitingRoom`), and those take no slot of ``limit_concurrency``."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    room = _WaitingRoom(max_waiting)  # per server, as the protocol class is
    owners: dict[asyncio.Task[None], H11Protocol] = {}

    class Guarded(H11Protocol):
        room: _WaitingRoom
        client_key = ""
        had_chance = False
        _turn: object = None  # what the connection waits for now; a deadline acts only on its own
        _uploading = False

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.connections = _Requests(self.server_state.connections, room)  # type: ignore[assignment]
            self.tasks = _Tasks(self.server_state.tasks, owners, self, room)  # type: ignore[assignment]

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            # By peer address: the token is one secret every client holds, so it tells none apart.
            self.client_key = self.client[0] if self.client else ""
            # Its reader is added after this call; two turns of the loop later the server has
            # looked for its data once.
            self.loop.call_soon(self.loop.call_soon, self._chance_given)
            self._await_head()

        def connection_lost(self, exc: Exception | None) -> None:
            room.leave(self)
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self not in room:
                return
            if self._uploading:
                if self.conn.their_state is not h11.SEND_BODY:
                    room.leave(self)  # its body came whole
            elif self.cycle is not self._waited:  # its head came
                if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
                    self._await_body()
                else:
                    room.leave(self)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # Unless it closes, or a request sent along with the last one has already started.
            if not self.transport.is_closing() and self.cycle.response_complete:
                self._await_head()

        def evict(self) -> None:
            """Make room for another connection: a request whose body is coming is answered 408."""
            if self._uploading:
                self._refuse_slow_body()
            else:
                self.transport.close()

        def _chance_given(self) -> None:
            self.had_chance = True
            room.trim()

        def _await_head(self) -> None:
            # A new request head replaces ``self.cycle``; if it has not by the deadline, give up.
            self._waited = self.cycle
            self._uploading = False
            self._turn = turn = object()
            room.enter(self)
            self.loop.call_later(header_timeout, self._expire, turn)

        def _await_body(self) -> None:
            self._uploading = True
            self._turn = turn = object()
            room.enter(self)
            self.loop.call_later(body_timeout, self._expire, turn)

        def _expire(self, turn: object) -> None:
            if self._turn is turn and self in room and not self.transport.is_closing():
                room.leave(self)
                self.evict()

        def _refuse_slow_body(self) -> None:
            cycle = self.cycle
            if not cycle.response_started and self.conn.our_state is h11.SEND_RESPONSE:
                headers = [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(SLOW_BODY)).encode()),
                    (b"connection", b"close"),
                ]
                refusal = h11.Response(status_code=408, headers=headers, reason=b"Request Timeout")
                try:
                    sent = b"".join(
                        self.conn.send(event) or b""
                        for event in (refusal, h11.Data(data=SLOW_BODY), h11.EndOfMessage())
                    )
                    self.transport.write(sent)
                except h11.LocalProtocolError:
                    pass  # the connection is closed below either way
            # The request's task reads a disconnect and anything it sends is dropped.
            cycle.disconnected = True
            cycle.message_event.set()
            self.transport.close()

    Guarded.room = room
    return Guarded


def guarded_socket(sock: socket.socket, config: uvicorn.Config) -> socket.socket:
    """``sock`` (listening) as the socket to serve ``config`` (:func:`server_config`'s) on: one that
    meets a full descriptor table (EMFILE) without a traceback and recovers (:class:`_Listener`).
    ``sock`` is detached: close the socket returned (uvicorn does when it stops)."""
    room = getattr(config.http, "room", None)
    return _Listener(sock.family, sock.type, sock.proto, fileno=sock.detach(), room=room)


_NO_DESCRIPTOR = b"The server is out of file descriptors: retry in a while.\n"
OUT_OF_DESCRIPTORS = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    + f"content-length: {len(_NO_DESCRIPTOR)}\r\nconnection: close\r\n\r\n".encode()
    + _NO_DESCRIPTOR
)
_FULL_TABLE = (errno.EMFILE, errno.ENFILE)
# How often at most the log says the server ran out of descriptors (with how many times since).
_WARN_EVERY_SECONDS = 10.0
_PAUSE_SECONDS = 1.0  # asyncio's own pause before it accepts again (ACCEPT_RETRY_DELAY)
log = logging.getLogger("memtree_mcp")


class _Listener(socket.socket):
    """A listening socket whose ``accept`` meets a full descriptor table as a server should.

    asyncio's accept loop answers EMFILE with an error and a traceback in the log, and does so for
    each of the up to 2,048 connections of a batch, scheduling as many retries; under a low
    ``ulimit -n`` the explorer logged thousands of tracebacks and never served again. Here, when
    the table is full: the connection that has waited longest for its client is closed (it frees a
    descriptor for the next accept); when none can be, the next waiting connection is answered 503
    through a descriptor kept spare for it; when that fails too, accepting pauses for a second as
    asyncio's does. Each time the batch ends quietly, and the log says so in one line at most every
    ten seconds.
    """

    def __init__(self, *args: Any, room: _WaitingRoom | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._room = room
        self._spare = _spare_descriptor()
        self._paused_until = 0.0
        self._warned_at = -_WARN_EVERY_SECONDS
        self._unwarned = 0

    def accept(self) -> tuple[socket.socket, Any]:
        """The next connection; BlockingIOError (asyncio's "none left") when the table is full and
        this batch must end, OSError(EMFILE) once when asyncio must pause accepting."""
        if time.monotonic() < self._paused_until:
            raise BlockingIOError(errno.EAGAIN, "accepting paused")
        try:
            return super().accept()
        except OSError as exc:
            if exc.errno not in _FULL_TABLE:
                raise
            self._warn()
            if (self._room is not None and self._room.evict_slowest()) or self._shed():
                raise BlockingIOError(errno.EAGAIN, "out of descriptors") from None
            self._paused_until = time.monotonic() + _PAUSE_SECONDS
            raise

    def close(self) -> None:
        if self._spare is not None:
            os.close(self._spare)
            self._spare = None
        super().close()

    def _shed(self) -> bool:
        """Answer the next waiting connection 503 through the spare descriptor; whether one was."""
        if self._spare is None:
            self._spare = _spare_descriptor()
            return False
        os.close(self._spare)
        try:
            conn, _ = super().accept()
        except OSError:
            return False
        else:
            with conn:
                conn.setblocking(False)
                with contextlib.suppress(OSError):  # its request read: no reset ahead of the answer
                    conn.recv(65_536)
                with contextlib.suppress(OSError):
                    conn.send(OUT_OF_DESCRIPTORS)
            return True
        finally:
            self._spare = _spare_descriptor()  # once the connection is closed

    def _warn(self) -> None:
        self._unwarned += 1
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY_SECONDS:
            log.warning(
                "out of file descriptors (%d times; ulimit -n is %d): closing the connections that "
                "wait longest, answering 503 when none can be; raise the limit to serve more at once",
                self._unwarned,
                _descriptor_limit(),
            )
            self._warned_at, self._unwarned = now, 0


def _spare_descriptor() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return None


def _descriptor_limit() -> int:
    """The soft limit on this process's open files (a large number where none is known)."""
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return 1 << 20
    return soft if soft != resource.RLIM_INFINITY else 1 << 20
