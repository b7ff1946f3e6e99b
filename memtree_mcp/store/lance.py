"""LanceDB persistence: one table per namespace, rows appended as revisions, one commit per change.

A node's row is never updated in place. Every ``remember`` appends the new revision of each row it
changed, all with the same ``rev`` number, in a single ``add``; Lance commits it atomically, so a
crash leaves the table at the previous version or the next, never between. Reading keeps the
highest revision of each id. This was measured against updating rows with ``merge_insert``: on a
store of 1,000 memories a merge_insert commit took 19 ms just after compaction and up to 95 ms
200 commits later, where an append of the same rows takes 4–7 ms (``docs/benchmarks.md``).

History lives in the rows (schema version 3). Every commit has its own ``rev``, so the memory as
it was at any commit is the latest row of each id among the rows with a ``rev`` up to it; that is
what ``history``, ``as_of`` and ``restore`` read, and LanceDB's own versions go at the next
compaction (:data:`READER_GRACE`). Before, LanceDB's versions were the history: every compaction
copies the whole table into new files, and a week of versions kept every copy, 1,050 of the
1,273 MiB of a 100k store. Superseded revisions are dropped by rewriting
the table once they outnumber the live ones, but only those older than the history kept
(MEMTREE_RETENTION); the oldest commit that can still be read, the *history floor*, is recorded in
the schema metadata. Small files from many appends are compacted with ``optimize()`` on a
schedule. The table's schema metadata also records the schema version and the embedder's
identity and dimension, so a store is never read with vectors from another model.

Only what cannot be derived is stored (schema version 2, :func:`node_schema`): a leaf's vector
once, as bytes, when the leaf is new; no vector on a branch's row (the mean of its leaves', derived
on load); no parents on a leaf's row. Measured with ``bench/scale.py`` on the same 10k memories
(same vectors): 190 MB on disk before, 65 MB after. A table of schema version 1 is read as it is
(its rows converted as they are read) and rewritten in version 3 before its first write; a table
of version 2 is rewritten too, and its history starts then (it was in LanceDB versions).

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
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import time
import uuid
import warnings
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memtree_mcp.addresses import is_loopback
from memtree_mcp.core.hierarchy import Shape
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.model import Branch, Leaf
from memtree_mcp.errors import EmbedderMismatch, StoreError

log = logging.getLogger("memtree_mcp")

T = TypeVar("T")

SCHEMA_VERSION = "3"
# Versions this code reads; a table of an older one is rewritten in the current one before its
# first write (:meth:`NamespaceTable.upgrade`), and its rows are converted as they are read.
READABLE_VERSIONS = ("1", "2", "3")
# The kind of a row that records a node's deletion: its id's latest revision says it is gone.
DELETED = "deleted"
META_SCHEMA = b"memtree.schema_version"
META_EMBEDDER = b"memtree.embedder"
META_DIMENSION = b"memtree.dimension"
# Changes with every rewrite of the table: rows a reader saw before it may be gone.
META_GENERATION = b"memtree.generation"
# The oldest commit (``rev``) whose memory the rows still hold whole: history starts there.
META_FLOOR = b"memtree.history_from"
# How long LanceDB keeps the files of a version once a newer one exists. None: compaction's copies
# must not pile up on disk, and a grace of seconds keeps every copy when writes come quickly (200
# remembers at 10k take 10 s). A reader in another process that was reading a version whose files
# went meanwhile gets an error and reads again from the latest version (_again_if_gone); the only
# writer is the one holding the namespace's lock, which is the one compacting.
READER_GRACE = timedelta(0)

# Each append makes a small file; past a few hundred of them appends and reloads slow down (a
# reload of 13k rows took 182 ms over 300 appends, 35 ms after optimize(), which took 0.2 s).
COMPACT_EVERY = 100
# Rewrite the table with its live rows once superseded revisions outnumber them (plus some slack,
# so that small stores are not rewritten every few calls).
SQUASH_SLACK = 2_000


def node_schema(embedder: str, dimension: int) -> pa.Schema:
    """The row layout of a namespace table, with the embedder and a new generation in its metadata.

    Only what cannot be derived is stored. A leaf's vector (``embedding``: float32 bytes) is
    written once, when the leaf is new: moving in a tree never rewrites a leaf's row, since each
    leaf's parents are read off its parents' ``children``. A branch's row holds no vector (under
    average linkage it is the mean of its leaves', recomputed on load, ``core/representative.py``):
    a remember rewrites every branch on its paths, and with a vector each of those rows was 1.5 KB
    of the 2 KB, so the revisions in the history were mostly copies of vectors.
    """
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("rev", pa.int64(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("tree", pa.string(), nullable=False),
            pa.field("parent", pa.string()),
            pa.field("children", pa.list_(pa.string())),
            pa.field("depth", pa.int32()),
            pa.field("text", pa.string()),
            pa.field("label", pa.string()),
            pa.field("embedding", pa.binary()),
            pa.field("leaf_count", pa.int64()),
            pa.field("first_seq", pa.int64()),
            pa.field("last_seq", pa.int64()),
            pa.field("first_ts", pa.float64()),
            pa.field("last_ts", pa.float64()),
            pa.field("role", pa.string()),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("session", pa.string()),
            pa.field("metadata", pa.string()),
            pa.field("content_hash", pa.string()),
            pa.field("created", pa.float64()),
            pa.field("updated", pa.float64()),
        ],
        metadata={
            META_SCHEMA: SCHEMA_VERSION.encode(),
            META_EMBEDDER: embedder.encode(),
            META_DIMENSION: str(dimension).encode(),
            META_GENERATION: new_generation(),
            META_FLOOR: b"0",
        },
    )


def new_generation() -> bytes:
    """A fresh generation marker for a table written anew."""
    return uuid.uuid4().hex.encode()


def generation_of(schema: pa.Schema) -> bytes:
    """The generation a table's schema records (empty for a table written before they existed)."""
    return (schema.metadata or {}).get(META_GENERATION, b"")


@dataclass(slots=True)
class Snapshot:
    """The live nodes of a namespace table and the table version they were read at."""

    version: int
    leaves: list[Leaf]
    branches: list[Branch]
    # The leaves' vectors as one matrix, row i being leaves[i]'s (leaves in seq order), for
    # Memory.load to take in one copy; each leaf's vector is a view of its row.
    vectors: np.ndarray | None = None
    # Each tree's shape, from the columns, for Memory.load (its branches in the order above).
    shapes: dict[str, Shape] | None = None


