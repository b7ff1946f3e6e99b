"""Snapshots of a namespace as loaded, so that a new process opens it without reading it whole.

A whole read of a namespace reads its whole table (every superseded revision too, several rows
for each live one), keeps each id's latest row, then ``Memory.load`` tokenizes every text for BM25
and derives every branch's vector from its leaves: the costliest steps of opening a namespace
(``docs/findings/start-up.md``). A snapshot keeps the result of that work next to the table:

- each id's latest row (deletions included), in the table's own layout, at a table version;
- each branch's derived vector and cohesion;
- the BM25 index: each leaf's slot, terms and frequencies (the terms dictionary-encoded).

It is one Arrow IPC file (``<home>/.snapshots/<namespace>.arrow``) followed by a trailer that holds
its CRC-32, written to a temporary file and renamed over the old one, so a reader sees a
whole snapshot or none. It is never trusted on its own:

- a file that is missing, truncated, fails its checksum, or was written for another embedder,
  dimension or format is ignored (logged), and the namespace is read whole, which writes a new one;
- the terms are kept only if ``core/indexes/lexical.py`` is the same file that tokenized them (its hash);
- its rows must be what the table's rows up to its position give (:func:`disagreement`): each id's
  latest revision, kind and sequence number, read from four narrow columns of the table (16 ms
  for 59k rows, where a whole read takes 360 ms). A checksum is no proof of content: a snapshot
  written whole but with rows dropped made a namespace read as empty, and the next remember built
  its trees on nothing (issue 31);
- the table itself says whether the snapshot still describes it: the snapshot records where its
  whole read stood (:class:`~memtree_mcp.store.table.Position`: the generation, row count, last
  revision and last row), and :meth:`NamespaceTable.changes` takes the rows appended since, checking
  that the last row seen is still at its offset and every new row is newer; anything else (a
  squash, a purge, a re-index, an upgrade: another generation) means a whole read.

The table stays the source of truth: a snapshot is only ever a faster way to the state a whole
read gives, and the tests compare the two. Forgotten text: a snapshot holds each id's latest row,
so once written after a forget it holds none of the forgotten text; one written before it is
deleted by the purge that deletes the table's old versions (``Spaces.purge``), and so is every
temporary file a killed write left behind.

This module reads and writes the file; opening a namespace from it is ``store/opening.py``.

Object-store homes (``s3://``) keep no snapshot: it would be one more object to fetch whole.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import logging
import mmap
import os
import stat
import struct
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memtree_mcp.core.indexes import lexical as lexical_module
from memtree_mcp.core.indexes.lexical import LexicalIndex
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.model import Branch
from memtree_mcp.host.mapping import MappedFile, can_share, release, start_of
from memtree_mcp.store.arrow import latest_positions, one_array, rows_at
from memtree_mcp.store.fences import NO_FENCE, unfenced
from memtree_mcp.store.migrations import as_current
from memtree_mcp.store.rows import DELETED
from memtree_mcp.store.table import OUTLINE, Position

log = logging.getLogger("memtree_mcp")

# 2: the rows hold the temporal tree by sessions and periods (schema 5); a snapshot of format 1 may
# hold the temporal tree of schema 4, which the table's own rows no longer give, so it is not used.
# 3: the lexical index splits Chinese and Japanese into character pairs; a snapshot of format 2
# holds such a memory as one word, so it is not used either.
FORMAT = "3"
# A snapshot's temporary file untouched this long (seconds) belongs to a write that was killed.
ABANDONED_AFTER = 600.0
# Tables of fewer rows are read whole, which is quick at that size, and keep no snapshot.
SMALLEST = 2_000
# A snapshot further behind its table than this many rows, or a quarter of its own, is read whole
# instead of followed (and saved anew): following applies each row's node one by one.
FOLLOW_AT_MOST = 20_000
# A snapshot larger than this (bytes) that takes less than half its size on disk is refused unread.
SPARSE_ABOVE = 1 << 20
# Snapshots larger than this (bytes) have their checksum verified on two cores.
SPLIT_ABOVE = 32 << 20
MAGIC = b"MTSNAP\x00\x01"
# After the Arrow file: the magic, the Arrow file's length and its CRC-32.
TRAILER = struct.Struct("<8sQI")
# The columns a snapshot adds to the table's own.
DERIVED = "snapshot_vector"
COHESION = "snapshot_cohesion"
SLOT = "snapshot_slot"
TERMS = "snapshot_terms"
FREQUENCIES = "snapshot_tfs"
ADDED = (DERIVED, COHESION, SLOT, TERMS, FREQUENCIES)


@dataclass(slots=True)
class Saved:
    """A snapshot read back: the table's rows (each id's latest) and where they stood, each
    branch's derived vector and cohesion by id, and the BM25 index (None when it cannot be used)."""

    rows: pa.Table
    position: Position
    vectors: dict[str, tuple[np.ndarray, float]]
    lexical: LexicalIndex | None
    # The file, still open, and where its mapping begins in memory: for leaf_room.
    source: MappedFile | None = None
    mapping: mmap.mmap | None = None
    base: int = 0

    def close(self) -> None:
        """Close the file (what was read from it stays readable: the mapping lives on), and let
        go of the pages reading it made resident: what the memory keeps of it (the branches'
        vectors) is read again from the page cache when used, the rest was copied out."""
        if self.source is not None:
            self.source.close()
            self.source = None
        if self.mapping is not None:
            release(self.mapping)
            self.mapping = None

    def identity(self) -> tuple[int, int] | None:
        """The file this snapshot was read from (device, inode), while it is open."""
        if self.source is None:
            return None
        return self.source.stat.st_dev, self.source.stat.st_ino

    def leaf_room(self, vectors: np.ndarray, capacity: int) -> np.ndarray | None:
        """A writable matrix of ``capacity`` rows whose first rows are ``vectors`` (a read-only
        view of this snapshot's leaf vectors), for the leaf index to keep as its own: those rows
        are the file's pages mapped copy-on-write (shared with every process that maps them,
        resident only once read, private only once written), the rest zeroed memory to grow into
        (``host/mapping.py``). None when ``vectors`` is not a view of the file, or the system
        cannot map it so: the caller copies them, as before.
        """
        if (
            self.source is None
            or vectors.ndim != 2
            or not vectors.flags.c_contiguous
            or len(vectors) > capacity
        ):
            return None
        offset = vectors.__array_interface__["data"][0] - self.base
        length = vectors.nbytes
        if offset < 0 or offset + length > self.source.stat.st_size:
            return None
        row = vectors.shape[1] * vectors.itemsize
        region = self.source.private_rows(offset, length, capacity * row)
        if region is None:
            return None
        matrix = np.frombuffer(
            region, dtype=vectors.dtype, count=capacity * vectors.shape[1], offset=start_of(offset)
        )
        return matrix.reshape(capacity, vectors.shape[1])

    def give_vectors(self, branches: list[Branch]) -> None:
        """Give each of ``branches`` its saved vector and cohesion; one without a saved vector
        (none was derived: it has no leaves) keeps None, and ``Memory.load`` derives them all
        again if that leaves any branch with children and no vector."""
        for branch in branches:
            saved = self.vectors.get(branch.id)
            if saved is not None:
                branch.vector, branch.cohesion = saved


