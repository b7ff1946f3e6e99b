"""The memory service: :class:`MemoryService` and the parts it hands each call to.

``memory_service`` the facade the MCP server, the CLI and the explorer share for the tools' calls;
``upkeep`` what a person runs to look after a store (history, restore, purge, doctor, re-index,
zones, import, stored secrets), reached as ``service.upkeep``; ``spaces`` each namespace's trees
in memory, its lock and the one way to commit a change; ``writing`` remember, import and forget;
``reading`` recall, summaries, navigation, views and export; ``versions`` the memory as it was;
``refine`` and ``judging`` the background LLM workers (summaries, which memories a new one
updates); ``inputs`` every limit on what a caller may pass; ``requests`` what a caller asks recall,
built once by the face that took the call; ``results`` what the operations return and
``rendering`` the text the model reads of it; ``outline`` a tree as indented lines.

May import ``core``, ``host``, ``secrets``, ``store``, ``providers``, ``llm``, ``config`` and
``errors``; nothing of the faces above it (server, cli, ui, transports, interchange).
:class:`MemoryService` loads on first use, so that a module that needs only ``inputs`` does not pull
in the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtree_mcp.service.memory_service import MemoryService

__all__ = ["MemoryService"]


def __getattr__(name: str) -> Any:
    if name == "MemoryService":
        from memtree_mcp.service.memory_service import MemoryService

        return MemoryService
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
