"""``memtree-mcp ui``: the explorer alone, on 127.0.0.1, behind the same Host checks and connection
limits (a cap, a deadline for request heads) as the MCP transports.

Always behind a token. 127.0.0.1 keeps other machines out, not the other users and processes of
this one: any of them could read every memory through the port. So without MEMTREE_AUTH_TOKEN a
run makes its own random token (:func:`explorer_token`) and puts it in the URL it prints and opens
(``#token=…``, a fragment the browser keeps to itself); only who sees that URL can read the memory.

It opens the URL in the person's browser when there is a person and a browser to show it
(:func:`may_open_browser`): never under CI, never when the output is not a terminal (tests, scripts,
services), never on a Linux or BSD session without a display, where Python's ``webbrowser`` would
fall back on a text browser that takes over the terminal. ``--no-browser`` turns it off.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable, Mapping
from typing import TextIO
from urllib.parse import quote

from starlette.types import ASGIApp

from memtree_mcp.service import MemoryService
from memtree_mcp.service.inputs import check_range
from memtree_mcp.transports.guards import (
    HostGuardMiddleware,
    guarded_socket,
    security_settings,
    server_config,
)
from memtree_mcp.ui.api import ui_app

__all__ = ["UI_HOST", "explorer_token", "guarded_ui_app", "may_open_browser", "open_in_browser", "serve_ui"]

UI_HOST = "127.0.0.1"
TOKEN_BYTES = 24  # 32 URL-safe characters


def guarded_ui_app(
    service: MemoryService, *, port: int, allow_edit: bool = False, token: str | None = None
) -> ASGIApp:
    """The explorer for ``127.0.0.1:port``; a foreign Host or Origin (DNS rebinding) is refused."""
    return HostGuardMiddleware(
        ui_app(service, allow_edit=allow_edit, token=token), security_settings(UI_HOST, port, ())
    )


def serve_ui(
    service: MemoryService,
    *,
    port: int = 0,
    allow_edit: bool = False,
    token: str | None = None,
    on_ready: Callable[[str], None] = print,
) -> None:
    """Serve the explorer on 127.0.0.1 (``port`` 0: a free one) until SIGINT/SIGTERM; blocking.

    ``on_ready`` receives the page's URL once the port is bound (with ``#token=…`` when a token
    guards the API, so the page can send it). Raises InvalidInput for a port outside 0 to
    65535 and OSError when the port is taken.
    """
    import uvicorn

    check_range(port, "port", 0, 65_535)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((UI_HOST, port))
        sock.listen(128)
        bound = sock.getsockname()[1]
        # Load the store and the model while the person opens the page, not on its first request.
        threading.Thread(target=service.warm_up, name="memtree-ui-warm-up", daemon=True).start()
        app = guarded_ui_app(service, port=bound, allow_edit=allow_edit, token=token)
        # The connection cap and the request-head deadline of ``serve`` (http_guards.py).
        config = server_config(app, host=UI_HOST, port=bound, lifespan="off", graceful_shutdown=2)
        url = f"http://{UI_HOST}:{bound}/ui/" + (f"#token={quote(token, safe='')}" if token else "")
        on_ready(url)
        uvicorn.Server(config).run(sockets=[guarded_socket(sock, config)])
    finally:
        sock.close()


def explorer_token(configured: str | None) -> str:
    """The token guarding the explorer: MEMTREE_AUTH_TOKEN when set, else a new random one."""
    return configured or secrets.token_urlsafe(TOKEN_BYTES)


def may_open_browser(
    environ: Mapping[str, str] = os.environ, stdout: TextIO | None = None, platform: str = sys.platform
) -> bool:
    """Whether opening a browser can reach a person: a terminal, not CI, a display where one is needed."""
    if environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return False
    out = stdout if stdout is not None else sys.stdout
    try:
        if out is None or not out.isatty():
            return False
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False
    if platform in ("darwin", "win32", "cygwin"):
        return True
    return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def open_in_browser(url: str) -> threading.Thread:
    """Open ``url`` in the default browser from a thread (some browsers' launchers wait for them)."""
    thread = threading.Thread(target=webbrowser.open, args=(url,), name="memtree-ui-browser", daemon=True)
    thread.start()
    return thread