@dataclass(frozen=True, slots=True)
class Position:
    """Where a whole read of a table left its reader: what :meth:`NamespaceTable.changes` compares
    the table with to find the rows appended since (the generation, the row count, the highest
    revision and the (id, rev) of the last row), and the version read."""

    generation: bytes
    version: int
    rows: int
    rev: int
    last: tuple[str, int] | None


@dataclass(slots=True)
class Changes:
    """What was committed to a table since a reader last saw it, at table version ``version``: the
    latest revision of each node written since (``leaves``, ``branches``) and the ids deleted."""

    version: int
    leaves: list[Leaf]
    branches: list[Branch]
    removed: set[str]


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
        self._schema: pa.Schema | None = None  # asking Lance for it costs a few ms per commit
        self._generation: bytes | None = None  # of the rows last read; None: never read
        self._checked_out = -1  # the version latest_version() last found
        self._last: tuple[str, int] | None = None  # (id, rev) of the last row, at offset _rows - 1
        # When the oldest deletion row still in the table was written: forgotten text has been on
        # disk since then. None when nothing was forgotten since the last purge.
        self.oldest_forget: float | None = None

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
    def row_count_seen(self) -> int:
        """How many rows (every revision) the table held when this reader last read, followed or
        wrote it (no call into LanceDB)."""
        return self._rows

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
        positions, is_leaf = _live_positions(arrow)
        snapshot = _snapshot_of(arrow, positions, is_leaf, version, self.dimension)
        del arrow
        _release_arrow_pages()
        return snapshot

    def _rows_at(self, version: int) -> pa.Table:
        """Every row written up to commit ``version``, read from the latest table without noting
        anything (this process's memory stays as it was). Raises StoreError for a commit that is
        not kept."""
        self._check_kept(version)
        return _up_to(_as_current(self._again_if_gone(self._table.to_arrow).combine_chunks()), version)

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
        rows = arrow.take(pa.array(_latest_positions(arrow)[0])) if keep_rows else None
        assert self._generation is not None
        position = Position(self._generation, version, self._rows, self._rev, self._last)
        snapshot = _snapshot_of(arrow, positions, is_leaf, version, self.dimension)
        del arrow
        _release_arrow_pages()
        return snapshot, rows, position

    def resume(self, rows: pa.Table, position: Position) -> Snapshot:
        """The live nodes of ``rows``, each id's latest row at ``position`` (what
        :meth:`read_latest` gave), as if this table had been read whole there.

        Nothing is trusted: :meth:`changes`, which the caller must call next, compares the table
        with ``position`` and says None when the table does not continue it (another generation,
        fewer rows, another last row); the caller then reads the table whole.
        """
        self._generation = position.generation
        self._rows, self._rev, self._last = position.rows, position.rev, position.last
        alive, is_leaf = _kind_masks(rows.column("kind"))
        everything = np.arange(rows.num_rows)
        self._note_latest(rows, everything, alive)
        return _snapshot_of(rows, everything[alive], is_leaf[alive], position.version, self.dimension)

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
        merged = pa.concat_tables([rows, added.cast(rows.schema)]).combine_chunks()
        latest = merged.take(pa.array(_latest_positions(merged)[0]))
        return latest, Position(self._generation, version, self._rows, self._rev, self._last)

    def _rows_after(self, seen: int, last: tuple[str, int] | None, total: int) -> pa.Table | None:
        """The rows at offsets ``seen`` to ``total`` (appended after the ``seen`` a reader saw, the
        last of them ``last``), taken by offset with the last one seen, which must still be there;
        None when it is not (a rewrite or deletion that did not say so) or rows are missing."""
        start = seen - 1 if last is not None else seen
        if start == total:  # nothing was ever appended
            return _as_current(self._table.schema.empty_table())
        arrow = _as_current(self._table.take_offsets(list(range(start, total))).to_arrow().combine_chunks())
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
        (4 ms against 35 ms for a filter on ``rev`` over 34k rows in 40 fragments), and they are
        exactly the new ones when every one of them has a higher revision than the last one seen.

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
            return Changes(version=version, leaves=[], branches=[], removed=set())
        if int(pc.min(arrow.column("rev")).as_py()) <= self._rev:
            return None
        self._rows = total
        self._rev = int(pc.max(arrow.column("rev")).as_py())
        self._last = _last_row(arrow)
        positions, kinds = _latest_positions(arrow)
        alive, is_leaf = _kind_masks(kinds)
        ids = arrow.column("id").take(pa.array(positions)).to_pylist()
        removed = {node_id for node_id, kept in zip(ids, alive.tolist(), strict=True) if not kept}
        deleted = pc.filter(arrow.column("updated"), pc.equal(arrow.column("kind"), DELETED))
        self._noted(
            (node_id for node_id in ids if node_id not in removed),
            removed,
            pc.min(deleted).as_py() if len(deleted) else None,
        )
        leaves = _leaves_at(arrow, positions[is_leaf], self.dimension)
        branches = _branches_at(arrow, positions[alive & ~is_leaf])
        return Changes(version=version, leaves=leaves, branches=branches, removed=removed)

    def commit(
        self,
        memory: Memory,
        changed: Iterable[str],
        removed: Iterable[str] = (),
        now: float | None = None,
    ) -> int:
        """Write the nodes ``changed`` (as ``memory`` holds them now) and the deletion of ``removed``
        as the next revision, in one atomic commit.

        The caller must hold the namespace's write lock and have read the latest version, so that
        revision numbers only grow. Returns the new table version. Raises StoreError when Lance
        refuses the write; the table then still holds its previous version.
        """
        rows = _node_rows(memory, changed, removed, time.time() if now is None else now, self._ids)
        if not rows:
            return self.latest_version()
        rev = self._rev + 1
        if self._schema is None:
            self._schema = self._table.schema
        data = pa.Table.from_pylist([{**row, "rev": rev} for row in rows], schema=self._schema)
        try:
            self._table.add(data)
        except Exception as exc:  # Lance raises several exception types for I/O and conflicts
            raise StoreError(f"could not write to the memory store: {exc}") from exc
        self._rev = rev
        self._rows += len(rows)
        self._last = (rows[-1]["id"], rev)
        gone = [row["id"] for row in rows if row["kind"] == DELETED]
        self._noted(
            (row["id"] for row in rows if row["kind"] != DELETED), gone, rows[-1]["updated"] if gone else None
        )
        self._appends_since_compaction += 1
        if not self.maintenance_deferred:
            self._maintain()
        return int(self._table.version)

    @property
    def rev(self) -> int:
        """The last commit this process read or wrote (-1: none)."""
        return self._rev

    def history_floor(self) -> int:
        """The oldest commit the rows still hold whole; for a table of an older schema version,
        whose history was in LanceDB's versions, its latest commit."""
        meta = self._table.schema.metadata or {}
        if meta.get(META_SCHEMA) != SCHEMA_VERSION.encode():
            return self._latest_rev()
        return int(meta.get(META_FLOOR, b"0").decode() or 0)

    def _latest_rev(self) -> int:
        revs = self._table.search().select(["rev"]).limit(None).to_arrow().column("rev")
        return int(pc.max(revs).as_py()) if len(revs) else -1

    def versions(self) -> list[tuple[int, float]]:
        """The versions of the memory that can be read and restored, oldest first: each commit
        since the history floor, with the time it was written (the latest time of its rows)."""
        self.latest_version()
        rows = self._again_if_gone(
            lambda: self._table.search().select(["rev", "updated"]).limit(None).to_arrow()
        )
        if not rows.num_rows:
            return []
        commits = rows.group_by("rev").aggregate([("updated", "max")])
        revs = commits.column("rev").to_numpy()
        times = commits.column("updated_max").to_numpy(zero_copy_only=False)
        kept = revs >= self.history_floor()
        order = np.argsort(revs[kept], kind="stable")
        return list(zip(revs[kept][order].tolist(), times[kept][order].tolist(), strict=True))

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
        past = _up_to(now, version)  # one read of the table serves both
        live = set(
            zip(
                now.column("id").take(pa.array(positions)).to_pylist(),
                now.column("rev").take(pa.array(positions)).to_pylist(),
                strict=True,
            )
        )
        then, _ = _live_positions(past)
        keys = zip(
            past.column("id").take(pa.array(then)).to_pylist(),
            past.column("rev").take(pa.array(then)).to_pylist(),
            strict=True,
        )
        back = [int(p) for p, key in zip(then.tolist(), keys, strict=True) if key not in live]
        kept = set(past.column("id").take(pa.array(then)).to_pylist())
        rev = self._rev + 1
        stamp = time.time()
        schema = self._table.schema
        parts = []
        if back:
            rows = past.take(pa.array(back, type=pa.int64())).select(schema.names)
            # Dated now, so the new commit's time is the time of the restore.
            rows = rows.set_column(
                rows.schema.get_field_index("rev"), "rev", pa.array([rev] * len(back), pa.int64())
            )
            rows = rows.set_column(
                rows.schema.get_field_index("updated"), "updated", pa.array([stamp] * len(back), pa.float64())
            )
            parts.append(rows)
        gone = sorted(self._ids - kept)
        if gone:
            deletions = [{**_deletion_row(node_id, stamp), "rev": rev} for node_id in gone]
            parts.append(pa.Table.from_pylist(deletions, schema=schema))
        if not parts:
            return self._rev
        data = pa.concat_tables([part.cast(schema) for part in parts])
        try:
            self._table.add(data)
        except Exception as exc:  # Lance raises several exception types for I/O and conflicts
            raise StoreError(f"could not write to the memory store: {exc}") from exc
        self._rev = rev
        self._rows += data.num_rows
        self._last = _last_row(data)
        self._noted(kept, gone, stamp if gone else None)
        self._appends_since_compaction += 1
        if not self.maintenance_deferred:
            self._maintain()
        return rev

    @property
    def outdated(self) -> bool:
        """Whether the table was written in an older schema version (readable, but it must be
        upgraded, :meth:`upgrade`, before anything is written to it)."""
        return (self._table.schema.metadata or {}).get(META_SCHEMA) != SCHEMA_VERSION.encode()

    def upgrade(self) -> int:
        """Rewrite a table of an older schema version in the current one, in one overwrite commit
        under a new generation: each id's latest row (deletions too), converted. Its history was
        in LanceDB's versions, which are not carried over: history starts at the upgrade.

        The caller must hold the namespace's write lock. Raises StoreError when Lance refuses.
        """
        if not self.outdated:
            return self.latest_version()
        arrow = _as_current(self._table.to_arrow().combine_chunks())
        latest, _ = _latest_positions(arrow)
        rows = arrow.take(pa.array(latest))
        floor = int(pc.max(rows.column("rev")).as_py()) if rows.num_rows else 0
        schema = node_schema(self.embedder, self.dimension)
        schema = schema.with_metadata({**(schema.metadata or {}), META_FLOOR: str(floor).encode()})
        try:
            self._db.create_table(self.name, data=rows.cast(schema), schema=schema, mode="overwrite")
            self._table = self._db.open_table(self.name)
            _compact(self._table)  # the old layout's versions are history no longer: their files go now
        except Exception as exc:  # Lance raises several exception types for I/O
            raise StoreError(f"could not upgrade namespace '{self.name}': {exc}") from exc
        self._schema = None
        self._generation = None  # read whole next time
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
            raise StoreError(f"could not purge namespace '{self.name}': {exc}") from exc
        self._deleted = set()
        self.oldest_forget = None
        self.latest_version()
        return self._rev

    def _overwrite(self, rows: pa.Table, *, floor: int) -> None:
        """Make ``rows`` the table's whole content, in one commit under a new generation (readers
        that saw the old rows read the table whole), with its history starting at commit ``floor``."""
        generation = new_generation()
        meta = {**(rows.schema.metadata or {}), META_GENERATION: generation, META_FLOOR: str(floor).encode()}
        rows = rows.replace_schema_metadata(meta)
        self._table.add(rows, mode="overwrite")
        self._generation = generation
        self._schema = None
        self._rows = rows.num_rows
        self._last = _last_row(rows)
        self._appends_since_compaction = 0

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
        """The whole table (every revision) and ``_live_positions`` of it; notes its size, last
        revision, live ids and oldest deletion."""
        # One chunk per column: taking rows from hundreds of fragments' chunks is several times slower.
        schema = self._table.schema
        check_schema(self.name, schema, self.embedder, self.dimension)
        self._generation = generation_of(schema)
        arrow = _as_current(self._table.to_arrow().combine_chunks())
        self._rows = arrow.num_rows
        self._rev = int(pc.max(arrow.column("rev")).as_py()) if arrow.num_rows else -1
        self._last = _last_row(arrow)
        latest, kinds = _latest_positions(arrow)
        alive, is_leaf = _kind_masks(kinds)
        self._note_latest(arrow, latest, alive)
        return arrow, latest[alive], is_leaf[alive]

    def _note_latest(self, arrow: pa.Table, latest: np.ndarray, alive: np.ndarray) -> None:
        """Note the live and deleted ids and the oldest deletion, from each id's latest row (at
        ``latest`` in ``arrow``; ``alive``: which of them are not deletions)."""
        self._ids = set(arrow.column("id").take(pa.array(latest[alive])).to_pylist())
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
            arrow, _, _ = self._scan()
            latest, _ = _latest_positions(arrow)
            self._overwrite(arrow.take(pa.array(latest)), floor=self._rev)
            _compact(self._table)
            return
        self._maintain()

    def _maintain(self) -> None:
        dominated = self._rows - len(self._deleted) > 2 * len(self._ids) + SQUASH_SLACK
        if dominated and time.time() >= self._squash_after and self._squash():
            return
        if self._appends_since_compaction >= COMPACT_EVERY:
            _compact(self._table)
            self._appends_since_compaction = 0

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
        latest, _ = _latest_positions(arrow.take(pa.array(upto)))
        keep = np.sort(np.concatenate([np.flatnonzero(recent), upto[latest]]))
        if arrow.num_rows - len(keep) <= len(self._ids) + SQUASH_SLACK:
            # Nothing more can go before the oldest commit kept whole leaves the history.
            times = pc.filter(arrow.column("updated"), pa.array(recent))
            self._squash_after = (pc.min(times).as_py() if len(times) else time.time()) + self.history
            return False
        self._overwrite(arrow.take(pa.array(keep)), floor=floor)
        _compact(self._table)
        return True


