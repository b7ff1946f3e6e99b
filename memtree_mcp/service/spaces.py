"""Namespace spaces: each namespace's trees in memory, kept in step with its table on disk.

A :class:`Space` holds one namespace's :class:`~memtree_mcp.core.memory.Memory`, its table and the
table version the memory reflects. :class:`Spaces` owns them all and is the only place that

- opens the store (lazily: lancedb loads on the first call, never before the MCP handshake), and
  each namespace's memory through it (``store/opening.py``: from its snapshot, or by a whole read);
- follows other processes: before every read or write it looks at the table's latest version and,
  when someone else committed, applies what they wrote (the revisions appended since, read with
  :meth:`NamespaceTable.changes` and applied with :meth:`Memory.apply`), in time proportional to
  what was written rather than to the store (``bench/multiclient.py``); it reads the table whole
  only when it was rewritten (a purge, a squash, a re-index).
  A server also follows in the background (:meth:`Spaces.watch`), so that its next call seldom has
  to, and when it stops it saves a snapshot that has fallen far behind (:meth:`Spaces.close`);
- serialises writers: a per-namespace write lock (``store/locks.py``: a file lock across the processes
  and threads of the machine, and for a bucket home the namespace's lease in the bucket, across
  machines), taken before the space's own lock, so a writer waiting for another process never
  holds up the readers of this one; it gives up after MEMTREE_LOCK_TIMEOUT and names the writer in
  the way. A server that takes a lease over from a stalled or dead holder fences the table first
  (``store/fences.py``), and every commit checks the lease (``NamespaceTable.guard``);
- commits: a write's changed and removed nodes go to the table in one commit (:meth:`Spaces.change`),
  and when anything fails the memory is reloaded from the table, which still holds the previous
  version; no half-change stays in RAM or on disk. A commit counts only if no other writer's came
  between the rows it was built on and it (``store/fences.py``); when one did (two servers that both
  believed they held a bucket's lease), nothing is acknowledged and the write is done again on what
  the other wrote (:func:`on_conflict_again`). The lock and the lease only keep writers from
  colliding: losing them costs a retry, never a memory.

- purges: once a forget is older than MEMTREE_RETENTION, the namespace's table is rewritten so
  that no file holds the forgotten text (checked after each commit and when a read follows the
  table: a comparison of two numbers unless a purge is due).

It knows nothing of LLMs: a part that must hear about loads (refinement picks up the branches
still waiting for a summary) registers ``on_load``.

What concerns each namespace's snapshot file over the process's life (comparing it with the table
after a server opened from it, mapping one saved anew, saving it again) is
``service/snapshots.py``, which Spaces calls.

One module, not several: one object, Spaces, that owns every open namespace with its locks, table,
followers and zone; whatever reads or writes a namespace goes through it.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from memtree_mcp.config import Settings
from memtree_mcp.core.embedding import Embedder
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.calendar import Calendar
from memtree_mcp.core.trees.segmenting import CompatibilityPolicy
from memtree_mcp.errors import LeaseLost, LockTimeout, StoreError, WriteConflict
from memtree_mcp.host.heap import collector_paused, give_back_freed_memory
from memtree_mcp.service.snapshots import SnapshotKeeper
from memtree_mcp.service.zones import Zones
from memtree_mcp.store.locks import FileWriteLock, NamespaceLock, lock_folder

if TYPE_CHECKING:
    from memtree_mcp.store.bucket import BucketLease
    from memtree_mcp.store.lance import LanceStore
    from memtree_mcp.store.opening import Opener, Unchecked
    from memtree_mcp.store.table import NamespaceTable

log = logging.getLogger("memtree_mcp")

# How long a writer that lets readers in (Spaces.let_readers_in) waits for them at most.
READERS_TURN_SECONDS = 1.0
# How often a server looks, in the background, whether another process committed (Spaces.watch).
WATCH_SECONDS = 0.2
# How many times a write is done again when another writer's commit came first, and the longest
# pause before the last try (a random part of it, growing with each try, so two do not meet again).
WRITE_ATTEMPTS = 8
RETRY_PAUSE_SECONDS = 0.4

P = ParamSpec("P")
T = TypeVar("T")


def on_conflict_again(write: Callable[P, T]) -> Callable[P, T]:
    """Decorate a write (a method that takes a namespace with :meth:`Spaces.writing` and commits
    once) so that it is done again, from its start, when its commit did not count because another
    writer's came first (WriteConflict) or the bucket's lease was lost before it (LeaseLost): each
    try reads what the others wrote first. After WRITE_ATTEMPTS tries the last error is raised;
    nothing of any try was acknowledged."""

    @functools.wraps(write)
    def again(*args: P.args, **kwargs: P.kwargs) -> T:
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                return write(*args, **kwargs)
            except (WriteConflict, LeaseLost) as exc:
                if attempt == WRITE_ATTEMPTS:
                    raise
                log.info("%s; writing again (try %d of %d)", exc, attempt + 1, WRITE_ATTEMPTS)
                time.sleep(random.uniform(0, RETRY_PAUSE_SECONDS * attempt / WRITE_ATTEMPTS))
        raise AssertionError("unreachable")

    return again


@dataclass
class ChangeSet:
    """The nodes one write changed and removed, committed together; ``now`` stamps their rows.
    ``rewritten``: stored leaves among ``changed`` whose own record changed (given update links)."""

    changed: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    rewritten: set[str] = field(default_factory=set)
    now: float = field(default_factory=time.time)


@dataclass
class Space:
    """A namespace's in-memory state and the table version it reflects.

    ``lock`` is held by whoever reads or changes ``memory``; ``readers_waiting`` counts the readers
    waiting for it, and ``passed`` (on ``lock``) tells a writer that lets them in that they have.
    """

    name: str
    memory: Memory
    table: NamespaceTable
    version: int = -1
    # The rows of the table the namespace's snapshot stands at (-1: none known).
    snapshot_rows: int = -1
    # The snapshot file the memory's vectors are read from (device, inode; None: it holds its own),
    # and the last file found at the snapshot's path in its place that could not be mapped instead.
    mapped: tuple[int, int] | None = None
    unmappable: tuple[int, int] | None = None
    # The snapshot the memory was opened from, while it is not yet compared with the table
    # (service/snapshots.py: SnapshotKeeper.check).
    unchecked: Unchecked | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    readers_waiting: int = 0
    counting: threading.Lock = field(default_factory=threading.Lock)
    passed: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.passed = threading.Condition(self.lock)


class Spaces:
    """Every namespace this process has opened, over one store. Thread-safe."""

    def __init__(self, settings: Settings, embedder: Callable[[], Embedder]) -> None:
        """``embedder`` gives the configured embedder (loaded on first use by the caller)."""
        self.settings = settings
        self._embedder = embedder
        self._store: LanceStore | None = None
        self._opener: Opener | None = None
        self._spaces: dict[str, Space] = {}
        self._lock = threading.RLock()
        self.on_load: Callable[[Space], None] | None = None
        # Told of each commit (with the ids it removed) and each purge of a namespace (the indexes:
        # service/indexing.py).
        self.on_commit: Callable[[Space, set[str]], None] | None = None
        self.on_purge: Callable[[str], None] | None = None
        self._watcher: threading.Thread | None = None
        self._stop_watching = threading.Event()
        self._bucket: Any = None  # the S3 client of a bucket home's leases (store/bucket.py)
        self._leases: dict[str, BucketLease] = {}
        self.zones = Zones(settings.timezone)
        self.snapshots = SnapshotKeeper(self)

    def new_memory(
        self, temporal_policy: CompatibilityPolicy | None = None, *, calendar: Calendar | None = None
    ) -> Memory:
        """An empty memory for the configured embedder and sessions (MEMTREE_SESSION_GAP), its days
        those of ``calendar`` (by default the zone set for this process)."""
        return Memory(
            self._embedder().dimension,
            temporal_policy=temporal_policy,
            session_gap=self.settings.session_gap,
            calendar=calendar or self.zones.default,
        )

    def set_zone_for(self, name: str, zone: str) -> Calendar:
        """Make ``zone`` the zone set for namespace ``name`` here (:class:`Zones`); a namespace open
        and empty takes it. Returns the zone the namespace counts in. Raises ValueError for an
        unknown zone."""
        calendar = self.zones.set(name, zone)
        with self._lock:
            space = self._spaces.get(name)
        if space is None:
            return calendar
        with space.lock:
            if not space.memory.leaves:  # its first write records the zone set now
                space.memory.temporal.use(calendar)
                space.memory.zone_setting = calendar
            self.zones.tell(name, space.memory)
            return space.memory.calendar

    def calendar_of(self, name: str) -> Calendar:
        """The calendar namespace ``name`` counts its days in and shows its dates by: its stored
        zone's (read up to date first), or the zone set for it while it holds nothing."""
        with self.reading(name) as space:
            return self.zones.of(name) if space is None else space.memory.calendar

    def calendar_seen(self, name: str) -> Calendar:
        """The calendar of namespace ``name`` as this process last read it, without waiting for a
        writer when the namespace is open (else as :meth:`calendar_of`): for reading a recall's time
        filters and showing dates, so that a recall during a long write waits for one turn, not two.
        A zone another process moved a moment ago may show once in the old zone; a memory's own
        timestamps are read with :meth:`calendar_of`."""
        with self._lock:
            space = self._spaces.get(name)
        return self.calendar_of(name) if space is None else space.memory.calendar

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
        """The LanceDB store of MEMTREE_HOME, opened on first use with what opens its namespaces
        (:attr:`opener`): the one place the store's modules are imported, and lancedb and pyarrow
        with them."""
        embedder = self._embedder()
        with self._lock:
            if self._store is None:
                from memtree_mcp.store.lance import LanceStore, home_error, object_store_options
                from memtree_mcp.store.opening import Opener

                home = self.settings.home
                options = object_store_options(
                    home,
                    endpoint=self.settings.s3_endpoint,
                    region=self.settings.s3_region,
                    allow_http=self.settings.s3_allow_http,
                )
                if "://" in home:
                    self._bucket = self._bucket_client(options)
                try:
                    self._store = LanceStore(
                        home, embedder.identity, embedder.dimension, options, history=self.settings.retention
                    )
                except OSError as exc:  # the directory could not be created
                    raise home_error(home, exc, "create") from exc
                self._opener = Opener(home, embedder.dimension, session_gap=self.settings.session_gap)
            return self._store

    def _bucket_client(self, options: dict[str, str]) -> Any:
        """The S3 client of the leases, on the store's endpoint and region; with an endpoint set,
        its credentials go to LanceDB too, which then looks nowhere else. Raises StoreError (one
        line) without a region or credentials."""
        from memtree_mcp.store.bucket import bucket_client, static_credentials

        endpoint = options.get("aws_endpoint")
        client = bucket_client(endpoint, options.get("aws_region"))
        if endpoint and "aws_access_key_id" not in options:
            options.update(static_credentials(client))
        options.setdefault("aws_region", client.meta.region_name)
        return client

    @property
    def opener(self) -> Opener:
        """What opens each namespace's memory from its table (from its snapshot or whole) and keeps
        its snapshot (``store/opening.py``); made with the store, and kept when it closes."""
        if self._opener is None:
            _ = self.store  # opening the store makes the opener
        assert self._opener is not None
        return self._opener

    def latest_version(self, name: str) -> int | None:
        """The newest committed version of namespace ``name``'s table, read afresh without taking
        its lock (None when it has no table): whether anyone committed since a version was read."""
        table = self.store.open(name, create=False)
        return table.latest_version() if table is not None else None

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
                space = Space(name=name, memory=self.new_memory(calendar=self.zones.of(name)), table=table)
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
        with space.counting:
            space.readers_waiting += 1
        try:
            space.lock.acquire()
        finally:
            with space.counting:
                space.readers_waiting -= 1
        try:
            self.follow(space)
            self._purge_when_idle(space)
            yield space
        finally:
            space.passed.notify_all()
            space.lock.release()

    def let_readers_in(self, space: Space) -> None:
        """Inside :meth:`writing`, between two consistent steps of a long change: let the readers
        waiting for ``space`` read it as it is now (for at most a second), then carry on.

        They may see the change's first steps before it is committed; if the commit fails, the
        reload takes those away again. The file lock stays held: no other writer gets in.
        """
        if space.readers_waiting:
            space.passed.wait_for(lambda: not space.readers_waiting, timeout=READERS_TURN_SECONDS)

    @contextmanager
    def writing(self, name: str, *, create: bool = True, follow: bool = True) -> Iterator[Space | None]:
        """The up-to-date space of ``name`` while this thread alone may write it, in any process.

        The write lock comes first: while a writer waits for another process it holds nothing this
        process's readers need. Yields None when the namespace has no table and ``create`` is
        false; with ``follow`` false, the space as it was (``doctor``, which reads the table itself
        and must not fail on trees too damaged to load). Raises LockTimeout when another writer
        keeps the namespace past MEMTREE_LOCK_TIMEOUT.
        """
        with self.write_lock(name) as lock:
            # Under the lock: two servers creating the namespace at once would make two tables.
            space = self.get(name, create=create)
            if space is None:
                yield None
                return
            with space.lock:
                space.table.guard = lock
                try:
                    if follow:
                        self.snapshots.check(space)  # nothing is written on a snapshot unchecked
                        self.follow(space)
                    if lock.taken_over:
                        # The last holder let its lease expire: what it may still append must not count.
                        if not follow:
                            space.table.read()  # the fence's revision comes after every one written
                        space.table.fence()
                    if space.table.outdated:
                        # Written by an older memtree-mcp: rewritten in the current layout before any
                        # write, with the temporal tree built on reading it (schema 4's is not today's).
                        space.table.upgrade(space.memory if follow else None)
                    if follow:
                        self.follow(space)
                        memory = space.memory
                        if memory.temporal_rebuilt or not memory.zone_recorded:
                            # A table that keeps no temporal tree (not one this code wrote), or one
                            # out of time order or of no recorded zone: the tree built on loading,
                            # or the zone it agrees with, is stored before anything else.
                            with self.change(space) as change:
                                if memory.temporal_rebuilt:
                                    change.changed = set(memory.temporal.branches)
                                    change.removed = memory.temporal_replaced - change.changed
                                else:
                                    change.changed = {memory.temporal.root.id}
                            memory.temporal_rebuilt, memory.temporal_replaced = False, set()
                            memory.zone_recorded = True
                    yield space
                    if follow:
                        self._purge_if_due(space)
                finally:
                    space.table.guard = None

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
                    space.memory,
                    change.changed - change.removed,
                    change.removed,
                    change.now,
                    change.rewritten - change.removed,
                )
        except BaseException:
            self.reload(space)
            raise
        if (change.changed or change.removed) and self.on_commit is not None:
            self.on_commit(space, change.removed)

    @contextmanager
    def maintenance_deferred(self, name: str) -> Iterator[None]:
        """While inside, this process's commits to ``name`` neither compact nor squash its table;
        on leaving, what is due is done once (for a bulk import).

        Every compaction and squash rewrites the whole table, and the history keeps each copy for
        MEMTREE_RETENTION: a big import makes hundreds of commits, so several rewrites of a growing
        table, which would take most of the store's room on disk.
        """
        space = self.get(name, create=True)
        assert space is not None
        with self.writing(name) as held:
            assert held is not None
            fresh = held.table.rev < 0  # nothing was ever written: the import is the whole history
        space.table.maintenance_deferred = True
        try:
            yield
        finally:
            space.table.maintenance_deferred = False
            self._maintain(name, fresh=fresh)

    @on_conflict_again
    def _maintain(self, name: str, *, fresh: bool) -> None:
        with self.writing(name) as held:
            assert held is not None
            held.table.maintain(fresh=fresh)
            held.version = held.table.latest_version()

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
        if space.memory.zone_unknown:
            # An older memtree-mcp wrote the temporal tree, in its own zone: read and checked again.
            self.reload(space)
            return
        self.zones.tell(space.name, space.memory)
        log.debug(
            "followed namespace %s to version %d (%d leaves, %d branches, %d removed) in %.1f ms",
            space.name,
            changes.version,
            len(changes.leaves),
            len(changes.branches),
            len(changes.removed),
            (time.perf_counter() - started) * 1000,
        )

    def purge(self, space: Space) -> int:
        """Rewrite ``space``'s table so no file holds anything forgotten; returns the commit its
        history now starts at.

        Call it inside :meth:`writing`. Earlier versions go too: ``restore`` cannot reach behind it.
        """
        started = time.perf_counter()
        floor = space.table.purge()
        space.version = space.table.latest_version()
        # The snapshot may hold what the purge took away; the next whole read saves a new one.
        # Nothing of this process may keep it mapped: a deleted file stays on disk while mapped.
        space.memory.own_vectors()
        self.opener.remove_snapshot(space.name)
        if self.on_purge is not None:
            self.on_purge(space.name)
        log.info(
            "purged namespace %s (history from version %d) in %.0f ms",
            space.name,
            floor,
            (time.perf_counter() - started) * 1000,
        )
        return floor

    def _purge_due(self, space: Space) -> bool:
        forgotten = space.table.oldest_forget
        return forgotten is not None and time.time() - forgotten >= self.settings.retention

    def _purge_if_due(self, space: Space) -> None:
        """Purge ``space`` if a forget has outlived MEMTREE_RETENTION; hold its write lock.

        A failure is logged, not raised: the call that triggered it has done its own work, and
        the next commit or read tries again.
        """
        if not self._purge_due(space):
            return
        try:
            self.purge(space)
        except StoreError as exc:
            log.warning("could not purge namespace %s: %s", space.name, exc)

    def _purge_when_idle(self, space: Space) -> None:
        """Purge ``space`` from a read if it is due and no writer holds the namespace (never waits)."""
        if not self._purge_due(space):
            return
        try:
            with self.write_lock(space.name, timeout=0) as lock:
                space.table.guard = lock
                self.follow(space)
                self._purge_if_due(space)
        except LockTimeout:
            pass  # a writer is busy: its commit, or a later read, purges
        except StoreError as exc:  # the bucket's lease out of reach: the read goes on all the same
            log.warning("could not purge namespace %s: %s", space.name, exc)
        finally:
            space.table.guard = None

    def reload(self, space: Space) -> None:
        """Read ``space``'s memory afresh from the latest version of its table.

        From the namespace's snapshot and the rows appended since, when it has a usable one;
        otherwise from the whole table, and a new snapshot is saved (``store/opening.py``).
        """
        started = time.perf_counter()
        with collector_paused():
            opened = self.opener.open(
                space.name, space.table, self.zones.of(space.name), check_later=self.snapshots.check_later
            )
        # The memory let go of may still be read (a recall under way, a result that names its
        # leaves), and may map a snapshot that another process's purge deleted: it lets go of that.
        # Never at the cost of the reload, or of the error a failed write is reloading after.
        try:
            space.memory.own_vectors()
        except Exception:
            log.exception("namespace %s: could not copy the vectors of the memory let go of", space.name)
        space.memory, space.version, space.snapshot_rows = opened.memory, opened.version, opened.snapshot_rows
        space.mapped, space.unmappable, space.unchecked = opened.mapped, None, opened.unchecked
        how = opened.how
        del opened
        give_back_freed_memory()
        self.zones.tell(space.name, space.memory)
        if self.on_load is not None:
            self.on_load(space)
        log.debug(
            "loaded namespace %s %s at version %d (%d leaves) in %.0f ms",
            space.name,
            how,
            space.version,
            len(space.memory.leaves),
            (time.perf_counter() - started) * 1000,
        )

    def restore(self, space: Space, version: int) -> int:
        """Make commit ``version``'s memory the latest content of ``space``'s table (a new commit,
        whose rev it returns) and reload it."""
        try:
            return space.table.restore(version)
        finally:
            self.reload(space)

    def drop(self, name: str) -> None:
        """Forget what this process holds of ``name`` (after its table was rewritten)."""
        with self._lock:
            self._spaces.pop(name, None)

    def close(self) -> None:
        """Stop watching, release every space and the store; they reopen on next use.

        A server (a process that watched) saves first the snapshot of each namespace it holds
        that is far behind its table (``SnapshotKeeper.refresh``), so that the next start resumes
        from where the table stands; a one-shot command leaves that to the servers.
        """
        with self._lock:
            watcher, self._watcher = self._watcher, None
            self._stop_watching.set()
            spaces = list(self._spaces.values())
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout=READERS_TURN_SECONDS)
            for space in spaces:
                if not self.snapshots.due(space) or not space.lock.acquire(timeout=READERS_TURN_SECONDS):
                    continue  # not worth it, or a call still holds it: a stop does not wait long
                try:
                    self.follow(space)
                    self.snapshots.refresh(space)
                except Exception as exc:  # stopping must not fail for a snapshot, which only saves time
                    log.warning("could not save a snapshot of namespace %s: %s", space.name, exc)
                finally:
                    space.lock.release()
        with self._lock:
            self._spaces.clear()
            self._store = None
            leases, self._leases = list(self._leases.values()), {}
        for lease in leases:
            lease.close()

    def watch(self, every: float = WATCH_SECONDS) -> None:
        """Follow other processes' commits in the background from now on, for a long-lived server.

        Every ``every`` seconds a thread looks whether the table of each loaded space changed (a
        stat of its folder of versions, :meth:`NamespaceTable.commit_marker`) and, when it did and
        no one here holds the space, follows it (:meth:`follow`). So the recall an agent makes
        after another client's remember finds the memory already caught up instead of paying for
        it (``bench/multiclient.py``). Only a hastener: every read
        and write still follows first, so nothing depends on the thread having looked. Object-store
        homes have no marker and follow at the next call. Stopped by :meth:`close`.
        """
        with self._lock:
            if self._watcher is not None:
                return
            self._stop_watching = threading.Event()
            self._watcher = threading.Thread(
                target=self._watch, args=(every, self._stop_watching), name="memtree-follow", daemon=True
            )
            self._watcher.start()

    def _watch(self, every: float, stop: threading.Event) -> None:
        seen: dict[str, int] = {}
        while not stop.wait(every):
            with self._lock:
                spaces = list(self._spaces.values())
            for space in spaces:
                if space.unchecked is not None and not stop.is_set():
                    try:
                        self.snapshots.check(space)
                    except Exception as exc:  # the next write compares again
                        log.warning("could not check the snapshot of namespace %s: %s", space.name, exc)
                self.snapshots.remap_if_replaced(space, stop)
                marker = space.table.commit_marker()
                if marker is None or marker == seen.get(space.name) or space.version < 0:
                    continue  # no marker, nothing new, or never read: the next call reads it
                if not space.lock.acquire(blocking=False):
                    continue  # in use: its holder follows; looked at again next time
                try:
                    if stop.is_set():
                        return
                    # Noted before following: a commit landing meanwhile changes it again.
                    seen[space.name] = marker
                    self.follow(space)
                except Exception as exc:  # a background hastener must never take the server down
                    log.warning("could not follow namespace %s in the background: %s", space.name, exc)
                finally:
                    space.lock.release()

    def write_lock(self, name: str, *, timeout: float | None = None) -> NamespaceLock:
        """The lock writers of namespace ``name`` take (``store/locks.py``): the file lock of this machine's
        processes and threads and, for a bucket home, the namespace's lease in the bucket; waiting
        gives up after ``timeout`` seconds (MEMTREE_LOCK_TIMEOUT by default)."""
        home = self.settings.home
        folder = lock_folder(home, self.settings.lock_dir)
        path = folder / f"{name}.lock"
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            # Touched here so that a lock file that cannot be written (a read-only file system) is
            # a StoreError naming the setting, not an OSError when the lock is taken.
            path.touch(mode=0o600, exist_ok=True)
        except OSError as exc:
            if folder == Path(home) / ".locks":  # the lock lives in the store, which is refused
                raise StoreError(
                    f"cannot write the memory store at {home} ({exc.strerror or exc}); "
                    "set MEMTREE_HOME to a place you can write to"
                ) from exc
            raise StoreError(
                f"cannot write the lock file {path} ({exc.strerror or exc}); "
                "set MEMTREE_LOCK_DIR to a directory you can write to"
            ) from exc
        wait = self.settings.lock_timeout if timeout is None else timeout
        return NamespaceLock(FileWriteLock(path, name, wait), self.lease(name))

    @property
    def watcher(self) -> threading.Thread | None:
        """The thread following other processes' commits in the background (:meth:`watch`), if any."""
        return self._watcher

    def lease(self, name: str) -> BucketLease | None:
        """Namespace ``name``'s lease in the bucket, as this process holds it; None on a local home."""
        if "://" not in self.settings.home:
            return None
        _ = self.store  # opening the store makes the bucket's client
        with self._lock:
            lease = self._leases.get(name)
            if lease is None:
                from memtree_mcp.store.bucket import BucketLease, bucket_and_prefix, lease_key

                bucket, _prefix = bucket_and_prefix(self.settings.home)
                key = lease_key(self.settings.home, name)
                lease = BucketLease(self._bucket, bucket, key, name, seconds=self.settings.lease_seconds)
                self._leases[name] = lease
            return lease
