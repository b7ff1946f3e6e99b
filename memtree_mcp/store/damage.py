"""What ``doctor`` reads of a namespace's table beyond its live nodes: the text of the memories it
forgot, so that a summary still quoting one can be found (``service/upkeep.py``).

Writers that did not share a lock (memtree-mcp before the bucket lease, on several machines) could
leave a summary built from a memory another one had forgotten meanwhile; the forgotten memory's
last text is in the table's rows until a purge, which is where this reads it.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from memtree_mcp.store.arrow import latest_positions
from memtree_mcp.store.fences import unfenced
from memtree_mcp.store.migrations import as_current
from memtree_mcp.store.rows import DELETED
from memtree_mcp.store.table import NamespaceTable


def forgotten_texts(table: NamespaceTable) -> dict[str, str]:
    """The last text of each memory the table says was forgotten, while its rows still hold it."""
    table.latest_version()
    arrow = unfenced(as_current(table._table.to_arrow().combine_chunks()))
    latest, kinds = latest_positions(arrow)
    gone = arrow.column("id").take(pa.array(latest)).filter(pc.equal(kinds, DELETED))
    if not len(gone):
        return {}
    leaves = arrow.filter(pc.and_(pc.equal(arrow.column("kind"), "leaf"), pc.is_in(arrow.column("id"), gone)))
    return dict(zip(leaves.column("id").to_pylist(), leaves.column("text").to_pylist(), strict=True))
