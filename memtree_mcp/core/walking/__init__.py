"""Reading a memory by its trees: the cursor, the memory agent and the summaries.

``navigation`` the cursor over the two trees (``navigate``'s moves); ``agent`` a policy walking
the cursor for a query; ``summary`` a summary read off the trees within a budget.

May import ``ranking/``, ``memory``, ``trees/`` and the shared modules at the top of core; numpy
and the standard library only.
"""
