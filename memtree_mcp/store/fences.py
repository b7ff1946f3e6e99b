"""Fences: rows after which what a writer that lost its lease still appends does not count.

A server that takes a bucket namespace's lease over from a holder that let it expire
(``store/bucket.py``) cannot stop that holder: stopped (a pause, a swap storm) rather than dead,
it may wake up and finish the append it had started. So before writing anything, the new holder
appends a *fence*: a row whose id starts with :data:`FENCE` and whose ``rev`` is one more than any
revision in the table. The stalled writer's append can only carry a revision it had computed
before, no newer than the fence's; so a row that comes after a fence in the table's order with a
revision no newer than that fence's is ignored by every reader (:func:`unfenced`), as are the
fences themselves. Rewrites (squash, purge, upgrade) on a bucket home end with a fence at the
highest revision they kept, so that a late append does not count after them either.

A fence is written as a deletion row (``store/rows.py``) of an id no node has: code from before
fences reads it as the deletion of nothing.
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


def unfenced(arrow: pa.Table) -> pa.Table:
    """``arrow`` (rows in the table's order, with ``id`` and ``rev``) without its fences and the rows
    each fence shuts out: those after it whose revision is no newer than its own."""
    if not arrow.num_rows:
        return arrow
    is_fence = pc.starts_with(arrow.column("id"), FENCE)
    if not pc.any(is_fence).as_py():
        return arrow
    fences = is_fence.to_numpy(zero_copy_only=False)
    revs = arrow.column("rev").to_numpy()
    # The highest fence strictly before each row.
    level = np.maximum.accumulate(np.where(fences, revs, np.iinfo(np.int64).min))
    before = np.concatenate([[np.iinfo(np.int64).min], level[:-1]])
    return arrow.filter(pa.array(~fences & (revs > before)))


def fence_count(arrow: pa.Table) -> int:
    """How many rows of ``arrow`` a fence shuts out, fences included (for ``doctor``)."""
    return arrow.num_rows - unfenced(arrow).num_rows


def counts(table: Any, written: pa.Table) -> bool:
    """Whether the rows ``written`` by one append to the Lance ``table`` count (no fence shuts them
    out): asked by a writer whose lease ran out while it appended."""
    table.checkout_latest()
    rows = unfenced(table.search().select(["id", "rev"]).limit(None).to_arrow())
    first = (written.column("id")[0].as_py(), written.column("rev")[0].as_py())
    found = pc.and_(pc.equal(rows.column("id"), first[0]), pc.equal(rows.column("rev"), first[1]))
    return bool(pc.any(found).as_py())
