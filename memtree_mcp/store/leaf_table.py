"""LanceDB's indexes over one namespace's live memories: where recall finds its shortlist at scale.

The namespace's own table (``store/table.py``) is a log: every revision of every node, leaves and
branches alike, which no vector index can serve (it would return stale revisions). This table
holds one row per live memory (its id, order, time, session and vector as a fixed-size list of
float32, never its text) with an IVF_RQ vector index and a BTree index on the id, so that recall
asks LanceDB for the few hundred memories nearest a query instead of multiplying the query with
every memory (``core/ranking/shortlist.py``).

It is derived and never the only copy of anything: :meth:`LeafTable.sync` brings it to a set of
live memories (adding the missing, deleting the gone), a purge drops it (:meth:`LeafTable.drop`),
and whoever needs it next builds it again from the trees. It lives in a LanceDB database of its
own, ``.indexes`` under the home, so that the namespaces' listing never sees it. Rows added after
the index was built are searched flat by LanceDB until :meth:`LeafTable.maintain` folds them in
(``optimize``, never a rebuild).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from filelock import FileLock, Timeout

from memtree_mcp.core.trees.model import Leaf
from memtree_mcp.store.lance import lance_session

log = logging.getLogger(__name__)

INDEX_DIR = ".indexes"
"""The folder under a home that holds the indexes' database, one table per namespace."""
PARTITION_ROWS = 4_096
"""About this many memories per partition of the IVF index (at least 16 partitions)."""
FOLD_AFTER = 0.05
"""``maintain`` folds the rows added since the index was built into it past this share of the table."""
NPROBES = 24
"""Partitions a search visits (of ``rows / PARTITION_ROWS``)."""
_DELETE_CHUNK = 500


def _quoted(ids: Iterable[str]) -> str:
    return ", ".join("'" + leaf_id.replace("'", "''") + "'" for leaf_id in ids)


