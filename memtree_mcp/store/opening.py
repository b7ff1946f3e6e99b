"""Opening a namespace: its memory built from its table, from the snapshot when it has a usable one.

:meth:`Opener.open` first tries the namespace's snapshot (``store/snapshot.py``): its rows, the
branches' vectors and the BM25 index it saved, then the rows appended to the table since, applied
as a follower applies them (:meth:`NamespaceTable.changes`). When there is none, it cannot be
used, or the table does not continue it, the table is read whole (:meth:`NamespaceTable.read_latest`)
and, when the table is big enough for one to pay, a new snapshot saved. Either way the memory is
what a whole read gives: the snapshot only saves the work.

A server that stops saves the snapshot anew when it has fallen far behind the table
(:meth:`Opener.snapshot_due`, :meth:`Opener.refresh_snapshot`), built from the snapshot's rows and
the rows appended since rather than from a whole read. A purge removes the snapshot
(:meth:`Opener.remove_snapshot`): it may hold what the purge took away.

``Spaces`` (``service/spaces.py``) holds what is opened here, and follows the table from there.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from memtree_mcp.core.indexes.arrays import headroom
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.calendar import SESSION_GAP_SECONDS, UTC_CALENDAR, Calendar
from memtree_mcp.host.heap import give_back_freed_memory
from memtree_mcp.host.mapping import can_share
from memtree_mcp.store import snapshot as snapshots
from memtree_mcp.store.arrow import kind_masks, leaf_vectors
from memtree_mcp.store.table import OUTLINE, NamespaceTable, Position

log = logging.getLogger("memtree_mcp")

# A server that stops saves a namespace's snapshot anew when it is this many rows (or a fiftieth
# of the table: REFRESH_SHARE) behind (Opener.snapshot_due). Every process that opens the namespace
# follows the rows since: at 100k memories, 20,819 rows behind (1,200 remembers) cost each start
# 0.7 s more to its first recall and 180 MiB more resident file pages; saving anew costs the
# stopping server 4.0 s. A tenth of the table let it fall 33k rows behind there.
REFRESH_BEHIND = 2_000
REFRESH_SHARE = 50


@dataclass(frozen=True, slots=True)
class Opened:
    """A namespace's memory as opened, the table version it reflects, the rows of the table its
    snapshot stands at (-1: none known) and how it was opened ("from its snapshot", "whole")."""

    memory: Memory
    version: int
    snapshot_rows: int
    how: str
    # The snapshot file whose pages hold the memory's vectors (device, inode), None when it holds
    # its own: :meth:`Opener.remap` when another process replaces that file.
    mapped: tuple[int, int] | None = None
    # Opened from a snapshot not yet compared with its table (``check_later``): :meth:`Opener.check`.
    unchecked: Unchecked | None = None


@dataclass(frozen=True, slots=True)
class Unchecked:
    """What a snapshot opened without comparing it with its table kept for the comparison
    (:meth:`Opener.check`): its rows' outline (id, rev, kind, first_seq; views of the snapshot's
    file, not copies) and where it stands."""

    rows: pa.Table
    position: Position


@dataclass(frozen=True, slots=True)
class Refreshed:
    """What :meth:`Opener.refresh_snapshot` did: whether it saved the snapshot, and the rows of the
    table to count the next refresh from (None: as before)."""

    saved: bool
    snapshot_rows: int | None


class Opener:
    """Opens the namespaces of the store at ``home``, whose vectors have ``dimension`` values, their
    sessions ended by silences over ``session_gap`` seconds."""

    def __init__(self, home: str, dimension: int, *, session_gap: float = SESSION_GAP_SECONDS) -> None:
        self.home = home
        self.dimension = dimension
        self.session_gap = session_gap

    def open(
        self,
        name: str,
        table: NamespaceTable,
        calendar: Calendar = UTC_CALENDAR,
        *,
        check_later: bool = False,
    ) -> Opened:
        """Namespace ``name``'s memory at the latest version of ``table``: from its snapshot and the
        rows appended since when it has a usable one, otherwise from the whole table (saving a
        snapshot). ``calendar``: the zone set for it (MEMTREE_TIMEZONE), which it takes when it
        has none stored (``Memory.load``). ``check_later``: see :meth:`resume`."""
        resumed = self.resume(name, table, calendar, check_later=check_later)
        if resumed is not None:
            return resumed
        return self.read_whole(name, table, calendar)

    def read_whole(self, name: str, table: NamespaceTable, calendar: Calendar = UTC_CALENDAR) -> Opened:
        """Namespace ``name``'s memory read from its whole table; saves a snapshot when the table is
        big enough for one to pay (a failure to save is logged: the memory is read all the same)."""
        read, rows, position = table.read_latest()
        memory = Memory(self.dimension, session_gap=self.session_gap, calendar=calendar)
        memory.load(read.leaves, read.branches, vectors=read.vectors, shapes=read.shapes)
        version = read.version
        path = snapshots.path_of(self.home, name)
        saved_at = -1
        mapped = None
        if path is not None and position.rows >= snapshots.SMALLEST:
            try:
                if self._save(name, table, path, rows, position, memory):
                    saved_at = position.rows
                    del read, rows
                    mapped = self._share(path, table, position, memory)
            except OSError as exc:  # a read-only home: the snapshot only saves time
                log.warning("could not save a snapshot of namespace %s: %s", name, exc)
            except Exception:  # a bug: the memory read is what counts
                log.exception("could not save a snapshot of namespace %s", name)
        return Opened(memory, version, saved_at, "whole", mapped)

    def resume(
        self,
        name: str,
        table: NamespaceTable,
        calendar: Calendar = UTC_CALENDAR,
        *,
        check_later: bool = False,
    ) -> Opened | None:
        """Namespace ``name``'s memory from its snapshot, brought up to the table's latest version by
        the rows appended since; None when there is no snapshot, it cannot be used, or the table
        does not continue it (``store/snapshot.py``).

        Every row the snapshot holds is compared with the table's (:func:`snapshots.disagreement`:
        a read of each row's id and revision, 0.4 s at 100k memories). ``check_later``: not here;
        the memory comes with what :meth:`check` needs, for a server to compare once it answers
        (``service/snapshots.py``). The cheap checks (the same generation, no fewer rows, the same
        last row: :meth:`NamespaceTable.changes`) are made either way."""
        path = snapshots.path_of(self.home, name)
        if path is None:
            return None
        saved = snapshots.read(path, table.embedder, table.dimension)
        if saved is None:
            return None
        table.latest_version()
        unchecked = None
        if check_later:
            unchecked = Unchecked(saved.rows.select(list(OUTLINE)), saved.position)
        elif not self._agrees(name, saved.rows, saved.position, table):
            return None
        behind = table.row_count() - saved.position.rows
        if behind < 0 or behind > max(snapshots.FOLLOW_AT_MOST, saved.position.rows // 4):
            # Rewritten, or so far behind that following it would cost more than a whole read
            # (which saves a new snapshot).
            return None
        saved_at = saved.position.rows
        try:
            read = table.resume(saved.rows, saved.position)
            saved.give_vectors(read.branches)
            room = None
            if read.vectors is not None:
                room = saved.leaf_room(read.vectors, headroom(len(read.vectors)))
            mapped = saved.identity() if can_share() else None
            saved.close()
            memory = Memory(self.dimension, session_gap=self.session_gap, calendar=calendar)
            memory.load(read.leaves, read.branches, saved.lexical, read.vectors, read.shapes, room=room)
            del read, room
            if saved.lexical is None:
                # Tokenized by other code: the memory holds the snapshot's state, tokenized anew;
                # saved again so that the next process need not tokenize.
                snapshots.write(path, saved.rows, saved.position, memory, table.embedder)
            del saved
            changes = table.changes()
            if changes is None:
                log.info("the snapshot of namespace %s no longer fits its table; reading it whole", name)
                return None
            memory.apply(changes.leaves, changes.branches, changes.removed)
        except Exception as exc:
            # Rows that do not hold together (a bug, or a file changed by hand): the table is exact.
            # One line; the traceback only at debug level (a bad file is no crash of ours).
            log.warning(
                "could not open namespace %s from its snapshot (%s: %s); reading it whole",
                name,
                type(exc).__name__,
                " ".join(str(exc).split())[:200],
            )
            log.debug("opening namespace %s from its snapshot failed", name, exc_info=True)
            return None
        return Opened(memory, changes.version, saved_at, "from its snapshot", mapped, unchecked)

    def check(self, name: str, table: NamespaceTable, unchecked: Unchecked) -> bool:
        """Whether the snapshot namespace ``name`` was opened from without comparing it
        (``resume(check_later=True)``) agrees with ``table``; when it does not, it is removed and
        the reason logged (the caller reads the namespace whole, which saves one that fits). True
        too when ``table`` was rewritten since (whoever follows it next reads it whole anyway)."""
        table.latest_version()
        if table.latest_generation() != unchecked.position.generation:
            return True
        try:
            return self._agrees(name, unchecked.rows, unchecked.position, table)
        finally:
            # The outline read and dropped stays in the heap of the thread that read it (glibc
            # keeps an arena per thread): 60 to 90 MB at 100k memories, unless given back.
            give_back_freed_memory()

    def _agrees(self, name: str, rows: pa.Table, position: Position, table: NamespaceTable) -> bool:
        """Whether ``rows`` at ``position`` (a snapshot's) are what ``table`` holds there; when they
        are not, the snapshot is removed and the reason logged."""
        try:
            why = snapshots.disagreement(rows, position, table.outline())
        except (pa.ArrowException, KeyError, ValueError) as exc:  # a table of an older layout
            why = f"it cannot be checked against the table ({exc})"
        if why is None:
            return True
        snapshots.remove(self.home, name)  # the whole read saves one that fits
        log.warning("ignoring the snapshot of namespace %s (%s); reading it whole", name, why)
        return False

    def _share(
        self, path: Path, table: NamespaceTable, position: Position, memory: Memory
    ) -> tuple[int, int] | None:
        """Have ``memory``, just read whole and saved at ``position``, read its vectors from the
        snapshot's file as a process that opens it does (``Saved.leaf_room``), rather than hold
        its own copies: the process that read whole shares them too. Left as it is when the file
        is another snapshot by now, or not this memory's values. The BM25 index is not read
        again: the memory holds the one it was saved from. Returns the file it maps now (device,
        inode), None when it maps none."""
        saved = snapshots.read(path, table.embedder, table.dimension, lexical=False)
        if saved is None:
            return None
        try:
            return self._take(saved, table, memory) if saved.position == position else None
        finally:
            saved.close()

    def snapshot_file(self, name: str) -> tuple[int, int] | None:
        """The file at namespace ``name``'s snapshot path (device, inode), None when there is none."""
        path = snapshots.path_of(self.home, name)
        try:
            found = path.stat() if path is not None else None
        except OSError:
            return None
        return None if found is None else (found.st_dev, found.st_ino)

    def remap(self, name: str, table: NamespaceTable, version: int, memory: Memory) -> tuple[int, int] | None:
        """Have ``memory`` (namespace ``name``'s, followed to ``version``) read its vectors from the
        snapshot now at its path, which another process saved over the file the memory maps: a
        replaced file stays on disk for as long as a process maps it (at 100k memories, 450 MB).
        Only when the new snapshot holds exactly the memory's values (the same version, the leaves
        in the same order, every vector the same: :meth:`Memory.take_vectors`); returns the file
        it maps then (device, inode), None when it was left as it is."""
        path = snapshots.path_of(self.home, name)
        if path is None:
            return None
        saved = snapshots.read(path, table.embedder, table.dimension, lexical=False)
        if saved is None:
            return None
        try:
            if saved.position.version != version or saved.position.generation != table.generation_seen:
                return None
            return self._take(saved, table, memory)
        finally:
            saved.close()

    def _take(self, saved: snapshots.Saved, table: NamespaceTable, memory: Memory) -> tuple[int, int] | None:
        """Have ``memory`` read its vectors from ``saved``'s file if they are its own values; the
        file (device, inode) when it does."""
        kinds = saved.rows.column("kind")
        leaves = np.flatnonzero(kind_masks(kinds)[1])  # first, in seq order (snapshot.write)
        vectors = leaf_vectors(saved.rows, leaves, table.dimension, copy=False)
        room = saved.leaf_room(vectors, headroom(len(leaves))) if len(leaves) else None
        ids = saved.rows.column("id").take(pa.array(leaves)).to_pylist()
        identity = saved.identity()
        if room is None or identity is None or not memory.take_vectors(ids, room, saved.vectors):
            return None
        give_back_freed_memory()
        return identity

    def snapshot_due(self, rows: int, snapshot_rows: int) -> bool:
        """Whether a snapshot standing at ``snapshot_rows`` of a table (-1: none known) is far
        enough behind its ``rows`` to be saved anew."""
        if rows < snapshots.SMALLEST:
            return False
        return rows - max(snapshot_rows, 0) >= max(REFRESH_BEHIND, rows // REFRESH_SHARE)

    def refresh_snapshot(
        self, name: str, table: NamespaceTable, memory: Memory, version: int, *, whole: bool = False
    ) -> Refreshed:
        """Save namespace ``name``'s snapshot anew as ``memory``, which holds ``table`` followed to
        ``version``; call it with no write under way.

        A new process then resumes from here instead of following every row appended since the
        last whole read. It costs a server time and, while it runs, resident memory for what it
        builds and drops (``bench/snapshot_age.py``, retired; in git at 4868398): hence only when a
        server stops. Built from the snapshot's rows and the rows appended since
        (:meth:`NamespaceTable.rows_now`), not from a whole read; skipped (not saved) when the home
        keeps none, there is no usable snapshot to build on, the table does not continue it (the
        next whole read saves one), or it was rewritten meanwhile. ``whole``: with nothing to build
        on, from the table's latest rows instead (a read of the rows, not of the nodes: the memory
        is at hand), for a process that wrote the table's bulk (an import).
        """
        path = snapshots.path_of(self.home, name)
        if path is None:
            return Refreshed(saved=False, snapshot_rows=None)
        started = time.perf_counter()
        saved = snapshots.read(path, table.embedder, table.dimension, rows_only=True)
        now = None if saved is None else table.rows_now(saved.rows, saved.position, version)
        del saved
        if now is None and whole:
            now = table.latest_rows(version)
        if now is None:
            # Nothing to build on: not tried again soon.
            return Refreshed(saved=False, snapshot_rows=table.row_count_seen)
        rows, position = now
        if not self._save(name, table, path, rows, position, memory):
            return Refreshed(saved=False, snapshot_rows=None)
        give_back_freed_memory()
        log.debug(
            "saved the snapshot of namespace %s anew at version %d (%d rows) in %.0f ms",
            name,
            position.version,
            position.rows,
            (time.perf_counter() - started) * 1000,
        )
        return Refreshed(saved=True, snapshot_rows=position.rows)

    def remove_snapshot(self, name: str) -> None:
        """Delete namespace ``name``'s snapshot, if there is one (after a purge: it may hold what
        the purge took away; the next whole read saves a new one)."""
        snapshots.remove(self.home, name)

    def _save(
        self, name: str, table: NamespaceTable, path: Path, rows: pa.Table, position: Position, memory: Memory
    ) -> bool:
        """Save ``memory`` (namespace ``name``'s, as of ``rows`` at ``position``) as its snapshot;
        False when the table was rewritten meanwhile, and the snapshot is then removed: a purge may
        have taken away what it holds, and removed the snapshot before this one was saved. Raises
        OSError when it cannot be written."""
        snapshots.write(path, rows, position, memory, table.embedder)
        if table.latest_generation() != position.generation:
            snapshots.remove(self.home, name)
            return False
        return True
