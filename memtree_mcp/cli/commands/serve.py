"""Serving the memory over MCP: ``memtree-mcp serve`` on stdio, streamable HTTP or SSE."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import TYPE_CHECKING

from memtree_mcp.cli.commands import Commands
from memtree_mcp.config import Settings

if TYPE_CHECKING:
    from memtree_mcp.service import MemoryService


def add_parsers(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add this family's commands, each running its function below."""
    parser = commands.add_parser("serve", parents=[common], help="run the MCP server")
    parser.add_argument(
        "--transport", choices=["stdio", "sse", "streamable-http"], default="stdio", help="default stdio"
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    parser.add_argument(
        "--allow-host", action="append", default=[], help="another Host name clients use (repeatable)"
    )
    parser.add_argument(
        "--allow-edit",
        action="store_true",
        help="let the explorer at /ui forget memories (HTTP transports; read-only without it)",
    )
    parser.set_defaults(run=serve)


def serve(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    from memtree_mcp.host.heap import freeze_after_loads
    from memtree_mcp.server import build_server

    freeze_after_loads()  # this process is the service's for life (see heap.collector_paused)
    server = build_server(service)
    if args.transport == "stdio":
        from memtree_mcp.transports.stdio import serve_stdio

        # Ctrl-C is 130 as a shell expects; SIGTERM (how clients stop a server) is a normal stop.
        return 130 if serve_stdio(server) == signal.SIGINT else 0
    from memtree_mcp.transports.http import serve_http
    from memtree_mcp.ui.api import ui_app

    def announce(url: str) -> None:
        explorer = url.rsplit("/", 1)[0] + "/ui/"
        print(
            f"memtree-mcp: serving MCP at {url} and the explorer at {explorer} (Ctrl-C to stop)",
            file=sys.stderr,
            flush=True,
        )
        # No handshake tells an HTTP server that a client comes: load the model and the store now,
        # so the first call does not wait for them.
        service.start_warm_up()

    serve_http(
        server,
        transport=args.transport,
        host=args.host,
        port=args.port,
        token=settings.auth_token or None,
        max_body_bytes=settings.max_body_bytes,
        allowed_hosts=args.allow_host,
        explorer=ui_app(service, allow_edit=args.allow_edit, token=settings.auth_token or None),
        on_ready=announce,
    )
    return 0