class LeafTable:
    """The live memories of namespace ``namespace`` under ``home`` (a local directory), indexed.

    Not thread-safe: one thread of a process syncs and maintains it (``service/indexing.py``);
    searches may run beside it (LanceDB reads a consistent version).
    """

    def __init__(self, home: str, namespace: str, dimension: int) -> None:
        import lancedb

        self.folder = Path(home) / INDEX_DIR
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.namespace = namespace
        self.dimension = dimension
        self._db = lancedb.connect(str(self.folder), session=lance_session())
        self._table: Any = None
        self._reader: Any = None

    @property
    def lock_path(self) -> Path:
        """The file whose lock says which process writes this table (``service/indexing.py``)."""
        return self.folder / f"{self.namespace}.lock"

    @contextlib.contextmanager
    def writing(self) -> Iterator[bool]:
        """Whether this process may write the table now (no other holds its file lock, across the
        processes of the machine), held while inside; False at once when another does."""
        lock = FileLock(str(self.lock_path), mode=0o600)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def schema(self) -> pa.Schema:
        return pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("seq", pa.int64()),
                pa.field("timestamp", pa.float64()),
                pa.field("session", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), self.dimension)),
            ]
        )

    def _open(self, *, create: bool) -> Any:
        if self._table is not None:
            return self._table
        try:
            self._table = self._db.open_table(self.namespace)
        except (FileNotFoundError, ValueError):
            if not create:
                return None
            self._table = self._db.create_table(self.namespace, schema=self.schema(), exist_ok=True)
        if not self._table.schema.equals(self.schema()):
            # Made by another version (or for another embedder's dimension): derived, so rebuilt.
            log.info("the index of namespace %s has another layout: built again", self.namespace)
            self._table = self._db.create_table(self.namespace, schema=self.schema(), mode="overwrite")
        return self._table

    def ids(self) -> set[str]:
        """The ids the table holds now (empty when it does not exist)."""
        table = self._open(create=False)
        if table is None:
            return set()
        table.checkout_latest()
        rows = table.count_rows()
        if not rows:
            return set()
        column = table.search().select(["id"]).limit(rows).to_arrow().column("id")
        return set(column.to_pylist())

    def sync(self, adding: Sequence[Leaf], removing: Collection[str]) -> None:
        """Add the rows of ``adding`` (leaves the table lacks) and delete ``removing`` (ids it holds
        that are no longer live)."""
        table = self._open(create=True)
        for start in range(0, len(adding), 10_000):
            part = adding[start : start + 10_000]
            vectors = np.stack([np.asarray(leaf.vector, dtype=np.float32) for leaf in part])
            data = pa.table(
                {
                    "id": [leaf.id for leaf in part],
                    "seq": [leaf.seq for leaf in part],
                    "timestamp": [leaf.timestamp for leaf in part],
                    "session": [leaf.session for leaf in part],
                    "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), self.dimension),
                },
                schema=self.schema(),
            )
            table.add(data)
        gone = sorted(removing)
        for start in range(0, len(gone), _DELETE_CHUNK):
            table.delete(f"id IN ({_quoted(gone[start : start + _DELETE_CHUNK])})")
        if adding or gone:
            self._reader = None  # searches open the table again, at the version just written

    def indexed(self) -> bool:
        """Whether the vector index exists (searches before it scan every row)."""
        table = self._open(create=False)
        return table is not None and any(index.columns == ["vector"] for index in table.list_indices())

    def maintain(self, *, keep: float) -> str:
        """Build the vector index when there is none, else fold new rows into it when they are more
        than :data:`FOLD_AFTER` of the table; old versions older than ``keep`` seconds go at each
        fold. Returns what was done (``built``, ``folded`` or ``nothing``)."""
        from lancedb.index import BTree, IvfRq

        table = self._open(create=False)
        if table is None:
            return "nothing"
        rows = table.count_rows()
        if not rows:
            return "nothing"
        names = {index.name: index for index in table.list_indices()}
        if not any(index.columns == ["vector"] for index in names.values()):
            started = time.perf_counter()
            # No more partitions than rows: LanceDB trains no more and warns on standard error.
            partitions = min(rows, max(16, rows // PARTITION_ROWS))
            vectors = IvfRq(distance_type="dot", num_partitions=partitions)
            table.create_index("vector", config=vectors, replace=True)
            table.create_index("id", config=BTree(), replace=True)
            self._reader = None
            log.info(
                "indexed the %d memories of namespace %s in %.1f s",
                rows,
                self.namespace,
                time.perf_counter() - started,
            )
            return "built"
        stats = table.index_stats("vector_idx")
        if stats is None or stats.num_unindexed_rows <= FOLD_AFTER * rows:
            return "nothing"
        table.optimize(cleanup_older_than=timedelta(seconds=keep))
        self._reader = None
        return "folded"

    def search(self, vectors: Sequence[np.ndarray], k: int) -> list[str]:
        """The ids of the ``k`` rows nearest each of ``vectors`` by the index's estimate of the dot
        product (the caller computes the exact one), all of them.

        The table is read as it was when this handle opened it (after the last :meth:`sync` of this
        object): what was written since, the caller knows to score itself (``service/indexing.py``),
        and a fresh look at the table's latest version would cost a read of its manifest per search.
        """
        if self._reader is None:
            try:  # a handle of its own: the syncing thread writes through the other one
                self._reader = self._db.open_table(self.namespace)
            except (FileNotFoundError, ValueError):
                return []
        found: list[str] = []
        for vector in vectors:
            query = self._reader.search(np.asarray(vector, dtype=np.float32), vector_column_name="vector")
            # The distance named: LanceDB warns on every search that leaves it out.
            query = query.distance_type("dot").select(["id", "_distance"]).limit(k).nprobes(NPROBES)
            found.extend(query.to_arrow().column("id").to_pylist())
        return found

    def drop(self, *, wait: float = 0.0) -> None:
        """Delete the table and every file of it (a purge: it may hold the vectors of forgotten
        memories), once no process writes it (at most ``wait`` seconds: a sync under way ends
        first), or anyway."""
        lock = FileLock(str(self.lock_path), mode=0o600)
        try:
            lock.acquire(timeout=wait)
            held = True
        except Timeout:
            log.warning("the index of %s was being written for %.0f s: dropped anyway", self.namespace, wait)
            held = False
        try:
            self._table = self._reader = None
            with contextlib.suppress(FileNotFoundError, ValueError):
                self._db.drop_table(self.namespace)
            leftover = self.folder / f"{self.namespace}.lance"
            if leftover.exists():  # a table LanceDB no longer knows, half written
                for path in sorted(leftover.rglob("*"), reverse=True):
                    path.unlink() if path.is_file() else path.rmdir()
                leftover.rmdir()
        finally:
            if held:
                lock.release()
