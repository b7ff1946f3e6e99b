"""Going back in a namespace's history: the rows that make an earlier commit's memory the latest.

The history is in the rows (``store/migrations.py``, schema 3): the memory at commit ``version`` is
each id's latest row among the rows up to it. :func:`restoring_rows` works that out from one read
of the table, for ``NamespaceTable.restore`` to append as one commit.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pyarrow as pa

from memtree_mcp.store.arrow import live_positions, up_to
from memtree_mcp.store.rows import deletion_row


def restoring_rows(
    now: pa.Table,
    positions: np.ndarray,
    version: int,
    live_ids: Collection[str],
    rev: int,
    stamp: float,
    schema: pa.Schema,
    *,
    mark: str = "",
) -> tuple[pa.Table | None, set[str], list[str]]:
    """The rows that make commit ``version``'s memory the latest as commit ``rev`` (dated ``stamp``):
    the revisions it held that are not live now, written again under ``rev``, and a deletion for
    every node live now that it did not hold (its ``tree`` column set to ``mark``, which tells a
    restore's deletions from a forget's, ``store/commits.py``). ``now`` is the whole table (every revision),
    ``positions`` its live rows (each id's latest, deletions left out), ``live_ids`` their ids.

    Returns ``(rows or None when nothing changes, the ids live at version, the ids it deletes)``.
    """
    past = up_to(now, version)  # one read of the table serves both
    live = set(
        zip(
            now.column("id").take(pa.array(positions)).to_pylist(),
            now.column("rev").take(pa.array(positions)).to_pylist(),
            strict=True,
        )
    )
    then, _ = live_positions(past)
    ids = past.column("id").take(pa.array(then)).to_pylist()
    revs = past.column("rev").take(pa.array(then)).to_pylist()
    back = [
        int(p) for p, key in zip(then.tolist(), zip(ids, revs, strict=True), strict=True) if key not in live
    ]
    kept = set(ids)
    parts = []
    if back:
        rows = past.take(pa.array(back, type=pa.int64())).select(schema.names)
        # Dated now, so the new commit's time is the time of the restore.
        rows = rows.set_column(
            rows.schema.get_field_index("rev"), "rev", pa.array([rev] * len(back), pa.int64())
        )
        stamps = pa.array([stamp] * len(back), pa.float64())
        rows = rows.set_column(rows.schema.get_field_index("updated"), "updated", stamps)
        parts.append(rows)
    gone = sorted(set(live_ids) - kept)
    if gone:
        deletions = [{**deletion_row(node_id, stamp), "rev": rev, "tree": mark} for node_id in gone]
        parts.append(pa.Table.from_pylist(deletions, schema=schema))
    if not parts:
        return None, kept, gone
    return pa.concat_tables([part.cast(schema) for part in parts]), kept, gone