def path_of(home: str, namespace: str) -> Path | None:
    """Where namespace ``namespace``'s snapshot lives; None for an object-store home."""
    if "://" in home:
        return None
    return Path(home) / ".snapshots" / f"{namespace}.arrow"


def remove(home: str, namespace: str) -> None:
    """Delete namespace ``namespace``'s snapshot, if there is one, and every temporary file of a
    write of it: one left by a process killed while it saved holds memory text too, and a purge
    must leave none (a write under way in another process then fails to rename its file, logs it,
    and the next whole read saves the snapshot anew)."""
    path = path_of(home, namespace)
    if path is None:
        return
    path.unlink(missing_ok=True)
    for stray in _temporaries(path):
        with contextlib.suppress(FileNotFoundError):
            stray.unlink()


def _temporaries(path: Path) -> list[Path]:
    """The temporary files of writes of the snapshot at ``path``, finished or not."""
    if not path.parent.is_dir():
        return []
    return list(path.parent.glob(f".{glob.escape(path.name)}.*.tmp"))


@cache
def lexical_fingerprint() -> str:
    """A hash of the tokenizer's source: terms saved by other code are tokenized again.

    The tokenizer is what ``core/indexes/lexical.py`` holds before :class:`LexicalIndex` (its
    rules, word lists and functions); a change to the index below it (how postings are held)
    leaves the terms a snapshot saved as they were, so it does not cost every store a new
    tokenization, nor two versions on one home a snapshot saved anew at each start."""
    source = Path(lexical_module.__file__).read_bytes()
    tokenizer, found, _ = source.partition(b"\nclass LexicalIndex")
    return hashlib.sha256(tokenizer if found else source).hexdigest()[:32]


