"""The process's C heap: giving its freed pages back to the system after a big, short-lived peak."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import sys
import threading
from collections.abc import Iterator

_pausing = threading.Lock()
_paused = 0  # how many callers are inside collector_paused()
_was_enabled = True
_freeze = False  # set by a long-lived server (freeze_after_loads)


def freeze_after_loads(freeze: bool = True) -> None:
    """From now on, what a load leaves alive is frozen out of the collector (see
    :func:`collector_paused`); ``False`` stops it again. For a server: one service lives as long as
    the process, so what is frozen is what the process keeps anyway. Not for a library user or a
    test run, where services come and go: a service sits in reference cycles (its parts hold each
    other's methods), and a frozen cycle is never collected.
    """
    global _freeze
    _freeze = freeze


def give_back_freed_memory() -> None:
    """Return the C heap's free pages to the system (glibc only; elsewhere its allocator decides).

    glibc keeps freed memory in its arenas (one per thread), so after a peak the resident size
    stays at the peak's. A whole read of a namespace builds and drops Arrow tables and Python
    lists (after loading 10k memories: 509 MB resident, 427 MB after this), and so does embedding
    a big write. Arrow's own pool, when Arrow is loaded, gives its free pages back too.
    """
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        # Arrow's allocator (mimalloc) keeps the pages of the tables a load read and dropped.
        arrow.default_memory_pool().release_unused()
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        ctypes.CDLL("libc.so.6").malloc_trim(0)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Run the enclosed block with Python's cyclic garbage collector off (it is back on after,
    if it was on before; nested and concurrent uses count, the last one out turns it back on).

    Loading a namespace makes hundreds of thousands of objects that all live on; each time their
    count passes the collector's thresholds it scans every object made so far, again and again (a
    load of 100k memories ran seven full collections and took more than twice as long). Objects freed
    by reference counting are freed as usual meanwhile; only cycles wait for the next collection.

    In a server (:func:`freeze_after_loads`), when the last pause ends every object alive is moved
    to the collector's permanent generation (``gc.freeze``): otherwise the first collections after
    it scan the whole load, three times as it ages, and every full collection after that scans it
    again. They are still freed by reference counting when dropped (a memory holds no reference
    cycles: dropping one leaves nothing for the collector); a cycle alive at that moment is never
    collected, which is why only a server freezes.
    """
    global _paused, _was_enabled
    with _pausing:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _pausing:
            _paused -= 1
            if _paused == 0:
                if _freeze:
                    gc.freeze()
                if _was_enabled:
                    gc.enable()
