"""Each open namespace's snapshot kept in step with what this process holds.

``store/snapshot.py`` is the file and ``store/opening.py`` reads and saves it; :class:`Spaces`
(``service/spaces.py``) opens and follows the namespaces. :class:`SnapshotKeeper` does, over a
process's life, what concerns their snapshots:

- compares a snapshot a server opened a namespace from with its table, once the server answers
  (:meth:`SnapshotKeeper.check`): the comparison reads each row's id and revision (0.4 s at 100k
  memories, ten times that at a million), which a fresh server would otherwise pay before its
  first answer. Until then it reads from the snapshot; no write is made on it unchecked (the
  first write compares first), and when it disagrees (a file changed by hand, or a bug: issue 31)
  the namespace is read whole at once, which saves a snapshot that fits;
- maps a snapshot another process saved over the file a memory reads its vectors from
  (:meth:`SnapshotKeeper.remap_if_replaced`): a replaced file stays on disk while it is mapped;
- saves a snapshot anew when a server stops far behind its table (:meth:`SnapshotKeeper.refresh`),
  or after an import grew the namespace (:meth:`SnapshotKeeper.keep`).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memtree_mcp.service.spaces import Space, Spaces

log = logging.getLogger("memtree_mcp")


class SnapshotKeeper:
    """The snapshots of the namespaces ``spaces`` holds."""

    def __init__(self, spaces: Spaces) -> None:
        self._spaces = spaces
        # Whether a namespace opened from its snapshot is compared with its table after the open
        # (check) rather than before: for a long-lived process, whose watcher compares it.
        self.check_later = False

    def check(self, space: Space) -> None:
        """Compare the snapshot ``space`` was opened from (when it was opened without comparing it)
        with its table; when they disagree, read the namespace whole.

        The table's rows are read without holding the space's lock (by a reader of its own), so
        that calls go on meanwhile; the lock is taken to act on the result, unless the memory was
        read anew meanwhile."""
        pending, memory = space.unchecked, space.memory
        if pending is None:
            return
        agrees = self._spaces.opener.check(space.name, space.table.sibling(), pending)
        with space.lock:
            if space.unchecked is not pending or space.memory is not memory:
                return  # read anew meanwhile: that read is what counts
            space.unchecked = None
            if not agrees:
                self._spaces.reload(space)

    def due(self, space: Space) -> bool:
        """Whether ``space``'s snapshot is far enough behind its table to be saved anew."""
        if space.version < 0:
            return False
        return self._spaces.opener.snapshot_due(space.table.row_count_seen, space.snapshot_rows)

    def refresh(self, space: Space) -> bool:
        """Save ``space``'s snapshot anew as the memory held now; True when it was saved.

        Call it holding ``space``'s lock, the space followed. Only when a server stops
        (``Spaces.close``): it costs time and memory while it runs (``Opener.refresh_snapshot``).
        A snapshot the memory was opened from and not yet compared with the table is compared
        first: the new one is built on its rows.
        """
        self.check(space)
        refreshed = self._spaces.opener.refresh_snapshot(space.name, space.table, space.memory, space.version)
        if refreshed.snapshot_rows is not None:
            space.snapshot_rows = refreshed.snapshot_rows
        return refreshed.saved

    def keep(self, name: str) -> bool:
        """Save namespace ``name``'s snapshot now when it is far behind its table or there is none,
        building it from the table's rows if need be; True when it was saved. For a one-shot command
        that wrote much (an import): otherwise the next process to open the namespace reads the
        whole table (at 100k memories, seconds before its first answer), and servers that start
        together each read it whole and save, one replacing the file another maps."""
        space = self._spaces.get(name, create=False)
        if space is None:
            return False
        with space.lock:
            self.check(space)
            self._spaces.follow(space)
            if not self.due(space):
                return False
            refreshed = self._spaces.opener.refresh_snapshot(
                space.name, space.table, space.memory, space.version, whole=True
            )
        if refreshed.snapshot_rows is not None:
            space.snapshot_rows = refreshed.snapshot_rows
        return refreshed.saved

    def remap_if_replaced(self, space: Space, stop: threading.Event) -> None:
        """When another process saved a snapshot over the file ``space``'s memory reads its vectors
        from (a server that stopped), read them from the new file instead (``Opener.remap``):
        the replaced one stays on disk for as long as a process maps it. A file that cannot be
        mapped instead (the memory has moved on, or holds other values) is not tried again; the
        old one is then let go of at the next reload, or when the process exits."""
        if space.mapped is None:
            return
        opener = self._spaces.opener
        found = opener.snapshot_file(space.name)
        if found is None or found in (space.mapped, space.unmappable):
            return  # none (a purge removed it: the follow that learns of it reads again), or seen
        if not space.lock.acquire(blocking=False):
            return  # in use: looked at again next time
        try:
            if stop.is_set():
                return
            self._spaces.follow(space)
            mapped = opener.remap(space.name, space.table, space.version, space.memory)
            if mapped is None:
                space.unmappable = found
                log.debug("namespace %s: the snapshot saved anew cannot replace its file", space.name)
            else:
                space.mapped = mapped
        except Exception as exc:  # a background hastener must never take the server down
            log.warning("could not map the new snapshot of namespace %s: %s", space.name, exc)
        finally:
            space.lock.release()
