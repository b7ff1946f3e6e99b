"""Upkeep: what a person runs to look after a store, apart from the calls the tools make:
versions (history, commits, restore), checks and repair (doctor), re-embedding (reindex), the
time zone a namespace counts its days in, secrets already stored, bulk import, and finishing the
LLM work a one-shot command left (summaries and judgements).

The CLI's upkeep commands and the hook reach it as ``service.upkeep``
(:class:`~memtree_mcp.service.memory_service.MemoryService`); the tools' calls are the service's own.

The memory as it was is read-only (:mod:`memtree_mcp.service.versions`) and import is a write
(:class:`~memtree_mcp.service.writing.Writer`). None of it is on the path of a tool call an agent
makes after every turn (but the hook's import of queued turns); the rest may read a whole table
and rebuild whole trees.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from memtree_mcp.config import Settings
from memtree_mcp.core.checks.memory import Problem, memory_problems
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.core.trees.calendar import Calendar
from memtree_mcp.core.trees.links import break_circles
from memtree_mcp.core.trees.model import Branch, Leaf
from memtree_mcp.core.trees.segmenting import CompatibilityPolicy
from memtree_mcp.core.trees.temporal import TEMPORAL_ROOT_ID
from memtree_mcp.errors import InvalidInput, NotFound
from memtree_mcp.secrets.detection import quoted
from memtree_mcp.service.inputs import FROM_A_FILE, ImportTerms, check_namespace, format_timestamp
from memtree_mcp.service.judging import Judging
from memtree_mcp.service.reading import Reader
from memtree_mcp.service.redaction import redact_leaf, redact_stored, secrets_held
from memtree_mcp.service.refine import Refinement
from memtree_mcp.service.spaces import Spaces, on_conflict_again
from memtree_mcp.service.versions import resolve_version
from memtree_mcp.service.writing import Writer

if TYPE_CHECKING:
    from memtree_mcp.store.commits import Commit

# How a restore's target is given (the CLI's flag; nothing else restores).
RESTORE_TO = "--to"
log = logging.getLogger("memtree_mcp")


class Upkeep:
    """The upkeep of one store's namespaces, apart from the tools' calls: each method takes the
    namespace it means (the configured default when None), as the service's own do."""

    def __init__(
        self,
        settings: Settings,
        spaces: Spaces,
        embedder: Callable[[], Embedder],
        refinement: Refinement,
        judging: Judging,
        writer: Writer,
        reader: Reader,
    ) -> None:
        self._settings = settings
        self._spaces = spaces
        self._embedder = embedder
        self._refinement = refinement
        self._judging = judging
        self._writer = writer
        self._reader = reader

    def _name(self, namespace: str | None) -> str:
        """The namespace a call means: the one it names, else the configured default."""
        return check_namespace(namespace, self._settings.namespace)

    # -- versions --------------------------------------------------------------------------------

    def history(self, namespace: str | None = None) -> list[tuple[int, str]]:
        """The versions a namespace's table keeps, oldest first: (version, ISO 8601 time written)."""
        name = self._name(namespace)
        space = self._spaces.get(name, create=False)
        if space is None:
            return []
        calendar = self._spaces.calendar_of(name)
        return [(version, format_timestamp(at, calendar)) for version, at in space.table.versions()]

    def commits(self, namespace: str | None = None) -> list[Commit]:
        """:meth:`history` with what each version did: remember, import, forget, restore, purge or
        update, and the memories it added and deleted (``store/commits.py``), oldest first."""
        name = self._name(namespace)
        space = self._spaces.get(name, create=False)
        return [] if space is None else space.table.commits()

    def restore_preview(self, to: str, namespace: str | None = None) -> tuple[int, int, int, int]:
        """What restoring a namespace to version or time ``to`` would do, changing nothing:
        (the version, the memories it brings back, the memories it deletes, the memories now).
        Raises as :meth:`restore` does."""
        name = self._name(namespace)
        with self._spaces.reading(name) as space:
            if space is None:
                raise NotFound(f"namespace '{name}' holds nothing to restore.")
            version = resolve_version(space.table, to, space.memory.calendar, RESTORE_TO)
            then = {leaf.id for leaf in space.table.read(version).leaves}
            now = set(space.memory.leaves)
        return version, len(then - now), len(now - then), len(now)

    @on_conflict_again
    def restore(self, to: str, namespace: str | None = None) -> tuple[int, int]:
        """Bring back a namespace as it was at version or time ``to``, as a new version.

        Returns (the version restored, the new latest version). Nothing is destroyed: restoring
        again to the version before undoes it. It brings back forgotten memories too, as long as
        the namespace was not purged since. Raises InvalidInput or StoreError for an unknown
        version, NotFound for an empty namespace.
        """
        name = self._name(namespace)
        with self._spaces.writing(name, create=False) as space:
            if space is None:
                raise NotFound(f"namespace '{name}' holds nothing to restore.")
            version = resolve_version(space.table, to, space.memory.calendar, RESTORE_TO)
            latest = self._spaces.restore(space, version)
        log.info("restored namespace %s to version %d", name, version)
        return version, latest

    @on_conflict_again
    def purge(self, namespace: str | None = None) -> int:
        """Rewrite a namespace so that no file of the store holds a forgotten memory, a
        superseded summary or an earlier version; returns the version it leaves.

        ``restore`` cannot reach behind it. Also done on its own once a forget is older than
        MEMTREE_RETENTION. Raises NotFound for an empty namespace and StoreError when the store
        refuses.
        """
        name = self._name(namespace)
        with self._spaces.writing(name, create=False) as space:
            if space is None:
                raise NotFound(f"namespace '{name}' holds nothing to purge.")
            return self._spaces.purge(space)

    @on_conflict_again
    def doctor(self, namespace: str | None = None, *, repair: bool = False) -> list[Problem]:
        """Check every invariant of both trees and the indexes of a namespace, read afresh from disk.

        With ``repair``, a namespace with problems gets its trees rebuilt from its memories (same
        ids, same texts, same vectors, same order; of each circle of update links, the link from
        its oldest memory undone: :func:`~memtree_mcp.core.trees.links.break_circles`), written as one
        commit; the problems found before the repair are returned either way. Raises NotFound for
        an empty namespace.
        """
        from memtree_mcp.store.damage import forgotten_texts  # pyarrow: never before the handshake

        name = self._name(namespace)

        with self._spaces.writing(name, create=False, follow=False) as space:
            if space is None:
                raise NotFound(f"namespace '{name}' holds nothing to check.")
            snapshot = space.table.read()
            checked = self._spaces.new_memory(calendar=self._spaces.zones.of(name))
            try:
                checked.load(
                    snapshot.leaves,
                    snapshot.branches,
                    vectors=snapshot.vectors,
                    shapes=snapshot.shapes,
                    as_stored=True,
                )
                problems = memory_problems(checked)
            except Exception as exc:  # a store too broken to load is one problem, and repairable
                problems = [Problem("leaves", None, f"the stored trees cannot be loaded: {exc}")]
            twice = stored_twice(snapshot.leaves)
            problems += [
                Problem("leaves", extra, f"memory {extra} stores the text of {kept} again")
                for extra, kept in twice.items()
            ]
            problems += quoting_forgotten(snapshot.leaves, snapshot.branches, forgotten_texts(space.table))
            if problems and repair:
                rebuilt = self._spaces.new_memory(calendar=checked.calendar)  # the namespace's zone
                leaves, renumbered = in_sequence(leaf for leaf in snapshot.leaves if leaf.id not in twice)
                relinked = break_circles({leaf.id: leaf for leaf in leaves})
                for leaf in leaves:
                    rebuilt.add_leaf(leaf)
                nodes = set(rebuilt.leaves) | set(rebuilt.semantic.branches) | set(rebuilt.temporal.branches)
                stale = ({b.id for b in snapshot.branches} - nodes) | set(twice)
                self._refinement.mark(rebuilt, nodes, forgotten=True)
                space.memory = rebuilt
                with self._spaces.change(space) as change:
                    change.changed, change.removed, change.rewritten = nodes, stale, renumbered | relinked
                self._spaces.reload(space)
                log.warning("repaired namespace %s: %d problem(s), trees rebuilt", name, len(problems))
        return problems

    def zones(self, namespace: str | None = None) -> tuple[str, str]:
        """The zone a namespace counts its days in (stored with it) and the one set for it here
        (MEMTREE_TIMEZONE, or its caller's: :meth:`set_zone_for`); the first is used, and
        ``doctor`` tells when they differ."""
        name = self._name(namespace)
        return self._spaces.calendar_of(name).name, self._spaces.zones.of(name).name

    def set_zone_for(self, namespace: str | None, zone: str) -> str:
        """Make ``zone`` (a caller's MEMTREE_TIMEZONE, as a hook worker serving several projects
        hears it) the zone set for a namespace in this process: one with no zone stored yet takes it
        at its first write; one with a zone keeps its own (logged once). Returns the zone the
        namespace counts its days in. Raises InvalidInput for an unknown zone."""
        try:
            return self._spaces.set_zone_for(self._name(namespace), zone).name
        except ValueError as exc:
            raise InvalidInput(f"{exc}.") from None

    @on_conflict_again
    def move_zone(self, zone: str, namespace: str | None = None) -> bool:
        """Count a namespace's days in ``zone`` from now on: its temporal tree built again
        in that zone (new branches, summarised again) unless it agrees with it already, and the
        zone recorded, in one commit. The only way a namespace's zone changes: a process whose
        MEMTREE_TIMEZONE differs uses the stored zone. Returns whether the tree was built again.

        Raises InvalidInput for an unknown zone, NotFound for an empty namespace.
        """
        name = self._name(namespace)
        try:
            calendar = Calendar.named(zone)
        except ValueError as exc:
            raise InvalidInput(f"{exc}.") from None
        with self._spaces.writing(name, create=False) as space:
            if space is None or not space.memory.leaves:
                raise NotFound(f"namespace '{name}' holds nothing to move to another time zone.")
            if space.memory.calendar.name == calendar.name:
                return False
            stored = space.table.read()
            moved = self._spaces.new_memory(calendar=calendar)
            moved.load(
                stored.leaves,
                stored.branches,
                vectors=stored.vectors,
                shapes=stored.shapes,
                calendar=calendar,
            )
            rebuilt = moved.temporal_rebuilt
            nodes = set(moved.temporal.branches) if rebuilt else {moved.temporal.root.id}
            refine = self._refinement.mark(moved, nodes, forgotten=True) if rebuilt else []
            space.memory = moved
            with self._spaces.change(space) as change:
                change.changed, change.removed = nodes, moved.temporal_replaced - nodes
            self._spaces.reload(space)
        self._refinement.submit(name, refine)
        log.warning("namespace %s now counts its days in %s", name, calendar.name)
        return rebuilt

    def reindex(
        self, namespace: str | None = None, *, temporal_policy: str = "cosine", batch: int = 256
    ) -> tuple[int, str, int]:
        """Re-embed every memory of a namespace with the configured embedder and rebuild both
        trees.

        For moving a store to a new embedder (the store refuses to be opened with another one
        until then), or for rebuilding the temporal tree with ``temporal_policy="llm"``: the
        configured LLM decides each segment boundary (SegTreeMem's batch-LLM compatibility), one
        call per memory. Memories keep their ids, texts (their secrets redacted, unless
        MEMTREE_SECRETS=keep), times and order. Written as one new
        version, where the history starts again (earlier versions hold the other embedder's
        vectors). Stop servers using the namespace first.
        Returns (memories, the embedder the store was built with, the new version).
        """
        name = self._name(namespace)
        if temporal_policy not in ("cosine", "llm"):
            raise InvalidInput(f"unknown temporal policy {quoted(temporal_policy)}; use 'cosine' or 'llm'.")
        policy: CompatibilityPolicy | None = None
        if temporal_policy == "llm":
            generator = self._refinement.llm()
            if generator is None:
                raise InvalidInput(
                    "temporal_policy 'llm' needs an LLM: set MEMTREE_LLM=litellm:<model> "
                    "(and MEMTREE_LLM_API_BASE for a local server)."
                )
            from memtree_mcp.llm.policies import BatchLLMPolicy

            policy = BatchLLMPolicy(generator)
        embedder = self._embedder()
        with self._spaces.write_lock(name) as lock:
            found = self._spaces.store.read_any(name)
            if found is None:
                raise NotFound(f"namespace '{name}' holds nothing to re-index.")
            snapshot, old_embedder, _old_dimension = found
            leaves = sorted(snapshot.leaves, key=lambda leaf: leaf.seq)
            recorded = next((b.zone for b in snapshot.branches if b.id == TEMPORAL_ROOT_ID), "")
            calendar = Calendar.named(recorded) if recorded else self._spaces.zones.of(name)
            rebuilt = self._spaces.new_memory(temporal_policy=policy, calendar=calendar)
            if self._spaces.settings.secrets != "keep":
                for leaf in leaves:  # a store written before redaction, or with MEMTREE_SECRETS=keep
                    redact_leaf(leaf)
            for start in range(0, len(leaves), batch):
                part = leaves[start : start + batch]
                vectors = embedder.embed_batch([leaf.text for leaf in part])
                for leaf, vector in zip(part, vectors, strict=True):
                    leaf.vector = vector
                    rebuilt.add_leaf(leaf)
            nodes = set(rebuilt.leaves) | set(rebuilt.semantic.branches) | set(rebuilt.temporal.branches)
            refine = self._refinement.mark(rebuilt, nodes, forgotten=True)
            lock.before()  # a server that lost the namespace's lease meanwhile must not rewrite it
            version = self._spaces.store.replace(name, rebuilt)
            self._spaces.drop(name)
        self._refinement.submit(name, refine)
        log.info("re-indexed %d memories of namespace %s (was %s)", len(leaves), name, old_embedder)
        return len(leaves), old_embedder, version

    # -- what is stored --------------------------------------------------------------------------

    def import_memories(
        self,
        records: Iterable[object],
        namespace: str | None = None,
        *,
        batch: int = 256,
        terms: ImportTerms = FROM_A_FILE,
    ) -> tuple[int, int]:
        """Remember many memories fast: embeddings in batches, one commit per ``batch`` memories.

        Each record has ``content`` and optionally ``role``, ``timestamp``, ``session``, ``tags``,
        checked as ``remember`` checks them (``terms``: by the secrets mode and length limit their
        writer applied, for a hook's queued turns). A record that fails its check stops the import
        with InvalidInput naming the record; every batch committed before it stays. Returns
        (memories added, duplicates skipped).

        A namespace grown by many memories then gets its snapshot saved (:meth:`SnapshotKeeper.keep`),
        so that the next process resumes from it rather than reading the whole table.
        """
        name = self._name(namespace)
        added, skipped = self._writer.import_records(name, records, batch=batch, terms=terms)
        if added:
            try:
                self._spaces.snapshots.keep(name)
            except Exception as exc:  # the memories are stored; a snapshot only saves time
                log.warning("could not save a snapshot of namespace %s after the import: %s", name, exc)
        return added, skipped

    def secrets_held(self, namespace: str | None = None) -> list[tuple[str, list[str]]]:
        """Each stored memory whose text holds a secret: its id and the kinds found (never the
        values), oldest first. Raises NotFound for an empty namespace."""
        name = self._name(namespace)
        return secrets_held(self._reader.memory(name), name)

    def redact_stored(self, namespace: str | None = None) -> list[str]:
        """Rewrite each stored memory that holds a secret with markers in its place (same id, time,
        session, tags and links), then purge; returns the ids rewritten (``service/redaction.py``)."""
        name = self._name(namespace)
        held = self.secrets_held(name)
        exported = self._reader.export_memories(name)
        return redact_stored(name, held, exported, self._writer, lambda: self.purge(name))

    # -- LLM work left over ----------------------------------------------------------------------

    def judge_pending(self, namespace: str | None = None, timeout: float = 3_600.0) -> tuple[int, int]:
        """Judge, now, the memories awaiting an LLM's judgement of what they update (left by a
        one-shot command, or by a model that was down); (judged, still waiting). Raises InvalidInput
        without a litellm model and ProviderError when it fails."""
        return self._judging.judge_pending(self._name(namespace), timeout)

    def refine_pending(self, namespace: str | None = None, timeout: float = 3_600.0) -> tuple[int, int]:
        """Write the LLM summaries a namespace still waits for, now; returns (written, still pending).

        Raises InvalidInput when no LLM is configured and ProviderError when the LLM fails.
        """
        return self._refinement.refine_pending(self._name(namespace), timeout)


