"""Secrets at the door, and in a store written before it (or with MEMTREE_SECRETS=keep).

:func:`guard_secrets` is what the writer's door (``Writer.chunks``) does with a memory's fields:
:func:`~memtree_mcp.secrets.detection.redact_fields`, and InvalidInput when MEMTREE_SECRETS=refuse.
``memtree-mcp doctor`` names the memories whose content, role, tags or session hold a secret
(:func:`secrets_held`: ids, kinds and fields, never the values); ``doctor --redact`` rewrites them
(:func:`redact_stored`): each is forgotten and stored again under its own id, with its time and
links, its fields passed through the same function, and the namespace is purged so that no file
of the store holds the old text.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from memtree_mcp.core.trees.temporal import time_key
from memtree_mcp.errors import InvalidInput, NotFound
from memtree_mcp.secrets.detection import Held, redact_fields, redact_record
from memtree_mcp.service.inputs import ImportTerms

if TYPE_CHECKING:
    from collections.abc import Callable

    from memtree_mcp.core.memory import Memory
    from memtree_mcp.core.trees.model import Leaf

log = logging.getLogger("memtree_mcp")


class Rewriter(Protocol):
    """What rewriting needs of the writer (``service/writing.py``)."""

    def forget(
        self, name: str, *, ids: Sequence[str] | None = None, limit: int | None = ...
    ) -> list[str]: ...

    def import_records(
        self, name: str, records: Iterable[object], *, batch: int = ..., terms: ImportTerms = ...
    ) -> tuple[int, int]: ...


def stored_fields(leaf: Leaf) -> dict[str, object]:
    """The fields of a stored memory that the door reads (secrets.detection.STORED_FIELDS)."""
    return {"content": leaf.text, "role": leaf.role, "tags": leaf.tags, "session": leaf.session}


def redact_leaf(leaf: Leaf) -> None:
    """``leaf``'s content, role, tags and session with their secrets replaced by markers (the
    door's own function), in place: for a memory rebuilt without passing the door (``reindex``)."""
    fields, held = redact_fields(stored_fields(leaf), "redact")
    if held:
        leaf.text, leaf.role = cast(str, fields["content"]), cast(str, fields["role"])
        leaf.tags = cast("tuple[str, ...]", fields["tags"])
        leaf.session = cast("str | None", fields["session"])


def held_kinds(held: Sequence[Held]) -> list[str]:
    """What a list of secrets found says to a person: each kind, and where when not in the text
    (``github-token in tag 2``, ``password in the session``); never a value."""
    return [h.kind if h.field == "content" else f"{h.kind} in {h.where}" for h in held]


def secrets_held(memory: Memory | None, name: str) -> list[tuple[str, list[str]]]:
    """Each memory of namespace ``name`` (held in ``memory``) whose content, role, tags or session
    hold a secret: its id and the kinds found (:func:`held_kinds`), oldest first. Raises NotFound
    for an empty namespace."""
    if memory is None or not memory.leaves:
        raise NotFound(f"namespace '{name}' holds nothing to check.")
    held = []
    for leaf in sorted(memory.leaves.values(), key=time_key):
        _, found = redact_fields(stored_fields(leaf), "refuse")
        if found:
            held.append((leaf.id, held_kinds(found)))
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
    records = [redact_record(record, "redact") for record in exported if record["id"] in ids]
    # Forgotten, then stored again under their own ids; the purge takes the old text off disk.
    writer.forget(name, ids=sorted(ids), limit=None)
    writer.import_records(name, records, terms=ImportTerms(keep_makers=True))  # the user's links stay theirs
    purge()
    log.info("rewrote %d memories of namespace %s without their secrets", len(ids), name)
    return sorted(ids)


@dataclass(frozen=True, slots=True)
class Fields:
    """A memory's fields that hold a caller's text and are stored, checked; after the door, with
    the kinds of secrets redacted from them (``redacted``: :func:`held_kinds`)."""

    content: str
    role: str
    tags: tuple[str, ...]
    session: str | None
    redacted: tuple[str, ...] = ()


def guard_secrets(fields: Fields, mode: str) -> Fields:
    """A memory's checked ``fields`` as MEMTREE_SECRETS (``mode``) wants them stored, through
    :func:`~memtree_mcp.secrets.detection.redact_fields`: the one door of every write. Raises
    InvalidInput naming the first secret's field, kind and place when ``mode`` is ``refuse``;
    nothing is stored then."""
    given = {"content": fields.content, "role": fields.role, "tags": fields.tags, "session": fields.session}
    out, held = redact_fields(given, mode)
    if held and mode == "refuse":
        first = held[0]
        where = {"content": f" at {first.where}", "tags": f" in {first.where}"}.get(first.field, "")
        holds = "hold" if first.field == "tags" else "holds"
        raise InvalidInput(
            f"{first.field} {holds} a secret ({first.kind}{where}) and MEMTREE_SECRETS=refuse; nothing "
            "was stored: take the secret out, or set MEMTREE_SECRETS=redact to store it with a marker "
            "in its place"
        )
    return Fields(
        cast(str, out["content"]),
        cast(str, out["role"]),
        cast("tuple[str, ...]", out["tags"]),
        cast("str | None", out["session"]),
        tuple(held_kinds(held)),
    )