class LanceStore:
    """A LanceDB database directory (or object-store URI) holding one table per namespace.

    ``storage_options`` go to LanceDB's object store (see :func:`object_store_options`).
    """

    def __init__(
        self,
        home: str | Path,
        embedder: str,
        dimension: int,
        storage_options: dict[str, str] | None = None,
        *,
        history: float = 7 * 86_400.0,
    ) -> None:
        """``history``: seconds of versions that compaction keeps (MEMTREE_RETENTION)."""
        self.home = str(home)
        self.embedder = embedder
        self.dimension = dimension
        self.history = history
        if "://" not in self.home:
            Path(self.home).mkdir(parents=True, exist_ok=True, mode=0o700)
        self._db = lancedb.connect(self.home, storage_options=storage_options or None)

    def namespaces(self) -> list[str]:
        """Names of the namespaces that hold a table."""
        listing = self._db.list_tables()
        names = getattr(listing, "tables", listing)
        return sorted(str(n) for n in names)

    def open(self, namespace: str, *, create: bool) -> NamespaceTable | None:
        """The table of ``namespace``; created when ``create`` is true, else None when missing.

        Raises EmbedderMismatch when the table was built with another embedder or dimension.
        """
        try:
            table = self._db.open_table(namespace)
        except (FileNotFoundError, ValueError):
            if not create:
                return None
            try:
                table = self._db.create_table(
                    namespace, schema=node_schema(self.embedder, self.dimension), exist_ok=True
                )
            except Exception as exc:  # Lance raises RuntimeError or OSError for I/O
                # Another process created it first: ``exist_ok`` still refuses it, its schema
                # carrying another generation than ours. Use that one.
                try:
                    table = self._db.open_table(namespace)
                except Exception:
                    raise home_error(self.home, exc, "write") from exc
        check_schema(namespace, table.schema, self.embedder, self.dimension)
        opened = NamespaceTable(table, self.embedder, self.dimension, self._db, namespace, self.history)
        if "://" not in self.home:
            # Where Lance writes each version's manifest (lance's format: <table>.lance/_versions).
            opened.versions_folder = Path(self.home) / f"{namespace}.lance" / "_versions"
        return opened

    def read_any(self, namespace: str) -> tuple[Snapshot, str, int] | None:
        """A namespace's live nodes whatever embedder built it, with that embedder and dimension.

        For re-indexing a store under a new embedder; None when the namespace has no table.
        """
        try:
            table = self._db.open_table(namespace)
        except (FileNotFoundError, ValueError):
            return None
        meta = table.schema.metadata or {}
        embedder = meta.get(META_EMBEDDER, b"?").decode()
        dimension = int(meta.get(META_DIMENSION, b"0").decode() or 0)
        snapshot = NamespaceTable(table, embedder, dimension, self._db, namespace).read()
        return snapshot, embedder, dimension

    def replace(self, namespace: str, memory: Memory) -> int:
        """Make every node of ``memory`` (built for this store's embedder) the whole content of
        ``namespace``.

        Written as one new commit of the table with this store's schema and embedder; the history
        starts again there (the earlier commits' rows hold another embedder's vectors), but the
        table's deletion rows stay, dating the forgotten text (:attr:`NamespaceTable.oldest_forget`).
        Returns the new commit's rev. Raises StoreError when Lance refuses.
        """
        deletions, last = self._deletions(namespace)
        rev = last + 1
        schema = node_schema(self.embedder, self.dimension)
        schema = schema.with_metadata({**(schema.metadata or {}), META_FLOOR: str(rev).encode()})
        nodes = [*memory.leaves, *memory.semantic.branches, *memory.temporal.branches]
        rows = _node_rows(memory, nodes, (), time.time())
        live = {row["id"] for row in rows}
        rows += [
            _deletion_row(node_id, at)
            for node_id, at in deletions
            if node_id not in live  # a memory restored after its forget is live again
        ]
        data = pa.Table.from_pylist([{**row, "rev": rev} for row in rows], schema=schema)
        try:
            _compact(self._db.create_table(namespace, data=data, schema=schema, mode="overwrite"))
        except Exception as exc:  # Lance raises several exception types for I/O
            raise StoreError(f"could not rewrite namespace '{namespace}': {exc}") from exc
        return rev

    def _deletions(self, namespace: str) -> tuple[list[tuple[str, float]], int]:
        """(id, time) of the deletion rows namespace ``namespace``'s table holds now, and its last
        commit's rev (-1 when it has no table)."""
        try:
            table = self._db.open_table(namespace)
        except (FileNotFoundError, ValueError):
            return [], -1
        rows = table.to_arrow().select(["id", "kind", "updated", "rev"])
        deleted = rows.filter(pc.equal(rows.column("kind"), DELETED))
        last = int(pc.max(rows.column("rev")).as_py()) if rows.num_rows else -1
        found = zip(deleted.column("id").to_pylist(), deleted.column("updated").to_pylist(), strict=True)
        return list(found), last


