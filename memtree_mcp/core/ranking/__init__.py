"""How a memory's nodes are ranked for a query, and what is current among them.

``recall`` the strategies and their weights; ``relevance`` a hit's relevance on a fixed scale;
``hits`` what a recall returns; ``current`` the memory that updates each stale hit; ``currency``
which memories a later one updates, for the tools that state things; ``candidates`` which older
memories a new one may update.

May import ``memory``, ``indexes/``, ``trees/`` and the shared modules at the top of core; numpy and
the standard library only.
"""
