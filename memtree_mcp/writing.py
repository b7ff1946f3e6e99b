"""The write path: remember (and bulk import) and forget.

Every write takes the namespace for itself (:meth:`Spaces.writing`: the space's lock and the
file lock, after following other processes), changes the trees in memory, marks the branches it
touched for an LLM summary, and commits all changed and removed nodes at once
(:meth:`Spaces.change`); a failure anywhere leaves the previous version, on disk and in RAM.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from memtree_mcp.config import Settings
from memtree_mcp.core.chunking import split_into_chunks
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.core.memory import Memory, RecallFilter
from memtree_mcp.core.model import Leaf
from memtree_mcp.errors import InvalidInput, NotFound
from memtree_mcp.inputs import (
    MAX_QUERY_CHARS,
    check_node,
    check_role,
    check_session,
    check_tags,
    check_text,
    parse_timestamp,
)
from memtree_mcp.refine import Refinement
from memtree_mcp.results import PathStep
from memtree_mcp.spaces import Spaces

log = logging.getLogger("memtree_mcp")

# A query given to forget reaches at most this many memories at once.
FORGET_CANDIDATES = 10


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of content to store as a leaf, with what ``remember`` was told about it."""

    text: str
    role: str
    tags: tuple[str, ...]
    timestamp: float
    session: str | None


@dataclass(frozen=True, slots=True)
class Stored:
    """What storing chunks did: each chunk's leaf id, how many were new, the first one's path."""

    ids: list[str]
    added: int
    path: list[PathStep]