def check_schema(namespace: str, schema: pa.Schema, embedder: str, dimension: int) -> None:
    """Raise StoreError for a table of another schema version, EmbedderMismatch for one whose
    vectors come from another embedder or dimension than ``embedder`` and ``dimension``."""
    meta = schema.metadata or {}
    version = meta.get(META_SCHEMA, b"?").decode()
    if version not in READABLE_VERSIONS:
        raise StoreError(
            f"namespace '{namespace}' has schema version {version}; this memtree-mcp reads version "
            f"{SCHEMA_VERSION}. Upgrade memtree-mcp, or point MEMTREE_HOME at another directory."
        )
    built_by = meta.get(META_EMBEDDER, b"?").decode()
    built_dimension = int(meta.get(META_DIMENSION, b"0").decode() or 0)
    if built_by != embedder or built_dimension != dimension:
        raise EmbedderMismatch(
            f"namespace '{namespace}' was built with the embedder {built_by} ({built_dimension} "
            f"dimensions), but the configured embedder is {embedder} ({dimension} dimensions). "
            f"Set MEMTREE_EMBEDDER back to the one the store was built with, or use another namespace."
        )


_OS_ERROR = re.compile(r"os error (\d+)")


def home_error(home: str, exc: BaseException, doing: str) -> StoreError:
    """The StoreError for a store the operating system refused to ``doing`` ("create", "write"): its
    reason in a few words, and what to set instead.

    Lance reports I/O failures as RuntimeError text with the errno inside ("… (os error 30) …"); the
    errno's own words are used then, not Lance's message with its source paths.
    """
    if isinstance(exc, OSError) and exc.strerror:
        reason = exc.strerror
    elif found := _OS_ERROR.search(str(exc)):
        reason = os.strerror(int(found.group(1)))
    else:
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
    setting = "MEMTREE_HOME" if "://" not in home else "MEMTREE_HOME (and its credentials)"
    return StoreError(
        f"cannot {doing} the memory store at {home} ({reason}); set {setting} to a place you can write to"
    )


