"""A namespace's write lock, where the namespace lives: a file lock on the machine, and for a bucket
home also the namespace's lease in the bucket.

:class:`NamespaceLock` is what every writer takes (``Spaces.writing``, and re-indexing): first the
machine's file lock (:class:`FileWriteLock`: across the processes and threads of this machine, it
names the process in the way when it gives up), then, for an ``s3://`` home, the lease
(``store/bucket.py``), which reaches every machine writing the bucket. Both together make one
writer at a time for the namespace; the commit checks the lease before and after it writes
(:meth:`NamespaceLock.before`, :meth:`NamespaceLock.after`), so a server that lost it answers
an error instead of an acknowledgement. A local home has no lease: the same interface, the file
lock alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from contextlib import suppress
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import platformdirs
from filelock import FileLock, Timeout

from memtree_mcp.errors import LockTimeout

if TYPE_CHECKING:
    from memtree_mcp.store.bucket import BucketLease


class NamespaceLock:
    """The write lock of one namespace: the machine's file lock, then the bucket's lease if any.

    ``taken_over`` tells, once entered, that the lease was taken from a holder that let it expire:
    the writer must fence the table (``NamespaceTable.fence``) before anything else.
    """

    def __init__(self, local: FileWriteLock, lease: BucketLease | None = None) -> None:
        self.local = local
        self.lease = lease
        self.taken_over = False

    def __enter__(self) -> NamespaceLock:
        started = time.monotonic()
        self.local.__enter__()
        if self.lease is not None:
            try:
                left = max(0.0, self.local.timeout - (time.monotonic() - started))
                self.taken_over = self.lease.acquire(left)
            except BaseException:
                self.local.__exit__(None, None, None)
                raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            if self.lease is not None:
                self.lease.done()
        finally:
            self.local.__exit__(kind, error, trace)

    def before(self) -> None:
        """Before a commit: raises LeaseLost unless this server still holds the namespace."""
        if self.lease is not None:
            self.lease.check()

    def after(self) -> None:
        """After a commit: raises LeaseLost when the commit may not count (the lease was lost
        while it was written)."""
        if self.lease is not None:
            self.lease.confirm()


class FileWriteLock:
    """A namespace's write lock: a file lock with a deadline that says who holds it.

    The holder notes its pid, command and start time in a file beside the lock (``<name>.holder``),
    so a writer that gives up can name the process in its way. Each ``WriteLock`` opens the lock
    file afresh, so threads of one process exclude each other as processes do; it is not
    re-entrant.
    """

    def __init__(self, path: Path, namespace: str, timeout: float) -> None:
        self.path = path
        self.holder_path = path.with_suffix(".holder")
        self.namespace = namespace
        self.timeout = timeout
        self._lock = FileLock(str(path))

    def __enter__(self) -> FileWriteLock:
        try:
            self._lock.acquire(timeout=self.timeout, poll_interval=0.02)
        except Timeout:
            raise LockTimeout(
                f"namespace '{self.namespace}' is being written by {self.holder()}; gave up after "
                f"{self.timeout:g} s (MEMTREE_LOCK_TIMEOUT). Try again later, or stop that process."
            ) from None
        try:
            note = {"pid": os.getpid(), "command": _command(), "since": time.time()}
            self.holder_path.write_text(json.dumps(note), encoding="utf-8")
        except OSError:
            pass  # only a courtesy to the next writer
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        with suppress(OSError):
            self.holder_path.unlink(missing_ok=True)
        self._lock.release()

    def holder(self) -> str:
        """Who holds the lock, as far as its note says: 'process 4242 (memtree-mcp serve) since …'."""
        try:
            note = json.loads(self.holder_path.read_text(encoding="utf-8"))
            pid, command, since = int(note["pid"]), str(note["command"]), float(note["since"])
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"
        moment = time.strftime("%H:%M:%S", time.localtime(since))
        who = "this process" if pid == os.getpid() else f"process {pid}"
        return f"{who} ({_printable(command)}, since {moment})"


def _command() -> str:
    """This program's name and subcommand (never its other arguments, which may hold secrets)."""
    return " ".join([Path(sys.argv[0]).name, *sys.argv[1:2]]) if sys.argv and sys.argv[0] else "python"


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)[:80]


def lock_folder(home: str, lock_dir: str | None) -> Path:
    """The folder of the machine's lock files for the store at ``home`` (MEMTREE_LOCK_DIR)."""
    if lock_dir is not None or "://" in home:
        base = lock_dir or platformdirs.user_cache_dir("memtree-mcp", appauthor=False)
        # One folder per store, so two buckets' namespaces of the same name do not share a lock.
        return Path(base) / "locks" / hashlib.sha256(home.rstrip("/").encode()).hexdigest()[:16]
    return Path(home) / ".locks"
