"""Fences: rows after which what another writer appends with an older revision does not count.

Every commit of a namespace table (``store/table.py``) ends with a fence at its own revision, its
*commit marker*. A writer numbers its commit one more than the last revision it has read; two
writers that read the same table and append at once (two servers that both believe they hold a
bucket's lease, processes with different lock folders) therefore claim the same revision, and
LanceDB, for which concurrent appends are compatible, keeps both. Of the two, the one that comes
first in the table's order counts; the other lands after the first one's marker with a revision
no newer than it, and every reader ignores it (:func:`unfenced`). Its writer finds that out before
it acknowledges anything (:func:`commit_counts`; cheaply, from the version LanceDB gave its commit),
and does its change again on what the other one wrote. A memory is acknowledged only when every
reader will keep it, whatever the lease did.

A server that takes a bucket namespace's lease over also appends a fence before writing, as it
always did: the stalled holder's late append carries a revision no newer than it. Rewrites
(squash, purge, upgrade) end with a fence at the highest revision they kept, so that a late append
does not count after them either.

A fence is written as a deletion row (``store/rows.py``) of an id no node has: code from before
fences reads it as the deletion of nothing, and code from before commit markers applies the same
rule to them.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memtree_mcp.store.rows import deletion_row


class WriteGuard(Protocol):
    """The namespace's write lock as a commit sees it: :meth:`before` raises unless the writer
    still holds it, :meth:`after` raises when the commit may not count (a bucket lease, fencing)."""

    def before(self) -> None: ...

    def after(self) -> None: ...


# The id prefix of fence rows; node ids never contain a colon.
FENCE = "fence:"


def fence_row(rev: int) -> dict[str, Any]:
    """A fence at revision ``rev``: later rows with a revision up to ``rev`` do not count."""
    return {**deletion_row(FENCE + uuid.uuid4().hex[:12], time.time()), "rev": rev}


NO_FENCE = int(np.iinfo(np.int64).min)
"""The fence level before the first row of a table: nothing is shut out."""


def fence_levels(arrow: pa.Table, level: int = NO_FENCE) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ``arrow`` (rows in the table's order, with ``id`` and ``rev``), whether it is
    a fence, and the revision of the highest fence before it; ``level``: that of the rows before
    ``arrow`` (a table read in two parts)."""
    fences = pc.starts_with(arrow.column("id"), FENCE).to_numpy(zero_copy_only=False)
    revs = arrow.column("rev").to_numpy()
    highest = np.maximum.accumulate(np.where(fences, revs, level))
    return fences, np.concatenate([[level], highest[:-1]]) if len(revs) else highest


def unfenced(arrow: pa.Table, level: int = NO_FENCE) -> pa.Table:
    """``arrow`` (rows in the table's order, with ``id`` and ``rev``) without its fences and the rows
    a fence shuts out: those after it whose revision is no newer than its own. ``level``: the
    highest fence in the rows before ``arrow``, when it is the rest of a table read in two parts."""
    if not arrow.num_rows:
        return arrow
    if level == NO_FENCE and not pc.any(pc.starts_with(arrow.column("id"), FENCE)).as_py():
        return arrow
    fences, before = fence_levels(arrow, level)
    return arrow.filter(pa.array(~fences & (arrow.column("rev").to_numpy() > before)))


def highest_fence(arrow: pa.Table, level: int = NO_FENCE) -> int:
    """The revision of the highest fence in ``arrow`` or before it (``level``)."""
    if not arrow.num_rows:
        return level
    fences = pc.starts_with(arrow.column("id"), FENCE).to_numpy(zero_copy_only=False)
    revs = arrow.column("rev").to_numpy()[fences]
    return max(level, int(revs.max())) if len(revs) else level


def commit_counts(arrow: pa.Table, marker: str, size: int) -> bool | None:
    """Whether the commit of ``size`` rows that ends with the fence ``marker`` (its id) counts in
    ``arrow``, the (``id``, ``rev``) of the whole table in its order: no fence before its first row
    shuts it out. None when the marker is not in the table (a rewrite dropped the commit)."""
    found = np.flatnonzero(pc.equal(arrow.column("id"), marker).to_numpy(zero_copy_only=False))
    if not len(found):
        return None
    end = int(found[0])
    start = end - size + 1
    rev = int(arrow.column("rev")[end].as_py())
    before = arrow.slice(0, start)
    return start >= 0 and highest_fence(before) < rev


def fence_count(arrow: pa.Table) -> int:
    """How many rows of ``arrow`` a fence shuts out, fences included (for ``doctor``)."""
    return arrow.num_rows - unfenced(arrow).num_rows
