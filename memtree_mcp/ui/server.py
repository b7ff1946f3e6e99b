"""``memtree-mcp ui``: the explorer alone, on 127.0.0.1, behind the same Host checks as the MCP transports."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from urllib.parse import quote

from starlette.types import ASGIApp

from memtree_mcp.http_guards import HostGuardMiddleware, security_settings
from memtree_mcp.inputs import check_range
from memtree_mcp.service import MemoryService
from memtree_mcp.ui.api import ui_app

__all__ = ["UI_HOST", "guarded_ui_app", "serve_ui"]

UI_HOST = "127.0.0.1"


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
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=2,
            server_header=False,
            proxy_headers=False,
        )
        url = f"http://{UI_HOST}:{bound}/ui/" + (f"#token={quote(token, safe='')}" if token else "")
        on_ready(url)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