def content_hash(text: str) -> str:
    """The identity of a chunk's exact text, for deduplication."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def new_leaf_id() -> str:
    """A fresh, unique id for a leaf."""
    return "m" + uuid.uuid4().hex[:15]


class Writer:
    """Remembers and forgets: every change to the trees goes through here."""

    def __init__(
        self, settings: Settings, spaces: Spaces, embedder: Callable[[], Embedder], refinement: Refinement
    ) -> None:
        self.settings = settings
        self._spaces = spaces
        self._embedder = embedder
        self._refinement = refinement

    def chunks(
        self,
        content: object,
        role: object = "user",
        tags: object = (),
        timestamp: object = None,
        session: object = None,
    ) -> list[Chunk]:
        """``content`` checked and split into chunks with its checked attributes.

        Raises InvalidInput for any bad argument.
        """
        text = check_text(content, "content", self.settings.max_content_chars)
        checked_role = check_role(role)
        checked_tags = check_tags(tags)
        checked_session = check_session(session)
        moment = parse_timestamp(timestamp) if timestamp is not None else time.time()
        return [
            Chunk(chunk, checked_role, checked_tags, moment, checked_session)
            for chunk in split_into_chunks(text)
        ]

    def import_records(self, name: str, records: Iterable[object], *, batch: int = 256) -> tuple[int, int]:
        """Store many records fast: embeddings in batches, one commit per ``batch`` memories.

        Each record is a mapping with ``content`` and optionally ``role``, ``timestamp``,
        ``session``, ``tags``, checked as ``remember`` checks them. A record that fails its check
        stops the import with InvalidInput naming the record; every batch committed before it
        stays. Returns (memories added, duplicates skipped).
        """
        added = skipped = 0
        pending: list[Chunk] = []
        for number, record in enumerate(records, start=1):
            try:
                if not isinstance(record, Mapping):
                    raise InvalidInput("each line must be a JSON object with a 'content' field.")
                pending += self.chunks(
                    record.get("content"),
                    record.get("role", "user"),
                    record.get("tags", ()),
                    record.get("timestamp"),
                    record.get("session"),
                )
            except InvalidInput as exc:
                raise InvalidInput(f"record {number}: {exc}") from None
            if len(pending) >= batch:
                done = self.store(name, pending).added
                added, skipped = added + done, skipped + len(pending) - done
                pending = []
        if pending:
            done = self.store(name, pending).added
            added, skipped = added + done, skipped + len(pending) - done
        return added, skipped

    def store(self, name: str, chunks: list[Chunk]) -> Stored:
        """Store ``chunks`` as leaves of namespace ``name`` in one commit, skipping exact duplicates.

        Raises InvalidInput past the namespace's quota (nothing written), StoreError when the
        commit fails (the previous state is kept) and EmbedderMismatch for a store built by
        another model.
        """
        refine: list[tuple[int, str]] = []
        with self._spaces.writing(name) as space:
            assert space is not None  # writing() creates the namespace
            memory = space.memory
            hashes = [content_hash(chunk.text) for chunk in chunks]
            fresh = [
                i for i, h in enumerate(hashes) if memory.duplicate_of(h) is None and h not in hashes[:i]
            ]
            quota = self.settings.max_memories
            if len(memory.leaves) + len(fresh) > quota:
                raise InvalidInput(
                    f"namespace '{name}' holds {len(memory.leaves):,} memories and this would add "
                    f"{len(fresh)}; the quota is {quota:,} (MEMTREE_MAX_MEMORIES). Forget some, or raise it."
                )
            vectors = self._embedder().embed_batch([chunks[i].text for i in fresh]) if fresh else None
            vector_of = {i: position for position, i in enumerate(fresh)}
            ids: list[str] = []
            with self._spaces.change(space) as change:
                for i, chunk in enumerate(chunks):
                    existing = memory.duplicate_of(hashes[i])
                    if existing is not None:
                        ids.append(existing)
                        continue
                    assert vectors is not None
                    leaf = Leaf(
                        id=new_leaf_id(),
                        text=chunk.text,
                        vector=vectors[vector_of[i]],
                        seq=memory.next_seq,
                        timestamp=chunk.timestamp,
                        role=chunk.role,
                        tags=chunk.tags,
                        session=chunk.session,
                        content_hash=hashes[i],
                        created=change.now,
                    )
                    change.changed |= memory.add_leaf(leaf)
                    ids.append(leaf.id)
                refine = self._refinement.mark(memory, change.changed, forgotten=False)
            path = [
                PathStep(id=b.id, label=b.label)
                for b in memory.semantic.ancestors(ids[0])
                if b.kind != "root"
            ]
        self._refinement.submit(name, refine)
        return Stored(ids, len(fresh), path)

    def forget(self, name: str, node_id: str | None, query: str | None, confirm: bool) -> list[str]:
        """Delete one memory, every memory under a summary (with ``confirm``) or those a query finds.

        Returns the ids deleted. Deleted memories leave both trees, every summary above them is
        recomputed without them, and all of it is one commit. Raises InvalidInput for bad
        arguments and NotFound for an unknown node.
        """
        text = check_text(query, "query", MAX_QUERY_CHARS) if query is not None else None
        vector = self._embedder().embed_batch([text])[0] if text is not None else None
        refine: list[tuple[int, str]] = []
        with self._spaces.writing(name, create=False) as space:
            if space is None:
                if node_id is not None:
                    raise NotFound(f"no node {node_id!r} in namespace '{name}'.")
                return []
            memory = space.memory
            if node_id is not None:
                check_node(memory, node_id)
                targets = [node_id] if node_id in memory.leaves else leaves_under(memory, node_id)
                if len(targets) > 1 and not confirm:
                    raise InvalidInput(
                        f"{node_id} is a summary of {len(targets)} memories; call again with confirm=true "
                        "to delete them all."
                    )
            else:
                assert vector is not None and text is not None
                hits = memory.recall(
                    vector, FORGET_CANDIDATES, query_text=text, where=RecallFilter(kind="leaf")
                )
                targets = [h.id for h in hits]
            with self._spaces.change(space) as change:
                for leaf_id in targets:
                    leaf_changed, leaf_removed = memory.remove_leaf(leaf_id)
                    change.changed = (change.changed | leaf_changed) - leaf_removed
                    change.removed |= leaf_removed
                # What the forgotten memories said must not survive in any LLM summary either.
                refine = self._refinement.mark(memory, change.changed, forgotten=True)
        self._refinement.submit(name, refine)
        log.info("forgot %d memories in namespace %s", len(targets), name)
        return targets


def leaves_under(memory: Memory, node_id: str) -> list[str]:
    """The leaves under branch ``node_id``, in its tree's order."""
    branch = memory.branch(node_id)
    assert branch is not None
    return memory.tree(branch.tree).leaves_under(node_id)