def write(path: Path, rows: pa.Table, position: Position, memory: Memory, embedder: str) -> None:
    """Save ``memory``, just loaded from ``rows`` (each id's latest row at ``position``), as the
    snapshot at ``path``. Raises OSError when it cannot be written (nothing is left half-written).

    The rows are kept leaves first, in seq order, then branches, then deletions: a reader takes
    the leaves' and the branches' rows, and the leaves' vectors end to end, without gathering them
    row by row (``store/arrow.py``).
    """
    try:
        _write(path, rows, position, memory, embedder)
    finally:
        # The rows put in that order are a copy in Arrow's pool, which keeps freed pages: given
        # back, or a server that read its table whole would keep them resident.
        pa.default_memory_pool().release_unused()


def _write(path: Path, rows: pa.Table, position: Position, memory: Memory, embedder: str) -> None:
    kinds = rows.column("kind")
    leaf = pc.equal(kinds, "leaf").to_numpy(zero_copy_only=False)
    deleted = pc.equal(kinds, DELETED).to_numpy(zero_copy_only=False)
    leaves = np.flatnonzero(leaf)
    seqs = rows.column("first_seq").take(pa.array(leaves)).to_numpy(zero_copy_only=False)
    order = np.concatenate(
        [leaves[np.argsort(seqs, kind="stable")], np.flatnonzero(~leaf & ~deleted), np.flatnonzero(deleted)]
    )
    if not np.array_equal(order, np.arange(rows.num_rows)):
        rows = rows.take(pa.array(order))
    n = rows.num_rows
    dimension = memory.dimension
    ids = rows.column("id").to_pylist()
    cohesion = np.zeros(n, dtype=np.float64)
    has_vector = np.zeros(n, dtype=bool)
    vectors: list[np.ndarray] = []  # of the rows with one, in row order
    lexical = memory.lexical
    row_of = {node_id: i for i, node_id in enumerate(ids)}
    for i, node_id in enumerate(ids):
        branch = memory.branch(node_id)
        if branch is not None and branch.vector is not None:
            vectors.append(branch.vector)
            cohesion[i] = branch.cohesion
            has_vector[i] = True
    slots = np.full(n, -1, dtype=np.int64)
    lengths = np.zeros(n, dtype=np.int64)
    by_row: dict[int, tuple[tuple[str, ...], tuple[int, ...]]] = {}
    for slot, doc_id, terms, tfs in lexical.documents():
        i = row_of[doc_id]
        slots[i] = slot
        lengths[i] = len(terms)
        by_row[i] = (terms, tfs)
    code_of: dict[str, int] = {}
    codes: list[int] = []
    frequencies: list[int] = []
    for i in range(n):
        terms, tfs = by_row.get(i, ((), ()))
        codes.extend(code_of.setdefault(term, len(code_of)) for term in terms)
        frequencies.extend(tfs)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]), pa.int32())
    words = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(list(code_of), pa.string()))
    # A list per row, empty and null where there is no vector, so that only branches take room.
    ends = np.concatenate([[0], np.cumsum(has_vector * dimension)])
    table = rows.append_column(
        DERIVED,
        pa.ListArray.from_arrays(
            pa.array(ends, pa.int32()),
            pa.array(np.concatenate(vectors) if vectors else np.zeros(0, np.float32)),
            mask=pa.array(~has_vector),
        ),
    )
    table = table.append_column(COHESION, pa.array(cohesion, mask=~has_vector))
    table = table.append_column(SLOT, pa.array(slots, mask=slots < 0))
    table = table.append_column(TERMS, pa.ListArray.from_arrays(offsets, words))
    table = table.append_column(
        FREQUENCIES, pa.ListArray.from_arrays(offsets, pa.array(frequencies, pa.int32()))
    )
    meta = {
        b"memtree.snapshot": FORMAT.encode(),
        b"memtree.embedder": embedder.encode(),
        b"memtree.dimension": str(dimension).encode(),
        b"memtree.generation": position.generation,
        b"memtree.version": str(position.version).encode(),
        b"memtree.rows": str(position.rows).encode(),
        b"memtree.rev": str(position.rev).encode(),
        b"memtree.last_id": (position.last[0] if position.last else "").encode(),
        b"memtree.last_rev": str(position.last[1] if position.last else -1).encode(),
        b"memtree.fenced": str(position.fenced).encode(),
        b"memtree.lexical": lexical_fingerprint().encode(),
        b"memtree.lexical_capacity": str(lexical.capacity).encode(),
    }
    table = table.replace_schema_metadata(meta)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _remove_abandoned(path)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # Streamed to the file, summed on the way, not built in memory first (it is about as big
        # as the file). Not synced: a file cut short by a crash fails its checksum and is ignored.
        with os.fdopen(fd, "wb") as out:
            summed = _Summed(out)
            with pa.PythonFile(summed, mode="w") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            out.write(TRAILER.pack(MAGIC, summed.size, summed.crc))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _remove_abandoned(path: Path) -> None:
    """Delete the temporary files of earlier writes of ``path`` that were cut short and left
    behind (a process killed while writing: a server's client may kill it while it saves at
    stop), once they are old enough that no write can still be under way (one untouched for
    ABANDONED_AFTER seconds is dead)."""
    now = time.time()
    for stray in _temporaries(path):
        with contextlib.suppress(OSError):  # gone already, or not ours to delete
            if now - stray.stat().st_mtime > ABANDONED_AFTER:
                stray.unlink()


