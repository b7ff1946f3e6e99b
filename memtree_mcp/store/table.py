"""The table of one namespace (:class:`NamespaceTable`): rows appended as revisions, one commit per
change; reading the live rows of any kept commit; following other writers; squash, compaction
and purge.

A node's row is never updated in place. Every ``remember`` appends the new revision of each row it
changed, all with the same ``rev`` number, in a single ``add``; Lance commits it atomically, so a
crash leaves the table at the previous version or the next, never between. Reading keeps the
highest revision of each id. Appending was chosen over updating rows with ``merge_insert``, whose
commits cost several times an append and grow slower with every commit after a compaction
(measured when the table was designed: commit c26b522).

History lives in the rows (schema version 3, ``store/migrations.py``). Every commit has its own
``rev``, so the memory as it was at any commit is the latest row of each id among the rows with a
``rev`` up to it; that is what ``history``, ``as_of`` and ``restore`` read, and LanceDB's own
versions go at the next compaction (:data:`READER_GRACE`): every compaction copies the whole table
into new files, and keeping LanceDB's versions for the history would keep every copy.
Superseded revisions are dropped by rewriting the table once they outnumber the live ones, but
only those older than the history kept (MEMTREE_RETENTION); the oldest commit that can still be
read, the *history floor*, is recorded in the schema metadata. Small files from many appends are
compacted with ``optimize()`` on a schedule. The table's schema metadata also records the schema
version and the embedder's identity and dimension, so a store is never read with vectors from
another model (``store/rows.py``).

Following other writers. Between rewrites the table only grows by appends (``restore`` too appends
the revisions that bring an earlier version back), so a process that has read it can catch up by
reading only the rows with a higher ``rev`` than any it has seen (:meth:`NamespaceTable.changes`),
instead of the whole table. A rewrite (squash, ``replace``, ``purge``) writes a new *generation*
into the schema metadata in the same commit; a reader that finds another generation, or a row
count that is not the rows it saw plus the new ones, reads the table whole.

Forgetting appends deletion rows: the forgotten text stays in the files of earlier revisions
(so ``restore`` can undo a forget) until :meth:`NamespaceTable.purge` rewrites the table with its
live rows alone and deletes every earlier version and unreferenced file. The
deletion rows survive the squash and go only with a purge, so the time of the oldest of them
(:attr:`NamespaceTable.oldest_forget`) says how long forgotten text has stayed on disk.

One module, not several: one object, NamespaceTable, whose reads, commits, following and rewrites
all share its view of the table (rows seen, revision, generation, write guard); split, each half
would reach into the other's state.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Callable, Collection, Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memtree_mcp.core.memory import Memory
from memtree_mcp.errors import StoreError, WriteConflict, store_error
from memtree_mcp.host.heap import give_back_freed_memory
from memtree_mcp.store.arrow import (
    branches_at,
    kind_masks,
    last_row,
    latest_positions,
    leaves_at,
    live_positions,
    release_arrow_pages,
    up_to,
)
from memtree_mcp.store.commits import COMMIT_COLUMNS, RESTORE_MARK, Commit, commits_of
from memtree_mcp.store.fences import (
    NO_FENCE,
    WriteGuard,
    commit_counts,
    fence_row,
    highest_fence,
    unfenced,
)
from memtree_mcp.store.history import restoring_rows
from memtree_mcp.store.migrations import (
    as_current,
    check_schema,
    outdated,
    outline_as_current,
    upgraded,
    with_temporal_tree,
)
from memtree_mcp.store.reads import Changes, Position, Snapshot, node_ids, snapshot_of
from memtree_mcp.store.rows import (
    DELETED,
    META_FLOOR,
    META_GENERATION,
    SCHEMA_VERSION,
    generation_of,
    new_generation,
    node_rows,
)

log = logging.getLogger("memtree_mcp")

T = TypeVar("T")

# How long LanceDB keeps the files of a version once a newer one exists, on a local home. None:
# compaction's copies must not pile up on disk, and a grace of seconds keeps every copy when writes
# come quickly (a burst of remembers compacts several times within seconds). A reader in another
# process that was reading a version whose files went meanwhile gets an error and reads again from
# the latest version (_again_if_gone); the only writer is the one holding the namespace's lock,
# which is the one compacting.
READER_GRACE = timedelta(0)
# On a bucket home, where servers on other machines read (and a writer that lost its lease may
# still be appending), the files of older versions stay this long (NamespaceTable.reader_grace).
BUCKET_GRACE = timedelta(minutes=2)

OUTLINE = ("id", "rev", "kind", "first_seq")  # the columns of NamespaceTable.outline
OFFSET = "__offset"  # a row's offset in its table, in a read that carries it (_scan_latest)
# Each append makes a small file; past a few hundred of them appends and reloads slow down, and
# optimize() merges them back into few.
COMPACT_EVERY = 100
# Rewrite the table with its live rows once superseded revisions outnumber them (plus some slack,
# so that small stores are not rewritten every few calls).
SQUASH_SLACK = 2_000


class NamespaceTable:
    """The table of one namespace."""

    def __init__(
        self,
        table: Any,
        embedder: str,
        dimension: int,
        db: Any = None,
        name: str = "",
        history: float = 7 * 86_400.0,
    ) -> None:
        """``history``: seconds of versions that compaction keeps (MEMTREE_RETENTION)."""
        self._table = table
        self._db = db
        self.name = name
        self.embedder = embedder
        self.dimension = dimension
        self.history = history
        self._rev = -1
        self._rows = 0
        self._ids: set[str] = set()
        self._deleted: set[str] = set()  # ids whose latest row deletes them
        self._appends_since_compaction = 0
        self._squash_after = 0.0  # no squash can drop enough before then (see _squash)
        # Set during a bulk import: commits leave compaction and squashing to maintain().
        self.maintenance_deferred = False
        # The folder of the table's version manifests, on a local home (see commit_marker).
        self.versions_folder: Path | None = None
        self._schema: pa.Schema | None = None  # asking Lance for it costs a call into its runtime
        self._generation: bytes | None = None  # of the rows last read; None: never read
        self._checked_out = -1  # the version latest_version() last found
        self._last: tuple[str, int] | None = None  # (id, rev) of the last row, at offset _rows - 1
        # When the oldest deletion row still in the table was written: forgotten text has been on
        # disk since then. None when nothing was forgotten since the last purge.
        self.oldest_forget: float | None = None
        # Set by Spaces while a writer holds the namespace: checked around every write to Lance.
        self.guard: WriteGuard | None = None
        # A bucket home keeps old files a while for readers on other machines.
        self.reader_grace = READER_GRACE
        self._scanned_version = -1  # the version the last whole read was of (see _overwrite)
        # The version whose rows this reader has all read or written (-1: none): a commit that
        # LanceDB gives the version after it had no other commit before it (see _append_commit).
        self._applied_version = -1
        self._fenced = NO_FENCE  # the highest fence among the rows read or written so far

    def sibling(self) -> NamespaceTable:
        """Another reader of this table, with its own state: for a read beside this one's (this
        object is used under its namespace's lock; the other, by a thread that does not hold it)."""
        table = self._db.open_table(self.name) if self._db is not None else self._table
        other = NamespaceTable(table, self.embedder, self.dimension, self._db, self.name, self.history)
        other.versions_folder, other.reader_grace = self.versions_folder, self.reader_grace
        return other

    @property
    def lance(self) -> Any:
        """The LanceDB table itself, for what this class does not wrap: a test that damages the
        table on purpose, a tool that reads its raw rows."""
        return self._table

    def latest_version(self) -> int:
        """The newest committed version, after looking for commits by other processes."""
        self._table.checkout_latest()
        self._checked_out = int(self._table.version)
        return self._checked_out

    def commit_marker(self) -> int | None:
        """A number that changes when anyone commits to this table, read without calling LanceDB:
        the modification time of the folder each commit adds its manifest to (a stat, microseconds,
        where :meth:`latest_version` costs two calls into LanceDB's runtime). None for an
        object-store home, or when the folder is not there (then only :meth:`latest_version` tells).
        It only says when to look: an unchanged marker may still hide a commit on a file system
        with coarse times, so readers never rely on it, only the background follower does.
        """
        if self.versions_folder is None:
            return None
        try:
            return os.stat(self.versions_folder).st_mtime_ns
        except OSError:
            return None

    def latest_generation(self) -> bytes:
        """The generation of the latest version: another than a reader's when the table was
        rewritten (squash, purge, re-index) since it read."""
        self.latest_version()
        return generation_of(self._table.schema)

    @property
    def generation_seen(self) -> bytes | None:
        """The generation of the table as this reader last read, followed or wrote it (None before
        the first read): when :meth:`latest_generation` differs, the table was rewritten since."""
        return self._generation

    @property
    def row_count_seen(self) -> int:
        """How many rows (every revision) the table held when this reader last read, followed or
        wrote it (no call into LanceDB)."""
        return self._rows

    def outline(self) -> pa.Table:
        """Each row's id, rev, kind and first_seq, in table order: a cheap read (no text, no vector);
        the kinds as the current schema reads them (``migrations.outline_as_current``)."""
        columns = [*OUTLINE, "tree"]
        read = self._again_if_gone(lambda: self._table.search().select(columns).limit(None).to_arrow())
        return outline_as_current(read, self._table.schema).select(list(OUTLINE))

    def row_count(self) -> int:
        """How many rows (every revision) the version last checked out holds."""
        return int(self._table.count_rows())

    def read(self, version: int | None = None) -> Snapshot:
        """The live nodes (each id at its highest revision, unless that deletes it) of a version.

        The latest version unless ``version`` names an earlier commit (a ``rev`` that
        :meth:`versions` lists: the rows hold the history for MEMTREE_RETENTION). Raises
        StoreError for a version that is not kept.
        """
        if version is None:
            return self._read_latest(keep_rows=False)[0]
        arrow = self._rows_at(version)
        positions, is_leaf = live_positions(arrow)
        snapshot = snapshot_of(arrow, positions, is_leaf, version, self.dimension)
        del arrow
        release_arrow_pages()
        return snapshot

    def _rows_at(self, version: int) -> pa.Table:
        """Every row written up to commit ``version``, read from the latest table without noting
        anything (this process's memory stays as it was). Raises StoreError for a commit that is
        not kept."""
        self._check_kept(version)
        return up_to(
            unfenced(as_current(self._again_if_gone(self._table.to_arrow).combine_chunks())), version
        )

    def _check_kept(self, version: int) -> None:
        """Raise StoreError unless :meth:`versions` lists commit ``version``."""
        kept = [rev for rev, _ in self.versions()]
        if version not in kept:
            known = f"{kept[0]} to {kept[-1]}" if kept else "none"
            raise StoreError(
                f"namespace '{self.name}' has no version {version}; the versions kept are {known}"
            )

    def _again_if_gone(self, read: Callable[[], T]) -> T:
        """``read()``; if it fails, once more from the latest version. Another process's
        compaction deletes the files of versions older than :data:`READER_GRACE`, and a read of
        one of those that was under way fails; the latest version holds the same rows and more."""
        try:
            return read()
        except Exception:  # Lance raises RuntimeError ("Not found: …/data/….lance") among others
            self.latest_version()
            return read()

    def read_latest(self) -> tuple[Snapshot, pa.Table, Position]:
        """:meth:`read` of the latest version, with each id's latest row as read (deletions
        included, in id order) and where the read left this reader, for :meth:`resume`."""
        snapshot, rows, position = self._read_latest(keep_rows=True)
        assert rows is not None
        return snapshot, rows, position

    def _read_latest(self, *, keep_rows: bool) -> tuple[Snapshot, pa.Table | None, Position]:
        version, (arrow, positions, is_leaf) = self._again_if_gone(
            lambda: (self.latest_version(), self._scan())
        )
        rows = arrow.take(pa.array(latest_positions(arrow)[0])) if keep_rows else None
        assert self._generation is not None
        position = Position(self._generation, version, self._rows, self._rev, self._last, self._fenced)
        snapshot = snapshot_of(arrow, positions, is_leaf, version, self.dimension)
        self._ids = node_ids(snapshot)  # the same ids, as the strings the nodes hold
        del arrow
        release_arrow_pages()
        return snapshot, rows, position

    def latest_rows(self, version: int) -> tuple[pa.Table, Position] | None:
        """Each id's latest row (deletions included, in id order) and where that leaves a reader,
        as :meth:`read_latest` gives them but without building a node: what a snapshot of a memory
        followed to ``version`` is saved from when there is no snapshot to build on. None when the
        table has moved past ``version``. Call it with no write under way."""
        latest, (arrow, _, _) = self._again_if_gone(lambda: (self.latest_version(), self._scan()))
        if latest != version:
            return None
        rows = arrow.take(pa.array(latest_positions(arrow)[0]))
        del arrow
        release_arrow_pages()
        assert self._generation is not None
        return rows, Position(self._generation, latest, self._rows, self._rev, self._last, self._fenced)

    def resume(self, rows: pa.Table, position: Position) -> Snapshot:
        """The live nodes of ``rows``, each id's latest row at ``position`` (what
        :meth:`read_latest` gave), as if this table had been read whole there.

        Nothing is trusted: :meth:`changes`, which the caller must call next, compares the table
        with ``position`` and says None when the table does not continue it (another generation,
        fewer rows, another last row); the caller then reads the table whole.
        """
        self._generation = position.generation
        self._rows, self._rev, self._last = position.rows, position.rev, position.last
        self._fenced, self._applied_version = position.fenced, position.version
        alive, is_leaf = kind_masks(rows.column("kind"))
        everything = np.arange(rows.num_rows)
        snapshot = snapshot_of(rows, everything[alive], is_leaf[alive], position.version, self.dimension)
        self._note_latest(rows, everything, alive, live=node_ids(snapshot))
        return snapshot

    def rows_now(self, rows: pa.Table, position: Position, version: int) -> tuple[pa.Table, Position] | None:
        """Each id's latest row as this reader last followed the table (to ``version``), from
        ``rows``, each id's latest row at ``position`` (a snapshot's), and the rows appended since,
        with where that leaves a reader: what :meth:`read_latest` would give now, without reading the
        table whole. None when the table does not continue ``position`` (another generation, fewer
        rows, or its last row moved). Call it with the table followed and no write under way.
        """
        if self._generation is None or position.generation != self._generation or position.rows > self._rows:
            return None
        added = self._again_if_gone(lambda: self._rows_after(position.rows, position.last, self._rows))
        if added is None:
            return None
        merged = pa.concat_tables([rows, unfenced(added, position.fenced).cast(rows.schema)]).combine_chunks()
        latest = merged.take(pa.array(latest_positions(merged)[0]))
        return latest, Position(self._generation, version, self._rows, self._rev, self._last, self._fenced)

    def _rows_after(self, seen: int, last: tuple[str, int] | None, total: int) -> pa.Table | None:
        """The rows at offsets ``seen`` to ``total`` (appended after the ``seen`` a reader saw, the
        last of them ``last``), taken by offset with the last one seen, which must still be there;
        None when it is not (a rewrite or deletion that did not say so) or rows are missing."""
        start = seen - 1 if last is not None else seen
        if start == total:  # nothing was ever appended
            return as_current(self._table.schema.empty_table())
        arrow = as_current(self._table.take_offsets(list(range(start, total))).to_arrow().combine_chunks())
        if arrow.num_rows != total - start:
            return None
        if last is not None:
            if (arrow.column("id")[0].as_py(), arrow.column("rev")[0].as_py()) != last:
                return None
            arrow = arrow.slice(1)
        return arrow

    def changes(self) -> Changes | None:
        """What other processes committed since this table was last read or written through, at the
        version :meth:`latest_version` last checked out (or a later one, when that one's files
        went during the read, see :meth:`_again_if_gone`).

        Appends put their rows after all earlier ones (compaction keeps that order), and within a
        generation every row appended since has a higher revision than every row seen; so the new
        rows are the last ``count - rows seen`` rows, taken by offset without scanning the table
        (as a filter on ``rev`` would, through every fragment), and they are exactly the new ones
        when every one of them has a higher revision than the last one seen.

        The last row seen is taken again with them and must still be there, at its offset: a
        rewrite or a deletion that did not say so (another generation) moves it.

        Returns None when the table cannot be followed that way and must be read whole
        (:meth:`read`): it was never read, it was rewritten since (another generation), or its rows
        are not those seen plus new ones (fewer rows, the last row seen moved, or a new row that is
        not newer: a rewrite that did not say so, or writers that did not share a lock).
        """
        return self._again_if_gone(self._changes)

    def _changes(self) -> Changes | None:
        version = self._checked_out
        if self._generation is None or generation_of(self._table.schema) != self._generation:
            return None
        total = self._table.count_rows()
        if total < self._rows:
            return None
        arrow = self._rows_after(self._rows, self._last, total)
        if arrow is None:
            return None
        if not arrow.num_rows:
            self._applied_version = version
            return Changes(version=version, leaves=[], branches=[], removed=set())
        # A commit that lost a race to another writer's lands after that one's marker and does not
        # count (store/fences.py); what counts must be newer than everything seen.
        counted = unfenced(arrow, self._fenced)
        if counted.num_rows and int(pc.min(counted.column("rev")).as_py()) <= self._rev:
            return None
        self._rows = total
        self._rev = max(self._rev, int(pc.max(arrow.column("rev")).as_py()))
        self._last = last_row(arrow)
        self._fenced = highest_fence(arrow, self._fenced)
        self._applied_version = version
        arrow = counted
        positions, kinds = latest_positions(arrow)
        alive, is_leaf = kind_masks(kinds)
        ids = arrow.column("id").take(pa.array(positions)).to_pylist()
        removed = {node_id for node_id, kept in zip(ids, alive.tolist(), strict=True) if not kept}
        deleted = pc.filter(arrow.column("updated"), pc.equal(arrow.column("kind"), DELETED))
        self._noted(
            (node_id for node_id in ids if node_id not in removed),
            removed,
            pc.min(deleted).as_py() if len(deleted) else None,
        )
        leaves = leaves_at(arrow, positions[is_leaf], self.dimension)
        branches = branches_at(arrow, positions[alive & ~is_leaf], (leaf.id for leaf in leaves))
        return Changes(version=version, leaves=leaves, branches=branches, removed=removed)

    def commit(
        self,
        memory: Memory,
        changed: Iterable[str],
        removed: Iterable[str] = (),
        now: float | None = None,
        rewritten: Collection[str] = (),
    ) -> int:
        """Write the nodes ``changed`` (as ``memory`` holds them now) and the deletion of ``removed``
        as the next revision, in one atomic commit; ``rewritten`` names the stored leaves among
        ``changed`` whose record changed (given update links), which get a new row too.

        The caller must hold the namespace's write lock and have read the latest version, so that
        revision numbers only grow. Returns the new table version. Raises StoreError when Lance
        refuses the write; the table then still holds its previous version.
        """
        rows = node_rows(memory, changed, removed, time.time() if now is None else now, self._ids, rewritten)
        if not rows:
            return self.latest_version()
        rev = self._rev + 1
        if self._schema is None:
            self._schema = self._table.schema
        marked = [*({**row, "rev": rev} for row in rows), fence_row(rev)]
        version = self._append_commit(pa.Table.from_pylist(marked, schema=self._schema))
        gone = [row["id"] for row in rows if row["kind"] == DELETED]
        self._noted(
            (row["id"] for row in rows if row["kind"] != DELETED), gone, rows[-1]["updated"] if gone else None
        )
        self._appends_since_compaction += 1
        if not self.maintenance_deferred:
            self._maintain()
        return version

    def _append_commit(self, data: pa.Table) -> int:
        """Append ``data``, one commit ending with its marker (a fence at its revision), and make
        sure it counts before anything is acknowledged; returns the table version it made.

        The commit counts when no other commit came between the version this reader has applied
        and this one: LanceDB numbers versions without gaps, so the version it gives this commit
        tells, without a read. Otherwise the table is read (its ids and revisions) to see whether a
        commit of another writer, built on the same rows, came first and shuts this one out.
        Raises WriteConflict then (nothing counts; the caller reads what the other one wrote and
        does its change again), LeaseLost when this server knows it lost the bucket's lease before
        writing, StoreError when Lance refuses the write.
        """
        if self.guard is not None:
            self.guard.before()
        base, size = self._applied_version, data.num_rows
        marker, rev = data.column("id")[-1].as_py(), int(data.column("rev")[-1].as_py())
        try:
            added = self._table.add(data)
        except Exception as exc:  # Lance raises several exception types for I/O and conflicts
            raise store_error("write to the memory store", exc) from exc
        version = int(getattr(added, "version", 0) or self._table.version)
        if base >= 0 and version == base + 1:
            self._rows += size
        else:
            end = self._commit_end(marker, size)
            if end is None:
                self._generation = None  # read whole next time: this process saw rows go astray
                raise WriteConflict(
                    f"another writer changed namespace '{self.name}' at the same time; this change "
                    "did not count and was not acknowledged"
                )
            self._rows = end + 1
        self._rev, self._last, self._fenced = rev, (marker, rev), max(self._fenced, rev)
        self._applied_version = version
        self._checked_out = max(self._checked_out, version)
        return version

    def _commit_end(self, marker: str, size: int) -> int | None:
        """The offset of the marker ``marker`` of a commit of ``size`` rows, if the commit counts in
        the latest version (no other writer's commit shuts it out); None when it does not."""
        self.latest_version()
        rows = self._again_if_gone(lambda: self._table.search().select(["id", "rev"]).limit(None).to_arrow())
        if not commit_counts(rows, marker, size):
            return None
        return int(pc.index(rows.column("id"), marker).as_py())

    def fence(self) -> None:
        """Append a fence (``store/fences.py``), holding a lease just taken over, the table followed:
        what the writer that lost it appends from now on does not count. Raises WriteConflict when
        another writer committed first (then nothing needed fencing from this one)."""
        self._append_commit(pa.Table.from_pylist([fence_row(self._rev + 1)], schema=self._table.schema))

    @property
    def rev(self) -> int:
        """The last commit this process read or wrote (-1: none)."""
        return self._rev

    def history_floor(self) -> int:
        """The oldest commit the rows still hold whole; for a table of an older schema version,
        whose history was in LanceDB's versions, its latest commit."""
        schema = self._table.schema
        if outdated(schema):
            return self._latest_rev()
        return int((schema.metadata or {}).get(META_FLOOR, b"0").decode() or 0)

    def _latest_rev(self) -> int:
        revs = self._table.search().select(["rev"]).limit(None).to_arrow().column("rev")
        return int(pc.max(revs).as_py()) if len(revs) else -1

    def versions(self) -> list[tuple[int, float]]:
        """The versions of the memory that can be read and restored, oldest first: each commit
        since the history floor, with the time it was written (the latest time of its rows)."""
        return [(commit.version, commit.at) for commit in self.commits(("id", "rev", "updated"))]

    def commits(self, columns: Collection[str] = COMMIT_COLUMNS) -> list[Commit]:
        """:meth:`versions` with what each commit did, read from ``columns`` (``store/commits.py``;
        ``id`` and ``rev`` among them, for the fences)."""
        self.latest_version()
        rows = self._again_if_gone(
            lambda: unfenced(self._table.search().select(list(columns)).limit(None).to_arrow())
        )
        return commits_of(rows, self.history_floor())

    def restore(self, version: int) -> int:
        """Make commit ``version``'s memory the latest again, as a new commit; returns its rev.

        Written as one append, like any change: the revisions ``version`` held that are not live
        now (written again under the new rev), and a deletion for every node live now that it did
        not hold. So other processes follow a restore as they follow a ``remember``, and nothing
        is destroyed: the commits in between stay in the history. The caller must hold the write
        lock, as for :meth:`commit`. Raises StoreError for a version that is not kept.
        """
        self._check_kept(version)
        now, positions, _ = self._scan()
        rev, stamp = self._rev + 1, time.time()
        data, kept, gone = restoring_rows(
            now, positions, version, self._ids, rev, stamp, self._table.schema, mark=RESTORE_MARK
        )
        if data is None:
            return self._rev
        marker = pa.Table.from_pylist([fence_row(rev)], schema=data.schema)
        self._append_commit(pa.concat_tables([data, marker]))
        self._noted(kept, gone, stamp if gone else None)
        self._appends_since_compaction += 1
        if not self.maintenance_deferred:
            self._maintain()
        return rev

    @property
    def outdated(self) -> bool:
        """Whether the table was written in an older schema version (readable, but it must be
        upgraded, :meth:`upgrade`, before anything is written to it)."""
        return outdated(self._table.schema)

    def upgrade(self, memory: Memory | None = None) -> int:
        """Rewrite a table of an older schema version in the current one, in one overwrite commit
        under a new generation: each id's latest row (deletions too), converted by the migration
        steps since its version (``store/migrations.py``). Its history was in LanceDB's versions,
        which are not carried over: history starts at the upgrade.

        ``memory``: the namespace as read from the old rows; when it built its temporal tree anew
        (``Memory.temporal_rebuilt``: the old rows' tree is not the current one), that tree's rows
        are written in the same commit, so the upgraded table holds all of the memory at once, and
        the flag is cleared.

        The caller must hold the namespace's write lock. Raises StoreError when Lance refuses.
        """
        if not self.outdated:
            return self.latest_version()
        version = self.latest_version()
        rows, schema = upgraded(
            unfenced(self._table.to_arrow().combine_chunks()), self.embedder, self.dimension
        )
        self._before_rewrite(version)
        if memory is not None and memory.temporal_rebuilt:
            rows, schema = with_temporal_tree(rows, schema, memory)
        try:
            self._db.create_table(self.name, data=rows.cast(schema), schema=schema, mode="overwrite")
            self._table = self._db.open_table(self.name)
            compact(self._table)  # the old layout's versions are history no longer: their files go now
        except Exception as exc:  # Lance raises several exception types for I/O
            raise store_error(f"upgrade namespace '{self.name}'", exc) from exc
        if self.guard is not None:
            self.guard.after()
        self._schema = None
        self._generation = None  # read whole next time
        if memory is not None:
            memory.temporal_rebuilt, memory.temporal_replaced = False, set()
        log.info("upgraded namespace %s to schema version %s", self.name, SCHEMA_VERSION)
        return self.latest_version()

    def purge(self) -> int:
        """Rewrite the table with its live rows alone and delete every earlier version and every
        file the new one does not use, so nothing forgotten or superseded stays on disk.

        The rewrite has a new generation, so other processes read the table whole (and drop what
        they held of the forgotten rows) rather than follow it. The history starts again at the
        latest commit. The caller must hold the namespace's write lock. A process reading an
        earlier version at that moment gets an error; the next read sees the purged table. Returns
        the commit the history now starts at. Raises StoreError when Lance refuses.
        """
        if self.outdated:
            self.upgrade()  # the purged table is written in the current layout
        try:
            self._overwrite(self._live_rows(), floor=self._rev)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Lance warns that older versions go: the point
                self._table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
        except Exception as exc:  # Lance raises several exception types for I/O
            raise store_error(f"purge namespace '{self.name}'", exc) from exc
        self._deleted = set()
        self.oldest_forget = None
        self.latest_version()
        return self._rev

    def _overwrite(self, rows: pa.Table, *, floor: int) -> None:
        """Make ``rows`` the table's whole content, in one commit under a new generation (readers
        that saw the old rows read the table whole), with its history starting at commit ``floor``."""
        generation = new_generation()
        meta = {**(rows.schema.metadata or {}), META_GENERATION: generation, META_FLOOR: str(floor).encode()}
        # The rewritten table ends as every commit does: with a marker at its last revision, so that
        # a late append built on the rows before it does not count after it (store/fences.py).
        fence = pa.Table.from_pylist([fence_row(self._rev)], schema=rows.schema)
        rows = pa.concat_tables([rows, fence])
        rows = rows.replace_schema_metadata(meta)
        self._before_rewrite(self._scanned_version)
        written = self._table.add(rows, mode="overwrite")
        version = int(getattr(written, "version", 0) or self._table.version)
        if version != self._scanned_version + 1:
            # A commit landed between the check and the rewrite, which LanceDB lets win: only a
            # writer that did not hold the namespace's lock can have made it (docs/deploy.md).
            log.error(
                "namespace %s: another writer committed while it was rewritten (version %d to %d); "
                "what it wrote then may be lost",
                self.name,
                self._scanned_version,
                version,
            )
        self._applied_version, self._fenced = version, highest_fence(rows)
        self._generation = generation
        self._schema = None
        self._rows = rows.num_rows
        self._last = last_row(rows)
        self._appends_since_compaction = 0

    def _before_rewrite(self, version: int) -> None:
        """Before a rewrite of the table as it was at ``version``: raise LeaseLost unless the writer
        still holds the namespace, StoreError when anything was committed since that version (a
        rewrite would drop it; nothing is written, the caller tries again later)."""
        if self.guard is not None:
            self.guard.before()
        latest = self.latest_version()
        if latest != version:
            raise StoreError(
                f"namespace '{self.name}' changed (version {version} to {latest}) while it was being "
                "rewritten; nothing was rewritten, try again"
            )

    def _noted(self, alive: Iterable[str], gone: Iterable[str], gone_at: float | None) -> None:
        """Note the ids that rows just written or read make live and those they delete, and
        ``gone_at``, the time of the oldest of those deletions (None: there is none)."""
        for node_id in alive:
            self._ids.add(node_id)
            self._deleted.discard(node_id)
        for node_id in gone:
            self._ids.discard(node_id)
            self._deleted.add(node_id)
        if gone_at is not None and (self.oldest_forget is None or gone_at < self.oldest_forget):
            self.oldest_forget = gone_at

    def _scan(self) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """The whole table (every revision) and ``live_positions`` of it; notes its size, last
        revision, live ids and oldest deletion."""
        # One chunk per column: taking rows from hundreds of fragments' chunks is several times slower.
        schema = self._table.schema
        check_schema(self.name, schema, self.embedder, self.dimension)
        self._generation = generation_of(schema)
        self._scanned_version = int(self._table.version)
        arrow = as_current(self._table.to_arrow().combine_chunks())
        self._note_rows(arrow)
        arrow = unfenced(arrow)  # counted above: revisions only grow, and offsets are the table's
        latest, kinds = latest_positions(arrow)
        alive, is_leaf = kind_masks(kinds)
        self._note_latest(arrow, latest, alive)
        return arrow, latest[alive], is_leaf[alive]

    def _scan_latest(self) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """What :meth:`_scan` gives, but of the table's rows only each id's latest (deletions too,
        in table order), and ``live_positions`` of those; notes what it notes.

        The rows a later revision of their node superseded are not read: first every row's id,
        revision, kind and time, then only the latest rows, by their offsets (at the end of an
        import of 30k memories the table held twice its live rows, with their vectors: a whole
        read held them all at once). A table in an older layout is read whole: its migrations
        work on every row.

        Only where the table holds many superseded rows and the process ends soon (the end of an
        import): LanceDB's reads by offset keep more of what they used than a whole read does
        (at 100k memories, +236 MB against +105 MB once freed), which a server would hold on to."""
        schema = self._table.schema
        check_schema(self.name, schema, self.embedder, self.dimension)
        if outdated(schema):
            return self._scan()
        self._generation = generation_of(schema)
        self._scanned_version = int(self._table.version)
        outline = self._table.search().select(["id", "rev", "kind", "updated"]).limit(None).to_arrow()
        outline = outline.combine_chunks()
        self._note_rows(outline)
        # Each row's offset in the table, carried through the fences' filter.
        offset = pa.array(np.arange(outline.num_rows, dtype=np.int64))
        counted = unfenced(outline.append_column(OFFSET, offset))
        latest, kinds = latest_positions(counted)
        alive, is_leaf = kind_masks(kinds)
        self._note_latest(counted, latest, alive)
        offsets = counted.column(OFFSET).to_numpy()[latest]  # by id
        order = np.argsort(offsets)  # LanceDB gives rows taken by offset in table order
        if len(order):
            rows = self._table.take_offsets(offsets[order].tolist()).to_arrow().combine_chunks()
        else:
            rows = schema.empty_table()
        at = np.empty(len(order), dtype=np.int64)
        at[order] = np.arange(len(order))  # where each id's latest row is among ``rows``
        return rows, at[alive], is_leaf[alive]

    def _note_rows(self, arrow: pa.Table) -> None:
        """Note the size, the last revision, the last row and the highest fence of the table as
        read at ``_scanned_version`` (``arrow``: every row, in table order, with id and rev)."""
        self._rows = arrow.num_rows
        self._rev = int(pc.max(arrow.column("rev")).as_py()) if arrow.num_rows else -1
        self._last = last_row(arrow)
        self._fenced, self._applied_version = highest_fence(arrow), self._scanned_version

    def _note_latest(
        self, arrow: pa.Table, latest: np.ndarray, alive: np.ndarray, live: set[str] | None = None
    ) -> None:
        """Note the live and deleted ids and the oldest deletion, from each id's latest row (at
        ``latest`` in ``arrow``; ``alive``: which of them are not deletions). ``live``: the live
        ids, when the caller has them as strings already (the nodes' own: at 100k memories, new
        strings for them held 20 MB more)."""
        if live is None:
            live = set(arrow.column("id").take(pa.array(latest[alive])).to_pylist())
        self._ids = live
        self._deleted = set(arrow.column("id").take(pa.array(latest[~alive])).to_pylist())
        deleted = pc.filter(arrow.column("updated"), pc.equal(arrow.column("kind"), DELETED))
        self.oldest_forget = pc.min(deleted).as_py() if len(deleted) else None

    def _live_rows(self) -> pa.Table:
        arrow, positions, _ = self._scan()
        return arrow.take(pa.array(positions))

    def maintain(self, *, fresh: bool = False) -> None:
        """Compact or squash the table if it is due (commits do it themselves unless
        ``maintenance_deferred``). ``fresh``: everything in the table was written by one bulk
        import into an empty namespace, whose intermediate commits nobody needs back, so its
        superseded rows go now and the history starts at its end. The caller must hold the
        namespace's write lock."""
        if fresh:
            rows, _, _ = self._scan_latest()
            latest, _ = latest_positions(rows)
            if len(latest) < rows.num_rows:  # a table of an older layout, read whole
                rows = rows.take(pa.array(latest))
            self._overwrite(rows, floor=self._rev)
            del rows
            release_arrow_pages()
            compact(self._table)
            return
        self._maintain()

    def _maintain(self) -> None:
        """Compact or squash if due, after a commit; a failure is logged (the commit stands, and
        the next commit tries again)."""
        try:
            self._maintain_now()
        except StoreError as exc:
            log.warning("could not compact namespace %s: %s", self.name, exc)
        except Exception as exc:  # Lance raises several exception types for I/O
            log.warning("could not compact namespace %s: %s", self.name, exc)

    def _maintain_now(self) -> None:
        dominated = self._rows - len(self._deleted) > 2 * len(self._ids) + SQUASH_SLACK
        if dominated and time.time() >= self._squash_after and self._squash():
            return
        if self._appends_since_compaction >= COMPACT_EVERY:
            compact(self._table, self.reader_grace)
            self._appends_since_compaction = 0
            # A long-running writer's C heap keeps what a hundred commits freed (bench/longrun.py).
            give_back_freed_memory()

    def _squash(self) -> bool:
        """Rewrite the table without the revisions that neither the latest memory nor any commit
        of the last MEMTREE_RETENTION needs, if they outnumber the live rows (plus
        :data:`SQUASH_SLACK`); whether it did.

        The commits kept are those written since the cutoff (now minus the history kept) and the
        last one before it, the new history floor: every row written after that one stays, and of
        the rows up to it each id's latest. A deletion row stays (it is tiny) until a purge: it
        dates the forgotten text that earlier commits still hold.
        """
        arrow, _, _ = self._scan()
        revs = arrow.column("rev")
        before = pc.less_equal(arrow.column("updated"), time.time() - self.history)
        old = pc.filter(revs, before)
        floor = max(int(pc.max(old).as_py()) if len(old) else -1, self.history_floor())
        recent = pc.greater(revs, floor).to_numpy(zero_copy_only=False)
        upto = np.flatnonzero(~recent)
        latest, _ = latest_positions(arrow.take(pa.array(upto)))
        keep = np.sort(np.concatenate([np.flatnonzero(recent), upto[latest]]))
        if arrow.num_rows - len(keep) <= len(self._ids) + SQUASH_SLACK:
            # Nothing more can go before the oldest commit kept whole leaves the history.
            times = pc.filter(arrow.column("updated"), pa.array(recent))
            self._squash_after = (pc.min(times).as_py() if len(times) else time.time()) + self.history
            return False
        self._overwrite(arrow.take(pa.array(keep)), floor=floor)
        compact(self._table, self.reader_grace)
        return True


def compact(table: Any, grace: timedelta = READER_GRACE) -> None:
    """Compact ``table``'s small files and delete the files of its LanceDB versions older than
    ``grace``: the history is in the rows, so only readers in flight used them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lance warns that older versions go: the point
        table.optimize(cleanup_older_than=grace)
