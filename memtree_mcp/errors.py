"""Every error memtree-mcp raises on purpose, in one place.

Each message says what was wrong and what to do; the MCP layer hands them to the model as
``ToolError`` text and the CLI prints them without a traceback.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "EmbedderMismatch",
    "InvalidInput",
    "LeaseLost",
    "LockTimeout",
    "MemtreeError",
    "NotFound",
    "ProviderError",
    "StoreError",
]


class MemtreeError(Exception):
    """Base of every error memtree-mcp raises on purpose."""


class ConfigurationError(MemtreeError):
    """A setting (a MEMTREE_* variable or its flag) has a value memtree-mcp cannot work with."""


class InvalidInput(MemtreeError):
    """An argument was malformed, out of range or too large; nothing was written."""


class NotFound(MemtreeError):
    """A node id or namespace that does not exist."""


class StoreError(MemtreeError):
    """The database could not be read or written; the previous state is kept."""


class LockTimeout(StoreError):
    """Another writer held the namespace longer than MEMTREE_LOCK_TIMEOUT; nothing was written."""


class LeaseLost(StoreError):
    """This server lost a bucket namespace's write lease (it stalled past the lease's expiry and
    another server took it over): its write was not acknowledged and readers ignore it."""


class EmbedderMismatch(StoreError):
    """The store was built with another embedder than the one configured."""


class ProviderError(MemtreeError):
    """An embedder or LLM could not be loaded or did not answer."""
