"""The ``memtree-mcp`` command: serve the memory over MCP, or use it from a shell.

``app`` runs one command (its settings, its service, its exit status); ``parser`` the arguments of
every command; ``commands/`` what each command runs, a module for each family; ``client_config``
the MCP client configurations that ``install`` prints or writes; ``hook`` Claude Code's hooks.

The top of the house: it may import every folder. A command imports what it needs when it runs,
so that nothing heavy loads before a client's MCP handshake.
"""

from memtree_mcp.cli.app import main

__all__ = ["main"]
