"""Namespace spaces: each namespace's trees in memory, kept in step with its table on disk.

A :class:`Space` holds one namespace's :class:`~memtree_mcp.core.memory.Memory`, its table and the
table version the memory reflects. :class:`Spaces` owns them all and is the only place that

- opens the store (lazily: lancedb loads on the first call, never before the MCP handshake);
- follows other processes: before every read or write it looks at the table's latest version and,
  when someone else committed, applies what they wrote (the revisions appended since, read with
  :meth:`NamespaceTable.changes` and applied with :meth:`Memory.apply`); it reads the table whole
  only when it was rewritten. Measured with two stdio servers on one store of 10k memories
  (``bench/multiclient.py``): reading the table whole after every foreign ``remember`` made the
  next recall cost 1.5 s, 45x a quiet one; following, 66 ms, 1.7x;
- serialises writers: a per-namespace file lock across processes (and the space's own lock
  across threads);
- commits: a write's changed and removed nodes go to the table in one commit (:meth:`Spaces.change`),
  and when anything fails the memory is reloaded from the table, which still holds the previous
  version; no half-change stays in RAM or on disk.

It knows nothing of LLMs: a part that must hear about loads (refinement picks up the branches
still waiting for a summary) registers ``on_load``.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs
from filelock import FileLock

from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.core.memory import Memory
from memtree_mcp.errors import EmbedderMismatch, StoreError

if TYPE_CHECKING:
    from memtree_mcp.store.lance import LanceStore, NamespaceTable

log = logging.getLogger("memtree_mcp")


@dataclass
class ChangeSet:
    """The nodes one write changed and removed, committed together; ``now`` stamps their rows."""

    changed: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    now: float = field(default_factory=time.time)


@dataclass
class Space:
    """A namespace's in-memory state and the table version it reflects."""

    name: str
    memory: Memory
    table: NamespaceTable
    version: int = -1
    lock: threading.RLock = field(default_factory=threading.RLock)


def trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc only; elsewhere nothing).

    A whole read builds and drops hundreds of megabytes of Arrow tables and Python lists at 100k
    memories; glibc keeps most of that freed memory in its arenas, so the resident size after a
    load was that of its peak. Measured after a load of 10k memories: 509 MB resident, 427 MB
    after the trim.
    """
    if sys.platform != "linux":
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        pass


class Spaces:
    """Every namespace this process has opened, over one store. Thread-safe."""

    def __init__(self, settings: Settings, embedder: Callable[[], Embedder]) -> None:
        """``embedder`` gives the configured embedder (loaded on first use by the caller)."""
        self.settings = settings
        self._embedder = embedder
        self._store: LanceStore | None = None
        self._spaces: dict[str, Space] = {}
        self._lock = threading.RLock()
        self.on_load: Callable[[Space], None] | None = None

    def __contains__(self, name: object) -> bool:
        """Whether namespace ``name`` is open in this process."""
        with self._lock:
            return name in self._spaces

    def __getitem__(self, name: str) -> Space:
        """The open space of namespace ``name``; KeyError when it is not open."""
        with self._lock:
            return self._spaces[name]

    @property
    def store(self) -> LanceStore:
        """The LanceDB store of MEMTREE_HOME, opened on first use."""
        embedder = self._embedder()
        with self._lock:
            if self._store is None:
                from memtree_mcp.store.lance import LanceStore, home_error, object_store_options

                home = self.settings.home
                options = object_store_options(
                    home,
                    endpoint=self.settings.s3_endpoint,
                    region=self.settings.s3_region,
                    allow_http=self.settings.s3_allow_http,
                )
                try:
                    self._store = LanceStore(home, embedder.identity, embedder.dimension, options)
                except OSError as exc:  # the directory could not be created
                    raise home_error(home, exc, "create") from exc
            return self._store

    def get(self, name: str, *, create: bool) -> Space | None:
        """The space of namespace ``name``, opening its table; None when it has none and not ``create``.

        Raises EmbedderMismatch for a table built with another embedder.
        """
        with self._lock:
            space = self._spaces.get(name)
        if space is not None:
            return space
        table = self.store.open(name, create=create)
        if table is None:
            return None
        with self._lock:
            space = self._spaces.get(name)
            if space is None:
                space = Space(name=name, memory=Memory(self._embedder().dimension), table=table)
                self._spaces[name] = space
        return space

    @contextmanager
    def reading(self, name: str) -> Iterator[Space | None]:
        """The up-to-date space of ``name`` (None when it holds nothing yet), while no writer of this
        process changes it."""
        space = self.get(name, create=False)
        if space is None:
            yield None
            return
        with space.lock:
            self.follow(space)
            yield space

    @contextmanager
    def writing(self, name: str, *, create: bool = True) -> Iterator[Space | None]:
        """The up-to-date space of ``name`` while this thread alone may write it, in any process.

        Yields None when the namespace has no table and ``create`` is false.
        """
        space = self.get(name, create=create)
        if space is None:
            yield None
            return
        with space.lock, self.file_lock(name):
            if space.table.outdated:
                # Written by an older memtree-mcp: rewritten in the current layout before any write.
                space.table.upgrade()
            self.follow(space)
            yield space

    @contextmanager
    def change(self, space: Space) -> Iterator[ChangeSet]:
        """One write to ``space``: the caller changes ``space.memory`` and records in the yielded
        change set which nodes it changed and removed; on leaving, they are committed at once.

        Use it inside :meth:`writing`. If anything fails, before or during the commit, the memory is
        reloaded from the table, which kept its previous version, and the error is raised again
        (StoreError when the commit itself failed).
        """
        change = ChangeSet()
        try:
            yield change
            if change.changed or change.removed:
                space.version = space.table.commit(
                    space.memory, change.changed - change.removed, change.removed, change.now
                )
        except BaseException:
            self.reload(space)
            raise

    def follow(self, space: Space) -> None:
        """Bring ``space`` up to the latest version of its table if another process committed since.

        Only what was committed since is read and applied, in time proportional to it; the table is
        read whole when that cannot be done (it was rewritten, or never read). The refinement
        hears only of whole reads (``on_load``): the process that wrote a change hands its
        branches to its own worker.
        """
        if space.table.latest_version() == space.version:
            return
        started = time.perf_counter()
        changes = space.table.changes() if space.version >= 0 else None
        if changes is None:
            self.reload(space)
            return
        try:
            space.memory.apply(changes.leaves, changes.branches, changes.removed)
        except Exception:
            # Rows that do not fit the memory held (a bug, or a store changed by hand): what the
            # table holds is still exact, so read it whole rather than keep a half-applied change.
            log.exception("could not apply the changes to namespace %s; reading it whole", space.name)
            self.reload(space)
            return
        space.version = changes.version
        log.debug(
            "followed namespace %s to version %d (%d leaves, %d branches, %d removed) in %.1f ms",
            space.name,
            changes.version,
            len(changes.leaves),
            len(changes.branches),
            len(changes.removed),
            (time.perf_counter() - started) * 1000,
        )

    def reload(self, space: Space) -> None:
        """Read ``space``'s memory afresh from the latest version of its table."""
        started = time.perf_counter()
        snapshot = space.table.read()
        snapshot_version, leaf_count = snapshot.version, len(snapshot.leaves)
        memory = Memory(self._embedder().dimension)
        memory.load(snapshot.leaves, snapshot.branches)
        del snapshot
        space.memory = memory
        space.version = snapshot_version
        trim_heap()
        if self.on_load is not None:
            self.on_load(space)
        log.debug(
            "loaded namespace %s at version %d (%d leaves) in %.0f ms",
            space.name,
            snapshot_version,
            leaf_count,
            (time.perf_counter() - started) * 1000,
        )

    def restore(self, space: Space, version: int) -> int:
        """Make ``version`` the latest content of ``space``'s table (a new version) and reload it.

        A version from before a re-index needs its own embedder: the space is then dropped, and
        opening it again says so (EmbedderMismatch).
        """
        try:
            latest = space.table.restore(version)
        finally:
            try:
                self.reload(space)
            except EmbedderMismatch:
                self.drop(space.name)
        return latest

    def drop(self, name: str) -> None:
        """Forget what this process holds of ``name`` (after its table was rewritten)."""
        with self._lock:
            self._spaces.pop(name, None)

    def close(self) -> None:
        """Release every space and the store; they reopen on next use."""
        with self._lock:
            self._spaces.clear()
            self._store = None

    def file_lock(self, name: str) -> FileLock:
        """The lock writers of namespace ``name`` take, across the processes of this machine."""
        # For an object-store home it cannot live in the store, and it does not reach other
        # machines (docs/deploy.md).
        home = self.settings.home
        if self.settings.lock_dir is not None or "://" in home:
            base = self.settings.lock_dir or platformdirs.user_cache_dir("memtree-mcp", appauthor=False)
            # One folder per store, so two buckets' namespaces of the same name do not share a lock.
            folder = Path(base) / "locks" / hashlib.sha256(home.rstrip("/").encode()).hexdigest()[:16]
        else:
            folder = Path(home) / ".locks"
        path = folder / f"{name}.lock"
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            # Touched here so that a lock file that cannot be written (a read-only file system) is
            # a StoreError naming the setting, not an OSError when the lock is taken.
            path.touch(mode=0o600, exist_ok=True)
        except OSError as exc:
            setting = "MEMTREE_HOME" if folder == Path(home) / ".locks" else "MEMTREE_LOCK_DIR"
            raise StoreError(
                f"cannot write the lock file {path} ({exc.strerror or exc}); "
                f"set {setting} to a directory you can write to"
            ) from exc
        return FileLock(str(path))
