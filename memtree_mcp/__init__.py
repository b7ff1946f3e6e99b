"""memtree-mcp: a long-term memory for agents, organised as trees, served over MCP.

The package's folders, from the ground up (each ``__init__.py`` says what it holds and may import;
``tests/test_layers.py`` holds them to it): ``core`` the algorithms, ``store`` LanceDB and the
namespace's locks, ``providers`` the embedders, ``llm`` the language models, ``service`` the
memory service, ``interchange`` files in and out, ``server`` the MCP face, ``transports`` stdio
and HTTP, ``ui`` the explorer, ``cli`` the command. ``config`` (settings) and ``errors`` stand
beside them.

The public API: :class:`MemoryService` (``memtree_mcp.service``), :class:`Settings`
(``memtree_mcp.config``), :func:`memtree_mcp.server.build_server` and the ``memtree-mcp`` command.
Modules that stood at the top of the package before version 0.2 can still be imported by their
old names, with a DeprecationWarning, until the next release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtree_mcp.config import Settings
    from memtree_mcp.service import MemoryService

__version__ = "0.1.0"
__all__ = ["MemoryService", "Settings", "__version__"]

MOVED = {
    "addresses": "core.addresses",
    "heap": "core.heap",
    "hook": "cli.hook",
    "install": "cli.client_config",
    "transfer": "cli.commands.transfer",
    "inputs": "service.inputs",
    "judging": "service.judging",
    "refine": "service.refine",
    "reading": "service.reading",
    "writing": "service.writing",
    "maintenance": "service.maintenance",
    "spaces": "service.spaces",
    "versions": "service.versions",
    "results": "service.results",
    "rendering": "service.rendering",
    "outline": "service.outline",
    "llm_policies": "llm.policies",
    "prompts": "llm.prompts",
    "providers.llm": "llm.endpoint",
    "providers.bounded_http": "llm.bounded_http",
    "providers.sampling": "llm.sampling",
    "sources": "interchange.sources",
    "markdown": "interchange.markdown",
    "locks": "store.locks",
    "stdio": "transports.stdio",
    "transport": "transports.http",
    "http_guards": "transports.guards",
}
"""Old module names (under ``memtree_mcp.``) and where each module lives now."""


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old name as the module it moved to (the same module object), with a warning."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        old = fullname.removeprefix(__name__ + ".")
        if old == fullname or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = f"{__name__}.{MOVED[spec.name.removeprefix(__name__ + '.')]}"
        warnings.warn(
            f"{spec.name} moved to {new}; the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The module is the one it moved to, already run."""


sys.meta_path.append(_MovedModules())


def __getattr__(name: str) -> Any:
    if name == "MemoryService":
        from memtree_mcp.service import MemoryService

        return MemoryService
    if name == "Settings":
        from memtree_mcp.config import Settings

        return Settings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
