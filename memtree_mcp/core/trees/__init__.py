"""The nodes of a memory and the two trees built over them.

``model`` the nodes (leaves, one memory each, and branches); ``hierarchy`` what both trees share;
``semantic`` MemTree's tree by subject; ``temporal`` the tree by time (sessions and periods), with
``calendar`` its periods, ``segmenting`` where a session splits into segments and
``period_checks`` whether its periods are the calendar's; ``representative`` and ``extractive`` a
branch's count, span, vector, text and label from its children; ``links`` the explicit update
links between memories; ``chunking`` how long content is split into leaves.

May import the shared modules at the top of core (``names``, ``wording``, ``embedding``); numpy and
the standard library only.
"""
