"""Every error memtree-mcp raises on purpose, in one place.

Each message says what was wrong and what to do; the MCP layer hands them to the model as
``ToolError`` text and the CLI prints them without a traceback.
"""

from __future__ import annotations

import errno
import os
import re

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
    "WriteConflict",
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


_OS_ERROR = re.compile(r"os error (\d+)")
# A source location in a Rust library's message ("/root/.cargo/registry/src/…/local.rs:123:45").
_SOURCE_PATH = re.compile(r"\S+\.rs:\d+(?::\d+)?")


def failure_reason(exc: BaseException) -> str:
    """A store failure's reason in a few words: the operating system's words for its errno when
    there is one (Lance reports I/O failures as text with "(os error 28)" inside and the Rust source
    paths it came through), else the message without those paths, cut short."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if found := _OS_ERROR.search(str(exc)):
        return os.strerror(int(found.group(1)))
    text = " ".join(_SOURCE_PATH.sub("", str(exc)).replace(", ,", ",").split()).strip(" ,")
    return text[:200] or type(exc).__name__


def store_error(doing: str, exc: BaseException) -> StoreError:
    """The StoreError for a store that could not ``doing`` ("write to the memory store")."""
    reason = failure_reason(exc)
    if reason == os.strerror(errno.ENOSPC):
        return StoreError(f"could not {doing}: {reason}; free some space and retry (nothing was written)")
    return StoreError(f"could not {doing}: {reason}")


class LockTimeout(StoreError):
    """Another writer held the namespace longer than MEMTREE_LOCK_TIMEOUT; nothing was written."""


class LeaseLost(StoreError):
    """This server lost a bucket namespace's write lease (it stalled past the lease's expiry and
    another server took it over): its write was not acknowledged and readers ignore it."""


class WriteConflict(StoreError):
    """Another writer committed to the namespace between this writer's read and its commit, so
    the commit does not count (every reader ignores it); nothing was acknowledged. The write is
    done again on what the other one wrote (``Spaces.retrying``)."""


class EmbedderMismatch(StoreError):
    """The store was built with another embedder than the one configured."""


class ProviderError(MemtreeError):
    """An embedder or LLM could not be loaded or did not answer."""
