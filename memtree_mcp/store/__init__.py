"""Persistence: LanceDB tables and the snapshots that open them quickly.

``rows.py`` the row format, ``migrations.py`` its schema versions, ``arrow.py`` rows decoded into
nodes, ``table.py`` a namespace's table, ``lance.py`` the store that holds them (the one module
that imports lancedb), ``snapshot.py`` a namespace's snapshot file, ``opening.py`` opening a
namespace from its snapshot or by a whole read. A namespace's writers take turns: ``locks.py`` the
file lock on one machine, ``bucket.py`` and ``fences.py`` the lease and its fences on a bucket.

May import ``core``, ``host`` (the C heap, loopback addresses), ``config`` and ``errors``.
"""

from memtree_mcp.store.deferred import DEFERRED, defer_init

# Before store/lance.py imports lancedb: its REST client's package initialiser costs time a local
# store never needs (store/deferred.py).
defer_init(DEFERRED)