def object_store_options(
    home: str,
    *,
    endpoint: str | None = None,
    region: str | None = None,
    allow_http: bool = False,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """LanceDB storage options for an ``s3://`` or ``s3+ddb://`` home; empty for a directory.

    The endpoint and region come from the arguments (MEMTREE_S3_ENDPOINT, MEMTREE_S3_REGION) or
    else the standard AWS variables (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_REGION,
    AWS_DEFAULT_REGION); credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
    AWS_SESSION_TOKEN when set (otherwise LanceDB's own lookup: instance roles, profiles); for
    ``s3+ddb://`` the DynamoDB endpoint from AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL. Plain
    ``http://`` is allowed to a loopback endpoint, and elsewhere only with ``allow_http``
    (MEMTREE_S3_ALLOW_HTTP). Raises StoreError for an ``http://`` endpoint that is not allowed.
    """
    if not home.startswith(("s3://", "s3+ddb://")):
        return {}
    env = os.environ if environ is None else environ
    options: dict[str, str] = {}
    endpoint = endpoint or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["aws_endpoint"] = endpoint
    region = region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        options["aws_region"] = region
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        if env.get(key):
            options[key.lower()] = env[key]
    if home.startswith("s3+ddb://"):
        # The DynamoDB commit store (LanceDB's safe concurrent writers on S3, docs/deploy.md).
        ddb = env.get("AWS_ENDPOINT_URL_DYNAMODB") or env.get("AWS_ENDPOINT_URL")
        if ddb:
            options["dynamodb_endpoint"] = ddb
    if endpoint and endpoint.lower().startswith("http://"):
        host = urlsplit(endpoint).hostname or ""
        if not (allow_http or is_loopback(host)):
            raise StoreError(
                f"the S3 endpoint {endpoint} is plain http and not on this machine; use https, or set "
                "MEMTREE_S3_ALLOW_HTTP=true if the network between you and it is trusted."
            )
        options["allow_http"] = "true"
    return options


def _compact(table: Any) -> None:
    """Compact ``table``'s small files and delete the files of its LanceDB versions older than
    :data:`READER_GRACE`: the history is in the rows, so only readers in flight used them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lance warns that older versions go: the point
        table.optimize(cleanup_older_than=READER_GRACE)


def _up_to(arrow: pa.Table, version: int) -> pa.Table:
    """The rows of ``arrow`` written up to commit ``version``."""
    return arrow.filter(pc.less_equal(arrow.column("rev"), version))


def _last_row(arrow: pa.Table) -> tuple[str, int] | None:
    """(id, rev) of the last row of ``arrow``, None when it has none."""
    if not arrow.num_rows:
        return None
    return arrow.column("id")[-1].as_py(), int(arrow.column("rev")[-1].as_py())


def _latest_positions(arrow: pa.Table) -> tuple[np.ndarray, pa.Array]:
    """Where each id's highest revision is, by id, and its kind (``DELETED`` for a deletion).

    Computed on the id and rev columns alone, without converting a row to Python.
    """
    if arrow.num_rows == 0:
        return np.zeros(0, dtype=np.int64), pa.array([], pa.string())
    order = pc.sort_indices(
        arrow.select(["id", "rev"]), sort_keys=[("id", "ascending"), ("rev", "descending")]
    )
    ids = arrow.column("id").take(order).combine_chunks()
    first = np.ones(len(ids), dtype=bool)  # the first row of each id, in this order its latest revision
    if len(ids) > 1:
        first[1:] = pc.not_equal(ids.slice(1), ids.slice(0, len(ids) - 1)).to_numpy(zero_copy_only=False)
    keep = order.to_numpy()[first]
    return keep, arrow.column("kind").take(pa.array(keep)).combine_chunks()


def _live_positions(arrow: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Where each id's highest revision is, unless it deletes the id, by id; and which are leaves."""
    keep, kinds = _latest_positions(arrow)
    alive, is_leaf = _kind_masks(kinds)
    return keep[alive], is_leaf[alive]


def _kind_masks(kinds: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Which of ``kinds`` are not deletions, and which are leaves."""
    alive = pc.not_equal(kinds, DELETED).to_numpy(zero_copy_only=False)
    is_leaf = pc.equal(kinds, "leaf").to_numpy(zero_copy_only=False)
    return alive, is_leaf


# The columns _leaf_from_row and _branch_from_row read (a leaf's vector apart): a reload converts only
# these to Python.
LEAF_COLUMNS = ("id", "text", "first_seq", "first_ts", "role", "tags", "session", "content_hash", "created")
BRANCH_COLUMNS = (
    "id",
    "tree",
    "kind",
    "parent",
    "depth",
    "children",
    "text",
    "label",
    "leaf_count",
    "first_seq",
    "last_seq",
    "first_ts",
    "last_ts",
    "metadata",
)


def _as_current(arrow: pa.Table) -> pa.Table:
    """Rows read from a table of any readable schema version, in the current layout.

    Version 1 stored a vector on every row (a fixed-size list, zeros for deletions), a cohesion,
    and each node's parents in both trees: a leaf's vector becomes its ``embedding``, a branch's
    parent in its own tree its ``parent``; the rest is dropped (derived on load).
    """
    if "embedding" in arrow.column_names:
        return arrow
    is_leaf = pc.equal(arrow.column("kind"), "leaf")
    vectors = arrow.column("vector").combine_chunks()
    flat = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    dimension = vectors.type.list_size
    leaf_mask = is_leaf.to_numpy(zero_copy_only=False)
    blobs = [
        flat[i * dimension : (i + 1) * dimension].tobytes() if leaf else None
        for i, leaf in enumerate(leaf_mask.tolist())
    ]
    parent = pc.if_else(
        pc.equal(arrow.column("tree"), "semantic"),
        arrow.column("semantic_parent"),
        arrow.column("temporal_parent"),
    )
    parent = pc.if_else(is_leaf, pa.scalar(None, pa.string()), parent)
    columns = {name: arrow.column(name) for name in arrow.column_names}
    columns["parent"] = parent
    columns["embedding"] = pa.array(blobs, pa.binary())
    # The table's own metadata (embedder, dimension, generation), as the current version.
    meta = {**(arrow.schema.metadata or {}), META_SCHEMA: SCHEMA_VERSION.encode()}
    schema = node_schema("", 0).with_metadata(meta)
    return pa.table([columns[f.name] for f in schema], schema=schema)


def _release_arrow_pages() -> None:
    # Arrow's allocator keeps a table's pages after it is freed (measured: 500 MB of the resident
    # memory after loading 100k memories); give them back.
    pa.default_memory_pool().release_unused()


def _snapshot_of(
    arrow: pa.Table, positions: np.ndarray, is_leaf: np.ndarray, version: int, dimension: int
) -> Snapshot:
    """The nodes in the rows at ``positions`` of ``arrow`` (``is_leaf`` says which are leaves)."""
    at = positions[is_leaf]
    # In seq order, so that the leaves' vectors are the rows of one matrix in their order.
    at = at[np.argsort(arrow.column("first_seq").take(pa.array(at)).to_numpy(), kind="stable")]
    vectors = _leaf_vectors(arrow, at, dimension, copy=False)
    leaves = _leaves_at(arrow, at, dimension, vectors)
    branches = _branches_at(arrow, positions[~is_leaf])
    shapes = _shapes(arrow, at, positions[~is_leaf], [leaf.id for leaf in leaves], [b.id for b in branches])
    return Snapshot(version=version, leaves=leaves, branches=branches, vectors=vectors, shapes=shapes)


def _shapes(
    arrow: pa.Table,
    leaf_positions: np.ndarray,
    branch_positions: np.ndarray,
    leaf_ids: list[str],
    branch_ids: list[str],
) -> dict[str, Shape]:
    """Each tree's :class:`Shape` from the branch rows at ``branch_positions`` (in that order, as
    :func:`_branches_at` builds them, their ids ``branch_ids``) and the leaf rows at
    ``leaf_positions`` (in seq order, their ids ``leaf_ids``), in Arrow and numpy rather than node
    by node. A tree whose rows name a parent that is not among them, or a leaf under two branches,
    gets none: the load works those out as before. ``parent_of`` is made of the strings of
    ``leaf_ids`` and ``branch_ids``: made anew, they took 28 MiB at 100k memories."""
    part = _rows_at(
        arrow.select(["id", "tree", "kind", "parent", "depth", "leaf_count", "children"]), branch_positions
    )
    leaf_column = one_array(_rows_at(arrow.select(["id"]), leaf_positions).column("id"))
    shapes = {}
    for name in ("semantic", "temporal"):
        in_tree = pc.equal(part.column("tree"), name)
        mine = part.filter(in_tree)
        mine_ids = list(itertools.compress(branch_ids, in_tree.to_numpy(zero_copy_only=False).tolist()))
        ids = one_array(mine.column("id"))
        parent = pc.index_in(mine.column("parent"), value_set=ids)
        if parent.null_count != mine.column("parent").null_count:
            continue  # a parent not among the rows
        children = one_array(mine.column("children"))
        lengths = pc.fill_null(pc.list_value_length(children), 0).to_numpy(zero_copy_only=False)
        owner = np.repeat(np.arange(mine.num_rows), lengths)
        listed = children.flatten()  # the children of each row in turn (none for a null list)
        rows = pc.index_in(listed, value_set=leaf_column)
        is_leaf = pc.is_valid(rows).to_numpy(zero_copy_only=False)
        owner = owner[is_leaf]
        leaf_rows = rows.filter(pa.array(is_leaf)).to_numpy(zero_copy_only=False).astype(np.int64)
        if len(np.unique(leaf_rows)) != len(leaf_rows):
            continue  # a leaf listed twice
        depth = mine.column("depth").to_numpy().astype(np.int64)
        shapes[name] = Shape(
            parent_of=dict(
                zip(
                    map(leaf_ids.__getitem__, leaf_rows.tolist()),
                    map(mine_ids.__getitem__, owner.tolist()),
                    strict=True,
                )
            ),
            height=int(depth[owner].max()) + 1 if len(owner) else 0,
            parent=pc.fill_null(parent, -1).to_numpy(zero_copy_only=False).astype(np.int64),
            depth=depth,
            leaf_count=mine.column("leaf_count").to_numpy().astype(np.float64),
            fan_out=lengths.astype(np.float64),
            internal=pc.equal(mine.column("kind"), "internal").to_numpy(zero_copy_only=False),
            leaves=len(leaf_column),
            leaf_rows=leaf_rows,
            leaf_parent=owner.astype(np.int64),
        )
    return shapes


def one_array(column: pa.ChunkedArray) -> pa.Array:
    """``column`` as one array: its only chunk as it is, or its chunks joined (``combine_chunks``
    copies even a single chunk: 200 MB of a snapshot's branch vectors at 100k memories)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _rows_at(arrow: pa.Table, positions: np.ndarray) -> pa.Table:
    """The rows at ``positions``, in that order. Rows that lie together, as a snapshot keeps its
    leaves and its branches (``store/snapshot.py``), are sliced rather than gathered: over a
    memory-mapped file that copies nothing."""
    if _together(positions):
        return arrow.slice(int(positions[0]), len(positions))
    return arrow.take(pa.array(positions))


def _together(positions: np.ndarray) -> bool:
    """Whether ``positions`` are consecutive and ascending (a slice)."""
    n = len(positions)
    return (
        bool(n) and int(positions[-1]) - int(positions[0]) == n - 1 and bool(np.all(np.diff(positions) == 1))
    )


def _leaf_vectors(arrow: pa.Table, positions: np.ndarray, dimension: int, *, copy: bool = True) -> np.ndarray:
    """The vectors of the leaf rows at ``positions`` in one float32 matrix: a writable copy, or
    with ``copy=False`` and rows that lie together a read-only view of ``arrow``'s own buffer (a
    memory-mapped snapshot's). Gathered rows are always copied, so that the buffer they were
    gathered into goes back to Arrow's pool at once (``_release_arrow_pages``)."""
    part = one_array(_rows_at(arrow.select(["embedding"]), positions).column("embedding"))
    if part.null_count:
        raise StoreError("a stored memory has no vector; run `memtree-mcp doctor --repair`")
    if not len(part):
        return np.zeros((0, dimension), dtype=np.float32)
    offsets = np.frombuffer(part.buffers()[1], dtype=np.int32)[part.offset : part.offset + len(part) + 1]
    if not np.all(np.diff(offsets) == dimension * 4):
        raise StoreError(f"a stored memory's vector is not {dimension} float32 values")
    # The values of a binary array lie end to end: one view over them all, then one copy.
    data = np.frombuffer(
        part.buffers()[2], dtype=np.float32, count=len(part) * dimension, offset=int(offsets[0])
    )
    matrix = data.reshape(len(part), dimension)
    return matrix if not copy and _together(positions) else matrix.copy()


def _leaves_at(
    arrow: pa.Table, positions: np.ndarray, dimension: int, vectors: np.ndarray | None = None
) -> list[Leaf]:
    """The leaves in the rows at ``positions``, built column by column (no dict per row); their
    vectors are the rows of ``vectors`` when given (gathered from the same positions)."""
    if not len(positions):
        return []
    if vectors is None:
        vectors = _leaf_vectors(arrow, positions, dimension)
    part = _rows_at(arrow.select(list(LEAF_COLUMNS)), positions)
    _no_nulls(part, ("id", "first_seq", "first_ts"))
    ids, texts, seqs, stamps, roles, sessions, hashes, created = (
        part.column(name).to_pylist() for name in LEAF_COLUMNS if name != "tags"
    )
    tags = _tags(part.column("tags"))
    # Positional, in Leaf's field order, from whole columns: keyword calls made per row took
    # twice as long at 100k memories.
    return list(
        map(
            Leaf,
            ids,
            texts,
            vectors,
            seqs,
            stamps,
            [role or "user" for role in roles],
            [tags.get(i, ()) for i in range(len(ids))] if tags else itertools.repeat(()),
            sessions,
            [digest or "" for digest in hashes],
            [stamp or 0.0 for stamp in created],
        )
    )


def _tags(column: pa.ChunkedArray) -> dict[int, tuple[str, ...]]:
    """The tags of the rows that have any, by row: most memories have none, and a list made for
    each of them took 47 ms at 100k memories."""
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False)
    tagged = np.flatnonzero(lengths)
    if not len(tagged):
        return {}
    listed = column.take(pa.array(tagged)).to_pylist()
    return {i: tuple(tags) for i, tags in zip(tagged.tolist(), listed, strict=True)}


def _branches_at(arrow: pa.Table, positions: np.ndarray) -> list[Branch]:
    """The branches in the rows at ``positions``, built column by column (no dict per row)."""
    if not len(positions):
        return []
    part = _rows_at(arrow.select(list(BRANCH_COLUMNS)), positions)
    _no_nulls(
        part, ("id", "tree", "kind", "depth", "leaf_count", "first_seq", "last_seq", "first_ts", "last_ts")
    )
    (
        ids,
        trees,
        kinds,
        parents,
        depths,
        children,
        texts,
        labels,
        counts,
        first_seqs,
        last_seqs,
        firsts,
        lasts,
    ) = (part.column(name).to_pylist() for name in BRANCH_COLUMNS[:-1])
    # Built from the columns directly (a dict per row made this 2.7 s of CPU at 133k branches),
    # positionally, in Branch's field order (keyword calls per row took 2.5 times as long).
    branches = list(
        map(
            Branch,
            ids,
            trees,
            kinds,
            parents,
            depths,
            [listed or [] for listed in children],
            [text or "" for text in texts],
            [label or "" for label in labels],
            itertools.repeat(None),
            counts,
            first_seqs,
            last_seqs,
            firsts,
            lasts,
        )
    )
    metadata = part.column("metadata")
    for i in np.flatnonzero(pc.is_valid(metadata).to_numpy(zero_copy_only=False)).tolist():
        for name, value in _refined(metadata[i].as_py()).items():
            setattr(branches[i], name, value)
    return branches


def _no_nulls(part: pa.Table, names: tuple[str, ...]) -> None:
    """Raise StoreError when rows lack a value no node can be without."""
    for name in names:
        if part.column(name).null_count:
            raise StoreError(f"a stored node has no {name}; run `memtree-mcp doctor --repair`")


# -- rows: the table's format, private to this module -----------------------------------------


def _node_rows(
    memory: Memory, changed: Iterable[str], removed: Iterable[str], now: float, stored: Container[str] = ()
) -> list[dict[str, Any]]:
    """The rows of the nodes ``changed`` as ``memory`` holds them, then one deletion row per id of
    ``removed``, each in id order. A leaf in ``stored`` (already in the table) has no new row: its
    record never changes, only its place in the trees, which its parents' rows hold."""
    gone = set(removed)
    rows: list[dict[str, Any]] = []
    for node_id in sorted(set(changed) - gone):
        leaf = memory.leaves.get(node_id)
        if leaf is not None:
            if node_id not in stored:
                rows.append(_leaf_row(leaf, now))
        else:
            branch = memory.branch(node_id)
            if branch is None:
                raise KeyError(node_id)
            rows.append(_branch_row(branch, now))
    rows += [_deletion_row(node_id, now) for node_id in sorted(gone)]
    return rows


def _deletion_row(node_id: str, now: float) -> dict[str, Any]:
    """The revision that deletes a node; squashing the table drops it with the node's history."""
    return {
        "id": node_id,
        "kind": DELETED,
        "tree": "",
        "parent": None,
        "children": [],
        "depth": 0,
        "text": "",
        "label": "",
        "embedding": None,
        "leaf_count": 0,
        "first_seq": -1,
        "last_seq": -1,
        "first_ts": 0.0,
        "last_ts": 0.0,
        "role": None,
        "tags": [],
        "session": None,
        "metadata": None,
        "content_hash": None,
        "created": None,
        "updated": now,
    }


def _leaf_row(leaf: Leaf, now: float) -> dict[str, Any]:
    """The table row of a leaf: its record and vector; its parents are its parents' business."""
    return {
        "id": leaf.id,
        "kind": "leaf",
        "tree": "shared",
        "parent": None,
        "children": [],
        "depth": 0,
        "text": leaf.text,
        "label": "",
        "embedding": np.asarray(leaf.vector, dtype=np.float32).tobytes(),
        "leaf_count": 1,
        "first_seq": leaf.seq,
        "last_seq": leaf.seq,
        "first_ts": leaf.timestamp,
        "last_ts": leaf.timestamp,
        "role": leaf.role,
        "tags": list(leaf.tags),
        "session": leaf.session,
        "metadata": None,
        "content_hash": leaf.content_hash,
        "created": leaf.created,
        "updated": now,
    }


def _branch_row(branch: Branch, now: float) -> dict[str, Any]:
    """The table row of a root or internal node, without its vector (derived from its leaves)."""
    refined = _refinement(branch)
    return {
        "id": branch.id,
        "kind": branch.kind,
        "tree": branch.tree,
        "parent": branch.parent,
        "children": list(branch.children),
        "depth": branch.depth,
        "text": branch.text,
        "label": branch.label,
        "embedding": None,
        "leaf_count": branch.leaf_count,
        "first_seq": branch.first_seq,
        "last_seq": branch.last_seq,
        "first_ts": branch.first_ts,
        "last_ts": branch.last_ts,
        "role": None,
        "tags": [],
        "session": None,
        "metadata": json.dumps(refined) if refined else None,
        "content_hash": None,
        "created": None,
        "updated": now,
    }


def _refinement(branch: Branch) -> dict[str, Any]:
    """What a branch's row keeps of its LLM refinement: the summary, what it covers, whether it is due."""
    if not branch.summary and not branch.pending:
        return {}
    return {"summary": branch.summary, "summary_seq": branch.summary_seq, "pending": branch.pending}


def _leaf_from_row(row: dict[str, Any]) -> Leaf:
    return Leaf(
        id=row["id"],
        text=row["text"],
        vector=row["vector"],
        seq=int(row["first_seq"]),
        timestamp=float(row["first_ts"]),
        role=row["role"] or "user",
        tags=tuple(row["tags"] or ()),
        session=row["session"],
        content_hash=row["content_hash"] or "",
        created=float(row["created"] or 0.0),
    )


def _refined(raw: str | None) -> dict[str, Any]:
    """A branch row's refinement (its ``metadata``) as Branch fields; none when unreadable."""
    try:
        refined = json.loads(raw) if raw and raw != "{}" else {}  # most rows: nothing refined
    except ValueError:
        refined = {}
    if not isinstance(refined, dict) or not refined:
        return {}
    return {
        "summary": str(refined.get("summary") or ""),
        "summary_seq": int(refined.get("summary_seq", -1)),
        "pending": bool(refined.get("pending", False)),
    }


def _branch_from_row(row: dict[str, Any]) -> Branch:
    """A stored branch; its vector is left to be derived from its leaves (``Memory.load``,
    ``Memory.apply``)."""
    return Branch(
        id=row["id"],
        tree=row["tree"],
        kind=row["kind"],
        parent=row["parent"],
        depth=int(row["depth"]),
        children=list(row["children"] or []),
        text=row["text"] or "",
        label=row["label"] or "",
        vector=None,
        leaf_count=int(row["leaf_count"]),
        first_seq=int(row["first_seq"]),
        last_seq=int(row["last_seq"]),
        first_ts=float(row["first_ts"]),
        last_ts=float(row["last_ts"]),
        **_refined(row.get("metadata")),
    )