class _Summed:
    """A file that keeps the CRC-32 and the length of what is written to it."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.crc = 0
        self.size = 0
        self.closed = False

    def write(self, data: bytes) -> int:
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)
        return self.out.write(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self.out.flush()

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True  # the caller closes the file itself, after the trailer


def read(
    path: Path, embedder: str, dimension: int, *, rows_only: bool = False, lexical: bool = True
) -> Saved | None:
    """The snapshot at ``path``, or None when there is none or it cannot be used (logged): not
    whole, not this format, another embedder or dimension, or rows that do not hold together.

    ``rows_only``: only the rows and their position (no vectors, no BM25 index), for
    ``SnapshotKeeper.refresh`` in a process that already holds the memory. ``lexical=False``:
    without the BM25 index (``Saved.lexical`` None), for a process that holds its own.

    The file is memory-mapped, not read into memory: its pages stay the page cache's. The
    branches' vectors are kept as views of the mapping, and :meth:`Saved.leaf_room` maps the
    leaves' for the leaf index, so a process holds neither privately and processes that open the
    same snapshot share them; the rest is copied out. A snapshot is never changed in place, only
    replaced (:func:`write`), so a mapping always sees one whole file. The file stays open until
    :meth:`Saved.close` (``rows_only``: closed at once).
    """
    try:
        found = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return _unusable(path, exc.strerror or str(exc))
    if not stat.S_ISREG(found.st_mode):
        # Opening a FIFO waits for a writer: the namespace never opened (issue 31).
        return _unusable(path, "it is not a regular file")
    if found.st_size > SPARSE_ABOVE and found.st_blocks * 512 < found.st_size // 2:
        # Most of it was never written: not a file this module wrote, however plausible its trailer
        # (an 8 GiB one was checksummed whole first, for 45 s).
        return _unusable(path, "it is a sparse file")
    try:
        source = MappedFile(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return _unusable(path, exc.strerror or str(exc))
    saved = None
    try:
        saved = _mapped(path, source, embedder, dimension, rows_only=rows_only, lexical=lexical)
    finally:
        if saved is None or saved.source is None:
            source.close()
    return saved


def _mapped(
    path: Path, source: MappedFile, embedder: str, dimension: int, *, rows_only: bool, lexical: bool
) -> Saved | None:
    if not stat.S_ISREG(source.stat.st_mode):
        return _unusable(path, "it is not a regular file")
    if source.stat.st_size < TRAILER.size:
        return _unusable(path, "it is shorter than its trailer")
    try:
        # Summed through a mapping of its own, dropped after: every page it reads leaves this
        # process with it. What is kept is read through the other, where a page is resident only
        # once read (the leaves' and branches' vectors stay in the page cache until used).
        summing = source.whole()
        mapping = source.whole()
        whole = pa.py_buffer(mapping)
    except (OSError, ValueError) as exc:
        return _unusable(path, str(exc))
    magic, size, crc = TRAILER.unpack_from(summing, len(summing) - TRAILER.size)
    if magic != MAGIC:
        return _unusable(path, "it is not a snapshot of this format")
    if size != len(summing) - TRAILER.size:
        return _unusable(path, "its length is not the one its trailer records")
    matches = checksum(memoryview(summing)[:size]) == crc
    del summing
    if not matches:
        return _unusable(path, "its checksum does not match")
    try:
        table = pa.ipc.open_file(whole.slice(0, size)).read_all()
        saved = _saved(table, embedder, dimension, rows_only=rows_only, lexical=lexical)
    except Exception as exc:  # whatever its metadata or rows hold: one line, the table is exact
        return _unusable(path, f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
    if saved is not None and not rows_only:
        saved.source, saved.mapping, saved.base = source, mapping, whole.address
    return saved


def _saved(
    table: pa.Table, embedder: str, dimension: int, *, rows_only: bool = False, lexical: bool = True
) -> Saved | None:
    meta = table.schema.metadata or {}
    if meta.get(b"memtree.snapshot") != FORMAT.encode():
        raise ValueError("another snapshot format")
    if meta.get(b"memtree.embedder") != embedder.encode() or int(meta[b"memtree.dimension"]) != dimension:
        raise ValueError("it was written for another embedder")
    last_id = meta[b"memtree.last_id"].decode()
    last_rev = int(meta[b"memtree.last_rev"])
    position = Position(
        generation=meta[b"memtree.generation"],
        version=int(meta[b"memtree.version"]),
        rows=int(meta[b"memtree.rows"]),
        rev=int(meta[b"memtree.rev"]),
        last=(last_id, last_rev) if last_rev >= 0 else None,
        # Snapshots from before commit markers: no fence was among their rows.
        fenced=int(meta.get(b"memtree.fenced", str(NO_FENCE).encode())),
    )
    # Rows of a table not yet upgraded to the current schema version are read in the current
    # layout, as the table's own are (``store/migrations.py``).
    rows = as_current(
        table.drop_columns(list(ADDED)).replace_schema_metadata({b"memtree.generation": position.generation})
    )
    if rows_only:
        return Saved(rows=rows, position=position, vectors={}, lexical=None)
    kinds = table.column("kind")
    is_branch = pc.and_(pc.not_equal(kinds, "leaf"), pc.not_equal(kinds, DELETED))
    derived = one_array(table.column(DERIVED))
    has_vector = pc.and_(is_branch, pc.is_valid(derived)).to_numpy(zero_copy_only=False)
    where = np.flatnonzero(has_vector)
    starts = derived.offsets.to_numpy()[where]
    if np.any(pc.list_value_length(derived).to_numpy(zero_copy_only=False)[where] != dimension) or np.any(
        starts % dimension
    ):
        raise ValueError(f"a saved vector is not {dimension} values")
    values = derived.values.to_numpy(zero_copy_only=False)
    stored = values[: len(values) - len(values) % dimension].reshape(-1, dimension)
    first = int(starts[0]) // dimension if len(starts) else 0
    if can_share() and np.array_equal(starts // dimension, np.arange(first, first + len(starts))):
        # As written (the branches' vectors end to end): views of the file's mapping, so that a
        # process holds none of them privately, and only those it reads become resident.
        matrix = stored[first : first + len(starts)]
    else:
        matrix = stored[starts // dimension]
    cohesions = one_array(table.column(COHESION)).to_numpy(zero_copy_only=False)[where].tolist()
    branch_ids = table.column("id").take(pa.array(where)).to_pylist()
    vectors = dict(zip(branch_ids, zip(matrix, cohesions, strict=True), strict=True))
    index = None
    if lexical and meta.get(b"memtree.lexical") == lexical_fingerprint().encode():
        capacity = int(meta[b"memtree.lexical_capacity"])
        # Slots grow by doubling, never past twice the nodes ever indexed: a larger number would
        # have the index allocate it (1e12 of them: 931 GiB, and the namespace failed to open).
        if not 0 <= capacity <= 2 * table.num_rows + 1024:
            raise ValueError(f"its BM25 index claims {capacity:,} slots for {table.num_rows:,} rows")
        index = _lexical(table, capacity)
    return Saved(rows=rows, position=position, vectors=vectors, lexical=index)


def _lexical(table: pa.Table, capacity: int) -> LexicalIndex:
    slots = one_array(table.column(SLOT))
    # The leaves' rows, which lie together (leaves first): sliced, not gathered into copies.
    part = rows_at(
        table.select(["id", SLOT, TERMS, FREQUENCIES]),
        np.flatnonzero(pc.is_valid(slots).to_numpy(zero_copy_only=False)),
    )
    terms, tfs = one_array(part.column(TERMS)), one_array(part.column(FREQUENCIES))
    lengths = pc.list_value_length(terms).to_numpy(zero_copy_only=False)
    if int(lengths.sum()) != (pc.sum(pc.list_value_length(table.column(TERMS))).as_py() or 0):
        raise ValueError("terms stored for a row that is not indexed")
    words = terms.flatten()
    return LexicalIndex.restored(
        part.column("id").to_pylist(),
        one_array(part.column(SLOT)).to_numpy(zero_copy_only=False),
        np.concatenate([[0], np.cumsum(lengths)]),
        words.indices.to_numpy(zero_copy_only=False),
        tfs.flatten().to_numpy(zero_copy_only=False),
        words.dictionary.to_pylist(),
        capacity,
    )


def checksum(data: memoryview) -> int:
    """``zlib.crc32(data)``, its second half summed on another core when ``data`` is large
    (zlib lets go of the interpreter while it sums, so the two halves are summed at once)."""
    if len(data) < SPLIT_ABOVE:
        return zlib.crc32(data)
    half = len(data) // 2
    second: list[int] = []
    worker = threading.Thread(target=lambda: second.append(zlib.crc32(data[half:])), name="snapshot-crc")
    worker.start()
    first = zlib.crc32(data[:half])
    worker.join()
    return crc32_combine(first, second[0], len(data) - half)


def crc32_combine(first: int, second: int, second_length: int) -> int:
    """The CRC-32 of two byte strings joined, from the CRC-32 of each and the second's length
    (zlib's ``crc32_combine``, which Python's zlib does not offer): the first's CRC is carried
    through ``second_length`` zero bytes by squaring a matrix over GF(2), then added."""
    if second_length <= 0:
        return first  # the CRC of nothing is 0
    one_bit = [0xEDB88320, *(1 << n for n in range(31))]  # the CRC carried through one zero bit
    zeros = _gf2_square(_gf2_square(one_bit))  # through four
    crc, length = first, second_length
    while length:
        zeros = _gf2_square(zeros)  # 1, 2, 4 ... zero bytes: the length's next bit
        if length & 1:
            crc = _gf2_times(zeros, crc)
        length >>= 1
    return crc ^ second


def _gf2_times(matrix: list[int], vector: int) -> int:
    total, row = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[row]
        vector >>= 1
        row += 1
    return total


def _gf2_square(matrix: list[int]) -> list[int]:
    return [_gf2_times(matrix, column) for column in matrix]


def disagreement(rows: pa.Table, position: Position, outline: pa.Table) -> str | None:
    """Why ``rows`` (a snapshot's: each id's latest row at ``position``) are not what the table
    gives there, from ``outline`` (:meth:`NamespaceTable.outline`, the table now); None when they
    are. The table's first ``position.rows`` rows are those the snapshot was read from (appends go
    after them, and compaction keeps their order); the commits that do not count in them
    (``store/fences.py``) and the commit markers are left out, as a whole read leaves them out."""
    upto = outline.slice(0, position.rows)
    newest = pc.max(upto.column("rev")).as_py() if upto.num_rows else -1
    if upto.num_rows != position.rows or newest != max(position.rev, -1):
        return f"the table's first {position.rows} rows are not those it read (up to revision {position.rev})"
    upto = unfenced(upto)
    table = _by_id(upto.take(pa.array(latest_positions(upto)[0])))
    saved = _by_id(rows.select(list(OUTLINE)))
    if table.num_rows != saved.num_rows:
        return f"it holds {saved.num_rows} nodes where the table holds {table.num_rows}"
    for column in OUTLINE:
        if not table.column(column).equals(saved.column(column).cast(table.column(column).type)):
            return f"its {column} column differs from the table's"
    return None


def _by_id(rows: pa.Table) -> pa.Table:
    return rows.take(pc.sort_indices(rows, sort_keys=[("id", "ascending")])).combine_chunks()


def _unusable(path: Path, why: str) -> Saved | None:
    """None, after saying why the snapshot at ``path`` is not used."""
    log.warning("ignoring the snapshot %s (%s); reading the namespace whole", path, why)
    return None
