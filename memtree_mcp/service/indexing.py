"""Recall's first stage at scale: each large namespace's live memories in LanceDB's indexes, kept up
to date in the background, and the shortlist a recall asks them for.

A namespace with at least MEMTREE_INDEX_FROM memories is recalled in two stages: LanceDB's vector
index (``store/leaf_table.py``) names the :data:`SHORTLIST` memories nearest the query, and the
tree-aware ranking computes exact cosines for those (with the best BM25 matches and the neighbours
in time of both) instead of for every memory (``core/ranking/shortlist.py``). Smaller namespaces are
ranked exactly, as they always were; a namespace whose index is not built yet too.

The index follows the trees, never the other way: one background thread per process brings each
large namespace's table to its live memories (adding the missing, deleting the forgotten) after
the namespace is loaded or written, builds the vector index once the table is full, and folds new
rows into it as they come (``optimize``). One process at a time writes a namespace's table (a file
lock beside it; the others only read it). What the table does not hold yet (memories written
since its last sync, by this process or another) is scored exactly by every recall: nothing
remembered is ever missing from the first stage. A purge drops the table, and the next sync builds
it again from the trees.

Homes on a bucket (``s3://``) are recalled exactly for now: the table would need a writer lease of
its own there.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memtree_mcp.core.embedding import Vector
from memtree_mcp.core.memory import Memory
from memtree_mcp.core.ranking.shortlist import Shortlist, leaves_since
from memtree_mcp.service.spaces import Space, Spaces

if TYPE_CHECKING:  # lancedb loads with it: only on the first large namespace's sync
    from memtree_mcp.store.leaf_table import LeafTable

log = logging.getLogger(__name__)

SHORTLIST = 400
"""How many memories nearest the query the vector index names for each query vector."""
SYNC_PAUSE = 1.0
"""Seconds the background thread waits after a write before it syncs (writes in a burst share one)."""
PURGE_WAIT = 60.0
"""Seconds a purge waits for another process's sync of the index before it drops the table anyway."""
RECHECK = 10.0
"""Seconds after which a recall looks again at an index another process was still building."""
WHOLE_EVERY = 600.0
"""Seconds between two whole syncs (every id compared); between them a sync writes only what this
process remembered and forgot since the last one."""


@dataclass
class _State:
    """What a process knows of one namespace's table: whether its index is usable, the next seq it
    had seen at its last sync (memories from it on are scored exactly), the live memories the
    table lacked then (another process held the lock), when it was last checked and when it was
    last compared whole with the memory (``whole``: 0 until this process wrote it whole)."""

    table: LeafTable
    ready: bool = False
    since_seq: int = 0
    missing: frozenset[str] = frozenset()
    checked: float = 0.0
    whole: float = 0.0


