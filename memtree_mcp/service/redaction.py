"""Secrets in a store written before redaction (or with MEMTREE_SECRETS=keep): found, and rewritten.

``memtree-mcp doctor`` names the memories that hold a secret (:func:`secrets_held`: ids and kinds,
never the values); ``doctor --redact`` rewrites them (:func:`redact_stored`): each is forgotten and
stored again under its own id, with its time, session, tags and links, its secrets replaced by
markers, and the namespace is purged so that no file of the store holds the old text.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from memtree_mcp.core.secrets import find_secrets, redacted
from memtree_mcp.core.temporal import time_key
from memtree_mcp.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from memtree_mcp.core.memory import Memory

log = logging.getLogger("memtree_mcp")


class Rewriter(Protocol):
    """What rewriting needs of the writer (``service/writing.py``)."""

    def forget(
        self, name: str, *, ids: Sequence[str] | None = None, limit: int | None = ...
    ) -> list[str]: ...

    def import_records(
        self, name: str, records: Iterable[object], *, batch: int = ..., keep_makers: bool = ...
    ) -> tuple[int, int]: ...


def secrets_held(memory: Memory | None, name: str) -> list[tuple[str, list[str]]]:
    """Each memory of namespace ``name`` (held in ``memory``) whose text holds a secret: its id
    and the kinds found, oldest first. Raises NotFound for an empty namespace."""
    if memory is None or not memory.leaves:
        raise NotFound(f"namespace '{name}' holds nothing to check.")
    held = []
    for leaf in sorted(memory.leaves.values(), key=time_key):
        found = find_secrets(leaf.text)
        if found:
            held.append((leaf.id, [secret.kind for secret in found]))
    return held


def redact_stored(
    name: str,
    held: Iterable[tuple[str, list[str]]],
    exported: Iterable[Mapping[str, object]],
    writer: Rewriter,
    purge: Callable[[], object],
) -> list[str]:
    """Rewrite the memories of namespace ``name`` that hold secrets (``held``, their records in
    ``exported``), then purge; the ids rewritten."""
    ids = {memory_id for memory_id, _ in held}
    if not ids:
        return []
    records = [dict(record) for record in exported if record["id"] in ids]
    for record in records:
        record["content"] = redacted(str(record["content"]))
    # Forgotten, then stored again under their own ids; the purge takes the old text off disk.
    writer.forget(name, ids=sorted(ids), limit=None)
    writer.import_records(name, records, keep_makers=True)  # the user's links stay the user's
    purge()
    log.info("rewrote %d memories of namespace %s without their secrets", len(ids), name)
    return sorted(ids)


def guard_secrets(text: str, mode: str) -> tuple[str, tuple[str, ...]]:
    """``text`` as MEMTREE_SECRETS (``mode``) wants it stored, and the kinds of secrets redacted.
    Raises InvalidInput naming the first secret's kind and place when ``mode`` is ``refuse``."""
    if mode == "keep":
        return text, ()
    found = find_secrets(text)
    if not found:
        return text, ()
    if mode == "refuse":
        first = found[0]
        raise InvalidInput(
            f"content holds a secret ({first.kind} at {first.where(text)}) and MEMTREE_SECRETS=refuse; "
            "nothing was stored: take the secret out, or set MEMTREE_SECRETS=redact to store the text "
            "with a marker in its place"
        )
    return redacted(text, found), tuple(secret.kind for secret in found)
