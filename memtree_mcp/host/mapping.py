"""Files mapped into memory: their bytes stay the page cache's, shared by every process that maps them.

A process that copies a file's numbers into its own memory holds them privately, and so does every
other process that opens the same file: three processes on one home hold three copies. A mapping
holds none of its own: a page is resident only once it is read, it is the page cache's (one copy
for every process that maps the file), and under memory pressure the system drops it and reads it
again when needed, rather than swapping.

:func:`private_rows` goes one step further for a matrix that must also grow and change (the leaf
vectors of ``core/indexes/vectors.py``): one writable region whose first bytes are the file's,
mapped copy-on-write (a row written becomes a private page, the file never changes), followed by
zeroed memory to grow into (resident only once written). The matrix over it is one contiguous
array, so nothing that reads it changes.

A mapped file must only ever be replaced (written elsewhere and renamed over), never changed or
cut short in place: the mapping keeps the old file's bytes until it is dropped, and a file cut
short under a mapping ends the process at the next read past its end (SIGBUS).
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import sys
from types import TracebackType

PAGE = mmap.PAGESIZE
# MAP_FIXED has the same value on Linux and macOS; Python's mmap module does not offer it.
_MAP_FIXED = 0x10


class MappedFile:
    """A file opened for reading, to be mapped whole (:meth:`whole`) or in part
    (:func:`private_rows`). Closing it closes the descriptor; the mappings made stay valid for as
    long as something holds them.

    Raises OSError (FileNotFoundError when there is no file). A FIFO is opened without waiting for
    a writer: the caller checks ``stat`` before it maps anything.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            self.stat = os.fstat(self._fd)
        except BaseException:
            os.close(self._fd)
            raise

    def __enter__(self) -> MappedFile:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
            self._fd = -1

    def whole(self) -> mmap.mmap:
        """The whole file, mapped read-only (its pages resident only where read). Raises OSError,
        ValueError for an empty file."""
        return mmap.mmap(self._fd, 0, access=mmap.ACCESS_READ)

    def private_rows(self, offset: int, length: int, capacity: int) -> mmap.mmap | None:
        """A writable region of ``capacity`` bytes (at least ``length``) whose first ``length``
        bytes are the file's from ``offset``, mapped copy-on-write; the rest is zeroed memory. The
        bytes start at ``start_of(offset)`` of the region returned (pages are whole: the region
        begins at the page that holds ``offset``).

        None where it cannot be done (another system than Linux or macOS, a range outside the
        file, or the system refused): the caller copies instead.
        """
        if not can_share() or offset < 0 or length < 0 or capacity < length:
            return None
        if offset + length > self.stat.st_size or self._fd < 0:
            return None
        lead = offset % PAGE
        size = _pages(lead + capacity)
        try:
            region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            libc = _libc()
        except (OSError, ValueError, AttributeError):  # AttributeError: a flag this system lacks
            return None
        if length:
            start = ctypes.c_char.from_buffer(region)
            try:
                address = ctypes.addressof(start)
            finally:
                del start  # the export, or the region could never be closed
            mapped = libc.mmap(
                ctypes.c_void_p(address),
                ctypes.c_size_t(_pages(lead + length)),
                mmap.PROT_READ | mmap.PROT_WRITE,
                mmap.MAP_PRIVATE | _MAP_FIXED,
                self._fd,
                ctypes.c_int64(offset - lead),
            )
            if mapped != address:
                with contextlib.suppress(BufferError):
                    region.close()
                return None
        return region


def release(mapping: mmap.mmap) -> None:
    """Take ``mapping``'s pages out of this process's resident set (they stay in the page cache,
    and the next read of one maps it again, without reading the disk). For a read-only mapping of
    a file, after a pass that read much of it once."""
    with contextlib.suppress(AttributeError, OSError, ValueError):  # no madvise here, or closed
        mapping.madvise(mmap.MADV_DONTNEED)


def start_of(offset: int) -> int:
    """Where the file's byte at ``offset`` lies in a region :meth:`MappedFile.private_rows` made."""
    return offset % PAGE


def _pages(size: int) -> int:
    return -(-size // PAGE) * PAGE


def can_share() -> bool:
    """Whether mappings are kept past a read here (Linux, macOS). On Windows a mapped file can be
    neither replaced nor deleted, and a snapshot must be both: what is read from one is copied."""
    return sys.platform.startswith("linux") or sys.platform == "darwin"


_mmap_of_libc: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL:
    """The C library, with ``mmap`` given its types (an address back, an ``off_t`` offset)."""
    global _mmap_of_libc
    if _mmap_of_libc is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [
            ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
        ]  # fmt: skip
        _mmap_of_libc = libc
    return _mmap_of_libc
