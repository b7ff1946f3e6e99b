"""Looking at the memory: ``namespaces``, the ``tree`` outline and the explorer page (``ui``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from memtree_mcp.cli.commands import Commands
from memtree_mcp.config import Settings
from memtree_mcp.core.names import TREES

if TYPE_CHECKING:
    from memtree_mcp.service import MemoryService


def add_parsers(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add this family's commands, each running its function below."""
    parser = commands.add_parser(
        "namespaces", parents=[common], help="list the namespaces and their memories"
    )
    parser.set_defaults(run=namespaces)
    parser = commands.add_parser("tree", parents=[common], help="print the outline of a tree")
    parser.add_argument("--tree", dest="which", choices=TREES, default="semantic")
    parser.add_argument(
        "--depth", type=int, default=3, help="levels below the root to show (1-20, default 3)"
    )
    parser.add_argument(
        "--max-children", type=int, default=50, help="children shown under each node (default 50; 0: all)"
    )
    parser.set_defaults(run=tree)
    parser = commands.add_parser(
        "ui", parents=[common], help="explore the memory in a browser (serves a page on 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--allow-edit", action="store_true", help="let the page forget memories")
    parser.add_argument("--no-browser", action="store_true", help="print the URL without opening a browser")
    parser.set_defaults(run=ui)


def namespaces(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    found = service.namespaces()
    if not found:
        # On standard error: standard output stays one "name<TAB>count" line per namespace.
        print(f"no namespaces yet in {settings.home}", file=sys.stderr)
    for name, count in found:
        print(f"{name}\t{count}")
    return 0


def tree(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    from memtree_mcp.ui.outline import print_outline

    name = service.resolve_namespace()
    print_outline(
        service.memory(name), args.which, args.depth, namespace=name, max_children=args.max_children
    )
    return 0


def ui(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    from memtree_mcp.ui.server import explorer_token, may_open_browser, open_in_browser, serve_ui

    def announce(url: str) -> None:
        print(f"memtree explorer: {url}", flush=True)
        mode = "editing on" if args.allow_edit else "read-only"
        opening = not args.no_browser and may_open_browser()
        where = "opening it in your browser; " if opening else ""
        print(f"({mode}; {where}Ctrl-C to stop)", flush=True)
        if opening:
            open_in_browser(url)

    try:
        serve_ui(
            service,
            port=args.port,
            allow_edit=args.allow_edit,
            # Without MEMTREE_AUTH_TOKEN, one for this run: other local users can reach the port.
            token=explorer_token(settings.auth_token),
            on_ready=announce,
        )
    except OSError as exc:
        print(f"memtree-mcp: cannot serve on 127.0.0.1:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0