class Indexes:
    """The leaf tables of this process's large namespaces, and the thread that keeps them."""

    def __init__(self, spaces: Spaces, *, background: bool = True) -> None:
        """Without ``background`` (a one-shot command) no table is built or synced: a large
        namespace is ranked exactly, rather than leaving a build cut off when the command exits."""
        self._spaces = spaces
        self._background = background
        self._states: dict[str, _State] = {}
        self._dirty: set[str] = set()
        self._purges: dict[str, int] = {}  # purges of each namespace seen by this process
        self._removed: dict[str, set[str]] = {}  # ids this process removed since the last sync
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return "://" not in self._spaces.settings.home

    def large(self, memory: Memory) -> bool:
        """Whether ``memory`` is recalled through the index (MEMTREE_INDEX_FROM memories or more)."""
        return self.enabled and len(memory.leaves) >= self._spaces.settings.index_from

    def committed(self, space: Space, removed: set[str]) -> None:
        """A commit of this process to ``space`` that removed ``removed`` (``Spaces.on_commit``):
        sync its table soon."""
        if removed and self.large(space.memory):
            with self._lock:
                self._removed.setdefault(space.name, set()).update(removed)
        self.touched(space.name, space.memory, changed=True)

    def touched(self, name: str, memory: Memory, *, changed: bool = False) -> None:
        """Namespace ``name`` was read (or ``changed``): sync its table soon if it is large and the
        table is behind what this process holds."""
        if not self._background or not self.large(memory):
            return
        with self._lock:
            state = self._states.get(name)
            current = state is not None and state.since_seq >= memory.next_seq
            if current and state is not None and (not state.ready or state.missing):
                current = time.monotonic() - state.checked < RECHECK
            if not changed and (name in self._dirty or current):
                return
            self._dirty.add(name)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, args=(self._stop,), name="memtree-indexes", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def shortlist(self, name: str, vectors: Sequence[Vector]) -> Shortlist | None:
        """The memories of ``name`` whose cosines recall computes (the index's nearest to each of
        ``vectors``, and what the table lacks), or None to rank every memory (a small namespace, or
        an index not built yet)."""
        with self._lock:
            state = self._states.get(name)
        if state is None or not state.ready:
            return None
        try:
            found = state.table.search(vectors, SHORTLIST)
        except Exception as exc:
            log.warning("could not search the index of namespace %s (%s): ranking every memory", name, exc)
            return None
        return Shortlist(ids=(*found, *state.missing), since_seq=state.since_seq)

    def purged(self, name: str) -> None:
        """Namespace ``name`` was purged (``Spaces.on_purge``, under its write lock): drop its table,
        which may hold forgotten text, once no process is writing it (a sync under way ends first)."""
        with self._lock:
            state = self._states.pop(name, None)
            self._purges[name] = self._purges.get(name, 0) + 1
        table = state.table if state is not None else self._table(name, create=False)
        if table is not None:
            table.drop(wait=PURGE_WAIT)

    def close(self) -> None:
        """Stop the thread (a sync under way finishes first, 5 s at most); the next write starts
        another."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stop.set()
            self._stop = threading.Event()
            self._states.clear()
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _table(self, name: str, *, create: bool = True) -> LeafTable | None:
        """Namespace ``name``'s leaf table (None for a bucket home, or without ``create`` when no
        namespace of the home was ever indexed)."""
        if not self.enabled:
            return None
        from memtree_mcp.store.leaf_table import INDEX_DIR, LeafTable

        home = self._spaces.settings.home
        if not create and not (Path(home) / INDEX_DIR).is_dir():
            return None
        return LeafTable(home, name, self._spaces.store.dimension)

    def _run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self._wake.wait()
            if stop.wait(SYNC_PAUSE):
                return
            self._wake.clear()
            with self._lock:
                names, self._dirty = sorted(self._dirty), set()
            for name in names:
                if stop.is_set():
                    return
                try:
                    self.sync(name)
                except Exception:
                    log.exception("could not bring the index of namespace %s up to date", name)

    def sync(self, name: str) -> None:
        """Bring namespace ``name``'s table to its live memories and its index up to date (or, when
        another process writes it, learn what it lacks). Run by the background thread; tests call it.

        The namespace's own lock is never held with the table's file lock (a purge holds the first
        and waits for the second): what to add and delete is read under the namespace's lock, then
        written under the file lock only if no commit came between (one may have forgotten what was
        about to be added; the next sync reads again).
        """
        with self._lock:
            state = self._states.get(name)
            purges = self._purges.get(name, 0)
        if state is None:
            table = self._table(name)
            if table is None:
                return
            state = _State(table=table)
        table = state.table
        whole = not state.whole or time.monotonic() - state.whole >= WHOLE_EVERY
        held = table.ids() if whole else set()
        with self._lock:
            removed = self._removed.pop(name, set())
        with self._spaces.reading(name) as space:
            if space is None or not self.large(space.memory):
                return
            leaves = space.memory.leaves
            since, version = space.memory.next_seq, space.version
            if whole:
                adding = [leaf for leaf_id, leaf in leaves.items() if leaf_id not in held]
                removing = held.difference(leaves)
            else:
                # Only what this process did since the last sync (another's writes are scored
                # exactly until the next whole sync: its new memories by their seq, its forgotten
                # ones are no longer in the trees).
                adding = leaves_since(leaves, state.since_seq)
                removing = removed.difference(leaves)
        with table.writing() as writer:
            if not writer:
                # Another process writes the table: use it as it is, scoring what it lacks exactly.
                # (Only a process that wrote the table whole syncs a part of it, so this one is whole.)
                state.missing = frozenset(leaf.id for leaf in adding)
            else:
                with self._lock:
                    purged = self._purges.get(name, 0) != purges
                if purged or self._spaces.latest_version(name) != version:
                    with self._lock:  # read again, then write
                        self._removed.setdefault(name, set()).update(removed)
                    self.touched(name, space.memory, changed=True)
                    return
                table.sync(adding, removing)
                if whole:
                    state.whole = time.monotonic()
                done = table.maintain(keep=self._spaces.settings.retention)
                if done != "nothing":
                    log.info("index of namespace %s: %s", name, done)
                state.missing = frozenset()
        state.since_seq, state.checked = since, time.monotonic()
        state.ready = table.indexed()
        with self._lock:
            self._states[name] = state
