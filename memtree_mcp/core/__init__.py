"""The algorithms: a namespace's memory in RAM, its two trees, how it is ranked and walked.

At the top, what the parts share: ``names`` the names callers pass (strategies, kinds, trees,
moves), ``wording`` counts in words, ``embedding`` the embedder protocol; and ``memory`` a
namespace's :class:`~memtree_mcp.core.memory.Memory`, which keeps its trees and indexes up to date
as memories come and go. The parts, from the ground up:

- ``trees/`` the nodes, the semantic and temporal trees, the calendar, the representatives and
  labels, the update links, and how content is split into leaves;
- ``indexes/`` what a memory keeps beside its trees to rank them fast: the vector and BM25
  indexes, the trees as arrays, the authors and dates a query names;
- ``ranking/`` recall, relevance, hits, what is current, which memories a new one may update;
- ``walking/`` the navigation cursor, the memory agent and the summaries read off the trees;
- ``checks/`` the invariant checks ``doctor`` and the tests run.

Who may import whom inside core, one way (tests/test_layers.py checks it)::

    names, wording, embedding   nothing of the package
    trees/                      the shared modules (names, wording, embedding)
    indexes/                    trees/, the shared modules
    memory                      indexes/, trees/, the shared modules
    ranking/                    memory, indexes/, trees/, the shared modules
    walking/                    ranking/, memory, trees/, the shared modules
    checks/                     memory, indexes/, trees/, the shared modules

May import nothing of the package outside core, and no library but numpy and the standard
library, none of whose modules that reach the machine (files, processes, threads, sockets, the C
heap: those are ``memtree_mcp.host``'s); no mcp, lancedb, onnxruntime, litellm or detect-secrets.
"""
