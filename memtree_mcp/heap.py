"""The process's C heap: giving its freed pages back to the system after a big, short-lived peak."""

from __future__ import annotations

import contextlib
import ctypes
import sys


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