def in_sequence(leaves: Iterable[Leaf]) -> tuple[list[Leaf], set[str]]:
    """``leaves`` in the order they were remembered, each with a sequence number above the one
    before it, and the ids of those whose number had to change.

    The order is by sequence number, then time, then id (so that leaves sharing a number keep one
    order whatever the table's); a leaf whose number is not above the previous one's (a duplicate,
    one gone back, a negative one: writers that did not share a lock, or a table edited by hand)
    gets the next number. :meth:`Memory.add_leaf` refuses such a leaf, which made ``doctor
    --repair`` crash on the very store it was for (issue 31). Changes the leaves given.
    """
    ordered = sorted(leaves, key=lambda leaf: (leaf.seq, leaf.timestamp, leaf.id))
    renumbered: set[str] = set()
    previous = -1
    for leaf in ordered:
        if leaf.seq <= previous:
            leaf.seq = previous + 1
            renumbered.add(leaf.id)
        previous = leaf.seq
    return ordered, renumbered


def stored_twice(leaves: list[Leaf]) -> dict[str, str]:
    """Memories whose exact text an earlier memory already holds (two servers remembering the same
    fact at once, before the bucket lease): each later one -> the earliest, which a repair keeps."""
    first: dict[str, Leaf] = {}
    twice: dict[str, str] = {}
    for leaf in sorted(leaves, key=lambda leaf: (leaf.seq, leaf.created, leaf.id)):
        key = leaf.content_hash or leaf.text
        if key in first:
            twice[leaf.id] = first[key].id
        else:
            first[key] = leaf
    return twice


# A summary quotes a forgotten memory when it holds this many of its first characters (or all of a
# shorter one): extractive summaries copy sentences whole.
QUOTED = 40


def quoting_forgotten(leaves: list[Leaf], branches: list[Branch], forgotten: dict[str, str]) -> list[Problem]:
    """Branches whose text or LLM summary still quotes a forgotten memory (written by a server that
    had not seen the forget) that no live memory (``leaves``) also says; a repair rebuilds them from
    the live memories."""
    quotes = {node_id: text.strip()[:QUOTED] for node_id, text in forgotten.items() if text and text.strip()}
    quotes = {
        node_id: quote for node_id, quote in quotes.items() if not any(quote in leaf.text for leaf in leaves)
    }
    found = []
    for branch in branches:
        for node_id, quote in quotes.items():
            if quote in branch.text or (branch.summary and quote in branch.summary):
                message = f"its summary quotes the forgotten memory {node_id}"
                found.append(Problem(branch.tree, branch.id, message))
                break
    return found
