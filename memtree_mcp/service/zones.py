"""The time zone set for each namespace in this process, and telling when a namespace keeps another.

A namespace counts its days in the zone stored with it (``core/trees/calendar.py``, ``Memory.load``); the
zone set here (MEMTREE_TIMEZONE, or a hook worker's caller's) is only the one a namespace takes
when it has none yet. A process whose setting differs uses the stored zone, and says so once in
its log; ``doctor`` says it too, and ``doctor --repair --timezone`` moves a namespace on purpose.
"""

from __future__ import annotations

import logging
import threading

from memtree_mcp.core.memory import Memory
from memtree_mcp.core.trees.calendar import Calendar

log = logging.getLogger("memtree_mcp")


class Zones:
    """The zone set for each namespace (``default`` unless :meth:`set` named another). Thread-safe."""

    def __init__(self, default: str) -> None:
        self.default = Calendar.named(default)
        self._set: dict[str, Calendar] = {}
        self._told: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()

    def of(self, name: str) -> Calendar:
        """The zone set for namespace ``name``."""
        with self._lock:
            return self._set.get(name, self.default)

    def set(self, name: str, zone: str) -> Calendar:
        """Make ``zone`` the one set for namespace ``name``; raises ValueError for an unknown zone."""
        calendar = Calendar.named(zone)
        with self._lock:
            self._set[name] = calendar
        return calendar

    def tell(self, name: str, memory: Memory) -> None:
        """Log once that namespace ``name`` counts its days in another zone than the one set for it
        (its ``memory``'s, stored with it; an empty one takes the zone set at its first write)."""
        used, wanted = memory.calendar, self.of(name).name
        with self._lock:
            if used.name == wanted or not memory.leaves or (name, used.name, wanted) in self._told:
                return
            self._told.add((name, used.name, wanted))
        log.warning(
            "namespace %s counts its days in %s, the zone stored with it; MEMTREE_TIMEZONE=%s is not "
            "used for it (`memtree-mcp doctor --repair --timezone %s` moves it)",
            name,
            used.name,
            wanted,
            wanted,
        )
