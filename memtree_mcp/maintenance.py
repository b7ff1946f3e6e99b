"""Looking after a store: versions (history, restore), checks and repair, re-embedding, and moving
memories out (export, the list of namespaces). Import is a write (:class:`~memtree_mcp.writing.Writer`)
and the memory as it was is read-only (:mod:`memtree_mcp.versions`).

None of it is on the path of a tool call an agent makes after every turn; all of it is what a
person runs from the CLI, so it may read a whole table and rebuild whole trees.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memtree_mcp.core.checks import Problem, memory_problems
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.core.temporal import CompatibilityPolicy
from memtree_mcp.errors import InvalidInput, NotFound
from memtree_mcp.inputs import format_timestamp
from memtree_mcp.refine import Refinement
from memtree_mcp.spaces import Spaces
from memtree_mcp.versions import resolve_version

if TYPE_CHECKING:
    from memtree_mcp.store.commits import Commit

log = logging.getLogger("memtree_mcp")


class Maintenance:
    """History, restore, doctor, reindex and export over the namespaces of one store."""

    def __init__(
        self,
        spaces: Spaces,
        embedder: Callable[[], Embedder],
        refinement: Refinement,
    ) -> None:
        self._spaces = spaces
        self._embedder = embedder
        self._refinement = refinement

    def namespaces(self) -> list[tuple[str, int]]:
        """Every namespace with the number of memories it holds."""
        counts: list[tuple[str, int]] = []
        for name in self._spaces.store.namespaces():
            with self._spaces.reading(name) as space:
                counts.append((name, len(space.memory.leaves) if space is not None else 0))
        return counts

    def history(self, name: str) -> list[tuple[int, str]]:
        """The versions namespace ``name``'s table keeps, oldest first: (version, ISO 8601 time)."""
        space = self._spaces.get(name, create=False)
        if space is None:
            return []
        return [(version, format_timestamp(at)) for version, at in space.table.versions()]

    def commits(self, name: str) -> list[Commit]:
        """:meth:`history` with what each version did (``store/commits.py``), oldest first."""
        space = self._spaces.get(name, create=False)
        return [] if space is None else space.table.commits()

    def restore_preview(self, name: str, to: str) -> tuple[int, int, int, int]:
        """What restoring namespace ``name`` to version or time ``to`` would do, changing nothing:
        (the version, the memories it brings back, the memories it deletes, the memories now).
        Raises as :meth:`restore` does."""
        with self._spaces.reading(name) as space:
            if space is None:
                raise NotFound(f"namespace '{name}' holds nothing to restore.")
            version = resolve_version(space.table, to)
            then = {leaf.id for leaf in space.table.read(version).leaves}
            now = set(space.memory.leaves)
        return version, len(then - now), len(now - then), len(now)

    def restore(self, name: str, to: str) -> tuple[int, int]:
        """Bring back namespace ``name`` as it was at version or time ``to``, as a new version.

        Returns (the version restored, the new latest version). Nothing is destroyed: restoring
        again to the version before undoes it. Raises InvalidInput or StoreError for an unknown
        version, NotFound for an empty namespace.
        """
        with self._spaces.writing(name, create=False) as space:
            if space is None:
                raise NotFound(f"namespace '{name}' holds nothing to restore.")
            version = resolve_version(space.table, to)
            latest = self._spaces.restore(space, version)
        log.info("restored namespace %s to version %d", name, version)
        return version, latest

    def purge(self, name: str) -> int:
        """Rewrite namespace ``name`` so that no file of the store holds a forgotten memory, a
        superseded summary or an earlier version; returns the version it leaves.

        ``restore`` cannot reach behind it. Raises NotFound for an empty namespace and StoreError
        when the store refuses.
        """
        with self._spaces.writing(name, create=False) as space:
            if space is None:
                raise NotFound(f"namespace '{name}' holds nothing to purge.")
            return self._spaces.purge(space)

    def doctor(self, name: str, *, repair: bool = False) -> list[Problem]:
        """Check every invariant of both trees and the indexes of namespace ``name``, read afresh.

        With ``repair``, a namespace with problems gets its trees rebuilt from its memories (same
        ids, same texts, same vectors, same order), written as one commit; the problems found
        before the repair are returned either way. Raises NotFound for an empty namespace.
        """
        with self._spaces.writing(name, create=False) as space:
            if space is None:
                raise NotFound(f"namespace '{name}' holds nothing to check.")
            snapshot = space.table.read()
            checked = self._spaces.new_memory()
            try:
                checked.load(
                    snapshot.leaves, snapshot.branches, vectors=snapshot.vectors, shapes=snapshot.shapes
                )
                problems = memory_problems(checked)
            except Exception as exc:  # a store too broken to load is one problem, and repairable
                problems = [Problem("leaves", None, f"the stored trees cannot be loaded: {exc}")]
            if problems and repair:
                rebuilt = self._spaces.new_memory()
                for leaf in sorted(snapshot.leaves, key=lambda leaf: leaf.seq):
                    rebuilt.add_leaf(leaf)
                nodes = set(rebuilt.leaves) | set(rebuilt.semantic.branches) | set(rebuilt.temporal.branches)
                stale = {b.id for b in snapshot.branches} - nodes
                self._refinement.mark(rebuilt, nodes, forgotten=True)
                space.memory = rebuilt
                with self._spaces.change(space) as change:
                    change.changed, change.removed = nodes, stale
                self._spaces.reload(space)
                log.warning("repaired namespace %s: %d problem(s), trees rebuilt", name, len(problems))
        return problems

    def reindex(
        self, name: str, *, temporal_policy: str = "cosine", batch: int = 256
    ) -> tuple[int, str, int]:
        """Re-embed every memory of namespace ``name`` with the configured embedder and rebuild both
        trees.

        For moving a store to a new embedder (the store refuses to be opened with another one
        until then), or for rebuilding the temporal tree with ``temporal_policy="llm"``: the
        configured LLM decides each segment boundary (SegTreeMem's batch-LLM compatibility), one
        call per memory. Memories keep their ids, texts, times and order. Written as one new
        version, where the history starts again (earlier versions hold the other embedder's
        vectors). Stop servers using the namespace first.
        Returns (memories, the embedder the store was built with, the new version).
        """
        if temporal_policy not in ("cosine", "llm"):
            raise InvalidInput(f"unknown temporal policy {temporal_policy!r}; use 'cosine' or 'llm'.")
        policy: CompatibilityPolicy | None = None
        if temporal_policy == "llm":
            generator = self._refinement.llm()
            if generator is None:
                raise InvalidInput(
                    "temporal_policy 'llm' needs an LLM: set MEMTREE_LLM=litellm:<model> "
                    "(and MEMTREE_LLM_API_BASE for a local server)."
                )
            from memtree_mcp.llm_policies import BatchLLMPolicy

            policy = BatchLLMPolicy(generator)
        embedder = self._embedder()
        with self._spaces.file_lock(name):
            found = self._spaces.store.read_any(name)
            if found is None:
                raise NotFound(f"namespace '{name}' holds nothing to re-index.")
            snapshot, old_embedder, _old_dimension = found
            leaves = sorted(snapshot.leaves, key=lambda leaf: leaf.seq)
            rebuilt = self._spaces.new_memory(temporal_policy=policy)
            for start in range(0, len(leaves), batch):
                part = leaves[start : start + batch]
                vectors = embedder.embed_batch([leaf.text for leaf in part])
                for leaf, vector in zip(part, vectors, strict=True):
                    leaf.vector = vector
                    rebuilt.add_leaf(leaf)
            nodes = set(rebuilt.leaves) | set(rebuilt.semantic.branches) | set(rebuilt.temporal.branches)
            refine = self._refinement.mark(rebuilt, nodes, forgotten=True)
            version = self._spaces.store.replace(name, rebuilt)
            self._spaces.drop(name)
        self._refinement.submit(name, refine)
        log.info("re-indexed %d memories of namespace %s (was %s)", len(leaves), name, old_embedder)
        return len(leaves), old_embedder, version

    def export_memories(self, name: str) -> Iterator[dict[str, Any]]:
        """Every memory of namespace ``name`` in the order it was remembered, as records import reads:
        with its id, and the ids of the memories it updates (``supersedes``, those still held),
        which import maps to the new memories' ids."""
        with self._spaces.reading(name) as space:
            leaves = sorted(space.memory.leaves.values(), key=lambda leaf: leaf.seq) if space else []
            held = space.memory.leaves if space else {}
            links = {leaf.id: [older for older in leaf.supersedes if older in held] for leaf in leaves}
        for leaf in leaves:
            record: dict[str, Any] = {
                "id": leaf.id,
                "content": leaf.text,
                "role": leaf.role,
                "timestamp": datetime.fromtimestamp(leaf.timestamp, tz=UTC).isoformat(),
            }
            if leaf.session is not None:
                record["session"] = leaf.session
            if leaf.tags:
                record["tags"] = list(leaf.tags)
            if links[leaf.id]:
                record["supersedes"] = links[leaf.id]
            yield record
