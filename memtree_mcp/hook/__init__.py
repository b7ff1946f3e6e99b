"""Claude Code's hooks: a quick client per hook, a warm worker per home, and the queue between.

``client`` the quick path every hook process runs (the standard library only: it asks the worker
over a Unix socket, and starts one when none is up); ``worker`` the long-running worker that answers
hooks from a warm service, and a hook run in its own process where there are no sockets; ``queue``
the turns waiting on disk and their drain into the store; ``turns`` a turn read from a hook's event,
its secrets dealt with, queued; ``settings`` the settings a hook reads from its environment without
the settings library, and which of them a worker serves.

May import ``core``, ``host``, ``secrets``, ``service``, ``llm``, ``config`` and ``errors``, each
imported where it is needed: the quick path (``client``, ``turns``, ``settings``) imports nothing
heavy. ``cli`` runs it (``memtree-mcp hook``).
"""
