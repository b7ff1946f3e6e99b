"""Persistence: LanceDB tables (``lance.py``) and the snapshots that open them quickly (``snapshot.py``)."""

from memtree_mcp.store.deferred import DEFERRED, defer_init

# Before store/lance.py imports lancedb: its REST client's initialiser costs ~0.8 s a local store
# never uses (store/deferred.py).
defer_init(DEFERRED)
