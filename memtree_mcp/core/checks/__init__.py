"""Invariant checks, for ``memtree-mcp doctor`` and the tests: what is wrong, never a raise.

``memory`` a whole memory (its leaves, indexes and links, and both trees through ``trees``);
``trees`` the two trees.

May import ``memory``, ``indexes/``, ``trees/`` and the shared modules at the top of core; numpy
and the standard library only.
"""
