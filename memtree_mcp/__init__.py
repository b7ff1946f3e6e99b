"""memtree-mcp: a long-term memory for agents, organised as trees, served over MCP.

The package's folders, from the ground up (each ``__init__.py`` says what it holds and may import;
``tests/test_layers.py`` holds them to it): ``host`` the machine's utilities (the C heap, project
folders, loopback addresses) and ``core`` the algorithms (numpy and the standard library), then
``secrets`` secret detection (detect-secrets), ``store`` LanceDB and the namespace's locks, ``llm``
the language models, ``providers`` the embedders, ``service`` the memory service, ``interchange``
files in and out, ``hook`` Claude Code's hooks (quick client, worker, queue), ``server`` the MCP
face, ``transports`` stdio and HTTP, ``ui`` the explorer, ``cli`` the command. ``config``
(settings) and ``errors`` stand beside them.

The public API: :class:`MemoryService` (``memtree_mcp.service``), :class:`Settings`
(``memtree_mcp.config``), :func:`memtree_mcp.server.build_server` and the ``memtree-mcp`` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtree_mcp.config import Settings
    from memtree_mcp.service import MemoryService

__version__ = "0.1.0"
__all__ = ["MemoryService", "Settings", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "MemoryService":
        from memtree_mcp.service import MemoryService

        return MemoryService
    if name == "Settings":
        from memtree_mcp.config import Settings

        return Settings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
