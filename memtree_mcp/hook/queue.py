"""The queue of turns Stop leaves in ``hook-queue/``, and the drain that stores them.

The queue is the record of what is still to store: a turn's file is deleted only after its memory
is committed, and the writer skips a text the namespace holds already, so a worker killed in the
middle of a drain loses nothing and the next drain stores nothing twice. Each turn names its
namespace and its store (:data:`~memtree_mcp.hook.settings.STORE_KEY`), and was made ready by
its own hook (redacted, fitted to its limit): a drain stores the turns of its own store as they
are, and leaves the others to a worker with theirs. A file that is not a turn (a FIFO, a link,
a directory, bad JSON) is moved aside to ``bad/`` without being waited on.

A forget by query or of a subtree, a purge and ``doctor --redact`` drain the queue first
(:func:`drain_first`), so that a turn queued before them is forgotten, purged or redacted too
instead of coming back at the next drain.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memtree_mcp.errors import EmbedderMismatch, InvalidInput
from memtree_mcp.hook.settings import (
    CONTENT_CHARS,
    home_of,
    key_flags,
    private_folder,
    queue_folder,
    store_key,
)

if TYPE_CHECKING:
    import argparse

    from memtree_mcp.config import Settings
    from memtree_mcp.service import MemoryService

__all__ = ["Drained", "drain", "drain_first", "read_queued", "waiting_line"]

log = logging.getLogger("memtree_mcp.hook")

QUEUED_BYTES = 64 * 1024 * 1024
"""The largest queued turn a drain reads (a turn holds at most 10,000,000 characters)."""


def read_queued(path: Path) -> object:
    """The JSON of the queued turn at ``path``, read without following a link or waiting on a
    FIFO. Raises OSError, ValueError (not JSON) or InvalidInput (not a regular file, too large)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput("not a regular file")
        if info.st_size > QUEUED_BYTES:
            raise InvalidInput(f"larger than {QUEUED_BYTES:,} bytes")
        data = file.read(QUEUED_BYTES + 1)
    return json.loads(data.decode("utf-8"))


@dataclass(frozen=True)
class Drained:
    """What a drain did: the memories it added, and the turns it left for a store not its own."""

    added: int = 0
    waiting: int = 0


def drain(home: str, store: str, service: MemoryService) -> Drained:
    """Store every queued turn of ``store`` (:func:`~memtree_mcp.hook.settings.store_key`) in
    its namespace, one drain at a time, with ``service``, each as its hook queued it. A turn's
    file goes only once its memory is committed; a turn of another store, or of a namespace made
    by another model, stays for a worker with theirs. Raises StoreError when a commit fails (the
    turn stays queued)."""
    from filelock import FileLock

    from memtree_mcp.service.inputs import ImportTerms

    folder = queue_folder(home)
    if not folder.is_dir():
        if folder.exists() or folder.is_symlink():
            log.warning("hook queue: %s is not a folder; no turn can be queued until it is moved", folder)
        return Drained()
    added = waiting = 0
    with FileLock(str(folder / ".drain.lock"), mode=0o600):
        for path in sorted(folder.glob("*.json")):
            try:
                record = read_queued(path)
                if not isinstance(record, dict):
                    raise InvalidInput("not a JSON object")
                if record.get("store", store) != store:
                    waiting += 1
                    continue
                # None: a turn an older version queued for a hook without MEMTREE_NAMESPACE.
                namespace = record.pop("namespace", None) or "default"
                # The caller's zone travels with its turn: a namespace its turn creates counts its
                # days in it; one that has a zone keeps its own (service/zones.py).
                zone = record.pop("timezone", None)
                if isinstance(zone, str) and zone:
                    service.upkeep.set_zone_for(namespace, zone)
                record.pop("store", None)
                # Stored as its hook queued it: that hook dealt with its secrets by its own
                # MEMTREE_SECRETS (a keep-mode project's turn is not the drain's to redact); a turn
                # an older version queued names no mode, and passes the drain's own.
                mode = record.pop("secrets", None)
                terms = ImportTerms(
                    secrets=mode if mode in ("redact", "refuse", "keep") else None,
                    max_chars=CONTENT_CHARS[1] if isinstance(mode, str) else None,  # fitted by its hook
                )
                added += service.upkeep.import_memories([record], namespace=namespace, terms=terms)[0]
            except FileNotFoundError:
                continue  # another drain stored it
            except EmbedderMismatch:
                waiting += 1  # a namespace of another model: a worker with that model stores it
                continue
            except (OSError, ValueError, RecursionError, InvalidInput) as exc:
                # Moved aside, not lost and not in the way of every later turn.
                aside = folder / "bad"
                with contextlib.suppress(OSError):
                    private_folder(aside)
                    path.replace(aside / path.name)
                log.warning("hook queue: %s moved to %s (%s)", path.name, aside, exc)
                print(f"memtree-mcp: hook queue: {path.name} moved aside ({exc})", file=sys.stderr)
                continue
            path.unlink(missing_ok=True)
    return Drained(added, waiting)


def waiting_line(waiting: int) -> str:
    """What a drain says of the turns it left for a worker with another embedder or store."""
    from memtree_mcp.core.wording import counted

    return (
        f"hook queue: {counted(waiting, 'turn waits', 'turns wait')} for a hook with another "
        "embedder or store (its worker stores them)"
    )


def drain_first(args: argparse.Namespace, settings: Settings, service: MemoryService) -> int:
    """Store the turns waiting in hook-queue/ before a forget, a purge or a redaction, so that
    they are forgotten, purged or redacted too: a turn queued before ``forget --query`` would
    otherwise be stored at the next drain, and a purged secret come back. A forget by id cannot
    name a queued turn (it has no id yet), so it drains nothing. Returns the memories added; the
    turns of another store stay (this process could not reach their namespaces either), said on
    standard error. Raises as :func:`drain`."""
    from memtree_mcp.service import MemoryService

    home = home_of(settings.home)
    if not any(queue_folder(home).glob("*.json")):
        return 0
    queue = MemoryService(settings, embedder=service.embedder, background=False)
    try:
        done = drain(home, store_key(home, os.environ, key_flags(args)), queue)
    finally:
        queue.close()
    if done.waiting:
        print(f"memtree-mcp: {waiting_line(done.waiting)}", file=sys.stderr)
    return done.added
