"""The ``memtree-mcp`` command: serve the memory over MCP, or use it from a shell.

``app`` runs one command (its settings, its service, its exit status); ``parser`` the arguments of
every command; ``commands/`` what each command runs, a module for each family (``commands/hook``
hands ``memtree-mcp hook`` to :mod:`memtree_mcp.hook`); ``client_config`` the MCP client
configurations that ``install`` prints or writes.

The top of the house: it may import every folder but ``store``, ``providers`` and ``llm``, which
it reaches through the service. A command imports what it needs when it runs, so that nothing
heavy loads before a client's MCP handshake.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memtree-mcp`` command; returns the exit status (see ``cli.app.main``).

    ``memtree-mcp hook`` goes first to its quick path, which imports the standard library only
    (a hook is a fresh process on every prompt); everything else, and a hook the quick path does not
    take, goes to the full command."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["hook"]:
        from memtree_mcp.hook.client import quick

        done = quick(words[1:])
        if done is not None:
            return done
    from memtree_mcp.cli.app import main as full

    return full(words)
